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

SNAKE_CASE = "^[a-z][a-z0-9_]*$"


# -- shared pieces --------------------------------------------------------------------------

# every finding kind (segtool.findings.FindingKind), so the schemas list them
FindingCode = Literal[tuple(kind.code for kind in FindingKind)]  # type: ignore[valid-type]
SeverityName = Literal[tuple(severity.value for severity in Severity)]  # type: ignore[valid-type]


class Problem(TypedDict):
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

class KafkaBatchItem(TypedDict):
    kind: Literal["batch"]
    position: int
    magic: int
    base_offset: int
    last_offset: int
    size: int
    crc: int
    crc_valid: bool
    codec: str
    timestamp_type: str
    max_timestamp: int
    record_count: NotRequired[int]
    partition_leader_epoch: NotRequired[int]
    base_timestamp: NotRequired[int]
    producer_id: NotRequired[int]
    producer_epoch: NotRequired[int]
    base_sequence: NotRequired[int]
    last_sequence: NotRequired[int]
    is_transactional: NotRequired[bool]
    is_control: NotRequired[bool]
    delete_horizon_ms: NotRequired[int | None]
    file: str


class KafkaRecordItem(TypedDict):
    """A Kafka record, the same whichever command found it (dump, lookup by offset, time or key)."""
    kind: Literal["record"]
    batch_position: int
    offset: int
    timestamp: int
    key_size: int
    value_size: int
    key: str | None
    key_b64: str | None
    value: str | None
    value_b64: str | None
    sequence: NotRequired[int]
    headers: NotRequired[list[Header]]
    control_type: NotRequired[str]
    crc: NotRequired[int]
    crc_valid: NotRequired[bool]
    decoded: NotRequired[dict[str, Any]]  # an internal topic's record: key and value as its schema reads them
    file: str


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


class RocketMQMessageItem(TypedDict):
    """A CommitLog message, the same in dump and in lookup answers (every header field besides these)."""
    kind: Literal["message"]
    phy_offset: int
    topic: str
    queue_id: int
    queue_offset: int
    total_size: int
    store_timestamp: int
    born_timestamp: int
    keys: str | None
    tags: str | None
    uniq_key: str | None
    properties: dict[str, str]
    body: str | None
    body_b64: str | None
    file: str


class OtherItem(TypedDict):
    """Index entries, snapshots, checkpoints, ConsumeQueue units, IndexFile entries, ends of files."""
    kind: Literal["offset_index_entry", "time_index_entry", "aborted_txn", "producer_snapshot", "producer",
                  "checkpoint", "checkpoint_entry", "partition_metadata", "cq_unit", "index_header", "index_entry",
                  "error", "zero_tail", "trailing_bytes", "blank_end"]
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
    reason: Literal["crc_mismatch", "corrupt_framing", "truncated", "zero_filled"]
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
    records_lost: int
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

class LookupAnswer(TypedDict):
    """Every lookup answer: the fields of its method, the record(s) or message(s) it found, notes."""
    record: NotRequired[KafkaRecordItem | ShownRecordItem]
    records: NotRequired[list[KafkaRecordItem | ShownRecordItem]]
    message: NotRequired[RocketMQMessageItem | None]
    messages: NotRequired[list[RocketMQMessageItem]]
    notes: NotRequired[list[str]]


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
    backup_dir: str | None
    removed: list[str]
    notes: list[str]
    inputs: list[InputFile]
    dispatch: dict[str, Any]
    build: dict[str, Any]


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


# -- scan -----------------------------------------------------------------------------------

class Dataset(TypedDict):
    path: str
    rows: int
    files: int


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


class ScanReport(TypedDict):
    out: str
    engine: str
    master: str | None
    datasets: dict[str, Dataset]
    inputs: ScanInputs
    tasks: int
    split_bytes: int
    partitions: list[dict[str, Any]]
    stores: list[dict[str, Any]]
    problems: list[ScanProblem]
    notes: list[str]
    task_results: list[dict[str, Any]]
    timing: dict[str, float | int | None]


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
    messages_kept: int
    messages_lost: int
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
    """What the byte search looked at (``formats.carving.SearchCounts``): each checksum computed is a
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


class CarveSummary(TypedDict):
    finds: int
    placed: int
    unplaced: int
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
    unplaced: list[UnplacedFind]
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
    segment: str
    byte_offset: int
    offset: int  # the log end after truncation
    dropped_until: int  # the log end as the files are: offsets [offset, dropped_until) are dropped
    bytes_dropped: int  # the truncated tail and the segments deleted after it


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


# shaped records and the summary come from the record filters (docs/filters.md)
DumpItem = Union[KafkaBatchItem, KafkaRecordItem, ShownRecordItem, RocketMQMessageItem, DamagedRangeItem, OtherItem,
                 RecordsSummary]

OPEN = {VerifiedFile, LookupAnswer, RocketMQMessageItem, OtherItem, Recovery}

# one schema per command: what it prints (dump: each line)
COMMAND_OUTPUTS = {
    "dump": DumpItem,
    "verify": VerifyReport,
    "lookup": LookupAnswer,
    "rebuild-index": RebuildOutput,
    "trim": TrimReport,
    "index-keys": IndexKeysReport,
    "scan": ScanReport,
    "carve": CarveReport,
    "salvage": SalvageReport,
    "inspect": InspectReport,
    "groups": GroupsReport,
    "transactions": TransactionsReport,
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


def command_schema(command: str) -> dict:
    defs: dict = {}
    root = _schema(COMMAND_OUTPUTS[command], defs)
    what = "each line of" if command == "dump" else "the object printed by"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://segtool.invalid/schemas/{command}.schema.json",
            "title": f"{what} segtool {command} --json", **root, "$defs": dict(sorted(defs.items()))}


def schema_files() -> dict[str, str]:
    """File name -> text of every command's schema, as docs/schemas/ holds them."""
    return {f"{command}.schema.json": json.dumps(command_schema(command), indent=1) + "\n"
            for command in COMMAND_OUTPUTS}


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else "docs/schemas")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in schema_files().items():
        (target / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
