"""What the checks of every RocketMQ store file share: the problem list, byte helpers, and the
store a file belongs to with the broker's load and recovery predicted once (``StoreContext``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path


from segtool.engine.salvage import StoreRecoveryLoss, store_recovery_loss
from segtool.rocketmq import store as rs
from segtool.rocketmq.startup import CommitLogRecoveryPlan, commitlog_recovery_plan
from segtool.errors import SegtoolError
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import names as rocketmq_names


INDEX_CHECK_LIMIT = 50_000  # index entries checked against the CommitLog per file without --deep
PROBLEMS_PER_KIND = 10  # listed per kind and file; the rest are counted in one summary problem
DISPATCHED_TRAN_TYPES = (rmq.TRANSACTION_NOT_TYPE, rmq.TRANSACTION_COMMIT_TYPE)  # reach the ConsumeQueue


# --------------------------------------------------------------------------
# The store a file belongs to
# --------------------------------------------------------------------------


class StoreContext:
    """What the files of one store share: the CommitLog, RocketMQ's load/recovery prediction,
    ConsumeQueue bounds and index headers, each computed once, on first use."""

    def __init__(self, root: Path | None, commitlog_dir: Path | None = None):
        self.root = root
        if commitlog_dir is None and root is not None:
            commitlog_dir = root / rocketmq_names.COMMITLOG_DIR
        self.commitlog_dir = commitlog_dir if commitlog_dir is not None and commitlog_dir.is_dir() else None
        self.cl_files: list[tuple[int, Path, int]] = []
        if self.commitlog_dir is not None:
            self.cl_files = [(start, p, p.stat().st_size) for start, p in rmq.list_mapped_files(self.commitlog_dir)]
        self.abort = root is not None and (root / "abort").exists()
        self._checkpoint: dict | None | bool = False
        self._recovery: dict | None = None
        self._plan: CommitLogRecoveryPlan | None = None
        self._loss: StoreRecoveryLoss | None | bool = False
        self._commitlog: rmq.CommitLog | None = None
        self._cq_bounds: dict[tuple[str, int], tuple[int, int] | None] = {}
        self._index_headers: list[tuple[str, dict]] | None = None
        self._data_end_ts: int | None | bool = False
        self._cq_sizes: Counter | None = None
        self._index_geometries: list | None = None
        self._has_cq: bool | None = None

    def signature(self) -> tuple:
        """Names, sizes and mtimes of the files the context caches facts about."""
        files = []
        dirs = [self.commitlog_dir]
        if self.root is not None:
            dirs.append(self.root / rocketmq_names.INDEX_DIR)
        for d in dirs:
            if d is not None and d.is_dir():
                with os.scandir(d) as entries:
                    for entry in entries:
                        st = entry.stat()
                        files.append((d.name, entry.name, st.st_size, st.st_mtime_ns))
        if self.root is not None and (self.root / "checkpoint").is_file():
            st = (self.root / "checkpoint").stat()
            files.append(("", "checkpoint", st.st_size, st.st_mtime_ns))
        return (tuple(sorted(files)), self.abort)

    def close(self) -> None:
        if self._commitlog is not None:
            self._commitlog.close()
            self._commitlog = None

    # ---- basics ----

    @property
    def checkpoint(self) -> dict | None:
        if self._checkpoint is False:
            self._checkpoint = None
            path = self.root / "checkpoint" if self.root is not None else None
            if path is not None and path.is_file():
                try:
                    with rmq.MappedFile(path) as mf:
                        self._checkpoint = rmq.read_checkpoint(mf.buf, str(path))
                except SegtoolError:
                    self._checkpoint = None
        return self._checkpoint

    @property
    def commitlog(self) -> rmq.CommitLog | None:
        if self._commitlog is None and self.cl_files:
            self._commitlog = rmq.CommitLog(self.commitlog_dir)
        return self._commitlog

    @property
    def configured_size(self) -> int | None:
        """mappedFileSizeCommitLog, from the spacing of the file names (None with one file)."""
        return configured_size([(start, size) for start, _, size in self.cl_files])

    def file_index(self, name: str) -> int | None:
        for i, (_, p, _) in enumerate(self.cl_files):
            if p.name == name:
                return i
        return None

    def cq_file_size(self) -> int | None:
        """The most common ConsumeQueue file size in the store (mappedFileSizeConsumeQueue)."""
        if self._cq_sizes is None:
            self._cq_sizes = Counter()
            cq_root = self.root / rocketmq_names.CONSUMEQUEUE_DIR if self.root is not None else None
            if cq_root is not None and cq_root.is_dir():
                for _, _, directory in rmq.list_consume_queues(cq_root):
                    files = rmq.list_mapped_files(directory)
                    spacing = configured_size([(s, p.stat().st_size) for s, p in files])
                    if spacing:
                        self._cq_sizes[spacing] += 1
        return self._cq_sizes.most_common(1)[0][0] if self._cq_sizes else None

    # ---- RocketMQ's load and recovery ----

    @property
    def plan(self) -> CommitLogRecoveryPlan:
        """Where the CommitLog recovery cuts (``rocketmq.startup.commitlog_recovery_plan``)."""
        if self._plan is None:
            consumequeue = self.root / rocketmq_names.CONSUMEQUEUE_DIR if self.root is not None else None
            self._plan = commitlog_recovery_plan(self.commitlog_dir, self.checkpoint, self.abort,
                                                 self.configured_size, consumequeue)
        return self._plan

    @property
    def loss(self) -> StoreRecoveryLoss | None:
        """What that recovery drops (``engine.salvage.store_recovery_loss``): the figures of every command."""
        if self._loss is False:
            self._loss = store_recovery_loss(self.plan) if self.cl_files else None
        return self._loss

    @property
    def recovery(self) -> dict:
        if self._recovery is None:
            self._recovery = self._predict_recovery()
        return self._recovery

    def _predict_recovery(self) -> dict:
        files = self.cl_files
        plan = self.plan
        wrong = list(plan.wrong_size)
        cp = self.checkpoint
        out = {"mode": "abnormal" if self.abort else "normal", "checkCRCOnRecover": True,
               "abortFileExists": self.abort, "checkpoint": cp,
               "configuredFileSize": self.configured_size, "wrongSizeFiles": wrong, "rocketmqLoads": not wrong,
               "startFile": None, "maxPhyOffset": 0, "stop": None, "deletedFiles": [],
               "commitlogFilesAfterLoad": [f"{p.name}:{size}" for _, p, size in files],
               "droppedIndexFiles": [], "keptIndexFiles": [h[0] for h in self.index_headers]}
        if not files:
            return out
        if self.abort:
            limit = (cp or {}).get("indexMsgTimestamp", 0)
            out["droppedIndexFiles"] = [n for n, h in self.index_headers if h["endTimestamp"] > limit]
            out["keptIndexFiles"] = [n for n, h in self.index_headers if h["endTimestamp"] <= limit]
        out["startFile"] = plan.start_file
        out["stop"] = plan.stop
        cut = out["maxPhyOffset"] = plan.cut
        # MappedFileQueue.truncateDirtyFiles: files starting after the cut are deleted
        out["deletedFiles"] = list(plan.deleted_files)
        out["commitlogFilesAfterLoad"] = [f"{p.name}:{size}" for start, p, size in files if start <= cut]
        if wrong:
            out["note"] = ("RocketMQ refuses to load this CommitLog (file length not matched): nothing is "
                           "recovered; the cut shown is where recovery would stop once the length is fixed")
        return out

    # ---- the data on disk ----

    @property
    def data_end_timestamp(self) -> int | None:
        """Largest storeTimestamp of the last CommitLog file holding messages (CRC ignored)."""
        if self._data_end_ts is False:
            self._data_end_ts = None
            for start, path, _ in reversed(self.cl_files):
                with rmq.MappedFile(path) as mf:
                    stamps = [step["storeTimestamp"] for step in rmq.walk_commitlog(
                        mf.buf, file_from_offset=start, digests=False, decompress=False)
                        if not isinstance(step, rmq.CommitLogEnd)]
                if stamps:
                    self._data_end_ts = max(stamps)
                    break
        return self._data_end_ts

    @property
    def index_headers(self) -> list[tuple[str, dict]]:
        if self._index_headers is None:
            self._index_headers = []
            index_dir = self.root / rocketmq_names.INDEX_DIR if self.root is not None else None
            if index_dir is not None and index_dir.is_dir():
                for path in rmq.list_index_files(index_dir):
                    try:
                        with rmq.MappedFile(path) as mf:
                            self._index_headers.append((path.name, rmq.read_index_header(mf.buf, str(path))))
                    except SegtoolError:
                        continue
        return self._index_headers

    def index_geometries(self, exclude: str | None = None) -> list[tuple[int, int]]:
        """(hashSlotNum, indexNum) of the store's other index files that can be inferred, most common first."""
        if self._index_geometries is None:
            found = []
            index_dir = self.root / rocketmq_names.INDEX_DIR if self.root is not None else None
            if index_dir is not None and index_dir.is_dir():
                for path in rmq.list_index_files(index_dir):
                    try:
                        view = rmq.IndexFile(path)
                    except (SegtoolError, ValueError):
                        continue
                    found.append((path.name, (view.hash_slot_num, view.index_num)))
                    view.close()
            self._index_geometries = found
        counts = Counter(g for name, g in self._index_geometries if name != exclude)
        return [g for g, _ in counts.most_common()]

    def cq_bounds(self, topic: str, queue_id: int) -> tuple[int, int] | None:
        key = (topic, queue_id)
        if key not in self._cq_bounds:
            directory = self.root / rocketmq_names.CONSUMEQUEUE_DIR / topic / str(queue_id) if self.root is not None else None
            if directory is None or not directory.is_dir():
                self._cq_bounds[key] = None
            else:
                try:
                    self._cq_bounds[key] = rs.queue_bounds(rmq.ConsumeQueue(directory, topic, queue_id))
                except SegtoolError:
                    self._cq_bounds[key] = None
        return self._cq_bounds[key]

    @property
    def has_consumequeue(self) -> bool:
        if self._has_cq is None:
            self._has_cq = self.root is not None and (self.root / rocketmq_names.CONSUMEQUEUE_DIR).is_dir()
        return self._has_cq


