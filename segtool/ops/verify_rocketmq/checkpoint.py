"""The store checkpoint against the files it describes."""

from __future__ import annotations

from segtool.errors import TruncatedData
from segtool.findings import Findings, FindingKind
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import v5 as r5
from segtool.ops.verify_rocketmq.store import PROBLEMS_PER_KIND, StoreContext


def verify_checkpoint(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    with rmq.MappedFile(path) as mf:
        try:
            cp = rmq.read_checkpoint(mf.buf, path)
        except TruncatedData as exc:
            problems.add(FindingKind.CHECKPOINT_SIZE, exc.offset, exc.message)
            return {"problems": problems.result()}
        # StoreCheckpoint (5.x): two offsets after the timestamps (zero from a 4.x broker)
        cp5 = r5.read_checkpoint_5x(mf.buf, path) if mf.size >= r5.CHECKPOINT_5X_FAST.size else None
    fields = (("physicMsgTimestamp", 0, "CommitLog"), ("logicsMsgTimestamp", 8, "ConsumeQueue"),
              ("indexMsgTimestamp", 16, "IndexFile"))
    last = ctx.data_end_timestamp
    index_ends = [h["endTimestamp"] for _, h in ctx.index_headers]
    for name, offset, what in fields:
        value = cp[name]
        if value < 0:
            problems.add(FindingKind.CHECKPOINT_TIMESTAMP, offset, f"{name} {value} is negative")
        elif value == 0:
            problems.add(FindingKind.CHECKPOINT_TIMESTAMP, offset,
                         f"{name} is 0: the {what} was never flushed", info=True)
        elif last is not None and value > last:
            problems.add(FindingKind.CHECKPOINT_AHEAD_OF_DATA, offset,
                         f"{name} {value} is later than the newest message in the CommitLog ({last}): data the "
                         f"broker had flushed ({value - last} ms of it) is missing")
    if index_ends and cp["indexMsgTimestamp"] > max(index_ends):
        problems.add(FindingKind.CHECKPOINT_AHEAD_OF_INDEX, 16,
                     f"indexMsgTimestamp {cp['indexMsgTimestamp']} is later than every index file's endTimestamp "
                     f"({max(index_ends)}): an index file is missing")
    recovery = ctx.recovery if ctx.cl_files else None
    if ctx.abort:
        where = ""
        if recovery is not None:
            stop = recovery["stop"] or {}
            where = (f"; abnormal recovery starts at CommitLog file {recovery['startFile']} and stops at phyOffset "
                     f"{recovery['maxPhyOffset']} ({stop.get('kind')}"
                     + (f": {stop['reason']}" if stop.get("reason") else "") + ")")
            if recovery["deletedFiles"]:
                where += f", deleting CommitLog file(s) {', '.join(recovery['deletedFiles'])}"
            if recovery["droppedIndexFiles"]:
                where += (f"; index file(s) {', '.join(recovery['droppedIndexFiles'])} end after indexMsgTimestamp and "
                          "are deleted and rebuilt from the CommitLog")
        problems.add(FindingKind.UNCLEAN_SHUTDOWN, None,
                     "abort file present: the broker did not shut down cleanly" + where)
        if last is not None:
            behind = last - min(cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"])
            if behind > 0:
                problems.add(FindingKind.STALE_CHECKPOINT, 0,
                             f"the checkpoint is {behind} ms behind the newest message "
                             f"({last}): messages after it were not flushed when the broker "
                             "stopped (recovery re-reads them)")
    elif recovery is not None and not recovery["rocketmqLoads"]:
        problems.add(FindingKind.STORE_DOES_NOT_LOAD, None, "RocketMQ refuses to load this store: CommitLog file(s) "
                                                            f"{', '.join(recovery['wrongSizeFiles'])} do not have the "
                                                            "configured size")
    if cp5 is not None:
        end = recovery["maxPhyOffset"] if recovery is not None else None
        for name in r5.CHECKPOINT_5X_FIELDS:
            value, offset = cp5[name], r5.CHECKPOINT_5X_FAST.field_offset(name)
            cp[name] = value
            if value < 0:
                problems.add(FindingKind.CHECKPOINT_OFFSET, offset, f"{name} {value} is negative")
            elif end is not None and value > end:
                problems.add(FindingKind.CHECKPOINT_OFFSET, offset,
                             f"{name} {value} is beyond where the CommitLog's recovery ends ({end})")
    out = {"checkpoint": cp, "problems": problems.result()}
    if recovery is not None:
        out["store_recovery"] = recovery
    return out
