"""After the K loop: accumulators to output values (convert, bias, post-ops, convert/saturate).

The conversion follows oneDNN: integer accumulators that meet a bias, a post-op or a non-s32
destination go through f32; the bias (any float type) is added in f32; the post-op chain runs in
f32 on the values while they are in registers, each op reading its own tensor (sum's old
destination, a binary's second tensor, prelu's weights) from a tile loaded like the bias; the
result is rounded to the destination type — to nearest even and saturated for integer
destinations.  Rounding to nearest even is spelled as plain f32 arithmetic, `(|v| + 2^23) - 2^23`
for |v| < 2^23 (where adding 2^23 leaves no fraction bits), so it lowers to two adds or to `rnde`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..conv.postops import Eltwise, PostOp, Prelu, Sum
from ..conv.quantization import Quantization
from ..ir import Expr, Load, Stmt, cast, const, mad, max_, min_, select, store, unary
from ..ir.expr import Broadcast, Shuffle
from ..ir.types import F32, S32, Type
from ..plan.tiles import TileLayout, overlaps

#: a post-op and the tile of the tensor it reads (None: it reads none)
PostOpTile = tuple[PostOp, TileLayout | None]

TWO_POW_23 = 8388608.0


def round_half_even(v: Expr) -> Expr:
    """Round f32 values to the nearest integer, ties to even (values stay f32)."""
    magnitude = max_(v, -v)
    rounded = (magnitude + TWO_POW_23) - TWO_POW_23
    rounded = select(magnitude < TWO_POW_23, rounded, magnitude)
    return select(v < 0.0, -rounded, rounded)


def _lanes_of(value: float, like: Expr) -> Expr:
    c = const(float(value))
    return c if like.type.lanes == 1 else Broadcast(c, like.type.lanes)


def eltwise_value(op: Eltwise, v: Expr) -> Expr:
    """oneDNN's forward formula of `op` on f32 values `v` (times op.scale)."""
    a, b = (_lanes_of(x, v) for x in (op.alpha, op.beta))
    zero, one = _lanes_of(0.0, v), _lanes_of(1.0, v)
    alg = op.alg
    if alg == "relu":
        result = max_(v, zero) if op.alpha == 0 else select(v > zero, v, v * a)
    elif alg == "clip":
        result = select(v > b, b, select(v > a, v, a))
    elif alg == "clip_v2":
        result = select(v >= b, b, select(v > a, v, a))
    elif alg in ("hardsigmoid", "hardswish"):
        result = max_(min_(mad(b, v, a), one), zero)
        if alg == "hardswish":
            result = v * result
    elif alg == "linear":
        result = mad(b, v, a)
    elif alg == "abs":
        result = max_(v, -v)
    elif alg == "square":
        result = v * v
    elif alg == "round":
        result = round_half_even(v)
    else:
        result = _transcendental(op, v)
    return result if op.scale == 1.0 else result * _lanes_of(op.scale, v)


# Transcendental algorithms, from the math unit's exp2, log2, sqrt and inv ------------------------

LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453


def exp(v: Expr) -> Expr:
    return unary("exp2", v * _lanes_of(LOG2_E, v))


def log(v: Expr) -> Expr:
    return unary("log2", v) * _lanes_of(LN_2, v)


def logistic(v: Expr) -> Expr:
    """1 / (1 + e^-v)."""
    return unary("inv", exp(-v) + _lanes_of(1.0, v))


def tanh(v: Expr) -> Expr:
    """sign(v) (1 - t) / (1 + t) with t = e^(-2|v|) <= 1, so nothing overflows."""
    one = _lanes_of(1.0, v)
    t = unary("exp2", max_(v, -v) * _lanes_of(-2 * LOG2_E, v))
    magnitude = (one - t) * unary("inv", one + t)
    return select(v < _lanes_of(0.0, v), -magnitude, magnitude)


def soft_plus(v: Expr) -> Expr:
    """log(1 + e^v) as max(v, 0) + log(1 + e^-|v|), which neither overflows nor loses large v."""
    return max_(v, _lanes_of(0.0, v)) + log(_lanes_of(1.0, v) + exp(-max_(v, -v)))


# Abramowitz and Stegun, Handbook of Mathematical Functions (1964), formula 7.1.26:
# erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) e^(-z^2), t = 1/(1 + p z), z >= 0,
# with absolute error at most 1.5e-7.
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(v: Expr) -> Expr:
    z = max_(v, -v)
    t = unary("inv", mad(_lanes_of(1.0, v), z, _lanes_of(ERF_P, v)))
    poly = _lanes_of(ERF_A[4], v)
    for a in reversed(ERF_A[:4]):
        poly = mad(_lanes_of(a, v), poly, t)
    magnitude = _lanes_of(1.0, v) - poly * t * exp(-(z * z))
    return select(v < _lanes_of(0.0, v), -magnitude, magnitude)


