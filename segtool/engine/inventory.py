"""What the paths given to a command hold: Kafka partitions, RocketMQ stores, every other file.

The one place that turns paths into log dirs -> partitions / stores -> files
(Kafka's ``LogManager`` finding the partitions of its log dirs, RocketMQ's
store layout).  Files are found by the one walker (``engine.walk``: any depth,
every entry accounted for) and classified by ``engine.detect``; a partition is
the directory of its segment files, a store the root above ``commitlog/``,
``consumequeue/``, ``index/`` and ``checkpoint``.  ``classify`` groups a
listing that came from elsewhere (a remote file system) the same way.  Every
command and the pipeline start here; ``PartitionView`` and ``StoreView`` then
load what a broker loads.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Iterable

from segtool.engine.walk import walk
from segtool.errors import NothingFound, UnreadableInput
from segtool.findings import Finding, FindingKind, finding
from segtool.engine.detect import DetectedFile, detect
from segtool.formats.file_kinds import Broker, DirectoryKind, FileKind, Scope
from segtool.kafka.names import is_log_file, offset_from_file_name, topic_partition
from segtool.rocketmq import names as rocketmq_names


@dataclass(frozen=True)
class FoundFile:
    path: str
    kind: FileKind  # FileKind.UNKNOWN when not recognised or unreadable
    size: int
    unreadable: str | None = None  # why the entry cannot be read (a dangling link, a loop, ...)


@dataclass
class Partition:
    """A Kafka partition directory and those of its files that were named or found."""

    directory: str
    files: list[FoundFile] = field(default_factory=list)

    @property
    def topic_partition(self) -> tuple[str, int | None]:
        return topic_partition(os.path.basename(os.path.normpath(self.directory)))

    @property
    def source_dir(self) -> str:
        """The log dir holding the partition directory (a URI's parent stays a URI)."""
        return posixpath.dirname(self.directory.rstrip("/"))

    @property
    def logs(self) -> list[FoundFile]:
        """The segments' ``.log`` files, by base offset."""
        return sorted((f for f in self.files if is_log_file(f.path)), key=lambda f: offset_from_file_name(f.path))


@dataclass
class Store:
    """A RocketMQ store root and those of its files that were named or found."""

    root: str
    files: list[FoundFile] = field(default_factory=list)

    @property
    def commitlog(self) -> list[FoundFile]:
        """The CommitLog files, by start offset (their name)."""
        return sorted((f for f in self.files if f.kind == FileKind.ROCKETMQ_COMMITLOG), key=lambda f: rocketmq_names.mapped_file_offset(f.path))

    @property
    def source_dir(self) -> str:
        return self.root

    @property
    def commitlog_dir(self) -> str:
        files = self.commitlog
        return os.path.dirname(files[0].path) if files else os.path.join(self.root, rocketmq_names.COMMITLOG_DIR)


@dataclass
class Inventory:
    entries: list[FoundFile] = field(default_factory=list)  # every entry, in walk order, as often as named
    partitions: list[Partition] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)

    @property
    def files(self) -> list[FoundFile]:
        """The readable files, in walk order."""
        return [f for f in self.entries if f.unreadable is None]

    @property
    def unreadable(self) -> list[FoundFile]:
        return [f for f in self.entries if f.unreadable is not None]

    def outside(self, *groups: Iterable[FoundFile]) -> list[FoundFile]:
        """The files that are in none of ``groups`` (what a command did not take), in walk order."""
        taken = {f.path for group in groups for f in group}
        return [f for f in self.files if f.path not in taken]


def store_root(detected: DetectedFile) -> str | None:
    """The store root of a RocketMQ file by its place (``<root>/commitlog/<file>``,
    ``<root>/consumequeue/<topic>/<queue>/<file>``, ``<root>/index/<file>``, ``<root>/checkpoint``);
    a local path is made absolute, a URI kept as it is."""
    path = detected.path if "://" in detected.path else os.path.abspath(detected.path)
    parts = path.rstrip("/").split("/")
    if detected.kind.store_place is None:
        return None
    container, up = detected.kind.store_place
    if len(parts) <= up or (container is not None and parts[-up] != container):
        return None
    return "/".join(parts[:-up])


def rocketmq_stores(paths: list[str]) -> list[str]:
    """The RocketMQ stores ``paths`` name: a store directory as given, and every store with
    CommitLog files found below any other directory."""
    roots: list[str] = []
    for path in paths:
        if rocketmq_names.is_store_directory(path):
            roots.append(path)
        elif os.path.isdir(path):
            roots.extend(store.root for store in inventory([path]).stores if store.commitlog)
    return list(dict.fromkeys(roots))


def directory_kind(path: str) -> DirectoryKind:
    """What a directory given to a lookup is: a Kafka partition (it holds segments) or a RocketMQ
    store (or one of its commitlog/, consumequeue/, index/ directories).  NothingFound otherwise."""
    if not os.path.exists(path):
        raise UnreadableInput("no such file or directory", path)
    if os.path.isdir(path) and any(is_log_file(name) for name in os.listdir(path)):
        return DirectoryKind.KAFKA_PARTITION
    if not rocketmq_names.is_store_directory(path):
        raise NothingFound("not a Kafka partition directory (no .log segments) and not a RocketMQ store "
                           "(no commitlog/, consumequeue/ or index/ inside)", path)
    return DirectoryKind.ROCKETMQ_STORE


def classify(listing: Iterable[tuple[str, int] | FoundFile]) -> Inventory:
    """Group (path, size) pairs, or entries found already, into partitions and stores; the rest
    stay ungrouped."""
    found = Inventory()
    partitions: dict[str, Partition] = {}
    stores: dict[str, Store] = {}
    seen: set[str] = set()
    for item in listing:
        if not isinstance(item, FoundFile):
            item = FoundFile(item[0], detect(item[0]).kind, item[1])
        found.entries.append(item)  # as named: a writing command refuses a file named twice
        if item.path in seen or item.unreadable is not None:  # a group holds a file once
            continue
        seen.add(item.path)
        if item.kind.scope is Scope.PARTITION:
            directory = os.path.dirname(item.path)
            partitions.setdefault(directory, Partition(directory)).files.append(item)
        elif item.kind.broker is Broker.ROCKETMQ:
            root = store_root(DetectedFile(item.path, item.kind))
            if root is not None:
                stores.setdefault(root, Store(root)).files.append(item)
    found.partitions = list(partitions.values())
    found.stores = list(stores.values())
    return found


def inventory(paths: list[str]) -> Inventory:
    """Everything below ``paths`` (at any depth), grouped; a path that does not exist is an error."""
    return classify(FoundFile(entry.path, FileKind.UNKNOWN, 0, entry.unreadable) if entry.unreadable is not None
                    else (entry.path, os.path.getsize(entry.path)) for entry in walk(paths))


def unreadable_findings(found: Inventory) -> list[Finding]:
    """One ``unreadable`` finding for each entry of ``found`` that cannot be read, naming it and why."""
    return [finding(FindingKind.UNREADABLE, None, f"{entry.path}: {entry.unreadable}") for entry in found.unreadable]


def any_unreadable(problems: list[Finding]) -> bool:
    """Does a report's list of findings name an entry that cannot be read?"""
    return any(problem.kind is FindingKind.UNREADABLE for problem in problems)
