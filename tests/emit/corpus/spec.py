"""How a corpus kernel is described: its source, where it is built, and how to run and check it.

Each `<kernel>.cl` in this directory has a `<kernel>.py` next to it that builds one
`CorpusKernel`.  The description is enough for a test that never looks at the source:
the argument list in order, the launch geometry, numpy inputs for one run
(`make_case`), and the buffers the kernel must leave behind (`reference`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CORPUS_DIR = Path(__file__).resolve().parent

# ocloc device names the corpus is built for.
DEVICES: tuple[str, ...] = ("tgllp", "dg2", "pvc")

# IGC option that switches dg2 from legacy HDC data messages to LSC (load.ugm/store.ugm).
LSC_OPTIONS = "-igc_opts 'EnableLSC=1'"
# Macro that enables intel_sub_group_*_matrix_mad_* (dpas) in this ocloc's OpenCL front end.
DPAS_OPTIONS = "-Dcl_intel_subgroup_matrix_multiply_accumulate"


@dataclass(frozen=True)
class Argument:
    """One kernel argument, in declaration order."""

    name: str
    kind: str  # "buffer" (global pointer) or "scalar" (by value)
    dtype: str  # numpy dtype of the buffer elements or of the scalar: "float32", "int8", ...
    role: str = "in"  # buffers: "in", "out" or "inout"; scalars are always "in"

    def __post_init__(self) -> None:
        if self.kind not in ("buffer", "scalar"):
            raise ValueError(f"argument {self.name}: kind must be 'buffer' or 'scalar', not {self.kind!r}")
        if self.role not in ("in", "out", "inout"):
            raise ValueError(f"argument {self.name}: role must be 'in', 'out' or 'inout', not {self.role!r}")


@dataclass(frozen=True)
class Launch:
    """An NDRange: global and local sizes in work-items, three dimensions each."""

    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]

    def __post_init__(self) -> None:
        for total, local in zip(self.global_size, self.local_size, strict=True):
            if local <= 0 or total % local:
                raise ValueError(f"global size {self.global_size} is not a multiple of local size {self.local_size}")

    @property
    def group_count(self) -> tuple[int, int, int]:
        return tuple(total // local for total, local in zip(self.global_size, self.local_size, strict=True))  # type: ignore[return-value]


@dataclass(frozen=True)
class Case:
    """One run: the launch and a value for every argument (numpy array or numpy scalar)."""

    launch: Launch
    values: Mapping[str, np.ndarray | np.generic]


@dataclass(frozen=True)
class Variant:
    """One build of a kernel: an ocloc device plus extra options (label names the options)."""

    device: str
    options: str = ""
    label: str = ""
    internal_options: str = ""  # ocloc -internal_options (e.g. -cl-ext=+cl_khr_fp64 with IGC's fp64 emulation)

    @property
    def id(self) -> str:
        return f"{self.device}-{self.label}" if self.label else self.device


@dataclass(frozen=True)
class CorpusKernel:
    name: str  # corpus id: the .cl file's stem
    kernel_name: str  # the OpenCL kernel function (and the zebin's .text.<kernel_name>)
    arguments: tuple[Argument, ...]
    variants: tuple[Variant, ...]
    make_case: Callable[[np.random.Generator], Case]
    reference: Callable[[Mapping[str, np.ndarray | np.generic]], dict[str, np.ndarray]]
    sub_group_size: int | None = None  # required sub-group (SIMD) size, if the source fixes one
    # Mnemonics the built kernel must contain on every variant (e.g. dpas: IGC may silently drop it).
    required_mnemonics: tuple[str, ...] = ()
    # Tolerance for comparing float outputs with `reference` (fused multiply-add, summation order).
    rtol: float = 0.0
    atol: float = 0.0
    notes: str = field(default="", compare=False)

    @property
    def source_path(self) -> Path:
        return CORPUS_DIR / f"{self.name}.cl"

    @property
    def source(self) -> str:
        return self.source_path.read_text()

    def variant(self, variant_id: str) -> Variant:
        for v in self.variants:
            if v.id == variant_id:
                return v
        raise KeyError(f"{self.name} has no variant {variant_id!r}; it has {[v.id for v in self.variants]}")

    def expected(self, case: Case) -> dict[str, np.ndarray]:
        """Every buffer after the run: outputs from `reference`, inputs unchanged."""
        after = {a.name: np.array(case.values[a.name], copy=True) for a in self.arguments if a.kind == "buffer"}
        after.update(self.reference(case.values))
        return after
