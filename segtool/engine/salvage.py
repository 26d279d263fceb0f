"""Reading past damage: every valid Kafka batch and RocketMQ message of a file, and the damaged ranges between.

The broker's own readers stop at the first framing error (Kafka's recovery then
truncates the segment there; RocketMQ's stops the CommitLog).  These readers go
on: from the first damaged byte they search forward, at every byte position, for
the next batch or message that passes every check including its checksum
(``engine.carving``), report the bytes in between as one ``DamagedRange``, and
resume the one walker of each log from there.  A clean file never reaches the
search: it costs nothing.

A batch or message whose framing is intact but whose checksum fails is yielded
(readers that show everything show it, flagged) and its bytes open a damaged
range; whoever keeps only survivors keeps nothing from a damaged range.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from segtool.errors import CorruptData
from segtool.rocketmq import store_files as rmq
from segtool.engine.carving import KAFKA, ROCKETMQ, next_find
from segtool.kafka.log import (BATCH_HEADER_V2_FAST, BATCH_V2_OVERHEAD, DEFAULT_CAP, MAGIC_AT, BatchScan,
                               RecordBatch, batch_at)
from segtool.kafka.records import base_offset_of, batch_records
from segtool.formats.outcomes import DamageReason, WalkEnd
from segtool.formats.ranges import span


@dataclass(frozen=True)
class DamagedRange:
    """Bytes ``[first_byte, end_byte)`` of ``file`` that hold no valid batch or message.

    ``first_offset``/``last_offset`` are the offsets (Kafka) or queue offsets
    (RocketMQ, with ``topic`` and ``queue_id``) that fall inside, inferred from
    the valid neighbours on both sides: None where a side has no neighbour to
    infer from.  ``offsets_inferred`` is then the count of offsets lost (0:
    the range held none).
    """

    file: str
    first_byte: int
    end_byte: int
    reason: DamageReason
    message: str
    first_offset: int | None = None
    last_offset: int | None = None
    topic: str | None = None  # RocketMQ: the queue the queue offsets belong to
    queue_id: int | None = None
    physical_offset: int | None = None  # RocketMQ: the CommitLog offset of first_byte

    @property
    def last_byte(self) -> int:
        return self.end_byte - 1

    @property
    def length(self) -> int:
        return self.end_byte - self.first_byte

    @property
    def offsets_lost(self) -> int | None:
        if self.first_offset is None or self.last_offset is None:
            return None
        return max(0, self.last_offset - self.first_offset + 1)

    def as_dict(self) -> dict:
        item = {"file": self.file, "first_byte": self.first_byte, "last_byte": self.last_byte,
                "length": self.length, "reason": self.reason, "message": self.message,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "offsets_lost": self.offsets_lost}
        if self.physical_offset is not None:
            item.update(topic=self.topic, queue_id=self.queue_id, physical_offset=self.physical_offset)
        return item


def _all_zero(buf, start: int, end: int) -> bool:
    return rmq.first_nonzero(buf, start, end) is None


# --------------------------------------------------------------------------
# Kafka
# --------------------------------------------------------------------------


def kafka_pieces(buf, path: str, base_offset: int | None = None, next_base_offset: int | None = None,
                 start: int = 0, end: int | None = None) -> Iterator[RecordBatch | DamagedRange]:
    """Every batch of a segment in file order, and a ``DamagedRange`` for every stretch between that holds none.

    Batches whose CRC fails are yielded too (``crc_valid`` is False), each
    followed by the range it opens.  ``base_offset`` (the segment's name) and
    ``next_base_offset`` (the next segment's) bound the offsets a range at either
    end of the segment can have lost.
    """
    end = len(buf) if end is None else min(end, len(buf))
    previous_last = None if base_offset is None else base_offset - 1
    pos = start
    while pos < end:
        scan = BatchScan(buf, pos, end, path)
        damage = failed = None
        try:
            for batch in scan:
                yield batch
                if not batch.crc_valid:
                    failed = batch
                    damage = batch.position, DamageReason.CRC_MISMATCH, (
                        f"CRC stored {batch.crc} but computed {batch.computed_crc()} for the batch of "
                        f"{span(_damaged_first_offset(batch, previous_last, path), batch.last_offset)}")
                    break
                previous_last = batch.last_offset
        except CorruptData as exc:
            damage = scan.valid_bytes, DamageReason.CORRUPT_FRAMING, exc.message
        if damage is None:
            if scan.valid_bytes >= end:
                return
            damage = (scan.valid_bytes, DamageReason.TRUNCATED,
                      f"{end - scan.valid_bytes} bytes after the last whole batch")
        first, reason, message = damage
        found = next_find(buf, first + 1, end, KAFKA)
        stop = end if found is None else found.position
        # the next valid batch's first offset: for a compressed legacy wrapper that decompresses its
        # inner set, once per damaged range (its own offset field is its last offset)
        following = None if found is None else _following_base_offset(batch_at(buf, found.position, path), path)
        if reason is not DamageReason.CRC_MISMATCH and _all_zero(buf, first, stop):
            reason, message = DamageReason.ZERO_FILLED, f"{stop - first} zero bytes"
        last_lost = (following if following is not None else next_base_offset)
        if last_lost is None and reason is DamageReason.TRUNCATED:
            last_lost = _torn_batch_end(buf, first, end)
        if last_lost is None and failed is not None and failed.position + failed.size >= stop:
            last_lost = failed.last_offset + 1  # the range is the failed batch alone: its header bounds it
        yield DamagedRange(path, first, stop, reason, message,
                           None if previous_last is None else previous_last + 1,
                           None if last_lost is None else last_lost - 1)
        if found is None:
            return
        pos = found.position


def _damaged_first_offset(batch: RecordBatch, previous_last: int | None, path: str) -> int:
    """The first offset a batch whose checksum fails held: Kafka's ``baseOffset()`` when its records
    still decode; else, for a compressed legacy wrapper (whose own offset is its last), the offset after
    the valid batch before it, which is what the damaged range it opens names too."""
    first = base_offset_of(batch, path=path)
    if first is not None and first <= batch.last_offset:
        return first
    if previous_last is not None and previous_last < batch.last_offset:
        return previous_last + 1
    return batch.last_offset


def _following_base_offset(batch: RecordBatch, path: str) -> int:
    """``base_offset_of`` a valid batch after damage; a wrapper whose inner set does not decode gives its own
    offset (the last it held), the nearest bound known."""
    first = base_offset_of(batch, path=path)
    return batch.base_offset if first is None else first


def _torn_batch_end(buf, position: int, end: int) -> int | None:
    """The offset after a batch cut short by the end of the file, as its whole v2 header declares it."""
    if end - position < BATCH_V2_OVERHEAD or buf[position + MAGIC_AT] != 2:
        return None
    header = BATCH_HEADER_V2_FAST.as_dict(buf, position)
    return header["base_offset"] + header["last_offset_delta"] + 1


@dataclass(frozen=True)
class LostPastCut:
    """What lies on disk in a segment from the byte where recovery cuts it (or in a whole segment recovery
    deletes): ``records`` in every batch framed there (checksum or not), the records a torn last batch
    declares and the offsets of the damaged stretches between (inferred from their neighbours);
    ``salvageable`` of them in batches whose checksum holds (what ``salvage`` writes back)."""

    records: int
    salvageable: int
    first_offset: int | None
    last_offset: int | None
    ranges: tuple[DamagedRange, ...]
    salvageable_batches: int
    salvageable_first: int | None  # the offsets of the batches salvage keeps
    salvageable_last: int | None

    @property
    def gone(self) -> int:
        return self.records - self.salvageable


def lost_past_cut(buf, path: str, position: int, next_offset: int, next_base_offset: int | None = None,
                  cap: int = DEFAULT_CAP) -> LostPastCut:
    """``LostPastCut`` of ``buf`` from ``position``; ``next_offset`` is the first offset recovery drops."""
    records = salvageable = batches = 0
    first = last = kept_first = kept_last = None
    ranges = []
    failed = 0  # the records a batch whose checksum fails declares: its offsets are not to be trusted
    for piece in kafka_pieces(buf, path, base_offset=next_offset, next_base_offset=next_base_offset,
                              start=position):
        if isinstance(piece, DamagedRange):
            ranges.append(piece)
            # the offsets the valid neighbours leave to the range; else what its failed batch declares
            count = piece.offsets_lost if piece.offsets_lost is not None else failed
            failed = 0
            if not count:
                continue  # it held no offset we can name
            records += count
            low = piece.first_offset
            high = piece.last_offset if piece.last_offset is not None else low + count - 1
        elif not piece.crc_valid:
            failed = batch_record_count(piece, path, cap)  # the range it opens comes next
            continue
        else:
            decoded = _decoded_records(piece, path, cap)
            count = max(piece.record_count or 0, 0) if decoded is None else len(decoded)
            records += count
            salvageable += count
            batches += 1
            # a wrapper's first inner offset (a wrapper whose inner set does not decode: its own offset)
            low = base_offset_of(piece, decoded) if decoded else piece.base_offset
            kept_first = low if kept_first is None else kept_first
            kept_last = piece.last_offset
            high = piece.last_offset
        first = low if first is None else min(first, low)
        last = high if last is None else max(last, high)
    return LostPastCut(records, salvageable, first, last, tuple(ranges), batches, kept_first, kept_last)


def batch_record_count(batch: RecordBatch, path: str, cap: int = DEFAULT_CAP) -> int:
    """Records a batch holds: a v2 header's count, a legacy wrapper's inner messages (none when they do not
    decode)."""
    decoded = _decoded_records(batch, path, cap)
    return max(batch.record_count or 0, 0) if decoded is None else len(decoded)


def _decoded_records(batch: RecordBatch, path: str, cap: int):
    """A legacy message's records (``[]`` when they do not decode); None for a v2 batch, whose header counts them."""
    if batch.magic >= 2:
        return None
    try:
        return batch_records(batch, path, cap)
    except CorruptData:
        return []


@dataclass(frozen=True)
class RecoveryCut:
    """One segment Kafka's load truncates: at ``byte``, dropping offsets from ``offset`` on.  ``at_load``:
    by ``LogLoader.loadSegmentFiles`` (its offset index missing or its transaction index corrupt; the
    segments after it stay), else by ``recoverLog`` (every later segment, ``deleted_segments``, goes too).
    The figures are of this cut: its segment past the byte and the segments it deletes."""

    segment: str
    byte: int
    offset: int
    at_load: bool
    because: str | None  # why the segment is recovered (kafka.startup's reasons)
    bytes: int
    records: int
    salvageable: int
    first_offset: int | None
    last_offset: int | None
    deleted_segments: tuple[str, ...]
    per_segment: tuple[tuple[str, LostPastCut], ...]  # the cut segment past the byte, then each deleted one

    @property
    def gone(self) -> int:
        return self.records - self.salvageable

    def action(self) -> str:
        """What Kafka does here, in words: ``LogLoader.loadSegmentFiles recovers ... and truncates it at byte ...``."""
        name = os.path.basename(self.segment)
        if self.at_load:
            return (f"LogLoader.loadSegmentFiles recovers {name} ({self.because}) and truncates it at byte "
                    f"{self.byte} (offset {self.offset})")
        deleted = f" and deletes {len(self.deleted_segments)} later segment(s)" if self.deleted_segments else ""
        return f"LogLoader.recoverLog truncates {name} at byte {self.byte} (offset {self.offset}){deleted}"

    def dropped(self) -> str:
        """What the cut drops, in the figures every command gives for it."""
        if not self.records:
            return f"no record lies past the cut ({self.bytes} bytes dropped)"
        return (f"{self.records} record(s) at {span(self.first_offset, self.last_offset)} are dropped: "
                f"{self.salvageable} in batches whose checksum holds (salvage writes them back), {self.gone} gone")


@dataclass(frozen=True)
class RecoveryLoss:
    """What Kafka's load drops from a partition (``cuts``, in offset order; the log then ends at
    ``log_end``), and how much of it reading past the damage gets back: the load drops ``records``
    (offsets ``first_offset``..``last_offset``), salvage recovers ``salvageable``, ``gone`` are lost for
    good.  ``segment``, ``byte`` and ``offset`` are the first cut's."""

    cuts: tuple[RecoveryCut, ...]
    log_end: int
    bytes: int
    records: int
    salvageable: int
    first_offset: int | None
    last_offset: int | None
    deleted_segments: tuple[str, ...]

    @property
    def segment(self) -> str:
        return self.cuts[0].segment

    @property
    def byte(self) -> int:
        return self.cuts[0].byte

    @property
    def offset(self) -> int:
        return self.cuts[0].offset

    @property
    def gone(self) -> int:
        return self.records - self.salvageable

    def cut_dict(self) -> dict:
        return {"segment": self.segment, "byte": self.byte, "offset": self.offset}

    def beyond_dict(self) -> dict:
        return {"records": self.records, "salvageable": self.salvageable, "gone": self.gone,
                "first_offset": self.first_offset, "last_offset": self.last_offset, "bytes": self.bytes,
                "deleted_segments": list(self.deleted_segments)}


def recovery_loss(plan) -> RecoveryLoss | None:
    """The ``RecoveryLoss`` of a ``kafka.startup.PartitionPlan``; None when its load truncates nothing."""
    if not plan.cuts:
        return None
    from segtool.source import open_buffer

    # by identity: a partition of 10,000 damaged segments compared steps field by field 50 million times
    next_base = {id(step): later.base_offset for step, later in zip(plan.segments, plan.segments[1:])}

    def following_base(step) -> int | None:
        return next_base.get(id(step))

    cuts = []
    for step in plan.cuts:
        deleted = [] if step is not plan.truncated_segment else [s for s in plan.segments if s.deleted_by_recovery]
        parts = [lost_past_cut(open_buffer(step.log_path), step.log_path, step.recovery.valid_bytes,
                               step.next_offset_after_recovery, following_base(step))]
        parts += [lost_past_cut(open_buffer(s.log_path), s.log_path, 0, s.base_offset, following_base(s))
                  for s in deleted]
        paths = [step.log_path] + [s.log_path for s in deleted]
        firsts = [p.first_offset for p in parts if p.first_offset is not None]
        lasts = [p.last_offset for p in parts if p.last_offset is not None]
        cuts.append(RecoveryCut(step.log_path, step.recovery.valid_bytes, step.next_offset_after_recovery,
                                step is not plan.truncated_segment, step.recovered_because,
                                step.recovery.bytes_lost + sum(s.size for s in deleted),
                                sum(p.records for p in parts), sum(p.salvageable for p in parts),
                                min(firsts, default=None), max(lasts, default=None),
                                tuple(s.log_path for s in deleted), tuple(zip(paths, parts))))
    firsts = [c.first_offset for c in cuts if c.first_offset is not None]
    lasts = [c.last_offset for c in cuts if c.last_offset is not None]
    return RecoveryLoss(tuple(cuts), plan.log_end_offset, sum(c.bytes for c in cuts), sum(c.records for c in cuts),
                        sum(c.salvageable for c in cuts), min(firsts, default=None), max(lasts, default=None),
                        tuple(path for c in cuts for path in c.deleted_segments))


# --------------------------------------------------------------------------
# RocketMQ
# --------------------------------------------------------------------------


def body_crc_valid(message: dict) -> bool:
    """CommitLog.checkMessageAndReturnSize with checkCRC: an empty body has nothing to check."""
    return message["bodyLength"] <= 0 or message["bodyCRC"] == message["bodyCRCComputed"]


QUEUED_TRANSACTION_TYPES = (rmq.TRANSACTION_NOT_TYPE, rmq.TRANSACTION_COMMIT_TYPE)  # reach a ConsumeQueue


@dataclass(frozen=True)
class FileMessagesLost:
    """One CommitLog file's share of a ``StoreRecoveryLoss``."""

    messages: int
    salvageable: int

    @property
    def gone(self) -> int:
        return self.messages - self.salvageable


@dataclass(frozen=True)
class StoreRecoveryLoss:
    """What RocketMQ's CommitLog recovery drops from a store (``CommitLog.recoverNormally`` /
    ``recoverAbnormally``: the CommitLog is cut at ``phy_offset``, ``truncateDirtyFiles`` deletes the
    later files, ``truncateDirtyLogicFiles`` the ConsumeQueue units pointing past the cut), and how
    much of it reading past the damage gets back.  Recovery drops ``messages``: every message framed
    past the cut, and every queue offset known to have been there (a ConsumeQueue unit pointing past
    the cut, a damaged stretch's offsets inferred from its neighbours, a message whose body CRC
    fails) that no readable message holds; salvage recovers ``salvageable`` (body CRC holds),
    ``gone`` are lost for good, listed as ``queue_offsets_gone`` (topic, queue id, first, last)."""

    file: str  # the CommitLog file the cut falls in
    byte: int  # the cut's offset in that file
    phy_offset: int  # where the CommitLog ends after recovery
    bytes: int  # bytes holding data past the cut
    messages: int
    salvageable: int
    queue_offsets_gone: tuple[tuple[str, int, int, int], ...]
    deleted_files: tuple[str, ...]
    by_file: Mapping[str, FileMessagesLost]  # CommitLog file name -> its share

    @property
    def gone(self) -> int:
        return self.messages - self.salvageable

    def cut_dict(self) -> dict:
        return {"file": self.file, "byte": self.byte, "phy_offset": self.phy_offset}

    def beyond_dict(self) -> dict:
        return {"messages": self.messages, "salvageable": self.salvageable, "gone": self.gone,
                "bytes": self.bytes, "deleted_files": list(self.deleted_files),
                "queue_offsets_gone": [{"topic": topic, "queue_id": queue_id, "first_offset": first,
                                        "last_offset": last} for topic, queue_id, first, last in self.queue_offsets_gone]}


def store_recovery_loss(plan) -> StoreRecoveryLoss | None:
    """The ``StoreRecoveryLoss`` of a ``rocketmq.startup.CommitLogRecoveryPlan``; None when nothing lies
    past its cut."""
    cut = plan.cut
    starts = [start for start, _, _ in plan.files]
    names = [path.name for _, path, _ in plan.files]

    def file_of(phy_offset: int) -> str:
        return names[max(bisect.bisect_right(starts, phy_offset) - 1, 0)]

    held: set[tuple[str, int, int]] = set()  # queue offsets a message whose body CRC holds keeps
    known: dict[tuple[str, int, int], str] = {}  # queue offsets known to lie past the cut -> their file
    next_offset: dict[tuple[str, int], int] = {}  # per queue, the offset after the last message read
    salvageable: dict[str, int] = {}
    data_bytes = 0
    for start, path, size in plan.files:
        if start + size <= cut or not size:
            continue
        name = path.name
        salvageable.setdefault(name, 0)
        with rmq.MappedFile(path) as mapped:
            if _holds_nothing_from(mapped.buf, max(cut - start, 0)):
                continue  # the walk would find nothing past the cut: no need to read up to it
            # the cut's file from its start: the messages before the cut are the neighbours that name what a
            # damaged stretch at the cut held, and where each queue stands
            for piece in commitlog_pieces(mapped.buf, file_from_offset=start, file=name, path=str(path),
                                          digests=False, decompress=False):
                position = piece.first_byte if isinstance(piece, DamagedRange) else (
                    piece.data_end if isinstance(piece, rmq.CommitLogEnd) else piece["fileOffset"])
                past_cut = start + position >= cut or isinstance(piece, rmq.CommitLogEnd)
                if isinstance(piece, dict) and piece["transactionType"] in QUEUED_TRANSACTION_TYPES \
                        and piece["dispatch"]["success"]:
                    queue = (piece["topic"], piece["queueId"])
                    expected = next_offset.get(queue)
                    if past_cut and expected is not None:  # offsets skipped between this queue's messages
                        for queue_offset in range(expected, min(piece["queueOffset"], expected + 1_000_000)):
                            known.setdefault((*queue, queue_offset), name)
                    next_offset[queue] = piece["queueOffset"] + rmq.queue_offsets_taken(piece["properties"])
                if not past_cut:
                    continue
                if isinstance(piece, DamagedRange):
                    # offsets inferred from the neighbours: no more than the range's bytes can hold
                    if piece.topic is not None and piece.offsets_lost and (
                            piece.offsets_lost <= max(piece.length // rmq.MIN_MESSAGE_SIZE, 1)):
                        for queue_offset in range(piece.first_offset, piece.last_offset + 1):
                            known.setdefault((piece.topic, piece.queue_id, queue_offset), name)
                elif isinstance(piece, rmq.CommitLogEnd):
                    data_bytes += max(piece.data_end - max(cut - start, 0), 0)
                elif body_crc_valid(piece):
                    salvageable[name] += 1
                    if piece["transactionType"] in QUEUED_TRANSACTION_TYPES and piece["dispatch"]["success"]:
                        first = piece["queueOffset"]
                        held.update((piece["topic"], piece["queueId"], first + i)
                                    for i in range(rmq.queue_offsets_taken(piece["properties"])))
    for key, phy_offset in _queue_units_past(plan.consumequeue, cut):
        known.setdefault(key, file_of(phy_offset))
    gone: dict[str, int] = {}
    for key, name in known.items():
        if key not in held:
            gone[name] = gone.get(name, 0) + 1
    total_gone, total_salvageable = sum(gone.values()), sum(salvageable.values())
    if not data_bytes and not total_gone and not total_salvageable:
        return None
    cut_file = plan.cut_file
    file, byte = (str(cut_file[1]), cut - cut_file[0]) if cut_file is not None else (str(plan.files[0][1]), 0)
    by_file = {name: FileMessagesLost(salvageable.get(name, 0) + gone.get(name, 0), salvageable.get(name, 0))
               for name in sorted(set(salvageable) | set(gone))}
    return StoreRecoveryLoss(file, byte, cut, data_bytes, total_salvageable + total_gone, total_salvageable,
                             _offset_ranges(k for k in known if k not in held), plan.deleted_files, by_file)


def _holds_nothing_from(buf, position: int) -> bool:
    """Does a CommitLog file hold no data from ``position`` on: the BLANK record there (its file's end), or
    zeros to the end?"""
    blank = rmq.BLANK_RECORD_FAST
    if position + blank.size <= len(buf) and blank.unpack_from(buf, position)[1] == rmq.BLANK_MAGIC_CODE:
        return True
    return rmq.first_nonzero(buf, position, len(buf)) is None


def _queue_units_past(consumequeue: Path | None, cut: int) -> Iterator[tuple[tuple[str, int, int], int]]:
    """((topic, queue id, queue offset), physical offset) of every written ConsumeQueue unit pointing at or
    after ``cut`` (``truncateDirtyLogicFiles`` drops them); a queue's files are read from its last back
    to the first that starts before the cut (units run in CommitLog order)."""
    if consumequeue is None:
        return
    for topic, queue_id, directory in rmq.list_consume_queues(consumequeue):
        for start, path in reversed(rmq.list_mapped_files(directory)):
            with rmq.MappedFile(path) as mapped:
                units = rmq.consumequeue_units(mapped.buf)
                offsets, sizes = units["commitLogOffset"].copy(), units["size"].copy()
                del units
            written = (offsets >= 0) & (sizes > 0) & (sizes != rmq.CQ_BLANK_UNIT_SIZE)
            for number in np.flatnonzero(written & (offsets >= cut)).tolist():
                yield (topic, queue_id, start // rmq.CQ_UNIT_SIZE + number), int(offsets[number])
            if (written & (offsets < cut)).any():
                break


def _offset_ranges(keys) -> tuple[tuple[str, int, int, int], ...]:
    """Queue offsets as (topic, queue id, first, last) runs."""
    runs: list[list] = []
    for topic, queue_id, offset in sorted(keys):
        if runs and runs[-1][:2] == [topic, queue_id] and runs[-1][3] + 1 == offset:
            runs[-1][3] = offset
        else:
            runs.append([topic, queue_id, offset, offset])
    return tuple(tuple(run) for run in runs)


def commitlog_pieces(buf, *, file_from_offset: int = 0, file: str | None = None, path: str | None = None,
                     start: int = 0, previous: dict | None = None,
                     **decode_options) -> Iterator[dict | DamagedRange | rmq.CommitLogEnd]:
    """Every message of one CommitLog file from byte ``start``, a ``DamagedRange`` for every stretch
    between that holds none, and the ``CommitLogEnd`` where the file's data ends (a BLANK record,
    zeros to the end, the end).  ``previous``: the last message before ``start``, whose queue
    offset bounds what a range right after it lost.

    Messages whose body CRC fails are yielded too, each followed by the range it opens.
    """
    label = path or file or "commitlog"
    pos = start
    while True:
        damage = damaged = None
        for step in rmq.walk_commitlog(buf, file_from_offset=file_from_offset, file=file, path=path, start=pos,
                                       **decode_options):
            if isinstance(step, dict):
                yield step
                if not body_crc_valid(step):
                    damaged = step
                    damage = step["fileOffset"], DamageReason.CRC_MISMATCH, (
                        f"body CRC stored {step['bodyCRC']} but computed {step['bodyCRCComputed']} for the message "
                        f"of {step['topic']} queue {step['queueId']} offset {step['queueOffset']}")
                    break
                previous = step
                continue
            if step.damaged:
                reason = DamageReason.TRUNCATED if step.kind in (WalkEnd.TRUNCATED, WalkEnd.TORN) \
                    else DamageReason.CORRUPT_FRAMING
                damage = step.file_offset, reason, step.error.message if step.error else step.kind
            elif step.kind is WalkEnd.ZERO_TAIL and step.non_zero_after is not None:
                damage = step.file_offset, DamageReason.ZERO_FILLED, "zero bytes, then data"
            elif step.kind is WalkEnd.SHORT_TAIL and step.non_zero_after is not None:
                damage = (step.file_offset, DamageReason.TRUNCATED,
                          f"{len(buf) - step.file_offset} stray bytes at the end")
            else:
                yield step
                return
        first, reason, message = damage
        found = next_find(buf, first + 1, len(buf), ROCKETMQ)
        stop = len(buf) if found is None else found.position
        following = None
        if found is not None:
            following = rmq.decode_message(buf, found.position, file_from_offset=file_from_offset, digests=False,
                                           decompress=False)
        if reason is not DamageReason.CRC_MISMATCH and _all_zero(buf, first, stop):
            reason, message = DamageReason.ZERO_FILLED, f"{stop - first} zero bytes"
        yield _commitlog_range(label, first, stop, reason, message, file_from_offset, previous, damaged, following)
        if found is None:
            last = rmq.last_nonzero(buf, first, len(buf))
            data_end = first if last is None else last + 1
            yield rmq.CommitLogEnd(WalkEnd.END_OF_FILE, len(buf), file_from_offset + len(buf), 0, 0, data_end)
            return
        pos = found.position


def _commitlog_range(label, first, stop, reason, message, file_from_offset, previous, damaged,
                     following) -> DamagedRange:
    """The range, with the queue offsets it lost: the damaged message's own, or those between neighbours of one queue."""
    topic = queue_id = first_offset = last_offset = None
    if (reason is DamageReason.CRC_MISMATCH and damaged is not None
            and damaged["fileOffset"] + damaged["totalSize"] == stop):
        # the range is that one message: its header (outside the body the CRC covers) says where it belonged
        topic, queue_id = damaged["topic"], damaged["queueId"]
        first_offset = last_offset = damaged["queueOffset"]
    elif previous is not None and following is not None and (
            (previous["topic"], previous["queueId"]) == (following["topic"], following["queueId"])):
        topic, queue_id = previous["topic"], previous["queueId"]
        first_offset, last_offset = previous["queueOffset"] + 1, following["queueOffset"] - 1
    return DamagedRange(label, first, stop, reason, message, first_offset, last_offset, topic, queue_id,
                        file_from_offset + first)
