"""A convolution as a generalized GEMM: C[m][n] = sum_k A[m][k] * B[k][n], per group.

Each GEMM dimension packs several problem dimensions ("components"), outermost first:

| direction | M                    | N   | K                    | A        | B        | C        |
|-----------|----------------------|-----|----------------------|----------|----------|----------|
| fwd       | mb, od, oh, ow       | oc  | kd, kh, kw, ic       | src      | wei      | dst      |
| bwd_d     | mb, id, ih, iw       | ic  | kd, kh, kw, oc       | diff_dst | wei      | diff_src |
| bwd_w     | kd, kh, kw, ic       | oc  | mb, od, oh, ow       | src      | diff_dst | diff_wei |

Strided backward data is one smaller GEMM per phase of the strides (`StridePhases`): M packs
(mb, q...) and K (t..., oc), where input i = q*S + r and kernel position k = k0 + t*T.

Channels are per group (the group index `g` is a grid dimension).  Components of size 1 are left
out (their value is 0), but every GEMM dimension keeps at least one.

A `View` maps component values to an index of a tensor and to the conditions under which that
index is inside the tensor (convolution padding, and the taps a phase lacks), e.g. for the
forward source `ih = oh*SH + kh*(DH+1) - PH` with `0 <= ih && ih < IH`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ..conv import postops
from ..conv.index import Idx
from ..conv.layout import Layout, default_tag
from ..conv.problem import FEW_CHANNELS, Problem
from ..errors import ConfigError, UnsupportedError
from ..hw import Platform
from ..ir import Expr, Var, free_vars, walk
from ..ir.expr import Binary
from ..ir.types import Type


@dataclass(frozen=True)
class Component:
    name: str
    size: int


@dataclass(frozen=True)
class GemmDim:
    name: str  # "m", "n" or "k"
    components: tuple[Component, ...]  # outermost first

    @property
    def size(self) -> int:
        return math.prod(c.size for c in self.components)

    @property
    def inner(self) -> Component:
        return self.components[-1]

    def unpack(self, coord: Idx) -> tuple[dict[str, Idx], list[Expr]]:
        """Component values of a (flat) coordinate, and the condition that it is inside the
        dimension: `ow = m % OW`, `oh = m / OW % OH`, `mb = m / (OW*OH)` with `mb < MB`."""
        values: dict[str, Idx] = {}
        below = 1
        for i, comp in enumerate(reversed(self.components)):
            outermost = i == len(self.components) - 1
            values[comp.name] = coord.div(below) if outermost else coord.div(below).mod(comp.size)
            below *= comp.size
        outer = self.components[0]
        bound = values[outer.name].below(outer.size)
        return values, [bound] if bound is not None else []


def _dim(name: str, components: list[tuple[str, int]]) -> GemmDim:
    kept = tuple(Component(n, s) for n, s in components if s > 1)
    if not kept:
        n, s = components[-1]
        kept = (Component(n, s),)
    return GemmDim(name, kept)


Mapping_ = Callable[[Callable[[str], Idx]], tuple[list[Idx], list[Expr]]]


@dataclass(frozen=True)
class View:
    """A tensor seen through two GEMM dimensions (one for bias)."""

    tensor: str  # "src", "wei", "dst" or "bias"
    dims: tuple[str, ...]  # the GEMM dimensions indexing it, e.g. ("m", "k")
    layout: Layout
    type: Type
    mapping: Mapping_ = field(compare=False)  # component lookup -> tensor index, in-bounds conditions
    unit: Mapping[str, int] = field(default_factory=dict)  # component -> tensor dim it indexes with stride 1

    def access(self, values: Mapping[str, Idx]) -> tuple[Idx, list[Expr]]:
        """Element offset and in-bounds conditions for component values (absent ones are 0)."""

        def value(name: str) -> Idx:
            return values.get(name, Idx.const(0))

        indices, masks = self.mapping(value)
        return self.layout.offset(indices), masks


def linear_stride(view: View, dim: GemmDim) -> int | None:
    """The element stride `s` when `view` addresses GEMM dimension `dim` linearly, so that the
    offset of coordinate x is `offset(0) + x*s` and no in-bounds condition looks at x's components
    (the forward weights along K: kh, kw and ic are nested in memory as they are in K); else None.

    Then x need not be unpacked into components: the innermost one can carry all of x."""
    names = [c.name for c in dim.components]
    probe = {
        name: Idx.of(Var(f"probe_{name}"), 0, comp.size - 1) for name, comp in zip(names, dim.components, strict=True)
    }
    # the innermost component will carry the whole coordinate: no bound may look at its range
    probe[names[-1]] = Idx.of(Var(f"probe_{names[-1]}"), 0, S32_MAX)
    offset, masks = view.access(probe)
    if any(v.name.startswith("probe_") for m in masks for v in free_vars(m)):
        return None
    if any(isinstance(n, Binary) and n.op in ("div", "mod") for n in walk(offset.expr)):
        return None  # a blocked layout: not affine
    origin = view.access({})[0].lo
    strides = [view.access({name: Idx.const(1)})[0].lo - origin for name in names]
    for outer, inner, comp in zip(strides, strides[1:], dim.components[1:], strict=False):
        if outer != inner * comp.size:
            return None
    return strides[-1]


@dataclass(frozen=True)
class Gemm:
    problem: Problem
    m: GemmDim
    n: GemmDim
    k: GemmDim
    groups: int
    a: View
    b: View
    c: View
    bias: View | None  # FWD_B: added to C; BWD_WB: the sum of B over K
    bias_mode: str  # "", "add" or "reduce"
    post_ops: tuple[View | None, ...] = ()  # per post-op: the tensor it reads (None: none)
    quantization: tuple[View, ...] = ()  # per-channel wei_scales and dst_zero_points (1 x N)
    skips_outputs: bool = False  # C elements no group writes, which must hold zeros (StridePhases)
    swapped: bool = False  # forward with output channels along M, pixels along N (plan=swapped)
    # the conditions on K's outer components (and the group) alone under which a K position adds
    # anything, already among A's and B's masks (strided backward data: the phase has the tap)
    k_guard: Callable[[Callable[[str], Idx]], list[Expr]] | None = field(default=None, compare=False)

    def dim(self, name: str) -> GemmDim:
        return {"m": self.m, "n": self.n, "k": self.k}[name]

    @property
    def acc_type(self) -> Type:
        return self.problem.acc_type

    @property
    def sums_b_columns(self) -> bool:
        """Whether the K loop also sums B's columns: BWD_WB's bias gradient, or forward with a
        source zero point its compensation (the zero point times the sum of the weights)."""
        return self.bias_mode == "reduce" or self.problem.quantization.src_zero_point != 0


def formulate(problem: Problem, plan: str = "gemm") -> Gemm:
    """The GEMM and views of a convolution problem; for plan=swapped the product with its
    operands swapped (`_swapped`)."""
    plain = {"fwd": _forward, "bwd_d": _backward_data, "bwd_w": _backward_weights}[problem.kind]
    if plan == "swapped":
        reason = swap_unsuited(problem)
        if reason:
            raise ConfigError(f"plan=swapped: {reason}")
        return _swapped(plain(problem))
    return plain(problem)


def swap_unsuited(problem: Problem) -> str | None:
    """Why the swapped product does not apply to `problem` (None: it does): forward, and backward
    data at stride 1 (the plain product's pixels along M, not the stride phases').  Its
    channel-wise tensors (bias) lie along M; post-ops and quantization that read tensors are
    planned along N only, so they keep the plain product."""
    if problem.kind == "bwd_w":
        return "backward weights keep the plain product"
    if problem.kind == "bwd_d" and any(problem.desc.field("s", d) > 1 for d in problem.desc.used):
        return "strided backward data keeps the plain product (its stride phases)"
    if problem.desc.g > 1:
        return "grouped convolutions keep the plain product"
    if problem.post_op_inputs or problem.quantization:
        return "post-ops or quantization that read tensors are planned along N, the plain product's channels"
    return None


def weights_choices(problem: Problem, hw: Platform, plan: str = "gemm") -> tuple[Problem, ...]:
    """The problems whose kernels `pipeline.compile_problem` compiles on `hw` to resolve the
    weights' `any`, keeping the one the model prices lowest (the first, `any`'s default, on a
    tie), as oneDNN resolves `any` per engine.  Where dpas multiplies 16-bit or int8 weights
    (forward and backward data), the second keeps B's N channels innermost with pairs (quads for
    int8) of its K channels interleaved: forward `[g] k… I o 2i` (oneDNN's dpas kernels take
    OIhw8i16o2i, OIhw4i16o4i), backward data `[g] k… O i 2o`.  A run of N channels is then a row
    of dpas's VNNI B, which a block message loads with no interleaving moves.  The rows take
    fewer instructions, but where one thread per EU runs the loop its loads' latency stays
    exposed (XeHPG bf16 res3a_branch2b in one configuration: loop 958 -> 458 instructions), and
    the estimate that ranks configurations does not price them.  Elsewhere (no dpas, backward
    weights, few input channels per group: first layers, depthwise and transposed backward data
    keep the layouts their plans read; a layout given explicitly) the problem itself.  The swapped
    product (`plan`) on a platform with 2D block loads also tries `swapped_weights`."""
    rows = swapped_weights(problem, hw) if plan == "swapped" else problem
    if rows is not problem:
        return (*weights_choices(problem, hw), rows)
    if not _weights_any(problem) or not hw.has_dpas or problem.kind == "bwd_w":
        return (problem,)
    ops = 4 // problem.type_of("wei").size
    desc = problem.desc
    k_channels, n, k = (desc.icg, "o", "i") if problem.is_forward else (desc.ocg, "i", "o")
    if ops == 1 or desc.icg < FEW_CHANNELS or k_channels % ops:
        return (problem,)
    tag = default_tag("wei", len(desc.wei_dims()), desc.g > 1, f"{n}{ops}{k}")
    return (problem, replace(problem, wtag=tag))


def grouped_row_weights(problem: Problem) -> Problem:
    """The problem whose kernel `pipeline.compile_problem` also compiles where `any`'s default
    weights took plan=depthwise on a forward grouped layer of several channels per group: the
    weights' `any` as `k… i g o` (`default_tag`'s "g"), so that a tap's weights of a block of
    output channels are one block message, not a gather (resnext50's g32x4 in bf16: XeHPC 3,103
    -> 2,075 modeled cycles, XeHPG 8,168 -> 6,906).  Not the default: the GEMM plan's dpas is
    slower with it (g32x8 in bf16 on XeHPG: 3,540 -> 4,368).  Depthwise layers (one channel per
    group) have it as `any`'s default; elsewhere the problem itself."""
    desc = problem.desc
    if not _weights_any(problem) or not problem.is_forward or desc.g == 1 or desc.icg == desc.ocg == 1:
        return problem
    return replace(problem, wtag=default_tag("wei", len(desc.wei_dims()), True, "g"))


