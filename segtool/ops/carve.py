"""`carve`: every Kafka batch and RocketMQ message in any bytes, grouped into runs, written as JSON Lines and Parquet.

Any file is just bytes here (a disk image, a core dump, a segment copied into
something else): ``engine.carving.find`` yields each checksum-valid batch or
message at whatever byte it starts, and the normal decoders decode it.  Finds
are grouped into runs as they come, in file and position order:

- Kafka: a batch joins the run whose next offset it starts at (``base_offset ==
  last_offset + 1``), preferring the run whose last batch ends right where it
  begins; failing that, the run whose last batch's producer (id, epoch) it
  continues by sequence, when its offsets come after that run's.  Runs cross
  files (the segments of one partition carve into one run).
- RocketMQ: one run per topic and queue id, ordered by queue offset.

A find that cannot be placed is still written (``run_id`` null, its reason in the
``unplaced`` column), counted, and listed in the report while fewer than
UNPLACED_LISTED are.  Its reason: its records do not decode, it is a second copy
of a batch or message already found, or its offsets conflict with a run (a
producer's next batch whose offsets overlap the run, a different message at a
queue offset already taken).  Without ``--records`` the finds of a chain are
decoded, placed and written a stretch at a time, as columns.
Inputs are only read; outputs follow ``engine.safe_write``'s rules.
"""

from __future__ import annotations

import json
import mmap
import os
from array import array
from bisect import bisect_left
from contextlib import ExitStack
from dataclasses import dataclass, field

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from segtool.engine.inventory import inventory
from segtool.engine.safe_write import plan_outputs, staged, write_atomically
from segtool.errors import SegtoolError, UnreadableInput
from segtool.engine.carving import (
    KAFKA, ROCKETMQ, Chain, Find, RangeSearch, SearchCounts, chains, merged_chains, search_range,
)
from segtool.formats.record_shapes import arrow_fields
from segtool.kafka.record_shape import BATCH_FIELDS, RECORD_FIELDS
from segtool.rocketmq.message_shape import MESSAGE_FIELDS, message_json
from segtool.formats.json_text import escape_line_ends
from segtool.kafka.log import (
    BATCH_HEADER_V2_FAST, BATCH_V2_OVERHEAD, CODEC_NAMES, TIMESTAMP_TYPES, RecordBatch, batch_at, increment_sequence,
    increment_sequences,
)
from segtool.kafka.records import batch_records
from segtool.rocketmq.msgid import format_host
from segtool.rocketmq.store_files import (
    NAME_VALUE_SEPARATOR, PROPERTY_KEYS, PROPERTY_SEPARATOR, PROPERTY_TAGS, PROPERTY_UNIQ_KEY, MessageColumns,
    decode_message, message_header,
)
from segtool.ops.dump_kafka_log import batch_item, record_item
from segtool.ops.output_schema import CarveReport
from segtool.ops.progress import RunProgress
from segtool.source import open_buffer, sha256_beside

FINDS_JSONL = "finds.jsonl"
KAFKA_BATCHES = "kafka_batches.parquet"
KAFKA_RECORDS = "kafka_records.parquet"
ROCKETMQ_MESSAGES = "rocketmq_messages.parquet"
REPORT = "carve-report.json"
OUTPUT_NAMES = (FINDS_JSONL, KAFKA_BATCHES, KAFKA_RECORDS, ROCKETMQ_MESSAGES, REPORT)

# why a find could not be placed in a run (``UnplacedFind.reason``)
UNDECODABLE = "undecodable"
DUPLICATE = "duplicate"
OFFSET_CONFLICT = "offset_conflict"

_PLACE_BITS = 48  # a find's place as one int: its file's index above its byte position
_PLACE_MASK = (1 << _PLACE_BITS) - 1
CHECKSUM_SPACE = 2 ** 32  # a random checksum matches one in 2^32 times
_ROWS_PER_PARQUET_BATCH = 8192  # rows held before they go to the Parquet writer: bounds memory
UNPLACED_LISTED = 1000  # unplaced finds the report lists (all are counted, and marked in the Parquet outputs)
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024  # a range searched as one task: a few seconds of work

# ``search_ranges(ranges)``: ``search_file_range`` of each (path, start, stop), in order, wherever it runs
SearchRanges = Callable[[list[tuple[str, int, int]]], list[RangeSearch | None]]

_FIND_COLUMNS = [("file", pa.string()), ("position", pa.int64()), ("size", pa.int64()), ("run_id", pa.int64()),
                 ("unplaced", pa.string())]
# the finds' own columns, then the items' fields with their types from the field tables
# (``kafka.record_shape``, ``rocketmq.message_shape``); a find's position and size are its batch's
KAFKA_BATCH_SCHEMA = pa.schema(_FIND_COLUMNS + arrow_fields(
    BATCH_FIELDS, tuple(f.name for f in BATCH_FIELDS if f.name not in ("position", "size", "crc_valid")))
    + [("records_decoded", pa.int32())])
KAFKA_RECORD_SCHEMA = pa.schema([("file", pa.string())] + arrow_fields(RECORD_FIELDS, ("batch_position",))
                                + [("run_id", pa.int64())]
                                + arrow_fields(RECORD_FIELDS, tuple(f.name for f in RECORD_FIELDS[1:] if f.arrow)))
ROCKETMQ_MESSAGE_SCHEMA = pa.schema(_FIND_COLUMNS + arrow_fields(MESSAGE_FIELDS, (
    "topic", "queue_id", "queue_offset", "phy_offset", "version", "body_crc", "flag", "sys_flag", "born_timestamp",
    "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset", "keys", "tags",
    "uniq_key", "offset_msg_id", "properties", "body")))


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------


