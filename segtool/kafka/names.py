"""Kafka's file names, in one place (Kafka's ``LogFileUtils``).

A segment's files are ``<base offset><suffix>``: the base offset is the name up
to its first ``.``, parsed as a Java long (``Long.parseLong``: optional sign,
decimal digits, within 64 bits), written zero-padded to 20 digits.  Deletion,
cleaning and swapping append ``.deleted``, ``.cleaned``, ``.swap``.  KRaft
snapshots are ``<end offset>-<epoch>.checkpoint``.  Tiered storage's local copies of
remote segments and indexes (``RemoteIndexCache``, ``remote-log-index-cache/``) are
``<start offset>_<remote segment id>.<suffix>``: the offset in decimal, an underscore, the
segment's Uuid in Kafka's 22-character base64url.
"""

from __future__ import annotations

import os
import re

from segtool.errors import UnreadableInput

LOG = ".log"
INDEX = ".index"
TIME_INDEX = ".timeindex"
TXN_INDEX = ".txnindex"
PRODUCER_SNAPSHOT = ".snapshot"
DELETED = ".deleted"
CLEANED = ".cleaned"
SWAP = ".swap"
KRAFT_SNAPSHOT = ".checkpoint"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
META_PROPERTIES = "meta.properties"  # a log dir's own files (kafka.log_dir)
QUORUM_STATE = "quorum-state"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
METADATA_TOPIC = "__cluster_metadata"  # Topic.CLUSTER_METADATA_TOPIC_NAME: the KRaft metadata log

_JAVA_LONG = re.compile(r"[+-]?\d+")
_KRAFT_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
# Snapshots.parse: a snapshot being written (createTempFile: <id>-<random>.checkpoint.part) or marked for deletion
_KRAFT_SNAPSHOT_LEFTOVER_NAME = re.compile(r"^(\d{20})-(\d{10}).*\.checkpoint\.(part|deleted)$")
_REMOTE_SEGMENT_NAME = re.compile(r"^(\d+)_([A-Za-z0-9_-]{22})\.")
# the broker's own log4j files (config/log4j.properties: kafkaAppender, stateChangeAppender, requestAppender,
# cleanerAppender, controllerAppender, authorizerAppender; kafka-run-class.sh's GC log), rolled hourly by
# DailyRollingFileAppender as <name>.log.yyyy-MM-dd-HH
_BROKER_TEXT_LOG_NAME = re.compile(r"^(server|state-change|kafka-request|log-cleaner|controller|kafka-authorizer"
                                   r"|kafkaServer-gc)\.log(\.[0-9-]+)?$")
_PARTITION_DIR_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?P<renamed>delete|future|stray))?$")


def offset_from_file_name(path) -> int:
    """``LogFileUtils.offsetFromFileName`` (or a tiered-storage cache name's start offset): the base
    offset a file name carries; UnreadableInput otherwise."""
    name = os.path.basename(str(path))
    remote = remote_segment_id(path)
    if remote is not None:
        return remote[0]
    head = name.split(".", 1)[0]
    if not _JAVA_LONG.fullmatch(head) or not -(1 << 63) <= int(head) < (1 << 63):
        raise UnreadableInput(f"file name {name!r} does not start with a Kafka base offset", str(path))
    return int(head)


def has_offset_name(path) -> bool:
    """Does the name start with a base offset Kafka can parse?"""
    try:
        offset_from_file_name(path)
    except UnreadableInput:
        return False
    return True


def is_log_file(path) -> bool:
    """A segment's ``.log`` (``LogFileUtils.isLogFile``, with a name Kafka can load)."""
    return str(path).endswith(LOG) and has_offset_name(path)


def is_broker_text_log(path) -> bool:
    """One of the broker's own text logs (``server.log``, ``state-change.log``, ... and their hourly rolls):
    written for people, never loaded by the broker."""
    return _BROKER_TEXT_LOG_NAME.match(os.path.basename(str(path))) is not None


def is_segment_file_name(path) -> bool:
    """Does the name give a segment file's base offset the way ``LogFileUtils.offsetFromFileName`` reads it
    (or name a KRaft snapshot or ``bootstrap.checkpoint``)?  A ``.log`` without one is no segment:
    ``LogLoader.loadSegmentFiles`` takes every ``*.log`` for one and fails the partition on the name."""
    name = os.path.basename(str(path))
    return name == BOOTSTRAP_CHECKPOINT or kraft_snapshot_id(name) is not None or has_offset_name(name)


def file_name(offset: int, suffix: str) -> str:
    """``LogFileUtils.filenamePrefixFromOffset`` + suffix: 20 zero-padded digits."""
    return f"{offset:020d}{suffix}"


def sibling(path, suffix: str) -> str:
    """The file of the same segment with another suffix (``00…42.log`` -> ``00…42.index``)."""
    directory, name = os.path.split(str(path))
    return os.path.join(directory, name.split(".", 1)[0] + suffix)


def topic_partition(directory_name: str) -> tuple[str, int | None]:
    """(topic, partition) of a partition directory's name (``UnifiedLog.parseTopicPartitionName``,
    with the renamed ``.<uuid>-delete/-future/-stray`` forms); (name, None) for another name."""
    match = _PARTITION_DIR_NAME.match(directory_name)
    if match is None:
        return directory_name, None
    return match.group("topic"), int(match.group("partition"))


def renamed_directory_state(directory_name: str) -> str | None:
    """``"delete"``, ``"future"`` or ``"stray"`` for a partition directory LocalLog renamed
    (``<topic>-<partition>.<uuid>-delete``, ``DELETE_DIR_SUFFIX`` and its siblings); None otherwise."""
    match = _PARTITION_DIR_NAME.match(directory_name)
    return None if match is None else match.group("renamed")


def kraft_snapshot_id(path) -> tuple[int, int] | None:
    """(end offset, epoch) of a KRaft snapshot name (``Snapshots.parse``), None for another name."""
    match = _KRAFT_SNAPSHOT_NAME.match(os.path.basename(str(path)))
    return (int(match.group(1)), int(match.group(2))) if match else None


def kraft_snapshot_leftover(path) -> tuple[int, int, str] | None:
    """(end offset, epoch, ``"part"`` or ``"deleted"``) of a KRaft snapshot being written or marked for
    deletion (``Snapshots.parse``'s partial and deleted paths), None for another name."""
    match = _KRAFT_SNAPSHOT_LEFTOVER_NAME.match(os.path.basename(str(path)))
    return (int(match.group(1)), int(match.group(2)), match.group(3)) if match else None


def remote_segment_id(path) -> tuple[int, str] | None:
    """(start offset, remote segment id) of a tiered-storage cache name
    (``RemoteIndexCache``: ``<offset>_<uuid>.<suffix>``), None for another name."""
    match = _REMOTE_SEGMENT_NAME.match(os.path.basename(str(path)))
    return (int(match.group(1)), match.group(2)) if match else None


def internal_topic(path) -> str | None:
    """The Kafka-internal topic (named ``__...``) whose records a file holds: its partition
    directory's topic, ``__cluster_metadata`` for ``bootstrap.checkpoint``; None for any other file."""
    path = str(path)
    if os.path.basename(path) == BOOTSTRAP_CHECKPOINT:
        return METADATA_TOPIC
    topic, partition = topic_partition(os.path.basename(os.path.dirname(os.path.abspath(path))))
    return topic if partition is not None and topic.startswith("__") else None

