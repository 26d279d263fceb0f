"""`rebuild-index`: the .index/.timeindex/.txnindex Kafka's recovery would write.

Segments of a partition are processed in offset order so open transactions
carry across segments (seeded from the producer snapshot at the first
segment's base offset, as log loading does).  Nothing is written next to the
input unless ``in_place`` is asked for.
"""

from __future__ import annotations

import os

from segtool.engine.inventory import Inventory, inventory
from segtool.kafka.partition import Segment
from segtool.kafka.recovery import DEFAULT_INDEX_INTERVAL_BYTES, ProducerTxnState, recover_segment
from segtool.engine.safe_write import partition_output, plan_outputs, tree_outputs, write_atomically
from segtool.source import sha256_beside
from segtool.errors import NothingFound, UnreadableInput
from segtool.kafka.names import (INDEX, PRODUCER_SNAPSHOT, TIME_INDEX, TXN_INDEX, file_name, is_log_file,
                                 offset_from_file_name)
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
    return partitions_in(inventory(paths), paths[0], skipped, unreadable)


def partitions_in(found: Inventory, first: str, skipped: list[dict], unreadable: list[dict]) -> list[list[Segment]]:
    """The segments of each partition of ``found`` (one list per partition directory); the rest to
    ``skipped`` or ``unreadable``.  NothingFound, naming ``first``, when there is no segment at all."""
    unreadable.extend({"path": f.path, "reason": f.unreadable} for f in found.unreadable)
    logs = [partition.logs for partition in found.partitions if partition.logs]
    skipped.extend({"path": f.path, "reason": _NOT_A_SEGMENT} for f in found.outside(*logs))
    if not logs and not unreadable:
        raise NothingFound("no Kafka segments in this directory", first)
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


INDEX_SUFFIXES = (INDEX, TIME_INDEX, TXN_INDEX)


def index_contents(result: dict) -> list[tuple[str, bytes]]:
    """(suffix, bytes) of the indexes a segment's recovery writes: a .txnindex only when it aborted some."""
    contents = [(INDEX, result["offset_index"]), (TIME_INDEX, result["time_index"])]
    if result["txn_index"] is not None:
        contents.append((TXN_INDEX, result["txn_index"]))
    return contents


def segment_entry(segment: Segment, result: dict, written: list[dict]) -> dict:
    """A segment's item of the report: its recovery's figures (not the index bytes) and what was written."""
    entry = {"log": segment.log_path, "base_offset": segment.base_offset}
    entry.update({k: v for k, v in result.items() if k not in ("offset_index", "time_index", "txn_index")})
    entry["written"] = written
    return entry


def rebuild_index(paths: list[str], out_dir: str | None = None, in_place: bool = False,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, progress: RunProgress | None = None,
                  hash_inputs: bool = True, force: bool = False) -> KafkaRebuildReport:
    """Rebuild every segment's indexes, a partition at a time (``pipeline.rebuild`` runs them as tasks).

    Out of place each partition's indexes go to its path below the given path
    that holds it (``out_dir/<partition>/`` for a log dir, ``out_dir/broker1/<partition>/``
    for replicas side by side below one path), or, when log dirs given side by side
    hold partitions of one name, below ``out_dir/<n>-<log dir name>/``, numbered from 1
    as given (``safe_write.tree_outputs``); every output is checked before
    anything is computed or written (see ``safe_write.plan_outputs``).
    """
    skipped: list[dict] = []
    unreadable: list[dict] = []
    groups = _partitions_of(paths, skipped, unreadable)
    places = tree_outputs([os.path.dirname(segments[0].log_path) for segments in groups], paths, out_dir) \
        if out_dir is not None else None
    targets = [partition_output(segment.log_path, out_dir, in_place, file_name(segment.base_offset, suffix), places)
               for segments in groups for segment in segments for suffix in INDEX_SUFFIXES]
    plan_outputs(targets, paths, in_place, force)
    logs = [[os.path.abspath(s.log_path) for s in segments] for segments in groups]  # as tasks read them
    if progress is not None:
        progress.plan((path, os.path.getsize(path)) for paths_of in logs for path in paths_of)
    # everything computed before the first index is written (a helper process may take a share of the checksums)
    results = [recover_partition(paths_of, producer_snapshot(paths_of[0]), index_interval_bytes, progress,
                                 hash_inputs, parallel=True) for paths_of in logs]
    report = {"index_interval_bytes": index_interval_bytes, "segments": [], "skipped": skipped,
              "unreadable": unreadable}
    for segments, computed in zip(groups, results):
        for segment, result in zip(segments, computed):
            written = [write_atomically(partition_output(segment.log_path, out_dir, in_place,
                                                         file_name(segment.base_offset, suffix), places), data,
                                        replace=in_place or force) for suffix, data in index_contents(result)]
            report["segments"].append(segment_entry(segment, result, written))
    return report


def producer_snapshot(first_log: str) -> str:
    """The producer snapshot a partition's state is seeded from: the one at its first segment's base offset."""
    return os.path.join(os.path.dirname(first_log), file_name(offset_from_file_name(first_log), PRODUCER_SNAPSHOT))
