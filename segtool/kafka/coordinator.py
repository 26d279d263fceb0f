"""Records of the coordinator topics ``__transaction_state``, ``__share_group_state`` and
``__remote_log_metadata``, and how kafka-dump-log prints them.

* ``__transaction_state`` (``--transaction-log-decoder``): key = int16 version (0), then
  TransactionLogKey; value = int16 version (0, or 1 flexible), then TransactionLogValue
  (transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json).
  Kafka 3.9 prints them through ``TransactionLog.formatRecordKeyAndValue``
  (core/src/main/scala/kafka/coordinator/transaction/TransactionLog.scala):
  ``transaction_metadata::transactionalId=<id>`` and
  ``producerId:<pid>,producerEpoch:<epoch>,state=<State>,partitions=[t-0,...],txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>``,
  the partitions in the iteration order of the Scala ``mutable.HashSet`` that holds them;
  a key version other than 0 prints ``unknown::version=<v>``; a tombstone ``<DELETE>``.
  Kafka 4.x prints them as JSON instead (:func:`transaction_log_json_texts`).
* ``__share_group_state`` (``--share-group-state-decoder``): ``CoordinatorRecordSerde``
  framing (the key's int16 version is the record type: 0 ShareSnapshot, 1 ShareUpdate)
  with share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json;
  Kafka 3.9's ``ShareGroupStateMessageParser`` prints key and value as
  ``{"type":"<version>","data":{...}}``.
* ``__remote_log_metadata`` (``--remote-log-metadata-decoder``): each value is framed by
  ``AbstractApiMessageSerde`` (storage/src/main/resources/message/RemoteLogSegmentMetadata*Record.json,
  RemotePartitionDeleteMetadataRecord.json); ``RemoteLogMetadataSerde`` turns it into a
  ``RemoteLogSegmentMetadata`` / ``...Update`` / ``RemotePartitionDeleteMetadata`` /
  ``RemoteLogSegmentMetadataSnapshot`` and DumpLogSegments prints its ``toString()``.

The share-group state layouts are Kafka 4.1's (int32 ``snapshotEpoch``, ShareSnapshotValue's
``createTimestamp`` / ``writeTimestamp``); the remote-log metadata records carry 4.0's tagged
``txnIndexEmpty`` (KIP-1058).  No real broker file is behind them.
"""

from __future__ import annotations

from segtool.errors import CorruptData
from segtool.kafka.messages import (
    INT16,
    ApiMessageError,
    Array,
    CoordinatorRecord,
    CoordinatorRecordType,
    F,
    JavaFailure,
    M,
    S,
    compile_message,
    coordinator_record_type,
    decode_coordinator_record,
    read_api_message,
    read_message,
)
from segtool.kafka.offsets import coordinator_dump_texts

# transaction-coordinator/src/main/resources/common/message

TRANSACTION_LOG_KEY = M(
    "TransactionLogKey", "0", "none",
    F("transactionalId", "string", "0"),
)

TRANSACTION_LOG_VALUE = M(
    "TransactionLogValue", "0-1", "1+",
    F("producerId", "int64", "0+"),
    F("previousProducerId", "int64", "1+", tagged="1+", tag=0, default=-1),
    F("nextProducerId", "int64", "1+", tagged="1+", tag=1, default=-1),
    F("producerEpoch", "int16", "0+"),
    F("transactionTimeoutMs", "int32", "0+"),
    F("transactionStatus", "int8", "0+"),
    F("transactionPartitions", Array(S(
        "PartitionsSchema", "0+",
        F("topic", "string", "0+"),
        F("partitionIds", Array("int32"), "0+"),
    )), "0+", nullable="0+"),
    F("transactionLastUpdateTimestampMs", "int64", "0+"),
    F("transactionStartTimestampMs", "int64", "0+"),
    F("clientTransactionVersion", "int16", "1+", tagged="1+", tag=2, default=0),
)

TRANSACTION_LOG = coordinator_record_type(TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)
TRANSACTION_RECORD_TYPES: dict[int, CoordinatorRecordType] = {0: TRANSACTION_LOG}

# TransactionState.fromId (Kafka 3.9's case objects print their names)
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")

# share-coordinator/src/main/resources/common/message

SHARE_SNAPSHOT_KEY = M(
    "ShareSnapshotKey", "0", "none",
    F("groupId", "string", "0"),
    F("topicId", "uuid", "0"),
    F("partition", "int32", "0"),
)

_STATE_BATCH = S(
    "StateBatch", "0+",
    F("firstOffset", "int64", "0+"),
    F("lastOffset", "int64", "0+"),
    F("deliveryState", "int8", "0+"),
    F("deliveryCount", "int16", "0+"),
)

