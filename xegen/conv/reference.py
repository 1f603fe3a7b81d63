"""Reference convolutions in numpy, written independently of the kernel builder.

Each direction is computed as a sum over kernel positions of strided slices of the input
contracted with einsum (no GEMM formulation, no layouts, no index unpacking).  For each kernel
position only the outputs that read inside the input take part (padding contributes zero), so no
padded copy is made and the padding may be as large as the index range allows:

    forward:          dst[n,g,o,P]  = sum_{c,K} (src[n,g,c, P*S + K*(D+1) - PAD] - src_zp) * wei[g,o,c,K]
    backward data:    diff_src[n,g,c, P*S + K*(D+1) - PAD] += diff_dst[n,g,o,P] * wei[g,o,c,K]
    backward weights: diff_wei[g,o,c,K] = sum_{n,P} src[n,g,c, P*S + K*(D+1) - PAD] * diff_dst[n,g,o,P]

Floating-point tensors are computed in float64 and integer ones in int64, so the results are
exact up to float64 rounding.  `expected_outputs` then applies the problem's epilogue as the
kernel must: bias, the post-op chain (oneDNN's formulas, `xegen.conv.postops`) and conversion to
the output type (rounded to nearest even and saturated for integers, as oneDNN does).  int8
problems without post-ops are computed as the kernel does, in f32, and match exactly; with
post-ops everything after the exact accumulation is float64 and the check allows the rounding
(`xegen.conv.check`).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import postops
from .descriptor import Descriptor
from .postops import Sum
from .problem import Problem

_ALL3 = (slice(None),) * 3  # the n, g and channel axes of a grouped tensor


def _grouped(x: np.ndarray, groups: int) -> np.ndarray:
    """N x C x ... -> N x G x C/G x ..."""
    return x.reshape(x.shape[0], groups, x.shape[1] // groups, *x.shape[2:])


def _weights(desc: Descriptor, wei: np.ndarray) -> np.ndarray:
    """Weights as G x OC/G x IC/G x kernel."""
    return wei.reshape(desc.g, desc.ocg, desc.icg, *wei.shape[-desc.spatial_dims :])


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _slices(desc: Descriptor, position: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """For kernel position `position`: the outputs whose tap lands inside the input, and the
    input elements they read (one slice per spatial dimension); None if no output does."""
    outputs, inputs = [], []
    for dim, k in zip(desc.used, position, strict=True):
        o, i, s, p, d = (desc.field(x, dim) for x in ("o", "i", "s", "p", "d"))
        shift = k * (d + 1) - p  # input index = output * s + shift
        first = max(0, _ceil_div(-shift, s))
        last = min(o - 1, (i - 1 - shift) // s)
        if first > last:
            return None
        outputs.append(slice(first, last + 1))
        start = first * s + shift
        inputs.append(slice(start, start + (last - first) * s + 1, s))
    return tuple(outputs), tuple(inputs)


def _taps(desc: Descriptor):
    """(kernel position, output slices, input slices) for every kernel position that reads the input."""
    kernel = [desc.field("k", dim) for dim in desc.used]
    for position in itertools.product(*(range(k) for k in kernel)):
        found = _slices(desc, position)
        if found is not None:
            yield position, *found


def _sizes(desc: Descriptor, prefix: str) -> list[int]:
    return [desc.field(prefix, dim) for dim in desc.used]


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64) if np.issubdtype(x.dtype, np.integer) else x.astype(np.float64)


def forward(desc: Descriptor, src: np.ndarray, wei: np.ndarray) -> np.ndarray:
    """conv(src, wei) as mb x oc x spatial (no bias)."""
    x = _grouped(_wide(src), desc.g)
    w = _weights(desc, _wide(wei))
    out = np.zeros((desc.mb, desc.g, desc.ocg, *_sizes(desc, "o")), dtype=x.dtype)
    for position, outputs, inputs in _taps(desc):
        out[_ALL3 + outputs] += np.einsum("ngc...,goc->ngo...", x[_ALL3 + inputs], w[(Ellipsis, *position)])
    return out.reshape(desc.dst_dims())


def backward_data(desc: Descriptor, diff_dst: np.ndarray, wei: np.ndarray) -> np.ndarray:
    """diff_src (mb x ic x spatial) from diff_dst and wei."""
    dy = _grouped(_wide(diff_dst), desc.g)
    w = _weights(desc, _wide(wei))
    dx = np.zeros((desc.mb, desc.g, desc.icg, *_sizes(desc, "i")), dtype=dy.dtype)
    for position, outputs, inputs in _taps(desc):
        dx[_ALL3 + inputs] += np.einsum("ngo...,goc->ngc...", dy[_ALL3 + outputs], w[(Ellipsis, *position)])
    return dx.reshape(desc.src_dims())


def backward_weights(desc: Descriptor, src: np.ndarray, diff_dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """diff_wei (in the weights' logical shape) and diff_bias (oc) from src and diff_dst."""
    x = _grouped(_wide(src), desc.g)
    dy = _grouped(_wide(diff_dst), desc.g)
    dw = np.zeros((desc.g, desc.ocg, desc.icg, *_sizes(desc, "k")), dtype=x.dtype)
    for position, outputs, inputs in _taps(desc):
        window, grads = x[_ALL3 + inputs], dy[_ALL3 + outputs]
        dw[(Ellipsis, *position)] = np.einsum(
            "ngcp,ngop->goc", window.reshape(*window.shape[:3], -1), grads.reshape(*grads.shape[:3], -1)
        )
    bias = dy.sum(axis=tuple(a for a in range(dy.ndim) if a not in (1, 2))).reshape(desc.oc)
    return dw.reshape(desc.wei_dims()), bias


def exact_outputs(
    problem: Problem, tensors: dict[str, np.ndarray], src_zero_point: bool = True
) -> dict[str, np.ndarray]:
    """The convolution's results before any epilogue (float64 or int64); forward, the source
    zero point is subtracted from every src element first (oneDNN's `src - zp_src`, over the
    taps inside the input only) unless `src_zero_point` is False."""
    desc = problem.desc
    if problem.kind == "fwd":
        src = _wide(tensors["src"])
        if src_zero_point:
            src = src - problem.quantization.src_zero_point
        return {"dst": forward(desc, src, tensors["wei"])}
    if problem.kind == "bwd_d":
        return {"src": backward_data(desc, tensors["dst"], tensors["wei"])}
    wei, bias = backward_weights(desc, tensors["src"], tensors["dst"])
    return {"wei": wei, "bias": bias} if problem.has_bias else {"wei": wei}


def bf16_round(x: np.ndarray) -> np.ndarray:
    """Round to bf16 (nearest even), returned as float32 (an implementation of our own)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def convert(values: np.ndarray, kind: str) -> np.ndarray:
    """Convert to a data type as the kernel does: floats round to nearest even; integers round to
    nearest even and saturate."""
    if kind == "f32":
        return values.astype(np.float32)
    if kind == "f16":
        return values.astype(np.float16)
    if kind == "bf16":
        return bf16_round(values.astype(np.float32))
    integers: dict[str, type[np.integer]] = {"s8": np.int8, "u8": np.uint8, "s32": np.int32}
    info = np.iinfo(integers[kind])
    if np.issubdtype(values.dtype, np.integer):
        return np.clip(values, info.min, info.max).astype(info.dtype)
    # clip in float64, which holds both bounds exactly (float32 rounds 2^31-1 up to 2^31)
    return np.clip(np.rint(values.astype(np.float64)), info.min, info.max).astype(info.dtype)


def expected_outputs(problem: Problem, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the kernel should write: the exact results through the problem's epilogue."""
    exact = exact_outputs(problem, tensors)
    if problem.kind != "fwd":
        return {name: convert(value, problem.type_of(name).kind) for name, value in exact.items()}
    acc = exact["dst"]
    bias = tensors.get("bias") if problem.has_bias else None
    out_kind = problem.types.dst
    if problem.types.is_int8 and (not problem.post_ops or problem.relu) and not problem.quantization:
        if bias is None and out_kind == "s32":
            value = np.maximum(acc, 0) if problem.relu else acc
            return {"dst": convert(value, out_kind)}
        # oneDNN's int8 post-processing is f32 arithmetic
        value = acc.astype(np.float32)
        if bias is not None:
            value = value + _channel(bias.astype(np.float32), acc.ndim)
        if problem.relu:
            value = np.maximum(value, np.float32(0))
        return {"dst": convert(value, out_kind)}
    return {"dst": convert(post_processed(problem, tensors, acc), out_kind)}


def post_processed(problem: Problem, tensors: dict[str, np.ndarray], acc: np.ndarray, step=None) -> np.ndarray:
    """Forward values before the conversion to dst, in float64: `acc` scaled (src and wei
    scales), plus bias, through the post-op chain, divided by the dst scale plus the dst zero
    point.  `step(op, before, after, operand)`, if given, sees every post-op applied."""
    q = problem.quantization
    value = acc.astype(np.float64) * np.float64(q.src_scale) * _channel(wei_scales(problem, tensors), acc.ndim)
    if problem.has_bias:
        value = value + _channel(tensors["bias"].astype(np.float64), acc.ndim)
    for index, op in enumerate(problem.post_ops):
        operand = post_op_operand(problem, tensors, index)
        after = postops.apply(op, value, operand)
        if step is not None:
            step(op, value, after, operand)
        value = after
    return value / q.dst_scale + _channel(dst_zero_points(problem, tensors), acc.ndim)


def wei_scales(problem: Problem, tensors: dict[str, np.ndarray]) -> np.ndarray:
    """The weights' scale per output channel (float64)."""
    q = problem.quantization
    if q.wei_scale_per_oc:
        return tensors["wei_scales"].astype(np.float64)
    return np.full(problem.desc.oc, q.wei_scale)


def dst_zero_points(problem: Problem, tensors: dict[str, np.ndarray]) -> np.ndarray:
    q = problem.quantization
    if q.dst_zero_point_per_oc:
        return tensors["dst_zero_points"].astype(np.float64)
    return np.full(problem.desc.oc, float(q.dst_zero_point))


def post_op_operand(problem: Problem, tensors: dict[str, np.ndarray], index: int) -> np.ndarray | None:
    """What the index-th post-op reads besides the values: the old dst (as the sum's data type),
    a binary's second tensor or prelu's weights."""
    name = problem.post_op_tensor(index)
    if name is None:
        return None
    op = problem.post_ops[index]
    value = tensors[name]
    if isinstance(op, Sum) and op.dt and op.dt != problem.types.dst:
        value = reinterpret(value, problem.types.dst, op.dt)
    return value


_INTEGER_DTYPES = {"s8": np.int8, "u8": np.uint8, "s32": np.int32}


def reinterpret(values: np.ndarray, kind: str, as_kind: str) -> np.ndarray:
    """The bytes of `kind` values read as `as_kind` (s8 <-> u8)."""
    if kind not in ("s8", "u8") or as_kind not in ("s8", "u8"):
        raise ValueError(f"cannot reinterpret {kind} as {as_kind}")
    return np.asarray(values).astype(_INTEGER_DTYPES[kind]).view(_INTEGER_DTYPES[as_kind])


def _channel(bias: np.ndarray, ndim: int) -> np.ndarray:
    return bias.reshape((1, -1) + (1,) * (ndim - 2))
