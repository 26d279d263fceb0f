"""`verify`'s checks of Kafka files: segments, indexes, snapshots, checkpoints; what recovery would cut.

``ops.verify`` runs them through each kind's format (``ops.file_formats``).  Each file gets ``{"path", "size", "sha256", "kind", "status", "problems", ...}``;
a problem is a finding (``segtool.findings``: ``{"kind", "severity",
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

from segtool.kafka.partition import PartitionView
from segtool.kafka.recovery import RecoveryStop, SegmentObserver, recover_segment
from segtool.formats.outcomes import DamageReason
from segtool.source import open_buffer
from segtool.errors import CorruptData, SegtoolError, UnreadableInput
from segtool.findings import Finding, FindingKind, Severity, finding
from segtool.kafka import index as kafka_index
from segtool.kafka.names import INDEX, KRAFT_SNAPSHOT, LOG, offset_from_file_name, sibling
from segtool.kafka.log import BatchScan
from segtool.kafka.record_columns import chunk_records
from segtool.kafka.records import base_offset_of, batch_records
from segtool.ops.render import damaged_range_text
from segtool.formats.ranges import span

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
        records, undecodable = None, None
        if self.deep:
            try:
                records = batch_records(batch, self.path)
            except CorruptData as exc:
                records, undecodable = [], finding(FindingKind.RECORD_STRUCTURE, exc.offset, exc.message)
            self.records += len(records)
        elif batch.magic >= 2:
            self.records += batch.record_count or 0
        # Kafka's baseOffset(): a compressed legacy wrapper's is its first inner offset, which a shallow
        # verify decompresses the wrapper for (legacy segments only); unknown when the inner set does not decode
        first = base_offset_of(batch, records, self.path)
        if self.first_base is None:
            self.first_base = batch.base_offset if first is None else first
        self.problems.extend(self._problems(batch, self.previous_last, first))
        self.previous_last = batch.last_offset
        if undecodable is not None:
            self.problems.append(undecodable)

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

    def _problems(self, batch, previous_last: int | None, first: int | None = None) -> list[Finding]:
        """The header's problems; ``first``: the batch's first offset (``base_offset_of``), None where it is
        unknown (a legacy wrapper whose inner set does not decode: no gap or order is claimed from it)."""
        problems = []
        base = self.base
        known = first is not None or batch.magic >= 2
        if not known:  # the findings name the offsets the wrapper's neighbour leaves it, as its damaged range does
            first = previous_last + 1 if previous_last is not None and previous_last < batch.last_offset \
                else batch.last_offset
        elif first is None:
            first = batch.base_offset

        def add(kind: FindingKind, message: str) -> None:
            problems.append(finding(kind, batch.position, message, offset=first))

        if not batch.crc_valid:
            algorithm = "CRC-32C" if batch.magic >= 2 else "CRC32"
            add(FindingKind.CRC_MISMATCH, f"{algorithm} stored {batch.crc} but computed {batch.computed_crc()}")
        if batch.magic >= 2 and (batch.record_count or 0) > batch.last_offset_delta + 1:
            add(FindingKind.RECORD_COUNT, f"{batch.record_count} records cannot fit {batch.last_offset_delta + 1} "
                                          "offsets")
        if batch.last_offset - base > _INT32_MAX:
            add(FindingKind.RELATIVE_OFFSET_OVERFLOW, f"offset {batch.last_offset} is more than 2^31-1 past the "
                                                      f"segment base {base}")
        if known and first < base:
            add(FindingKind.OFFSET_BEFORE_BASE, f"batch base offset {first} is below the segment base "
                                                f"{base}")
        if previous_last is not None and known:
            if first <= previous_last:
                add(FindingKind.OFFSETS_NOT_INCREASING, f"batch starts at {first} after offset "
                                                        f"{previous_last}")
            elif first > previous_last + 1:
                add(FindingKind.OFFSET_GAP, f"{span(previous_last + 1, first - 1)} are absent "
                                            "(legal after compaction)")
        return problems


def verify_log(path: str, deep: bool = False, progress: Callable[[int], None] | None = None,
               parallel: bool = False) -> dict:
    buf = open_buffer(path)
    # KRaft snapshots (<end offset>-<epoch>.checkpoint, bootstrap.checkpoint) number their batches from 0
    base = 0 if path.endswith(KRAFT_SNAPSHOT) else offset_from_file_name(path)
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
    if recovery.bytes_lost and recovery.stop_reason is RecoveryStop.INVALID_BATCH:
        problems.append(finding(FindingKind.RECOVERY_TRUNCATION, recovery.valid_bytes,
                                f"Kafka's recovery stops here: {recovery.stop_message}"))
    salvage, lost = None, None
    if recovery.bytes_lost and not splits:  # a clean segment never pays for reading past damage
        lost = salvage_after(buf, path, recovery.valid_bytes,
                             base if recovery.next_offset is None else recovery.next_offset, problems)
        salvage = {"batches": lost.salvageable_batches, "records": lost.salvageable,
                   "first_offset": lost.salvageable_first, "last_offset": lost.salvageable_last}
        _name_trailing_batches(problems, lost)
    torn = [r for r in lost.ranges if r.reason is DamageReason.TRUNCATED and r.end_byte == len(buf)] if lost else []
    return {
        "batches": checks.batches,
        "records": checks.records,
        "first_offset": first_base,
        "last_offset": checks.previous_last,
        "problems": problems,
        "recovery": {
            "valid_bytes": recovery.valid_bytes,
            "bytes_lost": recovery.bytes_lost,
            "records_lost": 0 if lost is None else lost.records,
            "records_salvageable": 0 if lost is None else lost.salvageable,
            "records_gone": 0 if lost is None else lost.gone,
            "torn_batch_records": (torn[0].offsets_lost or 0) if torn else 0,
            "stop_reason": recovery.stop_reason,
            "stop_message": recovery.stop_message,
            "salvage": salvage,
        },
    }


def _name_trailing_batches(problems: list[Finding], lost) -> None:
    """A tail that does not frame from the last whole batch may still hold whole batches further on (bytes
    cut out of the middle): say so in the trailing-bytes finding, with reading past the damage's count."""
    if not lost.salvageable_batches:
        return
    for number, problem in enumerate(problems):
        if problem.kind is FindingKind.TRAILING_BYTES:
            problems[number] = replace(problem, message=(
                f"{problem.message} from there; reading past the damage finds {lost.salvageable_batches} whole "
                f"batch(es) in them ({lost.salvageable} records, {span(lost.salvageable_first, lost.salvageable_last)})"))


