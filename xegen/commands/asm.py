"""`xegen asm`: assemble IGA-syntax Xe assembly into native instructions."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import hw as hwlib
from ..emit import assemble
from ..errors import Error, ParseError
from ..files import MiB, read_text

MAX_SOURCE_BYTES = 8 * MiB  # ~120,000 lines as iga64 prints them: more than the assembler takes


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "asm",
        help="assemble IGA-syntax Xe assembly into native 16-byte instructions",
        description="Assemble a file of Xe instructions in IGA's syntax (what `iga64 -d` prints) into "
        "native instructions, like `iga64 -a -Xforce-no-compact`.  Labels are NAME: lines; "
        "comments are // and /* */.",
    )
    parser.add_argument("file", metavar="FILE.asm", help="assembly source to read ('-' for standard input)")
    parser.add_argument(
        "--hw",
        default=hwlib.DEFAULT.name,
        help="target platform: xelp, xehpg or xehpc (or an alias such as tgllp, dg2, pvc);"
        f" default {hwlib.DEFAULT.name}",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE.bin", required=True, help="where to write the instruction bytes"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    platform = hwlib.platform(args.hw)
    text = read_text(args.file, MAX_SOURCE_BYTES, "assembly files")
    try:
        data = assemble(text, platform)
    except ParseError as error:
        raise Error(f"{args.file}: {error}") from None
    Path(args.output).write_bytes(data)
    return 0