def swapped_weights(problem: Problem, hw: Platform) -> Problem:
    """The problem whose swapped product (`formulate(..., "swapped")`) `pipeline.compile_problem`
    also compiles, beside `any`'s default: on a platform with 2D block loads (XeHPC), a forward
    problem's weights' `any` as one run of each output channel's taps and input channels,
    `[g] o k… i` (`default_tag`'s "ki").  A = wei^T (output channels x K) is then a row-major
    surface, K contiguous, whose blocks of 32 bytes by the tile's rows are dpas's A as the
    message lays it out (`block2d.block2d_plan`): one message a K step, where `any`'s default
    (output channels innermost) is gathered and moved into A's rows, two moves a dword (XeHPC
    bf16 res3a_branch2b, mb1, 16 x 16 tiles: loop 94 -> 61 instructions for the same 4 dpas).
    Elsewhere (no 2D blocks, backward data, a layout given explicitly) the problem itself."""
    if not _weights_any(problem) or not hw.has_block2d or not problem.is_forward:
        return problem
    tag = default_tag("wei", len(problem.desc.wei_dims()), problem.desc.g > 1, "ki")
    return replace(problem, wtag=tag)


def _weights_any(problem: Problem) -> bool:
    """Whether the weights' layout is `any` (the compiler's to choose), not given."""
    return problem.wtag.strip() in ("", "any")


