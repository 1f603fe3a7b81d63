"""Check a kernel's outputs against the numpy reference: random inputs, tolerances, comparisons.

Tolerances: int8 problems must match exactly.  Floating-point outputs may differ from the exact
result by at most

    (2 * K * u_f32 + 2 * u_out) * scale

where K is the number of products summed into an output (`Problem.reduction_size`), u_f32 =
2^-24 is the unit roundoff of the f32 accumulator, u_out that of the output type (f32 2^-24, f16
2^-11, bf16 2^-8) and `scale` is the same convolution of the absolute values of the inputs (plus
|bias|): the classic bound for a K-term f32 sum, then one rounding to the output type, with a
factor of two of margin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problem import Problem
from .reference import convert, exact_outputs, expected_outputs

UNIT_ROUNDOFF = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}


def random_inputs(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logical input tensors: normal floats rounded to their type; small integers for int8
    (so results exercise saturation without always saturating)."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {}
    for name in problem.inputs:
        shape = problem.dims_of(name)
        kind = problem.type_of(name).kind
        if kind == "u8":
            tensors[name] = rng.integers(0, 5, shape).astype(np.uint8)
        elif kind == "s8":
            tensors[name] = rng.integers(-3, 4, shape).astype(np.int8)
        else:
            values = rng.standard_normal(shape).astype(np.float32)
            if name == "bias" and problem.types.is_int8:
                values *= 8
            tensors[name] = convert(values, kind)
    return tensors


@dataclass(frozen=True)
class Comparison:
    name: str
    max_error: float  # largest |got - expected|
    worst_ratio: float  # largest error / tolerance (exact checks: error itself)
    mismatches: int
    elements: int

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def __str__(self) -> str:
        status = "ok" if self.ok else f"MISMATCH in {self.mismatches} of {self.elements} elements"
        return f"{self.name}: max error {self.max_error:.3g} ({self.worst_ratio:.3g} of tolerance) {status}"


def tolerances(problem: Problem, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray | None]:
    """Per-element tolerance of each output (None: must be exact)."""
    if problem.types.is_int8:
        return {name: None for name in problem.outputs}
    magnitude = {name: np.abs(value.astype(np.float64)) for name, value in tensors.items()}
    scale = exact_outputs(problem, magnitude)
    if "bias" in magnitude and problem.kind == "fwd":
        bias = magnitude["bias"].reshape((1, -1) + (1,) * (scale["dst"].ndim - 2))
        scale["dst"] = scale["dst"] + bias
    k = problem.reduction_size
    result = {}
    for name in problem.outputs:
        kind = problem.type_of(name).kind
        bound = 2 * k * UNIT_ROUNDOFF["f32"] + 2 * UNIT_ROUNDOFF[kind]
        result[name] = bound * scale[name] + 1e-30
    return result


def compare(problem: Problem, got: dict[str, np.ndarray], tensors: dict[str, np.ndarray]) -> list[Comparison]:
    expected = expected_outputs(problem, tensors)
    bounds = tolerances(problem, tensors)
    results = []
    for name in problem.outputs:
        g = got[name].astype(np.float64)
        e = expected[name].astype(np.float64)
        error = np.abs(g - e)
        error = np.where(np.isnan(g) != np.isnan(e), np.inf, np.nan_to_num(error, nan=0.0))
        bound = bounds[name]
        if bound is None:
            bad = error != 0
            ratio = float(error.max(initial=0.0))
        else:
            bad = error > bound
            ratio = float((error / bound).max(initial=0.0))
        results.append(Comparison(name, float(error.max(initial=0.0)), ratio, int(bad.sum()), int(error.size)))
    return results


def compare_padding(padding: dict[str, np.ndarray]) -> list[Comparison]:
    """The padding of each blocked output against zero, exactly."""
    results = []
    for name, values in padding.items():
        error = np.abs(np.nan_to_num(values.astype(np.float64), nan=np.inf))
        worst = float(error.max(initial=0.0))
        results.append(Comparison(f"{name} padding", worst, worst, int(np.count_nonzero(error)), int(error.size)))
    return results