@dataclass
class _Run:
    run_id: int
    format: str
    first_offset: int  # Kafka offset or RocketMQ queue offset
    last_offset: int
    topic: str | None = None
    queue_id: int | None = None
    count: int = 0  # batches or messages
    records: int = 0
    offsets_missing: int = 0  # Kafka: offsets skipped between batches joined by their producer
    spans: dict[str, list[int]] = field(default_factory=dict)  # file -> [first byte, last byte]
    # RocketMQ: the queue offsets held, sorted, with each holder's identity hash and place (file index, byte)
    held_offsets: array = field(default_factory=lambda: array("q"))
    held_identities: array = field(default_factory=lambda: array("q"))
    held_places: array = field(default_factory=lambda: array("q"))
    end_place: tuple[str, int] | None = None  # Kafka: (file, byte) where the last batch ends
    producer_next: tuple[int, int, int] | None = None  # Kafka: (producer id, epoch, sequence) the next batch would have

    def take(self, file: str, first_byte: int, last_byte: int, count: int = 1, records: int = 1) -> None:
        """Count ``count`` finds of ``file`` lying within [first_byte, last_byte] as this run's."""
        self.count += count
        self.records += records
        span = self.spans.setdefault(file, [first_byte, last_byte])
        span[0], span[1] = min(span[0], first_byte), max(span[1], last_byte)

    def as_dict(self) -> dict:
        offsets_missing = self.offsets_missing
        if self.format == ROCKETMQ:  # queue offsets are dense: every one not found is missing
            offsets_missing = self.last_offset - self.first_offset + 1 - self.count
        return {"run_id": self.run_id, "format": self.format, "first_offset": self.first_offset,
                "last_offset": self.last_offset, "count": self.count, "records": self.records,
                "offsets_missing": offsets_missing, "topic": self.topic, "queue_id": self.queue_id,
                "spans": [{"file": file, "first_byte": first, "last_byte": last}
                          for file, (first, last) in self.spans.items()]}


