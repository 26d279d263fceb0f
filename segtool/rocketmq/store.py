"""A RocketMQ store directory as the broker sees it: key lookups, queue lookups, index recovery.

``StoreView`` answers what ``DefaultMessageStore`` answers after ``load()``:

* key lookups (``IndexService.queryOffset`` over the index files newest first,
  ``IndexFile.selectPhyOffset`` / ``isTimeMatched``), each candidate resolved in
  the CommitLog (``lookMessageByOffset``) and hash collisions flagged, plus
  ``DefaultMessageStore.queryMessage``'s answer;
* ConsumeQueue lookups (``getCommitLogOffsetInQueue`` / ``ConsumeQueue.getIndexBuffer``);
* after an unclean shutdown (an ``abort`` file), the index as RocketMQ 4.9's
  abnormal recovery leaves it: ``IndexService.load(lastExitOK=false)`` drops
  index files newer than the checkpoint's ``indexMsgTimestamp`` and
  ``CommitLog.recoverAbnormally`` re-dispatches the CommitLog through
  ``IndexService.buildIndex``.  The rebuilt files live in memory only (anonymous
  or copy-on-write maps): the evidence is never written.

``build_index_files`` is that index builder on its own (``IndexService.buildIndex``
+ ``IndexFile.putKey``), reusable to write IndexFiles; ``reput_dispatches`` /
``commitlog_recovery`` produce its input from a CommitLog.

RocketMQ's loop ``selectPhyOffset`` has no cycle guard: a ``prevIndex`` cycle
whose entries never match spins forever.  Here a walk that comes back to an
entry without having collected anything since its last visit is stopped and
reported with ``terminated: False`` (RocketMQ never returns there); a cycle
that does produce results is walked like RocketMQ does, until ``maxNum``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import numpy as np

from segtool.errors import SegtoolError
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq.message_shape import message_json
from segtool.source import release_pages
from segtool.formats.outcomes import WalkEnd
from segtool.rocketmq import names as rocketmq_names

MAX_MSGS_NUM_BATCH = 64  # MessageStoreConfig.maxMsgsNumBatch
LONG_MAX = 2**63 - 1
QUERY_MESSAGE_ROUNDS = 3  # DefaultMessageStore.queryMessage
CHECKPOINT_SAFETY_MS = 3000  # StoreCheckpoint.getMinTimestamp subtracts 3 s

# --------------------------------------------------------------------------
# Dispatch requests and the index builder (IndexService.buildIndex)
# --------------------------------------------------------------------------


class DispatchRequest(NamedTuple):
    """What ``CommitLog.checkMessageAndReturnSize`` hands the index dispatcher."""

    commit_log_offset: int  # the record's PHYSICALOFFSET field
    store_timestamp: int
    sys_flag: int
    topic: str
    keys: str | None
    uniq_key: str | None
    msg_size: int = 0
    queue_id: int = -1  # where CommitLogDispatcherBuildConsumeQueue puts it (-1: not known)
    queue_offset: int = -1


class FeedStop(StrEnum):
    """Where a CommitLog feed stops reading (``DispatchFeed.stopped`` and ``skipped`` kinds)."""

    END_OF_FILE = "end_of_file"  # the file's last message ends at its end (or only a few bytes follow)
    BLANK = "blank"  # the BLANK record: the feed goes on in the next file
    ZERO_TAIL = "zero_tail"  # zeros where a message should start ("illegal magic code 0x0")
    CORRUPT = "corrupt"  # a record the walk cannot read
    FAILED = "failed"  # a message checkMessageAndReturnSize refuses (body CRC, properties)
    LAST_FILE = "last_file"  # the feed read on to the end of the last file
    NO_COMMITLOG = "no_commitlog"  # no CommitLog file to recover


@dataclass
class DispatchFeed:
    """Where a CommitLog feed stopped, filled while it is iterated."""

    mode: str
    start_file: str | None = None
    dispatched: int = 0
    stopped: dict | None = None  # {"kind": FeedStop, "phyOffset", "file", "reason"}
    skipped: list = field(default_factory=list)  # reput mode: data skipped after an error


def _dispatch_from(msg: dict, check_crc: bool) -> tuple[DispatchRequest | None, str | None]:
    d = msg["dispatch"]
    if not d["success"]:
        if d.get("reason") == "CRC check failed" and not check_crc:
            try:
                _, keys, uniq = rmq.dispatch_info(msg["topic"], msg["properties"] or None, msg["storeTimestamp"])
            except ValueError:
                return None, "bad DELAY property"
            d = {"keys": keys, "uniqKey": uniq, "commitLogOffset": msg["physicalOffsetField"]}
        else:
            return None, d.get("reason", "dispatch failed")
    return DispatchRequest(d["commitLogOffset"], msg["storeTimestamp"], msg["sysFlag"], msg["topic"],
                           d["keys"], d["uniqKey"], msg["totalSize"], msg["queueId"], msg["queueOffset"]), None


# how a walk's end reads to the dispatch feeds (any other end is damage: CORRUPT)
_FEED_END_KINDS = {WalkEnd.END_OF_FILE: FeedStop.END_OF_FILE, WalkEnd.SHORT_TAIL: FeedStop.END_OF_FILE,
                   WalkEnd.BLANK: FeedStop.BLANK, WalkEnd.ZERO_TAIL: FeedStop.ZERO_TAIL}


def _file_dispatches(buf, start: int, name: str, path: str, check_crc: bool, position: int = 0) -> Iterator[tuple]:
    """("msg", DispatchRequest) per message of one CommitLog file from byte ``position``, then one
    ("end", FeedStop, pos, reason): the walk's end, or FAILED at a message the dispatcher refuses."""
    for step in rmq.walk_commitlog(buf, file_from_offset=start, file=name, path=path, start=position, digests=False,
                                   decompress=False):
        if isinstance(step, rmq.CommitLogEnd):
            kind = _FEED_END_KINDS.get(step.kind, FeedStop.CORRUPT)
            reason = step.error.message if step.error is not None else (
                "illegal magic code 0x0" if kind is FeedStop.ZERO_TAIL else None)
            yield ("end", kind, step.file_offset, reason)
            return
        request, reason = _dispatch_from(step, check_crc)
        if request is None:
            yield ("end", FeedStop.FAILED, step["fileOffset"], reason)
            return
        yield ("msg", request)


