"""Row functions: one task's byte range in, Arrow record batches out, each with its (topic, partition).

These are the only decoding the pipeline does, and both engines call them:
Kafka batches come from ``engine.salvage.kafka_pieces`` (the batch walker, read
past damage) and their records from
``batch_columns`` (the columnar decoder) or ``batch_records`` (control
batches, legacy message sets with their inner messages, anything unusual) —
the records kafka-dump-log's ``--deep-iteration`` lists; RocketMQ messages come
from ``engine.salvage.commitlog_pieces`` (the CommitLog walker, read past damage).
Batches hold at most ``chunk_rows`` rows and about ``chunk_bytes`` of keys and
values (bodies), so a task's memory stays bounded whatever the size of its
split; each batch is one row group of the part file it goes to.  Nothing here
writes.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os

import numpy as np
import pyarrow as pa

from segtool.errors import CorruptData
from segtool.findings import FindingKind, finding
from segtool.engine.salvage import DamagedRange, body_crc_valid, commitlog_pieces, kafka_pieces
from segtool.kafka.log import DEFAULT_CAP, LOG_ENTRY_HEADER_FAST, LOG_OVERHEAD, NO_TIMESTAMP, BatchScan, RecordBatch
from segtool.kafka.record_columns import batch_columns
from segtool.kafka.records import base_offset_of, batch_records, control_record_type
from segtool.formats.outcomes import WalkEnd
from segtool.pipeline import storage
from segtool.ops.render import damaged_range_text
from segtool.pipeline.schema import (COLUMNS, FILE_SCHEMA, HEADER_TYPE, KAFKA, ROCKETMQ, TIMESTAMP, TIMESTAMP_MAX_MS,
                                     TIMESTAMP_MIN_MS)
from segtool.rocketmq.message_shape import MESSAGE_COLUMNS
from segtool.source import release_pages

DEFAULT_CHUNK_ROWS = 16384
DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024  # keys and values (bodies) held before a row group is written
_INT32_MAX = 2**31 - 1
_sha256 = hashlib.sha256


def _utf8_or_none(data):
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def new_stats(task: dict) -> dict:
    """The per-task summary the driver gathers (identical from both engines)."""
    return {
        "id": task["id"], "kind": task["kind"], "path": task["path"], "split": task["split"],
        "splits": task["splits"], "start": task["start"], "end": task["end"], "rows": 0, "batches": 0,
        "crc_invalid": 0, "scanned_to": task["start"], "stop_reason": None, "errors": [], "parts": [],
    }


def _event_times(ms: np.ndarray, absent: np.ndarray | bool = False) -> pa.Array:
    """The ``timestamp`` column from timestamps as stored (ms): null where ``absent`` and beyond the range
    every reader holds."""
    return pa.array(ms, TIMESTAMP, mask=absent | (ms < TIMESTAMP_MIN_MS) | (ms > TIMESTAMP_MAX_MS))


def _file_batch(columns: dict, n: int) -> pa.RecordBatch:
    """A record batch of the part files' schema: the other broker's columns are nulls."""
    arrays = [columns[field.name] if field.name in columns else pa.nulls(n, field.type) for field in FILE_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=FILE_SCHEMA)


# -- a task's byte range -------------------------------------------------------

WINDOW_BYTES = 8 * 1024 * 1024  # a URI task reads its range this much at a time
# the largest batch or message read whole into memory; the search past damage looks for none larger
WHOLE_MOST = 64 * 1024 * 1024
_RELEASE_EVERY = 8 * 1024 * 1024  # a mapped range's pages leave the resident set this often


class _TaskRange:
    """Bytes ``start..stop`` of one input file, as a task reads them.

    A local file is mapped whole and read as one buffer (``rest``), its pages
    released as the walkers pass them.  A URI is read a window at a time
    (``window``) while the windows hold whole, valid batches or messages; from
    the first place where they do not (damage, the data's end, one batch or
    message over ``WHOLE_MOST``) ``rest`` spills the rest of the range to a
    sparse temporary file (zero-filled windows stay holes) and maps it, so the
    walkers read past damage exactly as over a whole file, and memory stays
    bounded either way.
    """

    def __init__(self, path: str, start: int, end: int | None):
        self.path = path
        self.start = start
        self.window_bytes = WINDOW_BYTES  # read here, so a test can make windows small
        self.windowed = storage.is_uri(path)
        self.mapping = None
        if self.windowed:
            size = storage.size(path)
        else:
            self.mapping, _ = storage.read_range(path)
            size = len(self.mapping)
        self.stop = size if end is None else min(end, size)

    def window(self, first: int, last: int) -> bytes:
        data, _ = storage.read_range(self.path, first, last)
        return data

    def rest(self, first: int):
        """(buffer, shift): bytes ``first..stop`` are ``buffer[first - shift:stop - shift]``."""
        if not self.windowed:
            return self.mapping, 0
        if first >= self.stop:
            return b"", first
        import tempfile

        handle, spill = tempfile.mkstemp(prefix="segtool-range-")
        try:
            os.unlink(spill)  # the mapping keeps it: nothing is left behind, however the task ends
            for at in range(first, self.stop, self.window_bytes):
                data = self.window(at, min(self.stop, at + self.window_bytes))
                if np.frombuffer(data, np.uint8).any():
                    os.pwrite(handle, data, at - first)
            os.ftruncate(handle, self.stop - first)
            return mmap.mmap(handle, 0, access=mmap.ACCESS_READ), first
        finally:
            os.close(handle)


def _kafka_pieces(source: _TaskRange):
    """(batch or ``DamagedRange``, shift) of ``kafka_pieces`` over a task's range: positions plus shift are
    file positions.  Over a URI the windows' batches come first, then ``kafka_pieces`` over the rest from
    where they stop, with the offset after the last valid batch it would have seen."""
    path, pos, stop = source.path, source.start, source.stop
    after = None
    while source.windowed and pos < stop:
        window = source.window(pos, min(stop, pos + source.window_bytes))
        if pos + len(window) < stop and len(window) >= LOG_OVERHEAD:
            whole = LOG_OVERHEAD + LOG_ENTRY_HEADER_FAST.unpack_from(window)[1]
            if len(window) < whole <= min(WHOLE_MOST, stop - pos):
                window = source.window(pos, pos + whole)  # one batch larger than a window: read whole
        scan = BatchScan(window, 0, len(window), path)
        resume = None
        try:
            for batch in scan:
                if not batch.crc_valid:
                    resume = batch.position
                    break
                yield batch, pos
                after = batch.last_offset + 1
        except CorruptData:
            resume = scan.valid_bytes
        if resume is None:
            if scan.stop_reason is None:
                pos += len(window)
                continue
            if pos + len(window) < stop and scan.valid_bytes > 0:  # a batch runs on into the next window
                pos += scan.valid_bytes
                continue
            resume = scan.valid_bytes
        pos += resume
        break
    if pos < stop:
        buf, shift = source.rest(pos)
        for piece in kafka_pieces(buf, path, base_offset=after, start=pos - shift, end=stop - shift):
            yield piece, shift


def _runs_past(window, at: int) -> bool:
    """Does the CommitLog record at ``at`` run past the window (or is its header cut by it)?"""
    from segtool.rocketmq.store_files import BLANK_RECORD_FAST, MIN_MESSAGE_SIZE

    if len(window) - at < BLANK_RECORD_FAST.size:
        return True
    total_size, _ = BLANK_RECORD_FAST.unpack_from(window, at)
    return total_size >= MIN_MESSAGE_SIZE and at + total_size > len(window)


def _commitlog_pieces(source: _TaskRange, file_from_offset: int, keep_body: bool):
    """(message, ``DamagedRange`` or ``CommitLogEnd``, shift) of ``commitlog_pieces`` over a task's range:
    positions plus shift are file positions.  Over a URI the windows' messages come first, then
    ``commitlog_pieces`` over the rest from where they stop, with the last valid message before it."""
    from segtool.rocketmq.store_files import BLANK_RECORD_FAST, walk_commitlog

    path, pos, stop = source.path, source.start, source.stop
    file = storage.basename(path)
    previous = None
    while source.windowed and pos < stop:
        window = source.window(pos, min(stop, pos + source.window_bytes))
        if pos + len(window) < stop and len(window) >= BLANK_RECORD_FAST.size:
            whole, _ = BLANK_RECORD_FAST.unpack_from(window)
            if len(window) < whole <= min(WHOLE_MOST, stop - pos):
                window = source.window(pos, pos + whole)  # one message larger than a window: read whole
        resume = None
        for step in walk_commitlog(window, file_from_offset=file_from_offset + pos, file=file, path=path,
                                   keep_body=keep_body):
            if isinstance(step, dict):
                if not body_crc_valid(step):
                    resume = step["fileOffset"]
                    break
                yield step, pos
                previous = step
                continue
            at = step.file_offset
            if pos + at == stop and step.kind is WalkEnd.END_OF_FILE:
                yield step, pos
                return
            if pos + len(window) < stop and (at == len(window) or at > 0 and _runs_past(window, at)):
                pos += at  # the next window goes on from the message the window cut
            else:
                resume = at
        if resume is not None:
            pos += resume
            break
    buf, shift = source.rest(pos)
    view = memoryview(buf)[pos - shift:stop - shift]
    released = (pos - shift) - (pos - shift) % mmap.PAGESIZE
    for piece in commitlog_pieces(view, file_from_offset=file_from_offset + pos, file=file, path=path,
                                  previous=previous, keep_body=keep_body):
        yield piece, pos
        if isinstance(piece, dict):  # a view's walker cannot release the mapping's pages: done here
            at = pos - shift + piece["fileOffset"]
            if at - released > _RELEASE_EVERY:
                released = release_pages(buf, released, at)


# -- Kafka ------------------------------------------------------------------

# Kafka's TimestampType ids (``TimestampType.id``), the ``timestampType`` Spark's Kafka source gives
_TIMESTAMP_TYPE_IDS = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}


def _control_json(record) -> str | None:
    """A control record's decoded value (``dump``'s ``control``) as JSON text."""
    from segtool.kafka.metadata import control_record_value  # control records are few

    value = control_record_value(record)
    return None if value is None else json.dumps(value, separators=(",", ":"))

class _KafkaBuilder:
    """Column accumulators for Kafka rows; batch-level fields are stored once per batch."""

    def __init__(self, task: dict, with_values: bool):
        self.task = task
        self.with_values = with_values
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.payload_bytes = 0  # keys, and values when they are kept
        # per batch
        self.counts: list[int] = []
        self.b_position: list[int] = []
        self.b_base: list[int] = []
        self.b_last: list[int] = []
        self.b_wrapper: list[int] = []  # a legacy message's own offset field; -1 (null) for v2
        self.b_magic: list[int] = []
        self.b_epoch: list[int] = []
        self.b_ts_type: list[str] = []
        self.b_pid: list[int] = []
        self.b_pepoch: list[int] = []
        self.b_txn: list[bool] = []
        self.b_control: list[bool] = []
        self.b_codec: list[str] = []
        self.b_crc: list[bool] = []
        # per record
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.key: list = []
        self.key_utf8: list = []
        self.key_size: list[int] = []
        self.value_size: list[int] = []
        self.value_sha: list = []
        self.value: list = []
        self.h_offsets: list[int] = [0]
        self.h_keys: list = []
        self.h_values: list = []
        self.sequence: list[int] = []
        self.control_type: list = []
        self.control: list = []
        self.record_crc: list = []

    def _batch(self, batch: RecordBatch, n: int, shift: int, base_offset: int) -> None:
        self.counts.append(n)
        self.b_position.append(batch.position + shift)
        self.b_base.append(base_offset)
        self.b_last.append(batch.last_offset)
        self.b_wrapper.append(-1 if batch.wrapper_offset is None else batch.wrapper_offset)
        self.b_magic.append(batch.magic)
        self.b_epoch.append(batch.partition_leader_epoch)
        self.b_ts_type.append(batch.timestamp_type)
        self.b_pid.append(batch.producer_id)
        self.b_pepoch.append(batch.producer_epoch)
        self.b_txn.append(batch.is_transactional)
        self.b_control.append(batch.is_control)
        self.b_codec.append(batch.codec_name)
        self.b_crc.append(batch.crc_valid)
        self.rows += n

    def add_columns(self, batch: RecordBatch, columns, shift: int) -> None:
        n = columns.count
        self._batch(batch, n, shift, batch.base_offset)
        offset_delta = columns.offset_delta
        self.offset.extend((offset_delta + batch.base_offset).tolist())
        if batch.is_log_append_time:
            self.timestamp.extend([batch.max_timestamp] * n)
        else:
            self.timestamp.extend((columns.timestamp_delta + batch.base_timestamp).tolist())
        if batch.base_sequence == -1:
            self.sequence.extend([-1] * n)
        else:
            seq = offset_delta + batch.base_sequence
            seq = np.where(seq > _INT32_MAX, seq - (_INT32_MAX + 1), seq)
            self.sequence.extend(seq.tolist())
        keys = columns.keys()
        self.payload_bytes += int(columns.key_len.clip(0).sum())
        if self.with_values:
            self.payload_bytes += int(columns.value_len.clip(0).sum())
        self.key.extend(keys)
        self.key_utf8.extend([_utf8_or_none(k) for k in keys])
        self.key_size.extend(columns.key_len.tolist())
        value_len = columns.value_len.tolist()
        self.value_size.extend(value_len)
        view = memoryview(columns.data)
        self.value_sha.extend([None if length < 0 else _sha256(view[s:s + length]).hexdigest()
                               for s, length in zip(columns.value_start.tolist(), value_len)])
        if self.with_values:
            self.value.extend(columns.values())
        if columns.headers is None:
            last = self.h_offsets[-1]
            self.h_offsets.extend([last] * n)
        else:
            for found in columns.headers:
                for hk, hv in found:
                    self.h_keys.append(hk)
                    self.h_values.append(hv)
                self.h_offsets.append(len(self.h_keys))
        self.control_type.extend([None] * n)
        self.control.extend([None] * n)
        self.record_crc.extend([None] * n)

    def add_records(self, batch: RecordBatch, records, shift: int) -> None:
        first = base_offset_of(batch, records)  # Kafka's baseOffset(): a compressed wrapper's first inner offset
        self._batch(batch, len(records), shift, batch.base_offset if first is None else first)
        control = batch.is_control
        legacy = batch.magic < 2
        with_values = self.with_values
        for record in records:
            key = record.key
            value = record.value
            self.offset.append(record.offset)
            self.timestamp.append(record.timestamp)
            self.key.append(key)
            self.key_utf8.append(_utf8_or_none(key))
            self.key_size.append(-1 if key is None else len(key))
            self.value_size.append(-1 if value is None else len(value))
            self.value_sha.append(None if value is None else _sha256(value).hexdigest())
            self.payload_bytes += 0 if key is None else len(key)
            if with_values:
                self.value.append(value)
                self.payload_bytes += 0 if value is None else len(value)
            for hk, hv in record.headers:
                self.h_keys.append(hk)
                self.h_values.append(hv)
            self.h_offsets.append(len(self.h_keys))
            self.sequence.append(record.sequence)
            self.control_type.append(control_record_type(record)[1] if control else None)
            self.control.append(_control_json(record) if control else None)
            self.record_crc.append(record.crc_valid if legacy else None)

    def flush(self) -> pa.RecordBatch:
        task = self.task
        n = self.rows
        counts = np.asarray(self.counts, dtype=np.int64)

        def per_batch(values, dtype):
            return np.repeat(np.asarray(values, dtype=dtype), counts)

        def per_batch_text(values):
            # few distinct values: repeat the indices of a small dictionary
            labels = sorted(set(values))
            codes = np.asarray([labels.index(v) for v in values], dtype=np.int32)
            return pa.DictionaryArray.from_arrays(np.repeat(codes, counts), labels).cast(pa.string())

        wrapper_offsets = per_batch(self.b_wrapper, np.int64)
        header_offsets = np.asarray(self.h_offsets, dtype=np.int32)
        headers = pa.ListArray.from_arrays(
            pa.array(header_offsets),
            pa.StructArray.from_arrays([pa.array(self.h_keys, pa.string()), pa.array(self.h_values, pa.binary())],
                                       fields=list(HEADER_TYPE)),
            mask=pa.array(header_offsets[1:] == header_offsets[:-1]),  # no headers: null, as Spark's source
        )
        magic = per_batch(self.b_magic, np.int8)
        stored_times = np.asarray(self.timestamp, dtype=np.int64)
        columns = {
            "broker": pa.array([KAFKA] * n, pa.string()),
            "source_dir": pa.array([task["source_dir"]] * n, pa.string()),
            "broker_id": pa.repeat(pa.scalar(task["broker_id"], pa.int32()), n),
            "broker_label": pa.repeat(pa.scalar(task["broker_label"], pa.string()), n),
            "offset": pa.array(self.offset, pa.int64()),
            "compression": per_batch_text(self.b_codec),
            "segment_base_offset": pa.array(np.full(n, task["base_offset"], dtype=np.int64)),
            "batch_position": pa.array(per_batch(self.b_position, np.int64)),
            "batch_base_offset": pa.array(per_batch(self.b_base, np.int64)),
            "batch_last_offset": pa.array(per_batch(self.b_last, np.int64)),
            "batch_wrapper_offset": pa.array(wrapper_offsets, mask=wrapper_offsets < 0),
            "magic": pa.array(magic),
            "partition_leader_epoch": pa.array(per_batch(self.b_epoch, np.int32)),
            # RecordBatch.NO_TIMESTAMP: what a magic-0 record reads as, and Kafka's "none" in any format
            "timestamp": _event_times(stored_times, stored_times == NO_TIMESTAMP),
            "timestampType": pa.array(per_batch([_TIMESTAMP_TYPE_IDS[t] for t in self.b_ts_type], np.int32)),
            "timestamp_type": per_batch_text(self.b_ts_type),
            "timestamp_ms": pa.array(stored_times, mask=magic == 0),  # magic 0 stores no timestamp
            "key": pa.array(self.key, pa.binary()),
            "key_utf8": pa.array(self.key_utf8, pa.string()),
            "key_size": pa.array(self.key_size, pa.int32()),
            "value_size": pa.array(self.value_size, pa.int32()),
            "value_sha256": pa.array(self.value_sha, pa.string()),
            "value": pa.array(self.value, pa.binary()) if self.with_values else pa.nulls(n, pa.binary()),
            "headers": headers,
            "producer_id": pa.array(per_batch(self.b_pid, np.int64)),
            "producer_epoch": pa.array(per_batch(self.b_pepoch, np.int16)),
            "sequence": pa.array(self.sequence, pa.int32()),
            "is_transactional": pa.array(per_batch(self.b_txn, np.bool_)),
            "is_control": pa.array(per_batch(self.b_control, np.bool_)),
            "control_type": pa.array(self.control_type, pa.string()),
            "control": pa.array(self.control, pa.string()),
            "crc_valid": pa.array(per_batch(self.b_crc, np.bool_)),
            "record_crc_valid": pa.array(self.record_crc, pa.bool_()),
        }
        out = _file_batch(columns, n)
        self._reset()
        return out


def kafka_rows(task: dict, stats: dict, with_values: bool = False, cap: int = DEFAULT_CAP,
               chunk_rows: int = DEFAULT_CHUNK_ROWS, chunk_bytes: int = DEFAULT_CHUNK_BYTES):
    """((topic, partition), record batch) of every record of one Kafka split; fills ``stats`` on the way.

    The split is read past damage (``engine.salvage``): each damaged stretch is
    reported in ``stats["errors"]`` and rows go on from the next valid batch.  A
    batch whose records cannot be decoded (bad compression, malformed record) is
    reported and skipped.
    """
    path = task["path"]
    source = _TaskRange(path, task["start"], task["end"])
    builder = _KafkaBuilder(task, with_values)
    key = (task["topic"], task["partition"])
    errors = stats["errors"]
    for piece, shift in _kafka_pieces(source):
        if isinstance(piece, DamagedRange):
            damage = piece.as_dict()
            damage.update(first_byte=damage["first_byte"] + shift, last_byte=damage["last_byte"] + shift)
            errors.append(finding(FindingKind.DAMAGED_RANGE, damage["first_byte"], damaged_range_text(damage)))
            continue
        batch = piece
        stats["batches"] += 1
        if not batch.crc_valid:
            stats["crc_invalid"] += 1
        try:
            columns = None
            if batch.magic >= 2 and not batch.is_control:
                columns = batch_columns(batch, path, cap)
            if columns is not None:
                builder.add_columns(batch, columns, shift)
            else:
                builder.add_records(batch, batch_records(batch, path, cap), shift)
        except CorruptData as exc:
            errors.append(finding(FindingKind.RECORD_STRUCTURE, batch.position + shift, exc.message))
        if builder.rows >= chunk_rows or builder.payload_bytes >= chunk_bytes:
            stats["rows"] += builder.rows
            yield key, builder.flush()
    stats["scanned_to"] = source.stop
    if builder.rows:
        stats["rows"] += builder.rows
        yield key, builder.flush()


# -- RocketMQ -----------------------------------------------------------------

_TRANSACTION_TYPES = {0x0: "NOT_TRANSACTION", 0x4: "PREPARED", 0x8: "COMMIT", 0xC: "ROLLBACK"}
_FILE_TYPES = {field.name: field.type for field in FILE_SCHEMA}
# the columns that hold a message's field as decoded (its table's ``source``; absent when optional: null)
_TAKEN = [(name, MESSAGE_COLUMNS[name].source, MESSAGE_COLUMNS[name].required) for name, _, broker, _ in COLUMNS
          if broker == ROCKETMQ and name in MESSAGE_COLUMNS and name != "properties"]


def _rocketmq_batch(task: dict, messages: list[dict], with_values: bool) -> pa.RecordBatch:
    n = len(messages)
    data = {name: [m[source] for m in messages] if required else [m.get(source) for m in messages]
            for name, source, required in _TAKEN}
    data["offset"] = [m["queueOffset"] for m in messages]
    data["timestamp"] = _event_times(np.asarray(data["born_timestamp"], dtype=np.int64))
    data["broker"] = [ROCKETMQ] * n
    data["source_dir"] = [task["source_dir"]] * n
    data["broker_id"] = [task["broker_id"]] * n
    data["broker_label"] = [task["broker_label"]] * n
    data["transaction_type"] = [_TRANSACTION_TYPES.get(m["transactionType"]) for m in messages]
    data["properties"] = [list(m["properties"].items()) for m in messages]
    data["body_crc_valid"] = [m["bodyLength"] <= 0 or m["bodyCRC"] == m["bodyCRCComputed"] for m in messages]
    data["compression"] = [m.get("compression") for m in messages]
    return _file_batch({name: values if isinstance(values, pa.Array) else pa.array(values, _FILE_TYPES[name])
                        for name, values in data.items()}, n)


class _QueueRows:
    """Messages waiting to be written, by (topic, queue id): at most ``chunk_rows`` of them and about
    ``chunk_bytes`` of bodies over all queues, held as Arrow columns.

    Each batch is one row group of its queue's part file, and a Parquet writer
    holds every row group's metadata (about 50 KB of 60 columns) until the file
    closes; cutting every chunk by queue gave each queue a row group per chunk, so
    a 1 GiB CommitLog of 28 queues made 2,824 row groups, 140 MB.  When a bound is
    reached only the fullest queue is written, so row groups stay as large as the
    bound allows, and the rows pending stay within it.  The messages of a chunk are
    turned into columns as they come (columns built from messages held longer cost
    26-45% more CPU) and a queue's columns are joined when it is written.
    """

    def __init__(self, task: dict, with_values: bool, chunk_rows: int, chunk_bytes: int):
        self.task = task
        self.with_values = with_values
        self.chunk_rows = chunk_rows
        self.chunk_bytes = chunk_bytes
        self.fresh: list[dict] = []  # not yet in columns
        self.fresh_bytes = 0
        self.queues: dict[tuple, list[pa.RecordBatch]] = {}
        self.queue_rows: dict[tuple, int] = {}
        self.queue_bytes: dict[tuple, int] = {}
        self.rows = 0
        self.bytes = 0

    def add(self, message: dict) -> None:
        self.fresh.append(message)
        if self.with_values:
            self.fresh_bytes += max(message["bodyLength"], 0)
        if len(self.fresh) >= self.chunk_rows or self.fresh_bytes >= self.chunk_bytes:
            self._to_columns()

    def _to_columns(self) -> None:
        members: dict[tuple, list[dict]] = {}
        for message in self.fresh:
            members.setdefault((message["topic"], message["queueId"]), []).append(message)
        for key, queued in members.items():
            batch = _rocketmq_batch(self.task, queued, self.with_values)
            size = sum(max(m["bodyLength"], 0) for m in queued) if self.with_values else 0
            self.queues.setdefault(key, []).append(batch)
            self.queue_rows[key] = self.queue_rows.get(key, 0) + batch.num_rows
            self.queue_bytes[key] = self.queue_bytes.get(key, 0) + size
            self.rows += batch.num_rows
            self.bytes += size
        self.fresh, self.fresh_bytes = [], 0

    def full(self) -> bool:
        return self.rows >= self.chunk_rows or self.bytes >= self.chunk_bytes

    def flush_fullest(self):
        """((topic, queue id), record batch) of the queue holding the most rows, or the most bytes when the
        byte bound was reached."""
        if self.bytes >= self.chunk_bytes:
            key = max(self.queue_bytes, key=self.queue_bytes.__getitem__)
        else:
            key = max(self.queue_rows, key=self.queue_rows.__getitem__)
        return self._flush(key)

    def flush_all(self):
        """((topic, queue id), record batch) of every queue still holding rows, in the order of their oldest message."""
        if self.fresh:
            self._to_columns()
        for key in list(self.queues):
            yield self._flush(key)

    def _flush(self, key: tuple):
        batches = self.queues.pop(key)
        self.rows -= self.queue_rows.pop(key)
        self.bytes -= self.queue_bytes.pop(key)
        if len(batches) == 1:
            return key, batches[0]
        return key, pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def rocketmq_rows(task: dict, stats: dict, with_values: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  chunk_bytes: int = DEFAULT_CHUNK_BYTES):
    """((topic, queue id), record batch) of every message of one CommitLog split, read past damage;
    fills ``stats``."""
    from segtool.rocketmq.store_files import CommitLogEnd

    end = task["end"]
    source = _TaskRange(task["path"], task["start"], end)
    pending = _QueueRows(task, with_values, chunk_rows, chunk_bytes)
    messages = 0
    for piece, shift in _commitlog_pieces(source, task["base_offset"], with_values):
        if isinstance(piece, DamagedRange):
            damage = piece.as_dict()
            damage.update(first_byte=damage["first_byte"] + shift, last_byte=damage["last_byte"] + shift)
            stats["errors"].append(finding(FindingKind.DAMAGED_RANGE, damage["first_byte"], damaged_range_text(damage)))
        elif isinstance(piece, CommitLogEnd):
            stats["scanned_to"] = shift + piece.file_offset
            if piece.kind is WalkEnd.BLANK and not piece.blank_size_matches and end is None:
                stats["errors"].append(finding(FindingKind.BLANK_SIZE, shift + piece.file_offset,
                                               "blank end-of-file record whose size does not reach the file end"))
            elif piece.kind in (WalkEnd.BLANK, WalkEnd.ZERO_TAIL) and end is not None:
                stats["stop_reason"] = piece.kind  # a middle split should run to its end
        else:
            messages += 1
            pending.add(piece)
            while pending.full():
                key, batch = pending.flush_fullest()
                stats["rows"] += batch.num_rows
                yield key, batch
    stats["batches"] = messages
    for key, batch in pending.flush_all():
        stats["rows"] += batch.num_rows
        yield key, batch


def task_rows(task: dict, stats: dict, with_values: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS,
              chunk_bytes: int = DEFAULT_CHUNK_BYTES):
    """((topic, partition), record batch) pairs of one task: every row of its byte range."""
    if task["kind"] == KAFKA:
        return kafka_rows(task, stats, with_values, chunk_rows=chunk_rows, chunk_bytes=chunk_bytes)
    return rocketmq_rows(task, stats, with_values, chunk_rows=chunk_rows, chunk_bytes=chunk_bytes)
