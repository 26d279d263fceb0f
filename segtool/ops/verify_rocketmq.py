"""`verify` for RocketMQ store files: CommitLog, ConsumeQueue, IndexFile, checkpoint.

``verify_rocketmq_file(detected, deep)`` returns ``{"problems": [...], ...}``
like the Kafka checks in ``segtool.ops.verify`` (a problem is ``{"kind",
"severity", "byte_offset", "message"}``; "error" makes the file's status
"problems", "info" does not).

Each file is checked on its own and, when it sits in a store
(``<root>/commitlog/<20 digits>``, ``<root>/consumequeue/<topic>/<queueId>/<20
digits>``, ``<root>/index/<yyyyMMddHHmmssSSS>``, ``<root>/checkpoint``), against
the rest of the store.  What RocketMQ 4.9 does when it loads the store is
predicted once per store and shared by its files:

* ``MappedFileQueue.load`` refuses a CommitLog (or ConsumeQueue) file whose
  length is not the configured file size (inferred from the file names'
  spacing): the broker does not start;
* recovery (``CommitLog.recoverNormally``: the last 3 files; after an unclean
  shutdown, marked by the ``abort`` file, ``recoverAbnormally`` from the file
  the checkpoint selects) reads messages with ``checkMessageAndReturnSize
  (checkCRC = checkCRCOnRecover = true)``, moves to the next file at a BLANK
  record, and stops at the first record that is not a good message; the
  CommitLog is cut there (``truncateDirtyFiles``: later files are deleted) and
  the ConsumeQueues with it;
* abnormal recovery also deletes the index files whose endTimestamp is later
  than the checkpoint's indexMsgTimestamp and rebuilds them from the CommitLog.

CommitLog files get ``recovery``: ``{"valid_bytes", "bytes_lost",
"records_lost", "torn_messages", ...}`` for that file, like Kafka ``.log``
files: ``valid_bytes`` is where the recovered CommitLog ends in this file (0 for
a file recovery deletes), ``bytes_lost`` the written bytes after it (the
unwritten zero tail of a preallocated file is not counted), ``records_lost`` the
messages (whole or torn) that start there, ``torn_messages`` how many of those
are incomplete.

``deep`` also inflates compressed bodies, and checks every IndexFile entry
against its message (without it, at most ``INDEX_CHECK_LIMIT`` entries per file,
evenly spread, are checked).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np

from segtool.engine import rocketmq_store as rs
from segtool.errors import CorruptData, SegtoolError, TruncatedData
from segtool.formats import rocketmq as rmq
from segtool.formats.detect import NOT_RECOGNISED
from segtool.formats.json_names import snake_case_keys

INDEX_CHECK_LIMIT = 50_000  # index entries checked against the CommitLog per file without --deep
PROBLEMS_PER_KIND = 10  # listed per kind and file; the rest are counted in one summary problem
_DISPATCHED_TRAN_TYPES = (rmq.TRANSACTION_NOT_TYPE, rmq.TRANSACTION_COMMIT_TYPE)  # reach the ConsumeQueue


# --------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------


class _Problems:
    """Problems of one file, at most PROBLEMS_PER_KIND listed per kind."""

    def __init__(self):
        self.items: list[dict] = []
        self._counts: Counter = Counter()
        self._first_hidden: dict[str, dict] = {}

    def add(self, kind: str, byte_offset: int | None, message: str, severity: str = "error") -> None:
        self._counts[kind] += 1
        problem = {"kind": kind, "severity": severity, "byte_offset": byte_offset, "message": message}
        if self._counts[kind] <= PROBLEMS_PER_KIND:
            self.items.append(problem)
        else:
            self._first_hidden.setdefault(kind, problem)

    def result(self) -> list[dict]:
        out = list(self.items)
        for kind, first in self._first_hidden.items():
            hidden = self._counts[kind] - PROBLEMS_PER_KIND
            out.append({"kind": kind, "severity": first["severity"], "byte_offset": first["byte_offset"],
                        "message": f"{hidden} more {kind} problems not listed (the first at byte "
                                   f"{first['byte_offset']}: {first['message']})"})
        return out


# --------------------------------------------------------------------------
# Bytes helpers
# --------------------------------------------------------------------------


def _first_nonzero(buf, start: int, end: int, chunk: int = 1 << 22) -> int | None:
    for s in range(start, end, chunk):
        e = min(s + chunk, end)
        hits = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=e - s, offset=s))
        if hits.size:
            return s + int(hits[0])
    return None


def _last_nonzero(buf, start: int, end: int, chunk: int = 1 << 22) -> int | None:
    e = end
    while e > start:
        s = max(start, e - chunk)
        hits = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=e - s, offset=s))
        if hits.size:
            return s + int(hits[-1])
        e = s
    return None


def _store_timestamp(buf, pos: int) -> int | None:
    """storeTimestamp of the message record at ``pos`` (fixed header only), or None."""
    if pos + 40 > len(buf):
        return None
    (sys_flag,) = rmq._INT32.unpack_from(buf, pos + 36)
    layout = rmq.MESSAGE_HEADER_FAST[(sys_flag >> 4) & 3]
    if pos + layout.size > len(buf):
        return None
    return layout.unpack_from(buf, pos)[layout.names.index("storeTimestamp")]


def _walk_records(buf, pos: int) -> tuple[list[int], bool]:
    """Positions of the records from ``pos`` by totalSize (magic checked, fields not), and
    whether the last one is torn (runs past the end or is not a message)."""
    positions = []
    size = len(buf)
    while size - pos >= 8:
        total, magic = rmq.BLANK_RECORD_FAST.unpack_from(buf, pos)
        if magic == rmq.BLANK_MAGIC_CODE or (magic == 0 and total == 0):
            return positions, False
        if magic not in rmq.MESSAGE_VERSIONS or total < rmq.MIN_MESSAGE_SIZE or pos + total > size:
            return positions, True
        positions.append(pos)
        pos += total
    return positions, False


# --------------------------------------------------------------------------
# The store a file belongs to
# --------------------------------------------------------------------------


def _store_root(detected) -> Path | None:
    path = Path(os.path.abspath(detected.path))
    kind = detected.kind
    if kind == "rocketmq-commitlog":
        return path.parent.parent if path.parent.name == "commitlog" else None
    if kind == "rocketmq-consumequeue":
        return path.parents[3] if len(path.parents) > 3 and path.parents[2].name == "consumequeue" else None
    if kind == "rocketmq-indexfile":
        return path.parent.parent if path.parent.name == "index" else None
    if kind == "rocketmq-checkpoint":
        return path.parent
    return None


class StoreContext:
    """What the files of one store share: the CommitLog, RocketMQ's load/recovery prediction,
    ConsumeQueue bounds and index headers, each computed once, on first use."""

    def __init__(self, root: Path | None, commitlog_dir: Path | None = None):
        self.root = root
        if commitlog_dir is None and root is not None:
            commitlog_dir = root / "commitlog"
        self.commitlog_dir = commitlog_dir if commitlog_dir is not None and commitlog_dir.is_dir() else None
        self.cl_files: list[tuple[int, Path, int]] = []
        if self.commitlog_dir is not None:
            self.cl_files = [(start, p, p.stat().st_size) for start, p in rmq.list_mapped_files(self.commitlog_dir)]
        self.abort = root is not None and (root / "abort").exists()
        self._checkpoint: dict | None | bool = False
        self._recovery: dict | None = None
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
            dirs.append(self.root / "index")
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
        return _configured_size([(start, size) for start, _, size in self.cl_files])

    def file_index(self, name: str) -> int | None:
        for i, (_, p, _) in enumerate(self.cl_files):
            if p.name == name:
                return i
        return None

    def cq_file_size(self) -> int | None:
        """The most common ConsumeQueue file size in the store (mappedFileSizeConsumeQueue)."""
        if self._cq_sizes is None:
            self._cq_sizes = Counter()
            cq_root = self.root / "consumequeue" if self.root is not None else None
            if cq_root is not None and cq_root.is_dir():
                for _, _, directory in rmq.list_consume_queues(cq_root):
                    files = rmq.list_mapped_files(directory)
                    spacing = _configured_size([(s, p.stat().st_size) for s, p in files])
                    if spacing:
                        self._cq_sizes[spacing] += 1
        return self._cq_sizes.most_common(1)[0][0] if self._cq_sizes else None

    # ---- RocketMQ's load and recovery ----

    @property
    def recovery(self) -> dict:
        if self._recovery is None:
            self._recovery = self._predict_recovery()
        return self._recovery

    def _predict_recovery(self) -> dict:
        files = self.cl_files
        configured = self.configured_size
        wrong = [f"{p.name}:{size}" for _, p, size in files if configured is not None and size != configured]
        cp = self.checkpoint
        out = {"mode": "abnormal" if self.abort else "normal", "checkCRCOnRecover": True,
               "abortFileExists": self.abort, "checkpoint": cp,
               "configuredFileSize": configured, "wrongSizeFiles": wrong, "rocketmqLoads": not wrong,
               "startFile": None, "maxPhyOffset": 0, "stop": None, "deletedFiles": [],
               "commitlogFilesAfterLoad": [f"{p.name}:{size}" for _, p, size in files],
               "droppedIndexFiles": [], "keptIndexFiles": [h[0] for h in self.index_headers]}
        if not files:
            return out
        if self.abort:
            cps = cp or {}
            min_ts = min(cps.get("physicMsgTimestamp", 0), cps.get("logicsMsgTimestamp", 0))
            min_ts = max(min_ts - rs.CHECKPOINT_SAFETY_MS, 0)
            index = 0
            for i in range(len(files) - 1, -1, -1):
                if rs._matched_recover(files[i][1], min_ts):
                    index = i
                    break
            limit = cps.get("indexMsgTimestamp", 0)
            out["droppedIndexFiles"] = [n for n, h in self.index_headers if h["endTimestamp"] > limit]
            out["keptIndexFiles"] = [n for n, h in self.index_headers if h["endTimestamp"] <= limit]
        else:
            index = max(len(files) - 3, 0)
        out["startFile"] = files[index][1].name
        cut = files[index][0]
        stop = None
        for start, path, _ in files[index:]:
            with rmq.MappedFile(path) as mf:
                for item in rs._file_dispatches(mf.buf, start, path.name, str(path), True):
                    if item[0] == "msg":
                        continue
                    _, kind, pos, reason = item
                    cut = start + pos
                    if kind != "blank":
                        stop = {"kind": kind, "phyOffset": cut, "file": path.name, "fileOffset": pos,
                                "reason": reason}
                    break
            if stop is not None:
                break
        if stop is None:  # a BLANK record in the last file: recovery ends there
            stop = {"kind": "last-file", "phyOffset": cut, "file": files[-1][1].name,
                    "fileOffset": cut - files[-1][0], "reason": None}
        out["stop"] = stop
        out["maxPhyOffset"] = cut
        # MappedFileQueue.truncateDirtyFiles: files starting after the cut are deleted
        out["deletedFiles"] = [p.name for start, p, _ in files if start > cut]
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
                    positions, _ = _walk_records(mf.buf, 0)
                    stamps = [t for t in (_store_timestamp(mf.buf, p) for p in positions) if t is not None]
                if stamps:
                    self._data_end_ts = max(stamps)
                    break
        return self._data_end_ts

    @property
    def index_headers(self) -> list[tuple[str, dict]]:
        if self._index_headers is None:
            self._index_headers = []
            index_dir = self.root / "index" if self.root is not None else None
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
            index_dir = self.root / "index" if self.root is not None else None
            if index_dir is not None and index_dir.is_dir():
                for path in rmq.list_index_files(index_dir):
                    try:
                        view = rs.IndexFileView.open(path)
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
            directory = self.root / "consumequeue" / topic / str(queue_id) if self.root is not None else None
            if directory is None or not directory.is_dir():
                self._cq_bounds[key] = None
            else:
                try:
                    self._cq_bounds[key] = rs._queue_bounds(rmq.ConsumeQueue(directory, topic, queue_id))
                except SegtoolError:
                    self._cq_bounds[key] = None
        return self._cq_bounds[key]

    @property
    def has_consumequeue(self) -> bool:
        if self._has_cq is None:
            self._has_cq = self.root is not None and (self.root / "consumequeue").is_dir()
        return self._has_cq


def _configured_size(files: list[tuple[int, int]]) -> int | None:
    """The mapped file size from the spacing of consecutive file names (most common)."""
    spacing = Counter(b[0] - a[0] for a, b in zip(files, files[1:]) if b[0] > a[0])
    if spacing:
        return spacing.most_common(1)[0][0]
    return None


_CONTEXT: tuple | None = None  # (key, signature, StoreContext): the last store verified


def store_context(root: Path | None, commitlog_dir: Path | None = None) -> StoreContext:
    """The (cached) context of a store; a store that changed on disk gets a fresh one."""
    global _CONTEXT
    key = (str(root), str(commitlog_dir))
    ctx = StoreContext(root, commitlog_dir)
    sig = ctx.signature()
    if _CONTEXT is not None and _CONTEXT[0] == key and _CONTEXT[1] == sig:
        return _CONTEXT[2]
    if _CONTEXT is not None:
        _CONTEXT[2].close()
    _CONTEXT = (key, sig, ctx)
    return ctx


# --------------------------------------------------------------------------
# CommitLog
# --------------------------------------------------------------------------


def verify_commitlog(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = _Problems()
    name = os.path.basename(path)
    start = int(name) if name.isdigit() else 0
    in_store = ctx.file_index(name) is not None and ctx.commitlog_dir is not None and \
        os.path.samefile(ctx.commitlog_dir, os.path.dirname(os.path.abspath(path)))
    with rmq.MappedFile(path) as mf:
        buf, size = mf.buf, mf.size
        scan = _scan_commitlog_file(buf, size, start, path, name, deep, problems, ctx if in_store else None)
        configured = ctx.configured_size if in_store else None
        if configured is not None:
            if size != configured:
                problems.add("file_size", None, f"file is {size} bytes but the store's CommitLog files are "
                                                f"{configured} (mappedFileSizeCommitLog): RocketMQ refuses to load "
                                                "the store ('length not matched message store config value')")
            if start % configured:
                problems.add("file_name", None, f"start offset {start} is not a multiple of the file size "
                                                f"{configured}")
        recovery = _file_recovery(buf, size, start, name, scan, ctx if in_store else None)
    if recovery.get("deleted") and recovery["records_lost"]:
        problems.add("deleted_by_recovery", 0,
                     f"RocketMQ's recovery stops before this file ({recovery['stop_message']}) and deletes it: "
                     f"{recovery['records_lost']} messages lost")
    elif recovery.get("deleted"):
        problems.add("deleted_by_recovery", 0, "no messages; RocketMQ's recovery deletes this file "
                                               f"({recovery['stop_message']})", "info")
    elif recovery["bytes_lost"] and scan["cut_problem"] is None:
        problems.add("recovery_truncation", recovery["valid_bytes"],
                     f"RocketMQ's recovery cuts the CommitLog here ({recovery['stop_message']}): "
                     f"{recovery['bytes_lost']} bytes, {recovery['records_lost']} messages lost")
    return {"messages": scan["messages"], "first_phy_offset": scan["first_phy"], "last_phy_offset": scan["last_phy"],
            "end": scan["end"], "problems": problems.result(), "recovery": recovery}


def _scan_commitlog_file(buf, size, start, path, name, deep, problems: _Problems, ctx: StoreContext | None) -> dict:
    """Every record of one CommitLog file, checked; returns where the data ends."""
    positions: list[int] = []
    pos = 0
    end = {}
    cut_problem = None  # the first record RocketMQ's check refuses (file offset)
    data_end = size
    undispatched: list[tuple[int, str, int, int]] = []
    unindexed: list[int] = []
    queue_last: dict[tuple[str, int], int] = {}
    index_end_phy = max((h["endPhyOffset"] for _, h in ctx.index_headers), default=None) if ctx else None
    check_queues = ctx is not None and ctx.has_consumequeue
    while True:
        left = size - pos
        if left == 0:
            end = {"kind": "end-of-file", "fileOffset": pos}
            break
        if left < 8:
            if _first_nonzero(buf, pos, size) is None:
                end = {"kind": "zero-tail", "fileOffset": pos}
                data_end = pos
            else:
                end = {"kind": "corrupt", "fileOffset": pos}
                problems.add("trailing_bytes", pos, f"{left} stray bytes at the end of the file")
                cut_problem = pos if cut_problem is None else cut_problem
            break
        total, magic = rmq.BLANK_RECORD_FAST.unpack_from(buf, pos)
        if magic == rmq.BLANK_MAGIC_CODE:
            end = {"kind": "blank", "fileOffset": pos, "totalSize": total}
            data_end = pos  # the BLANK record marks the end; it holds no message bytes
            if total != left:
                problems.add("blank_size", pos, f"BLANK end-of-file record says {total} bytes are left but "
                                                f"{left} are")
            break
        if magic == 0 and total == 0:
            after = _first_nonzero(buf, pos, size)
            end = {"kind": "zero-tail", "fileOffset": pos, "nonZeroAfter": after}
            if after is None:
                data_end = pos
                if pos == 0:
                    problems.add("empty_file", 0, "no messages: the file is all zeros (preallocated, never "
                                                  "written)", "info")
                else:
                    problems.add("zero_tail", pos, f"{size - pos} zero bytes after the last message "
                                                   "(preallocated space not written yet; no BLANK end record)",
                                 "info")
            else:
                data_end = (_last_nonzero(buf, after, size) or after) + 1
                problems.add("data_after_zeros", after, f"zero bytes from {pos} but data again at {after}: "
                                                        "a hole in the file (lost or torn write); RocketMQ "
                                                        f"stops reading at {pos}")
                cut_problem = pos if cut_problem is None else cut_problem
            break
        phy = start + pos
        if magic not in rmq.MESSAGE_VERSIONS:
            end = {"kind": "corrupt", "fileOffset": pos}
            problems.add("bad_magic", pos, f"illegal magic code 0x{magic & 0xFFFFFFFF:08x} where a message should "
                                           f"start (phyOffset {phy}); RocketMQ stops reading here")
            cut_problem = pos if cut_problem is None else cut_problem
            data_end = (_last_nonzero(buf, pos, size) or pos) + 1
            break
        try:
            msg = rmq.decode_message(buf, pos, end=size, file_from_offset=start, file=name, path=path,
                                     digests=False, decompress=deep)
        except TruncatedData:
            end = {"kind": "truncated", "fileOffset": pos, "totalSize": total}
            problems.add("truncated_message", pos, f"message of totalSize {total} (phyOffset {phy}) is cut off: "
                                                   f"only {left} bytes left in the file")
            cut_problem = pos if cut_problem is None else cut_problem
            data_end = (_last_nonzero(buf, pos, size) or pos) + 1
            break
        except CorruptData as exc:
            last = _last_nonzero(buf, pos, size)
            data_end = (last or pos) + 1
            if total >= rmq.MIN_MESSAGE_SIZE and last is not None and last < pos + total <= size:
                end = {"kind": "torn", "fileOffset": pos, "totalSize": total}
                problems.add("torn_message", pos, f"message of totalSize {total} (phyOffset {phy}) is zero from "
                                                  f"byte {last + 1} to the end of the file (torn write): "
                                                  f"{exc.message}")
            else:
                end = {"kind": "corrupt", "fileOffset": pos, "totalSize": total}
                problems.add("corrupt_message", pos, f"message at phyOffset {phy}: {exc.message}")
            cut_problem = pos if cut_problem is None else cut_problem
            break
        positions.append(pos)
        if msg["bodyLength"] > 0 and msg["bodyCRC"] != msg["bodyCRCComputed"]:
            problems.add("crc_mismatch", pos, f"body CRC stored {msg['bodyCRC']} but computed "
                                              f"{msg['bodyCRCComputed']} (phyOffset {phy}, topic {msg['topic']}, "
                                              f"KEYS {msg['KEYS']!r}); RocketMQ's recovery stops here")
            cut_problem = pos if cut_problem is None else cut_problem
        elif not msg["dispatch"]["success"]:
            problems.add("not_dispatchable", pos, f"message at phyOffset {phy}: {msg['dispatch'].get('reason')} "
                                                  "(checkMessageAndReturnSize fails; recovery stops here)")
            cut_problem = pos if cut_problem is None else cut_problem
        if msg["physicalOffsetField"] != phy:
            problems.add("physical_offset", pos, f"PHYSICALOFFSET field says {msg['physicalOffsetField']} but the "
                                                 f"message is at {phy}")
        if deep and "bodyDecompressError" in msg:
            problems.add("body_decompress", msg["bodyOffset"], f"compressed body at phyOffset {phy}: "
                                                               f"{msg['bodyDecompressError']}")
        tran = msg["transactionType"]
        if tran in _DISPATCHED_TRAN_TYPES:
            key = (msg["topic"], msg["queueId"])
            previous = queue_last.get(key)
            if previous is not None and msg["queueOffset"] != previous + 1:
                problems.add("queue_offset_sequence", pos,
                             f"{msg['topic']}/{msg['queueId']}: queueOffset {msg['queueOffset']} follows "
                             f"{previous} in this file", "info")
            queue_last[key] = msg["queueOffset"]
            if check_queues:
                bounds = ctx.cq_bounds(*key)
                if bounds is None or msg["queueOffset"] >= bounds[1]:
                    undispatched.append((phy, msg["topic"], msg["queueId"], msg["queueOffset"]))
        if (index_end_phy is not None and phy > index_end_phy and tran != rmq.TRANSACTION_ROLLBACK_TYPE
                and (msg["UNIQ_KEY"] is not None or msg["KEYS"])):
            unindexed.append(phy)
        pos += total
    if undispatched:
        phy, topic, qid, qoff = undispatched[0]
        problems.add("not_in_consumequeue", phy - start,
                     f"{len(undispatched)} message(s) are not in their ConsumeQueue, the first at phyOffset {phy} "
                     f"({topic}/{qid} queueOffset {qoff}): written but not dispatched before the broker stopped; "
                     "RocketMQ's recovery dispatches them", "info")
    if unindexed:
        problems.add("not_indexed", unindexed[0] - start,
                     f"{len(unindexed)} message(s) with keys lie after the newest index entry (endPhyOffset "
                     f"{index_end_phy}), the first at phyOffset {unindexed[0]}: not in any IndexFile; "
                     "RocketMQ's recovery indexes them only after an unclean shutdown", "info")
    return {"positions": positions, "messages": len(positions), "end": end, "cut_problem": cut_problem,
            "data_end": data_end, "first_phy": start + positions[0] if positions else None,
            "last_phy": start + positions[-1] if positions else None}


def _file_recovery(buf, size, start, name, scan: dict, ctx: StoreContext | None) -> dict:
    """What RocketMQ's recovery keeps of this file (see the module docstring)."""
    end = scan["end"]
    torn_at_end = end.get("kind") in ("truncated", "torn", "corrupt") and end.get("fileOffset") is not None
    if ctx is None:
        # a loose file: recovery as if it were the only file
        cut_pos = scan["cut_problem"] if scan["cut_problem"] is not None else (
            scan["end"]["fileOffset"] if scan["end"].get("kind") in ("blank", "zero-tail") else size)
        info = {"mode": "file alone", "stop_reason": scan["end"].get("kind"),
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
            cut_pos = size if scan["end"].get("kind") in ("blank", "end-of-file") or not checked else \
                scan["end"].get("fileOffset", size)
    positions = scan["positions"]
    lost_whole = sum(1 for p in positions if p >= cut_pos)
    torn = 1 if torn_at_end and scan["end"]["fileOffset"] >= cut_pos else 0
    data_end = scan["data_end"]
    result = {
        "valid_bytes": cut_pos,
        "bytes_lost": max(data_end - cut_pos, 0),
        "records_lost": lost_whole + torn,
        "torn_messages": torn,
        "deleted": deleted,
        "checked_by_recovery": checked,
        "rocketmq_loads": loads,
        **info,
    }
    return result


# --------------------------------------------------------------------------
# ConsumeQueue
# --------------------------------------------------------------------------


def verify_consumequeue(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = _Problems()
    p = Path(os.path.abspath(path))
    topic, queue_name = p.parent.parent.name, p.parent.name
    queue_id = int(queue_name) if queue_name.lstrip("-").isdigit() else None
    start = int(p.name) if p.name.isdigit() else 0
    siblings = rmq.list_mapped_files(p.parent)
    configured = _configured_size([(s, f.stat().st_size) for s, f in siblings]) or ctx.cq_file_size()
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
                after = _first_nonzero(buf, upos, size)
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
                problems: _Problems, beyond_cut: list) -> None:
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


# --------------------------------------------------------------------------
# IndexFile
# --------------------------------------------------------------------------


def verify_indexfile(path: str, deep: bool, ctx: StoreContext, hash_slot_num: int | None = None,
                     index_num: int | None = None) -> dict:
    problems = _Problems()
    try:
        view = rs.IndexFileView.open(path, hash_slot_num, index_num)
    except (CorruptData, ValueError) as exc:
        # the header does not record the geometry: an empty or damaged file may still be read
        # with the geometry of the store's other index files
        view = None
        if hash_slot_num is None and not isinstance(exc, TruncatedData):
            for geometry in ctx.index_geometries(exclude=os.path.basename(path)):
                try:
                    view = rs.IndexFileView.open(path, *geometry)
                except (CorruptData, ValueError):
                    continue
                problems.add("geometry", 0, f"{exc.message if isinstance(exc, SegtoolError) else exc}; read with "
                                            f"the geometry of the store's other index files ({geometry[0]}/"
                                            f"{geometry[1]})", "info")
                break
        if view is None:
            problems.add("geometry", getattr(exc, "offset", None), str(getattr(exc, "message", exc)))
            return {"problems": problems.result()}
    try:
        return _verify_index_view(view, path, deep, ctx, problems)
    finally:
        view.close()


def _verify_index_view(view: rs.IndexFileView, path: str, deep: bool, ctx: StoreContext, problems: _Problems) -> dict:
    hs, n = view.hash_slot_num, view.index_num
    buf = view.buf
    raw = rmq.read_index_header(buf, path)
    header = view.header
    count = raw["rawIndexCountField"]
    entries_at = view.entries_at
    slots = np.frombuffer(buf, dtype=rmq.INDEX_SLOT_DTYPE, count=hs, offset=rmq.INDEX_HEADER_SIZE).astype(np.int64)
    entries = np.frombuffer(buf, dtype=rmq.INDEX_ENTRY_DTYPE, count=n, offset=entries_at)
    key_hash = entries["keyHash"].astype(np.int64)
    phy = entries["phyOffset"].astype(np.int64)
    time_diff = entries["timeDiff"].astype(np.int64)
    prev = entries["prevIndex"].astype(np.int64)

    def entry_offset(i: int) -> int:
        return entries_at + i * rmq.INDEX_ENTRY_SIZE

    nonzero = (key_hash != 0) | (phy != 0) | (time_diff != 0) | (prev != 0)
    if nonzero[0]:
        problems.add("entry_zero_used", entry_offset(0), "entry 0 is never written by RocketMQ but is not zero")
    written = np.flatnonzero(nonzero[1:]) + 1
    last_written = int(written[-1]) if written.size else 0
    if count <= 0:
        problems.add("index_count", 36, f"indexCount {count}: RocketMQ reads it as 1 and sees no entries"
                     + (f", but entries 1..{last_written} are written" if last_written else ""))
        count = 1
    elif count > n:
        problems.add("index_count", 36, f"indexCount {count} exceeds the file's {n} entries")
    limit = min(count, n)  # entries 1..limit-1 are claimed
    claimed_last = limit - 1
    if last_written < claimed_last:
        problems.add("index_count", 36, f"indexCount {count} claims entries 1..{count - 1} but only 1..{last_written} "
                                        f"are written (entries {last_written + 1}..{count - 1} are zero)")
    elif last_written > claimed_last:
        problems.add("entries_beyond_index_count", 36,
                     f"entries up to {last_written} are written but indexCount {count} covers 1..{count - 1} "
                     "(header not flushed, or indexCount damaged): RocketMQ ignores them")
    w = min(last_written, claimed_last)  # entries 1..w are examined
    holes = np.flatnonzero(~nonzero[1:w + 1]) + 1
    if holes.size:
        problems.add("empty_entries", entry_offset(int(holes[0])),
                     f"{holes.size} zero entries among the written ones, the first is entry {int(holes[0])}")
    idx = np.arange(n, dtype=np.int64)
    live = np.zeros(n, dtype=bool)
    live[1:w + 1] = nonzero[1:w + 1]

    # ---- keys and the slot table ----
    negative = np.flatnonzero(live & (key_hash < 0))
    for i in negative[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add("negative_key_hash", entry_offset(i), f"entry {i} keyHash {int(key_hash[i])} is negative "
                                                           "(indexKeyHashMethod never gives one)")
    entry_slot = np.where(key_hash >= 0, key_hash % hs, -1)
    used = np.flatnonzero(slots != 0)
    for s in used.tolist():
        v = int(slots[s])
        if v < 0 or v > max(w, last_written) or (v >= count and last_written <= claimed_last):
            problems.add("slot_out_of_range", rmq.INDEX_HEADER_SIZE + 4 * s,
                         f"slot {s} points at entry {v}, outside the written entries 1..{w}")
        elif v <= w and entry_slot[v] != s:
            problems.add("slot_hash_mismatch", rmq.INDEX_HEADER_SIZE + 4 * s,
                         f"slot {s} points at entry {v} whose keyHash {int(key_hash[v])} belongs to slot "
                         f"{int(entry_slot[v])}")
    non_empty = int(used.size)
    if header["hashSlotCount"] != non_empty:
        problems.add("hash_slot_count", 32, f"header hashSlotCount {header['hashSlotCount']} but {non_empty} slots "
                                            "are in use", "info")

    # ---- hash chains (prevIndex) ----
    live_idx = np.flatnonzero(live)
    p = prev[live_idx]
    bad_neg = live_idx[p < 0]
    for i in bad_neg[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add("prev_out_of_range", entry_offset(i) + 16, f"entry {i} prevIndex {int(prev[i])} is negative")
    self_loops = live_idx[p == live_idx]
    for i in self_loops.tolist():
        problems.add("prev_self_loop", entry_offset(i) + 16,
                     f"entry {i} (slot {int(entry_slot[i])}) has prevIndex pointing at itself: RocketMQ's "
                     "selectPhyOffset stops there, the older entries of the chain are never reached")
    forward = live_idx[(p > live_idx)]
    for i in forward.tolist():
        target = int(prev[i])
        if target > w:
            problems.add("prev_out_of_range", entry_offset(i) + 16,
                         f"entry {i} prevIndex {target} is past the written entries 1..{w}")
            continue
        cycle = _cycle_through(prev, i, count, w)
        slot = int(entry_slot[i])
        if cycle:
            hashes = {int(key_hash[j]) for j in cycle}
            problems.add("prev_cycle", entry_offset(i) + 16,
                         f"entry {i} (slot {slot}) prevIndex {target} points forward and closes a cycle of "
                         f"{len(cycle)} entries: RocketMQ's selectPhyOffset repeats the cycle's matches until maxNum, "
                         f"and never returns for a key of slot {slot} whose hash matches none of the cycle's "
                         f"{len(hashes)} hash(es)")
        else:
            problems.add("prev_forward_pointer", entry_offset(i) + 16,
                         f"entry {i} (slot {slot}) prevIndex {target} points forward (chains only point back)")
    back = (p > 0) & (p < live_idx)
    bi = live_idx[back]
    bp = p[back]
    crossing = bi[(entry_slot[bp] != entry_slot[bi]) & (entry_slot[bi] >= 0)]
    for i in crossing[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add("chain_crosses_slots", entry_offset(i) + 16,
                     f"entry {i} (slot {int(entry_slot[i])}) links to entry {int(prev[i])} of slot "
                     f"{int(entry_slot[int(prev[i])])}")
    unreachable = _unreachable(slots, prev, live, count, w)
    if unreachable.size:
        problems.add("unreachable_entries", entry_offset(int(unreachable[0])),
                     f"{unreachable.size} written entries cannot be reached from their slot by RocketMQ's "
                     f"chain walk (the first is entry {int(unreachable[0])}): lookups miss them")

    # ---- header against the entries ----
    begin_ts, end_ts = header["beginTimestamp"], header["endTimestamp"]
    if w >= 1:
        if header["beginPhyOffset"] != int(phy[1]):
            problems.add("header_begin_phy_offset", 16, f"beginPhyOffset {header['beginPhyOffset']} but entry 1 is "
                                                        f"phyOffset {int(phy[1])}")
        if w == claimed_last and header["endPhyOffset"] != int(phy[w]):
            problems.add("header_end_phy_offset", 24, f"endPhyOffset {header['endPhyOffset']} but the last entry "
                                                      f"({w}) is phyOffset {int(phy[w])}")
        if end_ts < begin_ts:
            problems.add("header_timestamps", 8, f"endTimestamp {end_ts} is before beginTimestamp {begin_ts}")
        elif w >= 2 and w == claimed_last:
            want = (end_ts - begin_ts) // 1000
            if int(time_diff[w]) != min(want, rs.INT_MAX):
                problems.add("header_end_timestamp", 8,
                             f"endTimestamp {end_ts} is {want} s after beginTimestamp but the last entry's "
                             f"timeDiff is {int(time_diff[w])} s")
        td = time_diff[2:w + 1]
        bad_td = np.flatnonzero((td < 0) | (td > max((end_ts - begin_ts) // 1000, 0))) + 2
        if bad_td.size:
            i = int(bad_td[0])
            problems.add("entry_time_outside_header", entry_offset(i) + 12,
                         f"{bad_td.size} entries have a timeDiff outside the header's time span, the first is entry "
                         f"{i} ({int(time_diff[i])} s)")
        ph = phy[1:w + 1]
        order = np.flatnonzero(np.diff(ph) < 0) + 2
        if order.size:
            i = int(order[0])
            problems.add("entries_out_of_order", entry_offset(i) + 4,
                         f"{order.size} entries have a phyOffset below the previous entry's, the first is entry {i} "
                         f"({int(phy[i])} after {int(phy[i - 1])})")
        outside = np.flatnonzero((ph < header["beginPhyOffset"]) | (ph > header["endPhyOffset"])) + 1
        if outside.size and not order.size:
            i = int(outside[0])
            problems.add("entry_phy_outside_header", entry_offset(i) + 4,
                         f"{outside.size} entries point outside [beginPhyOffset, endPhyOffset], the first is entry "
                         f"{i} ({int(phy[i])})")

    # ---- against the CommitLog ----
    result = {"geometry": {"hashSlotNum": hs, "indexNum": n, "source": view.geometry_source},
              "header": dict(header), "entries": w, "non_empty_slots": non_empty}
    log = ctx.commitlog
    if log is None:
        problems.add("no_commitlog", None, "no CommitLog beside this index: entries not checked against "
                                           "messages", "info")
        result["entries_checked"] = 0
    elif w >= 1:
        result["entries_checked"] = _entries_vs_commitlog(
            log, ctx, view, w, deep, key_hash, phy, time_diff, entry_offset, problems)
    else:
        result["entries_checked"] = 0

    # ---- what RocketMQ's recovery does with this file ----
    if ctx.abort and ctx.checkpoint is not None:
        limit = ctx.checkpoint["indexMsgTimestamp"]
        if end_ts > limit:
            problems.add("dropped_by_recovery", 8,
                         f"unclean shutdown (abort file): endTimestamp {end_ts} is after the checkpoint's "
                         f"indexMsgTimestamp {limit}, so RocketMQ's recovery deletes this file and re-indexes "
                         "its messages from the CommitLog", "info")
    return {**result, "problems": problems.result()}


def _cycle_through(prev: np.ndarray, start: int, count: int, w: int) -> list[int] | None:
    """The cycle RocketMQ's walk enters from entry ``start`` (bounded walk), or None."""
    seen: dict[int, int] = {}
    order = []
    current = start
    for _ in range(w + 2):
        if current in seen:
            return order[seen[current]:]
        seen[current] = len(order)
        order.append(current)
        nxt = int(prev[current])
        if nxt <= 0 or nxt > count or nxt == current or nxt > w:
            return None
        current = nxt
    return None


def _unreachable(slots: np.ndarray, prev: np.ndarray, live: np.ndarray, count: int, w: int) -> np.ndarray:
    """Live entries no chain walk from a slot reaches (following valid prevIndex links)."""
    reached = np.zeros(len(live), dtype=bool)
    frontier = slots[(slots > 0) & (slots <= w) & (slots < count)]
    frontier = np.unique(frontier)
    steps = 0
    while frontier.size and steps <= w + 1:
        frontier = frontier[~reached[frontier]]
        reached[frontier] = True
        nxt = prev[frontier]
        ok = (nxt > 0) & (nxt <= w) & (nxt < count) & (nxt != frontier)
        frontier = np.unique(nxt[ok])
        steps += 1
    return np.flatnonzero(live & ~reached)


def _message_key_hashes(msg: dict) -> set[int]:
    topic = msg["topic"]
    keys = set()
    if msg["UNIQ_KEY"] is not None:
        keys.add(rmq.index_key_hash(rmq.index_key(topic, msg["UNIQ_KEY"])))
    if msg["KEYS"]:
        for token in msg["KEYS"].split(" "):
            if token:
                keys.add(rmq.index_key_hash(rmq.index_key(topic, token)))
    return keys


def _entries_vs_commitlog(log, ctx: StoreContext, view, w: int, deep: bool, key_hash, phy, time_diff, entry_offset,
                          problems: _Problems) -> int:
    header = view.header
    begin_ts = header["beginTimestamp"]
    if deep or w <= INDEX_CHECK_LIMIT:
        chosen = range(1, w + 1)
    else:
        chosen = sorted(set(np.linspace(1, w, INDEX_CHECK_LIMIT).astype(np.int64).tolist()) | {1, w})
    cut = ctx.recovery["maxPhyOffset"] if ctx.cl_files else None
    cache: dict[int, dict | str | None] = {}
    beyond = []
    checked = 0
    for i in chosen:
        offset = int(phy[i])
        checked += 1
        if offset not in cache:
            try:
                cache[offset] = log.message_at(offset, digests=False, decompress=False)
            except CorruptData as exc:
                cache[offset] = exc.message
        msg = cache[offset]
        where = f"entry {i} (phyOffset {offset})"
        if msg is None or isinstance(msg, str):
            problems.add("entry_points_nowhere", entry_offset(i) + 4,
                         f"{where}: no message there" + (f" ({msg})" if msg else ""))
            continue
        if cut is not None and offset >= cut:
            beyond.append(i)
        if int(key_hash[i]) not in _message_key_hashes(msg):
            problems.add("entry_key_mismatch", entry_offset(i),
                         f"{where}: keyHash {int(key_hash[i])} is not the hash of any key of the message there "
                         f"(topic {msg['topic']}, UNIQ_KEY {msg['UNIQ_KEY']}, KEYS {msg['KEYS']!r})")
        if msg["transactionType"] == rmq.TRANSACTION_ROLLBACK_TYPE:
            problems.add("entry_rollback_message", entry_offset(i), f"{where}: a ROLLBACK message is never indexed")
        store_ts = msg["storeTimestamp"]
        if i == 1:
            if store_ts != begin_ts:
                problems.add("header_begin_timestamp", 0, f"beginTimestamp {begin_ts} but entry 1's message was "
                                                          f"stored at {store_ts}")
        else:
            want = rs._java_div(store_ts - begin_ts, 1000) if begin_ts > 0 else 0
            want = rs.INT_MAX if want > rs.INT_MAX else max(want, 0)
            if int(time_diff[i]) != want:
                problems.add("entry_time_mismatch", entry_offset(i) + 12,
                             f"{where}: timeDiff {int(time_diff[i])} s but the message was stored {want} s after "
                             "beginTimestamp")
        if i == w and w == min(view.index_count, view.index_num) - 1 and store_ts != header["endTimestamp"]:
            problems.add("header_end_timestamp", 8, f"endTimestamp {header['endTimestamp']} but the last entry's "
                                                    f"message was stored at {store_ts}")
    if beyond:
        problems.add("beyond_recovery_point", entry_offset(beyond[0]) + 4,
                     f"{len(beyond)} entries point at or after phyOffset {cut}, where RocketMQ's recovery cuts the "
                     "CommitLog: the index keeps them, so lookups return offsets the broker cannot read", "info")
    return checked


# --------------------------------------------------------------------------
# checkpoint
# --------------------------------------------------------------------------


def verify_checkpoint(path: str, deep: bool, ctx: StoreContext) -> dict:
    problems = _Problems()
    with rmq.MappedFile(path) as mf:
        try:
            cp = rmq.read_checkpoint(mf.buf, path)
        except TruncatedData as exc:
            problems.add("checkpoint_size", exc.offset, exc.message)
            return {"problems": problems.result()}
    fields = (("physicMsgTimestamp", 0, "CommitLog"), ("logicsMsgTimestamp", 8, "ConsumeQueue"),
              ("indexMsgTimestamp", 16, "IndexFile"))
    last = ctx.data_end_timestamp
    index_ends = [h["endTimestamp"] for _, h in ctx.index_headers]
    for name, offset, what in fields:
        value = cp[name]
        if value < 0:
            problems.add("checkpoint_timestamp", offset, f"{name} {value} is negative")
        elif value == 0:
            problems.add("checkpoint_timestamp", offset, f"{name} is 0: the {what} was never flushed", "info")
        elif last is not None and value > last:
            problems.add("checkpoint_ahead_of_data", offset,
                         f"{name} {value} is later than the newest message in the CommitLog ({last}): data the "
                         f"broker had flushed ({value - last} ms of it) is missing")
    if index_ends and cp["indexMsgTimestamp"] > max(index_ends):
        problems.add("checkpoint_ahead_of_index", 16,
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
        problems.add("unclean_shutdown", None, "abort file present: the broker did not shut down cleanly" + where,
                     "info")
        if last is not None:
            behind = last - min(cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"])
            if behind > 0:
                problems.add("stale_checkpoint", 0, f"the checkpoint is {behind} ms behind the newest message "
                                                    f"({last}): messages after it were not flushed when the broker "
                                                    "stopped (recovery re-reads them)", "info")
    elif recovery is not None and not recovery["rocketmqLoads"]:
        problems.add("store_does_not_load", None, "RocketMQ refuses to load this store: CommitLog file(s) "
                                                  f"{', '.join(recovery['wrongSizeFiles'])} do not have the "
                                                  "configured size", "info")
    out = {"checkpoint": cp, "problems": problems.result()}
    if recovery is not None:
        out["store_recovery"] = recovery
    return out


# --------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------


def verify_rocketmq_file(detected, deep: bool = False, *, commitlog_dir=None, hash_slot_num: int | None = None,
                         index_num: int | None = None) -> dict:
    """Check one RocketMQ store file (see the module docstring).

    ``commitlog_dir`` points an index-only or queue-only copy at a CommitLog;
    ``hash_slot_num`` / ``index_num`` give the IndexFile geometry (inferred
    otherwise).
    """
    root = _store_root(detected)
    ctx = store_context(root, Path(commitlog_dir) if commitlog_dir is not None else None)
    checks = {"rocketmq-commitlog": lambda: verify_commitlog(detected.path, deep, ctx),
              "rocketmq-consumequeue": lambda: verify_consumequeue(detected.path, deep, ctx),
              "rocketmq-indexfile": lambda: verify_indexfile(detected.path, deep, ctx, hash_slot_num, index_num),
              "rocketmq-checkpoint": lambda: verify_checkpoint(detected.path, deep, ctx)}
    if detected.kind not in checks:
        return {"problems": [], "status": "skipped", "reason": NOT_RECOGNISED}
    # the checks keep RocketMQ's field names; the report speaks snake_case like every output
    return snake_case_keys(checks[detected.kind]())
