"""RocketMQ's replication rules over copies of one broker group's stores, read offline.

Master and slave (4.x HA: ``DefaultHAService`` / ``DefaultHAConnection`` / ``DefaultHAClient``): the
master ships raw CommitLog bytes from the offset the slave reports (its max physical offset), so a
slave's CommitLog is a byte copy of the master's over the offsets both hold; a slave that starts
empty is fed from the start of the master's last file (``DefaultHAConnection.WriteSocketService``:
``masterOffset - masterOffset % mappedFileSizeCommitLog``).  4.x never truncates a slave: after a
failover a slave that holds bytes the new master lacks keeps them and is fed after its own end.

Controller mode (5.x: ``AutoSwitchHAService`` / ``AutoSwitchHAClient``): each store keeps its epochs in
``<root>/epochFileCheckpoint`` (``EpochFileCache``, written by ``CheckpointFile``); on the handshake a
slave truncates its CommitLog to ``EpochFileCache.findConsistentPoint`` of its epochs against the
master's (``AutoSwitchHAClient.doTruncate``); ``confirmPhyOffset`` in the store checkpoint is the
offset the in-sync replicas confirmed (``CommitLog.getConfirmOffset``).

DLedger (openmessaging/dledger 0.3.1.2, ``dledger-<selfId>/``): entries are compared as
``DLedgerEntry.equals`` does; a follower rejoining a leader is truncated as
``DLedgerEntryPusher.EntryDispatcher.doCompare`` decides, and a node can be elected only with the
votes ``DLedgerLeaderElector.handleVote`` grants.

Copies are compared by their bytes from the first offset both hold (HA ships bytes, so equal bytes
need no framing); the reference copy is framed once by its records' headers, to name the record where
the bytes part and to count messages (agreed, lagging); past that point each copy's own records are
framed and the first few decoded to list them.  What a copy holds is what the broker's own recovery
keeps (``rocketmq.startup.commitlog_recovery_plan``, ``rocketmq.startup5.recover_dledger``).

Which copies form a group (``group_copies``): copies given together replicate each other unless their
data say otherwise, that is unless the first record both hold (at the first offset or raft index
both hold) differs; a copy that shares no record with the others (empty, or no common offset) stays
with them, and the report says so.
"""

from __future__ import annotations

import mmap
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from segtool.errors import CorruptData, SegtoolError
from segtool.rocketmq import names as rocketmq_names
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import v5 as r5
from segtool.rocketmq.startup import CommitLogRecoveryPlan, commitlog_recovery_plan
from segtool.rocketmq.startup5 import recover_dledger
from segtool.source import release_pages

LONG_MAX = 2**63 - 1  # EpochEntry's endOffset until a later entry or the log end sets it
EPOCH_FILE = "epochFileCheckpoint"  # MessageStoreConfig.getStorePathEpochFile: <storePathRootDir>/epochFileCheckpoint
LINE_SEPARATOR = "\n"  # CheckpointFile joins lines with System.lineSeparator(): brokers run on Linux


# --------------------------------------------------------------------------
# 5.x epochs (EpochFileCache)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class EpochEntry:
    """``EpochEntry``: the epoch, its first CommitLog offset and the offset after its last byte."""

    epoch: int
    start_offset: int
    end_offset: int = LONG_MAX


