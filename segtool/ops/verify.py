"""`verify`: check files the way Kafka does, and more; predict what recovery would cut.

Each file gets ``{"path", "size", "sha256", "kind", "status", "problems", ...}``;
a problem is a ``segtool.findings.Finding`` (printed as ``{"kind", "severity",
"byte_offset", "offset", "message"}``) whose kind fixes its severity: "error"
makes the file's status "problems" and "info" does not (offset gaps, which
compaction makes legal, for example).  ``.log`` files also get
``recovery``: where Kafka's log recovery would truncate and what it would lose.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import replace
from typing import Callable

from segtool.engine.recovery import RecoveryStop, SegmentObserver, recover_segment, records_after
from segtool.source import open_buffer, sha256_beside
from segtool.engine.inventory import inventory
from segtool.errors import CorruptData, SegtoolError, UnreadableInput
from segtool.findings import Finding, FindingKind, Severity, finding, has_errors
from segtool.formats import kafka_index
from segtool.formats.detect import NOT_RECOGNISED, detect
from segtool.formats.kafka_names import offset_from_file_name
from segtool.formats.kafka_log import BatchScan, batch_records, chunk_records
from segtool.ops.output_schema import VerifyReport
from segtool.ops.render import damaged_range_text

_INT32_MAX = 2**31 - 1

# kafka_state (construct, numpy) and kafka_dump_log are imported where they are
# needed: verifying a .log should not pay for them at start-up.


def _zero_tail(buf, start: int) -> bool:
    tail = buf[start:]
    return len(tail) > 0 and tail.count(0) == len(tail)


# -- .log -------------------------------------------------------------------


class _BatchChecks(SegmentObserver):
    """verify's checks of every framed batch: per batch, or over a chunk's columns
    with the per-batch checks run on the batches the columns flag."""

    def __init__(self, path: str, base: int, deep: bool):
        self.path, self.base, self.deep = path, base, deep
        self.problems: list[Finding] = []
        self.previous_last: int | None = None
        self.first_base: int | None = None
        self.batches = self.records = 0

    def batch(self, batch) -> None:
        self.batches += 1
        if self.first_base is None:
            self.first_base = batch.base_offset
        self.problems.extend(self._problems(batch, self.previous_last))
        self.previous_last = batch.last_offset
        if self.deep:
            self._decode(batch)
        elif batch.magic >= 2:
            self.records += batch.record_count or 0

    def _decode(self, batch) -> None:
        try:
            self.records += len(batch_records(batch, self.path))
        except CorruptData as exc:
            self.problems.append(finding(FindingKind.RECORD_STRUCTURE, exc.offset, exc.message))

    def chunk(self, headers) -> None:
        import numpy as np

        base_offset = headers.column("base_offset")
        last_offset = base_offset + headers.column("last_offset_delta")
        count = headers.column("record_count")
        previous = np.concatenate(([-1 if self.previous_last is None else self.previous_last], last_offset[:-1]))
        ordered = (base_offset == previous + 1)
        if self.previous_last is None:
            ordered[0] = True
        flagged = ((headers.column("crc") != headers.computed_crc) | (count > headers.column("last_offset_delta") + 1)
                   | (last_offset - self.base > _INT32_MAX) | (base_offset < self.base) | ~ordered)
        undecoded = set()
        if self.deep:  # every record decoded, the chunk's at once; the rest by batch_records, which names the damage
            decoded = chunk_records(headers, self.path).decoded
            undecoded = set(np.flatnonzero(~decoded).tolist())
            self.records += int(np.maximum(count[decoded], 0).sum())
        else:
            self.records += int(count.sum())
        for i in sorted(undecoded.union(np.flatnonzero(flagged).tolist())):
            batch = headers.batch(i)
            if flagged[i]:
                prior = None if i == 0 and self.previous_last is None else int(previous[i])
                self.problems.extend(self._problems(batch, prior))
            if i in undecoded:
                self._decode(batch)
        if self.first_base is None:
            self.first_base = int(base_offset[0])
        self.previous_last = int(last_offset[-1])
        self.batches += len(headers)

    def _problems(self, batch, previous_last: int | None) -> list[Finding]:
        problems = []
        base = self.base

        def add(kind: FindingKind, message: str) -> None:
            problems.append(finding(kind, batch.position, message, offset=batch.base_offset))

        if not batch.crc_valid:
            algorithm = "CRC-32C" if batch.magic >= 2 else "CRC32"
            add(FindingKind.CRC_MISMATCH, f"{algorithm} stored {batch.crc} but computed {batch.computed_crc()}")
        if batch.magic >= 2 and (batch.record_count or 0) > batch.last_offset_delta + 1:
            add(FindingKind.RECORD_COUNT, f"{batch.record_count} records cannot fit {batch.last_offset_delta + 1} "
                                          "offsets")
        if batch.last_offset - base > _INT32_MAX:
            add(FindingKind.RELATIVE_OFFSET_OVERFLOW, f"offset {batch.last_offset} is more than 2^31-1 past the "
                                                      f"segment base {base}")
        if batch.base_offset < base:
            add(FindingKind.OFFSET_BEFORE_BASE, f"batch base offset {batch.base_offset} is below the segment base "
                                                f"{base}")
        if previous_last is not None:
            if batch.base_offset <= previous_last:
                add(FindingKind.OFFSETS_NOT_INCREASING, f"batch starts at {batch.base_offset} after offset "
                                                        f"{previous_last}")
            elif batch.base_offset > previous_last + 1:
                add(FindingKind.OFFSET_GAP, f"offsets {previous_last + 1}..{batch.base_offset - 1} are absent "
                                            "(legal after compaction)")
        return problems


def verify_log(path: str, deep: bool = False, progress: Callable[[int], None] | None = None,
               parallel: bool = False) -> dict:
    buf = open_buffer(path)
    # KRaft snapshots (<end offset>-<epoch>.checkpoint, bootstrap.checkpoint) number their batches from 0
    base = 0 if path.endswith(".checkpoint") else offset_from_file_name(path)
    checks = _BatchChecks(path, base, deep)
    problems = checks.problems
    # one pass: Kafka's recovery, with every framed batch checked on the way
    recovery = recover_segment(buf, path, base, progress=progress, observe=checks, parallel=parallel)
    if recovery.framing_error is not None:
        exc = recovery.framing_error
        if exc.offset is not None and _zero_tail(buf, exc.offset):
            problems.append(finding(FindingKind.ZERO_TAIL, exc.offset,
                                    f"{len(buf) - exc.offset} zero bytes after the last "
                                    "batch (preallocated or torn write)"))
        else:
            problems.append(finding(FindingKind.CORRUPT_FRAMING, exc.offset, exc.message))
    elif recovery.framed_bytes < len(buf):
        end = recovery.framed_bytes
        kind, what = (FindingKind.ZERO_TAIL, "zero bytes after the last batch (preallocated or torn write)") \
            if _zero_tail(buf, end) else (FindingKind.TRAILING_BYTES, "bytes after the last whole batch do not form "
                                                                      "a batch")
        problems.append(finding(kind, end, f"{len(buf) - end} {what}"))
    first_base = checks.first_base
    if first_base is not None and first_base != base:
        problems.append(finding(FindingKind.SEGMENT_NAME, 0, f"file is named for offset {base} but its first batch "
                                                             f"starts at {first_base}", info=first_base > base,
                                offset=first_base))
    # an offset outside the base's 32-bit range is not cut: LogLoader splits the segment there and
    # loads again (LocalLog.splitOverflowedSegment; `inspect` shows the split)
    splits = recovery.stop_reason is RecoveryStop.OFFSET_OUT_OF_RANGE
    lost_records, torn_records = records_after(buf, recovery.valid_bytes, path) \
        if recovery.bytes_lost and not splits else (0, 0)
    if recovery.bytes_lost and recovery.stop_reason is RecoveryStop.INVALID_BATCH:
        problems.append(finding(FindingKind.RECOVERY_TRUNCATION, recovery.valid_bytes,
                                f"Kafka's recovery stops here: {recovery.stop_message}"))
    salvage = None
    if recovery.bytes_lost and not splits:  # a clean segment never pays for reading past damage
        salvage = salvage_after(buf, path, recovery.valid_bytes,
                                base if recovery.next_offset is None else recovery.next_offset, problems)
    return {
        "batches": checks.batches,
        "records": checks.records,
        "first_offset": first_base,
        "last_offset": checks.previous_last,
        "problems": problems,
        "recovery": {
            "valid_bytes": recovery.valid_bytes,
            "bytes_lost": recovery.bytes_lost,
            "records_lost": lost_records,
            "torn_batch_records": torn_records,
            "stop_reason": recovery.stop_reason,
            "stop_message": recovery.stop_message,
            "salvage": salvage,
        },
    }


def salvage_after(buf, path: str, position: int, next_offset: int, problems: list[Finding]) -> dict:
    """What reading past damage keeps of the bytes recovery cuts from ``position``: valid batches,
    their records and offsets; each damaged range becomes a finding."""
    # imported here: the search loads numpy and the RocketMQ layouts, which a clean segment never needs
    from segtool.engine.salvage import DamagedRange, kafka_pieces

    kept = records = 0
    first = last = None
    for piece in kafka_pieces(buf, path, base_offset=next_offset, start=position):
        if isinstance(piece, DamagedRange):
            problems.append(finding(FindingKind.DAMAGED_RANGE, piece.first_byte,
                                    damaged_range_text(piece.as_dict()), offset=piece.first_offset))
        elif piece.crc_valid:
            kept += 1
            records += _record_count(piece, path)
            first = piece.base_offset if first is None else first
            last = piece.last_offset
    return {"batches": kept, "records": records, "first_offset": first, "last_offset": last}


def _record_count(batch, path: str) -> int:
    if batch.magic >= 2:
        return max(batch.record_count or 0, 0)
    try:
        return len(batch_records(batch, path))
    except CorruptData:  # a wrapper whose inner messages do not decode keeps none
        return 0


# -- indexes ----------------------------------------------------------------


def _index_vs_log(path: str, time_index: bool) -> list[Finding]:
    """kafka-dump-log's --verify-index-only checks, reported as problems."""
    from segtool.ops.kafka_dump_log import KafkaDumpLog, KafkaDumpOptions

    tool = KafkaDumpLog(KafkaDumpOptions(verify_index_only=True), lambda line: None)
    problems = []
    try:
        if time_index:
            tool.dump_time_index(path)
        else:
            tool.dump_offset_index(path)
    except SegtoolError as exc:
        problems.append(finding(FindingKind.INDEX_POINTS_NOWHERE, exc.offset, exc.message))
    for pairs in tool.index_mismatches.values():
        for index_offset, log_offset in reversed(pairs):
            problems.append(finding(FindingKind.INDEX_OFFSET_MISMATCH, None,
                                    f"index entry offset {index_offset} but the batch there ends at {log_offset}",
                                    offset=index_offset))
    for pairs in tool.time_mismatches.values():
        for index_ts, log_ts in pairs:
            problems.append(finding(FindingKind.TIMESTAMP_MISMATCH, None,
                                    f"index timestamp {index_ts} but the batch's max timestamp is {log_ts}"))
    for pairs in tool.time_out_of_order.values():
        for index_ts, previous in pairs:
            problems.append(finding(FindingKind.TIMESTAMP_OUT_OF_ORDER, None,
                                    f"index timestamp {index_ts} is not above the previous entry's {previous}"))
    for pairs in tool.time_not_found.values():
        for index_offset, log_offset in pairs:
            problems.append(finding(FindingKind.INDEXED_OFFSET_NOT_FOUND, None,
                                    f"indexed offset {index_offset} not found in the log (batch found: {log_offset})",
                                    offset=index_offset))
    return problems


