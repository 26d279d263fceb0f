"""Finding what to scan: Kafka partitions (of log dirs) and RocketMQ stores.

A path may be a Kafka log directory (its subdirectories are partitions), a
partition directory, one ``.log`` segment, a RocketMQ store root (holding
``commitlog/``), a ``commitlog`` directory or one CommitLog file, or any
directory above these (searched to any depth; every other file is reported as skipped).  Names are Kafka's and RocketMQ's own: segments
are ``<20 digits>.log``, CommitLog files ``<20 digits>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from segtool.engine.inventory import Inventory, Partition, Store, classify, inventory
from segtool.errors import NothingFound, SegtoolError, UnreadableInput
from segtool.engine.detect import detect
from segtool.formats.file_kinds import FileKind
from segtool.rocketmq import names as rocketmq_names
from segtool.kafka.log_dir import BrokerIdentity, broker_identity, broker_identity_of, unreadable_meta_properties
from segtool.kafka.names import META_PROPERTIES, is_log_file
from segtool.pipeline import storage

_NOT_SCANNED = "scan reads Kafka .log segments and RocketMQ CommitLog files only (verify checks the others)"


@dataclass
class Inputs:
    kafka: list[Partition] = field(default_factory=list)  # the partitions with segments
    rocketmq: list[Store] = field(default_factory=list)  # the stores with CommitLog files
    skipped: list[dict] = field(default_factory=list)  # {"path", "reason"}: files found and not scanned
    unreadable: list[dict] = field(default_factory=list)  # {"path", "reason"}: entries that cannot be read

    @property
    def files(self) -> list[tuple[str, int]]:
        """(path, size) of every segment and CommitLog file to scan."""
        return [(f.path, f.size) for p in self.kafka for f in p.logs] + [(f.path, f.size) for st in self.rocketmq
                                                                          for f in st.commitlog]

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


def _from_inventory(found: Inventory) -> Inputs:
    """Scan's inputs: every partition with segments, every store with CommitLog files; the rest skipped."""
    inputs = Inputs(unreadable=[{"path": path, "reason": reason}
                                for path, reason in dict.fromkeys((f.path, f.unreadable) for f in found.unreadable)])
    inputs.kafka = sorted((group for group in found.partitions if group.logs), key=lambda p: p.directory.split("/"))
    inputs.rocketmq = sorted((group for group in found.stores if group.commitlog),
                             key=lambda st: st.commitlog_dir.split("/"))
    taken = {path for path, _ in inputs.files}
    inputs.skipped = [{"path": path, "reason": _NOT_SCANNED}
                      for path in dict.fromkeys(f.path for f in found.files) if path not in taken]
    return inputs


_NOTHING_HERE = "no Kafka .log segments or RocketMQ CommitLog files here (its files are named as skipped)"


def discover(paths: list[str]) -> Inputs:
    """Every Kafka partition and RocketMQ store named by ``paths`` (absolute paths), in a stable order.

    A directory argument with nothing to scan in it (only index files, say) is
    named in ``skipped`` with the reason and the others are scanned; only when
    no argument holds anything is it NothingFound.
    """
    listing = []
    empty: list[dict] = []
    for raw in paths:
        path = storage.absolute(raw)
        if not storage.exists(path):
            raise UnreadableInput("no such file or directory", raw)
        if not storage.isdir(path):
            commitlog_file = (detect(path).kind == FileKind.ROCKETMQ_COMMITLOG
                              and storage.basename(storage.parent(path)) == rocketmq_names.COMMITLOG_DIR)
            if not (commitlog_file or is_log_file(path)):
                raise NothingFound("not a directory (Kafka log or partition dir, RocketMQ store), a .log segment "
                                   "or a CommitLog file", raw)
            listing.append((path, storage.size(path)))
            continue
        found = classify(storage.walk_files(path)) if storage.is_uri(path) else inventory([path])
        if not (any(p.logs for p in found.partitions) or any(st.commitlog for st in found.stores)
                or found.unreadable):
            empty.append({"path": path, "reason": _NOTHING_HERE})
        listing.extend(found.entries)  # detected once: classify takes found entries as they are
    inputs = _from_inventory(classify(listing))
    if not (inputs.kafka or inputs.rocketmq or inputs.unreadable):
        raise NothingFound("no Kafka segments or RocketMQ CommitLog found here", paths[0], skipped=inputs.skipped)
    inputs.skipped = empty + inputs.skipped
    return inputs


def broker_of(log_dir: str) -> BrokerIdentity:
    """The broker a Kafka log dir belongs to (``kafka.log_dir.broker_identity``); a URI's ``meta.properties`` is
    read through its filesystem and its folder kept as written."""
    if not storage.is_uri(log_dir):
        return broker_identity(log_dir)
    path = storage.join(log_dir, META_PROPERTIES)
    try:
        if not storage.exists(path):
            return BrokerIdentity(None, log_dir)
        data = bytes(storage.read_all(path))
    except (SegtoolError, OSError) as exc:
        return BrokerIdentity(None, log_dir, unreadable_meta_properties(path, exc))
    return broker_identity_of(log_dir, path, data)
