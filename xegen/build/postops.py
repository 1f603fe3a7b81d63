"""Post-ops as IR arithmetic on f32 lanes: oneDNN's formulas (`xegen.conv.postops`), with the
transcendental algorithms built from the math unit's exp2, log2, sqrt and inv.

A value used more than once is bound to a `let` (`Lets`), so it is computed once: the e-graph
pass keeps lets of loaded values (they are not pure integer arithmetic), and the shared
subexpressions of a store's value would otherwise be lowered at every use.

    exp(v)      = exp2(v log2 e)                  log(v) = log2(v) ln 2
    logistic(v) = inv(1 + exp(-v))
    tanh(v)     = sign(v) (1 - t) / (1 + t),  t = e^(-2|v|) <= 1   (nothing overflows)
    softplus(v) = max(v, 0) + log(1 + e^-|v|)                       (nor here)
    erf(v)      = Abramowitz and Stegun 7.1.26 (absolute error <= 1.5e-7)
    pow(v, b)   = multiplications for whole b up to 4, sqrt for 0.5, else exp2(b log2 v)
    d / y       = d * inv(y)
"""

from __future__ import annotations

import math

from ..conv.postops import Eltwise, PostOp, Prelu, Sum
from ..ir import Expr, Let, Load, Stmt, Var, const, mad, max_, min_, select, unary
from ..ir.expr import Broadcast, FloatImm

TWO_POW_23 = 8388608.0
LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453

# Abramowitz and Stegun, Handbook of Mathematical Functions (1964), formula 7.1.26:
# erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) e^(-z^2), t = 1/(1 + p z), z >= 0
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class Lets:
    """Values bound to let variables named `<prefix><n>`, wrapped around a statement (none when
    not `share`: the plain epilogue keeps its expression trees)."""

    def __init__(self, prefix: str, share: bool = True):
        self.prefix, self.share = prefix, share
        self.bound: list[tuple[Var, Expr]] = []

    def __call__(self, e: Expr) -> Expr:
        """`e`, or a variable bound to it when computing it costs something."""
        if (
            not self.share
            or isinstance(e, (Var, Load, FloatImm))
            or (isinstance(e, Broadcast) and isinstance(e.value, (Var, FloatImm)))
        ):
            return e
        var = Var(f"{self.prefix}{len(self.bound)}", e.type)
        self.bound.append((var, e))
        return var

    def wrap(self, stmt: Stmt) -> Stmt:
        for var, value in reversed(self.bound):
            stmt = Let(var, value, stmt)
        return stmt


def _lanes_of(value: float, like: Expr) -> Expr:
    c = const(float(value))
    return c if like.type.lanes == 1 else Broadcast(c, like.type.lanes)


def round_half_even(v: Expr, bind: Lets) -> Expr:
    """Round f32 values to the nearest integer, ties to even (values stay f32), as plain f32
    arithmetic: `(|v| + 2^23) - 2^23` for |v| < 2^23, where adding 2^23 leaves no fraction bits."""
    v = bind(v)
    magnitude = bind(max_(v, -v))
    rounded = (magnitude + TWO_POW_23) - TWO_POW_23
    rounded = select(magnitude < TWO_POW_23, rounded, magnitude)
    return select(v < 0.0, -rounded, rounded)


def exp(v: Expr) -> Expr:
    return unary("exp2", v * _lanes_of(LOG2_E, v))


def log(v: Expr) -> Expr:
    return unary("log2", v) * _lanes_of(LN_2, v)


def logistic(v: Expr) -> Expr:
    return unary("inv", exp(-v) + _lanes_of(1.0, v))


def _with_sign_of(v: Expr, magnitude: Expr, bind: Lets) -> Expr:
    magnitude = bind(magnitude)
    return select(v < _lanes_of(0.0, v), -magnitude, magnitude)


def tanh(v: Expr, bind: Lets) -> Expr:
    v = bind(v)
    one = _lanes_of(1.0, v)
    t = bind(unary("exp2", max_(v, -v) * _lanes_of(-2 * LOG2_E, v)))
    return _with_sign_of(v, (one - t) * unary("inv", one + t), bind)


def soft_plus(v: Expr, bind: Lets) -> Expr:
    v = bind(v)
    return max_(v, _lanes_of(0.0, v)) + log(_lanes_of(1.0, v) + exp(-max_(v, -v)))


def erf(v: Expr, bind: Lets) -> Expr:
    v = bind(v)
    z = bind(max_(v, -v))
    t = bind(unary("inv", mad(_lanes_of(1.0, v), z, _lanes_of(ERF_P, v))))
    poly = _lanes_of(ERF_A[4], v)
    for a in reversed(ERF_A[:4]):
        poly = mad(_lanes_of(a, v), poly, t)
    return _with_sign_of(v, _lanes_of(1.0, v) - poly * t * exp(-(z * z)), bind)


