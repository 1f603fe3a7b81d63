"""The readers the fuzz harnesses drive: each takes the fuzzer's bytes and must return, or raise
an `xegen.Error`; any other exception is a finding.

Every target runs under `xegen.deep.deeply`, as the CLI runs commands, so a deep input meets the
same recursion bound a user's would.  The first byte of binary inputs picks the platform."""

from __future__ import annotations

import tempfile
from pathlib import Path

from xegen import Error, hw
from xegen.commands.conv import read_batch
from xegen.conv import make_problem
from xegen.conv.descriptor import parse_descriptor
from xegen.egraph.rules import read_rule_file
from xegen.emit import assemble, disassemble
from xegen.emit.zebin import read_zebin
from xegen.files import read_npy
from xegen.ir import parse_expr, parse_stmt

PLATFORMS = ("xelp", "xehpg", "xehpc")
_SCRATCH = Path(tempfile.mkdtemp(prefix="xegen-fuzz-"))  # files for the readers that take a path


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _platform(data: bytes) -> tuple[hw.Platform, bytes]:
    if not data:
        return hw.platform("xehpg"), b""
    return hw.platform(PLATFORMS[data[0] % len(PLATFORMS)]), data[1:]


def _file(name: str, data: bytes) -> str:
    path = _SCRATCH / name
    path.write_bytes(data)
    return str(path)


def expression(data: bytes) -> None:
    """The expression parser, and the statement parser on the same text."""
    text = _text(data)
    try:
        parse_expr(text)
    except Error:
        pass
    parse_stmt(text)


def descriptor(data: bytes) -> None:
    """A benchdnn descriptor, and the problem it makes."""
    make_problem(parse_descriptor(_text(data)))


def batch(data: bytes) -> None:
    """A --batch shapes file: its lines, and the descriptor of each."""
    for entry in read_batch(_file("shapes", data)):
        parse_descriptor(entry.text)


def rules(data: bytes) -> None:
    """A rule file as the loader and the checker read it (egglog is not involved)."""
    read_rule_file(Path(_file("fuzz.egg", data)))


def assembler(data: bytes) -> None:
    platform, rest = _platform(data)
    assemble(_text(rest), platform)


def decoder(data: bytes) -> None:
    platform, rest = _platform(data)
    disassemble(rest, platform)


def zebin(data: bytes) -> None:
    """A zebin's ELF structure, its notes, and the code of each kernel."""
    parsed = read_zebin(data)
    for kernel in parsed.kernels:
        disassemble(kernel.code, parsed.platform or hw.platform("xehpg"))


def npy(data: bytes) -> None:
    read_npy(data, "fuzz.npy")


TARGETS = {f.__name__: f for f in (expression, descriptor, batch, rules, assembler, decoder, zebin, npy)}
#: the longest input each target is given: a bound on the time and memory of one execution
MAX_LEN = {"zebin": 1 << 16, "decoder": 1 << 14, "assembler": 1 << 13}
DEFAULT_MAX_LEN = 1 << 12
