"""What a RocketMQ 5.x broker's start-up does to the stores 4.9 does not have, computed without writing.

``DefaultMessageStore.load`` and ``recover`` in 5.x (apache/rocketmq develop, store/...):

1. ``consumeQueueStore.load`` and ``recover``: every ConsumeQueue as in 4.9 (``rocketmq.startup``) and
   every BatchConsumeQueue with ``BatchConsumeQueue.recover`` (``recover_batch_queue``): from the
   third-last file, units while commitLogOffset >= 0, size > 0, msgBaseOffset >= 0 and batchSize > 0, on
   into the next file only after a full one; ``truncateDirtyFiles`` deletes the files starting after the end.
2. The CommitLog recovery: ``CommitLog.recoverNormally`` / ``recoverAbnormally``, or, with
   ``enableDLegerCommitLog``, DLedger's own ``DLedgerMmapFileStore.recover`` over ``dledger-<id>/data``
   (``recover_dledger``: entries while their headers pass its checks; the raft log is cut at the first
   that does not) before ``DLedgerCommitLog`` reads the messages inside.  After the cut the batch queues
   lose their units pointing at or past it (``BatchConsumeQueue.truncateDirtyLogicFiles``).
3. ``TimerMessageStore.load`` then ``recover`` (``recover_timer_log``): ``recoverAndRevise(lastTimerLogFlushPos
   - the last file's size, checkTimerLog=true)`` walks the timer log from the file holding that offset,
   revising the wheel's slots for every unit it reads, stops at a unit whose size is not 52 or whose magic
   fails ``isMagicOK`` (zeros included), and cuts the timer log there (``truncateDirtyFiles``).
4. ``CompactionStore.load`` (with enableCompaction): ``TopicPartitionLog.sanityCheck`` (verify's
   ``compaction_file_mismatch``).

Each function answers per file: what is on disk, what the recovery keeps, what it cuts or deletes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from segtool.formats.outcomes import WalkEnd
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import v5 as r5


def _file_row(path: Path, start: int, size: int, on_disk: int) -> dict:
    return {"name": path.name, "start_offset": start, "size": size, "on_disk": on_disk, "kept": on_disk,
            "dropped": 0, "deleted": False}


def recover_batch_queue(topic: str, queue_id: int, directory: Path, commitlog_cut: int | None) -> dict:
    """``BatchConsumeQueue.recover`` then, when the CommitLog recovery cut at ``commitlog_cut``,
    ``truncateDirtyLogicFiles``: per file the units on disk, kept and dropped, and whether it is deleted."""
    files = [(start, path, path.stat().st_size) for start, path in rmq.list_mapped_files(directory)]
    rows, accepted = [], []
    for start, path, size in files:
        with rmq.MappedFile(path) as mf:
            units, end = r5.scan_batch_cq(mf.buf, file_from_offset=start)
            whole = size // r5.BATCH_CQ_UNIT_SIZE * r5.BATCH_CQ_UNIT_SIZE
            raw = np.frombuffer(mf.buf, dtype=np.uint8, count=whole).reshape(-1, r5.BATCH_CQ_UNIT_SIZE)
            written = int(raw.any(axis=1).sum())
            del raw
        rows.append(_file_row(path, start, size, written))
        accepted.append((units, end))
    if not files:
        return {"topic": topic, "queue_id": queue_id, "directory": str(directory), "files": [], "end": 0}
    # the file size is the spacing of the names, else the first file's length (mapperFileSizeBatchConsumeQueue)
    file_size = files[1][0] - files[0][0] if len(files) > 1 else files[0][2]
    index = max(len(files) - 3, 0)
    while True:
        units, _ = accepted[index]
        position = len(units) * r5.BATCH_CQ_UNIT_SIZE
        if position == file_size and index + 1 < len(files):
            index += 1
            continue
        break
    end = files[index][0] + position
    for i, (start, _, _) in enumerate(files):
        row, (units, _) = rows[i], accepted[i]
        if start > end:  # truncateDirtyFiles
            row.update(kept=0, dropped=row["on_disk"], deleted=True)
        elif i == index:
            row.update(kept=len(units), dropped=row["on_disk"] - len(units))
        elif i > index:
            row.update(kept=0, dropped=row["on_disk"])
        else:
            row.update(kept=min(row["on_disk"], len(units)))
    if commitlog_cut is not None:
        for row, (units, _) in zip(rows, accepted):
            # truncateDirtyLogicFiles: units pointing at or past the cut go, and a file whose first unit does
            past = sum(1 for unit in units[:row["kept"]] if unit["commitLogOffset"] >= commitlog_cut)
            if past:
                row["kept"] -= past
                row["dropped"] += past
                row["deleted"] = row["deleted"] or row["kept"] == 0
    return {"topic": topic, "queue_id": queue_id, "directory": str(directory), "files": rows, "end": end}


def recover_timer_log(directory: Path, last_flush_pos: int | None) -> dict:
    """``TimerMessageStore.recover``'s ``recoverAndRevise(lastTimerLogFlushPos - lastFileSize, true)``: where
    it begins, the units it reads (each revises its wheel slot), where it stops and what the cut drops."""
    files = [(start, path, path.stat().st_size) for start, path in rmq.list_mapped_files(directory)]
    begin = max((last_flush_pos or 0) - (files[-1][2] if files else 0), 0)
    index = max([i for i, (start, _, _) in enumerate(files) if begin >= start], default=0)
    rows, stop = [], None
    for i, (start, path, size) in enumerate(files):
        with rmq.MappedFile(path) as mf:
            units, end = [], None
            for step in r5.walk_timer_log(mf.buf, file_from_offset=start):
                if isinstance(step, r5.TimerLogEnd):
                    end = step
                    break
                units.append(step)
        row = _file_row(path, start, size, len(units))
        row["read"] = i >= index and stop is None
        if row["read"] and end.kind not in (WalkEnd.BLANK, WalkEnd.END_OF_FILE):
            # a unit of another size or magic (zeros included) stops the check: the log is cut here
            stop = {"file": path.name, "file_offset": end.file_offset, "timer_log_offset": start + end.file_offset,
                    "kind": end.kind}
        elif stop is not None and start > stop["timer_log_offset"]:
            row.update(kept=0, dropped=len(units), deleted=True)
        rows.append(row)
    process_offset = stop["timer_log_offset"] if stop else (files[-1][0] + files[-1][2] if files else 0)
    return {"directory": str(directory), "begin_offset": begin, "begin_file": files[index][1].name if files else None,
            "process_offset": process_offset, "units_revised": sum(r["kept"] for r in rows if r["read"]),
            "stop": stop, "files": rows}


def recover_dledger(directory: Path) -> dict:
    """``DLedgerMmapFileStore.recover`` over ``dledger-<id>/data``: the entries whose headers pass its checks,
    in order across files, and the cut at the first that does not (the later entries and files go)."""
    files = [(start, path, path.stat().st_size) for start, path in rmq.list_mapped_files(directory)]
    rows, cut, previous = [], None, None
    for start, path, size in files:
        entries, walked_previous = 0, previous if cut is None else None
        with rmq.MappedFile(path) as mf:
            for step in r5.walk_dledger_data(mf.buf, file_from_offset=start, previous=walked_previous,
                                             digests=False, decompress=False):
                if isinstance(step, r5.DLedgerEnd):
                    end = step
                    break
                walked_previous = step[0]
                entries += 1
        row = _file_row(path, start, size, entries)
        if cut is not None:
            row.update(kept=0, dropped=entries, deleted=True)
            rows.append(row)
            continue
        previous = walked_previous
        if end.kind is WalkEnd.BAD_ENTRY or end.non_zero_after is not None:
            cut = {"file": path.name, "file_offset": end.file_offset, "pos": start + end.file_offset,
                   "reason": end.reason or f"data at byte {end.non_zero_after} after the entries end"}
        rows.append(row)
    return {"directory": str(directory), "entries": sum(r["kept"] for r in rows),
            "last_index": previous["index"] if previous else None, "cut": cut, "files": rows}
