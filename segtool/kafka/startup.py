"""What a Kafka broker does with a log dir when it starts: the startup plan, computed without writing.

Kafka's order (LogManager.loadLogs, then per partition LogLoader.load):

1. ``.kafka_cleanshutdown`` in the log dir means a clean shutdown; the broker
   deletes it and loads every log with ``hadCleanShutdown``.  The recovery
   point and log start offset of each partition come from
   ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``
   (0 when a partition has no entry or the file cannot be read).
   ``__cluster_metadata`` is not loaded here but by ``KafkaMetadataLog``, with
   recovery point 0 and ``lastShutdownClean = false``: it is recovered whole at
   every start.
2. ``loadSegmentFiles``: a segment whose ``.index`` is missing, or whose
   ``.txnindex`` fails its sanity check, is recovered at once
   (``LogSegment.sanityCheck``; offset and time indexes are not checked at load),
   clean shutdown or not; a damaged one is truncated there and the segments after
   it stay (``recoverLog`` recovers it again, truncating nothing more).
3. ``recoverLog`` after an unclean shutdown: every segment from the one holding
   the recovery point on (``LogSegments.values(recoveryPoint, MAX)``) is
   recovered in order; the first that loses bytes is truncated there and every
   later one deleted.  A ``-delete`` directory skips this step and its log ends
   at offset 0 (``LogLoader.load`` returns next offset 0 for it).
4. ``deleteSegmentsIfLogStartGreaterThanLogEnd``: a log ending before its
   checkpointed log start offset loses every segment.
5. The leader epoch cache drops entries at or past the log end and moves the
   start (``truncateFromEnd`` / ``truncateFromStart``); producer snapshots no
   segment needs (``removeStraySnapshots``) and those past the log end or at or
   below its start (``truncateAndReload``) are deleted.
6. The metadata log only (``KafkaMetadataLog.apply``): ``recoverSnapshots`` deletes
   partial and deleted-marked KRaft snapshots and those ending below the log
   start, then ``truncateToLatestSnapshot`` takes the latest snapshot (ordered by
   epoch, then offset: ``OffsetAndEpoch.compareTo``); when its epoch is above the
   log's latest leader epoch, or equal with an end offset past the log end, the log
   is truncated fully to start at its end offset and every older snapshot is
   deleted (``forgetSnapshotsBefore``).

Segment recovery is ``kafka.recovery.recover_segment`` (LogSegment.recover), the
code ``verify`` predicts truncation with; segments are those ``PartitionView``
loads (swaps completed, ``.deleted``/``.cleaned`` left out).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from segtool.errors import SegtoolError
from segtool.kafka import names as kafka_names
from segtool.kafka.partition import PartitionView, Segment
from segtool.kafka.recovery import RecoveryStop, SegmentRecovery, recover_segment
from segtool.kafka.index import CorruptIndex, TransactionIndex
from segtool.kafka.log import BatchScan
from segtool.kafka.names import LOG, file_name

if TYPE_CHECKING:  # kafka.state loads construct: a lookup reads it only when the partition has state files
    from segtool.kafka.state import EpochEntry


# why a segment is recovered
UNCLEAN_SHUTDOWN = "unclean_shutdown"
MISSING_OFFSET_INDEX = "missing_offset_index"
CORRUPT_TXN_INDEX = "corrupt_txn_index"
SPLIT_FROM_OVERFLOWED_SEGMENT = "split_from_overflowed_segment"

_INT32_MAX = 2**31 - 1


@dataclass
class SegmentStep:
    """One segment at start-up: left as it is, recovered (and why), or deleted by recovery."""

    log_path: str
    base_offset: int
    size: int
    recovered_because: str | None = None
    reason_detail: str | None = None
    recovery: SegmentRecovery | None = None
    deleted_by_recovery: bool = False
    split_from: str | None = None  # the overflowed segment this one is split from
    split_first_byte: int | None = None  # where its bytes start in that segment

    @property
    def next_offset_after_recovery(self) -> int:
        recovery = self.recovery
        return self.base_offset if recovery is None or recovery.next_offset is None else recovery.next_offset


@dataclass
class PartitionPlan:
    directory: str
    clean_shutdown: bool  # as this log is loaded (always False for the metadata log)
    recovery_point_checkpoint: int
    log_start_offset_checkpoint: int
    recovery_skipped_for_deletion: bool  # a -delete directory: LogLoader skips recoverLog
    segments: list[SegmentStep]
    notes: list[str]
    log_end_offset: int  # after loading
    new_recovery_point: int
    new_log_start_offset: int
    deletes_every_segment: bool  # the log ends before its checkpointed start
    truncated_segment: SegmentStep | None = None
    truncated_at_load: list[SegmentStep] = field(default_factory=list)  # by loadSegmentFiles, later ones kept
    leader_epochs_dropped: list[EpochEntry] = field(default_factory=list)
    leader_epoch_start_moved_to: EpochEntry | None = None
    producer_snapshots_deleted: list[int] = field(default_factory=list)
    kraft_snapshots: KraftSnapshotPlan | None = None  # the metadata log's

    @property
    def recovered(self) -> list[SegmentStep]:
        return [step for step in self.segments if step.recovery is not None]

    @property
    def cuts(self) -> list[SegmentStep]:
        """Every segment the load truncates and keeps, in offset order: those ``loadSegmentFiles`` recovers
        and the one ``recoverLog`` truncates."""
        cut = self.truncated_at_load + ([self.truncated_segment] if self.truncated_segment is not None else [])
        return sorted(cut, key=lambda step: step.base_offset)


@dataclass
class KraftSnapshotPlan:
    """What ``KafkaMetadataLog.apply`` does with the metadata log's snapshots (``recoverSnapshots``, then
    ``truncateToLatestSnapshot``); snapshots are (end offset, epoch, file name)."""

    log_latest_epoch: int  # UnifiedLog.latestEpoch after the load, 0 without one
    log_end_offset: int  # before the truncation
    latest: tuple[int, int, str] | None  # the latest snapshot kept by recoverSnapshots
    truncates_to_latest: bool
    deleted: list[tuple[int, int, str, str]] = field(default_factory=list)  # with why
    failure: str | None = None  # recoverSnapshots' IllegalStateException, when the load fails


def _recover(step: SegmentStep, segment: Segment, because: str, detail: str | None) -> None:
    step.recovered_because, step.reason_detail = because, detail
    step.recovery = recover_segment(segment.log, segment.log_path, segment.base_offset)
    if isinstance(segment, Segment):  # a split piece is a view of its segment's mapping
        segment.release()


def _load_time_recovery(segment: Segment) -> tuple[str, str] | None:
    """Why ``LogLoader.loadSegmentFiles`` recovers this segment, if it does (LogSegment.sanityCheck)."""
    if not os.path.exists(segment.index_path):
        return MISSING_OFFSET_INDEX, f"{os.path.basename(segment.index_path)} does not exist"
    if os.path.exists(segment.txnindex_path):
        try:
            TransactionIndex(segment.txnindex_path, segment.base_offset).sanity_check()
        except CorruptIndex as exc:
            return CORRUPT_TXN_INDEX, exc.message
    return None


@dataclass
class SplitPiece:
    """A segment ``LocalLog.splitOverflowedSegment`` makes from an overflowed one: a run of its
    batches under a new base offset, written with fresh indexes."""

    log: memoryview
    log_path: str
    base_offset: int
    split_from: str
    first_byte: int
    last_offset: int

    @property
    def size(self) -> int:
        return len(self.log)

    def next_offset(self) -> int:
        return self.last_offset + 1


def _split_overflowed(segment) -> tuple[list[SplitPiece], str | None]:
    """LocalLog.splitOverflowedSegment: from the first batch at a position, a new segment based at
    that batch's base offset takes every following batch whose last offset its 32-bit relative
    offsets can hold (LogSegment.appendFromFile). Also a note when the pieces do not hold the
    whole file: Kafka then fails the load ("Inconsistent segment sizes after split")."""
    runs: list[list[int]] = []  # [base offset, first byte, end byte, last offset]
    for batch in BatchScan(segment.log, path=segment.log_path):
        run = runs[-1] if runs else None
        if run is not None and 0 <= batch.last_offset - run[0] <= _INT32_MAX:
            run[2], run[3] = batch.end, batch.last_offset
        else:
            runs.append([batch.base_offset, batch.position, batch.end, batch.last_offset])
    directory = os.path.dirname(segment.log_path)
    view = memoryview(segment.log)
    pieces = [SplitPiece(view[start:end], os.path.join(directory, file_name(base, LOG)), base,
                         segment.log_path, start, last) for base, start, end, last in runs]
    covered = runs[-1][2] if runs else 0
    failure = None
    if covered != segment.size:
        failure = (f"{os.path.basename(segment.log_path)}: its batches frame only {covered} of {segment.size} bytes, "
                   f"so the split fails (IllegalStateException: Inconsistent segment sizes after split) "
                   f"and the broker cannot load this log")
    return pieces, failure


def _overflowed(steps: list[SegmentStep]) -> int | None:
    for i, step in enumerate(steps):
        if step.recovery is not None and step.recovery.stop_reason is RecoveryStop.OFFSET_OUT_OF_RANGE:
            return i
    return None


def _floor_index(base_offsets: list[int], offset: int) -> int:
    """LogSegments.values(offset, MAX)'s first segment: the floor of ``offset``, else the first."""
    floor = 0
    for i, base in enumerate(base_offsets):
        if base <= offset:
            floor = i
    return floor


