"""Findings: what `verify`, `scan`, `inspect` and the other reports say about a file, as typed values.

A finding's kind comes from ``FindingKind``: each kind carries its severity
("error" makes a file's status "problems" and the exit code 1; "info" is a
note), the broker it concerns and what that broker does about it.  A few kinds
are errors in one place and notes in another (a zero tail is damage in a Kafka
``.log`` but preallocation in an index or a RocketMQ mapped file); those name
the case in ``info_when`` and only they may be reported as "info".
docs/formats.md's table of kinds is generated from this enum
(``python -m segtool.findings``).

Reports carry ``Finding`` objects; they become their output form (``as_dict``)
only where the report is printed or written (``json_default``, the text
renderers).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable


class Severity(str, Enum):
    ERROR = "error"
    INFO = "info"


class FindingKind(Enum):
    """Every kind of finding: severity, the files it concerns, what it means, what the broker does
    about it, and (for the few that may be notes) when it is only a note."""

    def __new__(cls, severity: Severity, files: str, meaning: str, broker_action: str,
                info_when: str | None = None):
        member = object.__new__(cls)
        member._value_ = len(cls.__members__)
        member.severity = severity
        member.files = files
        member.meaning = meaning
        member.broker_action = broker_action
        member.info_when = info_when
        return member

    @property
    def code(self) -> str:
        """The kind's name in every output (snake_case)."""
        return self.name.lower()

    # -- any file -------------------------------------------------------------------------------
    UNREADABLE = (
        Severity.ERROR, "any", "the file cannot be read (missing, a dangling link or loop, no permission, or not "
        "a format it claims to be); its status is `unreadable`, exit 2",
        "the broker cannot read it either")
    CRC_MISMATCH = (
        Severity.ERROR, "Kafka `.log`, `.snapshot`; RocketMQ CommitLog",
        "the stored checksum differs from the computed one: CRC-32C of a v2 batch or producer snapshot, CRC32 of "
        "a legacy message, CRC32 of a RocketMQ message body",
        "Kafka's recovery truncates the segment at the batch; a bad producer snapshot is deleted and rebuilt "
        "from the log; RocketMQ's recovery (checkCRCOnRecover) stops at the message")
    TRAILING_BYTES = (
        Severity.ERROR, "Kafka `.log`, `.txnindex`; RocketMQ CommitLog",
        "bytes after the last whole batch, entry or message that do not form one",
        "recovery drops them")
    ZERO_TAIL = (
        Severity.ERROR, "Kafka `.log` and indexes; RocketMQ CommitLog, ConsumeQueue",
        "zero bytes after the last batch, entry or message",
        "Kafka's recovery truncates a `.log` there (a torn or preallocated write); indexes and RocketMQ's "
        "mapped files are preallocated and written over",
        "an index or a RocketMQ mapped file: preallocated space not written yet")
    RECOVERY_TRUNCATION = (
        Severity.ERROR, "Kafka `.log`; RocketMQ CommitLog",
        "where the broker's log recovery stops, with its reason",
        "recovery truncates the log here and drops everything after it")
    DAMAGED_RANGE = (
        Severity.ERROR, "Kafka `.log`; RocketMQ CommitLog",
        "bytes after the recovery point that hold no valid batch or message, found by reading past the damage "
        "to the next one whose checksum holds: first and last byte, why, and the offsets lost as the valid "
        "neighbours tell them",
        "the broker's recovery drops them with every valid batch or message after them; `segtool salvage` "
        "keeps those")
    # -- Kafka .log ---------------------------------------------------------------------------------
    CORRUPT_FRAMING = (
        Severity.ERROR, "Kafka `.log`", "a size field no batch can have (Kafka's CorruptRecordException words)",
        "recovery truncates the segment at the batch")
    RECORD_STRUCTURE = (
        Severity.ERROR, "Kafka `.log`", "`--deep`: a record that does not decode",
        "none at recovery (it checks batch CRCs, not records); consumers fail on the batch")
    RECORD_COUNT = (
        Severity.ERROR, "Kafka `.log`", "more records than the batch's offset range holds",
        "none at recovery (the CRC matches); a broker never appends such a batch")
    RELATIVE_OFFSET_OVERFLOW = (
        Severity.ERROR, "Kafka `.log`", "an offset more than 2^31-1 past the segment base (indexes cannot hold it)",
        "LogSegment.recover throws LogSegmentOffsetOverflowException; LogLoader splits the segment "
        "(LocalLog.splitOverflowedSegment) and loads again, dropping nothing")
    OFFSET_BEFORE_BASE = (
        Severity.ERROR, "Kafka `.log`", "a batch below the offset in the file name",
        "when the batch's last offset is below the base too, recovery splits the segment as for an overflow")
    OFFSETS_NOT_INCREASING = (
        Severity.ERROR, "Kafka `.log`", "a batch does not start after the previous one's last offset",
        "none at recovery; fetches skip or repeat records")
    OFFSET_GAP = (
        Severity.INFO, "Kafka `.log`", "absent offsets between batches", "none: compaction and transactions leave "
        "gaps")
    SEGMENT_NAME = (
        Severity.ERROR, "Kafka `.log`", "the first batch does not start at the offset in the file name",
        "fetches below the first batch find nothing; a batch below the name is out of the segment's range",
        "the first batch lies above the name (compaction removed the start)")
    SEGMENTS_OVERLAP = (
        Severity.ERROR, "Kafka `.log`", "its first offset is not above the last offset of the partition's previous "
        "segment (checked across the `.log` files verified together)",
        "none at load; fetches skip or repeat records")
    MISSING_INDEX = (
        Severity.INFO, "Kafka `.log`, `.timeindex`", "the segment's `.index` does not exist",
        "LogSegment.sanityCheck throws NoSuchFileException; the broker recovers the segment and rebuilds it")
    PENDING_SWAP = (
        Severity.INFO, "Kafka `.log.swap`", "an interrupted log cleaning or split",
        "LogLoader completes or discards the swap at start-up (the note says which)")
    SPLIT_BOUNDARY = (
        Severity.ERROR, "Kafka `.log` (scan)", "a scan split read past the point where the next split starts: the "
        "offset index pointed at a batch that is not on the chain of batches",
        "lookups through that index entry land inside a batch")
    # -- Kafka indexes --------------------------------------------------------------------------------
    SANITY_CHECK = (
        Severity.ERROR, "Kafka indexes", "the broker's sanityCheck fails (Kafka's message)",
        "the index is deleted and rebuilt at start-up",
        "the last slot of a preallocated index: checks are skipped when a hot copy is loaded")
    ENTRIES_OUT_OF_ORDER = (
        Severity.ERROR, "Kafka indexes; RocketMQ IndexFile", "an entry's offset, position or timestamp does not "
        "grow", "binary search goes wrong: lookups answer wrongly until the index is rebuilt")
    INDEX_POINTS_NOWHERE = (
        Severity.ERROR, "Kafka indexes", "an entry points past the log or into no batch",
        "lookups through it fail until the index is rebuilt")
    INDEX_OFFSET_MISMATCH = (
        Severity.ERROR, "Kafka `.index`", "the entry's offset is not the last offset of the batch at its position "
        "(kafka-dump-log --verify-index-only)", "fetches start from the wrong batch",
        "the entry is a preallocated zero slot")
    INDEXED_OFFSET_NOT_FOUND = (
        Severity.ERROR, "Kafka `.timeindex`", "no batch ends at the indexed offset",
        "timestamp lookups answer from the wrong batch", "the entry is a preallocated zero slot")
    INDEXED_OFFSET_INSIDE_BATCH = (
        Severity.INFO, "Kafka `.timeindex`", "the indexed offset lies inside a batch, as older brokers indexed",
        "none")
    TIMESTAMP_MISMATCH = (
        Severity.ERROR, "Kafka `.timeindex`", "the entry's timestamp is not the max timestamp of its batch",
        "timestamp lookups answer with the wrong offset")
    TIMESTAMP_OUT_OF_ORDER = (
        Severity.ERROR, "Kafka `.timeindex`", "an entry's timestamp is not above the previous one",
        "timestamp lookups may stop early")
    MISSING_LOG = (
        Severity.INFO, "Kafka indexes", "no `.log` beside it to check against", "an index without its log is "
        "deleted at start-up")
    # -- Kafka state files ------------------------------------------------------------------------------
    SNAPSHOT_STRUCTURE = (
        Severity.ERROR, "Kafka `.snapshot`", "the producer snapshot does not parse (Kafka's words)",
        "the snapshot is deleted and producer state rebuilt from the log")
    CHECKPOINT_FORMAT = (
        Severity.ERROR, "Kafka `leader-epoch-checkpoint`", "the checkpoint does not parse (Kafka's words)",
        "the broker fails to load the partition")
    FORMAT = (
        Severity.ERROR, "Kafka offset checkpoints, `partition.metadata`, `meta.properties`, `quorum-state`",
        "the file does not parse",
        "the broker fails to start or to load the partition")
    LEADER_EPOCH = (
        Severity.ERROR, "Kafka `leader-epoch-checkpoint`", "batches carry an epoch the checkpoint does not list, "
        "or another than the one it gives their offsets", "truncation after a leader change keeps or drops the "
        "wrong records", "the epoch's first batch lies after the checkpoint's start offset (retention or "
        "compaction removed the start)")
    # -- Kafka log dir (inspect) ------------------------------------------------------------------------
    NO_CLEAN_SHUTDOWN_MARKER = (
        Severity.INFO, "Kafka log dir", "`.kafka_cleanshutdown` is absent: the broker did not stop cleanly (or the "
        "copy was taken while it ran)", "LogManager.loadLogs recovers every partition from the segment holding "
        "its recovery point on")
    CHECKPOINT_BEYOND_LOG_END = (
        Severity.ERROR, "Kafka offset checkpoints", "a recovery point, replication offset (high watermark), log "
        "start or cleaner offset beyond the partition's log end: data the broker had flushed, acknowledged or "
        "kept is missing", "the recovery point and high watermark are lowered to the log end; a log start offset "
        "beyond it makes LogLoader delete every segment; the cleaner resets its dirty offset")
    CHECKPOINT_WITHOUT_PARTITION = (
        Severity.ERROR, "Kafka offset checkpoints", "an entry for a partition that has no directory in the log "
        "dir (not copied, or deleted after the checkpoint was written)", "none: the entry is ignored")
    PARTITION_WITHOUT_CHECKPOINT = (
        Severity.INFO, "Kafka `recovery-point-offset-checkpoint`, `replication-offset-checkpoint`", "a partition "
        "directory with no entry (created after the last checkpoint, or the checkpoint was lost)",
        "its recovery point is 0: after an unclean shutdown every segment is recovered")
    TOPIC_ID_MISMATCH = (
        Severity.ERROR, "Kafka `partition.metadata`", "partitions of one topic carry different topic ids (a topic "
        "deleted and recreated, or directories mixed from two clusters)", "a broker whose metadata names another "
        "id for the topic treats the directory as a stray log and deletes it")
    KRAFT_SNAPSHOT_MISMATCH = (
        Severity.ERROR, "KRaft snapshot `<end offset>-<epoch>.checkpoint`", "the snapshot's contents disagree "
        "with its name (its batches' leader epoch, the metadata log's epoch at its end offset) or it lacks its "
        "header or footer control record", "the controller loads the state of another point of the log than the "
        "name says, or fails to read the snapshot")
    NOT_A_PARTITION_DIRECTORY = (
        Severity.ERROR, "Kafka log dir", "a directory in the log dir whose name is not `<topic>-<partition>` "
        "(nor a renamed `-delete`/`-future`/`-stray` one)", "LogManager.loadLogs fails on it "
        "(parseTopicPartitionName) and the broker does not start")
    # -- Kafka coordinator topics and transactions (groups, transactions) -----------------------------------
    COORDINATOR_RECORD = (
        Severity.ERROR, "Kafka `__consumer_offsets`, `__transaction_state`", "a record the coordinator's serde "
        "rejects: an unknown record type or version, or bytes that do not parse as it",
        "the group coordinator skips a record of an unknown type; any other failure stops it loading the "
        "partition's groups or transactional ids")
    HANGING_TRANSACTION = (
        Severity.ERROR, "Kafka partitions with transactional data", "a transaction with data in a partition and no "
        "COMMIT or ABORT marker after it, open longer than its timeout, or already completed (or never known) "
        "by the transaction coordinator", "the last stable offset stays at the transaction's first offset: "
        "read_committed consumers stop there until the coordinator aborts it, or for ever when the coordinator "
        "has no ongoing transaction to abort (`kafka-transactions.sh abort`)")
    TRANSACTION_DISAGREEMENT = (
        Severity.ERROR, "Kafka `__transaction_state` and transactional partitions", "the transaction coordinator's "
        "log and a partition's control records disagree: a completed transaction whose marker in a partition "
        "it names is missing or of the other kind",
        "none: the coordinator believes the markers were written; consumers see what the partition holds")
    TXN_INDEX_MISMATCH = (
        Severity.ERROR, "Kafka `.txnindex`", "the aborted transactions in a segment's `.txnindex` differ from "
        "those its control records give", "read_committed fetches filter aborted records with the index: data "
        "of an aborted transaction missing from it is delivered, a wrong entry hides committed records; only "
        "recovery rebuilds the index")
    # -- RocketMQ CommitLog -----------------------------------------------------------------------------
    BAD_MAGIC = (
        Severity.ERROR, "RocketMQ CommitLog", "neither a message nor a BLANK magic code where a record starts",
        "recovery stops reading there and cuts the CommitLog")
    CORRUPT_MESSAGE = (
        Severity.ERROR, "RocketMQ CommitLog", "the message's fields do not add up to its totalSize",
        "checkMessageAndReturnSize fails: recovery cuts the CommitLog there")
    TORN_MESSAGE = (
        Severity.ERROR, "RocketMQ CommitLog", "a message whose bytes are zero from some point to the end of the "
        "file (torn write)", "recovery cuts the CommitLog before it")
    TRUNCATED_MESSAGE = (
        Severity.ERROR, "RocketMQ CommitLog", "a message whose totalSize runs past the end of the file",
        "recovery cuts the CommitLog before it")
    DATA_AFTER_ZEROS = (
        Severity.ERROR, "RocketMQ CommitLog, ConsumeQueue", "zeros where the next record should start, but data "
        "again after them: a hole (lost or torn write)", "recovery stops at the zeros; the data after them is lost")
    BLANK_SIZE = (
        Severity.ERROR, "RocketMQ CommitLog", "the BLANK end-of-file record's size is not the bytes left in the file",
        "none: the size is not read back")
    NOT_DISPATCHABLE = (
        Severity.ERROR, "RocketMQ CommitLog", "a message the dispatcher refuses (a DELAY property that does not "
        "parse)", "checkMessageAndReturnSize fails: recovery cuts the CommitLog there")
    PHYSICAL_OFFSET = (
        Severity.ERROR, "RocketMQ CommitLog", "the PHYSICALOFFSET field is not where the message is",
        "none at recovery; message ids built from it point elsewhere")
    BODY_DECOMPRESS = (
        Severity.ERROR, "RocketMQ CommitLog", "`--deep`: a compressed body that does not inflate",
        "consumers fail to decode the message")
    QUEUE_OFFSET_SEQUENCE = (
        Severity.INFO, "RocketMQ CommitLog", "a queue offset that does not follow the queue's previous message in "
        "the file (the previous offset + 1, or + INNER_NUM after an inner batch, which takes that many: "
        "CommitLog.getMessageNum)", "none: queue offsets jump across restarts and deletions")
    NOT_IN_CONSUMEQUEUE = (
        Severity.INFO, "RocketMQ CommitLog", "messages written but not yet dispatched to their ConsumeQueue",
        "recovery dispatches them")
    NOT_INDEXED = (
        Severity.INFO, "RocketMQ CommitLog", "messages with keys after the newest IndexFile entry",
        "only recovery after an unclean shutdown indexes them; key lookups miss them otherwise")
    EMPTY_FILE = (
        Severity.INFO, "RocketMQ CommitLog", "a file of zeros (preallocated, never written)", "none")
    FILE_SIZE = (
        Severity.ERROR, "RocketMQ CommitLog, ConsumeQueue", "the file is not the configured mapped file size",
        "MappedFileQueue.load refuses it: the broker does not start")
    FILE_NAME = (
        Severity.ERROR, "RocketMQ CommitLog, ConsumeQueue", "the start offset in the name is not a multiple of the "
        "file size", "offsets resolve to the wrong file")
    SEGMENT_DELETED_BY_RECOVERY = (
        Severity.ERROR, "Kafka .log", "a segment after the one Kafka's load truncates",
        "LogLoader.recoverLog deletes it with every record it holds", "the segment holds no record")
    DELETED_BY_RECOVERY = (
        Severity.ERROR, "RocketMQ CommitLog", "a file after the point where recovery cuts the CommitLog",
        "truncateDirtyFiles deletes it with its messages", "the file holds no messages")
    MISSING_MAPPED_FILE = (
        Severity.ERROR, "RocketMQ CommitLog, ConsumeQueue", "the file names jump by more than the file size: a "
        "file between them is missing", "MappedFileQueue loads the files it finds; offsets in the gap resolve to "
        "no file and lookups there fail")
    # -- RocketMQ ConsumeQueue ----------------------------------------------------------------------------
    INVALID_UNIT = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit with an impossible offset or size",
        "ConsumeQueue recovery stops at it and truncates the queue")
    CONSUME_QUEUE_TRUNCATION = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "units the broker's start-up drops: written after the first "
        "invalid unit (ConsumeQueue.recover), or pointing at or past the point where the CommitLog is cut "
        "(truncateDirtyLogicFiles)", "the units are removed; consumers lose those queue offsets unless a "
        "re-dispatch writes them again")
    PARTIAL_UNIT = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "the file size is not a multiple of the 20-byte unit",
        "the partial unit is ignored")
    ZERO_UNITS = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "zero units at the end of a file that is not the queue's last",
        "units are missing: consumers skip their messages")
    UNITS_OUT_OF_ORDER = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit that does not point after the previous one",
        "consumers get messages out of order")
    UNIT_BEYOND_COMMITLOG = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit past the end of the CommitLog",
        "recovery truncates the queue to the CommitLog's end")
    UNIT_MISMATCH = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit that disagrees with its message (size, queue, offset)",
        "consumers get another message than the unit describes")
    UNIT_POINTS_AT_BAD_DATA = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit pointing at bytes that are no valid message",
        "pulls of the unit fail")
    UNIT_POINTS_NOWHERE = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit pointing at zeros or a BLANK record",
        "pulls of the unit find no message")
    TAGS_CODE_MISMATCH = (
        Severity.ERROR, "RocketMQ ConsumeQueue", "a unit's tagsCode is not its message's TAGS hash",
        "tag filtering on the broker keeps or drops the wrong messages",
        "a delayed message (its tagsCode is a delivery time under the default delay levels)")
    BEYOND_RECOVERY_POINT = (
        Severity.INFO, "RocketMQ ConsumeQueue, IndexFile", "units or entries pointing past the point where "
        "recovery cuts the CommitLog", "recovery removes the units; the index keeps its entries")
    NO_COMMITLOG = (
        Severity.INFO, "RocketMQ ConsumeQueue, IndexFile", "no CommitLog beside the file to check it against",
        "none")
    # -- RocketMQ IndexFile ---------------------------------------------------------------------------------
    GEOMETRY = (
        Severity.ERROR, "RocketMQ IndexFile", "the slot and entry counts cannot be inferred from the file",
        "the broker maps it with its configured geometry; a file of another size fails to load",
        "read with the geometry of the store's other index files")
    INDEX_COUNT = (
        Severity.ERROR, "RocketMQ IndexFile", "indexCount disagrees with the entries written or the file",
        "lookups see the wrong number of entries")
    ENTRIES_BEYOND_INDEX_COUNT = (
        Severity.ERROR, "RocketMQ IndexFile", "entries written past indexCount (header not flushed or damaged)",
        "the entries are ignored")
    EMPTY_ENTRIES = (
        Severity.ERROR, "RocketMQ IndexFile", "zero entries among the written ones", "chains through them stop")
    ENTRY_ZERO_USED = (
        Severity.ERROR, "RocketMQ IndexFile", "entry 0, never written by RocketMQ, is not zero", "none")
    NEGATIVE_KEY_HASH = (
        Severity.ERROR, "RocketMQ IndexFile", "a negative keyHash (indexKeyHashMethod never gives one)",
        "no lookup finds the entry")
    SLOT_OUT_OF_RANGE = (
        Severity.ERROR, "RocketMQ IndexFile", "a slot points outside the written entries",
        "lookups through the slot find nothing")
    SLOT_HASH_MISMATCH = (
        Severity.ERROR, "RocketMQ IndexFile", "a slot points at an entry of another slot",
        "lookups through the slot miss its keys")
    CHAIN_CROSSES_SLOTS = (
        Severity.ERROR, "RocketMQ IndexFile", "an entry's prevIndex links to another slot's entry",
        "lookups follow another slot's chain")
    PREV_OUT_OF_RANGE = (
        Severity.ERROR, "RocketMQ IndexFile", "a prevIndex outside the written entries",
        "selectPhyOffset ends the chain there")
    PREV_SELF_LOOP = (
        Severity.ERROR, "RocketMQ IndexFile", "a prevIndex pointing at its own entry",
        "selectPhyOffset stops there: older entries of the chain are never found")
    PREV_FORWARD_POINTER = (
        Severity.ERROR, "RocketMQ IndexFile", "a prevIndex pointing forward (chains only point back)",
        "lookups may revisit entries")
    PREV_CYCLE = (
        Severity.ERROR, "RocketMQ IndexFile", "prevIndex pointers that close a cycle",
        "selectPhyOffset repeats the cycle until its result is full, or forever")
    UNREACHABLE_ENTRIES = (
        Severity.ERROR, "RocketMQ IndexFile", "written entries no slot's chain reaches",
        "key lookups never find them")
    HASH_SLOT_COUNT = (
        Severity.INFO, "RocketMQ IndexFile", "the header's hashSlotCount is not the slots in use",
        "none: informational")
    HEADER_BEGIN_PHY_OFFSET = (
        Severity.ERROR, "RocketMQ IndexFile", "beginPhyOffset is not entry 1's", "none at lookup")
    HEADER_END_PHY_OFFSET = (
        Severity.ERROR, "RocketMQ IndexFile", "endPhyOffset is not the last entry's",
        "recovery decides what to re-index from it")
    HEADER_BEGIN_TIMESTAMP = (
        Severity.ERROR, "RocketMQ IndexFile", "beginTimestamp is not entry 1's message's store time",
        "time-bounded lookups misdate every entry")
    HEADER_END_TIMESTAMP = (
        Severity.ERROR, "RocketMQ IndexFile", "endTimestamp is not the last entry's message's store time",
        "time-bounded lookups and abnormal recovery misjudge the file")
    HEADER_TIMESTAMPS = (
        Severity.ERROR, "RocketMQ IndexFile", "endTimestamp is before beginTimestamp",
        "time-bounded lookups skip the file")
    ENTRY_TIME_OUTSIDE_HEADER = (
        Severity.ERROR, "RocketMQ IndexFile", "entries whose timeDiff lies outside the header's time span",
        "time-bounded lookups drop them")
    ENTRY_PHY_OUTSIDE_HEADER = (
        Severity.ERROR, "RocketMQ IndexFile", "entries outside [beginPhyOffset, endPhyOffset]", "none at lookup")
    ENTRY_POINTS_NOWHERE = (
        Severity.ERROR, "RocketMQ IndexFile", "an entry whose phyOffset holds no message",
        "lookups return an offset with no message")
    ENTRY_KEY_MISMATCH = (
        Severity.ERROR, "RocketMQ IndexFile", "an entry's keyHash is no key of its message",
        "lookups by the key fetch another message (and filter it out)")
    ENTRY_ROLLBACK_MESSAGE = (
        Severity.ERROR, "RocketMQ IndexFile", "an entry for a rolled-back transaction message (never indexed)",
        "lookups return a rolled-back message")
    ENTRY_TIME_MISMATCH = (
        Severity.ERROR, "RocketMQ IndexFile", "an entry's timeDiff is not its message's store time",
        "time-bounded lookups keep or drop it wrongly")
    DROPPED_BY_RECOVERY = (
        Severity.INFO, "RocketMQ IndexFile", "a file newer than the checkpoint's indexMsgTimestamp after an "
        "unclean shutdown", "abnormal recovery deletes it and rebuilds its entries from the CommitLog")
    # -- RocketMQ checkpoint and store ------------------------------------------------------------------------
    CHECKPOINT_SIZE = (
        Severity.ERROR, "RocketMQ checkpoint", "the checkpoint is shorter than its three timestamps",
        "StoreCheckpoint reads zeros: recovery starts from the first file")
    CHECKPOINT_TIMESTAMP = (
        Severity.ERROR, "RocketMQ checkpoint", "a negative timestamp", "abnormal recovery starts from the wrong file",
        "a timestamp is 0: nothing was flushed yet")
    CHECKPOINT_AHEAD_OF_DATA = (
        Severity.ERROR, "RocketMQ checkpoint", "a timestamp later than the newest message in the CommitLog",
        "none: flushed messages are missing, the CommitLog lost data")
    CHECKPOINT_AHEAD_OF_INDEX = (
        Severity.ERROR, "RocketMQ checkpoint", "indexMsgTimestamp later than every IndexFile's endTimestamp",
        "none: an index file is missing, key lookups miss its messages")
    STALE_CHECKPOINT = (
        Severity.INFO, "RocketMQ checkpoint", "the checkpoint is behind the newest message",
        "recovery re-reads the messages after it")
    UNCLEAN_SHUTDOWN = (
        Severity.INFO, "RocketMQ checkpoint", "the `abort` file is present: the broker did not stop cleanly",
        "abnormal recovery: CommitLog checked from the checkpoint's file, newer index files rebuilt")
    STORE_DOES_NOT_LOAD = (
        Severity.INFO, "RocketMQ checkpoint", "CommitLog files without the configured size",
        "the broker does not start on this store")
    # -- RocketMQ 5.x store files (rocketmq/v5.py) ----------------------------------------------------
    PROPERTY_CRC_MISMATCH = (
        Severity.ERROR, "RocketMQ 5.x CommitLog (and DLedger, compaction logs)", "a message's `__CRC32#` property "
        "(enabledAppendPropCRC) is not the CRC32 of the message before its last 20 bytes, or does not parse",
        "with forceVerifyPropCRC, checkMessageAndReturnSize fails: recovery cuts the CommitLog at the message; "
        "otherwise none (the body CRC is checked instead)",
        "a compaction log: CompactionLog copies the message and rewrites its PHYSICALOFFSET after the CRC was "
        "computed at the CommitLog offset")
    CHECKPOINT_OFFSET = (
        Severity.ERROR, "RocketMQ 5.x checkpoint", "masterFlushedOffset or confirmPhyOffset is negative or beyond "
        "the end of the CommitLog", "recovery corrects confirmOffset into [minPhyOffset, the recovered end] "
        "(logged 'correct confirmOffset'); a slave truncates to masterFlushedOffset")
    BATCH_UNIT_INVALID = (
        Severity.ERROR, "RocketMQ 5.x BatchConsumeQueue, compaction queue", "a unit recovery refuses (offset < 0, "
        "size <= 0, msgBaseOffset < 0 or batchSize <= 0) before the end of the written units, or zero units "
        "in a file that is not the queue's last", "BatchConsumeQueue.recover stops there and truncates the queue")
    BATCH_UNIT_MISMATCH = (
        Severity.ERROR, "RocketMQ 5.x BatchConsumeQueue, compaction queue", "a unit that disagrees with its "
        "message (size, msgBaseOffset, batchSize, store time, tagsCode) or points at no message",
        "pulls through the unit return another message or none")
    BATCH_UNITS_OUT_OF_ORDER = (
        Severity.ERROR, "RocketMQ 5.x BatchConsumeQueue, compaction queue", "a unit whose msgBaseOffset is not "
        "after the previous unit's batch, or whose commitLogOffset is not after the previous one",
        "offset lookups (a binary search on msgBaseOffset) find the wrong unit")
    TIMER_LOG_UNIT = (
        Severity.ERROR, "RocketMQ 5.x timer log", "a unit whose size is not 52 or whose magic is not a timer "
        "magic, a BLANK record whose size is not the bytes left, or bytes after the end",
        "recoverAndRevise stops there and truncates the timer log: timer messages after it are lost")
    TIMER_WHEEL_SIZE = (
        Severity.ERROR, "RocketMQ 5.x timer wheel", "the file is not 2 x 7 x 86400 slots of 32 bytes",
        "the TimerWheel constructor throws ('Timer wheel length ... != expected'): the broker does not start")
    TIMER_SLOT_MISMATCH = (
        Severity.ERROR, "RocketMQ 5.x timer wheel", "a slot whose time does not belong at its index, whose "
        "positions are outside the timer log, or whose unit chain (lastPos back through prevPos to firstPos) "
        "does not hold units of the slot's time", "the dequeue side reads the wrong units for that second; "
        "recovery rewrites slots from the timer log only after the checkpoint's flush position",
        "the chain count differs from num, which deletes and rolls also change")
    TIMER_CHECKPOINT_OFFSET = (
        Severity.ERROR, "RocketMQ 5.x timercheck", "a negative field, or lastTimerLogFlushPos beyond the timer log",
        "recovery re-reads the timer log from lastTimerLogFlushPos (or 0)")
    TIMER_METRICS = (
        Severity.ERROR, "RocketMQ 5.x timermetrics", "the file is empty or does not parse, or a topic's count "
        "is negative", "TimerMetrics.load falls back to the `.bak`; a bad count shows in the timing statistics")
    DLEDGER_ENTRY = (
        Severity.ERROR, "RocketMQ 5.x DLedger CommitLog", "an entry header DLedgerMmapFileStore.recover refuses "
        "(pos, size, magic, index sequence, term order), or bytes after the last entry",
        "recovery stops there and truncates the raft log: the entries after it are lost on this node")
    DLEDGER_INDEX_MISMATCH = (
        Severity.ERROR, "RocketMQ 5.x DLedger index", "an index entry that differs from its data entry (magic, "
        "pos, size, index, term), or points at none", "recovery truncates the index there and rewrites it from "
        "the data")
    DLEDGER_MESSAGE = (
        Severity.ERROR, "RocketMQ 5.x DLedger CommitLog", "the body of an entry is not a valid CommitLog message, "
        "or its PHYSICALOFFSET is not the entry's pos + 48",
        "DLedgerCommitLog.checkMessageAndReturnSize fails: dispatch and recovery stop at the entry")
    COMPACTION_ORDER = (
        Severity.ERROR, "RocketMQ 5.x compaction log", "a message whose queue offset is not above the previous "
        "one's, or of another topic or queue than its directory", "compaction keeps one message per key in "
        "queue order: pulls of the compacted topic return the messages out of order")
    COMPACTION_FILE_MISMATCH = (
        Severity.ERROR, "RocketMQ 5.x compaction log and queue", "a compaction queue file with no compaction "
        "log file of its name, a log file with no queue file of its name (TopicPartitionLog.roll creates each "
        "queue file at its log file's start offset), or a queue unit that points outside its log file",
        "TopicPartitionLog.sanityCheck throws ('log file mismatch with consumeQueue file'): CompactionStore.load "
        "fails and, with enableCompaction, the broker does not start")
    # -- RocketMQ config files and consumer progress (groups) ---------------------------------------------
    CONFIG_SYNTAX = (
        Severity.ERROR, "RocketMQ `config/*.json` and `.bak`", "the file is empty, does not parse as fastjson "
        "reads it, or holds a value of another type than RocketMQ's class declares (file and byte offset)",
        "ConfigManager.load logs the error and loads the `.bak` instead (5.x deletes the file first); when the "
        "`.bak` fails too the broker does not start")
    CONFIG_BACKUP_DIFFERS = (
        Severity.INFO, "RocketMQ `config/*.json.bak`", "the `.bak` differs from its file: it holds the version "
        "before the last persist, and the keys listed are what that persist changed",
        "none while the file reads; when it does not, the broker loads the `.bak` and the changes are lost")
    CONFIG_ENTRY_IGNORED = (
        Severity.INFO, "RocketMQ `consumerOffset.json`", "an offsetTable key that is not `topic@group`",
        "the broker never matches it to a group (it splits keys on `@` and wants two parts)")
    TOPIC_NOT_CONFIGURED = (
        Severity.INFO, "RocketMQ `consumerOffset.json`, `topics.json`", "a group's committed topic that "
        "`topics.json` does not list", "getConsumeStats skips the topic: `mqadmin consumerProgress` does not "
        "show it")
    COMMITTED_BEYOND_QUEUE = (
        Severity.ERROR, "RocketMQ `consumerOffset.json`, ConsumeQueue", "a committed offset beyond the queue's "
        "max offset: the ConsumeQueue lost units, or the offsets belong to another store",
        "pulls answer OFFSET_OVERFLOW_BADLY and the broker moves the consumer back to the max offset "
        "(PULL_OFFSET_MOVED); the lag shows negative")
    COMMITTED_BELOW_QUEUE = (
        Severity.INFO, "RocketMQ `consumerOffset.json`, ConsumeQueue", "a committed offset below the queue's "
        "min offset: messages were deleted (file retention) before the group consumed them",
        "pulls answer OFFSET_TOO_SMALL and the broker moves the consumer to the min offset (PULL_OFFSET_MOVED)")
    DELAY_OFFSET_OUT_OF_RANGE = (
        Severity.ERROR, "RocketMQ `delayOffset.json`, ConsumeQueue", "a delay level's offset outside its "
        "SCHEDULE_TOPIC_XXXX queue's [min, max] offsets",
        "ScheduleMessageService.correctDelayOffset moves it into the range at start-up (logs 'correct delay "
        "offset'): delayed messages are delivered again or skipped")