def configured_size(files: list[tuple[int, int]]) -> int | None:
    """The mapped file size from the spacing of consecutive file names (most common)."""
    spacing = Counter(b[0] - a[0] for a, b in zip(files, files[1:]) if b[0] > a[0])
    if spacing:
        return spacing.most_common(1)[0][0]
    return None


def store_recovery(root: Path) -> tuple[StoreRecoveryLoss | None, bool]:
    """What the store's CommitLog recovery drops (``StoreContext.loss``, the figures of every command) and
    whether its next start is the abnormal one (an ``abort`` file), for commands that need only these."""
    ctx = StoreContext(root)
    try:
        return ctx.loss, ctx.abort
    finally:
        ctx.close()


class StoreContexts:
    """The contexts of the stores one verify run meets, each built once; a store that changed on
    disk since gets a fresh one.  Only the newest is kept open (files are verified store by store)."""

    def __init__(self):
        self._last: tuple | None = None  # (key, signature, StoreContext)

    def get(self, root: Path | None, commitlog_dir: Path | None = None) -> StoreContext:
        key = (str(root), str(commitlog_dir))
        ctx = StoreContext(root, commitlog_dir)
        sig = ctx.signature()
        if self._last is not None and self._last[0] == key and self._last[1] == sig:
            return self._last[2]
        self.close()
        self._last = (key, sig, ctx)
        return ctx

    def close(self) -> None:
        if self._last is not None:
            self._last[2].close()
            self._last = None
