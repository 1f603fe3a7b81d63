"""The peer of the end-to-end benchmark: the same convolution as a direct OpenCL C kernel, compiled
by IGC (ocloc), one work-item per output element, shapes as #define constants.

One kernel per direction, each accumulating in f32 (int for int8) over the reduction of its
output element:

- forward: dst[mb][oh][ow][oc], summing over kh, kw, ic;
- backward-data: diff_src[mb][ih][iw][ic], summing over kh, kw, oc (the taps whose output
  position lies on the stride);
- backward-weights: diff_wei[kh][kw][ic][oc], summing over mb, oh, ow; the work-items of
  ic = kh = kw = 0 also sum diff_bias[oc].

Activations are channels-last (n h w c) as xegen's default layouts; the channel the work-items
of a sub-group step through is innermost in every tensor they read or write (weights
kh kw ic oc forward and backward-weights, kh kw oc ic backward-data), so neighbouring work-items
touch neighbouring elements.

bf16 is stored as ushort and converted in the kernel (`bf16_to_float`, `float_to_bf16`): the
ocloc at hand (22.43, IGC 1.0.12504) declares neither the cl_intel_bfloat16_conversions macro
nor its builtins.

`simulate(problem, zebin, hw, tensors)` runs the compiled peer over its whole grid in xegen's
simulator on numpy's logical tensors and returns the output tensors, so the peer is checked
against numpy like xegen's own kernels.
"""

from __future__ import annotations

import numpy as np

from xegen import sim
from xegen.conv.problem import Problem
from xegen.emit.roofline import Tiling
from xegen.errors import UnsupportedError
from xegen.hw import Platform

SUB_GROUP = 16

# OpenCL element type and numpy storage type of each data type
_C_TYPES = {"f32": "float", "f16": "half", "bf16": "ushort", "s8": "char", "u8": "uchar", "s32": "int"}
_NUMPY_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "s8": np.int8, "u8": np.uint8, "s32": np.int32}
_SATURATING = {"s8": "convert_char_sat_rte", "u8": "convert_uchar_sat_rte", "s32": "convert_int_sat_rte"}

# Memory order of each buffer as axes of the logical tensor: activations (n c h w) channels-last,
# weights (o i h w) with the work-items' channel innermost.
_NHWC = (0, 2, 3, 1)
_HWIO = (2, 3, 1, 0)
_HWOI = (2, 3, 0, 1)
_BUFFERS = {
    "fwd": (("src", _NHWC), ("wei", _HWIO), ("dst", _NHWC), ("bias", (0,))),
    "bwd_d": (("dst", _NHWC), ("wei", _HWOI), ("src", _NHWC)),
    "bwd_w": (("src", _NHWC), ("dst", _NHWC), ("wei", _HWIO), ("bias", (0,))),
}
# The kernel's parameter name of each tensor
_PARAMETERS = {
    "fwd": {"src": "src", "wei": "wei", "dst": "dst", "bias": "bias"},
    "bwd_d": {"dst": "diff_dst", "wei": "wei", "src": "diff_src"},
    "bwd_w": {"src": "src", "dst": "diff_dst", "wei": "diff_wei", "bias": "diff_bias"},
}

BF16_HELPERS = """\
// bf16 lives in ushort: widening is exact; narrowing rounds to nearest even and keeps NaN a NaN.
float bf16_to_float(ushort x) { return as_float((uint)x << 16); }
ushort float_to_bf16(float x) {
    const uint bits = as_uint(x);
    if (isnan(x)) return (ushort)((bits >> 16) | 0x40);
    return (ushort)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}
"""


def supports(problem: Problem) -> bool:
    """2-D, no groups, no post-op but a plain relu (the peer spells only that one)."""
    return (
        problem.desc.g == 1
        and problem.desc.spatial_dims == 2
        and (not problem.post_ops or problem.relu)
        and all(str(problem.type_of(name)) in _C_TYPES for name in problem.inputs + problem.outputs)
    )


def kernel_name(problem: Problem) -> str:
    return f"conv_{problem.kind}"


def _buffers(problem: Problem) -> list[tuple[str, tuple[int, ...]]]:
    return [(name, axes) for name, axes in _BUFFERS[problem.kind] if name != "bias" or problem.has_bias]


def _load(problem: Problem, tensor: str, element: str) -> str:
    """`element` of `tensor` widened exactly: int8 to int, floating-point types to float."""
    kind = str(problem.type_of(tensor))
    if kind == "bf16":
        return f"bf16_to_float({element})"
    return f"({'int' if kind in ('s8', 'u8') else 'float'}){element}"


def _store(problem: Problem, tensor: str, value: str, value_is_float: bool = True) -> str:
    """`value` narrowed to `tensor`'s type as the reference does: floats round to nearest even,
    integers from floats also saturate."""
    kind = str(problem.type_of(tensor))
    if kind == "bf16":
        return f"float_to_bf16({value})"
    if kind == "f16":
        return f"(half)({value})"
    if kind in _SATURATING and value_is_float:
        return f"{_SATURATING[kind]}({value})"
    return value


