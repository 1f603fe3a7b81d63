"""A convolution problem: a descriptor plus direction, data types, post-ops and memory layouts.

Directions use benchdnn's `--dir` names:

| name   | computes                                  | bias            |
|--------|-------------------------------------------|-----------------|
| FWD_D  | dst = conv(src, wei)                      | no              |
| FWD_B  | dst = conv(src, wei) + bias               | added           |
| FWD_I  | forward inference: as FWD_D               | no              |
| BWD_D  | diff_src from diff_dst and wei            | no              |
| BWD_W  | diff_wei from src and diff_dst            | no              |
| BWD_WB | diff_wei and diff_bias                    | reduced         |

Buffers keep their forward names whatever the direction: `src` holds diff_src for BWD_D, `dst`
holds diff_dst for the backward directions, `wei` holds diff_wei for BWD_W/BWD_WB and `bias` holds
diff_bias for BWD_WB.

Data types (`--dt`): one type for all three tensors (`f32`, `f16`, `bf16`) or `SRC:WEI:DST`.
Floating point: the two tensors a direction multiplies have one type t; the one it writes is t or
f32, and accumulation is f32.  int8 (forward only): src s8 or u8, wei s8, dst f32, s32,
s8 or u8, accumulation s32.  Bias is f32, except for f16/bf16 forward problems (the dst type) and
BWD_WB (the wei type).

Post-ops (`--attr-post-ops`, forward only, `xegen.conv.postops`) may read tensors of their own:
a sum reads `dst` before the kernel overwrites it, the i-th post-op of the chain reads `binary<i>`
(a binary's second tensor) or `prelu<i>` (prelu's weights), each spanning the destination's
dimensions its broadcast policy names (1 elsewhere).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import Error, UnsupportedError
from ..ir.types import F32, S32, Type
from .descriptor import Descriptor, parse_descriptor
from .layout import Layout, make_layout
from .postops import Binary, Eltwise, PostOp, Prelu, Sum, broadcast_dims, format_post_ops, parse_post_ops
from .quantization import Quantization, parse_quantization

DIRECTIONS = ("FWD_D", "FWD_B", "FWD_I", "BWD_D", "BWD_W", "BWD_WB")
FLOAT_KINDS = ("f32", "f16", "bf16")
FEW_CHANNELS = 8  # backward data with fewer input channels per group is a transposed GEMM
INT8_KINDS = ("s8", "u8")


@dataclass(frozen=True)
class DataTypes:
    src: str
    wei: str
    dst: str

    def __str__(self) -> str:
        if self.src == self.wei == self.dst:
            return self.src
        return f"{self.src}:{self.wei}:{self.dst}"

    @property
    def is_int8(self) -> bool:
        return self.src in INT8_KINDS


def parse_data_types(text: str) -> DataTypes:
    """`f16` (all three) or `src:wei:dst`, e.g. `u8:s8:f32`, `bf16:f32:bf16`."""
    parts = [p.strip().lower() for p in text.split(":")]
    if len(parts) == 1:
        parts = parts * 3
    if len(parts) != 3:
        raise Error(f"--dt '{text}' is neither one type nor SRC:WEI:DST")
    known = FLOAT_KINDS + INT8_KINDS + ("s32",)
    for part in parts:
        if part not in known:
            raise Error(f"--dt '{text}': unknown data type '{part}' (known: {', '.join(known)})")
    return DataTypes(*parts)


def parse_direction(text: str) -> str:
    name = text.strip().upper()
    if name not in DIRECTIONS:
        raise Error(f"unknown direction '{text}': expected one of {', '.join(DIRECTIONS)}")
    return name


@dataclass(frozen=True)
class Problem:
    desc: Descriptor
    direction: str = "FWD_B"
    types: DataTypes = field(default_factory=lambda: DataTypes("f32", "f32", "f32"))
    post_ops: tuple[PostOp, ...] = ()
    quantization: Quantization = field(default_factory=Quantization)
    stag: str = "any"
    wtag: str = "any"
    dtag: str = "any"

    def __post_init__(self):
        _check_types(self)
        if self.post_ops:
            _check_post_ops(self)
        if self.quantization and not self.types.is_int8:
            raise UnsupportedError(
                f"scales and zero points ({self.quantization}) apply to int8 problems only, not {self.types}"
            )
        _check_src_zero_point(self)
        # Resolving the layouts checks the tags against the tensor shapes.
        self.src_layout(), self.wei_layout(), self.dst_layout()

    # -- direction ----------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """ "fwd", "bwd_d" or "bwd_w"."""
        return "fwd" if self.direction.startswith("FWD") else self.direction.lower()[:5]

    @property
    def is_forward(self) -> bool:
        return self.kind == "fwd"

    @property
    def has_bias(self) -> bool:
        return self.direction in ("FWD_B", "BWD_WB")

    @property
    def relu(self) -> bool:
        """The chain is one plain ReLU (which integer kernels apply without leaving s32)."""
        return self.post_ops == (Eltwise("relu"),)

    def post_op_tensor(self, index: int) -> str | None:
        """The buffer the index-th post-op reads besides the accumulators (None: none)."""
        op = self.post_ops[index]
        if isinstance(op, Sum):
            return "dst"
        if isinstance(op, Binary):
            return f"binary{index}"
        if isinstance(op, Prelu):
            return f"prelu{index}"
        return None

    @property
    def post_op_inputs(self) -> tuple[str, ...]:
        names = (self.post_op_tensor(i) for i in range(len(self.post_ops)))
        return tuple(dict.fromkeys(n for n in names if n is not None))

    def _post_op_of(self, tensor: str) -> Binary | Prelu:
        op = self.post_ops[int(tensor.removeprefix("binary").removeprefix("prelu"))]
        assert isinstance(op, (Binary, Prelu)), tensor  # post_op_tensor names only their tensors
        return op

    @property
    def reduction_size(self) -> int:
        """How many products each output element sums (the K of the GEMM the kernel computes):
        kernel taps x input channels per group forward, kernel taps x output channels per group
        backward-data, minibatch x output positions backward-weights.  An upper bound for
        strided backward data, whose phases of the stride sum only the taps that reach them."""
        desc = self.desc
        if self.kind == "bwd_w":
            return desc.mb * math.prod(desc.field("o", d) for d in desc.used)
        taps = math.prod(desc.field("k", d) for d in desc.used)
        return taps * (desc.icg if self.kind == "fwd" else desc.ocg)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Buffers the kernel reads."""
        return {
            "fwd": ("src", "wei")
            + (("bias",) if self.has_bias else ())
            + self.post_op_inputs
            + self.quantization.tensors,
            "bwd_d": ("dst", "wei"),
            "bwd_w": ("src", "dst"),
        }[self.kind]

    @property
    def outputs(self) -> tuple[str, ...]:
        """Buffers the kernel writes."""
        return {"fwd": ("dst",), "bwd_d": ("src",), "bwd_w": ("wei",) + (("bias",) if self.has_bias else ())}[self.kind]

    # -- types --------------------------------------------------------------------------------
    def type_of(self, tensor: str) -> Type:
        if tensor == "bias":
            return self.bias_type
        if tensor.startswith(("binary", "prelu")):
            op = self._post_op_of(tensor)
            return Type(op.dt) if isinstance(op, Binary) else F32
        if tensor == "wei_scales":
            return F32
        if tensor == "dst_zero_points":
            return S32
        return Type(getattr(self.types, tensor))

    @property
    def acc_type(self) -> Type:
        return S32 if self.types.is_int8 else F32

    @property
    def bias_type(self) -> Type:
        if self.kind == "bwd_w":
            return Type(self.types.wei)
        if self.types.dst in ("f16", "bf16"):
            return Type(self.types.dst)
        return F32

    # -- shapes and layouts -------------------------------------------------------------------
    def dims_of(self, tensor: str) -> tuple[int, ...]:
        if tensor in ("wei_scales", "dst_zero_points"):
            return (self.desc.oc,)
        if tensor.startswith(("binary", "prelu")):
            return broadcast_dims(self._post_op_of(tensor).mask(len(self.desc.dst_dims())), self.desc.dst_dims())
        return {
            "src": self.desc.src_dims,
            "wei": self.desc.wei_dims,
            "dst": self.desc.dst_dims,
            "bias": lambda: (self.desc.oc,),
        }[tensor]()

    def src_layout(self) -> Layout:
        return make_layout(self.stag, "src", self.desc.src_dims(), grouped=False)

    def wei_layout(self) -> Layout:
        return make_layout(
            self.wtag, "wei", self.desc.wei_dims(), grouped=self.desc.g > 1, weights_inner=self._weights_inner()
        )

    def _weights_inner(self) -> str:
        """The weights' channels (or groups) `any` keeps innermost: the ones the kernel's lanes run along.
        Backward data's GEMM has the input channels along N: with f32 (mad, lanes along N) they
        go innermost, as in oneDNN's backward-data weights (OIhw16o16i); dpas types keep the
        output channels (that GEMM's K, which dpas's B reads in pairs) innermost, and so do
        layers whose GEMM is transposed (few input channels: the channels go along M).  On
        XeHPG, f32: res2a_branch2b's BWD_D 72,763 -> 38,736 modeled cycles; bf16 input channels
        innermost were 1.07x slower over resnet_50 (geomean)."""
        few = self.desc.icg < FEW_CHANNELS
        if self.desc.g > 1 and self.desc.icg == 1 and self.desc.ocg == 1:
            return "g"  # depthwise: a lane per group, so a tap's lanes are one block (oneDNN: Goihw16g)
        return "i" if self.kind == "bwd_d" and self.types.wei == "f32" and not few else "o"

    def dst_layout(self) -> Layout:
        return make_layout(self.dtag, "dst", self.desc.dst_dims(), grouped=False)

    def layout_of(self, tensor: str) -> Layout:
        if tensor in ("bias", "wei_scales", "dst_zero_points"):
            return make_layout("a", tensor, (self.desc.oc,), grouped=False)
        if tensor.startswith(("binary", "prelu")):
            op = self._post_op_of(tensor)
            return make_layout(op.tag if isinstance(op, Binary) else "any", "dst", self.dims_of(tensor), grouped=False)
        return {"src": self.src_layout, "wei": self.wei_layout, "dst": self.dst_layout}[tensor]()

    def with_desc(self, desc: Descriptor) -> Problem:
        return replace(self, desc=desc)

    def __str__(self) -> str:
        tags = " ".join(f"--{k}={getattr(self, k)}" for k in ("stag", "wtag", "dtag") if getattr(self, k) != "any")
        post = f" --attr-post-ops={format_post_ops(self.post_ops)}" if self.post_ops else ""
        post += f" {self.quantization}" if self.quantization else ""
        return f"--dir={self.direction} --dt={self.types}{post}{' ' + tags if tags else ''} {self.desc}"


