"""Loads and stores as `send` messages sized like the hardware's.

A tile of a view is moved in lines: each line is one message of up to L elements along one tile
dimension, into (or out of) GRF starting on a register boundary.  A line is a *block* message when
its elements are adjacent in memory and share one in-bounds condition: the dimension's innermost
component indexes a tensor dimension with stride 1 in the layout, runs never cross a block or a
component boundary, the start is dword aligned, and the line fits the platform's largest block
message.  Otherwise it is a *scattered* message with one address and one mask bit per element,
at most `max_message_simd` elements.  (The order of preference is oneDNN's (docs/design.md): block
first, scattered when no block fits.)

Coordinates are unpacked into problem components once per distinct coordinate and bound with
`let`, in the scope where their value is fixed (before the K loop for M and N, at the top of the
loop body for K); view index arithmetic and masks stay inline for the optimizer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..hw import Platform
from ..ir import Call, Expr, Let, Send, Stmt, Var, ptr, store
from ..ir.expr import Broadcast, IntImm, Shuffle
from ..ir.types import U32
from .affine import split_bound, split_offset
from .gemm import Gemm, View, linear_stride
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
    """Where a tile starts along one GEMM dimension ("" for the single row of a 1-D view):
    `start + shift`, where `start` is a multiple of `align` and `shift` (a thread's slice within
    the group tile, 0 for its own tile) is at least 0."""

    dim: str
    start: Idx
    tag: str  # short name for the component lets, e.g. "m" gives `ow_m3`
    scope: Scope = field(compare=False)
    align: int = 1
    shift: Idx = Idx.const(0)
    base_tag: str = ""  # names the components of `start` itself when they are shared ("" = tag)


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
    """Component values of coordinate `origin.start + origin.shift + offset (+ lane ids)` and its
    bound condition.

    When the coordinate stays inside the `align`-sized block that `start` begins and `align`
    divides the innermost component's size, only the innermost component moves: the others are
    those of `start`, unpacked once and shared by every offset and slice (no division per offset)."""
    if origin.dim == "":
        return {}, []
    key = (origin.dim, origin.tag, origin.shift.expr, offset, lanes)
    memo = origin.scope.memo
    if key not in memo:
        dim = gemm.dim(origin.dim)
        inner = dim.inner
        last = origin.shift.hi + offset + lanes - 1
        if origin.align > 1 and inner.size % origin.align == 0 and origin.shift.lo >= 0 and last < origin.align:
            memo[key] = _moved_inner(gemm, origin, offset, lanes, lane_scope)
        else:
            memo[key] = _unpacked(gemm, origin, origin.start + origin.shift + offset, lanes, lane_scope,
                                  f"{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else ""))
    return memo[key]


def view_components(view: View, gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope
                    ) -> tuple[dict[str, Idx], list[Expr]]:
    """`components`, or, where `view` addresses the origin's dimension linearly (`linear_stride`),
    the whole coordinate as its innermost component: no division into components."""
    if origin.dim == "" or len(gemm.dim(origin.dim).components) == 1 or not _is_linear(view, gemm, origin):
        return components(gemm, origin, offset, lanes, lane_scope)
    key = ("linear", origin.dim, origin.tag, origin.shift.expr, offset, lanes)
    memo = origin.scope.memo
    if key not in memo:
        dim = gemm.dim(origin.dim)
        coord = origin.start + origin.shift + offset
        if lanes > 1:
            coord = coord + lanes_of(lane_scope, lanes)
        coord = origin.scope.bind(f"{origin.dim}_{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else ""), coord)
        condition = coord.below(dim.size)
        memo[key] = {dim.inner.name: coord}, [condition] if condition is not None else []
    return memo[key]


def _is_linear(view: View, gemm: Gemm, origin: Origin) -> bool:
    key = ("linear view", view.tensor, view.dims, origin.dim)
    memo = origin.scope.memo
    if key not in memo:
        memo[key] = linear_stride(view, gemm.dim(origin.dim)) is not None
    return memo[key]


def _unpacked(gemm: Gemm, origin: Origin, coord: Idx, lanes: int, lane_scope: Scope,
              suffix: str) -> tuple[dict[str, Idx], list[Expr]]:
    """Every component of `coord` (+ lane ids), each bound to a let named `<component>_<suffix>`."""
    if lanes > 1:
        coord = coord + lanes_of(lane_scope, lanes)
    values, _ = gemm.dim(origin.dim).unpack(coord)
    bound = {name: origin.scope.bind(f"{name}_{suffix}", value) for name, value in values.items()}
    # re-derive the bound condition on the let-bound outermost component
    outer = gemm.dim(origin.dim).components[0]
    condition = bound[outer.name].below(outer.size)
    return bound, [condition] if condition is not None else []


def _moved_inner(gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope
                 ) -> tuple[dict[str, Idx], list[Expr]]:
    """The components of `start`, with `shift + offset (+ lane ids)` added to the innermost."""
    base_key = ("start", origin.dim, origin.start.expr)
    memo = origin.scope.memo
    if base_key not in memo:
        memo[base_key] = _unpacked(gemm, origin, origin.start, 1, lane_scope, origin.base_tag or origin.tag)
    base, condition = memo[base_key]
    inner = gemm.dim(origin.dim).inner
    moved = base[inner.name] + origin.shift + offset
    if lanes > 1:
        moved = moved + lanes_of(lane_scope, lanes)
    # start's innermost component is a multiple of align below the component's size
    high = inner.size - origin.align + origin.shift.hi + offset + lanes - 1
    moved = Idx(moved.expr, max(moved.lo, 0), min(moved.hi, high))
    suffix = f"{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else "")
    return {**base, inner.name: origin.scope.bind(f"{inner.name}_{suffix}", moved)}, condition


# Planning --------------------------------------------------------------------------------------

SCATTERED_COST = 2  # a scattered message costs about two block messages (an address per element)


@dataclass(frozen=True)
class LinePlan:
    line_dim: int  # tile dimension the lines run along: 0 (rows) or 1 (columns)
    block: bool  # lines contiguous in memory (block or vector messages), else scattered elements
    length: int  # elements per line
    lanes: int = 0  # vector messages: up to `lanes` lines per message, a line per lane; 0: a message per line

    @property
    def vector(self) -> bool:
        return self.lanes > 0


def tile_dims(view: View) -> tuple[str, str]:
    return view.dims if len(view.dims) == 2 else ("", view.dims[0])


def _divisors_descending(n: int, limit: int) -> list[int]:
    return [d for d in range(min(n, limit), 0, -1) if n % d == 0]


def block_lengths(view: View, gemm: Gemm, hw: Platform, dim_index: int, extent: int, origin_multiple: int) -> list[int]:
    """The lengths of block lines possible along tile dimension `dim_index`, longest first:
    contiguous in memory with one in-bounds condition, whole dwords, dword aligned."""
    name = tile_dims(view)[dim_index]
    if name == "":
        return []
    comp = gemm.dim(name).inner
    tensor_dim = view.unit.get(comp.name)
    if tensor_dim is None:
        return []
    layout = view.layout
    run = layout.unit_stride_run(tensor_dim)
    if run == 0:
        return []
    plain = not layout.inner_blocks(tensor_dim)
    size = view.type.size
    lengths = []
    for length in _divisors_descending(extent, hw.max_block_message_bytes // size):
        if comp.size % length or origin_multiple % length or (not plain and run % length):
            continue
        alignment = math.gcd(length, *layout.strides_besides(tensor_dim)) * size
        if (length * size) % 4 == 0 and alignment % 4 == 0:
            lengths.append(length)
    return lengths


def block_length(view: View, gemm: Gemm, hw: Platform, dim_index: int, extent: int, origin_multiple: int) -> int:
    """The longest block line along tile dimension `dim_index` (0 if none is possible)."""
    lengths = block_lengths(view, gemm, hw, dim_index, extent, origin_multiple)
    return lengths[0] if lengths else 0


VECTOR_DWORDS = 16  # longest line a vector message gathers per lane (in four messages of 4 dwords)


def line_plans(view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], multiples: tuple[int, int],
               allow_block: bool = True, line_dims: tuple[int, ...] = (1, 0), vector_lanes: tuple[int, ...] = ()
               ) -> list[tuple[int, LinePlan]]:
    """Every way to move a tile of `extents` with its cost in messages, cheapest first (block
    first at equal cost, then vector, then scattered): a block message costs 1, a scattered one
    (an address per element) SCATTERED_COST, a vector message gathering whole lines of up to
    `lanes` lines (`vector_lanes`) 1 per 4 dwords of a line plus 1 for its vector of addresses."""
    candidates: list[tuple[int, int, int, LinePlan]] = []
    for d in line_dims:
        lines_across = extents[1 - d]
        lengths = block_lengths(view, gemm, hw, d, extents[d], multiples[d]) if allow_block else []
        if lengths:
            length = lengths[0]
            candidates.append((lines_across * (extents[d] // length), 0, -d, LinePlan(d, True, length)))
        for length in lengths:
            dwords = length * view.type.size // 4
            for lanes in sorted(set(min(lanes, lines_across, hw.max_message_simd) for lanes in vector_lanes)):
                if lanes < 2 or dwords > VECTOR_DWORDS:
                    continue
                messages = -(-lines_across // lanes) * (extents[d] // length)
                cost = messages * (-(-dwords // 4) + 1)
                candidates.append((cost, 1, -d, LinePlan(d, True, length, lanes)))
        length = min(extents[d], hw.max_message_simd)
        cost = SCATTERED_COST * lines_across * -(-extents[d] // length)
        candidates.append((cost, 2, -d, LinePlan(d, False, length)))
    candidates.sort(key=lambda c: c[:3])
    return [(c[0], c[3]) for c in candidates]


def plan_lines(view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], multiples: tuple[int, int],
               allow_block: bool = True, line_dims: tuple[int, ...] = (1, 0)) -> LinePlan:
    """The cheapest way to move a tile of `extents` in block or scattered messages (`line_plans`)."""
    return line_plans(view, gemm, hw, extents, multiples, allow_block, line_dims)[0][1]


# Emission --------------------------------------------------------------------------------------

def _line_coordinates(line: Line, plan: LinePlan) -> tuple[int, int, int, int]:
    """(row offset, col offset, row lanes, col lanes) of a line's first element: lanes along the
    line for an element per lane, across lines for a vector message's line per lane."""
    along, across = (1, line.lanes) if plan.vector else (line.length, 1)
    if plan.line_dim == 1:
        return line.other, line.start, across, along
    return line.start, line.other, along, across


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
        r, c, row_lanes, col_lanes = _line_coordinates(line, plan)
        values: dict[str, Idx] = {"g": group}
        conditions: list[Expr] = []
        for origin, offset, lanes in ((origins[0], r, row_lanes), (origins[1], c, col_lanes)):
            vector = lanes if scattered or plan.vector else 1
            comps, bound = view_components(view, gemm, origin, offset, vector, lane_scope)
            values.update(comps)
            conditions += bound
        offset, view_masks = view.access(values)
        conditions += view_masks
        byte_offset = offset.expr * size
        if byte_offset.type.lanes > 1:
            byte_offset, conditions = _hoisted(byte_offset, conditions, origins, lane_scope)
        mask = all_of(conditions)
        masked |= mask is not None
        register = ptr(layout.buffer, line.base * layout.type.size)
        if plan.vector:
            # one lane per line, each gathering the line's dwords; the registers hold them
            # component-major: dword e of lane s at (e*lanes + s)*4
            func = Send(op, "scattered", "global", U32, line.lanes, elems=line.length * size // 4)
            sends.append(Call(func, (ptr(memory, 0), _vector(byte_offset, line.lanes), register, mask)))
        elif scattered:
            offsets = _vector(byte_offset, line.length)
            func = Send(op, "scattered", "global", view.type, line.length, atomic=atomic)
            sends.append(Call(func, (ptr(memory, 0), offsets, register, mask)))
        else:
            func = Send(op, "block", "global", view.type, line.length)
            sends.append(Call(func, (ptr(memory, byte_offset), register, mask)))
    return sends, masked


def _hoisted(byte_offset: Expr, conditions: list[Expr], origins: tuple[Origin, Origin], lane_scope: Scope
             ) -> tuple[Expr, list[Expr]]:
    """A vector message's address and bounds with their loop-invariant vector parts bound
    before the loop (`affine`): values of lets in the origins' other scopes (the K loop body)
    change per iteration, the rest does not."""
    variant = {var for origin in origins if origin.scope is not lane_scope for var, _ in origin.scope.lets}
    if not variant:
        return byte_offset, conditions

    def bind(e: Expr) -> Expr:
        return lane_scope.bind("fixed", Idx(e, 0, 0)).expr

    return split_offset(byte_offset, variant, bind), [split_bound(c, variant, bind) for c in conditions]


def _vector(e: Expr, lanes: int) -> Expr:
    return e if e.type.lanes == lanes else Broadcast(e, lanes)


@dataclass(frozen=True)
class Run:
    """Elements that follow each other both in a GRF buffer and in an SLM tile: `length`
    elements from element `register` of the buffer and from element `slm` of the tile."""

    register: int
    slm: int
    length: int


def contiguous_runs(register_offsets: np.ndarray, slm_offsets: np.ndarray) -> list[Run]:
    """The maximal runs of a tile whose elements sit at `register_offsets` in registers and
    `slm_offsets` in SLM (arrays of the tile's shape), in register order."""
    order = np.argsort(register_offsets, axis=None, kind="stable")
    grf = register_offsets.ravel()[order]
    slm = slm_offsets.ravel()[order]
    breaks = np.flatnonzero((np.diff(grf) != 1) | (np.diff(slm) != 1)) + 1
    starts = [0, *breaks.tolist()]
    ends = [*breaks.tolist(), len(grf)]
    return [Run(int(grf[a]), int(slm[a]), b - a) for a, b in zip(starts, ends)]


@dataclass(frozen=True)
class LaneRun:
    """A vector message's worth of a tile between registers and SLM: `lanes` lines, each
    `dwords` dwords contiguous in SLM from element `slm[s]` (s the lane), component-major in the
    registers from element `register` (dword e of lane s at dword e*lanes + s)."""

    register: int
    slm: tuple[int, ...]
    dwords: int

    @property
    def lanes(self) -> int:
        return len(self.slm)


def lane_runs(lines: list[Line], line_dim: int, slm_offsets: np.ndarray, size: int) -> list[LaneRun] | None:
    """The vector messages moving the lines of a vector line layout to a tile whose elements sit
    at `slm_offsets`: one per message of the layout, or None when a line is not contiguous in SLM."""
    runs = []
    for line in lines:
        starts = []
        for s in range(line.lanes):
            other = line.other + s
            along = slm_offsets[line.start:line.start + line.length, other] if line_dim == 0 else \
                slm_offsets[other, line.start:line.start + line.length]
            if not np.array_equal(along, along[0] + np.arange(line.length)):
                return None
            starts.append(int(along[0]))
        runs.append(LaneRun(line.base, tuple(starts), line.length * size // 4))
    return runs


def _is_block(run: Run, size: int, base_alignment: int) -> bool:
    """A run moves in block messages when its SLM address is dword aligned for every placement
    (`base_alignment`: the byte alignment of the runtime part) and it is whole dwords."""
    return math.gcd(base_alignment, run.slm * size) % 4 == 0 and (run.length * size) % 4 == 0


SLM_MESSAGE_COST = 2  # an SLM message and its address, in instructions (modeled)


def slm_message_cost(runs: list[Run | LaneRun], size: int, base_alignment: int, hw: Platform) -> int:
    """Modeled instructions of the messages moving `runs`: an address and a send per block
    message, SCATTERED_COST times that per scattered one, a vector of addresses and a send per 4
    dwords of each line per vector message."""
    cost = 0
    for run in runs:
        if isinstance(run, LaneRun):
            cost += 1 + -(-run.dwords // 4)
        elif _is_block(run, size, base_alignment):
            cost += SLM_MESSAGE_COST * -(-run.length * size // hw.max_block_message_bytes)
        else:
            cost += SLM_MESSAGE_COST * SCATTERED_COST * -(-run.length // hw.max_message_simd)
    return cost


def slm_run_messages(op: str, slm: Var, grf: TileLayout, runs: list[Run | LaneRun], base: Idx, base_alignment: int,
                     hw: Platform, lane_scope: Scope) -> list[Stmt]:
    """Messages moving `runs` between the GRF buffer of `grf` and SLM: run elements start at SLM
    element `base + run.slm`.  Block messages of up to the platform's largest block where the
    address is dword aligned, else scattered messages with one element per lane; a vector
    message per `LaneRun`."""
    size = grf.type.size
    longest = hw.max_block_message_bytes // size
    sends: list[Stmt] = []
    for run in runs:
        if isinstance(run, LaneRun):
            func = Send(op, "scattered", "slm", U32, run.lanes, elems=run.dwords)
            offsets = base + _lane_vector(run.slm, lane_scope)
            register = ptr(grf.buffer, run.register * size)
            sends.append(Call(func, (ptr(slm, 0), _vector(offsets.expr * size, run.lanes), register, None)))
            continue
        start = base + run.slm
        if _is_block(run, size, base_alignment):
            for first in range(0, run.length, longest):
                count = min(longest, run.length - first)
                func = Send(op, "block", "slm", grf.type, count)
                register = ptr(grf.buffer, (run.register + first) * size)
                sends.append(Call(func, (ptr(slm, (start + first).expr * size), register, None)))
            continue
        for first in range(0, run.length, hw.max_message_simd):
            count = min(hw.max_message_simd, run.length - first)
            offsets = (start + first + lanes_of(lane_scope, count)) if count > 1 else start + first
            func = Send(op, "scattered", "slm", grf.type, count)
            register = ptr(grf.buffer, (run.register + first) * size)
            sends.append(Call(func, (ptr(slm, 0), _vector(offsets.expr * size, count), register, None)))
    return sends


def _lane_vector(values: tuple[int, ...], lane_scope: Scope) -> Idx:
    """The constant vector `values` (one per lane): first + lane ids * step when it steps evenly."""
    first, count = values[0], len(values)
    step = values[1] - first if count > 1 else 0
    if count > 1 and all(v == first + i * step for i, v in enumerate(values)):
        return lanes_of(lane_scope, count) * step + first
    if count == 1:
        return Idx.const(first)
    return Idx(Shuffle(tuple(IntImm(v) for v in values), tuple(range(count))), min(values), max(values))


def zero_fill(buffer: Var, bytes_: int, grf_bytes: int) -> list[Stmt]:
    """Stores of zero dwords over a whole GRF buffer (masked loads leave their lanes alone), two
    GRFs per store: a move may write two registers."""
    lanes = 2 * grf_bytes // 4
    stores: list[Stmt] = []
    for offset in range(0, bytes_, 2 * grf_bytes):
        count = min(lanes, (bytes_ - offset) // 4)
        if count <= 0:
            break
        value = IntImm(0) if count == 1 else Broadcast(IntImm(0), count)
        stores.append(store(buffer, offset, value))
    return stores
