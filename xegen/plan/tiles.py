"""Where the elements of a 2-D tile live in a GRF (or SLM) buffer.

A tile is `rows x cols` elements of one GEMM operand (A is M x K, B is K x N, C is M x N).  Its
layout in a buffer is a list of `Piece`s: each piece covers a set of rows and columns, each an
arithmetic progression, stored affinely (`base + i*row_stride + j*col_stride` elements for the
i-th row and j-th column of the piece).  That describes every layout the builder needs:

- line layouts, what messages produce: each message fills one "line" of up to L elements along
  one tile dimension, and every line starts on a GRF boundary;
- the layouts the multiply instructions read: row-major A rows for dpas (per K step), B in VNNI
  form (per K step, N block and element within a dword), row-major C blocks;
- the dense tiles SLM holds.

`tile_moves` lists the moves of a tile between two layouts (converting the type), one per pair
of pieces that overlap; the builder's `copy_tile` (`xegen.build.builder`) emits them as `reorder`
calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..ir import Var, ptr
from ..ir.types import U32, Type


@dataclass(frozen=True)
class Progression:
    start: int
    step: int
    count: int

    @property
    def last(self) -> int:
        return self.start + self.step * (self.count - 1)

    def contains(self, x: int) -> bool:
        return self.start <= x <= self.last and (x - self.start) % self.step == 0

    def index(self, x: int) -> int:
        return (x - self.start) // self.step


def span(start: int, count: int) -> Progression:
    return Progression(start, 1, count)


@dataclass(frozen=True)
class Piece:
    rows: Progression
    cols: Progression
    base: int
    row_stride: int
    col_stride: int

    def offset(self, r: int, c: int) -> int:
        return self.base + self.rows.index(r) * self.row_stride + self.cols.index(c) * self.col_stride

    def contains(self, r: int, c: int) -> bool:
        return self.rows.contains(r) and self.cols.contains(c)


@dataclass(frozen=True)
class TileLayout:
    buffer: Var
    type: Type
    rows: int
    cols: int
    pieces: tuple[Piece, ...]
    elements: int  # buffer size in elements (including padding between lines)

    def __hash__(self) -> int:  # layouts key the planner's caches: hash their pieces once
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash((self.buffer, self.type, self.rows, self.cols, self.pieces, self.elements))

    @property
    def bytes(self) -> int:
        return self.elements * self.type.size

    def offset(self, r: int, c: int) -> int:
        """Element offset of tile element (r, c)."""
        for piece in self.pieces:
            if piece.contains(r, c):
                return piece.offset(r, c)
        raise KeyError(f"element ({r}, {c}) is not in the {self.rows}x{self.cols} tile of {self.buffer.name}")

    def pointer(self, r: int, c: int):
        return ptr(self.buffer, self.offset(r, c) * self.type.size)

    @cached_property
    def offset_map(self) -> np.ndarray:
        """The element offset of every tile element, as a read-only rows x cols array."""
        return _offset_map(self.rows, self.cols, self.pieces)

    def same_placement(self, other: TileLayout) -> bool:
        """Whether every element sits at the same byte in both layouts (same type and shape)."""
        if (self.type, self.rows, self.cols) != (other.type, other.rows, other.cols):
            return False
        return bool(np.array_equal(self.offset_map, other.offset_map))


@lru_cache(maxsize=1024)  # the planner makes the same layouts again in every configuration it weighs
def _offset_map(rows: int, cols: int, pieces: tuple[Piece, ...]) -> np.ndarray:
    offsets = np.full((rows, cols), -1, dtype=np.int64)
    for p in pieces:
        offsets[p.rows.start : p.rows.last + 1 : p.rows.step, p.cols.start : p.cols.last + 1 : p.cols.step] = (
            p.base + np.arange(p.rows.count)[:, None] * p.row_stride + np.arange(p.cols.count)[None, :] * p.col_stride
        )
    offsets.setflags(write=False)  # shared by every layout of these pieces
    return offsets


def round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


# Line layouts (what messages fill) ---------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One message's worth of a tile: `length` elements along the line dimension starting at
    `start`, at position `other` of the other dimension; stored from element `base`.  A vector
    message moves `lanes` lines (positions `other` .. `other + lanes - 1`) at once, one per lane."""

    other: int
    start: int
    length: int
    base: int
    lanes: int = 1


