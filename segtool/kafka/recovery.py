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

import bisect
import os
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum

from segtool.errors import CorruptData, SegtoolError
from segtool.formats.checksums import ChecksumHelper
from segtool.kafka.index import OFFSET_INDEX_LAYOUT, TIME_INDEX_LAYOUT, TXN_INDEX_LAYOUT
from segtool.kafka.log import (DEFAULT_CAP, BATCH_V2_OVERHEAD, NO_TIMESTAMP, BatchHeaders, HeaderScan,
                               RecordBatch)
from segtool.kafka.records import batch_records, control_record_type
from segtool.formats.outcomes import WalkEnd

DEFAULT_INDEX_INTERVAL_BYTES = 4096
PARALLEL_MIN_BYTES = 64 * 1024 * 1024  # below this, starting a helper process costs more than it saves
_INT32_MAX = 2**31 - 1


@dataclass
class ProducerTxnState:
    """Open transactions by producer id: the first offset of each (ProducerStateManager.ongoingTxns)."""

    ongoing: dict[int, int] = field(default_factory=dict)
    snapshot_error: SegtoolError | None = None  # why the snapshot was not loaded (then the state starts empty)

    @classmethod
    def from_snapshot(cls, path: str) -> "ProducerTxnState":
        """Seed from the producer snapshot at a segment's base offset, as log loading does.  A snapshot
        Kafka cannot read (``CorruptSnapshotException``) is deleted by ``ProducerStateManager.loadFromSnapshot``,
        which goes on without it: the state starts empty and ``snapshot_error`` says why."""
        state = cls()
        if os.path.exists(path):  # imported only when there is a snapshot: construct is slow to import
            from segtool.kafka.state import read_producer_snapshot

            try:
                entries = read_producer_snapshot(path).entries
            except SegtoolError as error:
                state.snapshot_error = error
                return state
            for entry in entries:
                if entry.current_txn_first_offset >= 0:
                    state.ongoing[entry.producer_id] = entry.current_txn_first_offset
        return state

    def last_stable_offset(self, completing_pid: int, last_offset: int) -> int:
        """First offset of the earliest other open transaction, else the marker's offset + 1."""
        others = [first for pid, first in self.ongoing.items() if pid != completing_pid]
        return min(others) if others else last_offset + 1


class RecoveryStop(StrEnum):
    """Why recovery keeps less than the whole file (``SegmentRecovery.stop_reason``)."""

    INVALID_BATCH = "invalid_batch"  # ensureValid refuses the batch (too short a v2 header, or its CRC)
    OFFSET_OUT_OF_RANGE = "offset_out_of_range"  # beyond 32 bits from the base (LogSegmentOffsetOverflowException)
    TRUNCATED = "truncated"  # the last batch is cut short by the end of the file
    CORRUPT_FRAMING = "corrupt_framing"  # a size field below the smallest batch


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
    stop_reason: RecoveryStop | None  # None when the whole file is valid
    stop_message: str | None
    batches: int = 0
    records: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    next_offset: int | None = None
    framing_error: CorruptData | None = None  # where batch framing itself broke, if it did
    framed_bytes: int = 0  # end of the last well-framed batch

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


class SegmentObserver(ABC):
    """What ``recover_segment`` shows every well-framed batch to (verify's checks).

    Regular chunks (v2 batches with whole headers) come as columns; the others
    batch by batch.
    """

    @abstractmethod
    def chunk(self, headers: BatchHeaders) -> None:
        """A regular chunk."""

    @abstractmethod
    def batch(self, batch: RecordBatch) -> None:
        """One batch of an irregular chunk."""


