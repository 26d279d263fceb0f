"""`inspect STORE`: the inventory of a RocketMQ store and what the broker does when it starts on it.

The files: CommitLog files (``list_mapped_files``, each walked by the one CommitLog walker
``rocketmq.store_files.walk_commitlog``), ConsumeQueues (``rocketmq.startup``, which reads
them as ``ConsumeQueue.recover`` does), IndexFile headers (``rocketmq.store_files.IndexFile``), the
checkpoint, ``config/``, and the ``abort`` / ``lock`` markers.

The plan is RocketMQ 4.9's ``DefaultMessageStore.load`` and ``start``: where the CommitLog
recovery cuts is ``verify``'s own prediction (``StoreContext.recovery`` over
``rocketmq.store.commitlog_recovery``); what the ConsumeQueues and IndexFiles lose and
gain comes from ``rocketmq.startup`` and ``rocketmq.store.build_index_files``
fed by the same dispatch feeds.  docs/inspect.md describes the report.
"""

from __future__ import annotations

import os
from pathlib import Path

from segtool.rocketmq import startup, startup5
from segtool.rocketmq import v5 as r5
from segtool.source import open_buffer
from segtool.rocketmq import store as rs
from segtool.engine.inventory import inventory
from segtool.rocketmq import names as rocketmq_names
from segtool.errors import SegtoolError, UnreadableInput
from segtool.findings import Finding, FindingKind, Severity, finding
from segtool.rocketmq import store_files as rmq
from segtool.formats.outcomes import WalkEnd
from segtool.ops.output_schema import (
    CommitLogRecoveryPlan,
    InspectedCommitLog,
    InspectedCommitLogFile,
    InspectedConsumeQueue,
    InspectedIndexFile,
    InspectedStore,
    RocketMQ5StartupPlan,
    RocketMQInspectReport,
    RocketMQStartupPlan,
    StoreCheckpointReport,
)
from segtool.ops.verify_rocketmq.store import StoreContext, configured_size

ABNORMAL, NORMAL = "abnormal", "normal"


def inspect_stores(paths: list[str]) -> RocketMQInspectReport:
    """One report per store named."""
    stores = [inspect_store(path) for path in paths]
    problems = [p for store in stores for p in store["problems"]]
    return {
        "stores": stores,
        "summary": {
            "stores": len(stores),
            "abnormal_shutdowns": sum(1 for s in stores if s["shutdown"]["last_exit"] == ABNORMAL),
            "stores_not_loading": sum(1 for s in stores if not s["plan"]["loads"]),
            "commitlogs_truncated": sum(1 for s in stores if plan_truncates(s["plan"])),
            "consume_queue_units_dropped": sum(s["plan"]["consume_queue_units_dropped"] for s in stores),
            "index_files_destroyed": sum(len(s["plan"]["index"]["destroyed"]) for s in stores),
            "errors": sum(1 for p in problems if p.severity is Severity.ERROR),
            "notes": sum(1 for p in problems if p.severity is not Severity.ERROR),
            "unreadable": sum(len(s["unreadable"]) for s in stores),
        },
    }


def plan_truncates(plan: RocketMQStartupPlan) -> bool:
    """Does the start-up cut messages off the CommitLog (a store that does not load cuts nothing)?"""
    commitlog = plan["commitlog"]
    return plan["loads"] and commitlog is not None and commitlog["truncated_at"] is not None


def plan_loses(plan: RocketMQStartupPlan) -> bool:
    """Does the start-up lose anything: CommitLog messages, ConsumeQueue units, or the whole store (it
    does not load)?  An IndexFile it destroys is rebuilt from the CommitLog, as Kafka's indexes are."""
    return plan_truncates(plan) or plan["consume_queue_units_dropped"] > 0 or not plan["loads"]


def exit_code(report: RocketMQInspectReport) -> int:
    """2 when a file cannot be read, 1 when the plan loses anything or a cross-check found an error."""
    if report["summary"]["unreadable"]:
        return 2
    if report["summary"]["errors"] or any(plan_loses(s["plan"]) for s in report["stores"]):
        return 1
    return 0


def _root(path: str) -> Path:
    try:
        return rocketmq_names.store_directory(path)
    except UnreadableInput:
        root = Path(path)
        if not root.is_dir():
            raise
        return root  # a store root with its config/ or checkpoint only (engine.inventory.is_store_root)