def plan_partition(directory: str, segments: list[Segment], notes: list[str], clean_shutdown: bool,
                   recovery_point: int, log_start_offset: int, epochs: list[EpochEntry],
                   snapshot_offsets: list[int], for_deletion: bool) -> PartitionPlan:
    """LogLoader.load of one partition directory (its segments as ``PartitionView`` loads them), as a
    plan (see the module's docstring). A segment whose offsets overflow its base is split and the
    load starts again (LogLoader.retryOnOffsetOverflow)."""
    notes = list(notes)
    while True:
        steps, truncated = _load_and_recover(segments, clean_shutdown, recovery_point, for_deletion)
        overflowed = _overflowed(steps)
        if overflowed is None:
            break
        pieces, failure = _split_overflowed(segments[overflowed])
        notes.append(f"{os.path.basename(segments[overflowed].log_path)} has offsets beyond its base's 32-bit "
                     f"relative range: the broker splits it into segments at base offsets "
                     f"{', '.join(str(piece.base_offset) for piece in pieces)} and loads again")
        if failure is not None:
            notes.append(failure)
            break
        segments = segments[:overflowed] + pieces + segments[overflowed + 1:]
    plan = _finish_plan(directory, segments, steps, truncated, notes, clean_shutdown, recovery_point,
                        log_start_offset, epochs, snapshot_offsets, for_deletion)
    name = os.path.basename(os.path.normpath(directory))
    if kafka_names.topic_partition(name)[0] == kafka_names.METADATA_TOPIC and not for_deletion:
        _truncate_to_latest_snapshot(plan, epochs)
    return plan


