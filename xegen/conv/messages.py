"""Loads and stores as `send` messages sized like the hardware's.

A tile of a view is moved in lines: each line is one message of up to L elements along one tile
dimension, into (or out of) GRF starting on a register boundary.  A line is a *block* message when
its elements are adjacent in memory and share one in-bounds condition: the dimension's innermost
component indexes a tensor dimension with stride 1 in the layout, runs never cross a block or a
component boundary, the start is dword aligned, and the line fits the platform's largest block
message.  Otherwise it is a *scattered* message with one address and one mask bit per element,
at most `max_message_simd` elements.  (The order of preference is conv-generator.md's: block
first, scattered when no block fits.)

Coordinates are unpacked into problem components once per distinct coordinate and bound with
`let`, in the scope where their value is fixed (before the K loop for M and N, at the top of the
loop body for K); view index arithmetic and masks stay inline for the optimizer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..hw import Platform
from ..ir import Call, Expr, Let, Send, Stmt, Var, ptr, store
from ..ir.expr import Broadcast, IntImm
from ..ir.types import Type
from .gemm import Gemm, View
from .index import Idx, all_of, lane_ids, lane_var
from ..schedule.loop import Names
from .tiles import Line, TileLayout


class Scope:
    """`let`s collected for one point of the loop nest (before the loop, or in its body)."""

    def __init__(self, names: Names):
        self.names = names
        self.lets: list[tuple[Var, Expr]] = []
        self.memo: dict[object, object] = {}

    def bind(self, hint: str, value: Idx) -> Idx:
        if value.is_const or isinstance(value.expr, Var):
            return value
        var = Var(self.names.fresh(hint), value.expr.type)
        self.lets.append((var, value.expr))
        return Idx(var, value.lo, value.hi)

    def wrap(self, body: Stmt) -> Stmt:
        for var, value in reversed(self.lets):
            body = Let(var, value, body)
        return body


@dataclass(frozen=True)
class Origin:
    """Where a tile starts along one GEMM dimension ("" for the single row of a 1-D view)."""

    dim: str
    start: Idx
    tag: str  # short name for the component lets, e.g. "m" gives `ow_m3`
    scope: Scope = field(compare=False)


def lanes_of(scope: Scope, lanes: int) -> Idx:
    """The lane-index vector 0..lanes-1, bound once per kernel."""
    key = ("lanes", lanes)
    if key not in scope.memo:
        var = lane_var(lanes)
        scope.names.used.add(var.name)
        scope.lets.append((var, lane_ids(lanes)))
        scope.memo[key] = Idx(var, 0, lanes - 1)
    return scope.memo[key]


def components(gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope) -> tuple[dict[str, Idx], list[Expr]]:
    """Component values of coordinate `origin.start + offset (+ lane ids)` and its bound condition."""
    if origin.dim == "":
        return {}, []
    key = (origin.dim, origin.tag, offset, lanes)
    memo = origin.scope.memo
    if key not in memo:
        coord = origin.start + offset
        if lanes > 1:
            coord = coord + lanes_of(lane_scope, lanes)
        values, _ = gemm.dim(origin.dim).unpack(coord)
        suffix = f"{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else "")
        bound = {name: origin.scope.bind(f"{name}_{suffix}", value) for name, value in values.items()}
        # re-derive the bound condition on the let-bound outermost component
        outer = gemm.dim(origin.dim).components[0]
        condition = bound[outer.name].below(outer.size)
        memo[key] = (bound, [condition] if condition is not None else [])
    return memo[key]


# Planning --------------------------------------------------------------------------------------

SCATTERED_COST = 2  # a scattered message costs about two block messages (an address per element)


@dataclass(frozen=True)
class LinePlan:
    line_dim: int  # tile dimension the lines run along: 0 (rows) or 1 (columns)
    block: bool  # block messages (else scattered)
    length: int  # elements per line


def tile_dims(view: View) -> tuple[str, str]:
    return view.dims if len(view.dims) == 2 else ("", view.dims[0])


def _divisors_descending(n: int, limit: int) -> list[int]:
    return [d for d in range(min(n, limit), 0, -1) if n % d == 0]


def block_length(view: View, gemm: Gemm, hw: Platform, dim_index: int, extent: int, origin_multiple: int) -> int:
    """The longest block line along tile dimension `dim_index` (0 if none is possible)."""
    name = tile_dims(view)[dim_index]
    if name == "":
        return 0
    comp = gemm.dim(name).inner
    tensor_dim = view.unit.get(comp.name)
    if tensor_dim is None:
        return 0
    layout = view.layout
    run = layout.unit_stride_run(tensor_dim)
    if run == 0:
        return 0
    plain = not layout.inner_blocks(tensor_dim)
    size = view.type.size
    for length in _divisors_descending(extent, hw.max_block_message_bytes // size):
        if comp.size % length or origin_multiple % length or (not plain and run % length):
            continue
        alignment = math.gcd(length, *layout.strides_besides(tensor_dim)) * size
        if (length * size) % 4 == 0 and alignment % 4 == 0:
            return length
    return 0


def plan_lines(view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], multiples: tuple[int, int],
               allow_block: bool = True, line_dims: tuple[int, ...] = (1, 0)) -> LinePlan:
    """Choose how a tile of `extents` moves: the cheapest set of messages, counting a scattered
    message (one address per element) as two block messages; block first at equal cost."""
    candidates: list[tuple[int, int, int, LinePlan]] = []
    for d in line_dims:
        lines_across = extents[1 - d]
        if allow_block:
            length = block_length(view, gemm, hw, d, extents[d], multiples[d])
            if length:
                candidates.append((lines_across * (extents[d] // length), 0, -d, LinePlan(d, True, length)))
        length = min(extents[d], hw.max_message_simd)
        cost = SCATTERED_COST * lines_across * -(-extents[d] // length)
        candidates.append((cost, 1, -d, LinePlan(d, False, length)))
    return min(candidates, key=lambda c: c[:3])[3]


# Emission --------------------------------------------------------------------------------------

def _line_coordinates(line: Line, line_dim: int) -> tuple[int, int, int, int]:
    """(row offset, col offset, row lanes, col lanes) of a line's first element."""
    if line_dim == 1:
        return line.other, line.start, 1, line.length
    return line.start, line.other, line.length, 1