def parse_epoch_file(text: str, path: str | None = None) -> list[EpochEntry]:
    """``CheckpointFile.read`` with ``EpochEntrySerializer.fromLine``: the entry count, the CRC32 of the
    entry lines (0: not checked), then ``<epoch>-<startOffset>`` a line.  CorruptData where the broker
    throws (a count or CRC that does not match, a number that does not parse)."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise CorruptData("epoch file lacks its entry count and CRC lines", path, 0)
    try:
        expected, expected_crc = int(lines[0]), int(lines[1])
        entries = []
        for line in lines[2:]:
            parts = line.split("-")
            while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
                parts.pop()
            if len(parts) == 2:
                entries.append(EpochEntry(int(parts[0]), int(parts[1])))
    except ValueError as exc:
        raise CorruptData(f"epoch file holds a line that is not a number: {exc}", path, None) from None
    if len(entries) != expected:
        raise CorruptData(f"epoch file says {expected} entries but holds {len(entries)}", path, None)
    crc = zlib.crc32("".join(line + LINE_SEPARATOR for line in lines[2:]).encode()) & 0x7FFFFFFF
    if expected_crc != 0 and crc != expected_crc:
        raise CorruptData(f"epoch file entries' CRC32 is {crc}, the file says {expected_crc}", path, None)
    return entries


def read_epoch_entries(root) -> tuple[list[EpochEntry] | None, list[str]]:
    """``EpochFileCache.initCacheFromFile``: the epoch file, or its ``.bak`` when the file is missing, empty
    or unreadable (``CheckpointFile.read``); None when neither exists (not controller mode, or the file
    was not kept).  Notes say which file was read and why."""
    path = Path(root) / EPOCH_FILE
    backup = path.with_name(EPOCH_FILE + rocketmq_names.BACKUP_SUFFIX)
    notes: list[str] = []
    if not path.exists() and not backup.exists():
        return None, notes
    try:
        entries = parse_epoch_file(path.read_text(encoding="utf-8", errors="replace"), str(path)) \
            if path.exists() else []
    except CorruptData as exc:
        notes.append(f"{path}: {exc.message}; the broker reads {backup.name}")
        entries = []
    if not entries and backup.exists():
        try:
            entries = parse_epoch_file(backup.read_text(encoding="utf-8", errors="replace"), str(backup))
        except CorruptData as exc:
            notes.append(f"{backup}: {exc.message}; the broker cannot load its epochs")
            return [], notes
        notes.append(f"epochs read from {backup.name} (CheckpointFile.read falls back to it)")
    return entries, notes


def epoch_ranges(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """``EpochFileCache.initEntries`` (each entry ends where the next starts) then
    ``setLastEpochEntryEndOffset(end_offset)`` (the store's max physical offset)."""
    out = []
    for i, entry in enumerate(entries):
        end = entries[i + 1].start_offset if i + 1 < len(entries) else LONG_MAX
        if i + 1 == len(entries) and entry.start_offset <= end_offset:
            end = end_offset
        out.append(EpochEntry(entry.epoch, entry.start_offset, end))
    return out


def find_consistent_point(local: list[EpochEntry], other: list[EpochEntry]) -> int:
    """``EpochFileCache.findConsistentPoint``: from the local newest epoch down, the first the other cache
    holds with the same start offset gives min(both end offsets); -1 when none does."""
    by_epoch = {entry.epoch: entry for entry in other}
    for entry in sorted(local, key=lambda e: e.epoch, reverse=True):
        match = by_epoch.get(entry.epoch)
        if match is not None and match.start_offset == entry.start_offset:
            return min(entry.end_offset, match.end_offset)
    return -1


@dataclass(frozen=True)
class Truncation:
    """Where a rejoining follower is cut (``offset``: a CommitLog offset, or for DLedger the raft index of
    the last entry it keeps as the leader's), and which branch of the broker's rule decided it."""

    offset: int | None
    rule: str


def controller_truncation(follower_epochs: list[EpochEntry], follower_end: int, leader_epochs: list[EpochEntry],
                          leader_end: int) -> Truncation:
    """``AutoSwitchHAClient.doTruncate``: a slave with no epochs is a new replica and is not truncated; else
    it is cut to the consistent point of its epochs against the master's (each cache's last entry ending at
    its store's max offset), and with none the handshake fails and the slave does not sync."""
    if not follower_epochs:
        return Truncation(None, "slave_epochs_empty")
    point = find_consistent_point(epoch_ranges(follower_epochs, follower_end), epoch_ranges(leader_epochs, leader_end))
    if point < 0:
        return Truncation(None, "no_consistent_point")
    return Truncation(point, "epoch_consistent_point")


# --------------------------------------------------------------------------
# CommitLog copies (master / slave)
# --------------------------------------------------------------------------


@dataclass
class CommitLogCopy:
    """One store's CommitLog as its broker would load it: ``end`` is where recovery cuts (what the store
    holds), ``confirm_offset`` the checkpoint's confirmPhyOffset as recovery corrects it (controller mode),
    ``epochs`` the epoch file's entries (None: no epoch file)."""

    root: Path
    files: tuple[tuple[int, Path, int], ...]
    plan: CommitLogRecoveryPlan
    checkpoint: dict | None
    epochs: list[EpochEntry] | None
    confirm_offset: int | None
    notes: list[str] = field(default_factory=list)
    unframed: list[str] = field(default_factory=list)  # where header framing stopped before ``end``
    framings: list[Framing] = field(default_factory=list)  # made by ``framing``, kept for later questions

    @property
    def min_offset(self) -> int:
        """``getMinPhyOffset``: the first CommitLog file's start."""
        return self.files[0][0] if self.files else 0

    @property
    def end(self) -> int:
        return self.plan.cut if self.files else 0


def _read_store_checkpoint(path: Path) -> dict:
    with rmq.MappedFile(path) as mapped:
        if mapped.size >= r5.CHECKPOINT_5X_FAST.size:
            return r5.read_checkpoint_5x(mapped.buf, str(path))
        return rmq.read_checkpoint(mapped.buf, str(path))


def open_commitlog_copy(root) -> CommitLogCopy:
    """The ``CommitLogCopy`` of the store at ``root``: its checkpoint (a missing or unreadable one is said
    in a note, and recovery reads as the broker would without it), recovery's cut, its epochs."""
    root = Path(root)
    notes: list[str] = []
    commitlog = root / rocketmq_names.COMMITLOG_DIR
    checkpoint_path = root / rocketmq_names.CHECKPOINT
    checkpoint = None
    if not checkpoint_path.exists():
        notes.append(f"{checkpoint_path}: missing; compared on the CommitLog alone")
    else:
        try:
            checkpoint = _read_store_checkpoint(checkpoint_path)
        except SegtoolError as exc:
            notes.append(f"{checkpoint_path}: {exc.message}; compared on the CommitLog alone")
    abnormal = (root / rocketmq_names.ABORT).exists()
    plan = commitlog_recovery_plan(commitlog if commitlog.is_dir() else None, checkpoint, abnormal, None,
                                   root / rocketmq_names.CONSUMEQUEUE_DIR)
    if not plan.files:
        notes.append(f"{commitlog}: no CommitLog files; the store holds no messages")
    epochs, epoch_notes = read_epoch_entries(root)
    notes.extend(epoch_notes)
    confirm = None
    if epochs is not None and plan.files:
        confirm = checkpoint.get("confirmPhyOffset") if checkpoint is not None else None
        if confirm is None:
            notes.append("no confirmPhyOffset in the store checkpoint: the confirm offset is unknown")
        else:
            # CommitLog.recoverNormally / recoverAbnormally in controller mode: kept within [min, processOffset]
            minimum = plan.files[0][0]
            corrected = min(max(confirm, minimum), plan.cut)
            if corrected != confirm:
                notes.append(f"checkpoint confirmPhyOffset {confirm} lies outside [{minimum}, {plan.cut}]; "
                             f"recovery corrects it to {corrected}")
            confirm = corrected
    return CommitLogCopy(root, plan.files, plan, checkpoint, epochs, confirm, notes)


@dataclass(frozen=True)
class Framing:
    """The records of a copy framed from ``first`` (a record's first byte) by their headers alone, bodies
    unread: each record's physical ``starts`` and ``ends``, which are ``messages`` (the rest are BLANK records,
    running to their file's end), and ``end``, where framing stopped: the copy's end, or the first record that
    does not frame (noted in ``CommitLogCopy.unframed``)."""

    first: int
    starts: np.ndarray
    ends: np.ndarray
    messages: np.ndarray
    end: int

    def holds_boundary(self, offset: int) -> bool:
        """Is ``offset`` where one of these records starts, or where the framing ends?"""
        if offset == self.end:
            return True
        at = int(np.searchsorted(self.starts, offset))
        return at < len(self.starts) and int(self.starts[at]) == offset

    def rows(self, start: int, stop: int) -> slice:
        """The records that start in [start, stop)."""
        return slice(int(np.searchsorted(self.starts, start)), int(np.searchsorted(self.starts, stop)))

    def count(self, start: int, stop: int) -> int:
        """How many messages start in [start, stop)."""
        return int(np.count_nonzero(self.messages[self.rows(start, stop)]))


_HEADER = rmq.MESSAGE_HEADER_FAST[0]  # the IPv4 layout; the rare IPv6 headers are read one by one
_HEADER_DTYPE = _HEADER.numpy_dtype()
_HOSTS_V6 = rmq.BORNHOST_V6_FLAG | rmq.STOREHOSTADDRESS_V6_FLAG
_MESSAGE_MAGIC_CODES = frozenset(rmq.MESSAGE_VERSIONS)


def _frame_file(buf, pos: int, stop: int) -> tuple[list[int], int, bool, str | None]:
    """Record positions in one file from ``pos`` while they start before ``stop``, by totalSize and magic
    alone: (positions, where framing stopped, whether the last is the BLANK record (the file's last record),
    what is wrong where framing stopped short (None: nothing))."""
    size = len(buf)
    unpack_head = rmq.BLANK_RECORD_FAST.unpack_from
    positions: list[int] = []
    framed = positions.append
    while pos < stop:
        if pos + rmq.BLANK_RECORD_FAST.size > size:
            return positions, pos, False, "no message header"
        total, magic = unpack_head(buf, pos)
        if magic == rmq.BLANK_MAGIC_CODE:
            framed(pos)
            return positions, size, True, None
        if magic not in _MESSAGE_MAGIC_CODES:
            return positions, pos, False, "no message header"
        if total < rmq.MIN_MESSAGE_SIZE or pos + total > size:
            return positions, pos, False, f"totalSize {total} does not frame a message"
        framed(pos)
        pos += total
    return positions, pos, False, None


def _misframed(buf, positions: np.ndarray) -> int:
    """The index of the first message at ``positions`` whose header and body do not fit in its totalSize
    (``len(positions)`` when all fit)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    within = positions + _HEADER.size <= len(data)
    if not within.all():
        return int(np.argmin(within))
    header = np.lib.stride_tricks.sliding_window_view(data, _HEADER.size)[positions].view(_HEADER_DTYPE).reshape(-1)
    fits = positions + _HEADER.size + header["bodyLength"] <= positions + header["totalSize"]
    for i in np.flatnonzero(header["sysFlag"] & _HOSTS_V6).tolist():  # another layout: its own header
        at = int(positions[i])
        head = rmq.message_header(buf, at)
        fits[i] = head is not None and (at + rmq.MESSAGE_HEADER_FAST[(head["sysFlag"] >> 4) & 3].size
                                        + head["bodyLength"] <= at + head["totalSize"])
    return int(np.argmin(fits)) if not fits.all() else len(positions)


def framing(copy: CommitLogCopy, start: int) -> Framing:
    """The copy's records from ``start`` to its end: a ``Framing`` made once and kept on the copy, which
    answers any later start at one of its record boundaries."""
    for known in copy.framings:
        if known.first <= start <= known.end and known.holds_boundary(start):
            return known
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    blanks: list[np.ndarray] = []
    end = start
    for file_start, path, size in copy.files:
        if file_start + size <= end:
            continue
        if file_start >= copy.end:
            break
        with rmq.MappedFile(path) as mapped:
            found, stopped, blank_last, problem = _frame_file(mapped.buf, max(end - file_start, 0),
                                                              copy.end - file_start)
            at = np.array(found, dtype=np.int64)
            blank = np.zeros(len(at), dtype=bool)
            blank[-1:] = blank_last
            bad = _misframed(mapped.buf, at[:len(at) - blank_last])
            if bad < len(at) - blank_last:
                stopped, problem = int(at[bad]), "its header and body do not fit in its totalSize"
                at, blank = at[:bad], blank[:bad]
        # records run back to back: each ends where the next starts, the last where framing stopped
        starts.append(at + file_start)
        ends.append(np.append(at[1:], stopped)[:len(at)] + file_start)
        blanks.append(blank)
        end = file_start + stopped
        if problem is not None:
            copy.unframed.append(f"{path.name} byte {stopped}: {problem}")
            break
    made = Framing(start, _joined(starts, np.int64), _joined(ends, np.int64), ~_joined(blanks, bool), end)
    copy.framings.append(made)
    return made


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


COMPARED_AT_ONCE = 16 << 20  # bytes of two copies compared in one numpy pass (and then released)


def _file_at(copy: CommitLogCopy, offset: int) -> tuple[int, Path, int] | None:
    for entry in copy.files:
        if entry[0] <= offset < entry[0] + entry[2]:
            return entry
    return None


def first_difference(a: CommitLogCopy, b: CommitLogCopy, start: int, stop: int) -> int | None:
    """The first physical offset in [start, stop) where the two copies' CommitLog bytes differ (an offset
    that only one copy has a file for differs), or None: a slave's bytes are the master's, so equal bytes
    need no framing."""
    pos = start
    while pos < stop:
        file_a, file_b = _file_at(a, pos), _file_at(b, pos)
        if file_a is None or file_b is None:
            if file_a is not file_b:
                return pos
            later = [s for s, _, _ in (*a.files, *b.files) if s > pos]  # neither holds a file here
            pos = min(later, default=stop)
            continue
        upto = min(stop, file_a[0] + file_a[2], file_b[0] + file_b[2])
        with rmq.MappedFile(file_a[1]) as mapped_a, rmq.MappedFile(file_b[1]) as mapped_b:
            differs = _first_difference_in(mapped_a.buf, pos - file_a[0], mapped_b.buf, pos - file_b[0], upto - pos)
        if differs is not None:
            return pos + differs
        pos = upto
    return None


def _first_difference_in(buf_a, at_a: int, buf_b, at_b: int, length: int) -> int | None:
    """The first byte where ``buf_a[at_a:at_a + length]`` and ``buf_b[at_b:at_b + length]`` differ (None: they
    are equal), compared ``COMPARED_AT_ONCE`` bytes at a time, each pass's pages then released."""
    data_a, data_b = np.frombuffer(buf_a, dtype=np.uint8), np.frombuffer(buf_b, dtype=np.uint8)
    done = 0
    while done < length:
        chunk = min(COMPARED_AT_ONCE, length - done)
        words = chunk - chunk % 8  # compared eight bytes at a time, the rest byte by byte
        a, b = data_a[at_a + done:at_a + done + chunk], data_b[at_b + done:at_b + done + chunk]
        if not (np.array_equal(a[:words].view(np.uint64), b[:words].view(np.uint64))
                and np.array_equal(a[words:], b[words:])):
            return done + int(np.flatnonzero(a != b)[0])
        for buf, at in ((buf_a, at_a + done), (buf_b, at_b + done)):
            release_pages(buf, at - at % mmap.PAGESIZE, at + chunk)
        done += chunk
    return None