def inspect_store(path: str) -> InspectedStore:
    root = _root(path)
    problems: list[Finding] = []
    ctx = StoreContext(root)
    try:
        commitlog = _commitlog(ctx, problems)
        queues, cq_file_size = _consume_queues(root, problems)
        index_files, index_views = _index_files(root, problems)
        try:
            checkpoint = _checkpoint(root, ctx, commitlog, queues, index_files, problems)
            plan = _plan(ctx, queues, cq_file_size, index_views, checkpoint, problems)
            if plan["loads"]:
                cut = plan["commitlog"]["max_phy_offset"] if plan["commitlog"] else None
                plan["rocketmq5"] = _rocketmq5_plan(root, plan, cut)
        finally:
            for view in index_views:
                view.close()
    finally:
        ctx.close()
    lock = root / "lock"
    found = inventory([str(root)])
    known = _known_files(root, found.files)
    return {
        "path": str(root),
        "shutdown": {"abort_file": ctx.abort, "lock_file": lock.is_file(),
                     "lock_content": _lock_content(lock), "last_exit": ABNORMAL if ctx.abort else NORMAL},
        "checkpoint": checkpoint,
        "commitlog": commitlog,
        "consume_queues": [_queue_report(q, plan["loads"]) for q in queues],
        "index_files": index_files,
        "config_files": _config_files(root),
        "other_files": sorted(f.path for f in found.files if f.path not in known),
        "unreadable": [{"path": f.path, "reason": f.unreadable} for f in found.unreadable],
        "plan": plan,
        "problems": problems,
    }


# --------------------------------------------------------------------------
# The files
# --------------------------------------------------------------------------


def _lock_content(lock: Path) -> str | None:
    """What the broker wrote into ``lock`` at start (the text ``lock``), escaped."""
    if not lock.is_file():
        return None
    with open(lock, "rb") as handle:
        data = handle.read(64)
    return data.decode("ascii", "backslashreplace") if data.isascii() else data.hex()


def _commitlog(ctx: StoreContext, problems: list[Finding]) -> InspectedCommitLog | None:
    if ctx.commitlog_dir is None:
        return None
    files: list[InspectedCommitLogFile] = []
    last_message = None
    data_end = None
    for start, path, size in ctx.cl_files:
        summary: InspectedCommitLogFile = {
            "name": path.name, "start_offset": start, "size": size, "messages": 0, "first_phy_offset": None,
            "last_phy_offset": None, "first_store_timestamp": None, "last_store_timestamp": None,
            "end_kind": WalkEnd.END_OF_FILE, "end_file_offset": 0, "data_end": 0}
        with rmq.MappedFile(path) as mf:
            for step in rmq.walk_commitlog(mf.buf, file_from_offset=start, file=path.name, path=str(path),
                                           digests=False, decompress=False):
                if isinstance(step, rmq.CommitLogEnd):
                    summary["end_kind"], summary["end_file_offset"] = step.kind, step.file_offset
                    summary["data_end"] = step.data_end
                    break
                summary["messages"] += 1
                if summary["first_phy_offset"] is None:
                    summary["first_phy_offset"], summary["first_store_timestamp"] = step["phyOffset"], \
                        step["storeTimestamp"]
                summary["last_phy_offset"], summary["last_store_timestamp"] = step["phyOffset"], step["storeTimestamp"]
                last_message = {"phy_offset": step["phyOffset"], "store_timestamp": step["storeTimestamp"],
                                "topic": step["topic"], "queue_id": step["queueId"],
                                "queue_offset": step["queueOffset"], "file": path.name}
        if summary["data_end"]:
            data_end = start + summary["data_end"]
        files.append(summary)
    configured = ctx.configured_size
    continuous = True
    for previous, current in zip(ctx.cl_files, ctx.cl_files[1:]):
        if configured is not None and current[0] - previous[0] > configured:
            continuous = False
            problems.append(finding(FindingKind.MISSING_MAPPED_FILE, None,
                                    f"{ctx.commitlog_dir}: CommitLog file {current[1].name} follows {previous[1].name}"
                                    f": {(current[0] - previous[0]) // configured - 1} file(s) of {configured} bytes "
                                    "missing between them", offset=previous[0] + configured))
    if configured is not None:
        for start, path, _ in ctx.cl_files:
            if start % configured:
                continuous = False
                problems.append(finding(FindingKind.FILE_NAME, None, f"{path}: start offset {start} is not a multiple "
                                                                     f"of the file size {configured}"))
    return {"directory": str(ctx.commitlog_dir), "configured_file_size": configured, "files": files,
            "names_continuous": continuous, "messages": sum(f["messages"] for f in files),
            "min_offset": ctx.cl_files[0][0] if ctx.cl_files else None, "data_end_phy_offset": data_end,
            "last_message": last_message}