def _load_and_recover(segments: list, clean_shutdown: bool, recovery_point: int,
                      for_deletion: bool) -> tuple[list[SegmentStep], SegmentStep | None]:
    """loadSegmentFiles' recoveries, then recoverLog's after an unclean shutdown."""
    steps = [SegmentStep(s.log_path, s.base_offset, s.size) for s in segments]
    for step, segment in zip(steps, segments):
        if isinstance(segment, SplitPiece):
            step.split_from, step.split_first_byte = segment.split_from, segment.first_byte
            continue  # written with its indexes by the split
        reason = _load_time_recovery(segment)
        if reason is not None:
            _recover(step, segment, *reason)
            if step.recovery.stop_reason is RecoveryStop.OFFSET_OUT_OF_RANGE:
                return steps, None
    truncated = None
    if not clean_shutdown and not for_deletion:
        for i in range(_floor_index([s.base_offset for s in segments], recovery_point), len(steps)):
            step = steps[i]
            if step.recovery is None:
                _recover(step, segments[i], UNCLEAN_SHUTDOWN, f"at or after the recovery point {recovery_point}")
            elif step.recovered_because != UNCLEAN_SHUTDOWN:
                continue  # already truncated at load: recovering it again truncates nothing
            if step.recovery.stop_reason is RecoveryStop.OFFSET_OUT_OF_RANGE:
                return steps, None
            if step.recovery.bytes_lost:
                truncated = step
                for later in steps[i + 1:]:
                    later.deleted_by_recovery = True
                break
    return steps, truncated


