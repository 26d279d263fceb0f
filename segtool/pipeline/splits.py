"""Cutting the inputs into tasks: one per segment, or per split of a big segment.

Kafka: a segment larger than ``split_bytes`` is cut at offset-index entries.
Each entry is (last offset of a batch, byte position where that batch starts),
so it names a batch boundary without reading the log.  An index can be stale
or damaged, so each chosen position is checked before it is used: a batch must
frame there (the same framing as ``BatchScan``), carry the offset the entry
says and pass its CRC.  When the check fails the previous entry is tried, and
so on back to the previous boundary (the split is then merged into its
neighbour).  Where there is no usable index (none, unreadable, empty, or no
valid entry near a cut) the cut is found by walking the batch headers from the
previous boundary (``frame_batches``, the framing every batch walker uses:
each header says where the next batch starts), which reads 12 bytes a batch.
That walk needs the file mapped: a URI input without an index stays one task.

RocketMQ: a CommitLog file larger than ``split_bytes`` is cut at message
starts found by their magic code; a message records its own physical offset
(the PHYSICALOFFSET field), so a position is accepted only when that field
equals the position and the whole message decodes.

Each task scans its byte range with the same parsers as a sequential read; as
long as the boundaries are on the chain of batches (what the checks ensure)
the union of the splits' rows is the sequential read's rows.  Each task
reports where its own scan ended, and the driver flags any split whose scan
did not end exactly where the next one starts.
"""

from __future__ import annotations

import numpy as np

from segtool.errors import CorruptData, SegtoolError
from segtool.kafka.index import OFFSET_INDEX_DTYPE
from segtool.rocketmq import names as rocketmq_names
from segtool.kafka.names import INDEX, offset_from_file_name, sibling
from segtool.kafka.log import BATCH_V2_OVERHEAD, LOG_ENTRY_HEADER_FAST, LOG_OVERHEAD, RECORD_OVERHEAD_V0, BatchScan, frame_batches
from segtool.pipeline import storage
from segtool.pipeline.inputs import Inputs, broker_of

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
_SLACK = 1.25  # a segment up to 1.25 x split_bytes stays whole: no sliver of a split
_SEARCH_WINDOW = 8 * 1024 * 1024  # RocketMQ: how far past a target to look for a message start