@dataclass(frozen=True)
class CopyComparison:
    """Two copies over the offsets both hold: from ``compared_from`` they agree up to ``agree_to``
    (``messages_agreed`` messages); ``diverged_at`` is where their records first differ (None: one is a
    prefix of the other).  ``compared_from`` is None when they share no offset."""

    compared_from: int | None
    agree_to: int | None
    messages_agreed: int
    diverged_at: int | None


def compare_copies(a: CommitLogCopy, b: CommitLogCopy) -> CopyComparison:
    """The common prefix of two copies: their bytes compared from the first offset both hold to the first
    that differs (HA ships bytes: a slave holds the master's), and ``a`` framed to name the record that
    holds it and to count the messages before it.  The BLANK record's filler is no record's content: bytes
    that differ there do not part the copies."""
    start = max(a.min_offset, b.min_offset)
    if start > min(a.end, b.end):
        return CopyComparison(None, None, 0, None)
    records = framing(a, start)
    stop = min(a.end, b.end, records.end)
    pos = start
    while (differs := first_difference(a, b, pos, stop)) is not None:
        row = int(np.searchsorted(records.starts, differs, side="right")) - 1
        if row < 0:  # before ``a``'s first record: no file of ``a`` holds it
            return CopyComparison(start, differs, 0, differs)
        record = int(records.starts[row])
        if records.messages[row] or differs < record + rmq.BLANK_RECORD_FAST.size:
            return CopyComparison(start, record, records.count(start, record), record)
        pos = int(records.ends[row])
    return CopyComparison(start, stop, records.count(start, stop), None)


