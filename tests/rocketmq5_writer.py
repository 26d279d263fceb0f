"""A writer of RocketMQ 5.x store files that follows RocketMQ's Java code byte for byte.

No real 5.x store is in the corpus, so tests/test_rocketmq5.py builds one with this and reads it
back with segtool.  Everything here is written as the Java methods named beside it write it
(apache/rocketmq ``store/`` on its develop branch, 5.x; openmessaging/dledger 0.3.1.2), with plain
``struct``: nothing is taken from segtool's layouts, so a reader that disagrees with Java and with
this writer shows up as a round-trip failure.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

# MessageDecoder / CommitLog
MESSAGE_MAGIC_CODE = -626843481  # MessageVersion.MESSAGE_VERSION_V1
MESSAGE_MAGIC_CODE_V2 = -626843477  # MessageVersion.MESSAGE_VERSION_V2
BLANK_MAGIC_CODE = -875286124
END_FILE_MIN_BLANK_LENGTH = 4 + 4
PROPERTY_CRC32 = "__CRC32#"
CRC32_RESERVED_LEN = len(PROPERTY_CRC32) + 1 + 10 + 1
BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG = 0x1 << 4, 0x1 << 5
PHY_POS_POSITION = 4 + 4 + 4 + 4 + 4 + 8

# BatchConsumeQueue
BCQ_UNIT_SIZE = 46
INVALID_POS = -1

# TimerLog / TimerWheel / TimerMessageStore
TIMER_UNIT_SIZE = 4 + 8 + 4 + 8 + 4 + 8 + 4 + 4 + 8
TIMER_MIN_BLANK_LEN = 4 + 8 + 4
TIMER_BLANK_MAGIC_CODE = struct.unpack(">i", struct.pack(">I", 0xBBCCDDEE ^ (1880681586 + 8)))[0]
TIMER_SLOTS_TOTAL = 7 * 86400
TIMER_ROLL_WINDOW_SLOTS = 3600 * 24 * 2  # MessageStoreConfig.timerRollWindowSlot (within slotsTotal - 60)
SLOT_SIZE = 32
MAGIC_DEFAULT, MAGIC_ROLL, MAGIC_DELETE = 1, 1 << 1, 1 << 2

# DLedger 0.3.1.2
DLEDGER_MAGIC = 1
DLEDGER_BODY_OFFSET = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 4
DLEDGER_BLANK_MAGIC = -1
DLEDGER_MIN_BLANK_LEN = 8
DLEDGER_INDEX_UNIT_SIZE = 32

OS_PAGE_SIZE = 4096  # DefaultMappedFile.OS_PAGE_SIZE: the checkpoints map one page


def crc32(data: bytes) -> int:
    """UtilAll.crc32: java.util.zip.CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