def _older_broker_time_entries(path: str, problems: list[Finding]) -> list[Finding]:
    """Older brokers indexed any offset inside the batch: accept offsets within [base, last]."""
    if not any(p.kind is FindingKind.INDEXED_OFFSET_NOT_FOUND for p in problems):
        return problems
    index = kafka_index.TimeIndex(path).trim_to_valid()
    offsets_index = kafka_index.OffsetIndex(path.rsplit(".", 1)[0] + ".index")
    log = open_buffer(path.rsplit(".", 1)[0] + ".log")
    inside = set()
    for slot in range(index.entries):
        entry = index.entry(slot)
        try:
            for batch in BatchScan(log, offsets_index.lookup(entry.offset).position):
                if batch.last_offset >= entry.offset:
                    if batch.base_offset <= entry.offset:
                        inside.add(entry.offset)
                    break
        except CorruptData:
            continue  # reported by the index-versus-log checks already
    kept = []
    for problem in problems:
        if problem.kind is FindingKind.INDEXED_OFFSET_NOT_FOUND and problem.offset in inside:
            problem = finding(FindingKind.INDEXED_OFFSET_INSIDE_BATCH, problem.byte_offset,
                              problem.message + "; it lies inside the batch, as older brokers indexed",
                              offset=problem.offset)
        kept.append(problem)
    return kept


