"""2D block loads of a dpas operand straight into the layout dpas reads (XeHPC).

Where a view is a row-major matrix in memory -- both GEMM dimensions addressed linearly
(`_strides`), one of them with stride 1 -- the tensor is a 2D *surface* for LSC's
`load_block2d` (docs/messages.md): its rows are the other dimension, `pitch` bytes apart, its
width the contiguous dimension's size.  Elements outside it read as zero, so the tile needs no
mask and no zero fill.  The message then lays a block out as dpas reads it:

- A (M x K, K contiguous): a block of m rows by one K step (8 dwords) is m rows of 32 bytes,
  which is A of that step (`tiles.dpas_a_layout`);
- B (K x N, N contiguous): the VNNI transform of a K step by `simd` columns is that step's B
  block (`tiles.vnni_layout`);
- B (K x N, K contiguous, N the rows): the transpose of `simd` rows by a K step of dwords (pairs
  or quads of K values) is the same block.

Instead of the vector gathers and the moves interleaving them (hundreds of instructions per K
block for bf16), one message per block.  `block2d_plan` builds the blocks and checks, element by
element, that the messages put every element where the multiply's layout has it; a plan that
would not is None.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..conv.index import Idx
from ..hw import Platform
from ..ir import Var
from ..ir.expr import Binary, IRTypeError
from ..ir.funcs import Send, block2d_row_bytes
from ..ir.types import PTR, U32, Type
from ..ir.visitor import walk
from .config import Config, k_step
from .gemm import Gemm, View
from .multiply import operand_layout
from .tiles import TileLayout

# Instructions of one block message: its header (a 64-bit address, six dwords) and the send
# (xegen.lower.messages.Messages.block2d), as the planner counts a global message's.
BLOCK2D_MESSAGE_COST = 9


@dataclass(frozen=True)
class Surface:
    """A view as a row-major surface: view dimension `row_dim` (0 or 1) indexes its rows."""

    row_dim: int
    base: int  # element offset of element (0, 0)
    width: int  # bytes of a row: the contiguous dimension's size
    height: int  # rows: the other dimension's size
    pitch: int  # bytes from one row to the next


@dataclass(frozen=True)
class Block:
    """One message: the tile element (`row`, `col`) it starts at and the byte of the load buffer
    it fills from."""

    row: int
    col: int
    register: int


@dataclass(frozen=True)
class Block2dPlan:
    surface: Surface
    message: Send  # every block's message (the same shape)
    blocks: tuple[Block, ...]
    ops: int  # view elements per message element along the surface's columns (2 or 4 when transposed)

    @property
    def cost(self) -> int:
        """Modeled instructions of the messages (without their prefetches), for the estimate."""
        return BLOCK2D_MESSAGE_COST * len(self.blocks)


def surface(view: View, gemm: Gemm) -> Surface | None:
    """The view as a surface, or None when it is not a plain row-major matrix."""
    if len(view.dims) != 2 or gemm.groups != 1:
        return None
    strides = _strides(view, gemm)
    if strides is None:
        return None
    origin = view.access({})[0]
    if not origin.is_const:
        return None
    row_dim = 0 if strides[1] == 1 else 1 if strides[0] == 1 else None
    if row_dim is None:
        return None
    size = view.type.size
    column, row = gemm.dim(view.dims[1 - row_dim]), gemm.dim(view.dims[row_dim])
    return Surface(row_dim, origin.lo, column.size * size, row.size, strides[row_dim] * size)


def _strides(view: View, gemm: Gemm) -> list[int] | None:
    """The element stride along each of the view's dimensions when the view addresses every
    coordinate pair (0 .. size - 1 each) affinely and with no in-bounds condition (as
    `linear_stride`, but with every component in its own range: a coordinate past the size is
    outside the surface, which the message handles)."""
    dims = [gemm.dim(d) for d in view.dims]
    probe = {c.name: Idx.of(Var(f"probe_{c.name}"), 0, c.size - 1) for dim in dims for c in dim.components}
    offset, masks = view.access(probe)
    if masks or any(isinstance(n, Binary) and n.op in ("div", "mod") for n in walk(offset.expr)):
        return None
    origin = view.access({})[0].lo
    result = []
    for dim in dims:
        strides = [view.access({c.name: Idx.const(1)})[0].lo - origin for c in dim.components]
        if any(
            outer != inner * comp.size
            for outer, inner, comp in zip(strides, strides[1:], dim.components[1:], strict=False)
        ):
            return None
        result.append(strides[-1])
    return result


def block2d_plan(
    view: View, gemm: Gemm, config: Config, hw: Platform, operand: str, fma: TileLayout
) -> Block2dPlan | None:
    """Messages loading the thread's tile of `operand` ("a" or "b") into `fma`, dpas's layout,
    or None where the platform, the view or the layout does not allow it."""
    if not hw.has_block2d or not config.systolic or config.fma != "dpas":
        return None
    found = surface(view, gemm)
    if found is None or (found.base * view.type.size) % 64:
        return None
    size, step, simd = view.type.size, k_step(config, gemm), config.simd
    ops = 4 // size
    if operand == "a":
        if found.row_dim != 0 or fma.rows > 32:
            return None
        # (element type, count, elements, transform) of the message
        shape: tuple[Type, int, int, str] = (view.type, step, fma.rows, "none")
        starts = [(0, s) for s in range(0, fma.cols, step)]
    elif found.row_dim == 0:  # K rows, N contiguous
        shape = (view.type, simd, step, "vnni")
        starts = [(k, n) for k in range(0, fma.rows, step) for n in range(0, fma.cols, simd)]
    else:  # N rows, K contiguous: dwords of `ops` K values, transposed
        if found.width % 4:
            return None
        shape = (U32, step // ops, simd, "transpose")
        starts = [(k, n) for k in range(0, fma.rows, step) for n in range(0, fma.cols, simd)]
    elem_type, count, elems, transform = shape
    try:
        message = Send(
            "load",
            "block2d",
            "global",
            type=elem_type,
            count=count,
            elems=elems,
            transform=transform,
            width=found.width,
            height=found.height,
            pitch=found.pitch,
        )
    except IRTypeError:
        return None
    blocks = tuple(Block(r, c, int(fma.offset(r, c)) * size) for r, c in starts)
    grf = hw.grf_bytes  # each message fills whole GRFs (at most 31) from a GRF boundary, with no padding
    filled = message.register_bytes
    if (
        filled % grf
        or filled > 31 * grf
        or any(b.register % grf for b in blocks)
        or filled != message.count * message.elems * message.type.size
    ):
        return None
    plan = Block2dPlan(found, message, blocks, ops if message.transform == "transpose" else 1)
    return plan if _places_as(plan, fma, size) else None


def _places_as(plan: Block2dPlan, fma: TileLayout, size: int) -> bool:
    """Whether the blocks put every element of the tile at its byte of `fma` (and only there)."""
    placed = np.full((fma.rows, fma.cols), -1, dtype=np.int64)
    for block in plan.blocks:
        for (r, c), byte in _block_bytes(plan, block, size):
            if not (0 <= r < fma.rows and 0 <= c < fma.cols) or placed[r, c] != -1:
                return False
            placed[r, c] = byte
    return bool(np.array_equal(placed, fma.offset_map * size))


def _block_bytes(plan: Block2dPlan, block: Block, size: int):
    """((tile row, tile column), register byte) of each element a block loads (docs/messages.md)."""
    f = plan.message
    pitch = block2d_row_bytes(f)
    transposed = plan.surface.row_dim == 1

    def at(surface_row: int, surface_col: int) -> tuple[int, int]:  # view elements, from the block's start
        return (
            (block.row + surface_col, block.col + surface_row)
            if transposed
            else (block.row + surface_row, block.col + surface_col)
        )

    if f.transform == "none":
        for r in range(f.elems):
            for c in range(f.count):
                yield at(r, c), block.register + r * pitch + c * size
    elif f.transform == "vnni":
        group = 4 // size
        for r in range(f.elems):
            for c in range(f.count):
                yield at(r, c), block.register + (r // group) * pitch + c * 4 + (r % group) * size
    else:  # transpose of dwords holding `ops` view elements each
        for r in range(f.elems):
            for c in range(f.count):
                for j in range(plan.ops):
                    yield at(r, c * plan.ops + j), block.register + c * pitch + r * 4 + j * size


def direct_blocks(config: Config, gemm: Gemm, hw: Platform, operand: str) -> Block2dPlan | None:
    """The blocks of the thread's tile of `operand` when it loads straight from global memory
    (slm=0), as `kernel.plan_direct` finds them; None when it cannot."""
    view = gemm.a if operand == "a" else gemm.b
    rows, cols = (config.a_rows, config.k_block) if operand == "a" else (config.k_block, config.n_tile)
    if not hw.has_block2d or config.slm:
        return None
    fma = operand_layout(config, gemm, operand, Var(f"{operand}_load", PTR), rows, cols, view.type)
    return block2d_plan(view, gemm, config, hw, operand, fma)