def power(v: Expr, beta: float, bind: Lets) -> Expr:
    """v^beta (beta != 0) as numpy's power: negative v has a real power only for whole beta."""
    n = int(beta)
    v = bind(v)
    if beta == n and abs(n) <= 4:
        result = v
        for _ in range(abs(n) - 1):
            result = result * v
        return unary("inv", result) if n < 0 else result
    if beta == 0.5:
        return unary("sqrt", v)
    if beta == n:
        magnitude = unary("exp2", unary("log2", max_(v, -v)) * _lanes_of(beta, v))
        return _with_sign_of(v, magnitude, bind) if n % 2 else magnitude
    return unary("exp2", unary("log2", v) * _lanes_of(beta, v))


def eltwise_value(op: Eltwise, v: Expr, bind: Lets) -> Expr:
    """oneDNN's forward formula of `op` on f32 values `v` (times op.scale)."""
    if op.alg in _READ_TWICE or (op.alg == "relu" and op.alpha != 0):
        v = bind(v)
    a, b = (_lanes_of(x, v) for x in (op.alpha, op.beta))
    zero, one, half = _lanes_of(0.0, v), _lanes_of(1.0, v), _lanes_of(0.5, v)
    formulas = {
        "relu": lambda: max_(v, zero) if op.alpha == 0 else select(v > zero, v, v * a),
        "clip": lambda: select(v > b, b, select(v > a, v, a)),
        "clip_v2": lambda: select(v >= b, b, select(v > a, v, a)),
        "hardsigmoid": lambda: max_(min_(mad(b, v, a), one), zero),
        "hardswish": lambda: v * max_(min_(mad(b, v, a), one), zero),
        "linear": lambda: mad(b, v, a),
        "abs": lambda: max_(v, -v),
        "square": lambda: v * v,
        "round": lambda: round_half_even(v, bind),
        "exp": lambda: exp(v),
        "log": lambda: log(v),
        "sqrt": lambda: unary("sqrt", v),
        "logistic": lambda: logistic(v),
        "tanh": lambda: tanh(v, bind),
        "elu": lambda: select(v > zero, v, a * (exp(v) - one)),
        "swish": lambda: v * logistic(a * v),
        "soft_relu": lambda: soft_plus(a * v, bind) * _lanes_of(1.0 / op.alpha, v),
        "mish": lambda: v * tanh(soft_plus(v, bind), bind),
        "gelu_tanh": lambda: (
            half
            * v
            * (one + tanh(_lanes_of(math.sqrt(2 / math.pi), v) * mad(v, v * v * v, _lanes_of(0.044715, v)), bind))
        ),
        "gelu_erf": lambda: half * v * (one + erf(v * _lanes_of(1 / math.sqrt(2), v), bind)),
        "pow": lambda: a * power(v, op.beta, bind) if op.beta != 0 else a,
    }
    result = formulas[op.alg]()
    return result if op.scale == 1.0 else result * _lanes_of(op.scale, v)


_COMPARISONS = ("ge", "gt", "le", "lt", "eq", "ne")
#: the algorithms whose formula reads the value more than once (the others that do bind it themselves)
_READ_TWICE = ("clip", "clip_v2", "hardswish", "abs", "square", "elu", "swish", "mish", "gelu_tanh", "gelu_erf")


def post_op_value(op: PostOp, v: Expr, operand: Expr | None, bind: Lets) -> Expr:
    """One post-op on f32 values `v`; `operand` holds its tensor's values as f32 lanes."""
    if isinstance(op, Eltwise):
        return eltwise_value(op, v, bind)
    if isinstance(op, Sum):
        old = operand if op.zero_point == 0 else operand - _lanes_of(op.zero_point, v)
        return v + old if op.scale == 1.0 else mad(v, old, _lanes_of(op.scale, v))
    v = bind(v)
    if isinstance(op, Prelu):
        return select(v > _lanes_of(0.0, v), v, v * operand)
    alg = op.alg
    if alg in _COMPARISONS:
        cond = {
            "ge": v >= operand,
            "gt": v > operand,
            "le": v <= operand,
            "lt": v < operand,
            "eq": v.eq(operand),
            "ne": v.ne(operand),
        }[alg]
        return select(cond, _lanes_of(1.0, v), _lanes_of(0.0, v))
    if alg == "div":
        return v * unary("inv", operand)
    return {
        "add": lambda: v + operand,
        "sub": lambda: v - operand,
        "mul": lambda: v * operand,
        "min": lambda: min_(v, operand),
        "max": lambda: max_(v, operand),
    }[alg]()