@dataclass(frozen=True)
class MessageRun:
    """The messages of one copy in [first_offset, end_offset): how many, and the first ``listed`` decoded."""

    first_offset: int
    end_offset: int
    messages: int
    listed: list[dict]


def message_run(copy: CommitLogCopy, start: int, stop: int, limit: int) -> MessageRun:
    """The messages from ``start`` to ``stop``: counted by their headers, the first ``limit`` decoded
    (bodies read here only: this is where copies differ)."""
    count = framing(copy, start).count(start, stop)
    listed: list[dict] = []
    for file_start, path, size in copy.files:
        if len(listed) >= min(limit, count) or file_start >= stop:
            break
        if file_start + size <= start:
            continue
        with rmq.MappedFile(path) as mapped:
            for step in rmq.walk_commitlog(mapped.buf, file_from_offset=file_start, file=path.name, path=str(path),
                                           start=max(start - file_start, 0), digests=False, decompress=False):
                if isinstance(step, rmq.CommitLogEnd) or step["phyOffset"] >= stop or len(listed) >= limit:
                    break
                listed.append(step)
    return MessageRun(start, stop, count, listed)


def messages_below(copy: CommitLogCopy, start: int, stop: int, bound: int | None) -> int:
    """How many messages in [start, stop) end at or below ``bound`` (a confirm offset)."""
    if bound is None:
        return 0
    records = framing(copy, start)
    rows = records.rows(start, min(stop, bound))
    return int(np.count_nonzero(records.messages[rows] & (records.ends[rows] <= bound)))


