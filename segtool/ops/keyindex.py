"""Kafka key lookups: a scan, or a RocketMQ-style hash index built once.

Kafka cannot find a record by key without reading everything.  ``index_keys``
writes a hash index for one partition with RocketMQ's IndexFile layout and
builder (the same engine ``rebuild-index`` uses for RocketMQ stores) into a
per-user cache directory by default (``$XDG_CACHE_HOME/segtool/keyindex/``), or
where ``--out`` says — never inside the partition's log dir, where a broker
would take a foreign folder for a broken partition and stop using the log dir.
``lookup_kafka_key`` walks that index's hash chain when it is present and
still matches the segments, and scans otherwise.

Index entries: keyHash = Java ``String.hashCode`` of the key bytes read as
ISO-8859-1 characters (so binary keys hash exactly), phyOffset = the record's
Kafka offset, timeDiff = seconds since the first indexed record's timestamp.
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array

from segtool.kafka.partition import PartitionView
from segtool.engine.safe_write import plan_outputs, refuse_inside_inputs, write_atomically
from segtool.errors import CorruptData, UnreadableInput
from segtool.rocketmq import store_files as rmq
from segtool.kafka.log import BatchHeaders, BatchScan
from segtool.kafka.record_columns import chunk_records
from segtool.kafka.records import batch_records, first_record_where
from segtool.ops.dump_kafka_log import record_item
from segtool.ops.output_schema import IndexKeysReport
from segtool.ops.progress import RunProgress

META_NAME = "keyindex.json"
INDEX_NAME = "keys.index"


def key_index_dir(partition_dir: str) -> str:
    """The default place of a partition's key index: the user's cache, named by the partition's real path."""
    real = os.path.realpath(partition_dir)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = hashlib.sha256(real.encode()).hexdigest()[:16]
    return os.path.join(cache, "segtool", "keyindex", f"{os.path.basename(real)}-{tag}")


def _segment_fingerprint(partition: PartitionView) -> list[dict]:
    return [{"log": os.path.basename(s.log_path), "size": os.path.getsize(s.log_path)} for s in partition.segments]


def _loaded(partition_dir: str) -> tuple[PartitionView, list[dict]]:
    """The partition as the broker serves it once its load is done (``kafka.startup.load_partition``: a
    segment it cuts ends at the cut, those it deletes are gone), and each cut as a damage item: key
    lookups and the key index answer for the same records as a fetch, and say what lies beyond."""
    from segtool.engine.salvage import recovery_loss
    from segtool.kafka.startup import load_partition

    partition = PartitionView(partition_dir)
    plan = load_partition(partition, state_files=False)
    loss = recovery_loss(plan) if plan.cuts else None
    return partition, [{"file": cut.segment, "byte": cut.byte, "message": f"{cut.action()}: {cut.dropped()}",
                        "note": f"{cut.action()}: {cut.dropped()}; the records from there on are not searched "
                                "(dump and salvage read them)"} for cut in (loss.cuts if loss else ())]


def _damage_item(segment, exc: CorruptData) -> dict:
    """Where reading a segment stopped, with the sentence a key lookup or index carries about it."""
    name = os.path.basename(segment.log_path)
    return {"file": segment.log_path, "byte": exc.offset, "message": exc.message,
            "note": f"{name} cannot be read past byte {exc.offset} ({exc.message}): the records before it are "
                    "searched, none after it (Kafka's recovery truncates the segment there; dump and salvage "
                    "read past the damage)"}


def _records(partition: PartitionView, damage: list[dict], progress: RunProgress | None = None):
    """Every keyed record of the partition up to where a segment stops framing (each such place goes to
    ``damage``); ``progress`` told after each batch."""
    for segment in partition.segments:
        advance = progress.file(segment.log_path) if progress is not None else None
        try:
            for batch in segment.batches_from(0):
                if advance is not None:
                    advance(batch.end)
                if batch.is_control:
                    continue
                for record in batch_records(batch, segment.log_path):
                    if record.key is not None:
                        yield record
        except CorruptData as exc:
            damage.append(_damage_item(segment, exc))