_SCHEDULE_TOPIC_BYTES = rmq.SCHEDULE_TOPIC.encode()


def _scheduled(columns: rmq.MessageColumns) -> list[int]:
    """The indexes of the columns' SCHEDULE_TOPIC_XXXX messages."""
    width = len(_SCHEDULE_TOPIC_BYTES)
    return [i for i in np.flatnonzero(columns.topic_length == width).tolist()
            if columns.buf[int(columns.topic_at[i]):int(columns.topic_at[i]) + width] == _SCHEDULE_TOPIC_BYTES]


_SYSFLAG_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("sysFlag")
_SYSFLAG = rmq.MESSAGE_PREFIX_FAST.field("sysFlag")
_HOSTS_V6 = rmq.BORNHOST_V6_FLAG | rmq.STOREHOSTADDRESS_V6_FLAG


def _columns_layout_at(buf, pos: int) -> bool:
    """Is the record at ``pos`` in the layout ``MessageColumns`` reads (the v1 magic code, IPv4 hosts)?"""
    if pos + rmq.MESSAGE_PREFIX_FAST.size > len(buf) or \
            rmq.BLANK_RECORD_FAST.unpack_from(buf, pos)[1] != rmq.MESSAGE_MAGIC_CODE:
        return False
    return not _SYSFLAG.unpack_from(buf, pos + _SYSFLAG_AT)[0] & _HOSTS_V6


def _file_dispatch_counts(buf, start: int, name: str, path: str, check_crc: bool) -> Iterator[tuple]:
    """``_file_dispatches`` counted instead of built: ("msgs", n) per run of messages the dispatcher takes, then
    the same ("end", ...).  A plain message (``MessageColumns``: body CRC holds, fields add up) is dispatched
    unless checkMessageAndReturnSize's parse of its DELAY level throws, which only a SCHEDULE_TOPIC_XXXX
    message's can: plain runs are counted a span at a time, those messages and anything that is not plain
    go through ``_file_dispatches``, which walks on until a record in the columns' layout comes again."""
    pos = released = 0
    while True:
        if pos - released > _RELEASE_EVERY:
            released = release_pages(buf, released, pos)
        columns = rmq.MessageColumns(buf, pos)
        for i in _scheduled(columns):
            step = next(_file_dispatches(buf, start, name, path, check_crc, int(columns.positions[i])))
            if step[0] == "end":
                if i:
                    yield ("msgs", i)
                yield step
                return
        if columns.count:
            yield ("msgs", columns.count)
        pos = columns.stop
        for step in _file_dispatches(buf, start, name, path, check_crc, pos):
            if step[0] == "end":
                yield step
                return
            yield ("msgs", 1)
            pos += step[1].msg_size
            if _columns_layout_at(buf, pos):
                break