def salvage_after(buf, path: str, position: int, next_offset: int, problems: list[Finding]):
    """What lies past the byte where recovery cuts (``engine.salvage.LostPastCut``): what recovery drops,
    what reading past the damage keeps of it; each damaged range becomes a finding."""
    # imported here: the search loads numpy and the RocketMQ layouts, which a clean segment never needs
    from segtool.engine.salvage import lost_past_cut

    lost = lost_past_cut(buf, path, position, next_offset)
    for piece in lost.ranges:
        problems.append(finding(FindingKind.DAMAGED_RANGE, piece.first_byte,
                                damaged_range_text(piece.as_dict()), offset=piece.first_offset))
    return lost


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
    offsets_index = kafka_index.OffsetIndex(sibling(path, INDEX))
    log = open_buffer(sibling(path, LOG))
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
    log = sibling(path, LOG)
    offset_index = sibling(path, INDEX)
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
    from segtool.kafka import state as kafka_state

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
    from segtool.kafka import state as kafka_state

    try:
        entries = kafka_state.read_leader_epoch_checkpoint(path)
    except kafka_state.CorruptCheckpoint as exc:
        return {"problems": [finding(FindingKind.CHECKPOINT_FORMAT, exc.offset, exc.message)]}
    try:  # the segments the broker loads, an interrupted swap completed
        segments = PartitionView(os.path.dirname(path) or ".").segments
    except SegtoolError:  # no segment to hold against the checkpoint: each file's own entry says why
        segments = []
    known = {e.epoch for e in entries}
    newest = max(known, default=None)
    starts = [e.start_offset for e in entries]
    first_offset_of_epoch: dict[int, int] = {}
    contradicted: dict[int, tuple[int, int]] = {}  # entry -> (offset, epoch) of the first batch against it
    for segment in segments:
        try:
            for batch in BatchScan(open_buffer(segment.log_path)):
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


def verify_offset_checkpoint(path: str) -> dict:
    """A log dir's offset checkpoint (recovery point, replication, log start, cleaner) parses as Kafka reads it."""
    from segtool.kafka import state as kafka_state

    return _parses(kafka_state.read_checkpoint, kafka_state.CorruptCheckpoint, path)


def verify_partition_metadata(path: str) -> dict:
    from segtool.kafka import state as kafka_state

    return _parses(kafka_state.read_partition_metadata, kafka_state.CorruptCheckpoint, path)


def verify_log_dir_file(parse) -> Callable[[str], dict]:
    """The check of a log dir's ``meta.properties`` or ``quorum-state``: does it parse as the broker reads it
    (``kafka.log_dir``, the reader inspect uses)?"""
    def check(path: str) -> dict:
        return _parses(lambda path: parse(bytes(open_buffer(path)), path), CorruptData, path)
    return check


def _parses(read, corrupt: type[SegtoolError], path: str) -> dict:
    try:
        read(path)
    except corrupt as exc:
        return {"problems": [finding(FindingKind.FORMAT, exc.offset, exc.message)]}
    return {"problems": []}