def _targets(size: int, split_bytes: int) -> list[int]:
    if split_bytes <= 0 or size <= split_bytes * _SLACK:
        return []
    n = max(1, round(size / split_bytes))
    return [size * k // n for k in range(1, n)]


class _Reader:
    """Random access to a few bytes of a file: the mapped file, or ranged reads of a URI."""

    def __init__(self, path: str):
        self.path = path
        self.remote = storage.is_uri(path)
        self.buf = None if self.remote else storage.read_all(path)

    def read(self, start: int, n: int) -> bytes:
        if self.remote:
            data, _ = storage.read_range(self.path, start, start + n)
            return data
        return bytes(self.buf[start:start + n])


# -- Kafka ------------------------------------------------------------------


def _index_entries(index_path: str) -> tuple[np.ndarray, np.ndarray]:
    """(relative offsets, positions) of the valid entries of an offset index (zero tail dropped)."""
    raw = storage.read_all(index_path)
    count = len(raw) // OFFSET_INDEX_DTYPE.itemsize
    if count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    entries = np.frombuffer(raw, dtype=OFFSET_INDEX_DTYPE, count=count)
    as_bytes = entries.view(np.uint8).reshape(count, -1)
    zero = np.flatnonzero(~as_bytes.any(axis=1))
    if len(zero):
        entries = entries[: int(zero[0])]
    return entries["relative_offset"].astype(np.int64), entries["position"].astype(np.int64)


def batch_starts_at(reader: _Reader, position: int, offset: int, size: int) -> bool:
    """Does a whole, CRC-valid batch holding ``offset`` start at ``position``?"""
    if position <= 0 or position + BATCH_V2_OVERHEAD > size:
        return False
    head = reader.read(position, LOG_OVERHEAD)
    if len(head) < LOG_OVERHEAD:
        return False
    _offset, batch_size = LOG_ENTRY_HEADER_FAST.unpack_from(head)
    if batch_size < RECORD_OVERHEAD_V0 or position + LOG_OVERHEAD + batch_size > size:
        return False
    data = reader.read(position, LOG_OVERHEAD + batch_size)
    try:
        batch = next(iter(BatchScan(data, 0, len(data))), None)
    except CorruptData:
        return False
    if batch is None or batch.size != len(data):
        return False
    if batch.magic >= 2 and batch.size < BATCH_V2_OVERHEAD:
        return False
    return batch.base_offset <= offset <= batch.last_offset and batch.crc_valid


def framed_batch_start(reader: _Reader, previous: int, target: int, size: int) -> int | None:
    """The first batch start at or after ``target``, walking batch headers from the batch start ``previous``;
    None when the chain of batches ends (cleanly, torn or corrupt) before it."""
    pos = previous
    while True:
        _, pos, stop = frame_batches(reader.buf, pos, size, 1 << 16, until=target)
        if stop is not None:
            return None
        if pos >= target:
            return pos if pos < size else None


def kafka_boundaries(log_path: str, size: int, base_offset: int, split_bytes: int) -> tuple[list[int], list[str]]:
    """Start positions of the splits of one segment (always [0, ...]) and notes on fallbacks."""
    targets = _targets(size, split_bytes)
    if not targets:
        return [0], []
    index_path = sibling(log_path, INDEX)
    reader = _Reader(log_path)
    rel = positions = np.zeros(0, np.int64)
    notes = []
    if not storage.exists(index_path):
        unusable = "no .index beside the segment"
    else:
        try:
            rel, positions = _index_entries(index_path)
            unusable = None if len(positions) else "its .index holds no entries"
        except SegtoolError as exc:
            unusable = f"offset index unreadable ({exc.message})"
    if unusable is not None:
        if reader.remote:
            return [0], [f"{log_path}: {unusable}; scanned as one task (finding batch starts reads the whole file)"]
        notes.append(f"{log_path}: {unusable}; split at batch starts found by walking the batch headers")
    boundaries = [0]
    for target in targets:
        # candidates: entries between the previous boundary and the target, nearest the target first
        mask = (positions > boundaries[-1]) & (positions <= target)
        candidates = np.flatnonzero(mask)
        candidates = candidates[np.argsort(-positions[candidates], kind="stable")]
        rejected = 0
        chosen = None
        for slot in candidates.tolist():
            if batch_starts_at(reader, int(positions[slot]), base_offset + int(rel[slot]), size):
                chosen = int(positions[slot])
                break
            rejected += 1
        if chosen is None and not reader.remote:
            chosen = framed_batch_start(reader, boundaries[-1], target, size)
            if chosen is None:
                break  # the chain ends before this cut: the rest is one split, read past damage
        if chosen is not None and chosen > boundaries[-1]:
            boundaries.append(chosen)
        if rejected:
            notes.append(f"{log_path}: {rejected} offset index entr{'y' if rejected == 1 else 'ies'} before byte "
                         f"{target} did not point at a valid batch; the split "
                         + (f"starts at byte {chosen} instead" if chosen is not None
                            else "is merged into the previous one"))
    return boundaries, notes


# -- RocketMQ -----------------------------------------------------------------


def message_starts_at(reader: _Reader, position: int, file_from_offset: int, size: int) -> bool:
    """Is ``position`` the start of a whole message that records this very physical offset?"""
    from segtool.rocketmq.store_files import MESSAGE_PREFIX_FAST, MIN_MESSAGE_SIZE, decode_message

    head = reader.read(position, MESSAGE_PREFIX_FAST.size)
    if len(head) < MESSAGE_PREFIX_FAST.size:
        return False
    prefix = MESSAGE_PREFIX_FAST.as_dict(head)
    total_size = prefix["totalSize"]
    if (total_size < MIN_MESSAGE_SIZE or position + total_size > size
            or prefix["physicalOffset"] != file_from_offset + position):
        return False
    data = reader.read(position, total_size)
    try:
        decode_message(data, 0, end=len(data), file_from_offset=file_from_offset + position,
                       digests=False, decompress=False)
    except SegtoolError:
        return False
    return True


def commitlog_boundaries(path: str, size: int, file_from_offset: int, split_bytes: int) -> tuple[list[int], list[str]]:
    targets = _targets(size, split_bytes)
    if not targets:
        return [0], []
    from segtool.rocketmq.store_files import MESSAGE_MAGIC_BYTES

    reader = _Reader(path)
    boundaries = [0]
    for target in targets:
        if target <= boundaries[-1]:
            continue
        window = reader.read(target, min(_SEARCH_WINDOW, size - target))
        found = None
        start = 4
        while found is None:
            hits = [h for h in (window.find(m, start) for m in MESSAGE_MAGIC_BYTES) if h >= 0]
            if not hits:
                break
            hit = min(hits)
            if message_starts_at(reader, target + hit - 4, file_from_offset, size):
                found = target + hit - 4
            start = hit + 1
        if found is not None and found > boundaries[-1]:
            boundaries.append(found)
    return boundaries, []


# -- tasks ------------------------------------------------------------------


def _plan_one(item: tuple) -> tuple[list[int], list[str]]:
    kind, path, size, base, split_bytes = item
    if kind == "kafka":
        return kafka_boundaries(path, size, base, split_bytes)
    return commitlog_boundaries(path, size, base, split_bytes)


def _brokers(inputs: Inputs, notes: list[str]) -> dict[tuple[str, str], tuple[int | None, str]]:
    """(broker id, broker label) of every Kafka log dir and RocketMQ store by (kind, folder), read once each; why
    a ``meta.properties`` named no broker goes to ``notes``.  No file of a store that segtool reads names the
    broker's id (it is in broker.conf, outside the store; subscriptionGroup.json's brokerId is the broker a group
    reads from), so a store's id is null and its label its root."""
    brokers = {}
    for log_dir in dict.fromkeys(part.source_dir for part in inputs.kafka):
        identity = broker_of(log_dir)
        brokers[("kafka", log_dir)] = (identity.broker_id, identity.label)
        if identity.problem is not None:
            notes.append(f"{identity.problem}: its rows name the broker by its folder")
    for store in inputs.rocketmq:
        brokers[("rocketmq", store.source_dir)] = (None, store.source_dir)
    return brokers


def plan_tasks(inputs: Inputs, split_bytes: int = DEFAULT_SPLIT_BYTES, mapper=None) -> tuple[list[dict], list[str]]:
    """Tasks (dicts, picklable and JSON-able) in a stable order, and planning notes.

    ``mapper(fn, items, costs)`` runs the boundary search of big files (it reads
    a few KiB at each candidate); the engines pass their own map so that a
    cluster plans in parallel where the data is.
    """
    files = []  # (kind, path, size, base, owner)
    for part in inputs.kafka:
        files.extend(("kafka", f.path, f.size, offset_from_file_name(f.path), part) for f in part.logs)
    for store in inputs.rocketmq:
        files.extend(("rocketmq", f.path, f.size, rocketmq_names.mapped_file_offset(f.path), store)
                     for f in store.commitlog)
    big = [i for i, f in enumerate(files) if _targets(f[2], split_bytes)]
    items = [(files[i][0], files[i][1], files[i][2], files[i][3], split_bytes) for i in big]
    if mapper is None or len(items) < 4:
        planned = [_plan_one(item) for item in items]
    else:
        planned = mapper(_plan_one, items, [item[2] for item in items])
    boundaries = {i: result for i, result in zip(big, planned)}
    tasks: list[dict] = []
    notes: list[str] = []
    brokers = _brokers(inputs, notes)
    for i, (kind, path, size, base, owner) in enumerate(files):
        starts, file_notes = boundaries.get(i, ([0], []))
        notes.extend(file_notes)
        ends = starts[1:] + [None]
        broker_id, broker_label = brokers[kind, owner.source_dir]
        for n, (start, end) in enumerate(zip(starts, ends)):
            task = {
                "id": len(tasks),
                "kind": kind,
                "source_dir": owner.source_dir,
                "broker_id": broker_id,
                "broker_label": broker_label,
                "path": path,
                "base_offset": base,
                "start": start,
                "end": end,
                "split": n,
                "splits": len(starts),
                "bytes": (size if end is None else end) - start,
            }
            if kind == "kafka":
                task["topic"], task["partition"] = owner.topic_partition
            tasks.append(task)
    return tasks, notes
