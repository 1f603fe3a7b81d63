"""`xegen run`: run a zebin kernel in the simulator on .npy arrays and numbers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .. import hw as hwlib
from .. import sim
from ..errors import Error
from ..files import MiB, read_bytes, read_npy
from ..sim import local

ARG_HELP = (
    "a kernel argument, in order: FILE.npy (a buffer; the kernel works on a copy, so the file is not "
    "changed: use --out to save the result), a number (int or float, by value, converted to the "
    "argument's type; write --arg=-1e-3 for a negative number with an exponent, which argparse would "
    "take for an option), zeros:SHAPE:DTYPE (a new zero-filled buffer, e.g. zeros:64x3:float32), or "
    "local:BYTES (a __local pointer)"
)
NUMERIC_KINDS = "biuf"  # numpy dtype kinds a buffer may have: bool, signed, unsigned, float
MAX_NEW_BUFFER_BYTES = 1 << 32  # zeros:SHAPE:DTYPE (or a .npy file) larger than this is surely a typo
MAX_ZEBIN_BYTES = 64 * MiB


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a zebin kernel in the functional simulator",
        description="Dispatch kernel K of FILE.zebin over the given NDRange in xegen's simulator of the Xe "
        "execution model, as Intel's runtime would, and print or save the buffers afterwards.  "
        "SWSB hazards (missing scoreboard waits) are errors unless --hazards says otherwise.",
        epilog="example: xegen run saxpy.zebin --kernel saxpy --global 1024 --local 64 "
        "--arg y.npy --arg x.npy --arg 1.75 --arg 1000 --out results/",
    )
    parser.add_argument("file", metavar="FILE.zebin", help="the zebin (from ocloc or xegen)")
    parser.add_argument("--kernel", "-k", required=True, metavar="K", help="name of the kernel to run")
    parser.add_argument(
        "--global",
        dest="global_size",
        required=True,
        metavar="X[,Y,Z]",
        help="global size in work-items, 1 to 3 dimensions",
    )
    parser.add_argument(
        "--local", dest="local_size", required=True, metavar="X[,Y,Z]", help="work-group size, 1 to 3 dimensions"
    )
    parser.add_argument("--arg", "-a", action="append", default=[], metavar="ARG", help=ARG_HELP)
    parser.add_argument(
        "--hw", default=None, help="platform: xelp, xehpg or xehpc (or tgllp, dg2, pvc); default: what the zebin names"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="save every buffer argument here after the run (FILE.npy keeps its name, "
        "zeros:... buffers are saved as argN.npy; two buffers with one name are an error); "
        "without it, buffers are printed",
    )
    parser.add_argument(
        "--hazards",
        choices=("error", "report", "off"),
        default="error",
        help="SWSB hazards: fail (default), print them and succeed, or do not check",
    )
    parser.set_defaults(run=run)


def parse_size(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise Error(f"{what} '{text}' is not X[,Y,Z] with integers") from None
    if not 1 <= len(values) <= 3:
        raise Error(f"{what} '{text}' needs 1 to 3 dimensions")
    return values


def parse_argument(text: str, index: int):
    """(value for xegen.sim.run, name to save it under or None)."""
    if text.startswith("local:"):
        return _local_buffer(text, index), None
    if text.startswith("zeros:"):
        return _zero_buffer(text, index), f"arg{index}.npy"
    if text.endswith(".npy"):
        return _load_buffer(text, index), Path(text).name
    for convert in (lambda t: int(t, 0), float):
        try:
            return convert(text), None
        except ValueError:
            continue
    raise Error(f"--arg {index}: '{text}' is not a .npy file, a number, zeros:SHAPE:DTYPE or local:BYTES")


def _local_buffer(text: str, index: int):
    try:
        size = int(text[6:], 0)
    except ValueError:
        raise Error(f"--arg {index}: '{text}' is not local:BYTES") from None
    if size <= 0:
        raise Error(f"--arg {index}: '{text}': a __local buffer needs a positive number of bytes")
    return local(size)


def _zero_buffer(text: str, index: int) -> np.ndarray:
    usage = f"--arg {index}: '{text}' is not zeros:SHAPE:DTYPE (e.g. zeros:64x3:float32)"
    parts = text.split(":")
    if len(parts) != 3:
        raise Error(usage)
    try:
        shape = tuple(int(n) for n in parts[1].split("x"))
        dtype = np.dtype(parts[2])
    except (ValueError, TypeError):
        raise Error(usage) from None
    if any(n <= 0 for n in shape):
        raise Error(f"--arg {index}: '{text}': every dimension of the shape must be positive")
    _check_numeric(dtype, index, text)
    size = dtype.itemsize * int(np.prod(shape, dtype=object))
    if size > MAX_NEW_BUFFER_BYTES:
        raise Error(f"--arg {index}: '{text}' would be {size} bytes; at most {MAX_NEW_BUFFER_BYTES} are allowed")
    return np.zeros(shape, dtype=dtype)


def _load_buffer(path: str, index: int) -> np.ndarray:
    try:
        data = read_bytes(path, MAX_NEW_BUFFER_BYTES + 64 * 1024, "numpy array files")  # (+ its header)
    except FileNotFoundError:
        raise Error(f"--arg {index}: {path} does not exist") from None
    array = read_npy(data, f"--arg {index}: {path}")
    _check_numeric(array.dtype, index, path)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))  # the device is little-endian


def _check_numeric(dtype: np.dtype, index: int, what: str) -> None:
    if dtype.kind not in NUMERIC_KINDS:
        raise Error(f"--arg {index}: {what} holds {dtype}, not numbers (bool, int, uint or float)")


def _output_names(texts: list[str], names: list) -> None:
    """--out saves each buffer under its name: two buffers with one name would overwrite each other."""
    seen: dict[str, str] = {}
    for text, name in zip(texts, names, strict=True):
        if name is None:
            continue
        if name in seen:
            raise Error(f"--out would save both '{seen[name]}' and '{text}' as {name}; give the files different names")
        seen[name] = text


def run(args: argparse.Namespace) -> int:
    data = read_bytes(args.file, MAX_ZEBIN_BYTES, "zebins")
    values, names = [], []
    for index, text in enumerate(args.arg):
        value, name = parse_argument(text, index)
        values.append(value)
        names.append(name)
    if args.out:
        _output_names(args.arg, names)
    modes: dict[str, bool | str] = {"error": True, "report": "report", "off": False}
    hazards = modes[args.hazards]
    platform = hwlib.platform(args.hw) if args.hw else None
    try:
        result = sim.run(
            data,
            args.kernel,
            values,
            parse_size(args.global_size, "--global"),
            parse_size(args.local_size, "--local"),
            platform,
            check_hazards=hazards,
        )
    except sim.HazardError as error:
        for hazard in error.hazards:
            sys.stderr.write(f"xegen: hazard: {hazard}\n")
        raise Error(f"{len(error.hazards)} SWSB hazard(s) in kernel {args.kernel} (listed above)") from None
    for hazard in result.hazards:
        sys.stdout.write(f"hazard: {hazard}\n")
    sys.stdout.write(
        f"{result.kernel} on {hwlib.platform(result.platform).display_name}: SIMD{result.simd}, "
        f"{result.groups} group(s), {result.threads} thread(s), {result.instructions} instructions, "
        f"{result.lane_instructions} lane-instructions in {result.seconds:.3f} s\n"
    )
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for value, name in zip(values, names, strict=True):
            if name is not None:
                np.save(out / name, value)
                sys.stdout.write(f"wrote {out / name}\n")
    else:
        with np.printoptions(threshold=20, edgeitems=4):
            for index, (value, name) in enumerate(zip(values, names, strict=True)):
                if name is not None:
                    sys.stdout.write(f"arg {index} ({name}, {value.dtype}{list(value.shape)}): {value}\n")
    return 0
