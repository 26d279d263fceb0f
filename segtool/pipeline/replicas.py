"""`replicas --engine local|spark`: each replica set compared in a task, the report built as in-process.

``ops.replicas.replicas`` hands its units of work to a ``MapTasks``: here an engine's ``map``, so a Kafka
partition's copies (``kafka_replica_set``: one task per partition, whichever brokers' log dirs hold them),
a RocketMQ store's opening and a RocketMQ group's comparison each run as one task, on the local process pool
or on Spark.  The engines give the results back in the items' order, so the report is the one the
in-process run builds, byte for byte.  A replica that cannot be read is named in its set's ``unreadable``
by the task itself, as in-process.

URI arguments (on Spark: the CLI leaves them as given) are only listed on the driver (``staged``), which
plans on the paths their mirror would have (``ops.replicas.discover`` through ``staged.ListedTrees``),
reading just each log dir's ``meta.properties`` and each partition's ``partition.metadata``.  Each Kafka
task stages its partition directories and the log-dir files above them (the checkpoints and the clean
shutdown marker the broker's load reads) on its executor and gives its set back naming the URIs.  A
RocketMQ group is compared across whole CommitLogs, and which stores form a group is only known once their
first records are read, so RocketMQ stores among URI inputs are mirrored on the driver and compared there,
which the run says on stderr.

Every file is hashed by the task that reads it: a Kafka task its copies' staged partition files, beside the
comparison; the files no comparison reads are hashed through the storage layer by one task per broker
(``hash_listed``).  On Spark a task hashes on a thread, on the local pool in a forked child.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from functools import partial
from typing import Callable, Sequence

from segtool.engine import uris
from segtool.engine.detect import detect
from segtool.errors import SegtoolError
from segtool.formats.file_kinds import Scope
from segtool.ops.brokers import broker_roots
from segtool.ops.output_schema import ReplicasReport
from segtool.ops.replicas import Member, assemble, discover, kafka_replica_set, plan_hashes, replicas
from segtool.ops.replicas_rocketmq import rocketmq_replica_sets
from segtool.ops.task_map import FileDigest, Hashing, bytes_in, in_process
from segtool.pipeline import staged, storage
from segtool.pipeline.engines import LocalEngine


def _engine_map(engine, fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return engine.map(fn, items, costs, description=f"segtool replicas: {fn.__name__.replace('_', ' ')}")


def replicas_on(paths: list[str], engine, notify: Callable[[str], None] = lambda line: None,
                hash_inputs: bool = True) -> ReplicasReport:
    """``ops.replicas.replicas`` with its replica sets run as tasks of ``engine``; URI arguments are read by
    the tasks (``notify`` hears what is read on the driver instead); with ``hash_inputs`` every file is hashed
    by its task."""
    hashing = Hashing(enabled=hash_inputs, fork=isinstance(engine, LocalEngine))
    if any(staged.is_remote(path) for path in paths):
        return _replicas_listed(paths, engine, notify, hashing)
    return replicas(paths, partial(_engine_map, engine), hashing)


def hash_listed(sources: list[str]) -> list[FileDigest]:
    """Task: the digests of files (URIs or local paths) that no comparison reads, through the storage layer."""
    digests: list[FileDigest] = []
    for source in sources:
        try:
            digests.append((storage.sha256(source), None))
        except SegtoolError as exc:
            digests.append((None, exc.message))
        except OSError as exc:
            digests.append((None, exc.strerror or str(exc)))
    return digests


def staged_replica_set(item: tuple[list[Member], list[list[str]], dict[str, str], list[str], Hashing]
                       ) -> tuple[dict, list[FileDigest]]:
    """Task: stage each member's files (its partition directory's, and its log dir's own files) into this
    task's folder, compare the set there (``kafka_replica_set``, hashing the staged copies of ``hashed``), and
    give it back naming the URIs.  A member whose files cannot be staged is named in the set's ``unreadable``
    with why, as a copy that cannot be read."""
    members, sources, places, hashed, hashing = item
    with staged.task_folder() as folder:
        local, failed = [], {}
        for member, files in zip(members, sources):
            directory = staged.local_place(member.directory, folder)
            try:
                for source in files:
                    staged.stage(source, folder)
            except SegtoolError as exc:
                if staged.is_remote(member.directory):  # only ever this task's own copy
                    shutil.rmtree(directory, ignore_errors=True)  # read as a copy that is not there
                failed[directory] = str(exc)
            local.append(dataclasses.replace(member, directory=directory))
        result, digests = kafka_replica_set((local, [staged.local_place(source, folder) for source in hashed], hashing))
        for entry in result["unreadable"]:
            entry["problem"] = failed.get(entry["directory"], entry["problem"])
        return staged.as_given((result, digests), staged.task_places(places, folder))


def _member_files(member: Member, tree: staged.ListedTrees) -> list[str]:
    """The planning paths a task stages for one copy: its partition directory's files, and the files of its
    log dir that belong to the log dir (checkpoints, clean shutdown marker, meta.properties)."""
    directory = os.path.normpath(member.directory)
    if not tree.lists(directory):
        return []  # a local path: the task reads it where it is
    log_dir = os.path.dirname(directory)
    return tree.below(directory) + [path for path in tree.below(log_dir) if detect(path).kind.scope is Scope.LOG_DIR]


def _replicas_listed(paths: list[str], engine, notify: Callable[[str], None], hashing: Hashing) -> ReplicasReport:
    trees = [staged.list_tree(path) for path in paths if staged.is_remote(path)]
    roots = {tree.uri: tree.root for tree in trees}
    planned = [roots.get(path, path) for path in paths]
    tree = staged.ListedTrees(trees)
    _, stores = broker_roots(planned, tree)
    mirrored = [staged.source_of(os.path.normpath(root), trees) for root in stores
                if tree.lists(os.path.normpath(root))] if len(stores) > 1 else []
    for uri in mirrored:
        uris.mirror(uri)  # to the store's planning path: the driver reads it there
    if mirrored:
        notify(f"RocketMQ stores are compared on the driver, from its mirror of {', '.join(mirrored)}: which "
               "stores replicate each other is known only from their CommitLogs")
    found = discover(planned, tree)
    plan = plan_hashes(found, compared_stores=len(found.stores) > 1)
    places = staged.planning_places(trees)
    items, costs = [], []
    for members, hashed in zip(found.groups, plan.sets):
        files = [_member_files(member, tree) for member in members]
        items.append(([dataclasses.replace(m, directory=staged.source_of(os.path.normpath(m.directory), trees))
                       for m in members], [[staged.source_of(path, trees) for path in own] for own in files], places,
                      [staged.source_of(path, trees) for path in hashed], hashing))
        costs.append(sum(sum(tree.files[path] for path in own) if own else bytes_in(m.directory)
                         for m, own in zip(members, files)))
    kafka = engine.map(staged_replica_set, items, costs, description="segtool replicas: kafka replica set")
    rocketmq, store_digests = rocketmq_replica_sets(found.stores, in_process if mirrored else partial(_engine_map, engine),
                                                    plan.stores, hashing) if len(found.stores) > 1 else ([], [])
    rest = engine.map(hash_listed, [[staged.source_of(path, trees) for path in files] for files in plan.rest],
                      [sum(plan.sizes[path] for path in files) for files in plan.rest],
                      description="segtool replicas: sha256 of the files no comparison reads") if hashing.enabled else []
    return staged.as_given(assemble(found, [result for result, _ in kafka], rocketmq, plan,
                                    [digests for _, digests in kafka] + store_digests + rest), places)
