"""The shape of every command's JSON output, declared once, and the JSON Schemas made from it.

Each ``ops`` function that a command prints is annotated with one of these
types; ``python -m segtool.ops.output_schema docs/schemas`` writes one JSON
Schema per command from them, and tests/test_json_output.py validates real
output of every command against those files (and checks they are current).

Objects listed in ``OPEN`` carry more fields than declared (a verify result
has per-format fields, a RocketMQ message every header field); every object,
open or not, has snake_case property names.  ``properties`` maps (a RocketMQ
message's properties) are user data and keep their own names.
"""


import json
import sys
import types
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints, is_typeddict

from segtool.findings import FindingKind, Severity
from segtool.formats.outcomes import DamageReason, WalkEnd
from segtool.formats.record_shapes import annotations
from segtool.kafka.record_shape import BATCH_FIELDS, RECORD_FIELDS
from segtool.kafka.replication import TruncationRule
from segtool.rocketmq.message_shape import MESSAGE_FIELDS

SNAKE_CASE = "^[a-z][a-z0-9_]*$"


# -- shared pieces --------------------------------------------------------------------------

# every finding kind (segtool.findings.FindingKind), so the schemas list them
FindingCode = Literal[tuple(kind.code for kind in FindingKind)]  # type: ignore[valid-type]
SeverityName = Literal[tuple(severity.value for severity in Severity)]  # type: ignore[valid-type]
# how a walk of a file ends and why a range is damaged (segtool.formats.outcomes)
WalkEndName = Literal[tuple(end.value for end in WalkEnd)]  # type: ignore[valid-type]
DamageReasonName = Literal[tuple(reason.value for reason in DamageReason)]  # type: ignore[valid-type]


class Problem(TypedDict):
    # a segtool.findings.Finding as it is printed (Finding.as_dict): reports carry the Finding itself
    kind: FindingCode
    severity: SeverityName
    byte_offset: int | None
    offset: int | None  # the Kafka offset or RocketMQ physical offset the finding concerns, where known
    message: str


class Written(TypedDict):
    """A file a command wrote, and what it replaced (never lost: the backup holds it)."""
    path: str
    size: int
    allocated_bytes: int
    sha256: str
    backup: str | None
    replaced_sha256: str | None
    unchanged: bool  # the file held these very bytes already: left as it was, no backup


class PathReason(TypedDict):
    path: str
    reason: str


class Header(TypedDict):
    key: str
    value: str | None
    value_b64: str | None


# -- dump: one item per line ----------------------------------------------------------------

# a batch, a record and a CommitLog message: their fields are their tables' (``Field.json``), declared
# once in kafka/record_shape.py and rocketmq/message_shape.py
KafkaBatchItem = TypedDict("KafkaBatchItem", {  # type: ignore[misc]
    "kind": Literal["batch"], **annotations(BATCH_FIELDS), "file": str})
KafkaBatchItem.__doc__ = "A Kafka batch (a legacy message: the fields every batch has), in dump and carve."

KafkaRecordItem = TypedDict("KafkaRecordItem", {  # type: ignore[misc]
    "kind": Literal["record"], **annotations(RECORD_FIELDS), "file": str})
KafkaRecordItem.__doc__ = "A Kafka record, the same whichever command found it (dump, lookup by offset, time or key)."


class ShownRecordItem(TypedDict):
    """A Kafka record shown with --key-format/--value-format/--skip-record-metadata: key and value
    rendered (``*_format`` the format used; ``*_schema_id`` when schema-registry framed, the
    rendering then of the payload after the 5 framing bytes); no metadata when skipped."""
    kind: Literal["record"]
    batch_position: NotRequired[int]
    offset: NotRequired[int]
    timestamp: NotRequired[int]
    key_size: NotRequired[int]
    value_size: NotRequired[int]
    sequence: NotRequired[int]
    headers: NotRequired[list[Header]]
    control_type: NotRequired[str]
    crc: NotRequired[int]
    crc_valid: NotRequired[bool]
    key: str | None
    key_format: Literal["text", "hex", "base64", "json"] | None
    key_schema_id: NotRequired[int]
    value: str | None
    value_format: Literal["text", "hex", "base64", "json"] | None
    value_schema_id: NotRequired[int]
    file: NotRequired[str]


class MessageDispatch(TypedDict):
    """What ``CommitLog.checkMessageAndReturnSize`` hands the dispatcher (ConsumeQueue and index), or why not."""
    success: bool
    msg_size: int  # -1 when refused
    tags_code: NotRequired[int]
    keys: NotRequired[str | None]
    uniq_key: NotRequired[str | None]
    commit_log_offset: NotRequired[int]
    reason: NotRequired[str]


RocketMQMessageItem = TypedDict("RocketMQMessageItem", {  # type: ignore[misc]
    "kind": Literal["message"], **annotations(MESSAGE_FIELDS),
    # lookup answers only (docs/rocketmq-lookups.md)
    "mqadmin": NotRequired["MqadminMessage"],
    "queried_id": NotRequired[str],
    "msg_id": NotRequired[str],
    "body_text": NotRequired[str | None],
    "body_charset": NotRequired[str],
    "index_state": NotRequired[Literal["indexed", "reindexed_by_recovery", "dispatched_by_recovery",
                                       "index_file_dropped", "after_recovery_cut", "not_dispatched"]],
    "index_state_reason": NotRequired[str],
})
RocketMQMessageItem.__doc__ = "A CommitLog message, the same in dump, carve and lookup answers."


class MqadminMessage(TypedDict):
    """``QueryMsgByIdSubCommand.printMsg``'s fields, snake_case (``message_body_path``: FILE@BYTE+LENGTH
    of the body in the CommitLog; mqadmin writes a copy to /tmp/rocketmq/msgbodys instead)."""
    offset_msg_id: str
    msg_id: str
    topic: str
    tags: str | None
    keys: str | None
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    system_flag: int
    properties: dict[str, str]
    properties_text: str
    message_body_path: str


class OffsetMsgIdFields(TypedDict):
    """``MessageDecoder.decodeMessageId``."""
    store_host: str
    store_ip: str
    store_port: int
    commit_log_offset: int


class UniqKeyFields(TypedDict):
    """What ``MessageClientIDSetter`` lets one read back from a unique key."""
    client_ip: str
    pid: int
    class_loader_hash: int
    ms_since_month_start: int
    counter: int
    client_utc_offset_minutes: NotRequired[int | None]
    created_timestamp: NotRequired[int | None]


class MsgIdAnswer(TypedDict):
    """One id of ``lookup --msg-id``: which kind it turned out to be and where its messages are."""
    msg_id: str
    id_kind: Literal["offset_msg_id", "unique_key"] | None
    searched_by: Literal["commitlog_offset", "index", "commitlog_scan"] | None
    offset_msg_id: OffsetMsgIdFields | None
    unique_key: UniqKeyFields | None
    phy_offsets: list[int]
    mqadmin_phy_offset: NotRequired[int]
    notes: list[str]


class QueryMsgByKeyRow(TypedDict):
    """``mqadmin queryMsgByKey``'s row (#Message ID, #QID, #Offset) and the message's physical offset."""
    msg_id: str
    queue_id: int
    queue_offset: int
    phy_offset: int


class PrintMsgQueue(TypedDict):
    """``mqadmin printMsg``'s per-queue header: min and max offset, messages printed."""
    queue_id: int
    min_offset: int
    max_offset: int
    messages: int


class OtherItem(TypedDict):
    """Index entries, snapshots, checkpoints, ConsumeQueue units, IndexFile entries, ends of files, a Kafka
    log dir's own files (``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``) and a RocketMQ
    broker's ``config/*.json`` (its content as one JSON text: its keys are topics and groups)."""
    kind: Literal["offset_index_entry", "time_index_entry", "aborted_txn", "producer_snapshot", "producer",
                  "checkpoint", "checkpoint_entry", "partition_metadata", "cq_unit", "index_header", "index_entry",
                  "error", "zero_tail", "trailing_bytes", "blank_end", "meta_properties", "quorum_state",
                  "clean_shutdown", "rocketmq_config"]
    file: str


class RocketMQ5Item(TypedDict):
    """RocketMQ 5.x store files (docs/formats.md): BatchConsumeQueue and compaction queue units and a sparse
    queue's end marker, timer log units, used timer wheel slots, the timer checkpoint and metrics (one
    line per topic), DLedger entry headers (each followed by its ``message`` item) and index entries, the
    DLedger checkpoint, compaction positions, and the store's lock and abort markers."""
    kind: Literal["bcq_unit", "end_position", "timer_log_unit", "timer_wheel_slot", "timer_checkpoint",
                  "timer_metrics", "timer_metric", "dledger_entry", "dledger_index_entry", "dledger_checkpoint",
                  "compaction_position", "lock_marker", "abort_marker"]
    file: str


class DamagedRangeItem(TypedDict):
    """Bytes that hold no valid batch or message, between valid ones (``engine.salvage.DamagedRange``):
    the offsets (Kafka) or queue offsets (RocketMQ) lost are inferred from the valid neighbours, null where
    a side has none."""
    kind: NotRequired[Literal["damaged_range"]]
    file: str
    first_byte: int
    last_byte: int
    length: int
    reason: DamageReasonName
    message: str
    first_offset: int | None
    last_offset: int | None
    offsets_lost: int | None
    topic: NotRequired[str | None]
    queue_id: NotRequired[int | None]
    physical_offset: NotRequired[int | None]




