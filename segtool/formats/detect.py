"""File-type detection by name, place in a store, and content."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from segtool.formats import kafka_names

# Kafka renames segment files on deletion, cleaning and swapping
KAFKA_TRANSIENT_SUFFIXES = (kafka_names.DELETED, kafka_names.CLEANED, kafka_names.SWAP)
KAFKA_SUFFIX_KINDS = {
    ".log": "kafka-log",
    ".index": "kafka-offset-index",
    ".timeindex": "kafka-time-index",
    ".txnindex": "kafka-txn-index",
    ".snapshot": "kafka-producer-snapshot",
    # KRaft snapshots (<offset>-<epoch>.checkpoint, bootstrap.checkpoint) are record-batch
    # files; kafka-dump-log dumps them like a .log (Snapshots.SUFFIX)
    ".checkpoint": "kafka-log",
}
KAFKA_NAMED_KINDS = {
    "leader-epoch-checkpoint": "kafka-leader-epoch-checkpoint",
    "partition.metadata": "kafka-partition-metadata",
    "recovery-point-offset-checkpoint": "kafka-offset-checkpoint",
    "replication-offset-checkpoint": "kafka-offset-checkpoint",
    "log-start-offset-checkpoint": "kafka-offset-checkpoint",
    "cleaner-offset-checkpoint": "kafka-offset-checkpoint",
}
NOT_RECOGNISED = "not a recognised Kafka or RocketMQ file"
_TWENTY_DIGITS = re.compile(r"^\d{20}$")
_ROCKETMQ_INDEX_NAME = re.compile(r"^\d{17}$")  # yyyyMMddHHmmssSSS
_DLEDGER_DIR = re.compile(r"^dledger-.+$")  # DLedgerConfig.getDefaultPath: <root>/dledger-<selfId>
# RocketMQ 5.x files named by their place (formats.rocketmq5): (directory names above the file, innermost
# first, None for any) -> kind, for 20-digit mapped files
_ROCKETMQ5_MAPPED_FILES = (
    (("timerlog",), "rocketmq-timerlog"),
    ((None, None, "batchconsumequeue"), "rocketmq-batchconsumequeue"),
    ((None, None, "compactionLog"), "rocketmq-compaction-log"),
    (("compacting", None, None, "compactionLog"), "rocketmq-compaction-log"),
    (("replicating", None, None, "compactionLog"), "rocketmq-compaction-log"),
    ((None, None, "compactionCq"), "rocketmq-compaction-cq"),
    (("compacting", None, None, "compactionCq"), "rocketmq-compaction-cq"),
    (("replicating", None, None, "compactionCq"), "rocketmq-compaction-cq"),
)
# a store root holds one of these beside its lock and abort markers
_STORE_ROOT_ENTRIES = ("commitlog", "consumequeue", "index", "checkpoint", "timerlog", "batchconsumequeue")
_COMMITLOG_MAGICS = {
    bytes.fromhex("daa320a7"),  # MESSAGE_MAGIC_CODE (v1)
    bytes.fromhex("daa320ab"),  # MESSAGE_MAGIC_CODE_V2
    bytes.fromhex("cbd43194"),  # BLANK_MAGIC_CODE
}


@dataclass(frozen=True)
class DetectedFile:
    path: str
    kind: str  # e.g. "kafka-log", "rocketmq-commitlog"; "unknown" when unrecognised

    @property
    def family(self) -> str:
        return self.kind.split("-", 1)[0]


def kafka_suffix(name: str) -> str:
    """The Kafka file suffix with .deleted/.cleaned/.swap removed."""
    for transient in KAFKA_TRANSIENT_SUFFIXES:
        if name.endswith(transient):
            name = name[: -len(transient)]
            break
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def detect(path: str) -> DetectedFile:
    name = os.path.basename(path)
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    parent = parts[-2] if len(parts) > 1 else ""
    grandparent3 = parts[-4] if len(parts) > 3 else ""
    if name in KAFKA_NAMED_KINDS:
        return DetectedFile(path, KAFKA_NAMED_KINDS[name])
    suffix = kafka_suffix(name)
    if suffix in KAFKA_SUFFIX_KINDS:
        return DetectedFile(path, KAFKA_SUFFIX_KINDS[suffix])
    if _TWENTY_DIGITS.match(name):
        if parent == "commitlog":
            return DetectedFile(path, "rocketmq-commitlog")
        if grandparent3 == "consumequeue":
            return DetectedFile(path, "rocketmq-consumequeue")
    if name == "checkpoint" and os.path.isdir(os.path.join(os.path.dirname(path), "commitlog")):
        return DetectedFile(path, "rocketmq-checkpoint")
    if _ROCKETMQ_INDEX_NAME.match(name) and parent == "index":
        return DetectedFile(path, "rocketmq-indexfile")
    rocketmq5 = _rocketmq5_kind(name, parts[:-1])
    if rocketmq5 is not None:
        return DetectedFile(path, rocketmq5)
    if _TWENTY_DIGITS.match(name) and _head(path, 8)[4:8] in _COMMITLOG_MAGICS:
        return DetectedFile(path, "rocketmq-commitlog")
    return DetectedFile(path, "unknown")


def _rocketmq5_kind(name: str, directories: list[str]) -> str | None:
    """The kind of a RocketMQ 5.x store file, or of a store's lock/abort marker, by its place."""
    parent = directories[-1] if directories else ""
    if _TWENTY_DIGITS.match(name):
        above = directories[::-1]
        for pattern, kind in _ROCKETMQ5_MAPPED_FILES:
            if len(above) >= len(pattern) and all(want is None or want == got for want, got in zip(pattern, above)):
                return kind
        if len(above) > 1 and _DLEDGER_DIR.match(above[1]) and parent in ("data", "index"):
            return "rocketmq-dledger-data" if parent == "data" else "rocketmq-dledger-index"
        return None
    if name == "timerwheel":
        return "rocketmq-timerwheel"
    if parent == "config" and name == "timercheck":
        return "rocketmq-timercheck"
    if parent == "config" and name in ("timermetrics", "timermetrics.bak"):
        return "rocketmq-timermetrics"
    if parent == "compaction" and name == "position-checkpoint":
        return "rocketmq-compaction-position"
    if name == "checkpoint" and _DLEDGER_DIR.match(parent):
        return "rocketmq-dledger-checkpoint"
    if name in ("lock", "abort") and _is_store_root(os.sep.join(directories) or os.sep):
        return f"rocketmq-{name}"
    return None


def _is_store_root(directory: str) -> bool:
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(n in _STORE_ROOT_ENTRIES or _DLEDGER_DIR.match(n) for n in names)


def _head(path: str, n: int) -> bytes:
    if not os.path.isfile(path):  # never open a FIFO or device just to sniff it
        return b""
    try:
        with open(path, "rb") as handle:
            return handle.read(n)
    except OSError:
        return b""
