"""Running deep recursions within a stated bound.

Much of xegen walks trees by recursion (IR mutators, the interpreter, rule terms): a chain of
lets a few hundred deep, or an expression of a thousand nested terms, goes past Python's default
recursion limit of 1,000 frames.  `deeply(function, ...)` runs `function` on a thread whose C
stack is large enough for `MAX_DEPTH` Python frames and with the recursion limit raised to
match, so such inputs work; an input deeper still gets a `NestingError` (one clear line from
the CLI) instead of a `RecursionError` traceback or a crash of the interpreter.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

from .errors import Error

#: Python frames a deep call may use.  A frame that goes through C (a dataclass __init__,
#: getattr, a generator) costs up to a few hundred bytes of C stack in CPython 3.11-3.13.
MAX_DEPTH = 50_000
#: the C stack of the deep thread: about 5 KiB per frame of MAX_DEPTH, a generous margin
#: (the memory is reserved, and used only as deep as a call goes)
STACK_BYTES = 256 * 1024 * 1024

_T = TypeVar("_T")
_local = threading.local()
_limit_lock = threading.Lock()
_deep_threads = 0  # threads inside `deeply` now: the raised limit is restored when none is left
_saved_limit = 0


class NestingError(Error):
    """An input nested deeper than xegen's recursion bound."""


def deeply(function: Callable[..., _T], *args, **kwargs) -> _T:
    """`function(*args, **kwargs)` with room for MAX_DEPTH frames of recursion; its result or
    its exception (a RecursionError becomes a NestingError)."""
    if getattr(_local, "deep", False):  # already on a deep thread
        return _call(function, args, kwargs)
    outcome: list = []

    def body() -> None:
        _local.deep = True
        try:
            outcome.append((True, _call(function, args, kwargs)))
        except BaseException as error:  # handed to the caller's thread, re-raised there
            outcome.append((False, error))

    _enter()
    try:
        previous = threading.stack_size(STACK_BYTES)
        try:
            thread = threading.Thread(target=body, name="xegen-deep", daemon=True)  # Ctrl-C ends the process
            thread.start()
        finally:
            threading.stack_size(previous)
        thread.join()
    finally:
        _leave()
    ok, value = outcome[0]
    if ok:
        return value
    raise value.with_traceback(value.__traceback__)


def _call(function, args, kwargs):
    try:
        return function(*args, **kwargs)
    except RecursionError:
        raise NestingError(f"the input nests deeper than xegen handles ({MAX_DEPTH:,} levels of "
                           "recursion); split it into smaller pieces") from None


def _enter() -> None:
    global _deep_threads, _saved_limit
    with _limit_lock:
        if _deep_threads == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, MAX_DEPTH))
        _deep_threads += 1


def _leave() -> None:
    global _deep_threads
    with _limit_lock:
        _deep_threads -= 1
        if _deep_threads == 0:
            sys.setrecursionlimit(_saved_limit)
