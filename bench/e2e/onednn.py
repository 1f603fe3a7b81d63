"""The production peer of the e2e benchmark: oneDNN v3.2's hand-written OpenCL convolutions.

oneDNN's `gen9_convolution_fwd_t` ran two OpenCL kernels on Gen9/XeLP-class GPUs (and as the
fallback of its JIT generator elsewhere):

- `gen9_conv_nhwc_fwd` (gen9_conv_nhwc_fwd_data.cl) when the activations are nhwc;
- `gen9_conv_fwd` (gen9_conv_fwd_data.cl) with blocked activations, what oneDNN picks at a
  minibatch that is not a multiple of 16 when the layout is left to it: nChw16c (the first layer,
  3 input channels, reads nchw).

Both take their whole configuration as preprocessor macros, which oneDNN's C++ derives from the
problem (`gen9_convolution.cpp`: `init_conf`, `fwd_compute_block_sizes`, `init_kernel_ctx`).
`configure` repeats that derivation for f32 forward convolutions without groups or post-ops,
2-D, and `options` spells the macros as ocloc options.  The kernels' sources are read where the
project's shared folder keeps them (`find_sources`), never copied into this repository.

`arguments` lays numpy's logical tensors out as the kernel reads them (nhwc, nchw or nChw16c
activations; OIhw16i16o weights, or Ohwi16o for the first layer; channels padded with zeros to
the blocks), `read_back` reads the destination back, and `simulate` runs a compiled kernel over its
whole grid in xegen's simulator.  A problem these kernels do not cover raises `UnsupportedError`
whose message says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xegen import oracles, sim
from xegen.conv.postops import format_post_ops
from xegen.conv.problem import Problem
from xegen.emit.roofline import Tiling
from xegen.errors import Error, UnsupportedError
from xegen.hw import Platform

KERNELS = ("nhwc", "blocked")
# kernel -> (source file under src/gpu/ocl, kernel name)
SOURCES = {
    "nhwc": ("gen9_conv_nhwc_fwd_data.cl", "gen9_conv_nhwc_fwd"),
    "blocked": ("gen9_conv_fwd_data.cl", "gen9_conv_fwd"),
}
PEER_FOLDER = Path("shared", "peers", "onednn-v3.2-ocl")
ENVIRONMENT = "XEGEN_ONEDNN_OCL"
SUB_GROUP = 16


def find_sources(explicit: str | None = None) -> Path:
    """The folder holding oneDNN's OpenCL sources (it has src/gpu/ocl/): `explicit`, else
    $XEGEN_ONEDNN_OCL, else shared/peers/onednn-v3.2-ocl in the nearest directory above this
    checkout that has one (a checkout and a worktree one level deeper find the same folder)."""
    given = explicit or os.environ.get(ENVIRONMENT)
    here = Path(__file__).resolve().parent
    candidates = [Path(given)] if given else [parent / PEER_FOLDER for parent in here.parents]
    for folder in candidates:
        if all((folder / "src" / "gpu" / "ocl" / name).is_file() for name, _ in SOURCES.values()):
            return folder
    missing = (
        f"{given} has no src/gpu/ocl/{SOURCES['nhwc'][0]} and {SOURCES['blocked'][0]}"
        if given
        else f"no {PEER_FOLDER} beside a parent directory of {here}"
    )
    raise Error(f"oneDNN's OpenCL sources not found: {missing}; pass --onednn-dir or set {ENVIRONMENT}")


def _max_div(value: int, limit: int) -> int:
    """The largest divisor of `value` that is at most `limit` (1 if none is above 1)."""
    return next((d for d in range(limit, 1, -1) if value % d == 0), 1)


def _div_up(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _div_up(a, b) * b


@dataclass(frozen=True)
class Config:
    """What oneDNN's init_conf decides for one problem, kernel and platform."""

    kernel: str  # "nhwc" or "blocked"
    version: str  # oneDNN's conf.ver: "nhwc", "8ow16c" or "1stconv"
    ic: int  # channels rounded up to the kernel's blocks (the first layer's 3 input channels stay)
    oc: int
    ic_block: int
    oc_block: int
    ow_block: int
    ocb: int  # output channels one group of work-groups covers along the first grid dimension
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    src_layout: str
    wei_layout: str
    dst_layout: str

    @property
    def kernel_name(self) -> str:
        return SOURCES[self.kernel][1]

    def describe(self) -> str:
        return (
            f"{self.version}, ow_block {self.ow_block}, oc_block {self.oc_block}, ocb {self.ocb}, "
            f"gws {self.global_size}, lws {self.local_size}"
        )


