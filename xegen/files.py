"""Reading the user's files within a stated size, so that no input can exhaust memory.

Every command that reads a file names the most it accepts; `read_bytes` stops reading one byte
past that bound (a regular file is refused by its size before any byte is read), so
`/dev/zero`, a FIFO or standard input get the same clear error as a file that is too large.
`read_npy` reads a numpy array file whose header is checked against the bytes that follow it
before anything is allocated.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING

from .errors import Error

if TYPE_CHECKING:
    import numpy as np

KiB, MiB = 1 << 10, 1 << 20


class TooLargeError(Error):
    """A file larger than the command accepts."""


def read_bytes(path: str, limit: int, what: str = "files") -> bytes:
    """The bytes of `path` ('-': standard input), at most `limit` of them; `what` names the
    kind of file in the plural for the error message ("assembly files")."""

    def too_large(size: str) -> TooLargeError:
        return TooLargeError(f"{path}: {size} (the limit for {what} is {_size(limit)})")

    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        with open(path, "rb") as file:
            status = os.fstat(file.fileno())
            if stat.S_ISDIR(status.st_mode):
                raise Error(f"{path}: is a directory")
            if stat.S_ISREG(status.st_mode) and status.st_size > limit:
                raise too_large(f"{_size(status.st_size)}")
            data = file.read(limit + 1)
    if len(data) > limit:
        raise too_large(f"more than {_size(limit)}")
    return data


def read_text(path: str, limit: int, what: str = "files") -> str:
    """`read_bytes` decoded as UTF-8; bytes that are not name their line."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise Error(f"{path}: line {line} is not UTF-8 text (byte 0x{data[error.start]:02x})") from None


def _size(n: int) -> str:
    for unit, name in ((MiB, "MiB"), (KiB, "KiB")):
        if n >= unit:
            return f"{n / unit:g} {name}"
    return f"{n} bytes"


_NPY_MAGIC = b"\x93NUMPY"


def read_npy(data: bytes, what: str) -> np.ndarray:
    """The array of a .npy file's bytes (format versions 1 to 3, no pickled objects), checked
    before anything is allocated: the header's shape and type must describe exactly the bytes
    that follow it."""
    import ast  # (with numpy: only for .npy files, not the commands that read text)

    import numpy as np  # a tenth of a second to import: not for the commands that read only text

    def bad(reason: str) -> Error:
        return Error(f"{what} is not a numpy array file we can read ({reason})")

    if not data.startswith(_NPY_MAGIC) or len(data) < 10:
        raise bad("no .npy magic number")
    major = data[6]
    if major == 1:
        header_end = 10 + int.from_bytes(data[8:10], "little")
    elif major in (2, 3):
        if len(data) < 12:
            raise bad("truncated header")
        header_end = 12 + int.from_bytes(data[8:12], "little")
    else:
        raise bad(f"format version {major}")
    start = 10 if major == 1 else 12
    if header_end > len(data):
        raise bad("truncated header")
    try:
        header = ast.literal_eval(data[start:header_end].decode("utf-8" if major == 3 else "latin1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
        dtype = np.lib.format.descr_to_dtype(descr)
    except (ValueError, SyntaxError, TypeError, KeyError, UnicodeDecodeError, MemoryError, RecursionError):
        raise bad("malformed header") from None
    if not (
        isinstance(header, dict)
        and isinstance(fortran, bool)
        and isinstance(shape, tuple)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise bad("malformed header")
    if dtype.hasobject or dtype.itemsize == 0:
        raise bad(f"it holds {dtype}, not numbers")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data) - header_end:
        raise bad(f"the header describes {count * dtype.itemsize} bytes of data, the file has {len(data) - header_end}")
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=header_end)
    return flat.reshape(shape, order="F" if fortran else "C").copy()
