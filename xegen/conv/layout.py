"""oneDNN-style blocked memory layouts, parsed from format tags.

A tag lists a tensor's dimensions from outermost to innermost.  Positional tags name dimensions
by letter (`a` is the first logical dimension, `b` the second, ...): `abcd` is plain row-major
(nchw for activations), `acdb` is channels-last (nhwc).  An upper-case letter is the outer part
of a blocked dimension whose inner blocks follow as `<size><letter>`: `aBcd16b` (nChw16c) keeps
16 channels innermost, `ABcd32a32b` blocks both the minibatch and the channels.  `x` stands for
the dimensions the tag does not otherwise name, in order (`axb` = nwc / nhwc / ndhwc).

Named tags spell the dimensions: activations `n c d h w`, weights `g o i d h w` (`g` only for
grouped weights): `nchw`, `nhwc`, `nChw16c`, `oihw`, `hwio`, `OIhw16i16o`, `gOIhw16i16o`.
`any` picks xegen's default: channels innermost for activations; for weights the output
channels innermost, then input channels, then the kernel, with groups outermost, except
depthwise weights (one channel per group), whose groups go next to the output channels (dpas
kernels resolve the weights' `any` for their platform: `xegen.plan.gemm.platform_problem`).

A dimension whose size is not a multiple of its blocks is padded up (the padding holds zeros).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import Error
from .index import Idx

_POSITIONAL = "abcdef"
_TAG_RE = re.compile(r"([A-Za-z]+)((?:[0-9]+[A-Za-z])*)")


@dataclass(frozen=True)
class Block:
    """One level of the layout: `size` values of logical dimension `dim`, `stride` elements apart."""

    dim: int
    size: int
    stride: int


@dataclass(frozen=True)
class Layout:
    tag: str  # the tag in positional form, e.g. "aBcd16b"
    dims: tuple[int, ...]  # logical sizes
    blocks: tuple[Block, ...]  # outermost first; each dimension's outer part comes before its inner blocks

    @property
    def ndims(self) -> int:
        return len(self.dims)

    def inner_blocks(self, dim: int) -> tuple[int, ...]:
        """Sizes of `dim`'s inner blocks, outermost first (empty for a plain dimension)."""
        return tuple(b.size for b in self._blocks_of(dim)[1:])

    def _blocks_of(self, dim: int) -> list[Block]:
        return [b for b in self.blocks if b.dim == dim]

    @property
    def padded_dims(self) -> tuple[int, ...]:
        return tuple(math.prod(b.size for b in self._blocks_of(d)) for d in range(self.ndims))

    @property
    def elements(self) -> int:
        """Elements of the physical buffer, padding included."""
        return math.prod(b.size for b in self.blocks)

    @property
    def has_padding(self) -> bool:
        """Whether a blocked dimension is padded up to whole blocks."""
        return self.elements != math.prod(self.dims)

    # -- offsets ---------------------------------------------------------------------------
    def offset(self, indices: list[Idx]) -> Idx:
        """Element offset of a logical index, as IR (one term per block)."""
        total = Idx.const(0)
        for piece, block in self._pieces(indices):
            total = total + piece * block.stride
        return total

    def offset_of(self, index: tuple[int, ...]) -> int:
        """Element offset of a logical index, in Python integers."""
        return self.offset([Idx.const(i) for i in index]).lo

    def _pieces(self, indices: list[Idx]):
        if len(indices) != self.ndims:
            raise ValueError(f"layout {self.tag} has {self.ndims} dimensions, not {len(indices)}")
        for d in range(self.ndims):
            blocks = self._blocks_of(d)
            inner = math.prod(b.size for b in blocks[1:])
            yield indices[d].div(inner), blocks[0]
            below = inner
            for block in blocks[1:]:
                below //= block.size
                yield indices[d].div(below).mod(block.size), block

    # -- facts the message planner needs ---------------------------------------------------
    def unit_stride_run(self, dim: int) -> int:
        """How many consecutive values of `dim` are adjacent in memory from an aligned start:
        the innermost block's size if it belongs to `dim` with stride 1, else 0."""
        last = self.blocks[-1]
        if last.dim != dim or last.stride != 1:
            return 0
        return last.size

    def interleaved_run(self, dim: int, paired: int, ops: int) -> int:
        """How many consecutive values of `dim` sit next to each other in memory, each with `ops`
        consecutive values of dimension `paired` beside it (dpas's VNNI rows: the weights' output
        channels with input-channel pairs or quads interleaved, `OIhw8i16o2i`, `cdBa2b`): the size
        of `dim`'s innermost block when the layout ends in that block (stride `ops`) followed by a
        block of `ops` values of `paired`; else 0."""
        if len(self.blocks) < 2:
            return 0
        outer, inner = self.blocks[-2], self.blocks[-1]
        if inner != Block(paired, ops, 1) or outer.dim != dim or outer.stride != ops:
            return 0
        return outer.size

    def strides_besides(self, dim: int) -> list[int]:
        """Strides of every block except `dim`'s innermost one (what a run's start can move by)."""
        blocks = self._blocks_of(dim)
        skip = blocks[-1]
        return [b.stride for b in self.blocks if b is not skip]

    # -- numpy conversion ------------------------------------------------------------------
    def _split_shape(self) -> tuple[list[int], list[int]]:
        """Shape of the padded tensor with each dimension split into its blocks, and for each
        block of `self.blocks` its axis in that shape."""
        shape: list[int] = []
        axis_of: dict[int, int] = {}
        for d in range(self.ndims):
            for block in self._blocks_of(d):
                axis_of[id(block)] = len(shape)
                shape.append(block.size)
        return shape, [axis_of[id(b)] for b in self.blocks]

    def to_physical(self, x: np.ndarray) -> np.ndarray:
        """The flat buffer holding logical tensor `x` in this layout (padding zeroed)."""
        if tuple(x.shape) != self.dims:
            raise ValueError(f"tensor of shape {x.shape} does not match layout dims {self.dims}")
        padded = np.zeros(self.padded_dims, dtype=x.dtype)
        padded[tuple(slice(0, n) for n in self.dims)] = x
        shape, order = self._split_shape()
        return np.ascontiguousarray(padded.reshape(shape).transpose(order)).reshape(-1)

    def from_physical(self, flat: np.ndarray) -> np.ndarray:
        """The logical tensor in a flat buffer of this layout."""
        shape, order = self._split_shape()
        blocked = flat.reshape([b.size for b in self.blocks])
        split = blocked.transpose(np.argsort(order)).reshape(self.padded_dims)
        return np.ascontiguousarray(split[tuple(slice(0, n) for n in self.dims)])

    def padding(self, flat: np.ndarray) -> np.ndarray:
        """The padding elements of a flat buffer of this layout (those no logical index maps to)."""
        logical = self.to_physical(np.ones(self.dims, dtype=bool))
        return flat[~logical]

    def __str__(self) -> str:
        return self.tag


