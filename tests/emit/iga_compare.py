"""Helpers for tests that compare xegen.emit with Intel's iga64 and IGC kernels."""

from __future__ import annotations

import re
import struct

from xegen.emit import Instruction, format_instruction


def listing_tokens(text: str) -> list[list[str]]:
    """Token streams of a listing, one list per non-empty line; `//` comments dropped
    (iga64 decodes send descriptors in comments, which we do not reproduce)."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"//.*", "", line).strip()
        if line:
            out.append(line.split())
    return out


def assert_same_listing(ours: str, theirs: str, context: str = "") -> None:
    mine, ref = listing_tokens(ours), listing_tokens(theirs)
    for number, (a, b) in enumerate(zip(mine, ref, strict=False), start=1):
        assert a == b, f"{context}line {number} differs:\n  iga64: {' '.join(b)}\n  xegen: {' '.join(a)}"
    assert len(mine) == len(ref), f"{context}listing lengths differ: xegen {len(mine)} lines, iga64 {len(ref)}"


def assert_same_bytes(instructions: list[Instruction], ours: bytes, theirs: bytes, hw) -> None:
    for index in range(min(len(ours), len(theirs)) // 16):
        a, b = ours[16 * index : 16 * index + 16], theirs[16 * index : 16 * index + 16]
        if a != b:
            text = format_instruction(instructions[index], hw, 16 * index) if index < len(instructions) else "?"
            diff = int.from_bytes(a, "little") ^ int.from_bytes(b, "little")
            bits = [i for i in range(128) if diff >> i & 1]
            raise AssertionError(
                f"instruction {index} encodes differently: {text.strip()}\n"
                f"  iga64: {b[::-1].hex()}\n  xegen: {a[::-1].hex()}\n  differing bits: {bits}"
            )
    assert len(ours) == len(theirs), f"byte lengths differ: xegen {len(ours)}, iga64 {len(theirs)}"


def elf_sections(data: bytes) -> dict[str, bytes]:
    """Section name -> contents of a little-endian ELF64 file (a zebin)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not an ELF64 file"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    sections = {}
    for name, _type, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", names_offset + name)
        sections[data[names_offset + name : end].decode()] = data[offset : offset + size]
    return sections


def kernel_code(zebin: bytes) -> dict[str, bytes]:
    """Kernel name -> instruction bytes (the `.text.<kernel>` sections)."""
    return {
        name[len(".text.") :]: body for name, body in elf_sections(zebin).items() if name.startswith(".text.") and body
    }


# OpenCL C kernels that exercise what IGC emits: sends (HDC and LSC), barriers and SLM,
# goto/join, math, 64-bit integers, dp4a, dpas.
IGC_KERNELS = {
    "elementwise": """
__kernel void elementwise(__global const float* a, __global const float* b, __global float* c, float alpha, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = alpha * a[i] + exp(b[i]) - sin(a[i]) / (1.0f + fabs(b[i]));
}""",
    "reduce": """
__kernel void reduce(__global const float* in, __global float* out, __local float* tmp, int n) {
  int l = get_local_id(0); int g = get_global_id(0);
  tmp[l] = g < n ? in[g] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = tmp[0];
}""",
    "conv": """
__kernel void conv(__global const float* src, __global const float* wei, __global float* dst,
                   int IC, int IH, int IW, int OC, int OH, int OW, int KH, int KW, int SH, int SW, int PH, int PW) {
  int ow = get_global_id(0), oh = get_global_id(1), oc = get_global_id(2);
  if (ow >= OW || oh >= OH || oc >= OC) return;
  float acc = 0.0f;
  for (int ic = 0; ic < IC; ++ic)
    for (int kh = 0; kh < KH; ++kh) {
      int ih = oh * SH - PH + kh;
      if (ih < 0 || ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        int iw = ow * SW - PW + kw;
        if (iw < 0 || iw >= IW) continue;
        acc += src[(ic * IH + ih) * IW + iw] * wei[((oc * IC + ic) * KH + kh) * KW + kw];
      }
    }
  dst[(oc * OH + oh) * OW + ow] = acc;
}""",
    "transpose": """
#define T 16
__kernel void transpose(__global const float* in, __global float* out, int rows, int cols) {
  __local float tile[T][T + 1];
  int x = get_group_id(0) * T + get_local_id(0), y = get_group_id(1) * T + get_local_id(1);
  if (x < cols && y < rows) tile[get_local_id(1)][get_local_id(0)] = in[y * cols + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  x = get_group_id(1) * T + get_local_id(0); y = get_group_id(0) * T + get_local_id(1);
  if (x < rows && y < cols) out[y * rows + x] = tile[get_local_id(0)][get_local_id(1)];
}""",
    "idot": """
__kernel void idot(__global const char4* a, __global const char4* b, __global int* out, __global long* q, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  char4 x = a[i], y = b[i];
  int s = x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
  out[i] = s / 3 + (s % 7) + popcount(s) + clz(s) + rotate(s, 5) + abs(s) + mul_hi(s, i) + (int)(((uint)s) >> 3);
  q[i] = q[i] * (long)i + (q[i] >> 3) / 7;
}""",
    "mathk": """
__kernel void mathk(__global float* a, __global long* q, __global half* h, __global uint* u) {
  int i = get_global_id(0);
  a[i] = pow(a[i], a[i+1]) + log(a[i]) + cos(a[i]) + rsqrt(a[i]) + rint(a[i]) + floor(a[i]) + ceil(a[i])
       + trunc(a[i]) + fract(a[i], &a[i+2]);
  q[i] = q[i] / q[i+1] + (q[i] << 5) + (q[i] * q[i+3]);
  h[i] = h[i] * h[i+1] + (half)a[i];
  u[i] = (u[i] / u[i+1]) + (u[i] % 9u) + u[i] * 5u + hadd(u[i], u[i+1]) + mad_sat(u[i], u[i+2], u[i+3])
       + (u[i] & 0xF0F0) + bitselect(u[i], u[i+1], u[i+2]);
}""",
}

# fp64 division and square root (madm, math.invm/rsqtm) exist where IGC supports doubles.
IGC_DOUBLE_KERNEL = """
__kernel void dmath(__global double* d) {
  int i = get_global_id(0);
  d[i] = d[i] / d[i+1] + sqrt(d[i+2]);
}"""

# An f16 dpas GEMM tile and an int8 dpas (sub-group size 8 on dg2).  The SIMD8 f16 form
# takes `int8 a` (two halves per dword): the `short8 a` overload is PVC's SIMD16 builtin,
# which this IGC silently drops on dg2.
IGC_DPAS_KERNEL = """
__attribute__((intel_reqd_sub_group_size(8)))
__kernel void gemm(__global const half* A, __global const half* B, __global float* C, int K) {
  float8 acc = 0;
  for (int k = 0; k < K; k += 16) {
    int8 a = as_int8(intel_sub_group_block_read8((__global uint*)(A + k * 8)));
    int8 b = as_int8(intel_sub_group_block_read8((__global uint*)(B + k * 8)));
    acc = intel_sub_group_f16_f16_matrix_mad_k16(a, b, acc);
  }
  intel_sub_group_block_write8((__global uint*)C, as_uint8(acc));
}
__attribute__((intel_reqd_sub_group_size(8)))
__kernel void gemm_i8(__global const int* A, __global const int8* B, __global int* C) {
  int i = get_global_id(0);
  C[i] = intel_sub_group_i8_i8_matrix_mad_k32(A[i], B[i], C[i]);
}"""
IGC_DPAS_OPTIONS = "-Dcl_intel_subgroup_matrix_multiply_accumulate"
