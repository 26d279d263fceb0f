"""A Kafka partition directory as the broker sees it: segments, indexes, lookups.

``PartitionView`` keeps segments keyed by base offset with a floor lookup (the
role of the broker's skip list).  Each ``Segment`` answers the broker's own
questions: which record a fetch at offset N returns (``read_from``), which record
is the first at or after timestamp T (``find_offset_by_timestamp``), and what is
its largest timestamp.  Every command reads Kafka data through these classes.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

from segtool.source import open_buffer
from segtool.errors import CorruptData, NothingFound, UnreadableInput
from segtool.kafka import names as kafka_names
from segtool.kafka.names import has_offset_name, offset_from_file_name
from segtool.kafka.index import NO_TIMESTAMP, OffsetIndex, TimeIndex
from segtool.kafka.log import (DEFAULT_CAP, BatchScan, RecordBatch, batch_at, seek_offset_position,
                               seek_timestamp_position)
from segtool.kafka.records import batch_records, first_record_where
from segtool.kafka.recovery import SegmentRecovery



@dataclass(slots=True)
class RecordHit:
    """A record found by a lookup, with where it lives."""

    offset: int
    timestamp: int
    segment: str  # path of the .log file
    position: int  # byte position of its batch
    batch: RecordBatch
    record: object

    def as_dict(self) -> dict:
        rec = self.record
        return {
            "offset": self.offset,
            "timestamp": self.timestamp,
            "timestamp_type": self.batch.timestamp_type,
            "segment": self.segment,
            "position": self.position,
            "key": None if rec.key is None else rec.key.decode("utf-8", "replace"),
            "key_size": rec.key_size,
            "value_size": rec.value_size,
            "batch_base_offset": self.batch.base_offset,
            "batch_last_offset": self.batch.last_offset,
        }


class Segment:
    """One segment: its .log and the indexes beside it (any may be missing).

    ``suffix`` is ``".swap"`` for a segment an interrupted swap left as
    ``<base>.log.swap`` with ``<base>.index.swap`` and so on.
    """

    def __init__(self, log_path: str, cap: int = DEFAULT_CAP, suffix: str = ""):
        self.log_path = log_path
        self.base_offset = offset_from_file_name(log_path)
        self.cap = cap
        self.index_path = kafka_names.sibling(log_path, kafka_names.INDEX + suffix)
        self.timeindex_path = kafka_names.sibling(log_path, kafka_names.TIME_INDEX + suffix)
        self.txnindex_path = kafka_names.sibling(log_path, kafka_names.TXN_INDEX + suffix)
        self.damaged_at: CorruptData | None = None  # where reading the segment to its end failed
        # set once the broker's load recovered this segment (``recovered``): its valid bytes and rebuilt indexes
        self.recovery: SegmentRecovery | None = None

    def recovered(self, recovery: SegmentRecovery) -> None:
        """The segment as the broker holds it after ``LogSegment.recover``: the bytes up to the first
        invalid batch, searched through the indexes recovery rebuilt (the files' are not trusted)."""
        self.recovery = recovery

    def __repr__(self) -> str:
        return f"Segment({self.log_path!r})"

    @cached_property
    def log(self):
        return open_buffer(self.log_path)

    # Indexes are searched over their valid entries only: a hot copy's preallocated
    # zero tail is what the broker's recovery trims away before it answers.
    @cached_property
    def offset_index(self) -> OffsetIndex | None:
        if not os.path.exists(self.index_path):
            return None
        return OffsetIndex(self.index_path, self.base_offset).trim_to_valid()

    @cached_property
    def time_index(self) -> TimeIndex | None:
        if not os.path.exists(self.timeindex_path):
            return None
        return TimeIndex(self.timeindex_path, self.base_offset).trim_to_valid()

    @property
    def size(self) -> int:
        # the file's size without mapping it: a startup plan sizes every segment before it reads any
        return len(self.__dict__["log"]) if "log" in self.__dict__ else os.stat(self.log_path).st_size

    def release(self) -> None:
        """Drop this segment's mappings, each holding a file descriptor, until they are needed again:
        a partition of thousands of segments is read one segment at a time."""
        for name in ("log", "offset_index", "time_index"):
            self.__dict__.pop(name, None)

    @property
    def end(self) -> int:
        """Where the segment's readable bytes end: its size, or where recovery truncates it."""
        return len(self.log) if self.recovery is None else self.recovery.valid_bytes

    def batches_from(self, position: int = 0) -> Iterator[RecordBatch]:
        return iter(BatchScan(self.log, position, self.end, self.log_path))

    def records(self, batch: RecordBatch):
        return batch_records(batch, self.log_path, self.cap)

    # -- the broker's questions --------------------------------------------

    def index_position(self, offset: int) -> int:
        """OffsetIndex.lookup: byte position to start scanning for ``offset``."""
        if self.recovery is not None:
            entries = self.recovery.offset_entries
            slot = bisect.bisect_right(entries, (offset - self.base_offset, self.end)) - 1
            return 0 if slot < 0 else entries[slot][1]
        if self.offset_index is None:
            return 0
        position = self.offset_index.lookup_position(offset)
        # a damaged index may point outside the log: scan from the start instead
        return position if 0 <= position <= self.size else 0

    def batches_reaching(self, offset: int) -> Iterator[RecordBatch]:
        """Batches from the first whose last offset >= ``offset``, found from the offset index."""
        return iter(BatchScan(self.log, self.index_position(offset), self.end, self.log_path).seek_offset(offset))

    def read_from(self, offset: int) -> RecordHit | None:
        """The first record with offset >= ``offset`` in this segment (what a fetch returns).

        Control records are skipped, as consumers never see them.
        """
        log, path = self.log, self.log_path
        position, found = seek_offset_position(log, self.index_position(offset), self.end, offset)
        if found:  # the usual case, answered from one batch without a scanner
            batch = batch_at(log, position, path)
            hit = None if batch.is_control else self._hit(batch, offset, None)
            if hit is not None:
                return hit
            position = batch.end
        for batch in BatchScan(log, position, self.end, path):  # after a control batch or a compaction gap: read on
            hit = None if batch.is_control else self._hit(batch, offset, None)
            if hit is not None:
                return hit
        return None

    def _hit(self, batch: RecordBatch, min_offset: int, min_timestamp: int | None) -> RecordHit | None:
        record = first_record_where(batch, min_offset, min_timestamp, self.log_path, self.cap)
        if record is None:
            return None
        return RecordHit(record.offset, record.timestamp, self.log_path, batch.position, batch, record)

    def max_timestamp_so_far(self) -> tuple[int, int]:
        """LogSegment.maxTimestampAndOffsetSoFar as loaded: the time index's last entry."""
        if self.recovery is not None:
            return ((self.recovery.max_timestamp, self.recovery.offset_of_max_timestamp)
                    if self.recovery.batches else (NO_TIMESTAMP, self.base_offset))
        if self.time_index is not None and self.time_index.entries > 0:
            entry = self.time_index.last_entry()
            return entry.timestamp, entry.offset
        # no time index: what recovery would rebuild, the largest batch max timestamp
        best = (NO_TIMESTAMP, self.base_offset)
        for batch in self.batches_from(0):
            if batch.max_timestamp > best[0]:
                best = (batch.max_timestamp, batch.last_offset)
        return best

    @cached_property
    def _largest_timestamp(self) -> int:
        ts = self.max_timestamp_so_far()[0]
        if ts >= 0:
            return ts
        return int(os.stat(self.log_path).st_mtime * 1000)

    @property
    def timestamp_from_mtime(self) -> bool:
        """Is the largest timestamp the file's mtime (a segment with no timestamped batch)?"""
        return self.max_timestamp_so_far()[0] < 0

    def largest_timestamp(self) -> int:
        """LogSegment.largestTimestamp: max timestamp so far, else the file's mtime (read once)."""
        return self._largest_timestamp

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> RecordHit | None:
        """LogSegment.findOffsetByTimestamp then FileRecords.searchForTimestamp."""
        if self.recovery is not None:
            entries = self.recovery.time_entries
            slot = bisect.bisect_right(entries, (timestamp, 2**63)) - 1
            floor_offset = self.base_offset + (entries[slot][1] if slot >= 0 else 0)
        elif self.time_index is not None:
            from_index = self.time_index.lookup(timestamp)
            floor_offset = from_index.offset
        else:
            floor_offset = self.base_offset
        log, path = self.log, self.log_path
        start = self.index_position(max(floor_offset, starting_offset))
        position, found = seek_timestamp_position(log, start, self.end, timestamp)
        if found:  # the usual case, answered from one batch without a scanner
            batch = batch_at(log, position, path)
            hit = self._hit(batch, starting_offset, timestamp)
            if hit is not None:
                return hit
            position = batch.end
        for batch in BatchScan(log, position, self.end, path):  # legacy messages, damage, no match yet: read on
            if batch.max_timestamp >= timestamp:
                hit = self._hit(batch, starting_offset, timestamp)
                if hit is not None:
                    return hit
        return None

    def next_offset(self) -> int:
        """The offset after the last batch (LogSegment.readNextOffset)."""
        if self.recovery is not None:
            return self.base_offset if self.recovery.next_offset is None else self.recovery.next_offset
        start = 0
        if self.offset_index is not None and self.offset_index.entries > 0:
            start = self.offset_index.last_entry().position
            if not 0 <= start <= self.size:
                start = 0  # a damaged index entry: scan the whole segment
        last = None
        try:
            for batch in self.batches_from(start):
                last = batch
        except CorruptData as exc:
            # a torn or zero-filled tail: Kafka's recovery truncates the segment there, so the log
            # ends with the last whole batch before it
            self.damaged_at = exc
        return self.base_offset if last is None else last.last_offset + 1


def _base_offset(name: str) -> int | None:
    return offset_from_file_name(name) if has_offset_name(name) else None


def _loaded_segments(directory: str, cap: int, complete_swaps: bool) -> tuple[list[Segment], list[str]]:
    """The segments Kafka's LogLoader would load from ``directory``, and notes on what it changed.

    Kafka ignores (deletes) ``.deleted`` and ``.cleaned`` files; a ``.swap``
    file at or above the lowest ``.cleaned`` offset is an unfinished split and
    is dropped too.  The other ``<base>.log.swap`` files complete an
    interrupted cleaning or split: every segment whose base offset lies in
    [lowest swap base, highest swap next offset) is dropped and the swap
    segments take their place.  Without ``complete_swaps`` only ``.log`` files
    count, as they are on disk.
    """
    notes: list[str] = []
    names = []
    for name in sorted(os.listdir(directory)):
        if _base_offset(name) is None:
            continue
        if not os.path.isfile(os.path.join(directory, name)):  # a dangling link, a loop, a directory, a FIFO
            notes.append(f"{name} is not a readable file and is left out")
            continue
        names.append(name)
    logs = [name for name in names if name.endswith(kafka_names.LOG)]
    swaps: list[Segment] = []
    if complete_swaps:
        cleaned = [_base_offset(name) for name in names if name.endswith(kafka_names.CLEANED)]
        lowest_cleaned = min(cleaned, default=None)
        for name in names:
            if not name.endswith(kafka_names.LOG + kafka_names.SWAP):
                continue
            if lowest_cleaned is not None and _base_offset(name) >= lowest_cleaned:
                notes.append(f"{name} is ignored: Kafka deletes a swap file at or above the lowest .cleaned "
                             f"offset ({lowest_cleaned}) as an unfinished segment split")
                continue
            swaps.append(Segment(os.path.join(directory, name), cap, suffix=kafka_names.SWAP))
    if swaps:
        low = min(segment.base_offset for segment in swaps)
        high = max(segment.next_offset() for segment in swaps)
        swapped_in = {segment.base_offset for segment in swaps}
        replaced = [name for name in logs if low <= _base_offset(name) < high or _base_offset(name) in swapped_in]
        logs = [name for name in logs if name not in replaced]
        notes.append(f"{', '.join(os.path.basename(s.log_path) for s in swaps)}: an interrupted log cleaning or "
                     f"split that Kafka completes when it loads the partition; answered as after it, with "
                     f"{', '.join(replaced) if replaced else 'no segment'} replaced")
    segments = [Segment(os.path.join(directory, name), cap) for name in logs] + swaps
    segments.sort(key=lambda segment: segment.base_offset)
    return segments, notes


class PartitionView:
    """Segments of one partition directory, keyed by base offset.

    By default the segments are those Kafka would load, an interrupted swap
    completed (``notes`` says so); ``complete_swaps=False`` takes the ``.log``
    files as they are.
    """

    def __init__(self, directory: str, cap: int = DEFAULT_CAP, complete_swaps: bool = True):
        if not os.path.lexists(directory):
            raise UnreadableInput("no such file or directory", directory)
        if not os.path.isdir(directory):
            raise NothingFound("a file, not a partition directory", directory)
        self.directory = directory
        self.segments, self.notes = _loaded_segments(directory, cap, complete_swaps)
        if not self.segments:
            raise NothingFound("no .log segments in this directory", directory)
        self.base_offsets = [s.base_offset for s in self.segments]

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.directory))

    def floor_segment(self, offset: int) -> int:
        """Index of the segment with the largest base offset <= ``offset`` (-1 if none)."""
        return bisect.bisect_right(self.base_offsets, offset) - 1

    @cached_property
    def log_start_offset(self) -> int:
        """From the log dir's log-start-offset-checkpoint when present, else the first segment."""
        parent = os.path.dirname(os.path.abspath(self.directory))
        checkpoint = os.path.join(parent, "log-start-offset-checkpoint")
        topic, partition = kafka_names.topic_partition(self.name)
        if os.path.exists(checkpoint) and partition is not None and kafka_names.renamed_directory_state(self.name) is None:
            from segtool.kafka.state import read_offset_checkpoint

            try:
                found = read_offset_checkpoint(checkpoint).get((topic, partition))
            except Exception:  # an unreadable checkpoint: fall back like a fresh load
                found = None
            if found is not None:
                return max(found, self.base_offsets[0])
        return self.base_offsets[0]

    def loaded(self, log_start_offset: int, log_end_offset: int, recoveries: dict[str, SegmentRecovery],
               deleted: set[str]) -> None:
        """Answer as the broker does once its load is done (``kafka.startup.load_partition`` gives the plan):
        the segments the load deletes are gone, those it recovered end where it truncated them, and the
        log spans ``log_start_offset`` to ``log_end_offset``."""
        self.segments = [s for s in self.segments if s.log_path not in deleted]
        for segment in self.segments:
            if segment.log_path in recoveries:
                segment.recovered(recoveries[segment.log_path])
        self.base_offsets = [s.base_offset for s in self.segments]
        self.__dict__["log_end_offset"] = log_end_offset
        self.__dict__["log_start_offset"] = log_start_offset
        self.__dict__.pop("_running_largest_timestamps", None)

    @cached_property
    def log_end_offset(self) -> int:
        last = self.segments[-1]
        end = last.next_offset()
        if last.damaged_at is not None:
            self.notes.append(f"{os.path.basename(last.log_path)} cannot be read past byte {last.damaged_at.offset} "
                              f"({last.damaged_at.message}): Kafka's recovery truncates it there, and the log ends "
                              f"at offset {end}")
        return end

    def read_at(self, offset: int) -> RecordHit | None:
        """The record a fetch at ``offset`` returns first: the first record with offset >= it."""
        if offset >= self.log_end_offset:
            return None
        segments = self.segments
        for i in range(max(self.floor_segment(offset), 0), len(segments)):
            hit = segments[i].read_from(offset)
            if hit is not None:
                return hit
        return None

    @cached_property
    def _running_largest_timestamps(self) -> list[int]:
        """Running maximum of the segments' largest timestamps (monotonic, so it can be bisected)."""
        out, best = [], None
        for segment in self.segments:
            ts = segment.largest_timestamp()
            best = ts if best is None or ts > best else best
            out.append(best)
        return out

    def offset_for_timestamp(self, timestamp: int) -> RecordHit | None:
        """UnifiedLog.fetchOffsetByTimestamp for a target timestamp (ListOffsets).

        Kafka takes the first segment whose largest timestamp >= the target; that
        is the first place the running maximum reaches it, found by bisection.
        """
        i = bisect.bisect_left(self._running_largest_timestamps, timestamp)
        if i == len(self.segments):
            return None
        return self.segments[i].find_offset_by_timestamp(timestamp, self.log_start_offset)

    def mtime_segments(self, timestamp: int) -> list[str]:
        """The segments whose file mtime stands in for their timestamp in the search for ``timestamp``.

        Kafka compares the target with each segment's largest timestamp up to the
        one it answers from; an empty segment's is its file's mtime, which copies
        often lose.
        """
        i = bisect.bisect_left(self._running_largest_timestamps, timestamp)
        return [s.log_path for s in self.segments[:i + 1] if s.timestamp_from_mtime]

    def max_timestamp_hit(self) -> RecordHit | None:
        """ListOffsets MAX_TIMESTAMP: the record carrying the partition's largest timestamp."""
        best_segment = None
        best = NO_TIMESTAMP - 1
        for segment in self.segments:
            ts = segment.max_timestamp_so_far()[0]
            if ts > best:  # maxBy keeps the first of equal maxima
                best, best_segment = ts, segment
        if best_segment is None:
            return None
        ts, offset = best_segment.max_timestamp_so_far()
        for batch in best_segment.batches_from(best_segment.index_position(offset)):
            if batch.max_timestamp == ts:
                for record in best_segment.records(batch):
                    if record.timestamp == ts:
                        return RecordHit(record.offset, ts, best_segment.log_path, batch.position, batch, record)
                return None
        return None
