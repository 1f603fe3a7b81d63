"""Keeping egglog's e-graphs out of a forked child's clean-up.

An egglog e-graph may be dropped only on the thread that made it (xegen makes them on its deep
thread, `xegen.deep`); dropped on another, egglog raises, and Python prints a traceback per
e-graph.  A fork (`os.fork`, or `subprocess` with a `preexec_fn`, as Ray starts its processes)
leaves the child only the forking thread, and Python deletes the other threads' states there,
with the e-graphs they hold: a user who compiled a kernel and then started Ray saw a screen of
tracebacks.  So every object registered here gets a reference of the fork's own while it forks,
and in the child one that is never given back: the child neither uses nor drops them (its
memory is a copy; it ends, or executes another program, with them in place).
"""

from __future__ import annotations

import ctypes
import os
import weakref

_registered: weakref.WeakSet = weakref.WeakSet()
_pinned: list = []


def keep_through_forks(thing: object) -> None:
    """Never drop `thing` in a forked child (it stays droppable in this process)."""
    _registered.add(thing)


def _pin() -> None:
    _pinned[:] = list(_registered)


def _unpin() -> None:
    _pinned.clear()


def _leak() -> None:
    for thing in _pinned:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(thing))
    _pinned.clear()


os.register_at_fork(before=_pin, after_in_parent=_unpin, after_in_child=_leak)
