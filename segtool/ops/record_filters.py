"""Record filters, summaries and key/value renderings for `dump` and `lookup` (docs/filters.md).

One ``RecordFilter`` holds what the options ask for: an offset range, a time range, a key,
producer ids (given, or those of a transactional id), a producer epoch, a leader epoch and
a limit.  Its batch test looks only at a batch's header, so a whole batch that cannot hold
a match is skipped without decoding its records; its record test then looks at each
record.  Producer ids, epochs and leader epochs are batch fields: a record has its batch's.

``filter_dump_items`` applies a filter to dump's item stream (batch items, each followed by
its record items); ``Summary`` adds up what passes (counts, bytes, time span, per producer
and per codec); ``RecordShape`` and ``shape_record`` show a record's key and value as text,
hex, base64 or JSON, with the schema-registry framing (``kafka.schema_registry``) taken
apart, and without the record's metadata when asked.
"""

from __future__ import annotations

import base64
import datetime as _dt
import glob
import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from segtool.errors import UsageError
from segtool.ops.output_schema import CodecFigures, ProducerFigures, RecordsSummary

BYTES_FORMATS = ("text", "hex", "base64", "json")
TRANSACTION_TOPIC = "__transaction_state"
# what a filtered dump still shows besides batches and records: the damage it met
_DAMAGE_KINDS = frozenset({"error", "damaged_range", "zero_tail", "trailing_bytes", "unreadable", "skipped"})
_NO_EPOCH = -1  # legacy messages have no producer or leader epoch: Kafka shows -1


@dataclass(frozen=True)
class RecordFilter:
    """Which records to keep; every bound inclusive, None for no bound."""

    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    key: bytes | None = None
    producer_ids: frozenset[int] | None = None
    producer_epoch: int | None = None
    leader_epoch: int | None = None
    limit: int | None = None
    # the transactional id the producer ids came from, for the record of what was asked
    transactional_id: str | None = None

    @property
    def selects(self) -> bool:
        """Does the filter leave records out (a limit alone only stops early)?"""
        return any(value is not None for value in (
            self.first_offset, self.last_offset, self.first_timestamp, self.last_timestamp, self.key,
            self.producer_ids, self.producer_epoch, self.leader_epoch))

    @property
    def active(self) -> bool:
        return self.selects or self.limit is not None

    def described(self) -> dict:
        """The criteria given, by name (for answers: what was asked)."""
        shown = {
            "first_offset": self.first_offset, "last_offset": self.last_offset,
            "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
            "key": None if self.key is None else self.key.decode("utf-8", "replace"),
            "producer_ids": None if self.producer_ids is None else sorted(self.producer_ids),
            "producer_epoch": self.producer_epoch, "leader_epoch": self.leader_epoch,
            "transactional_id": self.transactional_id, "limit": self.limit,
        }
        return {name: value for name, value in shown.items() if value is not None}

    def admits_batch_header(self, base_offset: int, last_offset: int, max_timestamp: int, timestamp_type: str,
                            producer_id: int, producer_epoch: int, leader_epoch: int) -> bool:
        """Could a batch with this header hold a record the filter keeps?"""
        if self.first_offset is not None and last_offset < self.first_offset:
            return False
        if self.last_offset is not None and base_offset > self.last_offset:
            return False
        # no record of a batch is later than its max timestamp; under LogAppendTime every record has it
        if self.first_timestamp is not None and max_timestamp < self.first_timestamp:
            return False
        if (self.last_timestamp is not None and timestamp_type == "LogAppendTime"
                and max_timestamp > self.last_timestamp):
            return False
        if self.producer_ids is not None and producer_id not in self.producer_ids:
            return False
        if self.producer_epoch is not None and producer_epoch != self.producer_epoch:
            return False
        return self.leader_epoch is None or leader_epoch == self.leader_epoch

    def admits_batch(self, batch) -> bool:
        """``admits_batch_header`` of a decoded batch (``kafka_log.RecordBatch``)."""
        return self.admits_batch_header(batch.base_offset, batch.last_offset, batch.max_timestamp,
                                        batch.timestamp_type, batch.producer_id, batch.producer_epoch,
                                        batch.partition_leader_epoch)

    def admits_batch_item(self, item: dict) -> bool:
        """``admits_batch_header`` of dump's batch item (a legacy one has no producer or leader epoch)."""
        return self.admits_batch_header(item["base_offset"], item["last_offset"], item["max_timestamp"],
                                        item["timestamp_type"], item.get("producer_id", _NO_EPOCH),
                                        item.get("producer_epoch", _NO_EPOCH),
                                        item.get("partition_leader_epoch", _NO_EPOCH))

    def admits_record(self, offset: int, timestamp: int, key: bytes | None) -> bool:
        """Does a record of an admitted batch pass the record-level criteria?"""
        if self.first_offset is not None and offset < self.first_offset:
            return False
        if self.last_offset is not None and offset > self.last_offset:
            return False
        if self.first_timestamp is not None and timestamp < self.first_timestamp:
            return False
        if self.last_timestamp is not None and timestamp > self.last_timestamp:
            return False
        return self.key is None or key == self.key

    def admits_record_item(self, item: dict) -> bool:
        key = None
        if self.key is not None and item["key_b64"] is not None:
            key = base64.b64decode(item["key_b64"])
        return self.admits_record(item["offset"], item["timestamp"], key)


