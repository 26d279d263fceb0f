"""What a replica of a partition holds, as batch header columns, and where two copies part.

Followers hold the leader's batches byte for byte (``ReplicaFetcherThread`` appends what it fetched as it
is), so a batch is known across copies by its base offset, last offset, leader epoch and CRC: comparing
those columns finds where copies part without reading a record body.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from segtool.errors import SegtoolError
from segtool.kafka.log import BatchScan, HeaderScan
from segtool.kafka.partition import PartitionView
from segtool.kafka.records import base_offset_of
from segtool.kafka.replication import assign, truncate_from_end, truncate_from_start
from segtool.kafka.startup import PartitionPlan
from segtool.kafka.state import EpochEntry


@dataclass
class ReplicaBatches:
    """Every batch of a loaded log, in offset order, as columns (headers only; bodies are never read).
    ``segment`` indexes ``files``; ``crc_ok`` is False where the stored CRC does not match the bytes."""

    files: list[str]
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    COLUMNS = ("base_offset", "last_offset", "epoch", "crc", "crc_ok", "magic", "attributes", "first_timestamp",
               "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records", "size", "segment",
               "position")

    @classmethod
    def empty(cls) -> "ReplicaBatches":
        return cls([], {name: np.zeros(0, dtype=np.int64) for name in cls.COLUMNS})

    def __len__(self) -> int:
        return len(self.columns["base_offset"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def row(self, i: int) -> dict:
        return {name: int(self.columns[name][i]) for name in self.COLUMNS}

    def index_of_offset(self, offset: int) -> int:
        """The first batch holding ``offset`` or any later one."""
        return int(np.searchsorted(self.columns["last_offset"], offset, side="left"))


_TRANSACTIONAL, _CONTROL = 0x10, 0x20


def is_transactional(attributes: int, magic: int) -> bool:
    return magic >= 2 and bool(attributes & _TRANSACTIONAL)


def is_control(attributes: int, magic: int) -> bool:
    return magic >= 2 and bool(attributes & _CONTROL)


def replica_batches(view: PartitionView, log_start_offset: int = 0) -> ReplicaBatches:
    """The batches of ``view`` as loaded (``kafka.startup.load_partition`` applied): each segment up to where
    recovery truncated it, from the batch holding ``log_start_offset`` (those wholly below it are deleted
    records still on disk).  Regular v2 chunks are read as header columns with their CRC-32C computed;
    legacy messages and the rare odd batch one by one."""
    files = [segment.log_path for segment in view.segments]
    parts: dict[str, list] = {name: [] for name in ReplicaBatches.COLUMNS}
    for index, segment in enumerate(view.segments):
        buffer, end = segment.log, segment.end
        if end == len(buffer):
            scan = HeaderScan(buffer, segment.log_path)
            try:
                for chunk in scan:
                    if chunk.regular:
                        _add_chunk(parts, chunk, index)
                    else:
                        _add_objects(parts, chunk.batches(), index, segment.log_path)
            except SegtoolError:  # framing broke: the load's recovery has cut here already
                pass
        else:
            _add_objects(parts, BatchScan(buffer, 0, end, segment.log_path), index, segment.log_path)
        segment.release()
    columns = {name: (np.concatenate(values) if values else np.zeros(0, dtype=np.int64))
               for name, values in parts.items()}
    if log_start_offset and len(columns["last_offset"]):
        first = int(np.searchsorted(columns["last_offset"], log_start_offset, side="left"))
        columns = {name: values[first:] for name, values in columns.items()}
    return ReplicaBatches(files, columns)


def _add_chunk(parts: dict, chunk, segment: int) -> None:
    header = chunk.header
    base = header["base_offset"].astype(np.int64)
    parts["base_offset"].append(base)
    parts["last_offset"].append(base + header["last_offset_delta"].astype(np.int64))
    parts["epoch"].append(header["partition_leader_epoch"].astype(np.int64))
    crc = header["crc"].astype(np.int64)
    parts["crc"].append(crc)
    parts["crc_ok"].append((crc == chunk.computed_crc).astype(np.int64))
    parts["magic"].append(header["magic"].astype(np.int64))
    parts["attributes"].append(header["attributes"].astype(np.int64))
    parts["first_timestamp"].append(header["base_timestamp"].astype(np.int64))
    parts["max_timestamp"].append(header["max_timestamp"].astype(np.int64))
    parts["producer_id"].append(header["producer_id"].astype(np.int64))
    parts["producer_epoch"].append(header["producer_epoch"].astype(np.int64))
    parts["base_sequence"].append(header["base_sequence"].astype(np.int64))
    parts["records"].append(header["record_count"].astype(np.int64))
    parts["size"].append(chunk.size.astype(np.int64))
    parts["segment"].append(np.full(len(chunk), segment, dtype=np.int64))
    parts["position"].append(chunk.position.astype(np.int64))


def _add_objects(parts: dict, batches, segment: int, path: str) -> None:
    rows = []
    try:
        for batch in batches:
            first = base_offset_of(batch, path=path)
            rows.append((batch.last_offset if first is None else first, batch.last_offset,
                         batch.partition_leader_epoch, batch.crc, int(batch.crc_valid), batch.magic,
                         batch.attributes, batch.base_timestamp if batch.magic >= 2 else batch.max_timestamp,
                         batch.max_timestamp, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                         batch.record_count if batch.record_count is not None else 1, batch.size, segment,
                         batch.position))
    except SegtoolError:
        pass
    if rows:
        table = np.array(rows, dtype=np.int64)
        for i, name in enumerate(ReplicaBatches.COLUMNS):
            parts[name].append(table[:, i])


def batch_epochs(batches: ReplicaBatches) -> list[EpochEntry]:
    """The epochs the batches carry, as (epoch, first offset) runs in offset order (-1: no epoch)."""
    epochs, bases = batches["epoch"], batches["base_offset"]
    if not len(epochs):
        return []
    starts = np.flatnonzero(np.concatenate(([True], epochs[1:] != epochs[:-1])))
    return [EpochEntry(int(epochs[i]), int(bases[i])) for i in starts]


def loaded_epoch_cache(file_entries: list[EpochEntry], plan: PartitionPlan, batches: ReplicaBatches) -> list[EpochEntry]:
    """The leader-epoch cache once ``LogLoader`` is done: the checkpoint's entries, the epochs of the batches
    of every segment it recovered (``LogSegment.recover`` assigns an epoch above the latest), then
    ``truncateFromEnd(log end)`` and ``truncateFromStart(log start)``."""
    cache = list(file_entries)
    recovered = {step.log_path for step in plan.segments if step.recovery is not None and not step.deleted_by_recovery}
    if recovered:
        in_recovered = np.isin(np.array(batches.files, dtype=object)[batches["segment"]],
                               np.array(sorted(recovered), dtype=object)) if len(batches) else np.zeros(0, bool)
        for i in np.flatnonzero(in_recovered):
            epoch = int(batches["epoch"][i])
            if epoch >= 0 and (not cache or epoch > cache[-1].epoch):
                cache = assign(cache, epoch, int(batches["base_offset"][i]))
    cache = truncate_from_end(cache, plan.log_end_offset)
    return truncate_from_start(cache, plan.log_start_offset_checkpoint) if plan.log_start_offset_checkpoint else cache


# -- comparing two copies -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Divergence:
    """Where two copies part: the first batch (from where both hold offsets) whose base offset, epoch or
    CRC differ, as an index into each side's batches (None when one copy is a prefix of the other)."""

    first_common_offset: int  # both copies hold offsets from here (the later log start)
    agreed_until: int  # the copies hold the same batches below this offset
    index_a: int | None
    index_b: int | None


