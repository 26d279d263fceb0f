"""`lookup`: answer the broker's lookups from files, through the engine.

Kafka: fetch at an offset, ListOffsets for a timestamp (and the special
latest/earliest/max-timestamp), the offset index's own floor/ceiling answer.
Every function returns a plain dict (the CLI's ``--json`` object).
Kafka lookups take record filters (``ops.record_filters``, docs/filters.md): a fetch or a
ListOffsets answer is then the first record at or after the broker's answer that passes,
a key lookup keeps the records that pass, and ``--summary`` adds them up instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segtool.engine.inventory import KAFKA_PARTITION, directory_kind
from segtool.engine.partition import PartitionView, RecordHit
from segtool.errors import CorruptData, SegtoolError, UsageError
from segtool.formats.json_names import snake_case_keys
from segtool.ops.output_schema import LookupAnswer
from segtool.ops.record_filters import RecordFilter, RecordShape, Summary, epoch_ms, shape_record

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
_SPECIAL = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}
ROCKETMQ_MAX_NUM = 64  # IndexService's own cap on a key lookup
KAFKA_KEY_MAX_NUM = 1000  # a Kafka key lookup's default: a key often has many records, and no index caps them


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, a special name (latest/earliest/max-timestamp) or ISO-8601."""
    text = text.strip()
    if text.lower() in _SPECIAL:
        return _SPECIAL[text.lower()]
    moment = epoch_ms(text)
    if moment is None:
        raise SegtoolError(f"timestamp {text!r} is neither epoch ms, ISO-8601 nor latest/earliest/max-timestamp")
    return moment


def _empty(partition: PartitionView, **extra) -> dict:
    return {"partition_dir": partition.directory, "offset": None, "timestamp": None,
            "segment": None, "position": None, **extra}


def _with_notes(answer: dict, partition: PartitionView) -> dict:
    """The answer, with what loading the partition changed (an interrupted swap completed), if anything."""
    if partition.notes:
        answer["notes"] = list(partition.notes) + answer.get("notes", [])
    return answer


def lookup_offset(directory: str, offset: int) -> LookupAnswer:
    """The first record a fetch at ``offset`` returns (the next one inside a compaction gap)."""
    partition = PartitionView(directory)
    hit = partition.read_at(offset)
    if hit is None:
        answer = _empty(partition, requested_offset=offset, log_end_offset=partition.log_end_offset)
    else:
        answer = {"partition_dir": directory, "requested_offset": offset, **hit.as_dict(), "record": _record(hit)}
    return _with_notes(answer, partition)


def _record(hit) -> dict:
    from segtool.ops.dump import record_item

    return record_item(hit.batch, hit.record, hit.segment)


def lookup_timestamp(directory: str, timestamp: int) -> LookupAnswer:
    """ListOffsets: the first offset whose timestamp >= ``timestamp`` (or a special value)."""
    partition = PartitionView(directory)
    base = {"partition_dir": directory, "requested_timestamp": timestamp}
    if timestamp == LATEST:
        answer = {**_empty(partition), **base, "offset": partition.log_end_offset}
    elif timestamp == EARLIEST:
        answer = {**_empty(partition), **base, "offset": partition.log_start_offset}
    else:
        hit = (partition.max_timestamp_hit() if timestamp == MAX_TIMESTAMP
               else partition.offset_for_timestamp(timestamp))
        answer = {**_empty(partition), **base} if hit is None else {**base, **hit.as_dict(), "record": _record(hit)}
        if timestamp != MAX_TIMESTAMP:
            for log in partition.mtime_segments(timestamp):
                answer.setdefault("notes", []).append(
                    f"{os.path.basename(log)} holds no timestamped batch: as in Kafka, its file's mtime stands in "
                    "for its timestamp, and this answer depends on it (copies often lose mtimes: cp -p, rsync -t)")
    return _with_notes(answer, partition)


