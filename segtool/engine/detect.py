"""File-type detection by name, place in a store, and content."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from segtool.kafka import names as kafka_names
from segtool.rocketmq import names as rocketmq_names
from segtool.formats.file_kinds import Broker, FileKind

# Kafka renames segment files on deletion, cleaning and swapping
KAFKA_TRANSIENT_SUFFIXES = (kafka_names.DELETED, kafka_names.CLEANED, kafka_names.SWAP)
KAFKA_SUFFIX_KINDS = {
    kafka_names.LOG: FileKind.KAFKA_LOG,
    kafka_names.INDEX: FileKind.KAFKA_OFFSET_INDEX,
    kafka_names.TIME_INDEX: FileKind.KAFKA_TIME_INDEX,
    kafka_names.TXN_INDEX: FileKind.KAFKA_TXN_INDEX,
    kafka_names.PRODUCER_SNAPSHOT: FileKind.KAFKA_PRODUCER_SNAPSHOT,
    # KRaft snapshots (<offset>-<epoch>.checkpoint, bootstrap.checkpoint) are record-batch
    # files; kafka-dump-log dumps them like a .log (Snapshots.SUFFIX)
    kafka_names.KRAFT_SNAPSHOT: FileKind.KAFKA_LOG,
}
KAFKA_NAMED_KINDS = {
    "leader-epoch-checkpoint": FileKind.KAFKA_LEADER_EPOCH_CHECKPOINT,
    "partition.metadata": FileKind.KAFKA_PARTITION_METADATA,
    "recovery-point-offset-checkpoint": FileKind.KAFKA_OFFSET_CHECKPOINT,
    "replication-offset-checkpoint": FileKind.KAFKA_OFFSET_CHECKPOINT,
    "log-start-offset-checkpoint": FileKind.KAFKA_OFFSET_CHECKPOINT,
    "cleaner-offset-checkpoint": FileKind.KAFKA_OFFSET_CHECKPOINT,
    kafka_names.META_PROPERTIES: FileKind.KAFKA_META_PROPERTIES,
    kafka_names.QUORUM_STATE: FileKind.KAFKA_QUORUM_STATE,
    kafka_names.CLEAN_SHUTDOWN: FileKind.KAFKA_CLEAN_SHUTDOWN,
}
NOT_RECOGNISED = "not a recognised Kafka or RocketMQ file"
_TWENTY_DIGITS = re.compile(r"^\d{20}$")
# RocketMQ 5.x files named by their place (rocketmq.v5): (directory names above the file, innermost
# first, None for any) -> kind, for 20-digit mapped files
_ROCKETMQ5_MAPPED_FILES = (
    (("timerlog",), FileKind.ROCKETMQ_TIMERLOG),
    ((None, None, "batchconsumequeue"), FileKind.ROCKETMQ_BATCHCONSUMEQUEUE),
    ((None, None, "compactionLog"), FileKind.ROCKETMQ_COMPACTION_LOG),
    (("compacting", None, None, "compactionLog"), FileKind.ROCKETMQ_COMPACTION_LOG),
    (("replicating", None, None, "compactionLog"), FileKind.ROCKETMQ_COMPACTION_LOG),
    ((None, None, "compactionCq"), FileKind.ROCKETMQ_COMPACTION_CQ),
    (("compacting", None, None, "compactionCq"), FileKind.ROCKETMQ_COMPACTION_CQ),
    (("replicating", None, None, "compactionCq"), FileKind.ROCKETMQ_COMPACTION_CQ),
)
_COMMITLOG_MAGICS = {
    bytes.fromhex("daa320a7"),  # MESSAGE_MAGIC_CODE (v1)
    bytes.fromhex("daa320ab"),  # MESSAGE_MAGIC_CODE_V2
    bytes.fromhex("cbd43194"),  # BLANK_MAGIC_CODE
}


@dataclass(frozen=True)
class DetectedFile:
    path: str
    kind: FileKind  # FileKind.UNKNOWN when unrecognised

    @property
    def broker(self) -> Broker | None:
        return self.kind.broker


def kafka_suffix(name: str) -> str:
    """The Kafka file suffix with .deleted/.cleaned/.swap removed."""
    for transient in KAFKA_TRANSIENT_SUFFIXES:
        if name.endswith(transient):
            name = name[: -len(transient)]
            break
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def detect(path: str, entries=rocketmq_names.folder_entries) -> DetectedFile:
    """What ``path`` is, by its name and place (``entries``: what a folder holds, from the disk or from a
    listing of URIs), and for a few names by its first bytes."""
    name = os.path.basename(path)
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    parent = parts[-2] if len(parts) > 1 else ""
    grandparent3 = parts[-4] if len(parts) > 3 else ""
    if name in KAFKA_NAMED_KINDS:
        return DetectedFile(path, KAFKA_NAMED_KINDS[name])
    suffix = kafka_suffix(name)
    # a name without a base offset is no segment file, whatever its suffix (LogFileUtils)
    if suffix in KAFKA_SUFFIX_KINDS and kafka_names.is_segment_file_name(name):
        return DetectedFile(path, KAFKA_SUFFIX_KINDS[suffix])
    if kafka_names.is_broker_text_log(name):
        return DetectedFile(path, FileKind.KAFKA_BROKER_TEXT_LOG)
    if parent == rocketmq_names.CONFIG_DIR and rocketmq_names.is_config_file_name(name):
        return DetectedFile(path, FileKind.ROCKETMQ_CONFIG)
    if _TWENTY_DIGITS.match(name):
        if parent == rocketmq_names.COMMITLOG_DIR:
            return DetectedFile(path, FileKind.ROCKETMQ_COMMITLOG)
        if grandparent3 == rocketmq_names.CONSUMEQUEUE_DIR:
            return DetectedFile(path, FileKind.ROCKETMQ_CONSUMEQUEUE)
    if name == rocketmq_names.CHECKPOINT:
        directory = os.path.dirname(os.path.abspath(path))
        # DLedger keeps a checkpoint of its own in its directory, which holds an index/ too
        if rocketmq_names.is_dledger_home(directory, entries):
            return DetectedFile(path, FileKind.ROCKETMQ_DLEDGER_CHECKPOINT)
        # the store's checkpoint (StorePathConfigHelper.getStoreCheckpoint) beside the root's directories:
        # its data, config/, or only 5.x's (a DLedger store has no commitlog/)
        if rocketmq_names.holds_store_directories(directory, entries):
            return DetectedFile(path, FileKind.ROCKETMQ_CHECKPOINT)
    if rocketmq_names.is_index_file_name(name) and parent == rocketmq_names.INDEX_DIR:
        return DetectedFile(path, FileKind.ROCKETMQ_INDEXFILE)
    rocketmq5 = _rocketmq5_kind(name, parts[:-1])
    if rocketmq5 is not None:
        return DetectedFile(path, rocketmq5)
    if _TWENTY_DIGITS.match(name) and _head(path, 8)[4:8] in _COMMITLOG_MAGICS:
        return DetectedFile(path, FileKind.ROCKETMQ_COMMITLOG)
    return DetectedFile(path, FileKind.UNKNOWN)


_STORE_MARKERS = {rocketmq_names.LOCK: FileKind.ROCKETMQ_LOCK, rocketmq_names.ABORT: FileKind.ROCKETMQ_ABORT}


def _rocketmq5_kind(name: str, directories: list[str]) -> FileKind | None:
    """The kind of a RocketMQ 5.x store file, or of a store's lock/abort marker, by its place."""
    parent = directories[-1] if directories else ""
    if _TWENTY_DIGITS.match(name):
        above = directories[::-1]
        for pattern, kind in _ROCKETMQ5_MAPPED_FILES:
            if len(above) >= len(pattern) and all(want is None or want == got for want, got in zip(pattern, above)):
                return kind
        if len(above) > 1 and rocketmq_names.is_dledger_dir(above[1]) and parent in ("data", rocketmq_names.INDEX_DIR):
            return FileKind.ROCKETMQ_DLEDGER_DATA if parent == "data" else FileKind.ROCKETMQ_DLEDGER_INDEX
        return None
    if name == "timerwheel":
        return FileKind.ROCKETMQ_TIMERWHEEL
    if parent == "config" and name == "timercheck":
        return FileKind.ROCKETMQ_TIMERCHECK
    if parent == "config" and name in ("timermetrics", "timermetrics.bak"):
        return FileKind.ROCKETMQ_TIMERMETRICS
    if parent == "compaction" and name == "position-checkpoint":
        return FileKind.ROCKETMQ_COMPACTION_POSITION
    if name in _STORE_MARKERS and rocketmq_names.is_store_root(os.sep.join(directories) or os.sep):
        return _STORE_MARKERS[name]
    return None


def _head(path: str, n: int) -> bytes:
    if not os.path.isfile(path):  # never open a FIFO or device just to sniff it
        return b""
    try:
        with open(path, "rb") as handle:
            return handle.read(n)
    except OSError:
        return b""
