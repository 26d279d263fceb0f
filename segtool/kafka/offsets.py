"""Records of Kafka's ``__consumer_offsets`` topic, printed as ``kafka-dump-log.sh --offsets-decoder`` does.

Apache Kafka 3.9's DumpLogSegments ``OffsetsMessageParser`` hands each record to the
group coordinator's record serde (``GroupCoordinatorRecordSerde``, read by
:func:`~segtool.kafka.messages.decode_coordinator_record`) and prints the result
through the JSON converters generated from the message schemas:

* record key   = int16 record type, then the key message read *with the record type
  as its version* (0/1 OffsetCommitKey, 2 GroupMetadataKey, 3..8 the KIP-848
  ConsumerGroup* keys, 9..15 the KIP-932 ShareGroup* keys, and from Kafka 4.x
  16 ConsumerGroupRegularExpressionKey and 17, 19..23 the KIP-1071 StreamsGroup*
  keys).  Printed as ``{"type":"<type>","data":{...}}`` (Kafka 4.x prints the same:
  its ``CoordinatorRecordMessageParser`` writes the key message's apiKey, which is
  the record type).
* record value = int16 value version, then the value message of that type read
  with that version.  Printed as ``{"version":"<version>","data":{...}}``;
  a null value (tombstone) prints ``<DELETE>``.
* In a GroupMetadataValue whose ``protocolType`` is ``"consumer"``, each member's
  ``subscription`` / ``assignment`` bytes are re-read as a version-prefixed
  ConsumerProtocolSubscription / ConsumerProtocolAssignment and printed as JSON;
  when that fails the base64 of the original bytes stays.
* An unknown record type prints ``Unknown record type N at offset O, skipping.``
  as the key and no payload; any other failure prints
  ``Error at offset O, skipping. <message>`` (the serde's message, e.g.
  ``Could not read record with version 3 from value's buffer due to: null.``).
  A record without a key makes DumpLogSegments throw; here it raises
  :class:`~segtool.errors.CorruptData`.

The message layouts are declared below in the form of Kafka's
``group-coordinator/src/main/resources/common/message/*.json`` files and compiled by
:mod:`segtool.kafka.messages`.  The ShareGroup* records (types 9..15) follow the
group coordinator's sources of late 2024 (Kafka 4.0 development): no real broker file
is behind them.  The Kafka 4.x layouts (4.1 specs) are declared where 4.x changed them:
OffsetCommitValue's tagged ``topicId``, the ``metadataHash`` of ConsumerGroupMetadataValue
(tagged) and ShareGroupMetadataValue, ShareGroupStatePartitionMetadataValue's
``initializingTopics`` and ``createTimestamp``.  Type 9 (ShareGroupPartitionMetadata) is
kept for 3.9/4.0 although Kafka 4.1 dropped it; type 18 (4.0's
StreamsGroupPartitionMetadata) is not declared, as in 4.1, and prints as an unknown type.
"""

from __future__ import annotations

from segtool.errors import CorruptData
from segtool.kafka.messages import (
    INT16,
    Array,
    CoordinatorRecord,
    CoordinatorRecordError,
    CoordinatorRecordType,
    F,
    JavaFailure,
    M,
    Message,
    S,
    compile_message,
    coordinator_record_type,
    decode_coordinator_record,
    jackson_json,
    read_message,
)

__all__ = [
    "parse_offsets_record",
    "decode_offsets_record",
    "RECORD_TYPES",
]

# group-coordinator/src/main/resources/common/message (Kafka 3.9)

OFFSET_COMMIT_KEY = M(
    "OffsetCommitKey", "0-1", "none",
    F("group", "string", "0-1"),
    F("topic", "string", "0-1"),
    F("partition", "int32", "0-1"),
)

OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue", "0-4", "4+",
    F("offset", "int64", "0+"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string", "0+"),
    F("commitTimestamp", "int64", "0+"),
    F("expireTimestamp", "int64", "1", default=-1),
    F("topicId", "uuid", "4+", tagged="4+", tag=0),  # Kafka 4.1 (KAFKA-19141)
)

GROUP_METADATA_KEY = M(
    "GroupMetadataKey", "2", "none",
    F("group", "string", "2"),
)