@dataclass(frozen=True)
class Finding:
    """One finding: its kind, where (byte offset in the file), which offset it concerns
    (a Kafka offset or a RocketMQ physical offset), and the message."""

    kind: FindingKind
    byte_offset: int | None
    message: str
    severity: Severity | None = None  # the kind's own unless the kind allows "info" (info_when)
    offset: int | None = None

    def __post_init__(self):
        if self.severity is None:
            object.__setattr__(self, "severity", self.kind.severity)
        elif self.severity != self.kind.severity and self.kind.info_when is None:
            raise ValueError(f"{self.kind.code} is always {self.kind.severity.value}")

    def as_dict(self) -> dict:
        """The output form (docs/schemas: Problem)."""
        return {"kind": self.kind.code, "severity": self.severity.value, "byte_offset": self.byte_offset,
                "offset": self.offset, "message": self.message}


def finding(kind: FindingKind, byte_offset: int | None, message: str, *, info: bool = False,
            offset: int | None = None) -> Finding:
    """A finding; ``info`` reports a kind that allows it as a note."""
    return Finding(kind, byte_offset, message, Severity.INFO if info else None, offset)


def json_default(value) -> dict:
    """``json.dumps``'s ``default`` for a report: a Finding in its output form."""
    if isinstance(value, Finding):
        return value.as_dict()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def has_errors(problems: Iterable[Finding]) -> bool:
    return any(p.severity is Severity.ERROR for p in problems)


