"""Execute one batch of hardware threads (whole work-groups) of a kernel.

Scheduling follows the per-channel pc model of `control`: while every live channel of every
unfinished thread is at the same instruction ("uniform"), the batch runs straight-line code
with one numpy operation per instruction for all threads.  After a branch that splits the
channels, the batch runs the lowest pc among all channels, with exactly the channels at that
pc enabled, up to the next pc any other channel waits at or the next branch; channels
reconverge when they meet, and the batch returns to uniform mode when all have.  Threads
that take different uniform branches (jmpi) are just channels at different pcs.

Barriers: a gateway signal counts the signalling threads of each work-group; `sync.bar`
lets a thread pass once its group's count has completed, otherwise the thread waits
(blocked) while the others run.  End of thread retires the thread.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import hw as hwlib
from ..emit import tables as T
from ..emit.instruction import Instruction
from ..errors import Error
from . import fpround
from .compile_alu import compile_alu
from .control import BRANCHES, Branch
from .dpas import compile_dpas
from .errors import SimulationError
from .macros import MacroState
from .memory import DeviceMemory, Scratch, SharedLocalMemory, Surface
from .messages import compile_send
from .program import Program, Undecodable
from .state import MAX_CHANNELS, RegisterFiles

DEAD = np.iinfo(np.int32).max  # pc of a channel that never runs again


class Machine:
    def __init__(
        self,
        program: Program,
        platform: hwlib.Platform,
        grf_count: int,
        live: np.ndarray,
        *,
        memory: DeviceMemory,
        surfaces: dict[int, Surface],
        general_state_base: int,
        slm: SharedLocalMemory,
        group_of_thread: np.ndarray,
        hazards=None,
        start: int = 0,
        scratch: Scratch | None = None,
    ):
        self.program = program
        self.platform = platform
        threads = live.shape[0]
        self.threads = threads
        self.files = RegisterFiles(platform, threads, grf_count)
        self.memory = memory
        self.surfaces = surfaces
        self.general_state_base = general_state_base
        self.slm = slm
        self.scratch = scratch
        self.macros = MacroState()  # the mme registers of the fp64 math macros
        self.group_of_thread = group_of_thread
        self.groups = int(group_of_thread.max()) + 1 if threads else 0
        self.hazards = hazards
        if hazards is not None:
            hazards.bind(self.files.a0.view(np.uint16))
        self._mode: fpround.FloatMode | None = fpround.DEFAULT_MODE  # None: threads differ

        # scheduling state
        self.live = np.zeros((threads, MAX_CHANNELS), dtype=bool)
        self.live[:, : live.shape[1]] = live
        self.done = np.zeros(threads, dtype=bool)
        self.blocked = np.zeros(threads, dtype=bool)
        self.uniform = True
        self.pc = start
        self.chan_pc: np.ndarray | None = None
        self._set_uniform_masks()

        # barriers
        self.group_threads = np.bincount(group_of_thread, minlength=self.groups)
        self.barrier_arrived = np.zeros(self.groups, dtype=np.int64)
        self.barrier_generation = np.zeros(self.groups, dtype=np.int64)
        self.thread_generation = np.zeros(threads, dtype=np.int64)

        # code
        self.instruction_count = 0  # thread-instructions executed
        self.lane_instructions = 0  # the same, weighted by execution size
        # thread-executions per instruction, as a difference array over pcs (one update per
        # straight-line run keeps the hot loop free of bookkeeping): see `executions()`
        self._execution_steps = np.zeros(len(program.instructions) + 1, dtype=np.int64)
        self._compile()

    # --- compilation --------------------------------------------------------------------------

    def _compile(self) -> None:
        program = self.program
        n = program.end
        self.ops: list[Callable[[], None]] = [_not_compiled] * (n + 1)
        self.straight = np.zeros(n + 1, dtype=bool)
        self.branches: dict[int, Branch] = {}
        self.control_kind: list[str] = ["end"] * (n + 1)
        self.exec_sizes = [0] * (n + 1)
        for index in range(n):
            inst = program.instructions[index]
            if isinstance(inst, Undecodable):
                self.control_kind[index] = "undecodable"
                continue
            self.exec_sizes[index] = inst.exec_size
            kind = self._kind(inst)
            self.control_kind[index] = kind
            if kind == "straight":
                self.straight[index] = True
                self.ops[index] = self._compile_straight(inst, index)
            elif kind == "branch":
                try:
                    self.branches[index] = Branch(inst, index, self)
                except Error as error:
                    self.control_kind[index] = "error"
                    self.ops[index] = _raiser(
                        error if isinstance(error, SimulationError) else SimulationError(str(error))
                    )

    @staticmethod
    def _kind(inst: Instruction) -> str:
        if inst.opcode in BRANCHES:
            return "branch"
        if inst.opcode == "sync" and inst.function == "bar":
            return "barrier"
        if inst.send is not None and inst.eot:
            return "eot"
        return "straight"

    def _compile_straight(self, inst: Instruction, index: int) -> Callable[[], None]:
        try:
            if inst.send is not None:
                op = compile_send(inst, self)
            elif inst.opcode == "sync":
                op = _no_op
            elif T.OPCODES[inst.opcode].format == T.DPAS:
                op = compile_dpas(inst, self)
            else:
                op = compile_alu(inst, self)
        except Error as error:
            return _raiser(error if isinstance(error, SimulationError) else SimulationError(str(error)))
        except (ValueError, IndexError, TypeError, KeyError) as error:  # a bug: reported when reached
            return _raiser(SimulationError(f"internal error: {error!r}"))
        if inst.dst is not None and inst.dst.file == "cr":
            inner = op

            def op():
                inner()
                self._update_float_mode()

        return op

    def _update_float_mode(self) -> None:
        words = self.files.cr.view(np.uint32)[:, 0][~self.done]
        if words.size == 0 or np.all(words == words[0]):
            self._mode = fpround.FloatMode.from_cr0(int(words[0]) if words.size else 0)
        else:
            self._mode = None  # threads at different pcs are in different modes

    @property
    def mode(self) -> fpround.FloatMode:
        """The float mode (cr0) of the threads executing the current instruction."""
        if self._mode is not None:
            return self._mode
        words = self.files.cr.view(np.uint32)[:, 0][self.participating() & ~self.done]
        if words.size and np.any(words != words[0]):
            raise SimulationError("threads executing one instruction use different cr0 rounding/denormal settings")
        return fpround.FloatMode.from_cr0(int(words[0]) if words.size else 0)

    # --- external hooks --------------------------------------------------------------------------

    def surface(self, bti: int) -> Surface:
        surface = self.surfaces.get(bti)
        if surface is None:
            raise SimulationError(f"binding table index {bti} has no surface")
        return surface

    def participating(self) -> np.ndarray:
        """(threads,) bool: the threads executing the current instruction."""
        if self.tmask_col is None:
            return np.ones(self.threads, dtype=bool)
        return self.tmask_col[:, 0]

    def barrier_signal(self, threads: np.ndarray) -> None:
        """Threads (bool mask) signal their work-group's barrier."""
        groups = self.group_of_thread[threads]
        self.thread_generation[threads] = self.barrier_generation[self.group_of_thread[threads]]
        self.barrier_arrived += np.bincount(groups, minlength=self.groups)
        complete = self.barrier_arrived >= self.group_threads
        complete &= self.barrier_arrived > 0
        if np.any(complete):
            self.barrier_generation[complete] += 1
            self.barrier_arrived[complete] = 0
            self.blocked &= ~complete[self.group_of_thread]

    # --- running ------------------------------------------------------------------------------

    def _set_uniform_masks(self) -> None:
        alive = ~self.done
        if alive.all():
            self.enabled = None if self.live.all() else self.live
            self.tmask_col = None
        else:
            self.enabled = self.live & alive[:, None]
            self.tmask_col = alive[:, None]
        self.tmask = None if self.tmask_col is None else self.tmask_col[:, 0]

    def run(self) -> None:
        try:
            # floats overflow to inf and NaN propagates, as on the hardware: no numpy warnings
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                while not self.done.all():
                    if self.uniform:
                        self._step_uniform()
                    else:
                        self._step_divergent()
        except SimulationError as error:
            raise type(error)(f"{self.program.where(self._current)}: {error}") from None
        except Error:
            raise
        except (ValueError, IndexError, TypeError, KeyError) as error:  # a bug, named with its instruction
            raise SimulationError(f"{self.program.where(self._current)}: internal error: {error!r}") from error

    def executions(self) -> np.ndarray:
        """How many threads executed each instruction (indexed like program.instructions)."""
        return np.cumsum(self._execution_steps)[:-1]

    def _straight_run(self, pc: int, stop: int, tmask) -> int:
        start = pc
        ops, straight = self.ops, self.straight
        hazards = self.hazards
        count = 0
        lanes = 0
        sizes = self.exec_sizes
        try:
            if hazards is None:
                while pc < stop and straight[pc]:
                    ops[pc]()
                    lanes += sizes[pc]
                    pc += 1
                    count += 1
            else:
                while pc < stop and straight[pc]:
                    hazards.step(pc, tmask)
                    ops[pc]()
                    lanes += sizes[pc]
                    pc += 1
                    count += 1
        finally:
            self._current = pc
            participants = self.threads_running(tmask)
            self.instruction_count += count * participants
            self.lane_instructions += lanes * participants
            self._execution_steps[start] += participants
            self._execution_steps[start + count] -= participants
        return pc

    def threads_running(self, tmask) -> int:
        if tmask is None:
            return self.threads
        return int(np.count_nonzero(tmask))

    def _step_uniform(self) -> None:
        pc = self._straight_run(self.pc, self.program.end + 1, self.tmask)
        self.pc = pc
        self._current = pc
        alive = ~self.done
        at = self.live & alive[:, None]
        self._control(pc, at, alive)

    def _materialize(self) -> None:
        self.chan_pc = np.where(self.live & ~self.done[:, None], np.int32(self.pc), np.int32(DEAD)).astype(np.int32)
        self.uniform = False

    def _divergent_pcs(self) -> np.ndarray:
        """`chan_pc`, which exists while the threads diverge (after `_materialize`)."""
        assert self.chan_pc is not None
        return self.chan_pc

    def _step_divergent(self) -> None:
        chan_pc = self._divergent_pcs()
        runnable = ~self.done & ~self.blocked
        if not runnable.any():
            stuck = np.nonzero(self.blocked & ~self.done)[0]
            pcs = sorted({int(chan_pc[t].min()) for t in stuck})
            raise SimulationError(
                "deadlock: threads wait at a barrier that can never complete "
                f"(waiting at {', '.join(self.program.where(p) for p in pcs[:3])})"
            )
        live_pcs = np.where(runnable[:, None], chan_pc, DEAD)
        cur = int(live_pcs.min())
        at = live_pcs == cur
        tmask = at.any(axis=1)
        later = live_pcs[live_pcs > cur]
        stop = int(later.min()) if later.size else self.program.end + 1
        self.enabled = at
        self.tmask_col = tmask[:, None]
        self.tmask = tmask
        self._current = cur
        pc = self._straight_run(cur, stop, tmask)
        if pc != cur:
            chan_pc[at] = pc
        if pc < stop:
            self._control(pc, at, tmask)
        self._try_reconverge()

    def _try_reconverge(self) -> None:
        if self.uniform or self.blocked.any():
            return
        alive = self.live & ~self.done[:, None]
        if not alive.any():
            return
        pcs = self._divergent_pcs()[alive]
        if pcs.min() == pcs.max():
            self.uniform = True
            self.pc = int(pcs[0])
            self.chan_pc = None
            self._set_uniform_masks()

    # --- control instructions ------------------------------------------------------------------

    def _control(self, pc: int, at: np.ndarray, tmask: np.ndarray) -> None:
        """Execute the control instruction at pc for channels `at` of threads `tmask`."""
        kind = self.control_kind[pc]
        if kind == "end":
            raise SimulationError("ran past the end of the kernel without an end-of-thread send")
        inst = self.program.instructions[pc]
        if isinstance(inst, Undecodable):
            raise inst.error
        if kind == "error":
            self.ops[pc]()
        if self.hazards is not None:
            self.hazards.step(pc, self.tmask)
        participants = self.threads_running(tmask)
        self.instruction_count += participants
        self.lane_instructions += self.exec_sizes[pc] * participants
        self._execution_steps[pc] += participants
        self._execution_steps[pc + 1] -= participants
        if kind == "eot":
            if inst.predicate is not None:
                raise SimulationError("a predicated end-of-thread send is not simulated")
            self._retire(tmask)
        elif kind == "barrier":
            self._barrier_wait(pc, at, tmask)
        else:
            self._branch(pc, at)

    def _retire(self, threads: np.ndarray) -> None:
        self.done |= threads
        if self.uniform:
            self._set_uniform_masks()
        else:
            self._divergent_pcs()[threads] = DEAD
        self.blocked &= ~self.done

    def _barrier_wait(self, pc: int, at: np.ndarray, threads: np.ndarray) -> None:
        passed = threads & (self.barrier_generation[self.group_of_thread] > self.thread_generation)
        waiting = threads & ~passed
        if self.uniform and not waiting.any():
            self.pc = pc + 1
            return
        if self.uniform:
            self._materialize()
        self._divergent_pcs()[at & passed[:, None]] = pc + 1
        self.blocked |= waiting

    def _branch(self, pc: int, at: np.ndarray) -> None:
        moves = self.branches[pc].targets(at)
        if self.uniform:
            alive = self.live & ~self.done[:, None]
            for channels, target in moves:
                if np.array_equal(channels, alive):
                    self.pc = target
                    return
                if channels.any():
                    break
            else:
                # no channel is at the branch (cannot happen with live threads)
                self.pc = pc + 1
                return
            self._materialize()
        chan_pc = self._divergent_pcs()
        for channels, target in moves:
            chan_pc[channels] = target
        # channels at the branch outside its exec size continue with the next instruction
        covered = np.zeros_like(at)
        for channels, _ in moves:
            covered |= channels
        chan_pc[at & ~covered] = pc + 1


def _no_op() -> None:
    return None


def _not_compiled() -> None:
    raise AssertionError("only straight-line instructions and errors have an operation")


def _raiser(error: Error) -> Callable[[], None]:
    def run():
        raise error

    return run
