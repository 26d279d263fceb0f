"""ConsumeQueue files: units against the queue's order and against the messages they point at."""

from __future__ import annotations

import os
from pathlib import Path

from segtool.errors import CorruptData
from segtool.formats import rocketmq as rmq
from segtool.ops.verify_rocketmq.store import Problems, StoreContext, configured_size


def verify_consumequeue(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Problems()
    p = Path(os.path.abspath(path))
    topic, queue_name = p.parent.parent.name, p.parent.name
    queue_id = int(queue_name) if queue_name.lstrip("-").isdigit() else None
    start = int(p.name) if p.name.isdigit() else 0
    siblings = rmq.list_mapped_files(p.parent)
    configured = configured_size([(s, f.stat().st_size) for s, f in siblings]) or ctx.cq_file_size()
    is_last = bool(siblings) and siblings[-1][1].name == p.name
    log = ctx.commitlog
    rec = ctx.recovery if log is not None else None
    with rmq.MappedFile(path) as mf:
        buf, size = mf.buf, mf.size
        if configured is not None and size != configured:
            problems.add("file_size", None, f"file is {size} bytes but the queue's files are {configured} "
                                            "(mappedFileSizeConsumeQueue): RocketMQ refuses to load the store")
        if size % rmq.CQ_UNIT_SIZE:
            problems.add("partial_unit", size - size % rmq.CQ_UNIT_SIZE,
                         f"file size {size} is not a multiple of {rmq.CQ_UNIT_SIZE}")
        if start % rmq.CQ_UNIT_SIZE or (configured and start % configured):
            problems.add("file_name", None, f"start offset {start} is not a multiple of the file size")
        units = rmq.consumequeue_units(buf)
        rows = units.tolist()
        del units
        base = start // rmq.CQ_UNIT_SIZE
        checked = fillers = 0
        previous = None
        beyond_cut: list[int] = []
        end_kind = "end-of-file"
        for i, (offset, usize, code) in enumerate(rows):
            upos = i * rmq.CQ_UNIT_SIZE
            if offset == 0 and usize == 0 and code == 0:
                after = rmq.first_nonzero(buf, upos, size)
                end_kind = "zero-tail"
                if after is not None:
                    problems.add("data_after_zeros", after, f"unit {base + i} is all zeros but data follows at byte "
                                                            f"{after}; ConsumeQueue recovery stops at {upos}")
                elif not is_last:
                    problems.add("zero_units", upos, f"{(size - upos) // rmq.CQ_UNIT_SIZE} zero units at the end of "
                                                     "a file that is not the queue's last: units are missing")
                elif upos:
                    problems.add("zero_tail", upos, f"{(size - upos) // rmq.CQ_UNIT_SIZE} unwritten units "
                                                    "(preallocated)", "info")
                break
            if offset < 0 or usize <= 0:
                problems.add("invalid_unit", upos, f"unit {base + i}: commitLogOffset {offset}, size {usize}, "
                                                   f"tagsCode {code}; ConsumeQueue recovery stops here")
                end_kind = "corrupt"
                break
            if usize == rmq.CQ_BLANK_UNIT_SIZE and offset == 0 and code == 0:
                fillers += 1
                continue
            if previous is not None and offset <= previous:
                problems.add("units_out_of_order", upos, f"unit {base + i} points at phyOffset {offset}, not after "
                                                         f"the previous unit's {previous}")
            previous = offset
            if log is None:
                continue
            checked += 1
            _check_unit(log, rec, topic, queue_id, base + i, upos, offset, usize, code, problems, beyond_cut)
    if log is None:
        problems.add("no_commitlog", None, "no CommitLog in this store: units not checked against messages", "info")
    if beyond_cut:
        problems.add("beyond_recovery_point", beyond_cut[0],
                     f"{len(beyond_cut)} unit(s) point at or after phyOffset {rec['maxPhyOffset']}, where RocketMQ's "
                     "recovery cuts the CommitLog: recovery removes them from the queue", "info")
    return {"topic": topic, "queue_id": queue_id, "units": len(rows), "units_checked": checked,
            "filler_units": fillers, "end": end_kind, "problems": problems.result()}


def _check_unit(log: rmq.CommitLog, rec: dict | None, topic, queue_id, queue_offset, upos, offset, usize, code,
                problems: Problems, beyond_cut: list) -> None:
    where = f"unit {queue_offset} (phyOffset {offset}, size {usize})"
    try:
        msg = log.message_at(offset, digests=False, decompress=False)
    except CorruptData as exc:
        problems.add("unit_points_at_bad_data", upos, f"{where}: no valid message there ({exc.message})")
        return
    if msg is None:
        last_start, last_path = log.files[-1] if log.files else (0, None)
        log_end = last_start + (last_path.stat().st_size if last_path else 0)
        if offset >= log_end:
            problems.add("unit_beyond_commitlog", upos, f"{where}: past the end of the CommitLog ({log_end})")
        else:
            problems.add("unit_points_nowhere", upos, f"{where}: no message there (zeros or a BLANK record)")
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
        problems.add("unit_mismatch", upos, f"{where}: " + "; ".join(wrong))
        return
    if rmq.is_cq_ext_address(code):
        return
    try:
        expected, _, _ = rmq.dispatch_info(msg["topic"], msg["properties"] or None, msg["storeTimestamp"])
    except ValueError:
        return
    if expected != code:
        delay = msg["topic"] == rmq.SCHEDULE_TOPIC
        problems.add("tags_code_mismatch", upos,
                     f"{where}: tagsCode {code} but the message's "
                     + ("delivery time (default delay levels) is" if delay else "TAGS hash is") + f" {expected}",
                     "info" if delay else "error")
