"""Latency: how long one thread waits for its loads.  (How many threads an EU holds to hide it,
`occupancy` and `stall`, depends on the launch alone: `xegen.launch`.)

Latency.  `exposed_latency` follows one thread through its instructions in program order, one
issue per clock, and adds the clocks it waits: an instruction that waits on a send's SBID token
(`$n.dst`, or `sync.allwr` for the tokens of its mask) waits until the send's latency has
passed since it issued.  The instructions between a load and the first wait on it are the thread's own
independent work that hides the latency.  A loop runs two iterations (the second sees the
loads the first left in flight, as every later one does) and the rest are taken to repeat the
second.  The thread is an average one: a wait in code only some threads run (one branch of an
if, a stride phase of backward data) counts for the share of threads that run it, from the
execution counts (in a loop, the share that enters it).  dpas and math results are not waited
for (their pipes are in the resource terms).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .analysis import Loop, is_send, loops
from .instruction import Imm, Instruction

# --- one thread's waits ------------------------------------------------------------------------


class _Timeline:
    def __init__(
        self, instructions: Sequence[Instruction], per_thread: Sequence[float], latency: Callable[[Instruction], float]
    ):
        self.instructions = instructions
        self.per_thread = per_thread
        self.latency = latency
        self.time = 0.0
        self.waited = 0.0
        self.ready: dict[int, float] = {}  # SBID token -> when its send's result is there
        self.loop_share: float | None = None  # the share of threads in the loop being run
        self.loops_at: dict[int, list[Loop]] = {}
        for loop in loops(instructions):
            self.loops_at.setdefault(loop.start, []).append(loop)

    def run(self, start: int, end: int, entered: frozenset[Loop] = frozenset()) -> None:
        """Instructions [start, end], entering the loops there but those in `entered` (being
        iterated by a caller)."""
        i = start
        while i <= end:
            loop = max(
                (lp for lp in self.loops_at.get(i, ()) if lp.end <= end and lp not in entered),
                key=lambda lp: lp.end,
                default=None,
            )
            if loop is not None:
                self._loop(loop, entered | {loop})
                i = loop.end + 1
                continue
            if self.per_thread[i] > 0:
                share = min(1.0, self.per_thread[i]) if self.loop_share is None else self.loop_share
                self._issue(self.instructions[i], share)
            i += 1

    def _loop(self, loop: Loop, entered: frozenset[Loop]) -> None:
        """Two iterations run, the rest repeat the second: its clocks, its waits, and the
        results it leaves in flight, later by as much."""
        after = loop.end + 1
        exits = self.per_thread[after] if after < len(self.per_thread) else 0.0
        trips = round(self.per_thread[loop.start] / (exits if exits > 0 else 1.0))
        outer = self.loop_share
        if outer is None:
            self.loop_share = min(1.0, exits) if exits > 0 else 1.0
        for _ in range(min(trips, 2)):
            began, waited = self.time, self.waited
            self.run(loop.start, loop.end, entered)
        if trips > 2:
            shift = (trips - 2) * (self.time - began)
            self.waited += (trips - 2) * (self.waited - waited)
            self.time += shift
            self.ready = {token: when + shift for token, when in self.ready.items()}
        self.loop_share = outer

    def _wait(self, until: float, share: float) -> None:
        if until > self.time:
            self.waited += (until - self.time) * share
            self.time = until

    def _issue(self, inst: Instruction, share: float) -> None:
        swsb = inst.swsb
        if inst.opcode == "sync" and inst.function == "allwr":
            named = [token for token in self.ready if _names(inst, token)]
            self._wait(max((self.ready.pop(token) for token in named), default=0.0), share)
        out_of_order = is_send(inst) or inst.opcode in ("dpas", "dpasw", "math")
        waits = swsb.token_mode == "dst" or (swsb.token_mode == "set" and not out_of_order)
        if swsb.token is not None and waits:
            self._wait(self.ready.pop(swsb.token, 0.0), share)
        self.time += 1
        if out_of_order and swsb.token is not None and swsb.token_mode == "set":
            self.ready[swsb.token] = self.time + (self.latency(inst) if is_send(inst) else 0.0)


def _names(sync: Instruction, token: int) -> bool:
    """Whether a `sync.allwr` waits for `token`: the tokens of its mask (an immediate source),
    every one without a mask."""
    source = sync.srcs[0] if sync.srcs else None
    return not isinstance(source, Imm) or bool(source.value >> token & 1)


def exposed_latency(
    instructions: Sequence[Instruction],
    executions: Sequence[int],
    threads: int,
    latency: Callable[[Instruction], float],
) -> float:
    """Clocks an average thread waits for send results (`latency(send)` after issue) that its own
    instructions in between do not cover."""
    if not threads or not instructions:
        return 0.0
    timeline = _Timeline(instructions, [n / threads for n in executions], latency)
    timeline.run(0, len(instructions) - 1)
    return timeline.waited


def barriers_used(instructions: Sequence[Instruction]) -> bool:
    """Whether the kernel synchronizes its group (waits on a barrier)."""
    return any(inst.opcode == "sync" and inst.function == "bar" for inst in instructions)
