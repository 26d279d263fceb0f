"""`salvage --engine local|spark`: each Kafka partition and each RocketMQ store salvaged in a task.

``ops.salvage.salvage`` hands its units of work to a ``MapTasks``: here an engine's ``map``.  A
partition's unit reads its segments and writes the new partition (through ``engine.safe_write``: temp
file, fsync, read back, rename), a store's reads its CommitLog, checks its outputs and writes the new
store; the report is put together by the driver in the inputs' order, so it is the one the in-process
run gives, and so are the files.  Outputs are written by the tasks: on a cluster --out must be a
folder every executor sees at the same path (a URI --out is staged on the driver and uploaded at the
end, so it needs a local master).

URI arguments (on Spark the CLI leaves them as given) are only listed on the driver (``staged``), which
plans on the paths their mirror would have (``staged.ListedTrees``), reading just the partitions' small
state files it checks before copying them.  Each task stages its unit's files into a folder of its
executor (a partition's segments and the state files copied, a store's every file), salvages them there
and gives its report back naming the URIs, as the in-process run prints them.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Callable, Sequence

from segtool.engine import uris
from segtool.engine.inventory import Partition
from segtool.ops.output_schema import SalvageReport
from segtool.ops.salvage import salvage
from segtool.pipeline import staged
from segtool.pipeline.tasks import in_directory


def _engine_map(engine, fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return engine.map(partial(in_directory, os.getcwd(), fn), items, costs, description="segtool salvage")


def salvage_on(paths: list[str], out_dir: str, engine, **options) -> SalvageReport:
    """``ops.salvage.salvage`` with each partition and store run as a task of ``engine``; URI arguments are
    read by the tasks."""
    if any(staged.is_remote(path) for path in paths):
        return _salvage_listed(paths, out_dir, engine, **options)
    return salvage(paths, out_dir, map_tasks=partial(_engine_map, engine), **options)


def staged_unit(fn: Callable, places: dict[str, str], staged_item: tuple) -> tuple:
    """Task: stage a unit's files into this task's folder, run ``fn`` on the unit with its paths there, and
    give the result back naming the URIs."""
    item, sources = staged_item
    with staged.task_folder() as folder:
        for source in sources:
            staged.stage(source, folder)
        here = {root: uris.mirror_path(uri, folder) for root, uri in places.items()}
        return staged.as_given(fn(staged.as_given(item, here)), staged.task_places(places, folder))


def _unit_files(item: tuple) -> list[str]:
    """The files a unit of ``ops.salvage`` reads: a partition's segments and the state files it copies, or
    a store's every file (its checks read the queues and index files as well)."""
    unit = item[0]
    if isinstance(unit, Partition):
        return [log.path for log in unit.logs] + list(item[2])
    return [found.path for found in unit.files]


def _salvage_listed(paths: list[str], out_dir: str, engine, **options) -> SalvageReport:
    trees = [staged.list_tree(path) for path in paths if staged.is_remote(path)]
    roots = {tree.uri: tree.root for tree in trees}
    tree = staged.ListedTrees(trees)
    places = staged.planning_places(trees)

    def staged_map(fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
        staged_items = [(item, [staged.source_of(path, trees) for path in _unit_files(item) if tree.lists(path)])
                        for item in items]
        return _engine_map(engine, partial(staged_unit, fn, places), staged_items, costs)

    report = salvage([roots.get(path, path) for path in paths], out_dir, map_tasks=staged_map, tree=tree,
                     **options)
    return staged.as_given(report, places)
