"""Engines run a function over many items and give the results back in order.

Both engines take ``map(fn, items, costs)``: ``fn`` is a module-level function
(or a ``functools.partial`` of one) from ``segtool``, the same on both, so the
engines differ only in where it runs.  Items are handed out largest first
(``costs``: bytes), the usual cure for a long tail of one big task.

- ``LocalEngine``: a process pool on this machine (in-process for small inputs);
  it reports the bytes of finished items to an optional progress callback.
- ``SparkEngine`` (``segtool.pipeline.spark``): one Spark task per item, on
  ``local[*]`` or any cluster; it has no parser of its own.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from segtool.pipeline.tasks import guarded, order_by_cost, unwrap

# below this many bytes of input a pool costs more than it saves
SMALL_INPUT_BYTES = 16 * 1024 * 1024


# ``progress(description, total)`` starts a task and returns ``advance(done)``, or None
ProgressFactory = Callable[[str, int], Callable[[int], None] | None]


class LocalEngine:
    name = "local"

    def __init__(self, workers: int | None = None, progress: ProgressFactory | None = None):
        self.workers = workers
        self.progress = progress

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
        done = 0
        workers = min(self.parallelism, n)
        small = self.workers is None and costs is not None and sum(costs) < SMALL_INPUT_BYTES
        if workers <= 1 or small:
            results = []
            for item, weight in zip(items, weights):
                results.append(fn(item))
                if advance is not None:
                    done += weight
                    advance(done)
            return results
        from concurrent.futures import ProcessPoolExecutor, as_completed

        outcomes: list = [None] * n
        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            futures = {pool.submit(guarded, fn, items[i]): i for i in order_by_cost(costs, n)}
            for future in as_completed(futures):
                i = futures[future]
                outcomes[i] = future.result()
                if advance is not None:
                    done += weights[i]
                    advance(done)
        except BaseException:
            # interrupted (Ctrl-C, SIGTERM): stop now, leaving no worker behind, instead of
            # waiting for every queued task as the executor's own exit would
            for process in list((pool._processes or {}).values()):  # the executor offers no terminate()
                process.kill()  # a worker would take SIGTERM for a task's exception and go on
            pool.shutdown(wait=True, cancel_futures=True)  # returns at once: the pool is broken now
            raise
        pool.shutdown()
        return [unwrap(outcome) for outcome in outcomes]


def engine_name(engine: str | None, master: str | None) -> str:
    return engine or ("spark" if master else "local")


def parse_conf(settings: Sequence[str] | None) -> dict[str, str]:
    """``--conf key=value`` options (Spark settings) to a dict, in order; a later key wins."""
    from segtool.errors import SegtoolError

    conf: dict[str, str] = {}
    for setting in settings or ():
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise SegtoolError(f"--conf {setting!r}: give a Spark setting as key=value, e.g. spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


def make_engine(engine: str | None, master: str | None = None, workers: int | None = None, quiet: bool = False,
                progress: ProgressFactory | None = None, conf: Sequence[str] | None = None):
    """``--engine``/``--master``/``--conf`` to an engine: Spark when asked for, or when a master is named.

    ``progress`` feeds the local engine's progress; Spark shows its own stage progress unless ``quiet``.
    """
    settings = parse_conf(conf)
    engine = engine_name(engine, master)
    if engine == "local":
        from segtool.errors import SegtoolError

        if master:
            raise SegtoolError("--master needs --engine spark")
        if settings:
            raise SegtoolError("--conf sets Spark settings: it needs --engine spark (or --master)")
        return LocalEngine(workers, progress)
    if engine == "spark":
        from segtool.pipeline.spark import SparkEngine

        return SparkEngine(master, quiet=quiet, conf=settings)
    from segtool.errors import SegtoolError

    raise SegtoolError(f"unknown --engine {engine!r}: use local or spark")
