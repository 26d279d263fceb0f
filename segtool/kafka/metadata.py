"""KRaft metadata records: the ``__cluster_metadata`` log, its snapshots and ``bootstrap.checkpoint``.

Every value in the metadata log is one record framed by ``AbstractApiMessageSerde``
(server-common/.../serialization/AbstractApiMessageSerde.java): an unsigned varint frame
version (1; 0 was 2.8's preview), an unsigned varint record type (the ``apiKey`` of
``metadata/src/main/resources/common/metadata/<Name>.json``), an unsigned varint record
version, then the record itself, read by the generated code of that version; nothing may
follow it.  Records carry no key.  Snapshots (``<end offset>-<epoch>.checkpoint``) and
``bootstrap.checkpoint`` hold the same records in record batches, between the
SnapshotHeader / SnapshotFooter control records (``KRAFT_CONTROL_MESSAGES`` below).

``kafka-dump-log.sh --cluster-metadata-decoder`` (DumpLogSegments'
``ClusterMetadataLogMessageParser``) prints each record as the payload
``{"type":"<MetadataRecordType constant>","version":<version>,"data":{...}}`` (the enum
constant, e.g. ``TOPIC_RECORD``; the version a JSON number; the data through the generated
JSON converter), and a record it cannot read as ``Error at <offset>, skipping. <message>``.

The declarations below are the newest layout of each record type (Kafka's metadata
schemas only ever add versions and tagged fields), as of the Kafka 4.0 development
sources; AccessControlRecord (6) and RemoveFeatureLevelRecord (16) are the 3.0/3.1
layouts of types later dropped, and ClearElrRecord (28) comes from Kafka 4.0.
"""

from __future__ import annotations

from dataclasses import dataclass

from segtool.errors import CorruptData
from segtool.kafka.messages import (
    ApiMessageError,
    JavaFailure,
    snake_case_data,
    Array,
    F,
    M,
    Message,
    S,
    compile_message,
    jackson_json,
    read_api_message,
    read_message,
)

# metadata/src/main/resources/common/metadata/*.json

REGISTER_BROKER_RECORD = M(
    "RegisterBrokerRecord", "0-3", "0+",
    F("brokerId", "int32", "0+"),
    F("isMigratingZkBroker", "bool", "2+", default=False),
    F("incarnationId", "uuid", "0+"),
    F("brokerEpoch", "int64", "0+"),
    F("endPoints", Array(S(
        "BrokerEndpoint", "0+",
        F("name", "string", "0+"),
        F("host", "string", "0+"),
        F("port", "uint16", "0+"),
        F("securityProtocol", "int16", "0+"),
    )), "0+"),
    F("features", Array(S(
        "BrokerFeature", "0+",
        F("name", "string", "0+"),
        F("minSupportedVersion", "int16", "0+"),
        F("maxSupportedVersion", "int16", "0+"),
    )), "0+"),
    F("rack", "string", "0+", nullable="0+"),
    F("fenced", "bool", "0+", default=True),
    F("inControlledShutdown", "bool", "1+", default=False),
    F("logDirs", Array("uuid"), "3+", tagged="3+", tag=0),
)

UNREGISTER_BROKER_RECORD = M(
    "UnregisterBrokerRecord", "0", "0+",
    F("brokerId", "int32", "0+"),
    F("brokerEpoch", "int64", "0+"),
)

TOPIC_RECORD = M(
    "TopicRecord", "0", "0+",
    F("name", "string", "0+"),
    F("topicId", "uuid", "0+"),
)

PARTITION_RECORD = M(
    "PartitionRecord", "0-2", "0+",
    F("partitionId", "int32", "0+", default=-1),
    F("topicId", "uuid", "0+"),
    F("replicas", Array("int32"), "0+"),
    F("isr", Array("int32"), "0+"),
    F("removingReplicas", Array("int32"), "0+"),
    F("addingReplicas", Array("int32"), "0+"),
    F("leader", "int32", "0+", default=-1),
    F("leaderRecoveryState", "int8", "0+", tagged="0+", tag=0, default=0),
    F("leaderEpoch", "int32", "0+", default=-1),
    F("partitionEpoch", "int32", "0+", default=-1),
    F("directories", Array("uuid"), "1+"),
    F("eligibleLeaderReplicas", Array("int32"), "2+", nullable="2+", tagged="2+", tag=1, default=None),
    F("lastKnownElr", Array("int32"), "2+", nullable="2+", tagged="2+", tag=2, default=None),
)