# --------------------------------------------------------------------------
# DLedger nodes
# --------------------------------------------------------------------------


@dataclass
class DLedgerNode:
    """One DLedger node (``dledger-<selfId>/``) as ``DLedgerMmapFileStore.recover`` loads it: its entries
    (headers, a key for ``DLedgerEntry.equals`` and the message inside) up to the recovery cut, its
    checkpoint's committedIndex (None: no checkpoint or no value)."""

    self_id: str
    directory: Path
    entries: list[dict]
    recovery: dict
    committed_index: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def begin_index(self) -> int:
        """``ledgerBeginIndex``: -1 when the node holds no entry."""
        return self.entries[0]["index"] if self.entries else -1

    @property
    def end_index(self) -> int:
        return self.entries[-1]["index"] if self.entries else -1

    @property
    def end_term(self) -> int:
        return self.entries[-1]["term"] if self.entries else -1

    def get(self, index: int) -> dict | None:
        """``DLedgerStore.get``: the entry at a raft index, or None outside [begin, end]."""
        if not self.entries or not self.begin_index <= index <= self.end_index:
            return None
        return self.entries[index - self.begin_index]


def _entry_key(header: dict, message) -> tuple:
    """What ``DLedgerEntry.equals`` compares (size, magic, index, term, channel, pos, body), with the body
    stood for by the message's header fields, body CRC, topic and properties."""
    fixed = tuple(header[name] for name in ("size", "magic", "index", "term", "channel", "pos"))
    if isinstance(message, dict):
        body = tuple(message[name] for name in ("totalSize", "bodyCRC", "bodyCRCComputed", "queueId", "queueOffset",
                                                 "sysFlag", "bornTimestamp", "storeTimestamp", "topic"))
        return fixed + body + (tuple(sorted(message["properties"].items())),)
    return fixed + (str(message),)


