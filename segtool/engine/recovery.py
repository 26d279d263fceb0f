"""Kafka's segment recovery (``LogSegment.recover``), computed from a read-only copy.

One pass over the batches, as the broker does on an unclean start:
- each batch must be valid (``ensureValid``: a full v2 header and a matching
  CRC-32C, or a matching legacy CRC32); the first invalid batch or corrupt
  framing ends the valid bytes, everything after is what recovery truncates;
- an offset index entry ``(batch last offset, batch start position)`` is added
  when more than ``index_interval_bytes`` (strict ``>``) were appended since the
  last entry, with a time index entry carrying the max timestamp so far and its
  batch's last offset, if that timestamp grew;
- a final time index entry for the largest timestamp closes the segment;
- aborted transactions (ABORT markers of producers with an open transaction)
  become ``.txnindex`` entries with the last stable offset at that moment.

The result is used by ``verify`` (recovery prediction) and ``rebuild-index``
(which writes the index bytes).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from segtool.errors import CorruptData
from segtool.formats.kafka_index import OFFSET_INDEX_LAYOUT, TIME_INDEX_LAYOUT, TXN_INDEX_LAYOUT
from segtool.formats.kafka_log import (
    BATCH_V2_OVERHEAD,
    NO_TIMESTAMP,
    BatchScan,
    RecordBatch,
    batch_records,
    control_record_type,
)

DEFAULT_INDEX_INTERVAL_BYTES = 4096
_INT32_MAX = 2**31 - 1


@dataclass
class ProducerTxnState:
    """Open transactions by producer id: the first offset of each (ProducerStateManager.ongoingTxns)."""

    ongoing: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, path: str) -> "ProducerTxnState":
        """Seed from the producer snapshot at a segment's base offset, as log loading does."""
        from segtool.formats.kafka_state import read_producer_snapshot

        state = cls()
        if os.path.exists(path):
            for entry in read_producer_snapshot(path).entries:
                if entry.current_txn_first_offset >= 0:
                    state.ongoing[entry.producer_id] = entry.current_txn_first_offset
        return state

    def last_stable_offset(self, completing_pid: int, last_offset: int) -> int:
        """First offset of the earliest other open transaction, else the marker's offset + 1."""
        others = [first for pid, first in self.ongoing.items() if pid != completing_pid]
        return min(others) if others else last_offset + 1


@dataclass
class SegmentRecovery:
    """What recovering one segment yields."""

    log_path: str
    base_offset: int
    size: int
    valid_bytes: int
    offset_entries: list[tuple[int, int]]  # (relative offset, position)
    time_entries: list[tuple[int, int]]  # (timestamp, relative offset)
    aborted_txns: list[tuple[int, int, int, int]]  # (producer id, first, last, last stable offset)
    stop_reason: str | None  # None when the whole file is valid
    stop_message: str | None
    batches: int = 0
    records: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    next_offset: int | None = None
    framing_error: CorruptData | None = None  # where batch framing itself broke, if it did
    framed_bytes: int = 0  # end of the last well-framed batch
    framing_stop: str | None = None  # "truncated" / "corrupt" / None

    @property
    def bytes_lost(self) -> int:
        return self.size - self.valid_bytes

    def offset_index_bytes(self) -> bytes:
        pack = OFFSET_INDEX_LAYOUT.packer.pack
        return b"".join(pack(rel, pos) for rel, pos in self.offset_entries)

    def time_index_bytes(self) -> bytes:
        pack = TIME_INDEX_LAYOUT.packer.pack
        return b"".join(pack(ts, rel) for ts, rel in self.time_entries)

    def txn_index_bytes(self) -> bytes:
        pack = TXN_INDEX_LAYOUT.packer.pack
        return b"".join(pack(0, pid, first, last, lso) for pid, first, last, lso in self.aborted_txns)


def ensure_valid(batch: RecordBatch) -> str | None:
    """Kafka's RecordBatch.ensureValid: None when valid, else the reason."""
    if batch.magic >= 2 and batch.size < BATCH_V2_OVERHEAD:
        return (f"Record batch is corrupt (the size {batch.size} is smaller than the minimum allowed "
                f"overhead {BATCH_V2_OVERHEAD})")
    computed = batch.computed_crc()
    if batch.crc != computed:
        return f"Record is corrupt (stored crc = {batch.crc}, computed crc = {computed})"
    return None


