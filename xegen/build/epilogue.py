"""After the K loop: accumulators to output values (convert, bias, ReLU, convert/saturate).

The conversion follows oneDNN: integer accumulators that meet a bias or a non-s32 destination go
through f32; the bias (any float type) is added in f32; ReLU is max(v, 0); the result is rounded
to the destination type — to nearest even and saturated for integer destinations.  Rounding to
nearest even is spelled as plain f32 arithmetic, `(|v| + 2^23) - 2^23` for |v| < 2^23 (where
adding 2^23 leaves no fraction bits), so it lowers to two adds or to `rnde`.
"""

from __future__ import annotations

from ..ir import Expr, Load, Stmt, cast, const, max_, select, store
from ..ir.expr import Broadcast, Shuffle
from ..ir.types import F32, S32, Type
from ..plan.tiles import TileLayout, overlaps

TWO_POW_23 = 8388608.0


def round_half_even(v: Expr) -> Expr:
    """Round f32 values to the nearest integer, ties to even (values stay f32)."""
    magnitude = max_(v, -v)
    rounded = (magnitude + TWO_POW_23) - TWO_POW_23
    rounded = select(magnitude < TWO_POW_23, rounded, magnitude)
    return select(v < 0.0, -rounded, rounded)


def output_value(acc: Expr, acc_type: Type, out_type: Type, bias: Expr | None, relu: bool) -> Expr:
    """The output value of accumulators `acc` (with an optional bias already in f32)."""
    exact_integer = acc_type == S32 and bias is None and out_type == S32
    if exact_integer:
        return max_(acc, 0) if relu else acc
    v = cast(F32, acc)
    if bias is not None:
        v = v + bias
    if relu:
        v = max_(v, 0.0)
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


def finish(acc: TileLayout, out: TileLayout, bias: TileLayout | None, relu: bool, bias_gate: Expr | None = None
           ) -> list[Stmt]:
    """Stores of output values from `acc` into the store tile `out`, row by row.

    `bias` is a 1 x cols tile; `bias_gate` (a bool) adds it only where true (the first K slice
    when K is split across groups)."""
    stores: list[Stmt] = []
    for rows, cols, op, ap in overlaps(out, acc):
        lanes = cols.count
        for i in range(rows.count):
            r = rows.start + i * rows.step
            value = _load(acc, ap.offset(r, cols.start), _lane_stride(ap, cols), lanes)
            bias_value = None
            if bias is not None:
                bias_value = _bias_lanes(bias, cols)
                if bias_gate is not None:
                    zero = const(0.0) if lanes == 1 else Broadcast(const(0.0), lanes)
                    bias_value = select(bias_gate, bias_value, zero)
            result = output_value(value, acc.type, out.type, bias_value, relu)
            stride = _lane_stride(op, cols)
            stores.append(store(out.buffer, op.offset(r, cols.start) * out.type.size, result,
                                stride=None if stride == 1 or lanes == 1 else stride * out.type.size))
    return stores


def _bias_lanes(bias: TileLayout, cols) -> Expr:
    """The bias of columns `cols` as f32 lanes: one load per evenly spaced run of the bias tile
    (its lines start on GRF boundaries), joined with a shuffle when there are several."""
    offsets = [bias.offset(0, cols.start + j * cols.step) for j in range(cols.count)]
    runs: list[list[int]] = [[offsets[0]]]
    for offset in offsets[1:]:
        run = runs[-1]
        if len(run) == 1 or offset - run[-1] == run[1] - run[0]:
            run.append(offset)
        else:
            runs.append([offset])
    loads = [_load(bias, run[0], run[1] - run[0] if len(run) > 1 else 1, len(run)) for run in runs]
    value = loads[0] if len(loads) == 1 else Shuffle(tuple(loads), tuple(range(cols.count)))
    return cast(F32, value)
