"""Engines run a function over many items and give the results back in order.

Both engines take ``map(fn, items, costs)``: ``fn`` is a module-level function
(or a ``functools.partial`` of one) from ``segtool``, the same on both, so the
engines differ only in where it runs.  Items are handed out largest first
(``costs``: bytes), the usual cure for a long tail of one big task.

- ``LocalEngine``: a process pool on this machine (in-process for small inputs);
  it reports the bytes of finished items to an optional progress callback.  A
  task whose worker dies (SIGKILL from the OOM killer, a crash) is tried again
  on a fresh pool, ``retries`` times at most, each retry in ``retried`` and on
  stderr; workers end when the process that started them does.
- ``SparkEngine`` (``segtool.pipeline.spark``): one Spark task per item, on
  ``local[*]`` or any cluster; it has no parser of its own.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable, Sequence

from segtool.errors import SegtoolError
from segtool.pipeline.tasks import (DEFAULT_TASK_RETRIES, guarded, order_by_cost, say_retry, task_label, unwrap,
                                    why_process_ended)

# below this many bytes of input a pool costs more than it saves
SMALL_INPUT_BYTES = 16 * 1024 * 1024


# ``progress(description, total)`` starts a task and returns ``advance(done)``, or None
ProgressFactory = Callable[[str, int], Callable[[int], None] | None]


class LocalEngine:
    name = "local"

    def __init__(self, workers: int | None = None, progress: ProgressFactory | None = None,
                 retries: int = DEFAULT_TASK_RETRIES):
        self.workers = workers
        self.progress = progress
        self.retries = retries
        self.retried: list[dict] = []  # every retry of this engine's runs, as the report lists them

    @property
    def parallelism(self) -> int:
        return self.workers or os.cpu_count() or 1

    def start(self) -> float:
        return 0.0

    def stop(self) -> None:
        pass

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def map(self, fn: Callable, items: Sequence, costs: Sequence[int] | None = None,
            description: str | None = None) -> list:
        items = list(items)
        n = len(items)
        weights = list(costs) if costs is not None else [1] * n
        advance = self.progress(description or "tasks", sum(weights)) if self.progress and n else None
        workers = min(self.parallelism, n)
        small = self.workers is None and costs is not None and sum(costs) < SMALL_INPUT_BYTES
        if workers <= 1 or small:
            results = []
            done = 0
            for item, weight in zip(items, weights):
                results.append(fn(item))
                if advance is not None:
                    done += weight
                    advance(done)
            return results
        return _PoolRun(self, fn, items, weights, advance, workers).run()


class _PoolRun:
    """One ``map`` on process pools: a pool that loses a worker is replaced and its unfinished tasks are
    given to the next one; the task the dead worker was running is charged a failure, and fails the run
    after ``retries`` retries.

    Why a fresh pool: ``ProcessPoolExecutor`` marks itself broken when a worker dies (it cannot tell
    which task died with it) and fails every pending task.  Each worker therefore notes in shared memory
    which task it runs (``_TaskStates``), so the dead worker's task is known and the others are rerun
    free of charge.  Part names depend only on the plan, and a task's outputs are staged, so a rerun
    writes what the first attempt would have.
    """

    def __init__(self, engine: LocalEngine, fn: Callable, items: list, weights: list[int], advance, workers: int):
        self.engine, self.fn, self.items, self.weights = engine, fn, items, weights
        self.advance, self.workers = advance, workers
        self.outcomes: list = [None] * len(items)
        self.received = [False] * len(items)
        self.failures = [0] * len(items)
        self.done_bytes = 0
        self.lost_idle_workers = 0

    def run(self) -> list:
        pending = order_by_cost(self.weights, len(self.items))
        while pending:
            self._one_pool(pending)
            pending = [i for i in pending if not self.received[i]]
        return [unwrap(outcome) for outcome in self.outcomes]

    def _take(self, i: int, outcome) -> None:
        self.outcomes[i] = outcome
        self.received[i] = True
        if self.advance is not None:
            self.done_bytes += self.weights[i]
            self.advance(self.done_bytes)

    def _one_pool(self, pending: list[int]) -> None:
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool
        from multiprocessing.sharedctypes import RawArray

        states = RawArray("q", len(self.items))  # per task: 0 not started, a pid while it runs, -1 finished
        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(pending)), initializer=_start_worker,
                                   initargs=(os.getpid(), states))
        try:
            futures, broken = {}, False
            try:
                for i in pending:
                    futures[pool.submit(_tracked, self.fn, i, self.items[i])] = i
            except BrokenProcessPool:  # a worker died while tasks were still being handed out
                broken = True
            processes = dict(pool._processes)  # forked at the first submit; the executor names no other way
            for future in ([] if broken else as_completed(futures)):
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    broken = True
                    break
                self._take(futures[future], outcome)
        except BaseException:
            # interrupted (Ctrl-C, SIGTERM): stop now, leaving no worker behind, instead of
            # waiting for every queued task as the executor's own exit would
            for process in list((pool._processes or {}).values()):  # the executor offers no terminate()
                process.kill()
            pool.shutdown(wait=True, cancel_futures=True)  # returns at once: the pool is broken now
            raise
        pool.shutdown(wait=True)  # a broken pool: its thread has ended the other workers once this returns
        if broken:
            for future, i in futures.items():  # results that came in before the break, not yet taken
                if not self.received[i] and future.done() and future.exception() is None:
                    self._take(i, future.result())
            self._charge(processes, states)

    def _charge(self, processes: dict, states) -> None:
        """Name each worker that died of itself and charge the task it was running."""
        import socket

        host = socket.gethostname()
        # the pool ends the workers it did not lose with SIGTERM
        dead = {pid: process.exitcode for pid, process in processes.items() if process.exitcode != -signal.SIGTERM}
        if not dead:
            dead = {pid: process.exitcode for pid, process in processes.items()}
        for pid, exit_code in sorted(dead.items()):
            reason = why_process_ended(exit_code)
            running = [i for i, state in enumerate(states) if state == pid]  # one at most: a worker runs one task
            if running:
                self.failures[running[0]] += 1
                failures, task = self.failures[running[0]], task_label(self.items[running[0]])
            else:  # it died between tasks: the unfinished tasks are rerun, none is charged
                self.lost_idle_workers += 1
                failures, task = self.lost_idle_workers, None
            if failures > self.engine.retries:
                what = f"task {task} failed {failures} times" if task else f"the pool lost {failures} idle workers"
                raise SegtoolError(f"{what} (the last worker, {host}/{pid}, {reason}): the run is stopped")
            retry = {"task": task, "attempt": failures + 1, "host": host, "pid": pid, "reason": reason}
            self.engine.retried.append(retry)
            say_retry(retry)


# -- pool workers ---------------------------------------------------------------

_TASK_STATES = None  # a worker's view of its pool's task states (``_start_worker``)
_FINISHED = -1
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_SECONDS = 1.0


def _start_worker(parent_pid: int, states) -> None:
    """A pool worker's start: it ends when its parent does, SIGTERM ends it, Ctrl-C is the driver's to answer
    (it ends the pool; a worker's own KeyboardInterrupt printed multiprocessing's "Process ForkProcess-4:"), and
    it notes its tasks."""
    global _TASK_STATES
    _TASK_STATES = states
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the driver's handler, inherited, would keep it alive
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent(parent_pid)


def _end_with_parent(parent_pid: int) -> None:
    """Die with the parent: the kernel's parent-death signal on Linux, and a thread watching the parent pid
    (other systems, and a parent that died before the signal was asked for)."""
    import threading

    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="segtool-parent-watch", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    import time

    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def _tracked(fn: Callable, index: int, item):
    """``guarded(fn, item)`` in a pool worker, with the task's state kept where the driver can read it."""
    _TASK_STATES[index] = os.getpid()
    outcome = guarded(fn, item)
    _TASK_STATES[index] = _FINISHED
    return outcome