def lookup_index_entry(directory: str, offset: int, ceiling: bool) -> LookupAnswer:
    """The offset index's own answer before any scan.

    Floor is ``OffsetIndex.lookup`` on the floor segment: the last entry <= offset,
    or (base offset, position 0) when the index has none.  Ceiling is the first
    entry >= offset, in this segment or a later one.
    """
    partition = PartitionView(directory)
    mode = "ceiling" if ceiling else "floor"
    first = max(partition.floor_segment(offset), 0)
    segments = partition.segments[first:] if ceiling else partition.segments[first:first + 1]
    for segment in segments:
        index = segment.offset_index
        entries = 0 if index is None else index.entries
        slot = -1
        if entries:
            slot = index.ceiling_slot(offset) if ceiling else index.largest_lower_bound_slot(offset)
        if slot == -1 and ceiling:
            continue
        found_offset, position = (segment.base_offset, 0) if slot == -1 else index.entry(slot)
        answer = {"partition_dir": directory, "requested_offset": offset, "mode": mode, "index": segment.index_path,
                  "slot": slot, "offset": found_offset, "position": position, "segment": segment.log_path,
                  "timestamp": None}
        if index is None:
            answer["notes"] = [f"{segment.index_path} does not exist: answered as an empty index would (the "
                               "broker rebuilds it when it loads the segment)"]
        return _with_notes(answer, partition)
    return _with_notes({**_empty(partition), "requested_offset": offset, "mode": mode}, partition)


# --------------------------------------------------------------------------
# RocketMQ
# --------------------------------------------------------------------------


def lookup_key(path: str, key: str, *, topic: str | None = None, begin: int = 0, end: int = 2**63 - 1,
               max_num: int = ROCKETMQ_MAX_NUM, include_collisions: bool = False, key_index: str | None = None,
               kind: str | None = None) -> LookupAnswer:
    """RocketMQ key lookup (``IndexService.queryOffset`` resolved in the CommitLog), or a Kafka
    partition's records by key (through the key index at ``key_index`` or its default place).

    ``path`` is a store root.  After an unclean shutdown (``abort`` file) the
    index is first recovered in memory as RocketMQ's abnormal recovery does.
    ``phy_offsets`` drops hash collisions unless ``include_collisions``.
    ``kind`` is ``directory_kind(path)`` when the caller has it already.
    """
    from segtool.engine.rocketmq_store import StoreView

    if (kind or directory_kind(path)) == KAFKA_PARTITION:
        from segtool.ops.keyindex import lookup_kafka_key

        return lookup_kafka_key(path, key, max_num=max_num if max_num != ROCKETMQ_MAX_NUM else KAFKA_KEY_MAX_NUM,
                                key_index=key_index)
    if topic is None:
        raise SegtoolError("--key on a RocketMQ store needs --topic (the index key is topic#key)", path)
    with StoreView(path) as store:
        return snake_case_keys(store.query_offsets(topic, key, max_num=max_num, begin=begin, end=end,
                                                   include_collisions=include_collisions))


def lookup_queue(path: str, topic: str, queue_id: int, queue_offset: int) -> LookupAnswer:
    """RocketMQ ConsumeQueue lookup: the unit at ``queue_offset`` and the message it points at."""
    from segtool.engine.rocketmq_store import StoreView

    with StoreView(path) as store:
        return snake_case_keys(store.queue_unit(topic, queue_id, queue_offset))


# --------------------------------------------------------------------------
# Kafka lookups through record filters
# --------------------------------------------------------------------------


def _passing_hits(partition: PartitionView, start: int, record_filter: RecordFilter, not_before: int | None,
                  most: int | None) -> tuple[list[RecordHit], list[str]]:
    """The records a fetch from ``start`` returns that pass ``record_filter`` (and, for ListOffsets,
    have a timestamp >= ``not_before``), in offset order, at most ``most``; and notes on where a
    damaged segment stopped the scan.  Control records are left out, as consumers never see them."""
    start = max(start, record_filter.first_offset or 0)
    hits: list[RecordHit] = []
    notes: list[str] = []
    first = max(partition.floor_segment(start), 0)
    for number, segment in enumerate(partition.segments[first:]):
        batches = segment.batches_reaching(start) if number == 0 else segment.batches_from(0)
        try:
            for batch in batches:
                if record_filter.last_offset is not None and batch.base_offset > record_filter.last_offset:
                    return hits, notes
                if batch.is_control or batch.last_offset < start or not record_filter.admits_batch(batch):
                    continue
                for record in segment.records(batch):
                    if (record.offset >= start and (not_before is None or record.timestamp >= not_before)
                            and record_filter.admits_record(record.offset, record.timestamp, record.key)):
                        hits.append(RecordHit(record.offset, record.timestamp, segment.log_path, batch.position,
                                              batch, record))
                        if most is not None and len(hits) >= most:
                            return hits, notes
        except CorruptData as e:
            notes.append(f"{segment.log_path} cannot be read past byte {e.offset} ({e.message}): "
                         "the records after it were not searched")
    return hits, notes