def emit_global(view: View, gemm: Gemm, memory: Var, layout: TileLayout, lines: list[Line], plan: LinePlan,
                origins: tuple[Origin, Origin], group: Idx, lane_scope: Scope, op: str,
                atomic: str = "") -> tuple[list[Stmt], bool]:
    """Messages moving `lines` of the GRF tile `layout` to or from `view` in global memory.

    Returns the sends and whether any has a mask (so the caller zeroes the registers first)."""
    size = view.type.size
    sends: list[Stmt] = []
    masked = False
    scattered = atomic != "" or not plan.block
    for line in lines:
        r, c, row_lanes, col_lanes = _line_coordinates(line, plan.line_dim)
        values: dict[str, Idx] = {"g": group}
        conditions: list[Expr] = []
        for origin, offset, lanes in ((origins[0], r, row_lanes), (origins[1], c, col_lanes)):
            vector = lanes if scattered else 1
            comps, bound = components(gemm, origin, offset, vector, lane_scope)
            values.update(comps)
            conditions += bound
        offset, view_masks = view.access(values)
        mask = all_of(conditions + view_masks)
        masked |= mask is not None
        register = ptr(layout.buffer, line.base * layout.type.size)
        if scattered:
            offsets = _vector(offset.expr * size, line.length)
            func = Send(op, "scattered", "global", view.type, line.length, atomic=atomic)
            sends.append(Call(func, (ptr(memory, 0), offsets, register, mask)))
        else:
            func = Send(op, "block", "global", view.type, line.length)
            sends.append(Call(func, (ptr(memory, offset.expr * size), register, mask)))
    return sends, masked


def _vector(e: Expr, lanes: int) -> Expr:
    return e if e.type.lanes == lanes else Broadcast(e, lanes)


def slm_line_messages(op: str, slm: Var, slm_pitch: int, grf: TileLayout, lines: list[Line], line_dim: int,
                      row_origin: Idx, col_origin: Idx, origin_multiples: tuple[int, int], type: Type,
                      hw: Platform, lane_scope: Scope) -> list[Stmt]:
    """Messages between GRF lines and a dense SLM tile.

    The SLM tile is stored along the line dimension: element (y, x) of the oriented tile (x along
    the lines) is at y*slm_pitch + x.  `row_origin`/`col_origin` place the GRF tile in it."""
    size = type.size
    sends: list[Stmt] = []
    y_origin, x_origin = (row_origin, col_origin) if line_dim == 1 else (col_origin, row_origin)
    x_multiple = origin_multiples[1] if line_dim == 1 else origin_multiples[0]
    if grf.type.size == size:
        lines = merge_contiguous_lines(lines, slm_pitch, hw.max_block_message_bytes // size)
    for line in lines:
        start = (y_origin + line.other) * slm_pitch + x_origin + line.start
        # y_origin moves the start by multiples of the pitch, x_origin by multiples of x_multiple
        alignment = math.gcd(slm_pitch * size, x_multiple * size, (line.other * slm_pitch + line.start) * size)
        register = ptr(grf.buffer, line.base * grf.type.size)
        bytes_ = line.length * size
        if alignment % 4 == 0 and bytes_ % 4 == 0 and bytes_ <= hw.max_block_message_bytes:
            func = Send(op, "block", "slm", type, line.length)
            sends.append(Call(func, (ptr(slm, start.expr * size), register, None)))
        else:
            for first in range(0, line.length, hw.max_message_simd):
                count = min(hw.max_message_simd, line.length - first)
                offsets = (start + first + lanes_of(lane_scope, count)) if count > 1 else start + first
                func = Send(op, "scattered", "slm", type, count)
                reg = ptr(grf.buffer, (line.base + first) * grf.type.size)
                sends.append(Call(func, (ptr(slm, 0), _vector(offsets.expr * size, count), reg, None)))
    return sends


def merge_contiguous_lines(lines: list[Line], pitch: int, max_length: int) -> list[Line]:
    """Lines that follow each other both in the SLM tile (row pitch `pitch`) and in the registers,
    joined into longer lines of at most `max_length` elements: one block message instead of one
    per row when a thread's rows are whole rows of the SLM tile."""
    merged: list[Line] = []
    for line in lines:
        last = merged[-1] if merged else None
        if (last is not None and line.other * pitch + line.start == last.other * pitch + last.start + last.length
                and line.base == last.base + last.length and last.length + line.length <= max_length):
            merged[-1] = Line(last.other, last.start, last.length + line.length, last.base)
        else:
            merged.append(line)
    return merged


def zero_fill(buffer: Var, bytes_: int, grf_bytes: int) -> list[Stmt]:
    """Stores of zero dwords over a whole GRF buffer (masked loads leave their lanes alone)."""
    lanes = grf_bytes // 4
    stores: list[Stmt] = []
    for offset in range(0, bytes_, grf_bytes):
        count = min(lanes, (bytes_ - offset) // 4)
        if count <= 0:
            break
        value = IntImm(0) if count == 1 else Broadcast(IntImm(0), count)
        stores.append(store(buffer, offset, value))
    return stores
