"""`salvage`: write back what survives damage, as a new Kafka partition or a new RocketMQ store.

Kafka.  Every segment of a partition is read past damage (``engine.salvage.kafka_pieces``);
every batch whose checksum holds is kept, in offset order: an exact copy of a kept batch is
dropped, a batch whose offsets overlap a kept one is reported as a conflict and not written.
Each kept batch goes, byte for byte, into the output segment named by the input base offset
at or below its own base offset (Kafka's floor lookup), so segment boundaries, offsets and
timestamps stay as they were.  The indexes are what Kafka's recovery writes for those bytes
(``kafka.recovery.recover_segment``, as ``rebuild-index``).  ``partition.metadata`` and
``leader-epoch-checkpoint`` are copied when they parse; producer snapshots are not (they
describe batches that may be lost; a broker rebuilds them from the log).

RocketMQ.  Every CommitLog file is read past damage (``engine.salvage.commitlog_pieces``);
the messages whose body CRC holds are written at their original positions into files of the
store's CommitLog file size (zeros elsewhere, the BLANK end record kept), so physical
offsets stay valid.  The ConsumeQueues are rebuilt from them (filler units, RocketMQ's own
``fillPreBlank`` units, where a queue offset was lost) in the input store's file geometry,
the IndexFiles with ``IndexService.buildIndex`` (``rocketmq.store``), and the
survivors are listed in a Parquet file with their physical offsets.

Nothing is written inside an input's tree and no file is replaced without ``force``
(``engine.safe_write``); every input and output is reported with its sha256.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import NamedTuple

from segtool.rocketmq import store as rs
from segtool.engine.inventory import Partition, Store, classify
from segtool.kafka.partition import Segment
from segtool.kafka.recovery import DEFAULT_INDEX_INTERVAL_BYTES, ProducerTxnState, recover_segment
from segtool.engine.safe_write import plan_outputs, tree_outputs, write_atomically
from segtool.engine.salvage import DamagedRange, body_crc_valid, commitlog_pieces, kafka_pieces
from segtool.errors import NothingFound, SegtoolError, UnreadableInput
from segtool.rocketmq import store_files as rmq
from segtool.kafka.log import RecordBatch
from segtool.kafka.records import base_offset_of
from segtool.kafka.names import INDEX, LOG, TIME_INDEX, TXN_INDEX, file_name
from segtool.kafka.state import parse_checkpoint, parse_partition_metadata
from segtool.formats.file_kinds import FileKind
from segtool.formats.outcomes import DamageReason, WalkEnd
from segtool.formats.record_shapes import arrow_fields
from segtool.rocketmq.message_shape import MESSAGE_COLUMNS, MESSAGE_FIELDS
from segtool.formats.ranges import span
from segtool.ops.file_formats import file_format
from segtool.ops.output_schema import SalvageReport
from segtool.ops.progress import RunProgress
from segtool.ops.brokers import LocalTree
from segtool.ops.task_map import MapTasks, in_process
from segtool.ops.rebuild_rocketmq import index_geometry
from segtool.ops.verify_rocketmq.store import DISPATCHED_TRAN_TYPES
from segtool.source import open_buffer, sha256_of
from segtool.rocketmq import names as rocketmq_names

_INT32_MAX = 2**31 - 1  # Kafka's relative offsets are 32-bit
UNKNOWN_END = 2**63 - 1  # Long.MAX_VALUE: the end of a lost range no neighbour bounds
DEFAULT_UNITS_PER_FILE = 300_000  # MessageStoreConfig.mappedFileSizeConsumeQueue / 20
MESSAGES_PARQUET = "salvaged-messages.parquet"
_FILLER = rmq.CONSUME_QUEUE_UNIT_FAST.pack(0, rmq.CQ_BLANK_UNIT_SIZE, 0)  # ConsumeQueue.fillPreBlank's unit

# copied when they parse (from their bytes and path): the partition's topic id and its leader epochs stay
# true of the kept offsets
_COPIED_STATE = {"partition.metadata": parse_partition_metadata,
                 "leader-epoch-checkpoint": lambda data, path: parse_checkpoint(data, "leader-epoch", path)}
_NOT_READ = "not read: salvage reads the segments' .log files (a .swap, .cleaned or .deleted file is left)"
_NOT_TAKEN = "not a Kafka segment, partition state file or RocketMQ store file: salvage leaves it"


class _Found(NamedTuple):
    """A valid batch read from input segment ``segment``; sorts by offsets, then by where it was read."""

    first_offset: int
    last_offset: int
    segment: int
    position: int
    size: int


def salvage(paths: list[str], out_dir: str, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
            force: bool = False, progress: RunProgress | None = None,
            map_tasks: MapTasks = in_process, tree: LocalTree = LocalTree()) -> SalvageReport:
    """Salvage the Kafka partitions or the RocketMQ stores below ``paths`` into ``out_dir``.

    Each partition and each store is one unit of work handed to ``map_tasks`` (in this process, or
    the pipeline's tasks: ``progress`` is then None); it reads its input and writes its output
    itself, and the report is put together here in the inputs' order, whoever ran them.

    One store alone goes to ``out_dir``; otherwise each partition and store keeps its path below
    the given path that holds it (``out_dir/<partition>/`` for a log dir, ``out_dir/broker1/<partition>/``
    for replicas side by side, ``out_dir/<store>/`` beside them: ``safe_write.tree_outputs``), so
    Kafka and RocketMQ data found together are salvaged in one run, each to its own place.

    ``tree`` is how the inputs are seen here: the local filesystem, or the listing of URI trees on the
    paths their mirror would have (``pipeline.staged.ListedTrees``: the units of work then stage their
    own files).
    """
    for path in paths:
        if not tree.lexists(path):
            raise UnreadableInput("no such file or directory", path)
    found = classify(entry for path in paths for entry in tree.inventory(path).entries)
    partitions = [partition for partition in found.partitions if partition.logs]
    stores = [store for store in found.stores if store.commitlog]
    unreadable = [{"path": entry.path, "reason": entry.unreadable} for entry in found.unreadable]
    if not partitions and not stores:
        if unreadable:
            raise UnreadableInput(unreadable[0]["reason"], unreadable[0]["path"])
        raise NothingFound("no Kafka segments and no RocketMQ CommitLog here", paths[0],
                           skipped=[{"path": f.path, "reason": _NOT_TAKEN} for f in found.files])
    report = {"out": out_dir, "index_interval_bytes": index_interval_bytes, "inputs": [], "partitions": [],
              "stores": [], "skipped": [], "unreadable": unreadable}
    # one store alone fills OUT; anything more keeps its place below the paths given
    places = {os.path.abspath(stores[0].root): out_dir} if stores and len(stores) == 1 and not partitions else \
        tree_outputs([p.directory for p in partitions] + [s.root for s in stores], paths, out_dir)
    if progress is not None:
        read = [log for partition in partitions for log in partition.logs] + [f for store in stores for f in store.commitlog]
        progress.plan((f.path, f.size) for f in read)
    if partitions:
        _salvage_partitions(partitions, paths, places, index_interval_bytes, force, progress, report, map_tasks, tree)
    if stores:
        _salvage_stores(stores, paths, places, force, progress, report, map_tasks)
    taken = [partition.files for partition in partitions] + [store.files for store in stores]
    report["skipped"].extend({"path": f.path, "reason": _NOT_TAKEN} for f in found.outside(*taken))
    report["summary"] = _summary(report)
    return report


def _input(path: str) -> dict:
    return {"path": path, "size": os.path.getsize(path), "sha256": sha256_of(path)}


def _summary(report: dict) -> dict:
    ranges = [r for item in report["partitions"] + report["stores"] for r in item["damaged_ranges"]]
    partitions, stores = report["partitions"], report["stores"]
    lost = [item["conflicts"] for item in partitions + stores] + [p["offset_ranges_lost"] for p in partitions] + [
        s["queue_offsets_lost"] for s in stores]
    return {
        "damaged_ranges": len(ranges),
        "bytes_damaged": sum(r["length"] for r in ranges),
        "batches_kept": sum(p["batches_kept"] for p in partitions),
        "batches_lost": sum(p["batches_failed_crc"] + len(p["conflicts"]) for p in partitions),
        # Kafka: the offsets of offset_ranges_lost (a range whose end nothing bounds counts none)
        "records_lost": sum(r["last_offset"] - r["first_offset"] + 1 for p in partitions
                            for r in p["offset_ranges_lost"] if r["last_offset"] is not None),
        "messages_kept": sum(s["messages_kept"] for s in stores),
        # RocketMQ: the queue offsets of queue_offsets_lost (= verify's messages_gone, inspect's)
        "messages_lost": sum(r["last_offset"] - r["first_offset"] + 1 for s in stores for r in s["queue_offsets_lost"]),
        "nothing_lost": not ranges and not any(lost),
    }


def exit_code(report: SalvageReport) -> int:
    """0 when everything was written back, 1 when damage or loss was found, 2 when an input was unreadable."""
    if report["unreadable"]:
        return 2
    return 0 if report["summary"]["nothing_lost"] else 1


# --------------------------------------------------------------------------
# Offset ranges
# --------------------------------------------------------------------------


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, overlapping or adjacent ranges joined."""
    merged: list[list[int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return [(first, last) for first, last in merged]


def _subtract(ranges: list[tuple[int, int]], kept: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``ranges`` outside every range of ``kept`` (both merged)."""
    out = []
    for first, last in ranges:
        for kept_first, kept_last in kept:
            if kept_last < first or kept_first > last:
                continue
            if kept_first > first:
                out.append((first, kept_first - 1))
            first = kept_last + 1
            if first > last:
                break
        if first <= last:
            out.append((first, last))
    return out


# --------------------------------------------------------------------------
# Kafka
# --------------------------------------------------------------------------


def _out_partition(partition: Partition, places: dict[str, str]) -> str:
    return places[os.path.abspath(partition.directory)]


def _salvage_partitions(partitions: list[Partition], paths, places, interval, force, progress,
                        report: dict, map_tasks: MapTasks, tree: LocalTree) -> None:
    copies: dict[str, list[str]] = {}  # partition directory -> state files that parse
    targets = []
    for partition in partitions:
        out = _out_partition(partition, places)
        for log in partition.logs:
            targets += [os.path.join(out, file_name(Segment(log.path).base_offset, suffix))
                        for suffix in (LOG, INDEX, TIME_INDEX, TXN_INDEX)]
        copies[partition.directory] = []
        logs = {log.path for log in partition.logs}
        for entry in partition.files:
            name = os.path.basename(entry.path)
            if entry.path in logs:
                continue
            if name in _COPIED_STATE:
                try:
                    _COPIED_STATE[name](tree.read(entry.path), entry.path)
                except SegtoolError as exc:
                    report["skipped"].append({"path": entry.path, "reason": f"not copied: unreadable ({exc})"})
                    continue
                copies[partition.directory].append(entry.path)
                targets.append(os.path.join(out, name))
            else:
                report["skipped"].append({"path": entry.path, "reason": file_format(entry.kind).salvage_note or _NOT_READ})
    plan_outputs(targets, paths, False, force)
    items = [(partition, _out_partition(partition, places), copies[partition.directory]) for partition in partitions]
    done = map_tasks(partial(_salvage_partition, interval=interval, force=force, progress=progress), items,
                     [sum(log.size for log in partition.logs) for partition in partitions])
    for salvaged, inputs in done:
        report["partitions"].append(salvaged)
        report["inputs"].extend(inputs)


def _salvage_partition(item: tuple[Partition, str, list[str]], interval: int, force: bool,
                       progress) -> tuple[dict, list[dict]]:
    """A unit of work: one partition salvaged into its output directory; its report and its inputs."""
    partition, out, copies = item
    inputs: list[dict] = []
    segments = [Segment(log.path) for log in partition.logs]
    bases = [segment.base_offset for segment in segments]
    found: list[_Found] = []
    damaged: list[dict] = []
    failed_crc = 0
    for number, segment in enumerate(segments):
        inputs.append(_input(segment.log_path))
        advance = progress.file(segment.log_path) if progress is not None else None
        following = bases[number + 1] if number + 1 < len(bases) else None
        for piece in kafka_pieces(segment.log, segment.log_path, base_offset=segment.base_offset,
                                  next_base_offset=following):
            if isinstance(piece, DamagedRange):
                damaged.append(piece.as_dict())
                end = piece.end_byte
            else:
                if piece.crc_valid:
                    found.append(_Found(_first_offset(piece, segment.log_path), piece.last_offset, number,
                                        piece.position, piece.size))
                else:
                    failed_crc += 1
                end = piece.end
            if advance is not None:
                advance(end)
    kept, conflicts, duplicates = _choose(found, segments, bases)
    placed: dict[int, list[_Found]] = defaultdict(list)  # output segment -> its batches, in offset order
    for batch, home in kept:
        placed[home].append(batch)
    txn_state = ProducerTxnState()  # no producer snapshot is copied: the broker starts from the log as well
    written_segments = []
    for number, segment in enumerate(segments):
        batches = placed[number]
        data = b"".join(_bytes(segments, batch) for batch in batches)
        written_segments.append(_write_segment(segment, batches, data, out, interval, txn_state, force))
    copied = []
    for path in copies:
        inputs.append(_input(path))
        copied.append({"source": path, "written": write_atomically(os.path.join(out, os.path.basename(path)),
                                                                  open_buffer(path)[:], replace=force)})
    kept_ranges = _merge([(b.first_offset, b.last_offset) for b, _ in kept])
    # a zero-filled tail nothing follows held no batch: it loses no offset (Kafka's recovery drops none there)
    lost = [(r["first_offset"], UNKNOWN_END if r["last_offset"] is None else r["last_offset"])
            for r in damaged if r["first_offset"] is not None and r["offsets_lost"] != 0
            and not (r["reason"] is DamageReason.ZERO_FILLED and r["last_offset"] is None)]
    lost += [(c["first_offset"], c["last_offset"]) for c in conflicts]
    lost_ranges = _subtract(_merge(lost), kept_ranges)
    return {
        "directory": partition.directory, "out_directory": out, "segments": written_segments,
        "batches_kept": len(kept), "batches_failed_crc": failed_crc, "duplicates_dropped": duplicates,
        "conflicts": conflicts, "damaged_ranges": damaged,
        "offset_ranges_kept": [{"first_offset": first, "last_offset": last} for first, last in kept_ranges],
        "offset_ranges_lost": [{"first_offset": first, "last_offset": None if last == UNKNOWN_END else last}
                               for first, last in lost_ranges],
        "copied": copied,
    }, inputs


def _first_offset(record_batch: RecordBatch, path: str) -> int:
    """``base_offset_of`` a batch salvage keeps; a checksum-valid wrapper whose inner set does not decode
    gives its own offset, all that is known of it."""
    first = base_offset_of(record_batch, path=path)
    return record_batch.base_offset if first is None else first


def _choose(found: list[_Found], segments: list[Segment], bases: list[int]):
    """The batches to write, each with the output segment it belongs to; the conflicts; the duplicates dropped.

    In offset order, a batch is kept unless its offsets overlap the last kept batch (an exact
    copy of it is dropped quietly) or no segment can hold it: Kafka needs the segment's base
    offset at or below the batch and its offsets within 32 bits of that base.
    """
    kept: list[tuple[_Found, int]] = []
    conflicts: list[dict] = []
    duplicates = 0
    for batch in sorted(found):
        home = bisect.bisect_right(bases, batch.first_offset) - 1
        reason = None
        if home < 0:
            reason = f"its offsets are below the first segment's base offset {bases[0]}"
        elif batch.last_offset - bases[home] > _INT32_MAX:
            reason = f"its offsets do not fit the 32-bit relative offsets of segment {bases[home]}"
        elif kept and batch.first_offset <= kept[-1][0].last_offset:
            previous = kept[-1][0]
            same_offsets = (batch.first_offset, batch.last_offset) == (previous.first_offset, previous.last_offset)
            if same_offsets and _bytes(segments, batch) == _bytes(segments, previous):
                duplicates += 1
                continue
            reason = (f"its offsets overlap the kept batch of {span(previous.first_offset, previous.last_offset)} at byte "
                      f"{previous.position} of {segments[previous.segment].log_path}")
        if reason is not None:
            conflicts.append({"file": segments[batch.segment].log_path, "position": batch.position,
                              "first_offset": batch.first_offset, "last_offset": batch.last_offset,
                              "reason": reason})
            continue
        kept.append((batch, home))
    return kept, conflicts, duplicates


def _bytes(segments: list[Segment], batch: _Found) -> bytes:
    return segments[batch.segment].log[batch.position:batch.position + batch.size]


def _write_segment(segment: Segment, batches: list[_Found], data: bytes, out: str, interval: int,
                   txn_state: ProducerTxnState, force: bool) -> dict:
    base = segment.base_offset
    log_path = os.path.join(out, file_name(base, LOG))
    recovery = recover_segment(data, log_path, base, interval, txn_state)
    if recovery.valid_bytes != len(data):  # kept batches are valid and placed as Kafka requires
        raise SegtoolError(f"Kafka's recovery would cut the salvaged segment at byte {recovery.valid_bytes} "
                           f"({recovery.stop_message}); nothing more written", log_path)
    contents = [(LOG, data), (INDEX, recovery.offset_index_bytes()), (TIME_INDEX, recovery.time_index_bytes())]
    if recovery.aborted_txns:
        contents.append((TXN_INDEX, recovery.txn_index_bytes()))
    return {
        "log": segment.log_path, "base_offset": base, "batches_written": len(batches), "bytes_written": len(data),
        "offset_index_entries": len(recovery.offset_entries), "time_index_entries": len(recovery.time_entries),
        "aborted_transactions": len(recovery.aborted_txns),
        "written": [write_atomically(os.path.join(out, file_name(base, suffix)), content, replace=force)
                    for suffix, content in contents],
    }


# --------------------------------------------------------------------------
# RocketMQ
# --------------------------------------------------------------------------


# the Parquet columns: (name, arrow type name, the decoded message's field)
# messages.parquet's columns, in its order (their types and sources: the message's field table)
_MESSAGES_PARQUET_COLUMNS = (
    "commitlog_file", "file_offset", "physical_offset", "physical_offset_field", "total_size", "topic", "queue_id",
    "queue_offset", "sys_flag", "flag", "born_timestamp", "store_timestamp", "born_host", "store_host", "msg_id",
    "keys", "tags", "uniq_key", "body_size", "body_sha256",
)


def _out_store(store: Store, places: dict[str, str]) -> str:
    return places[os.path.abspath(store.root)]


def _salvage_stores(stores: list[Store], paths, places, force, progress, report: dict, map_tasks: MapTasks) -> None:
    # what is known before a store is read is checked for every store before any is: a store's other
    # outputs (its queues' and index files' names) when it has been read, by its own unit of work
    known = []
    for store in stores:
        out = Path(_out_store(store, places))
        known += [str(out / rocketmq_names.COMMITLOG_DIR / os.path.basename(f.path)) for f in store.commitlog]
        known.append(str(out / MESSAGES_PARQUET))
    plan_outputs(known, paths, False, force)
    for store in stores:
        report["skipped"].extend({"path": f.path, "reason": file_format(f.kind).salvage_note or _NOT_TAKEN}
                                 for f in store.files if f.kind != FileKind.ROCKETMQ_COMMITLOG)
    items = [(store, _out_store(store, places), paths) for store in stores]
    for salvaged, inputs in map_tasks(partial(_salvage_store, force=force, progress=progress), items,
                                      [sum(f.size for f in store.files) for store in stores]):
        report["stores"].append(salvaged)
        report["inputs"].extend(inputs)


def _salvage_store(item: tuple[Store, str, list[str]], force: bool, progress) -> tuple[dict, list[dict]]:
    """A unit of work: one store read, its outputs checked (``plan_outputs``) and written; its report and
    its inputs."""
    store, out_dir, paths = item
    inputs: list[dict] = []
    survivors = _read_store(store, progress, inputs)
    out = Path(out_dir)
    try:
        targets = [str(out / rocketmq_names.COMMITLOG_DIR / name) for name in survivors["commitlog_sizes"]]
        targets += [str(out / rocketmq_names.CONSUMEQUEUE_DIR / topic / str(queue) / name)
                    for (topic, queue), files in survivors["queues"].items() for name in files]
        targets += [str(out / rocketmq_names.INDEX_DIR / view.name) for view in survivors["index"].created]
        targets.append(str(out / MESSAGES_PARQUET))
        plan_outputs(targets, paths, False, force)
        return _write_store(store, out, survivors, force), inputs
    finally:
        for view in survivors["index"].created:
            view.close()


def _read_store(store: Store, progress, inputs: list[dict]) -> dict:
    """Everything a store's output needs, computed before anything is written."""
    files = [(int(os.path.basename(f.path)), f.path) for f in store.commitlog]
    starts = [start for start, _ in files]
    spacing = Counter(b - a for a, b in zip(starts, starts[1:])).most_common(1)
    file_size = spacing[0][0] if spacing else os.path.getsize(files[0][1])  # mappedFileSizeCommitLog
    messages, damaged, blanks = [], [], {}
    failed_crc = 0
    for start, path in files:
        inputs.append(_input(path))
        name = os.path.basename(path)
        advance = progress.file(path) if progress is not None else None
        with rmq.MappedFile(path) as mapped:
            for piece in commitlog_pieces(mapped.buf, file_from_offset=start, file=name, path=path,
                                          decompress=False):
                if isinstance(piece, DamagedRange):
                    damaged.append(piece.as_dict())
                elif isinstance(piece, rmq.CommitLogEnd):
                    if piece.kind is WalkEnd.BLANK:  # the end record RocketMQ's readers step to the next file by
                        blanks[name] = piece.file_offset
                elif body_crc_valid(piece):
                    messages.append(piece)
                else:
                    failed_crc += 1
                if advance is not None and isinstance(piece, dict):
                    advance(piece["fileOffset"] + piece["totalSize"])
    queued, conflicts, taken = _queue_units(messages)
    units_per_file = _units_per_file(store)
    hash_slots, index_num, geometry_source = index_geometry(Path(store.root), None, None)
    dispatches = [rs.DispatchRequest(m["dispatch"]["commitLogOffset"], m["storeTimestamp"], m["sysFlag"],
                                     m["topic"], m["dispatch"]["keys"], m["dispatch"]["uniqKey"], m["totalSize"])
                  for m in messages if m["dispatch"]["success"]]
    # deterministic names, as rebuild-index gives them: the first entry's storeTimestamp (UTC)
    index = rs.build_index_files(dispatches, hash_slots, index_num, name_for=lambda previous: "pending")
    previous = None
    for view in index.created:
        view.name = previous = rs.index_file_name(view.header["beginTimestamp"], previous)
    return {
        "files": files, "file_size": file_size, "messages": messages, "damaged": damaged, "blanks": blanks,
        "failed_crc": failed_crc, "conflicts": conflicts, "queued": queued, "units_per_file": units_per_file,
        "queues": {queue: _queue_files(units, units_per_file) for queue, units in queued.items()},
        "commitlog_sizes": {os.path.basename(path): file_size for _, path in files},
        "index": index, "geometry": {"hash_slot_num": hash_slots, "index_num": index_num,
                                     "file_size": rmq.index_file_size(hash_slots, index_num),
                                     "source": geometry_source},
        "lost_queue_offsets": _lost_queue_offsets(store, queued, taken, damaged),
    }


def _queue_units(messages: list[dict]):
    """Per (topic, queueId): {queue offset: (phyOffset, size, tagsCode)} of the messages RocketMQ queues
    (not prepared or rolled-back transactions), a second message at a taken queue offset being a conflict;
    and per queue the offsets each takes (an inner batch INNER_NUM of them, CommitLog.setBatchSizeIfNeeded)."""
    queued: dict[tuple[str, int], dict[int, tuple[int, int, int]]] = defaultdict(dict)
    taken: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    conflicts = []
    for m in messages:
        if m["transactionType"] not in DISPATCHED_TRAN_TYPES or not m["dispatch"]["success"]:
            continue
        if not _names_a_directory(m["topic"]):
            conflicts.append({"file": m["file"], "position": m["fileOffset"], "first_offset": m["queueOffset"],
                              "last_offset": m["queueOffset"], "topic": m["topic"], "queue_id": m["queueId"],
                              "reason": "the topic cannot name a ConsumeQueue directory (a damaged header the body "
                                        "CRC does not cover): kept in the CommitLog, not queued"})
            continue
        units = queued[(m["topic"], m["queueId"])]
        if m["queueOffset"] in units:
            conflicts.append({"file": m["file"], "position": m["fileOffset"], "first_offset": m["queueOffset"],
                              "last_offset": m["queueOffset"], "topic": m["topic"], "queue_id": m["queueId"],
                              "reason": f"queue offset taken by the message at physical offset "
                                        f"{units[m['queueOffset']][0]}: kept in the CommitLog, not queued"})
            continue
        units[m["queueOffset"]] = (m["phyOffset"], m["totalSize"], m["dispatch"]["tagsCode"])
        taken[(m["topic"], m["queueId"])][m["queueOffset"]] = rmq.queue_offsets_taken(m["properties"])
    return dict(queued), conflicts, dict(taken)


def _names_a_directory(topic: str) -> bool:
    """Can the topic be the ConsumeQueue directory's name (no NUL or '/', not '', '.' or '..')?"""
    return topic not in ("", ".", "..") and "\x00" not in topic and "/" not in topic


def _units_per_file(store: Store) -> int:
    """The store's ConsumeQueue file size in units: its most common ConsumeQueue file size."""
    sizes = Counter(f.size for f in store.files if f.kind == FileKind.ROCKETMQ_CONSUMEQUEUE and f.size % rmq.CQ_UNIT_SIZE == 0
                    and f.size)
    return sizes.most_common(1)[0][0] // rmq.CQ_UNIT_SIZE if sizes else DEFAULT_UNITS_PER_FILE


def _queue_files(units: dict[int, tuple[int, int, int]], units_per_file: int) -> dict[str, bytearray]:
    """The ConsumeQueue files of one queue: from the file holding its first unit to the one holding its
    last; filler units where a queue offset has no message, zeros after the last unit."""
    first, last = min(units), max(units)
    start = first - first % units_per_file
    files: dict[str, bytearray] = {}
    for file_start in range(start, last + 1, units_per_file):
        content = bytearray(units_per_file * rmq.CQ_UNIT_SIZE)
        for queue_offset in range(file_start, min(file_start + units_per_file, last + 1)):
            unit = units.get(queue_offset)
            position = (queue_offset - file_start) * rmq.CQ_UNIT_SIZE
            if unit is None:
                content[position:position + rmq.CQ_UNIT_SIZE] = _FILLER
            else:
                rmq.CONSUME_QUEUE_UNIT_FAST.pack_into(content, position, *unit)
        files[rocketmq_names.file_name(file_start * rmq.CQ_UNIT_SIZE)] = content
    return files


def _lost_queue_offsets(store: Store, queued: dict, taken: dict, damaged: list[dict]) -> list[dict]:
    """Queue offsets no survivor holds: gaps between survivors (a survivor holds the offsets it takes: an
    inner batch INNER_NUM), those a damaged range lost (inferred from its neighbours), and those the input
    store's ConsumeQueue lists beyond the survivors."""
    lost: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for queue, units in queued.items():
        offsets = sorted(units)
        ends = [a + taken[queue][a] - 1 for a in offsets]  # the last offset each survivor holds
        lost[queue] += [(end + 1, b - 1) for end, b in zip(ends, offsets[1:]) if b > end + 1]
    for item in damaged:
        if item.get("topic") is not None and item["first_offset"] is not None and item["offsets_lost"]:
            lost[(item["topic"], item["queue_id"])].append((item["first_offset"], item["last_offset"]))
    consumequeue = Path(store.root) / rocketmq_names.CONSUMEQUEUE_DIR
    for topic, queue_id, directory in rmq.list_consume_queues(consumequeue) if consumequeue.is_dir() else []:
        try:
            low, high = rs.queue_bounds(rmq.ConsumeQueue(directory, topic, queue_id))
        except SegtoolError:  # a damaged input queue bounds nothing: the other sources still count
            continue
        if high > low:
            lost[(topic, queue_id)].append((low, high - 1))
    out = []
    for (topic, queue_id), ranges in sorted(lost.items()):
        held = taken.get((topic, queue_id), {})
        kept = _merge([(offset, offset + held[offset] - 1) for offset in queued.get((topic, queue_id), {})])
        out += [{"topic": topic, "queue_id": queue_id, "first_offset": first, "last_offset": last}
                for first, last in _subtract(_merge(ranges), kept)]
    return out


def _write_store(store: Store, out: Path, survivors: dict, force: bool) -> dict:
    written = []
    by_file = defaultdict(list)
    for m in survivors["messages"]:
        by_file[m["file"]].append(m)
    for _, path in survivors["files"]:
        name = os.path.basename(path)
        content = bytearray(survivors["commitlog_sizes"][name])
        with rmq.MappedFile(path) as mapped:
            for m in by_file[name]:
                position, size = m["fileOffset"], m["totalSize"]
                content[position:position + size] = mapped.buf[position:position + size]
            blank = survivors["blanks"].get(name)
            if blank is not None:
                end = blank + rmq.BLANK_RECORD_FAST.size
                content[blank:end] = mapped.buf[blank:end]
        written.append(write_atomically(str(out / rocketmq_names.COMMITLOG_DIR / name), content, replace=force))
    units = 0
    for (topic, queue_id), files in survivors["queues"].items():
        for name, content in files.items():
            written.append(write_atomically(str(out / rocketmq_names.CONSUMEQUEUE_DIR / topic / str(queue_id) / name), content,
                                            replace=force))
        units += len(survivors["queued"][(topic, queue_id)])
    size = survivors["geometry"]["file_size"]
    for view in survivors["index"].created:
        with memoryview(view.buf) as whole, whole[:size] as data:
            written.append(write_atomically(str(out / rocketmq_names.INDEX_DIR / view.name), data, replace=force))
    parquet = write_atomically(str(out / MESSAGES_PARQUET), _messages_parquet(survivors["messages"]), replace=force)
    notes = []
    last_file = os.path.basename(survivors["files"][-1][1])
    holes = [r for r in survivors["damaged"] if os.path.basename(r["file"]) != last_file
             or any(m["fileOffset"] > r["first_byte"] for m in by_file[last_file])]
    if holes:
        notes.append(f"{len(holes)} damaged range(s) with surviving messages after them are zeros in the output "
                     f"CommitLog (the first at {holes[0]['file']} byte {holes[0]['first_byte']}): RocketMQ's "
                     "recovery stops at the first such hole and drops what follows; segtool reads past it")
    return {
        "store": store.root, "out_directory": str(out), "commitlog_file_size": survivors["file_size"],
        "consume_queue_units_per_file": survivors["units_per_file"], "index_geometry": survivors["geometry"],
        "messages_kept": len(survivors["messages"]), "messages_failed_crc": survivors["failed_crc"],
        "messages_not_queued": len(survivors["messages"]) - units - len(survivors["conflicts"]),
        "consume_queue_units": units, "index_entries": survivors["index"].entries_written,
        "queue_offsets_lost": survivors["lost_queue_offsets"], "conflicts": survivors["conflicts"],
        "damaged_ranges": survivors["damaged"], "messages_parquet": parquet, "written": written, "notes": notes,
    }


def _messages_parquet(messages: list[dict]) -> bytes:
    """The surviving messages, one row each, with their original physical offsets, as Parquet bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(arrow_fields(MESSAGE_FIELDS, _MESSAGES_PARQUET_COLUMNS, by_column=True))
    table = pa.table({name: [m[MESSAGE_COLUMNS[name].source] for m in messages] for name in _MESSAGES_PARQUET_COLUMNS},
                     schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()
