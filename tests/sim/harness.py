"""Run hand-written assembly in the simulator without a zebin: registers in, registers out.

    run = execute('''
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
    ''', "dg2", threads=4, inputs={20: a, 30: b})
    run.read(10, np.int32, 16)          # (threads, 16) values of r10..r11

The text is assembled with xegen's assembler (tests may encode; the simulator only
decodes), an end-of-thread send is appended, and every thread starts with the given
register contents (everything else zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xegen import hw as hwlib
from xegen.emit import assemble
from xegen.sim.hazards import HazardChecker
from xegen.sim.machine import Machine
from xegen.sim.memory import DeviceMemory, SharedLocalMemory, Surface
from xegen.sim.program import Program


def end_of_thread(platform: hwlib.Platform) -> str:
    if platform.eot_sfid == "ts":
        return "(W) send.ts (8|M0) null r127 null 0x0 0x02000010 {EOT}"
    return "(W) send.gtwy (8|M0) null r127 null:0 0x0 0x02000010 {EOT}"


@dataclass
class Run:
    machine: Machine
    hazards: list

    @property
    def files(self):
        return self.machine.files

    def read(self, register: int, dtype, count: int, byte_offset: int = 0) -> np.ndarray:
        """(threads, count) elements of `dtype` starting at register `register` (+ byte_offset)."""
        dtype = np.dtype(dtype)
        start = register * self.files.grf_bytes + byte_offset
        raw = self.files.grf[:, start : start + count * dtype.itemsize]
        return np.ascontiguousarray(raw).view(dtype)

    def flag(self, number: int) -> np.ndarray:
        return self.files.flags.view(np.uint32)[:, number].copy()


def write_registers(files, register: int, values: np.ndarray, byte_offset: int = 0) -> None:
    """values: (threads, n) or (n,) array written from register `register` on."""
    values = np.asarray(values)
    if values.ndim == 1:
        values = np.broadcast_to(values, (files.threads, values.size))
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(files.threads, -1)
    start = register * files.grf_bytes + byte_offset
    files.grf[:, start : start + raw.shape[1]] = raw


def execute(
    asm: str,
    hw: str,
    *,
    threads: int = 4,
    simd: int = 16,
    inputs: dict | None = None,
    live: np.ndarray | None = None,
    memory: DeviceMemory | None = None,
    surfaces: dict[int, Surface] | None = None,
    slm_bytes: int = 0,
    group_of_thread=None,
    general_state_base: int = 0,
    check_hazards: bool = False,
    flags: dict | None = None,
    add_eot: bool = True,
    grf_count: int = 128,
    code: bytes | None = None,
) -> Run:
    platform = hwlib.platform(hw)
    if code is None:
        code = assemble(asm + ("\n" + end_of_thread(platform) if add_eot else ""), platform)
    program = Program(code, platform)
    if live is None:
        live = np.ones((threads, simd), dtype=bool)
    if group_of_thread is None:
        group_of_thread = np.zeros(threads, dtype=np.int64)
    group_of_thread = np.asarray(group_of_thread, dtype=np.int64)
    checker = HazardChecker(program, platform) if check_hazards else None
    machine = Machine(
        program,
        platform,
        grf_count,
        live,
        memory=memory or DeviceMemory(),
        surfaces=surfaces or {},
        general_state_base=general_state_base,
        slm=SharedLocalMemory(int(group_of_thread.max()) + 1, slm_bytes, platform.max_slm_bytes),
        group_of_thread=group_of_thread,
        hazards=checker.start_batch(threads) if checker else None,
    )
    for register, values in (inputs or {}).items():
        if isinstance(register, tuple):
            write_registers(machine.files, register[0], values, register[1])
        else:
            write_registers(machine.files, register, values)
    for number, value in (flags or {}).items():
        machine.files.flags.view(np.uint32)[:, number] = value
    machine.run()
    return Run(machine, checker.hazards if checker else [])
