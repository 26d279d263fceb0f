"""`rebuild-index`: the .index/.timeindex/.txnindex Kafka's recovery would write.

Segments of a partition are processed in offset order so open transactions
carry across segments (seeded from the producer snapshot at the first
segment's base offset, as log loading does).  Nothing is written next to the
input unless ``in_place`` is asked for.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from segtool.engine.partition import PartitionView, Segment
from segtool.engine.recovery import DEFAULT_INDEX_INTERVAL_BYTES, ProducerTxnState, recover_segment
from segtool.engine.safe_write import check_out_dir, output_path, write_atomically
from segtool.engine.source import sha256_of

_hasher = ThreadPoolExecutor(max_workers=1)
from segtool.errors import UnreadableInput


def _segments_of(path: str) -> list[list[Segment]]:
    """Groups of segments (one group per partition) named by a .log file or a directory."""
    if os.path.isdir(path):
        logs = [n for n in os.listdir(path) if n.endswith(".log")]
        if logs:
            return [PartitionView(path).segments]
        groups = []
        for name in sorted(os.listdir(path)):
            sub = os.path.join(path, name)
            if os.path.isdir(sub) and any(n.endswith(".log") for n in os.listdir(sub)):
                groups.append(PartitionView(sub).segments)
        if not groups:
            raise UnreadableInput("no Kafka segments in this directory", path)
        return groups
    if path.endswith(".log"):
        return [[Segment(path)]]
    raise UnreadableInput("expected a .log segment or a partition/log directory", path)


def rebuild_index(paths: list[str], out_dir: str | None = None, in_place: bool = False,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, progress_factory=None) -> dict:
    check_out_dir(out_dir, paths)
    report = {"index_interval_bytes": index_interval_bytes, "segments": []}
    for path in paths:
        for segments in _segments_of(path):
            txn_state = ProducerTxnState.from_snapshot(
                os.path.join(os.path.dirname(segments[0].log_path), f"{segments[0].base_offset:020d}.snapshot"))
            for segment in segments:
                progress = progress_factory(segment.log_path) if progress_factory else None
                digest = _hasher.submit(sha256_of, segment.log_path)  # on the other core, while we scan
                recovery = recover_segment(segment.log, segment.log_path, segment.base_offset,
                                           index_interval_bytes, txn_state, progress=progress)
                target_dir = out_dir
                if out_dir is not None and os.path.isdir(path):
                    target_dir = os.path.join(out_dir, os.path.basename(os.path.dirname(segment.log_path)))
                stem = f"{segment.base_offset:020d}"
                written = [
                    write_atomically(output_path(segment.log_path, target_dir, in_place, stem + ".index"),
                                     recovery.offset_index_bytes(), backup=in_place),
                    write_atomically(output_path(segment.log_path, target_dir, in_place, stem + ".timeindex"),
                                     recovery.time_index_bytes(), backup=in_place),
                ]
                if recovery.aborted_txns:
                    written.append(write_atomically(
                        output_path(segment.log_path, target_dir, in_place, stem + ".txnindex"),
                        recovery.txn_index_bytes(), backup=in_place))
                report["segments"].append({
                    "log": segment.log_path,
                    "log_sha256": digest.result(),
                    "base_offset": segment.base_offset,
                    "size": recovery.size,
                    "valid_bytes": recovery.valid_bytes,
                    "bytes_kafka_would_truncate": recovery.bytes_lost,
                    "stop_reason": recovery.stop_reason,
                    "stop_message": recovery.stop_message,
                    "offset_index_entries": len(recovery.offset_entries),
                    "time_index_entries": len(recovery.time_entries),
                    "aborted_transactions": len(recovery.aborted_txns),
                    "written": written,
                })
    return report
