"""A process that compiled a kernel (its e-graphs live on xegen's deep thread) and then forks --
`os.fork`, or `subprocess` with a `preexec_fn`, as Ray starts its processes -- prints nothing in
the child: no "EGraph is unsendable" traceback per e-graph (`xegen.egraph.forks`)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from pathlib import Path

from xegen.egraph.forks import keep_through_forks

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import os, subprocess, sys
from xegen.conv import make_problem
from xegen.pipeline import compile_problem
problem = make_problem("mb1ic16ih4oc16oh4kh1")
first = compile_problem(problem, "xelp", choose=False).zebin()
assert subprocess.run(["true"], preexec_fn=lambda: None).returncode == 0
child = os.fork()
if child == 0:
    sys.exit(0)  # the interpreter's whole exit in the child
assert os.waitpid(child, 0)[1] == 0
assert compile_problem(problem, "xelp", choose=False).zebin() == first  # the e-graphs still serve here
print("done")
"""


def test_a_fork_after_a_compile_prints_no_traceback():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "done\n"
    assert run.stderr == ""  # before: 'RuntimeError: egglog::egraph::EGraph is unsendable, ...' per e-graph


def test_what_is_kept_through_forks_is_still_dropped_here():
    class Thing:
        pass

    thing = Thing()
    keep_through_forks(thing)
    alive = weakref.ref(thing)
    del thing
    gc.collect()
    assert alive() is None