def first_divergence(a: ReplicaBatches, b: ReplicaBatches) -> Divergence:
    """Compare header columns (base offset, last offset, epoch, CRC) batch by batch from the later start."""
    start = max(int(a["base_offset"][0]) if len(a) else 0, int(b["base_offset"][0]) if len(b) else 0)
    ia, ib = a.index_of_offset(start), b.index_of_offset(start)
    n = min(len(a) - ia, len(b) - ib)
    differs = np.zeros(n, dtype=bool)
    for name in ("base_offset", "last_offset", "epoch", "crc"):
        differs |= a[name][ia:ia + n] != b[name][ib:ib + n]
    found = np.flatnonzero(differs)
    if len(found):
        k = int(found[0])
        until = max(start, min(int(a["base_offset"][ia + k]), int(b["base_offset"][ib + k])))
        return Divergence(start, until, ia + k, ib + k)
    ends = [int(side["last_offset"][-1]) + 1 if len(side) else start for side in (a, b)]
    return Divergence(start, min(ends), None, None)


def truncated_batches(batches: ReplicaBatches, truncate_to: int) -> np.ndarray:
    """Indexes of the batches a truncation to ``truncate_to`` removes (``LogSegment.truncateTo`` drops the
    whole batch holding the offset)."""
    return np.arange(batches.index_of_offset(truncate_to), len(batches))


def batch_keys(batches: ReplicaBatches, indexes) -> set[tuple[int, int, int, int]]:
    return {(int(batches["base_offset"][i]), int(batches["last_offset"][i]), int(batches["epoch"][i]),
             int(batches["crc"][i])) for i in indexes}


def records_below(batches: ReplicaBatches, i: int, offset: int) -> int:
    """How many of batch ``i``'s records lie below ``offset`` (its record count when all of it does; a
    compacted batch's offsets may have gaps, so a batch cut across is counted by its offset span)."""
    base, last, records = (int(batches[name][i]) for name in ("base_offset", "last_offset", "records"))
    if last < offset:
        return records
    if base >= offset:
        return 0
    return min(records, offset - base)
