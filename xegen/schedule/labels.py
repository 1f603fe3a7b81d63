"""What role a statement plays in a compute loop, named the way oneDNN's generator names them.

| label       | statement                                                          |
|-------------|--------------------------------------------------------------------|
| g2r_load    | global -> GRF load (`send` load, space global)                     |
| g2s_store   | GRF -> SLM store (`send` store, space slm)                         |
| s2r_load    | SLM -> GRF load (`send` load, space slm)                           |
| prefetch    | global prefetch (`send` prefetch)                                  |
| r2g_store   | GRF -> global store or atomic                                      |
| multiply    | dpas, mad, dp4a                                                    |
| reorder     | register-to-register moves and conversions                         |
| grf_store   | a store into a register buffer (e.g. zeroing before masked loads)  |
| barrier, signal, wait, fence | synchronization                                   |
| header      | a `let`: an index or address computation (message header update)  |
| compound    | an if, an inner loop, or a let whose value reads memory            |
"""

from __future__ import annotations

from ..ir import Call, Dp4a, Dpas, Mad, Reorder, Send, Stmt, Store
from .access import sync_kind

LABELS = (
    "g2r_load",
    "g2s_store",
    "s2r_load",
    "prefetch",
    "r2g_store",
    "multiply",
    "reorder",
    "grf_store",
    "barrier",
    "signal",
    "wait",
    "fence",
    "header",
    "compound",
)


def label(stmt: Stmt, buffer_kinds: dict[str, str] | None = None) -> str:
    kinds = buffer_kinds or {}
    if isinstance(stmt, Store):
        kind = kinds.get(stmt.buffer.name, "grf")
        return "grf_store" if kind == "grf" else "r2g_store" if kind == "global" else "g2s_store"
    if isinstance(stmt, Call):
        f = stmt.func
        if isinstance(f, Send):
            if f.op == "prefetch":
                return "prefetch"
            if f.space == "slm":
                return "s2r_load" if f.op == "load" else "g2s_store"
            return "g2r_load" if f.op == "load" else "r2g_store"
        if isinstance(f, (Dpas, Mad, Dp4a)):
            return "multiply"
        if isinstance(f, Reorder):
            return "reorder"
        sync = sync_kind(stmt)
        if sync is not None:
            return sync
    return "compound"
