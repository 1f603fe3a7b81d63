"""Check a kernel's outputs against the numpy reference: random inputs, tolerances, comparisons.

Tolerances: int8 problems must match exactly.  Floating-point outputs may differ from the exact
result by at most

    (2 * K * u_f32 + 2 * u_out) * scale

where K is the number of products summed into an output (`Problem.reduction_size`), u_f32 =
2^-24 is the unit roundoff of the f32 accumulator, u_out that of the output type (f32 2^-24, f16
2^-11, bf16 2^-8) and `scale` is the same convolution of the absolute values of the inputs (plus
|bias|): the classic bound for a K-term f32 sum, then one rounding to the output type, with a
factor of two of margin.

With post-ops the bound before them (2 K u_f32 scale; int8: 2 u_f32 scale, for the one conversion
of the exact sum to f32 and the bias) is carried through the chain: each post-op f turns a value
v known to within b into f(v) known to within max |f(v +- b) - f(v)| (exact for monotone pieces,
and it catches the jumps of round and the comparisons), plus its own f32 arithmetic,
`OP_ROUNDINGS` roundings of the magnitudes it handles, and for the math unit's algorithms the
accuracy in `MATH_ACCURACY`.  The output's rounding then adds 2 u_out |value|; an integer
output may be any value the rounding and saturation give within the final bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import postops
from .postops import Eltwise, Sum
from .problem import Problem
from .reference import convert, exact_outputs, expected_outputs, post_processed, wei_scales

#: f32 roundings a post-op's own arithmetic may add, each at most u_f32 of the magnitudes involved
OP_ROUNDINGS = 8
#: the eltwise algorithms computed through the math unit may be off by this many u_f32 times
#: (1 + |v|)(1 + |f(v)|): exp2 and log2 are good to a few ulp, but exp(v) = 2^(v log2 e) inherits
#: the rounding of its argument (relative u |v|), and tanh, elu, gelu lose small values to
#: cancellation (absolute u); the erf of gelu_erf is Abramowitz and Stegun's 7.1.26, good to
#: 1.5e-7 = 2.5 u absolute
MATH_ACCURACY = {alg: 16.0 for alg, (_, math_unit) in postops.ELTWISE_ALGORITHMS.items() if math_unit}

UNIT_ROUNDOFF = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}


def random_inputs(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logical input tensors: normal floats rounded to their type; small integers for int8
    (so results exercise saturation without always saturating), src within 3 of its zero point."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {}
    for name in problem.inputs:
        shape = problem.dims_of(name)
        if name.startswith("prelu"):  # slopes, some negative as some networks learn them
            tensors[name] = (rng.standard_normal(shape) * 0.5).astype(np.float32)
            continue
        if name == "wei_scales":  # positive, around the 0.25 that keeps int8 results in range
            tensors[name] = rng.uniform(0.05, 0.5, shape).astype(np.float32)
            continue
        if name == "dst_zero_points":
            tensors[name] = rng.integers(-8, 9, shape).astype(np.int32)
            continue
        kind = problem.type_of(name).kind
        zero_point = problem.quantization.src_zero_point if name == "src" else 0
        if zero_point:  # around the zero point, within the type
            low, high = (0, 255) if kind == "u8" else (-128, 127)
            values = np.clip(zero_point + rng.integers(-3, 4, shape), low, high)
            tensors[name] = values.astype(np.uint8 if kind == "u8" else np.int8)
        elif kind == "u8":
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
    if problem.types.is_int8 and (not problem.post_ops or problem.relu) and not problem.quantization:
        return {name: None for name in problem.outputs}
    magnitude = {name: np.abs(value.astype(np.float64)) for name, value in tensors.items()}
    if problem.kind == "fwd":  # the products are of (src - zero point) and wei
        magnitude["src"] = np.abs(tensors["src"].astype(np.float64) - problem.quantization.src_zero_point)
    scale = exact_outputs(problem, magnitude, src_zero_point=False)
    if "bias" in magnitude and problem.kind == "fwd":
        bias = magnitude["bias"].reshape((1, -1) + (1,) * (scale["dst"].ndim - 2))
        scale["dst"] = scale["dst"] + bias
    k = problem.reduction_size
    result: dict[str, np.ndarray | None] = {}
    for name in problem.outputs:
        kind = problem.type_of(name).kind
        if problem.kind == "fwd" and (problem.post_ops or problem.quantization):
            result[name] = _post_op_tolerance(problem, tensors, scale[name])
            continue
        bound = 2 * k * UNIT_ROUNDOFF["f32"] + 2 * UNIT_ROUNDOFF[kind]
        result[name] = bound * scale[name] + 1e-30
    return result


def _post_op_tolerance(problem: Problem, tensors: dict[str, np.ndarray], scale: np.ndarray) -> np.ndarray:
    """The forward tolerance with post-ops (module docstring)."""
    u = UNIT_ROUNDOFF["f32"]
    terms = 1 if problem.types.is_int8 else problem.reduction_size
    q = problem.quantization
    # the scales multiply the sum and the bias does not: scale their share of `scale` (which
    # holds |conv| + |bias|) by the largest scale, and allow two more roundings for the products
    multiplier = abs(q.src_scale) * float(np.max(np.abs(wei_scales(problem, tensors)), initial=1.0))
    bound = (2 * terms + 4) * u * scale * max(multiplier, 1.0)

    def step(op, before, after, operand):
        nonlocal bound

        def at(x):
            return postops.apply(op, x, operand)

        with np.errstate(invalid="ignore", over="ignore"):
            spread = np.maximum(np.abs(at(before + bound) - after), np.abs(at(before - bound) - after))
        involved = np.abs(before) + np.abs(after)
        if isinstance(op, Sum):
            involved = involved + np.abs(op.scale * (operand.astype(np.float64) - op.zero_point))
        elif operand is not None:
            involved = involved + np.abs(operand.astype(np.float64) * before)
        own = OP_ROUNDINGS * u * involved
        if isinstance(op, Eltwise) and op.alg in MATH_ACCURACY:
            own = own + MATH_ACCURACY[op.alg] * u * (1 + np.abs(before)) * (1 + np.abs(after))
        bound = np.nan_to_num(spread, nan=np.inf) + own

    acc = exact_outputs(problem, tensors)["dst"]
    value = post_processed(problem, tensors, acc, step)
    # dividing by the dst scale (a multiplication by its rounded reciprocal) and adding the zero
    # point: three more roundings
    bound = bound / abs(q.dst_scale) + 3 * u * (np.abs(value) + bound / abs(q.dst_scale))
    kind = problem.types.dst
    if kind in UNIT_ROUNDOFF:
        tiny = float(np.finfo(np.float16).tiny) if kind == "f16" else float(np.finfo(np.float32).tiny)
        # an infinite or NaN bound: the value may lie either side of a pole or a domain's edge,
        # and the element is not checked; a NaN value with a finite bound must come out NaN
        bound = np.nan_to_num(bound, nan=np.inf)
        return bound + 2 * UNIT_ROUNDOFF[kind] * np.abs(np.nan_to_num(value)) + UNIT_ROUNDOFF[kind] * tiny + 1e-30
    # integers: any result of rounding and saturating a value within the bound
    low, high, mid = (convert(v, kind).astype(np.float64) for v in (value - bound, value + bound, value))
    return np.maximum(high - mid, mid - low) + 1e-30


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
            bad = error > bound  # an infinite bound (the value may be either side of a pole) checks nothing
            with np.errstate(invalid="ignore"):
                ratio = float(np.nan_to_num(error / bound, nan=0.0).max(initial=0.0))
        checked = error if bound is None else error[np.isfinite(bound)]
        results.append(Comparison(name, float(checked.max(initial=0.0)), ratio, int(bad.sum()), int(error.size)))
    return results


def compare_padding(padding: dict[str, np.ndarray]) -> list[Comparison]:
    """The padding of each blocked output against zero, exactly."""
    results = []
    for name, values in padding.items():
        error = np.abs(np.nan_to_num(values.astype(np.float64), nan=np.inf))
        worst = float(error.max(initial=0.0))
        results.append(Comparison(f"{name} padding", worst, worst, int(np.count_nonzero(error)), int(error.size)))
    return results
