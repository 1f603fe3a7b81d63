"""A second back end: xegen's kernels through vISA and IGC's finalizer (docs/visa.md).

    from xegen.visa import compile_visa
    compiled = compile_visa(spec, "xehpg")     # a lower.CompiledKernel, its zebin xegen's own
    print(compiled.visa)                        # the .visaasm text GenX_IR finalized

Passes:
    lower.select_instructions   xegen's instruction selection, on virtual registers
    text.py                     that program as vISA assembly
    oracles.genx_ir_finalize    IGC's finalizer: register allocation, scheduling, SWSB
    finalize.py                 the native code wrapped in xegen's zebin with the same .ze_info
"""

from .finalize import VisaCompiledKernel, compile_visa
from .text import translate

__all__ = ["VisaCompiledKernel", "compile_visa", "translate"]
