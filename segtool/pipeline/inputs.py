"""Finding what to scan: Kafka partitions (of log dirs) and RocketMQ stores.

A path may be a Kafka log directory (its subdirectories are partitions), a
partition directory, one ``.log`` segment, a RocketMQ store root (holding
``commitlog/``), a ``commitlog`` directory or one CommitLog file, or any
directory above these (searched to any depth; every other file is reported as skipped).  Names are Kafka's and RocketMQ's own: segments
are ``<20 digits>.log``, CommitLog files ``<20 digits>``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from segtool.engine.walk import walk
from segtool.errors import NothingFound, UnreadableInput
from segtool.formats.kafka_names import is_log_file, offset_from_file_name
from segtool.pipeline import storage

_COMMITLOG_NAME = re.compile(r"^\d{20}$")
# <topic>-<partition>, and the renamed forms Kafka leaves: <topic>-<p>.<uuid>-delete/-future/-stray
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?:delete|future|stray))?$")
_NOT_SCANNED = "scan reads Kafka .log segments and RocketMQ CommitLog files only (verify checks the others)"


@dataclass
class KafkaPartition:
    source_dir: str  # the log dir (parent of the partition dir)
    directory: str
    topic: str
    partition: int | None
    segments: list[tuple[int, str, int]] = field(default_factory=list)  # (base offset, .log path, size)


@dataclass
class RocketMQStore:
    source_dir: str  # the store root
    commitlog_dir: str
    files: list[tuple[int, str, int]] = field(default_factory=list)  # (first physical offset, path, size)


@dataclass
class Inputs:
    kafka: list[KafkaPartition] = field(default_factory=list)
    rocketmq: list[RocketMQStore] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {"path", "reason"}: files found and not scanned
    unreadable: list[dict] = field(default_factory=list)  # {"path", "reason"}: entries that cannot be read

    @property
    def files(self) -> list[tuple[str, int]]:
        """(path, size) of every segment and CommitLog file to scan."""
        return ([(path, size) for p in self.kafka for _, path, size in p.segments]
                + [(path, size) for st in self.rocketmq for _, path, size in st.files])

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


def topic_partition(name: str) -> tuple[str, int | None]:
    match = _PARTITION_DIR.match(name)
    if match is None:
        return name, None
    return match.group("topic"), int(match.group("partition"))


def _partition(directory: str, entries) -> KafkaPartition:
    topic, partition = topic_partition(storage.basename(directory))
    part = KafkaPartition(storage.parent(directory), directory, topic, partition)
    for name, is_dir, size in entries:
        if is_log_file(name) and not is_dir:
            part.segments.append((offset_from_file_name(name), storage.join(directory, name), size))
    part.segments.sort()
    return part


def _local_files(root: str, found: Inputs) -> list[tuple[str, int]]:
    """(path, size) of every readable file below ``root`` at any depth; the rest noted as unreadable."""
    files = []
    for entry in walk([root]):
        if entry.unreadable is not None:
            found.unreadable.append({"path": entry.path, "reason": entry.unreadable})
        else:
            files.append((entry.path, os.path.getsize(entry.path)))
    return files


def _group(files: list[tuple[str, int]], found: Inputs) -> bool:
    """Partitions and CommitLog directories among ``files``; every other file noted as skipped."""
    by_dir: dict[str, list[tuple[str, bool, int]]] = {}
    for path, size in files:
        by_dir.setdefault(storage.parent(path), []).append((storage.basename(path), False, size))
    hit = False
    for directory in sorted(by_dir, key=lambda d: d.split("/")):
        entries = sorted(by_dir[directory])
        if any(is_log_file(name) for name, _, _ in entries):
            found.kafka.append(_partition(directory, entries))
            scanned, hit = is_log_file, True
        elif storage.basename(directory) == "commitlog" and any(_COMMITLOG_NAME.match(n) for n, _, _ in entries):
            store = RocketMQStore(storage.parent(directory), directory)
            store.files = sorted((int(n), storage.join(directory, n), size)
                                 for n, _, size in entries if _COMMITLOG_NAME.match(n))
            found.rocketmq.append(store)
            scanned, hit = _COMMITLOG_NAME.match, True
        else:
            scanned = None
        for name, _, _ in entries:
            if scanned is None or not scanned(name):
                found.skipped.append({"path": storage.join(directory, name), "reason": _NOT_SCANNED})
    return hit


def discover(paths: list[str]) -> Inputs:
    """Every Kafka partition and RocketMQ store named by ``paths`` (absolute paths), in a stable order."""
    found = Inputs()
    for raw in paths:
        path = storage.absolute(raw)
        if not storage.exists(path):
            raise UnreadableInput("no such file or directory", raw)
        if not storage.isdir(path):
            name = storage.basename(path)
            if _COMMITLOG_NAME.match(name) and storage.basename(storage.parent(path)) == "commitlog":
                commitlog_dir = storage.parent(path)
                store = RocketMQStore(storage.parent(commitlog_dir), commitlog_dir)
                store.files.append((int(name), path, storage.size(path)))
                found.rocketmq.append(store)
                continue
            if not is_log_file(name):
                raise UnreadableInput("expected a directory (Kafka log or partition dir, RocketMQ store) "
                                      "or a .log segment", raw)
            directory = storage.parent(path)
            part = _partition(directory, [])
            part.segments.append((offset_from_file_name(name), path, storage.size(path)))
            found.kafka.append(part)
            continue
        files = storage.walk_files(path) if storage.is_uri(path) else _local_files(path, found)
        if not _group(files, found) and not found.unreadable:
            raise NothingFound("no Kafka segments or RocketMQ CommitLog found here", raw)
    # a directory named twice (or found under two arguments) is scanned once
    seen_dirs = set()
    kafka = []
    for part in found.kafka:
        if part.directory not in seen_dirs:
            seen_dirs.add(part.directory)
            kafka.append(part)
        else:
            known = next(p for p in kafka if p.directory == part.directory)
            known.segments = sorted(set(known.segments) | set(part.segments))
    stores: dict[str, RocketMQStore] = {}
    for store in found.rocketmq:
        known = stores.setdefault(store.commitlog_dir, store)
        if known is not store:
            known.files = sorted(set(known.files) | set(store.files))
    return Inputs(kafka, list(stores.values()), found.skipped, found.unreadable)
