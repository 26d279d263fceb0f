"""RocketMQ 5.x store files: what 5.x writes beside the 4.x CommitLog, ConsumeQueue and IndexFile.

Every layout follows RocketMQ 5.x's source (apache/rocketmq ``store/``) and, for the
DLedger CommitLog, openmessaging/dledger 0.3.1.2 (the version RocketMQ 5 depends on);
docs/formats.md cites the class and method of each.  Big-endian throughout (Java
``ByteBuffer``).  The CommitLog message itself (MagicCode V1/V2, the ``__CRC32#``
property) is read by ``rocketmq.store_files``, the one message decoder: a DLedger entry
and a compaction log hand their messages to it.

Store layout (``storePathRootDir``) beyond 4.x::

    checkpoint                                   StoreCheckpoint: 4.x's three timestamps + masterFlushedOffset,
                                                 confirmPhyOffset
    batchconsumequeue/<topic>/<queueId>/<20d>    BatchConsumeQueue: 46-byte units
    timerlog/<20d>                               TimerLog: 52-byte units, 16-byte BLANK end record
    timerwheel                                   TimerWheel: 2 * 7 * 86400 slots of 32 bytes
    config/timercheck                            TimerCheckpoint: 7 longs
    config/timermetrics (.bak)                   TimerMetrics: fastjson text
    dledger-<selfId>/data/<20d>                  DLedger entries (48-byte header, a CommitLog message inside)
    dledger-<selfId>/index/<20d>                 DLedger index: 32-byte entries, entry i at i * 32
    dledger-<selfId>/checkpoint                  DLedger checkpoint: Java properties (endIndex, committedIndex)
    compaction/compactionLog/<topic>/<q>/<20d>   CompactionLog: CommitLog messages of a compacted topic
    compaction/compactionCq/<topic>/<q>/<20d>    SparseConsumeQueue: BatchConsumeQueue units over the log, each
                                                 file named after its log file (TopicPartitionLog.roll)
    compaction/position-checkpoint               CompactionPositionMgr: fastjson text
    lock, abort                                  markers (DefaultMessageStore.start / createTempFile)

As in ``rocketmq.store_files``, the construct schemas are the declaration of every layout
and the hot paths use the ``struct`` / numpy layouts ``fastdecode.compile_fixed``
derives from them; ``tests/test_rocketmq5.py`` checks both against each other and
against a writer that follows the Java code.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Iterator

import construct as cs
import numpy as np

from segtool.errors import CorruptData, SegtoolError, TruncatedData
from segtool.rocketmq import store_files as rmq
from segtool.formats.fastdecode import compile_fixed
from segtool.formats.outcomes import WalkEnd
from segtool.rocketmq import names as rocketmq_names

# --------------------------------------------------------------------------
# StoreCheckpoint (5.x)
# --------------------------------------------------------------------------

# StoreCheckpoint.flush: 4.x's three timestamps, then two offsets (5.x); the file is one OS page
CHECKPOINT_5X = cs.Struct(
    *rmq.CHECKPOINT.subcons,
    "masterFlushedOffset" / cs.Int64sb,  # HA: the master's flushed CommitLog offset a slave keeps
    "confirmPhyOffset" / cs.Int64sb,  # CommitLog.setConfirmOffset: the offset confirmed (controller/dup mode)
)
CHECKPOINT_5X_FAST = compile_fixed(CHECKPOINT_5X)
CHECKPOINT_5X_FIELDS = CHECKPOINT_5X_FAST.names[len(rmq.CHECKPOINT_FAST.names):]


def read_checkpoint_5x(buf, path: str | None = None) -> dict:
    """``StoreCheckpoint(scpPath)`` of 5.x: the five fields (a 4.x broker leaves the last two zero)."""
    if len(buf) < CHECKPOINT_5X_FAST.size:
        raise TruncatedData(f"checkpoint shorter than the {CHECKPOINT_5X_FAST.size} bytes 5.x reads", path, len(buf))
    return CHECKPOINT_5X_FAST.as_dict(buf, 0)


# --------------------------------------------------------------------------
# BatchConsumeQueue (and SparseConsumeQueue, the compaction store's queue)
# --------------------------------------------------------------------------

BATCH_CQ_UNIT = cs.Struct(
    "commitLogOffset" / cs.Int64sb,  # physical offset of the message (the compaction log's, for a sparse queue)
    "size" / cs.Int32sb,  # its totalSize
    "tagsCode" / cs.Int64sb,
    "storeTimestamp" / cs.Int64sb,
    "msgBaseOffset" / cs.Int64sb,  # queue offset of the first message of the (inner) batch
    "batchSize" / cs.Int16sb,  # messages in the batch (INNER_NUM; 1 for a plain message)
    "compactedOffset" / cs.Int32sb,  # INVALID_POS (-1) as written
    "reserved" / cs.Int32sb,  # 0
)
BATCH_CQ_UNIT_FAST = compile_fixed(BATCH_CQ_UNIT)
BATCH_CQ_UNIT_SIZE = BATCH_CQ_UNIT_FAST.size  # BatchConsumeQueue.CQ_STORE_UNIT_SIZE = 46
BATCH_CQ_DTYPE = BATCH_CQ_UNIT_FAST.numpy_dtype()
BATCH_CQ_INVALID_POS = -1
# SparseConsumeQueue.putEndPositionInfo: the unit that ends a sparse queue file early
SPARSE_END_POSITION = (-1, 0, 0, 0, 0, 0, BATCH_CQ_INVALID_POS, 0)


def batch_cq_units(buf) -> np.ndarray:
    """Zero-copy structured view of the whole 46-byte units of a BatchConsumeQueue buffer."""
    return np.frombuffer(buf, dtype=BATCH_CQ_DTYPE, count=len(buf) // BATCH_CQ_UNIT_SIZE)


def _unit_accepted(units: np.ndarray) -> np.ndarray:
    # BatchConsumeQueue.recover / SparseConsumeQueue.recover
    return ((units["commitLogOffset"] >= 0) & (units["size"] > 0) & (units["msgBaseOffset"] >= 0)
            & (units["batchSize"] > 0))


@dataclass
class BatchQueueEnd:
    """How the accepted units of one batch queue file end: ``kind`` is END_OF_FILE, ZERO_TAIL,
    END_POSITION (a sparse queue's end marker) or INVALID (a unit recovery refuses, not zeros);
    ``file_offset`` is where; ``non_zero_after`` the first non-zero byte after a zero tail."""

    kind: WalkEnd
    file_offset: int
    unit: dict | None = None
    non_zero_after: int | None = None


def scan_batch_cq(buf, *, file_from_offset: int = 0, sparse: bool = False) -> tuple[list[dict], BatchQueueEnd]:
    """The units of one BatchConsumeQueue (or SparseConsumeQueue) file as ``recover`` accepts them, and how
    they end.  Each unit carries its ``fileOffset`` and ``logicOffset``: its address in the queue's
    MappedFileQueue, the file's fileFromOffset (its name) plus its place, as ``recover`` counts it.  A
    BatchConsumeQueue file is named by its own first byte, so that is the byte offset in the queue; a
    compaction queue file is named after its compaction log file (``TopicPartitionLog.roll``), so its
    addresses jump from file to file."""
    units = batch_cq_units(buf)
    bad = np.flatnonzero(~_unit_accepted(units))
    stop = int(bad[0]) if bad.size else len(units)
    names = BATCH_CQ_UNIT_FAST.names
    rows = [{"fileOffset": i * BATCH_CQ_UNIT_SIZE, "logicOffset": file_from_offset + i * BATCH_CQ_UNIT_SIZE,
             **dict(zip(names, row))} for i, row in enumerate(units[:stop].tolist())]
    pos = stop * BATCH_CQ_UNIT_SIZE
    if stop < len(units):
        values = tuple(units[stop].tolist())
        unit = {"fileOffset": pos, **dict(zip(names, values))}
        if sparse and values == SPARSE_END_POSITION:
            return rows, BatchQueueEnd(WalkEnd.END_POSITION, pos, unit)
        if not any(values):
            return rows, BatchQueueEnd(WalkEnd.ZERO_TAIL, pos, None, rmq.first_nonzero(buf, pos, len(buf)))
        return rows, BatchQueueEnd(WalkEnd.INVALID, pos, unit)
    if pos < len(buf):
        after = rmq.first_nonzero(buf, pos, len(buf))
        return rows, BatchQueueEnd(WalkEnd.ZERO_TAIL if after is None else WalkEnd.INVALID, pos, None, after)
    return rows, BatchQueueEnd(WalkEnd.END_OF_FILE, pos)


# --------------------------------------------------------------------------
# Timer store: TimerLog, TimerWheel, TimerCheckpoint, TimerMetrics
# --------------------------------------------------------------------------

# TimerMessageStore.doEnqueue writes these, in this order
TIMER_LOG_UNIT = cs.Struct(
    "size" / cs.Int32sb,  # TimerLog.UNIT_SIZE (52)
    "prevPos" / cs.Int64sb,  # timer log offset of the previous unit of the same wheel slot, -1 for the first
    "magic" / cs.Int32sb,  # MAGIC_DEFAULT | MAGIC_ROLL | MAGIC_DELETE
    "currWriteTime" / cs.Int64sb,  # ms, the wheel's write time when enqueued
    "delayTime" / cs.Int32sb,  # ms after currWriteTime the message is due (the slot's time)
    "offsetPy" / cs.Int64sb,  # CommitLog offset of the timer message
    "sizePy" / cs.Int32sb,  # its totalSize
    "topicHash" / cs.Int32sb,  # String.hashCode of the real topic (TimerMessageStore.hashTopicForMetrics)
    "reserved" / cs.Int64sb,  # 0
)
TIMER_LOG_UNIT_FAST = compile_fixed(TIMER_LOG_UNIT)
TIMER_LOG_UNIT_SIZE = TIMER_LOG_UNIT_FAST.size  # 52
# TimerLog.append, when a unit does not fit: this, then nothing (the rest of the file is unwritten)
TIMER_LOG_BLANK = cs.Struct(
    "size" / cs.Int32sb,  # bytes left in the file
    "zero" / cs.Int64sb,
    "magic" / cs.Int32sb,  # TIMER_LOG_BLANK_MAGIC
)
TIMER_LOG_BLANK_FAST = compile_fixed(TIMER_LOG_BLANK)
# TimerLog.BLANK_MAGIC_CODE = 0xBBCCDDEE ^ 1880681586 + 8: Java's + binds before ^
TIMER_LOG_BLANK_MAGIC = (0xBBCCDDEE ^ (1880681586 + 8)) - (1 << 32)
TIMER_MAGIC_DEFAULT, TIMER_MAGIC_ROLL, TIMER_MAGIC_DELETE = 1, 1 << 1, 1 << 2
DEFAULT_TIMER_PRECISION_MS = 1000  # MessageStoreConfig.timerPrecisionMs

TIMER_WHEEL_SLOT = cs.Struct(
    "time" / cs.Int64sb,  # the slot's delay time / timerPrecisionMs (TimerWheel.putSlot)
    "firstPos" / cs.Int64sb,  # timer log offset of the slot's first unit
    "lastPos" / cs.Int64sb,  # ... of its last unit (the chain runs back through prevPos)
    "num" / cs.Int32sb,  # units enqueued minus deletes
    "magic" / cs.Int32sb,  # unused ("no use now, just keep it")
)
TIMER_WHEEL_SLOT_FAST = compile_fixed(TIMER_WHEEL_SLOT)
TIMER_WHEEL_SLOT_SIZE = TIMER_WHEEL_SLOT_FAST.size  # Slot.SIZE = 32
TIMER_WHEEL_DTYPE = TIMER_WHEEL_SLOT_FAST.numpy_dtype()
TIMER_WHEEL_TTL_DAY = 7
TIMER_SLOTS_TOTAL = TIMER_WHEEL_TTL_DAY * 86400  # TimerMessageStore: slotsTotal, whatever the precision
TIMER_WHEEL_SLOTS = TIMER_SLOTS_TOTAL * 2
TIMER_WHEEL_SIZE = TIMER_WHEEL_SLOTS * TIMER_WHEEL_SLOT_SIZE  # TimerWheel.wheelLength

TIMER_CHECKPOINT = cs.Struct(
    "lastReadTimeMs" / cs.Int64sb,  # where the dequeue side has read the wheel to
    "lastTimerLogFlushPos" / cs.Int64sb,  # timer log offset recovery re-reads from
    "lastTimerQueueOffset" / cs.Int64sb,  # rmq_sys_wheel_timer queue offset enqueued up to
    "masterTimerQueueOffset" / cs.Int64sb,  # the master's, on a slave
    "stateVersion" / cs.Int64sb,  # DataVersion (newer brokers; zero before)
    "dataVersionTimestamp" / cs.Int64sb,
    "dataVersionCounter" / cs.Int64sb,
)
TIMER_CHECKPOINT_FAST = compile_fixed(TIMER_CHECKPOINT)
TIMER_CHECKPOINT_BASE_SIZE = 32  # the four longs every version writes

TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC


def timer_magic_ok(magic: int) -> bool:
    """``TimerMessageStore.isMagicOK``."""
    return (magic | 0xF) == 0xF


def timer_magic_flags(magic: int) -> str:
    flags = [name for bit, name in ((TIMER_MAGIC_DEFAULT, "default"), (TIMER_MAGIC_ROLL, "roll"),
                                    (TIMER_MAGIC_DELETE, "delete")) if magic & bit]
    return ",".join(flags)


@dataclass
class TimerLogEnd:
    """How a walk of one timer log file ended: BLANK (the BLANK record), ZERO_TAIL, END_OF_FILE,
    BAD_UNIT (a size or magic ``recoverAndRevise`` refuses; it truncates the timer log there) or
    SHORT_TAIL (bytes too few for a unit)."""

    kind: WalkEnd
    file_offset: int
    size: int = 0
    magic: int = 0
    blank_size_matches: bool | None = None
    non_zero_after: int | None = None


def walk_timer_log(buf, *, file_from_offset: int = 0) -> Iterator[dict | TimerLogEnd]:
    """The units of one timer log file as ``TimerMessageStore.recoverAndRevise(checkTimerLog=true)``
    reads them, then one ``TimerLogEnd``.  A unit carries ``fileOffset`` and ``timerLogOffset``."""
    size = len(buf)
    pos = 0
    unpack = TIMER_LOG_UNIT_FAST.unpack_from
    names = TIMER_LOG_UNIT_FAST.names
    while True:
        if pos == size:
            yield TimerLogEnd(WalkEnd.END_OF_FILE, pos)
            return
        if size - pos < TIMER_LOG_BLANK_FAST.size:
            yield TimerLogEnd(WalkEnd.SHORT_TAIL, pos, non_zero_after=rmq.first_nonzero(buf, pos, size))
            return
        unit_size, _, magic = TIMER_LOG_BLANK_FAST.unpack_from(buf, pos)
        if magic == TIMER_LOG_BLANK_MAGIC:
            yield TimerLogEnd(WalkEnd.BLANK, pos, unit_size, magic, blank_size_matches=unit_size == size - pos)
            return
        if unit_size == 0 and magic == 0:
            yield TimerLogEnd(WalkEnd.ZERO_TAIL, pos, non_zero_after=rmq.first_nonzero(buf, pos, size))
            return
        if not timer_magic_ok(magic) or unit_size != TIMER_LOG_UNIT_SIZE or size - pos < TIMER_LOG_UNIT_SIZE:
            yield TimerLogEnd(WalkEnd.BAD_UNIT, pos, unit_size, magic)
            return
        unit = dict(zip(names, unpack(buf, pos)))
        unit["fileOffset"] = pos
        unit["timerLogOffset"] = file_from_offset + pos
        unit["delayedTime"] = unit["currWriteTime"] + unit["delayTime"]
        yield unit
        pos += TIMER_LOG_UNIT_SIZE


def timer_wheel_slots(buf) -> np.ndarray:
    """Zero-copy structured view of the slots of a timer wheel buffer."""
    return np.frombuffer(buf, dtype=TIMER_WHEEL_DTYPE, count=len(buf) // TIMER_WHEEL_SLOT_SIZE)


def used_timer_slots(buf) -> list[dict]:
    """Every slot with a non-zero field, with its ``slot`` index (untouched slots are zero)."""
    slots = timer_wheel_slots(buf)
    used = np.flatnonzero((slots["time"] != 0) | (slots["firstPos"] != 0) | (slots["lastPos"] != 0)
                          | (slots["num"] != 0) | (slots["magic"] != 0))
    names = TIMER_WHEEL_SLOT_FAST.names
    return [{"slot": int(i), **dict(zip(names, slots[i].tolist()))} for i in used.tolist()]


def timer_slot_index(time_value: int) -> int:
    """``TimerWheel.getSlotIndex`` for a slot's stored time (timeMs / precisionMs)."""
    return time_value % TIMER_WHEEL_SLOTS


def read_timer_checkpoint(buf, path: str | None = None) -> dict:
    """``TimerCheckpoint(scpPath)``: four longs, then the DataVersion's three (zero in older files)."""
    if len(buf) < TIMER_CHECKPOINT_BASE_SIZE:
        raise TruncatedData(f"timer checkpoint shorter than its {TIMER_CHECKPOINT_BASE_SIZE} bytes", path, len(buf))
    padded = bytes(buf[:TIMER_CHECKPOINT_FAST.size]).ljust(TIMER_CHECKPOINT_FAST.size, b"\0")
    return TIMER_CHECKPOINT_FAST.as_dict(padded, 0)


def _json_object(data: bytes, path: str | None, what: str) -> dict:
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptData(f"{what} is not UTF-8 text", path, exc.start) from None
    except json.JSONDecodeError as exc:
        raise CorruptData(f"{what} does not parse: {exc.msg}", path, exc.pos) from None
    if not isinstance(value, dict):
        raise CorruptData(f"{what} is not a JSON object", path, 0)
    return value


def _long(value, what: str, path: str | None) -> int:
    # fastjson's BrowserCompatible writes longs beyond 2^53 as strings
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptData(f"{what} is not a number: {value!r:.40}", path, None)
    return value


def read_timer_metrics(data: bytes, path: str | None = None) -> dict:
    """``TimerMetrics.persist`` (``TimerMetricsSerializeWrapper`` written by fastjson):
    ``{"dataVersion": {counter, stateVersion, timestamp}, "timingCount": {topic: {count, timeStamp}}}``.
    Returns the data version and one row per topic."""
    data = bytes(data)
    if not data.strip():
        raise CorruptData("timer metrics file is empty (the broker loads the .bak)", path, 0)
    root = _json_object(data, path, "timer metrics")
    version = root.get("dataVersion") or {}
    if not isinstance(version, dict):
        raise CorruptData("timer metrics dataVersion is not an object", path, None)
    counts = root.get("timingCount") or {}
    if not isinstance(counts, dict):
        raise CorruptData("timer metrics timingCount is not an object", path, None)
    topics = []
    for topic, metric in counts.items():
        if not isinstance(metric, dict):
            raise CorruptData(f"timer metric of {topic!r:.60} is not an object", path, None)
        topics.append({"topic": topic, "count": _long(metric.get("count", 0), "count", path),
                       "timeStamp": _long(metric.get("timeStamp", 0), "timeStamp", path)})
    return {"dataVersion": {name: _long(version.get(name, 0), name, path)
                            for name in ("counter", "stateVersion", "timestamp")},
            "timingCount": topics}


# --------------------------------------------------------------------------
# DLedger CommitLog
# --------------------------------------------------------------------------

# DLedgerEntryCoder.encode (dledger 0.3.1.2): the header, then the body (a CommitLog message)
DLEDGER_ENTRY_HEADER = cs.Struct(
    "magic" / cs.Int32sb,  # DLedgerMmapFileStore.CURRENT_MAGIC (MAGIC_1 = 1)
    "size" / cs.Int32sb,  # the whole entry: BODY_OFFSET + bodySize
    "index" / cs.Int64sb,  # raft log index, one more than the previous entry's
    "term" / cs.Int64sb,  # raft term, never decreasing
    "pos" / cs.Int64sb,  # the entry's own offset in the data files
    "channel" / cs.Int32sb,  # reserved (0)
    "chainCrc" / cs.Int32sb,  # not computed by 0.3.1.2 (0)
    "bodyCrc" / cs.Int32sb,  # not computed by 0.3.1.2 (0)
    "bodySize" / cs.Int32sb,
)
DLEDGER_ENTRY_HEADER_FAST = compile_fixed(DLEDGER_ENTRY_HEADER)
DLEDGER_BODY_OFFSET = DLEDGER_ENTRY_HEADER_FAST.size  # DLedgerEntry.BODY_OFFSET = 48
DLEDGER_HEADER_SIZE = DLEDGER_BODY_OFFSET - 4  # DLedgerEntry.HEADER_SIZE = 44
DLEDGER_MAGIC = 1  # DLedgerMmapFileStore.MAGIC_1 = CURRENT_MAGIC
DLEDGER_BLANK_MAGIC = -1  # MmapFileList.BLANK_MAGIC_CODE: then the bytes left in the file, then zeros
DLEDGER_BLANK = cs.Struct("magic" / cs.Int32sb, "size" / cs.Int32sb)
DLEDGER_BLANK_FAST = compile_fixed(DLEDGER_BLANK)

# DLedgerEntryCoder.encodeIndex
DLEDGER_INDEX_ENTRY = cs.Struct(
    "magic" / cs.Int32sb,
    "pos" / cs.Int64sb,  # the entry's offset in the data files
    "size" / cs.Int32sb,
    "index" / cs.Int64sb,
    "term" / cs.Int64sb,
)
DLEDGER_INDEX_ENTRY_FAST = compile_fixed(DLEDGER_INDEX_ENTRY)
DLEDGER_INDEX_UNIT_SIZE = DLEDGER_INDEX_ENTRY_FAST.size  # DLedgerMmapFileStore.INDEX_UNIT_SIZE = 32
DLEDGER_INDEX_DTYPE = DLEDGER_INDEX_ENTRY_FAST.numpy_dtype()


@dataclass
class DLedgerEnd:
    """How a walk of one DLedger data file ended: BLANK (MmapFileList's BLANK), ZERO_TAIL (size 0:
    the end of the data), END_OF_FILE, SHORT_TAIL, or BAD_ENTRY (a header ``recover`` refuses:
    ``reason`` says which check; the data is truncated there)."""

    kind: WalkEnd
    file_offset: int
    reason: str | None = None
    non_zero_after: int | None = None


def dledger_entry_problem(header: dict, absolute_pos: int, previous: dict | None) -> str | None:
    """The first of ``DLedgerMmapFileStore.recover``'s checks an entry header fails, in its order."""
    if header["pos"] != absolute_pos:
        return f"pos {header['pos']} != {absolute_pos}"
    if header["bodySize"] + DLEDGER_BODY_OFFSET != header["size"]:
        return f"size {header['size']} != {header['bodySize']} + {DLEDGER_BODY_OFFSET}"
    if header["magic"] != DLEDGER_MAGIC:
        return f"magic {header['magic']} is not {DLEDGER_MAGIC}"
    if previous is not None and header["index"] != previous["index"] + 1:
        return f"index {header['index']} does not follow {previous['index']}"
    if previous is not None and header["term"] < previous["term"]:
        return f"term {header['term']} is below the previous entry's {previous['term']}"
    if header["size"] <= DLEDGER_HEADER_SIZE:
        return f"size {header['size']} should > {DLEDGER_HEADER_SIZE}"
    return None


def walk_dledger_data(buf, *, file_from_offset: int = 0, previous: dict | None = None,
                      **decode_options) -> Iterator[tuple[dict, dict | SegtoolError] | DLedgerEnd]:
    """(header, message) of every entry of one DLedger data file as ``DLedgerMmapFileStore.recover``
    reads them, then one ``DLedgerEnd``.  The message is the CommitLog message at BODY_OFFSET, decoded
    by ``rocketmq.decode_message`` (its phyOffset is the entry's pos + 48, as DLedgerCommitLog's append
    hook sets it), or the SegtoolError that decoding raised.  ``previous`` is the header before the
    file (index/term continuity across files)."""
    size = len(buf)
    pos = 0
    names = DLEDGER_ENTRY_HEADER_FAST.names
    while True:
        if pos == size:
            yield DLedgerEnd(WalkEnd.END_OF_FILE, pos)
            return
        if size - pos < DLEDGER_BLANK_FAST.size:
            yield DLedgerEnd(WalkEnd.SHORT_TAIL, pos, non_zero_after=rmq.first_nonzero(buf, pos, size))
            return
        magic, entry_size = DLEDGER_BLANK_FAST.unpack_from(buf, pos)
        if magic == DLEDGER_BLANK_MAGIC:
            yield DLedgerEnd(WalkEnd.BLANK, pos, None if entry_size == size - pos else
                             f"BLANK says {entry_size} bytes are left but {size - pos} are")
            return
        if entry_size == 0:
            yield DLedgerEnd(WalkEnd.ZERO_TAIL, pos, non_zero_after=rmq.first_nonzero(buf, pos, size))
            return
        if size - pos < DLEDGER_BODY_OFFSET:
            yield DLedgerEnd(WalkEnd.BAD_ENTRY, pos, f"entry header cut off: {size - pos} bytes left")
            return
        header = dict(zip(names, DLEDGER_ENTRY_HEADER_FAST.unpack_from(buf, pos)))
        header["fileOffset"] = pos
        problem = dledger_entry_problem(header, file_from_offset + pos, previous)
        if problem is None and pos + header["size"] > size:
            problem = f"entry of size {header['size']} runs past the end of the file ({size - pos} bytes left)"
        if problem is not None:
            yield DLedgerEnd(WalkEnd.BAD_ENTRY, pos, problem)
            return
        try:
            message = rmq.decode_message(buf, pos + DLEDGER_BODY_OFFSET, end=pos + header["size"],
                                         file_from_offset=file_from_offset, **decode_options)
        except SegtoolError as exc:
            message = exc
        yield header, message
        previous = header
        pos += header["size"]


def dledger_index_entries(buf, *, file_from_offset: int = 0) -> tuple[list[dict], int]:
    """The written entries of one DLedger index file (up to the first all-zero one) with their
    ``slot`` (the raft index the position stands for: byte offset / 32), and where they end."""
    entries = np.frombuffer(buf, dtype=DLEDGER_INDEX_DTYPE, count=len(buf) // DLEDGER_INDEX_UNIT_SIZE)
    zero = np.flatnonzero((entries["magic"] == 0) & (entries["pos"] == 0) & (entries["size"] == 0)
                          & (entries["index"] == 0) & (entries["term"] == 0))
    stop = int(zero[0]) if zero.size else len(entries)
    first = file_from_offset // DLEDGER_INDEX_UNIT_SIZE
    names = DLEDGER_INDEX_ENTRY_FAST.names
    rows = [{"slot": first + i, "fileOffset": i * DLEDGER_INDEX_UNIT_SIZE, **dict(zip(names, row))}
            for i, row in enumerate(entries[:stop].tolist())]
    return rows, stop * DLEDGER_INDEX_UNIT_SIZE


class DLedgerData:
    """Random access to the entry headers of a DLedger data directory by pos (``MmapFileList.getData``)."""

    def __init__(self, directory):
        self.files = rmq.list_mapped_files(directory)
        self._starts = [start for start, _ in self.files]
        self._open: dict[int, rmq.MappedFile] = {}

    def header_at(self, pos: int) -> dict | None:
        """The entry header at ``pos``, or None when no data file holds a whole header there."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if pos < 0 or i < 0:
            return None
        start, path = self.files[i]
        mapped = self._open.get(start)
        if mapped is None:
            mapped = self._open[start] = rmq.MappedFile(path)
        if pos - start + DLEDGER_BODY_OFFSET > mapped.size:
            return None
        return DLEDGER_ENTRY_HEADER_FAST.as_dict(mapped.buf, pos - start)

    def close(self) -> None:
        for mapped in self._open.values():
            mapped.close()
        self._open.clear()


def read_java_properties(data: bytes) -> dict[str, str]:
    """``Properties.load`` of what ``IOUtils.properties2String`` writes (``key=value`` lines, ``#``
    comments; the DLedger checkpoint's values are numbers, so no escapes matter)."""
    values = {}
    for line in bytes(data).decode("latin-1").splitlines():  # Properties.load reads ISO 8859-1
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, value = re.match(r"([^=:\s]*)\s*[=:]?\s*(.*)", line).groups()
        values[key] = value
    return values


DLEDGER_END_INDEX_KEY, DLEDGER_COMMITTED_INDEX_KEY = "endIndex", "committedIndex"


def read_dledger_checkpoint(data: bytes, path: str | None = None) -> dict:
    """``DLedgerMmapFileStore.loadCheckPoint``: endIndex and committedIndex (None when absent)."""
    props = read_java_properties(data)
    out = {}
    for key in (DLEDGER_END_INDEX_KEY, DLEDGER_COMMITTED_INDEX_KEY):
        value = props.get(key)
        if value is not None and not re.fullmatch(r"-?\d+", value):
            raise CorruptData(f"DLedger checkpoint {key} is not a number: {value!r:.40}", path, None)
        out[key] = int(value) if value is not None else None
    return out


# --------------------------------------------------------------------------
# Compaction store
# --------------------------------------------------------------------------

COMPACTION_LOG_DIR, COMPACTION_CQ_DIR = "compactionLog", "compactionCq"  # CompactionStore
COMPACTION_SUB_FOLDERS = ("compacting", "replicating")  # CompactionLog's temporary logs


def read_compaction_positions(data: bytes, path: str | None = None) -> list[dict]:
    """``CompactionPositionMgr`` (``{"queueOffsetMap": {"<topic>_<queueId>": offset}}``): per queue, the
    queue offset compaction has reached."""
    root = _json_object(bytes(data), path, "compaction position checkpoint")
    table = root.get("queueOffsetMap") or {}
    if not isinstance(table, dict):
        raise CorruptData("queueOffsetMap is not an object", path, None)
    rows = []
    for key, offset in table.items():
        topic, _, queue = key.rpartition("_")
        rows.append({"key": key, "topic": topic if rocketmq_names.queue_id(queue) is not None else key,
                     "queueId": rocketmq_names.queue_id(queue),
                     "offset": _long(offset, key, path)})
    return rows


# --------------------------------------------------------------------------
# lock and abort
# --------------------------------------------------------------------------

LOCK_CONTENT = b"lock"  # DefaultMessageStore.start writes it after taking the file lock


def _shown(data: bytes) -> str:
    # the marker's bytes as text, anything but printable ASCII escaped (\xNN)
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in data)


def read_lock(data: bytes) -> dict:
    """The ``lock`` file: DefaultMessageStore.start takes an OS lock on its first byte (held while the
    broker runs, gone with the process, so a copy cannot show it) and writes "lock" at position 0."""
    data = bytes(data)
    return {"content": _shown(data[:64]), "written_by_start": data[:len(LOCK_CONTENT)] == LOCK_CONTENT}


def read_abort(data: bytes) -> dict:
    """The ``abort`` file: created by DefaultMessageStore.start (createTempFile), deleted by a clean
    shutdown; present means the broker stopped uncleanly (or is running).  4.x leaves it empty; 5.x
    writes the broker's process id (MixAll.string2File).  ``pid`` is None when there is none."""
    data = bytes(data).strip()
    return {"content": _shown(data[:64]), "pid": int(data) if data.isdigit() else None}