GROUP_METADATA_VALUE = M(
    "GroupMetadataValue", "0-4", "4+",
    F("protocolType", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", nullable="0+"),
    F("leader", "string", "0+", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", Array(S(
        "MemberMetadata", "0+",
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "3+", nullable="3+", default=None),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32", "0+"),
        F("subscription", "bytes", "0+"),
        F("assignment", "bytes", "0+"),
    )), "0+"),
)

# KIP-848 records (the new consumer-group protocol, 3.7+).


def _group_key(name: str, record_type: int, *extra: str) -> Message:
    v = str(record_type)
    return M(name, v, "none", F("groupId", "string", v), *(F(e, "string", v) for e in extra))


CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = M(
    "ConsumerGroupMetadataValue", "0", "0+",
    F("epoch", "int32"),
    F("metadataHash", "int64", tagged="0+", tag=0),  # Kafka 4.1 (KIP-1101)
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key("ConsumerGroupPartitionMetadataKey", 4)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue", "0", "0+",
    F("topics", Array(S(
        "TopicMetadata", "0+",
        F("topicId", "uuid"),
        F("topicName", "string"),
        F("numPartitions", "int32"),
        F("partitionMetadata", Array(S(
            "PartitionMetadata", "0+",
            F("partition", "int32"),
            F("racks", Array("string")),
        ))),
    ))),
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key("ConsumerGroupMemberMetadataKey", 5, "memberId")
CONSUMER_GROUP_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    F("instanceId", "string", nullable="0+"),
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("subscribedTopicNames", Array("string")),
    F("subscribedTopicRegex", "string", nullable="0+"),
    F("rebalanceTimeoutMs", "int32", default=-1),
    F("serverAssignor", "string", nullable="0+"),
    F("classicMemberMetadata", S(
        "ClassicMemberMetadata", "0+",
        F("sessionTimeoutMs", "int32"),
        F("supportedProtocols", Array(S(
            "ClassicProtocol", "0+",
            F("name", "string"),
            F("metadata", "bytes"),
        ))),
    ), nullable="0+", tagged="0+", tag=0, default=None),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
    F("assignmentEpoch", "int32"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, "memberId")
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    F("topicPartitions", Array(S(
        "TopicPartition", "0+",
        F("topicId", "uuid"),
        F("partitions", Array("int32")),
    ))),
)

_TOPIC_PARTITIONS = S(
    "TopicPartitions", "0+",
    F("topicId", "uuid"),
    F("partitions", Array("int32")),
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, "memberId")
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("assignedPartitions", Array(_TOPIC_PARTITIONS)),
    F("partitionsPendingRevocation", Array(_TOPIC_PARTITIONS)),
)

# clients/src/main/resources/common/message (Kafka 3.9): the classic consumer
# protocol's embedded subscription and assignment.

CONSUMER_PROTOCOL_SUBSCRIPTION = M(
    "ConsumerProtocolSubscription", "0-3", "none",
    F("topics", Array("string"), "0+"),
    F("userData", "bytes", "0+", nullable="0+", zero_copy=True),
    F("ownedPartitions", Array(S(
        "TopicPartition", "1+",
        F("topic", "string", "1+"),
        F("partitions", Array("int32"), "1+"),
    )), "1+"),
    F("generationId", "int32", "2+", default=-1),
    F("rackId", "string", "3+", nullable="3+"),
)

CONSUMER_PROTOCOL_ASSIGNMENT = M(
    "ConsumerProtocolAssignment", "0-3", "none",
    F("assignedPartitions", Array(S(
        "TopicPartition", "0+",
        F("topic", "string", "0+"),
        F("partitions", Array("int32"), "0+"),
    )), "0+"),
    F("userData", "bytes", "0+", nullable="0+", zero_copy=True),
)


# KIP-932 share groups (Kafka 4.0 development sources).

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M(
    "ShareGroupCurrentMemberAssignmentKey", "14", "none",
    F("groupId", "string", "14"),
    F("memberId", "string", "14"),
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ShareGroupCurrentMemberAssignmentValue", "0", "0+",
    F("memberEpoch", "int32", "0+"),
    F("previousMemberEpoch", "int32", "0+"),
    F("state", "int8", "0+"),
    F("assignedPartitions", Array(_TOPIC_PARTITIONS), "0+"),
)

SHARE_GROUP_MEMBER_METADATA_KEY = M(
    "ShareGroupMemberMetadataKey", "10", "none",
    F("groupId", "string", "10"),
    F("memberId", "string", "10"),
)

