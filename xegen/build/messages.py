"""Loads and stores as `send` messages: the IR of the messages the plan chose (`xegen.plan.messages`).

Coordinates are unpacked into problem components once per distinct coordinate and bound with
`let`, in the scope where their value is fixed (before the K loop for M and N, at the top of the
loop body for K); view index arithmetic and masks stay inline for the optimizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..conv.index import Idx, all_of, lane_ids, lane_var
from ..hw import Platform
from ..ir import Call, Expr, Fence, Let, Load, Names, Send, Stmt, Var, const, free_vars, pointer_arg, ptr, store
from ..ir.expr import Broadcast, IntImm, Shuffle
from ..ir.types import U32
from ..plan.block2d import Block2dPlan
from ..plan.gemm import Gemm, View, linear_stride
from ..plan.messages import LaneRun, LinePlan, Run, is_block
from ..plan.scratch import TICKET, Scratch
from ..plan.tiles import Line, TileLayout
from .affine import merge_bounds, split_bound, split_offset


class Scope:
    """`let`s collected for one point of the loop nest (before the loop, or in its body)."""

    def __init__(self, names: Names):
        self.names = names
        self.lets: list[tuple[Var, Expr]] = []
        # values computed once per scope (Idx values, a coordinate's components with its conditions,
        # ...) under keys that tell the kinds apart: each caller knows the type of what it stored
        self.memo: dict[tuple, Any] = {}

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
    moving: Scope | None = field(default=None, compare=False)  # where `shift` changes (None: `scope`)

    @property
    def body(self) -> Scope:
        """The scope values of `start + shift` are bound in."""
        return self.moving or self.scope


def lanes_of(scope: Scope, lanes: int) -> Idx:
    """The lane-index vector 0..lanes-1, bound once per kernel."""
    key = ("lanes", lanes)
    if key not in scope.memo:
        var = lane_var(lanes)
        scope.names.used.add(var.name)
        scope.lets.append((var, lane_ids(lanes)))
        scope.memo[key] = Idx(var, 0, lanes - 1)
    return scope.memo[key]


def components(
    gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope
) -> tuple[dict[str, Idx], list[Expr]]:
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
            memo[key] = _unpacked(
                gemm,
                origin,
                origin.start + origin.shift + offset,
                lanes,
                lane_scope,
                f"{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else ""),
                origin.body,
            )
    return memo[key]


def view_components(
    view: View, gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope
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
        coord = origin.body.bind(f"{origin.dim}_{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else ""), coord)
        condition = coord.below(dim.size)
        memo[key] = {dim.inner.name: coord}, [condition] if condition is not None else []
    return memo[key]


def _is_linear(view: View, gemm: Gemm, origin: Origin) -> bool:
    key = ("linear view", view.tensor, view.dims, origin.dim)
    memo = origin.scope.memo
    if key not in memo:
        memo[key] = linear_stride(view, gemm.dim(origin.dim)) is not None
    return memo[key]


def _unpacked(
    gemm: Gemm, origin: Origin, coord: Idx, lanes: int, lane_scope: Scope, suffix: str, scope: Scope
) -> tuple[dict[str, Idx], list[Expr]]:
    """Every component of `coord` (+ lane ids), each bound in `scope` to a let named
    `<component>_<suffix>`."""
    if lanes > 1:
        coord = coord + lanes_of(lane_scope, lanes)
    values, _ = gemm.dim(origin.dim).unpack(coord)
    bound = {name: scope.bind(f"{name}_{suffix}", value) for name, value in values.items()}
    # re-derive the bound condition on the let-bound outermost component
    outer = gemm.dim(origin.dim).components[0]
    condition = bound[outer.name].below(outer.size)
    return bound, [condition] if condition is not None else []


def _moved_inner(
    gemm: Gemm, origin: Origin, offset: int, lanes: int, lane_scope: Scope
) -> tuple[dict[str, Idx], list[Expr]]:
    """The components of `start`, with `shift + offset (+ lane ids)` added to the innermost."""
    base_key = ("start", origin.dim, origin.start.expr)
    memo = origin.scope.memo
    if base_key not in memo:
        memo[base_key] = _unpacked(
            gemm, origin, origin.start, 1, lane_scope, origin.base_tag or origin.tag, origin.scope
        )
    base, condition = memo[base_key]
    inner = gemm.dim(origin.dim).inner
    moved = base[inner.name] + origin.shift + offset
    if lanes > 1:
        moved = moved + lanes_of(lane_scope, lanes)
    # start's innermost component is a multiple of align below the component's size
    high = inner.size - origin.align + origin.shift.hi + offset + lanes - 1
    moved = Idx(moved.expr, max(moved.lo, 0), min(moved.hi, high))
    suffix = f"{origin.tag}{offset}" + (f"x{lanes}" if lanes > 1 else "")
    return {**base, inner.name: origin.body.bind(f"{inner.name}_{suffix}", moved)}, condition


def _line_coordinates(line: Line, plan: LinePlan) -> tuple[int, int, int, int]:
    """(row offset, col offset, row lanes, col lanes) of a line's first element: lanes along the
    line for an element per lane, across lines for a vector message's line per lane."""
    along, across = (1, line.lanes) if plan.vector else (line.length, 1)
    if plan.line_dim == 1:
        return line.other, line.start, across, along
    return line.start, line.other, along, across