def open_dledger_node(directory) -> DLedgerNode:
    """The ``DLedgerNode`` of ``dledger-<selfId>/`` (its ``data/``, ``checkpoint``)."""
    directory = Path(directory)
    data = directory / "data"
    notes: list[str] = []
    recovery = recover_dledger(data) if data.is_dir() else {"directory": str(data), "entries": 0, "last_index": None,
                                                             "cut": None, "files": []}
    if not data.is_dir():
        notes.append(f"{data}: missing; the node holds no entries")
    cut = recovery["cut"]["pos"] if recovery["cut"] else None
    entries: list[dict] = []
    for start, path in (rmq.list_mapped_files(data) if data.is_dir() else []):
        if cut is not None and start > cut:
            break
        with rmq.MappedFile(path) as mapped:
            for step in r5.walk_dledger_data(mapped.buf, file_from_offset=start, digests=False, decompress=False):
                if isinstance(step, r5.DLedgerEnd):
                    break
                header, message = step
                if cut is not None and header["pos"] >= cut:
                    break
                entries.append({"index": header["index"], "term": header["term"], "pos": header["pos"],
                                "size": header["size"], "key": _entry_key(header, message),
                                "message": message if isinstance(message, dict) else None,
                                "file": path.name})
    committed = None
    checkpoint = directory / rocketmq_names.CHECKPOINT
    if not checkpoint.exists():
        notes.append(f"{checkpoint}: missing; the committed index is unknown")
    else:
        try:
            committed = r5.read_dledger_checkpoint(checkpoint.read_bytes(), str(checkpoint))["committedIndex"]
        except SegtoolError as exc:
            notes.append(f"{checkpoint}: {exc.message}; the committed index is unknown")
        if committed is None and not notes:
            notes.append(f"{checkpoint}: no committedIndex; the committed index is unknown")
    return DLedgerNode(directory.name[len("dledger-"):], directory, entries, recovery, committed, notes)