# -- verify ---------------------------------------------------------------------------------

class KafkaSalvage(TypedDict):
    """What reading past damage keeps of the bytes Kafka's recovery cuts (valid batches only)."""
    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None


class RocketMQSalvage(TypedDict):
    """What reading past damage keeps of the bytes RocketMQ's recovery cuts (messages whose body CRC holds)."""
    messages: int
    first_phy_offset: int | None
    last_phy_offset: int | None


class Recovery(TypedDict):
    valid_bytes: int
    bytes_lost: int
    records_lost: NotRequired[int]  # Kafka: what recovery drops, the offsets of the dropped ranges
    records_salvageable: NotRequired[int]  # Kafka: of those, in batches whose checksum holds (salvage writes them)
    records_gone: NotRequired[int]  # Kafka: of those, lost for good
    messages_lost: NotRequired[int]  # RocketMQ: this file's share of what recovery drops (engine.salvage.StoreRecoveryLoss)
    messages_salvageable: NotRequired[int]  # RocketMQ: of those, whose body CRC holds (salvage writes them)
    messages_gone: NotRequired[int]  # RocketMQ: of those, lost for good
    log_end_offset: NotRequired[int]  # Kafka, the segment a partition's load cuts: the log end after the load
    stop_reason: str | None
    salvage: NotRequired[KafkaSalvage | RocketMQSalvage | None]


class VerifiedFile(TypedDict):
    path: str
    kind: str
    status: Literal["ok", "problems", "unreadable", "skipped"]
    size: NotRequired[int]
    sha256: NotRequired[str | None]
    problems: list[Problem]
    reason: NotRequired[str]
    recovery: NotRequired[Recovery | None]


class VerifySummary(TypedDict):
    files: int
    ok: int
    problems: int
    unreadable: int
    skipped: int


class VerifyReport(TypedDict):
    files: list[VerifiedFile]
    summary: VerifySummary


# -- lookup ---------------------------------------------------------------------------------

class ReadStopped(TypedDict):
    """Where reading a segment stopped at damage: what came before it was read, nothing after."""
    file: str
    byte: int | None
    message: str


class RecoveryCut(TypedDict):
    """Where Kafka's load (LogLoader.recoverLog) truncates the partition: the first offset it drops."""
    segment: str
    byte: int
    offset: int


class StoreRecoveryCut(TypedDict):
    """Where RocketMQ's CommitLog recovery (recoverNormally / recoverAbnormally) cuts the CommitLog."""
    file: str
    byte: int
    phy_offset: int


class QueueOffsetsGone(TypedDict):
    topic: str
    queue_id: int
    first_offset: int
    last_offset: int


class StoreBeyondRecovery(TypedDict):
    """What RocketMQ's recovery drops (engine.salvage.StoreRecoveryLoss): ``messages``, ``salvageable``
    of them whose body CRC holds, ``gone`` the rest (their queue offsets listed)."""
    messages: int
    salvageable: int
    gone: int
    bytes: int
    deleted_files: list[str]
    queue_offsets_gone: list[QueueOffsetsGone]


class BeyondRecovery(TypedDict):
    """What still lies on disk past the recovery cut (dump and salvage reach it; a fetch does not):
    ``records`` dropped, ``salvageable`` of them in batches whose checksum holds, ``gone`` the rest."""
    records: int
    salvageable: int
    gone: int
    first_offset: int | None
    last_offset: int | None
    bytes: int
    deleted_segments: list[str]


class LookupAnswer(TypedDict):
    """Every lookup answer: the fields of its method, the record(s) or message(s) it found, notes."""
    recovery_cut: NotRequired[RecoveryCut | StoreRecoveryCut]  # Kafka --offset/--timestamp, RocketMQ --queue-id/--key
    damage: NotRequired[list[ReadStopped]]  # Kafka --key: segments searched only up to damage
    beyond_recovery: NotRequired[BeyondRecovery | StoreBeyondRecovery]
    after_recovery_cut: NotRequired[bool]  # RocketMQ --queue-id/--key: a message the answer names lies past the cut (recovery drops it)
    record: NotRequired[KafkaRecordItem | ShownRecordItem]
    records: NotRequired[list[KafkaRecordItem | ShownRecordItem]]
    message: NotRequired[RocketMQMessageItem | None]
    messages: NotRequired[list[RocketMQMessageItem]]
    notes: NotRequired[list[str]]
    ids: NotRequired[list[MsgIdAnswer]]  # --msg-id
    mqadmin_rows: NotRequired[list[QueryMsgByKeyRow]]  # RocketMQ --key
    mqadmin: NotRequired["MqadminMessage"]  # RocketMQ queue lookup: queryMsgByOffset's view of the message
    unindexed_messages: NotRequired[list[RocketMQMessageItem]]  # RocketMQ --key
    queues: NotRequired[list[PrintMsgQueue]]  # --print-msg


# -- rebuild-index, trim, index-keys --------------------------------------------------------

class RebuiltSegment(TypedDict):
    log: str
    base_offset: int
    log_sha256: str | None
    size: int
    valid_bytes: int
    bytes_kafka_would_truncate: int
    stop_reason: str | None
    stop_message: str | None
    offset_index_entries: int
    time_index_entries: int
    aborted_transactions: int
    written: list[Written]


class KafkaRebuildReport(TypedDict):
    index_interval_bytes: int
    segments: list[RebuiltSegment]
    skipped: list[PathReason]
    unreadable: list[PathReason]  # entries that cannot be read: named, the rest done (exit 2)
    stores: NotRequired[list["RocketMQRebuildReport"]]  # RocketMQ stores found beside the partitions


class RebuiltIndexFile(Written):
    name: str
    entries: int
    index_count: int
    hash_slot_count: int
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int


class InputFile(TypedDict):
    path: str
    size: int
    sha256: str | None


class RocketMQRebuildReport(TypedDict):
    store: str
    commitlog: str
    index_dir: str
    in_place: bool
    geometry: dict[str, Any]
    naming: str
    files: list[RebuiltIndexFile]
    backup_dir: str | None  # beside index_dir: the files replaced by other bytes or removed, moved there; None: none
    removed: list[str]  # the old files of index_dir the rebuild made no new one for (moved to backup_dir)
    notes: list[str]
    inputs: list[InputFile]
    dispatch: dict[str, Any]
    build: dict[str, Any]
    recovery_cut: StoreRecoveryCut | None  # where the store's recovery cuts the CommitLog (exit 1), None: nowhere


class RocketMQRebuildReports(TypedDict):
    stores: list[RocketMQRebuildReport]


RebuildOutput = Union[KafkaRebuildReport, RocketMQRebuildReports]


class TrimmedFile(TypedDict):
    path: str
    sha256: str
    size: int
    valid_entries: int
    trimmed_size: int
    bytes_reclaimed: int
    written: Written | None


class TrimReport(TypedDict):
    files: list[TrimmedFile]
    skipped: list[PathReason]
    unreadable: list[PathReason]  # entries that cannot be read: named, the rest done (exit 2)
    bytes_reclaimed: int


class IndexKeysReport(TypedDict):
    index_dir: str
    records_indexed: int
    index_file: Written
    damage: list[ReadStopped]  # segments whose records were indexed only up to damage (exit 1)


# -- scan -----------------------------------------------------------------------------------

class Dataset(TypedDict):
    path: str  # the hive-partitioned dataset: OUT/topic=…/partition=…/part-….parquet
    rows: int
    files: int
    partition_directories: int
    rows_by_broker: dict[str, int]  # kafka, rocketmq: only the brokers whose files were among the inputs
    report: str  # OUT/_segtool_report.json, a name dataset readers skip


class ScanInputs(TypedDict):
    kafka_partitions: int
    kafka_segments: int
    rocketmq_stores: int
    commitlog_files: int
    bytes: int
    files: list[InputFile]
    skipped: list[PathReason]
    unreadable: list[PathReason]


class ScanProblem(TypedDict):
    kind: FindingCode
    severity: SeverityName
    byte_offset: int | None
    offset: int | None
    message: str
    path: str
    split: int


class ScanCommit(TypedDict):
    """How the dataset was published: the run's staging folder name (OUT/_temporary/<run>), the tasks kept
    from an interrupted run (--resume), the staging folders of interrupted runs removed first, the manifest."""
    run: str
    resumed_tasks: int
    removed_staging: list[str]
    manifest: str


class TaskRetry(TypedDict):
    """A task tried again because its worker died (the OOM killer's SIGKILL, a crash) or, on Spark, it failed."""
    task: str | None  # the task's file (and byte range of a split); null: the worker died between tasks
    attempt: int  # the attempt this retry makes: 2 for the first retry
    host: str
    pid: int | None  # the local pool's worker that died; null on Spark
    executor: NotRequired[str]  # Spark: the executor the failed attempt ran on
    reason: str  # how the worker ended, or Spark's error of the failed attempt


