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

A find that cannot be placed is still written (``run_id`` null) and listed with
its reason: its records do not decode, it is a second copy of a batch or message
already found, or its offsets conflict with a run (a producer's next batch whose
offsets overlap the run, a different message at a queue offset already taken).
Inputs are only read; outputs follow ``engine.safe_write``'s rules.
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_left
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from segtool.engine.inventory import inventory
from segtool.engine.safe_write import plan_outputs, staged, write_atomically
from segtool.errors import SegtoolError
from segtool.engine.carving import KAFKA, ROCKETMQ, Chain, Find, SearchCounts, chains
from segtool.formats.record_shapes import arrow_fields
from segtool.kafka.record_shape import BATCH_FIELDS, RECORD_FIELDS
from segtool.rocketmq.message_shape import MESSAGE_FIELDS, message_json
from segtool.formats.json_text import escape_line_ends
from segtool.kafka.log import RecordBatch, batch_at, increment_sequence
from segtool.kafka.records import batch_records
from segtool.rocketmq.msgid import format_host
from segtool.rocketmq.store_files import (
    PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY, MessageColumns, decode_message, message_header,
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

    def take(self, found: Find, file: str, records: int) -> None:
        self.count += 1
        self.records += records
        span = self.spans.setdefault(file, [found.position, found.end - 1])
        span[0], span[1] = min(span[0], found.position), max(span[1], found.end - 1)

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
        self.unplaced: list[dict] = []
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

    def _unplace(self, found: Find, file: str, reason: str, message: str, first: int | None, last: int | None,
                 copy_of: tuple[str, int] | None = None, run: _Run | None = None) -> tuple[None, str]:
        self.unplaced.append({
            "file": file, "position": found.position, "size": found.size, "format": found.format,
            "reason": reason, "message": message, "first_offset": first, "last_offset": last,
            "copy_of": None if copy_of is None else {"file": copy_of[0], "position": copy_of[1]},
            "conflicting_run": None if run is None else run.run_id})
        return None, reason

    def undecodable(self, found: Find, file: str, message: str, first: int | None,
                    last: int | None) -> tuple[None, str]:
        return self._unplace(found, file, UNDECODABLE, message, first, last)

    def place_batch(self, found: Find, file: str, batch: RecordBatch, first: int,
                    records: int) -> tuple[int | None, str | None]:
        """(run id, None) for a Kafka batch whose records decoded, or (None, why it is listed as unplaced)."""
        last = batch.last_offset
        place = self._place(file, found.position)
        copy_of = self._where(self._kafka_copies.setdefault(hash((batch.base_offset, last, batch.crc, batch.size)),
                                                            place))
        if copy_of != (file, found.position):
            return self._unplace(found, file, DUPLICATE, f"the same batch (offsets {first}..{last}, crc {batch.crc}) "
                                 f"as at byte {copy_of[1]} of {copy_of[0]}", first, last, copy_of=copy_of)
        run = self._kafka_successor_of(found, file, batch, first)
        if run is None:
            producer_run = self._kafka_by_producer.get(_producer_key(batch))
            if producer_run is not None and first <= producer_run.last_offset:
                return self._unplace(found, file, OFFSET_CONFLICT,
                                     f"continues producer {batch.producer_id}'s sequence in run {producer_run.run_id}, "
                                     f"but its offsets {first}..{last} are not after that run's last offset "
                                     f"{producer_run.last_offset}", first, last, run=producer_run)
            run = producer_run
        if run is None:
            run = self._new_run(KAFKA, first, last)
        else:
            self._forget_kafka_run(run)
            run.offsets_missing += first - run.last_offset - 1
            run.last_offset = last
        run.take(found, file, records)
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
                      identity: tuple) -> tuple[int | None, str | None]:
        """(run id, None) for a RocketMQ message (its topic and queue), or (None, why it is listed as unplaced).

        ``identity``: what tells two messages at one queue offset apart (stored physical offset, body
        CRC, size, born and store timestamps), kept as its 64-bit hash."""
        run = self._rocketmq_runs.get((topic, queue_id))
        if run is None:
            run = self._new_run(ROCKETMQ, queue_offset, queue_offset, topic=topic, queue_id=queue_id)
            self._rocketmq_runs[(topic, queue_id)] = run
        identity_hash = hash(identity)
        offsets = run.held_offsets
        at = len(offsets) if not offsets or queue_offset > offsets[-1] else bisect_left(offsets, queue_offset)
        if at < len(offsets) and offsets[at] == queue_offset:
            held_file, held_position = self._where(run.held_places[at])
            where = f"byte {held_position} of {held_file}"
            if run.held_identities[at] == identity_hash:
                return self._unplace(found, file, DUPLICATE, f"the same message ({topic} queue {queue_id} offset "
                                     f"{queue_offset}) as at {where}", queue_offset, queue_offset,
                                     copy_of=(held_file, held_position))
            return self._unplace(found, file, OFFSET_CONFLICT, f"{topic} queue {queue_id} offset {queue_offset} is "
                                 f"held by a different message at {where}", queue_offset, queue_offset, run=run)
        offsets.insert(at, queue_offset)
        run.held_identities.insert(at, identity_hash)
        run.held_places.insert(at, self._place(file, found.position))
        run.first_offset, run.last_offset = min(run.first_offset, queue_offset), max(run.last_offset, queue_offset)
        run.take(found, file, 1)
        return run.run_id, None


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
            self.tables[name] = (writer, schema, [])
        # closes before the staged files are put in place (ExitStack unwinds last in, first out)
        stack.callback(self._flush_all)

    def line(self, item: dict) -> None:
        self.jsonl.write(escape_line_ends(json.dumps(item, ensure_ascii=False, separators=(",", ":"))))
        self.jsonl.write("\n")

    def columns(self, name: str, columns: dict) -> None:
        """Rows given as columns, written after the rows held before them."""
        self._flush(name)
        writer, schema, _ = self.tables[name]
        writer.write_batch(pa.RecordBatch.from_pydict(columns, schema=schema))

    def row(self, name: str, row: dict) -> None:
        writer, schema, rows = self.tables[name]
        rows.append(row)
        if len(rows) >= _ROWS_PER_PARQUET_BATCH:
            self._flush(name)

    def _flush(self, name: str) -> None:
        writer, schema, rows = self.tables[name]
        if rows:
            writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=schema))
            rows.clear()

    def _flush_all(self) -> None:
        for name in self.tables:
            self._flush(name)

    def written(self) -> list[dict]:
        return [stage.written for stage in self.stages.values()]


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
    item = batch_item(batch)
    records = None
    try:
        if records_too or batch.magic < 2:
            records = batch_records(batch, path)
    except SegtoolError as exc:  # the batch's checksum held, its records do not decode (a codec we cannot read)
        run_id, unplaced = placer.undecodable(found, path, exc.message, batch.base_offset, batch.last_offset)
        record_count = 0
    else:
        first = records[0].offset if records and batch.magic < 2 else batch.base_offset
        record_count = len(records) if records is not None else batch.record_count or 0
        run_id, unplaced = placer.place_batch(found, path, batch, first, record_count)
    item.update(file=path, format=KAFKA, run_id=run_id, unplaced=unplaced)
    outputs.row(KAFKA_BATCHES, {**item, "records_decoded": None if records is None else len(records)})
    tally.kafka_records += record_count
    if line is not None:
        line.take(run_id, record_count, batch.base_offset, batch.last_offset)
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
                                            message["queueOffset"], _message_identity(message))
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