def _line_access(
    view: View,
    gemm: Gemm,
    line: Line,
    plan: LinePlan,
    origins: tuple[Origin, Origin],
    group: Idx,
    lane_scope: Scope,
    scattered: bool,
) -> tuple[Idx, list[Expr]]:
    """A line's element index in the view's tensor and the conditions under which it is read:
    the GEMM bounds of its coordinates, then the view's masks."""
    r, c, row_lanes, col_lanes = _line_coordinates(line, plan)
    values: dict[str, Idx] = {"g": group}
    conditions: list[Expr] = []
    for origin, offset, lanes in ((origins[0], r, row_lanes), (origins[1], c, col_lanes)):
        vector = lanes if scattered or plan.vector else 1
        comps, bound = view_components(view, gemm, origin, offset, vector, lane_scope)
        values.update(comps)
        conditions += bound
    address, view_masks = view.access(values)
    return address, conditions + view_masks


def shared_conditions(
    view: View,
    gemm: Gemm,
    lines: list[Line],
    plan: LinePlan,
    origins: tuple[Origin, Origin],
    group: Idx,
    lane_scope: Scope,
) -> list[Expr]:
    """The scalar conditions every one of the loads `emit_global` makes of `lines` is masked by:
    where one fails, the whole tile reads as zeros (a padded 3x3's tap whose input row is
    outside the input, for every pixel of a tile within one output row)."""
    shared: list[Expr] | None = None
    for line in lines:
        _, conditions = _line_access(view, gemm, line, plan, origins, group, lane_scope, not plan.block)
        scalar = [c for c in conditions if c.type.lanes == 1]
        shared = scalar if shared is None else [c for c in shared if c in scalar]
    return shared or []