_RELEASE_EVERY = 16 * 1024 * 1024


def _recovery_items(commitlog, checkpoint: dict | None, abnormal: bool, feed: DispatchFeed,
                    file_items: Callable[..., Iterator[tuple]]) -> Iterator[tuple]:
    """The CommitLog recovery's walk (``commitlog_recovery``) over each file's ``file_items(buf, start, name,
    path)``: yields their message items and sets ``feed.start_file`` and ``feed.stopped``."""
    files = rmq.list_mapped_files(commitlog) if Path(commitlog).exists() else []
    if not files:
        feed.stopped = {"kind": FeedStop.NO_COMMITLOG, "phyOffset": None, "file": None, "fileOffset": None,
                        "reason": None}
        return
    index = max(len(files) - 3, 0)
    if abnormal:
        checkpoint = checkpoint or {}
        min_ts = min(checkpoint.get("physicMsgTimestamp", 0), checkpoint.get("logicsMsgTimestamp", 0))
        min_ts = max(min_ts - CHECKPOINT_SAFETY_MS, 0)
        index = 0
        for i in range(len(files) - 1, -1, -1):
            if _matched_recover(files[i][1], min_ts):
                index = i
                break
    feed.start_file = files[index][1].name
    cut = files[index][0]
    for start, file_path in files[index:]:
        with rmq.MappedFile(file_path) as mf:
            for item in file_items(mf.buf, start, file_path.name, str(file_path)):
                if item[0] != "end":
                    yield item
                    continue
                _, kind, pos, reason = item
                cut = start + pos
                if kind is not FeedStop.BLANK:
                    feed.stopped = {"kind": kind, "phyOffset": cut, "file": file_path.name, "fileOffset": pos,
                                    "reason": reason}
                    return
                break
    # a BLANK record in the last file: recovery ends there
    feed.stopped = {"kind": FeedStop.LAST_FILE, "phyOffset": cut, "file": files[-1][1].name,
                    "fileOffset": cut - files[-1][0], "reason": None}


def commitlog_recovery(commitlog, checkpoint: dict | None, *, abnormal: bool = True, check_crc: bool = True,
                       feed: DispatchFeed | None = None) -> Iterator[DispatchRequest]:
    """The messages RocketMQ 4.9's CommitLog recovery dispatches, in order.

    ``recoverAbnormally`` starts at the last file whose first message's
    storeTimestamp is <= ``StoreCheckpoint.getMinTimestamp()`` (min(physic,
    logics) - 3 s), or the first file; ``recoverNormally`` at the third file
    from the end.  A BLANK record moves to the next file; anything else that is
    not a dispatchable message (zeros, bad magic, CRC mismatch with
    checkCRCOnRecover, bad sizes) ends the recovery.  ``feed.stopped`` says
    where (its ``phyOffset`` is the cut, ``maxPhyOffset``), ``feed.start_file``
    where it began.
    """
    feed = feed if feed is not None else DispatchFeed("recover")
    for _, request in _recovery_items(commitlog, checkpoint, abnormal, feed, lambda buf, start, name, path:
                                      _file_dispatches(buf, start, name, path, check_crc)):
        feed.dispatched += 1
        yield request


def commitlog_recovery_feed(commitlog, checkpoint: dict | None, *, abnormal: bool = True,
                            check_crc: bool = True) -> DispatchFeed:
    """The ``DispatchFeed`` ``commitlog_recovery`` leaves (where it starts and stops, how many messages it
    dispatches) without building its requests: for where recovery cuts, at the pace of the bulk reader."""
    feed = DispatchFeed("recover")
    for _, count in _recovery_items(commitlog, checkpoint, abnormal, feed, lambda buf, start, name, path:
                                    _file_dispatch_counts(buf, start, name, path, check_crc)):
        feed.dispatched += count
    return feed


def _matched_recover(path: Path, min_ts: int) -> bool:
    """``CommitLog.isMappedFileMatchedRecover`` (messageIndexSafe=false)."""
    with rmq.MappedFile(path) as mf:
        header = rmq.message_header(mf.buf)
    if header is None:
        return False
    store_ts = header["storeTimestamp"]
    return store_ts != 0 and store_ts <= min_ts


