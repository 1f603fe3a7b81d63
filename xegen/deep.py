"""Running deep recursions within a stated bound.

Much of xegen walks trees by recursion (IR mutators, the interpreter, rule terms): a chain of
lets a few hundred deep, or an expression of a thousand nested terms, goes past Python's default
recursion limit of 1,000 frames.  `deeply(function, ...)` runs `function` on a thread whose C
stack is large enough for `MAX_DEPTH` Python frames, with the recursion limit raised to match
while it runs, so such inputs work; an input deeper still gets a `NestingError` (one clear line
from the CLI) instead of a `RecursionError` traceback or a crash of the interpreter.

The deep thread is one, made once and kept: an egglog e-graph may be used only on the thread
that made it, and the optimizer keeps its loaded rules from one call to the next.  Calls from
several threads take turns; a call from inside a deep call runs directly (but one from a thread
that a deep call starts and waits for would wait for ever: xegen starts none).
"""

from __future__ import annotations

import atexit
import queue
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from .errors import Error

#: Python frames a deep call may use.  A frame that goes through C (a dataclass __init__,
#: getattr, a generator) costs up to a few hundred bytes of C stack in CPython 3.11-3.13.
MAX_DEPTH = 50_000
#: the C stack of the deep thread: about 5 KiB per frame of MAX_DEPTH, a generous margin
#: (the memory is reserved, and used only as deep as a call goes)
STACK_BYTES = 256 * 1024 * 1024

_T = TypeVar("_T")
_jobs: queue.Queue = queue.Queue()
_start_lock = threading.Lock()
_turn = threading.Lock()  # one deep call at a time
_worker: threading.Thread | None = None


class NestingError(Error):
    """An input nested deeper than xegen's recursion bound."""


def deeply(function: Callable[..., _T], *args, **kwargs) -> _T:
    """`function(*args, **kwargs)` with room for MAX_DEPTH frames of recursion; its result or
    its exception (a RecursionError becomes a NestingError)."""
    if threading.current_thread() is _worker:
        return _call(function, args, kwargs)
    with _turn:
        done = threading.Event()
        outcome: list = []
        _jobs.put((function, args, kwargs, outcome, done))
        _ensure_worker()
        done.wait()
    ok, value = outcome[0]
    if ok:
        return value
    raise value.with_traceback(value.__traceback__)


def _ensure_worker() -> None:
    global _worker
    with _start_lock:
        if _worker is not None:
            return
        previous = threading.stack_size(STACK_BYTES)
        try:
            # a daemon: Ctrl-C in the main thread ends the process without waiting for it
            _worker = threading.Thread(target=_serve, name="xegen-deep", daemon=True)
            _worker.start()
        finally:
            threading.stack_size(previous)


@atexit.register
def _stop_worker() -> None:
    """End the deep thread before the interpreter does, so what it made (egglog's e-graphs, in its
    thread-local storage) is dropped on that thread."""
    if _worker is not None and _worker.is_alive() and _turn.acquire(timeout=1):  # (not if a call is stuck)
        _jobs.put(None)
        _worker.join()


def _serve() -> None:
    while True:
        job = _jobs.get()
        if job is None:
            return
        function, args, kwargs, outcome, done = job
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(max(saved, MAX_DEPTH))
        try:
            outcome.append((True, _call(function, args, kwargs)))
        except BaseException as error:  # handed to the calling thread, raised there
            outcome.append((False, error))
        finally:
            sys.setrecursionlimit(saved)
            done.set()


def _call(function, args, kwargs):
    try:
        return function(*args, **kwargs)
    except RecursionError:
        raise NestingError(
            f"the input nests deeper than xegen handles ({MAX_DEPTH:,} levels of "
            "recursion); split it into smaller pieces"
        ) from None