def _finish_plan(directory: str, segments: list, steps: list[SegmentStep], truncated: SegmentStep | None,
                 notes: list[str], clean_shutdown: bool, recovery_point: int, log_start_offset: int,
                 epochs: list[EpochEntry], snapshot_offsets: list[int], for_deletion: bool) -> PartitionPlan:
    kept = [step for step in steps if not step.deleted_by_recovery]
    if for_deletion:  # LogLoader.load skips recoverLog and answers next offset 0
        log_end = 0
    elif kept:
        last = kept[-1]
        log_end = last.next_offset_after_recovery if last.recovery is not None \
            else segments[len(kept) - 1].next_offset()
    else:  # no segment at all: the broker creates an empty one at the log start offset
        log_end = log_start_offset
    deletes_every_segment = bool(kept) and not for_deletion and log_end < log_start_offset
    if deletes_every_segment:
        log_end = log_start_offset  # a new empty segment at the log start offset
    if for_deletion:
        new_recovery_point = 0
    elif clean_shutdown and kept and not deletes_every_segment:
        new_recovery_point = log_end
    else:
        new_recovery_point = min(recovery_point, log_end)
    first_base = kept[0].base_offset if kept and not deletes_every_segment else log_start_offset
    plan = PartitionPlan(directory, clean_shutdown, recovery_point, log_start_offset, for_deletion, steps,
                         list(notes), log_end, new_recovery_point, max(log_start_offset, first_base),
                         deletes_every_segment, truncated)
    plan.truncated_at_load = [step for step in kept if step.recovery is not None and step.recovery.bytes_lost
                              and step.recovered_because != UNCLEAN_SHUTDOWN]
    _plan_leader_epochs(plan, epochs)
    remaining_bases = [] if deletes_every_segment else [step.base_offset for step in kept]
    plan.producer_snapshots_deleted = _deleted_snapshots(snapshot_offsets, remaining_bases,
                                                         plan.new_log_start_offset, log_end)
    return plan


def _plan_leader_epochs(plan: PartitionPlan, epochs: list[EpochEntry]) -> None:
    """LeaderEpochFileCache.truncateFromEnd(log end), then truncateFromStart(checkpointed log start)."""
    plan.leader_epochs_dropped = [e for e in epochs if e.start_offset >= plan.log_end_offset]
    below_start = [e for e in epochs if e.start_offset < plan.log_end_offset
                   and e.start_offset <= plan.log_start_offset_checkpoint]
    if below_start:
        from segtool.kafka.state import EpochEntry

        plan.leader_epochs_dropped += below_start[:-1]
        if below_start[-1].start_offset != plan.log_start_offset_checkpoint:
            plan.leader_epoch_start_moved_to = EpochEntry(below_start[-1].epoch, plan.log_start_offset_checkpoint)


def _truncate_to_latest_snapshot(plan: PartitionPlan, epochs: list[EpochEntry]) -> None:
    """KafkaMetadataLog.recoverSnapshots, then truncateToLatestSnapshot, on the loaded metadata log."""
    retained, deleted = [], []
    for name in sorted(os.listdir(plan.directory)):
        snapshot = kafka_names.kraft_snapshot_id(name)
        leftover = kafka_names.kraft_snapshot_leftover(name)
        if leftover is not None:
            deleted.append((leftover[0], leftover[1], name, "partial" if leftover[2] == "part" else "marked_deleted"))
        elif snapshot is not None and snapshot[0] < plan.new_log_start_offset:
            deleted.append((*snapshot, name, "below_log_start"))
        elif snapshot is not None:
            retained.append((*snapshot, name))
    dropped = {(e.epoch, e.start_offset) for e in plan.leader_epochs_dropped}
    remaining = [e for e in epochs if (e.epoch, e.start_offset) not in dropped]
    latest_epoch = remaining[-1].epoch if remaining else 0
    latest = max(retained, key=lambda s: (s[1], s[0]), default=None)  # OffsetAndEpoch: epoch first
    kraft = KraftSnapshotPlan(latest_epoch, plan.log_end_offset, latest, False, deleted)
    plan.kraft_snapshots = kraft
    if plan.new_log_start_offset > 0 and not any(s[0] >= plan.new_log_start_offset for s in retained):
        kraft.failure = (f"no snapshot ends at or after the log start offset {plan.new_log_start_offset}: "
                         "recoverSnapshots throws IllegalStateException (Inconsistent snapshot state) and the "
                         "broker does not start")
        return
    if latest is None or not (latest[1] > latest_epoch or (latest[1] == latest_epoch
                                                            and latest[0] > plan.log_end_offset)):
        return
    kraft.truncates_to_latest = True
    kraft.deleted += [(*s, "before_latest") for s in retained if (s[1], s[0]) < (latest[1], latest[0])]
    kraft.deleted.sort(key=lambda s: s[2])
    # UnifiedLog.truncateFullyAndStartAt: every segment, leader epoch and producer snapshot goes
    for step in plan.segments:
        step.deleted_by_recovery = True
    plan.truncated_segment, plan.truncated_at_load = None, []
    plan.leader_epochs_dropped = list(epochs)
    plan.leader_epoch_start_moved_to = None
    plan.producer_snapshots_deleted = sorted(set(plan.producer_snapshots_deleted)
                                             | set(producer_snapshot_offsets(plan.directory)))
    plan.log_end_offset = plan.new_recovery_point = plan.new_log_start_offset = latest[0]