def _key_text(key: bytes) -> str:
    return key.decode("latin-1")


def index_keys(partition_dir: str, out_dir: str | None = None, progress: RunProgress | None = None,
               force: bool = False) -> IndexKeysReport:
    """Build the key index of a partition; returns what was written.

    ``progress``, when given, is told each segment and the bytes read of it.  The default
    place is segtool's own cache, where an earlier index of the partition is
    replaced; an existing index in ``out_dir`` is refused unless ``force``.
    """
    from segtool.rocketmq.store_files import IndexFile

    partition, cuts = _loaded(partition_dir)
    target = out_dir or key_index_dir(partition_dir)
    source = os.path.normpath(os.path.abspath(partition_dir))
    files = [os.path.join(target, INDEX_NAME), os.path.join(target, META_NAME)]
    # the log dir too: a broker takes any folder there for a partition
    refuse_inside_inputs(files, [partition_dir, os.path.dirname(source)])
    in_cache = out_dir is None
    plan_outputs(files, [partition_dir], in_place=in_cache, force=force)
    # the geometry needs the count first: keep each keyed record as three machine
    # integers (24 bytes), not as a decoded record with its value
    hashes, offsets, stamps = array("q"), array("q"), array("q")
    if progress is not None:
        progress.plan((segment.log_path, segment.size) for segment in partition.segments)
    damage: list[dict] = list(cuts)
    for record in _records(partition, damage, progress):
        hashes.append(rmq.index_key_hash(_key_text(record.key)))
        offsets.append(record.offset)
        stamps.append(max(record.timestamp, 0))
    count = len(hashes)
    index_num = count + 1  # entry 0 is never used, as in RocketMQ
    slots = max(64, count // 2)
    view = IndexFile.create(INDEX_NAME, slots, index_num)
    for key_hash, offset, stamp in zip(hashes, offsets, stamps):
        view.put_hash(key_hash, offset, stamp)
    os.makedirs(target, exist_ok=True)
    replace = in_cache or force
    written = write_atomically(files[0], view.to_bytes(), replace=replace, backup=not in_cache)
    meta = {
        "partition_dir": source,
        "hash_slot_num": slots,
        "index_num": index_num,
        "key_encoding": "ISO-8859-1 characters of the key bytes, Java String.hashCode",
        "records_indexed": count,
        "segments": _segment_fingerprint(partition),
        "damage": damage,  # a lookup through the index says where its records end
    }
    write_atomically(files[1], json.dumps(meta, indent=1).encode(), replace=replace, backup=not in_cache)
    return {"index_dir": target, "records_indexed": count, "index_file": written,
            "damage": [_read_stopped(item) for item in damage]}


def _usable_index(partition: PartitionView, directory: str | None):
    """The key index in ``directory`` (default: the cache's) when it was built from these exact segments, a
    note when it is not used, and where its building stopped at damage."""
    from segtool.rocketmq.store_files import IndexFile

    if directory is not None:  # asked for by name: it must be there
        if not os.path.lexists(directory):
            raise UnreadableInput("no such file or directory", directory)
        if os.path.isfile(directory):  # the index file itself named
            directory = os.path.dirname(directory) or "."
        if not os.path.exists(os.path.join(directory, META_NAME)):
            raise UnreadableInput(f"not a key index (no {META_NAME}): `segtool index-keys` writes one", directory)
    directory = directory or key_index_dir(partition.directory)
    meta_path = os.path.join(directory, META_NAME)
    if not os.path.exists(meta_path):
        return None, None, []
    try:
        with open(meta_path) as handle:
            meta = json.load(handle)
    except (OSError, ValueError):
        return None, "the key index metadata is unreadable; scanned instead", []
    if meta.get("segments") != _segment_fingerprint(partition):
        return None, "the key index is stale (segments changed since it was built); scanned instead", []
    view = IndexFile(os.path.join(directory, INDEX_NAME), meta["hash_slot_num"], meta["index_num"])
    return view, None, meta.get("damage", [])


def _keyed_records(headers: BatchHeaders, wanted: bytes, path: str) -> list[tuple[int, list[int] | None]]:
    """(batch, offsets of its records keyed ``wanted``) for the batches of a regular chunk that
    hold any, in order; offsets None for a batch left undecoded (``batch_records`` reads it)."""
    import numpy as np

    records = chunk_records(headers, path)
    first, decoded = records.first, records.decoded
    # the keys of the right length, then byte by byte (numpy), then whole (the few left)
    found = np.flatnonzero(records.key_len == len(wanted))
    data = records.data
    view = np.frombuffer(data, dtype=np.uint8)
    for i, byte in enumerate(wanted[:16]):
        found = found[view[records.key_start[found] + i] == byte]
    del view
    starts = records.key_start[found].tolist()
    found = np.array([r for r, start in zip(found.tolist(), starts) if data[start:start + len(wanted)] == wanted],
                     dtype=np.int64)
    holding = np.searchsorted(first, found, side="right") - 1
    offsets = headers.column("base_offset")[holding] + records.offset_delta[found]
    by_batch: dict[int, list[int] | None] = {int(i): None for i in np.flatnonzero(~decoded)}
    for i, offset in zip(holding.tolist(), offsets.tolist()):
        by_batch.setdefault(i, []).append(offset)
    return sorted(by_batch.items())


def _records_keyed(batch, wanted: bytes, offsets: list[int] | None, path: str) -> list:
    """The records of ``batch`` keyed ``wanted``: decoded one by one at ``offsets`` when given
    (skipping the others by their length), else from the whole batch."""
    if offsets is not None:
        records = [first_record_where(batch, offset, path=path) for offset in offsets]
        if all(record is not None and record.offset == offset and record.key == wanted
               for record, offset in zip(records, offsets)):
            return records
    return [record for record in batch_records(batch, path) if record.key == wanted]


def lookup_kafka_key(partition_dir: str, key: str, max_num: int = 1000, key_index: str | None = None) -> dict:
    """Every record whose key equals ``key`` (UTF-8), in offset order (at most ``max_num``).

    ``key_index``: the directory ``index-keys`` wrote (default: its cache place).
    """
    partition, cuts = _loaded(partition_dir)
    wanted = key.encode("utf-8")
    view, note, damage = _usable_index(partition, key_index)
    if view is None:
        damage = list(cuts)
    hits = []
    if view is not None:
        candidates: list[int] = []
        view.select_phy_offsets(candidates, rmq.index_key_hash(_key_text(wanted)), max_num * 4, 0, 2**63 - 1)
        collisions = 0
        for offset in candidates:
            hit = partition.read_at(offset)
            if hit is None or hit.offset != offset or hit.record.key != wanted:
                collisions += 1
                continue
            hits.append(record_item(hit.batch, hit.record, hit.segment))
            if len(hits) >= max_num:
                break
        method = "key index"
    else:
        collisions = 0
        for segment in partition.segments:
            scan = BatchScan(segment.log, 0, segment.end, segment.log_path)
            try:
                for positions, end in scan.chunks():
                    headers = BatchHeaders(segment.log, segment.log_path, positions, end)
                    keyed = ((batch, None) for batch in headers.batches()) if not headers.regular else (
                        (headers.batch(i), offsets) for i, offsets in _keyed_records(headers, wanted,
                                                                                     segment.log_path))
                    for batch, offsets in keyed:
                        if not batch.is_control:
                            hits.extend(record_item(batch, record, segment.log_path)
                                        for record in _records_keyed(batch, wanted, offsets, segment.log_path))
            except CorruptData as exc:
                damage.append(_damage_item(segment, exc))
        hits = hits[:max_num]
        method = "scan"
    hits.sort(key=lambda h: h["offset"])
    answer = {"partition_dir": partition_dir, "key": key, "method": method, "note": note,
              "offsets": [h["offset"] for h in hits], "records": hits, "hash_collisions_dropped": collisions}
    if damage:
        answer["damage"] = [_read_stopped(item) for item in damage]
        answer["notes"] = [item["note"] for item in damage]
    return answer


def _read_stopped(item: dict) -> dict:
    return {name: item[name] for name in ("file", "byte", "message")}