class ScanReport(TypedDict):
    out: str
    engine: str
    master: str | None
    dataset: Dataset
    inputs: ScanInputs
    tasks: int
    split_bytes: int
    partitions: list[dict[str, Any]]
    stores: list[dict[str, Any]]
    problems: list[ScanProblem]
    notes: list[str]
    commit: ScanCommit
    task_results: list[dict[str, Any]]
    retries: list[TaskRetry]  # each task tried again, in the order the retries were made
    timing: dict[str, float | int | None]


class ScanCheck(TypedDict):
    """`scan --check DIR`: complete when _SUCCESS holds a manifest and the parts a reader would read are exactly
    its parts, each with its size, sha256 and rows; rows and files are the manifest's (null rows: none)."""
    out: str
    complete: bool
    rows: int | None
    files: int
    problems: list[PathReason]
    staging: list[str]


# -- salvage --------------------------------------------------------------------------------

class OffsetRange(TypedDict):
    first_offset: int
    last_offset: int | None  # null: damage at the end of the log, no neighbour says where the offsets ended


class QueueOffsetRange(TypedDict):
    topic: str
    queue_id: int
    first_offset: int
    last_offset: int


class SalvageConflict(TypedDict):
    """A valid batch or message not written back (Kafka) or not queued (RocketMQ): its offsets overlap one
    kept, or no segment can hold it."""
    file: str
    position: int
    first_offset: int
    last_offset: int
    reason: str
    topic: NotRequired[str]
    queue_id: NotRequired[int]


class CopiedFile(TypedDict):
    source: str
    written: Written


class SalvagedSegment(TypedDict):
    log: str  # the input segment whose base offset names the output segment
    base_offset: int
    batches_written: int
    bytes_written: int
    offset_index_entries: int
    time_index_entries: int
    aborted_transactions: int
    written: list[Written]


class SalvagedPartition(TypedDict):
    directory: str
    out_directory: str
    segments: list[SalvagedSegment]
    batches_kept: int
    batches_failed_crc: int
    duplicates_dropped: int  # exact copies of a kept batch
    conflicts: list[SalvageConflict]
    damaged_ranges: list[DamagedRangeItem]
    offset_ranges_kept: list[OffsetRange]
    offset_ranges_lost: list[OffsetRange]
    copied: list[CopiedFile]


class SalvagedStore(TypedDict):
    store: str
    out_directory: str
    commitlog_file_size: int
    consume_queue_units_per_file: int
    index_geometry: dict[str, Any]
    messages_kept: int
    messages_failed_crc: int
    messages_not_queued: int  # prepared or rolled-back transactions: RocketMQ queues neither
    consume_queue_units: int
    index_entries: int
    queue_offsets_lost: list[QueueOffsetRange]
    conflicts: list[SalvageConflict]
    damaged_ranges: list[DamagedRangeItem]
    messages_parquet: Written
    written: list[Written]
    notes: list[str]


class SalvageSummary(TypedDict):
    damaged_ranges: int
    bytes_damaged: int
    batches_kept: int
    batches_lost: int
    records_lost: int  # Kafka: the offsets offset_ranges_lost lists (= verify's records_gone, inspect's)
    messages_kept: int
    messages_lost: int  # RocketMQ: the queue offsets queue_offsets_lost lists (= verify's messages_gone, inspect's)
    nothing_lost: bool


class SalvageReport(TypedDict):
    out: str
    index_interval_bytes: int
    inputs: list[InputFile]
    partitions: list[SalvagedPartition]
    stores: list[SalvagedStore]
    skipped: list[PathReason]
    unreadable: list[PathReason]  # entries that cannot be read: named, the rest done (exit 2)
    summary: SalvageSummary


# -- carve ----------------------------------------------------------------------------------

class SearchTotals(TypedDict):
    """What the byte search looked at (``engine.carving.SearchCounts``): each checksum computed is a
    1-in-2^32 chance of a false find, so ``expected_false_finds`` is checksums / 2^32."""
    bytes_searched: int
    candidates: int  # positions whose header bytes passed the quick tests and were decoded
    checksums: int
    finds: int
    expected_false_finds: float


class CarvedInput(TypedDict):
    path: str
    size: int
    sha256: str | None
    kafka_batches: int
    kafka_records: int
    rocketmq_messages: int
    search: SearchTotals


class ByteSpan(TypedDict):
    file: str
    first_byte: int
    last_byte: int


class CarveRun(TypedDict):
    """Finds that belong together: Kafka batches whose offsets continue (or whose producer's sequence
    does), a RocketMQ topic and queue; offsets are Kafka offsets or RocketMQ queue offsets."""
    run_id: int
    format: Literal["kafka", "rocketmq"]
    first_offset: int
    last_offset: int
    count: int  # batches (Kafka) or messages (RocketMQ)
    records: int
    offsets_missing: int
    topic: str | None
    queue_id: int | None
    spans: list[ByteSpan]


class FindPlace(TypedDict):
    file: str
    position: int


class UnplacedFind(TypedDict):
    """A find in no run (it is still in the JSON Lines and Parquet outputs, with a null run_id)."""
    file: str
    position: int
    size: int
    format: Literal["kafka", "rocketmq"]
    reason: Literal["undecodable", "duplicate", "offset_conflict"]
    message: str
    first_offset: int | None
    last_offset: int | None
    copy_of: FindPlace | None  # duplicate: the first copy found
    conflicting_run: int | None


class UnplacedCounts(TypedDict):
    undecodable: int
    duplicate: int
    offset_conflict: int


class CarveSummary(TypedDict):
    finds: int
    placed: int
    unplaced: int
    unplaced_by_reason: UnplacedCounts
    runs: int
    kafka_batches: int
    kafka_records: int
    rocketmq_messages: int


class CarveReport(TypedDict):
    out: str
    inputs: list[CarvedInput]
    unreadable: list[PathReason]  # entries that cannot be read: named, the rest done (exit 2)
    search: SearchTotals
    runs: list[CarveRun]
    unplaced: list[UnplacedFind]  # the first 1000 in find order (summary counts them all)
    written: list[Written]
    summary: CarveSummary


# -- inspect --------------------------------------------------------------------------------

class KeyValue(TypedDict):
    key: str
    value: str


class MetaPropertiesReport(TypedDict):
    version: int
    cluster_id: str | None
    node_id: int | None  # node.id (version 1) or broker.id (version 0)
    directory_id: str | None
    other: list[KeyValue]  # keys Kafka does not define


class CleanShutdown(TypedDict):
    marker_present: bool  # .kafka_cleanshutdown
    broker_epoch: int | None


class CheckpointEntry(TypedDict):
    topic: str
    partition: int
    offset: int


class OffsetCheckpoint(TypedDict):
    name: str
    path: str
    entries: list[CheckpointEntry]


class InspectedSegment(TypedDict):
    path: str
    base_offset: int
    size: int
    first_offset: int | None
    next_offset: int  # as the files are (LogSegment.readNextOffset)
    first_timestamp: int | None
    max_timestamp: int | None


class LeaderEpoch(TypedDict):
    epoch: int
    start_offset: int


class ProducerSnapshotSummary(TypedDict):
    offset: int
    producers: int | None  # None: the snapshot does not parse


class KraftSnapshotSummary(TypedDict):
    path: str
    end_offset: int
    epoch: int
    batches: int
    records: int


class QuorumStateReport(TypedDict):
    leader_id: int
    leader_epoch: int
    voted_id: int
    applied_offset: int
    current_voters: list[int]
    data_version: int


class PartitionCheckpoints(TypedDict, total=False):
    recovery_point: int | None
    replication_offset: int | None
    log_start_offset: int | None
    cleaner_offset: int | None


class RecoveredSegment(TypedDict):
    path: str
    base_offset: int
    because: Literal["unclean_shutdown", "missing_offset_index", "corrupt_txn_index"]
    detail: str | None
    valid_bytes: int
    bytes_truncated: int
    next_offset: int
    offset_index_entries: int  # what recovery writes
    time_index_entries: int
    stop_reason: str | None
    stop_message: str | None


class Truncation(TypedDict):
    """The load's first cut (loadSegmentFiles' or recoverLog's) and what every cut drops together."""
    segment: str
    byte_offset: int
    offset: int  # the first offset the cut drops
    dropped_until: int  # offsets [offset, dropped_until) lie on disk past the cut (what recovery drops)
    bytes_dropped: int  # the truncated tail and the segments deleted after it
    records_dropped: int  # records there (engine.salvage.RecoveryLoss): records_salvageable + records_gone
    records_salvageable: int  # of those, in batches whose checksum holds (what salvage writes back)
    records_gone: int


class KraftSnapshotDeleted(TypedDict):
    path: str
    end_offset: int
    epoch: int
    # recoverSnapshots: partial, marked_deleted, below_log_start; truncateToLatestSnapshot: before_latest
    reason: Literal["partial", "marked_deleted", "below_log_start", "before_latest"]


class KraftSnapshotPlan(TypedDict):
    """KafkaMetadataLog.apply on the loaded metadata log: recoverSnapshots, then truncateToLatestSnapshot."""
    log_latest_epoch: int  # UnifiedLog.latestEpoch after the load (0 without one)
    log_end_offset: int  # before truncateToLatestSnapshot
    latest_snapshot: str | None  # the latest kept snapshot (OffsetAndEpoch order: epoch, then end offset)
    latest_epoch: int | None  # its epoch
    truncates_to: int | None  # the offset the log is truncated fully to, when it is
    deleted: list[KraftSnapshotDeleted]
    failure: str | None  # why the load fails, when it does