def _check_types(p: Problem) -> None:
    t = p.types
    if t.src in INT8_KINDS or t.wei in INT8_KINDS:
        if not p.is_forward:
            raise UnsupportedError(f"int8 convolutions exist for forward only (as in oneDNN), not {p.direction}")
        if t.src not in INT8_KINDS or t.wei != "s8" or t.dst not in ("f32", "s32", "s8", "u8"):
            raise UnsupportedError(f"int8 data types are src s8/u8, wei s8, dst f32/s32/s8/u8; not {t}")
        return
    integers = [x for x in (t.src, t.wei, t.dst) if x not in FLOAT_KINDS]
    if integers:
        raise UnsupportedError(f"data types {t}: {integers[0]} needs int8 src and wei (s8/u8 src, s8 wei)")
    operands = {"fwd": ("src", "wei"), "bwd_d": ("dst", "wei"), "bwd_w": ("src", "dst")}[p.kind]
    result = {"fwd": "dst", "bwd_d": "src", "bwd_w": "wei"}[p.kind]
    a, b = (getattr(t, x) for x in operands)
    if a != b:
        raise UnsupportedError(
            f"{p.direction} multiplies {operands[0]} ({a}) by {operands[1]} ({b}): they must have one type"
        )
    if getattr(t, result) not in (a, "f32"):
        raise UnsupportedError(f"{p.direction} writes {result} as {a} or f32, not {getattr(t, result)}")