def _signature(problem: Problem) -> str:
    outputs = set(problem.outputs)
    parameters = [
        f"__global {'' if name in outputs else 'const '}{_C_TYPES[str(problem.type_of(name))]}* "
        f"{_PARAMETERS[problem.kind][name]}"
        for name, _ in _buffers(problem)
    ]
    return (
        f"__attribute__((intel_reqd_sub_group_size({SUB_GROUP})))\n"
        f"__kernel void {kernel_name(problem)}({', '.join(parameters)})"
    )


def _forward(problem: Problem) -> str:
    accumulator = "int" if problem.types.is_int8 else "float"
    # as in the reference: int8 results go through f32 unless they stay s32 without a bias
    integer_result = problem.types.is_int8 and not problem.has_bias and problem.types.dst == "s32"
    out_type = "int" if integer_result else "float"
    bias = f" + {_load(problem, 'bias', 'bias[oc]')}" if problem.has_bias else ""
    relu = "    out = out > 0 ? out : 0;\n" if problem.relu else ""
    return f"""{{
    const int oc = get_global_id(0);
    const int ow = get_global_id(1);
    const int oh = get_global_id(2) % OH;
    const int mb = get_global_id(2) / OH;
    if (oc >= OC) return;
    {accumulator} acc = 0;
    for (int kh = 0; kh < KH; ++kh) {{
        const int ih = oh * SH - PH + kh * (DH + 1);
        if (ih < 0 || ih >= IH) continue;
        for (int kw = 0; kw < KW; ++kw) {{
            const int iw = ow * SW - PW + kw * (DW + 1);
            if (iw < 0 || iw >= IW) continue;
            const __global {_C_TYPES[problem.types.src]}* s = src + ((mb * IH + ih) * IW + iw) * IC;
            const __global {_C_TYPES[problem.types.wei]}* w = wei + (kh * KW + kw) * IC * OC + oc;
            for (int ic = 0; ic < IC; ++ic)
                acc += {_load(problem, 'src', 's[ic]')} * {_load(problem, 'wei', 'w[ic * OC]')};
        }}
    }}
    {out_type} out = ({out_type})acc{bias};
{relu}    dst[((mb * OH + oh) * OW + ow) * OC + oc] = {_store(problem, 'dst', 'out', not integer_result)};
}}
"""


def _backward_data(problem: Problem) -> str:
    return f"""{{
    const int ic = get_global_id(0);
    const int iw = get_global_id(1);
    const int ih = get_global_id(2) % IH;
    const int mb = get_global_id(2) / IH;
    if (ic >= IC) return;
    float acc = 0;
    for (int kh = 0; kh < KH; ++kh) {{
        const int th = ih + PH - kh * (DH + 1);  // oh * SH for a tap that reaches ih
        if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
        const int oh = th / SH;
        for (int kw = 0; kw < KW; ++kw) {{
            const int tw = iw + PW - kw * (DW + 1);
            if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
            const int ow = tw / SW;
            const __global {_C_TYPES[problem.types.dst]}* d = diff_dst + ((mb * OH + oh) * OW + ow) * OC;
            const __global {_C_TYPES[problem.types.wei]}* w = wei + (kh * KW + kw) * OC * IC + ic;
            for (int oc = 0; oc < OC; ++oc)
                acc += {_load(problem, 'dst', 'd[oc]')} * {_load(problem, 'wei', 'w[oc * IC]')};
        }}
    }}
    diff_src[((mb * IH + ih) * IW + iw) * IC + ic] = {_store(problem, 'src', 'acc')};
}}
"""


def _backward_weights(problem: Problem) -> str:
    bias = (
        f"""
    if (ic == 0 && kh == 0 && kw == 0) {{  // the same for every work-item of a sub-group
        float sum = 0;
        for (int p = 0; p < MB * OH * OW; ++p)
            sum += {_load(problem, 'dst', 'diff_dst[p * OC + oc]')};
        diff_bias[oc] = {_store(problem, 'bias', 'sum')};
    }}"""
        if problem.has_bias
        else ""
    )
    return f"""{{
    const int oc = get_global_id(0);
    const int ic = get_global_id(1);
    const int kh = get_global_id(2) / KW;
    const int kw = get_global_id(2) % KW;
    if (oc >= OC) return;
    float acc = 0;
    for (int mb = 0; mb < MB; ++mb) {{
        for (int oh = 0; oh < OH; ++oh) {{
            const int ih = oh * SH - PH + kh * (DH + 1);
            if (ih < 0 || ih >= IH) continue;
            const __global {_C_TYPES[problem.types.src]}* s = src + (mb * IH + ih) * IW * IC + ic;
            const __global {_C_TYPES[problem.types.dst]}* d = diff_dst + (mb * OH + oh) * OW * OC + oc;
            for (int ow = 0; ow < OW; ++ow) {{
                const int iw = ow * SW - PW + kw * (DW + 1);
                if (iw < 0 || iw >= IW) continue;
                acc += {_load(problem, 'src', 's[iw * IC]')} * {_load(problem, 'dst', 'd[ow * OC]')};
            }}
        }}
    }}
    diff_wei[((kh * KW + kw) * IC + ic) * OC + oc] = {_store(problem, 'wei', 'acc')};{bias}
}}
"""