def _summary(pairs: list[tuple[object, dict]]) -> dict:
    """``Summary`` of (batch, record item) pairs in offset order, each batch counted once."""
    from segtool.ops.dump import batch_item

    summary = Summary()
    counted = None
    for batch, record in pairs:
        if (record["file"], batch.position) != counted:
            summary.add_batch({**batch_item(batch), "file": record["file"]})
            counted = (record["file"], batch.position)
        summary.add_record(record)
    return summary.report()


def _with_records(answer: dict, pairs: list[tuple[object, dict]], request: "LookupRequest", many: bool) -> dict:
    """``answer`` carrying what passed: the summary (``--summary``), or the records (``many``: all of
    them as ``records``, else the first as ``record``), shaped as asked; and the filter applied."""
    if request.record_filter.active:
        answer["filter"] = request.record_filter.described()
    if request.summary:
        answer.pop("records", None)
        answer["summary"] = _summary(pairs)
        return answer
    shown = [record if request.shape is None else shape_record(record, request.shape) for _, record in pairs]
    if many:
        answer["records"] = shown
    elif shown:
        answer["record"] = shown[0]
    return answer


def _filtered_fetch(path: str, request: "LookupRequest") -> LookupAnswer:
    """A fetch (``--offset``) or ListOffsets (``--timestamp``) answer through the record filter: the
    first passing record at or after the broker's answer (``--limit`` N: the first N)."""
    from segtool.ops.dump import record_item

    partition = PartitionView(path)
    record_filter = request.record_filter
    if request.offset is not None:
        base = {"partition_dir": path, "requested_offset": request.offset}
        start, not_before = request.offset, None
    else:
        timestamp = parse_timestamp(request.timestamp)
        if timestamp < 0:
            raise UsageError("record filters go with --timestamp TIME (epoch ms or ISO-8601): latest, earliest "
                             "and max-timestamp are one offset of the whole partition")
        base = {"partition_dir": path, "requested_timestamp": timestamp}
        listed = partition.offset_for_timestamp(timestamp)
        start, not_before = (None, None) if listed is None else (listed.offset, timestamp)
    most = None if request.summary and record_filter.limit is None else record_filter.limit or 1
    hits, notes = ([], []) if start is None else _passing_hits(partition, start, record_filter, not_before, most)
    answer = {**_empty(partition, **base), **(hits[0].as_dict() if hits else {})}
    if notes:
        answer["notes"] = notes
    pairs = [(hit.batch, record_item(hit.batch, hit.record, hit.segment)) for hit in hits]
    return _with_notes(_with_records(answer, pairs, request, many=record_filter.limit is not None), partition)


def _filtered_key_lookup(path: str, request: "LookupRequest") -> LookupAnswer:
    """A Kafka key lookup through the record filter: every record of the key, then those whose
    batch header and offset/time pass, at most ``--limit`` (else ``--max``)."""
    from segtool.formats.kafka_log import batch_at
    from segtool.ops.keyindex import lookup_kafka_key
    from segtool.source import open_buffer

    record_filter = request.record_filter
    answer = lookup_kafka_key(path, request.key, max_num=2**62, key_index=request.key_index)
    most = record_filter.limit or (request.max_num if request.max_num != ROCKETMQ_MAX_NUM else KAFKA_KEY_MAX_NUM)
    pairs = []
    logs: dict[str, object] = {}  # segment path -> its mapping, opened once
    for record in answer["records"]:
        if record["file"] not in logs:
            logs[record["file"]] = open_buffer(record["file"])
        batch = batch_at(logs[record["file"]], record["batch_position"], record["file"])
        if record_filter.admits_batch(batch) and record_filter.admits_record_item(record):
            pairs.append((batch, record))
    pairs = pairs[:most]
    answer["offsets"] = [record["offset"] for _, record in pairs]
    return _with_records(answer, pairs, request, many=True)


