"""Every kind of file segtool knows, declared once.

A ``FileKind`` names a file format; its value is the name every output shows
(``"kind": "kafka-log"``).  Each member declares the broker it belongs to, where
it sits (a Kafka partition directory, a Kafka log dir, a RocketMQ store) and,
for the files a RocketMQ store groups, the directory that holds them and how
far below the store root they lie.  ``engine.detect`` recognises the kinds,
``engine.inventory`` groups them, and ``ops.file_formats`` registers how each
is read, checked and salvaged; nothing else spells a kind.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class Broker(StrEnum):
    KAFKA = "kafka"
    ROCKETMQ = "rocketmq"


class Scope(Enum):
    """Where a file belongs, for grouping: one partition, a whole log dir, a store, or nothing known."""

    PARTITION = "partition"
    LOG_DIR = "log_dir"
    STORE = "store"
    NONE = "none"


class FileKind(StrEnum):
    """A file format; its value is what outputs call it."""

    def __new__(cls, value: str, broker: Broker | None, scope: Scope, store_place: tuple[str | None, int] | None = None):
        member = str.__new__(cls, value)
        member._value_ = value
        member.broker = broker
        member.scope = scope
        # (the directory holding the file, how many levels below the store root the file lies);
        # None for the files a store is not found by
        member.store_place = store_place
        return member

    KAFKA_LOG = "kafka-log", Broker.KAFKA, Scope.PARTITION
    KAFKA_OFFSET_INDEX = "kafka-offset-index", Broker.KAFKA, Scope.PARTITION
    KAFKA_TIME_INDEX = "kafka-time-index", Broker.KAFKA, Scope.PARTITION
    KAFKA_TXN_INDEX = "kafka-txn-index", Broker.KAFKA, Scope.PARTITION
    KAFKA_PRODUCER_SNAPSHOT = "kafka-producer-snapshot", Broker.KAFKA, Scope.PARTITION
    KAFKA_LEADER_EPOCH_CHECKPOINT = "kafka-leader-epoch-checkpoint", Broker.KAFKA, Scope.PARTITION
    KAFKA_PARTITION_METADATA = "kafka-partition-metadata", Broker.KAFKA, Scope.PARTITION
    KAFKA_OFFSET_CHECKPOINT = "kafka-offset-checkpoint", Broker.KAFKA, Scope.LOG_DIR
    # a log dir's own files (kafka.log_dir)
    KAFKA_META_PROPERTIES = "kafka-meta-properties", Broker.KAFKA, Scope.LOG_DIR
    KAFKA_QUORUM_STATE = "kafka-quorum-state", Broker.KAFKA, Scope.LOG_DIR
    KAFKA_CLEAN_SHUTDOWN = "kafka-clean-shutdown", Broker.KAFKA, Scope.LOG_DIR
    # the broker's own text logs (server.log, state-change.log, ...): for people, never loaded by the broker
    KAFKA_BROKER_TEXT_LOG = "kafka-broker-text-log", Broker.KAFKA, Scope.NONE

    ROCKETMQ_COMMITLOG = "rocketmq-commitlog", Broker.ROCKETMQ, Scope.STORE, ("commitlog", 2)
    ROCKETMQ_CONSUMEQUEUE = "rocketmq-consumequeue", Broker.ROCKETMQ, Scope.STORE, ("consumequeue", 4)
    ROCKETMQ_INDEXFILE = "rocketmq-indexfile", Broker.ROCKETMQ, Scope.STORE, ("index", 2)
    ROCKETMQ_CHECKPOINT = "rocketmq-checkpoint", Broker.ROCKETMQ, Scope.STORE, (None, 1)
    # RocketMQ 5.x (rocketmq.v5)
    ROCKETMQ_BATCHCONSUMEQUEUE = "rocketmq-batchconsumequeue", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_TIMERLOG = "rocketmq-timerlog", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_TIMERWHEEL = "rocketmq-timerwheel", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_TIMERCHECK = "rocketmq-timercheck", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_TIMERMETRICS = "rocketmq-timermetrics", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_COMPACTION_LOG = "rocketmq-compaction-log", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_COMPACTION_CQ = "rocketmq-compaction-cq", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_COMPACTION_POSITION = "rocketmq-compaction-position", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_DLEDGER_DATA = "rocketmq-dledger-data", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_DLEDGER_INDEX = "rocketmq-dledger-index", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_DLEDGER_CHECKPOINT = "rocketmq-dledger-checkpoint", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_LOCK = "rocketmq-lock", Broker.ROCKETMQ, Scope.STORE
    ROCKETMQ_ABORT = "rocketmq-abort", Broker.ROCKETMQ, Scope.STORE
    # the broker's config/*.json and .bak (rocketmq.config)
    ROCKETMQ_CONFIG = "rocketmq-config", Broker.ROCKETMQ, Scope.STORE

    UNKNOWN = "unknown", None, Scope.NONE


class DirectoryKind(StrEnum):
    """What a directory given to a lookup is."""

    KAFKA_PARTITION = "kafka-partition"
    ROCKETMQ_STORE = "rocketmq-store"