def power(v: Expr, beta: float) -> Expr:
    """v^beta (beta != 0) as numpy's power: small whole exponents by multiplication (any sign of
    v), 0.5 as sqrt, other whole ones from |v| with the sign of odd powers, the rest as
    2^(beta log2 v) (NaN for negative v, as numpy)."""
    n = int(beta)
    if beta == n and abs(n) <= 4:
        result = v
        for _ in range(abs(n) - 1):
            result = result * v
        return unary("inv", result) if n < 0 else result
    if beta == 0.5:
        return unary("sqrt", v)
    if beta == n:
        magnitude = unary("exp2", unary("log2", max_(v, -v)) * _lanes_of(beta, v))
        return select(v < _lanes_of(0.0, v), -magnitude, magnitude) if n % 2 else magnitude
    return unary("exp2", unary("log2", v) * _lanes_of(beta, v))


def _transcendental(op: Eltwise, v: Expr) -> Expr:
    a, b = (_lanes_of(x, v) for x in (op.alpha, op.beta))
    half, one = _lanes_of(0.5, v), _lanes_of(1.0, v)
    alg = op.alg
    if alg == "exp":
        return exp(v)
    if alg == "log":
        return log(v)
    if alg == "sqrt":
        return unary("sqrt", v)
    if alg == "logistic":
        return logistic(v)
    if alg == "tanh":
        return tanh(v)
    if alg == "elu":
        return select(v > _lanes_of(0.0, v), v, a * (exp(v) - one))
    if alg == "swish":
        return v * logistic(a * v)
    if alg == "soft_relu":
        return soft_plus(a * v) * _lanes_of(1.0 / op.alpha, v)
    if alg == "mish":
        return v * tanh(soft_plus(v))
    if alg == "gelu_tanh":
        inner = _lanes_of(math.sqrt(2 / math.pi), v) * mad(v, v * v * v, _lanes_of(0.044715, v))
        return half * v * (one + tanh(inner))
    if alg == "gelu_erf":
        return half * v * (one + erf(v * _lanes_of(1 / math.sqrt(2), v)))
    if alg == "pow":
        return a * power(v, op.beta) if op.beta != 0 else a
    raise AssertionError(alg)


_COMPARISONS = ("ge", "gt", "le", "lt", "eq", "ne")


def post_op_value(op: PostOp, v: Expr, operand: Expr | None) -> Expr:
    """One post-op on f32 values `v`; `operand` holds its tensor's values as f32 lanes."""
    if isinstance(op, Eltwise):
        return eltwise_value(op, v)
    if isinstance(op, Sum):
        old = operand if op.zero_point == 0 else operand - _lanes_of(op.zero_point, v)
        return v + old if op.scale == 1.0 else mad(v, old, _lanes_of(op.scale, v))
    if isinstance(op, Prelu):
        return select(v > _lanes_of(0.0, v), v, v * operand)
    alg = op.alg
    if alg in _COMPARISONS:
        cond = {"ge": v >= operand, "gt": v > operand, "le": v <= operand, "lt": v < operand,
                "eq": v.eq(operand), "ne": v.ne(operand)}[alg]
        return select(cond, _lanes_of(1.0, v), _lanes_of(0.0, v))
    if alg == "div":
        return v * unary("inv", operand)
    return {"add": lambda: v + operand, "sub": lambda: v - operand, "mul": lambda: v * operand,
            "min": lambda: min_(v, operand), "max": lambda: max_(v, operand)}[alg]()


@dataclass(frozen=True)
class Scaling:
    """The int8 quantization attributes with the tiles of their per-channel tensors."""

    quantization: Quantization
    wei_scales: TileLayout | None = None
    dst_zero_points: TileLayout | None = None

    @staticmethod
    def of(quantization: Quantization, tiles: dict[str, TileLayout]) -> Scaling | None:
        if not quantization:
            return None
        return Scaling(quantization, tiles.get("wei_scales"), tiles.get("dst_zero_points"))

    def lanes(self, cols) -> tuple[Expr | None, Expr | None]:
        """(the factor of the sums, the zero point) at columns `cols` as f32 lanes, or None."""
        q = self.quantization
        lanes = cols.count
        scale = None
        if self.wei_scales is not None:
            scale = _tile_lanes(self.wei_scales, 0, cols)
            if q.src_scale != 1.0:
                scale = scale * _broadcast(q.src_scale, lanes)
        elif q.src_scale * q.wei_scale != 1.0:
            scale = _broadcast(q.src_scale * q.wei_scale, lanes)
        zero_point = None
        if self.dst_zero_points is not None:
            zero_point = _tile_lanes(self.dst_zero_points, 0, cols)
        elif q.dst_zero_point:
            zero_point = _broadcast(float(q.dst_zero_point), lanes)
        return scale, zero_point


