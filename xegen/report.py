"""What `xegen conv` tells about a compiled kernel: its counts, modeled time and verification.

`summary(...)` gathers the numbers as a JSON-ready dict; `format_summary` prints them for people.
Modeled cycles are `xegen.emit.cost`'s model (`xegen.modeling` feeds it); the fraction of peak
compares the problem's multiply-adds with what the platform's FMA units could do in that time
(`hw.peak_fma_per_clock`), the roofline fraction the problem's own lower bound with the modeled
cycles.
"""

from __future__ import annotations

from .conv.problem import Problem
from .emit.cost import Cycles
from .hw import Platform
from .modeling import fma_kind, multiply_adds
from .pipeline import Compilation
from .verify import Verification


def peak_fraction(problem: Problem, hw: Platform, cycles: Cycles) -> float:
    """The problem's multiply-adds over what the platform's FMA units do in `cycles`."""
    rate = hw.peak_fma_per_clock(fma_kind(problem))
    return multiply_adds(problem) / (cycles.device * rate) if cycles.device else 0.0


def summary(
    compilation: Compilation,
    cycles: Cycles | None = None,
    verification: Verification | None = None,
    counts: str = "static",
) -> dict:
    """The summary; `counts` says where the modeled cycles' execution counts came from ("static":
    the kernel's loops, "simulator": a run)."""
    compiled, stats = compilation.compiled, compilation.compiled.stats
    density = stats.inner_loop_fma / stats.inner_loop_instructions if stats.inner_loop_instructions else None
    result: dict[str, object] = {
        "problem": str(compilation.problem.desc),
        "direction": compilation.problem.direction,
        "dt": str(compilation.problem.types),
        "hw": compiled.hw.name,
        "kernel": compiled.name,
        "config": str(compilation.config),
        # the tags `any` resolved to: how the caller lays out the buffers
        "layouts": {name: compilation.problem.layout_of(name).tag for name in ("src", "wei", "dst")},
        "fallbacks": list(compilation.fallbacks),
        **stats.as_dict(),
        "inner_loop_math_density": None if density is None else round(density, 4),
        "grf_count": compilation.kernel.grf_count,
        "code_bytes": len(compiled.code),
        "multiply_adds": multiply_adds(compilation.problem),
        "compile_seconds": {name: round(s, 4) for name, s in compilation.seconds.items()},
    }
    if cycles is not None:
        result["modeled"] = {
            **cycles.as_dict(),
            "counts": counts,
            "peak_fraction": round(peak_fraction(compilation.problem, compiled.hw, cycles), 4),
        }
    if verification is not None:
        result["verify"] = {
            "ok": verification.ok,
            "outputs": [
                {
                    "name": c.name,
                    "max_error": c.max_error,
                    "worst_ratio": c.worst_ratio,
                    "mismatches": c.mismatches,
                    "elements": c.elements,
                }
                for c in verification.comparisons
            ],
            "hazards": [str(h) for h in verification.run.hazards],
            "simulated_instructions": verification.run.instructions,
        }
    return result


def format_summary(s: dict) -> str:
    inner = (
        f"inner loop {s['inner_loop_instructions']} ({s['inner_loop_sends']} sends, {s['inner_loop_fma']} FMA, "
        f"math density {s['inner_loop_math_density']:.2f})"
        if s["inner_loop_instructions"]
        else "no loop"
    )
    lines = [
        "layouts: " + ", ".join(f"{name} {tag}" for name, tag in s["layouts"].items()),
        f"native: {s['instructions']} instructions, {inner}; {s['sends']} sends, {s['fma_instructions']} FMA "
        f"instructions, {s['syncs']} sync{'' if s['syncs'] == 1 else 's'}; {s['grfs_used']} of {s['grf_count']} GRFs, "
        f"SLM {s['slm_bytes']} bytes, "
        f"{s['code_bytes']} bytes of code",
    ]
    for fallback in s["fallbacks"]:
        lines.append(f"fell back from {fallback}")
    if "modeled" in s:
        m = s["modeled"]
        lines.append(
            f"modeled: {m['device_cycles']:.0f} device cycles ({m['bound']} bound), "
            f"{100 * m['roofline_fraction']:.1f}% of the roofline ({m['roofline_cycles']:.0f} cycles, "
            f"{m['roofline_bound']} bound), {100 * m['peak_fraction']:.1f}% of peak"
        )
        terms = ", ".join(f"{name} {value:.0f}" for name, value in m["terms"].items())
        moved, occupancy = m["bytes"], m["occupancy"]
        waves = occupancy["waves"]
        lines.append(
            f"modeled: {terms}; bytes compulsory {moved['compulsory']}, L3 {moved['l3']}, DRAM "
            f"{moved['dram']}; {occupancy['wave_threads_per_eu']} of {occupancy['threads_per_eu']} "
            f"threads per EU, {occupancy['groups_per_subslice']} groups per subslice "
            f"({occupancy['limit']} limit), {waves} wave{'' if waves == 1 else 's'}"
        )
    if "verify" in s:
        v = s["verify"]
        for out in v["outputs"]:
            status = "ok" if not out["mismatches"] else f"MISMATCH in {out['mismatches']} of {out['elements']}"
            lines.append(
                f"verify: {out['name']}: max error {out['max_error']:.3g} "
                f"({out['worst_ratio']:.3g} of tolerance) {status}"
            )
        if v.get("static_counts_match") is False:
            lines.append("verify: the static execution counts differ from the simulator's")
        hazards = v["hazards"]
        lines.append(f"verify: hazards: {len(hazards)}" + "".join(f"\n  {h}" for h in hazards[:5]))
    return "\n".join(lines)