# Tags ---------------------------------------------------------------------------------------


def dimension_names(tensor: str, ndims: int, grouped: bool) -> str:
    """Letters of named tags for a tensor's logical dimensions, in order."""
    spatial = "dhw"[3 - (ndims - (3 if grouped else 2)) :] if ndims > (3 if grouped else 2) else ""
    if tensor == "wei":
        return ("goi" if grouped else "oi") + spatial
    if tensor == "bias":
        return "c"
    return "nc" + spatial


def default_tag(tensor: str, ndims: int, grouped: bool, weights_inner: str = "o") -> str:
    """The positional tag `any` resolves to; weights keep the channels `weights_inner` ("o" or
    "i") innermost, or with "o2i", "o4i", "i2o", "i4o" keep the first channels innermost with
    pairs or quads of the others interleaved (dpas's VNNI rows: `[g] k… I o 2i`), or with
    "ki" each output channel's taps and input channels as one run (`[g] o k… i`), or with "g"
    the groups next to the output channels (`k… i g o`: a tap's weights of consecutive groups
    adjacent, for kernels whose lanes run over groups)."""
    letters = _POSITIONAL[:ndims]
    if tensor == "wei":
        lead = 1 if grouped else 0
        o, i, spatial = letters[lead], letters[lead + 1], letters[lead + 2 :]
        if weights_inner == "g" and grouped:
            return spatial + i + letters[0] + o
        if weights_inner == "ki":
            return letters[:lead] + o + spatial + i
        inner, paired = (o, i) if weights_inner[0] == "o" else (i, o)
        if len(weights_inner) > 1:
            return letters[:lead] + spatial + paired.upper() + inner + weights_inner[1:-1] + paired
        return letters[:lead] + spatial + paired + inner
    if tensor == "bias" or ndims < 2:
        return letters
    return letters[0] + letters[2:] + letters[1]