def recover_segment(buf, log_path: str, base_offset: int,
                    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    txn_state: ProducerTxnState | None = None, count_records: bool = False,
                    cap: int = 256 * 1024 * 1024, progress=None, observe=None) -> SegmentRecovery:
    """Run LogSegment.recover over ``buf`` without writing anything.

    ``observe(batch)``, when given, sees every well-framed batch of the file,
    including those after the point where recovery stops (verify reports them
    in the same single pass).
    """
    txn_state = ProducerTxnState() if txn_state is None else txn_state
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    aborted: list[tuple[int, int, int, int]] = []
    valid_bytes = 0
    last_index_entry = 0
    max_ts, max_ts_offset = NO_TIMESTAMP, -1
    last_time_entry = (NO_TIMESTAMP, base_offset)
    stop_reason = stop_message = None
    framing_error = None
    batches = records = 0
    next_offset = None
    scan = BatchScan(buf, path=log_path)
    try:
        for batch in scan:
            if observe is not None:
                observe(batch)
            if stop_reason is not None:
                continue  # recovery has stopped; the observer still sees the rest
            problem = ensure_valid(batch)
            if problem is not None:
                stop_reason, stop_message = "invalid_batch", problem
            elif batch.last_offset - base_offset > _INT32_MAX or batch.last_offset < base_offset:
                stop_reason = "offset_out_of_range"
                stop_message = (f"batch last offset {batch.last_offset} does not fit the segment's "
                                f"32-bit relative offsets from base {base_offset}")
            if stop_reason is not None:
                if observe is None:
                    break
                continue
            if batch.max_timestamp > max_ts:
                max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
            if valid_bytes - last_index_entry > index_interval_bytes:
                offset_entries.append((batch.last_offset - base_offset, valid_bytes))
                if max_ts > last_time_entry[0]:
                    last_time_entry = (max_ts, max_ts_offset)
                    time_entries.append((max_ts, max_ts_offset - base_offset))
                last_index_entry = valid_bytes
            valid_bytes += batch.size
            batches += 1
            next_offset = batch.last_offset + 1
            if batch.magic >= 2:
                _update_transactions(batch, txn_state, aborted, log_path, cap)
            if count_records:
                records += batch.record_count if batch.magic >= 2 else len(batch_records(batch, log_path, cap))
            if progress is not None:
                progress(valid_bytes)
        else:
            if scan.stop_reason == "truncated" and stop_reason is None:
                stop_reason = "truncated"
                stop_message = "the last batch is cut short by the end of the file"
    except CorruptData as exc:
        framing_error = exc
        if stop_reason is None:
            stop_reason, stop_message = "corrupt_framing", exc.message
    # the closing entry of a normally closed segment
    if max_ts > last_time_entry[0]:
        time_entries.append((max_ts, max_ts_offset - base_offset))
    result = SegmentRecovery(
        log_path=log_path, base_offset=base_offset, size=len(buf), valid_bytes=valid_bytes,
        offset_entries=offset_entries, time_entries=time_entries, aborted_txns=aborted,
        stop_reason=stop_reason, stop_message=stop_message, batches=batches, records=records,
        max_timestamp=max_ts, offset_of_max_timestamp=max_ts_offset, next_offset=next_offset,
    )
    result.framing_error = framing_error
    result.framed_bytes = scan.valid_bytes
    result.framing_stop = scan.stop_reason
    return result


def _update_transactions(batch: RecordBatch, state: ProducerTxnState, aborted: list, path, cap) -> None:
    if not batch.is_transactional:
        return
    pid = batch.producer_id
    if batch.is_control:
        records = batch_records(batch, path, cap)
        if not records:
            return
        type_id, name = control_record_type(records[0])
        first = state.ongoing.pop(pid, None)
        if first is not None and name == "ABORT":
            lso = state.last_stable_offset(pid, batch.last_offset)
            aborted.append((pid, first, batch.last_offset, lso))
    elif pid not in state.ongoing:
        state.ongoing[pid] = batch.base_offset


def records_after(buf, position: int, path: str, cap: int = 256 * 1024 * 1024) -> tuple[int, int]:
    """What recovery discards from ``position`` on.

    Returns (records in the well-framed batches there, CRC ignored — the records
    Kafka's tools could still list; records a torn last batch declares).
    """
    count = 0
    scan = BatchScan(buf, position, path=path)
    try:
        for batch in scan:
            if batch.magic >= 2:
                count += max(batch.record_count or 0, 0)
            else:
                try:
                    count += len(batch_records(batch, path, cap))
                except CorruptData:
                    count += 1
    except CorruptData:
        pass
    torn = 0
    end = scan.valid_bytes
    if scan.stop_reason == "truncated" and len(buf) - end >= BATCH_V2_OVERHEAD and buf[end + 16] == 2:
        (torn,) = struct.unpack_from(">i", buf, end + 57)
    return count, max(torn, 0)