# The s32 range of the index arithmetic --------------------------------------------------------

S32_MAX = 2**31 - 1


def check_index_range(problem: Problem) -> None:
    """Raise UnsupportedError when the views' index arithmetic could leave s32 for an element the
    kernel reads or writes (the kernels compute indices in s32, which wraps around).

    Per spatial dimension the views compute `o*S + k*(D+1) - P` (forward, backward weights) and
    `i + P - k*(D+1)` (backward data) with o < O, k < K and i < I.  Summed in any order, every
    partial sum lies between -max(P, (K-1)(D+1)) and max((O-1)S + (K-1)(D+1), I + P), and
    P < (K-1)(D+1) + 1, so it is enough that both maxima fit."""
    desc = problem.desc
    for dim in desc.used:
        o, i, k, s, p, d = (desc.field(x, dim) for x in ("o", "i", "k", "s", "p", "d"))
        reach = (o - 1) * s + (k - 1) * (d + 1)
        if reach > S32_MAX:
            raise UnsupportedError(
                f"o{dim}={o}, s{dim}={s}, k{dim}={k}, d{dim}={d}: the last output's last tap is at "
                f"(o{dim}-1)*s{dim} + (k{dim}-1)*(d{dim}+1) = {reach}, beyond the s32 index arithmetic of "
                f"xegen's kernels ({S32_MAX} at most)"
            )
        if i + p > S32_MAX:
            raise UnsupportedError(
                f"i{dim}={i}, p{dim}={p}: i{dim} + p{dim} = {i + p} is beyond the s32 index "
                f"arithmetic of xegen's kernels ({S32_MAX} at most)"
            )