class _Placer:
    """Assigns each find to a run, or says why it cannot be placed."""

    def __init__(self):
        self.runs: list[_Run] = []
        self.unplaced: list[dict] = []  # the first UNPLACED_LISTED, in find order
        self.unplaced_by_reason = {UNDECODABLE: 0, DUPLICATE: 0, OFFSET_CONFLICT: 0}
        self._kafka_by_next_offset: dict[int, list[_Run]] = {}
        self._kafka_by_producer: dict[tuple[int, int, int], _Run] = {}
        # every batch's identity as two ints (a tuple of four and its place took ~4x the memory); the hash
        # is Python's tuple hash, 64 bits: two different batches share one about once in 2^64 pairs
        self._kafka_copies: dict[int, int] = {}
        self._rocketmq_runs: dict[tuple[str, int], _Run] = {}
        self._files: list[str] = []
        self._file_index: dict[str, int] = {}

    def _place(self, file: str, position: int) -> int:
        index = self._file_index.get(file)
        if index is None:
            index = self._file_index[file] = len(self._files)
            self._files.append(file)
        return index << _PLACE_BITS | position

    def _where(self, place: int) -> tuple[str, int]:
        return self._files[place >> _PLACE_BITS], place & _PLACE_MASK

    def _new_run(self, fmt: str, first: int, last: int, **queue) -> _Run:
        run = _Run(len(self.runs), fmt, first, last, **queue)
        self.runs.append(run)
        return run

    @property
    def unplaced_count(self) -> int:
        return sum(self.unplaced_by_reason.values())

    def _unplace(self, found: Find, file: str, reason: str, message: Callable[[], str], first: int | None,
                 last: int | None, copy_of: tuple[str, int] | None = None,
                 run: _Run | None = None) -> tuple[None, str]:
        """Count an unplaced find and list it while fewer than UNPLACED_LISTED are (``message`` is only
        worded then: an image of copies has a duplicate per find)."""
        self.unplaced_by_reason[reason] += 1
        if len(self.unplaced) < UNPLACED_LISTED:
            self.unplaced.append({
                "file": file, "position": found.position, "size": found.size, "format": found.format,
                "reason": reason, "message": message(), "first_offset": first, "last_offset": last,
                "copy_of": None if copy_of is None else {"file": copy_of[0], "position": copy_of[1]},
                "conflicting_run": None if run is None else run.run_id})
        return None, reason

    def undecodable(self, found: Find, file: str, message: str, first: int | None,
                    last: int | None) -> tuple[None, str]:
        return self._unplace(found, file, UNDECODABLE, lambda: message, first, last)

    def place_batch(self, found: Find, file: str, batch: RecordBatch, first: int,
                    records: int) -> tuple[int | None, str | None]:
        """(run id, None) for a Kafka batch whose records decoded, or (None, why it is listed as unplaced)."""
        last = batch.last_offset
        place = self._place(file, found.position)
        copy_of = self._where(self._kafka_copies.setdefault(hash((batch.base_offset, last, batch.crc, batch.size)),
                                                            place))
        if copy_of != (file, found.position):
            return self._unplace(found, file, DUPLICATE, lambda: f"the same batch (offsets {first}..{last}, crc "
                                 f"{batch.crc}) as at byte {copy_of[1]} of {copy_of[0]}", first, last, copy_of=copy_of)
        run = self._kafka_successor_of(found, file, batch, first)
        if run is None:
            producer_run = self._kafka_by_producer.get(_producer_key(batch))
            if producer_run is not None and first <= producer_run.last_offset:
                return self._unplace(found, file, OFFSET_CONFLICT,
                                     lambda: f"continues producer {batch.producer_id}'s sequence in run "
                                     f"{producer_run.run_id}, "
                                     f"but its offsets {first}..{last} are not after that run's last offset "
                                     f"{producer_run.last_offset}", first, last, run=producer_run)
            run = producer_run
        if run is None:
            run = self._new_run(KAFKA, first, last)
        else:
            self._forget_kafka_run(run)
            run.offsets_missing += first - run.last_offset - 1
            run.last_offset = last
        run.take(file, found.position, found.end - 1, records=records)
        run.end_place = (file, found.end)
        run.producer_next = None
        self._kafka_by_next_offset.setdefault(last + 1, []).append(run)
        if batch.producer_id >= 0 and batch.base_sequence >= 0:
            run.producer_next = (batch.producer_id, batch.producer_epoch, increment_sequence(batch.last_sequence, 1))
            self._kafka_by_producer[run.producer_next] = run
        return run.run_id, None

    def _kafka_successor_of(self, found: Find, file: str, batch: RecordBatch, first: int) -> _Run | None:
        """The one run this batch continues by offset: the physically adjacent one, else the only one
        (or the only one whose producer it continues); None when no run or several runs qualify."""
        continued = self._kafka_by_next_offset.get(first, [])
        adjacent = [run for run in continued if run.end_place == (file, found.position)]
        if adjacent:
            return adjacent[0]
        if len(continued) > 1:
            continued = [run for run in continued if run.producer_next == _producer_key(batch)]
        return continued[0] if len(continued) == 1 else None

    def _forget_kafka_run(self, run: _Run) -> None:
        """Take ``run`` out of the lookups by its last batch, before another batch extends it."""
        waiting = self._kafka_by_next_offset[run.last_offset + 1]
        waiting.remove(run)
        if not waiting:
            del self._kafka_by_next_offset[run.last_offset + 1]
        if run.producer_next is not None and self._kafka_by_producer.get(run.producer_next) is run:
            del self._kafka_by_producer[run.producer_next]

    def place_message(self, found: Find, file: str, topic: str, queue_id: int, queue_offset: int,
                      identity_hash: int) -> tuple[int | None, str | None]:
        """(run id, None) for a RocketMQ message (its topic and queue), or (None, why it is listed as unplaced).

        ``identity_hash``: the 64-bit hash of what tells two messages at one queue offset apart
        (``_message_identity``)."""
        run = self._rocketmq_run(topic, queue_id, queue_offset)
        offsets = run.held_offsets
        at = len(offsets) if not offsets or queue_offset > offsets[-1] else bisect_left(offsets, queue_offset)
        if at < len(offsets) and offsets[at] == queue_offset:
            held_file, held_position = self._where(run.held_places[at])
            where = f"byte {held_position} of {held_file}"
            if run.held_identities[at] == identity_hash:
                return self._unplace(found, file, DUPLICATE, lambda: f"the same message ({topic} queue {queue_id} "
                                     f"offset {queue_offset}) as at {where}", queue_offset, queue_offset,
                                     copy_of=(held_file, held_position))
            return self._unplace(found, file, OFFSET_CONFLICT, lambda: f"{topic} queue {queue_id} offset "
                                 f"{queue_offset} is held by a different message at {where}", queue_offset, queue_offset, run=run)
        offsets.insert(at, queue_offset)
        run.held_identities.insert(at, identity_hash)
        run.held_places.insert(at, self._place(file, found.position))
        run.first_offset, run.last_offset = min(run.first_offset, queue_offset), max(run.last_offset, queue_offset)
        run.take(file, found.position, found.end - 1)
        return run.run_id, None

    def _rocketmq_run(self, topic: str, queue_id: int, queue_offset: int) -> _Run:
        """The run of a topic and queue, started at ``queue_offset`` when there is none."""
        run = self._rocketmq_runs.get((topic, queue_id))
        if run is None:
            run = self._new_run(ROCKETMQ, queue_offset, queue_offset, topic=topic, queue_id=queue_id)
            self._rocketmq_runs[(topic, queue_id)] = run
        return run

    def place_messages(self, file: str, positions: np.ndarray, sizes: np.ndarray, topics: list[str],
                       queue_ids: np.ndarray, queue_offsets: np.ndarray,
                       identity_hashes: list[int]) -> tuple[np.ndarray, list[str | None]]:
        """``place_message`` for consecutive messages of one file, with the same outcome: the run id of
        each (-1: none) and why each is unplaced.

        A queue whose messages' offsets all come after those its run holds, rising, takes them at once
        (a CommitLog's usual case); the messages of any other queue are placed one by one, in file order."""
        count = len(positions)
        run_ids = np.full(count, -1, dtype=np.int64)
        reasons: list[str | None] = [None] * count
        queues: dict[tuple[str, int], int] = {}
        queue_of = np.fromiter((queues.setdefault(key, len(queues)) for key in zip(topics, queue_ids.tolist())),
                               np.int64, count)
        order = np.argsort(queue_of, kind="stable")
        bounds = np.searchsorted(queue_of[order], np.arange(len(queues) + 1))
        one_by_one = []
        file_place, hashes = self._place(file, 0), np.array(identity_hashes, dtype=np.int64)
        for (topic, queue_id), index in queues.items():  # in the order of each queue's first message
            members = order[bounds[index]:bounds[index + 1]]
            offsets = queue_offsets[members]
            run = self._rocketmq_run(topic, queue_id, int(offsets[0]))
            held = run.held_offsets
            if (held and offsets[0] <= held[-1]) or (np.diff(offsets) <= 0).any():
                one_by_one.append(members)
                continue
            held.frombytes(offsets.astype(np.int64).tobytes())
            run.held_identities.frombytes(hashes[members].tobytes())
            run.held_places.frombytes((positions[members] + file_place).astype(np.int64).tobytes())
            run.first_offset, run.last_offset = min(run.first_offset, int(offsets[0])), max(run.last_offset,
                                                                                          int(offsets[-1]))
            ends = positions[members] + sizes[members]
            run.take(file, int(positions[members[0]]), int(ends.max()) - 1, count=len(members), records=len(members))
            run_ids[members] = run.run_id
        if one_by_one:
            for i in np.sort(np.concatenate(one_by_one)).tolist():
                run_id, reasons[i] = self.place_message(
                    Find(ROCKETMQ, int(positions[i]), int(sizes[i]), 1), file, topics[i], int(queue_ids[i]),
                    int(queue_offsets[i]), identity_hashes[i])
                run_ids[i] = -1 if run_id is None else run_id
        return run_ids, reasons

    def place_batches(self, buf, file: str, headers: "_BatchColumns") -> tuple[np.ndarray, list[str | None]]:
        """``place_batch`` for consecutive v2 batches of one file whose records were not decoded, with
        the same outcome: the run id of each (-1: none) and why each is unplaced.

        A batch that starts at the offset after the one before it, which a run took, joins that run
        without the lookups (``_kafka_successor_of`` would choose it: its last batch ends right here);
        the run's lookups are brought up to date once per stretch.  Every other batch is placed by
        ``place_batch``."""
        count = len(headers.positions)
        run_ids = np.full(count, -1, dtype=np.int64)
        reasons: list[str | None] = [None] * count
        positions, base, last = headers.positions.tolist(), headers.base_offset.tolist(), headers.last_offset.tolist()
        sizes, records = headers.sizes.tolist(), headers.record_count.tolist()
        identities = list(map(hash, zip(base, last, headers.crc.tolist(), sizes)))
        copies, file_place = self._kafka_copies, self._place(file, 0)
        run, stretch_start, next_offset = None, 0, None
        for i in range(count):
            place = file_place | positions[i]
            if run is not None and base[i] == next_offset and copies.setdefault(identities[i], place) == place:
                next_offset = last[i] + 1
                continue
            if run is not None:
                self._extend_kafka_run(run, file, headers, stretch_start, i)
                run_ids[stretch_start:i] = run.run_id
            found = Find(KAFKA, positions[i], sizes[i], 2)
            run_id, reasons[i] = self.place_batch(found, file, batch_at(buf, positions[i], file), base[i], records[i])
            run, stretch_start, next_offset = None, i + 1, None
            if run_id is not None:
                run_ids[i], run, next_offset = run_id, self.runs[run_id], last[i] + 1
        if run is not None:
            self._extend_kafka_run(run, file, headers, stretch_start, count)
            run_ids[stretch_start:count] = run.run_id
        return run_ids, reasons

    def _extend_kafka_run(self, run: _Run, file: str, headers: "_BatchColumns", start: int, stop: int) -> None:
        """``place_batch``'s effect of batches [start, stop) joining ``run`` one after another: the
        lookups by a batch's next offset and producer sequence that each but the last would leave
        are set and dropped again in turn."""
        if start >= stop:
            return
        self._forget_kafka_run(run)
        sequenced = np.flatnonzero((headers.producer_id[start:stop] >= 0) & (headers.base_sequence[start:stop] >= 0))
        producer_next = [(producer_id, epoch, sequence) for producer_id, epoch, sequence in zip(
            headers.producer_id[start:stop][sequenced].tolist(), headers.producer_epoch[start:stop][sequenced].tolist(),
            increment_sequences(headers.last_sequence[start:stop][sequenced], 1).tolist())]
        last_sequenced = len(sequenced) and sequenced[-1] == stop - start - 1
        for key in producer_next[:-1] if last_sequenced else producer_next:
            self._kafka_by_producer.pop(key, None)
        run.last_offset = int(headers.last_offset[stop - 1])
        end = int(headers.positions[stop - 1] + headers.sizes[stop - 1])
        run.take(file, int(headers.positions[start]), end - 1, count=stop - start,
                 records=int(headers.record_count[start:stop].sum()))
        run.end_place = (file, end)
        run.producer_next = producer_next[-1] if last_sequenced else None
        self._kafka_by_next_offset.setdefault(run.last_offset + 1, []).append(run)
        if run.producer_next is not None:
            self._kafka_by_producer[run.producer_next] = run