# Kafka 4.1: snapshotEpoch int32 (uint16 before), createTimestamp / writeTimestamp added
SHARE_SNAPSHOT_VALUE = M(
    "ShareSnapshotValue", "0", "0+",
    F("snapshotEpoch", "int32", "0+"),
    F("stateEpoch", "int32", "0+"),
    F("leaderEpoch", "int32", "0+"),
    F("startOffset", "int64", "0+"),
    F("createTimestamp", "int64", "0+"),
    F("writeTimestamp", "int64", "0+"),
    F("stateBatches", Array(_STATE_BATCH), "0+"),
)

SHARE_UPDATE_KEY = M(
    "ShareUpdateKey", "1", "none",
    F("groupId", "string", "1"),
    F("topicId", "uuid", "1"),
    F("partition", "int32", "1"),
)

SHARE_UPDATE_VALUE = M(
    "ShareUpdateValue", "0", "0+",
    F("snapshotEpoch", "int32", "0+"),
    F("leaderEpoch", "int32", "0+"),
    F("startOffset", "int64", "0+"),
    F("stateBatches", Array(_STATE_BATCH), "0+"),
)

SHARE_RECORD_TYPES: dict[int, CoordinatorRecordType] = {
    0: coordinator_record_type(SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: coordinator_record_type(SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}

# storage/src/main/resources/message

REMOTE_LOG_SEGMENT_METADATA_RECORD = M(
    "RemoteLogSegmentMetadataRecord", "0", "0+",
    F("remoteLogSegmentId", S(
        "RemoteLogSegmentIdEntry", "0+",
        F("topicIdPartition", S(
            "TopicIdPartitionEntry", "0+",
            F("name", "string", "0+"),
            F("id", "uuid", "0+"),
            F("partition", "int32", "0+"),
        ), "0+"),
        F("id", "uuid", "0+"),
    ), "0+"),
    F("startOffset", "int64", "0+"),
    F("endOffset", "int64", "0+"),
    F("brokerId", "int32", "0+"),
    F("maxTimestampMs", "int64", "0+"),
    F("eventTimestampMs", "int64", "0+"),
    F("segmentLeaderEpochs", Array(S(
        "SegmentLeaderEpochEntry", "0+",
        F("leaderEpoch", "int32", "0+"),
        F("offset", "int64", "0+"),
    )), "0+"),
    F("segmentSizeInBytes", "int32", "0+"),
    F("customMetadata", "bytes", "0+", nullable="0+", default=None),
    F("remoteLogSegmentState", "int8", "0+"),
    F("txnIndexEmpty", "bool", "0+", tagged="0+", tag=0),  # Kafka 4.0 (KIP-1058)
)

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = M(
    "RemoteLogSegmentMetadataUpdateRecord", "0", "0+",
    F("remoteLogSegmentId", S(
        "RemoteLogSegmentIdEntry", "0+",
        F("topicIdPartition", S(
            "TopicIdPartitionEntry", "0+",
            F("name", "string", "0+"),
            F("id", "uuid", "0+"),
            F("partition", "int32", "0+"),
        ), "0+"),
        F("id", "uuid", "0+"),
    ), "0+"),
    F("brokerId", "int32", "0+"),
    F("eventTimestampMs", "int64", "0+"),
    F("customMetadata", "bytes", "0+", nullable="0+", default=None),
    F("remoteLogSegmentState", "int8", "0+"),
)

REMOTE_PARTITION_DELETE_METADATA_RECORD = M(
    "RemotePartitionDeleteMetadataRecord", "0", "0+",
    F("topicIdPartition", S(
        "TopicIdPartitionEntry", "0+",
        F("name", "string", "0+"),
        F("id", "uuid", "0+"),
        F("partition", "int32", "0+"),
    ), "0+"),
    F("brokerId", "int32", "0+"),
    F("eventTimestampMs", "int64", "0+"),
    F("remotePartitionDeleteState", "int8", "0+"),
)

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = M(
    "RemoteLogSegmentMetadataSnapshotRecord", "0", "0+",
    F("segmentId", "uuid", "0+"),
    F("startOffset", "int64", "0+"),
    F("endOffset", "int64", "0+"),
    F("brokerId", "int32", "0+"),
    F("maxTimestampMs", "int64", "0+"),
    F("eventTimestampMs", "int64", "0+"),
    F("segmentLeaderEpochs", Array(S(
        "SegmentLeaderEpochEntry", "0+",
        F("leaderEpoch", "int32", "0+"),
        F("offset", "int64", "0+"),
    )), "0+"),
    F("segmentSizeInBytes", "int32", "0+"),
    F("customMetadata", "bytes", "0+", nullable="0+", default=None),
    F("remoteLogSegmentState", "int8", "0+"),
    F("txnIndexEmpty", "bool", "0+", tagged="0+", tag=0),  # Kafka 4.0 (KIP-1058)
)

REMOTE_LOG_METADATA_RECORDS = {
    0: REMOTE_LOG_SEGMENT_METADATA_RECORD,
    1: REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
    2: REMOTE_PARTITION_DELETE_METADATA_RECORD,
    3: REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD,
}
_REMOTE_PARSERS = {type_id: compile_message(message) for type_id, message in REMOTE_LOG_METADATA_RECORDS.items()}
REMOTE_SEGMENT_STATES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                         "DELETE_SEGMENT_FINISHED")
REMOTE_PARTITION_DELETE_STATES = ("DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED")


# --------------------------------------------------------------------------
# __transaction_state
# --------------------------------------------------------------------------


def decode_transaction_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """One ``__transaction_state`` record; :class:`CoordinatorRecordError` where Kafka's reader throws."""
    return decode_coordinator_record(TRANSACTION_RECORD_TYPES, key, value)


def _java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _scala_hash_set_order(partitions: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The iteration order of Scala 2.13's ``mutable.HashSet`` after ``++=`` of each group:
    buckets by ``hash & (size - 1)``, each bucket by hash, the table grown as it fills."""
    def improved(topic: str, partition: int) -> int:
        h = _signed(31 * (31 + partition) + _java_string_hash(topic))  # TopicPartition.hashCode
        return _signed(h ^ ((h & 0xFFFFFFFF) >> 16))

    def table_size_for(capacity: int) -> int:
        return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)

    size, members = 16, {}
    for group in partitions:
        unique = list(dict.fromkeys(group))
        if unique:  # addAll's sizeHint
            size = max(size, table_size_for(int((len(unique) + len(members)) / 0.75)))
        for element in unique:
            if len(members) + 1 >= int(size * 0.75):
                size *= 2
            members.setdefault(element, improved(*element))
    return sorted(members, key=lambda element: (members[element] & (size - 1), members[element]))


def transaction_log_texts(key: bytes | None, value: bytes | None, offset: int) -> tuple[str, str | None]:
    """The key and payload ``kafka-dump-log.sh --transaction-log-decoder`` (Kafka 3.9) prints.
    Where Kafka's reader throws (and the tool dies) this raises :class:`CorruptData`."""
    if key is None or len(key) < 2:
        raise CorruptData(f"record at offset {offset} has no transaction log key version")
    key = bytes(key)
    version = INT16.parse(key[:2])
    if version != 0:
        return f"unknown::version={version}", None
    try:
        transactional_id = read_message(TRANSACTION_LOG.key_parser, key, 2, 0)[0]["transactionalId"]
        key_text = f"transaction_metadata::transactionalId={transactional_id}"
        if value is None:
            return key_text, "<DELETE>"
        value = bytes(value)
        value_version = INT16.parse(value[:2]) if len(value) >= 2 else None
        if value_version not in (0, 1):
            raise CorruptData(f"Unknown version {value_version} from the transaction log message value")
        data = read_message(TRANSACTION_LOG.value_parser, value, 2, value_version)[0]
    except JavaFailure as e:
        raise CorruptData(f"transaction log record at offset {offset}: {e.text}") from None
    state_id = data["transactionStatus"]
    if not 0 <= state_id < len(TRANSACTION_STATES):
        raise CorruptData(f"Unknown transaction state id {state_id} at offset {offset}")
    state = TRANSACTION_STATES[state_id]
    groups = [] if state == "Empty" else [[(entry["topic"], p) for p in entry["partitionIds"]]
                                           for entry in data["transactionPartitions"] or ()]
    partitions = ",".join(f"{topic}-{partition}" for topic, partition in _scala_hash_set_order(groups))
    return key_text, (f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},state={state},"
                      f"partitions=[{partitions}],txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
                      f"txnTimeoutMs={data['transactionTimeoutMs']}")


def transaction_log_json_texts(key: bytes | None, value: bytes | None, offset: int) -> tuple[str, str | None]:
    """The key and payload ``kafka-dump-log.sh --transaction-log-decoder`` prints from Kafka 4.0
    on: DumpLogSegments' ``CoordinatorRecordMessageParser`` over the transaction coordinator's
    serde, ``{"type":"0","data":{"transactionalId":...}}`` and
    ``{"version":"<v>","data":{<TransactionLogValue as JSON>}}`` (``<DELETE>`` for a tombstone,
    ``Unknown record type N at offset O, skipping.`` for a key version other than 0)."""
    return coordinator_dump_texts(decode_transaction_record, "the specified decoder", "version", key, value, offset)


# --------------------------------------------------------------------------
# __share_group_state
# --------------------------------------------------------------------------


def decode_share_state_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """One ``__share_group_state`` record; :class:`CoordinatorRecordError` where Kafka's serde throws."""
    return decode_coordinator_record(SHARE_RECORD_TYPES, key, value)


def share_group_state_texts(key: bytes | None, value: bytes | None, offset: int) -> tuple[str, str | None]:
    """The key and payload ``kafka-dump-log.sh --share-group-state-decoder`` (Kafka 3.9) prints."""
    return coordinator_dump_texts(decode_share_state_record, "share group state topic decoder", "type",
                                  key, value, offset)


# --------------------------------------------------------------------------
# __remote_log_metadata
# --------------------------------------------------------------------------


def decode_remote_log_metadata(value: bytes | None) -> tuple[int, int, dict]:
    """``(record type, version, message)`` of one value; :class:`ApiMessageError` where Kafka's serde throws."""
    return read_api_message(value, _REMOTE_PARSERS)


def _topic_id_partition(entry: dict) -> str:
    return f"{entry['id']}:{entry['name']}-{entry['partition']}"  # TopicIdPartition.toString


def _segment_id(entry: dict) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(entry['topicIdPartition'])}, id={entry['id']}}}"


