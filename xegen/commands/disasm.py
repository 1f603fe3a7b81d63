"""`xegen disasm`: print Xe instructions (a raw kernel or every kernel of a zebin) in IGA's syntax."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import hw as hwlib
from ..emit import disassemble
from ..emit.zebin import read_zebin
from ..errors import DecodeError, Error
from ..files import MiB, read_bytes

ELF_MAGIC = b"\x7fELF"
MAX_FILE_BYTES = 64 * MiB  # a zebin with debug sections; the code itself is bounded by the decoder


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "disasm",
        help="disassemble Xe instructions (raw bytes or a zebin) into IGA syntax",
        description="Print the instructions of FILE in IGA's syntax, as `iga64 -d` does.  FILE is either raw "
        "kernel bytes or a zebin (an ELF file, detected by its magic number), in which case "
        "every kernel is printed under a '// kernel NAME' heading.",
    )
    parser.add_argument("file", metavar="FILE", help="raw kernel bytes (FILE.bin) or a zebin (FILE.zebin)")
    parser.add_argument(
        "--hw",
        help="platform the bytes were compiled for: xelp, xehpg or xehpc (or tgllp, dg2, pvc);"
        f" default: the one a zebin names, else {hwlib.DEFAULT.name}",
    )
    parser.add_argument(
        "--pcs", action="store_true", help="prefix each instruction with its byte address, like iga64 -Xprint-pc"
    )
    parser.add_argument("-o", "--output", metavar="FILE.asm", help="write the listing here instead of stdout")
    parser.set_defaults(run=run)


def kernels_of(data: bytes, requested: hwlib.Platform | None) -> tuple[hwlib.Platform, list[tuple[str | None, bytes]]]:
    """The platform to decode for and (name, code) of every kernel: one unnamed kernel for raw
    bytes, all kernels of a zebin.  A zebin names its platform; `requested` must agree with it."""
    if not data.startswith(ELF_MAGIC):
        return requested or hwlib.DEFAULT, [(None, data)]
    parsed = read_zebin(data)
    named = parsed.platform
    if requested and named and requested != named:
        raise Error(
            f"the zebin is for {named.display_name}, "
            f"not {requested.display_name}: use --hw {named.name} or leave --hw out"
        )
    return requested or named or hwlib.DEFAULT, [(kernel.name, kernel.code) for kernel in parsed.kernels]


def run(args: argparse.Namespace) -> int:
    requested = hwlib.platform(args.hw) if args.hw else None
    data = read_bytes(args.file, MAX_FILE_BYTES, "kernel binaries and zebins")
    try:
        platform, kernels = kernels_of(data, requested)
    except Error as error:
        raise Error(f"{args.file}: {error}") from None
    parts = []
    for name, code in kernels:
        try:
            listing = disassemble(code, platform, pcs=args.pcs)
        except DecodeError as error:
            where = f"{args.file}" + (f", kernel {name}" if name else "")
            raise Error(f"{where}: {error}") from None
        parts.append(listing if name is None else f"// kernel {name}\n{listing}")
    text = "\n".join(parts)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
