"""`salvage --engine local|spark`: each Kafka partition and each RocketMQ store salvaged in a task.

``ops.salvage.salvage`` hands its units of work to a ``MapTasks``: here an engine's ``map``.  A
partition's unit reads its segments and writes the new partition (through ``engine.safe_write``: temp
file, fsync, read back, rename), a store's reads its CommitLog, checks its outputs and writes the new
store; the report is put together by the driver in the inputs' order, so it is the one the in-process
run gives, and so are the files.  Outputs are written by the tasks: on a cluster --out must be a
folder every executor sees at the same path (a URI --out is staged on the driver and uploaded at the
end, so it needs a local master).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Callable, Sequence

from segtool.ops.output_schema import SalvageReport
from segtool.ops.salvage import salvage
from segtool.pipeline.tasks import in_directory


def _engine_map(engine, fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return engine.map(partial(in_directory, os.getcwd(), fn), items, costs, description="segtool salvage")


def salvage_on(paths: list[str], out_dir: str, engine, **options) -> SalvageReport:
    """``ops.salvage.salvage`` with each partition and store run as a task of ``engine``."""
    return salvage(paths, out_dir, map_tasks=partial(_engine_map, engine), **options)