class SplitSegment(TypedDict):
    """A segment LocalLog.splitOverflowedSegment writes from one whose offsets overflow its base."""
    path: str
    base_offset: int
    split_from: str
    first_byte: int  # where its bytes start in the overflowed segment
    size: int


class StartupPlan(TypedDict):
    loaded_by: Literal["LogManager", "KafkaMetadataLog"]
    clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    recovery_skipped_for_deletion: bool
    split_segments: list[SplitSegment]
    recovered_segments: list[RecoveredSegment]
    truncated_at: Truncation | None
    deleted_segments: list[str]
    deletes_every_segment: bool
    log_end_offset: int
    new_recovery_point: int
    new_log_start_offset: int
    leader_epochs_dropped: list[LeaderEpoch]
    leader_epoch_start_moved_to: LeaderEpoch | None
    producer_snapshots_deleted: list[int]
    kraft_snapshots: KraftSnapshotPlan | None  # the metadata log's
    notes: list[str]


class InspectedPartition(TypedDict):
    directory: str
    topic: str
    partition: int
    state: Literal["live", "delete", "future", "stray", "metadata"]
    topic_id: str | None
    segments: list[InspectedSegment]
    log_bytes: int
    bytes: int
    files: list[str]  # every file of the directory, by name: what the figures are made of
    first_offset: int | None
    log_end_offset: int | None
    first_timestamp: int | None
    max_timestamp: int | None
    leader_epochs: list[LeaderEpoch]
    producer_snapshots: list[ProducerSnapshotSummary]
    kraft_snapshots: list[KraftSnapshotSummary]
    quorum_state: QuorumStateReport | None
    checkpoints: PartitionCheckpoints
    plan: StartupPlan
    problems: list[Problem]


class InspectedLogDir(TypedDict):
    path: str
    meta_properties: MetaPropertiesReport | None
    clean_shutdown: CleanShutdown
    checkpoints: list[OffsetCheckpoint]
    partitions: list[InspectedPartition]
    files: list[str]  # every file at the top of the log dir, by name
    other_files: list[str]
    unreadable: list[PathReason]
    problems: list[Problem]


class InspectSummary(TypedDict):
    log_dirs: int
    partitions: int
    partitions_recovered: int
    partitions_truncated: int
    errors: int
    notes: int
    unreadable: int


class InspectReport(TypedDict):
    log_dirs: list[InspectedLogDir]
    summary: InspectSummary


# -- inspect a RocketMQ store (docs/inspect.md) ---------------------------------------------------

class StoreShutdown(TypedDict):
    abort_file: bool  # <root>/abort: created at start, deleted by a clean shutdown
    lock_file: bool  # <root>/lock: locked while a broker runs; it stays after shutdown
    lock_content: str | None
    last_exit: Literal["normal", "abnormal"]  # DefaultMessageStore.isTempFileExist


class StoreCheckpointReport(TypedDict):
    path: str
    size: int
    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    min_timestamp: int  # StoreCheckpoint.getMinTimestamp: min(physic, logics) - 3 s, at least 0
    last_message_store_timestamp: int | None  # the newest message in the CommitLog
    last_unit_store_timestamp: int | None  # the newest message a ConsumeQueue's last unit points at
    last_index_end_timestamp: int | None  # the newest IndexFile's endTimestamp


class InspectedCommitLogFile(TypedDict):
    name: str
    start_offset: int
    size: int
    messages: int
    first_phy_offset: int | None
    last_phy_offset: int | None
    first_store_timestamp: int | None
    last_store_timestamp: int | None
    end_kind: WalkEndName  # how the walk of the file ended: end_of_file, blank, zero_tail, or the damage
    end_file_offset: int
    data_end: int  # one past the last byte holding data in the file


class StoredMessageRef(TypedDict):
    phy_offset: int
    store_timestamp: int
    topic: str
    queue_id: int
    queue_offset: int
    file: str


class InspectedCommitLog(TypedDict):
    directory: str
    configured_file_size: int | None  # mappedFileSizeCommitLog from the names' spacing
    files: list[InspectedCommitLogFile]
    names_continuous: bool
    messages: int
    min_offset: int | None
    data_end_phy_offset: int | None
    last_message: StoredMessageRef | None


class InspectedQueueFile(TypedDict):
    name: str
    size: int
    units: int  # units with commitLogOffset >= 0 and size > 0


class QueueAfterStart(TypedDict):
    """One ConsumeQueue after the broker's load (recovery) and start (re-dispatch)."""
    units_dropped: int
    files_deleted: list[str]
    phantom_units: int  # a zero first unit truncateDirtyLogicFiles keeps in an empty last file
    units_added_by_recovery: int
    units_added_by_reput: int
    min_offset: int
    max_offset_after_load: int
    max_physic_offset_after_load: int
    max_offset: int
    max_physic_offset: int


class InspectedConsumeQueue(TypedDict):
    topic: str
    queue_id: int
    directory: str | None  # None: a queue the re-dispatch creates
    files: list[InspectedQueueFile]
    units: int
    max_offset: int  # as ConsumeQueue.recover reads the files
    max_physic_offset: int
    after_start: QueueAfterStart | None  # None when the store does not load


class InspectedIndexFile(TypedDict):
    name: str
    size: int
    hash_slot_num: int | None  # inferred (the header does not record it); None when it cannot be
    index_num: int | None
    geometry_source: str | None
    begin_timestamp: int | None
    end_timestamp: int | None
    begin_phy_offset: int | None
    end_phy_offset: int | None
    hash_slot_count: int | None
    index_count: int | None


class ConfigFileReport(TypedDict):
    name: str
    size: int


class CommitLogCut(TypedDict):
    file: str
    file_offset: int
    phy_offset: int
    bytes_dropped: int  # bytes holding data past the cut (engine.salvage.StoreRecoveryLoss)
    messages_dropped: int  # messages recovery drops: messages_salvageable + messages_gone
    messages_salvageable: int  # of those, whose body CRC holds (what salvage writes back)
    messages_gone: int  # of those, lost for good (salvage's queue_offsets_lost)


class CommitLogRecoveryPlan(TypedDict):
    method: Literal["recoverNormally", "recoverAbnormally"]
    start_file: str | None
    check_crc: bool
    stop_kind: str | None
    stop_file: str | None
    stop_file_offset: int | None
    stop_reason: str | None
    max_phy_offset: int  # processOffset: where the CommitLog ends after recovery
    truncated_at: CommitLogCut | None  # None when nothing lies after it
    deleted_files: list[str]


class IndexPlan(TypedDict):
    kept: list[str]
    destroyed: list[str]  # IndexService.load(lastExitOK=false): endTimestamp > indexMsgTimestamp
    files_after: list[str]  # created files are named new / new-after-<previous> (RocketMQ: the wall clock)
    messages_indexed: int
    entries_written: int
    files_created: int
    appended_to: str | None


class Redispatch(TypedDict):
    from_file: str | None
    from_phy_offset: int | None
    to_phy_offset: int
    messages: int
    units_added: int


class RecoveredFile(TypedDict):
    """One file of a 5.x store through its recovery: units or entries on disk, kept, dropped, deleted."""
    name: str
    start_offset: int
    size: int
    on_disk: int
    kept: int
    dropped: int
    deleted: bool
    read: NotRequired[bool]  # the timer log: recoverAndRevise read this file


class BatchQueueRecovery(TypedDict):
    """``BatchConsumeQueue.recover`` and ``truncateDirtyLogicFiles`` of one queue."""
    topic: str
    queue_id: int
    directory: str
    end: int  # where recover ends (logic offset)
    files: list[RecoveredFile]


class TimerRecoveryStop(TypedDict):
    file: str
    file_offset: int
    timer_log_offset: int
    kind: str


class TimerRecovery(TypedDict):
    """``TimerMessageStore.recover``: ``recoverAndRevise(lastTimerLogFlushPos - last file size, true)``."""
    directory: str
    begin_offset: int
    begin_file: str | None
    process_offset: int
    units_revised: int
    stop: TimerRecoveryStop | None
    files: list[RecoveredFile]


class DLedgerCut(TypedDict):
    file: str
    file_offset: int
    pos: int
    reason: str


class DLedgerRecovery(TypedDict):
    """``DLedgerMmapFileStore.recover`` over ``dledger-<id>/data``."""
    directory: str
    entries: int
    last_index: int | None
    cut: DLedgerCut | None
    files: list[RecoveredFile]


class RocketMQ5StartupPlan(TypedDict):
    """What a 5.x broker's start-up adds to 4.9's (rocketmq/startup5.py): which recoveries run, and per
    file what the BatchConsumeQueues, the timer log and the DLedger raft log keep, cut and delete."""
    recoveries: list[str]
    batch_queues: list[BatchQueueRecovery]
    timer: TimerRecovery | None
    dledger: list[DLedgerRecovery]
    notes: list[str]