def _producer_key(batch: RecordBatch) -> tuple[int, int, int]:
    return batch.producer_id, batch.producer_epoch, batch.base_sequence


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------


class _Outputs:
    """The JSON Lines file and the three Parquet files, filled as finds are decoded."""

    def __init__(self, stack: ExitStack, out_dir: str, force: bool, names: tuple[str, ...]):
        self.stages = {name: stack.enter_context(staged(os.path.join(out_dir, name), replace=force))
                       for name in names if name != REPORT}
        self.jsonl = stack.enter_context(open(self.stages[FINDS_JSONL].path, "w", encoding="utf-8"))
        self.tables = {}
        for name, schema in ((KAFKA_BATCHES, KAFKA_BATCH_SCHEMA), (KAFKA_RECORDS, KAFKA_RECORD_SCHEMA),
                             (ROCKETMQ_MESSAGES, ROCKETMQ_MESSAGE_SCHEMA)):
            if name not in names:
                continue
            writer = stack.enter_context(pq.ParquetWriter(self.stages[name].path, schema))
            self.tables[name] = _HeldRows(writer, schema)
        # closes before the staged files are put in place (ExitStack unwinds last in, first out)
        stack.callback(self._flush_all)

    def line(self, item: dict) -> None:
        self.jsonl.write(escape_line_ends(json.dumps(item, ensure_ascii=False, separators=(",", ":"))))
        self.jsonl.write("\n")

    def columns(self, name: str, columns: dict) -> None:
        """Rows given as columns (arrays or lists), after the rows held before them."""
        self.tables[name].add_columns(columns)

    def row(self, name: str, row: dict) -> None:
        self.tables[name].add_row(row)

    def _flush_all(self) -> None:
        for table in self.tables.values():
            table.write()

    def written(self) -> list[dict]:
        return [stage.written for stage in self.stages.values()]