# Index mappings -----------------------------------------------------------------------------


def _input_position(desc, v, dim: str) -> Idx:
    """Input index read by output position `o<dim>` and kernel position `k<dim>`."""
    return v("o" + dim) * desc.field("s", dim) + v("k" + dim) * (desc.field("d", dim) + 1) - desc.field("p", dim)


def _weights_index(desc, v) -> list[Idx]:
    kernel = [v("k" + d) for d in desc.used]
    if desc.g > 1:
        return [v("g"), v("oc"), v("ic"), *kernel]
    return [v("oc"), v("ic"), *kernel]


def _weights_unit(desc) -> dict[str, int]:
    lead = 1 if desc.g > 1 else 0
    return {"oc": lead, "ic": lead + 1, "k" + desc.used[-1]: lead + 1 + desc.spatial_dims}


def _source_of_output(desc):
    """src[mb][g*ICg + ic][o*S + k*(D+1) - P] with the input-bounds conditions of the dimensions
    where some output and kernel position reads outside the input (padding, or a kernel that runs
    past the input's end).  Elsewhere no condition: the GEMM's own bounds keep o and k in range,
    and a coordinate addressed linearly, whose innermost component carries all of it, is never
    compared with the input's size (a 1x1 stride-1 layer's pixels, `linear_stride`)."""
    checked = [d for d in desc.used if not _reads_inside(desc, d)]

    def mapping(v):
        positions = {d: _input_position(desc, v, d) for d in desc.used}
        masks = [m for d in checked for m in positions[d].in_range(0, desc.field("i", d))]
        return [v("mb"), v("g") * desc.icg + v("ic"), *positions.values()], masks

    return mapping


def _reads_inside(desc, dim: str) -> bool:
    """Whether every output position and kernel position of `dim` read inside the input, at
    stride 1.  (Strided, the bound goes on: there no pixel is addressed linearly, and dropping it
    only moved the loads of XeHPC's 1x1 stride-2 forward, modeled 10 % slower.)"""
    if desc.field("s", dim) != 1:
        return False
    first = -desc.field("p", dim)
    last = (
        (desc.field("o", dim) - 1) * desc.field("s", dim)
        + (desc.field("k", dim) - 1) * (desc.field("d", dim) + 1)
        + first
    )
    return first >= 0 and last < desc.field("i", dim)


def _channels_and_spatial(desc, channel: str, per_group: int, prefix: str):
    """tensor[mb][g*Cg + c][<prefix>d][<prefix>h][<prefix>w] (always in bounds)."""

    def mapping(v):
        return [v("mb"), v("g") * per_group + v(channel), *(v(prefix + d) for d in desc.used)], []

    return mapping


def _bias_mapping(desc):
    def mapping(v):
        return [v("g") * desc.ocg + v("oc")], []

    return mapping


def _spatial(desc, prefix: str, size_prefix: str) -> list[tuple[str, int]]:
    return [(prefix + d, desc.field(size_prefix, d)) for d in desc.used]


def _views_common(problem: Problem):
    desc = problem.desc
    layouts = {t: problem.layout_of(t) for t in ("src", "wei", "dst")}
    types = {t: problem.type_of(t) for t in ("src", "wei", "dst")}
    last = len(desc.src_dims()) - 1
    return desc, layouts, types, last


