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
    if _TWENTY_DIGITS.match(name) and _head(path, 8)[4:8] in _COMMITLOG_MAGICS:
        return DetectedFile(path, "rocketmq-commitlog")
    return DetectedFile(path, "unknown")


def _head(path: str, n: int) -> bytes:
    if not os.path.isfile(path):  # never open a FIFO or device just to sniff it
        return b""
    try:
        with open(path, "rb") as handle:
            return handle.read(n)
    except OSError:
        return b""