def reput_dispatches(commitlog, from_offset: int | None = None, *,
                     feed: DispatchFeed | None = None) -> Iterator[DispatchRequest]:
    """The messages ``ReputMessageService.doReput`` dispatches from ``from_offset``
    (default: the first file), with ``checkMessageAndReturnSize(checkCRC=false,
    readBody=false)``: body CRCs are not checked; a BLANK record moves to the
    next file; a record that cannot be dispatched makes a master skip the rest
    of its file (recorded in ``feed.skipped``)."""
    feed = feed if feed is not None else DispatchFeed("reput")
    files = rmq.list_mapped_files(commitlog)
    for start, file_path in files:
        with rmq.MappedFile(file_path) as mf:
            if from_offset is not None and start + mf.size <= from_offset:
                continue
            if feed.start_file is None:
                feed.start_file = file_path.name
            buf = mf.buf
            skip = 0 if from_offset is None or from_offset <= start else from_offset - start
            view = memoryview(buf)[skip:] if skip else buf
            try:
                for item in _file_dispatches(view, start + skip, file_path.name, str(file_path), False):
                    if item[0] == "msg":
                        feed.dispatched += 1
                        yield item[1]
                        continue
                    _, kind, pos, reason = item
                    if kind in (FeedStop.CORRUPT, FeedStop.FAILED):
                        feed.skipped.append({"kind": kind, "phyOffset": start + skip + pos,
                                             "file": file_path.name, "reason": reason})
                    elif kind is FeedStop.ZERO_TAIL:
                        feed.stopped = {"kind": kind, "phyOffset": start + skip + pos, "file": file_path.name,
                                        "reason": reason}
            finally:
                if skip:
                    view.release()
    if feed.stopped is None:
        feed.stopped = {"kind": FeedStop.LAST_FILE, "phyOffset": None, "file": files[-1][1].name if files else None,
                        "reason": None}


def index_file_name(timestamp_ms: int, previous: str | None = None, *, local_time: bool = False) -> str:
    """``UtilAll.timeMillisToHumanString`` (yyyyMMddHHmmssSSS) of ``timestamp_ms``, bumped by 1 ms
    to sort after ``previous``.  RocketMQ formats in the broker's time zone (``local_time``); UTC
    names a rebuild's files the same on every machine."""
    seconds, millis = divmod(int(timestamp_ms), 1000)
    name = time.strftime("%Y%m%d%H%M%S", (time.localtime if local_time else time.gmtime)(seconds)) + f"{millis:03d}"
    if previous is not None and previous.isdigit() and len(previous) == len(name) and name <= previous:
        name = str(int(previous) + 1)
    return name


def index_file_name_now(previous: str | None = None) -> str:
    """The name RocketMQ gives an IndexFile it creates now (local wall clock)."""
    return index_file_name(int(time.time() * 1000), previous, local_time=True)


@dataclass
class IndexBuild:
    """The result of ``build_index_files``."""

    files: list  # every rmq.IndexFile, oldest first (existing ones included)
    created: list  # the files created by the build (rmq.IndexFile, in memory)
    appended: rmq.IndexFile | None = None  # an existing file the build appended to (copy-on-write)
    requests: int = 0  # dispatch requests seen
    indexed_messages: int = 0  # requests that produced at least one entry
    entries_written: int = 0
    skipped_before_end: int = 0  # commitLogOffset < endPhyOffset of the current file
    skipped_rollback: int = 0

    def stats(self) -> dict:
        return {"requests": self.requests, "indexedMessages": self.indexed_messages,
                "entriesWritten": self.entries_written, "skippedBeforeEndPhyOffset": self.skipped_before_end,
                "skippedRollback": self.skipped_rollback, "created": [f.name for f in self.created],
                "appendedTo": self.appended.name if self.appended else None}


