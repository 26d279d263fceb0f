"""`rebuild-index`: the .index/.timeindex/.txnindex Kafka's recovery would write.

Segments of a partition are processed in offset order so open transactions
carry across segments (seeded from the producer snapshot at the first
segment's base offset, as log loading does).  Nothing is written next to the
input unless ``in_place`` is asked for.
"""

from __future__ import annotations

import os

from segtool.engine.inventory import inventory
from segtool.kafka.partition import Segment
from segtool.kafka.recovery import DEFAULT_INDEX_INTERVAL_BYTES, ProducerTxnState, recover_segment
from segtool.engine.safe_write import partition_output, plan_outputs, tree_outputs, write_atomically
from segtool.source import sha256_beside
from segtool.errors import NothingFound, UnreadableInput
from segtool.kafka.names import INDEX, PRODUCER_SNAPSHOT, TIME_INDEX, TXN_INDEX, file_name, is_log_file
from segtool.ops.output_schema import KafkaRebuildReport
from segtool.ops.progress import RunProgress

_NOT_A_SEGMENT = "not a Kafka .log segment: rebuild-index reads segments and writes their indexes"


def _partitions_of(paths: list[str], skipped: list[dict], unreadable: list[dict]) -> list[list[Segment]]:
    """The segments (one list per partition directory) named by .log files or found below
    directories at any depth; every other file goes to ``skipped`` and every entry that cannot
    be read to ``unreadable``, with the reason.

    The .log files as they are: indexes are rebuilt for the files on disk, not for
    the partition Kafka would make of an interrupted swap.
    """
    for path in paths:
        if not os.path.lexists(path):
            raise UnreadableInput("no such file or directory", path)
        if not os.path.isdir(path) and not is_log_file(path):
            raise NothingFound("not a .log segment or a partition/log directory", path)
    found = inventory(paths)
    unreadable.extend({"path": f.path, "reason": f.unreadable} for f in found.unreadable)
    logs = [partition.logs for partition in found.partitions if partition.logs]
    skipped.extend({"path": f.path, "reason": _NOT_A_SEGMENT} for f in found.outside(*logs))
    if not logs and not unreadable:
        raise NothingFound("no Kafka segments in this directory", paths[0])
    return [[Segment(f.path) for f in files] for files in logs]


def recover_partition(log_paths: list[str], snapshot: str, index_interval_bytes: int,
                      progress: RunProgress | None = None, hash_inputs: bool = True,
                      parallel: bool = False) -> list[dict]:
    """Recover every segment of one partition in offset order: index bytes and report fields.

    Open transactions carry from one segment to the next (an ABORT marker can
    close a transaction opened in an earlier segment), seeded from the producer
    snapshot at the first segment as Kafka's log loading does.  This is one
    task of a distributed rebuild, or one step of a local one.
    """
    txn_state = ProducerTxnState.from_snapshot(snapshot)
    out = []
    for log_path in log_paths:
        segment = Segment(log_path)
        # the hash runs on the other core while we scan, and bounds the run: no checksum helper beside it
        digest = sha256_beside(log_path, fork=parallel) if hash_inputs else None
        advance = progress.file(log_path) if progress is not None else None
        recovery = recover_segment(segment.log, segment.log_path, segment.base_offset, index_interval_bytes,
                                   txn_state, progress=advance, parallel=parallel and digest is None)
        out.append({
            "log_sha256": digest.result() if digest is not None else None,
            "size": recovery.size,
            "valid_bytes": recovery.valid_bytes,
            "bytes_kafka_would_truncate": recovery.bytes_lost,
            "stop_reason": recovery.stop_reason,
            "stop_message": recovery.stop_message,
            "offset_index_entries": len(recovery.offset_entries),
            "time_index_entries": len(recovery.time_entries),
            "aborted_transactions": len(recovery.aborted_txns),
            "offset_index": recovery.offset_index_bytes(),
            "time_index": recovery.time_index_bytes(),
            "txn_index": recovery.txn_index_bytes() if recovery.aborted_txns else None,
        })
    return out


def _partition_task(item: tuple) -> list[dict]:
    return recover_partition(*item)


_SUFFIXES = (INDEX, TIME_INDEX, TXN_INDEX)


def rebuild_index(paths: list[str], out_dir: str | None = None, in_place: bool = False,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, progress: RunProgress | None = None,
                  engine=None, hash_inputs: bool = True, force: bool = False) -> KafkaRebuildReport:
    """Rebuild every segment's indexes; partitions run as tasks on ``engine`` when one is given.

    Out of place each partition's indexes go to its path below the given path
    that holds it (``out_dir/<partition>/`` for a log dir, ``out_dir/broker1/<partition>/``
    for replicas side by side below one path), or, when log dirs given side by side
    hold partitions of one name, below ``out_dir/<n>-<log dir name>/``, numbered from 1
    as given (``safe_write.tree_outputs``); every output is checked before
    anything is computed or written (see ``safe_write.plan_outputs``).
    Tasks only compute; the indexes are written here, through ``safe_write``.
    """
    skipped: list[dict] = []
    unreadable: list[dict] = []
    groups = _partitions_of(paths, skipped, unreadable)
    places = tree_outputs([os.path.dirname(segments[0].log_path) for segments in groups], paths, out_dir) \
        if out_dir is not None else None
    targets = [partition_output(segment.log_path, out_dir, in_place, file_name(segment.base_offset, suffix), places)
               for segments in groups for segment in segments for suffix in _SUFFIXES]
    plan_outputs(targets, paths, in_place, force)
    items = []
    for segments in groups:
        first = segments[0]
        snapshot = os.path.join(os.path.dirname(os.path.abspath(first.log_path)), file_name(first.base_offset, PRODUCER_SNAPSHOT))
        # absolute paths: executors have their own working directory
        items.append(([os.path.abspath(s.log_path) for s in segments], snapshot, index_interval_bytes, None,
                      hash_inputs))
    if engine is None:
        # run here, a partition at a time: a helper process may take a share of the checksums
        if progress is not None:
            progress.plan((path, os.path.getsize(path)) for item in items for path in item[0])
        results = [recover_partition(*item[:3], progress, hash_inputs, parallel=True) for item in items]
    else:
        costs = [sum(os.path.getsize(p) for p in item[0]) for item in items]
        results = engine.map(_partition_task, items, costs, description="segtool rebuild-index")
    report = {"index_interval_bytes": index_interval_bytes, "segments": [], "skipped": skipped,
              "unreadable": unreadable}
    for segments, computed in zip(groups, results):
        for segment, result in zip(segments, computed):
            contents = [(INDEX, result["offset_index"]), (TIME_INDEX, result["time_index"])]
            if result["txn_index"] is not None:
                contents.append((TXN_INDEX, result["txn_index"]))
            written = [write_atomically(partition_output(segment.log_path, out_dir, in_place,
                                                         file_name(segment.base_offset, suffix), places), data,
                                        replace=in_place or force) for suffix, data in contents]
            entry = {"log": segment.log_path, "base_offset": segment.base_offset}
            entry.update({k: v for k, v in result.items() if k not in ("offset_index", "time_index", "txn_index")})
            entry["written"] = written
            report["segments"].append(entry)
    return report
