"""The CommitLog files: each message checked as ``checkMessageAndReturnSize`` reads it, and what
recovery keeps of the file."""

from __future__ import annotations

import os
from pathlib import Path

from segtool.engine.salvage import DamagedRange, FileMessagesLost, body_crc_valid, commitlog_pieces, store_recovery_loss
from segtool.findings import Findings, FindingKind
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq.startup import CommitLogRecoveryPlan
from segtool.formats.outcomes import WalkEnd
from segtool.ops.render import damaged_range_text
from segtool.ops.verify_rocketmq.store import DISPATCHED_TRAN_TYPES, PROBLEMS_PER_KIND, StoreContext
from segtool.rocketmq import names as rocketmq_names


def verify_commitlog(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    name = os.path.basename(path)
    start = rocketmq_names.mapped_file_offset(name)
    in_store = ctx.file_index(name) is not None and ctx.commitlog_dir is not None and \
        os.path.samefile(ctx.commitlog_dir, os.path.dirname(os.path.abspath(path)))
    with rmq.MappedFile(path) as mf:
        buf, size = mf.buf, mf.size
        scan = _scan_commitlog_file(buf, size, start, path, name, deep, problems, ctx if in_store else None)
        configured = ctx.configured_size if in_store else None
        if configured is not None:
            if size != configured:
                problems.add(FindingKind.FILE_SIZE, None,
                             f"file is {size} bytes but the store's CommitLog files are "
                             f"{configured} (mappedFileSizeCommitLog): RocketMQ refuses to load "
                             "the store ('length not matched message store config value')")
            if start % configured:
                problems.add(FindingKind.FILE_NAME, None, f"start offset {start} is not a multiple of the file size "
                                                          f"{configured}")
        recovery = _file_recovery(path, size, start, name, scan, ctx if in_store else None)
        if recovery["bytes_lost"] or scan["cut_problem"] is not None:  # a clean file never reads past damage
            recovery["salvage"] = _salvage_after(buf, start, name, path, recovery["valid_bytes"], problems)
    if recovery.get("deleted") and recovery["messages_lost"]:
        problems.add(FindingKind.DELETED_BY_RECOVERY, 0,
                     f"RocketMQ's recovery stops before this file ({recovery['stop_message']}) and deletes it: "
                     f"{_lost_text(recovery)}")
    elif recovery.get("deleted"):
        problems.add(FindingKind.DELETED_BY_RECOVERY, 0, "no messages; RocketMQ's recovery deletes this file "
                                                         f"({recovery['stop_message']})", info=True)
    elif recovery["bytes_lost"] and scan["cut_problem"] is None:
        problems.add(FindingKind.RECOVERY_TRUNCATION, recovery["valid_bytes"],
                     f"RocketMQ's recovery cuts the CommitLog here ({recovery['stop_message']}): "
                     f"{recovery['bytes_lost']} bytes, {_lost_text(recovery)}",
                     offset=start + recovery["valid_bytes"])
    return {"messages": scan["messages"], "first_phy_offset": scan["first_phy"], "last_phy_offset": scan["last_phy"],
            "end": scan["end"], "problems": problems.result(), "recovery": recovery}


def _lost_text(recovery: dict) -> str:
    return (f"{recovery['messages_lost']} messages lost: {recovery['messages_salvageable']} whose body CRC holds "
            f"(salvage writes them back), {recovery['messages_gone']} gone")


def _salvage_after(buf, start: int, name: str, path: str, position: int, problems: Findings) -> dict:
    """What reading past damage keeps of the file from ``position`` (where recovery cuts): valid messages;
    each damaged range becomes a finding."""
    kept, first, last = 0, None, None
    for piece in commitlog_pieces(buf, file_from_offset=start, file=name, path=path, digests=False,
                                  decompress=False):
        if isinstance(piece, DamagedRange):
            problems.add(FindingKind.DAMAGED_RANGE, piece.first_byte, damaged_range_text(piece.as_dict()),
                         offset=piece.physical_offset)
        elif isinstance(piece, dict) and piece["fileOffset"] >= position and body_crc_valid(piece):
            kept += 1
            first = piece["phyOffset"] if first is None else first
            last = piece["phyOffset"]
    return {"messages": kept, "first_phy_offset": first, "last_phy_offset": last}


def _scan_commitlog_file(buf, size, start, path, name, deep, problems: Findings, ctx: StoreContext | None) -> dict:
    """Every record of one CommitLog file, checked; returns where the data ends."""
    positions: list[int] = []
    cut_problem = None  # the first record RocketMQ's check refuses (file offset)
    undispatched: list[tuple[int, str, int, int]] = []
    unindexed: list[int] = []
    queue_next: dict[tuple[str, int], int] = {}  # the queue offset each queue's next message takes
    index_end_phy = max((h["endPhyOffset"] for _, h in ctx.index_headers), default=None) if ctx else None
    check_queues = ctx is not None and ctx.has_consumequeue
    for step in rmq.walk_commitlog(buf, file_from_offset=start, file=name, path=path, digests=False,
                                   decompress=deep):
        if isinstance(step, rmq.CommitLogEnd):
            end, data_end, refused_at = _walk_end(step, size, problems)
            cut_problem = refused_at if cut_problem is None else cut_problem
            break
        msg = step
        pos = msg["fileOffset"]
        phy = msg["phyOffset"]
        positions.append(pos)
        if msg["bodyLength"] > 0 and msg["bodyCRC"] != msg["bodyCRCComputed"]:
            problems.add(FindingKind.CRC_MISMATCH, pos,
                         f"body CRC stored {msg['bodyCRC']} but computed "
                         f"{msg['bodyCRCComputed']} (phyOffset {phy}, topic {msg['topic']}, "
                         f"KEYS {msg['KEYS']!r}); RocketMQ's recovery stops here", offset=phy)
            cut_problem = pos if cut_problem is None else cut_problem
        elif not msg["dispatch"]["success"]:
            problems.add(FindingKind.NOT_DISPATCHABLE, pos,
                         f"message at phyOffset {phy}: {msg['dispatch'].get('reason')} "
                         "(checkMessageAndReturnSize fails; recovery stops here)", offset=phy)
            cut_problem = pos if cut_problem is None else cut_problem
        if "propCRC" in msg and (msg["propCRC"] < 0 or msg["propCRC"] != msg["propCRCComputed"]):
            problems.add(FindingKind.PROPERTY_CRC_MISMATCH, pos,
                         f"__CRC32# property says {msg['propCRC']} but the message's CRC32 is {msg['propCRCComputed']} "
                         f"(phyOffset {phy}); with forceVerifyPropCRC RocketMQ's recovery stops here", offset=phy)
        if msg["physicalOffsetField"] != phy:
            problems.add(FindingKind.PHYSICAL_OFFSET, pos,
                         f"PHYSICALOFFSET field says {msg['physicalOffsetField']} but the "
                         f"message is at {phy}", offset=phy)
        if deep and "bodyDecompressError" in msg:
            problems.add(FindingKind.BODY_DECOMPRESS, msg["bodyOffset"], f"compressed body at phyOffset {phy}: "
                                                                         f"{msg['bodyDecompressError']}", offset=phy)
        tran = msg["transactionType"]
        if tran in DISPATCHED_TRAN_TYPES:
            key = (msg["topic"], msg["queueId"])
            expected = queue_next.get(key)
            if expected is not None and msg["queueOffset"] != expected:
                problems.add(FindingKind.QUEUE_OFFSET_SEQUENCE, pos,
                             f"{msg['topic']}/{msg['queueId']}: queueOffset {msg['queueOffset']} where the queue's "
                             f"previous message in this file leaves {expected}", offset=phy)
            # an inner batch takes INNER_NUM offsets: the next message's offset jumps by that much
            queue_next[key] = msg["queueOffset"] + rmq.queue_offsets_taken(msg["properties"])
            if check_queues:
                bounds = ctx.cq_bounds(*key)
                if bounds is None or msg["queueOffset"] >= bounds[1]:
                    undispatched.append((phy, msg["topic"], msg["queueId"], msg["queueOffset"]))
        if (index_end_phy is not None and phy > index_end_phy and tran != rmq.TRANSACTION_ROLLBACK_TYPE
                and (msg["UNIQ_KEY"] is not None or msg["KEYS"])):
            unindexed.append(phy)
    if undispatched:
        phy, topic, qid, qoff = undispatched[0]
        problems.add(FindingKind.NOT_IN_CONSUMEQUEUE, phy - start,
                     f"{len(undispatched)} message(s) are not in their ConsumeQueue, the first at phyOffset {phy} "
                     f"({topic}/{qid} queueOffset {qoff}): written but not dispatched before the broker stopped; "
                     "RocketMQ's recovery dispatches them", offset=phy)
    if unindexed:
        problems.add(FindingKind.NOT_INDEXED, unindexed[0] - start,
                     f"{len(unindexed)} message(s) with keys lie after the newest index entry (endPhyOffset "
                     f"{index_end_phy}), the first at phyOffset {unindexed[0]}: not in any IndexFile; "
                     "RocketMQ's recovery indexes them only after an unclean shutdown", offset=unindexed[0])
    return {"positions": positions, "messages": len(positions), "end": end, "cut_problem": cut_problem,
            "data_end": data_end, "first_phy": start + positions[0] if positions else None,
            "last_phy": start + positions[-1] if positions else None}


def _walk_end(step: rmq.CommitLogEnd, size: int, problems: Findings) -> tuple[dict, int, int | None]:
    """The scan's end, where its data ends and the first byte RocketMQ refuses (or None), from the
    walk's end; adds the problem the end is."""
    pos, total, phy = step.file_offset, step.total_size, step.phy_offset
    kind = step.kind
    if kind is WalkEnd.END_OF_FILE:
        return {"kind": kind, "fileOffset": pos}, size, None
    if kind is WalkEnd.SHORT_TAIL and step.non_zero_after is None:
        return {"kind": WalkEnd.ZERO_TAIL, "fileOffset": pos}, pos, None
    if kind is WalkEnd.SHORT_TAIL:
        problems.add(FindingKind.TRAILING_BYTES, pos, f"{size - pos} stray bytes at the end of the file")
        return {"kind": WalkEnd.CORRUPT, "fileOffset": pos}, size, pos
    if kind is WalkEnd.BLANK:
        if not step.blank_size_matches:
            problems.add(FindingKind.BLANK_SIZE, pos, f"BLANK end-of-file record says {total} bytes are left but "
                                                      f"{size - pos} are")
        # the BLANK record marks the end; it holds no message bytes
        return {"kind": kind, "fileOffset": pos, "totalSize": total}, pos, None
    if kind is WalkEnd.ZERO_TAIL:
        after = step.non_zero_after
        end = {"kind": kind, "fileOffset": pos, "nonZeroAfter": after}
        if after is not None:
            problems.add(FindingKind.DATA_AFTER_ZEROS, after, f"zero bytes from {pos} but data again at {after}: "
                                                              "a hole in the file (lost or torn write); RocketMQ "
                                                              f"stops reading at {pos}")
            return end, step.data_end, pos
        if pos == 0:
            problems.add(FindingKind.EMPTY_FILE, 0, "no messages: the file is all zeros (preallocated, never written)")
        else:
            problems.add(FindingKind.ZERO_TAIL, pos, f"{size - pos} zero bytes after the last message (preallocated "
                                                     "space not written yet; no BLANK end record)", info=True)
        return end, pos, None
    if kind is WalkEnd.BAD_MAGIC:
        problems.add(FindingKind.BAD_MAGIC, pos,
                     f"illegal magic code 0x{step.magic & 0xFFFFFFFF:08x} where a message "
                     f"should start (phyOffset {phy}); RocketMQ stops reading here", offset=phy)
        return {"kind": WalkEnd.CORRUPT, "fileOffset": pos}, step.data_end, pos
    if kind is WalkEnd.TRUNCATED:
        problems.add(FindingKind.TRUNCATED_MESSAGE, pos, f"message of totalSize {total} (phyOffset {phy}) is cut off: "
                                                         f"only {size - pos} bytes left in the file", offset=phy)
        return {"kind": kind, "fileOffset": pos, "totalSize": total}, step.data_end, pos
    if kind is WalkEnd.TORN:
        problems.add(FindingKind.TORN_MESSAGE, pos, f"message of totalSize {total} (phyOffset {phy}) is zero from "
                                                    f"byte {step.data_end} to the end of the file (torn write): "
                                                    f"{step.error.message}", offset=phy)
        return {"kind": kind, "fileOffset": pos, "totalSize": total}, step.data_end, pos
    problems.add(FindingKind.CORRUPT_MESSAGE, pos, f"message at phyOffset {phy}: {step.error.message}", offset=phy)
    return {"kind": WalkEnd.CORRUPT, "fileOffset": pos, "totalSize": total}, step.data_end, pos


def _file_recovery(path: str, size, start, name, scan: dict, ctx: StoreContext | None) -> dict:
    """What RocketMQ's recovery keeps of this file (see the module docstring), and its share of what the
    recovery drops (``engine.salvage.store_recovery_loss``: the figures inspect, salvage and report give)."""
    end = scan["end"]
    torn_at_end = end["kind"] in (WalkEnd.TRUNCATED, WalkEnd.TORN, WalkEnd.CORRUPT)
    if ctx is None:
        # a loose file: recovery as if it were the only file
        cut_pos = scan["cut_problem"] if scan["cut_problem"] is not None else (
            scan["end"]["fileOffset"] if scan["end"]["kind"] in (WalkEnd.BLANK, WalkEnd.ZERO_TAIL) else size)
        info = {"mode": "file alone", "stop_reason": scan["end"]["kind"],
                "stop_message": f"stops at file offset {cut_pos}"}
        deleted = False
        checked = True
        loads = True
    else:
        rec = ctx.recovery
        cut = rec["maxPhyOffset"]
        stop = rec["stop"] or {}
        start_index = ctx.file_index(rec["startFile"]) if rec["startFile"] else 0
        checked = ctx.file_index(name) >= (start_index or 0)
        deleted = start > cut
        loads = rec["rocketmqLoads"]
        where = f"{stop.get('kind')} at phyOffset {stop.get('phyOffset')} in {stop.get('file')}"
        if stop.get("reason"):
            where += f": {stop['reason']}"
        info = {"mode": rec["mode"], "stop_reason": stop.get("kind"), "stop_message": where}
        if deleted:
            cut_pos = 0
        elif start <= cut < start + max(size, 1) and checked:
            cut_pos = cut - start
        else:
            cut_pos = size if scan["end"]["kind"] in (WalkEnd.BLANK, WalkEnd.END_OF_FILE) or not checked else \
                scan["end"]["fileOffset"]
    torn = 1 if torn_at_end and scan["end"]["fileOffset"] >= cut_pos else 0
    data_end = scan["data_end"]
    if ctx is None:  # the file alone is the store: its own recovery plan
        alone = CommitLogRecoveryPlan(((start, Path(path), size),), False, name, None, start + cut_pos, (), (), None)
        loss = store_recovery_loss(alone)
    else:
        loss = ctx.loss
    share = (loss.by_file.get(name) if loss is not None else None) or FileMessagesLost(0, 0)
    result = {
        "valid_bytes": cut_pos,
        "bytes_lost": max(data_end - cut_pos, 0),
        "messages_lost": share.messages,
        "messages_salvageable": share.salvageable,
        "messages_gone": share.gone,
        "torn_messages": torn,
        "deleted": deleted,
        "checked_by_recovery": checked,
        "rocketmq_loads": loads,
        **info,
    }
    return result
