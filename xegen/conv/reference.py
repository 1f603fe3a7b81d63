"""Reference convolutions in numpy, written independently of the kernel builder.

Each direction is computed as a sum over kernel positions of strided slices of a zero-padded
tensor contracted with einsum (no GEMM formulation, no layouts, no index unpacking):

    forward:          dst[n,g,o,P]  = sum_{c,K} src_pad[n,g,c, P*S + K*(D+1)] * wei[g,o,c,K]
    backward data:    diff_src_pad[n,g,c, P*S + K*(D+1)] += diff_dst[n,g,o,P] * wei[g,o,c,K]
    backward weights: diff_wei[g,o,c,K] = sum_{n,P} src_pad[n,g,c, P*S + K*(D+1)] * diff_dst[n,g,o,P]

Floating-point tensors are computed in float64 and integer ones in int64, so the results are
exact up to float64 rounding.  `expected_outputs` then applies the problem's epilogue as the
kernel must: bias, ReLU and conversion to the output type (int8 post-processing in f32, rounded
to nearest even and saturated, as oneDNN does).
"""

from __future__ import annotations

import itertools

import numpy as np

from .descriptor import Descriptor
from .problem import Problem


def _grouped(x: np.ndarray, groups: int) -> np.ndarray:
    """N x C x ... -> N x G x C/G x ..."""
    return x.reshape(x.shape[0], groups, x.shape[1] // groups, *x.shape[2:])


def _weights(desc: Descriptor, wei: np.ndarray) -> np.ndarray:
    """Weights as G x OC/G x IC/G x kernel."""
    return wei.reshape(desc.g, desc.ocg, desc.icg, *wei.shape[-desc.spatial_dims:])


def _geometry(desc: Descriptor):
    dims = desc.used
    o = [desc.field("o", d) for d in dims]
    i = [desc.field("i", d) for d in dims]
    k = [desc.field("k", d) for d in dims]
    s = [desc.field("s", d) for d in dims]
    p = [desc.field("p", d) for d in dims]
    dil = [desc.field("d", d) + 1 for d in dims]
    # the padded input must reach the last input any output reads, and hold the whole input
    padded = [max(pp + ii, (oo - 1) * ss + (kk - 1) * dd + 1) for pp, ii, oo, ss, kk, dd in zip(p, i, o, s, k, dil)]
    return o, i, k, s, p, dil, padded


def _window(kernel_position, o, s, dil):
    """Slices of the padded input that kernel position `kernel_position` multiplies, for all outputs."""
    return tuple(slice(kk * dd, kk * dd + (oo - 1) * ss + 1, ss) for kk, oo, ss, dd in zip(kernel_position, o, s, dil))


def _pad(x: np.ndarray, p, i, padded) -> np.ndarray:
    out = np.zeros(x.shape[:3] + tuple(padded), dtype=x.dtype)
    out[(slice(None),) * 3 + tuple(slice(pp, pp + ii) for pp, ii in zip(p, i))] = x
    return out


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64) if np.issubdtype(x.dtype, np.integer) else x.astype(np.float64)


def forward(desc: Descriptor, src: np.ndarray, wei: np.ndarray) -> np.ndarray:
    """conv(src, wei) as mb x oc x spatial (no bias)."""
    o, i, k, s, p, dil, padded = _geometry(desc)
    x = _pad(_grouped(_wide(src), desc.g), p, i, padded)
    w = _weights(desc, _wide(wei))
    out = np.zeros((desc.mb, desc.g, desc.ocg, *o), dtype=x.dtype)
    for position in itertools.product(*(range(kk) for kk in k)):
        window = x[(slice(None),) * 3 + _window(position, o, s, dil)]
        out += np.einsum("ngc...,goc->ngo...", window, w[(Ellipsis, *position)])
    return out.reshape(desc.mb, desc.oc, *o)


def backward_data(desc: Descriptor, diff_dst: np.ndarray, wei: np.ndarray) -> np.ndarray:
    """diff_src (mb x ic x spatial) from diff_dst and wei."""
    o, i, k, s, p, dil, padded = _geometry(desc)
    dy = _grouped(_wide(diff_dst), desc.g)
    w = _weights(desc, _wide(wei))
    dx = np.zeros((desc.mb, desc.g, desc.icg, *padded), dtype=dy.dtype)
    for position in itertools.product(*(range(kk) for kk in k)):
        dx[(slice(None),) * 3 + _window(position, o, s, dil)] += np.einsum("ngo...,goc->ngc...", dy,
                                                                          w[(Ellipsis, *position)])
    inside = tuple(slice(pp, pp + ii) for pp, ii in zip(p, i))
    return dx[(slice(None),) * 3 + inside].reshape(desc.mb, desc.ic, *i)


def backward_weights(desc: Descriptor, src: np.ndarray, diff_dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """diff_wei (in the weights' logical shape) and diff_bias (oc) from src and diff_dst."""
    o, i, k, s, p, dil, padded = _geometry(desc)
    x = _pad(_grouped(_wide(src), desc.g), p, i, padded)
    dy = _grouped(_wide(diff_dst), desc.g)
    dw = np.zeros((desc.g, desc.ocg, desc.icg, *k), dtype=x.dtype)
    for position in itertools.product(*(range(kk) for kk in k)):
        window = x[(slice(None),) * 3 + _window(position, o, s, dil)]
        flat_window = window.reshape(*window.shape[:3], -1)
        dw[(Ellipsis, *position)] = np.einsum("ngcp,ngop->goc", flat_window, dy.reshape(*dy.shape[:3], -1))
    bias = dy.sum(axis=tuple(a for a in range(dy.ndim) if a not in (1, 2))).reshape(desc.oc)
    return dw.reshape(desc.wei_dims()), bias


def exact_outputs(problem: Problem, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The convolution's results before any epilogue (float64 or int64)."""
    desc = problem.desc
    if problem.kind == "fwd":
        return {"dst": forward(desc, tensors["src"], tensors["wei"])}
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
    info = np.iinfo({"s8": np.int8, "u8": np.uint8, "s32": np.int32}[kind])
    return np.clip(np.rint(values), info.min, info.max).astype(info.dtype)


def expected_outputs(problem: Problem, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the kernel should write: the exact results through the problem's epilogue."""
    exact = exact_outputs(problem, tensors)
    if problem.kind != "fwd":
        return {name: convert(value, problem.type_of(name).kind) for name, value in exact.items()}
    acc = exact["dst"]
    bias = tensors.get("bias") if problem.has_bias else None
    out_kind = problem.types.dst
    if problem.types.is_int8:
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
    value = acc
    if bias is not None:
        value = value + _channel(bias.astype(np.float64), acc.ndim)
    if problem.relu:
        value = np.maximum(value, 0.0)
    return {"dst": convert(value, out_kind)}


def _channel(bias: np.ndarray, ndim: int) -> np.ndarray:
    return bias.reshape((1, -1) + (1,) * (ndim - 2))