class _HeldRows:
    """Rows of one Parquet output held until _ROWS_PER_PARQUET_BATCH are, then written as one row group
    (a row group per chain piece would bloat the file)."""

    def __init__(self, writer: pq.ParquetWriter, schema: pa.Schema):
        self.writer, self.schema = writer, schema
        self.rows: list[dict] = []
        self.batches: list[pa.RecordBatch] = []
        self.held = 0  # rows in ``batches``

    def add_row(self, row: dict) -> None:
        self.rows.append(row)
        if self.held + len(self.rows) >= _ROWS_PER_PARQUET_BATCH:
            self.write()

    def add_columns(self, columns: dict) -> None:
        self._batch_rows()
        batch = pa.RecordBatch.from_pydict(columns, schema=self.schema)
        self.batches.append(batch)
        self.held += batch.num_rows
        if self.held >= _ROWS_PER_PARQUET_BATCH:
            self.write()

    def _batch_rows(self) -> None:
        if self.rows:
            self.batches.append(pa.RecordBatch.from_pylist(self.rows, schema=self.schema))
            self.held += len(self.rows)
            self.rows.clear()

    def write(self) -> None:
        self._batch_rows()
        if self.batches:
            self.writer.write_table(pa.Table.from_batches(self.batches, self.schema))
            self.batches.clear()
            self.held = 0
            pa.default_memory_pool().release_unused()  # the pool keeps freed pages: they would count as resident


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


@dataclass
class _FileTally:
    kafka_batches: int = 0
    kafka_records: int = 0
    rocketmq_messages: int = 0


class _ChainLine:
    """The ``chain`` item of consecutive finds of one format in one file, each starting where the previous
    ends (a segment's batches, a CommitLog's messages), summed up as its pieces come."""

    def __init__(self, file: str, chain: Chain):
        self.file, self.format, self.position, self.end = file, chain.format, chain.position, chain.position
        self.count = self.records = self.unplaced = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.run_ids: set[int] = set()

    def continues(self, file: str, chain: Chain) -> bool:
        return file == self.file and chain.format == self.format and chain.position == self.end

    def take(self, run_id: int | None, records: int, first: int | None = None, last: int | None = None) -> None:
        self.count += 1
        self.records += records
        if run_id is None:
            self.unplaced += 1
        else:
            self.run_ids.add(run_id)
        if first is not None:
            self._offsets(first, last)

    def take_many(self, run_ids: np.ndarray, records: int, first: int | None = None, last: int | None = None) -> None:
        """``take`` of several finds: their run ids (-1: unplaced), records and offset range."""
        self.count += len(run_ids)
        self.records += records
        placed = run_ids[run_ids >= 0]
        self.unplaced += len(run_ids) - len(placed)
        self.run_ids.update(np.unique(placed).tolist())
        if first is not None:
            self._offsets(first, last)

    def _offsets(self, first: int, last: int) -> None:
        self.first_offset = first if self.first_offset is None else min(self.first_offset, first)
        self.last_offset = last if self.last_offset is None else max(self.last_offset, last)

    def item(self) -> dict:
        return {"kind": "chain", "file": self.file, "format": self.format, "position": self.position,
                "size": self.end - self.position, "count": self.count, "records": self.records,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "run_ids": sorted(self.run_ids), "unplaced": self.unplaced}


def _carve_kafka(buf, found: Find, path: str, placer: _Placer, outputs: _Outputs, tally: _FileTally,
                 records_too: bool, line: _ChainLine | None) -> None:
    """Place and write one Kafka find; its records are decoded with ``records_too`` and for a legacy wrapper
    (whose first offset is its first inner message's)."""
    batch = batch_at(buf, found.position, path)
    tally.kafka_batches += 1
    records = None
    try:
        if records_too or batch.magic < 2:
            records = batch_records(batch, path)
    except SegtoolError as exc:  # the batch's checksum held, its records do not decode (a codec we cannot read)
        item = batch_item(batch, [], path)
        run_id, unplaced = placer.undecodable(found, path, exc.message, batch.base_offset, batch.last_offset)
        record_count = 0
    else:
        item = batch_item(batch, records, path)
        first = item["base_offset"]
        record_count = len(records) if records is not None else batch.record_count or 0
        run_id, unplaced = placer.place_batch(found, path, batch, first, record_count)
    item.update(file=path, format=KAFKA, run_id=run_id, unplaced=unplaced)
    outputs.row(KAFKA_BATCHES, {**item, "records_decoded": None if records is None else len(records)})
    tally.kafka_records += record_count
    if line is not None:
        line.take(run_id, record_count, item["base_offset"], batch.last_offset)
        return
    outputs.line(item)
    for record in records or ():
        record_line = record_item(batch, record, path)
        record_line.update(format=KAFKA, run_id=run_id)
        outputs.line(record_line)
        outputs.row(KAFKA_RECORDS, {**record_line, "key": record.key, "value": record.value,
                                    "headers": [{"key": key, "value": value} for key, value in record.headers]})


def _carve_rocketmq(buf, found: Find, path: str, placer: _Placer, outputs: _Outputs, tally: _FileTally,
                    records_too: bool, line: _ChainLine | None) -> None:
    """Decode, place and write one RocketMQ find (its body with ``records_too``)."""
    stored_offset = message_header(buf, found.position)["physicalOffset"]
    # phy_offset: the message's own CommitLog offset, not where it was carved
    message = decode_message(buf, found.position, end=found.end, file_from_offset=stored_offset - found.position,
                             file=path, path=path, keep_body=True)
    tally.rocketmq_messages += 1
    run_id, unplaced = placer.place_message(found, path, message["topic"], message["queueId"],
                                            message["queueOffset"], hash(_message_identity(message)))
    item = {"kind": "message", **message_json(message), "file": path, "position": found.position, "size": found.size,
            "format": ROCKETMQ, "run_id": run_id, "unplaced": unplaced}
    outputs.row(ROCKETMQ_MESSAGES, {**item, "body": message["body"] if records_too else None,
                                    "properties": list(message["properties"].items())})
    if line is not None:
        line.take(run_id, 1)
    else:
        outputs.line(item)


def _message_identity(message: dict) -> tuple:
    return (message["physicalOffsetField"], message["bodyCRC"], message["totalSize"], message["bornTimestamp"],
            message["storeTimestamp"])


