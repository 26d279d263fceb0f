"""The one registry of how the records of Kafka's internal topics decode.

A record's key and value are plain bytes to Kafka's log layer; what they hold depends on
the topic.  :func:`record_decoder` chooses the decoder from where a file lies: the topic
of its partition directory (``kafka_names.topic_partition``), and ``bootstrap.checkpoint``
by its name.  Each decoder turns one non-control record into a JSON-ready dict with
snake_case field names (``topic_id``, ``partition_id``, ``leader_epoch``), UUIDs in Kafka's
base64url and bytes in base64:

* ``__cluster_metadata`` (log, ``<end offset>-<epoch>.checkpoint`` snapshots) and
  ``bootstrap.checkpoint``: ``{"type": "TopicRecord", "type_id": 2, "version": 0, "data": {...}}``
* ``__remote_log_metadata``: the same shape, with the remote-log metadata records
* ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``:
  ``{"type": "OffsetCommit", "type_id": 1, "key": {...}, "value_version": 3, "value": {...}}``
  (``value`` None for a tombstone)

A record Kafka's own serde rejects gives ``{"error": "<Kafka's message>"}``, with
``unknown_type`` when only its record type is unknown.
"""

from __future__ import annotations

import json
from typing import Callable

from segtool.kafka.coordinator import (
    REMOTE_LOG_METADATA_RECORDS,
    decode_remote_log_metadata,
    decode_share_state_record,
    decode_transaction_record,
)
from segtool.kafka.messages import (
    ApiMessageError,
    CoordinatorRecord,
    CoordinatorRecordError,
    snake_case_data,
)
from segtool.kafka.metadata import decode_metadata_record
from segtool.kafka.names import METADATA_TOPIC, internal_topic
from segtool.kafka.offsets import decode_offsets_record

RecordDecoder = Callable[[bytes | None, bytes | None], dict]


def _error(error: ApiMessageError | CoordinatorRecordError) -> dict:
    item = {"error": error.message}
    if error.unknown_type is not None:
        item["unknown_type"] = error.unknown_type
    return item


def decode_metadata_item(_key: bytes | None, value: bytes | None) -> dict:
    try:
        record = decode_metadata_record(value)
    except ApiMessageError as e:
        return _error(e)
    return {"type": record.name, "type_id": record.type_id, "version": record.version,
            "data": snake_case_data(record.data)}


def decode_remote_log_metadata_item(_key: bytes | None, value: bytes | None) -> dict:
    try:
        type_id, version, data = decode_remote_log_metadata(value)
    except ApiMessageError as e:
        return _error(e)
    return {"type": REMOTE_LOG_METADATA_RECORDS[type_id].name, "type_id": type_id, "version": version,
            "data": snake_case_data(data)}


def _coordinator_item(decode: Callable[[bytes, bytes | None], CoordinatorRecord]) -> RecordDecoder:
    def decode_item(key: bytes | None, value: bytes | None) -> dict:
        if key is None:
            return {"error": "a coordinator record needs a key"}
        try:
            record = decode(bytes(key), None if value is None else bytes(value))
        except CoordinatorRecordError as e:
            return _error(e)
        return {"type": record.type.name, "type_id": record.type_id, "key": snake_case_data(record.key),
                "value_version": record.value_version, "value": snake_case_data(record.value)}
    return decode_item


decode_offsets_item = _coordinator_item(decode_offsets_record)
decode_transaction_item = _coordinator_item(decode_transaction_record)
decode_share_state_item = _coordinator_item(decode_share_state_record)

DECODERS_BY_TOPIC: dict[str, RecordDecoder] = {
    METADATA_TOPIC: decode_metadata_item,
    "__consumer_offsets": decode_offsets_item,
    "__transaction_state": decode_transaction_item,
    "__share_group_state": decode_share_state_item,
    "__remote_log_metadata": decode_remote_log_metadata_item,
}


def record_decoder(path: str) -> RecordDecoder | None:
    """The decoder of the records in the file at ``path`` (None: keys and values are the
    producers' own bytes)."""
    topic = internal_topic(path)
    return None if topic is None else DECODERS_BY_TOPIC.get(topic)


def _compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def decoded_text(decoded: dict) -> str:
    """One line for the text dump: ``TopicRecord v0 {...}``, ``OffsetCommit {key} v3 {value}``
    (``<DELETE>`` for a tombstone), or ``undecodable: <message>``."""
    if "error" in decoded:
        return f"undecodable: {decoded['error']}"
    if "data" in decoded:
        return f"{decoded['type']} v{decoded['version']} {_compact(decoded['data'])}"
    value = "<DELETE>" if decoded["value"] is None else f"v{decoded['value_version']} {_compact(decoded['value'])}"
    return f"{decoded['type']} {_compact(decoded['key'])} {value}"