def _check_supported(problem: Problem, kernel: str) -> None:
    d = problem.desc
    reasons = []
    if problem.kind != "fwd":
        reasons.append("forward only (oneDNN's gen9 backward kernels are other files)")
    kinds = sorted({str(problem.type_of(name)) for name in problem.inputs + problem.outputs})
    if kinds != ["f32"]:
        reasons.append(f"f32 only, not {'/'.join(kinds)}")
    if d.g != 1:
        reasons.append("no groups (grouped layouts gOIhw16i16o/Goihw16g are not laid out here)")
    if d.spatial_dims != 2:
        reasons.append(f"2-D only, not {d.spatial_dims}-D")
    if problem.post_ops:
        reasons.append(f"no post-ops (the macros of '{format_post_ops(problem.post_ops)}' are not derived here)")
    if kernel == "blocked" and d.mb % 16 == 0:
        reasons.append(
            f"minibatch {d.mb} is a multiple of 16: oneDNN then blocks the minibatch too "
            f"(NChw16n16c layouts), not laid out here"
        )
    if reasons:
        raise UnsupportedError(f"oneDNN {kernel}: " + "; ".join(reasons))


def configure(problem: Problem, hw: Platform, kernel: str) -> Config:
    """oneDNN v3.2's blocking for `problem` with `kernel` on `hw` (gen9_convolution.cpp,
    gen9_convolution_fwd_t::pd_t::init_conf and fwd_compute_block_sizes)."""
    _check_supported(problem, kernel)
    d = problem.desc
    first_layer = d.ic == 3  # oneDNN's is_1stconv: input channels stay unpadded, weights Ohwi16o
    ic = d.ic if first_layer else _round_up(d.ic, 16)
    oc = _round_up(d.oc, 16)
    # XeHP and XeHPG (is_xe_hp_plus) give the blocked kernel two sub-groups per work-group
    blocked_group = 32 if hw.name == "xehpg" else 16
    if kernel == "nhwc":
        widest = 8 if d.kw > 1 or (oc <= 64 and ic <= 64) else 16
        ow_block = _max_div(d.ow, widest)
        if ow_block <= 8:  # the block in 8..widest-1 leaving the longest tail, if any tail
            longest_tail = 0
            for block in range(8, widest):
                if d.ow % block > longest_tail:
                    longest_tail, ow_block = d.ow % block, block
        if ow_block <= 8 or d.ow <= 8 or oc <= 32:
            ow_block = 8
        ocb = 16 * _max_div(_div_up(oc, 16), 8)
        return Config(
            kernel,
            "nhwc",
            ic,
            oc,
            ic_block=1 if first_layer else 16,
            oc_block=16,
            ow_block=ow_block,
            ocb=ocb,
            global_size=(ocb, d.oh * _div_up(d.ow, ow_block), d.mb * _div_up(oc, ocb)),
            local_size=(16, 1, 1),
            src_layout="nhwc",
            wei_layout="Ohwi16o" if first_layer else "OIhw16i16o",
            dst_layout="nhwc",
        )
    widest = min(d.ow, 8 if first_layer else 16)
    ow_block = _max_div(d.ow, widest)
    if ow_block < widest // 2:  # the block in 8..widest wasting the least of its last block
        least_waste, best = 1.0, -1
        for block in range(8, widest + 1):
            waste = (block - d.ow % block) / d.ow
            if waste <= least_waste:
                least_waste, best = waste, block
        ow_block = best
    oc_block = 32 if first_layer and oc % 32 == 0 else 16
    ocb = 16 * _max_div(oc // 16, 8)
    # one minibatch per work-group (oneDNN's omb and mb_block are 1 when mb % 16 != 0)
    return Config(
        kernel,
        "1stconv" if first_layer else "8ow16c",
        ic,
        oc,
        ic_block=min(ic, 16),
        oc_block=oc_block,
        ow_block=ow_block,
        ocb=ocb,
        global_size=(ocb // (oc_block // 16), d.oh * _div_up(d.ow, ow_block), (oc // ocb) * d.mb),
        local_size=(blocked_group, 1, 1),
        src_layout="nchw" if first_layer else "nChw16c",
        wei_layout="Ohwi16o" if first_layer else "OIhw16i16o",
        dst_layout="nChw16c",
    )


def tiling(problem: Problem, config: Config) -> Tiling:
    """How the launch divides the GEMM (M: mb, oh, ow; N: output channels) for the cost model, as
    both kernels read their group ids: a group of dimension 0 covers LWS_0 / 16 sub-groups of
    OC_BLOCK output channels within a slice of OCB channels; dimension 1 the output rows times
    the width blocks; dimension 2 the OCB slice times the minibatch, minibatch fastest (nhwc:
    `ocb = ocb_mb / MB`; blocked: `ocb_idx = ocb_idx_omb_idx / (MB / OMB)` with OMB 1).  Dimension
    0 is dispatched fastest, so a slice's N groups go first, then all of M, then the next slice:
    `n_outer` = OC / OCB slices.  The reduction runs inside a sub-group: one K slice."""
    d, c = problem.desc, config
    grid = [-(-size // local) for size, local in zip(c.global_size, c.local_size, strict=True)]
    slices = c.oc // c.ocb
    if grid[2] != slices * d.mb:
        raise Error(f"oneDNN {c.kernel}: grid {grid} does not hold {slices} channel slices x minibatch {d.mb}")
    return Tiling(m_groups=grid[1] * d.mb, n_groups=grid[0] * slices, n_outer=slices)


def macros(problem: Problem, config: Config) -> dict[str, int | str]:
    """The macros oneDNN defines for the kernel (init_kernel_ctx, def_data_type and def_attr_info
    without post-ops), in its order.  The global size is uniform-or-not as the runtime allows:
    oneDNN's OpenCL engine takes non-uniform work-groups, so GWS and GWS_ORIG agree."""
    d = problem.desc
    c = config
    right_h = (d.oh - 1) * d.sh + (d.kh - 1) * (d.dh + 1) + 1 - d.ih - d.ph
    right_w = (d.ow - 1) * d.sw + (d.kw - 1) * (d.dw + 1) + 1 - d.iw - d.pw
    version = c.version
    values: dict[str, int | str] = {
        "IS_DW": 0,
        "G": 1,
        "MB": d.mb,
        "IC": c.ic,
        "ID": 1,
        "IH": d.ih,
        "IW": d.iw,
        "OC": c.oc,
        "OD": 1,
        "OH": d.oh,
        "OW": d.ow,
        "KD": 1,
        "KH": d.kh,
        "KW": d.kw,
        "SD": 1,
        "SH": d.sh,
        "SW": d.sw,
        "PD": 0,
        "PH": d.ph,
        "PW": d.pw,
        "PD_R": 0,
        "PH_R": right_h,
        "PW_R": right_w,
        "DD": 0,
        "DH": d.dh,
        "DW": d.dw,
        "OW_PADDED": _round_up(d.ow, 4),
        "OC_PADDED": c.oc,
        "OMB": 1,
        "OCB": c.ocb,
        "MB_BLOCK": 1,
        "OH_BLOCK": 1,
        "OW_BLOCK": c.ow_block,
        "OW_LAST": d.ow // c.ow_block * c.ow_block,
        "OWB": _div_up(d.ow, c.ow_block),
        "OHB": d.oh,
        "WITH_BIAS": int(problem.has_bias),
        "SUB_GROUP_SIZE": SUB_GROUP,
        "OC_BLOCK": c.oc_block,
        "IC_BLOCK": c.ic_block,
        "G_WO_PADDING": 1,
        "IC_WO_PADDING": d.ic,
        "OC_WO_PADDING": d.oc,
        "OC_GROUP": c.local_size[0] // 8,
        "MB_GROUP": 1,
        "SP_GROUP": c.local_size[1],
        "SRC_SP_GROUP": c.local_size[1] if d.kw == 1 else d.sw * (c.local_size[1] - 1) + d.kw,
        "DT_F32": 1,
        "DST_DATA_T": "float",
        "DST_DT_F32": 1,
        "VER_1STCONV": int(version == "1stconv"),
        "VER_8OW16C": int(version == "8ow16c"),
        "VER_16MB16C": 0,
        "VER_32MB16C": 0,
        "SRC_NCHW": int(c.src_layout == "nchw"),
        "SRC_NHWC": int(c.src_layout == "nhwc"),
        "SRC_16N16C": 0,
        "SRC_W16C": int(c.src_layout == "nChw16c"),
        "WEI_I16O": int(c.wei_layout == "Ohwi16o"),
        "WEI_16I16O": int(c.wei_layout == "OIhw16i16o"),
        "WEI_16I16O_FLIPPED": 0,
        "DST_W16C": int(c.dst_layout == "nChw16c"),
        "DST_16N16C": 0,
        "DST_32N16C": 0,
        "DST_32N32C": 0,
        "DST_W32C": 0,
        "DST_NCHW": 0,
    }
    for axis in range(3):
        values[f"GWS_{axis}"] = c.global_size[axis]
    for axis in range(3):
        values[f"GWS_ORIG_{axis}"] = c.global_size[axis]
    for axis in range(3):
        values[f"LWS_{axis}"] = c.local_size[axis]
    values.update(
        {  # def_attr_info with no post-ops
            "WITH_POST_OP": 0,
            "WITH_ELTWISE": 0,
            "ELTWISE_IDX": -1,
            "ELTWISE_ALG": 0,
            "WITH_SUM": 0,
            "SUM_IDX": -1,
            "SUM_SCALE": 1,
            "SUM_SCALE1": 1,
            "WITH_SRC0_SCALE": 0,
            "WITH_SRC1_SCALE": 0,
            "WITH_SCALES": 0,
            "WITH_RUNTIME_SCALES": 0,
            "SCALES_PER_OC": 0,
            "SCALES_COMMON": 0,
            "WITH_SRC_SCALES": 0,
            "WITH_WEI_SCALES": 0,
            "WITH_DST_SCALES": 0,
            "WEI_SCALES_MASK": 0,
            "WITH_SRC_ZPOINTS": 0,
            "WITH_WEI_ZPOINTS": 0,
            "WITH_DST_ZPOINTS": 0,
            "WITH_SRC_ZPOINTS_PER_IC": 0,
            "WITH_DST_ZPOINTS_PER_OC": 0,
            "PO_BINARY": 1,
            "PO_ELTWISE": 2,
            "PO_SUM": 3,
            "POST_OP_CHAIN_LENGTH": 0,
            "POST_OP_ARGS": "",
        }
    )
    return values


def options(problem: Problem, config: Config, sources: Path) -> str:
    """ocloc's -options for the kernel: oneDNN's macros and build options, the include folder,
    and -Dcl_intel_global_float_atomics (without it this ocloc's SPIR-V translator crashes on a
    float compare-and-swap helper of ocl_math_utils.h that neither kernel calls; the macro picks
    the header's other, equally unused, helper)."""
    defines = [f"-D{name}={value}" for name, value in macros(problem, config).items()]
    return " ".join(
        defines
        + [
            "-cl-std=CL2.0",
            "-cl-fp32-correctly-rounded-divide-sqrt",
            "-Dcl_intel_global_float_atomics",
            f"-I{sources / 'src'}",
        ]
    )


def source_file(config: Config, sources: Path) -> Path:
    return sources / "src" / "gpu" / "ocl" / SOURCES[config.kernel][0]


def ocloc_argv(problem: Problem, hw: Platform, config: Config, sources: Path, output: str, out_dir: str) -> list[str]:
    """The ocloc command that compiles the kernel into `out_dir`/`output` (a zebin)."""
    return [
        oracles.find_tool("ocloc"),
        "compile",
        "-file",
        str(source_file(config, sources)),
        "-device",
        hw.ocloc_device,
        "--format",
        "zebin",
        "-options",
        options(problem, config, sources),
        "-output",
        output,
        "-output_no_suffix",
        "-out_dir",
        out_dir,
    ]


# -- layouts ------------------------------------------------------------------------------------


def _pad(values: np.ndarray, axis: int, size: int) -> np.ndarray:
    widths = [(0, 0)] * values.ndim
    widths[axis] = (0, size - values.shape[axis])
    return np.pad(values, widths)


def lay_out(values: np.ndarray, layout: str, channels: tuple[int, ...] = ()) -> np.ndarray:
    """A logical tensor (activations n c h w, weights o i h w) in `layout`, flat; `channels` are the
    padded sizes of its channel axes (c; or o, i), the padding zeros."""
    if layout in ("nchw", "x"):
        return np.ascontiguousarray(values).reshape(-1)
    if layout == "nhwc":
        return np.ascontiguousarray(values.transpose(0, 2, 3, 1)).reshape(-1)
    if layout == "nChw16c":
        n, _, h, w = values.shape
        padded = _pad(values, 1, channels[0])
        return np.ascontiguousarray(padded.reshape(n, -1, 16, h, w).transpose(0, 1, 3, 4, 2)).reshape(-1)
    if layout == "OIhw16i16o":
        _, _, kh, kw = values.shape
        padded = _pad(_pad(values, 0, channels[0]), 1, channels[1])
        blocks = padded.reshape(channels[0] // 16, 16, channels[1] // 16, 16, kh, kw)
        return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1)).reshape(-1)
    if layout == "Ohwi16o":
        _, i, kh, kw = values.shape
        blocks = _pad(values, 0, channels[0]).reshape(channels[0] // 16, 16, i, kh, kw)
        return np.ascontiguousarray(blocks.transpose(0, 3, 4, 2, 1)).reshape(-1)
    raise ValueError(f"unknown layout {layout}")


def read_back(buffer: np.ndarray, layout: str, shape: tuple[int, ...], channels: int) -> tuple[np.ndarray, np.ndarray]:
    """(the logical activations n c h w of a flat `buffer` in `layout`, the values of its channel
    padding)."""
    n, c, h, w = shape
    if layout == "nhwc":
        return buffer.reshape(n, h, w, c).transpose(0, 3, 1, 2), buffer[:0]
    if layout == "nChw16c":
        full = buffer.reshape(n, channels // 16, h, w, 16).transpose(0, 1, 4, 2, 3).reshape(n, channels, h, w)
        return full[:, :c], full[:, c:]
    raise ValueError(f"unknown output layout {layout}")


def arguments(problem: Problem, config: Config, tensors: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The kernel's buffers in parameter order (src, weights, bias, dst): the logical input
    `tensors` laid out, the destination filled with NaN so an element the kernel does not write
    cannot pass."""
    d, c = problem.desc, config
    src = lay_out(tensors["src"].astype(np.float32), c.src_layout, (c.ic,))
    wei = lay_out(tensors["wei"].astype(np.float32), c.wei_layout, (c.oc, c.ic))
    # without a bias the kernel never reads its bias argument
    bias = tensors["bias"].astype(np.float32) if problem.has_bias else np.zeros(d.oc, np.float32)
    dst_elements = d.mb * (c.oc if c.dst_layout == "nChw16c" else d.oc) * d.oh * d.ow
    return [src, wei, bias, np.full(dst_elements, np.nan, np.float32)]


def simulate(problem: Problem, config: Config, zebin: bytes, hw: Platform, tensors: dict[str, np.ndarray]):
    """Run the compiled kernel over its whole grid on the logical input `tensors`; returns
    ({"dst": the logical output}, the values in dst's channel padding, the simulator's RunResult).
    No SWSB hazard checks: IGC's scoreboarding is IGC's business."""
    buffers = arguments(problem, config, tensors)
    result = sim.run(
        zebin, config.kernel_name, buffers, config.global_size, config.local_size, hw=hw, check_hazards=False
    )
    dst, padding = read_back(buffers[3], config.dst_layout, problem.dims_of("dst"), config.oc)
    return {"dst": dst}, padding, result
