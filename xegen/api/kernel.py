"""Compiling a convolution from Python, and everything one can do with the kernel afterwards.

    problem = conv_problem("mb1ic16ih8oc32oh8kh3ph1", dt="f16")
    kernel = compile(problem, hw="xehpg")
    kernel.summary.instructions, kernel.asm, kernel.ir_after("optimize"), kernel.arguments
    outputs = kernel.run(src=..., wei=..., bias=...)      # in the simulator
    kernel.verify(seed=0).ok                              # random inputs against numpy
    kernel.save("conv.zebin")

`Kernel` wraps the pipeline's `Compilation` (still at `kernel.compilation`); what it reports is
what `xegen conv` reports: the summary is the `--json` document.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .. import hw as hwlib
from .. import runtime
from ..build.run import check_ir, compare_buffers, device_buffers, output_tensors
from ..conv.check import Comparison, random_inputs
from ..conv.problem import Problem, make_problem
from ..emit.asm_printer import disassemble
from ..errors import Error, UnsupportedError
from ..modeling import modeled_cycles
from ..pipeline import Compilation, check_pass_names, compile_problem
from ..plan.config import parse_overrides
from ..report import format_summary, summary
from ..tune.database import Database, default_path
from ..tune.tuned import Tuned, compile_tuned
from ..verify import Verification, first_group_executions, run_in_simulator, verify
from .html import table


def conv_problem(
    desc: str,
    dir: str = "FWD_B",
    dt: str = "f32",
    tags: Mapping[str, str] | None = None,
    post_ops: str = "",
    mb: int | None = None,
) -> Problem:
    """A convolution problem from a benchdnn descriptor (e.g. "mb1ic64ih56oc64oh56kh3ph1").

    `dir` is the direction (FWD_B, FWD_D, FWD_I, BWD_D, BWD_W, BWD_WB), `dt` the data types
    ("f32", "bf16", "u8:s8:f32", ...), `tags` the layouts by tensor ({"src": "nhwc", "wei":
    "hwio", "dst": "nhwc"}; missing ones are "any"), `post_ops` a post-op ("relu"), `mb` a
    minibatch replacing the descriptor's."""
    tags = dict(tags or {})
    unknown = sorted(set(tags) - {"src", "wei", "dst"})
    if unknown:
        raise Error(f"tags: '{unknown[0]}' is not a tensor (src, wei, dst)")
    return make_problem(
        desc, dir, dt, post_ops, tags.get("src", "any"), tags.get("wei", "any"), tags.get("dst", "any"), mb
    )


class Summary:
    """The `xegen conv --json` summary with its keys as attributes (nested ones too):
    `kernel.summary.modeled.device_cycles`.  `to_dict()` gives the JSON document."""

    def __init__(self, data: Mapping[str, Any]):
        self._data = dict(data)

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._data[name]
        except KeyError:
            raise AttributeError(f"the summary has no '{name}' (it has: {', '.join(self._data)})") from None
        return Summary(value) if isinstance(value, Mapping) else value

    def __getitem__(self, name: str) -> Any:
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def to_dict(self) -> dict[str, Any]:
        return dict(self._data)

    def __repr__(self) -> str:
        return f"Summary({self._data!r})"


@dataclass(frozen=True)
class Argument:
    """One kernel argument, in the order the kernel takes them: a buffer of `bytes` bytes holding
    tensor `name` ("src", "wei", "dst", "bias") of type `type` in `layout` (oneDNN's positional
    tag, e.g. "acdb" for nhwc) over the logical `dims`.  `role` is "input", "output", "scratch"
    (f32 partial sums of groups sharing 16-bit outputs, which must hold zeros at launch:
    `xegen.plan.scratch`) or "unused" (a buffer the direction does not touch: the kernel still
    takes one); `payload_offset` and
    `payload_size` say where its address lands in the thread payload."""

    name: str
    role: str
    type: str
    layout: str
    dims: tuple[int, ...]
    bytes: int
    payload_offset: int
    payload_size: int


@dataclass(frozen=True)
class Graph:
    """One drawing of the K loop's dataflow graph (`Kernel.graphs`): its DOT file, and its SVG
    when Graphviz was there to render it."""

    dot: Path
    svg: Path | None

    def _repr_svg_(self) -> str | None:
        return self.svg.read_text() if self.svg is not None else None