class RocketMQStartupPlan(TypedDict):
    last_exit: Literal["normal", "abnormal"]
    loads: bool  # DefaultMessageStore.load succeeds
    refused_files: list[str]
    commitlog: CommitLogRecoveryPlan | None
    max_phy_offset_of_consume_queue: int
    truncates_consume_queues: bool  # truncateDirtyLogicFiles runs
    consume_queue_units_dropped: int
    index: IndexPlan
    recovery_dispatch: Redispatch | None  # recoverAbnormally's doDispatch
    reput: Redispatch | None  # ReputMessageService at start
    commitlog_files_after: list[str]
    notes: list[str]
    rocketmq5: RocketMQ5StartupPlan | None  # a store with 5.x files (None: a 4.9 store)


class InspectedStore(TypedDict):
    path: str
    shutdown: StoreShutdown
    checkpoint: StoreCheckpointReport | None
    commitlog: InspectedCommitLog | None
    consume_queues: list[InspectedConsumeQueue]
    index_files: list[InspectedIndexFile]
    config_files: list[ConfigFileReport]
    other_files: list[str]
    unreadable: list[PathReason]
    plan: RocketMQStartupPlan
    problems: list[Problem]


class RocketMQInspectSummary(TypedDict):
    stores: int
    abnormal_shutdowns: int
    stores_not_loading: int
    commitlogs_truncated: int
    consume_queue_units_dropped: int
    index_files_destroyed: int
    errors: int
    notes: int
    unreadable: int


class RocketMQInspectReport(TypedDict):
    stores: list[InspectedStore]
    summary: RocketMQInspectSummary


class BothBrokersSummary(TypedDict):
    kafka: InspectSummary
    rocketmq: RocketMQInspectSummary


class BothBrokersInspectReport(TypedDict):
    """A tree holding both brokers' files: each report's parts side by side."""
    log_dirs: list[InspectedLogDir]
    stores: list[InspectedStore]
    summary: BothBrokersSummary


InspectOutput = Union[InspectReport, RocketMQInspectReport, BothBrokersInspectReport]


# -- groups ---------------------------------------------------------------------------------

class TopicPartitions(TypedDict):
    topic: str
    partitions: list[int]


class GroupMember(TypedDict):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    subscribed_topics: list[str]
    assigned: list[TopicPartitions]  # classic consumer protocol: the leader's assignment


class CommittedOffset(TypedDict):
    topic: str
    partition: int
    offset: int  # the committed offset: the next record the group reads
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    record_offset: int  # where the commit is in its __consumer_offsets partition
    transactional_producer_id: int | None  # committed by a transaction (TxnOffsetCommit)
    log_end_offset: int | None  # None: the partition is not in the log dir, or has no .log
    lag: int | None


class ConsumerGroup(TypedDict):
    group: str
    coordinator_partition: int  # the __consumer_offsets partition holding it
    protocol: Literal["classic", "consumer"] | None  # None: only offsets are known
    protocol_type: str | None  # classic groups: "consumer", "connect", ...
    generation: int | None  # classic: generation id; consumer protocol (KIP-848): group epoch
    assignor: str | None
    leader: str | None
    state_timestamp: int | None
    members: list[GroupMember]
    metadata_record_offset: int | None
    deleted: bool  # the last group record was a tombstone (the group was deleted or expired)
    offsets: list[CommittedOffset]
    total_lag: int | None  # the sum over the partitions whose end is known


class CoordinatorPartitionRead(TypedDict):
    directory: str
    partition: int
    records: int  # records replayed (at or before --at)
    records_after_at: int
    log_end_offset: int | None  # None: the directory holds no .log


class GroupsSummary(TypedDict):
    groups: int
    committed_partitions: int
    groups_deleted: int
    pending_transactional_commits: int  # offsets committed in a transaction with no marker yet


class GroupsReport(TypedDict):
    log_dir: str
    at: int | None
    coordinator_partitions: list[CoordinatorPartitionRead]
    groups: list[ConsumerGroup]
    problems: list[Problem]
    summary: GroupsSummary


# RocketMQ (`groups STORE`): consumerOffset.json against the ConsumeQueues (ops/rocketmq_groups.py)

class RocketMQConfigRead(TypedDict):
    """A config/ file and its .bak as ConfigManager.load takes them."""
    name: str  # consumerOffset.json, topics.json, ...
    source_class: str  # the RocketMQ class that persists and loads it
    path: str
    present: bool
    size: int | None
    error: str | None  # why it does not read (file and byte offset)
    backup_present: bool
    backup_error: str | None
    loaded_from: Literal["file", "backup"] | None  # what the broker loads (None: neither gives contents)
    backup_equal: bool | None  # None: the file or the .bak gives no contents
    backup_differences: list[str]  # key paths where the .bak (the previous version) differs


class RocketMQQueueProgress(TypedDict):
    queue_id: int
    committed_offset: int | None  # consumerOffset.json; None: no entry
    consumer_offset: int  # what getConsumeStats uses: the committed offset, 0 when none
    queue_present: bool | None  # None: the copy has no consumequeue/ (bounds unknown)
    min_offset: int | None
    max_offset: int | None  # the broker offset (getMaxOffsetInQueue); 0/0 for a queue the store lacks
    lag: int | None  # max_offset - consumer_offset (mqadmin consumerProgress #Diff)
    last_consumed_queue_offset: int | None  # consumer_offset - 1, when its message was found
    last_consumed_phy_offset: int | None
    last_consumed_timestamp: int | None  # its store timestamp (#LastTime)
    counted_in_total: bool  # in mqadmin's Diff Total: the topic is configured and queue_id < readQueueNums


class RocketMQTopicProgress(TypedDict):
    topic: str
    retry_topic: bool  # %RETRY%<group>
    read_queue_nums: int | None  # topics.json; None: the topic is not configured
    queues: list[RocketMQQueueProgress]
    total_lag: int | None  # the lag of the queues counted_in_total (mqadmin consumerProgress's Diff Total)


class RocketMQConsumerGroup(TypedDict):
    group: str
    subscription_configured: bool  # listed in subscriptionGroup.json
    consume_enable: bool | None
    consume_broadcast_enable: bool | None
    retry_max_times: int | None
    topics: list[RocketMQTopicProgress]
    total_lag: int | None


class DelayLevelProgress(TypedDict):
    """ScheduleMessageService's progress on one delay level (SCHEDULE_TOPIC_XXXX queue level - 1)."""
    delay_level: int
    delay_ms: int | None  # under the default messageDelayLevel (the store does not record the broker's)
    queue_id: int
    offset: int | None  # delayOffset.json; None: no entry (the service starts at 0)
    queue_present: bool | None
    min_offset: int | None
    max_offset: int | None
    pending: int | None  # delayed messages not delivered yet: max_offset - offset
    corrected_offset: int | None  # where correctDelayOffset moves an offset outside [min, max]


class RocketMQGroupsSummary(TypedDict):
    groups: int
    topics: int
    queues: int
    total_lag: int | None
    delay_levels: int
    pending_delayed: int | None


class RocketMQGroupsReport(TypedDict):
    store: str
    queues_read: bool  # the copy has consumequeue/: bounds, lag and last-consumed times are known
    config_files: list[RocketMQConfigRead]
    groups: list[RocketMQConsumerGroup]
    delay_levels: list[DelayLevelProgress]
    problems: list[Problem]
    summary: RocketMQGroupsSummary


# -- transactions ---------------------------------------------------------------------------

class TransactionalIdState(TypedDict):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str  # TransactionState: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, ...
    partitions: list[TopicPartitions]
    marker_partitions: list[TopicPartitions]  # those of its last PrepareCommit/PrepareAbort: where markers go
    timeout_ms: int
    start_timestamp: int
    last_update_timestamp: int
    timed_out: bool  # Ongoing and started more than its timeout before the reference time
    coordinator_partition: int
    record_offset: int


class Stats(TypedDict):
    count: int
    min: int | None
    max: int | None
    mean: float | None


class AbortedRange(TypedDict):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class EmptyTransaction(TypedDict):
    producer_id: int
    producer_epoch: int
    marker: Literal["COMMIT", "ABORT"]
    marker_offset: int
    timestamp: int


class OpenTransaction(TypedDict):
    producer_id: int
    producer_epoch: int
    transactional_id: str | None  # from __transaction_state, when it names this producer id
    first_offset: int
    first_timestamp: int | None  # None: opened before the first segment (from its producer snapshot)
    records: int
    batches: int
    hanging: bool
    why: str | None  # why it is hanging


class TransactionPartition(TypedDict):
    topic: str
    partition: int
    directory: str
    transactional: bool  # holds any transactional batch or marker
    log_end_offset: int
    last_stable_offset: int
    commits: int
    aborts: int
    aborted_ranges: list[AbortedRange]
    size_records: Stats
    size_batches: Stats
    duration_ms: Stats  # first data batch to marker (their max timestamps)
    empty_transactions: list[EmptyTransaction]
    open_transactions: list[OpenTransaction]


class TransactionDisagreement(TypedDict):
    transactional_id: str
    producer_id: int
    topic: str
    partition: int
    coordinator_state: str
    partition_shows: str
    message: str


class TransactionsSummary(TypedDict):
    transactional_ids: int
    transactional_ids_deleted: int
    partitions: int
    transactional_partitions: int
    commits: int
    aborts: int
    open_transactions: int
    hanging_transactions: int
    disagreements: int


