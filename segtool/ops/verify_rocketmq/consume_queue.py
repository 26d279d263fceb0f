"""ConsumeQueue files: units against the queue's order and against the messages they point at."""

from __future__ import annotations

import os
from pathlib import Path

from segtool.errors import CorruptData
from segtool.findings import Findings, FindingKind
from segtool.rocketmq import store_files as rmq
from segtool.formats.outcomes import WalkEnd
from segtool.ops.verify_rocketmq.store import PROBLEMS_PER_KIND, StoreContext, configured_size
from segtool.rocketmq import names as rocketmq_names


def verify_consumequeue(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    p = Path(os.path.abspath(path))
    topic, queue_name = p.parent.parent.name, p.parent.name
    queue_id = rocketmq_names.queue_id(queue_name)
    start = rocketmq_names.mapped_file_offset(p.name)
    siblings = rmq.list_mapped_files(p.parent)
    configured = configured_size([(s, f.stat().st_size) for s, f in siblings]) or ctx.cq_file_size()
    is_last = bool(siblings) and siblings[-1][1].name == p.name
    log = ctx.commitlog
    rec = ctx.recovery if log is not None else None
    with rmq.MappedFile(path) as mf:
        buf, size = mf.buf, mf.size
        if configured is not None and size != configured:
            problems.add(FindingKind.FILE_SIZE, None,
                         f"file is {size} bytes but the queue's files are {configured} "
                         "(mappedFileSizeConsumeQueue): RocketMQ refuses to load the store")
        if size % rmq.CQ_UNIT_SIZE:
            problems.add(FindingKind.PARTIAL_UNIT, size - size % rmq.CQ_UNIT_SIZE,
                         f"file size {size} is not a multiple of {rmq.CQ_UNIT_SIZE}")
        if start % rmq.CQ_UNIT_SIZE or (configured and start % configured):
            problems.add(FindingKind.FILE_NAME, None, f"start offset {start} is not a multiple of the file size")
        units = rmq.consumequeue_units(buf)
        rows = units.tolist()
        del units
        base = start // rmq.CQ_UNIT_SIZE
        checked = fillers = 0
        previous = None
        beyond_cut: list[int] = []
        end_kind = WalkEnd.END_OF_FILE
        for i, (offset, usize, code) in enumerate(rows):
            upos = i * rmq.CQ_UNIT_SIZE
            if offset == 0 and usize == 0 and code == 0:
                after = rmq.first_nonzero(buf, upos, size)
                end_kind = WalkEnd.ZERO_TAIL
                if after is not None:
                    problems.add(FindingKind.DATA_AFTER_ZEROS, after,
                                 f"unit {base + i} is all zeros but data follows at byte "
                                 f"{after}; ConsumeQueue recovery stops at {upos}")
                elif not is_last:
                    problems.add(FindingKind.ZERO_UNITS, upos,
                                 f"{(size - upos) // rmq.CQ_UNIT_SIZE} zero units at the end of "
                                 "a file that is not the queue's last: units are missing")
                elif upos:
                    problems.add(FindingKind.ZERO_TAIL, upos, f"{(size - upos) // rmq.CQ_UNIT_SIZE} unwritten units "
                                                              "(preallocated)", info=True)
                break
            if offset < 0 or usize <= 0:
                problems.add(FindingKind.INVALID_UNIT, upos,
                             f"unit {base + i}: commitLogOffset {offset}, size {usize}, "
                             f"tagsCode {code}; ConsumeQueue recovery stops here")
                end_kind = WalkEnd.CORRUPT
                break
            if usize == rmq.CQ_BLANK_UNIT_SIZE and offset == 0 and code == 0:
                fillers += 1
                continue
            if previous is not None and offset <= previous:
                problems.add(FindingKind.UNITS_OUT_OF_ORDER, upos,
                             f"unit {base + i} points at phyOffset {offset}, not after "
                             f"the previous unit's {previous}")
            previous = offset
            if log is None:
                continue
            checked += 1
            _check_unit(log, rec, topic, queue_id, base + i, upos, offset, usize, code, problems, beyond_cut)
    if log is None:
        problems.add(FindingKind.NO_COMMITLOG, None, "no CommitLog in this store: units not checked against messages")
    if beyond_cut:
        problems.add(FindingKind.BEYOND_RECOVERY_POINT, beyond_cut[0],
                     f"{len(beyond_cut)} unit(s) point at or after phyOffset {rec['maxPhyOffset']}, where RocketMQ's "
                     "recovery cuts the CommitLog: recovery removes them from the queue")
    return {"topic": topic, "queue_id": queue_id, "units": len(rows), "units_checked": checked,
            "filler_units": fillers, "end": end_kind, "problems": problems.result()}


def _check_unit(log: rmq.CommitLog, rec: dict | None, topic, queue_id, queue_offset, upos, offset, usize, code,
                problems: Findings, beyond_cut: list) -> None:
    where = f"unit {queue_offset} (phyOffset {offset}, size {usize})"
    try:
        msg = log.message_at(offset, digests=False, decompress=False)
    except CorruptData as exc:
        problems.add(FindingKind.UNIT_POINTS_AT_BAD_DATA, upos, f"{where}: no valid message there ({exc.message})")
        return
    if msg is None:
        last_start, last_path = log.files[-1] if log.files else (0, None)
        log_end = last_start + (last_path.stat().st_size if last_path else 0)
        if offset >= log_end:
            problems.add(FindingKind.UNIT_BEYOND_COMMITLOG, upos, f"{where}: past the end of the CommitLog ({log_end})")
        else:
            problems.add(FindingKind.UNIT_POINTS_NOWHERE, upos, f"{where}: no message there (zeros or a BLANK record)")
        return
    if rec is not None and offset >= rec["maxPhyOffset"]:
        beyond_cut.append(upos)
    wrong = []
    if msg["totalSize"] != usize:
        wrong.append(f"size {usize} but the message is {msg['totalSize']} bytes")
    if msg["topic"] != topic:
        wrong.append(f"message topic is {msg['topic']!r}")
    if queue_id is not None and msg["queueId"] != queue_id:
        wrong.append(f"message queueId is {msg['queueId']}")
    if msg["queueOffset"] != queue_offset:
        wrong.append(f"message queueOffset is {msg['queueOffset']}")
    if wrong:
        problems.add(FindingKind.UNIT_MISMATCH, upos, f"{where}: " + "; ".join(wrong))
        return
    if rmq.is_cq_ext_address(code):
        return
    try:
        expected, _, _ = rmq.dispatch_info(msg["topic"], msg["properties"] or None, msg["storeTimestamp"])
    except ValueError:
        return
    if expected != code:
        delay = msg["topic"] == rmq.SCHEDULE_TOPIC
        problems.add(FindingKind.TAGS_CODE_MISMATCH, upos,
                     f"{where}: tagsCode {code} but the message's "
                     + ("delivery time (default delay levels) is" if delay else "TAGS hash is") + f" {expected}",
                     info=delay)