def dledger_truncation(leader: DLedgerNode, follower: DLedgerNode) -> Truncation:
    """``DLedgerEntryPusher.EntryDispatcher.doCompare``: compare from the leader's end index down; a match
    at the follower's end index appends (nothing cut), a match below it truncates there, and where the logs
    do not meet the follower is truncated to the leader's begin index.  ``offset`` is the truncate index
    (None: nothing is cut)."""
    if leader.end_index == -1:
        return Truncation(None, "leader_empty")  # compareIndex == -1 and ledgerEndIndex == -1: no compare
    compare = leader.end_index
    while True:
        if compare > leader.end_index or compare < leader.begin_index:
            compare = leader.end_index
        entry, local = leader.get(compare), follower.get(compare)
        truncate, rule = -1, ""
        if local is not None and local["key"] == entry["key"]:  # handleDoCompare: SUCCESS
            if compare == follower.end_index:
                return Truncation(None, "append")
            truncate, rule = compare, "match_below_follower_end"
        elif follower.end_index < leader.begin_index or follower.begin_index > leader.end_index:
            truncate, rule = leader.begin_index, "no_intersection"
        elif compare < follower.begin_index:
            truncate, rule = leader.begin_index, "below_follower_begin"
        elif compare > follower.end_index:
            compare = follower.end_index
        else:
            compare -= 1
        if compare < leader.begin_index:
            truncate, rule = leader.begin_index, "below_leader_begin"
        if truncate != -1:
            return Truncation(truncate, rule)


