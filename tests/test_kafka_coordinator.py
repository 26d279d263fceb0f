"""Coordinator topics (__consumer_offsets, __transaction_state, __share_group_state,
__remote_log_metadata) in every format: the registry's items on every real coordinator
record of the wild corpus, record types with no real file built by the schema writer and
round-tripped, kafka-dump-log's decoders through the CLI, and tiered-storage cache names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segtool.kafka.internal_topics import (
    decode_offsets_item,
    decode_remote_log_metadata_item,
    decode_share_state_item,
    decode_transaction_item,
    decoded_text,
    record_decoder,
)
from segtool.kafka.coordinator import (
    REMOTE_LOG_METADATA_RECORDS,
    SHARE_RECORD_TYPES,
    TRANSACTION_LOG,
    remote_log_metadata_payload,
    share_group_state_texts,
    transaction_log_texts,
)
from segtool.kafka.log import BatchScan
from segtool.kafka.records import batch_records
from segtool.kafka.names import remote_segment_id
from segtool.kafka.offsets import RECORD_TYPES, parse_offsets_record
from segtool.source import open_buffer
from tests.conftest import corpus_path, segtool
from tests.message_writer import sample_data, uvarint, versions_of, write_message

UUID = "AAECAwQFBgcICQoLDA0ODw"


def _records(path: Path):
    buf = open_buffer(str(path))
    for batch in BatchScan(buf, 0, len(buf), path=str(path)):
        if not batch.is_control:
            yield from batch_records(batch, str(path), 1 << 28)


@pytest.fixture(scope="module")
def wild() -> Path:
    return corpus_path("wild")


@pytest.mark.parametrize("prefix, decoder", [("__consumer_offsets-", decode_offsets_item),
                                             ("__transaction_state-", decode_transaction_item)])
def test_every_wild_coordinator_record_decodes(wild, prefix, decoder):
    logs = sorted(path for path in wild.rglob("*.log") if path.parent.name.startswith(prefix) and path.stat().st_size)
    assert logs
    decoded = 0
    for path in logs:
        assert record_decoder(str(path)) is decoder
        for record in _records(path):
            item = decoder(record.key, record.value)
            assert "error" not in item, (path, record.offset, item)
            decoded += 1
    assert decoded


def _key(type_id: int, message, data: dict) -> bytes:
    return type_id.to_bytes(2, "big", signed=True) + write_message(message, type_id, data)


def _value(version: int, message, data: dict) -> bytes:
    return version.to_bytes(2, "big") + write_message(message, version, data)


def test_every_offsets_record_type_round_trips():
    for type_id, record_type in RECORD_TYPES.items():
        key = sample_data(record_type.key.fields, type_id)
        for version in versions_of(record_type.value):
            value = sample_data(record_type.value.fields, version)
            item = decode_offsets_item(_key(type_id, record_type.key, key), _value(version, record_type.value, value))
            assert (item["type"], item["type_id"], item["value_version"]) == (record_type.name, type_id, version)
            assert "error" not in item and item["key"] and (item["value"] or not value)
            key_text, payload = parse_offsets_record(_key(type_id, record_type.key, key),
                                                     _value(version, record_type.value, value), 9)
            assert key_text.startswith(f'{{"type":"{type_id}","data":{{') and payload.startswith(f'{{"version":"{version}"')


def test_share_group_state_round_trips_and_prints():
    for type_id, record_type in SHARE_RECORD_TYPES.items():
        key = sample_data(record_type.key.fields, type_id)
        value = sample_data(record_type.value.fields, 0)
        raw_key, raw_value = _key(type_id, record_type.key, key), _value(0, record_type.value, value)
        item = decode_share_state_item(raw_key, raw_value)
        assert item["key"] == {"group_id": "s", "topic_id": UUID, "partition": 3}
        assert item["value"]["state_batches"] == [{"first_offset": 4, "last_offset": 4, "delivery_state": 1,
                                                   "delivery_count": 2}]
        key_text, payload = share_group_state_texts(raw_key, raw_value, 0)
        assert key_text == f'{{"type":"{type_id}","data":{{"groupId":"s","topicId":"{UUID}","partition":3}}}}'
        assert payload.startswith('{"type":"0","data":{"snapshotEpoch":3,')  # int32 from Kafka 4.1
        assert share_group_state_texts(raw_key, None, 0) == (key_text, "<DELETE>")


def test_transaction_log_versions_round_trip_and_print():
    key = _key(0, TRANSACTION_LOG.key, {"transactionalId": "tx"})
    for version in versions_of(TRANSACTION_LOG.value):
        data = sample_data(TRANSACTION_LOG.value.fields, version)
        data["transactionPartitions"] = [{"topic": "t", "partitionIds": [0, 1]}]
        item = decode_transaction_item(key, _value(version, TRANSACTION_LOG.value, data))
        assert item["key"] == {"transactional_id": "tx"} and item["value"]["producer_epoch"] == 2
        assert ("client_transaction_version" in item["value"]) == (version >= 1)
        # a Scala HashSet's order: TopicPartition hashes 1077 (t-0) and 1108 (t-1) fall in buckets 5 and 4
        assert transaction_log_texts(key, _value(version, TRANSACTION_LOG.value, data), 0) == (
            "transaction_metadata::transactionalId=tx",
            "producerId:4,producerEpoch:2,state=Ongoing,partitions=[t-1,t-0],txnLastUpdateTimestamp=4,txnTimeoutMs=3")
    assert transaction_log_texts(key, None, 0)[1] == "<DELETE>"
    assert transaction_log_texts(b"\x00\x05", None, 0) == ("unknown::version=5", None)
    assert decoded_text(decode_transaction_item(key, None)) == 'TransactionLog {"transactional_id":"tx"} <DELETE>'


def test_remote_log_metadata_round_trips_and_prints():
    for type_id, message in REMOTE_LOG_METADATA_RECORDS.items():
        data = sample_data(message.fields, 0)
        value = uvarint(1) + uvarint(type_id) + uvarint(0) + write_message(message, 0, data)
        item = decode_remote_log_metadata_item(None, value)
        assert (item["type"], item["version"]) == (message.name, 0) and "error" not in item
    segment = REMOTE_LOG_METADATA_RECORDS[0]
    value = uvarint(1) + uvarint(0) + uvarint(0) + write_message(segment, 0, sample_data(segment.fields, 0))
    assert remote_log_metadata_payload(value, 0) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={UUID}:s-3, id={UUID}}}, "
        "startOffset=4, endOffset=4, brokerId=3, maxTimestampMs=4, eventTimestampMs=4, segmentLeaderEpochs={3=4}, "
        "segmentSizeInBytes=3, customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_FINISHED}")
    assert remote_log_metadata_payload(b"\x01\x09\x00", 8) == (
        "Error at offset 8, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 9")


def test_registry_by_topic_and_name(tmp_path):
    assert record_decoder("/d/__share_group_state-3/00000000000000000000.log") is decode_share_state_item
    assert record_decoder("/d/__remote_log_metadata-0/00000000000000000000.log") is decode_remote_log_metadata_item
    assert record_decoder("/d/__consumer_offsets-7.0123456789abcdef0123456789abcdef-delete/0.log") is decode_offsets_item
    assert record_decoder("/d/orders-0/00000000000000000000.log") is None


def _dump_kafka(*args: str) -> list[str]:
    run = segtool("dump", "--format", "kafka", *args)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_transaction_log_decoder_through_the_cli(wild):
    log = next(path for path in sorted(wild.rglob("__transaction_state-*/*.log")) if path.stat().st_size)
    lines = [line for line in _dump_kafka("--transaction-log-decoder", str(log)) if line.startswith("| offset:")]
    expected = [" key: {} payload: {}".format(*transaction_log_texts(r.key, r.value, r.offset)) for r in _records(log)]
    assert lines and [line[line.index(" key: "):] for line in lines] == expected
    assert "state=CompleteCommit" in "".join(lines)


def test_tiered_storage_cache_files_are_read(wild, tmp_path):
    partition = next(path.parent for path in sorted(wild.rglob("*.index"))
                     if path.stat().st_size and path.with_suffix(".log").exists() and path.parent.name.startswith("orders"))
    cache = tmp_path / "remote-log-index-cache"
    cache.mkdir()
    base = next(iter(sorted(partition.glob("*.index"))))
    name = f"{int(base.stem)}_{UUID}"
    for suffix in (".index", ".log"):
        shutil.copy(base.with_suffix(suffix), cache / f"{name}{suffix}")
    assert remote_segment_id(cache / f"{name}.index") == (int(base.stem), UUID)
    ours = _dump_kafka(str(cache / f"{name}.index"))
    original = _dump_kafka(str(base))
    assert ours[1:] == original[1:] and len(ours) > 1
    assert _dump_kafka(str(cache / f"{name}.log"))[1] == f"Log starting offset: {int(base.stem)}"