@dataclass(frozen=True)
class DeviceRun:
    """A run on an Intel GPU against numpy (`Kernel.verify_on_device`).  `executed` is False when
    the runtime has no hardware behind it (NEO's debug keys, `xegen.runtime.without_hardware`):
    the launch was enqueued, nothing ran, and the outputs were not compared."""

    device: str
    executed: bool
    comparisons: tuple[Comparison, ...] = ()

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "executed": self.executed,
            "ok": self.ok,
            "outputs": [
                {"name": c.name, "max_error": c.max_error, "mismatches": c.mismatches, "elements": c.elements}
                for c in self.comparisons
            ],
        }

    def describe(self) -> str:
        if not self.executed:
            return (
                f"device: {self.device}: launch enqueued; the runtime has no hardware behind it, so nothing "
                "executed and the outputs were not compared"
            )
        return "\n".join(
            f"device: {self.device}: {c.name}: max error {c.max_error:.3g} "
            + ("ok" if c.ok else f"MISMATCH in {c.mismatches} of {c.elements}")
            for c in self.comparisons
        )


class Kernel:
    """A compiled convolution kernel (make one with `xegen.compile`)."""

    def __init__(
        self, compilation: Compilation, optimize: bool = True, tuned: dict | None = None, backend: str = "native"
    ):
        self.compilation = compilation
        self._optimize = optimize
        self.backend = backend
        """The code generator after instruction selection: "native" or "visa" (docs/visa.md)."""
        self.tuned = tuned
        """Where the configuration came from when a tuning database had one (the summary's "tuned"
        entry of `xegen conv --json`), else None."""
        self._passes: dict[str, str] | None = None

    # What it is ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.compilation.compiled.name

    @property
    def problem(self) -> Problem:
        return self.compilation.problem

    @property
    def hw(self) -> hwlib.Platform:
        return self.compilation.compiled.hw

    @property
    def config(self) -> str:
        return str(self.compilation.config)

    @property
    def grid(self) -> tuple[int, int, int]:
        """Thread groups along dimensions 0, 1, 2."""
        return self.compilation.kernel.grid

    @property
    def local_size(self) -> tuple[int, int, int]:
        """Work-items of one group (threads x SIMD width along dimension 0), as OpenCL counts them."""
        return self.compilation.compiled.local_size

    @property
    def global_size(self) -> tuple[int, int, int]:
        """Work-items of the whole launch."""
        return self.compilation.compiled.global_size(self.grid)

    @cached_property
    def zebin(self) -> bytes:
        return self.compilation.zebin()

    @cached_property
    def asm(self) -> str:
        """The disassembly, each instruction with its byte address."""
        compiled = self.compilation.compiled
        return disassemble(compiled.code, compiled.hw, pcs=True)

    @cached_property
    def summary(self) -> Summary:
        """Counts, GRFs, modeled cycles: what `xegen conv --json` prints (without a verification)."""
        compilation = self.compilation
        try:
            executions, counts = compilation.compiled.executions(compilation.kernel.grid), "static"
        except UnsupportedError:  # a branch on loaded data: only a run counts it
            executions, counts = first_group_executions(compilation), "simulator"
        data = summary(compilation, modeled_cycles(compilation, executions), None, counts)
        if self.tuned is not None:
            data["tuned"] = self.tuned
        if self.backend != "native":
            data["backend"] = self.backend
        return Summary(data)

    @cached_property
    def arguments(self) -> tuple[Argument, ...]:
        """The kernel's arguments in order: which tensor, its type, layout and bytes (`Argument`)."""
        problem, kernel = self.problem, self.compilation.kernel
        buffers = device_buffers(kernel, {name: np.zeros(problem.dims_of(name)) for name in problem.inputs})
        slots = {a.arg_index: a for a in self.compilation.compiled.zebin_kernel.payload_arguments}
        result = []
        for index, var in enumerate(kernel.arguments):
            name = var.name
            role = "input" if name in problem.inputs else "output" if name in problem.outputs else "unused"
            if name == "scratch":
                role = "scratch"
            used = role in ("input", "output")
            result.append(
                Argument(
                    name,
                    role,
                    str(problem.type_of(name)) if used else "",
                    problem.layout_of(name).tag if used else "",
                    tuple(problem.dims_of(name)) if used else (),
                    buffers[name].nbytes,
                    slots[index].offset,
                    slots[index].size,
                )
            )
        return tuple(result)

    def ir_after(self, pass_name: str) -> str:
        """The kernel after pass `pass_name` (build, schedule, optimize, isel, then regalloc and swsb,
        or with backend="visa" visa and finalize), as
        `xegen conv --print-after` prints it.  The first call compiles the problem again with
        every pass's output kept (the same bytes come out: compilation is deterministic)."""
        check_pass_names([pass_name])
        if self._passes is None:
            passes: dict[str, str] = {}
            again = compile_problem(
                self.problem,
                self.hw,
                _config_overrides(self.compilation),
                optimize=self._optimize,
                backend=self.backend,
                show=lambda name, text: passes.__setitem__(name, text),
            )
            if again.zebin() != self.zebin:
                raise Error(f"{self.name}: compiling again gave other bytes (compilation must be deterministic)")
            self._passes = passes
        if pass_name not in self._passes:
            raise Error(f"pass '{pass_name}' did not run for this kernel (it ran {', '.join(self._passes)})")
        return self._passes[pass_name]

    def graphs(self, directory: str | Path) -> list[Graph]:
        """The K loop's dataflow graph before and after each scheduling transform, written to
        `directory` as DOT (and SVG where Graphviz's `dot` is installed, which a notebook then
        shows as a picture), as `xegen conv --dump-graph` writes them."""
        again = compile_problem(
            self.problem,
            self.hw,
            _config_overrides(self.compilation),
            optimize=self._optimize,
            backend=self.backend,
            dump_graph=directory,
        )
        drawn = sorted(Path(directory).glob(f"{again.compiled.name}-*.dot"))
        return [Graph(dot, dot.with_suffix(".svg") if dot.with_suffix(".svg").is_file() else None) for dot in drawn]

    def check_ir(self, seed: int = 0) -> list[Comparison]:
        """Run the kernel's optimized IR (the input of instruction selection) in xegen's
        interpreter on random inputs and compare every output with numpy, as
        `xegen conv --check-ir` does for the scheduled IR."""
        return check_ir(self.compilation.kernel, seed)

    def save(self, path: str | Path) -> Path:
        """Write the zebin to `path`."""
        path = Path(path)
        path.write_bytes(self.zebin)
        return path

    # Running it ---------------------------------------------------------------------------

    def _buffers(self, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        problem = self.problem
        unknown = sorted(set(tensors) - set(problem.inputs))
        if unknown:
            raise Error(f"{self.name} reads {', '.join(problem.inputs)}; '{unknown[0]}' is not one of them")
        return device_buffers(self.compilation.kernel, tensors)

    def run(self, check_hazards: bool = True, **tensors: np.ndarray) -> dict[str, np.ndarray]:
        """Run the kernel in xegen's simulator on the logical input tensors (oneDNN's dimension
        order, e.g. src as N x C x H x W), e.g. `kernel.run(src=x, wei=w, bias=b)`; returns the
        outputs the same way.  SWSB hazards raise `xegen.sim.HazardError` unless
        `check_hazards=False`."""
        self._buffers(tensors)  # names and shapes checked before a run that may take a while
        buffers, _ = run_in_simulator(self.compilation, tensors, check_hazards=check_hazards)
        return output_tensors(self.compilation.kernel, buffers)

    def verify(self, seed: int = 0) -> Verification:
        """Run the whole grid in the simulator (hazard checks on) on random inputs and compare
        every output with numpy; `.ok` says whether all matched."""
        return verify(self.compilation, seed)

    @property
    def launch(self) -> runtime.Launch:
        """What Intel's runtime needs to launch the kernel (`xegen.runtime`)."""
        return runtime.Launch(
            self.zebin, self.name, tuple(a.bytes for a in self.arguments), self.global_size, self.local_size
        )

    def run_on_device(self, device: runtime.Device | None = None, **tensors: np.ndarray) -> dict[str, np.ndarray]:
        """Run the kernel on an Intel GPU through the OpenCL runtime (default: the first one);
        like `run`, logical tensors in and out."""
        buffers = self._buffers(tensors)
        names = [var.name for var in self.compilation.kernel.arguments]
        after = runtime.run(self.launch, [buffers[name] for name in names], device)
        return output_tensors(self.compilation.kernel, dict(zip(names, after, strict=True)))

    def verify_on_device(self, seed: int = 0, device: runtime.Device | None = None) -> DeviceRun:
        """`verify` on an Intel GPU: random inputs, the kernel through the OpenCL runtime, every
        output (and the padding of blocked outputs) against numpy."""
        kernel = self.compilation.kernel
        tensors = random_inputs(self.problem, seed)
        buffers = device_buffers(kernel, tensors)
        names = [var.name for var in kernel.arguments]
        target = device or runtime.first_intel_gpu()
        after = dict(zip(names, runtime.run(self.launch, [buffers[name] for name in names], target), strict=True))
        if runtime.without_hardware():
            return DeviceRun(target.name, executed=False)
        return DeviceRun(target.name, True, tuple(compare_buffers(kernel, after, tensors)))

    # Display --------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"<xegen.Kernel {self.name} on {self.hw.display_name}: {self.problem}>"

    def __str__(self) -> str:
        return (
            f"{self.problem}\nconfig: {self.config}\n{self.compilation.kernel.summary()}\n"
            f"{format_summary(self.summary.to_dict())}"
        )

    def _repr_html_(self) -> str:
        s = self.summary
        rows: list[tuple[str, object]] = [
            ("problem", s.problem),
            ("platform", self.hw.display_name),
            ("config", s.config),
            (
                "grid",
                " x ".join(map(str, self.grid)) + f" groups of {' x '.join(map(str, self.local_size))} work-items",
            ),
            ("instructions", f"{s.instructions} ({s.sends} sends, {s.fma_instructions} FMA)"),
            ("inner loop", f"{s.inner_loop_instructions} instructions, math density {s.inner_loop_math_density}"),
            ("registers", f"{s.grfs_used} of {s.grf_count} GRFs, SLM {s.slm_bytes} bytes"),
            ("arguments", ", ".join(f"{a.name}: {a.type or '-'} {a.layout}" for a in self.arguments)),
        ]
        m = s.modeled
        rows.append(
            (
                "modeled",
                f"{m.device_cycles:.0f} cycles ({m.bound} bound), {100 * m.roofline_fraction:.1f}% "
                f"of the roofline, {100 * m.peak_fraction:.1f}% of peak",
            )
        )
        return table(f"kernel {self.name}", rows)


def _config_overrides(compilation: Compilation) -> dict[str, object]:
    """Every key of the configuration that was compiled, to compile the same kernel again."""
    return parse_overrides([str(compilation.config)])


def compile(
    problem: Problem | str,
    hw: str | hwlib.Platform = "xehpg",
    config: Mapping[str, object] | str | None = None,
    optimize: bool = True,
    tuned: bool | str | Path = True,
    backend: str = "native",
    lead: bool = False,
) -> Kernel:
    """Compile `problem` (or a descriptor, with the default direction and types) for `hw`
    (xelp, xehpg, xehpc or an alias such as tgllp, dg2, pvc).  `config` fixes keys of the
    heuristic's configuration: {"m_tile": 16} or "m_tile=16,k_block=32" (the keys of
    `xegen conv --config`).  `optimize=False` skips the e-graph optimizer.

    `tuned` says where a tuned configuration may come from, as for `xegen conv`: True (the
    default) the tuning database `xegen tune` writes ($XEGEN_TUNING_DB, else
    ~/.cache/xegen/tuning.sqlite) when it exists and has a row for this problem and platform; a
    path, that database (which must exist); False, none — the heuristic's configuration.  A
    `config` replaces the tuned configuration, as `--config` does.  `kernel.tuned` says what
    was used.  `backend="visa"` finalizes xegen's instruction selection with IGC's GenX_IR
    instead of xegen's register allocation and scheduling (docs/visa.md).  `lead=True` compiles
    the heuristic's first configuration alone, none of the kernels the model would choose among
    (`xegen conv --lead`): faster to compile, maybe slower to run."""
    if isinstance(problem, str):
        problem = conv_problem(problem)
    if isinstance(config, str):
        overrides = parse_overrides([config])
    elif config is None:
        overrides = {}
    else:
        overrides = parse_overrides([f"{key}={value}" for key, value in config.items()])
    found = None if config is not None else _tuned_entry(problem, hw, tuned)
    compilation, about = compile_tuned(
        problem, hw, overrides, found, optimize=optimize, backend=backend, choose=not lead
    )
    return Kernel(compilation, optimize, about, backend)


def _tuned_entry(problem: Problem, hw: str | hwlib.Platform, tuned: bool | str | Path) -> Tuned | None:
    """The tuning database's row for `problem` on `hw`, if `tuned` allows one and there is one."""
    if tuned is False:
        return None
    if tuned is True:
        database = Database.existing(default_path())
    else:
        database = Database.existing(tuned)
        if database is None:
            raise Error(f"tuned={str(tuned)!r}: no such tuning database")
    if database is None:
        return None
    with database:
        return Tuned.find(database, problem, hwlib.platform(hw))