class _BatchColumns:
    """The headers of consecutive v2 batches as int64 columns (``BATCH_HEADER_V2``'s fields)."""

    def __init__(self, buf, positions: list[int], sizes: list[int]):
        self.positions = np.array(positions, dtype=np.int64)
        self.sizes = np.array(sizes, dtype=np.int64)
        with memoryview(buf) as view:
            data = np.frombuffer(view, dtype=np.uint8)
            header = np.lib.stride_tricks.sliding_window_view(data, BATCH_V2_OVERHEAD)[self.positions]
            header = header.copy().view(_BATCH_HEADER_DTYPE).reshape(len(positions))
            del data
        column = lambda name: header[name].astype(np.int64)  # noqa: E731
        self.base_offset, self.crc, self.attributes = column("base_offset"), column("crc"), column("attributes")
        self.last_offset = self.base_offset + column("last_offset_delta")
        self.max_timestamp, self.base_timestamp = column("max_timestamp"), column("base_timestamp")
        self.record_count, self.partition_leader_epoch = column("record_count"), column("partition_leader_epoch")
        self.producer_id, self.producer_epoch = column("producer_id"), column("producer_epoch")
        self.base_sequence = column("base_sequence")
        self.last_sequence = increment_sequences(self.base_sequence, column("last_offset_delta"))


_BATCH_HEADER_DTYPE = BATCH_HEADER_V2_FAST.numpy_dtype()
_CODECS = pa.array([CODEC_NAMES[codec] for codec in range(len(CODEC_NAMES))])  # carving finds no other codec
_TIMESTAMP_TYPES = pa.array(TIMESTAMP_TYPES)
_REASONS = (None, UNDECODABLE, DUPLICATE, OFFSET_CONFLICT)


def _carve_kafka_chain(buf, chain: Chain, path: str, placer: _Placer, outputs: _Outputs, tally: _FileTally,
                       line: _ChainLine) -> None:
    """Place and write a chain piece of Kafka batches: each stretch of v2 batches a column at a time,
    legacy messages (whose records decide their first offset) one by one."""
    magics = np.array(chain.magics)
    bounds = np.flatnonzero(np.diff(magics == 2)) + 1
    for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(magics)]):
        if magics[start] != 2:
            for position, size, magic in zip(chain.positions[start:stop], chain.sizes[start:stop],
                                             chain.magics[start:stop]):
                _carve_kafka(buf, Find(KAFKA, position, size, magic), path, placer, outputs, tally, False, line)
            continue
        headers = _BatchColumns(buf, chain.positions[start:stop], chain.sizes[start:stop])
        run_ids, reasons = placer.place_batches(buf, path, headers)
        records = int(headers.record_count.sum())
        tally.kafka_batches += len(run_ids)
        tally.kafka_records += records
        line.take_many(run_ids, records, int(headers.base_offset.min()), int(headers.last_offset.max()))
        attributes = headers.attributes
        count = len(run_ids)
        outputs.columns(KAFKA_BATCHES, {
            "file": pa.repeat(path, count), "position": headers.positions, "size": headers.sizes,
            "run_id": pa.array(run_ids, mask=run_ids < 0), "unplaced": pa.array(reasons, pa.string()),
            "magic": np.full(count, 2, dtype=np.int8), "base_offset": headers.base_offset,
            "last_offset": headers.last_offset, "crc": headers.crc, "codec": _CODECS.take(attributes & 7),
            "timestamp_type": _TIMESTAMP_TYPES.take((attributes >> 3) & 1), "max_timestamp": headers.max_timestamp,
            "record_count": headers.record_count, "partition_leader_epoch": headers.partition_leader_epoch,
            "base_timestamp": headers.base_timestamp, "producer_id": headers.producer_id,
            "producer_epoch": headers.producer_epoch, "base_sequence": headers.base_sequence,
            "last_sequence": headers.last_sequence, "is_transactional": (attributes & 0x10) != 0,
            "is_control": (attributes & 0x20) != 0,
            "delete_horizon_ms": pa.array(headers.base_timestamp, mask=(attributes & 0x40) == 0),
            "wrapper_offset": pa.nulls(count, pa.int64()), "records_decoded": pa.nulls(count, pa.int32()),
        })


def _carve_message_columns(columns: MessageColumns, path: str, placer: _Placer, outputs: _Outputs,
                           tally: _FileTally, line: _ChainLine) -> None:
    """Place and write plain RocketMQ messages read as columns (``engine.carving.Chain.messages``)."""
    count = columns.count
    header = {name: columns.header[name].astype(np.int64) for name in _MESSAGE_NUMBERS}  # native byte order
    topics = columns.texts(columns.topic_at, columns.topic_length)
    positions, sizes = columns.positions, header["totalSize"]
    queue_ids, queue_offsets = header["queueId"], header["queueOffset"]
    identities = list(map(hash, zip(header["physicalOffset"].tolist(), header["bodyCRC"].tolist(), sizes.tolist(),
                                    header["bornTimestamp"].tolist(), header["storeTimestamp"].tolist())))
    run_ids, reasons = placer.place_messages(path, positions, sizes, topics, queue_ids, queue_offsets, identities)
    line.take_many(run_ids, count)
    tally.rocketmq_messages += count
    properties, keys, tags, uniq_keys = _properties_columns(columns)
    offset_ids = np.empty((count, 16), dtype=np.uint8)
    offset_ids[:, :4] = columns.header["storeHost"].astype("S4").view(np.uint8).reshape(count, 4)
    offset_ids[:, 4:8] = header["storePort"].astype(">i4").view(np.uint8).reshape(count, 4)
    offset_ids[:, 8:] = header["physicalOffset"].astype(">i8").view(np.uint8).reshape(count, 8)
    outputs.columns(ROCKETMQ_MESSAGES, {
        "file": pa.repeat(path, count), "position": positions, "size": sizes,
        "run_id": pa.array(run_ids, mask=run_ids < 0), "unplaced": pa.array(reasons, pa.string()),
        "topic": pa.array(topics, pa.string()), "queue_id": queue_ids, "queue_offset": queue_offsets,
        "phy_offset": header["physicalOffset"], "version": np.ones(count, dtype=np.int8),
        "body_crc": header["bodyCRC"], "flag": header["flag"], "sys_flag": header["sysFlag"],
        "born_timestamp": header["bornTimestamp"],
        "born_host": _host_texts(columns.header["bornHost"], header["bornPort"]),
        "store_timestamp": header["storeTimestamp"],
        "store_host": _host_texts(columns.header["storeHost"], header["storePort"]),
        "reconsume_times": header["reconsumeTimes"], "prepared_transaction_offset": header["preparedTransactionOffset"],
        "keys": keys, "tags": tags, "uniq_key": uniq_keys,
        "offset_msg_id": _fixed_width_strings(offset_ids.tobytes().hex().upper().encode(), 32, count),
        "properties": properties, "body": pa.nulls(count, pa.binary()),
    })


