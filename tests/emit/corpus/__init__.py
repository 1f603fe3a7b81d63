"""The IGC kernel corpus: small OpenCL C kernels that ocloc (IGC) compiles to zebins.

Tests of the decoder, the zebin reader and the simulator share it:

    from tests.emit.corpus import BUILDS  # and the session fixture `corpus` (tests/conftest.py)

    @pytest.mark.parametrize("build", BUILDS, ids=str)
    def test_something(corpus, build):
        zebin = corpus.zebin(build)          # bytes, compiled once per session
        case = build.kernel.make_case(np.random.default_rng(0))
        expected = build.kernel.expected(case)

`KERNELS` lists the kernels; `BUILDS` every (kernel, variant) pair: each kernel on tgllp,
dg2 and pvc, dg2 again with LSC messages for some, and the dpas GEMMs on dg2 (sub-group
8) and pvc (sub-group 16).  Compiling costs ~0.3 s, so builds are cached in memory and in
a directory shared by the pytest-xdist workers of one run.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from xegen import oracles

from . import convolution, dot_int8, elementwise, gemm_dpas_sg8, gemm_dpas_sg16, reduction, transpose
from .spec import (  # noqa: F401  (re-exported for users of the corpus)
    CORPUS_DIR,
    DEVICES,
    DPAS_OPTIONS,
    LSC_OPTIONS,
    Argument,
    Case,
    CorpusKernel,
    Launch,
    Variant,
)

KERNELS: tuple[CorpusKernel, ...] = (
    elementwise.KERNEL,
    reduction.KERNEL,
    convolution.KERNEL,
    transpose.KERNEL,
    dot_int8.KERNEL,
    gemm_dpas_sg8.KERNEL,
    gemm_dpas_sg16.KERNEL,
)


@dataclass(frozen=True)
class Build:
    """One kernel built one way: what a test parametrizes over."""

    kernel: CorpusKernel
    variant: Variant

    def __str__(self) -> str:
        return f"{self.kernel.name}-{self.variant.id}"


BUILDS: tuple[Build, ...] = tuple(Build(k, v) for k in KERNELS for v in k.variants)


def kernel(name: str) -> CorpusKernel:
    for k in KERNELS:
        if k.name == name:
            return k
    raise KeyError(f"no corpus kernel {name!r}; there are {[k.name for k in KERNELS]}")


def _ocloc_identity() -> str:
    """Changes when ocloc is replaced, so a disk cache never serves another compiler's output."""
    path = oracles.find_tool("ocloc")
    stat = os.stat(path)
    return f"{os.path.realpath(path)}:{stat.st_size}:{stat.st_mtime_ns}"


class Corpus:
    """Compiles corpus builds with ocloc, each once: in memory, and on disk when given a directory."""

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = cache_dir
        self._memory: dict[tuple[str, str, str], bytes] = {}

    def zebin(self, build: Build) -> bytes:
        key = (build.kernel.source, build.variant.device, build.variant.options, build.variant.internal_options)
        if key not in self._memory:
            self._memory[key] = self._load_or_compile(*key)
        return self._memory[key]

    def _load_or_compile(self, source: str, device: str, options: str, internal_options: str = "") -> bytes:
        if self.cache_dir is None:
            return oracles.ocloc_compile(source, device, options=options, internal_options=internal_options)
        digest = hashlib.sha256(
            "\0".join((source, device, options, internal_options, _ocloc_identity())).encode()
        ).hexdigest()
        path = self.cache_dir / f"{digest[:32]}.zebin"
        if path.exists():
            return path.read_bytes()
        data = oracles.ocloc_compile(source, device, options=options, internal_options=internal_options)
        # Write then rename: another xdist worker may be compiling the same build.
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.cache_dir, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
        return data