def _leader_epochs(entries: list) -> str:
    # a TreeMap<Integer, Long>: sorted by epoch, a later entry for the same epoch wins
    epochs = {entry["leaderEpoch"]: entry["offset"] for entry in entries}
    return "{" + ", ".join(f"{epoch}={epochs[epoch]}" for epoch in sorted(epochs)) + "}"


def _custom_metadata(raw: bytes | None) -> str:
    return "Optional.empty" if raw is None else f"Optional[CustomMetadata{{{len(raw)} bytes}}]"


def _state(states: tuple, state_id: int) -> str:
    if not 0 <= state_id < len(states):
        raise ApiMessageError(f"Unknown state id {state_id}")
    return states[state_id]


def remote_log_metadata_text(type_id: int, data: dict) -> str:
    """The ``toString()`` of the object RemoteLogMetadataSerde makes of a record."""
    if type_id == 0:
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(data['remoteLogSegmentId'])}, "
                f"startOffset={data['startOffset']}, endOffset={data['endOffset']}, brokerId={data['brokerId']}, "
                f"maxTimestampMs={data['maxTimestampMs']}, eventTimestampMs={data['eventTimestampMs']}, "
                f"segmentLeaderEpochs={_leader_epochs(data['segmentLeaderEpochs'])}, "
                f"segmentSizeInBytes={data['segmentSizeInBytes']}, customMetadata={_custom_metadata(data['customMetadata'])}, "
                f"state={_state(REMOTE_SEGMENT_STATES, data['remoteLogSegmentState'])}}}")
    if type_id == 1:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(data['remoteLogSegmentId'])}, "
                f"customMetadata={_custom_metadata(data['customMetadata'])}, "
                f"state={_state(REMOTE_SEGMENT_STATES, data['remoteLogSegmentState'])}, "
                f"eventTimestampMs={data['eventTimestampMs']}, brokerId={data['brokerId']}}}")
    if type_id == 2:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(data['topicIdPartition'])}, "
                f"state={_state(REMOTE_PARTITION_DELETE_STATES, data['remotePartitionDeleteState'])}, "
                f"eventTimestampMs={data['eventTimestampMs']}, brokerId={data['brokerId']}}}")
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={data['segmentId']}, startOffset={data['startOffset']}, "
            f"endOffset={data['endOffset']}, maxTimestampMs={data['maxTimestampMs']}, "
            f"segmentLeaderEpochs={_leader_epochs(data['segmentLeaderEpochs'])}, "
            f"segmentSizeInBytes={data['segmentSizeInBytes']}, customMetadata={_custom_metadata(data['customMetadata'])}, "
            f"state={_state(REMOTE_SEGMENT_STATES, data['remoteLogSegmentState'])}}}")


def remote_log_metadata_payload(value: bytes | None, offset: int) -> str:
    """The payload ``kafka-dump-log.sh --remote-log-metadata-decoder`` prints for a record at ``offset``."""
    try:
        type_id, _version, data = decode_remote_log_metadata(value)
        return remote_log_metadata_text(type_id, data)
    except ApiMessageError as e:
        return f"Error at offset {offset}, skipping. {e.message}"