def _bias_view(problem: Problem) -> View | None:
    if not problem.has_bias:
        return None
    return _channel_view(problem, "bias")


def _channel_view(problem: Problem, name: str) -> View:
    """A tensor of one value per output channel, along N."""
    return View(name, ("n",), problem.layout_of(name), problem.type_of(name), _bias_mapping(problem.desc), {"oc": 0})


def _post_op_views(problem: Problem, c: View) -> tuple[View | None, ...]:
    """Per post-op, the view of the tensor it reads: sum reads C's own elements (as its data
    type); a binary's or prelu's tensor spans the destination dimensions of its broadcast mask,
    seen along N alone (a 1 x N tile) when that is only the channels, else along M and N."""
    views: list[View | None] = []
    ndims = len(problem.desc.dst_dims())
    for index, op in enumerate(problem.post_ops):
        name = problem.post_op_tensor(index)
        if isinstance(op, postops.Sum):  # its tensor is "dst"
            views.append(replace(c, type=problem.type_of("dst") if not op.dt else Type(op.dt)))
        elif name is not None and isinstance(op, (postops.Binary, postops.Prelu)):
            views.append(_broadcast_view(problem, name, op.mask(ndims)))
        else:
            views.append(None)
    return tuple(views)


def _broadcast_view(problem: Problem, name: str, mask: int) -> View:
    desc = problem.desc
    dst_mapping = _channels_and_spatial(desc, "oc", desc.ocg, "o")
    ndims = len(desc.dst_dims())

    def mapping(v):
        indices, masks = dst_mapping(v)
        return [index if mask >> i & 1 else Idx.const(0) for i, index in enumerate(indices)], masks

    unit = {"oc": 1} if mask & 0b10 else {}
    if mask >> (ndims - 1) & 1:
        unit["o" + desc.used[-1]] = ndims - 1
    dims = ("n",) if mask & ~0b10 == 0 else ("m", "n")
    return View(name, dims, problem.layout_of(name), problem.type_of(name), mapping, unit)


def _forward(problem: Problem) -> Gemm:
    desc, layouts, types, last = _views_common(problem)
    m = _dim("m", [("mb", desc.mb), *_spatial(desc, "o", "o")])
    n = _dim("n", [("oc", desc.ocg)])
    k = _dim("k", [*_spatial(desc, "k", "k"), ("ic", desc.icg)])
    a = View("src", ("m", "k"), layouts["src"], types["src"], _source_of_output(desc), {"ic": 1})
    b = View(
        "wei", ("k", "n"), layouts["wei"], types["wei"], lambda v: (_weights_index(desc, v), []), _weights_unit(desc)
    )
    c = View(
        "dst",
        ("m", "n"),
        layouts["dst"],
        types["dst"],
        _channels_and_spatial(desc, "oc", desc.ocg, "o"),
        {"oc": 1, "o" + desc.used[-1]: last},
    )
    return Gemm(
        problem,
        m,
        n,
        k,
        desc.g,
        a,
        b,
        c,
        _bias_view(problem),
        "add" if problem.has_bias else "",
        post_ops=_post_op_views(problem, c),
        quantization=tuple(_channel_view(problem, t) for t in problem.quantization.tensors),
    )


def _swapped(plain: Gemm) -> Gemm:
    """C^T = B^T x A^T: forward dst^T = wei^T x src^T (output channels along M, pixels along N),
    backward data diff_src^T = wei^T x diff_dst^T (input channels along M).  A 16-lane gather of
    the pixels' channels (one lane a pixel, each a run of K) lands component-major, which is
    dpas's VNNI B as it is, where the plain product (pixels along M) must move every dword of it
    into A's rows; what a padded spatial convolution gathers, since its pixels' bounds vary.
    The plain product's views, renamed: they address the tensors by component, not dimension
    (a sum post-op reads C's own elements; the others that read tensors keep the plain product;
    backward data has no bias)."""
    return replace(
        plain,
        m=replace(plain.n, name="m"),
        n=replace(plain.m, name="n"),
        a=replace(plain.b, dims=("m", "k")),
        b=replace(plain.a, dims=("k", "n")),
        bias=replace(plain.bias, dims=("m",)) if plain.bias is not None else None,
        swapped=True,
    )


