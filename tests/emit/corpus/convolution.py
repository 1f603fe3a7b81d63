"""conv2d_nchw: direct fp32 convolution with every shape passed at run time."""

from __future__ import annotations

import numpy as np

from .spec import DEVICES, LSC_OPTIONS, Argument, Case, CorpusKernel, Launch, Variant

# One small problem with padding, stride 2 and a partial last work-group.
IMAGES, CHANNELS, IN_H, IN_W = 2, 3, 9, 7
OUT_CHANNELS, KERNEL_H, KERNEL_W, STRIDE, PAD = 4, 3, 3, 2, 1


def output_size(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


def make_case(rng: np.random.Generator) -> Case:
    out_h = output_size(IN_H, KERNEL_H, STRIDE, PAD)
    out_w = output_size(IN_W, KERNEL_W, STRIDE, PAD)
    pixels = out_h * out_w
    return Case(
        launch=Launch(global_size=(-(-pixels // 16) * 16, OUT_CHANNELS, IMAGES), local_size=(16, 1, 1)),
        values={
            "src": rng.standard_normal((IMAGES, CHANNELS, IN_H, IN_W)).astype(np.float32),
            "weights": rng.standard_normal((OUT_CHANNELS, CHANNELS, KERNEL_H, KERNEL_W)).astype(np.float32),
            "dst": np.zeros((IMAGES, OUT_CHANNELS, out_h, out_w), dtype=np.float32),
            "channels": np.int32(CHANNELS),
            "in_h": np.int32(IN_H),
            "in_w": np.int32(IN_W),
            "out_channels": np.int32(OUT_CHANNELS),
            "kernel_h": np.int32(KERNEL_H),
            "kernel_w": np.int32(KERNEL_W),
            "stride": np.int32(STRIDE),
            "pad": np.int32(PAD),
            "out_h": np.int32(out_h),
            "out_w": np.int32(out_w),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    src = values["src"].astype(np.float64)
    weights = values["weights"].astype(np.float64)
    stride, pad = int(values["stride"]), int(values["pad"])
    out_h, out_w = int(values["out_h"]), int(values["out_w"])
    kernel_h, kernel_w = weights.shape[2:]
    padded = np.pad(src, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dst = np.zeros((src.shape[0], weights.shape[0], out_h, out_w))
    for kh in range(kernel_h):
        for kw in range(kernel_w):
            window = padded[:, :, kh : kh + stride * out_h : stride, kw : kw + stride * out_w : stride]
            dst += np.einsum("nchw,kc->nkhw", window, weights[:, :, kh, kw])
    return {"dst": dst.astype(np.float32)}


KERNEL = CorpusKernel(
    name="convolution",
    kernel_name="conv2d_nchw",
    arguments=(
        Argument("src", "buffer", "float32", "in"),
        Argument("weights", "buffer", "float32", "in"),
        Argument("dst", "buffer", "float32", "out"),
        *(
            Argument(name, "scalar", "int32")
            for name in (
                "channels",
                "in_h",
                "in_w",
                "out_channels",
                "kernel_h",
                "kernel_w",
                "stride",
                "pad",
                "out_h",
                "out_w",
            )
        ),
    ),
    variants=tuple(Variant(d) for d in DEVICES) + (Variant("dg2", LSC_OPTIONS, "lsc"),),
    make_case=make_case,
    reference=reference,
    rtol=1e-5,
    atol=1e-5,
)
