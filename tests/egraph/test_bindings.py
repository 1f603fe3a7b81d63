"""egglog's bindings loaded without the egglog package's Python layer (xegen/egraph/bindings.py)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from xegen.egraph.bindings import bindings
eb = bindings()
graph = eb.EGraph()
graph.run_program(*graph.parse_program("(datatype E (Num i64)) (let a (Num 1)) (check (= a (Num 1)))"))
print("egglog" in sys.modules, bindings() is eb)
import egglog  # the whole package afterwards: the same extension module, not initialized twice
from egglog.bindings import EGraph
print(EGraph is eb.EGraph, egglog.EggSmolError is eb.EggSmolError)
"""


def test_the_bindings_load_without_the_package_and_the_package_shares_them():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "True", "True", "True"]