def epoch_ms(text: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 time (UTC unless it says otherwise), as epoch ms; None
    when ``text`` is neither."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return int(moment.timestamp() * 1000)


def _time_option(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    moment = epoch_ms(text)
    if moment is None or moment < 0:
        raise UsageError(f"{option} takes epoch ms or ISO-8601, not {text!r}")
    return moment


def record_filter_from_options(*, from_offset: int | None = None, to_offset: int | None = None,
                               from_time: str | None = None, to_time: str | None = None,
                               key: str | None = None, producer_ids: Iterable[int] | None = None,
                               producer_epoch: int | None = None, leader_epoch: int | None = None,
                               transactional_id: str | None = None, limit: int | None = None,
                               paths: Iterable[str] = ()) -> RecordFilter:
    """The filter the command-line options ask for; times as epoch ms or ISO-8601.

    A transactional id is in no batch: its producer ids come from the coordinator's
    ``__transaction_state`` log in the log dir holding ``paths`` (UsageError when there is none).
    """
    first_timestamp, last_timestamp = _time_option(from_time, "--from-time"), _time_option(to_time, "--to-time")
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError(f"--from-offset {from_offset} is after --to-offset {to_offset}")
    if first_timestamp is not None and last_timestamp is not None and first_timestamp > last_timestamp:
        raise UsageError(f"--from-time {from_time} is after --to-time {to_time}")
    pids = None if producer_ids is None or not list(producer_ids) else frozenset(producer_ids)
    if transactional_id is not None:
        transactional_pids = producer_ids_of_transactional_id(transactional_id, paths)
        pids = transactional_pids if pids is None else pids & transactional_pids
    return RecordFilter(first_offset=from_offset, last_offset=to_offset, first_timestamp=first_timestamp,
                        last_timestamp=last_timestamp, key=None if key is None else key.encode("utf-8"),
                        producer_ids=pids, producer_epoch=producer_epoch, leader_epoch=leader_epoch,
                        limit=limit, transactional_id=transactional_id)


def transaction_log_dir(paths: Iterable[str]) -> str | None:
    """The log dir holding ``__transaction_state`` partitions for ``paths``: a path itself (a log
    dir), its parent (a partition) or its grandparent (a segment), whichever has them first."""
    for path in paths:
        place = os.path.abspath(path)
        for _ in range(3):
            if glob.glob(os.path.join(glob.escape(place), f"{TRANSACTION_TOPIC}-[0-9]*")):
                return place
            place = os.path.dirname(place)
    return None


def producer_ids_of_transactional_id(transactional_id: str, paths: Iterable[str]) -> frozenset[int]:
    """Every producer id the coordinator recorded for ``transactional_id`` (a producer id changes
    when its epoch runs out), replayed from the log dir's ``__transaction_state`` partitions."""
    from segtool.engine.inventory import inventory
    from segtool.kafka.coordinator import decode_transaction_record
    from segtool.kafka.messages import CoordinatorRecordError
    from segtool.ops.groups import batch_records, log_batches, partition_view

    paths = list(paths)
    log_dir = transaction_log_dir(paths)
    if log_dir is None:
        raise UsageError(f"--transactional-id needs the log dir's {TRANSACTION_TOPIC} partitions: batches carry "
                         "only a producer id, and the transaction coordinator's log is what maps a transactional "
                         f"id to its producer ids; there is none in or above {', '.join(paths)} "
                         "(use --producer-id)")
    coordinator_dirs = sorted(glob.glob(os.path.join(glob.escape(log_dir), f"{TRANSACTION_TOPIC}-[0-9]*")))
    found: set[int] = set()
    known: set[str] = set()
    problems: list = []  # an undecodable coordinator record cannot name the id asked for
    for partition in inventory(coordinator_dirs).partitions:
        view = partition_view(partition)
        if view is None:
            continue
        for segment, batch in log_batches(view, problems):
            if batch.is_control:
                continue
            for record in batch_records(segment, batch, problems):
                try:
                    decoded = decode_transaction_record(bytes(record.key or b""),
                                                        None if record.value is None else bytes(record.value))
                except CoordinatorRecordError:
                    continue
                known.add(decoded.key["transactionalId"])
                if decoded.key["transactionalId"] == transactional_id and decoded.value is not None:
                    found.add(decoded.value["producerId"])
    if not found:
        listed = ", ".join(sorted(known)[:10]) or "none"
        raise UsageError(f"transactional id {transactional_id!r} is not in {log_dir}'s {TRANSACTION_TOPIC} "
                         f"(ids there: {listed})")
    return frozenset(found)


# -- dump's item stream ---------------------------------------------------------------------

def filter_dump_items(items: Iterable[dict], record_filter: RecordFilter, deep: bool = True) -> Iterator[dict]:
    """The items of ``dump_paths(..., in_runs=False)`` that ``record_filter`` keeps.

    With a filter, the stream holds Kafka batches and records, and the items that show damage;
    index entries, snapshots, checkpoints and RocketMQ messages are left out.  A batch is
    shown before its first kept record (``deep``) or when its header is admitted (shallow);
    the limit counts records (batches when shallow) and ends the stream when reached.
    """
    if not record_filter.active:
        yield from items
        return
    pending = None  # an admitted batch whose records are still to come
    admitted = False  # are the records that follow part of an admitted batch?
    kept = 0
    for item in items:
        kind = item["kind"]
        if kind == "batch":
            admitted = record_filter.admits_batch_item(item)
            pending = item if admitted and deep else None
            if admitted and not deep:
                yield item
                kept += 1
        elif kind == "record":
            if not admitted or not record_filter.admits_record_item(item):
                continue
            if pending is not None:
                yield pending
                pending = None
            yield item
            kept += 1
        elif kind in _DAMAGE_KINDS:
            if pending is not None:  # the batch whose records failed to decode
                yield pending
                pending = None
            yield item
        if record_filter.limit is not None and kept >= record_filter.limit:
            return


def shape_dump_items(items: Iterable[dict], shape: RecordShape) -> Iterator[dict]:
    """Dump's items with each record shown as ``shape`` says (and no batch items when it skips
    record metadata)."""
    for item in items:
        if item["kind"] == "record":
            yield shape_record(item, shape)
        elif not (shape.skip_metadata and item["kind"] == "batch"):
            yield item


def summarize(items: Iterable[dict]) -> RecordsSummary:
    """The summary of a (filtered) dump item stream."""
    summary = Summary()
    for item in items:
        summary.add(item)
    return summary.report()


# -- the summary ----------------------------------------------------------------------------

@dataclass
class _Figures:
    batches: int = 0
    records: int = 0
    bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None

    def add_record(self, offset: int) -> None:
        self.records += 1
        self.first_offset = offset if self.first_offset is None else min(self.first_offset, offset)
        self.last_offset = offset if self.last_offset is None else max(self.last_offset, offset)


@dataclass
class Summary:
    """Counts, bytes, time span, per-producer and per-codec figures of the batches and records added
    (in dump's item order: a batch, then its records)."""

    total: _Figures = field(default_factory=_Figures)
    control_batches: int = 0
    control_records: int = 0
    key_bytes: int = 0
    value_bytes: int = 0
    null_keys: int = 0
    null_values: int = 0
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    framed_values: int = 0
    problems: int = 0
    files: set[str] = field(default_factory=set)
    producers: dict[int, _Figures] = field(default_factory=dict)
    producer_epochs: dict[int, set[int]] = field(default_factory=dict)
    transactional_producers: set[int] = field(default_factory=set)
    codecs: dict[str, _Figures] = field(default_factory=dict)
    _batch: dict | None = None

    def add(self, item: dict) -> None:
        kind = item["kind"]
        if kind == "batch":
            self.add_batch(item)
        elif kind == "record":
            self.add_record(item)
        elif kind in _DAMAGE_KINDS and kind != "skipped" or item.get("crc_valid") is False:
            self.problems += 1

    def add_batch(self, item: dict) -> None:
        self._batch = item
        pid = item.get("producer_id", -1)
        if item.get("file") is not None:
            self.files.add(item["file"])
        if item.get("crc_valid") is False:
            self.problems += 1
        for figures in (self.total, self.producers.setdefault(pid, _Figures()),
                        self.codecs.setdefault(item["codec"], _Figures())):
            figures.batches += 1
            figures.bytes += item["size"]
        self.producer_epochs.setdefault(pid, set()).add(item.get("producer_epoch", _NO_EPOCH))
        if item.get("is_transactional"):
            self.transactional_producers.add(pid)
        if item.get("is_control"):
            self.control_batches += 1

    def add_record(self, item: dict) -> None:
        batch = self._batch or {}
        offset, timestamp = item["offset"], item["timestamp"]
        for figures in (self.total, self.producers.setdefault(batch.get("producer_id", -1), _Figures()),
                        self.codecs.setdefault(batch.get("codec", "none"), _Figures())):
            figures.add_record(offset)
        if batch.get("is_control"):
            self.control_records += 1
        self.key_bytes += max(item["key_size"], 0)
        self.value_bytes += max(item["value_size"], 0)
        self.null_keys += item["key_size"] < 0
        self.null_values += item["value_size"] < 0
        if not batch.get("is_control") and item["value_b64"] is not None:
            from segtool.kafka.schema_registry import unframe

            self.framed_values += unframe(base64.b64decode(item["value_b64"])) is not None
        if timestamp >= 0:  # magic 0 has no timestamps
            self.first_timestamp = timestamp if self.first_timestamp is None else min(self.first_timestamp, timestamp)
            self.last_timestamp = timestamp if self.last_timestamp is None else max(self.last_timestamp, timestamp)

    def report(self) -> RecordsSummary:
        producers: list[ProducerFigures] = [
            {"producer_id": pid, "producer_epochs": sorted(self.producer_epochs.get(pid, ())),
             "transactional": pid in self.transactional_producers, "batches": figures.batches,
             "records": figures.records, "bytes": figures.bytes, "first_offset": figures.first_offset,
             "last_offset": figures.last_offset}
            for pid, figures in sorted(self.producers.items())]
        codecs: list[CodecFigures] = [
            {"codec": codec, "batches": figures.batches, "records": figures.records, "bytes": figures.bytes}
            for codec, figures in sorted(self.codecs.items())]
        span = None
        if self.first_timestamp is not None:
            span = self.last_timestamp - self.first_timestamp
        return {"kind": "records_summary", "files": len(self.files), "batches": self.total.batches,
                "records": self.total.records, "bytes": self.total.bytes,
                "control_batches": self.control_batches, "control_records": self.control_records,
                "key_bytes": self.key_bytes, "value_bytes": self.value_bytes, "null_keys": self.null_keys,
                "null_values": self.null_values, "schema_registry_framed_values": self.framed_values,
                "first_offset": self.total.first_offset, "last_offset": self.total.last_offset,
                "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
                "time_span_ms": span, "producers": producers, "codecs": codecs, "problems": self.problems}


# -- keys and values for people -------------------------------------------------------------

@dataclass(frozen=True)
class RecordShape:
    """How records are shown: the key's and value's format, and whether their metadata goes."""

    key_format: str = "text"
    value_format: str = "text"
    skip_metadata: bool = False

    def __post_init__(self):
        for option, chosen in (("--key-format", self.key_format), ("--value-format", self.value_format)):
            if chosen not in BYTES_FORMATS:
                raise UsageError(f"{option} takes {', '.join(BYTES_FORMATS)}, not {chosen!r}")


def render_bytes(data: bytes, wanted: str) -> tuple[str, str]:
    """``data`` in the ``wanted`` format, and the format used: JSON that does not parse falls back
    to text, text that is not UTF-8 to hex (so the bytes are always there to see)."""
    if wanted == "base64":
        return base64.b64encode(data).decode("ascii"), "base64"
    if wanted == "json":
        try:
            return json.dumps(json.loads(data), ensure_ascii=False, separators=(",", ":")), "json"
        except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
            wanted = "text"
    if wanted == "text":
        try:
            return data.decode("utf-8"), "text"
        except UnicodeDecodeError:
            pass
    return data.hex(), "hex"


_RECORD_METADATA = ("batch_position", "offset", "timestamp", "key_size", "value_size", "sequence", "headers",
                    "control_type", "crc", "crc_valid")


def shape_record(item: dict, shape: RecordShape) -> dict:
    """A record item with its key and value in ``shape``'s formats: ``key``/``value`` the rendering,
    ``key_format``/``value_format`` the format used, ``key_schema_id``/``value_schema_id`` when the
    bytes have the schema-registry framing (then the rendering is of the payload after it)."""
    from segtool.kafka.schema_registry import unframe

    shown = {"kind": "record"}
    if not shape.skip_metadata:
        shown.update((name, item[name]) for name in _RECORD_METADATA if name in item)
    for name, wanted in (("key", shape.key_format), ("value", shape.value_format)):
        encoded = item[f"{name}_b64"]
        if encoded is None:
            shown.update({name: None, f"{name}_format": None})
            continue
        data = base64.b64decode(encoded)
        framed = None if "control_type" in item else unframe(data)
        if framed is not None:
            shown[f"{name}_schema_id"] = framed.schema_id
            data = framed.payload
        shown[name], shown[f"{name}_format"] = render_bytes(data, wanted)
    if "file" in item:
        shown["file"] = item["file"]
    return shown


DUMP_PREVIEW = 60  # characters of a key or value dump's text lines show (as for unshaped records)


def _shown_field(item: dict, name: str, full: bool, limit: int) -> str:
    if item[name] is None:
        return "null"
    schema = f"[schema {item[f'{name}_schema_id']}] " if f"{name}_schema_id" in item else ""
    used = item[f"{name}_format"]
    text = json.dumps(item[name], ensure_ascii=False)[1:-1]  # control characters escaped, unquoted
    if not full and len(text) > limit:
        how = "" if used == "text" else f", {used}"
        return f"{schema}{text[:limit]}… ({len(text)} characters{how}; --full shows all)"
    return f"{schema}{text}" + ("" if used == "text" else f" ({used})")


def shown_record_line(item: dict, full: bool = False) -> str:
    """A shaped record (``shape_record``) as dump's text format prints a record: one indented line."""
    from segtool.ops.render import iso_time

    head = "" if "offset" not in item else f" offset {item['offset']} {iso_time(item['timestamp'])}"
    text = (f" {head} key {_shown_field(item, 'key', full, DUMP_PREVIEW)}"
            f" value {_shown_field(item, 'value', full, DUMP_PREVIEW)}")
    if item.get("control_type"):
        text += f" control {item['control_type']}"
    return text


def shown_record_lines(item: dict, full: bool = False) -> list[str]:
    """A shaped record as labelled lines (lookup's text answer)."""
    from segtool.ops.render import VALUE_LIMIT, show_time

    lines = [] if "offset" not in item else [f"offset     {item['offset']}",
                                              f"time       {show_time(item['timestamp'])}"]
    lines += [f"key        {_shown_field(item, 'key', full, VALUE_LIMIT)}",
              f"value      {_shown_field(item, 'value', full, VALUE_LIMIT)}"]
    if item.get("control_type"):
        lines.append(f"control    {item['control_type']}")
    if "batch_position" in item:
        lines.append(f"file       {item['file']} (batch at byte {item['batch_position']})")
    return lines


def summary_lines(summary: RecordsSummary) -> list[str]:
    """A summary (``Summary.report``) for people: totals, then one line per producer and per codec."""
    from segtool.ops.render import iso_time

    def offsets(first, last) -> str:
        return "no records" if first is None else f"offsets {first}..{last}"

    lines = [f"{summary['records']} records in {summary['batches']} batches ({summary['bytes']} bytes) from "
             f"{summary['files']} files, {offsets(summary['first_offset'], summary['last_offset'])}"]
    if summary["first_timestamp"] is not None:
        lines.append(f"time {iso_time(summary['first_timestamp'])} .. {iso_time(summary['last_timestamp'])} "
                     f"({summary['time_span_ms']} ms)")
    lines.append(f"control: {summary['control_batches']} batches, {summary['control_records']} records; "
                 f"keys {summary['key_bytes']} bytes ({summary['null_keys']} null); values {summary['value_bytes']} "
                 f"bytes ({summary['null_values']} null, {summary['schema_registry_framed_values']} "
                 "schema-registry framed)")
    for producer in summary["producers"]:
        epochs = ",".join(map(str, producer["producer_epochs"]))
        lines.append(f"producer {producer['producer_id']} epochs {epochs}"
                     f"{' transactional' if producer['transactional'] else ''}: {producer['batches']} batches, "
                     f"{producer['records']} records, {producer['bytes']} bytes, "
                     f"{offsets(producer['first_offset'], producer['last_offset'])}")
    for codec in summary["codecs"]:
        lines.append(f"codec {codec['codec']}: {codec['batches']} batches, {codec['records']} records, "
                     f"{codec['bytes']} bytes")
    if summary["problems"]:
        lines.append(f"problems: {summary['problems']} items show damage")
    return lines
