"""__consumer_offsets record decoding against kafka-dump-log.sh --offsets-decoder goldens."""

from __future__ import annotations

import base64
import struct

import pytest

from segtool.errors import CorruptData
from segtool.kafka.messages import jackson_json, java_utf8
from segtool.kafka.offsets import parse_offsets_record

from .conftest import corpus_path

CASE = ("kafka", "c10-consumer-offsets")


def _walk_records(buf: bytes):
    """Yield (offset, key, value) for every record, read through segtool's batch reader."""
    from segtool.kafka.log import BatchScan
    from segtool.kafka.records import batch_records

    for batch in BatchScan(buf):
        for record in batch_records(batch):
            yield record.offset, record.key, record.value


def _golden_tails(stdout: str) -> dict[int, str]:
    """offset -> the text after " key: " on each "| offset:" line."""
    tails = {}
    for line in stdout.splitlines():
        if not line.startswith("| offset:"):
            continue
        offset = int(line.split()[2])
        marker = line.index(" headerKeys: ")
        tails[offset] = line[line.index(" key: ", marker) + len(" key: "):]
    return tails


def _tail(key_text, payload_text) -> str:
    return key_text if payload_text is None else f"{key_text} payload: {payload_text}"


def _partitions():
    root = corpus_path(*CASE)
    dirs = sorted((root / "data").glob("__consumer_offsets-*"))
    assert dirs
    return root, dirs


def test_corpus_matches_offsets_decoder_goldens():
    root, dirs = _partitions()
    checked = 0
    for d in dirs:
        log = d / "00000000000000000000.log"
        golden = (root / "expected" / "dump" / "data" / d.name /
                  "00000000000000000000.log.offsets-decoder.stdout").read_text(encoding="utf-8")
        tails = _golden_tails(golden)
        records = list(_walk_records(log.read_bytes()))
        assert sorted(r[0] for r in records) == sorted(tails)
        for offset, key, value in records:
            assert _tail(*parse_offsets_record(key, value, offset)) == tails[offset], f"{d.name} offset {offset}"
            checked += 1
    assert checked == 13


def test_corpus_truncations_never_raise():
    """Every prefix of every corpus key/value gives Kafka-style error text, no exception."""
    _, dirs = _partitions()
    for d in dirs:
        for offset, key, value in _walk_records((d / "00000000000000000000.log").read_bytes()):
            for cut in range(len(value)):
                k, p = parse_offsets_record(key, value[:cut], offset)
                assert p is None
                assert k.startswith(f"Error at offset {offset}, skipping. Could not read ")
            for cut in range(len(key)):
                k, p = parse_offsets_record(key[:cut], value, offset)
                assert p is None and k.startswith(f"Error at offset {offset}, skipping. ")


# --------------------------------------------------------------------------
# Hand-built records
# --------------------------------------------------------------------------