def line_layout(
    buffer: Var,
    type: Type,
    rows: int,
    cols: int,
    line_dim: int,
    line_length: int,
    grf_bytes: int,
    lanes: int = 0,
    interleave: int = 0,
) -> tuple[TileLayout, list[Line]]:
    """Lines of `line_length` elements along tile dimension `line_dim` (0 rows, 1 cols), each
    starting on a GRF boundary; returns the layout and its lines in buffer order.  With `lanes`,
    the lines go in vector messages of up to `lanes` lines (`vector_line_layout`); with
    `interleave`, each line holds that many rows interleaved (`interleaved_line_layout`)."""
    if lanes:
        return vector_line_layout(buffer, type, rows, cols, line_dim, line_length, lanes, grf_bytes)
    if interleave:
        return interleaved_line_layout(buffer, type, rows, cols, line_length, interleave, grf_bytes)
    along, across = (rows, cols) if line_dim == 0 else (cols, rows)
    chunks = -(-along // line_length)
    pitch = round_up(line_length * type.size, grf_bytes) // type.size
    lines: list[Line] = []
    pieces: list[Piece] = []
    for j in range(chunks):
        start = j * line_length
        length = min(line_length, along - start)
        if line_dim == 1:
            pieces.append(Piece(span(0, rows), span(start, length), j * pitch, chunks * pitch, 1))
        else:
            pieces.append(Piece(span(start, length), span(0, cols), j * pitch, 1, chunks * pitch))
    for other in range(across):
        for j in range(chunks):
            start = j * line_length
            lines.append(Line(other, start, min(line_length, along - start), (other * chunks + j) * pitch))
    return TileLayout(buffer, type, rows, cols, tuple(pieces), max(across * chunks * pitch, 1)), lines


def vector_line_layout(
    buffer: Var, type: Type, rows: int, cols: int, line_dim: int, line_length: int, lanes: int, grf_bytes: int
) -> tuple[TileLayout, list[Line]]:
    """Lines of `line_length` elements (whole dwords, dividing the tile) along `line_dim`, moved
    `lanes` lines per message, one line per lane, in the registers as such a message leaves them:
    component-major, dword e of lane s at dword e*count + s of the message's registers (count =
    the lanes of that message).  Messages go line chunk by line chunk, each starting on a GRF."""
    along, across = (rows, cols) if line_dim == 0 else (cols, rows)
    per_dword = 4 // type.size
    lines: list[Line] = []
    pieces: list[Piece] = []
    at = 0
    for start in range(0, along, line_length):
        for first in range(0, across, lanes):
            count = min(lanes, across - first)
            lines.append(Line(first, start, line_length, at, count))
            for j in range(per_dword):
                positions = Progression(start + j, per_dword, line_length // per_dword)
                if line_dim == 1:
                    pieces.append(Piece(span(first, count), positions, at + j, per_dword, count * per_dword))
                else:
                    pieces.append(Piece(positions, span(first, count), at + j, count * per_dword, per_dword))
            at += round_up(count * line_length * type.size, grf_bytes) // type.size
    return TileLayout(buffer, type, rows, cols, tuple(pieces), max(at, 1)), lines


VNNI_STEP_ROWS = 8  # dword rows of B one dpas reads (its systolic depth on every platform)


def interleaved_line_layout(
    buffer: Var, type: Type, rows: int, cols: int, line_length: int, interleave: int, grf_bytes: int
) -> tuple[TileLayout, list[Line]]:
    """Lines of `line_length` columns by `interleave` rows (whole dwords: B's K pairs or quads,
    as an interleaved weights layout holds them), column by column with the rows of a column in
    one dword, as dpas's VNNI layout reads them.  Each line starts on a GRF boundary; the lines
    of each group of VNNI_STEP_ROWS dword rows go column chunk by column chunk, so that lines of
    one dpas exec size of columns lie where `vnni_layout` puts them."""
    dword_rows, chunks = rows // interleave, cols // line_length
    pitch = round_up(line_length * interleave * type.size, grf_bytes) // type.size
    lines: list[Line] = []
    pieces: list[Piece] = []
    for first in range(0, dword_rows, VNNI_STEP_ROWS):
        count = min(VNNI_STEP_ROWS, dword_rows - first)
        for j in range(chunks):
            base = (first * chunks + j * count) * pitch
            lines += [
                Line((first + r) * interleave, j * line_length, line_length, base + r * pitch) for r in range(count)
            ]
            pieces += [
                Piece(
                    Progression(first * interleave + e, interleave, count),
                    span(j * line_length, line_length),
                    base + e,
                    pitch,
                    interleave,
                )
                for e in range(interleave)
            ]
    return TileLayout(buffer, type, rows, cols, tuple(pieces), max(dword_rows * chunks * pitch, 1)), lines


def dense_layout(buffer: Var, type: Type, rows: int, cols: int, row_major: bool = True, base: int = 0) -> TileLayout:
    if row_major:
        piece = Piece(span(0, rows), span(0, cols), base, cols, 1)
    else:
        piece = Piece(span(0, rows), span(0, cols), base, 1, rows)
    return TileLayout(buffer, type, rows, cols, (piece,), base + rows * cols)


def packed_layout(
    buffer: Var, source: TileLayout, row0: int, col0: int, rows: int, cols: int, grf_bytes: int
) -> TileLayout:
    """The `rows x cols` sub-tile of `source` at (row0, col0) in registers, in `source`'s element
    order: each run of elements contiguous in `source` starts on a GRF boundary and the gaps
    between runs are dropped, so that a message moves each run from or to `source` as one block
    (a thread's slice of an SLM tile, made ready to store)."""
    size = source.type.size
    grf = grf_bytes // size
    used = np.unique(source.offset_map[row0 : row0 + rows, col0 : col0 + cols])
    run_starts = [0, *(np.flatnonzero(np.diff(used) != 1) + 1).tolist()]
    run_firsts = used[run_starts]  # source offset of each run's first element
    packed_starts, at = [], 0
    for i, first in enumerate(run_starts):
        length = (run_starts[i + 1] if i + 1 < len(run_starts) else len(used)) - first
        packed_starts.append(at)
        at += round_up(length, grf)

    def packed(offset: int) -> int:
        run = int(np.searchsorted(run_firsts, offset, side="right")) - 1
        return packed_starts[run] + offset - int(run_firsts[run])

    def same_run(low: int, high: int) -> bool:
        return np.searchsorted(run_firsts, low, side="right") == np.searchsorted(run_firsts, high, side="right")

    pieces: list[Piece] = []
    for p in source.pieces:
        row_part = _intersect(p.rows, span(row0, rows))
        col_part = _intersect(p.cols, span(col0, cols))
        if row_part is None or col_part is None:
            continue
        rs, cs = _strides(p, row_part, col_part)
        for sub_rows, sub_cols in _split_into_runs(p, row_part, col_part, same_run):
            base = p.offset(sub_rows.start, sub_cols.start)
            pieces.append(
                Piece(
                    Progression(sub_rows.start - row0, sub_rows.step, sub_rows.count),
                    Progression(sub_cols.start - col0, sub_cols.step, sub_cols.count),
                    packed(base),
                    rs,
                    cs,
                )
            )
    return TileLayout(buffer, source.type, rows, cols, tuple(pieces), max(at, 1))


def _split_into_runs(piece: Piece, rows: Progression, cols: Progression, same_run):
    """The part of `piece` on `rows` x `cols` as sub-blocks each inside one run of contiguous
    offsets: whole, else row by row, else element by element."""

    def offsets(r: Progression, c: Progression) -> list[int]:
        return [piece.offset(x, y) for x in (r.start, r.last) for y in (c.start, c.last)]

    whole = offsets(rows, cols)
    if same_run(min(whole), max(whole)):
        return [(rows, cols)]
    blocks = []
    for i in range(rows.count):
        row = Progression(rows.start + i * rows.step, 1, 1)
        ends = offsets(row, cols)
        if same_run(min(ends), max(ends)):
            blocks.append((row, cols))
        else:
            blocks += [(row, Progression(cols.start + j * cols.step, 1, 1)) for j in range(cols.count)]
    return blocks


# Layouts the multiply instructions read ----------------------------------------------------


def dpas_a_layout(buffer: Var, type: Type, rows: int, k: int, k_step: int, grf_bytes: int = 0) -> TileLayout:
    """A for dpas: per K step of `k_step` elements (8 dwords), rows of that step row-major; each
    step's rows from a GRF boundary when `grf_bytes` is given (a dpas reads its A from one)."""
    pitch = round_up(rows * k_step * type.size, grf_bytes) // type.size if grf_bytes else rows * k_step
    pieces = tuple(Piece(span(0, rows), span(s * k_step, k_step), s * pitch, k_step, 1) for s in range(k // k_step))
    return TileLayout(buffer, type, rows, k, pieces, pitch * (k // k_step))


def vnni_layout(buffer: Var, type: Type, k: int, cols: int, k_step: int, block_cols: int) -> TileLayout:
    """B in VNNI form: per K step and block of `block_cols` columns, dword (s, n) holds the
    `ops` consecutive K values s*ops .. s*ops+ops-1 of column n (ops = 4 bytes / element)."""
    ops = 4 // type.size
    pieces = []
    block = k_step * block_cols
    blocks_per_step = cols // block_cols
    for s in range(k // k_step):
        for nb in range(blocks_per_step):
            base = (s * blocks_per_step + nb) * block
            for j in range(ops):
                pieces.append(
                    Piece(
                        Progression(s * k_step + j, ops, k_step // ops),
                        span(nb * block_cols, block_cols),
                        base + j,
                        block_cols * ops,
                        ops,
                    )
                )
    return TileLayout(buffer, type, k, cols, tuple(pieces), k * cols)


def blocked_c_layout(buffer: Var, type: Type, rows: int, cols: int, block_rows: int, block_cols: int) -> TileLayout:
    """C for dpas: row-major blocks of block_rows x block_cols, blocks row-major."""
    pieces = []
    blocks_across = cols // block_cols
    for mb in range(rows // block_rows):
        for nb in range(blocks_across):
            base = (mb * blocks_across + nb) * block_rows * block_cols
            pieces.append(
                Piece(span(mb * block_rows, block_rows), span(nb * block_cols, block_cols), base, block_cols, 1)
            )
    return TileLayout(buffer, type, rows, cols, tuple(pieces), rows * cols)


# Copies between layouts --------------------------------------------------------------------


def _intersect(p: Progression, q: Progression) -> Progression | None:
    """The values in both progressions (one of them must have step 1, or both the same step)."""
    if q.step == 1 or p.step == q.step:
        low, high = max(p.start, q.start), min(p.last, q.last)
        first = p.start + -(-(low - p.start) // p.step) * p.step
        if first > high or (p.step == q.step and (first - q.start) % q.step):
            return None
        return Progression(first, p.step, (high - first) // p.step + 1)
    if p.step == 1:
        return _intersect(q, p)
    raise ValueError("cannot intersect two strided progressions with different steps")


def overlaps(dst: TileLayout, src: TileLayout):
    """(rows, cols, dst piece, src piece) for every overlapping pair of pieces."""
    by_row: dict[int, list[int]] = {}  # row -> indices of the src pieces holding it
    for i, sp in enumerate(src.pieces):
        for r in range(sp.rows.start, sp.rows.last + 1, sp.rows.step):
            by_row.setdefault(r, []).append(i)
    for dp in dst.pieces:
        met = sorted({i for r in range(dp.rows.start, dp.rows.last + 1, dp.rows.step) for i in by_row.get(r, ())})
        for sp in (src.pieces[i] for i in met):
            if dp.cols.last < sp.cols.start or sp.cols.last < dp.cols.start:
                continue
            rows = _intersect(dp.rows, sp.rows)
            cols = _intersect(dp.cols, sp.cols) if rows is not None else None
            if cols is not None:
                yield rows, cols, dp, sp


def _strides(piece: Piece, rows: Progression, cols: Progression) -> tuple[int, int]:
    """Element strides of `piece` per step of the given sub-progressions."""
    return piece.row_stride * rows.step // piece.rows.step, piece.col_stride * cols.step // piece.cols.step


@lru_cache(maxsize=1024)  # the config heuristic asks again for the same layouts in other configs
def tile_moves(
    dst: TileLayout, src: TileLayout, saturate: bool = False
) -> tuple[TileLayout, TileLayout, tuple[Move, ...]]:
    """The moves `copy_tile` makes, between the layouts it makes them in (the planner counts
    them without building IR).  Narrow elements that sit in the same dword, in the same
    order, on both sides move a dword at a time (a transpose of 16-bit pairs or byte quads takes
    half or a quarter of the moves)."""
    if dst.type == src.type and src.type.size < 4 and not saturate:
        for axis in (1, 0):
            grouped = dword_groups(dst, axis), dword_groups(src, axis)
            if grouped[0] is not None and grouped[1] is not None:
                return tile_moves(*grouped)
    moves = []
    for rows, cols, dp, sp in overlaps(dst, src):
        d_rs, d_cs = _strides(dp, rows, cols)
        s_rs, s_cs = _strides(sp, rows, cols)
        moves.append(
            Move(
                dp.offset(rows.start, cols.start),
                sp.offset(rows.start, cols.start),
                rows.count,
                cols.count,
                s_rs,
                s_cs,
                d_rs,
                d_cs,
            )
        )
    return dst, src, tuple(_joined(_along_translates(moves)))


@dataclass(frozen=True)
class Move:
    """A reorder in elements: `rows` x `cols` from element `src` to element `dst`, with strides."""

    dst: int
    src: int
    rows: int
    cols: int
    s_rs: int
    s_cs: int
    d_rs: int
    d_cs: int

    def as_line(self) -> Move:
        """A single column as a single row (one line of elements either way)."""
        if self.cols == 1 and self.rows > 1:
            return Move(self.dst, self.src, 1, self.rows, 0, self.s_rs, 0, self.d_rs)
        return self


# destination strides a move instruction encodes (its horizontal stride: 1, 2 or 4 elements)
DST_STRIDES = (1, 2, 4)


def _along_translates(moves: list[Move]) -> list[Move]:
    """Moves of one shape whose own destination strides no instruction encodes (every element a
    move of its own), but which are translates of one another by a constant step on both sides,
    turned the other way: each line runs across the moves instead of within one.  The byte
    transpose that packs B for int8 dpas on XeHPC is sixteen 4 x 4 moves with destination strides
    16 and 64 (256 one-byte moves); across them, 4 bytes at stride 4 per move (64)."""
    shapes: dict[tuple, list[Move]] = {}
    for m in moves:
        shapes.setdefault((m.rows, m.cols, m.s_rs, m.s_cs, m.d_rs, m.d_cs), []).append(m)
    out: list[Move] = []
    for (rows, cols, s_rs, s_cs, d_rs, d_cs), group in shapes.items():
        own = {d_cs} if rows == 1 else {d_rs} if cols == 1 else {d_rs, d_cs}
        if len(group) < 2 or own & set(DST_STRIDES):
            out += group
            continue
        for run in _translate_runs(sorted(group, key=lambda m: m.src)):
            if len(run) < 2 or run[1].dst - run[0].dst not in DST_STRIDES:
                out += run
                continue
            first = run[0]
            step_src, step_dst = run[1].src - first.src, run[1].dst - first.dst
            for c in range(cols):  # rows x len(run): the run is the new line
                out.append(
                    Move(first.dst + c * d_cs, first.src + c * s_cs, rows, len(run), s_rs, step_src, d_rs, step_dst)
                )
    return out


def _translate_runs(moves: list[Move]) -> list[list[Move]]:
    """`moves` cut into runs whose consecutive members differ by one constant step, on the source
    and on the destination."""
    runs: list[list[Move]] = []
    for m in moves:
        run = runs[-1] if runs else None
        if run is not None and (
            len(run) == 1
            or (m.src - run[-1].src, m.dst - run[-1].dst) == (run[1].src - run[0].src, run[1].dst - run[0].dst)
        ):
            run.append(m)
        else:
            runs.append([m])
    return runs


def _joined(moves: list[Move]) -> list[Move]:
    """Lines that continue one another (the next starts where the previous ends, with the same
    strides on both sides) joined into one: the lowering cuts a long line into the widest moves
    the registers allow, instead of one move per piece (a VNNI interleave of whole rows of B
    takes half the moves)."""
    out: list[Move] = []
    for m in sorted((m.as_line() for m in moves), key=lambda m: (m.rows != 1, m.s_cs, m.d_cs, m.src, m.dst)):
        last = out[-1] if out else None
        if (
            last is not None
            and m.rows == 1
            and last.rows == 1
            and (m.s_cs, m.d_cs) == (last.s_cs, last.d_cs)
            and m.src == last.src + last.cols * last.s_cs
            and m.dst == last.dst + last.cols * last.d_cs
        ):
            out[-1] = Move(last.dst, last.src, 1, last.cols + m.cols, 0, last.s_cs, 0, last.d_cs)
        else:
            out.append(m)
    return out


def dword_groups(layout: TileLayout, axis: int) -> TileLayout | None:
    """`layout` seen as a tile of u32, each holding the 4 / size consecutive elements along
    `axis` (1: columns, 0: rows) that sit in one dword in order; None when some do not."""
    per = 4 // layout.type.size
    offsets = layout.offset_map if axis == 1 else layout.offset_map.T
    if offsets.shape[1] % per:
        return None
    first = offsets[:, 0::per]
    if (
        np.any(first < 0)
        or np.any(first % per)
        or not all(np.array_equal(offsets[:, j::per], first + j) for j in range(1, per))
    ):
        return None
    pieces = []
    for piece in layout.pieces:
        along, stride = (piece.cols, piece.col_stride) if axis == 1 else (piece.rows, piece.row_stride)
        across, across_stride = (piece.rows, piece.row_stride) if axis == 1 else (piece.cols, piece.col_stride)
        if along.step == per and along.start % per:
            continue  # the piece of the second, third ... element of each dword
        if along.step == 1 and stride == 1 and along.start % per == 0 and along.count % per == 0:
            grouped = Progression(along.start // per, 1, along.count // per)
        elif along.step == per and stride % per == 0:
            grouped = Progression(along.start // per, 1, along.count)
        else:
            return None
        if across_stride % per or piece.base % per:
            return None
        group_stride = 1 if along.step == 1 else stride // per
        if axis == 1:
            pieces.append(Piece(across, grouped, piece.base // per, across_stride // per, group_stride))
        else:
            pieces.append(Piece(grouped, across, piece.base // per, group_stride, across_stride // per))
    rows, cols = (layout.rows, layout.cols // per) if axis == 1 else (layout.rows // per, layout.cols)
    return TileLayout(layout.buffer, U32, rows, cols, tuple(pieces), -(-layout.elements // per))
