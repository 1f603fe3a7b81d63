"""Issue cost and latency of one statement on a platform: the data of the scheduler's cycle model.

Every number comes from `xegen/hw.py` (all of them modeled, none measured):

| statement               | unit     | busy cycles                                   | latency                      |
|-------------------------|----------|-----------------------------------------------|------------------------------|
| send (global, SLM)      | send     | payload bytes / `message_bytes_per_cycle`     | `send_global` / `send_slm`   |
| prefetch                | send     | as a load                                     | `send_global` (lines arrive) |
| dpas                    | systolic | multiply-adds / `fma_per_clock_per_eu[type]`  | `dpas` + busy cycles         |
| mad, dp4a               | fpu      | lanes / f32 (or int8) multiply-adds per clock | `alu` + busy cycles          |
| reorder, register store | fpu      | bytes moved / (f32 lanes per clock x 4 bytes) | `alu` + busy cycles          |
| barrier                 | sync     | 1                                             | `barrier`                    |
| signal, wait            | sync     | 1                                             | `barrier` (signal to wait)   |
| fence                   | send     | 1                                             | waits for earlier SLM writes |

Index arithmetic (`let`s) is left out: the e-graph optimizer hoists and shares it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hw import Platform
from ..ir import Call, Dp4a, Dpas, Mad, Reorder, Send, Stmt, Store


@dataclass(frozen=True)
class Cost:
    unit: str  # the unit it keeps busy: send, systolic, fpu, sync
    busy: int  # cycles the unit is busy
    latency: int  # cycles from issue until its result can be used


def _ceil(a: int, b: int) -> int:
    return max(1, -(-a // b))


def _fpu_bytes_per_cycle(hw: Platform) -> int:
    return hw.fma_per_clock_per_eu["f32"] * 4


def _fma_kind(t) -> str:
    return "int8" if t.kind in ("s8", "u8") else t.kind if t.kind in ("f16", "bf16") else "f32"


def statement_cost(stmt: Stmt, hw: Platform) -> Cost:
    alu = hw.latency["alu"]
    if isinstance(stmt, Store):
        busy = _ceil(stmt.value.type.lanes * stmt.value.type.scalar.size, _fpu_bytes_per_cycle(hw))
        return Cost("fpu", busy, alu + busy)
    if not isinstance(stmt, Call):
        return Cost("fpu", 1, alu)  # compound statements: one step, as far as this model goes
    f = stmt.func
    if isinstance(f, Send):
        payload = f.register_bytes if f.kind == "block2d" else f.count * f.elems * f.type.size
        busy = _ceil(payload, hw.message_bytes_per_cycle)
        latency = hw.latency["send_slm"] if f.space == "slm" else hw.latency["send_global"]
        return Cost("send", busy, latency)
    if isinstance(f, Dpas):
        products = f.exec_size * f.rcount * f.sdepth * f.ops_per_channel
        rate = hw.fma_per_clock_per_eu.get(_fma_kind(f.src1_type), hw.fma_per_clock_per_eu["f32"])
        busy = _ceil(products, rate)
        return Cost("systolic", busy, hw.latency["dpas"] + busy)
    if isinstance(f, Mad):
        busy = _ceil(f.exec_size, hw.fma_per_clock_per_eu["f32"])
        return Cost("fpu", busy, alu + busy)
    if isinstance(f, Dp4a):
        busy = _ceil(f.exec_size * 4, hw.fma_per_clock_per_eu["int8"])
        return Cost("fpu", busy, alu + busy)
    if isinstance(f, Reorder):
        busy = f.rows * _ceil(f.cols * max(f.src_type.size, f.dst_type.size), _fpu_bytes_per_cycle(hw))
        return Cost("fpu", busy, alu + busy)
    if f.name in ("barrier", "signal", "wait"):
        return Cost("sync", 1, hw.latency["barrier"])
    if f.name == "fence":
        return Cost("send", 1, hw.latency["send_slm"])
    return Cost("fpu", 1, alu)
