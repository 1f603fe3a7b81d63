"""The convolution kernel as the lowering's platform-neutral `KernelSpec`."""

from __future__ import annotations

from ..lower.kernel import KernelSpec
from .kernel import Kernel


def kernel_spec(kernel: Kernel, body=None) -> KernelSpec:
    """`kernel`'s IR (or `body`, e.g. the optimized IR) with its arguments, ids and shape."""
    return KernelSpec(
        name=kernel.name,
        body=kernel.body if body is None else body,
        arguments=kernel.arguments,
        thread_ids=tuple(v.name for v in kernel.thread_ids),
        group_ids=tuple(v.name for v in kernel.group_ids),
        thread_group=kernel.thread_group,
        simd=kernel.simd,
        slm_bytes=kernel.slm_bytes,
        grf_count=kernel.grf_count,
    )


def index_ranges(kernel: Kernel) -> dict[str, range]:
    """Ranges of the id variables, for `xegen.egraph.kernel.optimize_stmt`."""
    ranges = {v.name: range(0, size) for v, size in zip(kernel.thread_ids, kernel.thread_group)}
    ranges.update({v.name: range(0, size) for v, size in zip(kernel.group_ids, kernel.grid)})
    return ranges