CONFIG_RECORD = M(
    "ConfigRecord", "0", "0+",
    F("resourceType", "int8", "0+"),
    F("resourceName", "string", "0+"),
    F("name", "string", "0+"),
    F("value", "string", "0+", nullable="0+"),
)

PARTITION_CHANGE_RECORD = M(
    "PartitionChangeRecord", "0-2", "0+",
    F("partitionId", "int32", "0+", default=-1),
    F("topicId", "uuid", "0+"),
    F("isr", Array("int32"), "0+", nullable="0+", tagged="0+", tag=0, default=None),
    F("leader", "int32", "0+", tagged="0+", tag=1, default=-2),
    F("replicas", Array("int32"), "0+", nullable="0+", tagged="0+", tag=2, default=None),
    F("removingReplicas", Array("int32"), "0+", nullable="0+", tagged="0+", tag=3, default=None),
    F("addingReplicas", Array("int32"), "0+", nullable="0+", tagged="0+", tag=4, default=None),
    F("leaderRecoveryState", "int8", "0+", tagged="0+", tag=5, default=-1),
    F("directories", Array("uuid"), "1+", nullable="1+", tagged="1+", tag=8, default=None),
    F("eligibleLeaderReplicas", Array("int32"), "2+", nullable="2+", tagged="2+", tag=6, default=None),
    F("lastKnownElr", Array("int32"), "2+", nullable="2+", tagged="2+", tag=7, default=None),
)

ACCESS_CONTROL_RECORD = M(
    "AccessControlRecord", "0", "0+",
    F("resourceType", "int8", "0+"),
    F("resourceName", "string", "0+", nullable="0+"),
    F("patternType", "int8", "0+"),
    F("principal", "string", "0+"),
    F("host", "string", "0+"),
    F("operation", "int8", "0+"),
    F("permissionType", "int8", "0+"),
)

FENCE_BROKER_RECORD = M(
    "FenceBrokerRecord", "0", "0+",
    F("id", "int32", "0+"),
    F("epoch", "int64", "0+"),
)

UNFENCE_BROKER_RECORD = M(
    "UnfenceBrokerRecord", "0", "0+",
    F("id", "int32", "0+"),
    F("epoch", "int64", "0+"),
)

REMOVE_TOPIC_RECORD = M(
    "RemoveTopicRecord", "0", "0+",
    F("topicId", "uuid", "0+"),
)

DELEGATION_TOKEN_RECORD = M(
    "DelegationTokenRecord", "0", "0+",
    F("owner", "string", "0+"),
    F("requester", "string", "0+"),
    F("renewers", Array("string"), "0+"),
    F("issueTimestamp", "int64", "0+"),
    F("maxTimestamp", "int64", "0+"),
    F("expirationTimestamp", "int64", "0+"),
    F("tokenId", "string", "0+"),
)

USER_SCRAM_CREDENTIAL_RECORD = M(
    "UserScramCredentialRecord", "0", "0+",
    F("name", "string", "0+"),
    F("mechanism", "int8", "0+"),
    F("salt", "bytes", "0+"),
    F("storedKey", "bytes", "0+"),
    F("serverKey", "bytes", "0+"),
    F("iterations", "int32", "0+"),
)

FEATURE_LEVEL_RECORD = M(
    "FeatureLevelRecord", "0", "0+",
    F("name", "string", "0+"),
    F("featureLevel", "int16", "0+"),
)

CLIENT_QUOTA_RECORD = M(
    "ClientQuotaRecord", "0", "0+",
    F("entity", Array(S(
        "EntityData", "0+",
        F("entityType", "string", "0+"),
        F("entityName", "string", "0+", nullable="0+"),
    )), "0+"),
    F("key", "string", "0+"),
    F("value", "float64", "0+"),
    F("remove", "bool", "0+"),
)