def _fixed_width_strings(data: bytes, width: int, count: int) -> pa.Array:
    offsets = np.arange(0, width * (count + 1), width, dtype=np.int32)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))


def _host_texts(addresses: np.ndarray, ports: np.ndarray) -> pa.Array:
    """``format_host`` of each IPv4 address (4 bytes) and port, worded once per distinct host."""
    numbers = addresses.astype("S4").view(">u4").astype(np.uint64)
    hosts, first, inverse = np.unique(numbers << np.uint64(32) | ports.astype(np.uint32).astype(np.uint64),
                                      return_index=True, return_inverse=True)
    texts = [format_host(int(numbers[i]).to_bytes(4, "big"), int(ports[i])) for i in first.tolist()]
    return pa.array(texts, pa.string()).take(inverse.reshape(-1))


def _properties_columns(columns: MessageColumns) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """The ``properties`` map (null where their length is <= 0) and the KEYS, TAGS and UNIQ_KEY values
    (null where absent), as ``parse_properties`` reads each message's properties.

    Cut at once from all messages' properties, joined each after a separator; when a message's
    properties are not what a broker writes (not UTF-8, an item without a name or value), every
    message of the piece is parsed on its own instead."""
    count = columns.count
    lengths = np.maximum(columns.properties_length, 0)
    joined = _SEPARATOR + _SEPARATOR.join(map(columns.buf.__getitem__, map(
        slice, columns.properties_at.tolist(), (columns.properties_at + lengths).tolist())))
    data = np.frombuffer(joined, dtype=np.uint8)
    item_start = np.flatnonzero(data == _SEPARATOR[0]) + 1
    item_end = np.append(item_start[1:] - 1, len(joined))
    filled = item_end > item_start
    item_start, item_end = item_start[filled], item_end[filled]
    name_separators = np.flatnonzero(data == _NAME_VALUE_SEPARATOR[0])
    name_end = name_separators[np.minimum(np.searchsorted(name_separators, item_start), len(name_separators) - 1)] \
        if len(name_separators) else np.zeros_like(item_start)
    if not _is_utf8(joined) or not ((name_end > item_start) & (name_end < item_end - 1)).all():
        return _properties_one_by_one(columns)
    message = np.searchsorted(np.cumsum(lengths + 1) - lengths, item_start, side="right") - 1
    names = _gathered_strings(data, item_start, name_end)
    values = _gathered_strings(data, name_end + 1, item_end)
    # a name given twice in one message keeps its first place and takes its last value (HashMap.put)
    codes = pc.dictionary_encode(names).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    named_in = message * (int(codes.max(initial=0)) + 1) + codes
    _, first = np.unique(named_in, return_index=True)
    _, last_reversed = np.unique(named_in[::-1], return_index=True)
    if len(first) < len(named_in):
        order = np.argsort(first)
        first, last = first[order], (len(named_in) - 1 - last_reversed)[order]
        message, names, values = message[first], names.take(first), values.take(last)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(message, minlength=count), out=offsets[1:])
    properties = pa.MapArray.from_arrays(offsets, names, values, type=ROCKETMQ_MESSAGE_SCHEMA.field("properties").type,
                                         mask=pa.array(columns.properties_length <= 0))
    named = []
    for name in (PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY):
        items = np.flatnonzero(pc.equal(names, name).to_numpy(zero_copy_only=False))
        which = np.full(count, -1, dtype=np.int64)
        which[message[items]] = items
        named.append(values.take(pa.array(which, mask=which < 0)))
    return (properties, *named)


def _properties_one_by_one(columns: MessageColumns) -> tuple[list, list, list, list]:
    parsed = columns.properties()
    named = [{} if values is None else values for values in parsed]
    return ([None if values is None else list(values.items()) for values in parsed],
            *([values.get(name) for values in named] for name in (PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY)))


def _gathered_strings(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """``data[start:end]`` of each start and end as a string array, gathered in one pass."""
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    gathered = data[np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], lengths)]
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets.astype(np.int32)),
                                       pa.py_buffer(gathered.tobytes()))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_MESSAGE_NUMBERS = ("totalSize", "queueId", "queueOffset", "physicalOffset", "bodyCRC", "flag", "sysFlag",
                    "bornTimestamp", "bornPort", "storeTimestamp", "storePort", "reconsumeTimes",
                    "preparedTransactionOffset")
_SEPARATOR = PROPERTY_SEPARATOR.encode()
_NAME_VALUE_SEPARATOR = NAME_VALUE_SEPARATOR.encode()


_CARVERS = {KAFKA: _carve_kafka, ROCKETMQ: _carve_rocketmq}


def search_totals(counts: SearchCounts) -> dict:
    """SearchCounts as the report gives them, with the number of false finds to expect."""
    return {"bytes_searched": counts.bytes_searched, "candidates": counts.candidates, "checksums": counts.checksums,
            "finds": counts.finds, "expected_false_finds": counts.checksums / CHECKSUM_SPACE}