def build_index_files(dispatches: Iterable[DispatchRequest], hash_slot_num: int, index_num: int, *,
                      existing: list[rmq.IndexFile] | None = None,
                      name_for: Callable[[str | None], str] = index_file_name_now) -> IndexBuild:
    """``IndexService.buildIndex`` for each request, in memory.

    ``existing`` are the index files already loaded (oldest first); when the
    newest is not full, it is appended to through a copy-on-write map (the file
    on disk is never written).  New files are created as RocketMQ's
    ``getAndCreateLastIndexFile`` does: seeded with the previous file's
    endPhyOffset/endTimestamp, named by ``name_for(previous_name)``.
    Per request: skipped when commitLogOffset < the current file's
    endPhyOffset or the transaction type is ROLLBACK; otherwise UNIQ_KEY, then
    every non-empty space-separated KEYS token, is put as ``topic#key``.
    Call ``rmq.IndexFile.to_bytes`` / ``write`` on ``created`` to get the files.
    """
    if hash_slot_num <= 0 or index_num <= 0:
        raise ValueError("hash_slot_num and index_num must be positive")
    files = list(existing or [])
    build = IndexBuild(files=files, created=[])

    def last_file() -> rmq.IndexFile:
        # IndexService.getAndCreateLastIndexFile: the newest file unless it is full
        if files and not files[-1].is_write_full():
            return files[-1]
        prev = files[-1] if files else None
        created = rmq.IndexFile.create(name_for(prev.name if prev else None), hash_slot_num, index_num,
                                       prev.end_phy_offset if prev else 0, prev.end_timestamp if prev else 0)
        files.append(created)
        build.created.append(created)
        return created

    def put(index_file: rmq.IndexFile, request: DispatchRequest, key: str) -> rmq.IndexFile:
        while True:
            if index_file.origin == "disk":  # first write to a loaded file: copy-on-write from here on
                index_file = index_file.writable_copy()
                files[-1] = build.appended = index_file
            if index_file.put_key(key, request.commit_log_offset, request.store_timestamp):
                build.entries_written += 1
                return index_file
            index_file = last_file()

    for request in dispatches:
        build.requests += 1
        index_file = last_file()
        if request.commit_log_offset < index_file.end_phy_offset:
            build.skipped_before_end += 1
            continue
        if request.sys_flag & rmq.TRANSACTION_ROLLBACK_TYPE == rmq.TRANSACTION_ROLLBACK_TYPE:
            build.skipped_rollback += 1
            continue
        topic = request.topic
        before = build.entries_written
        if request.uniq_key is not None:
            index_file = put(index_file, request, f"{topic}#{request.uniq_key}")
        keys = request.keys
        if keys:
            for token in keys.split(" "):
                if token:
                    index_file = put(index_file, request, f"{topic}#{token}")
        if build.entries_written > before:
            build.indexed_messages += 1
    for f in build.created:
        f.flush_header()
    if build.appended is not None:
        build.appended.flush_header()
    return build


# --------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------


def _message_view(msg: dict, commitlog_dir) -> dict:
    """A message as every command shows it: ``dump``'s message item (snake_case, the file's full path)."""
    return {"kind": "message", **message_json(msg), "file": str(Path(commitlog_dir) / msg["file"])}


def carries_key(msg: dict, topic: str, key: str) -> bool:
    """Does the message carry ``topic#key`` as IndexService.buildIndex would index it?"""
    if msg["topic"] != topic:
        return False
    if msg.get("uniq_key") == key:
        return True
    keys = msg.get("keys")
    return bool(keys) and bool(key) and key in keys.split(" ")


