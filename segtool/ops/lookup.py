"""`lookup`: answer the broker's lookups from files, through the engine.

Kafka: fetch at an offset, ListOffsets for a timestamp (and the special
latest/earliest/max-timestamp), the offset index's own floor/ceiling answer.
Every function returns a plain dict (the CLI's ``--json`` object).
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass

from segtool.engine.inventory import KAFKA_PARTITION, directory_kind
from segtool.engine.partition import PartitionView
from segtool.errors import SegtoolError, UsageError
from segtool.formats.json_names import snake_case_keys
from segtool.ops.output_schema import LookupAnswer

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
_SPECIAL = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, a special name (latest/earliest/max-timestamp) or ISO-8601."""
    text = text.strip()
    if text.lower() in _SPECIAL:
        return _SPECIAL[text.lower()]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SegtoolError(f"timestamp {text!r} is neither epoch ms, ISO-8601 nor latest/earliest/max-timestamp") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return int(moment.timestamp() * 1000)


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
               max_num: int = 64, include_collisions: bool = False, key_index: str | None = None,
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

        return lookup_kafka_key(path, key, max_num=max_num if max_num != 64 else 1000, key_index=key_index)
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
    max_num: int = 64
    include_collisions: bool = False
    queue_id: int | None = None
    queue_offset: int | None = None


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
    if (request.floor or request.ceiling) and mode != "offset":
        raise UsageError("--floor and --ceiling go with --offset")
    if request.floor and request.ceiling:
        raise UsageError("give --floor or --ceiling, not both")
    kind = directory_kind(path)
    if kind == KAFKA_PARTITION and request.topic is not None:
        raise UsageError("--topic is for a RocketMQ store: a Kafka partition directory is one topic's partition",
                         path)
    allowed = _KAFKA_MODES if kind == KAFKA_PARTITION else _ROCKETMQ_MODES
    if mode not in allowed:
        options = ", ".join("--" + name.replace("_", "-") for name in allowed)
        what = "a Kafka partition" if kind == KAFKA_PARTITION else "a RocketMQ store"
        raise UsageError(f"--{mode.replace('_', '-')} does not apply to {what}: it takes {options}", path)
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