def dledger_dropped(leader: DLedgerNode, follower: DLedgerNode, truncation: Truncation) -> list[dict]:
    """The follower's entries ``DLedgerMmapFileStore.truncate`` removes: those after the truncate index,
    and the one at it when it differs from the leader's (it is rewritten)."""
    index = truncation.offset
    if index is None:
        return []
    leader_entry = leader.get(index)
    return [entry for entry in follower.entries if entry["index"] > index or (
        entry["index"] == index and (leader_entry is None or entry["key"] != leader_entry["key"]))]


def can_be_elected(node: DLedgerNode, nodes: list[DLedgerNode]) -> bool:
    """``DLedgerLeaderElector.handleVote``: a voter refuses a candidate whose ledger end term is lower, or
    equal with a lower end index; a majority of the nodes given (itself included) must grant."""
    votes = sum(1 for voter in nodes if not (node.end_term < voter.end_term or (
        node.end_term == voter.end_term and node.end_index < voter.end_index)))
    return votes > len(nodes) // 2


def dledger_agreement(a: DLedgerNode, b: DLedgerNode) -> tuple[int | None, int | None, int | None]:
    """(first common index, last index of the common prefix, first index where entries differ) of two
    nodes; the first is None when their indexes do not meet, the last None when the first entry differs."""
    first = max(a.begin_index, b.begin_index)
    last_common = min(a.end_index, b.end_index)
    if first > last_common or first < 0:
        return None, None, None
    agree = None
    for index in range(first, last_common + 1):
        if a.get(index)["key"] != b.get(index)["key"]:
            return first, agree, index
        agree = index
    return first, agree, None


def _first_record(copy: CommitLogCopy, offset: int) -> tuple[int, bytes | None] | None:
    """(size, bytes) of the record at ``offset``; a BLANK record's bytes are None (its extent is all it
    says); None where no record frames there."""
    entry = _file_at(copy, offset)
    if entry is None:
        return None
    with rmq.MappedFile(entry[1]) as mapped:
        pos = offset - entry[0]
        found, stopped, blank, problem = _frame_file(mapped.buf, pos, pos + 1)
        if not found or problem is not None or (not blank and _misframed(mapped.buf, np.array(found)) == 0):
            return None
        return stopped - pos, None if blank else bytes(mapped.buf[pos:stopped])


def first_records_agree(a: CommitLogCopy, b: CommitLogCopy) -> bool | None:
    """Do the first records both copies hold (at the first offset both hold) agree?  None: they share none."""
    start = max(a.min_offset, b.min_offset)
    if start >= min(a.end, b.end):
        return None
    first_a, first_b = _first_record(a, start), _first_record(b, start)
    if first_a is None or first_b is None:
        return None
    return first_a == first_b


def first_entries_agree(a: DLedgerNode, b: DLedgerNode) -> bool | None:
    """Do the first entries both nodes hold (at the first raft index both hold) agree?  None: they share none."""
    first = max(a.begin_index, b.begin_index)
    if first < 0 or first > min(a.end_index, b.end_index):
        return None
    return a.get(first)["key"] == b.get(first)["key"]


def group_members(count: int, agree) -> list[list[int]]:
    """The module docstring's grouping of ``count`` copies: each joins the first group whose first member it
    does not disagree with (``agree(first, i)`` is not False), else starts a group."""
    groups: list[list[int]] = []
    for i in range(count):
        for group in groups:
            if agree(group[0], i) is not False:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups
