"""What a RocketMQ 4.9 broker does to a store's ConsumeQueues and IndexFiles when it starts,
computed without writing.

``DefaultMessageStore.load`` then ``start`` (RocketMQ 4.9.8, store/.../DefaultMessageStore.java):

1. ``load``: the last exit was normal when there is no ``abort`` file (``isTempFileExist``);
   ``MappedFileQueue.doLoad`` refuses a CommitLog or ConsumeQueue file whose length is not
   the configured mapped file size, and the broker does not start.
2. ``IndexService.load(lastExitOK)``: after an abnormal exit every IndexFile whose
   endTimestamp is later than the checkpoint's indexMsgTimestamp is destroyed.
3. ``recover``: ``ConsumeQueue.recover`` for every queue (``recover_consume_queue``) gives
   maxPhyOffsetOfConsumeQueue; the CommitLog recovery (``rocketmq_store.commitlog_recovery``,
   the prediction ``verify`` makes) ends at processOffset; ``recoverAbnormally`` dispatches
   every message it reads (``doDispatch``: ``ConsumeQueue.putMessagePositionInfo`` and
   ``IndexService.buildIndex``).  The CommitLog is cut at processOffset
   (``truncateDirtyFiles``) and, when maxPhyOffsetOfConsumeQueue >= processOffset, every
   queue too (``truncate_dirty_logic_files``).
4. ``start``: ``ReputMessageService`` dispatches from the largest ConsumeQueue
   maxPhysicOffset (at least the CommitLog's min offset) to the CommitLog's end.

``commitlog_recovery_plan`` is step 3's CommitLog half, the one answer to where recovery cuts
(verify, inspect, lookup and report take it, and ``engine.salvage.store_recovery_loss`` what it
drops); ``QueuePlan`` follows one queue through these steps; ``dispatch_to_queues`` is
``putMessagePositionInfo`` over the queues.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from segtool.rocketmq.store import DispatchRequest, commitlog_recovery_feed
from segtool.rocketmq import store_files as rmq

UNIT = rmq.CQ_UNIT_SIZE
QUEUED_TRANSACTION_TYPES = (rmq.TRANSACTION_NOT_TYPE, rmq.TRANSACTION_COMMIT_TYPE)  # reach a ConsumeQueue


@dataclass(frozen=True)
class CommitLogRecoveryPlan:
    """Where the CommitLog recovery of a store cuts (``CommitLog.recoverNormally``, or
    ``recoverAbnormally`` after an unclean shutdown): ``cut`` is processOffset, where the CommitLog
    ends after the load; ``truncateDirtyFiles`` deletes ``deleted_files`` (they start after it) and
    ``truncateDirtyLogicFiles`` drops the ConsumeQueue units pointing at or after it.  ``files`` are
    (start, path, size); ``consumequeue`` the store's ConsumeQueue root (None: none).  ``wrong_size``
    names the files ``MappedFileQueue.doLoad`` refuses: with any, the broker does not start and the
    cut is where recovery stops once their lengths are fixed."""

    files: tuple[tuple[int, Path, int], ...]
    abnormal: bool
    start_file: str | None
    stop: dict | None  # DispatchFeed.stopped: kind, phyOffset, file, fileOffset, reason
    cut: int
    deleted_files: tuple[str, ...]
    wrong_size: tuple[str, ...]
    consumequeue: Path | None

    @property
    def cut_file(self) -> tuple[int, Path, int] | None:
        """The file the cut falls in (the last file when it is at the very end), else None."""
        for entry in self.files:
            if entry[0] <= self.cut < entry[0] + max(entry[2], 1):
                return entry
        kept = [entry for entry in self.files if entry[0] <= self.cut]
        return kept[-1] if kept else None


def commitlog_recovery_plan(commitlog_dir: Path | None, checkpoint: dict | None, abnormal: bool,
                            configured_size: int | None, consumequeue: Path | None = None) -> CommitLogRecoveryPlan:
    """The ``CommitLogRecoveryPlan`` of the CommitLog files in ``commitlog_dir``, read as
    ``rocketmq.store.commitlog_recovery`` reads them (checkCRCOnRecover = true)."""
    files = tuple((start, p, p.stat().st_size) for start, p in rmq.list_mapped_files(commitlog_dir)) \
        if commitlog_dir is not None and Path(commitlog_dir).is_dir() else ()
    wrong = tuple(f"{p.name}:{size}" for _, p, size in files if configured_size is not None and size != configured_size)
    if consumequeue is not None and not Path(consumequeue).is_dir():
        consumequeue = None
    if not files:
        return CommitLogRecoveryPlan(files, abnormal, None, None, 0, (), wrong, consumequeue)
    feed = commitlog_recovery_feed(commitlog_dir, checkpoint, abnormal=abnormal)
    cut = feed.stopped["phyOffset"]
    return CommitLogRecoveryPlan(files, abnormal, feed.start_file, feed.stopped, cut,
                                 tuple(p.name for start, p, _ in files if start > cut), wrong, consumequeue)


@dataclass
class QueuePlan:
    """One ConsumeQueue through load, recovery and dispatch.  ``end`` is the queue's write
    position in logical bytes (units = end / 20); ``max_physic_offset`` the end of the last
    unit's message (-1 for none), as ``ConsumeQueue`` keeps them."""

    topic: str
    queue_id: int
    directory: Path | None
    files: list[tuple[int, Path, int]] = field(default_factory=list)  # (start, path, size) on disk
    units_on_disk: int = 0  # units with commitLogOffset >= 0 and size > 0, every file
    end_on_disk: int = 0  # where the queue's valid units end as written (every file read)
    end: int = 0
    max_physic_offset: int = -1
    recover_end: int = 0
    recover_max_physic_offset: int = -1
    recover_dropped_units: int = 0  # non-zero units after the first invalid one
    recover_deleted_files: list[str] = field(default_factory=list)
    truncation_dropped_units: int = 0
    truncation_deleted_files: list[str] = field(default_factory=list)
    phantom_units: int = 0  # a zero first unit truncateDirtyLogicFiles keeps in an empty last file
    added_units: int = 0
    first_added_queue_offset: int | None = None
    first_added_phy_offset: int | None = None
    added_out_of_order: int = 0  # "[BUG]logic queue order maybe wrong": written at the current position
    repeated: int = 0  # dispatched but already there ("Maybe try to build consume queue repeatedly")
    # the queue when load() returns (before ReputMessageService runs)
    added_by_recovery: int = 0
    max_offset_after_load: int = 0
    max_physic_offset_after_load: int = -1
    min_offset_after: int = 0  # correctMinOffset

    def loaded(self) -> None:
        """Note the queue as ``load`` leaves it."""
        self.added_by_recovery = self.added_units
        self.max_offset_after_load, self.max_physic_offset_after_load = self.end // UNIT, self.max_physic_offset

    @property
    def live_files(self) -> list[tuple[int, Path, int]]:
        gone = set(self.recover_deleted_files) | set(self.truncation_deleted_files)
        return [f for f in self.files if f[1].name not in gone]


def _units(path: Path, file_size: int) -> np.ndarray:
    """The first ``file_size / 20`` units of a file, copied (the map is closed)."""
    with rmq.MappedFile(path) as mf:
        return rmq.consumequeue_units(mf.buf)[:file_size // UNIT].copy()


def _valid(units: np.ndarray) -> np.ndarray:
    return (units["commitLogOffset"] >= 0) & (units["size"] > 0)


def recover_consume_queue(topic: str, queue_id: int, directory: Path | None, file_size: int) -> QueuePlan:
    """``ConsumeQueue.recover``: from the third-last file, units while commitLogOffset >= 0 and
    size > 0, on into the next file only after a full one; ``truncateDirtyFiles`` at the end
    deletes the files that start after it."""
    files = [(start, p, p.stat().st_size) for start, p in rmq.list_mapped_files(directory)] if directory else []
    plan = QueuePlan(topic, queue_id, directory, files)
    file_units = [_units(p, file_size) for _, p, _ in files]
    for (start, _, _), units in zip(files, file_units):
        valid = _valid(units)
        plan.units_on_disk += int(valid.sum())
        if valid.any():
            plan.end_on_disk = max(plan.end_on_disk, start + (int(np.flatnonzero(valid)[-1]) + 1) * UNIT)
    if not files:
        return plan
    index = max(len(files) - 3, 0)
    while True:
        start = files[index][0]
        units = file_units[index]
        valid = _valid(units)
        stop = int(np.argmin(valid)) if not valid.all() else len(units)
        if stop:
            plan.max_physic_offset = int(units["commitLogOffset"][stop - 1]) + int(units["size"][stop - 1])
        position = stop * UNIT
        if position == file_size and index + 1 < len(files):
            index += 1
            continue
        break
    plan.end = plan.recover_end = start + position
    plan.recover_max_physic_offset = plan.max_physic_offset
    # what the cut leaves behind: written units after it, files starting after it
    nonzero_after = [int(np.count_nonzero((units["commitLogOffset"] != 0) | (units["size"] != 0)
                                          | (units["tagsCode"] != 0)))
                     for units in (file_units[index][stop:], *file_units[index + 1:])]
    plan.recover_dropped_units = sum(nonzero_after)
    plan.recover_deleted_files = [p.name for s, p, _ in files if s > plan.end]
    return plan


def truncate_dirty_logic_files(plan: QueuePlan, phy_offset: int, file_size: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)``: the last file is deleted while its
    first unit points at or after ``phy_offset``; in the file that stays, units are kept up to
    the first that points there or is invalid.  Its first unit is kept unchecked (RocketMQ
    reads it without the validity test: a zero first unit stays as a phantom unit)."""
    if plan.added_units:
        # recoverAbnormally appended units only to queues ending before the cut (the others skip
        # every message below it as already there): all their units stay
        return
    before = plan.end
    plan.max_physic_offset = phy_offset
    files = plan.live_files
    while files:
        start, path, _ = files[-1]
        units = _units(path, file_size)
        if not len(units):
            break
        first_offset, first_size = int(units["commitLogOffset"][0]), int(units["size"][0])
        if first_offset >= phy_offset:
            plan.truncation_deleted_files.append(path.name)
            files.pop()
            plan.end = start
            continue
        keep = 1
        plan.max_physic_offset = first_offset + first_size
        for offset, size in zip(units["commitLogOffset"][1:].tolist(), units["size"][1:].tolist()):
            if offset < 0 or size <= 0 or offset >= phy_offset:
                break
            keep += 1
            plan.max_physic_offset = offset + size
        plan.end = start + keep * UNIT
        break
    if plan.end > before:
        plan.phantom_units = (plan.end - before) // UNIT
    else:
        plan.truncation_dropped_units = (before - plan.end) // UNIT


def min_offset_in_queue(plan: QueuePlan, commitlog_min_offset: int, file_size: int) -> int:
    """``correctMinOffset``: the first written unit of the first file pointing at or after the
    CommitLog's min offset (0 when none does)."""
    files = plan.live_files
    if not files:
        # a queue the dispatch created: its first file starts with fillPreBlank units (offset 0)
        # up to the first message's queue offset, and those count while the CommitLog starts at 0
        return 0 if commitlog_min_offset == 0 else plan.first_added_queue_offset or 0
    start, path, _ = files[0]
    written = max(min(plan.end - start, file_size), 0) // UNIT
    units = _units(path, file_size)[:written]
    hits = np.flatnonzero(units["commitLogOffset"] >= commitlog_min_offset)
    return (start // UNIT + int(hits[0])) if hits.size else 0


def dispatch_to_queues(requests: Iterable[DispatchRequest], queues: dict[tuple[str, int], QueuePlan],
                       batch_topics: frozenset[str] = frozenset()) -> Iterator[DispatchRequest]:
    """``CommitLogDispatcherBuildConsumeQueue`` + ``ConsumeQueue.putMessagePositionInfo`` over
    ``queues`` (a queue is created for a message of a new one); every request passes through
    (to the index builder).  A 5.x broker puts the messages of ``batch_topics`` into their
    BatchConsumeQueue instead (``ConsumeQueueStore.findOrCreateConsumeQueue`` by the topic's queue type)."""
    for request in requests:
        if (request.sys_flag & rmq.TRANSACTION_ROLLBACK_TYPE) in QUEUED_TRANSACTION_TYPES \
                and request.topic not in batch_topics:
            _put(queues, request)
        yield request


def _put(queues: dict[tuple[str, int], QueuePlan], request: DispatchRequest) -> None:
    key = (request.topic, request.queue_id)
    plan = queues.get(key)
    if plan is None:
        plan = queues[key] = QueuePlan(request.topic, request.queue_id, None)
    offset, size, queue_offset = request.commit_log_offset, request.msg_size, request.queue_offset
    if offset + size <= plan.max_physic_offset:
        plan.repeated += 1
        return
    expected = queue_offset * UNIT
    if not plan.live_files and plan.end == 0 and queue_offset != 0:
        plan.end = expected  # fillPreBlank: a new queue's first file is filled up to the unit
    if queue_offset != 0 and expected < plan.end:
        plan.repeated += 1
        return
    if expected != plan.end:
        plan.added_out_of_order += 1
    if plan.first_added_queue_offset is None:
        plan.first_added_queue_offset, plan.first_added_phy_offset = plan.end // UNIT, offset
    plan.end += UNIT
    plan.max_physic_offset = offset + size
    plan.added_units += 1
