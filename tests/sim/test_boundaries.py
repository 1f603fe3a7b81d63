"""The simulator reads instruction bytes through the decoder only: importing it, and running a
kernel with it, never loads xegen's encoder or assembler (docs/sim.md, docs/design.md)."""

from __future__ import annotations

import subprocess
import sys

from tests.emit.corpus import BUILDS

CHECK = """
import sys
import numpy as np
import xegen.sim
loaded = [m for m in ("xegen.emit.encoder", "xegen.emit.asm_parser") if m in sys.modules]
assert not loaded, f"import xegen.sim loaded {loaded}"
x = np.arange(64, dtype=np.float32)
y = np.ones(64, np.float32)
xegen.sim.run(open(sys.argv[1], "rb").read(), "saxpy", [y, x, 2.0, 64], 64, 16)
assert (y == 2 * x + 1).all()
loaded = [m for m in ("xegen.emit.encoder", "xegen.emit.asm_parser") if m in sys.modules]
assert not loaded, f"a run loaded {loaded}"
print("clean")
"""


def test_the_simulator_never_loads_the_encoder(corpus, tmp_path):
    build = next(b for b in BUILDS if str(b) == "elementwise-dg2")
    path = tmp_path / "saxpy.zebin"
    path.write_bytes(corpus.zebin(build))
    result = subprocess.run([sys.executable, "-c", CHECK, str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "clean", result.stderr
