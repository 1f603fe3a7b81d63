"""Running lowered kernels in the simulator: convolution kernels on logical tensors, and
hand-written IR kernels on raw buffers, each compared with the IR interpreter."""

from __future__ import annotations

import math

import numpy as np

from xegen import ir, sim
from xegen.build.kernel import Kernel
from xegen.build.run import device_buffers, dispatch_ids, output_tensors
from xegen.errors import UnsupportedError
from xegen.lower import CompiledKernel, KernelSpec, compile_kernel
from xegen.pipeline import index_ranges, kernel_spec


def run_conv(kernel: Kernel, compiled: CompiledKernel, tensors, check_hazards=True) -> tuple[dict, sim.RunResult]:
    buffers = device_buffers(kernel, tensors)
    args = [buffers[v.name] for v in kernel.arguments]
    global_size = compiled.global_size(kernel.grid)
    result = sim.run(
        compiled.zebin(), compiled.name, args, global_size, compiled.local_size, check_hazards=check_hazards
    )
    check_static_counts(compiled, kernel.grid, result.executions)
    return output_tensors(kernel, buffers), result


def check_static_counts(compiled: CompiledKernel, grid, executions, scalars=None) -> None:
    """The execution counts from the kernel's loops and branches are the simulator's, or the
    kernel branches on a value it loads from memory (which only a run can count)."""
    try:
        static = compiled.executions(tuple(grid), scalars)
    except UnsupportedError:
        loads = [
            node
            for branch in compiled.control.branches
            for e in (branch.cond, branch.init, branch.bound, *(value for _, value in branch.lets))
            if e is not None
            for node in ir.walk(e)
            if isinstance(node, ir.Load)
        ]
        assert loads, "static counting failed on a kernel whose branches read no memory"
        return
    assert static == tuple(executions), [
        (i, a, b) for i, (a, b) in enumerate(zip(static, executions, strict=False)) if a != b
    ][:8]


def run_conv_ir(kernel: Kernel, body: ir.Stmt, tensors) -> dict:
    """The interpreter on `body` (e.g. the optimized IR), with the same buffers."""
    buffers = device_buffers(kernel, tensors)
    env, groups = dispatch_ids(kernel)
    ir.execute(body, buffers=buffers, env=env, threads=kernel.threads, groups=groups)
    return output_tensors(kernel, buffers)


def optimized_body(kernel: Kernel, hw) -> ir.Stmt:
    from xegen.egraph.kernel import optimize_stmt

    return optimize_stmt(kernel.body, hw, ranges=index_ranges(kernel))


def compile_conv(kernel: Kernel, hw, optimize: bool = False) -> CompiledKernel:
    body = optimized_body(kernel, hw) if optimize else kernel.body
    return compile_kernel(kernel_spec(kernel, body), hw)


# --- hand-written kernels ------------------------------------------------------------------------

THREAD_IDS = ("thread_id0", "thread_id1", "thread_id2")
GROUP_IDS = ("group_id0", "group_id1", "group_id2")
PRELUDE = "".join(f"let {name};\n" for name in THREAD_IDS + GROUP_IDS)


def hand_spec(
    name: str,
    text: str,
    arguments: list[tuple[str, str]],
    thread_group=(1, 1, 1),
    simd: int = 8,
    slm_bytes: int = 0,
    grf_count: int = 128,
) -> KernelSpec:
    """A kernel from IR text; `arguments` are (name, type) in order ("ptr" for buffers)."""
    header = "".join(f"let {n}:{t};\n" for n, t in arguments)
    body = ir.parse_stmt(header + PRELUDE + text)
    args = tuple(ir.Var(n, ir.parse_type(t)) for n, t in arguments)
    return KernelSpec(name, body, args, THREAD_IDS, GROUP_IDS, thread_group, simd, slm_bytes, grf_count)


def thread_env(spec: KernelSpec, grid) -> tuple[dict, np.ndarray, int]:
    per_group = math.prod(spec.thread_group)
    threads = per_group * math.prod(grid)
    index = np.arange(threads)
    group, local = index // per_group, index % per_group
    env = {}
    for names, value, shape in ((spec.thread_ids, local, spec.thread_group), (spec.group_ids, group, grid)):
        below = 1
        for name, size in zip(names, shape, strict=True):
            env[name] = ((value // below) % size).astype(np.int32)
            below *= size
    return env, group, threads


def run_both(
    spec: KernelSpec,
    hw,
    buffers: dict[str, np.ndarray],
    scalars: dict | None = None,
    grid=(1, 1, 1),
    check_hazards=True,
):
    """Compile and run `spec` in the simulator and in the interpreter on copies of `buffers`;
    returns (simulated buffers, interpreted buffers, compiled kernel)."""
    compiled = compile_kernel(spec, hw)
    scalars = scalars or {}
    simulated = {k: v.copy() for k, v in buffers.items()}
    interpreted = {k: v.copy() for k, v in buffers.items()}
    args = [simulated[v.name] if v.type.is_ptr else scalars[v.name] for v in spec.arguments]
    result = sim.run(
        compiled.zebin(), spec.name, args, compiled.global_size(grid), compiled.local_size, check_hazards=check_hazards
    )
    check_static_counts(compiled, grid, result.executions, scalars)
    env, groups, threads = thread_env(spec, grid)
    env.update(scalars)
    ir.execute(spec.body, buffers=interpreted, env=env, threads=threads, groups=groups)
    return simulated, interpreted, compiled


# --- Intel's tools -------------------------------------------------------------------------------


def iga_report(code: bytes, hw) -> str:
    """What Intel's assembler says about a kernel: `iga64 -d -Wall` decodes it, then
    `iga64 -a -Wall` re-assembles the text (disassembly alone does not check regions and
    types); '' when both are silent and the bytes come back the same."""
    import subprocess
    import tempfile
    from pathlib import Path

    from xegen import hw as hwlib
    from xegen.oracles import find_tool

    platform = hwlib.platform(hw)
    iga = find_tool("iga64")
    with tempfile.TemporaryDirectory(prefix="xegen-lower-") as tmp:
        Path(tmp, "k.bin").write_bytes(code)
        decoded = subprocess.run(
            [iga, "-d", "-Wall", f"-p={platform.iga_platform}", "k.bin"],
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=60,
        )
        report = decoded.stderr.strip()
        if decoded.returncode != 0:
            return f"iga64 -d exit status {decoded.returncode}: {report}"
        Path(tmp, "k.asm").write_text(decoded.stdout)
        encoded = subprocess.run(
            [iga, "-a", "-Wall", "-Xforce-no-compact", f"-p={platform.iga_platform}", "k.asm", "-o", "again.bin"],
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=60,
        )
        report = (report + "\n" + encoded.stderr.strip()).strip()
        if encoded.returncode != 0:
            return f"iga64 -a exit status {encoded.returncode}: {report}"
        if not report and Path(tmp, "again.bin").read_bytes() != code:
            report = "iga64 re-assembles the disassembly to different bytes"
    return report