SHARE_GROUP_MEMBER_METADATA_VALUE = M(
    "ShareGroupMemberMetadataValue", "0", "0+",
    F("rackId", "string", "0+", nullable="0+"),
    F("clientId", "string", "0+"),
    F("clientHost", "string", "0+"),
    F("subscribedTopicNames", Array("string"), "0+"),
)

SHARE_GROUP_METADATA_KEY = M(
    "ShareGroupMetadataKey", "11", "none",
    F("groupId", "string", "11"),
)

SHARE_GROUP_METADATA_VALUE = M(
    "ShareGroupMetadataValue", "0", "0+",
    F("epoch", "int32", "0+"),
    F("metadataHash", "int64", "0+"),  # Kafka 4.1 (KIP-1101)
)

SHARE_GROUP_PARTITION_METADATA_KEY = M(
    "ShareGroupPartitionMetadataKey", "9", "none",
    F("groupId", "string", "9"),
)

SHARE_GROUP_PARTITION_METADATA_VALUE = M(
    "ShareGroupPartitionMetadataValue", "0", "0+",
    F("topics", Array(S(
        "TopicMetadata", "0+",
        F("topicId", "uuid", "0+"),
        F("topicName", "string", "0+"),
        F("numPartitions", "int32", "0+"),
        F("partitionMetadata", Array(S(
            "PartitionMetadata", "0+",
            F("partition", "int32", "0+"),
            F("racks", Array("string"), "0+"),
        )), "0+"),
    )), "0+"),
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = M(
    "ShareGroupStatePartitionMetadataKey", "15", "none",
    F("groupId", "string", "15"),
)

_TOPIC_PARTITIONS_INFO = S(
    "TopicPartitionsInfo", "0+",
    F("topicId", "uuid", "0+"),
    F("topicName", "string", "0+"),
    F("partitions", Array("int32"), "0+"),
    F("createTimestamp", "int64", "0+"),
)
_TOPIC_INFO = S(
    "TopicInfo", "0+",
    F("topicId", "uuid", "0+"),
    F("topicName", "string", "0+"),
)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = M(
    "ShareGroupStatePartitionMetadataValue", "0", "0+",
    F("initializingTopics", Array(_TOPIC_PARTITIONS_INFO), "0+"),
    F("initializedTopics", Array(_TOPIC_PARTITIONS_INFO), "0+"),
    F("deletingTopics", Array(_TOPIC_INFO), "0+"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M(
    "ShareGroupTargetAssignmentMemberKey", "13", "none",
    F("groupId", "string", "13"),
    F("memberId", "string", "13"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ShareGroupTargetAssignmentMemberValue", "0", "0+",
    F("topicPartitions", Array(S(
        "TopicPartition", "0+",
        F("topicId", "uuid", "0+"),
        F("partitions", Array("int32"), "0+"),
    )), "0+"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M(
    "ShareGroupTargetAssignmentMetadataKey", "12", "none",
    F("groupId", "string", "12"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ShareGroupTargetAssignmentMetadataValue", "0", "0+",
    F("assignmentEpoch", "int32", "0+"),
)


# Kafka 4.x records (group-coordinator message specs of Kafka 4.1; in 4.x each spec names
# its record type as "apiKey" with "type": "coordinator-key"/"coordinator-value", and the
# key's version prefix on disk is that record type).

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = _group_key(
    "ConsumerGroupRegularExpressionKey", 16, "regularExpression")
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = M(
    "ConsumerGroupRegularExpressionValue", "0", "0+",
    F("topics", Array("string")),
    F("version", "int64"),
    F("timestamp", "int64"),
)

# KIP-1071 streams groups (early access in Kafka 4.1).  Kafka 4.1 has no record type 18:
# StreamsGroupPartitionMetadata was dropped before the release (KIP-1101's metadata hash).

STREAMS_GROUP_METADATA_KEY = _group_key("StreamsGroupMetadataKey", 17)
STREAMS_GROUP_METADATA_VALUE = M(
    "StreamsGroupMetadataValue", "0", "0+",
    F("epoch", "int32"),
    F("metadataHash", "int64"),
    # written from Kafka 4.1.1 / 4.2 (KAFKA-19661); a 4.1.0 reader skips the tag
    F("validatedTopologyEpoch", "int32", tagged="0+", tag=0, default=-1),
)

_STREAMS_TOPIC_INFO = S(
    "TopicInfo", "0+",
    F("name", "string"),
    F("partitions", "int32"),
    F("replicationFactor", "int16"),
    F("topicConfigs", Array(S(
        "TopicConfig", "0+",
        F("key", "string"),
        F("value", "string"),
    ))),
)
STREAMS_GROUP_TOPOLOGY_KEY = _group_key("StreamsGroupTopologyKey", 23)
STREAMS_GROUP_TOPOLOGY_VALUE = M(
    "StreamsGroupTopologyValue", "0", "0+",
    F("epoch", "int32"),
    F("subtopologies", Array(S(
        "Subtopology", "0+",
        F("subtopologyId", "string"),
        F("sourceTopics", Array("string")),
        F("sourceTopicRegex", Array("string")),
        F("stateChangelogTopics", Array(_STREAMS_TOPIC_INFO)),
        F("repartitionSinkTopics", Array("string")),
        F("repartitionSourceTopics", Array(_STREAMS_TOPIC_INFO)),
        F("copartitionGroups", Array(S(
            "CopartitionGroup", "0+",
            F("sourceTopics", Array("int16")),
            F("sourceTopicRegex", Array("int16")),
            F("repartitionSourceTopics", Array("int16")),
        ))),
    ))),
)

STREAMS_GROUP_MEMBER_METADATA_KEY = _group_key("StreamsGroupMemberMetadataKey", 19, "memberId")
STREAMS_GROUP_MEMBER_METADATA_VALUE = M(
    "StreamsGroupMemberMetadataValue", "0", "0+",
    F("instanceId", "string", nullable="0+"),
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeoutMs", "int32", default=-1),
    F("topologyEpoch", "int32"),
    F("processId", "string"),
    F("userEndpoint", S(
        "Endpoint", "0+",
        F("host", "string"),
        F("port", "uint16"),
    ), nullable="0+"),
    F("clientTags", Array(S(
        "KeyValue", "0+",
        F("key", "string"),
        F("value", "string"),
    ))),
)

_STREAMS_TASK_IDS = S(
    "TaskIds", "0+",
    F("subtopologyId", "string"),
    F("partitions", Array("int32")),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("StreamsGroupTargetAssignmentMetadataKey", 20)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "StreamsGroupTargetAssignmentMetadataValue", "0", "0+",
    F("assignmentEpoch", "int32"),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "StreamsGroupTargetAssignmentMemberKey", 21, "memberId")
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "StreamsGroupTargetAssignmentMemberValue", "0", "0+",
    F("activeTasks", Array(_STREAMS_TASK_IDS)),
    F("standbyTasks", Array(_STREAMS_TASK_IDS)),
    F("warmupTasks", Array(_STREAMS_TASK_IDS)),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "StreamsGroupCurrentMemberAssignmentKey", 22, "memberId")
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "StreamsGroupCurrentMemberAssignmentValue", "0", "0+",
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("activeTasks", Array(_STREAMS_TASK_IDS)),
    F("standbyTasks", Array(_STREAMS_TASK_IDS)),
    F("warmupTasks", Array(_STREAMS_TASK_IDS)),
    F("activeTasksPendingRevocation", Array(_STREAMS_TASK_IDS)),
    F("standbyTasksPendingRevocation", Array(_STREAMS_TASK_IDS)),
    F("warmupTasksPendingRevocation", Array(_STREAMS_TASK_IDS)),
)


# --------------------------------------------------------------------------
# Record types
# --------------------------------------------------------------------------

_OFFSET_COMMIT = coordinator_record_type(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)

# GroupCoordinatorRecordSerde.apiMessageKeyFor / apiMessageValueFor.
RECORD_TYPES: dict[int, CoordinatorRecordType] = {
    0: _OFFSET_COMMIT,
    1: _OFFSET_COMMIT,
    2: coordinator_record_type(GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: coordinator_record_type(CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: coordinator_record_type(CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: coordinator_record_type(CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: coordinator_record_type(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                               CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: coordinator_record_type(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                               CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: coordinator_record_type(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                               CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    9: coordinator_record_type(SHARE_GROUP_PARTITION_METADATA_KEY, SHARE_GROUP_PARTITION_METADATA_VALUE),
    10: coordinator_record_type(SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: coordinator_record_type(SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: coordinator_record_type(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                                SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: coordinator_record_type(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                                SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: coordinator_record_type(SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                                SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: coordinator_record_type(SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
                                SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: coordinator_record_type(CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    17: coordinator_record_type(STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: coordinator_record_type(STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: coordinator_record_type(STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                                STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: coordinator_record_type(STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                                STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: coordinator_record_type(STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                                STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: coordinator_record_type(STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}

_SUBSCRIPTION_PARSER = compile_message(CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT_PARSER = compile_message(CONSUMER_PROTOCOL_ASSIGNMENT)


def _embedded(parser, raw: bytes):
    """Re-read a version-prefixed consumer-protocol blob (ByteBuffer.wrap of the bytes)."""
    if len(raw) < 2:
        raise JavaFailure(None)
    return read_message(parser, raw, 2, INT16.parse(raw[:2]))[0]


def _expand_consumer_protocol(data: dict) -> None:
    """DumpLogSegments.prepareGroupMetadataValue: decode the classic consumer
    protocol's subscription/assignment in place, keeping the bytes on failure."""
    if data.get("protocolType") != "consumer":
        return
    for member in data.get("members") or ():
        for name, parser in (("subscription", _SUBSCRIPTION_PARSER), ("assignment", _ASSIGNMENT_PARSER)):
            raw = member.get(name)
            if isinstance(raw, bytes):
                try:
                    member[name] = _embedded(parser, raw)
                except JavaFailure:
                    pass


def decode_offsets_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """Decode one record (data as JSON-ready dicts, bytes stay ``bytes``; value None for a
    tombstone), the consumer protocol expanded as DumpLogSegments does.  Raises
    :class:`~segtool.kafka.messages.CoordinatorRecordError` where Kafka's serde throws."""
    record = decode_coordinator_record(RECORD_TYPES, key, value)
    if record.value is not None and record.type.value is GROUP_METADATA_VALUE:
        _expand_consumer_protocol(record.value)
    return record


def coordinator_record_texts(record: CoordinatorRecord, version_label: str) -> tuple[str, str]:
    """The key and payload texts of a decoded coordinator record as DumpLogSegments prints
    them: ``{"type":"<type>","data":...}`` and ``{"<version_label>":"<version>","data":...}``."""
    key_text = f'{{"type":"{record.type_id}","data":{jackson_json(record.key)}}}'
    if record.value is None:
        return key_text, "<DELETE>"
    return key_text, f'{{"{version_label}":"{record.value_version}","data":{jackson_json(record.value)}}}'


def parse_offsets_record(key: bytes | None, value: bytes | None, offset: int,
                         ) -> tuple[str | None, str | None]:
    """The ``(key text, payload text)`` that ``kafka-dump-log.sh --offsets-decoder``
    prints for a ``__consumer_offsets`` record at ``offset`` (None = not printed).

    ``key``/``value`` are the record's key and value bytes (None = null).  Decoding
    errors never raise: they become Kafka's ``Unknown record type ...`` /
    ``Error at offset ...`` key text with no payload.  A null key raises
    :class:`CorruptData` (DumpLogSegments throws and stops there).
    """
    return coordinator_dump_texts(decode_offsets_record, "offset topic decoder", "version", key, value, offset)


def coordinator_dump_texts(decode, decoder_name: str, version_label: str, key: bytes | None,
                           value: bytes | None, offset: int) -> tuple[str, str | None]:
    """What DumpLogSegments' coordinator-record parsers print for one record: a null key throws
    (``CorruptData``, the dump stops), a record the serde rejects is an error key text with no
    payload, else the record's key and payload texts."""
    if key is None:
        raise CorruptData(f"Failed to decode message at offset {offset} using {decoder_name} "
                          "(message had a missing key)")
    try:
        record = decode(bytes(key), None if value is None else bytes(value))
    except CoordinatorRecordError as e:
        return coordinator_error_text(e, offset), None
    return coordinator_record_texts(record, version_label)


def coordinator_error_text(error: CoordinatorRecordError, offset: int) -> str:
    """The key text DumpLogSegments prints for a record its coordinator serde rejects."""
    if error.unknown_type is not None:
        return f"Unknown record type {error.unknown_type} at offset {offset}, skipping."
    return f"Error at offset {offset}, skipping. {error.message}"