class TransactionsReport(TypedDict):
    log_dir: str
    reference_time: int | None  # the latest timestamp in the log dir: timeouts are judged against it
    transactional_ids: list[TransactionalIdState]
    partitions: list[TransactionPartition]
    disagreements: list[TransactionDisagreement]
    problems: list[Problem]
    summary: TransactionsSummary


# -- replicas: several brokers' copies of a partition or store (ops/replicas.py, docs/replicas.md) ----

class ReplicaBroker(TypedDict):
    """A broker whose copy was read: ``meta.properties``' id where it names one, else its folder; ``files``:
    every file below its log dir or store (those of a broker below it are that broker's), in walk order, each
    with its sha256 (null with --no-hash), hashed by the task that reads it."""
    broker: str  # "broker <id>", or the folder
    broker_id: int | None
    path: str
    kind: Literal["kafka", "rocketmq"]
    files: list[InputFile]


class ReplicasSkipped(TypedDict):
    """An entry replicas leaves, with why; ``size`` and ``sha256`` where it is a readable file (null otherwise,
    and sha256 null with --no-hash)."""
    path: str
    reason: str  # "unreadable: ..." for an entry or file that cannot be read (exit 2)
    size: int | None
    sha256: str | None


class EpochStart(TypedDict):
    epoch: int
    start_offset: int


class ReplicaDamage(TypedDict):
    """A replica's damage: where the broker's load cuts it and what lies beyond (the figures every command
    gives), and batches inside what it holds whose stored CRC does not match their bytes."""
    recovery_cut: RecoveryCut | None
    beyond_recovery: BeyondRecovery | None
    checksum_mismatches: int


class KafkaReplica(TypedDict):
    """One broker's copy of a partition, as that broker loads it."""
    broker: str
    broker_id: int | None
    directory: str
    log_start_offset: int
    log_end_offset: int
    # the checkpoint's (the log start without one), kept within the log as the load does; None for the metadata
    # log, whose high watermark KRaft keeps in memory only
    high_watermark: int | None
    high_watermark_checkpoint: int | None  # replication-offset-checkpoint's entry
    recovery_point_checkpoint: int | None
    log_start_offset_checkpoint: int | None
    leader_epoch_checkpoint: list[EpochStart] | None  # the file as written (None: absent or unreadable)
    leader_epoch_cache: list[EpochStart]  # the cache once the log is loaded
    batch_epochs: list[EpochStart]  # the epochs the batches carry, as runs
    epochs_agree: bool  # the loaded cache and the batches name the same epoch starts
    batches: int
    records: int
    producer_snapshot_offset: int | None  # the snapshot producer state is rebuilt from (then the batches after it)
    damage: ReplicaDamage
    gaps: list[str]  # files the comparison had to do without
    notes: list[str]


class ReplicaUnreadable(TypedDict):
    broker: str
    directory: str
    problem: str


class BatchPlace(TypedDict):
    """A batch's identity and where it lies."""
    offset: int
    epoch: int
    crc: int
    segment: str
    byte: int


class RecordsPast(TypedDict):
    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None


class ReplicaPair(TypedDict):
    """Two copies compared batch by batch (base offset, last offset, leader epoch, CRC) from the later log
    start: they hold the same batches below ``agreed_until``; past it, what each holds."""
    a: str
    b: str
    first_common_offset: int
    agreed_until: int
    diverged: bool  # both hold batches past the point and they differ (else one is a prefix of the other)
    a_first_differing: BatchPlace | None
    b_first_differing: BatchPlace | None
    a_past: RecordsPast
    b_past: RecordsPast


class TruncationRoundItem(TypedDict):
    """One step of the epoch exchange (kafka.replication.TruncationRule names the branch taken)."""
    requested_epoch: int | None
    leader_epoch: int | None
    leader_end_offset: int | None
    truncate_to: int
    completed: bool
    rule: Literal[tuple(rule.value for rule in TruncationRule)]  # type: ignore[valid-type]


class DroppedRun(TypedDict):
    """Consecutive dropped batches of one producer, producer epoch and leader epoch."""
    first_offset: int
    last_offset: int
    leader_epoch: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    batches: int
    records: int
    committed_records: int  # below the high watermark of a replica holding these very batches
    on_new_leader: bool  # the new leader holds them: fetched again, not lost


class FollowerTruncation(TypedDict):
    broker: str
    truncate_to: int
    fully_truncated: bool
    rounds: list[TruncationRoundItem]
    dropped_records: int
    dropped_committed_records: int
    refetched_records: int
    dropped: list[DroppedRun]


class SequenceGap(TypedDict):
    producer_id: int
    producer_epoch: int
    last_sequence_on_new_leader: int
    last_sequence_elsewhere: int
    held_by: str


class HangingTransaction(TypedDict):
    producer_id: int
    first_offset: int
    marker_offset_elsewhere: int
    held_by: str


class ElectionCandidate(TypedDict):
    """This replica made leader: each follower's truncation, and what the partition loses (counted once per
    batch across followers)."""
    broker: str
    electable: bool | None  # the metadata log: whether a KRaft vote can elect it (None: the controller picks)
    log_end_offset: int
    new_epoch_start_offset: int
    followers: list[FollowerTruncation]
    records_lost: int
    committed_records_lost: int
    uncommitted_records_lost: int
    sequence_gaps: list[SequenceGap]
    hanging_transactions: list[HangingTransaction]


class ProducerOnReplica(TypedDict):
    broker: str
    producer_epoch: int
    last_sequence: int
    last_offset: int
    open_transaction_first_offset: int | None


class ProducerAcrossReplicas(TypedDict):
    producer_id: int
    replicas: list[ProducerOnReplica]
    absent_on: list[str]
    agree: bool


class KafkaReplicaSet(TypedDict):
    """One partition (name and topic id) held by two or more brokers."""
    topic: str
    partition: int
    topic_id: str | None
    replicas: list[KafkaReplica]
    unreadable: list[ReplicaUnreadable]
    pairs: list[ReplicaPair]
    new_leader_epoch: int | None
    candidates: list[ElectionCandidate]
    best_candidate: str | None  # the election losing the fewest committed records (of those a vote can elect)
    producers: list[ProducerAcrossReplicas]
    notes: list[str]


class SingleCopy(TypedDict):
    topic: str
    partition: int
    broker: str
    directory: str


class ReplicasSummary(TypedDict):
    kafka_replica_sets: int
    rocketmq_replica_sets: int
    diverged: int  # sets of either broker whose copies part
    damaged: int  # replicas (Kafka copies, RocketMQ stores and DLedger nodes) whose recovery cuts data off
    committed_loss_at_best: int  # committed records the best Kafka elections still lose


class ReplicasReport(TypedDict):
    brokers: list[ReplicaBroker]
    kafka: list[KafkaReplicaSet]
    rocketmq: list["RocketMQReplicaSet"]  # RocketMQ master/slave and DLedger groups
    single_copies: list[SingleCopy]
    skipped: list[ReplicasSkipped]
    notes: list[str]
    summary: ReplicasSummary


# -- record filters: dump/lookup --summary, --key-format/--value-format (docs/filters.md) ----

class ProducerFigures(TypedDict):
    producer_id: int  # -1: no producer id (not idempotent, or a legacy message)
    producer_epochs: list[int]
    transactional: bool
    batches: int
    records: int
    bytes: int
    first_offset: int | None
    last_offset: int | None


class CodecFigures(TypedDict):
    codec: str
    batches: int
    records: int
    bytes: int


class RecordsSummary(TypedDict):
    """What --summary prints instead of the records: the batches and records that passed the filter."""
    kind: Literal["records_summary"]
    files: int
    batches: int
    records: int
    bytes: int  # the sizes of the batches shown (whole batches: a batch is stored whole)
    control_batches: int
    control_records: int
    key_bytes: int
    value_bytes: int
    null_keys: int
    null_values: int
    schema_registry_framed_values: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    time_span_ms: int | None
    producers: list[ProducerFigures]
    codecs: list[CodecFigures]
    problems: int


# -- report: the figures of the picture of a partition or store (docs/report.md) -------------

class ReportFile(TypedDict):
    """A verified file as the report shows it: verify's figures without the list of its problems."""
    path: str
    kind: str
    status: Literal["ok", "problems", "unreadable", "skipped"]
    size: int | None
    sha256: str | None
    batches: int | None  # Kafka .log: framed batches (verify's count)
    records: int | None  # Kafka .log: verify's count (shallow: v2 batch headers only)
    first_offset: int | None
    last_offset: int | None
    recovery: Recovery | None
    problems: int
    errors: int


class ReportFinding(TypedDict):
    """A verify finding, with where the timeline draws it (``placed_at``: a Kafka offset or a RocketMQ
    physical offset) and what gave that place."""
    file: str
    kind: FindingCode
    severity: SeverityName
    byte_offset: int | None
    offset: int | None
    message: str
    placed_at: int | None
    placed_by: Literal["offset", "byte_offset", "file", "consume_queue_unit", "none"]


class FindingBin(TypedDict):
    """The findings of one kind in one bin along the offsets: where they lie and how many."""
    kind: FindingCode
    severity: SeverityName  # error when any of them is one
    first: int
    last: int
    count: int