class _Recoverer:
    """LogSegment.recover's running state, fed batch by batch or a chunk of columns at a time."""

    def __init__(self, base_offset: int, index_interval_bytes: int, txn_state: ProducerTxnState,
                 count_records: bool, log_path: str, cap: int):
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.txn_state = txn_state
        self.count_records = count_records
        self.log_path, self.cap = log_path, cap
        self.offset_entries: list[tuple[int, int]] = []
        self.time_entries: list[tuple[int, int]] = []
        self.aborted: list[tuple[int, int, int, int]] = []
        self.valid_bytes = 0
        self.last_index_entry = 0
        self.max_ts, self.max_ts_offset = NO_TIMESTAMP, -1
        self.last_time_entry = NO_TIMESTAMP
        self.stop_reason = self.stop_message = None
        self.batches = self.records = 0
        self.next_offset = None

    def _index_entry(self, relative_offset: int, position: int, max_ts: int, max_ts_offset: int) -> None:
        self.offset_entries.append((relative_offset, position))
        if max_ts > self.last_time_entry:
            self.last_time_entry = max_ts
            self.time_entries.append((max_ts, max_ts_offset - self.base_offset))
        self.last_index_entry = position

    def _index_entries(self, rows, last, position, running, running_offset) -> None:
        """``_index_entry`` for the batches at ``rows`` (in file order) of the columns."""
        import numpy as np

        relative = (last[rows] - self.base_offset).tolist()
        at = position[rows].tolist()
        self.offset_entries.extend(zip(relative, at))
        stamps = running[rows]
        # the running maximum never falls, so a time entry is due where it rose
        rose = stamps > np.concatenate(([self.last_time_entry], stamps[:-1]))
        if rose.any():
            self.time_entries.extend(zip(stamps[rose].tolist(),
                                         (running_offset[rows][rose] - self.base_offset).tolist()))
            self.last_time_entry = int(stamps[-1])
        self.last_index_entry = at[-1]

    def batch(self, batch: RecordBatch) -> None:
        """One batch, exactly as the broker's loop handles it."""
        problem = ensure_valid(batch)
        if problem is not None:
            self.stop_reason, self.stop_message = RecoveryStop.INVALID_BATCH, problem
            return
        if batch.last_offset - self.base_offset > _INT32_MAX or batch.last_offset < self.base_offset:
            self.stop_reason = RecoveryStop.OFFSET_OUT_OF_RANGE
            self.stop_message = (f"batch last offset {batch.last_offset} does not fit the segment's "
                                 f"32-bit relative offsets from base {self.base_offset}")
            return
        if batch.max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_offset = batch.max_timestamp, batch.last_offset
        if self.valid_bytes - self.last_index_entry > self.interval:
            self._index_entry(batch.last_offset - self.base_offset, self.valid_bytes, self.max_ts, self.max_ts_offset)
        self.valid_bytes += batch.size
        self.batches += 1
        self.next_offset = batch.last_offset + 1
        if batch.magic >= 2:
            _update_transactions(batch, self.txn_state, self.aborted, self.log_path, self.cap)
        if self.count_records:
            records = batch.record_count if batch.magic >= 2 else len(batch_records(batch, self.log_path, self.cap))
            self.records += records

    def chunk(self, headers: BatchHeaders) -> None:
        """A regular chunk without transactional batches: the same rules over columns."""
        import numpy as np

        base = self.base_offset
        last = headers.column("base_offset") + headers.column("last_offset_delta")
        valid = ((headers.column("crc") == headers.computed_crc)
                 & (last - base <= _INT32_MAX) & (last >= base))
        k = int(np.argmin(valid)) if not valid.all() else len(headers)
        if k:
            position, size = headers.position[:k], headers.size[:k]
            last = last[:k]
            ts = headers.column("max_timestamp")[:k]
            # the running maximum timestamp after each batch, and the last offset of the
            # batch that first reached it (a batch takes over only with a larger timestamp)
            running = np.maximum.accumulate(np.concatenate(([self.max_ts], ts)))
            rises = ts > running[:-1]
            running = running[1:]
            taker = np.maximum.accumulate(np.where(rises, np.arange(k), -1))
            running_offset = np.where(taker >= 0, last[np.maximum(taker, 0)], self.max_ts_offset)
            # index entries: the first batch starting more than `interval` bytes past the
            # last entry; after a batch larger than the interval that is simply the next one
            positions = headers.positions
            small = np.flatnonzero(size <= self.interval).tolist()
            rows = []
            i = bisect.bisect_right(positions, self.last_index_entry + self.interval, 0, k)
            while i < k:
                run_end = small[bisect.bisect_left(small, i)] if small and small[-1] >= i else k - 1
                rows.extend(range(i, run_end + 1))
                i = bisect.bisect_right(positions, positions[run_end] + self.interval, run_end + 1, k)
            if rows:
                self._index_entries(np.array(rows), last, position, running, running_offset)
            self.max_ts, self.max_ts_offset = int(running[-1]), int(running_offset[-1])
            self.valid_bytes = int(position[-1] + size[-1])
            self.batches += k
            self.next_offset = int(last[-1]) + 1
            if self.count_records:
                self.records += int(headers.column("record_count")[:k].sum())
        if k < len(headers):
            self.batch(headers.batch(k))  # the broker's own words for why it stops here

    def take(self, headers: BatchHeaders) -> None:
        """Feed a regular chunk: as columns unless it holds transactional batches."""
        if not (headers.column("attributes") & 0x30).any():
            self.chunk(headers)
            return
        for batch in headers.batches():
            self.batch(batch)
            if self.stop_reason is not None:
                return


