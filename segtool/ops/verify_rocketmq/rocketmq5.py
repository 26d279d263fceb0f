"""The RocketMQ 5.x store files (rocketmq/v5.py), each checked as the 5.x broker's load and
recovery read it, and against the files it points into: BatchConsumeQueue units against the CommitLog,
timer wheel slots against the timer log, DLedger index entries against the data entries, compaction
queues against their compaction log.  A compaction log holds CommitLog messages and is checked by
``verify_commitlog`` (alone, as recovery would read it), plus its queue order.  Each check takes the
store context every store file's check takes (``verify_in_store``); these read their own directories
instead."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from segtool.errors import SegtoolError
from segtool.findings import Findings, FindingKind, Severity
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import v5 as r5
from segtool.formats.outcomes import WalkEnd
from segtool.ops.verify_rocketmq.commitlog import verify_commitlog
from segtool.ops.verify_rocketmq.store import PROBLEMS_PER_KIND, StoreContext
from segtool.source import open_buffer
from segtool.rocketmq import names as rocketmq_names


def _parts(path: str) -> list[str]:
    return os.path.normpath(os.path.abspath(path)).split(os.sep)


def _start(path: str) -> int:
    name = os.path.basename(path)
    return rocketmq_names.mapped_file_offset(name)


def _mapped_end(directory: Path) -> int | None:
    """One past the last byte of a MappedFileQueue directory (last file's start + its size)."""
    if not directory.is_dir():
        return None
    files = rmq.list_mapped_files(directory)
    return files[-1][0] + files[-1][1].stat().st_size if files else None


# -- BatchConsumeQueue and the compaction store's SparseConsumeQueue -----------------------------------


def verify_batch_queue(path: str, deep: bool, ctx: StoreContext) -> dict:
    parts = _parts(path)
    sparse = r5.COMPACTION_CQ_DIR in parts
    nested = parts[-2] in r5.COMPACTION_SUB_FOLDERS
    queue_at = -4 if nested else -3
    topic, queue_name = parts[queue_at], parts[queue_at + 1]
    queue_id = rocketmq_names.queue_id(queue_name)
    if sparse:  # the units point into compaction/compactionLog/<topic>/<queueId>[/<sub folder>]
        base = parts[:parts.index(r5.COMPACTION_CQ_DIR)]
        log_dir = Path(os.sep.join(base + [r5.COMPACTION_LOG_DIR, *parts[queue_at:-1]]))
    else:
        log_dir = Path(os.sep.join(parts[:queue_at - 1] + ["commitlog"]))
    problems = Findings(PROBLEMS_PER_KIND)
    directory = Path(path).parent
    siblings = rmq.list_mapped_files(directory)
    is_last = not siblings or siblings[-1][1].name == Path(path).name
    buf = open_buffer(path)
    units, end = r5.scan_batch_cq(buf, file_from_offset=_start(path), sparse=sparse)
    if end.kind is WalkEnd.INVALID and end.unit is not None:
        problems.add(FindingKind.BATCH_UNIT_INVALID, end.file_offset,
                     f"unit at logic offset {_start(path) + end.file_offset}: commitLogOffset "
                     f"{end.unit['commitLogOffset']}, size {end.unit['size']}, msgBaseOffset {end.unit['msgBaseOffset']}, "
                     f"batchSize {end.unit['batchSize']}; recovery stops here and truncates the queue")
    elif end.kind in (WalkEnd.INVALID, WalkEnd.ZERO_TAIL) and end.non_zero_after is not None:
        problems.add(FindingKind.BATCH_UNIT_INVALID, end.non_zero_after,
                     f"data at byte {end.non_zero_after} after the units end at {end.file_offset}: recovery "
                     "never reads it")
    elif end.kind is WalkEnd.ZERO_TAIL and not is_last and not sparse:
        problems.add(FindingKind.BATCH_UNIT_INVALID, end.file_offset,
                     f"zero units from byte {end.file_offset} in a file that is not the queue's last: recovery "
                     "stops here and the later files are truncated")
    elif end.kind is WalkEnd.ZERO_TAIL and end.file_offset:
        problems.add(FindingKind.ZERO_TAIL, end.file_offset, "unwritten units (preallocated)", info=True)
    if sparse and log_dir.is_dir():
        _check_compaction_partner(path, log_dir, "log", problems)
        _check_units_in_log_file(path, log_dir, units, problems)
    log = rmq.CommitLog(log_dir) if log_dir.is_dir() else None
    checked = 0
    previous = None
    try:
        for unit in units:
            where = f"unit at logic offset {unit['logicOffset']} (msgBaseOffset {unit['msgBaseOffset']})"
            if previous is not None and (unit["msgBaseOffset"] < previous["msgBaseOffset"] + previous["batchSize"]
                                         or unit["commitLogOffset"] <= previous["commitLogOffset"]):
                problems.add(FindingKind.BATCH_UNITS_OUT_OF_ORDER, unit["fileOffset"],
                             f"{where}: not after the previous unit (msgBaseOffset {previous['msgBaseOffset']}, batch "
                             f"{previous['batchSize']}, commitLogOffset {previous['commitLogOffset']})")
            previous = unit
            if log is not None:
                checked += 1
                _check_batch_unit(log, unit, where, topic, queue_id, sparse, problems)
    finally:
        if log is not None:
            log.close()
    if log is None:
        problems.add(FindingKind.NO_COMMITLOG, None, f"no {'compaction log' if sparse else 'CommitLog'} at "
                                                     f"{log_dir}: units not checked against messages")
    return {"topic": topic, "queue_id": queue_id, "units": len(units), "units_checked": checked,
            "end": end.kind, "problems": problems.result()}


def _check_compaction_partner(path: str, other_dir: Path, other: str, problems: Findings) -> None:
    """TopicPartitionLog.roll creates a compaction log file and its queue file at the same start offset
    (SparseConsumeQueue.createFile(baseOffset)), and sanityCheck refuses a store where a file of one has no
    file of the same name in the other."""
    name = Path(path).name
    if not (other_dir / name).is_file():
        thrown = "log file mismatch with consumeQueue file" if other == "queue" else \
            "consumeQueue file mismatch with log file"
        problems.add(FindingKind.COMPACTION_FILE_MISMATCH, None,
                     f"no compaction {other} file {name} in {other_dir}: TopicPartitionLog.sanityCheck throws "
                     f"('{thrown} {name}') and the compaction store does not load")


def _check_units_in_log_file(path: str, log_dir: Path, units: list[dict], problems: Findings) -> None:
    """A compaction queue file's units point into the log file of its name: the log and the queue roll
    together (CompactionAppendMessageCallback ends both files when either is full)."""
    log_file = log_dir / Path(path).name
    if not log_file.is_file():
        return
    start, end = _start(path), _start(path) + log_file.stat().st_size
    for unit in units:
        if not start <= unit["commitLogOffset"] < end:
            problems.add(FindingKind.COMPACTION_FILE_MISMATCH, unit["fileOffset"],
                         f"unit at logic offset {unit['logicOffset']}: commitLogOffset {unit['commitLogOffset']} is "
                         f"outside its log file {log_file.name} [{start}, {end})")


def _check_batch_unit(log: rmq.CommitLog, unit: dict, where: str, topic: str, queue_id: int | None, sparse: bool,
                      problems: Findings) -> None:
    try:
        msg = log.message_at(unit["commitLogOffset"], digests=False, decompress=False)
    except SegtoolError as exc:
        msg, reason = None, exc.message
    else:
        reason = "zeros, a BLANK record or past the end"
    if msg is None:
        problems.add(FindingKind.BATCH_UNIT_MISMATCH, unit["fileOffset"],
                     f"{where}: no message at commitLogOffset {unit['commitLogOffset']} ({reason})")
        return
    props = msg["properties"]
    # CommitLog.setBatchSizeIfNeeded: INNER_BASE/INNER_NUM of an inner batch, else the message's own offset and 1
    inner = "INNER_NUM" in props and "INNER_BASE" in props
    try:
        base = int(props["INNER_BASE"]) if inner else msg["queueOffset"]
        batch = int(props["INNER_NUM"]) if inner else 1
    except ValueError:
        base, batch = msg["queueOffset"], 1
    expected = {"size": msg["totalSize"], "msgBaseOffset": base, "batchSize": batch,
                "storeTimestamp": msg["storeTimestamp"]}
    if msg["dispatch"]["success"]:
        expected["tagsCode"] = msg["dispatch"]["tagsCode"]
    if not sparse:
        expected["compactedOffset"] = r5.BATCH_CQ_INVALID_POS
    wrong = [f"{name} {unit[name]} but the message's is {value}" for name, value in expected.items()
             if unit[name] != value]
    if msg["topic"] != topic:
        wrong.append(f"message topic is {msg['topic']!r}")
    if queue_id is not None and msg["queueId"] != queue_id:
        wrong.append(f"message queueId is {msg['queueId']}")
    if wrong:
        problems.add(FindingKind.BATCH_UNIT_MISMATCH, unit["fileOffset"], f"{where}: " + "; ".join(wrong))


# -- timer store -------------------------------------------------------------------------------------


def verify_timer_log(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    units = 0
    buf = open_buffer(path)
    for step in r5.walk_timer_log(buf, file_from_offset=_start(path)):
        if not isinstance(step, r5.TimerLogEnd):
            units += 1
            continue
        end = step
    if end.kind is WalkEnd.BLANK and not end.blank_size_matches:
        problems.add(FindingKind.TIMER_LOG_UNIT, end.file_offset, f"BLANK record says {end.size} bytes are left but "
                                                                  f"{len(buf) - end.file_offset} are")
    elif end.kind is WalkEnd.BAD_UNIT:
        problems.add(FindingKind.TIMER_LOG_UNIT, end.file_offset,
                     f"size {end.size}, magic {end.magic} where a unit should start: recoverAndRevise stops here and "
                     "truncates the timer log")
    elif end.kind in (WalkEnd.ZERO_TAIL, WalkEnd.SHORT_TAIL) and end.non_zero_after is not None:
        problems.add(FindingKind.TIMER_LOG_UNIT, end.non_zero_after,
                     f"data at byte {end.non_zero_after} after the units end at {end.file_offset}")
    elif end.kind is WalkEnd.ZERO_TAIL and end.file_offset:
        problems.add(FindingKind.ZERO_TAIL, end.file_offset, "unwritten space (preallocated)", info=True)
    return {"units": units, "end": end.kind, "problems": problems.result()}


def _timer_units(timer_log_dir: Path) -> dict[int, dict] | None:
    """Every unit of a timer log directory by its timer log offset (None without one)."""
    if not timer_log_dir.is_dir():
        return None
    units = {}
    for start, file_path in rmq.list_mapped_files(timer_log_dir):
        for step in r5.walk_timer_log(open_buffer(file_path), file_from_offset=start):
            if isinstance(step, r5.TimerLogEnd):
                break
            units[step["timerLogOffset"]] = step
    return units


def verify_timer_wheel(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    buf = open_buffer(path)
    if len(buf) != r5.TIMER_WHEEL_SIZE:
        problems.add(FindingKind.TIMER_WHEEL_SIZE, None,
                     f"file is {len(buf)} bytes, the wheel is {r5.TIMER_WHEEL_SIZE} ({r5.TIMER_WHEEL_SLOTS} slots of "
                     f"{r5.TIMER_WHEEL_SLOT_SIZE}): the broker does not start")
    slots = r5.used_timer_slots(buf)
    units = _timer_units(Path(path).parent / "timerlog")
    for slot in slots:
        _check_slot(slot, units, problems)
    if units is None:
        problems.add(FindingKind.NO_COMMITLOG, None, "no timerlog/ beside the wheel: slots not checked against units")
    return {"slots_used": len(slots), "problems": problems.result()}


def _check_slot(slot: dict, units: dict[int, dict] | None, problems: Findings) -> None:
    offset = slot["slot"] * r5.TIMER_WHEEL_SLOT_SIZE
    where = f"slot {slot['slot']} (time {slot['time']})"
    if r5.timer_slot_index(slot["time"]) != slot["slot"]:
        problems.add(FindingKind.TIMER_SLOT_MISMATCH, offset,
                     f"{where}: its time belongs at slot {r5.timer_slot_index(slot['time'])}")
        return
    if units is None:
        return
    # walk the chain as the dequeue side does: from lastPos back through prevPos to firstPos
    position, seen, count = slot["lastPos"], set(), 0
    while True:
        unit = units.get(position)
        if unit is None:
            problems.add(FindingKind.TIMER_SLOT_MISMATCH, offset, f"{where}: no timer log unit at {position}")
            return
        # TimerWheel stores timeMs / precisionMs; the default precision (1000 ms) is assumed
        if unit["delayedTime"] // r5.DEFAULT_TIMER_PRECISION_MS != slot["time"]:
            problems.add(FindingKind.TIMER_SLOT_MISMATCH, offset,
                         f"{where}: the unit at {position} is due at {unit['delayedTime']} ms, not in this slot")
            return
        seen.add(position)
        count += 1
        if position == slot["firstPos"]:
            break
        position = unit["prevPos"]
        if position < 0 or position in seen:
            problems.add(FindingKind.TIMER_SLOT_MISMATCH, offset,
                         f"{where}: the chain from lastPos {slot['lastPos']} never reaches firstPos {slot['firstPos']}")
            return
    deletes = sum(1 for p in seen if units[p]["magic"] & r5.TIMER_MAGIC_DELETE)
    if count - 2 * deletes != slot["num"]:
        problems.add(FindingKind.TIMER_SLOT_MISMATCH, offset,
                     f"{where}: num {slot['num']} but the chain holds {count} units ({deletes} deletes)", info=True)


def verify_timer_checkpoint(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    checkpoint = r5.read_timer_checkpoint(open_buffer(path), path)
    for i, (name, value) in enumerate(checkpoint.items()):
        if value < 0:
            problems.add(FindingKind.TIMER_CHECKPOINT_OFFSET, i * 8, f"{name} {value} is negative")
    log_end = _mapped_end(Path(path).parent.parent / "timerlog")
    flush = checkpoint["lastTimerLogFlushPos"]
    if log_end is not None and flush > log_end:
        problems.add(FindingKind.TIMER_CHECKPOINT_OFFSET, 8,
                     f"lastTimerLogFlushPos {flush} is beyond the timer log's end ({log_end}): timer log data is missing")
    return {"timer_checkpoint": checkpoint, "problems": problems.result()}


def verify_timer_metrics(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    try:
        metrics = r5.read_timer_metrics(open_buffer(path), path)
    except SegtoolError as exc:
        problems.add(FindingKind.TIMER_METRICS, exc.offset, exc.message)
        return {"problems": problems.result()}
    for row in metrics["timingCount"]:
        if row["count"] < 0:
            problems.add(FindingKind.TIMER_METRICS, None, f"topic {row['topic']!r}: count {row['count']} is negative")
    return {"topics": len(metrics["timingCount"]), "problems": problems.result()}


# -- DLedger CommitLog ---------------------------------------------------------------------------------


def _previous_entry(data_dir: Path, start: int) -> dict | None:
    """The last entry header of the data file before the one starting at ``start`` (index continuity)."""
    earlier = [(s, p) for s, p in rmq.list_mapped_files(data_dir) if s < start]
    if not earlier:
        return None
    last = None
    s, p = earlier[-1]
    for step in r5.walk_dledger_data(open_buffer(p), file_from_offset=s, digests=False, decompress=False):
        if isinstance(step, r5.DLedgerEnd):
            break
        last = step[0]
    return last


def verify_dledger_data(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    start = _start(path)
    buf = open_buffer(path)
    entries = messages = 0
    first_index = last_index = None
    previous = _previous_entry(Path(path).parent, start)
    for step in r5.walk_dledger_data(buf, file_from_offset=start, previous=previous, path=path,
                                     file=os.path.basename(path), digests=False, decompress=deep):
        if isinstance(step, r5.DLedgerEnd):
            end = step
            break
        header, message = step
        entries += 1
        first_index = header["index"] if first_index is None else first_index
        last_index = header["index"]
        where = f"entry {header['index']} (pos {header['pos']})"
        if isinstance(message, SegtoolError):
            problems.add(FindingKind.DLEDGER_MESSAGE, header["fileOffset"], f"{where}: {message.message}")
            continue
        messages += 1
        body_pos = header["pos"] + r5.DLEDGER_BODY_OFFSET
        if message["physicalOffsetField"] != body_pos:
            problems.add(FindingKind.DLEDGER_MESSAGE, header["fileOffset"],
                         f"{where}: PHYSICALOFFSET {message['physicalOffsetField']} but the message is at {body_pos}")
        if message["bodyLength"] > 0 and message["bodyCRC"] != message["bodyCRCComputed"]:
            problems.add(FindingKind.CRC_MISMATCH, header["fileOffset"],
                         f"{where}: body CRC stored {message['bodyCRC']} but computed {message['bodyCRCComputed']}",
                         offset=body_pos)
        _check_property_crc(message, header["fileOffset"], where, problems)
    if end.kind is WalkEnd.BAD_ENTRY:
        problems.add(FindingKind.DLEDGER_ENTRY, end.file_offset,
                     f"{end.reason}: DLedgerMmapFileStore.recover stops here and truncates the data")
    elif end.kind is WalkEnd.BLANK and end.reason is not None:
        problems.add(FindingKind.DLEDGER_ENTRY, end.file_offset, end.reason)
    elif end.kind in (WalkEnd.ZERO_TAIL, WalkEnd.SHORT_TAIL) and end.non_zero_after is not None:
        problems.add(FindingKind.DLEDGER_ENTRY, end.non_zero_after,
                     f"data at byte {end.non_zero_after} after the entries end at {end.file_offset}")
    elif end.kind is WalkEnd.ZERO_TAIL and end.file_offset:
        problems.add(FindingKind.ZERO_TAIL, end.file_offset, "unwritten space (preallocated)", info=True)
    return {"entries": entries, "messages": messages, "first_index": first_index, "last_index": last_index,
            "end": end.kind, "problems": problems.result()}


def _check_property_crc(message: dict, byte_offset: int, where: str, problems: Findings) -> None:
    if "propCRC" in message and (message["propCRC"] < 0 or message["propCRC"] != message["propCRCComputed"]):
        problems.add(FindingKind.PROPERTY_CRC_MISMATCH, byte_offset,
                     f"{where}: __CRC32# says {message['propCRC']} but the message's CRC32 is "
                     f"{message['propCRCComputed']}", offset=message["phyOffset"])


def verify_dledger_index(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    buf = open_buffer(path)
    entries, end = r5.dledger_index_entries(buf, file_from_offset=_start(path))
    after = rmq.first_nonzero(buf, end, len(buf)) if end < len(buf) else None
    if after is not None:
        problems.add(FindingKind.DLEDGER_INDEX_MISMATCH, after, f"data at byte {after} after an all-zero entry")
    data_dir = Path(path).parent.parent / "data"
    data = r5.DLedgerData(data_dir) if data_dir.is_dir() else None
    try:
        for entry in entries:
            if data is not None:
                _check_index_entry(data, entry, problems)
    finally:
        if data is not None:
            data.close()
    if data is None:
        problems.add(FindingKind.NO_COMMITLOG, None, "no DLedger data/ beside the index: entries not checked")
    return {"entries": len(entries), "problems": problems.result()}


def _check_index_entry(data: r5.DLedgerData, entry: dict, problems: Findings) -> None:
    where = f"index entry {entry['slot']} (pos {entry['pos']})"
    header = data.header_at(entry["pos"])
    if header is None:
        problems.add(FindingKind.DLEDGER_INDEX_MISMATCH, entry["fileOffset"], f"{where}: no data entry there")
        return
    wrong = [f"{name} {entry[name]} but the data entry's is {header[name]}"
             for name in ("magic", "size", "index", "term", "pos") if entry[name] != header[name]]
    if entry["index"] != entry["slot"]:
        wrong.append(f"it sits at the place of index {entry['slot']}")
    if wrong:
        problems.add(FindingKind.DLEDGER_INDEX_MISMATCH, entry["fileOffset"], f"{where}: " + "; ".join(wrong))


def verify_dledger_checkpoint(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    checkpoint = r5.read_dledger_checkpoint(open_buffer(path), path)
    return {"dledger_checkpoint": checkpoint, "problems": problems.result()}


# -- compaction store ------------------------------------------------------------------------------------


def verify_compaction_log(path: str, deep: bool, ctx: StoreContext) -> dict:
    parts = _parts(path)
    nested = parts[-2] in r5.COMPACTION_SUB_FOLDERS
    queue_at = -4 if nested else -3
    topic, queue_name = parts[queue_at], parts[queue_at + 1]
    queue_id = rocketmq_names.queue_id(queue_name)
    result = verify_commitlog(path, deep, StoreContext(None))  # as recovery reads a CommitLog file alone
    # CompactionAppendMessageCallback rewrites PHYSICALOFFSET of a copy whose __CRC32# covers the old one
    result["problems"] = [replace(p, severity=Severity.INFO, message=p.message + " (expected in a compaction log: "
                                  "its PHYSICALOFFSET was rewritten after the CRC was computed)")
                          if p.kind is FindingKind.PROPERTY_CRC_MISMATCH else p for p in result["problems"]]
    problems = Findings(PROBLEMS_PER_KIND)
    cq_dir = Path(os.sep.join(parts[:parts.index(r5.COMPACTION_LOG_DIR)] + [r5.COMPACTION_CQ_DIR, *parts[queue_at:-1]]))
    if cq_dir.is_dir():
        _check_compaction_partner(path, cq_dir, "queue", problems)
    previous = None
    with rmq.MappedFile(path) as mf:
        for step in rmq.walk_commitlog(mf.buf, file_from_offset=_start(path), digests=False, decompress=False):
            if isinstance(step, rmq.CommitLogEnd):
                break
            wrong = []
            if step["topic"] != topic:
                wrong.append(f"topic {step['topic']!r} in the log of {topic!r}")
            if queue_id is not None and step["queueId"] != queue_id:
                wrong.append(f"queueId {step['queueId']} in the log of queue {queue_id}")
            if previous is not None and step["queueOffset"] <= previous:
                wrong.append(f"queueOffset {step['queueOffset']} after {previous}")
            previous = step["queueOffset"]
            if wrong:
                problems.add(FindingKind.COMPACTION_ORDER, step["fileOffset"],
                             f"message at {step['phyOffset']}: " + "; ".join(wrong), offset=step["phyOffset"])
    result["problems"] += problems.result()
    result["topic"], result["queue_id"] = topic, queue_id
    return result


def verify_compaction_positions(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    rows = r5.read_compaction_positions(open_buffer(path), path)
    return {"queues": len(rows), "problems": problems.result()}


# -- lock and abort --------------------------------------------------------------------------------------


def verify_lock(path: str, deep: bool, ctx: StoreContext) -> dict:
    return {"lock": r5.read_lock(open_buffer(path)), "problems": []}


def verify_abort(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    abort = r5.read_abort(open_buffer(path))
    writer = (f"RocketMQ 5.x wrote the broker's process id {abort['pid']}" if abort["pid"] is not None
              else "empty, as RocketMQ 4.x leaves it" if not abort["content"] else "unexpected content")
    problems.add(FindingKind.UNCLEAN_SHUTDOWN, None,
                 f"abort file present ({writer}): the broker did not shut down cleanly, or is running; the next "
                 "start recovers abnormally")
    return {"abort": abort, "problems": problems.result()}