def _backward_data(problem: Problem) -> Gemm:
    desc = problem.desc
    if any(desc.field("s", d) > 1 for d in desc.used):
        return _backward_data_by_phases(problem)
    desc, layouts, types, last = _views_common(problem)
    m = _dim("m", [("mb", desc.mb), *_spatial(desc, "i", "i")])
    n = _dim("n", [("ic", desc.icg)])
    k = _dim("k", [*_spatial(desc, "k", "k"), ("oc", desc.ocg)])

    def diff_dst(v):
        positions, masks = [], []
        for d in desc.used:
            # the output that input position i<d> sees through kernel position k<d>:
            # o*S + k*(D+1) - P = i, so o = (i + P - k*(D+1)) / S when that divides exactly
            numerator = v("i" + d) + desc.field("p", d) - v("k" + d) * (desc.field("d", d) + 1)
            stride = desc.field("s", d)
            position = numerator.div(stride)
            masks += numerator.divisible_by(stride) + position.in_range(0, desc.field("o", d))
            positions.append(position)
        return [v("mb"), v("g") * desc.ocg + v("oc"), *positions], masks

    a = View("dst", ("m", "k"), layouts["dst"], types["dst"], diff_dst, {"oc": 1})
    b = View(
        "wei", ("k", "n"), layouts["wei"], types["wei"], lambda v: (_weights_index(desc, v), []), _weights_unit(desc)
    )
    c = View(
        "src",
        ("m", "n"),
        layouts["src"],
        types["src"],
        _channels_and_spatial(desc, "ic", desc.icg, "i"),
        {"ic": 1, "i" + desc.used[-1]: last},
    )
    return Gemm(problem, m, n, k, desc.g, a, b, c, None, "")


