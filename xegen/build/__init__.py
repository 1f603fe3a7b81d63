"""Kernel IR building: a `KernelPlan` (`xegen.plan`) as IR, and the built kernel run in the
interpreter.

    body = build_body(plan)                  the loop nest, messages, multiply and epilogue (builder.py)
    kernel = kernel_record(plan, body)       the IR with its arguments, grid and budgets (kernel.py)
    for result in check_ir(kernel):          the IR run on random inputs against numpy (run.py)
        print(result)

`xegen.pipeline.build_kernel(problem, hw)` plans, builds and schedules in one call.
"""

from .builder import build_body
from .kernel import Kernel, kernel_record
from .run import check_ir, dispatch_ids, run_ir

__all__ = ["Kernel", "build_body", "check_ir", "dispatch_ids", "kernel_record", "run_ir"]
