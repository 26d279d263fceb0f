"""`rebuild-index --engine spark`: each partition recovered, and its indexes written, by a task.

Open transactions carry from one segment of a partition to the next (an
ABORT marker in segment N can close a transaction opened in segment N-1), so
one task takes one whole partition: it seeds the transaction state from the
producer snapshot at the partition's first segment, as the local rebuild and
Kafka's log loading do, and runs ``recover_partition`` (the same recovery
engine) over its segments in offset order.  The driver plans (what to read,
where each index goes, every output checked before anything is computed, as
``ops.rebuild.rebuild_index`` does) and gathers the report; the tasks read and
write.  A task writes each index atomically: to a local ``--out`` (which every
executor sees) through ``safe_write`` (temp file, fsync, read back, rename); to
a URI ``--out`` as a finished local file uploaded under a hidden temporary
name and then moved into place (``staged.publish``).  URI inputs are only
listed here; each task stages its partition's segments and snapshot on its
executor (``staged``).
"""

from __future__ import annotations

import os

from segtool.engine.inventory import classify, inventory
from segtool.engine.safe_write import partition_output, plan_outputs, refuse_collisions, tree_outputs, write_atomically
from segtool.errors import NothingFound, SegtoolError, UnreadableInput
from segtool.kafka.names import file_name, is_log_file
from segtool.kafka.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from segtool.engine import uris
from segtool.ops.rebuild import (INDEX_SUFFIXES, index_contents, partitions_in, producer_snapshot, recover_partition,
                                 segment_entry)
from segtool.pipeline import staged


def rebuild_partition(item: tuple) -> list[tuple[dict, list[dict]]]:
    """Task: stage the partition's files, recover its segments, write their indexes where the driver planned.
    Returns each segment's recovery figures (without the index bytes) and what was written."""
    logs, snapshot, index_interval_bytes, hash_inputs, targets, replace, given = item
    with staged.task_folder() as folder:
        local_logs = [staged.stage(source, folder) for source in logs]
        # a snapshot that was not there: the path of none, as the in-process run looks for one beside the logs
        local_snapshot = staged.stage(snapshot, folder) if snapshot else producer_snapshot(
            os.path.join(folder, "no-snapshot", os.path.basename(local_logs[0])))
        results = recover_partition(local_logs, local_snapshot, index_interval_bytes, None, hash_inputs)
        done = []
        for number, (result, places) in enumerate(zip(results, targets)):
            written = [_write(places[suffix], data, replace, os.path.join(folder, "out", str(number)))
                       for suffix, data in index_contents(result)]
            done.append(({k: v for k, v in result.items() if k not in ("offset_index", "time_index", "txn_index")},
                         written))
        return staged.as_given(done, {uris.mirror_path(uri, folder): uri for uri in given})


def _write(target: str, data: bytes, replace: bool, scratch: str) -> dict:
    if not staged.is_remote(target):
        return write_atomically(target, data, replace=replace)
    # the file as the in-process run writes it into its staging folder, then published at its URI
    os.makedirs(scratch, exist_ok=True)
    written = write_atomically(os.path.join(scratch, target.rsplit("/", 1)[-1]), data)
    staged.publish(written["path"], target)
    return {**written, "path": target}


def rebuild_distributed(paths: list[str], engine, out_dir: str | None = None, in_place: bool = False,
                        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, force: bool = False,
                        hash_inputs: bool = True) -> dict:
    """What ``ops.rebuild.rebuild_index`` does, with each partition a task of ``engine``."""
    remote = [path for path in paths if staged.is_remote(path)]
    if remote and in_place:
        raise SegtoolError("--in-place replaces files beside the input: over a URI give --out", remote[0])
    trees = {path: staged.list_tree(path) for path in remote}
    planned = [trees[path].root if path in trees else path for path in paths]
    listing: list = []
    for path, plan in zip(paths, planned):
        if path in trees:
            files = trees[path].files
            if files and files[0][0] == plan and not is_log_file(plan):  # the URI names one file
                raise NothingFound("not a .log segment or a partition/log directory", path)
            listing += files
            continue
        if not os.path.lexists(path):
            raise UnreadableInput("no such file or directory", path)
        if not os.path.isdir(path) and not is_log_file(path):
            raise NothingFound("not a .log segment or a partition/log directory", path)
        listing += inventory([path]).entries
    found = classify(listing)
    if remote and any(store.commitlog for store in found.stores):
        raise SegtoolError("rebuild-index on Spark over URIs rebuilds Kafka indexes: rebuild a RocketMQ store "
                           "without --engine spark", next(s.root for s in found.stores if s.commitlog))
    skipped: list[dict] = []
    unreadable: list[dict] = []
    groups = partitions_in(found, paths[0], skipped, unreadable)
    out_plan = uris.mirror_path(out_dir) if out_dir is not None and staged.is_remote(out_dir) else out_dir
    places = tree_outputs([os.path.dirname(segments[0].log_path) for segments in groups], planned, out_plan) \
        if out_plan is not None else None
    targets = [[{suffix: partition_output(segment.log_path, out_plan, in_place, file_name(segment.base_offset, suffix),
                                          places) for suffix in INDEX_SUFFIXES} for segment in segments]
               for segments in groups]
    every_target = [target for group in targets for segment in group for target in segment.values()]
    if out_plan is not None and out_plan != out_dir:
        refuse_collisions(every_target)  # the CLI checked the URI: not inside an input, empty unless --force
        targets = [[{suffix: out_dir.rstrip("/") + target[len(out_plan):].replace(os.sep, "/")
                     for suffix, target in segment.items()} for segment in group] for group in targets]
    else:
        plan_outputs(every_target, paths, in_place, force)
    listed = {entry.path: entry.size for entry in found.entries}
    all_trees = list(trees.values())

    def source(path: str) -> str:
        uri = staged.source_of(path, all_trees)
        return uri if uri != path else os.path.abspath(path)

    items, costs = [], []
    for segments, group_targets in zip(groups, targets):
        snapshot = producer_snapshot(segments[0].log_path)
        remote_snapshot = staged.source_of(snapshot, all_trees) != snapshot
        items.append(([source(s.log_path) for s in segments],
                      source(snapshot) if not remote_snapshot or snapshot in listed else None,
                      index_interval_bytes, hash_inputs, group_targets, in_place or force, remote))
        costs.append(sum(listed[s.log_path] for s in segments))
    results = engine.map(rebuild_partition, items, costs, description="segtool rebuild-index")
    report = {"index_interval_bytes": index_interval_bytes, "segments": [], "skipped": skipped,
              "unreadable": unreadable}
    for segments, computed in zip(groups, results):
        for segment, (figures, written) in zip(segments, computed):
            report["segments"].append(segment_entry(segment, figures, written))
    return staged.as_given(report, staged.planning_places(all_trees))
