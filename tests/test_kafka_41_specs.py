"""Kafka 4.1's coordinator records: the KIP-1071 streams-group records, the regular-expression
record, and the layouts 4.x changed (share-group state, group metadata hashes, the offset
commit's topic id, remote-log metadata's txnIndexEmpty), plus 4.x's JSON form of
``--transaction-log-decoder``.

No real 4.x broker file is in the corpus, so every record is written here byte by byte
from Kafka 4.1's JSON message specs, field by field in spec order (int8/16/32/64, compact
strings and arrays as unsigned varint length + 1, nullable structs behind an int8 marker,
the tagged-field section last), independently of segtool's declarations; the expected
values are the ones written, and the expected kafka-dump-log text is their compact JSON.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from segtool.kafka.internal_topics import decode_offsets_item, decode_share_state_item
from segtool.kafka.coordinator import (
    decode_remote_log_metadata,
    decode_share_state_record,
    transaction_log_json_texts,
    transaction_log_texts,
)
from segtool.kafka.messages import snake_case_data
from segtool.kafka.offsets import decode_offsets_record, parse_offsets_record
from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump
from tests.kafka_build import make_batch
from tests.conftest import segtool
from tests.message_writer import uvarint

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"
OTHER_TOPIC_ID = "EBESExQVFhcYGRobHB0eHw"
NO_TAGS = b"\x00"


# --------------------------------------------------------------------------
# A writer that follows the message specs byte for byte
# --------------------------------------------------------------------------


def i8(n: int) -> bytes:
    return n.to_bytes(1, "big", signed=True)


def i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def u16(n: int) -> bytes:
    return n.to_bytes(2, "big")


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def key_string(text: str) -> bytes:
    """A string of a non-flexible (key) version: int16 length."""
    data = text.encode()
    return i16(len(data)) + data


def string(text: str | None) -> bytes:
    """A compact (nullable) string of a flexible version."""
    if text is None:
        return uvarint(0)
    data = text.encode()
    return uvarint(len(data) + 1) + data


def array(items, write) -> bytes:
    return uvarint(len(items) + 1) + b"".join(write(item) for item in items)


def tagged(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


def struct(*parts: bytes) -> bytes:
    """A nested struct of a flexible version: its fields, then its (empty) tagged fields."""
    return b"".join(parts) + NO_TAGS


def group_key(record_type: int, *strings: str) -> bytes:
    return i16(record_type) + b"".join(key_string(text) for text in strings)


# --------------------------------------------------------------------------
# __consumer_offsets records of Kafka 4.1, each with what a reader must give back
# --------------------------------------------------------------------------


def _task_ids(entry: dict) -> bytes:
    return struct(string(entry["subtopologyId"]), array(entry["partitions"], i32))


def _topic_info(entry: dict) -> bytes:
    configs = array(entry["topicConfigs"], lambda kv: struct(string(kv["key"]), string(kv["value"])))
    return struct(string(entry["name"]), i32(entry["partitions"]), i16(entry["replicationFactor"]), configs)


def _topic_partitions_info(entry: dict) -> bytes:
    return struct(uuid(entry["topicId"]), string(entry["topicName"]), array(entry["partitions"], i32),
                  i64(entry["createTimestamp"]))


TASKS_A = [{"subtopologyId": "0", "partitions": [0, 2]}, {"subtopologyId": "1", "partitions": [1]}]
TASKS_B = [{"subtopologyId": "0", "partitions": [1]}]
CHANGELOG = {"name": "app-store-changelog", "partitions": 0, "replicationFactor": 3,
             "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}
REPARTITION = {"name": "app-repartition", "partitions": 4, "replicationFactor": -1, "topicConfigs": []}
TOPOLOGY = {"epoch": 2, "subtopologies": [{
    "subtopologyId": "0", "sourceTopics": ["input"], "sourceTopicRegex": ["in-.*"],
    "stateChangelogTopics": [CHANGELOG], "repartitionSinkTopics": ["app-repartition"],
    "repartitionSourceTopics": [REPARTITION],
    "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0, 1]}],
}]}
MEMBER = {"instanceId": None, "rackId": "rack-a", "clientId": "app-client", "clientHost": "/10.0.0.1",
          "rebalanceTimeoutMs": 30000, "topologyEpoch": 2, "processId": "p-1",
          "userEndpoint": {"host": "app-host", "port": 8080},
          "clientTags": [{"key": "zone", "value": "z1"}]}
CURRENT_ASSIGNMENT = {"memberEpoch": 7, "previousMemberEpoch": 6, "state": 0, "activeTasks": TASKS_A,
                      "standbyTasks": TASKS_B, "warmupTasks": [], "activeTasksPendingRevocation": [],
                      "standbyTasksPendingRevocation": TASKS_B, "warmupTasksPendingRevocation": []}
STATE_PARTITIONS = {
    "initializingTopics": [{"topicId": TOPIC_ID, "topicName": "a", "partitions": [0, 1], "createTimestamp": 1700000000001}],
    "initializedTopics": [{"topicId": OTHER_TOPIC_ID, "topicName": "b", "partitions": [2], "createTimestamp": 1700000000002}],
    "deletingTopics": [{"topicId": OTHER_TOPIC_ID, "topicName": "b"}],
}


def _subtopology(entry: dict) -> bytes:
    groups = array(entry["copartitionGroups"], lambda group: struct(
        array(group["sourceTopics"], i16), array(group["sourceTopicRegex"], i16),
        array(group["repartitionSourceTopics"], i16)))
    return struct(string(entry["subtopologyId"]), array(entry["sourceTopics"], string),
                  array(entry["sourceTopicRegex"], string), array(entry["stateChangelogTopics"], _topic_info),
                  array(entry["repartitionSinkTopics"], string), array(entry["repartitionSourceTopics"], _topic_info),
                  groups)


def _member(value: dict) -> bytes:
    endpoint = value["userEndpoint"]
    endpoint_bytes = i8(-1) if endpoint is None else i8(1) + struct(string(endpoint["host"]), u16(endpoint["port"]))
    return (string(value["instanceId"]) + string(value["rackId"]) + string(value["clientId"])
            + string(value["clientHost"]) + i32(value["rebalanceTimeoutMs"]) + i32(value["topologyEpoch"])
            + string(value["processId"]) + endpoint_bytes
            + array(value["clientTags"], lambda kv: struct(string(kv["key"]), string(kv["value"]))) + NO_TAGS)


# (name, record type, key bytes, key, value version, value bytes, value)
OFFSETS_RECORDS = [
    ("ConsumerGroupRegularExpression", 16, group_key(16, "g", "orders-.*"),
     {"groupId": "g", "regularExpression": "orders-.*"}, 0,
     array(["orders-eu", "orders-us"], string) + i64(4) + i64(1700000000123) + NO_TAGS,
     {"topics": ["orders-eu", "orders-us"], "version": 4, "timestamp": 1700000000123}),
    ("StreamsGroupMetadata", 17, group_key(17, "app"), {"groupId": "app"}, 0,
     i32(9) + i64(-5764607523034234880) + NO_TAGS, {"epoch": 9, "metadataHash": -5764607523034234880}),
    ("StreamsGroupMetadata", 17, group_key(17, "app"), {"groupId": "app"}, 0,
     i32(10) + i64(77) + tagged((0, i32(2))), {"epoch": 10, "metadataHash": 77, "validatedTopologyEpoch": 2}),
    ("StreamsGroupMemberMetadata", 19, group_key(19, "app", "m-1"), {"groupId": "app", "memberId": "m-1"}, 0,
     _member(MEMBER), MEMBER),
    ("StreamsGroupMemberMetadata", 19, group_key(19, "app", "m-2"), {"groupId": "app", "memberId": "m-2"}, 0,
     _member(dict(MEMBER, instanceId="i-2", rackId=None, userEndpoint=None, clientTags=[])),
     dict(MEMBER, instanceId="i-2", rackId=None, userEndpoint=None, clientTags=[])),
    ("StreamsGroupTargetAssignmentMetadata", 20, group_key(20, "app"), {"groupId": "app"}, 0,
     i32(9) + NO_TAGS, {"assignmentEpoch": 9}),
    ("StreamsGroupTargetAssignmentMember", 21, group_key(21, "app", "m-1"), {"groupId": "app", "memberId": "m-1"}, 0,
     array(TASKS_A, _task_ids) + array(TASKS_B, _task_ids) + array([], _task_ids) + NO_TAGS,
     {"activeTasks": TASKS_A, "standbyTasks": TASKS_B, "warmupTasks": []}),
    ("StreamsGroupCurrentMemberAssignment", 22, group_key(22, "app", "m-1"), {"groupId": "app", "memberId": "m-1"}, 0,
     i32(7) + i32(6) + i8(0) + b"".join(array(CURRENT_ASSIGNMENT[name], _task_ids) for name in (
         "activeTasks", "standbyTasks", "warmupTasks", "activeTasksPendingRevocation",
         "standbyTasksPendingRevocation", "warmupTasksPendingRevocation")) + NO_TAGS,
     CURRENT_ASSIGNMENT),
    ("StreamsGroupTopology", 23, group_key(23, "app"), {"groupId": "app"}, 0,
     i32(2) + array(TOPOLOGY["subtopologies"], _subtopology) + NO_TAGS, TOPOLOGY),
    # layouts Kafka 4.1 changed
    ("OffsetCommit", 1, group_key(1, "g", "orders") + i32(3), {"group": "g", "topic": "orders", "partition": 3}, 4,
     i64(42) + i32(5) + string("") + i64(1700000000000) + tagged((0, uuid(TOPIC_ID))),
     {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": 1700000000000, "topicId": TOPIC_ID}),
    ("ConsumerGroupMetadata", 3, group_key(3, "g"), {"groupId": "g"}, 0,
     i32(4) + tagged((0, i64(123456789))), {"epoch": 4, "metadataHash": 123456789}),
    ("ShareGroupMetadata", 11, group_key(11, "s"), {"groupId": "s"}, 0,
     i32(4) + i64(-1) + NO_TAGS, {"epoch": 4, "metadataHash": -1}),
    ("ShareGroupStatePartitionMetadata", 15, group_key(15, "s"), {"groupId": "s"}, 0,
     array(STATE_PARTITIONS["initializingTopics"], _topic_partitions_info)
     + array(STATE_PARTITIONS["initializedTopics"], _topic_partitions_info)
     + array(STATE_PARTITIONS["deletingTopics"], lambda t: struct(uuid(t["topicId"]), string(t["topicName"])))
     + NO_TAGS, STATE_PARTITIONS),
]


def _compact_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("name, type_id, raw_key, key, version, raw_value, value", OFFSETS_RECORDS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(OFFSETS_RECORDS)])
def test_offsets_record_reads_as_written(name, type_id, raw_key, key, version, raw_value, value):
    raw_value = i16(version) + raw_value
    record = decode_offsets_record(raw_key, raw_value)
    assert (record.type.name, record.type_id, record.key, record.value_version, record.value) == (
        name, type_id, key, version, value)
    item = decode_offsets_item(raw_key, raw_value)
    assert item == {"type": name, "type_id": type_id, "key": snake_case_data(key), "value_version": version,
                    "value": snake_case_data(value)}
    assert parse_offsets_record(raw_key, raw_value, 0) == (
        f'{{"type":"{type_id}","data":{_compact_json(key)}}}', f'{{"version":"{version}","data":{_compact_json(value)}}}')
    assert parse_offsets_record(raw_key, None, 0)[1] == "<DELETE>"


def test_record_types_kafka_41_does_not_know():
    # 18 was 4.0's StreamsGroupPartitionMetadata, dropped before 4.1; 24 is not a 4.1 type
    for type_id in (18, 24):
        raw_key = group_key(type_id, "app")
        assert parse_offsets_record(raw_key, i16(0) + NO_TAGS, 5) == (
            f"Unknown record type {type_id} at offset 5, skipping.", None)
        assert decode_offsets_item(raw_key, None) == {"error": f"Unknown record type {type_id}",
                                                       "unknown_type": type_id}


# --------------------------------------------------------------------------
# __share_group_state, __remote_log_metadata, __transaction_state
# --------------------------------------------------------------------------

BATCHES = [{"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 1}]


def _batch(entry: dict) -> bytes:
    return struct(i64(entry["firstOffset"]), i64(entry["lastOffset"]), i8(entry["deliveryState"]),
                  i16(entry["deliveryCount"]))


def test_share_group_state_reads_kafka_41_layouts():
    key = {"groupId": "s", "topicId": TOPIC_ID, "partition": 2}
    snapshot = {"snapshotEpoch": 70000, "stateEpoch": 1, "leaderEpoch": 3, "startOffset": 10,
                "createTimestamp": 1700000000000, "writeTimestamp": 1700000000500, "stateBatches": BATCHES}
    raw_key = i16(0) + key_string("s") + uuid(TOPIC_ID) + i32(2)
    raw_value = (i16(0) + i32(70000) + i32(1) + i32(3) + i64(10) + i64(1700000000000) + i64(1700000000500)
                 + array(BATCHES, _batch) + NO_TAGS)
    record = decode_share_state_record(raw_key, raw_value)
    assert (record.type.name, record.key, record.value) == ("ShareSnapshot", key, snapshot)
    update = {"snapshotEpoch": 70000, "leaderEpoch": 3, "startOffset": -1, "stateBatches": BATCHES}
    raw_key = i16(1) + key_string("s") + uuid(TOPIC_ID) + i32(2)
    raw_value = i16(0) + i32(70000) + i32(3) + i64(-1) + array(BATCHES, _batch) + NO_TAGS
    item = decode_share_state_item(raw_key, raw_value)
    assert (item["type"], item["value"]) == ("ShareUpdate", snake_case_data(update))


def test_remote_log_segment_metadata_reads_txn_index_empty():
    topic_id_partition = struct(string("orders"), uuid(TOPIC_ID), i32(0))
    body = (struct(topic_id_partition, uuid(OTHER_TOPIC_ID)) + i64(0) + i64(99) + i32(1) + i64(1700000000000)
            + i64(1700000000100) + array([(0, 0)], lambda e: struct(i32(e[0]), i64(e[1]))) + i32(4096)
            + uvarint(0) + i8(1) + tagged((0, b"\x01")))
    type_id, version, data = decode_remote_log_metadata(uvarint(1) + uvarint(0) + uvarint(0) + body)
    assert (type_id, version, data["remoteLogSegmentState"], data["txnIndexEmpty"]) == (0, 0, 1, True)
    assert data["remoteLogSegmentId"] == {"topicIdPartition": {"name": "orders", "id": TOPIC_ID, "partition": 0},
                                          "id": OTHER_TOPIC_ID}


TXN_VALUE = {"producerId": 4000, "producerEpoch": 2, "transactionTimeoutMs": 60000, "transactionStatus": 4,
             "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 1]}],
             "transactionLastUpdateTimestampMs": 1700000000900, "transactionStartTimestampMs": 1700000000000,
             "clientTransactionVersion": 2}
TXN_KEY = i16(0) + key_string("txn-1")
TXN_RAW_VALUE = (i16(1) + i64(4000) + i16(2) + i32(60000) + i8(4)
                 + array(TXN_VALUE["transactionPartitions"],
                         lambda p: struct(string(p["topic"]), array(p["partitionIds"], i32)))
                 + i64(1700000000900) + i64(1700000000000) + tagged((2, i16(2))))


def test_transaction_log_kafka_4x_json_form():
    assert transaction_log_json_texts(TXN_KEY, TXN_RAW_VALUE, 0) == (
        '{"type":"0","data":{"transactionalId":"txn-1"}}',
        f'{{"version":"1","data":{_compact_json(TXN_VALUE)}}}')
    assert transaction_log_json_texts(TXN_KEY, None, 0)[1] == "<DELETE>"
    assert transaction_log_json_texts(i16(3) + key_string("x"), None, 8) == (
        "Unknown record type 3 at offset 8, skipping.", None)
    # the 3.9 form of the same record stays the default
    assert transaction_log_texts(TXN_KEY, TXN_RAW_VALUE, 0) == (
        "transaction_metadata::transactionalId=txn-1",
        "producerId:4000,producerEpoch:2,state=CompleteCommit,partitions=[orders-0,orders-1],"
        "txnLastUpdateTimestamp=1700000000900,txnTimeoutMs=60000")


# --------------------------------------------------------------------------
# Through dump: segtool's JSON and text, kafka-dump-log's --offsets-decoder
# --------------------------------------------------------------------------


def _segment(directory: Path, records: list[tuple[bytes, bytes | None]]) -> Path:
    directory.mkdir(parents=True)
    log = directory / "00000000000000000000.log"
    log.write_bytes(make_batch(0, records, 1700000000000))
    return log


def _segtool(*args: str) -> str:
    run = segtool(*args)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_dump_shows_kafka_41_offsets_records(tmp_path):
    records = [(raw_key, i16(version) + raw_value) for _, _, raw_key, _, version, raw_value, _ in OFFSETS_RECORDS]
    records += [(group_key(23, "app"), None), (group_key(18, "app"), i16(0) + NO_TAGS)]
    log = _segment(tmp_path / "__consumer_offsets-0", records)

    dumped = [json.loads(line) for line in _segtool("dump", "--json", str(log)).splitlines()]
    decoded = [item["decoded"] for item in dumped if item["kind"] == "record"]
    expected = [{"type": name, "type_id": type_id, "key": snake_case_data(key), "value_version": version,
                 "value": snake_case_data(value)} for name, type_id, _, key, version, _, value in OFFSETS_RECORDS]
    expected += [{"type": "StreamsGroupTopology", "type_id": 23, "key": {"group_id": "app"},
                  "value_version": None, "value": None},
                 {"error": "Unknown record type 18", "unknown_type": 18}]
    assert decoded == expected

    text = _segtool("dump", str(log))
    assert 'StreamsGroupTopology {"group_id":"app"} <DELETE>' in text
    assert "undecodable: Unknown record type 18" in text

    lines = [line for line in _segtool("dump", "--format", "kafka", "--offsets-decoder", str(log)).splitlines()
             if line.startswith("| offset:")]
    printed = [line[line.index(" key: "):] for line in lines]
    want = [f' key: {{"type":"{type_id}","data":{_compact_json(key)}}} '
            f'payload: {{"version":"{version}","data":{_compact_json(value)}}}'
            for _, type_id, _, key, version, _, value in OFFSETS_RECORDS]
    want += [' key: {"type":"23","data":{"groupId":"app"}} payload: <DELETE>',
             f" key: Unknown record type 18 at offset {len(OFFSETS_RECORDS) + 1}, skipping."]
    assert printed == want


def test_transaction_log_decoder_kafka_41_form(tmp_path):
    log = _segment(tmp_path / "__transaction_state-0", [(TXN_KEY, TXN_RAW_VALUE), (TXN_KEY, None)])

    def run(version: str) -> list[str]:
        out: list[str] = []
        options = KafkaDumpOptions(transaction_log_decoder=True, kafka_version=version)
        assert run_kafka_dump([str(log)], options, out.append, out.append) == 0
        return [line[line.index(" key: "):] for line in out if line.startswith("| offset:")]

    assert run("4.1") == [
        f' key: {{"type":"0","data":{{"transactionalId":"txn-1"}}}} payload: {{"version":"1","data":{_compact_json(TXN_VALUE)}}}',
        ' key: {"type":"0","data":{"transactionalId":"txn-1"}} payload: <DELETE>']
    assert run("3.9")[1] == " key: transaction_metadata::transactionalId=txn-1 payload: <DELETE>"


def test_kafka_version_option_on_a_real_transaction_log():
    """`--kafka-version 4.1` on a broker's __transaction_state segment: the same records, as JSON."""
    from tests.conftest import corpus_path

    log = corpus_path("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data",
                      "__transaction_state-44", "00000000000000000000.log")

    def lines(*extra: str) -> list[str]:
        done = segtool("dump", "--format", "kafka", "--deep-iteration", "--transaction-log-decoder", *extra, log)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.splitlines() if line.startswith("| offset:")]

    old, new = lines(), lines("--kafka-version", "4.1")
    assert len(old) == len(new) > 0
    for before, after in zip(old, new):
        key = json.loads(after[after.index(" key: ") + 6:after.index(" payload: ")])
        assert f"transactionalId={key['data']['transactionalId']}" in before
        payload = json.loads(after[after.index(" payload: ") + 10:])
        assert f"producerId:{payload['data']['producerId']}," in before
    bad = segtool("dump", "--format", "kafka", "--kafka-version", "5", log)
    assert bad.returncode == 2 and "--kafka-version" in bad.stderr