def _s16(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _offset_key(group="g", topic="t", partition=0, record_type=1) -> bytes:
    return struct.pack(">h", record_type) + _s16(group) + _s16(topic) + struct.pack(">i", partition)


def _offset_value_v3(offset=5, epoch=-1, metadata="", ts=7) -> bytes:
    return struct.pack(">hqi", 3, offset, epoch) + _s16(metadata) + struct.pack(">q", ts)


KEY_JSON = '{"type":"1","data":{"group":"g","topic":"t","partition":0}}'


def test_tombstone_prints_delete():
    assert parse_offsets_record(_offset_key(), None, 9) == (KEY_JSON, "<DELETE>")
    group_key = struct.pack(">h", 2) + _s16("grp")
    assert parse_offsets_record(group_key, None, 3) == ('{"type":"2","data":{"group":"grp"}}', "<DELETE>")


def test_offset_commit_value_versions():
    base = struct.pack(">q", 5) + _s16("m") + struct.pack(">q", 7)
    v0 = struct.pack(">h", 0) + base
    assert parse_offsets_record(_offset_key(record_type=0), v0, 1) == (
        '{"type":"0","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"0","data":{"offset":5,"metadata":"m","commitTimestamp":7}}')
    v1 = struct.pack(">h", 1) + base + struct.pack(">q", 99)
    assert parse_offsets_record(_offset_key(), v1, 1)[1] == (
        '{"version":"1","data":{"offset":5,"metadata":"m","commitTimestamp":7,"expireTimestamp":99}}')
    # v4 is flexible: compact string, then a tagged-field section (unknown tags skipped).
    v4 = (struct.pack(">hqi", 4, 5, 2) + _cstr("m") + struct.pack(">q", 7)
          + _uvarint(1) + _uvarint(3) + _uvarint(2) + b"zz")
    assert parse_offsets_record(_offset_key(), v4, 1)[1] == (
        '{"version":"4","data":{"offset":5,"leaderEpoch":2,"metadata":"m","commitTimestamp":7}}')
    # Versions above the schema's range are read with the latest layout.
    v9 = b"\x00\x09" + v4[2:]
    assert parse_offsets_record(_offset_key(), v9, 1)[1].startswith('{"version":"9","data":{"offset":5,')


def test_unknown_record_type():
    for record_type in (100, 1000, -1):  # 9..15 are the share groups of Kafka 4.x
        key = struct.pack(">h", record_type) + b"whatever"
        assert parse_offsets_record(key, b"\x00\x00junk", 42) == (
            f"Unknown record type {record_type} at offset 42, skipping.", None)
        assert parse_offsets_record(key, None, 42)[1] is None


def test_missing_key_is_an_error():
    with pytest.raises(CorruptData, match="missing key"):
        parse_offsets_record(None, _offset_value_v3(), 4)


def test_truncated_values_give_kafka_errors():
    value = _offset_value_v3(metadata="abc")
    err = "Error at offset 8, skipping. "
    assert parse_offsets_record(_offset_key(), b"", 8) == (err + "Could not read version from value's buffer.", None)
    assert parse_offsets_record(_offset_key(), value[:1], 8)[0] == err + "Could not read version from value's buffer."
    # A fixed-size field cut short is a BufferUnderflowException (no message).
    assert parse_offsets_record(_offset_key(), value[:5], 8) == (
        err + "Could not read record with version 3 from value's buffer due to: null.", None)
    # A string running past the value: Readable.readString -> ByteBufferAccessor.readArray.
    cut = 2 + 8 + 4 + 2 + 1  # one byte of "abc"
    assert parse_offsets_record(_offset_key(), value[:cut], 8) == (
        err + "Could not read record with version 3 from value's buffer due to: "
        "Error reading byte array of 3 byte(s): only 1 byte(s) available.", None)
    assert parse_offsets_record(_offset_key()[:3], value, 8) == (
        err + "Could not read record with version 1 from key's buffer due to: null.", None)
    assert parse_offsets_record(b"\x00", value, 8) == (err + "Could not read version from key's buffer.", None)


def test_null_and_oversized_fields():
    null_metadata = struct.pack(">hqi", 3, 1, 0) + _s16(None) + struct.pack(">q", 1)
    assert parse_offsets_record(_offset_key(), null_metadata, 0)[0] == (
        "Error at offset 0, skipping. Could not read record with version 3 from value's buffer "
        "due to: non-nullable field metadata was serialized as null.")
    huge = struct.pack(">hqi", 4, 1, 0) + _uvarint(0x8000 + 1)
    assert parse_offsets_record(_offset_key(), huge, 0)[0].endswith(
        "due to: string field metadata had invalid length 32768.")
    bad_varint = struct.pack(">hqi", 4, 1, 0) + b"\xff\xff\xff\xff\xff"
    assert parse_offsets_record(_offset_key(), bad_varint, 0)[0].endswith(
        "due to: Varint is too long, the most significant bit in the 5th byte is set, "
        "converted value: ffffffff.")


def test_json_strings_escaped_like_jackson():
    metadata = 'a"b\\c/d\x00\x1f\t\x7fé€😀'
    got = parse_offsets_record(_offset_key(), _offset_value_v3(metadata=metadata), 0)[1]
    assert '"metadata":"a\\"b\\\\c/d\\u0000\\u001F\\t\x7fé€😀"' in got
    assert jackson_json({"b": b"\x00\xff", "n": None, "l": [1, -2]}) == '{"b":"AP8=","n":null,"l":[1,-2]}'


def test_java_utf8_replacement():
    assert java_utf8(b"a\xed\xa0\x80b") == "a\ufffdb"  # one U+FFFD for an encoded surrogate
    assert java_utf8(b"\xe2\x82") == "\ufffd"
    assert java_utf8(b"\xe1\x80A") == "\ufffdA"
    assert java_utf8(b"\xf0\x80\x80\x80") == "\ufffd" * 4
    assert java_utf8(b"\xc0\xaf") == "\ufffd\ufffd"
    assert java_utf8("ok é".encode()) == "ok é"


def _member(subscription: bytes, assignment: bytes) -> bytes:
    return (_s16("m1") + _s16(None) + _s16("c") + _s16("/h") + struct.pack(">ii", 10, 20)
            + struct.pack(">i", len(subscription)) + subscription
            + struct.pack(">i", len(assignment)) + assignment)


def _group_value(protocol_type: str, members: list[bytes], version: int = 3) -> bytes:
    return (struct.pack(">h", version) + _s16(protocol_type) + struct.pack(">i", 1) + _s16("range")
            + _s16("m1") + struct.pack(">q", 11) + struct.pack(">i", len(members)) + b"".join(members))


GROUP_KEY = struct.pack(">h", 2) + _s16("grp")


def test_group_metadata_consumer_protocol():
    sub_v1 = (struct.pack(">h", 1) + struct.pack(">i", 1) + _s16("t") + struct.pack(">i", -1)
              + struct.pack(">i", 1) + _s16("t") + struct.pack(">ii", 1, 4))
    assign_v0 = struct.pack(">hi", 0, 1) + _s16("t") + struct.pack(">iii", 2, 0, 1) + struct.pack(">i", 2) + b"ud"
    key, payload = parse_offsets_record(GROUP_KEY, _group_value("consumer", [_member(sub_v1, assign_v0)]), 0)
    assert payload == (
        '{"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range","leader":"m1",'
        '"currentStateTimestamp":11,"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c",'
        '"clientHost":"/h","rebalanceTimeout":10,"sessionTimeout":20,'
        '"subscription":{"topics":["t"],"userData":null,"ownedPartitions":[{"topic":"t","partitions":[4]}]},'
        '"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0,1]}],"userData":"dWQ="}}]}}')
    # Undecodable embedded bytes stay as base64; so do those of other protocol types.
    bad = b"\x00\x00\x00\x00\x00\x09t"
    payload = parse_offsets_record(GROUP_KEY, _group_value("consumer", [_member(bad, b"")]), 0)[1]
    assert f'"subscription":"{base64.b64encode(bad).decode()}","assignment":""' in payload
    payload = parse_offsets_record(GROUP_KEY, _group_value("connect", [_member(sub_v1, assign_v0)]), 0)[1]
    assert f'"subscription":"{base64.b64encode(sub_v1).decode()}"' in payload


def test_group_metadata_nested_struct_version_check():
    # MemberMetadata is generated for versions 0-4 only: a v5 value with a member fails ...
    head = (struct.pack(">h", 5) + _cstr("") + struct.pack(">i", 3) + _cstr(None) + _cstr(None)
            + struct.pack(">q", -1))
    key, payload = parse_offsets_record(GROUP_KEY, head + _uvarint(2) + b"\x00" * 40, 6)
    assert (key, payload) == (
        "Error at offset 6, skipping. Could not read record with version 5 from value's buffer "
        "due to: Can't read version 5 of MemberMetadata.", None)
    # ... while one without members reads as the flexible layout.
    flexible = head + _uvarint(1) + _uvarint(0)
    assert parse_offsets_record(GROUP_KEY, flexible, 6)[1] == (
        '{"version":"5","data":{"protocolType":"","generation":3,"protocol":null,"leader":null,'
        '"currentStateTimestamp":-1,"members":[]}}')


def test_consumer_group_records():
    uuid = bytes(range(16))
    uuid_text = base64.urlsafe_b64encode(uuid).rstrip(b"=").decode()
    key = struct.pack(">h", 7) + _s16("grp") + _s16("mem")
    value = (struct.pack(">h", 0) + _uvarint(2) + uuid + _uvarint(3) + struct.pack(">ii", 0, 2)
             + _uvarint(0) + _uvarint(0))
    assert parse_offsets_record(key, value, 0) == (
        '{"type":"7","data":{"groupId":"grp","memberId":"mem"}}',
        f'{{"version":"0","data":{{"topicPartitions":[{{"topicId":"{uuid_text}","partitions":[0,2]}}]}}}}')
    # Member metadata with its tagged ClassicMemberMetadata (tag 0; SessionTimeoutMs since Kafka 3.8).
    classic = struct.pack(">i", 45000) + _uvarint(2) + _cstr("range") + _uvarint(3) + b"\x01\x02" + _uvarint(0) + _uvarint(0)
    classic_field = _uvarint(1) + classic
    value = (struct.pack(">h", 0) + _cstr(None) + _cstr("r") + _cstr("c") + _cstr("/h")
             + _uvarint(2) + _cstr("t") + _cstr(None) + struct.pack(">i", 5) + _cstr("uniform")
             + _uvarint(1) + _uvarint(0) + _uvarint(len(classic_field)) + classic_field)
    key = struct.pack(">h", 5) + _s16("grp") + _s16("mem")
    assert parse_offsets_record(key, value, 0)[1] == (
        '{"version":"0","data":{"instanceId":null,"rackId":"r","clientId":"c","clientHost":"/h",'
        '"subscribedTopicNames":["t"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":5,'
        '"serverAssignor":"uniform","classicMemberMetadata":{"sessionTimeoutMs":45000,"supportedProtocols":'
        '[{"name":"range","metadata":"AQI="}]}}}')
    # Without the tag the field is left out.
    untagged = value[:value.index(_cstr("uniform")) + len(_cstr("uniform"))] + _uvarint(0)
    assert '"classicMemberMetadata"' not in parse_offsets_record(key, untagged, 0)[1]
    assert parse_offsets_record(struct.pack(">h", 3) + _s16("grp"),
                                struct.pack(">hi", 0, 4) + _uvarint(0), 2) == (
        '{"type":"3","data":{"groupId":"grp"}}', '{"version":"0","data":{"epoch":4}}')


def test_cases_from_kafka_dumplogsegments_test():
    """The expectations of Kafka 3.9's DumpLogSegmentsTest.testOffsetsMessageParser,
    with the records' bytes written out here."""
    cg_key = struct.pack(">h", 3) + _s16("group")
    assert parse_offsets_record(cg_key, struct.pack(">hi", 0, 10) + b"\x00", 0) == (
        '{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')
    assert parse_offsets_record(cg_key, None, 0) == ('{"type":"3","data":{"groupId":"group"}}', "<DELETE>")
    assert parse_offsets_record(struct.pack(">h", 0x7FFF) + _s16("group"), struct.pack(">hi", 0, 10) + b"\x00", 0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)
    # A default ConsumerGroupMemberMetadataValue ("" strings, rebalanceTimeoutMs -1) under a
    # ConsumerGroupMetadataKey: read as ConsumerGroupMetadataValue, its bytes give tag 1 of size 2^29-1.
    member_default = struct.pack(">h", 0) + b"\x01" * 6 + struct.pack(">i", -1) + b"\x01\x00"
    assert parse_offsets_record(cg_key, member_default, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.", None)

    def cbytes(b: bytes) -> bytes:
        return _uvarint(len(b) + 1) + b

    def group_v4(subscription: bytes, assignment: bytes) -> bytes:
        member = (_cstr("member") + _cstr("instance") + _cstr("client") + _cstr("host")
                  + struct.pack(">ii", 1000, 100) + cbytes(subscription) + cbytes(assignment) + b"\x00")
        return (struct.pack(">h", 4) + _cstr("consumer") + struct.pack(">i", 10) + _cstr("range")
                + _cstr("member") + struct.pack(">q", -1) + _uvarint(2) + member + b"\x00")

    head = ('{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
            '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
            '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
            '"rebalanceTimeout":1000,"sessionTimeout":100,')
    subscription = (struct.pack(">hi", 3, 1) + _s16("foo") + struct.pack(">i", -1)
                    + struct.pack(">i", 1) + _s16("foo") + struct.pack(">ii", 1, 0)
                    + struct.pack(">i", 0) + _s16("rack"))
    assignment = struct.pack(">hi", 3, 1) + _s16("foo") + struct.pack(">ii", 1, 0) + struct.pack(">i", -1)
    group_key = struct.pack(">h", 2) + _s16("group")
    assert parse_offsets_record(group_key, group_v4(subscription, assignment), 0) == (
        '{"type":"2","data":{"group":"group"}}',
        head + '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo",'
        '"partitions":[0]}],"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')
    assert parse_offsets_record(group_key, group_v4(b"Subscription", b"Assignment"), 0)[1] == (
        head + '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}')