def recover_segment(buf, log_path: str, base_offset: int,
                    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    txn_state: ProducerTxnState | None = None, count_records: bool = False,
                    cap: int = DEFAULT_CAP, progress=None,
                    observe: SegmentObserver | None = None, parallel: bool = False) -> SegmentRecovery:
    """Run LogSegment.recover over ``buf`` without writing anything.

    ``observe``, when given, sees every well-framed batch of the file,
    including those after the point where recovery stops (verify reports them
    in the same single pass).  With ``parallel``, a large file's checksums are
    shared with a helper process (for a command run on its own, not for the
    tasks of a pipeline that already keeps every core busy).
    """
    remembered = _remembered_recoveries
    key = (log_path, base_offset, index_interval_bytes, cap, len(buf))
    if remembered is not None and txn_state is None and not count_records:
        if observe is None and key in remembered:
            return remembered[key]
    else:
        remembered = None
    helper = None
    if parallel and len(buf) >= PARALLEL_MIN_BYTES and (os.cpu_count() or 1) > 1 and hasattr(os, "fork"):
        helper = ChecksumHelper(buf)
    try:
        recovery = _recover(buf, log_path, base_offset, index_interval_bytes, txn_state, count_records, cap,
                            progress, observe, helper)
    finally:
        if helper is not None:
            helper.close()
    if remembered is not None:
        remembered[key] = recovery
    return recovery


_remembered_recoveries: dict | None = None


@contextmanager
def recoveries_remembered():
    """Within it each segment is recovered once: ``report`` runs verify, then the startup plan over the
    same files, and the plan's recoveries are verify's (a second pass would double its time)."""
    global _remembered_recoveries
    outer, _remembered_recoveries = _remembered_recoveries, {} if _remembered_recoveries is None \
        else _remembered_recoveries
    try:
        yield
    finally:
        _remembered_recoveries = outer


def _recover(buf, log_path, base_offset, index_interval_bytes, txn_state, count_records, cap, progress, observe,
             helper) -> SegmentRecovery:
    state = _Recoverer(base_offset, index_interval_bytes,
                       ProducerTxnState() if txn_state is None else txn_state, count_records, log_path, cap)
    framing_error = None
    scan = HeaderScan(buf, log_path, helper)
    framed_bytes = None
    try:
        for headers in scan:
            if headers.regular:
                if observe is not None:
                    observe.chunk(headers)
                if state.stop_reason is None:
                    state.take(headers)
            else:  # legacy messages or short batches: one by one, as framed
                batches = headers.batches()
                try:
                    for batch in batches:
                        if observe is not None:
                            observe.batch(batch)
                        if state.stop_reason is None:
                            state.batch(batch)
                except CorruptData:
                    framed_bytes = batches.valid_bytes
                    raise
            if state.stop_reason is not None and observe is None:
                break
            if progress is not None:
                progress(state.valid_bytes)
        else:
            if scan.stop_reason is WalkEnd.TRUNCATED and state.stop_reason is None:
                state.stop_reason = RecoveryStop.TRUNCATED
                state.stop_message = "the last batch is cut short by the end of the file"
    except CorruptData as exc:
        framing_error = exc
        if state.stop_reason is None:
            state.stop_reason, state.stop_message = RecoveryStop.CORRUPT_FRAMING, exc.message
    # the closing entry of a normally closed segment
    time_entries = state.time_entries
    if state.max_ts > state.last_time_entry:
        time_entries.append((state.max_ts, state.max_ts_offset - base_offset))
    result = SegmentRecovery(
        log_path=log_path, base_offset=base_offset, size=len(buf), valid_bytes=state.valid_bytes,
        offset_entries=state.offset_entries, time_entries=time_entries, aborted_txns=state.aborted,
        stop_reason=state.stop_reason, stop_message=state.stop_message, batches=state.batches,
        records=state.records, max_timestamp=state.max_ts, offset_of_max_timestamp=state.max_ts_offset,
        next_offset=state.next_offset,
    )
    result.framing_error = framing_error
    result.framed_bytes = scan.valid_bytes if framed_bytes is None else framed_bytes
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
