"""`dump` items for Kafka files other than `.log`: indexes, snapshots, checkpoints, a log dir's own files.

Each reader ends at an error as an item (``dump_errors``); ``ops.file_formats`` names
the reader of each kind."""

from __future__ import annotations

import dataclasses
from typing import Iterator

from segtool.errors import CorruptData
from segtool.kafka import log_dir, state as kafka_state
from segtool.kafka import index as kafka_index
from segtool.source import open_buffer
from segtool.ops.dump_errors import errors_as_items


def _file_items(read):
    """A reader whose errors end its items; a checkpoint's format errors name a line, not a
    byte: still an item, not a failure."""
    def items(path: str) -> Iterator[dict]:
        return errors_as_items(read(path), also=lambda exc: isinstance(exc, kafka_state.CorruptCheckpoint))
    return items


def _zero_tail_item(index, valid: int) -> Iterator[dict]:
    if index.entries > valid:
        yield {"kind": "zero_tail", "byte_offset": valid * index.entry_size,
               "length": index.length - valid * index.entry_size}
    if index.trailing_bytes:
        yield {"kind": "trailing_bytes", "byte_offset": index.entries * index.entry_size,
               "length": index.trailing_bytes}


def _index_entries(index, item_type: str) -> Iterator[dict]:
    """Entries kafka-dump-log would visit, then what lies after them."""
    valid = index.dump_entries
    for slot in range(valid):
        yield {"kind": item_type, "slot": slot, **index.entry(slot)._asdict()}
    yield from _zero_tail_item(index, valid)


@_file_items
def offset_index(path: str) -> Iterator[dict]:
    return _index_entries(kafka_index.OffsetIndex(path), "offset_index_entry")


@_file_items
def time_index(path: str) -> Iterator[dict]:
    return _index_entries(kafka_index.TimeIndex(path), "time_index_entry")


@_file_items
def txn_index(path: str) -> Iterator[dict]:
    index = kafka_index.TransactionIndex(path)
    for slot, txn in enumerate(index.iter_raw()):
        yield {"kind": "aborted_txn", "slot": slot, **dataclasses.asdict(txn)}
    if index.trailing_bytes:
        yield {"kind": "trailing_bytes", "byte_offset": index.entries * index.entry_size,
               "length": index.trailing_bytes}


@_file_items
def producer_snapshot(path: str) -> Iterator[dict]:
    snap = kafka_state.read_producer_snapshot(path, verify=False)
    yield {"kind": "producer_snapshot", "version": snap.version, "crc": snap.crc,
           "computed_crc": snap.computed_crc, "crc_valid": snap.crc_ok, "producers": len(snap.entries)}
    for entry in snap.entries:
        yield {"kind": "producer", **dataclasses.asdict(entry)}
    if not snap.crc_ok:
        yield {"kind": "error", "byte_offset": 2,
               "message": f"snapshot CRC {snap.crc} does not match computed {snap.computed_crc}"}


@_file_items
def checkpoint(path: str) -> Iterator[dict]:
    checkpoint = kafka_state.read_checkpoint(path)
    yield {"kind": "checkpoint", "checkpoint_kind": checkpoint.kind, "version": checkpoint.version,
           "count": checkpoint.expected_count}
    for entry in checkpoint.entries:
        yield {"kind": "checkpoint_entry", **dataclasses.asdict(entry)}


@_file_items
def partition_metadata(path: str) -> Iterator[dict]:
    meta = kafka_state.read_partition_metadata(path)
    yield {"kind": "partition_metadata", "version": meta.version, "topic_id": meta.topic_id}


def _log_dir_items(read):
    """A reader of a log dir's own text files: a format error (which names no byte) is still an item."""
    def items(path: str) -> Iterator[dict]:
        return errors_as_items(read(path), also=lambda exc: isinstance(exc, CorruptData))
    return items


@_log_dir_items
def meta_properties(path: str) -> Iterator[dict]:
    meta = log_dir.parse_meta_properties(bytes(open_buffer(path)), path)
    yield {"kind": "meta_properties", "version": meta.version, "cluster_id": meta.cluster_id,
           "node_id": meta.node_id, "directory_id": meta.directory_id,
           "other": [{"key": key, "value": value} for key, value in meta.other.items()]}


@_log_dir_items
def quorum_state(path: str) -> Iterator[dict]:
    yield {"kind": "quorum_state", **dataclasses.asdict(log_dir.parse_quorum_state(bytes(open_buffer(path)), path))}


def clean_shutdown(path: str) -> Iterator[dict]:
    yield {"kind": "clean_shutdown", "broker_epoch": log_dir.clean_shutdown_broker_epoch(bytes(open_buffer(path)))}