# --------------------------------------------------------------------------
# One entry point
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LookupRequest:
    """One lookup, as asked on the command line: exactly one of ``offset``, ``timestamp``, ``key``,
    ``queue_id`` (times as epoch ms, ISO-8601 or, for ``timestamp``, latest/earliest/max-timestamp)."""

    offset: int | None = None
    timestamp: str | None = None
    floor: bool = False
    ceiling: bool = False
    key: str | None = None
    key_index: str | None = None
    topic: str | None = None
    begin: str = "0"
    end: str = str(2**63 - 1)
    max_num: int = ROCKETMQ_MAX_NUM
    include_collisions: bool = False
    queue_id: int | None = None
    queue_offset: int | None = None
    record_filter: RecordFilter = RecordFilter()
    shape: RecordShape | None = None  # None: records as every command shows them
    summary: bool = False

    @property
    def filtered(self) -> bool:
        """Does the request go through the record filters (Kafka only)?"""
        return self.record_filter.active or self.shape is not None or self.summary


_KAFKA_MODES = ("offset", "timestamp", "key")
_ROCKETMQ_MODES = ("key", "queue_id")


def lookup(path: str, request: LookupRequest) -> tuple[LookupAnswer, bool]:
    """The answer to ``request`` on the partition or store at ``path``, and whether anything was
    found.  What ``path`` is (a Kafka partition or a RocketMQ store) is decided here, once;
    a request that does not fit it is a usage error (UsageError)."""
    modes = [name for name in ("offset", "timestamp", "key", "queue_id") if getattr(request, name) is not None]
    if len(modes) != 1:
        raise UsageError("give exactly one of --offset, --timestamp, --key, --queue-id")
    mode = modes[0]
    if request.filtered and (request.floor or request.ceiling):
        raise UsageError("--floor and --ceiling give the offset index's entry, not records: record filters, "
                         "--summary and the key/value formats do not apply")
    if (request.floor or request.ceiling) and mode != "offset":
        raise UsageError("--floor and --ceiling go with --offset")
    if request.floor and request.ceiling:
        raise UsageError("give --floor or --ceiling, not both")
    kind = directory_kind(path)
    if kind == KAFKA_PARTITION and request.topic is not None:
        raise UsageError("--topic is for a RocketMQ store: a Kafka partition directory is one topic's partition",
                         path)
    if request.filtered and kind != KAFKA_PARTITION:
        raise UsageError("record filters, --limit, --summary and the key/value formats are for a Kafka "
                         "partition's records (a RocketMQ key lookup takes --begin, --end and --max)", path)
    allowed = _KAFKA_MODES if kind == KAFKA_PARTITION else _ROCKETMQ_MODES
    if mode not in allowed:
        options = ", ".join("--" + name.replace("_", "-") for name in allowed)
        what = "a Kafka partition" if kind == KAFKA_PARTITION else "a RocketMQ store"
        raise UsageError(f"--{mode.replace('_', '-')} does not apply to {what}: it takes {options}", path)
    if request.filtered:
        answer = (_filtered_key_lookup(path, request) if mode == "key"
                  else _filtered_fetch(path, request))
        found = answer["summary"]["records"] > 0 if request.summary else bool(
            answer.get("record") or answer.get("records"))
        return answer, found
    if mode == "key":
        window = [parse_timestamp(text) for text in (request.begin, request.end)]
        if min(window) < 0:
            raise UsageError("--begin and --end take epoch ms or ISO-8601 times")
        answer = lookup_key(path, request.key, topic=request.topic, begin=window[0], end=window[1],
                            max_num=request.max_num, include_collisions=request.include_collisions,
                            key_index=request.key_index, kind=kind)
        return answer, bool(answer.get("phy_offsets") or answer.get("offsets"))
    if mode == "queue_id":
        if request.topic is None or request.queue_offset is None:
            raise UsageError("--queue-id needs --topic and --queue-offset")
        answer = lookup_queue(path, request.topic, request.queue_id, request.queue_offset)
        return answer, answer.get("phy_offset") is not None
    if mode == "offset":
        answer = (lookup_index_entry(path, request.offset, ceiling=request.ceiling) if request.floor or request.ceiling
                  else lookup_offset(path, request.offset))
    else:
        answer = lookup_timestamp(path, parse_timestamp(request.timestamp))
    return answer, answer.get("offset") is not None