def verify_index(path: str, time_index: bool) -> dict:
    cls = kafka_index.TimeIndex if time_index else kafka_index.OffsetIndex
    index = cls(path)
    problems = []
    valid = index.dump_entries
    preallocated = index.entries > valid  # a zero-filled tail: the unflushed active segment of a hot copy
    try:
        index.sanity_check(path)
    except kafka_index.CorruptIndex as exc:
        if preallocated:
            # LogSegment.sanityCheck skips index checks at load and the broker rebuilds the indexes of
            # segments past the recovery point: the zero last slot of a live index is no damage
            problems.append(finding(FindingKind.SANITY_CHECK, exc.offset,
                                    exc.kafka_message + " (its last slot is preallocated zeros; a broker loading "
                                    "this copy skips the check and rebuilds the index)", info=True))
        else:
            problems.append(finding(FindingKind.SANITY_CHECK, exc.offset, exc.kafka_message))
    if preallocated:
        problems.append(finding(FindingKind.ZERO_TAIL, valid * index.entry_size,
                                f"{index.entries - valid} zero entries after {valid} valid ones "
                                "(preallocated file of a hot copy; `segtool trim` shrinks it)", info=True))
    problems.extend(_monotonicity(index, valid, time_index))
    log = path.rsplit(".", 1)[0] + ".log"
    offset_index = path.rsplit(".", 1)[0] + ".index"
    if time_index and os.path.exists(log) and not os.path.exists(offset_index):
        problems.append(finding(FindingKind.MISSING_INDEX, None,
                                f"{offset_index} does not exist, so this time index is not checked against the log "
                                "(its entries are found through the offset index); the broker rebuilds both"))
    elif os.path.exists(log):
        checks = _index_vs_log(path, time_index)
        if valid == 1 and index.entries > 1 and not any(open_buffer(path)[:index.entry_size]):
            # a hot copy whose only "entry" is the first preallocated zero slot
            checks = [replace(p, message=p.message + " (the slot is preallocated zeros)", severity=Severity.INFO)
                      if p.kind in (FindingKind.INDEX_OFFSET_MISMATCH, FindingKind.INDEXED_OFFSET_NOT_FOUND) else p
                      for p in checks]
        if time_index:
            checks = _older_broker_time_entries(path, checks)
        problems.extend(checks)
    else:
        problems.append(finding(FindingKind.MISSING_LOG, None, "no .log beside this index to check it against"))
    return {"entries": valid, "problems": problems}


