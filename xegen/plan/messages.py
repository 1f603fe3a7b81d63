"""Which messages move a tile: lines of block, vector or scattered messages, and their cost.

A tile of a view is moved in lines: each line is one message of up to L elements along one tile
dimension, into (or out of) GRF starting on a register boundary.  A line is a *block* message when
its elements are adjacent in memory and share one in-bounds condition: the dimension's innermost
component indexes a tensor dimension with stride 1 in the layout, runs never cross a block or a
component boundary, the start is dword aligned, and the line fits the platform's largest block
message.  Otherwise it is a *scattered* message with one address and one mask bit per element,
at most `max_message_simd` elements.  (The order of preference is oneDNN's (docs/design.md): block
first, scattered when no block fits.)  Between registers and SLM a tile moves in `Run`s of
elements contiguous on both sides (`LaneRun`s for vector messages).

The costs are modeled instructions, for the planner's choices; `xegen.build.messages` emits the
messages chosen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..conv.index import Idx
from ..hw import Platform
from ..ir import Var, free_vars
from .gemm import Component, Gemm, View
from .tiles import Line

SCATTERED_COST = 2  # a scattered message costs about two block messages (an address per element)


@dataclass(frozen=True)
class LinePlan:
    line_dim: int  # tile dimension the lines run along: 0 (rows) or 1 (columns)
    block: bool  # lines contiguous in memory (block or vector messages), else scattered elements
    length: int  # elements per line
    lanes: int = 0  # vector messages: up to `lanes` lines per message, a line per lane; 0: a message per line
    interleave: int = 0  # block lines of `interleave` rows each, the rows of a column in one dword (VNNI rows)

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


def interleaved_lengths(
    view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], multiples: tuple[int, int]
) -> tuple[int, list[int]]:
    """(rows per dword, lengths longest first) of the block lines that move a tile in dpas's
    VNNI form: each line the 4-byte groups of `4 / size` consecutive rows of `length` consecutive
    columns, where the layout interleaves the rows' tensor dimension in groups that small within
    the columns' (`Layout.interleaved_run`: B of a weights layout like `cdBa2b`).  A line's rows
    start at a multiple of the group and stay in one value of the outer row components (the
    innermost one's size a multiple of the group), so that one in-bounds condition holds for all
    its elements; (0, []) when the layout does not interleave them."""
    rows, cols = tile_dims(view)
    ops = 4 // view.type.size
    if rows == "" or ops == 1:
        return 0, []
    row_comp, col_comp = gemm.dim(rows).inner, gemm.dim(cols).inner
    row_dim, col_dim = view.unit.get(row_comp.name), view.unit.get(col_comp.name)
    if row_dim is None or col_dim is None:
        return 0, []
    run = view.layout.interleaved_run(col_dim, row_dim, ops)
    if run == 0 or row_comp.size % ops or extents[0] % ops or multiples[0] % ops or _checked(view, row_comp):
        return 0, []
    plain = len(view.layout.inner_blocks(col_dim)) == 0
    lengths = [
        length
        for length in _divisors_descending(extents[1], hw.max_block_message_bytes // 4)
        if col_comp.size % length == 0 and multiples[1] % length == 0 and (plain or run % length == 0)
    ]
    return ops, lengths


def _checked(view: View, component: Component) -> bool:
    """Whether an in-bounds condition of `view` looks at `component` (then the rows a line
    interleaves could differ in it)."""
    probe = Var(f"probe_{component.name}")
    _, masks = view.access({component.name: Idx.of(probe, 0, component.size - 1)})
    return any(probe in free_vars(mask) for mask in masks)


VECTOR_DWORDS = 16  # longest line a vector message gathers per lane (in four messages of 4 dwords)


def line_plans(
    view: View,
    gemm: Gemm,
    hw: Platform,
    extents: tuple[int, int],
    multiples: tuple[int, int],
    allow_block: bool = True,
    line_dims: tuple[int, ...] = (1, 0),
    vector_lanes: tuple[int, ...] = (),
    interleave: bool = False,
) -> list[tuple[int, LinePlan]]:
    """Every way to move a tile of `extents` with its cost in messages, cheapest first (block
    first at equal cost, then vector, then scattered): a block message costs 1, a scattered one
    (an address per element) SCATTERED_COST, a vector message gathering whole lines of up to
    `lanes` lines (`vector_lanes`) 1 per 4 dwords of a line plus 1 for its vector of addresses.
    With `interleave` (dpas's B), also block lines of interleaved rows (`interleaved_lengths`),
    each length: the shortest land in dpas's layout, the longer ones take fewer messages."""
    candidates: list[tuple[int, int, int, LinePlan]] = []
    if interleave and allow_block:
        ops, lengths = interleaved_lengths(view, gemm, hw, extents, multiples)
        for length in lengths:
            messages = extents[0] // ops * (extents[1] // length)
            candidates.append((messages, 0, -1, LinePlan(1, True, length, interleave=ops)))
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


def plan_lines(
    view: View,
    gemm: Gemm,
    hw: Platform,
    extents: tuple[int, int],
    multiples: tuple[int, int],
    allow_block: bool = True,
    line_dims: tuple[int, ...] = (1, 0),
    interleave: bool = False,
) -> LinePlan:
    """The cheapest way to move a tile of `extents` in block or scattered messages (`line_plans`)."""
    return line_plans(view, gemm, hw, extents, multiples, allow_block, line_dims, interleave=interleave)[0][1]


@dataclass(frozen=True)
class Run:
    """Elements that follow each other both in a GRF buffer and in an SLM tile: `length`
    elements from element `register` of the buffer and from element `slm` of the tile."""

    register: int
    slm: int
    length: int


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class Runs:
    """The maximal runs of a tile between registers and SLM as arrays, in register order: run i
    is `length[i]` elements from element `register[i]` of the buffer and `slm[i]` of the tile.
    The planner prices thousands of candidate runs per layout (`slm_message_cost`) and keeps
    few; `runs()` makes the `Run`s of the one kept."""

    register: np.ndarray
    slm: np.ndarray
    length: np.ndarray

    def runs(self) -> list[Run]:
        columns = (self.register.tolist(), self.slm.tolist(), self.length.tolist())
        return [Run(*values) for values in zip(*columns, strict=True)]


def run_arrays(register_offsets: np.ndarray, slm_offsets: np.ndarray) -> Runs:
    """The maximal runs of a tile whose elements sit at `register_offsets` in registers and
    `slm_offsets` in SLM (arrays of the tile's shape)."""
    order = np.argsort(register_offsets, axis=None, kind="stable")
    grf = register_offsets.ravel()[order]
    slm = slm_offsets.ravel()[order]
    starts = np.concatenate(([0], np.flatnonzero((np.diff(grf) != 1) | (np.diff(slm) != 1)) + 1))
    return Runs(grf[starts], slm[starts], np.diff(np.append(starts, len(grf))))


def contiguous_runs(register_offsets: np.ndarray, slm_offsets: np.ndarray) -> list[Run]:
    """`run_arrays` as `Run`s."""
    return run_arrays(register_offsets, slm_offsets).runs()


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
            along = (
                slm_offsets[line.start : line.start + line.length, other]
                if line_dim == 0
                else slm_offsets[other, line.start : line.start + line.length]
            )
            if not np.array_equal(along, along[0] + np.arange(line.length)):
                return None
            starts.append(int(along[0]))
        runs.append(LaneRun(line.base, tuple(starts), line.length * size // 4))
    return runs


def is_block(run: Run, size: int, base_alignment: int) -> bool:
    """A run moves in block messages when its SLM address is dword aligned for every placement
    (`base_alignment`: the byte alignment of the runtime part) and it is whole dwords."""
    return bool(_dword_aligned(run.slm, run.length, size, base_alignment))


def _dword_aligned(slm, length, size: int, base_alignment: int):
    """`is_block` of runs starting at SLM element `slm` (ints or arrays alike): gcd(base_alignment,
    slm * size) is a multiple of 4 exactly when both are."""
    return (base_alignment % 4 == 0) & (slm * size % 4 == 0) & (length * size % 4 == 0)


SLM_MESSAGE_COST = 2  # an SLM message and its address, in instructions (modeled)


def slm_message_cost(runs: Runs | Sequence[LaneRun], size: int, base_alignment: int, hw: Platform) -> int:
    """Modeled instructions of the messages moving `runs`: an address and a send per block
    message, SCATTERED_COST times that per scattered one, a vector of addresses and a send per 4
    dwords of each line per vector message."""
    if not isinstance(runs, Runs):
        return sum(1 + -(-run.dwords // 4) for run in runs)
    block = _dword_aligned(runs.slm, runs.length, size, base_alignment)
    block_messages = -(-runs.length * size // hw.max_block_message_bytes)
    scattered_messages = SCATTERED_COST * -(-runs.length // hw.max_message_simd)
    return SLM_MESSAGE_COST * int(np.where(block, block_messages, scattered_messages).sum())