class ReportFindings(TypedDict):
    total: int
    by_kind: dict[str, int]
    shown: list[ReportFinding]  # the first findings up to the page's share (errors first); ``total`` counts them all
    bins: list[FindingBin]  # every placed finding, by kind, in equal bins along the section's offsets


class KafkaTimeline(TypedDict):
    """A partition's batches in file order, grouped into buckets of consecutive batches of one segment
    (one bucket per batch when ``batches_per_bucket`` is 1): one value per bucket in each list.
    Times are ms since the epoch, None where no batch of the bucket has one."""
    batches_per_bucket: int
    segment: list[int]  # index into the partition's segments
    first_offset: list[int]
    last_offset: list[int]
    first_position: list[int]
    batches: list[int]
    records: list[int]
    bytes: list[int]
    create_time_min: list[int | None]
    create_time_max: list[int | None]
    log_append_time: list[int | None]


class TimestampEvent(TypedDict):
    offset: int
    timestamp: int
    reference: int  # out of order: the largest timestamp before it; future: the report's reference time


class TimestampEvents(TypedDict):
    count: int
    shown: list[TimestampEvent]


class OffsetGaps(TypedDict):
    count: int
    offsets_missing: int
    shown: list[OffsetRange]


class TransactionSpan(TypedDict):
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset; an open transaction's last batch
    outcome: Literal["commit", "abort", "open"]


class TransactionFigures(TypedDict):
    committed: int
    aborted: int
    open: int
    empty: int  # markers with no data batch before them
    shown: list[TransactionSpan]


class ReportDamage(TypedDict):
    file: str
    first_byte: int
    last_byte: int
    reason: str
    first_offset: int | None  # Kafka offsets / RocketMQ queue offsets lost, as the neighbours tell them
    last_offset: int | None
    physical_offset: int | None  # RocketMQ: the CommitLog offset of first_byte


class DamageBin(TypedDict):
    """Damaged ranges beyond those listed, merged per bin along the offsets."""
    first_offset: int
    last_offset: int
    ranges: int
    bytes: int


class LostRange(TypedDict):
    file: str
    first_offset: int | None
    last_offset: int | None  # None: no neighbour bounds it
    reason: str


class ReportStartup(TypedDict):
    """What the broker's start-up does to a partition (``inspect``'s plan) and what reading past the
    damage gets back of what it drops (verify's figures, from salvage's reader)."""
    clean_shutdown: bool
    recovery_point: int
    log_end_offset: int  # after start-up
    truncated_file: str | None
    truncated_at_byte: int | None
    truncated_at_offset: int | None  # the first offset dropped
    segments_deleted: int  # later segments LogLoader deletes
    first_deleted: str | None
    last_deleted: str | None
    dropped_bytes: int
    dropped_records: int  # records of the dropped batches (CRC ignored) and of a torn last batch
    dropped_first_offset: int | None
    dropped_last_offset: int | None  # None: no batch past the cut says
    torn_batch_records: int  # records a torn batch declares (counted in dropped_records)
    salvageable_records: int  # records of dropped batches whose CRC holds: what salvage writes back
    lost_ranges: list[LostRange]  # the damaged ranges in the dropped segments: what nothing gets back
    notes: list[str]


class ReportTruncation(TypedDict):
    """Where the broker's recovery cuts: everything from here on is dropped (later segments and files too)."""
    file: str
    byte_offset: int
    offset: int | None  # Kafka: the first offset lost; RocketMQ: the physical offset
    reason: str | None
    messages_lost: NotRequired[int]  # RocketMQ: what recovery drops (verify's, engine.salvage.StoreRecoveryLoss)
    messages_salvageable: NotRequired[int]  # RocketMQ: of those, whose body CRC holds
    messages_gone: NotRequired[int]  # RocketMQ: of those, lost for good


class IndexPoints(TypedDict):
    entries: int
    offsets: list[int]
    values: list[int]  # offset index: byte positions; time index: timestamps
    sampled: bool


class Rates(TypedDict):
    bucket_ms: int
    start: list[int]
    records_per_second: list[float]
    bytes_per_second: list[float]


class SizeHistogram(TypedDict):
    bin_edges: list[int]  # bytes; bin i holds sizes in [edge i, edge i+1)
    batches: list[int]


class ReportSegment(TypedDict):
    """A segment, or a run of ``segments`` consecutive segments (``file`` .. ``last_file``) on a page
    with more segments than its table holds: then sums and extremes, statuses counted."""
    file: str
    last_file: str
    segments: int
    base_offset: int
    size: int
    status: str
    batches: int
    records: int  # legacy messages counted by their inner messages, as verify --deep does
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    valid_bytes: int | None
    bytes_lost: int | None
    at_startup: NotRequired[str]  # kept, recovered, truncated, deleted, not loaded (a run: each counted)


class ReportPartition(TypedDict):
    directory: str
    topic: str
    partition: int | None
    segments: list[ReportSegment]  # one per segment, or runs of them (see ReportSegment)
    segments_total: int
    batches: int
    records: int
    bytes: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    log_append_time_batches: int
    timeline: KafkaTimeline
    out_of_order: TimestampEvents
    future: TimestampEvents
    gaps: OffsetGaps
    transactions: TransactionFigures
    damaged: list[ReportDamage]  # the first ones, up to the page's share
    damaged_count: int
    damaged_bins: list[DamageBin]  # every damaged range with an offset, when more than are listed
    truncation: ReportTruncation | None  # the startup plan's cut (verify's first when there is no plan)
    startup: ReportStartup | None  # None: no plan (see notes)
    offset_index: IndexPoints
    time_index: IndexPoints
    rates: Rates
    batch_sizes: SizeHistogram
    codecs: list[CodecFigures]
    producers: list[ProducerFigures]
    producer_count: int
    findings: ReportFindings
    # this copy's replica set (its index in ReportFigures.replicas.kafka) and broker; None: held by one broker.
    # A section is one broker's copy: sum a figure over the sections of one replica set and it counts it per copy
    replica_set: int | None
    broker: str | None
    notes: list[str]


class QueueFigures(TypedDict):
    topic: str
    queue_id: int
    messages: int
    bytes: int
    first_timestamp: int | None
    last_timestamp: int | None
    first_queue_offset: int | None
    last_queue_offset: int | None


class QueueSeries(TypedDict):
    topic: str
    queue_id: int | None  # None: the queues not shown one by one, together
    messages: list[int]  # per time bucket


class StoreTimeline(TypedDict):
    bucket_ms: int
    start: list[int]
    series: list[QueueSeries]
    dropped_by_recovery: list[int]  # per time bucket: messages at or past the recovery cut
    cut_timestamp: int | None  # store time of the last message recovery keeps, when it cuts


class CommitLogCoverage(TypedDict):
    file: str
    start_offset: int
    size: int
    data_end_offset: int  # physical offset after the file's last byte of data
    messages: int
    status: str


class IndexFileCoverage(TypedDict):
    file: str
    begin_timestamp: int | None
    end_timestamp: int | None
    begin_phy_offset: int | None
    end_phy_offset: int | None
    index_count: int | None
    status: str


class ConsumerProgress(TypedDict):
    group: str
    topic: str
    queue_id: int
    committed_offset: int
    max_queue_offset: int | None  # from the CommitLog walk: the last queue offset seen + 1
    lag: int | None


class ReportStore(TypedDict):
    root: str
    messages: int
    bytes: int
    first_timestamp: int | None
    last_timestamp: int | None
    queues: list[QueueFigures]
    timeline: StoreTimeline
    commitlog: list[CommitLogCoverage]
    index_files: list[IndexFileCoverage]
    damaged: list[ReportDamage]  # the first ones, up to the page's share
    damaged_count: int
    truncation: ReportTruncation | None
    consumer_progress: list[ConsumerProgress] | None  # None: no consumer offsets read (see notes)
    findings: ReportFindings
    replica_set: int | None  # its index in ReportFigures.replicas.rocketmq; None: compared with no other store
    broker: str | None
    notes: list[str]


class ReportFigures(TypedDict):
    """`segtool report --json`: the figures the HTML page draws (and embeds as JSON)."""
    generated_at: int  # ms since the epoch: the reference time for future timestamps
    inputs: list[str]
    files: list[ReportFile]  # up to a cap, those with problems first (see notes)
    files_total: int
    summary: VerifySummary
    partitions: list[ReportPartition]
    stores: list[ReportStore]
    other_findings: ReportFindings  # findings of files in no partition or store
    # `segtool replicas --json` of the same paths, when they hold a partition in two or more directories or
    # two or more stores (None: nothing to compare); lists beyond the page's caps are cut, said in notes
    replicas: ReplicasReport | None
    notes: list[str]


# refused: the command would not go on (a value that does not parse, an output inside an input, ...)
ErrorName = Literal["unreadable_input", "corrupt_data", "nothing_found", "usage_error", "refused", "missing_package",
                    "internal_error", "interrupted", "terminated"]