def _monotonicity(index, valid: int, time_index: bool) -> list[Finding]:
    """Entries must grow: offsets and positions (offset index), timestamps and offsets (time index)."""
    problems = []
    previous = None
    for slot in range(valid):
        entry = tuple(index.entry(slot))
        if previous is not None:
            names = ("timestamp", "offset") if time_index else ("offset", "position")
            for name, before, now in zip(names, previous, entry):
                if now < before or (now == before and not time_index):
                    problems.append(finding(FindingKind.ENTRIES_OUT_OF_ORDER, slot * index.entry_size,
                                            f"entry {slot} {name} {now} is not above entry {slot - 1}'s {before}"))
        previous = entry
    return problems


def verify_txn_index(path: str) -> dict:
    index = kafka_index.TransactionIndex(path)
    problems = []
    try:
        index.sanity_check(path)
    except kafka_index.KafkaReportedError as exc:
        problems.append(finding(FindingKind.SANITY_CHECK, exc.offset, exc.kafka_message))
    if index.trailing_bytes:
        problems.append(finding(FindingKind.TRAILING_BYTES, index.entries * index.entry_size,
                                f"{index.trailing_bytes} bytes after the last whole entry"))
    return {"entries": index.entries, "problems": problems}


def verify_snapshot(path: str) -> dict:
    from segtool.formats import kafka_state

    try:
        snap = kafka_state.read_producer_snapshot(path, verify=False)
    except kafka_state.CorruptSnapshot as exc:
        return {"problems": [finding(FindingKind.SNAPSHOT_STRUCTURE, exc.offset, exc.kafka_message)]}
    problems = []
    if not snap.crc_ok:
        problems.append(finding(FindingKind.CRC_MISMATCH, 2,
                                f"CRC-32C stored {snap.crc} but computed {snap.computed_crc}"))
    return {"producers": len(snap.entries), "problems": problems}


