"""Atomic read-modify-write operations on raw element bits.

`new_value(op, old, operands, size)` takes unsigned integers (the element's bits) and returns
the new bits; every atomic message returns the OLD value.  Integer operations wrap at the
element size; smin/smax compare signed, umin/umax unsigned; float operations use the
element as float32 (size 4) or float16 (size 2); the compare-and-swap operations take the
compare value first, then the new value.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError

_UNSIGNED: dict[int, type[np.unsignedinteger]] = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED: dict[int, type[np.signedinteger]] = {2: np.int16, 4: np.int32, 8: np.int64}
_FLOAT: dict[int, type[np.floating]] = {2: np.float16, 4: np.float32, 8: np.float64}

OPERAND_COUNT = {
    "inc": 0,
    "dec": 0,
    "predec": 0,
    "load": 0,
    "store": 1,
    "add": 1,
    "sub": 1,
    "rsub": 1,
    "smin": 1,
    "smax": 1,
    "umin": 1,
    "umax": 1,
    "and": 1,
    "or": 1,
    "xor": 1,
    "cas": 2,
    "fadd": 1,
    "fsub": 1,
    "fmin": 1,
    "fmax": 1,
    "fcas": 2,
}


def new_value(op: str, old: np.ndarray, operands: list[np.ndarray], size: int) -> np.ndarray:
    u = _UNSIGNED[size]
    old = old.astype(u)
    args = [a.astype(u) for a in operands]
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "inc":
            return old + u(1)
        if op in ("dec", "predec"):
            return old - u(1)
        if op == "load":
            return old
        if op == "store":
            return args[0]
        if op == "add":
            return old + args[0]
        if op == "sub":
            return old - args[0]
        if op == "rsub":
            return args[0] - old
        if op == "and":
            return old & args[0]
        if op == "or":
            return old | args[0]
        if op == "xor":
            return old ^ args[0]
        if op == "umin":
            return np.minimum(old, args[0])
        if op == "umax":
            return np.maximum(old, args[0])
        if op in ("smin", "smax"):
            s = _SIGNED[size]
            a, b = old.view(s), args[0].view(s)
            return (np.minimum(a, b) if op == "smin" else np.maximum(a, b)).view(u)
        if op == "cas":
            return np.where(old == args[0], args[1], old)
        f = _FLOAT[size]
        a = old.view(f)
        if op == "fadd":
            return (a + args[0].view(f)).astype(f).view(u)
        if op == "fsub":
            return (a - args[0].view(f)).astype(f).view(u)
        if op == "fmin":
            return np.fmin(a, args[0].view(f)).view(u)
        if op == "fmax":
            return np.fmax(a, args[0].view(f)).view(u)
        if op == "fcas":
            return np.where(a == args[0].view(f), args[1], old)
    raise SimulationError(f"atomic operation '{op}' is not simulated")


def increments(op: str, operands: list[np.ndarray], count: int, size: int) -> np.ndarray | None:
    """What each access adds, for the operations that only add (so they can be applied to all
    accesses at once); None for the others."""
    u = _UNSIGNED[size]
    with np.errstate(over="ignore"):
        if op == "inc":
            return np.ones(count, dtype=u)
        if op == "dec":
            return np.full(count, np.iinfo(u).max, dtype=u)  # -1 modulo 2^bits
        if op == "add":
            return operands[0].astype(u)
        if op == "sub":
            return (u(0) - operands[0].astype(u)).astype(u)
    return None


# LSC opcodes 0x8..0x1A
LSC_ATOMICS = {
    0x08: "inc",
    0x09: "dec",
    0x0A: "load",
    0x0B: "store",
    0x0C: "add",
    0x0D: "sub",
    0x0E: "smin",
    0x0F: "smax",
    0x10: "umin",
    0x11: "umax",
    0x12: "cas",
    0x13: "fadd",
    0x14: "fsub",
    0x15: "fmin",
    0x16: "fmax",
    0x17: "fcas",
    0x18: "and",
    0x19: "or",
    0x1A: "xor",
}

# HDC untyped atomic operation codes (message control [11:8])
HDC_ATOMICS = {
    0x1: "and",
    0x2: "or",
    0x3: "xor",
    0x4: "store",
    0x5: "inc",
    0x6: "dec",
    0x7: "add",
    0x8: "sub",
    0x9: "rsub",
    0xA: "smax",
    0xB: "smin",
    0xC: "umax",
    0xD: "umin",
    0xE: "cas",
    0xF: "predec",
}
HDC_FLOAT_ATOMICS = {0x1: "fmax", 0x2: "fmin", 0x3: "fcas", 0x4: "fadd", 0x5: "fsub"}