PRODUCER_IDS_RECORD = M(
    "ProducerIdsRecord", "0", "0+",
    F("brokerId", "int32", "0+"),
    F("brokerEpoch", "int64", "0+", default=-1),
    F("nextProducerId", "int64", "0+"),
)

REMOVE_FEATURE_LEVEL_RECORD = M(
    "RemoveFeatureLevelRecord", "0", "0+",
    F("name", "string", "0+"),
)

BROKER_REGISTRATION_CHANGE_RECORD = M(
    "BrokerRegistrationChangeRecord", "0-2", "0+",
    F("brokerId", "int32", "0+"),
    F("brokerEpoch", "int64", "0+"),
    F("fenced", "int8", "0+", tagged="0+", tag=0),
    F("inControlledShutdown", "int8", "1+", tagged="1+", tag=1),
    F("logDirs", Array("uuid"), "2+", tagged="2+", tag=2),
)

ACCESS_CONTROL_ENTRY_RECORD = M(
    "AccessControlEntryRecord", "0", "0+",
    F("id", "uuid", "0+"),
    F("resourceType", "int8", "0+"),
    F("resourceName", "string", "0+"),
    F("patternType", "int8", "0+"),
    F("principal", "string", "0+"),
    F("host", "string", "0+"),
    F("operation", "int8", "0+"),
    F("permissionType", "int8", "0+"),
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = M(
    "RemoveAccessControlEntryRecord", "0", "0+",
    F("id", "uuid", "0+"),
)

NO_OP_RECORD = M(
    "NoOpRecord", "0", "0+",
)

ZK_MIGRATION_STATE_RECORD = M(
    "ZkMigrationStateRecord", "0", "0+",
    F("zkMigrationState", "int8", "0+"),
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = M(
    "RemoveUserScramCredentialRecord", "0", "0+",
    F("name", "string", "0+"),
    F("mechanism", "int8", "0+"),
)

BEGIN_TRANSACTION_RECORD = M(
    "BeginTransactionRecord", "0", "0+",
    F("name", "string", "0+", nullable="0+", tagged="0+", tag=0, default=None),
)

END_TRANSACTION_RECORD = M(
    "EndTransactionRecord", "0", "0+",
)

ABORT_TRANSACTION_RECORD = M(
    "AbortTransactionRecord", "0", "0+",
    F("reason", "string", "0+", nullable="0+", tagged="0+", tag=0, default=None),
)

REMOVE_DELEGATION_TOKEN_RECORD = M(
    "RemoveDelegationTokenRecord", "0", "0+",
    F("tokenId", "string", "0+"),
)

REGISTER_CONTROLLER_RECORD = M(
    "RegisterControllerRecord", "0", "0+",
    F("controllerId", "int32", "0+"),
    F("incarnationId", "uuid", "0+"),
    F("zkMigrationReady", "bool", "0+"),
    F("endPoints", Array(S(
        "ControllerEndpoint", "0+",
        F("name", "string", "0+"),
        F("host", "string", "0+"),
        F("port", "uint16", "0+"),
        F("securityProtocol", "int16", "0+"),
    )), "0+"),
    F("features", Array(S(
        "ControllerFeature", "0+",
        F("name", "string", "0+"),
        F("minSupportedVersion", "int16", "0+"),
        F("maxSupportedVersion", "int16", "0+"),
    )), "0+"),
)

CLEAR_ELR_RECORD = M(
    "ClearElrRecord", "0", "0+",
    F("topicName", "string", "0+"),
)

# MetadataRecordType: the record type of each declaration (its apiKey).
METADATA_RECORDS: dict[int, Message] = {
    0: REGISTER_BROKER_RECORD,
    1: UNREGISTER_BROKER_RECORD,
    2: TOPIC_RECORD,
    3: PARTITION_RECORD,
    4: CONFIG_RECORD,
    5: PARTITION_CHANGE_RECORD,
    6: ACCESS_CONTROL_RECORD,
    7: FENCE_BROKER_RECORD,
    8: UNFENCE_BROKER_RECORD,
    9: REMOVE_TOPIC_RECORD,
    10: DELEGATION_TOKEN_RECORD,
    11: USER_SCRAM_CREDENTIAL_RECORD,
    12: FEATURE_LEVEL_RECORD,
    14: CLIENT_QUOTA_RECORD,
    15: PRODUCER_IDS_RECORD,
    16: REMOVE_FEATURE_LEVEL_RECORD,
    17: BROKER_REGISTRATION_CHANGE_RECORD,
    18: ACCESS_CONTROL_ENTRY_RECORD,
    19: REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    20: NO_OP_RECORD,
    21: ZK_MIGRATION_STATE_RECORD,
    22: REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    23: BEGIN_TRANSACTION_RECORD,
    24: END_TRANSACTION_RECORD,
    25: ABORT_TRANSACTION_RECORD,
    26: REMOVE_DELEGATION_TOKEN_RECORD,
    27: REGISTER_CONTROLLER_RECORD,
    28: CLEAR_ELR_RECORD,
}
_PARSERS = {type_id: compile_message(message) for type_id, message in METADATA_RECORDS.items()}
# MetadataRecordType of Kafka 3.9 (its metadata/src/main/resources/common/metadata/*.json): the
# dropped AccessControlRecord (6) and RemoveFeatureLevelRecord (16) and 4.0's ClearElrRecord (28)
# are unknown ids there
_PARSERS_3_9 = {type_id: parser for type_id, parser in _PARSERS.items() if type_id not in (6, 16, 28)}


@dataclass(frozen=True)
class MetadataRecord:
    type_id: int
    name: str  # the schema's name, e.g. TopicRecord
    version: int
    data: dict  # camelCase field names in JSON-converter order; bytes stay bytes

    @property
    def type_constant(self) -> str:
        """The MetadataRecordType constant DumpLogSegments prints (TopicRecord -> TOPIC_RECORD)."""
        return java_snake_case(self.name).upper()


def java_snake_case(name: str) -> str:
    """MessageGenerator.toSnakeCase: an underscore before each capital that follows a small letter."""
    out = []
    previous_capital = True
    for char in name:
        if char.isupper():
            if not previous_capital:
                out.append("_")
            out.append(char.lower())
        else:
            out.append(char)
        previous_capital = char.isupper()
    return "".join(out)


def decode_metadata_record(value: bytes | None, kafka_version: str | None = None) -> MetadataRecord:
    """One record value of the metadata log; :class:`ApiMessageError` where Kafka's
    MetadataRecordSerde throws.  ``kafka_version`` "3.9" knows only the record types 3.9 has;
    without it every declared type is read."""
    parsers = _PARSERS_3_9 if kafka_version == "3.9" else _PARSERS
    type_id, version, data = read_api_message(value, parsers)
    return MetadataRecord(type_id, METADATA_RECORDS[type_id].name, version, data)


def cluster_metadata_payload(value: bytes | None, offset: int, kafka_version: str) -> str:
    """The payload ``kafka-dump-log.sh --cluster-metadata-decoder`` of ``kafka_version`` prints
    for a record at ``offset``."""
    try:
        record = decode_metadata_record(value, kafka_version)
    except ApiMessageError as e:
        return f"Error at {offset}, skipping. {e.message}"
    return (f'{{"type":"{record.type_constant}","version":{record.version},'
            f'"data":{jackson_json(record.data)}}}')


# -- KRaft control records --------------------------------------------------------------------
# The values of the control records the Raft layer writes (clients/src/main/resources/common/
# message/<Name>.json).  ControlRecordUtils reads each at its *_CURRENT_VERSION, 0 for all of them
# in 3.9, and DumpLogSegments prints it with the generated JSON converter after a label.

_VOTER_ENDPOINTS = Array(S(
    "Endpoint", "0+",
    F("name", "string", "0+"),
    F("host", "string", "0+"),
    F("port", "uint16", "0+"),
))

VOTERS_RECORD = M(
    "VotersRecord", "0", "0+",
    F("version", "int16", "0+"),
    F("voters", Array(S(
        "Voter", "0+",
        F("voterId", "int32", "0+"),
        F("voterDirectoryId", "uuid", "0+"),
        F("endpoints", _VOTER_ENDPOINTS, "0+"),
        F("kRaftVersionFeature", S(
            "KRaftVersionFeature", "0+",
            F("minSupportedVersion", "int16", "0+"),
            F("maxSupportedVersion", "int16", "0+"),
        ), "0+"),
    )), "0+"),
)

_LEADER_CHANGE_VOTER = S(
    "Voter", "0+",
    F("voterId", "int32", "0+"),
    F("voterDirectoryId", "uuid", "1+"),
)

LEADER_CHANGE_MESSAGE = M(
    "LeaderChangeMessage", "0-1", "0+",
    F("version", "int16", "0+"),
    F("leaderId", "int32", "0+"),
    F("voters", Array(_LEADER_CHANGE_VOTER), "0+"),
    F("grantingVoters", Array(_LEADER_CHANGE_VOTER), "0+"),
)

SNAPSHOT_HEADER_RECORD = M(
    "SnapshotHeaderRecord", "0", "0+",
    F("version", "int16", "0+"),
    F("lastContainedLogTimestamp", "int64", "0+"),  # append time of the last record in the snapshot
)

SNAPSHOT_FOOTER_RECORD = M(
    "SnapshotFooterRecord", "0", "0+",
    F("version", "int16", "0+"),
)

KRAFT_VERSION_RECORD = M(
    "KRaftVersionRecord", "0", "0+",
    F("version", "int16", "0+"),
    F("kRaftVersion", "int16", "0+"),  # the kraft.version feature level
)

# ControlRecordType name -> (DumpLogSegments' label, the value's declaration)
KRAFT_CONTROL_MESSAGES: dict[str, tuple[str, Message]] = {
    "LEADER_CHANGE": ("LeaderChange", LEADER_CHANGE_MESSAGE),
    "SNAPSHOT_HEADER": ("SnapshotHeader", SNAPSHOT_HEADER_RECORD),
    "SNAPSHOT_FOOTER": ("SnapshotFooter", SNAPSHOT_FOOTER_RECORD),
    "KRAFT_VERSION": ("KRaftVersion", KRAFT_VERSION_RECORD),
    "KRAFT_VOTERS": ("KRaftVoters", VOTERS_RECORD),
}
_CONTROL_PARSERS = {name: compile_message(message) for name, (_label, message) in KRAFT_CONTROL_MESSAGES.items()}


def kraft_control_value(value: bytes | None, name: str, offset: int) -> tuple[str, dict] | None:
    """(DumpLogSegments' label, the fields in JSON-converter order with camelCase names) of the
    value of a KRaft control record of type ``name``, None for a type without a declared value
    (ABORT and COMMIT have their own marker).  The value is read at version 0, as
    ControlRecordUtils.deserialize* reads it; :class:`CorruptData` where that read throws."""
    declared = KRAFT_CONTROL_MESSAGES.get(name)
    if declared is None:
        return None
    if value is None:
        raise CorruptData(f"{name} control record at offset {offset} has a null value")
    try:
        data, _end = read_message(_CONTROL_PARSERS[name], bytes(value), 0, 0)
    except JavaFailure:
        raise CorruptData(f"{name} control record at offset {offset}: value of {len(value)} bytes"
                          " is truncated") from None
    return declared[0], data


def control_record_value(record) -> dict | None:
    """A control record's value for segtool's outputs: an end-transaction marker's ``version`` and
    ``coordinator_epoch``; a KRaft control record's fields in snake_case; ``{"error": ...}`` for a
    value Kafka's reader rejects; None for a control type without a declared value."""
    from segtool.kafka.records import control_record_type, end_txn_marker

    _type_id, name = control_record_type(record)
    try:
        if name in ("ABORT", "COMMIT"):
            version, coordinator_epoch = end_txn_marker(record)
            return {"version": version, "coordinator_epoch": coordinator_epoch}
        decoded = kraft_control_value(record.value, name, record.offset)
    except CorruptData as e:
        return {"error": e.message}
    return None if decoded is None else snake_case_data(decoded[1])
