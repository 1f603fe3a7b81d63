"""After the K loop: accumulators to output values (convert, bias, post-ops, convert/saturate).

The conversion follows oneDNN: integer accumulators that meet a bias, a post-op or a non-s32
destination go through f32; the bias (any float type) is added in f32; the post-op chain runs in
f32 on the values while they are in registers, each op reading its own tensor (sum's old
destination, a binary's second tensor, prelu's weights) from a tile loaded like the bias; the
result is rounded to the destination type — to nearest even and saturated for integer
destinations (`postops.round_half_even`).  With int8 scales and zero points: `dst =
post_ops(scale * acc + bias) / dst_scale + zero_point` (`Scaling`).  With a source zero point
(which the loads put in the padding) the accumulators first lose its compensation, the zero point
times the sum of each output channel's weights (summed in the K loop): in s32, exactly, and
before the store tile is written, since the sums may live there (`plan.kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..conv.postops import Eltwise, PostOp
from ..conv.quantization import Quantization
from ..ir import Expr, Load, Stmt, cast, const, max_, select, store
from ..ir.expr import Broadcast, Shuffle
from ..ir.types import F32, S32, Type
from ..plan.tiles import TileLayout, overlaps
from .postops import Lets, post_op_value, round_half_even

#: a post-op and the tile of the tensor it reads (None: it reads none)
PostOpTile = tuple[PostOp, TileLayout | None]


@dataclass(frozen=True)
class Scaling:
    """The int8 quantization attributes with the tiles of their per-channel tensors."""

    quantization: Quantization
    wei_scales: TileLayout | None = None
    dst_zero_points: TileLayout | None = None
    compensation: TileLayout | None = None  # src zero point x column sums of the weights (s32)

    @staticmethod
    def of(
        quantization: Quantization, tiles: dict[str, TileLayout], compensation: TileLayout | None = None
    ) -> Scaling | None:
        if not quantization:
            return None
        return Scaling(quantization, tiles.get("wei_scales"), tiles.get("dst_zero_points"), compensation)

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


def output_value(
    acc: Expr,
    acc_type: Type,
    out_type: Type,
    bias: Expr | None,
    post_ops: Sequence[tuple[PostOp, Expr | None]] = (),
    scale: Expr | None = None,
    dst_scale: float = 1.0,
    zero_point: Expr | None = None,
    bind: Lets | None = None,
) -> Expr:
    """The output value of accumulators `acc` (with an optional bias already in f32): times
    `scale`, plus the bias, through the post-ops (each with its operand as f32 lanes, or None),
    divided by `dst_scale` (times its reciprocal), plus `zero_point`; values used more than once
    are bound with `bind`."""
    bind = bind if bind is not None else Lets("v", share=False)
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
        v = post_op_value(op, v, operand, bind)
    if dst_scale != 1.0:
        v = v * _broadcast(1.0 / dst_scale, v.type.lanes)
    if zero_point is not None:
        v = v + zero_point
    if out_type.is_int:
        return cast(out_type, round_half_even(v, bind), saturate=True)
    return cast(out_type, v)


def _load(layout: TileLayout, start: int, stride: int, lanes: int) -> Expr:
    t = layout.type.with_lanes(lanes)
    size = layout.type.size
    return Load(layout.buffer, const(start * size), t, None if stride == 1 or lanes == 1 else stride * size)


def _lane_stride(piece, cols) -> int:
    """Elements between consecutive columns `cols` in `piece`."""
    return piece.col_stride * cols.step // piece.cols.step


def finish(
    acc: TileLayout,
    out: TileLayout,
    bias: TileLayout | None,
    post_ops: Sequence[PostOpTile] = (),
    bias_gate: Expr | None = None,
    scaling: Scaling | None = None,
    bias_per_row: bool = False,
) -> list[Stmt]:
    """Stores of output values from `acc` into the store tile `out`, row by row.

    `bias` is a 1 x cols tile, or with `bias_per_row` a 1 x rows tile whose column r every
    column of row r adds; `bias_gate` (a bool) adds it only where true (the first K slice
    when K is split across groups).  A post-op's tile has the rows of `out` or one row (then
    every row reads it)."""
    stores: list[Stmt] = []
    if scaling is not None and scaling.compensation is not None:
        stores += _compensate(acc, out, scaling.compensation)
    # values used more than once are bound to lets; the plain float epilogue and a lone relu read
    # each value once and keep their expression trees.  Rounding to an integer reads its value
    # three times: unshared, the whole tree is lowered three times over.
    rounds = out.type.is_int and not (acc.type == S32 and out.type == S32 and bias is None)
    sharing = [op for op, _ in post_ops] not in ([], [Eltwise("relu")]) or scaling is not None or rounds
    for rows, cols, op, ap in overlaps(out, acc):
        lanes = cols.count
        for i in range(rows.count):
            r = rows.start + i * rows.step
            value = _load(acc, ap.offset(r, cols.start), _lane_stride(ap, cols), lanes)
            bias_value = None
            if bias is not None:
                bias_value = _tile_lanes(bias, 0, cols) if not bias_per_row else _row_element(bias, r, lanes)
                if bias_gate is not None:
                    zero = const(0.0) if lanes == 1 else Broadcast(const(0.0), lanes)
                    bias_value = select(bias_gate, bias_value, zero)
            operands = [
                (post_op, None if tile is None else _tile_lanes(tile, r if tile.rows > 1 else 0, cols))
                for post_op, tile in post_ops
            ]
            scale, zero_point = scaling.lanes(cols) if scaling is not None else (None, None)
            dst_scale = scaling.quantization.dst_scale if scaling is not None else 1.0
            bind = Lets(f"{out.buffer.name}_{len(stores)}_v", share=sharing)
            result = output_value(value, acc.type, out.type, bias_value, operands, scale, dst_scale, zero_point, bind)
            stride = _lane_stride(op, cols)
            stores.append(
                bind.wrap(
                    store(
                        out.buffer,
                        op.offset(r, cols.start) * out.type.size,
                        result,
                        stride=None if stride == 1 or lanes == 1 else stride * out.type.size,
                    )
                )
            )
    return stores


def _compensate(acc: TileLayout, out: TileLayout, sums: TileLayout) -> list[Stmt]:
    """acc[r][c] -= sums[c] for every accumulator, in place, visiting them as `finish` does."""
    stores: list[Stmt] = []
    for rows, cols, _, ap in overlaps(out, acc):
        stride = _lane_stride(ap, cols)
        for i in range(rows.count):
            offset = ap.offset(rows.start + i * rows.step, cols.start)
            value = _load(acc, offset, stride, cols.count) - _tile_values(sums, 0, cols)
            stores.append(
                store(
                    acc.buffer,
                    offset * acc.type.size,
                    value,
                    stride=None if stride == 1 or cols.count == 1 else stride * acc.type.size,
                )
            )
    return stores


def _row_element(tile: TileLayout, col: int, lanes: int) -> Expr:
    """Element `col` of a one-row tile as f32, in `lanes` lanes."""
    value = cast(F32, _load(tile, tile.offset(0, col), 1, 1))
    return value if lanes == 1 else Broadcast(value, lanes)


def _tile_lanes(tile: TileLayout, row: int, cols) -> Expr:
    """Row `row` of `tile` at columns `cols` as f32 lanes (`_tile_values`)."""
    if tile.cols == 1:
        value = cast(F32, _load(tile, tile.offset(row, 0), 1, 1))
        return value if cols.count == 1 else Broadcast(value, cols.count)
    return cast(F32, _tile_values(tile, row, cols))


def _tile_values(tile: TileLayout, row: int, cols) -> Expr:
    """Row `row` of `tile` at columns `cols`: one load per evenly spaced run (the tile's lines
    start on GRF boundaries), joined with a shuffle when there are several; a one-column tile
    is broadcast."""
    if tile.cols == 1:
        value = _load(tile, tile.offset(row, 0), 1, 1)
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
    return loads[0] if len(loads) == 1 else Shuffle(tuple(loads), tuple(range(cols.count)))