def _carve_message_columns(columns: MessageColumns, path: str, placer: _Placer, outputs: _Outputs,
                           tally: _FileTally, line: _ChainLine) -> None:
    """Place and write plain RocketMQ messages read as columns (``engine.carving.Chain.messages``)."""
    header, count = columns.header, columns.count
    topics = columns.texts(columns.topic_at, columns.topic_length)
    properties = columns.properties()
    positions, sizes = columns.positions.tolist(), header["totalSize"].tolist()
    queue_ids, queue_offsets = header["queueId"].tolist(), header["queueOffset"].tolist()
    identities = zip(header["physicalOffset"].tolist(), header["bodyCRC"].tolist(), sizes,
                     header["bornTimestamp"].tolist(), header["storeTimestamp"].tolist())
    run_ids, unplaced = [], []
    for position, size, topic, queue_id, queue_offset, identity in zip(positions, sizes, topics, queue_ids,
                                                                      queue_offsets, identities):
        run_id, why = placer.place_message(Find(ROCKETMQ, position, size, 1), path, topic, queue_id, queue_offset,
                                           identity)
        run_ids.append(run_id)
        unplaced.append(why)
        line.take(run_id, 1)
    tally.rocketmq_messages += count
    named = [{} if values is None else values for values in properties]
    hosts = {}

    def host(address: int, port: int) -> str:
        text = hosts.get((address, port))
        if text is None:
            text = hosts[(address, port)] = format_host(address.to_bytes(4, "big"), port)
        return text

    def addresses(field: str) -> list[int]:
        return header[field].astype("S4").view(">u4").astype("int64").tolist()

    offset_ids = np.empty((count, 16), dtype=np.uint8)
    offset_ids[:, :4] = header["storeHost"].astype("S4").view(np.uint8).reshape(count, 4)
    offset_ids[:, 4:8] = header["storePort"].astype(">i4").view(np.uint8).reshape(count, 4)
    offset_ids[:, 8:] = header["physicalOffset"].astype(">i8").view(np.uint8).reshape(count, 8)
    offset_text = offset_ids.tobytes().hex().upper()
    columns_out = {
        "file": [path] * count, "position": positions, "size": sizes, "run_id": run_ids, "unplaced": unplaced,
        "topic": topics, "queue_id": queue_ids, "queue_offset": queue_offsets,
        "phy_offset": header["physicalOffset"].tolist(), "version": [1] * count,
        "body_crc": header["bodyCRC"].tolist(), "flag": header["flag"].tolist(), "sys_flag": header["sysFlag"].tolist(),
        "born_timestamp": header["bornTimestamp"].tolist(),
        "born_host": list(map(host, addresses("bornHost"), header["bornPort"].tolist())),
        "store_timestamp": header["storeTimestamp"].tolist(),
        "store_host": list(map(host, addresses("storeHost"), header["storePort"].tolist())),
        "reconsume_times": header["reconsumeTimes"].tolist(),
        "prepared_transaction_offset": header["preparedTransactionOffset"].tolist(),
        "keys": [values.get(PROPERTY_KEYS) for values in named], "tags": [values.get(PROPERTY_TAGS) for values in named],
        "uniq_key": [values.get(PROPERTY_UNIQ_KEY) for values in named],
        "offset_msg_id": [offset_text[at:at + 32] for at in range(0, 32 * count, 32)],
        "properties": [None if values is None else list(values.items()) for values in properties],
        "body": [None] * count,
    }
    outputs.columns(ROCKETMQ_MESSAGES, columns_out)


_CARVERS = {KAFKA: _carve_kafka, ROCKETMQ: _carve_rocketmq}


def search_totals(counts: SearchCounts) -> dict:
    """SearchCounts as the report gives them, with the number of false finds to expect."""
    return {"bytes_searched": counts.bytes_searched, "candidates": counts.candidates, "checksums": counts.checksums,
            "finds": counts.finds, "expected_false_finds": counts.checksums / CHECKSUM_SPACE}


def carve(paths: list[str], out_dir: str, force: bool = False, hash_inputs: bool = True,
          progress: RunProgress | None = None, records: bool = False) -> CarveReport:
    """Carve every file named or found below ``paths`` into ``out_dir``; the report is also written there.

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
            advance = progress.file(entry.path) if progress is not None else None
            line = None
            for chain in chains(buf, counts=counts, progress=advance):
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
                else:
                    for found in chain.finds():
                        _CARVERS[found.format](buf, found, entry.path, placer, outputs, tally, False, line)
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
        "summary": {"finds": finds, "placed": finds - len(placer.unplaced), "unplaced": len(placer.unplaced),
                    "runs": len(placer.runs), "kafka_batches": sum(i["kafka_batches"] for i in inputs),
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
