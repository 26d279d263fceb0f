"""Issue 28's differences from Kafka's own code, each checked by the rule of the class and
method that decides it (named in each test).

The KRaft control batch is the one Kafka printed in KAFKA-19069 (apache/kafka#19729): a
single-node 4.x controller's first batch, LeaderChange, KRaftVersion and KRaftVoters records.
It is rebuilt here from the schemas; that its CRC-32C equals the one Kafka printed shows the
bytes are the broker's, and each record line must then be what that DumpLogSegments printed.
"""

from __future__ import annotations

import base64
import json
import struct

from segtool.kafka.log import Record, RecordBatch
from segtool.kafka.metadata import (KRAFT_VERSION_RECORD, LEADER_CHANGE_MESSAGE, VOTERS_RECORD,
                                    cluster_metadata_payload, decode_metadata_record)
from segtool.kafka.offsets import OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
from segtool.ops.groups import groups
from tests.conftest import segtool
from tests.kafka_build import build_batch_v2, build_records
from tests.message_writer import uvarint, write_message

CREATE_TIME = 1747299887693
VOTER_DIRECTORY_ID = "tpx8pd1IQDqJwMfGzXj6GA"


def _control_key(type_id: int) -> bytes:
    return struct.pack(">hh", 0, type_id)  # ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION 0


def _directory_id_bytes() -> bytes:
    return base64.urlsafe_b64decode(VOTER_DIRECTORY_ID + "==")