_BODIES = {"fwd": _forward, "bwd_d": _backward_data, "bwd_w": _backward_weights}


def opencl_source(problem: Problem) -> str:
    """The direct convolution of `problem` (2-D, no groups) in OpenCL C."""
    if not supports(problem):
        raise UnsupportedError(
            f"the OpenCL peer covers 2-D convolutions without groups in f32, f16, bf16 and "
            f"int8, with no post-op but relu, not {problem}"
        )
    d = problem.desc
    kinds = {str(problem.type_of(name)) for name, _ in _buffers(problem)}
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if "f16" in kinds else ""
    helpers = BF16_HELPERS if "bf16" in kinds else ""
    fields = ("mb", "ic", "ih", "iw", "oc", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
    defines = "".join(f"#define {name.upper()} {getattr(d, name)}\n" for name in fields)
    return f"{pragma}{defines}\n{helpers}\n{_signature(problem)} {_BODIES[problem.kind](problem)}"


def launch(problem: Problem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(global size, local size): one work-item per output element, the innermost channel
    rounded up to whole sub-groups."""
    d = problem.desc

    def channels(count: int) -> int:
        return -(-count // SUB_GROUP) * SUB_GROUP

    global_size = {
        "fwd": (channels(d.oc), d.ow, d.mb * d.oh),
        "bwd_d": (channels(d.ic), d.iw, d.mb * d.ih),
        "bwd_w": (channels(d.oc), d.ic, d.kh * d.kw),
    }[problem.kind]
    return global_size, (SUB_GROUP, 1, 1)


def tiling(problem: Problem) -> Tiling:
    """How the launch divides the GEMM (`xegen.conv.gemm`) for the cost model: each group is one
    sub-group of 16 work-items along dimension 0, the GEMM's N (oc; ic backward-data); dimensions 1
    and 2 walk the M points one group each (mb, oh, ow; mb, ih, iw; kh, kw, ic backward-weights),
    the innermost component along dimension 1.  Dimension 0 is dispatched fastest, then M in its
    own order: N fastest, as `Tiling` assumes.  The reduction runs inside a work-item: one K slice."""
    global_size, local_size = launch(problem)
    return Tiling(m_groups=global_size[1] * global_size[2], n_groups=global_size[0] // local_size[0])


def _to_storage(values: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":  # values are already bf16 numbers held in float32: keep their upper halves
        return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.asarray(values, _NUMPY_TYPES[kind])


def _from_storage(values: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values


def arguments(problem: Problem, tensors: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The kernel's buffers, in parameter order: the logical input `tensors` laid out and
    converted to their storage types, zeros for the outputs (flat, as device memory)."""
    result = []
    for name, axes in _buffers(problem):
        kind = str(problem.type_of(name))
        if name in problem.outputs:
            shape = [problem.dims_of(name)[axis] for axis in axes]
            result.append(np.zeros(shape, _NUMPY_TYPES[kind]).reshape(-1))
        else:
            result.append(np.ascontiguousarray(_to_storage(tensors[name], kind).transpose(axes)).reshape(-1))
    return result


def outputs(problem: Problem, buffers: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The output tensors in their logical shapes and numpy types, from the kernel's `buffers`."""
    result = {}
    for (name, axes), buffer in zip(_buffers(problem), buffers, strict=True):
        if name in problem.outputs:
            shape = [problem.dims_of(name)[axis] for axis in axes]
            laid_out = _from_storage(buffer, str(problem.type_of(name))).reshape(shape)
            result[name] = laid_out.transpose(np.argsort(axes))
    return result


def simulate(problem: Problem, zebin: bytes, hw: Platform, tensors: dict[str, np.ndarray]):
    """Run the peer's `zebin` over its whole grid on the logical input `tensors`; returns (the
    output tensors, the simulator's RunResult).  No SWSB hazard checks: IGC's scoreboarding is
    IGC's business (the checker reports some flag-register dependencies across pipes in IGC's
    bf16 conversion code that IGC leaves without a sync)."""
    buffers = arguments(problem, tensors)
    global_size, local_size = launch(problem)
    result = sim.run(zebin, kernel_name(problem), buffers, global_size, local_size, hw=hw, check_hazards=False)
    return outputs(problem, buffers), result