@dataclass(frozen=True)
class StridePhases:
    """Backward data along one spatial dimension split into the phases of its stride S.

    Input position i receives output o through kernel position k exactly when o*S + k*E - P = i
    (E = dilation + 1).  The kernel positions k0, k0 + T, k0 + 2T, ... (T = S / gcd(S, E)) all
    reach the inputs i = q*S + r of one residue r = (k0*E - P) mod S, and no other; so a phase
    is a first tap k0 < min(T, K), its taps are k = k0 + t*T (t < `taps`, fewer for a larger
    k0), and tap t reads o = q + (r + P - k0*E)/S - t*E*T/S, the division exact.  The residues
    of no phase (when min(T, K) < S) receive no tap: those inputs' gradient is zero."""

    stride: int  # S
    dilation: int  # E = dilation + 1, the distance between kernel positions
    padding: int
    kernel: int
    inputs: int
    outputs: int

    @property
    def tap_step(self) -> int:  # T
        return self.stride // math.gcd(self.stride, self.dilation)

    @property
    def count(self) -> int:
        return min(self.tap_step, self.kernel)

    @property
    def output_step(self) -> int:  # o moves back by this much per tap
        return self.dilation * self.tap_step // self.stride

    @property
    def taps(self) -> int:
        return -(-self.kernel // self.tap_step)

    @property
    def positions(self) -> int:
        return -(-self.inputs // self.stride)

    @property
    def covers_all(self) -> bool:
        return self.count == self.stride

    def residue(self, k0: Idx) -> Idx:
        """(k0*E - P) mod S, with the left side kept non-negative for the truncating `%`."""
        lift = -(-self.padding // self.stride) * self.stride
        return (k0 * self.dilation + (lift - self.padding)).mod(self.stride)


def stride_phases(problem: Problem) -> dict[str, StridePhases]:
    """The phases of every spatial dimension of a backward-data problem (one phase where S = 1)."""
    desc = problem.desc
    return {
        d: StridePhases(
            desc.field("s", d),
            desc.field("d", d) + 1,
            desc.field("p", d),
            desc.field("k", d),
            desc.field("i", d),
            desc.field("o", d),
        )
        for d in desc.used
    }


def _backward_data_by_phases(problem: Problem) -> Gemm:
    """Strided backward data as one GEMM per phase of the strides (StridePhases): the phases are
    grid groups beside the convolution groups, so no multiply-add is spent on a kernel position
    that falls between outputs.  Taps a phase lacks (fewer than `taps`) are masked; inputs no
    phase reaches are left to the launcher's zero fill (`skips_outputs`)."""
    desc, layouts, types, _ = _views_common(problem)
    phases = stride_phases(problem)
    count = math.prod(ph.count for ph in phases.values())
    positions = [("mb", desc.mb), *(("q" + d, ph.positions) for d, ph in phases.items())]
    # few input channels (a first layer's diff_src) would fill few lanes of an N tile: then the
    # GEMM is transposed, channels along M and positions along N
    transposed = desc.icg < FEW_CHANNELS
    m = _dim("m", [("ic", desc.icg)] if transposed else positions)
    n = _dim("n", positions if transposed else [("ic", desc.icg)])
    k = _dim("k", [*(("t" + d, ph.taps) for d, ph in phases.items()), ("oc", desc.ocg)])

    def phased(v):
        """The view's lookup with the convolution group and each dimension's first tap k0<d>,
        residue r<d> and kernel position k<d> decoded from the grid group and the taps."""
        group = v("g")
        values = {"g": group.div(count)}
        below = 1
        for d in reversed(desc.used):
            ph = phases[d]
            k0 = group.mod(count).div(below).mod(ph.count)
            below *= ph.count
            values["k0" + d] = k0
            values["r" + d] = ph.residue(k0)
            values["k" + d] = k0 + v("t" + d) * ph.tap_step
        return lambda name: values[name] if name in values else v(name)

    def taps_in_kernel(v, d) -> list[Expr]:
        bound = v("k" + d).below(phases[d].kernel)
        return [bound] if bound is not None else []

    def diff_dst(lookup):
        v = phased(lookup)
        positions, masks = [], []
        for d, ph in phases.items():
            offset = (v("r" + d) + ph.padding - v("k0" + d) * ph.dilation).div(ph.stride)
            position = v("q" + d) + offset - v("t" + d) * ph.output_step
            masks += taps_in_kernel(v, d) + position.in_range(0, ph.outputs)
            positions.append(position)
        return [v("mb"), v("g") * desc.ocg + v("oc"), *positions], masks

    def tap_exists(lookup) -> list[Expr]:
        v = phased(lookup)
        return [m for d in desc.used for m in taps_in_kernel(v, d)]

    def weights(lookup):
        return _weights_index(desc, phased(lookup)), tap_exists(lookup)

    def diff_src(lookup):
        v = phased(lookup)
        positions, masks = [], []
        for d, ph in phases.items():
            position = v("q" + d) * ph.stride + v("r" + d)
            masks += position.in_range(0, ph.inputs)
            positions.append(position)
        return [v("mb"), v("g") * desc.icg + v("ic"), *positions], masks

    # only channels are unit-stride lines: the positions carry per-element bounds
    lead = 1 if desc.g > 1 else 0
    a = View("dst", ("m", "k"), layouts["dst"], types["dst"], diff_dst, {"oc": 1})
    b = View("wei", ("k", "n"), layouts["wei"], types["wei"], weights, {"oc": lead, "ic": lead + 1})
    c = View("src", ("m", "n"), layouts["src"], types["src"], diff_src, {"ic": 1})
    if transposed:
        a, b = replace(b, dims=("m", "k")), replace(a, dims=("k", "n"))
    skips = not all(ph.covers_all for ph in phases.values())
    return Gemm(problem, m, n, k, desc.g * count, a, b, c, None, "", skips_outputs=skips, k_guard=tap_exists)


def _backward_weights(problem: Problem) -> Gemm:
    desc, layouts, types, last = _views_common(problem)
    m = _dim("m", [*_spatial(desc, "k", "k"), ("ic", desc.icg)])
    n = _dim("n", [("oc", desc.ocg)])
    k = _dim("k", [("mb", desc.mb), *_spatial(desc, "o", "o")])
    a = View("src", ("m", "k"), layouts["src"], types["src"], _source_of_output(desc), {"ic": 1})
    b = View(
        "dst",
        ("k", "n"),
        layouts["dst"],
        types["dst"],
        _channels_and_spatial(desc, "oc", desc.ocg, "o"),
        {"oc": 1, "o" + desc.used[-1]: last},
    )
    c = View(
        "wei", ("m", "n"), layouts["wei"], types["wei"], lambda v: (_weights_index(desc, v), []), _weights_unit(desc)
    )
    return Gemm(problem, m, n, k, desc.g, a, b, c, _bias_view(problem), "reduce" if problem.has_bias else "")