def kraft_bootstrap_batch() -> bytes:
    values = [
        (2, write_message(LEADER_CHANGE_MESSAGE, 0, {
            "version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]})),
        (5, write_message(KRAFT_VERSION_RECORD, 0, {"version": 0, "kRaftVersion": 1})),
        (6, write_message(VOTERS_RECORD, 0, {"version": 0, "voters": [{
            "voterId": 1, "voterDirectoryId": VOTER_DIRECTORY_ID,
            "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]})),
    ]
    records = [Record(i, CREATE_TIME, _control_key(type_id), value, (), offset_delta=i)
               for i, (type_id, value) in enumerate(values)]
    batch = RecordBatch(position=0, magic=2, base_offset=0, last_offset=2, size=0, crc=0, attributes=0x20,
                        max_timestamp=CREATE_TIME, record_count=3, partition_leader_epoch=1,
                        last_offset_delta=2, base_timestamp=CREATE_TIME)
    return build_batch_v2(batch, build_records(records))


def _dump_kafka(tmp_path, *options):
    log_dir = tmp_path / "__cluster_metadata-0"
    log_dir.mkdir(exist_ok=True)
    segment = log_dir / "00000000000000000000.log"
    if not segment.exists():
        segment.write_bytes(kraft_bootstrap_batch())
    run = segtool("dump", "--format", "kafka", "--deep-iteration", *options, segment)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_rebuilt_batch_is_the_one_kafka_printed(tmp_path):
    # DumpLogSegments.printBatchLevel, as printed in apache/kafka#19729
    batch_line = _dump_kafka(tmp_path)[2]
    assert batch_line == (
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1747299887693 size: 174 "
        "magic: 2 compresscodec: none crc: 3714449884 isvalid: true")


def test_kraft_control_records_print_as_dump_log_segments_3_9(tmp_path):
    # DumpLogSegments.dumpLog, the control-record branch of 3.9: LEADER_CHANGE has no case of its
    # own; KRAFT_VERSION and KRAFT_VOTERS print through their generated JSON converters
    records = _dump_kafka(tmp_path)[3:]
    prefix = "| offset: {} CreateTime: 1747299887693 keySize: 4 valueSize: {} sequence: -1 headerKeys: []"
    assert records == [
        prefix.format(0, 19) + " controlType: LEADER_CHANGE(2)",
        prefix.format(1, 5) + ' KRaftVersion {"version":0,"kRaftVersion":1}',
        prefix.format(2, 55) + ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"'
        + VOTER_DIRECTORY_ID + '","endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
    ]


def test_leader_change_prints_its_value_in_4_1(tmp_path):
    # KAFKA-19069 (4.1): DumpLogSegments prints LeaderChangeMessageJsonConverter's JSON after
    # "LeaderChange: "; the other control records print as in 3.9
    records = _dump_kafka(tmp_path, "--kafka-version", "4.1")[3:]
    assert records[0].endswith(
        ' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}')
    assert records[1].endswith(' KRaftVersion {"version":0,"kRaftVersion":1}')


def _metadata_value(type_id: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(type_id) + uvarint(0) + body  # AbstractApiMessageSerde's frame


def test_record_types_3_9_does_not_know_are_unknown_ids():
    # 3.9's MetadataRecordType (generated from its metadata/*.json) has no ClearElrRecord (28,
    # Kafka 4.0) and no AccessControlRecord (6) or RemoveFeatureLevelRecord (16), dropped in 3.2;
    # MetadataRecordSerde.apiMessageFor throws, and ClusterMetadataLogMessageParser prints
    # "Error at <offset>, skipping. <the cause>"
    clear_elr = _metadata_value(28, uvarint(len("t") + 1) + b"t" + uvarint(0))
    assert decode_metadata_record(clear_elr).name == "ClearElrRecord"
    assert cluster_metadata_payload(clear_elr, 9, "4.1") == (
        '{"type":"CLEAR_ELR_RECORD","version":0,"data":{"topicName":"t"}}')
    assert cluster_metadata_payload(clear_elr, 9, "3.9") == (
        "Error at 9, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 28")
    for dropped in (6, 16):
        assert cluster_metadata_payload(_metadata_value(dropped, b""), 3, "3.9").endswith(
            f"UnsupportedVersionException: Unknown metadata id {dropped}")


def test_share_group_state_decoder_is_not_said_to_be_3_9():
    # --share-group-state-decoder came with Kafka 4.0 (DumpLogSegmentsOptions of 3.9 has no such option)
    help_text = segtool("dump", "--help").stdout
    option = help_text[help_text.index("--share-group-state-decoder"):]
    option = option[:option.index("--", 3)]
    assert "4.0" in option and "3.9" not in option


# -- 28.7: a transaction's offset commits at its COMMIT marker -------------------------------

def _offsets_batch(base_offset: int, commits: list[tuple[str, int, int]], producer_id: int = -1,
                   transactional: bool = False) -> bytes:
    records = []
    for i, (topic, partition, offset) in enumerate(commits):
        key = struct.pack(">h", 1) + write_message(OFFSET_COMMIT_KEY, 1, {
            "group": "g", "topic": topic, "partition": partition})
        value = struct.pack(">h", 3) + write_message(OFFSET_COMMIT_VALUE, 3, {
            "offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": CREATE_TIME})
        records.append(Record(base_offset + i, CREATE_TIME, key, value, (), offset_delta=i))
    batch = RecordBatch(position=0, magic=2, base_offset=base_offset, last_offset=base_offset + len(records) - 1,
                        size=0, crc=0, attributes=0x10 if transactional else 0, max_timestamp=CREATE_TIME,
                        record_count=len(records), partition_leader_epoch=0, last_offset_delta=len(records) - 1,
                        base_timestamp=CREATE_TIME, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                        base_sequence=0 if producer_id >= 0 else -1)
    return build_batch_v2(batch, build_records(records))


def _commit_marker(offset: int, producer_id: int) -> bytes:
    record = Record(offset, CREATE_TIME, _control_key(1), struct.pack(">hi", 0, 0), ())
    batch = RecordBatch(position=0, magic=2, base_offset=offset, last_offset=offset, size=0, crc=0,
                        attributes=0x30, max_timestamp=CREATE_TIME, record_count=1, partition_leader_epoch=0,
                        base_timestamp=CREATE_TIME, producer_id=producer_id, producer_epoch=0)
    return build_batch_v2(batch, build_records([record]))


def _offsets_log_dir(tmp_path, batches: bytes, base_offset: int):
    partition = tmp_path / "logs" / "__consumer_offsets-0"
    partition.mkdir(parents=True)
    (partition / f"{base_offset:020d}.log").write_bytes(batches)
    return tmp_path / "logs"


def test_a_committed_transaction_does_not_replace_a_newer_plain_commit(tmp_path):
    # GroupMetadataManager.loadGroupsAndOffsets (3.9): at a COMMIT marker a pending transactional
    # offset is loaded only if the loaded one is olderThan it (CommitRecordMetadataAndOffset:
    # the appended batches' base offsets); the plain commit at 8 is newer than the
    # transaction's at 7, so t-3 stays at 60
    log_dir = _offsets_log_dir(tmp_path, _offsets_batch(7, [("t", 3, 50)], producer_id=9, transactional=True)
                               + _offsets_batch(8, [("t", 3, 60)]) + _commit_marker(9, 9), 7)
    report = groups(str(log_dir))
    (group,) = report["groups"]
    assert [(o["topic"], o["partition"], o["offset"]) for o in group["offsets"]] == [("t", 3, 60)]


def test_a_committed_transaction_replaces_an_older_commit_and_drops_its_own_tombstoned_entries(tmp_path):
    # the same method: a plain commit at 7 is older than the transaction's batch at 8, so the
    # COMMIT at 10 loads t-3=50; t-4, committed and then tombstoned inside the transaction
    # (pendingOffsets(producerId).remove), loads nothing and keeps the plain commit
    tombstone_key = struct.pack(">h", 1) + write_message(OFFSET_COMMIT_KEY, 1, {"group": "g", "topic": "t", "partition": 4})
    tombstone = build_batch_v2(
        RecordBatch(position=0, magic=2, base_offset=9, last_offset=9, size=0, crc=0, attributes=0x10,
                    max_timestamp=CREATE_TIME, record_count=1, partition_leader_epoch=0, base_timestamp=CREATE_TIME,
                    producer_id=9, producer_epoch=0, base_sequence=2),
        build_records([Record(9, CREATE_TIME, tombstone_key, None, ())]))
    batches = (_offsets_batch(6, [("t", 3, 60), ("t", 4, 61)])
               + _offsets_batch(8, [("t", 3, 50), ("t", 4, 70)], producer_id=9, transactional=True)
               + tombstone + _commit_marker(10, 9))
    log_dir = _offsets_log_dir(tmp_path, batches, 6)
    report = groups(str(log_dir))
    (group,) = report["groups"]
    assert sorted((o["topic"], o["partition"], o["offset"]) for o in group["offsets"]) == [("t", 3, 50), ("t", 4, 61)]


# -- 28.2: control records decoded in every format --------------------------------------------

def test_control_records_carry_their_values_in_json_and_text(tmp_path):
    # ControlRecordUtils.deserialize*: the values DumpLogSegments prints, here as segtool's fields
    _dump_kafka(tmp_path)
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    items = [json.loads(line) for line in segtool("dump", "--format", "json", segment).stdout.splitlines()]
    records = [item for item in items if item["kind"] == "record"]
    assert [r["control"] for r in records] == [
        {"version": 0, "leader_id": 1, "voters": [{"voter_id": 1}], "granting_voters": [{"voter_id": 1}]},
        {"version": 0, "k_raft_version": 1},
        {"version": 0, "voters": [{"voter_id": 1, "voter_directory_id": VOTER_DIRECTORY_ID,
                                   "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                   "k_raft_version_feature": {"min_supported_version": 0,
                                                              "max_supported_version": 1}}]},
    ]
    text = segtool("dump", segment).stdout
    assert "control LEADER_CHANGE version=0 leader_id=1 voters=[{\"voter_id\":1}]" in text
    assert "control KRAFT_VERSION version=0 k_raft_version=1" in text


def test_every_wild_control_record_decodes(tmp_path):
    # the real LeaderChange, SnapshotHeader/Footer and end-transaction markers of wild/ read as
    # ControlRecordUtils and EndTransactionMarker.deserialize read them
    from segtool.kafka.log import BatchScan
    from segtool.kafka.metadata import control_record_value
    from segtool.kafka.records import batch_records, control_record_type
    from segtool.source import open_buffer
    from tests.conftest import corpus_path

    seen = {}
    for path in sorted(corpus_path("wild").rglob("*")):
        if not path.is_file() or path.suffix not in (".log", ".checkpoint") or not path.stat().st_size:
            continue
        buf = open_buffer(str(path))
        try:
            batches = [b for b in BatchScan(buf, 0, len(buf), path=str(path)) if b.magic >= 2 and b.is_control]
        except Exception:  # not a segment: other tests judge those files
            continue
        for batch in batches:
            for record in batch_records(batch, str(path), 1 << 24):
                value = control_record_value(record)
                name = control_record_type(record)[1]
                assert value is not None and "error" not in value, (path, record.offset, value)
                seen[name] = seen.get(name, 0) + 1
    assert seen.get("LEADER_CHANGE") and seen.get("SNAPSHOT_HEADER") and seen.get("SNAPSHOT_FOOTER"), seen