def search_file_range(item: tuple[str, int, int]) -> RangeSearch | None:
    """Task: the search of one byte range (path, start, stop) of a file, each find read to the file's
    end; None when the file cannot be read (the run names it, as it names any unreadable input)."""
    path, start, stop = item
    try:
        buf = open_buffer(path)
    except SegtoolError:
        return None
    try:
        return search_range(buf, start, stop)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def file_ranges(path: str, size: int, split_bytes: int) -> list[tuple[str, int, int]]:
    """(path, start, stop) of each range of a file searched as one task (the whole file when
    ``split_bytes`` is 0)."""
    step = split_bytes if split_bytes > 0 else max(size, 1)
    return [(path, start, min(start + step, size)) for start in range(0, max(size, 1), step)]


def _split_searches(files, search_ranges: SearchRanges, split_bytes: int) -> dict[str, list[RangeSearch]]:
    """Each file's ranges searched by ``search_ranges`` (all files' ranges at once, so that a pool or
    cluster works on several files together)."""
    ranges = [item for entry in files for item in file_ranges(entry.path, entry.size, split_bytes)]
    searched: dict[str, list[RangeSearch]] = {}
    for (path, _, _), search in zip(ranges, search_ranges(ranges)):
        searched.setdefault(path, []).append(search)
    return searched


def carve(paths: list[str], out_dir: str, force: bool = False, hash_inputs: bool = True,
          progress: RunProgress | None = None, records: bool = False, search_ranges: SearchRanges | None = None,
          split_bytes: int = DEFAULT_SPLIT_BYTES) -> CarveReport:
    """Carve every file named or found below ``paths`` into ``out_dir``; the report is also written there.

    With ``search_ranges`` (the pipeline's tasks) each file is searched as byte ranges of
    ``split_bytes`` there, and the ranges' finds are put together here (``merged_chains``) into
    exactly the finds of one search; they are then decoded, placed and written here in file and
    position order, as without it, so the outputs are the same bytes.

    Without ``records`` finds.jsonl holds a ``chain`` item per stretch of consecutive finds, Kafka
    records are not decoded (but a legacy wrapper's) and message bodies are not copied; with it,
    finds.jsonl holds every batch, record and message, kafka_records.parquet is written and
    rocketmq_messages.parquet holds the bodies.  Every output is checked before anything is read
    (``plan_outputs``: not inside an input's tree, no existing file unless ``force``, which backs it up).
    """
    names = OUTPUT_NAMES if records else tuple(name for name in OUTPUT_NAMES if name != KAFKA_RECORDS)
    targets = [os.path.join(out_dir, name) for name in names]
    found_files = inventory(paths)
    plan_outputs(targets, paths, in_place=False, force=force)
    unreadable = [{"path": entry.path, "reason": entry.unreadable} for entry in found_files.unreadable]
    if progress is not None:
        progress.plan((entry.path, entry.size) for entry in found_files.files)
    placer = _Placer()
    total = SearchCounts()
    inputs = []
    searched = _split_searches(found_files.files, search_ranges, split_bytes) if search_ranges is not None else None
    with ExitStack() as stack:
        outputs = _Outputs(stack, out_dir, force, names)
        for entry in found_files.files:
            # on a thread, as before: no fork beside the Parquet writers' threads
            digest = sha256_beside(entry.path, fork=False) if hash_inputs else None
            counts, tally = SearchCounts(), _FileTally()
            try:
                buf = open_buffer(entry.path)
            except SegtoolError as exc:
                unreadable.append({"path": entry.path, "reason": exc.message})
                continue
            if searched is not None and None in searched[entry.path]:
                raise UnreadableInput("this file could be read here but not by the task that searched it "
                                      "(is it on a disk the workers see?)", entry.path)
            advance = progress.file(entry.path) if progress is not None else None
            line = None
            found_chains = chains(buf, counts=counts, progress=advance) if searched is None else \
                merged_chains(buf, searched[entry.path], counts=counts, progress=advance)
            for chain in found_chains:
                if records:
                    for found in chain.finds():
                        _CARVERS[found.format](buf, found, entry.path, placer, outputs, tally, True, None)
                    continue
                if line is None or not line.continues(entry.path, chain):
                    if line is not None:
                        outputs.line(line.item())
                    line = _ChainLine(entry.path, chain)
                line.end = chain.end
                if chain.messages is not None:
                    for columns in chain.messages:
                        _carve_message_columns(columns, entry.path, placer, outputs, tally, line)
                elif chain.format == KAFKA:
                    _carve_kafka_chain(buf, chain, entry.path, placer, outputs, tally, line)
                else:
                    for found in chain.finds():
                        _carve_rocketmq(buf, found, entry.path, placer, outputs, tally, False, line)
            if line is not None:
                outputs.line(line.item())
            total.add(counts)
            inputs.append({"path": entry.path, "size": entry.size,
                           "sha256": digest.result() if digest is not None else None,
                           "kafka_batches": tally.kafka_batches, "kafka_records": tally.kafka_records,
                           "rocketmq_messages": tally.rocketmq_messages, "search": search_totals(counts)})
    finds = total.finds
    report: CarveReport = {
        "out": out_dir,
        "inputs": inputs,
        "unreadable": unreadable,
        "search": search_totals(total),
        "runs": [run.as_dict() for run in placer.runs],
        "unplaced": placer.unplaced,
        "written": outputs.written(),
        "summary": {"finds": finds, "placed": finds - placer.unplaced_count, "unplaced": placer.unplaced_count,
                    "unplaced_by_reason": placer.unplaced_by_reason, "runs": len(placer.runs),
                    "kafka_batches": sum(i["kafka_batches"] for i in inputs),
                    "kafka_records": sum(i["kafka_records"] for i in inputs),
                    "rocketmq_messages": sum(i["rocketmq_messages"] for i in inputs)},
    }
    write_atomically(os.path.join(out_dir, REPORT), (json.dumps(report, indent=1) + "\n").encode(), replace=force)
    return report


def exit_code(report: CarveReport) -> int:
    """2 when an input could not be read, 1 when nothing was found or a find was not placed, else 0."""
    if report["unreadable"]:
        return 2
    return 1 if not report["summary"]["finds"] or report["unplaced"] else 0