def verify_leader_epochs(path: str) -> dict:
    """leader-epoch-checkpoint against the leader epochs the batches carry."""
    from segtool.formats import kafka_state

    try:
        entries = kafka_state.read_leader_epoch_checkpoint(path)
    except kafka_state.CorruptCheckpoint as exc:
        return {"problems": [finding(FindingKind.CHECKPOINT_FORMAT, exc.offset, exc.message)]}
    directory = os.path.dirname(path) or "."
    known = {e.epoch for e in entries}
    newest = max(known, default=None)
    starts = [e.start_offset for e in entries]
    first_offset_of_epoch: dict[int, int] = {}
    contradicted: dict[int, tuple[int, int]] = {}  # entry -> (offset, epoch) of the first batch against it
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        try:
            for batch in BatchScan(open_buffer(os.path.join(directory, name))):
                epoch = batch.partition_leader_epoch
                if batch.magic < 2 or epoch < 0:
                    continue
                first_offset_of_epoch.setdefault(epoch, batch.base_offset)
                # the checkpoint gives [start of entry i, start of entry i+1) to entry i's epoch; an
                # epoch newer than every entry is a checkpoint that lags behind, reported below
                i = bisect.bisect_right(starts, batch.base_offset) - 1
                if i >= 0 and entries[i].epoch != epoch and i not in contradicted and not (
                        epoch not in known and epoch > newest):
                    contradicted[i] = (batch.base_offset, epoch)
        except (CorruptData, UnreadableInput):  # that .log's own entry reports it
            continue
    problems = []
    for i, (offset, epoch) in sorted(contradicted.items()):
        problems.append(finding(FindingKind.LEADER_EPOCH, None,
                                f"the checkpoint gives offsets from {entries[i].start_offset} to epoch "
                                f"{entries[i].epoch}, but the batch at offset {offset} carries leader epoch {epoch}"))
    for entry in entries:
        seen = first_offset_of_epoch.get(entry.epoch)
        if seen is not None and seen != entry.start_offset and seen > entry.start_offset:
            problems.append(finding(FindingKind.LEADER_EPOCH, None,
                                    f"epoch {entry.epoch} starts at {entry.start_offset} in the checkpoint but its "
                                    f"first batch in the log is at {seen}", info=True))
    for epoch, offset in sorted(first_offset_of_epoch.items()):
        if epoch not in known and entries and epoch > newest:
            problems.append(finding(FindingKind.LEADER_EPOCH, None,
                                    f"batches carry leader epoch {epoch} from offset {offset}, which the "
                                    "checkpoint does not list"))
    return {"epochs": len(entries), "problems": problems}