def make_layout(tag: str, tensor: str, dims: tuple[int, ...], grouped: bool, weights_inner: str = "o") -> Layout:
    """Resolve `tag` for a tensor (`src`, `wei`, `dst`, `bias`) of logical sizes `dims`
    (`weights_inner`: as `default_tag`, for `any`)."""
    ndims = len(dims)
    text = tag.strip()
    if text in ("", "any"):
        text = default_tag(tensor, ndims, grouped, weights_inner)
    outer, inner = _parse_tag(text, tensor, ndims, grouped, tag)
    return _build(outer, inner, dims, text)


def _parse_tag(text: str, tensor: str, ndims: int, grouped: bool, original: str):
    """Outer order as [(dim, blocked)] and inner blocks as [(dim, size)]."""
    m = _TAG_RE.fullmatch(text)
    if m is None:
        raise Error(f"layout tag '{original}' for {tensor} is not letters followed by blocks like 16b")
    outer_letters, inner_text = m.group(1), m.group(2)
    inner_pairs = [(int(n), letter) for n, letter in re.findall(r"([0-9]+)([A-Za-z])", inner_text)]
    all_letters = (outer_letters + "".join(letter for _, letter in inner_pairs)).lower()
    positional = set(all_letters) <= set(_POSITIONAL + "x")
    alphabet = _POSITIONAL[:ndims] if positional else dimension_names(tensor, ndims, grouped)

    def dim_of(letter: str) -> int:
        index = alphabet.find(letter.lower())
        if index < 0:
            raise Error(
                f"layout tag '{original}': '{letter}' is not a dimension of {tensor} (use the "
                f"positional letters {_POSITIONAL[:ndims]} or the named letters "
                f"{dimension_names(tensor, ndims, grouped)}, not a mix)"
            )
        return index

    named = [c for c in outer_letters if c.lower() != "x"]
    if outer_letters.lower().count("x") > 1:
        raise Error(f"layout tag '{original}': 'x' may appear once")
    mentioned = {dim_of(c) for c in named} | {dim_of(letter) for _, letter in inner_pairs}
    rest = "".join(alphabet[d] for d in range(ndims) if d not in mentioned)
    expanded = "".join(rest if c.lower() == "x" else c for c in outer_letters)
    outer = [(dim_of(c), c.isupper()) for c in expanded]
    seen = [d for d, _ in outer]
    if sorted(seen) != list(range(ndims)):
        raise Error(
            f"layout tag '{original}' must name each of the {ndims} dimensions of {tensor} ({alphabet}) exactly once"
        )
    inner = []
    for size, letter in inner_pairs:
        if letter.isupper():
            raise Error(f"layout tag '{original}': block '{size}{letter}' must use a lower-case letter")
        d = dim_of(letter)
        if not any(dd == d and blocked for dd, blocked in outer):
            raise Error(
                f"layout tag '{original}': block '{size}{letter}' needs '{letter.upper()}' "
                "(upper case) in the outer part"
            )
        if size < 1:
            raise Error(f"layout tag '{original}': block sizes must be positive")
        inner.append((d, size))
    for d, blocked in outer:
        if blocked and not any(dd == d for dd, _ in inner):
            raise Error(f"layout tag '{original}': '{alphabet[d].upper()}' is upper case but has no inner block")
    return outer, inner


def _build(outer, inner, dims: tuple[int, ...], text: str) -> Layout:
    inner_product = {d: 1 for d in range(len(dims))}
    for d, size in inner:
        inner_product[d] *= size
    sizes = [(d, -(-dims[d] // inner_product[d])) for d, _ in outer] + list(inner)
    blocks: list[Block] = []
    stride = 1
    for d, size in reversed(sizes):
        blocks.append(Block(d, size, stride))
        stride *= size
    letters = _POSITIONAL
    canonical = "".join(letters[d].upper() if blocked else letters[d] for d, blocked in outer)
    canonical += "".join(f"{size}{letters[d]}" for d, size in inner)
    return Layout(canonical, tuple(dims), tuple(reversed(blocks)))