def java_hash(text: str) -> int:
    """String.hashCode."""
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def properties_string(properties: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String."""
    return "".join(f"{name}\x01{value}\x02" for name, value in properties.items() if value is not None)


def create_crc32(value: int) -> bytes:
    """MessageDecoder.createCrc32: the name, \\x01, ten digits least significant first, \\x02."""
    digits = bytearray()
    for _ in range(10):
        b = ord("0")
        if value > 0:
            b += value % 10
            value //= 10
        digits.append(b)
    return PROPERTY_CRC32.encode() + b"\x01" + bytes(digits) + b"\x02"


@dataclass
class Message:
    """A MessageExtBrokerInner as the broker stores it."""

    topic: str
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    flag: int = 0
    born_timestamp: int = 1_700_000_000_000
    born_host: bytes = bytes([10, 0, 0, 7])
    born_port: int = 50_000
    store_timestamp: int = 1_700_000_000_100
    store_host: bytes = bytes([10, 0, 0, 1])
    store_port: int = 10_911
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    version: int | None = None  # None: CommitLog.asyncPutMessage's choice (V2 when the topic is > 127 chars)
    raw_topic: bytes | None = None  # bytes written as they are instead of ``topic`` (not UTF-8, say)
    raw_properties: bytes | None = None  # bytes written as they are instead of ``properties`` (duplicates, say)

    @property
    def magic(self) -> int:
        version = self.version or (2 if len(self.topic) > 127 else 1)  # autoMessageVersionOnTopicLen
        return MESSAGE_MAGIC_CODE_V2 if version == 2 else MESSAGE_MAGIC_CODE


def encode_message(msg: Message, physical_offset: int, append_crc: bool) -> bytes:
    """MessageExtEncoder.encode, then what DefaultAppendMessageCallback.doAppend fills in: QUEUEOFFSET,
    PHYSICALOFFSET, STORETIMESTAMP and, with enabledAppendPropCRC, the __CRC32# property over the bytes
    before the 20 reserved ones."""
    reserved = CRC32_RESERVED_LEN if append_crc else 0
    props = properties_string(msg.properties).encode() if msg.raw_properties is None else msg.raw_properties
    need_separator = reserved > 0 and len(props) > 0 and props[-1] != 2
    properties_length = len(props) + (1 if need_separator else 0) + reserved
    topic = msg.topic.encode() if msg.raw_topic is None else msg.raw_topic
    out = bytearray()
    out += struct.pack(">i", 0)  # 1 TOTALSIZE, filled below
    out += struct.pack(">i", msg.magic)  # 2 MAGICCODE
    out += struct.pack(">i", crc32(msg.body))  # 3 BODYCRC
    out += struct.pack(">i", msg.queue_id)  # 4 QUEUEID
    out += struct.pack(">i", msg.flag)  # 5 FLAG
    out += struct.pack(">q", msg.queue_offset)  # 6 QUEUEOFFSET
    out += struct.pack(">q", physical_offset)  # 7 PHYSICALOFFSET
    out += struct.pack(">i", msg.sys_flag)  # 8 SYSFLAG
    out += struct.pack(">q", msg.born_timestamp)  # 9 BORNTIMESTAMP
    out += msg.born_host + struct.pack(">i", msg.born_port)  # 10 BORNHOST
    out += struct.pack(">q", msg.store_timestamp)  # 11 STORETIMESTAMP
    out += msg.store_host + struct.pack(">i", msg.store_port)  # 12 STOREHOSTADDRESS
    out += struct.pack(">i", msg.reconsume_times)  # 13 RECONSUMETIMES
    out += struct.pack(">q", msg.prepared_transaction_offset)  # 14 Prepared Transaction Offset
    out += struct.pack(">i", len(msg.body)) + msg.body  # 15 BODY
    if msg.magic == MESSAGE_MAGIC_CODE_V2:  # 16 TOPIC
        out += struct.pack(">h", len(topic))
    else:
        out += struct.pack(">b", len(topic))
    out += topic
    out += struct.pack(">h", properties_length)  # 17 PROPERTIES
    if properties_length > reserved:
        out += props
    if need_separator:
        out += b"\x02"
    out += bytes(reserved)  # 18 CRC32, reserved (CRC32_RESERVED_LEN = 8 + 1 + 10 + 1 = 20 bytes)
    struct.pack_into(">i", out, 0, len(out))
    if append_crc:
        check_size = len(out) - reserved
        out[check_size:] = create_crc32(crc32(bytes(out[:check_size])))
    return bytes(out)


class MappedFileQueue:
    """Files of one size, named by their start offset (20 digits), as MappedFileQueue creates them."""

    def __init__(self, directory: Path, file_size: int):
        self.directory = directory
        self.file_size = file_size
        self.files: list[bytearray] = []
        self.wrote = 0  # write position in the last file

    @property
    def offset(self) -> int:
        return (len(self.files) - 1) * self.file_size + self.wrote if self.files else 0

    def last(self) -> bytearray:
        if not self.files or self.wrote == self.file_size:
            self.files.append(bytearray(self.file_size))
            self.wrote = 0
        return self.files[-1]

    def put(self, data: bytes) -> int:
        buf = self.last()
        start = self.offset
        buf[self.wrote:self.wrote + len(data)] = data
        self.wrote += len(data)
        return start

    def write(self, names: list[int] | None = None) -> list[Path]:
        """The files under their own start offsets, or under ``names`` (one offset a file)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for i, data in enumerate(self.files):
            path = self.directory / f"{i * self.file_size if names is None else names[i]:020d}"
            path.write_bytes(bytes(data))
            paths.append(path)
        return paths


class CommitLogWriter(MappedFileQueue):
    """CommitLog.asyncPutMessage -> DefaultAppendMessageCallback.doAppend."""

    def __init__(self, directory: Path, file_size: int, append_crc: bool = False):
        super().__init__(directory, file_size)
        self.append_crc = append_crc
        self.records: list[dict] = []  # what was written: offset, bytes, message

    def append(self, msg: Message) -> int:
        self.last()
        size = len(encode_message(msg, 0, self.append_crc))
        max_blank = self.file_size - self.wrote
        if size + END_FILE_MIN_BLANK_LENGTH > max_blank:  # END_OF_FILE: maxBlank and the BLANK magic, then nothing
            self.put(struct.pack(">ii", max_blank, BLANK_MAGIC_CODE))
            self.wrote = self.file_size
            self.last()
        offset = self.offset
        record = encode_message(msg, offset, self.append_crc)
        self.put(record)
        self.records.append({"offset": offset, "bytes": record, "message": msg})
        return offset


def checkpoint_bytes(physic: int, logics: int, index: int, master_flushed: int, confirm: int) -> bytes:
    """StoreCheckpoint.flush (5.x) into its one-page file."""
    return struct.pack(">qqqqq", physic, logics, index, master_flushed, confirm).ljust(OS_PAGE_SIZE, b"\0")


def bcq_unit(offset: int, size: int, tags_code: int, store_time: int, msg_base_offset: int, batch_size: int) -> bytes:
    """BatchConsumeQueue.putBatchMessagePositionInfo."""
    return struct.pack(">qiqqqhii", offset, size, tags_code, store_time, msg_base_offset, batch_size, INVALID_POS, 0)


def sparse_end_position() -> bytes:
    """SparseConsumeQueue.putEndPositionInfo."""
    return struct.pack(">qiqqqhii", -1, 0, 0, 0, 0, 0, INVALID_POS, 0)


class TimerStore:
    """TimerMessageStore.doEnqueue over TimerLog.append and TimerWheel.putSlot."""

    def __init__(self, root: Path, timer_log_file_size: int, precision_ms: int = 1000):
        self.log = MappedFileQueue(root / "timerlog", timer_log_file_size)
        self.precision = precision_ms
        self.wheel = bytearray(TIMER_SLOTS_TOTAL * 2 * SLOT_SIZE)
        self.units: list[dict] = []
        self.root = root

    def _slot_index(self, time_ms: int) -> int:
        return time_ms // self.precision % (TIMER_SLOTS_TOTAL * 2)

    def get_slot(self, time_ms: int) -> tuple[int, int, int, int, int]:
        """TimerWheel.getSlot: the raw slot, or (-1, -1, -1, 0, 0) when it holds another time."""
        stored, first, last, num, magic = struct.unpack_from(">qqqii", self.wheel,
                                                             self._slot_index(time_ms) * SLOT_SIZE)
        if stored * self.precision != time_ms // self.precision * self.precision:
            return -1, -1, -1, 0, 0
        return stored * self.precision, first, last, num, magic

    def append(self, data: bytes) -> int:
        """TimerLog.append."""
        self.log.last()
        if len(data) + TIMER_MIN_BLANK_LEN > self.log.file_size - self.log.wrote:
            remaining = self.log.file_size - self.log.wrote
            self.log.put(struct.pack(">iqi", remaining, 0, TIMER_BLANK_MAGIC_CODE))
            self.log.wrote = self.log.file_size
        return self.log.put(data)

    def enqueue(self, offset_py: int, size_py: int, delayed_time: int, write_time: int, real_topic: str,
                delete: bool = False) -> int:
        """TimerMessageStore.doEnqueue: a delay past the roll window is written as a MAGIC_ROLL unit at a
        nearer time (half the window, or the whole window), to be put back into the timer then."""
        magic = MAGIC_DEFAULT
        window = TIMER_ROLL_WINDOW_SLOTS * self.precision
        if delayed_time - write_time >= window:
            magic |= MAGIC_ROLL
            if delayed_time - write_time - window < TIMER_ROLL_WINDOW_SLOTS // 3 * self.precision:
                delayed_time = write_time + TIMER_ROLL_WINDOW_SLOTS // 2 * self.precision
            else:
                delayed_time = write_time + window
        magic |= MAGIC_DELETE if delete else 0
        _, first, last, num, slot_magic = self.get_slot(delayed_time)
        unit = struct.pack(">iqiqiqiiq", TIMER_UNIT_SIZE, last, magic, write_time, delayed_time - write_time,
                           offset_py, size_py, java_hash(real_topic), 0)
        ret = self.append(unit)
        # TimerWheel.putSlot(timeMs, firstPos, lastPos, num, magic)
        struct.pack_into(">qqqii", self.wheel, self._slot_index(delayed_time) * SLOT_SIZE,
                         delayed_time // self.precision, ret if first == -1 else first, ret,
                         num - 1 if delete else num + 1, slot_magic)
        self.units.append({"timer_log_offset": ret, "prev_pos": last, "magic": magic, "curr_write_time": write_time,
                           "delay_time": delayed_time - write_time, "offset_py": offset_py, "size_py": size_py,
                           "topic_hash": java_hash(real_topic)})
        return ret

    def write(self) -> None:
        self.log.write()
        (self.root / "timerwheel").write_bytes(bytes(self.wheel))


def timer_checkpoint_bytes(last_read: int, flush_pos: int, queue_offset: int, master_queue_offset: int,
                           state_version: int, timestamp: int, counter: int) -> bytes:
    """TimerCheckpoint.flush into its one-page file."""
    return struct.pack(">7q", last_read, flush_pos, queue_offset, master_queue_offset, state_version, timestamp,
                       counter).ljust(OS_PAGE_SIZE, b"\0")


def timer_metrics_text(counts: dict[str, tuple[int, int]], counter: int, state_version: int, timestamp: int) -> str:
    """TimerMetrics.persist: fastjson writeJSONString of TimerMetricsSerializeWrapper (fields in name
    order, no spaces, BrowserCompatible: non-ASCII as \\u escapes)."""
    wrapper = {"dataVersion": {"counter": counter, "stateVersion": state_version, "timestamp": timestamp},
               "timingCount": {topic: {"count": count, "timeStamp": stamp} for topic, (count, stamp) in counts.items()}}
    return json.dumps(wrapper, separators=(",", ":"), ensure_ascii=True)


class DLedgerWriter:
    """DLedgerMmapFileStore.appendAsLeader, with DLedgerCommitLog's append hook (PHYSICALOFFSET = pos + 48)."""

    def __init__(self, root: Path, self_id: str, data_file_size: int, index_file_size: int):
        self.base = root / f"dledger-{self_id}"
        self.data = MappedFileQueue(self.base / "data", data_file_size)
        self.index = MappedFileQueue(self.base / "index", index_file_size)
        self.entries: list[dict] = []
        self.term = 0

    def append(self, msg: Message, term: int) -> dict:
        body = bytearray(encode_message(msg, 0, append_crc=False))  # DLedgerCommitLog.MessageSerializer
        size = DLEDGER_BODY_OFFSET + len(body)
        index = len(self.entries)
        self.data.last()
        remaining = self.data.file_size - self.data.wrote
        if size + DLEDGER_MIN_BLANK_LEN > remaining:  # MmapFileList.preAppend: BLANK, the bytes left, zeros
            self.data.put(struct.pack(">ii", DLEDGER_BLANK_MAGIC, remaining).ljust(remaining, b"\0"))
            self.data.last()
        pos = self.data.offset
        struct.pack_into(">q", body, PHY_POS_POSITION, pos + DLEDGER_BODY_OFFSET)  # the append hook
        # DLedgerEntryCoder.encode: channel, chainCrc and bodyCrc stay 0
        entry = struct.pack(">iiqqqiiii", DLEDGER_MAGIC, size, index, term, pos, 0, 0, 0, len(body)) + bytes(body)
        assert self.data.put(entry) == pos
        # DLedgerEntryCoder.encodeIndex
        self.index.put(struct.pack(">iqiqq", DLEDGER_MAGIC, pos, size, index, term))
        record = {"pos": pos, "size": size, "index": index, "term": term, "body": bytes(body), "message": msg}
        self.entries.append(record)
        return record

    def write(self, committed_index: int) -> None:
        self.data.write()
        self.index.write()
        # DLedgerMmapFileStore.persistCheckPoint: IOUtils.properties2String
        text = f"endIndex={len(self.entries) - 1}\ncommittedIndex={committed_index}\n"
        (self.base / "checkpoint").write_text(text, encoding="latin-1")


class CompactionWriter:
    """CompactionLog's CompactionAppendMessageCallback: a message copied into the compaction log with
    PHYSICALOFFSET replaced, and a SparseConsumeQueue unit (batch size 1) for it.  The log and its queue
    roll together (TopicPartitionLog.roll: the queue file is created by SparseConsumeQueue.createFile
    at the new log file's fileFromOffset), so each queue file is named after its log file, not after
    its own byte offset; TopicPartitionLog.sanityCheck refuses a store where the names differ."""

    def __init__(self, root: Path, topic: str, queue_id: int, log_file_size: int, cq_units_per_file: int):
        base = root / "compaction"
        self.log = MappedFileQueue(base / "compactionLog" / topic / str(queue_id), log_file_size)
        self.cq = MappedFileQueue(base / "compactionCq" / topic / str(queue_id), cq_units_per_file * BCQ_UNIT_SIZE)
        self.base = base
        self.units: list[dict] = []

    def append(self, record: bytes, tags_code: int, store_timestamp: int) -> int:
        msg_len = struct.unpack_from(">i", record, 0)[0]
        self.log.last()
        self.cq.last()
        max_blank = self.log.file_size - self.log.wrote
        if self.cq.wrote + BCQ_UNIT_SIZE >= self.cq.file_size or msg_len + END_FILE_MIN_BLANK_LENGTH > max_blank:
            if self.cq.wrote < self.cq.file_size:  # bcq.putEndPositionInfo (when the cq file is not full)
                self.cq.put(sparse_end_position())
            self.cq.wrote = self.cq.file_size
            self.log.put(struct.pack(">ii", max_blank, BLANK_MAGIC_CODE))
            self.log.wrote = self.log.file_size
            self.log.last()
            self.cq.last()
        logic_offset = struct.unpack_from(">q", record, 4 + 4 + 4 + 4 + 4)[0]
        physical = self.log.offset
        copied = bytearray(record)
        struct.pack_into(">q", copied, 4 + 4 + 4 + 4 + 4 + 8, physical)  # replace physical offset
        self.log.put(bytes(copied))
        self.cq.put(bcq_unit(physical, msg_len, tags_code, store_timestamp, logic_offset, 1))
        self.units.append({"commit_log_offset": physical, "size": msg_len, "tags_code": tags_code,
                           "store_timestamp": store_timestamp, "msg_base_offset": logic_offset, "batch_size": 1})
        return physical

    def write(self, positions: dict[str, int]) -> None:
        self.log.write()
        self.cq.write(names=[i * self.log.file_size for i in range(len(self.cq.files))])
        # CompactionPositionMgr.persist: RemotingSerializable.toJson
        (self.base / "position-checkpoint").write_text(json.dumps({"queueOffsetMap": positions},
                                                                   separators=(",", ":")))


def write_markers(root: Path, pid: int | None) -> None:
    """DefaultMessageStore.start: "lock" into the lock file; createTempFile: the abort file (5.x: with the
    process id, MixAll.string2File)."""
    (root / "lock").write_bytes(b"lock")
    (root / "abort").write_bytes(b"" if pid is None else str(pid).encode())


def write_file(path: Path, data: bytes) -> Path:
    os.makedirs(path.parent, exist_ok=True)
    path.write_bytes(data)
    return path