# -- dispatch ---------------------------------------------------------------


def verify_file(path: str, deep: bool = False, progress=None, hash_input: bool = True,
                parallel: bool = False, store_contexts=None) -> dict:
    """One file's entry of the report.  ``store_contexts`` (``verify_rocketmq.StoreContexts``) lets
    the files of one RocketMQ store share what they have in common."""
    detected = detect(path)
    result = {"path": path, "kind": detected.kind}
    hasher = None
    try:
        result["size"] = os.path.getsize(path)
        if hash_input:
            # the hash runs on the other core while the file is checked (in a child process when
            # this command has the machine); it bounds a shallow check, which then takes no
            # checksum helper to compete with it
            hasher = sha256_beside(path, fork=parallel)
            parallel = parallel and deep
        kind = detected.kind
        if kind == "kafka-log":
            result.update(verify_log(path, deep, progress, parallel))
        elif kind == "kafka-offset-index":
            result.update(verify_index(path, time_index=False))
        elif kind == "kafka-time-index":
            result.update(verify_index(path, time_index=True))
        elif kind == "kafka-txn-index":
            result.update(verify_txn_index(path))
        elif kind == "kafka-producer-snapshot":
            result.update(verify_snapshot(path))
        elif kind == "kafka-leader-epoch-checkpoint":
            result.update(verify_leader_epochs(path))
        elif kind in ("kafka-offset-checkpoint", "kafka-partition-metadata"):
            from segtool.formats import kafka_state

            reader = (kafka_state.read_checkpoint if kind == "kafka-offset-checkpoint"
                      else kafka_state.read_partition_metadata)
            try:
                reader(path)
                result["problems"] = []
            except kafka_state.CorruptCheckpoint as exc:
                result["problems"] = [finding(FindingKind.FORMAT, exc.offset, exc.message)]
        elif kind.startswith("rocketmq-"):
            from segtool.ops.verify_rocketmq import verify_rocketmq_file

            result.update(verify_rocketmq_file(detected, deep, contexts=store_contexts))
        else:
            result["problems"] = []
            result["status"] = "skipped"
            result["reason"] = NOT_RECOGNISED
        if hasher is not None:
            result["sha256"] = hasher.result()
        if result.get("status") == "skipped":
            return result
    except UnreadableInput as exc:
        result.update(status="unreadable", problems=[finding(FindingKind.UNREADABLE, exc.offset, exc.message)])
        return result
    except OSError as exc:  # e.g. a symlink loop or a file removed while we read
        result.update(status="unreadable", problems=[finding(FindingKind.UNREADABLE, None, exc.strerror or str(exc))])
        return result
    except SegtoolError as exc:
        result.setdefault("problems", []).append(finding(FindingKind.UNREADABLE, exc.offset, exc.message))
        result["status"] = "unreadable"
        return result
    result["status"] = "problems" if has_errors(result["problems"]) else "ok"
    return result


def unreadable_entry(entry) -> dict:
    """The report item of a walked entry that cannot be read (dangling symlink, loop, FIFO ...)."""
    return {"path": entry.path, "kind": "unknown", "status": "unreadable",
            "problems": [finding(FindingKind.UNREADABLE, None, entry.unreadable)]}


class _StoreContextsOnFirstUse:
    """``verify_rocketmq``'s store contexts, made at the run's first RocketMQ file: a Kafka-only run never
    imports the RocketMQ layouts (numpy, construct), so its first file's hashing starts sooner."""

    def __init__(self):
        self._contexts = None

    def get(self, root, commitlog_dir=None):
        if self._contexts is None:
            from segtool.ops.verify_rocketmq.store import StoreContexts

            self._contexts = StoreContexts()
        return self._contexts.get(root, commitlog_dir)

    def close(self) -> None:
        if self._contexts is not None:
            self._contexts.close()


def verify(paths: list[str], deep: bool = False, progress_factory=None, hash_inputs: bool = True) -> VerifyReport:
    store_contexts = _StoreContextsOnFirstUse()
    try:
        files = _verify_walk(paths, deep, progress_factory, hash_inputs, store_contexts)
    finally:
        store_contexts.close()
    return summarize(check_partitions(files))