def errors_first(problems: Iterable[Finding]) -> list[Finding]:
    """Errors, then notes, each in the order found (the problems-first view)."""
    return sorted(problems, key=lambda p: p.severity is not Severity.ERROR)


class Findings:
    """The findings of one file, at most ``per_kind`` listed per kind; the rest are counted in one
    summary finding of that kind."""

    def __init__(self, per_kind: int = 10):
        self.per_kind = per_kind
        self.items: list[Finding] = []
        self._counts: Counter = Counter()
        self._first_hidden: dict[FindingKind, Finding] = {}

    def add(self, kind: FindingKind, byte_offset: int | None, message: str, *, info: bool = False,
            offset: int | None = None) -> None:
        item = finding(kind, byte_offset, message, info=info, offset=offset)
        self._counts[kind] += 1
        if self._counts[kind] <= self.per_kind:
            self.items.append(item)
        else:
            self._first_hidden.setdefault(kind, item)

    def result(self) -> list[Finding]:
        out = list(self.items)
        for kind, first in self._first_hidden.items():
            hidden = self._counts[kind] - self.per_kind
            out.append(replace(first, message=f"{hidden} more {kind.code} problems not listed (the first at byte "
                                              f"{first.byte_offset}: {first.message})"))
        return out


def markdown_table() -> str:
    """The table of kinds in docs/formats.md."""
    lines = ["| kind | severity | files | what it means | what the broker does |", "|---|---|---|---|---|"]
    for kind in FindingKind:
        severity = kind.severity.value + (f" (info: {kind.info_when})" if kind.info_when else "")
        lines.append(f"| `{kind.code}` | {severity} | {kind.files} | {kind.meaning} | {kind.broker_action} |")
    return "\n".join(lines) + "\n"


TABLE_START = "<!-- finding kinds: generated from segtool/findings.py, do not edit -->\n"
TABLE_END = "<!-- end of finding kinds -->"


def write_table(markdown_path: str) -> None:
    """Put the current table between the markers of a Markdown file."""
    with open(markdown_path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(TABLE_START) + len(TABLE_START)
    end = text.index(TABLE_END)
    with open(markdown_path, "w", encoding="utf-8") as f:
        f.write(text[:start] + markdown_table() + text[end:])


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:
        write_table(sys.argv[1])
    else:
        print(markdown_table(), end="")
