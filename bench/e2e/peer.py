"""The peer of the end-to-end benchmark: the same convolution as a direct OpenCL C kernel, compiled
by IGC (ocloc), one work-item per output element, shapes as #define constants.

Layouts match xegen's defaults (`any`): src and dst channels-last (n h w c), weights
(kh kw ic oc) with output channels innermost, so consecutive work-items (output channels) read
consecutive weights and write consecutive outputs.
"""

from __future__ import annotations

from xegen.conv.problem import Problem
from xegen.errors import UnsupportedError

# (OpenCL element type, accumulator type, extension pragma) per source data type
_TYPES = {
    "f32": ("float", "float", ""),
    "f16": ("half", "float", "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"),
    "s8": ("char", "int", ""),
    "u8": ("uchar", "int", ""),
}
SUB_GROUP = 16
KERNEL_NAME = "conv_fwd"


def supports(problem: Problem) -> bool:
    return (problem.is_forward and problem.desc.g == 1 and problem.desc.spatial_dims == 2
            and str(problem.type_of("src")) in _TYPES)


def opencl_source(problem: Problem) -> str:
    """A direct forward convolution for `problem` (2-D, no groups; f32, f16 or int8 sources)."""
    if not supports(problem):
        raise UnsupportedError(f"the OpenCL peer covers forward 2-D f32/f16/int8 convolutions without groups, "
                               f"not {problem.direction} {problem.types} {problem.desc}")
    d = problem.desc
    src_type, acc_type, pragma = _TYPES[str(problem.type_of("src"))]
    wei_type = _TYPES[str(problem.type_of("wei"))][0]
    dst_type = {"f32": "float", "f16": "half", "s32": "int", "s8": "char", "u8": "uchar"}[str(problem.type_of("dst"))]
    bias_param = f", __global const {dst_type if dst_type != 'char' else 'float'}* bias" if problem.has_bias else ""
    bias_init = "(float)bias[oc]" if problem.has_bias else "0"
    convert = {"float": "", "half": "(half)", "int": "", "char": "convert_char_sat_rte", "uchar": "convert_uchar_sat_rte"}[dst_type]
    result = "acc" if acc_type == "float" else "(float)acc"
    if dst_type == "int":
        result = "acc"
    relu = f"out = out > 0 ? out : 0;\n    " if problem.relu else ""
    defines = "".join(f"#define {name.upper()} {getattr(d, name)}\n"
                      for name in ("mb", "ic", "ih", "iw", "oc", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw"))
    return f"""{pragma}{defines}
__attribute__((intel_reqd_sub_group_size({SUB_GROUP})))
__kernel void {KERNEL_NAME}(__global const {src_type}* src, __global const {wei_type}* wei,
                       __global {dst_type}* dst{bias_param}) {{
    const int oc = get_global_id(0);
    const int ow = get_global_id(1);
    const int oh = get_global_id(2) % OH;
    const int mb = get_global_id(2) / OH;
    if (oc >= OC) return;
    {acc_type} acc = 0;
    for (int kh = 0; kh < KH; ++kh) {{
        const int ih = oh * SH - PH + kh * (DH + 1);
        if (ih < 0 || ih >= IH) continue;
        for (int kw = 0; kw < KW; ++kw) {{
            const int iw = ow * SW - PW + kw * (DW + 1);
            if (iw < 0 || iw >= IW) continue;
            const __global {src_type}* s = src + ((mb * IH + ih) * IW + iw) * IC;
            const __global {wei_type}* w = wei + (kh * KW + kw) * IC * OC + oc;
            for (int ic = 0; ic < IC; ++ic)
                acc += ({acc_type})s[ic] * ({acc_type})w[ic * OC];
        }}
    }}
    float out = {result} + {bias_init};
    {relu}dst[((mb * OH + oh) * OW + ow) * OC + oc] = {convert}(out);
}}
"""


def launch(problem: Problem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(global size, local size) covering every output element."""
    d = problem.desc
    channels = -(-d.oc // SUB_GROUP) * SUB_GROUP
    return (channels, d.ow, d.mb * d.oh), (SUB_GROUP, 1, 1)
