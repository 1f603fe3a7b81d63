"""The cycle model: how long one thread takes to run a stretch of IR, from `xegen/hw.py` data.

`model_cycles` walks the IR as one thread (thread and group ids 0 unless given) executes it:
loops run their iterations, lets are evaluated, and each store or call is an event with the cost
of `costs.statement_cost`.  Byte-exact scoreboards of every GRF and SLM buffer give each event
its operands' ready times.  The compute loop is the stretch from the first load, SLM access,
synchronization or multiply to the last multiply (its ramp-up and ramp-down included; the
accumulator zeroing before it and the epilogue after it left out).  Three numbers come out:

- `cycles`: in-order issue, one statement per cycle, waiting for operands (read-after-write,
  and for overwrites the earlier reads and writes) and for a free unit; a wait completes a
  barrier latency after its signal, a fence waits for the thread's SLM writes;
- `critical_path`: the same dependences with unlimited issue and units (the latency bound);
- `resource_bound`: the busiest unit's busy cycles (the throughput bound).

A global load whose cache lines an earlier prefetch requested takes `send_global_cached` cycles
once those lines have arrived.  The model is per thread: the threads of a group are assumed to
run alike (as the interpreter runs them), and contention between threads is not modeled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import EvaluationError
from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Alloc, Call, Evaluator, For, IfThenElse, Let, Send, Seq, Stmt, pointer_arg
from ..ir.semantics import numpy_dtype
from .access import Access, accesses, sync_kind
from .costs import statement_cost
from .labels import label

LINE_BYTES = 64  # cache line size for prefetch bookkeeping
LOOP_LABELS = (
    "g2r_load",
    "prefetch",
    "g2s_store",
    "s2r_load",
    "multiply",
    "reorder",
    "barrier",
    "signal",
    "wait",
    "fence",
)


@dataclass
class CycleReport:
    cycles: int = 0
    critical_path: int = 0
    resource_bound: int = 0
    busy: dict[str, int] = field(default_factory=dict)
    statements: int = 0

    def as_dict(self) -> dict:
        return {
            "cycles": self.cycles,
            "critical_path": self.critical_path,
            "resource_bound": self.resource_bound,
            "busy": dict(sorted(self.busy.items())),
            "statements": self.statements,
        }


class _Scoreboard:
    """Per byte of a buffer: when its last write completes and when it was last read."""

    def __init__(self, size: int):
        self.ready = np.zeros(size, dtype=np.int64)
        self.read = np.zeros(size, dtype=np.int64)


class _Clock:
    """One timing discipline: in order (`in_order`) or dataflow only (the critical path)."""

    def __init__(self, in_order: bool):
        self.in_order = in_order
        self.time = 0
        self.unit_free: dict[str, int] = {}
        self.boards: dict[str, _Scoreboard] = {}
        self.signals: list[int] = []
        self.waits = 0
        self.slm_pending = 0  # completion of this thread's SLM accesses so far
        self.sync_done = 0  # completion of the last wait or barrier (SLM accesses start after it)
        self.lines: dict[tuple[str, int], int] = {}  # prefetched cache line -> arrival


class _Walker:
    def __init__(self, hw: Platform, env: Mapping[str, object]):
        self.hw = hw
        self.evaluator = Evaluator(dict(env))
        self.kinds: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self.clocks = (_Clock(True), _Clock(False))
        # per event: label, unit, busy cycles, (issue, done) per clock
        self.events: list[tuple[str, str, int, tuple[tuple[int, int], ...]]] = []

    # -- structure ---------------------------------------------------------------------------------
    def run(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            for item in s.stmts:
                self.run(item)
        elif isinstance(s, Let):
            if s.value is None:
                if s.var.name not in self.evaluator.env:
                    self.evaluator.bind(s.var.name, 0)
                self.run(s.body)
            else:
                self.evaluator.bind(s.var.name, self.evaluator.evaluate(s.value))
                self.run(s.body)
        elif isinstance(s, Alloc):
            self.kinds[s.buffer.name] = s.kind
            self.sizes[s.buffer.name] = s.size
            for clock in self.clocks:
                clock.boards[s.buffer.name] = _Scoreboard(s.size)
            self.run(s.body)
        elif isinstance(s, For):
            start, end = int(self.evaluator.evaluate(s.init)), int(self.evaluator.evaluate(s.bound))
            for i in range(start, end):
                self.evaluator.bind(s.var.name, np.asarray(i, dtype=numpy_dtype(s.var.type)))
                self.run(s.body)
        elif isinstance(s, IfThenElse):
            if bool(np.all(self.evaluator.evaluate(s.cond))):
                self.run(s.then_case)
            elif s.else_case is not None:
                self.run(s.else_case)
        else:
            self.event(s)

    # -- one statement -----------------------------------------------------------------------------
    def _bytes(self, access: Access) -> np.ndarray:
        base = int(np.asarray(self.evaluator.evaluate(access.offset)).reshape(-1)[0])
        if access.elements is not None:
            starts = base + np.asarray(access.elements, dtype=np.int64)
            return (starts[:, None] + np.arange(access.lane_bytes, dtype=np.int64)[None, :]).reshape(-1)
        if access.lanes is None:
            return base + access.low + np.arange(access.size, dtype=np.int64)
        lanes = np.asarray(self.evaluator.evaluate(access.lanes), dtype=np.int64).reshape(-1)
        return (base + lanes[:, None] + np.arange(access.lane_bytes, dtype=np.int64)[None, :]).reshape(-1)

    def event(self, s: Stmt) -> None:
        cost = statement_cost(s, self.hw)
        kind = sync_kind(s) if isinstance(s, Call) else None
        found = accesses(s)
        touched = []
        for access in found:
            name = access.buffer.name
            where = self.kinds.get(name, "global")
            data = self._bytes(access)
            if where != "global":
                data = data[(data >= 0) & (data < self.sizes[name])]
            touched.append((access, name, where, data))
        prefetch = isinstance(s, Call) and isinstance(s.func, Send) and s.func.op == "prefetch"
        prefetched = self._prefetch_lines(s) if prefetch else []
        times = tuple(self._time(clock, s, cost, kind, touched, prefetched) for clock in self.clocks)
        self.events.append((label(s, self.kinds), cost.unit, cost.busy, times))

    def _prefetch_lines(self, s: Stmt) -> list[tuple[str, int]]:
        """The cache lines a prefetch call `s` requests."""
        assert isinstance(s, Call) and isinstance(s.func, Send)
        mem = pointer_arg(s.args[0])
        base = int(np.asarray(self.evaluator.evaluate(mem.offset)).reshape(-1)[0])
        f = s.func
        if f.kind == "block2d":
            x, y = (int(np.asarray(self.evaluator.evaluate(e)).reshape(-1)[0]) for e in s.args[1:3] if e is not None)
            rows = np.arange(max(0, y), min(f.height, y + f.elems), dtype=np.int64)
            columns = np.arange(max(0, x), min(f.width // f.type.size, x + f.count), dtype=np.int64)
            addresses = (base + rows[:, None] * f.pitch + columns[None, :] * f.type.size).reshape(-1)
        elif f.kind == "block":
            addresses = base + np.arange(0, f.count * f.type.size, dtype=np.int64)
        else:
            offsets = s.args[1]
            assert offsets is not None  # (a scattered message)
            lanes = np.asarray(self.evaluator.evaluate(offsets), dtype=np.int64).reshape(-1)
            addresses = base + lanes
        return sorted({(mem.buffer.name, int(a) // LINE_BYTES) for a in addresses.tolist()})

    def _time(self, clock: _Clock, s: Stmt, cost, kind, touched, prefetched) -> tuple[int, int]:
        latency = cost.latency
        start = clock.time if clock.in_order else 0
        if clock.in_order:
            start = max(start, clock.unit_free.get(cost.unit, 0))
        slm = False
        global_lines: list[tuple[str, int]] = []
        for access, name, where, data in touched:
            if where == "global":
                if not access.write:
                    global_lines += [(name, int(a) // LINE_BYTES) for a in data[:: max(1, LINE_BYTES // 2)]]
                continue
            slm |= where == "slm"
            board = clock.boards[name]
            if data.size == 0:
                continue
            start = max(start, int(board.ready[data].max()))
            if access.write:
                start = max(start, int(board.read[data].max()))
        if slm or kind is not None:
            start = max(start, clock.sync_done)
        if kind == "wait" or kind == "barrier":
            if kind == "barrier":
                start = max(start, clock.slm_pending)
                clock.signals.append(start)
            if clock.waits < len(clock.signals):
                start = max(start, clock.signals[clock.waits] + self.hw.latency["barrier"])
            clock.waits += 1
            clock.sync_done = start
            latency = 1
        elif kind == "signal":
            start = max(start, clock.slm_pending)
            clock.signals.append(start)
            latency = 1
        elif kind == "fence":
            start = max(start, clock.slm_pending)
            latency = 1
        if global_lines and not prefetched:
            arrivals = [clock.lines[line] for line in global_lines if line in clock.lines]
            if len(arrivals) == len(global_lines):  # every line arrived
                latency = max(self.hw.latency["send_global_cached"], max(arrivals) - start)
        for line in prefetched:
            arrival = start + self.hw.latency["send_global"]
            clock.lines[line] = min(clock.lines.get(line, arrival), arrival)
        done = start + latency
        for access, name, where, data in touched:
            if where == "global" or data.size == 0:
                continue
            board = clock.boards[name]
            if access.write:
                board.ready[data] = done
            else:
                board.read[data] = np.maximum(board.read[data], start)
            if where == "slm":
                clock.slm_pending = max(clock.slm_pending, done if access.write else start)
        if clock.in_order:
            clock.time = start + 1
            clock.unit_free[cost.unit] = start + cost.busy
        return start, done

    def report(self, whole: bool) -> CycleReport:
        events = self.events
        if not whole:
            loop = [i for i, event in enumerate(events) if event[0] in LOOP_LABELS]
            multiplies = [i for i, event in enumerate(events) if event[0] == "multiply"]
            if not multiplies:
                return CycleReport()
            events = events[loop[0] : multiplies[-1] + 1]
        report = CycleReport(statements=len(events))
        if not events:
            return report
        for _, unit, busy, _ in events:
            report.busy[unit] = report.busy.get(unit, 0) + busy
        spans = []
        for clock in range(2):
            first = min(times[clock][0] for *_, times in events)
            last = max(times[clock][1] for *_, times in events)
            spans.append(last - first)
        report.cycles, report.critical_path = spans
        report.resource_bound = max(report.busy.values())
        return report


def model_cycles(
    stmt: Stmt, hw: Platform | str, env: Mapping[str, object] | None = None, whole: bool = False
) -> CycleReport:
    """Model one thread running `stmt` (a kernel): the compute loop's cycles, or the whole
    statement's with `whole`.  `env` binds external variables (default 0)."""
    hw = lookup_platform(hw)
    walker = _Walker(hw, env or {})
    try:
        walker.run(stmt)
    except EvaluationError as error:
        raise EvaluationError(f"the cycle model cannot follow this IR: {error}") from None
    return walker.report(whole)
