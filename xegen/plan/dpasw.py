"""`fma=dpasw`: XeHPG's fused thread pairs share the A operand of their dpas.

The hardware runs threads 2i and 2i+1 of a group as a fused pair (EU0, EU1).  A `dpasw` with
repeat count RC multiplies one A that both threads hold half of: its first RC/2 rows come from
the even thread's src2, the other RC/2 from the odd thread's src2 (at the same register), and
each thread multiplies it by its own B into its own C (`xegen/ir/funcs.py`).

Groups are `tg_n x tg_m` threads numbered N first, so with an even `tg_n` the two threads of a
pair sit side by side along N: the same M tile (the same A) and different N tiles, as sharing A
needs.  The pair's A tile (m_tile rows) is cut in two halves of H = m_tile/2 rows: the even
thread loads rows 0..H-1, the odd thread rows H..m_tile-1 (its A origin along M moves by H), so
each thread loads and holds half of A.  The instruction that reads register rows j*RC/2 ..
of both halves computes C rows

    j*RC/2 .. j*RC/2 + RC/2 - 1    and    H + j*RC/2 .. H + j*RC/2 + RC/2 - 1

into one RC-row accumulator block: C's register layout pairs rows of the two halves
(`paired_c_layout`), and the epilogue reads C through that layout.  With m_tile = RC (one block)
the pairing is the identity.  oneDNN's dpasw pass does the same after the fact on a built
kernel; here the plan lays the tiles out so from the start.

Requirements (`check_fused_pairs`): a platform with dpasw, an even tg_n, an even m_tile.  The
kernels' control flow is uniform (K loops with constant bounds, masks instead of branches), so
both threads of a pair always execute each dpasw together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..conv.index import Idx
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import Type
from .tiles import Piece, TileLayout, span

if TYPE_CHECKING:
    from .config import Config


def check_fused_pairs(config: Config, hw: Platform) -> None:
    """ConfigError unless `config` (fma=dpasw) can run as fused pairs on `hw`."""
    reason = _unpaired(config, hw)
    if reason:
        raise ConfigError(f"fma=dpasw: {reason}")


def fused_pairs_fit(config: Config, hw: Platform) -> bool:
    """Whether `config` (with fma=dpas) could run its dpas as dpasw."""
    return _unpaired(config, hw) is None


def _unpaired(config: Config, hw: Platform) -> str | None:
    """Why the config's threads cannot run as fused pairs on `hw` (None: they can)."""
    if not hw.has_dpasw:
        return f"{hw} has no dpasw (XeHPG's fused thread pairs); use fma=dpas"
    if config.tg_n % 2:
        return (
            f"tg_n={config.tg_n} is odd, but the fused threads 2i and 2i+1 of a group must be neighbours "
            "along N (the same M tile); use an even tg_n"
        )
    if config.m_tile % 2:
        return f"m_tile={config.m_tile} is odd, but each thread of a pair holds half of A's rows; use an even m_tile"
    return None


def pair_half(thread_id_n: Idx) -> Idx:
    """Which half of the pair's A tile the thread loads: 0 for the even thread, 1 for the odd
    (the thread's index in the group is thread_id_n + tg_n*thread_id_m, and tg_n is even)."""
    return thread_id_n.mod(2)


def paired_c_layout(buffer: Var, type: Type, rows: int, cols: int, block_rows: int, block_cols: int) -> TileLayout:
    """C for dpasw: row-major blocks of block_rows x block_cols (blocks row-major) as for dpas, but
    block j holds tile rows j*h .. j*h+h-1, then H + j*h .. H + j*h+h-1 (h = block_rows/2, H =
    rows/2): what the j-th dpasw of each column block computes."""
    pieces = []
    half_tile, half = rows // 2, block_rows // 2
    blocks_across = cols // block_cols
    for j in range(rows // block_rows):
        for nb in range(blocks_across):
            base = (j * blocks_across + nb) * block_rows * block_cols
            columns = span(nb * block_cols, block_cols)
            pieces.append(Piece(span(j * half, half), columns, base, block_cols, 1))
            pieces.append(Piece(span(half_tile + j * half, half), columns, base + half * block_cols, block_cols, 1))
    return TileLayout(buffer, type, rows, cols, tuple(pieces), rows * cols)