def _broadcast(value: float, lanes: int) -> Expr:
    c = const(float(value))
    return c if lanes == 1 else Broadcast(c, lanes)


def output_value(acc: Expr, acc_type: Type, out_type: Type, bias: Expr | None,
                 post_ops: Sequence[tuple[PostOp, Expr | None]] = (), scale: Expr | None = None,
                 dst_scale: float = 1.0, zero_point: Expr | None = None) -> Expr:
    """The output value of accumulators `acc` (with an optional bias already in f32): times
    `scale`, plus the bias, through the post-ops (each with its operand as f32 lanes, or None),
    divided by `dst_scale` (times its reciprocal), plus `zero_point`."""
    plain_relu = [op for op, _ in post_ops] == [Eltwise("relu")]
    scaled = scale is not None or dst_scale != 1.0 or zero_point is not None
    if acc_type == S32 and bias is None and out_type == S32 and (not post_ops or plain_relu) and not scaled:
        return max_(acc, 0) if post_ops else acc
    v = cast(F32, acc)
    if scale is not None:
        v = v * scale
    if bias is not None:
        v = v + bias
    for op, operand in post_ops:
        v = post_op_value(op, v, operand)
    if dst_scale != 1.0:
        v = v * _lanes_of(1.0 / dst_scale, v)
    if zero_point is not None:
        v = v + zero_point
    if out_type.is_int:
        return cast(out_type, round_half_even(v), saturate=True)
    return cast(out_type, v)


def _load(layout: TileLayout, start: int, stride: int, lanes: int) -> Expr:
    t = layout.type.with_lanes(lanes)
    size = layout.type.size
    return Load(layout.buffer, const(start * size), t, None if stride == 1 or lanes == 1 else stride * size)


def _lane_stride(piece, cols) -> int:
    """Elements between consecutive columns `cols` in `piece`."""
    return piece.col_stride * cols.step // piece.cols.step


def finish(acc: TileLayout, out: TileLayout, bias: TileLayout | None, post_ops: Sequence[PostOpTile] = (),
           bias_gate: Expr | None = None, scaling: Scaling | None = None) -> list[Stmt]:
    """Stores of output values from `acc` into the store tile `out`, row by row.

    `bias` is a 1 x cols tile; `bias_gate` (a bool) adds it only where true (the first K slice
    when K is split across groups).  A post-op's tile has the rows of `out` or one row (then
    every row reads it)."""
    stores: list[Stmt] = []
    for rows, cols, op, ap in overlaps(out, acc):
        lanes = cols.count
        for i in range(rows.count):
            r = rows.start + i * rows.step
            value = _load(acc, ap.offset(r, cols.start), _lane_stride(ap, cols), lanes)
            bias_value = None
            if bias is not None:
                bias_value = _tile_lanes(bias, 0, cols)
                if bias_gate is not None:
                    zero = const(0.0) if lanes == 1 else Broadcast(const(0.0), lanes)
                    bias_value = select(bias_gate, bias_value, zero)
            operands = [(post_op, None if tile is None else _tile_lanes(tile, r if tile.rows > 1 else 0, cols))
                        for post_op, tile in post_ops]
            scale, zero_point = scaling.lanes(cols) if scaling is not None else (None, None)
            dst_scale = scaling.quantization.dst_scale if scaling is not None else 1.0
            result = output_value(value, acc.type, out.type, bias_value, operands, scale, dst_scale, zero_point)
            stride = _lane_stride(op, cols)
            stores.append(store(out.buffer, op.offset(r, cols.start) * out.type.size, result,
                                stride=None if stride == 1 or lanes == 1 else stride * out.type.size))
    return stores


def _tile_lanes(tile: TileLayout, row: int, cols) -> Expr:
    """Row `row` of `tile` at columns `cols` as f32 lanes: one load per evenly spaced run (the
    tile's lines start on GRF boundaries), joined with a shuffle when there are several; a
    one-column tile is broadcast."""
    if tile.cols == 1:
        value = cast(F32, _load(tile, tile.offset(row, 0), 1, 1))
        return value if cols.count == 1 else Broadcast(value, cols.count)
    offsets = [tile.offset(row, cols.start + j * cols.step) for j in range(cols.count)]
    runs: list[list[int]] = [[offsets[0]]]
    for offset in offsets[1:]:
        run = runs[-1]
        if len(run) == 1 or offset - run[-1] == run[1] - run[0]:
            run.append(offset)
        else:
            runs.append([offset])
    loads = [_load(tile, run[0], run[1] - run[0] if len(run) > 1 else 1, len(run)) for run in runs]
    value = loads[0] if len(loads) == 1 else Shuffle(tuple(loads), tuple(range(cols.count)))
    return cast(F32, value)