def engine_name(engine: str | None, master: str | None) -> str:
    return engine or ("spark" if master else "local")


def parse_conf(settings: Sequence[str] | None) -> dict[str, str]:
    """``--conf key=value`` options (Spark settings) to a dict, in order; a later key wins."""
    conf: dict[str, str] = {}
    for setting in settings or ():
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise SegtoolError(f"--conf {setting!r}: give a Spark setting as key=value, e.g. spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


def make_engine(engine: str | None, master: str | None = None, workers: int | None = None, quiet: bool = False,
                progress: ProgressFactory | None = None, conf: Sequence[str] | None = None,
                retries: int = DEFAULT_TASK_RETRIES):
    """``--engine``/``--master``/``--conf``/``--retries`` to an engine: Spark when asked for, or when a master
    is named.

    ``progress`` feeds the local engine's progress; Spark shows its own stage progress unless ``quiet``.
    """
    if retries < 0:
        raise SegtoolError(f"--retries {retries}: give 0 (a failed task fails the run) or more")
    settings = parse_conf(conf)
    engine = engine_name(engine, master)
    if engine == "local":
        if master:
            raise SegtoolError("--master needs --engine spark")
        if settings:
            raise SegtoolError("--conf sets Spark settings: it needs --engine spark (or --master)")
        return LocalEngine(workers, progress, retries)
    if engine == "spark":
        from segtool.pipeline.spark import SparkEngine

        return SparkEngine(master, quiet=quiet, conf=settings, retries=retries)
    raise SegtoolError(f"unknown --engine {engine!r}: use local or spark")
