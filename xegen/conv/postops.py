"""Post-op chains as benchdnn spells them (`--attr-post-ops`), and their numpy reference.

The grammar (benchdnn's attribute documentation, knobs_attr), chains joined by `+`:

    sum[:SCALE[:ZERO_POINT[:DATA_TYPE]]]
    ELTWISE[:ALPHA[:BETA[:SCALE]]]           relu, clip, gelu_erf, ... (`ELTWISE_ALGORITHMS`)
    BINARY:DT[:POLICY[:TAG]]                 add, sub, mul, div, min, max, ge, gt, le, lt, eq, ne
    prelu[:POLICY]

Names are case-insensitive and take benchdnn's long spellings too (`eltwise_relu`, `binary_add`,
`relu_use_dst_for_bwd`); the `_dst` variants of an eltwise algorithm differ from it only in the
backward pass, so forward they are the same operation.  A binary's POLICY may also be a plain
mask over the destination's dimensions (bit 0 minibatch, bit 1 channels, then spatial).

The formulas are oneDNN's (its eltwise primitive and post-ops attribute documentation):
each post-op replaces the destination value `d` (the convolution, plus bias, before conversion):

    sum:     d = SCALE * (as_DATA_TYPE(dst) - ZERO_POINT) + d
    eltwise: d = SCALE * f(d; ALPHA, BETA)
    binary:  d = d OP src1 (comparisons give 1 or 0), src1 broadcast along the policy
    prelu:   d = d if d > 0 else w * d, weights broadcast along the policy
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import Error, UnsupportedError

#: eltwise algorithms: name -> (parameters it reads: "", "a" or "ab"; whether it needs the math unit)
ELTWISE_ALGORITHMS = {
    "abs": ("", False),
    "clip": ("ab", False),
    "clip_v2": ("ab", False),
    "elu": ("a", True),
    "exp": ("", True),
    "gelu_erf": ("", True),
    "gelu_tanh": ("", True),
    "hardsigmoid": ("ab", False),
    "hardswish": ("ab", False),
    "linear": ("ab", False),
    "log": ("", True),
    "logistic": ("", True),
    "mish": ("", True),
    "pow": ("ab", True),
    "relu": ("a", False),
    "round": ("", False),
    "soft_relu": ("a", True),
    "sqrt": ("", True),
    "square": ("", False),
    "swish": ("a", True),
    "tanh": ("", True),
}
#: other spellings benchdnn accepts for an eltwise algorithm
_ELTWISE_ALIASES = {"srelu": "soft_relu"}
#: algorithms with a `_dst` variant (same forward operation)
_DST_VARIANTS = ("clip_v2", "elu", "exp", "logistic", "relu", "sqrt", "tanh")

BINARY_ALGORITHMS = ("add", "sub", "mul", "div", "min", "max", "ge", "gt", "le", "lt", "eq", "ne")

#: broadcast policies: name -> mask over the destination's dimensions (bit 0 minibatch, 1 channels,
#: 2.. spatial); per_tensor covers every dimension
POLICIES = {
    "common": 0,
    "per_oc": 0b10,
    "per_dim_0": 0b1,
    "per_dim_1": 0b10,
    "per_dim_01": 0b11,
    "per_dim_2": 0b100,
    "per_dim_3": 0b1000,
    "per_tensor": -1,
}

SUM_TYPES = ("f32", "f16", "bf16", "s32", "s8", "u8")
BINARY_TYPES = ("f32", "f16", "bf16", "s32", "s8", "u8")

_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_INT = re.compile(r"[+-]?\d+$")


@dataclass(frozen=True)
class Sum:
    scale: float = 1.0
    zero_point: int = 0
    dt: str = ""  # "" reads dst in its own type

    def __str__(self) -> str:
        parts = ["sum"]
        if self.scale != 1.0 or self.zero_point or self.dt:
            parts.append(_number(self.scale))
        if self.zero_point or self.dt:
            parts.append(str(self.zero_point))
        if self.dt:
            parts.append(self.dt)
        return ":".join(parts)


@dataclass(frozen=True)
class Eltwise:
    alg: str
    alpha: float = 0.0
    beta: float = 0.0
    scale: float = 1.0

    @property
    def needs_math_unit(self) -> bool:
        return ELTWISE_ALGORITHMS[self.alg][1]

    def __str__(self) -> str:
        parts = [self.alg]
        values = [self.alpha, self.beta, self.scale]
        defaults = [0.0, 0.0, 1.0]
        while values and values[-1] == defaults[len(values) - 1]:
            values.pop()
        return ":".join(parts + [_number(v) for v in values])


@dataclass(frozen=True)
class Binary:
    alg: str
    dt: str
    policy: str = "common"  # a POLICIES name, or a mask as digits
    tag: str = "any"

    def mask(self, ndims: int) -> int:
        """The dimensions of the destination (of `ndims`) the second tensor spans."""
        return policy_mask(self.policy, ndims)

    def __str__(self) -> str:
        parts = [self.alg, self.dt]
        if self.policy != "common" or self.tag != "any":
            parts.append(self.policy)
        if self.tag != "any":
            parts.append(self.tag)
        return ":".join(parts)


@dataclass(frozen=True)
class Prelu:
    policy: str = "common"

    def mask(self, ndims: int) -> int:
        return policy_mask(self.policy, ndims)

    def __str__(self) -> str:
        return "prelu" if self.policy == "common" else f"prelu:{self.policy}"


PostOp = Sum | Eltwise | Binary | Prelu


def policy_mask(policy: str, ndims: int) -> int:
    mask = int(policy) if policy.isdigit() else POLICIES[policy]
    return (1 << ndims) - 1 if mask == -1 else mask


def format_post_ops(ops: tuple[PostOp, ...]) -> str:
    return "+".join(str(op) for op in ops)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


class _Tokens:
    """The `:`-separated fields of one post-op, read left to right with errors naming them."""

    def __init__(self, option: str, entry: str):
        self.option, self.entry = option, entry
        self.fields = entry.split(":")
        self.position = 1

    def error(self, what: str) -> Error:
        return Error(f"{self.option} '{self.entry}': {what}")

    def more(self) -> bool:
        return self.position < len(self.fields)

    def next(self, what: str) -> str:
        value = self.fields[self.position]
        self.position += 1
        if not value:
            raise self.error(f"empty {what}")
        return value

    def number(self, what: str) -> float:
        text = self.next(what)
        if not _FLOAT.match(text):
            raise self.error(f"{what} '{text}' is not a number")
        value = float(text)
        if abs(value) > float(np.finfo(np.float32).max):
            raise self.error(f"{what} '{text}' is beyond f32")
        return float(np.float32(value))

    def integer(self, what: str) -> int:
        text = self.next(what)
        if not _INT.match(text):
            raise self.error(f"{what} '{text}' is not an integer")
        value = int(text)
        if not -(2**31) <= value < 2**31:
            raise self.error(f"{what} '{text}' is beyond s32")
        return value

    def choice(self, what: str, known: tuple[str, ...]) -> str:
        text = self.next(what).lower()
        if text not in known:
            raise self.error(f"unknown {what} '{text}' (known: {', '.join(known)})")
        return text

    def done(self) -> None:
        if self.more():
            raise self.error(f"unexpected '{':'.join(self.fields[self.position :])}' after the last parameter")


def _eltwise_name(name: str) -> str | None:
    if name.startswith("eltwise_"):
        name = name[len("eltwise_") :]
    name = name.replace("_use_dst_for_bwd", "_dst")
    if name.endswith("_dst") and name[:-4] in _DST_VARIANTS:
        name = name[:-4]
    name = _ELTWISE_ALIASES.get(name, name)
    return name if name in ELTWISE_ALGORITHMS else None


def _binary_name(name: str) -> str | None:
    if name.startswith("binary_"):
        name = name[len("binary_") :]
    return name if name in BINARY_ALGORITHMS else None


def _parse_entry(option: str, entry: str) -> PostOp:
    tokens = _Tokens(option, entry)
    name = tokens.fields[0].strip().lower()
    if not name:
        raise tokens.error("empty post-op")
    if name == "sum":
        op = Sum()
        if tokens.more():
            op = Sum(tokens.number("sum scale"))
        if tokens.more():
            op = Sum(op.scale, tokens.integer("sum zero point"))
        if tokens.more():
            op = Sum(op.scale, op.zero_point, tokens.choice("sum data type", SUM_TYPES))
        tokens.done()
        return op
    if name == "prelu":
        policy = tokens.choice("prelu policy", tuple(POLICIES)) if tokens.more() else "common"
        tokens.done()
        return Prelu(policy)
    alg = _eltwise_name(name)
    if alg is not None:
        values = [0.0, 0.0, 1.0]
        for i, what in enumerate(("alpha", "beta", "scale")):
            if tokens.more():
                values[i] = tokens.number(f"{alg} {what}")
        tokens.done()
        return Eltwise(alg, *values)
    alg = _binary_name(name)
    if alg is not None:
        if not tokens.more():
            raise tokens.error(f"binary '{alg}' needs the second tensor's data type ({alg}:DT[:POLICY[:TAG]])")
        dt = tokens.choice(f"{alg} data type", BINARY_TYPES)
        policy, tag = "common", "any"
        if tokens.more():
            text = tokens.next(f"{alg} policy").lower()
            if not text.isdigit() and text not in POLICIES:
                raise tokens.error(f"unknown {alg} policy '{text}' (known: {', '.join(POLICIES)}, or a mask)")
            policy = str(int(text)) if text.isdigit() else text
        if tokens.more():
            tag = tokens.next(f"{alg} tag")
        tokens.done()
        return Binary(alg, dt, policy, tag)
    if name in ("select", "binary_select"):
        raise UnsupportedError(
            f"{option} '{entry}': binary 'select' takes a third tensor, which xegen does not support"
        )
    if name == "dw" or re.match(r"dw_k\d", name):
        raise UnsupportedError(f"{option} '{entry}': fused depthwise convolutions are not supported")
    known = ", ".join(["sum", "prelu", *ELTWISE_ALGORITHMS, *BINARY_ALGORITHMS])
    raise tokens.error(f"unknown post-op '{tokens.fields[0]}' (known: {known})")


def parse_post_ops(text: str, option: str = "--attr-post-ops") -> tuple[PostOp, ...]:
    """The post-ops of a benchdnn `--attr-post-ops` value ('' for none)."""
    text = text.strip().strip("'\"")
    if not text:
        return ()
    if "," in text:
        raise Error(f"{option} '{text}': lists of post-op chains (',') are not supported; give one chain")
    entries = [entry.strip() for entry in text.split("+")]
    if not all(entries):
        raise Error(f"{option} '{text}': an empty post-op (a '+' with nothing on one side)")
    return tuple(_parse_entry(option, entry) for entry in entries)


# -- where post-ops apply ----------------------------------------------------------------------


def broadcast_dims(mask: int, dst_dims: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions of a tensor spanning `mask` of the destination's (1 elsewhere)."""
    if mask >> len(dst_dims):
        raise UnsupportedError(f"broadcast mask {mask} names dimensions beyond the destination's {len(dst_dims)}")
    return tuple(size if mask >> i & 1 else 1 for i, size in enumerate(dst_dims))


