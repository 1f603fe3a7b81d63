"""Register allocation fall-back: when the allocator finds that a configuration's kernel does not
fit (the plan's GRF estimate is only an estimate), the compiler takes the next configuration, and
the result verifies.  The plan's estimate now covers every resnet-like kernel we found, so the
allocator's refusal of the first configuration is simulated; the rest is real.  A row plan's
fallbacks (smaller blocks, tried before the heuristic gives up on the plan) are shown on a real
refusal."""

from __future__ import annotations

from xegen import pipeline
from xegen.conv import make_problem
from xegen.lower import RegisterAllocationError
from xegen.verify import verify

CONV1_LIKE = "mb1ic3ih32oc64oh16kh7sh2ph3"


def test_a_kernel_that_does_not_fit_falls_back_to_the_next_configuration(monkeypatch):
    problem = make_problem(CONV1_LIKE, "FWD_B", "f16")
    compile_kernel, compiled = pipeline.compile_kernel, []

    def count(spec, hw, trace=None):
        compiled.append(spec)
        return compile_kernel(spec, hw, trace=trace)

    monkeypatch.setattr(pipeline, "compile_kernel", count)
    pipeline.compile_problem(problem, "xehpg", {"grf": 128, "plan": "gemm"})
    refused: list = []

    def refuse_the_first(spec, hw, trace=None):
        # as many kernels as the compilation above compiled: its first configuration fails each time
        if len(refused) < len(compiled):
            refused.append(spec)
            raise RegisterAllocationError("kernel needs 130 GRFs, has 128", 130 * 32, 128 * 32)
        return compile_kernel(spec, hw, trace=trace)

    monkeypatch.setattr(pipeline, "compile_kernel", refuse_the_first)
    compilation = pipeline.compile_problem(problem, "xehpg", {"grf": 128, "plan": "gemm"})
    # each refused kernel is listed with its configuration and why; the kernel compiled is another's
    assert len(compilation.fallbacks) == len(compiled)
    assert all(text.endswith(": kernel needs 130 GRFs, has 128") for text in compilation.fallbacks)
    assert all(not text.startswith(f"{compilation.config}: ") for text in compilation.fallbacks)
    assert compilation.compiled.stats.grfs_used <= 128
    result = verify(compilation, seed=7)
    assert not result.run.hazards and result.ok


def test_a_row_plan_that_runs_out_of_registers_tries_its_smaller_blocks_before_the_gemm_plan():
    """8 groups of 8 bf16 channels on XeLP, the weights in `any`'s default order given explicitly
    (gathered: with `any` the compiler also tries them as blocks, which fit at m_tile=4), the loads
    single-buffered (double-buffered, the three rows are one straight-line block whose schedule
    fits): the depthwise plan's offered blocks (m_tile=4: widened and replicated pixels) fit its
    planner's register count but not the allocator, for real; its fallback (m_tile=2) fits and
    verifies.  (Rows of 4 outputs: on rows of 6 the whole row, m_tile=6, is offered too, and fits.)"""
    problem = make_problem("g8mb1ic64ih4oc64oh4kh3ph1", "FWD_B", "bf16", wtag="adecb")
    compilation = pipeline.compile_problem(problem, "xelp", {"gmem_bufs": 1})
    assert (compilation.config.plan, compilation.config.m_tile) == ("depthwise", 2)
    assert compilation.fallbacks and all(
        text.startswith("plan=depthwise ") and " m_tile=4 " in text and "does not fit 128 GRFs" in text
        for text in compilation.fallbacks
    )
    result = verify(compilation, seed=7)
    assert not result.run.hazards and result.ok