def producer_snapshot_offsets(directory: str) -> list[int]:
    return [kafka_names.offset_from_file_name(name) for name in os.listdir(directory)
            if name.endswith(kafka_names.PRODUCER_SNAPSHOT) and kafka_names.has_offset_name(name)]


def _deleted_snapshots(offsets: list[int], segment_bases: list[int], log_start: int, log_end: int) -> list[int]:
    """ProducerStateManager.removeStraySnapshots, then truncateAndReload's range (log start, log end]."""
    bases = set(segment_bases)
    deleted: list[int] = []
    latest_stray = None
    for offset in sorted(offsets):
        if offset not in bases:
            if latest_stray is not None:
                deleted.append(latest_stray)
            latest_stray = offset
    if latest_stray is not None and segment_bases and latest_stray < max(segment_bases):
        deleted.append(latest_stray)
    kept = [offset for offset in offsets if offset not in deleted]
    deleted += [offset for offset in kept if offset > log_end or offset <= log_start]
    return sorted(deleted)


# the log dir's files LogManager.loadLogs reads before it loads a partition
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


def _checkpointed(log_dir: str, name: str, topic: str, partition: int) -> int:
    """The partition's entry in an offset checkpoint of its log dir; 0 when absent or unreadable, as
    LogManager reads it."""
    path = os.path.join(log_dir, name)
    if not os.path.isfile(path):
        return 0
    from segtool.kafka.state import read_offset_checkpoint

    try:
        return read_offset_checkpoint(path).get((topic, partition)) or 0
    except SegtoolError:
        return 0


def load_partition(view: PartitionView, state_files: bool = True) -> PartitionPlan:
    """``startup_plan`` of ``view``, and ``view`` made to answer as the loaded log does
    (``PartitionView.loaded``)."""
    plan = startup_plan(view, state_files)
    apply_plan(view, plan)
    return plan


def startup_plan(view: PartitionView, state_files: bool = True) -> PartitionPlan:
    """LogLoader.load of ``view``'s directory as its log dir would start it (the clean-shutdown marker and
    the checkpoints of the directory above it; none there is an unclean start from offset 0).  The one
    plan every command's figures come from: lookup's answers, inspect's plan, verify's, salvage's and
    report's losses.  Without ``state_files`` the leader epochs and producer snapshots are not read
    (the log end and what recovery keeps do not depend on them; a lookup then does not load their
    parsers)."""
    directory = os.path.normpath(os.path.abspath(view.directory))
    log_dir = os.path.dirname(directory)
    topic, partition = kafka_names.topic_partition(os.path.basename(directory))
    state = kafka_names.renamed_directory_state(os.path.basename(directory))
    is_metadata = topic == kafka_names.METADATA_TOPIC
    clean = not is_metadata and os.path.isfile(os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER))
    recovery_point = log_start = 0
    if partition is not None and not is_metadata:
        recovery_point = _checkpointed(log_dir, RECOVERY_POINT_CHECKPOINT, topic, partition)
        log_start = _checkpointed(log_dir, LOG_START_OFFSET_CHECKPOINT, topic, partition)
    epochs = []
    epoch_file = os.path.join(view.directory, "leader-epoch-checkpoint")
    # the metadata log's latest epoch decides whether it is truncated to its latest snapshot
    if (state_files or is_metadata) and os.path.isfile(epoch_file):
        from segtool.kafka.state import read_leader_epoch_checkpoint

        try:
            epochs = read_leader_epoch_checkpoint(epoch_file)
        except SegtoolError:  # inspect reports it; the log end does not depend on it
            epochs = []
    snapshots = producer_snapshot_offsets(view.directory) if state_files else []
    return plan_partition(view.directory, view.segments, view.notes, clean, recovery_point, log_start, epochs,
                          snapshots, state == "delete")


def apply_plan(view: PartitionView, plan: PartitionPlan) -> None:
    """``view`` answering as the log ``plan`` loads (a split overflowed segment is left as it is on disk)."""
    if any(step.split_from is not None for step in plan.segments):
        return
    view.loaded(plan.new_log_start_offset, plan.log_end_offset, {step.log_path: step.recovery for step in plan.segments
                                      if step.recovery is not None and not step.deleted_by_recovery},
                {step.log_path for step in plan.segments if step.deleted_by_recovery})