# -- reference ---------------------------------------------------------------------------------


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


def eltwise(op: Eltwise, x: np.ndarray) -> np.ndarray:
    """oneDNN's forward formula for `op.alg` in float64, times `op.scale`."""
    a, b = op.alpha, op.beta
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        value = {
            "abs": lambda: np.abs(x),
            "clip": lambda: np.where(x > b, b, np.where(x > a, x, a)),
            "clip_v2": lambda: np.where(x >= b, b, np.where(x > a, x, a)),
            "elu": lambda: np.where(x > 0, x, a * np.expm1(x)),
            "exp": lambda: np.exp(x),
            "gelu_erf": lambda: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
            "gelu_tanh": lambda: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
            "hardsigmoid": lambda: np.maximum(0, np.minimum(1, a * x + b)),
            "hardswish": lambda: x * np.maximum(0, np.minimum(1, a * x + b)),
            "linear": lambda: a * x + b,
            "log": lambda: np.log(x),
            "logistic": lambda: 1 / (1 + np.exp(-x)),
            "mish": lambda: x * np.tanh(np.logaddexp(0, x)),
            "pow": lambda: a * np.power(x, b),
            "relu": lambda: np.where(x > 0, x, a * x),
            "round": lambda: np.rint(x),
            "soft_relu": lambda: np.logaddexp(0, a * x) / a,
            "sqrt": lambda: np.sqrt(x),
            "square": lambda: x * x,
            "swish": lambda: x / (1 + np.exp(-a * x)),
            "tanh": lambda: np.tanh(x),
        }[op.alg]()
    return value * op.scale


def binary(alg: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """oneDNN's binary algorithms in float64 (comparisons give 1.0 or 0.0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "add": np.add,
            "sub": np.subtract,
            "mul": np.multiply,
            "div": np.divide,
            "min": np.minimum,
            "max": np.maximum,
            "ge": np.greater_equal,
            "gt": np.greater,
            "le": np.less_equal,
            "lt": np.less,
            "eq": np.equal,
            "ne": np.not_equal,
        }[alg](x, y).astype(np.float64)


def apply(op: PostOp, x: np.ndarray, operand: np.ndarray | None) -> np.ndarray:
    """One post-op on float64 values `x`; `operand` is sum's old destination, binary's second
    tensor or prelu's weights (broadcastable to x)."""
    if isinstance(op, Eltwise):
        return eltwise(op, x)
    assert operand is not None, op  # the other post-ops read a second tensor
    if isinstance(op, Sum):
        return op.scale * (operand.astype(np.float64) - op.zero_point) + x
    if isinstance(op, Binary):
        return binary(op.alg, x, operand.astype(np.float64))
    return np.where(x > 0, x, operand.astype(np.float64) * x)
