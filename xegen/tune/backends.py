"""Where jobs run: in this process, in a local process pool, or on a Ray cluster.

Every backend takes jobs with `submit(key, job)` and hands back results one at a time, as they
finish, with `next()` -> (key, result); `in_flight` counts what was submitted and not handed
back, `capacity` how many jobs keep every worker busy.  Results come back to the driver, which
alone writes the tuning database.

A worker that dies (killed, out of memory) loses only the jobs it had not finished: the pool is
rebuilt and those jobs are submitted again; Ray retries a task whose worker died by itself
(`max_retries`).  A job that kills its worker `RETRIES` + 1 times comes back as `Lost`.
The function a backend runs is `run_job` unless another is given (a test's).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from ..errors import Error
from .evaluate import run_job, warm_up

RETRIES = 3  # times a job is run again after its worker died
WORKER_NICENESS = "RAY_worker_niceness"  # the raylet reads it when `--ray local` starts one


@dataclass(frozen=True)
class Lost:
    """The result of a job whose worker died RETRIES + 1 times, or that could not be run at all."""

    reason: str


class Serial:
    """Jobs run one at a time in this process (`-j 1`)."""

    name = "serial"

    def __init__(self, function: Callable = run_job):
        self.function = function
        self.queue: deque = deque()
        self.workers = 1

    @property
    def capacity(self) -> int:
        return 1

    @property
    def in_flight(self) -> int:
        return len(self.queue)

    def submit(self, key: Hashable, job) -> None:
        self.queue.append((key, job))

    def next(self):
        key, job = self.queue.popleft()
        return key, self.function(job)

    def close(self) -> None:
        pass


class Pool:
    """A local pool of `workers` processes (`-j N`), started fresh (spawn), each loading the rules once."""

    name = "pool"

    def __init__(self, workers: int, function: Callable = run_job):
        if workers < 1:
            raise Error(f"-j {workers}: at least one worker")
        self.workers, self.function = workers, function
        self.futures: dict[Future, tuple[Hashable, object, int]] = {}
        self.done: deque = deque()
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        self.executor = ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=warm_up
        )

    @property
    def capacity(self) -> int:
        return 2 * self.workers

    @property
    def in_flight(self) -> int:
        return len(self.futures) + len(self.done)

    def submit(self, key: Hashable, job, attempt: int = 0) -> None:
        self.futures[self.executor.submit(self.function, job)] = (key, job, attempt)

    def next(self):
        while not self.done:
            finished, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
            broken = []
            for future in sorted(finished, key=lambda f: repr(self.futures[f][0])):
                key, job, attempt = self.futures.pop(future)
                if isinstance(future.exception(), BrokenProcessPool):
                    broken.append((key, job, attempt))
                elif future.exception() is not None:
                    self.done.append((key, Lost(f"worker error: {future.exception()}")))
                else:
                    self.done.append((key, future.result()))
            if broken:
                self._recover(broken)
        return self.done.popleft()

    def _recover(self, broken: list) -> None:
        """A worker died: every job the pool had not finished is run again on a new pool."""
        for future, (key, job, attempt) in list(self.futures.items()):
            if future.done() and future.exception() is None:  # finished before the pool broke: kept
                self.done.append((key, future.result()))
            else:
                future.cancel()
                broken.append((key, job, attempt))
        self.futures.clear()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.restarts += 1
        self._start()
        for key, job, attempt in broken:
            if attempt >= RETRIES:
                self.done.append((key, Lost(f"its worker died {attempt + 1} times")))
            else:
                self.submit(key, job, attempt + 1)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class Ray:
    """Jobs as Ray tasks: on a local instance of `workers` CPUs (`--ray local`), or on a running
    cluster (`--ray auto`, or its address).  Each worker process loads the rules at its first task."""

    name = "ray"

    def __init__(
        self, address: str, workers: int | None = None, function: Callable = run_job, runtime_env: dict | None = None
    ):
        try:
            import ray  # Ray takes a second to import and is an optional dependency (xegen[ray])
        except ImportError:
            raise Error("--ray needs Ray: pip install 'xegen[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            options: dict[str, Any] = dict(
                include_dashboard=False, log_to_driver=False, logging_level="ERROR", runtime_env=runtime_env
            )
            try:
                if address == "local":
                    # Ray starts its workers at niceness 15; on a machine shared with other work
                    # they then wait behind every other process (a pool's workers run at 0)
                    os.environ.setdefault(WORKER_NICENESS, "0")
                    ray.init(num_cpus=workers or os.cpu_count(), **options)
                else:
                    ray.init(address=address, **options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise Error(f"--ray {address}: cannot connect to a Ray cluster: {error}") from None
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(function)
        self.refs: dict = {}

    @property
    def capacity(self) -> int:
        return 2 * self.workers

    @property
    def in_flight(self) -> int:
        return len(self.refs)

    def submit(self, key: Hashable, job) -> None:
        self.refs[self.remote.remote(job)] = key

    def next(self):
        ready, _ = self.ray.wait(list(self.refs), num_returns=1)
        ref = ready[0]
        key = self.refs.pop(ref)
        try:
            return key, self.ray.get(ref)
        except self.ray.exceptions.RayError as error:  # its worker died RETRIES + 1 times
            return key, Lost(f"Ray task failed: {type(error).__name__}: {str(error).splitlines()[0]}")

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def make_backend(workers: int = 1, ray: str | None = None, function: Callable = run_job):
    """`--ray ADDRESS` if given, else a pool of `workers` processes, or this process for one."""
    if ray is not None:
        return Ray(ray, workers if ray == "local" else None, function)
    if workers == 1:
        return Serial(function)
    return Pool(workers, function)