class ErrorReport(TypedDict):
    """What every command prints on stdout with --json when it ends on an error instead of its output
    (dump: as its one line).  The same reason is the one line on stderr."""
    error: ErrorName  # what kind of failure: nothing_found exits 1, interrupted 130, terminated 143, the rest 2
    message: str  # the line on stderr, without "segtool: "
    path: str | None  # the file or directory it concerns, where known
    byte_offset: int | None  # where in that file, where known
    reason: str  # the message without the path and offset
    exit_code: int
    skipped: NotRequired[list[PathReason]]  # nothing_found: each file looked at, with why it was left


# shaped records and the summary come from the record filters (docs/filters.md)
DumpItem = Union[KafkaBatchItem, KafkaRecordItem, ShownRecordItem, RocketMQMessageItem, DamagedRangeItem, OtherItem,
                 RocketMQ5Item, RecordsSummary]

OPEN = {VerifiedFile, LookupAnswer, RocketMQMessageItem, OtherItem, RocketMQ5Item, Recovery}

# ---- replicas: RocketMQ (ops/replicas_rocketmq.py, the rules in rocketmq/replication.py) ----

class RocketMQReplicaMessage(TypedDict):
    """A message one copy holds where another does not: where it lies and what names it (``msg_id``: the
    UNIQ_KEY the producer saw; ``offset_msg_id``: the broker's id from store host and offset)."""
    phy_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    born_timestamp: int
    store_timestamp: int
    msg_id: str | None
    offset_msg_id: str
    keys: str | None


class RocketMQMessageRun(TypedDict):
    """The messages one copy holds in [first_offset, end_offset): all counted, the first 100 listed."""
    first_offset: int
    end_offset: int
    bytes: int
    messages: int
    listed: list[RocketMQReplicaMessage]


class RocketMQEpoch(TypedDict):
    """An EpochFileCache entry: each epoch ends where the next starts, the last at the store's max offset."""
    epoch: int
    start_offset: int
    end_offset: int


class RocketMQCommitLogReplica(TypedDict):
    """One master/slave store as its broker loads it: ``max_offset`` is where recovery cuts (what it holds);
    ``confirm_offset`` the checkpoint's confirmPhyOffset as recovery corrects it (controller mode);
    ``epochs`` from epochFileCheckpoint (null: none); ``beyond_recovery`` what lies past the cut."""
    broker: str
    store: str
    min_offset: int
    max_offset: int
    checkpoint: bool
    confirm_offset: int | None
    epochs: list[RocketMQEpoch] | None
    beyond_recovery: StoreBeyondRecovery | None
    notes: list[str]


class RocketMQCopyComparison(TypedDict):
    """The reference store against another over the offsets both hold: from ``compared_from`` they agree to
    ``agree_to``; ``diverged_at`` where their records first differ (null: one is a prefix of the other);
    ``lag_*`` how far the other trails; ``only_reference`` the messages lost if the reference's disk is lost."""
    reference: str
    other: str
    compared_from: int | None
    agree_to: int | None
    messages_agreed: int
    diverged_at: int | None
    lag_bytes: int | None
    lag_messages: int | None
    only_reference: RocketMQMessageRun | None
    only_other: RocketMQMessageRun | None


class RocketMQControllerRejoin(TypedDict):
    """Controller mode: the follower rejoining the leader is cut to ``truncate_to`` (AutoSwitchHAClient.doTruncate,
    EpochFileCache.findConsistentPoint; null: not cut, ``rule`` says why); ``confirmed_dropped`` of the dropped
    messages lay at or below the follower's confirm offset."""
    leader: str
    follower: str
    rule: Literal["epoch_consistent_point", "slave_epochs_empty", "no_consistent_point"]
    truncate_to: int | None
    dropped: RocketMQMessageRun | None
    confirmed_dropped: int


class RocketMQDLedgerEntry(TypedDict):
    """A DLedger entry and the CommitLog message inside it (null when it does not decode)."""
    index: int
    term: int
    pos: int
    size: int
    committed: bool  # at or below its node's committedIndex
    message: RocketMQReplicaMessage | None


class RocketMQEntryRun(TypedDict):
    """DLedger entries from ``first_index`` to ``last_index``: all counted, the first 100 listed."""
    first_index: int
    last_index: int
    entries: int
    listed: list[RocketMQDLedgerEntry]


class RocketMQDLedgerReplica(TypedDict):
    """One DLedger node (dledger-<self_id>) as DLedgerMmapFileStore.recover loads it; ``electable``: a majority
    of the nodes given would vote for it (DLedgerLeaderElector.handleVote)."""
    broker: str
    store: str
    self_id: str
    directory: str
    begin_index: int
    end_index: int
    end_term: int
    committed_index: int | None
    entries: int
    electable: bool
    recovery_cut: DLedgerCut | None
    entries_beyond_recovery: int
    notes: list[str]


class RocketMQDLedgerComparison(TypedDict):
    """The reference node against another, entry by entry (DLedgerEntry.equals) from their first common index."""
    reference: str
    other: str
    first_common_index: int | None
    agree_to_index: int | None
    diverged_at_index: int | None
    only_reference: RocketMQEntryRun | None
    only_other: RocketMQEntryRun | None


class RocketMQDLedgerRejoin(TypedDict):
    """The follower rejoining the leader (DLedgerEntryPusher.doCompare): ``truncate_index`` the entry it is cut
    back to (null: nothing cut), ``dropped`` its entries that go, ``committed_dropped`` of them committed."""
    leader: str
    follower: str
    leader_electable: bool
    rule: Literal["leader_empty", "append", "match_below_follower_end", "no_intersection", "below_follower_begin",
                  "below_leader_begin"]
    truncate_index: int | None
    dropped: RocketMQEntryRun | None
    committed_dropped: int


class RocketMQCommittedMissing(TypedDict):
    """Entries ``holder`` committed (index <= its committedIndex) that ``lacker`` lacks or holds otherwise."""
    holder: str
    lacker: str
    committed_index: int
    missing: RocketMQEntryRun


class RocketMQReplicaSet(TypedDict):
    """A group of RocketMQ stores that replicate each other: master/slave CommitLogs (``stores``, 4.x HA or
    5.x controller mode) or DLedger nodes (``nodes``), each compared with ``reference``.  ``diverged``: copies
    part; ``damaged``: a store's recovery cuts data off; ``loses_messages``: a rejoin drops confirmed or
    committed messages, or committed entries are missing from a node."""
    layout: Literal["master_slave", "dledger"]
    replication: Literal["ha", "controller", "dledger"]
    reference: str
    reference_reason: str
    stores: list[RocketMQCommitLogReplica]
    nodes: list[RocketMQDLedgerReplica]
    comparisons: list[RocketMQCopyComparison]
    dledger_comparisons: list[RocketMQDLedgerComparison]
    rejoins: list[RocketMQControllerRejoin]
    dledger_rejoins: list[RocketMQDLedgerRejoin]
    committed_missing: list[RocketMQCommittedMissing]
    diverged: bool
    damaged: bool
    loses_messages: bool
    notes: list[str]


# one schema per command: what it prints (dump: each line)
COMMAND_OUTPUTS = {
    "dump": DumpItem,
    "verify": VerifyReport,
    "lookup": LookupAnswer,
    "rebuild-index": RebuildOutput,
    "trim": TrimReport,
    "index-keys": IndexKeysReport,
    "scan": Union[ScanReport, ScanCheck],
    "carve": CarveReport,
    "salvage": SalvageReport,
    "inspect": InspectOutput,
    "groups": Union[GroupsReport, RocketMQGroupsReport],
    "transactions": TransactionsReport,
    "report": ReportFigures,
    "replicas": ReplicasReport,
}


# -- the generator --------------------------------------------------------------------------

def _schema(tp, defs: dict) -> dict:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin is Literal:
        values = list(get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(arg, defs) for arg in get_args(tp)]}
    if origin is list:
        return {"type": "array", "items": _schema(get_args(tp)[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(get_args(tp)[1], defs)}
    if is_typeddict(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a type may refer to itself through a list
            hints = get_type_hints(tp)
            definition = {"type": "object", "properties": {k: _schema(v, defs) for k, v in hints.items()},
                          "required": sorted(tp.__required_keys__), "propertyNames": {"pattern": SNAKE_CASE},
                          "additionalProperties": tp in OPEN}
            if tp.__doc__:
                definition["description"] = " ".join(tp.__doc__.split())
            defs[name] = definition
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


# what any command prints with --json when it fails (one schema for all of them)
ERROR_OUTPUT = "error"


def command_schema(command: str) -> dict:
    defs: dict = {}
    root = _schema(ErrorReport if command == ERROR_OUTPUT else COMMAND_OUTPUTS[command], defs)
    what = ("the object every command prints instead of its output, when it fails:"
            if command == ERROR_OUTPUT else "each line of" if command == "dump" else "the object printed by")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://segtool.invalid/schemas/{command}.schema.json",
            "title": f"{what} segtool {'COMMAND' if command == ERROR_OUTPUT else command} --json", **root,
            "$defs": dict(sorted(defs.items()))}


def schema_files() -> dict[str, str]:
    """File name -> text of every command's schema and of the error object, as docs/schemas/ holds them."""
    return {f"{command}.schema.json": json.dumps(command_schema(command), indent=1) + "\n"
            for command in [*COMMAND_OUTPUTS, ERROR_OUTPUT]}


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else "docs/schemas")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in schema_files().items():
        (target / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