def emit_global(
    view: View,
    gemm: Gemm,
    memory: Var,
    layout: TileLayout,
    lines: list[Line],
    plan: LinePlan,
    origins: tuple[Origin, Origin],
    group: Idx,
    lane_scope: Scope,
    op: str,
    atomic: str = "",
    hoist_rows: bool = False,
    implied: Sequence[Expr] = (),
    base: int = 0,
    gate: Expr | None = None,
    returns: bool = False,
) -> tuple[list[Stmt], bool]:
    """Messages moving `lines` of the GRF tile `layout` to or from `view` in global memory;
    `hoist_rows`: bounds-checked rows of one block message each get their own loop-invariant
    part of the offset bound before the loop (below); `implied`: conditions the messages run
    under already (the K guard), left out of their masks; `base`: the view's first byte in
    `memory`; `gate`: a scalar condition every message runs under too (in its mask);
    `returns`: atomics return the old values (`Send.returns`).

    Returns the sends and whether any has a mask (so the caller zeroes the registers first)."""
    size = view.type.size
    sends: list[Stmt] = []
    masked = False
    scattered = atomic != "" or not plan.block
    addressed: list[tuple[Line, Expr, list[Expr]]] = []
    for line in lines:
        address, conditions = _line_access(view, gemm, line, plan, origins, group, lane_scope, scattered)
        conditions = [c for c in conditions if c not in implied]
        byte_offset = address.expr * size + base if base else address.expr * size
        if byte_offset.type.lanes > 1:
            byte_offset, conditions = _hoisted(byte_offset, conditions, origins, lane_scope)
        addressed.append((line, byte_offset, conditions))
    if hoist_rows and any(conditions for _, o, conditions in addressed if o.type.lanes == 1):
        # bounds-checked rows (an im2col tile's): each row's own part of the offset bound before
        # the loop, so that an iteration adds to it what every row shares.  (Rows of a view
        # addressed linearly, checked by nothing, already share one pointer at constant distances.)
        addressed = [
            (line, *_hoisted(o, conditions, origins, lane_scope)) if o.type.lanes == 1 else (line, o, conditions)
            for line, o, conditions in addressed
        ]
    for line, byte_offset, conditions in addressed:
        mask = all_of([gate, *conditions])
        masked |= mask is not None
        register = ptr(layout.buffer, line.base * layout.type.size)
        if plan.vector:
            # one lane per line, each gathering the line's dwords; the registers hold them
            # component-major: dword e of lane s at (e*lanes + s)*4
            func = Send(op, "scattered", "global", U32, line.lanes, elems=line.length * size // 4)
            sends.append(Call(func, (ptr(memory, 0), _vector(byte_offset, line.lanes), register, mask)))
        elif scattered:
            offsets = _vector(byte_offset, line.length)
            func = Send(op, "scattered", "global", view.type, line.length, atomic=atomic, returns=returns)
            sends.append(Call(func, (ptr(memory, 0), offsets, register, mask)))
        else:
            func = Send(op, "block", "global", view.type, line.length * max(1, plan.interleave))
            sends.append(Call(func, (ptr(memory, byte_offset), register, mask)))
    return sends, masked


def emit_block2d(view: View, memory: Var, buffer: Var, plan: Block2dPlan, origins: tuple[Origin, Origin]) -> list[Stmt]:
    """The 2D block messages of `plan` (`xegen.plan.block2d`): each block's first column and row
    are the tile origin's coordinates (plus the block's place in the tile); no mask, since
    what lies outside the surface reads as zero."""
    sends: list[Stmt] = []
    for block in plan.blocks:
        coords = [_coordinate(origin, offset) for origin, offset in zip(origins, (block.row, block.col), strict=True)]
        y, x = coords[plan.surface.row_dim], coords[1 - plan.surface.row_dim]
        x = x.div(plan.ops)  # transposed: columns of dwords, each `ops` elements of the view
        base = ptr(memory, plan.surface.base * view.type.size)
        sends.append(Call(plan.message, (base, x.expr, y.expr, ptr(buffer, block.register), None)))
    return sends


def _coordinate(origin: Origin, offset: int) -> Idx:
    """The GEMM coordinate `origin.start + origin.shift + offset`, bound once per scope."""
    key = ("coordinate", origin.dim, origin.tag, origin.shift.expr, offset)
    memo = origin.scope.memo
    if key not in memo:
        memo[key] = origin.body.bind(f"{origin.dim}_{origin.tag}{offset}", origin.start + origin.shift + offset)
    return memo[key]


def _hoisted(
    byte_offset: Expr, conditions: list[Expr], origins: tuple[Origin, Origin], lane_scope: Scope
) -> tuple[Expr, list[Expr]]:
    """A message's address (and a vector message's bounds) with their loop-invariant parts bound
    before the loop (`affine`): values of lets in the origins' other scopes (the K loop body)
    change per iteration, the rest does not."""
    scopes = {id(s): s for origin in origins for s in (origin.scope, origin.body) if s is not lane_scope}
    variant = {var for scope in scopes.values() for var, _ in scope.lets}
    if not variant:
        return byte_offset, conditions

    def bind(e: Expr) -> Expr:
        return lane_scope.bind("fixed", Idx(e, 0, 0)).expr

    def bind_changing(e: Expr) -> Expr:
        """A per-iteration vector, bound once in the scope whose lets it reads (the messages of
        an iteration share it), or left inline when it reads more than one."""
        used = free_vars(e)
        owners = [scope for scope in scopes.values() if any(var in used for var, _ in scope.lets)]
        if len(owners) != 1:
            return e
        memo = owners[0].memo
        if ("changing", e) not in memo:
            memo["changing", e] = owners[0].bind("lane_offset", Idx(e, 0, 0)).expr
        return memo["changing", e]

    def bind_if_fixed(e: Expr) -> Expr:  # a merged bound: before the loop unless it changes in it
        return e if variant.intersection(free_vars(e)) else bind(e)

    offset = split_offset(byte_offset, variant, bind, bind_changing)
    bounds = [split_bound(c, variant, bind, bind_changing) for c in conditions]
    return offset, merge_bounds(bounds, bind_if_fixed)


def _vector(e: Expr, lanes: int) -> Expr:
    return e if e.type.lanes == lanes else Broadcast(e, lanes)


def slm_run_messages(
    op: str,
    slm: Var,
    grf: TileLayout,
    runs: Sequence[Run | LaneRun],
    base: Idx,
    base_alignment: int,
    hw: Platform,
    lane_scope: Scope,
) -> list[Stmt]:
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
        if is_block(run, size, base_alignment):
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


def zero_fill(buffer: Var, bytes_: int, grf_bytes: int, byte: int = 0, start: int = 0) -> list[Stmt]:
    """Stores of zero dwords over a whole GRF buffer (masked loads leave their lanes alone), or
    its bytes from `start`, two GRFs per store: a move may write two registers.  With `byte`,
    every byte holds it instead (a source zero point, s8 or u8)."""
    lanes = 2 * grf_bytes // 4
    dword = repeated_byte(byte)
    stores: list[Stmt] = []
    for offset in range(start, bytes_, 2 * grf_bytes):
        count = min(lanes, (bytes_ - offset) // 4)
        if count <= 0:
            break
        value = dword if count == 1 else Broadcast(dword, count)
        stores.append(store(buffer, offset, value))
    return stores


def masked_fill(layout: TileLayout, sends: list[Stmt], grf_bytes: int, byte: int = 0) -> list[Stmt]:
    """`zero_fill` of the registers of `layout` that no unmasked load of `sends` writes whole:
    what a masked load may leave as it was, and what no load writes (padding)."""
    written: set[int] = set()
    for s in sends:
        assert isinstance(s, Call) and isinstance(s.func, Send)
        if s.args[-1] is None:
            offset = pointer_arg(s.args[-2]).offset
            assert isinstance(offset, IntImm)  # (a tile's registers: `emit_global`)
            first = offset.value
            end = first + s.func.register_bytes
            written.update(range(-(-first // grf_bytes), end // grf_bytes))
    grfs = [g for g in range(-(-layout.bytes // grf_bytes)) if g not in written]
    stores: list[Stmt] = []
    for first, last in _runs(grfs):
        end = min(layout.bytes, (last + 1) * grf_bytes)
        stores += zero_fill(layout.buffer, end, grf_bytes, byte, first * grf_bytes)
    return stores


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as runs of consecutive ones, (first, last) each."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def repeated_byte(byte: int) -> IntImm:
    """The s32 dword whose four bytes are `byte` (an s8 or u8 value)."""
    return IntImm(int.from_bytes(bytes([byte & 0xFF]) * 4, "little", signed=True))


def take_ticket(scratch_buffer: Var, scratch: Scratch, slot: Expr, k_split: int) -> tuple[list[Stmt], Expr]:
    """The thread's ticket from counter `slot` of a scratch buffer (`xegen.plan.scratch`), after
    a fence that completes its adds for every group: the statements, and the condition that its
    group came last (the old count is k_split - 1)."""
    take = Send("atomic", "scattered", "global", U32, 1, atomic="inc", returns=True)
    counter = (ptr(scratch_buffer, scratch.counters), slot * 4, ptr(TICKET, 0), None)
    last = Load(TICKET, const(0), U32).eq(const(k_split - 1, U32))
    return [Call(Fence("global")), Call(take, counter)], last