def _consume_queues(root: Path, problems: list[Finding]) -> tuple[list[startup.QueuePlan], int | None]:
    """Every queue as ``ConsumeQueue.recover`` leaves it, and the store's ConsumeQueue file size."""
    cq_root = root / rocketmq_names.CONSUMEQUEUE_DIR
    if not cq_root.is_dir():
        return [], None
    listed = rmq.list_consume_queues(cq_root)
    sizes = []
    spacing = []
    for _, _, directory in listed:
        files = [(start, p.stat().st_size) for start, p in rmq.list_mapped_files(directory)]
        sizes += [size for _, size in files]
        gap = configured_size(files)
        if gap:
            spacing.append(gap)
    # mappedFileSizeConsumeQueue: the spacing of the names, else the size most files have
    pool = spacing or sizes
    file_size = max(set(pool), key=pool.count) if pool else None
    queues = []
    for topic, queue_id, directory in listed:
        plan = startup.recover_consume_queue(topic, queue_id, directory, file_size or 0)
        queues.append(plan)
        if file_size:
            for previous, current in zip(plan.files, plan.files[1:]):
                if current[0] - previous[0] > file_size:
                    problems.append(finding(FindingKind.MISSING_MAPPED_FILE, None,
                                            f"{directory}: ConsumeQueue file {current[1].name} follows "
                                            f"{previous[1].name}: file(s) missing between them",
                                            offset=(previous[0] + file_size) // rmq.CQ_UNIT_SIZE))
    return queues, file_size


def _index_files(root: Path, problems: list[Finding]) -> tuple[list[InspectedIndexFile], list[rmq.IndexFile]]:
    index_dir = root / rocketmq_names.INDEX_DIR
    if not index_dir.is_dir():
        return [], []
    reports, views = [], []
    for path in rmq.list_index_files(index_dir):
        size = path.stat().st_size
        try:
            view = rmq.IndexFile(path)
        except (SegtoolError, ValueError) as exc:
            problems.append(finding(FindingKind.GEOMETRY, getattr(exc, "offset", None),
                                    f"{path}: {getattr(exc, 'message', exc)}; IndexService maps it with its "
                                    "configured geometry"))
            reports.append({"name": path.name, "size": size, "hash_slot_num": None, "index_num": None,
                            "geometry_source": None, "begin_timestamp": None, "end_timestamp": None,
                            "begin_phy_offset": None, "end_phy_offset": None, "hash_slot_count": None,
                            "index_count": None})
            continue
        views.append(view)
        header = view.header
        reports.append({"name": path.name, "size": size, "hash_slot_num": view.hash_slot_num,
                        "index_num": view.index_num, "geometry_source": view.geometry_source,
                        "begin_timestamp": header["beginTimestamp"], "end_timestamp": header["endTimestamp"],
                        "begin_phy_offset": header["beginPhyOffset"], "end_phy_offset": header["endPhyOffset"],
                        "hash_slot_count": header["hashSlotCount"], "index_count": header["indexCount"]})
    return reports, views


def _config_files(root: Path) -> list[dict]:
    config = root / "config"
    if not config.is_dir():
        return []
    return [{"name": p.name, "size": p.stat().st_size} for p in sorted(config.iterdir()) if p.is_file()]


def _known_files(root: Path, files) -> set[str]:
    """The files the report accounts for: the data files, config/, checkpoint and the markers."""
    known = set()
    for f in files:
        relative = Path(f.path).relative_to(root).parts
        top = relative[0]
        if (len(relative) == 1 and top in rocketmq_names.ROOT_FILES) or (len(relative) == 2 and top == rocketmq_names.CONFIG_DIR):
            known.add(f.path)
        elif top == rocketmq_names.COMMITLOG_DIR and len(relative) == 2 and rocketmq_names.is_mapped_file_name(relative[1]):
            known.add(f.path)
        elif top == rocketmq_names.INDEX_DIR and len(relative) == 2:
            known.add(f.path)
        elif top == rocketmq_names.CONSUMEQUEUE_DIR and len(relative) == 4 and rocketmq_names.queue_id(relative[2]) is not None \
                and rocketmq_names.is_mapped_file_name(relative[3]):
            known.add(f.path)
    return known


# --------------------------------------------------------------------------
# The checkpoint against the files
# --------------------------------------------------------------------------


def _newest_unit_timestamp(ctx: StoreContext, queues: list[startup.QueuePlan]) -> int | None:
    """The storeTimestamp of the newest message a ConsumeQueue's last unit points at."""
    log = ctx.commitlog
    if log is None:
        return None
    newest = None
    for plan in queues:
        if plan.recover_end <= 0 or not plan.files:
            continue
        queue = rmq.ConsumeQueue(plan.directory, plan.topic, plan.queue_id)
        unit = queue.unit(plan.recover_end // rmq.CQ_UNIT_SIZE - 1)
        if unit is None or unit["size"] == rmq.CQ_BLANK_UNIT_SIZE:
            continue
        try:
            msg = log.message_at(unit["commitLogOffset"], digests=False, decompress=False)
        except SegtoolError:
            continue
        if msg is not None and (newest is None or msg["storeTimestamp"] > newest):
            newest = msg["storeTimestamp"]
    return newest


def _checkpoint(root: Path, ctx: StoreContext, commitlog, queues, index_files,
                problems) -> StoreCheckpointReport | None:
    path = root / "checkpoint"
    if not path.is_file():
        if ctx.abort:
            problems.append(finding(FindingKind.CHECKPOINT_SIZE, None,
                                    f"{path}: missing; StoreCheckpoint starts from zeros, so abnormal recovery "
                                    "reads the CommitLog from its first file and destroys every IndexFile"))
        return None
    with rmq.MappedFile(path) as mf:
        size = mf.size
        try:
            cp = rmq.read_checkpoint(mf.buf, str(path))
        except SegtoolError as exc:
            problems.append(finding(FindingKind.CHECKPOINT_SIZE, exc.offset, f"{path}: {exc.message}; "
                                                                             "StoreCheckpoint reads zeros"))
            return None
    last_message = commitlog["last_message"]["store_timestamp"] if commitlog and commitlog["last_message"] else None
    last_unit = _newest_unit_timestamp(ctx, queues)
    index_ends = [f["end_timestamp"] for f in index_files if f["end_timestamp"] is not None]
    last_index = max(index_ends) if index_ends else None
    checks = (("physicMsgTimestamp", 0, last_message, "the newest message in the CommitLog"),
              ("logicsMsgTimestamp", 8, last_unit, "the newest message a ConsumeQueue unit points at"),
              ("indexMsgTimestamp", 16, last_index, "the newest IndexFile's endTimestamp"))
    for name, byte_offset, newest, what in checks:
        value = cp[name]
        if value < 0:
            problems.append(finding(FindingKind.CHECKPOINT_TIMESTAMP, byte_offset, f"{path}: {name} {value} is "
                                                                                   "negative"))
        elif value == 0:
            problems.append(finding(FindingKind.CHECKPOINT_TIMESTAMP, byte_offset,
                                    f"{path}: {name} is 0: nothing was flushed yet", info=True))
        elif newest is not None and value > newest:
            kind = FindingKind.CHECKPOINT_AHEAD_OF_INDEX if name == "indexMsgTimestamp" else \
                FindingKind.CHECKPOINT_AHEAD_OF_DATA
            problems.append(finding(kind, byte_offset, f"{path}: {name} {value} is {value - newest} ms later than "
                                                       f"{what} ({newest}): flushed data is missing"))
    if ctx.abort and last_message is not None and 0 < min(cp["physicMsgTimestamp"],
                                                          cp["logicsMsgTimestamp"]) < last_message:
        behind = last_message - min(cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"])
        problems.append(finding(FindingKind.STALE_CHECKPOINT, 0,
                                f"{path}: the checkpoint is {behind} ms behind the newest message ({last_message}): "
                                "abnormal recovery re-reads the CommitLog from the file before it"))
    return {"path": str(path), "size": size, "physic_msg_timestamp": cp["physicMsgTimestamp"],
            "logics_msg_timestamp": cp["logicsMsgTimestamp"], "index_msg_timestamp": cp["indexMsgTimestamp"],
            "min_timestamp": max(min(cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"]) - rs.CHECKPOINT_SAFETY_MS, 0),
            "last_message_store_timestamp": last_message, "last_unit_store_timestamp": last_unit,
            "last_index_end_timestamp": last_index}


# --------------------------------------------------------------------------
# The start-up plan
# --------------------------------------------------------------------------


def _refused_files(ctx: StoreContext, queues: list[startup.QueuePlan], cq_file_size: int | None) -> list[str]:
    """Files ``MappedFileQueue.doLoad`` refuses: a length other than the configured size."""
    configured = ctx.configured_size
    refused = [str(path) for _, path, size in ctx.cl_files if configured is not None and size != configured]
    if cq_file_size:
        refused += [str(path) for q in queues for _, path, size in q.files if size != cq_file_size]
    return refused


def _plan(ctx: StoreContext, queues, cq_file_size, index_views, checkpoint, problems) -> RocketMQStartupPlan:
    refused = _refused_files(ctx, queues, cq_file_size)
    last_exit = ABNORMAL if ctx.abort else NORMAL
    plan: RocketMQStartupPlan = {
        "last_exit": last_exit, "loads": not refused, "refused_files": refused, "commitlog": None,
        "max_phy_offset_of_consume_queue": max((q.max_physic_offset for q in queues), default=-1),
        "truncates_consume_queues": False, "consume_queue_units_dropped": 0,
        "index": {"kept": [v.name for v in index_views], "destroyed": [], "files_after": [v.name for v in index_views],
                  "messages_indexed": 0, "entries_written": 0, "files_created": 0, "appended_to": None},
        "recovery_dispatch": None, "reput": None,
        "commitlog_files_after": [p.name for _, p, _ in ctx.cl_files], "notes": [], "rocketmq5": None}
    if ctx.abort:
        problems.append(finding(FindingKind.UNCLEAN_SHUTDOWN, None,
                                f"{ctx.root / 'abort'} is present: the broker did not shut down cleanly; its next "
                                "start runs the abnormal recovery"))
    for path in refused:
        problems.append(finding(FindingKind.FILE_SIZE, None,
                                f"{path}: {os.path.getsize(path)} bytes, not the configured mapped file size: "
                                "MappedFileQueue.load refuses it and the broker does not start"))
    if refused:
        plan["notes"].append("DefaultMessageStore.load fails (a file of the wrong length): the broker does not "
                             "start and recovers nothing; the CommitLog recovery shown is the one it runs once "
                             "the lengths are fixed")
        if ctx.cl_files:
            _commitlog_plan(ctx, plan, problems)
        return plan
    cp = {"physicMsgTimestamp": checkpoint["physic_msg_timestamp"],
          "logicsMsgTimestamp": checkpoint["logics_msg_timestamp"],
          "indexMsgTimestamp": checkpoint["index_msg_timestamp"]} if checkpoint else \
        {"physicMsgTimestamp": 0, "logicsMsgTimestamp": 0, "indexMsgTimestamp": 0}
    by_key = {(q.topic, q.queue_id): q for q in queues}
    # IndexService.load(lastExitOK)
    kept = [v for v in index_views if not ctx.abort or v.end_timestamp <= cp["indexMsgTimestamp"]]
    plan["index"]["kept"] = [v.name for v in kept]
    plan["index"]["destroyed"] = [v.name for v in index_views if v not in kept]
    for name in plan["index"]["destroyed"]:
        problems.append(finding(FindingKind.DROPPED_BY_RECOVERY, None,
                                f"{ctx.root / 'index' / name}: endTimestamp after the checkpoint's indexMsgTimestamp "
                                f"{cp['indexMsgTimestamp']}: IndexService.load destroys it; its entries are rebuilt "
                                "from the CommitLog as recovery dispatches"))
    dledger = _dledger_data_dirs(ctx.root)
    if not ctx.cl_files and dledger:
        # DLedgerCommitLog: the messages are in dledger-<id>/data, which recover_dledger reads
        plan["notes"].append("the CommitLog is DLedger's (dledger-<id>/data): DLedgerMmapFileStore.recover runs "
                             "instead of the CommitLog recovery, and the ConsumeQueues are kept as recover leaves "
                             "them (DLedgerCommitLog's dispatch is not predicted here)")
        return plan
    if not ctx.cl_files:
        if queues:
            dropped = sum(q.end // rmq.CQ_UNIT_SIZE for q in queues)
            plan["consume_queue_units_dropped"] = dropped
            for q in queues:
                q.truncation_dropped_units, q.end, q.max_physic_offset = q.end // rmq.CQ_UNIT_SIZE, 0, -1
                q.truncation_deleted_files = [p.name for _, p, _ in q.live_files]
            if dropped:
                problems.append(finding(FindingKind.CONSUME_QUEUE_TRUNCATION, None,
                                        f"{ctx.root}: no CommitLog file: recovery destroys every ConsumeQueue "
                                        f"(destroyLogics), {dropped} units"))
        plan["notes"].append("no CommitLog file: nothing to recover or dispatch")
        return plan
    cut = _commitlog_plan(ctx, plan, problems)
    builds: list[rs.IndexBuild] = []
    try:
        _dispatch(ctx, cp, cut, plan, by_key, queues, cq_file_size, kept, index_views, builds)
    finally:
        for build in builds:  # the in-memory files the builds made; the loaded ones are closed by the caller
            for f in build.created:
                f.close()
            if build.appended is not None:
                build.appended.close()
    min_offset = ctx.cl_files[0][0]
    queues[:] = sorted(by_key.values(), key=lambda q: (q.topic, q.queue_id))
    dropped = 0
    for q in queues:
        lost = q.recover_dropped_units + q.truncation_dropped_units
        dropped += lost
        if lost:
            problems.append(finding(FindingKind.CONSUME_QUEUE_TRUNCATION, None, _queue_drop_text(q, cut)))
        q.min_offset_after = startup.min_offset_in_queue(q, min_offset, cq_file_size or 0)
    plan["consume_queue_units_dropped"] = dropped
    return plan


def _commitlog_plan(ctx: StoreContext, plan: RocketMQStartupPlan, problems: list[Finding]) -> int:
    """Step 3's CommitLog half into the plan: where recovery cuts (verify's prediction, the same cut) and what
    it drops (``engine.salvage.store_recovery_loss``, the figures of every command); returns the cut."""
    recovery = ctx.recovery
    cut = recovery["maxPhyOffset"]
    stop = recovery["stop"] or {}
    loss = ctx.loss
    truncated = None if loss is None else {
        "file": os.path.basename(loss.file), "file_offset": loss.byte, "phy_offset": loss.phy_offset,
        "bytes_dropped": loss.bytes, "messages_dropped": loss.messages, "messages_salvageable": loss.salvageable,
        "messages_gone": loss.gone}
    plan["commitlog"] = CommitLogRecoveryPlan(
        method="recoverAbnormally" if ctx.abort else "recoverNormally", start_file=recovery["startFile"],
        check_crc=recovery["checkCRCOnRecover"], stop_kind=stop.get("kind"), stop_file=stop.get("file"),
        stop_file_offset=stop.get("fileOffset"), stop_reason=stop.get("reason"), max_phy_offset=cut,
        truncated_at=truncated, deleted_files=recovery["deletedFiles"])
    plan["commitlog_files_after"] = [name.split(":")[0] for name in recovery["commitlogFilesAfterLoad"]]
    if truncated is not None:
        why = stop.get("kind") + (f": {stop['reason']}" if stop.get("reason") else "")
        problems.append(finding(FindingKind.RECOVERY_TRUNCATION, truncated["file_offset"],
                                f"{ctx.commitlog_dir / truncated['file']}: the CommitLog recovery cuts at physical "
                                f"offset {cut} ({why}): {truncated['bytes_dropped']} bytes and "
                                f"{truncated['messages_dropped']} messages dropped: {truncated['messages_salvageable']} "
                                f"whose body CRC holds (salvage writes them back), {truncated['messages_gone']} gone",
                                offset=cut))
    for name in recovery["deletedFiles"]:
        share = loss.by_file.get(name) if loss is not None else None
        problems.append(finding(FindingKind.DELETED_BY_RECOVERY, None,
                                f"{ctx.commitlog_dir / name}: starts after the cut at {cut}: truncateDirtyFiles "
                                "deletes it", info=share is None or not share.messages))
    return cut


def _dispatch(ctx: StoreContext, cp: dict, cut: int, plan: RocketMQStartupPlan, by_key: dict, queues: list,
              cq_file_size: int | None, kept: list[rmq.IndexFile], loaded: list[rmq.IndexFile],
              builds: list[rs.IndexBuild]) -> None:
    """Steps 5-7 of docs/inspect.md: the abnormal recovery's dispatch, the ConsumeQueue truncation,
    the re-dispatch at start; each dispatch feeds the queues and, through them, the index."""
    geometry = _index_geometry(kept, loaded)
    index = plan["index"]
    if ctx.abort:
        feed = rs.DispatchFeed("recover")
        fed = startup.dispatch_to_queues(rs.commitlog_recovery(ctx.commitlog_dir, cp, feed=feed), by_key,
                                         _batch_topics(ctx.root))
        builds.append(_build_index(index, fed, geometry, kept))
        plan["recovery_dispatch"] = {"from_file": feed.start_file, "from_phy_offset": None, "to_phy_offset": cut,
                                     "messages": feed.dispatched,
                                     "units_added": sum(q.added_units for q in by_key.values())}
    if plan["max_phy_offset_of_consume_queue"] >= cut:
        plan["truncates_consume_queues"] = True
        for q in queues:
            startup.truncate_dirty_logic_files(q, cut, cq_file_size or 0)
    for q in by_key.values():
        q.loaded()
    # start(): ReputMessageService from the largest maxPhysicOffset (at least the min offset) to the end
    reput_from = max(max((q.max_physic_offset for q in by_key.values()), default=0), ctx.cl_files[0][0], 0)
    if reput_from < cut:
        feed = rs.DispatchFeed("reput")
        before = sum(q.added_units for q in by_key.values())
        counted = _Counted(r for r in rs.reput_dispatches(ctx.commitlog_dir, reput_from, feed=feed)
                           if r.commit_log_offset < cut)
        builds.append(_build_index(index, startup.dispatch_to_queues(counted, by_key, _batch_topics(ctx.root)),
                                   geometry,
                                   builds[-1].files if builds else kept))
        plan["reput"] = {"from_file": feed.start_file, "from_phy_offset": reput_from, "to_phy_offset": cut,
                         "messages": counted.count,
                         "units_added": sum(q.added_units for q in by_key.values()) - before}


def _batch_topics(root: Path) -> frozenset[str]:
    """The topics with a BatchConsumeQueue: a 5.x broker dispatches their messages there, not to consumequeue/."""
    directory = root / rocketmq_names.BATCH_CONSUMEQUEUE_DIR
    return frozenset(p.name for p in directory.iterdir() if p.is_dir()) if directory.is_dir() else frozenset()


def _dledger_data_dirs(root: Path) -> list[Path]:
    return sorted(p / "data" for p in root.iterdir() if rocketmq_names.is_dledger_dir(p.name) and (p / "data").is_dir()) \
        if root.is_dir() else []


def _rocketmq5_plan(root: Path, plan: RocketMQStartupPlan, checkpoint_cut: int | None) -> RocketMQ5StartupPlan | None:
    """The 5.x start-up's own recoveries (rocketmq/startup5.py), per file; None for a store without 5.x files."""
    batch_root = root / rocketmq_names.BATCH_CONSUMEQUEUE_DIR
    timer_dir = root / rocketmq_names.TIMERLOG_DIR
    dledger = _dledger_data_dirs(root)
    compaction = root / "compaction"
    if not (batch_root.is_dir() or timer_dir.is_dir() or dledger or compaction.is_dir()):
        return None
    recoveries, notes = ["ConsumeQueue.recover"], []
    batch_queues = []
    if batch_root.is_dir():
        recoveries.append("BatchConsumeQueue.recover")
        for topic, queue_id, directory in rmq.list_consume_queues(batch_root):
            batch_queues.append(startup5.recover_batch_queue(topic, queue_id, directory, checkpoint_cut))
    if dledger:
        recoveries.append("DLedgerMmapFileStore.recover")
    elif plan["commitlog"] is not None:
        recoveries.append(f"CommitLog.{plan['commitlog']['method']}")
    if checkpoint_cut is not None and any(r["dropped"] for q in batch_queues for r in q["files"]):
        recoveries.append("BatchConsumeQueue.truncateDirtyLogicFiles")
    timer = None
    if timer_dir.is_dir():
        recoveries.append("TimerMessageStore.recover (recoverAndRevise)")
        flush = None
        timercheck = root / rocketmq_names.CONFIG_DIR / "timercheck"
        if timercheck.is_file():
            try:
                flush = r5.read_timer_checkpoint(open_buffer(str(timercheck)), str(timercheck))["lastTimerLogFlushPos"]
            except SegtoolError as exc:
                notes.append(f"{timercheck}: {exc.message}; the timer recovery starts from the first file")
        else:
            notes.append(f"no {timercheck}: TimerCheckpoint starts from zeros, the timer recovery from the first file")
        timer = startup5.recover_timer_log(timer_dir, flush)
    if compaction.is_dir():
        recoveries.append("CompactionStore.load (TopicPartitionLog.sanityCheck; verify checks it)")
    return {"recoveries": recoveries, "batch_queues": batch_queues, "timer": timer,
            "dledger": [startup5.recover_dledger(d) for d in dledger], "notes": notes}


def _build_index(plan_index: dict, requests, geometry: tuple[int, int],
                 existing: list[rmq.IndexFile]) -> rs.IndexBuild:
    """``IndexService.buildIndex`` for ``requests`` in memory, counted into the plan."""
    build = rs.build_index_files(requests, *geometry, existing=existing, name_for=_created_name)
    plan_index["messages_indexed"] += build.indexed_messages
    plan_index["entries_written"] += build.entries_written
    plan_index["files_created"] += len(build.created)
    if build.appended is not None:
        plan_index["appended_to"] = build.appended.name
    plan_index["files_after"] = [f.name for f in build.files]
    return build


def _queue_drop_text(q: startup.QueuePlan, cut: int) -> str:
    parts = []
    if q.recover_dropped_units:
        parts.append(f"ConsumeQueue.recover drops {q.recover_dropped_units} written unit(s) after the first invalid "
                     f"unit (queue offset {q.recover_end // rmq.CQ_UNIT_SIZE})")
    if q.truncation_dropped_units:
        parts.append(f"truncateDirtyLogicFiles drops {q.truncation_dropped_units} unit(s) pointing at or after "
                     f"physical offset {cut}")
    deleted = q.recover_deleted_files + q.truncation_deleted_files
    if deleted:
        parts.append(f"file(s) {', '.join(deleted)} deleted")
    return f"{q.directory}: " + "; ".join(parts)


class _Counted:
    """Counts the requests that pass."""

    def __init__(self, requests):
        self.requests = requests
        self.count = 0

    def __iter__(self):
        for request in self.requests:
            self.count += 1
            yield request


def _created_name(previous: str | None) -> str:
    """A created file's name in the report: RocketMQ names it by the wall clock when it starts."""
    return f"new-after-{previous}" if previous else "new"


def _index_geometry(kept: list[rmq.IndexFile], loaded: list[rmq.IndexFile]) -> tuple[int, int]:
    """The geometry new IndexFiles get: the newest loaded file's, else RocketMQ's default."""
    reference = (kept or loaded)[-1] if (kept or loaded) else None
    if reference is None:
        return rmq.DEFAULT_HASH_SLOT_NUM, rmq.DEFAULT_INDEX_NUM
    return reference.hash_slot_num, reference.index_num


def _queue_report(q: startup.QueuePlan, loads: bool) -> InspectedConsumeQueue:
    files = []
    for _, path, size in q.files:
        with rmq.MappedFile(path) as mf:
            units = rmq.consumequeue_units(mf.buf)
            count = int(((units["commitLogOffset"] >= 0) & (units["size"] > 0)).sum())
            del units
        files.append({"name": path.name, "size": size, "units": count})
    after = None
    if loads:
        after = {"units_dropped": q.recover_dropped_units + q.truncation_dropped_units,
                 "files_deleted": q.recover_deleted_files + q.truncation_deleted_files,
                 "phantom_units": q.phantom_units, "units_added_by_recovery": q.added_by_recovery,
                 "units_added_by_reput": q.added_units - q.added_by_recovery, "min_offset": q.min_offset_after,
                 "max_offset_after_load": q.max_offset_after_load,
                 "max_physic_offset_after_load": q.max_physic_offset_after_load,
                 "max_offset": q.end // rmq.CQ_UNIT_SIZE, "max_physic_offset": q.max_physic_offset}
    return {"topic": q.topic, "queue_id": q.queue_id, "directory": str(q.directory) if q.directory else None,
            "files": files, "units": q.units_on_disk, "max_offset": q.recover_end // rmq.CQ_UNIT_SIZE,
            "max_physic_offset": q.recover_max_physic_offset, "after_start": after}