def _check_post_ops(p: Problem) -> None:
    if not p.is_forward:
        raise UnsupportedError(
            f"post-ops ('{format_post_ops(p.post_ops)}') apply to forward problems only "
            f"(as in oneDNN), not {p.direction}"
        )
    dst = Type(p.types.dst)
    for index, op in enumerate(p.post_ops):
        if isinstance(op, Sum) and op.dt and op.dt != str(dst) and {op.dt, str(dst)} != {"s8", "u8"}:
            raise UnsupportedError(
                f"post-op '{op}': the sum reads dst ({dst}) as {op.dt}; xegen reads it as its own "
                "type or, for s8/u8, as the other one"
            )
        if isinstance(op, Sum) and op.zero_point and (op.dt or p.types.dst) not in ("s8", "u8", "s32"):
            raise UnsupportedError(f"post-op '{op}': a sum zero point needs an integer data type (as in oneDNN)")
        tensor = p.post_op_tensor(index)
        if isinstance(op, (Binary, Prelu)) and tensor is not None:
            p.layout_of(tensor)


def make_problem(
    desc: str | Descriptor,
    direction: str = "FWD_B",
    dt: str = "f32",
    post_ops: str | tuple = "",
    stag: str = "any",
    wtag: str = "any",
    dtag: str = "any",
    mb: int | None = None,
    scales: str = "",
    zero_points: str = "",
) -> Problem:
    """A problem from command-line style strings (what `xegen conv` takes)."""
    d = parse_descriptor(desc) if isinstance(desc, str) else desc
    if mb is not None:
        d = d.with_mb(mb)
    ops = parse_post_ops(post_ops) if isinstance(post_ops, str) else tuple(post_ops)
    return Problem(
        d,
        parse_direction(direction),
        parse_data_types(dt),
        ops,
        parse_quantization(scales, zero_points),
        stag,
        wtag,
        dtag,
    )


def _check_src_zero_point(problem: Problem) -> None:
    """A source zero point must be a value of src's type: the kernel puts it where the window
    reads padding, so that (src - zero point) is 0 there as oneDNN's padding contributes nothing."""
    zero_point = problem.quantization.src_zero_point
    low, high = {"u8": (0, 255), "s8": (-128, 127)}.get(problem.types.src, (0, 0))
    if zero_point and not low <= zero_point <= high:
        raise UnsupportedError(
            f"--attr-zero-points 'src:common:{zero_point}': a source zero point must be a "
            f"{problem.types.src} value ({low} to {high}); the kernel fills the padding with it"
        )