class StoreView:
    """A RocketMQ store root (``commitlog/``, ``consumequeue/``, ``index/``, ``checkpoint``, ``abort``).

    ``hash_slot_num`` / ``index_num`` give the index geometry (the IndexFile
    header does not record it); without them each file's is inferred.
    ``recover``: None = as RocketMQ would (abnormal recovery when ``abort``
    exists), True / False to force.  ``commitlog_dir`` overrides where the
    CommitLog is (for an index-only copy).  Nothing is read until used; the
    index (and its recovery) is loaded once, on first use.
    """

    def __init__(self, store_dir, hash_slot_num: int | None = None, index_num: int | None = None, *,
                 recover: bool | None = None, commitlog_dir=None, check_crc_on_recover: bool = True):
        root = rocketmq_names.store_directory(store_dir)
        if (hash_slot_num is None) != (index_num is None):
            raise ValueError("give both hash_slot_num and index_num, or neither")
        self.root = root
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.index_dir = root / rocketmq_names.INDEX_DIR
        self.commitlog_dir = Path(commitlog_dir) if commitlog_dir is not None else root / rocketmq_names.COMMITLOG_DIR
        self.abort_exists = (root / "abort").exists()
        self.recover = self.abort_exists if recover is None else recover
        self.check_crc_on_recover = check_crc_on_recover
        self._index_files: list[rmq.IndexFile] | None = None
        self._index_problems: list[dict] = []
        self._recovery: dict | None = None
        self._commitlog: rmq.CommitLog | None = None
        self._closers: list[rmq.IndexFile] = []

    # ---- checkpoint ----

    def checkpoint(self) -> dict | None:
        """``StoreCheckpoint`` fields, or None when the file is missing."""
        path = self.root / "checkpoint"
        if not path.exists():
            return None
        with rmq.MappedFile(path) as mf:
            return rmq.read_checkpoint(mf.buf, str(path))

    # ---- CommitLog ----

    @property
    def commitlog(self) -> rmq.CommitLog | None:
        if self._commitlog is None and self.commitlog_dir.is_dir():
            self._commitlog = rmq.CommitLog(self.commitlog_dir)
        return self._commitlog

    def message_at(self, phy_offset: int) -> dict | None:
        """``lookMessageByOffset``: the decoded message at ``phy_offset`` or None."""
        log = self.commitlog
        if log is None:
            return None
        return log.message_at(phy_offset, keep_body=True)

    def messages(self, start: int = 0, stop: int | None = None, *, keep_body: bool = False,
                 ends: list | None = None) -> Iterator[dict]:
        """The CommitLog's messages with ``start <= phyOffset < stop`` in order, through the one
        walker (``start`` is 0 or a message's first byte).  Each file is read to its own end; where
        damage ends a file's reading, ``ends`` (when given) gets ``{"file", "phy_offset", "reason"}``."""
        if not self.commitlog_dir.is_dir():
            return
        for file_start, path in rmq.list_mapped_files(self.commitlog_dir):
            if stop is not None and file_start >= stop:
                return
            with rmq.MappedFile(path) as mf:
                if file_start + mf.size <= start:
                    continue
                for step in rmq.walk_commitlog(mf.buf, file_from_offset=file_start, file=path.name,
                                               path=str(path), start=max(start - file_start, 0),
                                               digests=False, keep_body=keep_body):
                    if isinstance(step, rmq.CommitLogEnd):
                        if step.damaged and ends is not None:
                            ends.append({"file": path.name, "phy_offset": step.phy_offset,
                                         "reason": step.error.message if step.error else step.kind})
                        break
                    if stop is not None and step["phyOffset"] >= stop:
                        return
                    yield step

    # ---- index files ----

    def _open_disk_index(self) -> list[rmq.IndexFile]:
        if not self.index_dir.is_dir():
            return []
        loaded = []
        for path in rmq.list_index_files(self.index_dir):
            try:
                loaded.append(rmq.IndexFile(path, self.hash_slot_num, self.index_num))
            except (SegtoolError, ValueError) as exc:
                self._index_problems.append({"file": path.name, "problem": str(exc)})
        self._closers.extend(loaded)
        return loaded

    @property
    def index_files(self) -> list[rmq.IndexFile]:
        """The index files IndexService holds after load (oldest first)."""
        if self._index_files is None:
            loaded = self._open_disk_index()
            self._index_files = self._recover_index(loaded) if self.recover else loaded
        return self._index_files

    def _recover_index(self, loaded: list[rmq.IndexFile]) -> list[rmq.IndexFile]:
        """IndexService.load(lastExitOK=false) + the index part of CommitLog.recoverAbnormally."""
        checkpoint = self.checkpoint()
        cp = checkpoint or {"physicMsgTimestamp": 0, "logicsMsgTimestamp": 0, "indexMsgTimestamp": 0}
        limit = cp["indexMsgTimestamp"]
        kept = [f for f in loaded if f.end_timestamp <= limit]
        dropped = [f for f in loaded if f.end_timestamp > limit]
        if self.hash_slot_num is not None:
            geometry, geometry_source = (self.hash_slot_num, self.index_num), "explicit"
        elif loaded:
            ref = (kept or loaded)[-1]
            geometry, geometry_source = (ref.hash_slot_num, ref.index_num), f"as {ref.name} ({ref.geometry_source})"
        else:
            geometry, geometry_source = (rmq.DEFAULT_HASH_SLOT_NUM, rmq.DEFAULT_INDEX_NUM), "RocketMQ default (assumed)"
        feed = DispatchFeed("recover")
        requests = commitlog_recovery(self.commitlog_dir, cp, check_crc=self.check_crc_on_recover, feed=feed)
        build = build_index_files(requests, *geometry, existing=kept)
        self._closers.extend(build.created)
        if build.appended is not None:
            self._closers.append(build.appended)
        self._recovery = {
            "note": (("unclean shutdown (abort file)" if self.abort_exists else "recovery forced (no abort file)")
                     + ": index as RocketMQ 4.9's abnormal recovery leaves it, rebuilt in memory; "
                     "the files on disk are untouched"),
            "abortFileExists": self.abort_exists,
            "checkpoint": checkpoint,
            "checkpointMissing": checkpoint is None,
            "droppedIndexFiles": [f.name for f in dropped],
            "keptIndexFiles": [f.name for f in kept],
            "keptEndPhyOffset": kept[-1].end_phy_offset if kept else None,
            "commitlogRecoveryStartPhyOffset": (int(feed.start_file) if feed.start_file is not None
                                                and feed.start_file.isdigit() else None),
            "geometry": {"hashSlotNum": geometry[0], "indexNum": geometry[1], "source": geometry_source},
            "commitlogRecoveryStartFile": feed.start_file,
            "commitlogDispatched": feed.dispatched,
            "commitlogStopped": feed.stopped,
            "build": build.stats(),
            "indexFilesAfterLoad": [f.name for f in build.files],
        }
        return build.files

    @property
    def recovery(self) -> dict | None:
        """What the recovery did (None when the index was taken as it is on disk)."""
        self.index_files
        return self._recovery

    # ---- key lookups ----

    def select_offsets(self, topic: str, key: str, max_num: int = MAX_MSGS_NUM_BATCH, begin: int = 0,
                       end: int = LONG_MAX) -> dict:
        """``IndexService.queryOffset``: the raw phyOffsets in RocketMQ's order (with the loop guard)."""
        if max_num < 0:
            raise SegtoolError(f"max_num must be >= 0 (got {max_num})")
        effective = min(max_num, MAX_MSGS_NUM_BATCH)
        key_hash = rmq.index_key_hash(rmq.index_key(topic, key))
        files = self.index_files
        out: list[int] = []
        searched = []
        notes = []
        terminated = True
        last_ts = last_phy = 0
        for i in range(len(files) - 1, -1, -1):
            f = files[i]
            if i == len(files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                before = len(out)
                outcome = f.select_phy_offsets(out, key_hash, effective, begin, end)
                searched.append({"file": f.name, "found": len(out) - before, "entriesRead": outcome.steps})
                if outcome.note:
                    notes.append(outcome.note)
                if not outcome.terminated:
                    terminated = False
                    break
            if f.begin_timestamp < begin:
                break
            if len(out) >= effective:
                break
        return {"phy_offsets": out, "terminated": terminated, "effective_max_num": effective,
                "key_hash": key_hash, "index_last_update_timestamp": last_ts,
                "index_last_update_phy_offset": last_phy, "searched": searched, "notes": notes}

    def query_offsets(self, topic: str, key: str, max_num: int = MAX_MSGS_NUM_BATCH, begin: int = 0,
                      end: int = LONG_MAX, include_collisions: bool = False) -> dict:
        """A key lookup: ``IndexService.queryOffset`` resolved in the CommitLog.

        ``index_phy_offsets`` is RocketMQ's raw answer (order and duplicates
        kept); ``phy_offsets`` is the same without hash collisions and offsets
        that hold no readable message, unless ``include_collisions`` (then it
        equals ``index_phy_offsets``).  ``messages`` has one item per raw offset.
        """
        raw = self.select_offsets(topic, key, max_num, begin, end)
        have_log = self.commitlog is not None
        decoded: dict[int, dict] = {}
        messages = []
        for phy in raw["phy_offsets"]:
            item = decoded.get(phy)
            if item is None:
                item = decoded[phy] = self._resolve(phy, topic, key, have_log)
            messages.append(item)
        notes = list(raw["notes"])
        if not have_log:
            notes.append(f"no CommitLog at {self.commitlog_dir}: offsets not verified against messages")
        if include_collisions:
            kept = list(raw["phy_offsets"])
        else:
            kept = [m["phy_offset"] for m in messages
                    if m.get("collision") is False or (m.get("collision") is None and not have_log)]
        collisions = sum(1 for m in messages if m.get("collision"))
        files = self.index_files
        searched = {s["file"] for s in raw["searched"]}
        answer = {
            "store": str(self.root), "topic": topic, "key": key, "index_key": rmq.index_key(topic, key),
            "key_hash": raw["key_hash"], "begin": begin, "end": end, "max_num": max_num,
            "effective_max_num": raw["effective_max_num"], "include_collisions": include_collisions,
            "phy_offsets": kept, "index_phy_offsets": raw["phy_offsets"], "collisions": collisions,
            "messages": messages,
            "query_message_phy_offsets": self._query_message(topic, key, max_num, begin, end, raw, decoded),
            "terminated": raw["terminated"],
            "index_last_update_timestamp": raw["index_last_update_timestamp"],
            "index_last_update_phy_offset": raw["index_last_update_phy_offset"],
            "index_files": [{**f.state(), "searched": f.name in searched} for f in reversed(files)],
            "index_searched": raw["searched"],
            "recovered": self._recovery is not None,
            "recovery": self._recovery,
            "notes": notes,
        }
        if self._index_problems:
            answer["index_problems"] = list(self._index_problems)
        if not raw["terminated"]:
            answer["notes"].append("terminated=false: RocketMQ itself would never answer this query")
        return answer

    def _resolve(self, phy: int, topic: str, key: str, have_log: bool) -> dict:
        if not have_log:
            return {"phy_offset": phy, "collision": None, "matches_query": None, "error": "no commitlog"}
        try:
            msg = self.message_at(phy)
        except SegtoolError as exc:
            return {"phy_offset": phy, "collision": None, "matches_query": None, "error": str(exc)}
        if msg is None:
            return {"phy_offset": phy, "collision": None, "matches_query": None,
                    "error": "no message at this offset"}
        view = _message_view(msg, self.commitlog_dir)
        match = carries_key(view, topic, key)
        return {**view, "matches_query": match, "collision": not match}

    def _query_message(self, topic, key, max_num, begin, end, first: dict, decoded: dict) -> list[int]:
        """``DefaultMessageStore.queryMessage``'s offsets: up to 3 rounds, ascending per round."""
        result: list[int] = []
        last_time = end
        raw = first
        for round_no in range(QUERY_MESSAGE_ROUNDS):
            if round_no:
                raw = self.select_offsets(topic, key, max_num, begin, last_time)
            offsets = sorted(raw["phy_offsets"])
            if not offsets:
                break
            for m, phy in enumerate(offsets):
                item = decoded.get(phy)
                if item is None:
                    item = decoded[phy] = self._resolve(phy, topic, key, self.commitlog is not None)
                if "error" in item:
                    continue  # lookMessageByOffset failed: the exception is logged, nothing added
                if m == 0:
                    last_time = item["store_timestamp"]
                result.append(phy)
            if result or last_time < begin:
                break
        return result

    # ---- ConsumeQueue ----

    def queue_unit(self, topic: str, queue_id: int, queue_offset: int) -> dict:
        """``getCommitLogOffsetInQueue`` / ``ConsumeQueue.getIndexBuffer`` plus the message it points at."""
        directory = self.root / rocketmq_names.CONSUMEQUEUE_DIR / topic / str(queue_id)
        answer = {"store": str(self.root), "topic": topic, "queue_id": queue_id, "queue_offset": queue_offset,
                  "queue_exists": directory.is_dir(), "phy_offset": None, "size": None, "tags_code": None,
                  "min_offset_in_queue": None, "max_offset_in_queue": None, "message": None}
        if not answer["queue_exists"]:
            return answer
        queue = rmq.ConsumeQueue(directory, topic, queue_id)
        answer["min_offset_in_queue"], answer["max_offset_in_queue"] = queue_bounds(queue)
        unit = queue.unit(queue_offset) if queue_offset >= 0 else None
        if unit is not None:
            answer.update(phy_offset=unit["commitLogOffset"], size=unit["size"], tags_code=unit["tagsCode"])
            try:
                msg = self.message_at(unit["commitLogOffset"])
            except SegtoolError as exc:
                answer["message_error"] = str(exc)
            else:
                answer["message"] = _message_view(msg, self.commitlog_dir) if msg is not None else None
        return answer

    def close(self) -> None:
        for f in self._closers:
            f.close()
        self._closers.clear()
        self._index_files = None
        if self._commitlog is not None:
            self._commitlog.close()
            self._commitlog = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def queue_bounds(queue: rmq.ConsumeQueue) -> tuple[int, int]:
    """(minOffsetInQueue, maxOffsetInQueue) from the first and last files only.

    Max: the last file's first unit recovery would not accept (``ConsumeQueue.recover``);
    min: the first file's first valid unit.
    """
    if not queue.files:
        return 0, 0
    bad = None
    bounds = []
    for start, file_path in (queue.files[0], queue.files[-1]):
        with rmq.MappedFile(file_path) as mf:
            units = rmq.consumequeue_units(mf.buf)
            invalid = (units["commitLogOffset"] < 0) | (units["size"] <= 0)
            bad = np.flatnonzero(invalid)
            stop = int(bad[0]) if bad.size else len(units)
            valid = np.flatnonzero(~invalid[:stop] & (units["size"][:stop] != rmq.CQ_BLANK_UNIT_SIZE))
            first = int(valid[0]) if valid.size else stop
            bounds.append((start // rmq.CQ_UNIT_SIZE + first, start // rmq.CQ_UNIT_SIZE + stop))
            del units, invalid
    return bounds[0][0], bounds[1][1]