def _verify_walk(paths, deep, progress_factory, hash_inputs, store_contexts) -> list[dict]:
    files = []
    for entry in inventory(paths).entries:
        if entry.unreadable is not None:
            files.append(unreadable_entry(entry))
            continue
        path = entry.path
        progress = progress_factory(path) if progress_factory else None
        # one file at a time in this process: a helper process may take a share of the checksums
        files.append(verify_file(path, deep, progress, hash_inputs, parallel=True, store_contexts=store_contexts))
    return files


def check_partitions(files: list[dict]) -> list[dict]:
    """The checks across the files of a partition directory (local and distributed verify)."""
    _check_segment_order(files)
    _note_pending_swaps(files)
    _note_missing_indexes(files)
    return files


def _note_missing_indexes(files: list[dict]) -> None:
    """A segment without its .index: name the file the broker will look for."""
    for item in files:
        if item.get("kind") == "kafka-log" and item["path"].endswith(".log") and item.get("status") != "unreadable":
            index = item["path"][:-len(".log")] + ".index"
            if not os.path.exists(index):
                item["problems"].append(finding(
                    FindingKind.MISSING_INDEX, None,
                        f"{index} does not exist: Kafka's LogSegment.sanityCheck throws "
                        "NoSuchFileException when it loads the segment, and the broker rebuilds the index by "
                        "recovering the segment"))


def _note_pending_swaps(files: list[dict]) -> None:
    """A ``.log.swap`` is an interrupted log cleaning or split: say what Kafka makes of it at start."""
    from segtool.engine.partition import PartitionView

    swaps: dict[str, list[dict]] = {}
    for item in files:
        if item["path"].endswith(".log.swap") and item.get("status") != "unreadable":
            swaps.setdefault(os.path.dirname(item["path"]) or ".", []).append(item)
    for directory, items in swaps.items():
        try:
            notes = PartitionView(directory).notes
        except SegtoolError as exc:
            notes = [f"Kafka could not load the partition to complete the swap: {exc.message}"]
        for item in items:
            item["problems"].extend(finding(FindingKind.PENDING_SWAP, None, note) for note in notes)


def _check_segment_order(files: list[dict]) -> None:
    """Across the segments of a partition: each must start after the previous one's last offset.

    Kafka keeps segments by base offset and never checks this; overlapping
    segments (a bad copy, an interrupted swap) make fetches skip or repeat records.
    """
    by_directory: dict[str, list[dict]] = {}
    for item in files:
        if item.get("kind") == "kafka-log" and item["path"].endswith(".log") and item.get("first_offset") is not None:
            by_directory.setdefault(os.path.dirname(item["path"]), []).append(item)
    for segments in by_directory.values():
        segments.sort(key=lambda item: offset_from_file_name(item["path"]))
        for previous, item in zip(segments, segments[1:]):
            if item["first_offset"] <= previous["last_offset"]:
                item["problems"].append(finding(
                    FindingKind.SEGMENTS_OVERLAP, 0,
                        f"its first offset {item['first_offset']} is not above the last offset "
                        f"{previous['last_offset']} of {os.path.basename(previous['path'])}"))
                if item["status"] == "ok":
                    item["status"] = "problems"


def summarize(files: list[dict]) -> dict:
    """The report: every file's result and the counts by status (local and distributed verify)."""
    statuses = [f["status"] for f in files]
    return {
        "files": files,
        "summary": {
            "files": len(files),
            "ok": statuses.count("ok"),
            "problems": statuses.count("problems"),
            "unreadable": statuses.count("unreadable"),
            "skipped": statuses.count("skipped"),
        },
    }


def exit_code(report: dict) -> int:
    """2 when an input is unreadable, 1 for problems or when nothing was recognised, else 0."""
    summary = report["summary"]
    if summary["unreadable"]:
        return 2
    if summary["problems"] or summary["ok"] == 0:
        return 1
    return 0
