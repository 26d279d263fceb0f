"""`rebuild-index --engine spark`: index bytes computed in tasks, written by the driver.

Open transactions carry from one segment of a partition to the next (an
ABORT marker in segment N can close a transaction opened in segment N-1), so
one task takes one whole partition: it seeds the transaction state from the
producer snapshot at the partition's first segment, as the local rebuild and
Kafka's log loading do, and runs ``recover_segment`` — the same recovery
engine — over its segments in offset order.  Tasks only compute: they return
the .index/.timeindex/.txnindex bytes, and the driver writes them through
``safe_write`` (temp file, fsync, read back, rename) to the same places and
builds the same report as the local ``rebuild_index``.
"""

from __future__ import annotations

import os

from segtool.engine.partition import Segment
from segtool.engine.recovery import DEFAULT_INDEX_INTERVAL_BYTES, ProducerTxnState, recover_segment
from segtool.engine.safe_write import check_out_dir, output_path, write_atomically
from segtool.engine.source import sha256_of
from segtool.ops.rebuild import _segments_of


def rebuild_partition(item: tuple) -> list[dict]:
    """Task: recover every segment of one partition in order; index bytes and the report fields."""
    log_paths, snapshot, index_interval_bytes = item
    txn_state = ProducerTxnState.from_snapshot(snapshot)
    out = []
    for log_path in log_paths:
        segment = Segment(log_path)
        recovery = recover_segment(segment.log, segment.log_path, segment.base_offset, index_interval_bytes, txn_state)
        out.append({
            "log_sha256": sha256_of(segment.log_path),
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


def rebuild_distributed(paths: list[str], engine, out_dir: str | None = None, in_place: bool = False,
                        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> dict:
    check_out_dir(out_dir, paths)
    groups = []  # (argument path, segments of one partition)
    for path in paths:
        for segments in _segments_of(path):
            groups.append((path, segments))
    items = []
    for _, segments in groups:
        first = segments[0]
        snapshot = os.path.join(os.path.dirname(os.path.abspath(first.log_path)), f"{first.base_offset:020d}.snapshot")
        # absolute paths: executors have their own working directory
        items.append(([os.path.abspath(s.log_path) for s in segments], snapshot, index_interval_bytes))
    costs = [sum(os.path.getsize(p) for p in item[0]) for item in items]
    results = engine.map(rebuild_partition, items, costs, description="segtool rebuild-index")
    report = {"index_interval_bytes": index_interval_bytes, "segments": []}
    for (path, segments), computed in zip(groups, results):
        for segment, result in zip(segments, computed):
            target_dir = out_dir
            if out_dir is not None and os.path.isdir(path):
                target_dir = os.path.join(out_dir, os.path.basename(os.path.dirname(segment.log_path)))
            stem = f"{segment.base_offset:020d}"
            written = [
                write_atomically(output_path(segment.log_path, target_dir, in_place, stem + ".index"),
                                 result["offset_index"], backup=in_place),
                write_atomically(output_path(segment.log_path, target_dir, in_place, stem + ".timeindex"),
                                 result["time_index"], backup=in_place),
            ]
            if result["txn_index"] is not None:
                written.append(write_atomically(output_path(segment.log_path, target_dir, in_place, stem + ".txnindex"),
                                                result["txn_index"], backup=in_place))
            entry = {"log": segment.log_path, "log_sha256": result["log_sha256"], "base_offset": segment.base_offset}
            entry.update({k: v for k, v in result.items()
                          if k not in ("log_sha256", "offset_index", "time_index", "txn_index")})
            entry["written"] = written
            report["segments"].append(entry)
    return report
