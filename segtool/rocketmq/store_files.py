"""RocketMQ store files: CommitLog, ConsumeQueue, IndexFile and the checkpoint.

Layouts follow RocketMQ's own classes (``CommitLog``, ``MessageDecoder``,
``MessageSysFlag``, ``ConsumeQueue``, ``IndexFile``/``IndexHeader``,
``StoreCheckpoint``).  Everything is big-endian (Java ``ByteBuffer``).

The construct schemas below are the declaration of every layout; the fixed
parts are decoded in the hot path by the ``struct.Struct`` / numpy dtype that
``fastdecode.compile_fixed`` derives from them, and
``tests/test_rocketmq_formats.py`` checks both against each other on the corpus.

Store layout (``storePathRootDir``)::

    commitlog/<20-digit start offset>           mappedFileSizeCommitLog bytes each (1 GiB default)
    consumequeue/<topic>/<queueId>/<20-digit>   20-byte units; name = byte offset in the queue
    index/<yyyyMMddHHmmssSSS>                   IndexFile, name = creation wall-clock time
    checkpoint                                  StoreCheckpoint (recovery timestamps)

Readers work on bytes / memoryview / mmap; the path-level helpers mmap the
files read-only.  Errors are raised as ``CorruptData`` / ``TruncatedData`` with
the byte offset *in the file* and its path; records already decoded before the
bad one have been yielded by then.
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import re
import sys
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import construct as cs
import numpy as np

from segtool.errors import CorruptData, LimitExceeded, SegtoolError, TruncatedData, UnreadableInput
from segtool.formats import compression
from segtool.rocketmq import names as rocketmq_names
from segtool.rocketmq.msgid import format_host
from segtool.formats.fastdecode import FixedLayout, compile_field, compile_fixed
from segtool.formats.outcomes import WalkEnd
from segtool.source import release_pages

# --------------------------------------------------------------------------
# Constants (MessageDecoder / MessageSysFlag / MessageConst)
# --------------------------------------------------------------------------

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7: v1, topic length is 1 signed byte
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB: 5.x, topic length is a 2-byte short (topics > 127 bytes)
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194: end-of-file filler, totalSize = bytes left in the file
MESSAGE_VERSIONS = {MESSAGE_MAGIC_CODE: 1, MESSAGE_MAGIC_CODE_V2: 2}

COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC  # also the mask of the transaction bits
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_TYPE_MASK = 0x700  # bits 8..10 (5.x); 0 with COMPRESSED_FLAG = zlib (4.x clients)
COMPRESSION_TYPES = {0: "zlib", 1: "lz4", 2: "zstd", 3: "zlib"}

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_UNIQ_KEY = "UNIQ_KEY"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_CRC32 = "__CRC32#"  # 5.x, enabledAppendPropCRC: CRC32 of the record before its last 20 bytes
CRC32_RESERVED_LEN = len(PROPERTY_CRC32) + 1 + 10 + 1  # CommitLog.CRC32_RESERVED_LEN: name, \x01, 10 digits, \x02
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

CQ_UNIT_SIZE = 20
CQ_BLANK_UNIT_SIZE = 0x7FFFFFFF  # ConsumeQueue.fillPreBlank writes (0, Integer.MAX_VALUE, 0)
CQ_EXT_MAX_ADDRESS = -(2**31) - 1  # ConsumeQueueExt.MAX_ADDR: a tagsCode <= this is an ext-file address

INDEX_HEADER_SIZE = 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
DEFAULT_HASH_SLOT_NUM = 5_000_000  # MessageStoreConfig.maxHashSlotNum
DEFAULT_INDEX_NUM = 5_000_000 * 4  # MessageStoreConfig.maxIndexNum

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024  # cap on one decompressed body (bodies are <= 4 MiB by default)

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

# --------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------

COMMITLOG_MESSAGE = cs.Struct(
    "totalSize" / cs.Int32sb,  # whole record, this field included
    "magicCode" / cs.Int32sb,  # MESSAGE_MAGIC_CODE (v1) or MESSAGE_MAGIC_CODE_V2
    "bodyCRC" / cs.Int32sb,  # UtilAll.crc32(body) = zlib CRC-32 & 0x7FFFFFFF of the stored body
    "queueId" / cs.Int32sb,
    "flag" / cs.Int32sb,  # user flag of the producer
    "queueOffset" / cs.Int64sb,  # index in the ConsumeQueue (or the batch start for inner batches)
    "physicalOffset" / cs.Int64sb,  # commitlog offset the broker assigned (= file start + position)
    "sysFlag" / cs.Int32sb,  # MessageSysFlag bits: compression, transaction type, IPv6 hosts
    "bornTimestamp" / cs.Int64sb,  # ms, producer clock
    # hosts are 4-byte IPv4 or 16-byte IPv6 addresses chosen by sysFlag bits 4 / 5, then an int port
    "bornHost" / cs.IfThenElse(cs.this.sysFlag & BORNHOST_V6_FLAG, cs.Bytes(16), cs.Bytes(4)),
    "bornPort" / cs.Int32sb,
    "storeTimestamp" / cs.Int64sb,  # ms, broker clock when appended
    "storeHost" / cs.IfThenElse(cs.this.sysFlag & STOREHOSTADDRESS_V6_FLAG, cs.Bytes(16), cs.Bytes(4)),
    "storePort" / cs.Int32sb,
    "reconsumeTimes" / cs.Int32sb,
    "preparedTransactionOffset" / cs.Int64sb,  # commit messages: phy offset of the half message
    "bodyLength" / cs.Int32sb,
    "body" / cs.Bytes(lambda this: max(this.bodyLength, 0)),  # zlib/lz4/zstd data when sysFlag & 1
    # Java reads a signed byte (v1) or short (v2); a negative length is an exception there
    "topicLength" / cs.IfThenElse(cs.this.magicCode == MESSAGE_MAGIC_CODE_V2, cs.Int16sb, cs.Int8sb),
    "topic" / cs.Bytes(lambda this: max(this.topicLength, 0)),  # UTF-8
    "propertiesLength" / cs.Int16sb,  # signed short; <= 0 means no properties
    "properties" / cs.Bytes(lambda this: max(this.propertiesLength, 0)),  # UTF-8 name\x01value\x02...
)

# The 8 bytes RocketMQ writes at the end of a file when the next message does not
# fit (CommitLog.DefaultAppendMessageCallback, END_OF_FILE); the rest is not written.
BLANK_RECORD = cs.Struct(
    "totalSize" / cs.Int32sb,  # bytes from here to the end of the file
    "magicCode" / cs.Int32sb,  # BLANK_MAGIC_CODE
)

CONSUME_QUEUE_UNIT = cs.Struct(
    "commitLogOffset" / cs.Int64sb,  # physical offset of the message
    "size" / cs.Int32sb,  # its totalSize (Integer.MAX_VALUE in fillPreBlank filler units)
    "tagsCode" / cs.Int64sb,  # TAGS hashCode, delay deliver time (SCHEDULE_TOPIC) or ext address
)

INDEX_HEADER = cs.Struct(
    "beginTimestamp" / cs.Int64sb,  # storeTimestamp of entry 1 (seeded from the previous file first)
    "endTimestamp" / cs.Int64sb,  # storeTimestamp of the last entry
    "beginPhyOffset" / cs.Int64sb,  # phyOffset of entry 1
    "endPhyOffset" / cs.Int64sb,  # phyOffset of the last entry
    "hashSlotCount" / cs.Int32sb,  # slots in use (informational)
    "indexCount" / cs.Int32sb,  # next entry number; entries 1..indexCount-1 are written
)

INDEX_SLOT = cs.Int32sb  # hashSlotNum of these after the header: newest entry number per slot, 0 = empty

INDEX_ENTRY = cs.Struct(
    "keyHash" / cs.Int32sb,  # indexKeyHashMethod(topic#key): abs(String.hashCode), MIN_VALUE -> 0
    "phyOffset" / cs.Int64sb,  # commitlog offset of the message
    "timeDiff" / cs.Int32sb,  # SECONDS between storeTimestamp and header beginTimestamp
    "prevIndex" / cs.Int32sb,  # previous entry in the same slot chain, 0 = end
)

CHECKPOINT = cs.Struct(
    "physicMsgTimestamp" / cs.Int64sb,  # storeTimestamp of the last flushed commitlog message
    "logicsMsgTimestamp" / cs.Int64sb,  # ... last flushed ConsumeQueue unit
    "indexMsgTimestamp" / cs.Int64sb,  # ... last flushed IndexFile
)

# MessageDecoder.createMessageId: offsetMsgId is the hex of the store host's address
# (4 or 16 bytes) followed by these two fields of the message.
OFFSET_MSG_ID_TAIL = cs.Struct(*(
    next(sub for sub in COMMITLOG_MESSAGE.subcons if sub.name == name) for name in ("storePort", "physicalOffset")
))


def _message_header_schema(born_v6: bool, store_v6: bool) -> cs.Struct:
    """The fixed part of COMMITLOG_MESSAGE (up to bodyLength) for one host-address variant."""
    fields = []
    for sub in COMMITLOG_MESSAGE.subcons:
        inner = sub.subcon
        if isinstance(inner, cs.IfThenElse):
            v6 = born_v6 if sub.name == "bornHost" else store_v6
            inner = inner.thensubcon if v6 else inner.elsesubcon
        fields.append(sub.name / inner)
        if sub.name == "bodyLength":
            break
    return cs.Struct(*fields)


def _message_prefix_schema() -> cs.Struct:
    """The fields before the first host address (totalSize .. sysFlag): the same in every variant."""
    names = [sub.name for sub in COMMITLOG_MESSAGE.subcons]
    return cs.Struct(*COMMITLOG_MESSAGE.subcons[:names.index("sysFlag") + 1])


# what a reader needs to choose the variant, to check a split point or the PHYSICALOFFSET field
MESSAGE_PREFIX_FAST = compile_fixed(_message_prefix_schema())
# a message's first bytes after its totalSize, as they lie in the file (v1, v2): what a search for
# message starts looks for
MESSAGE_MAGIC_BYTES = tuple(MESSAGE_PREFIX_FAST.field("magicCode").pack(code)
                            for code in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2))
# (born_v6, store_v6) -> fixed layout; indexed by (sysFlag >> 4) & 3
MESSAGE_HEADER_FAST: tuple[FixedLayout, ...] = tuple(
    compile_fixed(_message_header_schema(bool(i & 1), bool(i & 2))) for i in range(4)
)
BLANK_RECORD_FAST = compile_fixed(BLANK_RECORD)
CONSUME_QUEUE_UNIT_FAST = compile_fixed(CONSUME_QUEUE_UNIT)
INDEX_HEADER_FAST = compile_fixed(INDEX_HEADER)
INDEX_ENTRY_FAST = compile_fixed(INDEX_ENTRY)
INDEX_SLOT_FAST = compile_fixed(cs.Struct("entry" / INDEX_SLOT))
CHECKPOINT_FAST = compile_fixed(CHECKPOINT)

CONSUME_QUEUE_DTYPE = CONSUME_QUEUE_UNIT_FAST.numpy_dtype()
INDEX_ENTRY_DTYPE = INDEX_ENTRY_FAST.numpy_dtype()
INDEX_SLOT_DTYPE = INDEX_SLOT_FAST.numpy_dtype()["entry"]  # a plain int32 array of slots

_SYSFLAG_POSITION = MESSAGE_PREFIX_FAST.field_offset("sysFlag")
_SYSFLAG = MESSAGE_PREFIX_FAST.field("sysFlag")  # read first, to choose the host-address variant
# the length fields after the body (no fixed position); topicLength: a short in v2, a byte in v1
TOPIC_LENGTH_FAST = {2: compile_field(COMMITLOG_MESSAGE, "topicLength", branch=True),
                     1: compile_field(COMMITLOG_MESSAGE, "topicLength", branch=False)}
PROPERTIES_LENGTH_FAST = compile_field(COMMITLOG_MESSAGE, "propertiesLength")
OFFSET_MSG_ID_TAIL_FAST = compile_fixed(OFFSET_MSG_ID_TAIL)
# String.hashCode runs over UTF-16 code units: encoded in the machine's byte order, they cast to 'H'
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"

# smallest record: IPv4 hosts, empty body/topic/properties, 1-byte topic length
MIN_MESSAGE_SIZE = MESSAGE_HEADER_FAST[0].size + TOPIC_LENGTH_FAST[1].size + PROPERTIES_LENGTH_FAST.size


# --------------------------------------------------------------------------
# Java helpers
# --------------------------------------------------------------------------


def java_string_hashcode(s: str) -> int:
    """``String.hashCode()``: 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    for unit in memoryview(s.encode(_UTF16_NATIVE, "surrogatepass")).cast("H"):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``Math.abs(hashCode)``, and MIN_VALUE (whose abs
    overflows to itself) becomes 0."""
    h = java_string_hashcode(key)
    return 0 if h == _INT32_MIN else abs(h)


def index_key(topic: str, key: str) -> str:
    """``IndexService.buildKey``: the string that is hashed into an IndexFile."""
    return f"{topic}#{key}"


@lru_cache(maxsize=4096)  # a store holds few distinct TAGS: each is hashed once
def tags_code(tags: str) -> int:
    """``MessageExtBrokerInner.tagsString2tagsCode``: the TAGS string's hashCode, as a long."""
    return java_string_hashcode(tags)


def is_cq_ext_address(tags_code_value: int) -> bool:
    """True when a ConsumeQueue tagsCode is a ConsumeQueueExt address, not a tags hash."""
    return tags_code_value <= CQ_EXT_MAX_ADDRESS


def parse_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties`` (4.9 / 5.x indexOf version).

    An item needs a non-empty name and a non-empty value; the value runs to the
    next \\x02 and may itself contain \\x01.  Later duplicates win (HashMap.put).
    """
    props: dict[str, str] = {}
    for item in text.split(PROPERTY_SEPARATOR):
        sep = item.find(NAME_VALUE_SEPARATOR)
        if 0 < sep < len(item) - 1:
            props[item[:sep]] = item[sep + 1:]
    return props


def property_crc32(text: str) -> int:
    """The ``__CRC32#`` value as ``CommitLog.checkMessageAndReturnSize`` reads it: the digits are stored
    least significant first (``MessageDecoder.createCrc32``), read back from the last, in int arithmetic."""
    value = 0
    for char in reversed(text):
        value = (value * 10 + ord(char) - ord("0")) & 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def parse_delay_levels(spec: str = DEFAULT_MESSAGE_DELAY_LEVEL) -> dict[int, int]:
    """``ScheduleMessageService.parseDelayLevel``: level (1-based) -> delay in ms."""
    units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    table = {}
    for level, item in enumerate(spec.split(" "), start=1):
        table[level] = int(item[:-1]) * units[item[-1]]
    return table


_DEFAULT_DELAY_TABLE = parse_delay_levels()


def _java_utf8(data: bytes) -> str:
    # Java's new String(bytes, UTF_8) substitutes U+FFFD for malformed input
    return data.decode("utf-8", "replace")


# --------------------------------------------------------------------------
# CommitLog messages
# --------------------------------------------------------------------------


def decompress_body(body: bytes, sys_flag: int, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Inflate a body stored with COMPRESSED_FLAG, using the codec in sysFlag bits 8..10.

    Output is capped at ``limit`` while decompressing (LimitExceeded); a bad
    stream is CorruptData.
    """
    kind = COMPRESSION_TYPES.get((sys_flag & COMPRESSION_TYPE_MASK) >> 8)
    if kind == "zlib":  # UtilAll.uncompress: InflaterInputStream, i.e. the zlib wrapper (not gzip)
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise CorruptData(f"zlib body: {exc}") from None
        if len(out) > limit:
            raise LimitExceeded(f"decompressed body exceeds {limit} bytes")
        if not inflater.eof:
            raise CorruptData("zlib body is truncated")
        return out
    # RocketMQ 5's Lz4Compressor / ZstdCompressor write standard LZ4 / zstd frames
    if kind == "lz4":
        return compression.decompress(compression.CODEC_LZ4, body, cap=limit)
    if kind == "zstd":
        return compression.decompress(compression.CODEC_ZSTD, body, cap=limit)
    raise CorruptData(f"unsupported body compression (sysFlag 0x{sys_flag:x})")


def dispatch_info(
    topic: str, properties: dict[str, str] | None, store_timestamp: int,
    delay_levels: dict[int, int] | None = None,
) -> tuple[int, str | None, str | None]:
    """(tagsCode, keys, uniqKey) as ``CommitLog.checkMessageAndReturnSize`` derives them.

    ``properties`` is None when the record has no properties (keys is then "").
    Raises ValueError where RocketMQ's parse of the DELAY level throws.
    """
    if properties is None:
        return 0, "", None
    code = 0
    tags = properties.get(PROPERTY_TAGS)
    if tags:
        code = tags_code(tags)
    level_text = properties.get(PROPERTY_DELAY_TIME_LEVEL)
    if topic == SCHEDULE_TOPIC and level_text is not None:
        # delayed messages: the CQ tagsCode is the delivery time (computeDeliverTimestamp)
        table = _DEFAULT_DELAY_TABLE if delay_levels is None else delay_levels
        level = _java_parse_int(level_text)
        max_level = max(table) if table else 0
        level = min(level, max_level)
        if level > 0:
            code = store_timestamp + table.get(level, 1000)
    return code, properties.get(PROPERTY_KEYS), properties.get(PROPERTY_UNIQ_KEY)


def queue_offsets_taken(properties: dict[str, str]) -> int:
    """How many queue offsets a message takes (``CommitLog.getMessageNum``): an inner batch takes INNER_NUM
    of them (``Short.parseShort``, at least 1), any other message one.  Java reads INNER_NUM when the message
    has INNER_BATCH_FLAG or its topic is a BatchCQ one, which the CommitLog does not record, so here its
    presence decides."""
    text = properties.get("INNER_NUM")
    if text is None or re.fullmatch(r"[+-]?[0-9]+", text) is None or not -0x8000 <= int(text) <= 0x7FFF:
        return 1
    return max(int(text), 1)


def _java_parse_int(text: str) -> int:
    # Integer.parseInt: optional sign, ASCII digits only, int32 range
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f"not an int: {text!r}")
    value = int(text)
    if not _INT32_MIN <= value < 2**31:
        raise ValueError(f"int out of range: {text!r}")
    return value


def message_header(buf, pos: int = 0) -> dict | None:
    """The fixed header of the message record at ``buf[pos:]`` (totalSize .. bodyLength), or None
    where no message magic code or no whole header is there; nothing else is checked."""
    if pos + _SYSFLAG_POSITION + 4 > len(buf):
        return None
    if BLANK_RECORD_FAST.unpack_from(buf, pos)[1] not in MESSAGE_VERSIONS:
        return None
    (sys_flag,) = _SYSFLAG.unpack_from(buf, pos + _SYSFLAG_POSITION)
    layout = MESSAGE_HEADER_FAST[(sys_flag >> 4) & 3]
    if pos + layout.size > len(buf):
        return None
    return layout.as_dict(buf, pos)


def decode_message(
    buf, pos: int = 0, *, end: int | None = None, file_from_offset: int = 0, file: str | None = None,
    path: str | None = None, digests: bool = True, decompress: bool = True, keep_body: bool = False,
    delay_levels: dict[int, int] | None = None, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> dict:
    """Decode the CommitLog message record at ``buf[pos:]``.

    ``end`` bounds the record (the file length); ``file_from_offset`` is the
    file's start physical offset (its name).  Raises CorruptData for a bad
    magic, an impossible size or fields that do not add up to totalSize, and
    TruncatedData when the record runs past ``end``.  A body CRC mismatch is
    not an error here: compare ``bodyCRC`` with ``bodyCRCComputed`` (and
    ``dispatch.success``, which mirrors RocketMQ's checkCRC=true).
    """
    if end is None:
        end = len(buf)
    if pos < 0 or pos + 8 > end:
        raise TruncatedData("no room for a message header", path, pos)
    total_size, magic = BLANK_RECORD_FAST.unpack_from(buf, pos)
    version = MESSAGE_VERSIONS.get(magic)
    if version is None:
        what = "blank end-of-file record" if magic == BLANK_MAGIC_CODE else "illegal magic code"
        raise CorruptData(f"{what} 0x{magic & 0xFFFFFFFF:08x} where a message should start", path, pos)
    phy = file_from_offset + pos
    if total_size < MIN_MESSAGE_SIZE:
        raise CorruptData(f"impossible message totalSize {total_size} (phyOffset {phy})", path, pos)
    if pos + total_size > end:
        raise TruncatedData(
            f"message of totalSize {total_size} runs past the end of the file "
            f"({end - pos} bytes left, phyOffset {phy})", path, pos)
    (sys_flag,) = _SYSFLAG.unpack_from(buf, pos + _SYSFLAG_POSITION)
    layout = MESSAGE_HEADER_FAST[(sys_flag >> 4) & 3]
    record_end = pos + total_size
    if pos + layout.size > record_end:
        raise CorruptData(f"message totalSize {total_size} is shorter than its header", path, pos)
    (_, _, body_crc, queue_id, flag, queue_offset, physical_offset, _, born_ts, born_addr, born_port,
     store_ts, store_addr, store_port, reconsume, prepared, body_len) = layout.unpack_from(buf, pos)

    q = pos + layout.size
    if body_len < 0 or q + body_len > record_end:
        raise CorruptData(f"body length {body_len} does not fit in totalSize {total_size}", path, pos)
    body = bytes(buf[q:q + body_len])
    body_offset = q
    q += body_len

    topic_length = TOPIC_LENGTH_FAST[version]
    if q + topic_length.size > record_end:
        raise CorruptData("message ends before its topic length", path, pos)
    (topic_len,) = topic_length.unpack_from(buf, q)
    q += topic_length.size
    if topic_len < 0 or q + topic_len > record_end:
        raise CorruptData(f"topic length {topic_len} does not fit in totalSize {total_size}", path, pos)
    topic = _java_utf8(bytes(buf[q:q + topic_len]))
    q += topic_len

    if q + PROPERTIES_LENGTH_FAST.size > record_end:
        raise CorruptData("message ends before its properties length", path, pos)
    (props_len,) = PROPERTIES_LENGTH_FAST.unpack_from(buf, q)
    q += PROPERTIES_LENGTH_FAST.size
    if props_len > 0 and q + props_len > record_end:
        raise CorruptData(f"properties length {props_len} does not fit in totalSize {total_size}", path, pos)
    properties = parse_properties(_java_utf8(bytes(buf[q:q + props_len]))) if props_len > 0 else None
    q += max(props_len, 0)
    if q != record_end:
        # CommitLog.calMsgLength != totalSize: RocketMQ's "[BUG]read total count not equals msg total size"
        raise CorruptData(
            f"message fields add up to {q - pos} bytes but totalSize is {total_size} "
            f"(bodyLength={body_len}, topicLength={topic_len}, propertiesLength={props_len}, phyOffset {phy})",
            path, pos)

    crc_computed = zlib.crc32(body) & 0x7FFFFFFF
    props = properties or {}
    msg = {
        "file": file,
        "fileOffset": pos,
        "phyOffset": phy,
        "totalSize": total_size,
        "magic": magic,
        "version": version,
        "bodyCRC": body_crc,
        "bodyCRCComputed": crc_computed,
        "queueId": queue_id,
        "flag": flag,
        "queueOffset": queue_offset,
        "physicalOffsetField": physical_offset,
        "sysFlag": sys_flag,
        "transactionType": sys_flag & TRANSACTION_ROLLBACK_TYPE,
        "compressed": bool(sys_flag & COMPRESSED_FLAG),
        "bornTimestamp": born_ts,
        "bornHost": format_host(born_addr, born_port),
        "storeTimestamp": store_ts,
        "storeHost": format_host(store_addr, store_port),
        "reconsumeTimes": reconsume,
        "preparedTransactionOffset": prepared,
        "bodyOffset": body_offset,
        "bodyLength": body_len,
        "topic": topic,
        "properties": props,
        # MessageDecoder.createMessageId: store address + port + PHYSICALOFFSET field, upper hex
        "offsetMsgId": (store_addr + OFFSET_MSG_ID_TAIL_FAST.pack(store_port, physical_offset)).hex().upper(),
        "UNIQ_KEY": props.get(PROPERTY_UNIQ_KEY),
        "KEYS": props.get(PROPERTY_KEYS),
        "TAGS": props.get(PROPERTY_TAGS),
    }
    if digests:
        msg["bodySha256"] = hashlib.sha256(body).hexdigest()
    if keep_body:
        msg["body"] = body
    if msg["compressed"]:
        msg["compression"] = COMPRESSION_TYPES.get((sys_flag & COMPRESSION_TYPE_MASK) >> 8, "unknown")
        if decompress and body_len > 0:
            try:
                plain = decompress_body(body, sys_flag, max_decompressed)
            except SegtoolError as exc:
                # a bad compressed body is reported, not fatal for the scan (RocketMQ's decode returns null)
                msg["bodyDecompressError"] = str(exc)
            else:
                msg["bodyDecompressedLength"] = len(plain)
                if digests:
                    msg["bodyDecompressedSha256"] = hashlib.sha256(plain).hexdigest()
                if keep_body:
                    msg["bodyDecompressed"] = plain

    # CommitLog.checkMessageAndReturnSize(checkCRC=true): what the dispatcher would get
    if body_len > 0 and crc_computed != body_crc:
        dispatch = {"success": False, "msgSize": -1, "reason": "CRC check failed"}
    else:
        try:
            code, keys, uniq = dispatch_info(topic, properties, store_ts, delay_levels)
        except ValueError:
            dispatch = {"success": False, "msgSize": -1, "reason": "bad DELAY property"}
        else:
            dispatch = {"success": True, "msgSize": total_size, "tagsCode": code, "keys": keys,
                        "uniqKey": uniq, "commitLogOffset": physical_offset}
    msg["dispatch"] = dispatch
    crc_text = props.get(PROPERTY_CRC32)
    if crc_text is not None:
        # 5.x forceVerifyPropCRC: the property against the CRC32 of the record up to its reserved tail
        msg["propCRC"] = property_crc32(crc_text)
        msg["propCRCComputed"] = zlib.crc32(buf[pos:record_end - CRC32_RESERVED_LEN]) & 0x7FFFFFFF
    return msg


def first_nonzero(buf, start: int, end: int, chunk: int = 1 << 22) -> int | None:
    """Offset of the first non-zero byte in buf[start:end], or None."""
    for s in range(start, end, chunk):
        e = min(s + chunk, end)
        hits = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=e - s, offset=s))
        if hits.size:
            return s + int(hits[0])
    return None


def last_nonzero(buf, start: int, end: int, chunk: int = 1 << 22) -> int | None:
    """Offset of the last non-zero byte in buf[start:end], or None."""
    e = end
    while e > start:
        s = max(start, e - chunk)
        hits = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=e - s, offset=s))
        if hits.size:
            return s + int(hits[-1])
        e = s
    return None


@dataclass(frozen=True)
class CommitLogEnd:
    """Where and why a walk of one CommitLog file stopped.

    ``kind`` is END_OF_FILE, SHORT_TAIL (fewer than 8 bytes after the last message), BLANK,
    ZERO_TAIL (totalSize 0 and magic 0), or the damage: BAD_MAGIC, TRUNCATED, TORN (the record
    is zero from some byte to the end of the file) or CORRUPT.  ``data_end`` is one past the
    last byte that holds data (the BLANK record and an all-zero tail hold none);
    ``non_zero_after`` is the first non-zero byte at or after ``file_offset`` in a zero or
    short tail; ``error`` is the decoder's exception for a damaged record.
    """

    kind: WalkEnd
    file_offset: int
    phy_offset: int
    total_size: int
    magic: int
    data_end: int
    non_zero_after: int | None = None
    blank_size_matches: bool | None = None
    error: SegtoolError | None = None

    @property
    def damaged(self) -> bool:
        return self.kind.damaged


def walk_commitlog(buf, *, file_from_offset: int = 0, file: str | None = None, path: str | None = None,
                   start: int = 0, **decode_options) -> Iterator[dict | CommitLogEnd]:
    """Every message of one CommitLog file (a buffer) as ``CommitLog.checkMessageAndReturnSize``
    reads them, in order from byte ``start`` (0, or where reading resumes after damage), then one
    ``CommitLogEnd``.

    This is the one reader of CommitLog record framing: dump, verify, the
    Spark rows, the store's recovery and reput feeds all walk through it and
    decide themselves what a message with a bad body CRC or an end means.
    """
    size = len(buf)
    pos = start
    unpack_head = BLANK_RECORD_FAST.unpack_from
    released = start - start % mmap.PAGESIZE
    while True:
        if pos - released > _RELEASE_EVERY:
            released = release_pages(buf, released, pos)
        left = size - pos
        if left == 0:
            yield CommitLogEnd(WalkEnd.END_OF_FILE, pos, file_from_offset + pos, 0, 0, pos)
            return
        if left < BLANK_RECORD_FAST.size:
            after = first_nonzero(buf, pos, size)
            data_end = pos if after is None else last_nonzero(buf, pos, size) + 1
            yield CommitLogEnd(WalkEnd.SHORT_TAIL, pos, file_from_offset + pos, 0, 0, data_end, non_zero_after=after)
            return
        total_size, magic = unpack_head(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            yield CommitLogEnd(WalkEnd.BLANK, pos, file_from_offset + pos, total_size, magic, pos,
                               blank_size_matches=total_size == left)
            return
        if magic == 0 and total_size == 0:
            after = first_nonzero(buf, pos, size)
            data_end = pos if after is None else last_nonzero(buf, after, size) + 1
            yield CommitLogEnd(WalkEnd.ZERO_TAIL, pos, file_from_offset + pos, 0, 0, data_end, non_zero_after=after)
            return
        try:
            msg = decode_message(buf, pos, end=size, file_from_offset=file_from_offset, file=file, path=path,
                                 **decode_options)
        except CorruptData as exc:
            last = last_nonzero(buf, pos, size)
            data_end = (last if last is not None else pos) + 1
            if magic not in MESSAGE_VERSIONS:
                kind = WalkEnd.BAD_MAGIC
            elif isinstance(exc, TruncatedData):
                kind = WalkEnd.TRUNCATED
            elif total_size >= MIN_MESSAGE_SIZE and last is not None and last < pos + total_size <= size:
                kind = WalkEnd.TORN
            else:
                kind = WalkEnd.CORRUPT
            yield CommitLogEnd(kind, pos, file_from_offset + pos, total_size, magic, data_end, error=exc)
            return
        yield msg
        pos += total_size


_RELEASE_EVERY = 16 * 1024 * 1024

_PLAIN_HEADER = MESSAGE_HEADER_FAST[0]  # the v1 layout with IPv4 hosts: nearly every message
_PLAIN_HEADER_DTYPE = _PLAIN_HEADER.numpy_dtype()
MESSAGE_COLUMNS_SPAN = 1024 * 1024  # bytes of messages framed at once: their gathered headers stay small


class MessageColumns:
    """The plain messages of one CommitLog file (a buffer) from byte ``start``, a field at a time.

    Plain: the v1 magic code, IPv4 born and store hosts, fields that add up to totalSize
    and a body CRC that matches: messages ``decode_message`` reads with nothing to say
    about them.  Up to ``span`` bytes of them are framed in one loop; their fixed fields
    are then gathered with one numpy pass (``header``, in ``MESSAGE_HEADER_FAST[0]``'s
    dtype) and the body, topic and properties located in the buffer.  ``stop`` is where
    they end: the first record that is not a plain message (another layout, a bad CRC,
    damage, the BLANK record, zeros) or the end of the span; ``walk_commitlog`` reads on
    from there.  tests/test_dump_runs.py checks on the corpus and on generated damage that
    what these columns give is what ``decode_message`` gives.
    """

    __slots__ = ("buf", "count", "stop", "positions", "header", "body_at", "topic_at", "topic_length",
                 "properties_at", "properties_length")

    def __init__(self, buf, start: int, span: int = MESSAGE_COLUMNS_SPAN):
        self.buf = buf
        end, limit = len(buf), start + span
        positions: list[int] = []
        framed = positions.append
        unpack_head = BLANK_RECORD_FAST.unpack_from
        pos = start
        while pos < limit and pos + BLANK_RECORD_FAST.size <= end:
            total_size, magic = unpack_head(buf, pos)
            if magic != MESSAGE_MAGIC_CODE or total_size < MIN_MESSAGE_SIZE or pos + total_size > end:
                break
            framed(pos)
            pos += total_size
        at = np.array(positions, dtype=np.int64)
        data = np.frombuffer(buf, dtype=np.uint8) if end >= _PLAIN_HEADER.size else np.zeros(0, dtype=np.uint8)
        header = _windows(data, _PLAIN_HEADER.size)[at].view(_PLAIN_HEADER_DTYPE).reshape(len(at))
        record_end = at + header["totalSize"]
        body_at = at + _PLAIN_HEADER.size
        body_length = header["bodyLength"].astype(np.int64)
        # decode_message's checks, each on the fields the previous ones vouch for (others read at 0)
        fits = ((header["sysFlag"] & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)) == 0) & (body_length >= 0) & (
            body_at + body_length + TOPIC_LENGTH_FAST[1].size + PROPERTIES_LENGTH_FAST.size <= record_end)
        topic_length_at = np.where(fits, body_at + body_length, 0)
        topic_length = data[topic_length_at].view(np.int8).astype(np.int64)
        fits &= (topic_length >= 0) & (topic_length_at + 1 + topic_length + PROPERTIES_LENGTH_FAST.size <= record_end)
        properties_length_at = np.where(fits, topic_length_at + 1 + topic_length, 0)
        properties_length = ((data[properties_length_at].astype(np.int16) << 8)
                             | data[properties_length_at + 1]).astype(np.int64)
        fits &= properties_length_at + PROPERTIES_LENGTH_FAST.size + np.maximum(properties_length, 0) == record_end
        count = int(np.argmin(fits)) if not fits.all() else len(at)
        if count:
            bodies = list(map(slice, body_at[:count].tolist(), (body_at[:count] + body_length[:count]).tolist()))
            crc = np.fromiter(map(zlib.crc32, map(buf.__getitem__, bodies)), np.int64, count) & 0x7FFFFFFF
            matches = crc == header["bodyCRC"][:count]
            count = int(np.argmin(matches)) if not matches.all() else count
        self.count = count
        self.stop = positions[count] if count < len(positions) else pos
        self.positions = at[:count]
        self.header = header[:count]
        self.body_at = body_at[:count]
        self.topic_at = topic_length_at[:count] + 1
        self.topic_length = topic_length[:count]
        self.properties_at = properties_length_at[:count] + PROPERTIES_LENGTH_FAST.size
        self.properties_length = properties_length[:count]

    def texts(self, starts, lengths) -> list[str]:
        """The UTF-8 text at ``buf[start:start + length]`` of each message, decoded as Java decodes it
        (U+FFFD for malformed bytes; empty for a length <= 0): decoded at once and split, unless a text
        holds the separator itself."""
        cut = self._cut(starts, lengths)
        texts = _SEPARATOR.join(cut).decode("utf-8", "replace").split(PROPERTY_SEPARATOR)
        return texts if len(texts) == len(cut) else [_java_utf8(text) for text in cut]

    def property_texts(self, *names: str) -> list[list[str | None]]:
        """For each name, each message's value of that property as ``parse_properties`` finds it
        (None where absent), without parsing the other properties.

        All messages' properties are joined, each after a separator, so every item starts right
        after one; an item is ``name``, the name-value separator and a non-empty value that runs to
        the next separator.  Where a message has the name twice, the last one counts (HashMap.put).
        """
        if not self.count:
            return [[] for _ in names]
        joined = _SEPARATOR + _SEPARATOR.join(self._cut(self.properties_at, self.properties_length))
        data = np.frombuffer(joined, dtype=np.uint8)
        item_start = np.flatnonzero(data == _SEPARATOR[0]) + 1
        item_end = np.append(item_start[1:] - 1, len(joined))
        first_byte = data[np.minimum(item_start, len(joined) - 1)]
        lengths = np.maximum(self.properties_length, 0)
        message_start = np.cumsum(lengths + 1) - lengths
        latin1 = None  # the joined bytes one character each: values are cut from it as text
        found = []
        for name in names:
            prefix = (name + NAME_VALUE_SEPARATOR).encode()
            # items long enough to hold a value after the name that start with its first byte, then all of it
            items = np.flatnonzero((item_end - item_start > len(prefix)) & (first_byte == prefix[0]))
            items = items[(_windows(data, len(prefix))[item_start[items]] == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)]
            message = np.searchsorted(message_start, item_start[items], side="right") - 1
            last = np.append(message[1:] != message[:-1], True)[:len(message)]
            items, message = items[last], message[last]
            if latin1 is None:
                latin1 = joined.decode("latin-1")
            values = list(map(latin1.__getitem__, map(slice, (item_start[items] + len(prefix)).tolist(),
                                                      item_end[items].tolist())))
            if not "".join(values).isascii():  # ASCII's latin-1 text is its UTF-8 text; the rest is decoded
                values = [value if value.isascii() else value.encode("latin-1").decode("utf-8", "replace")
                          for value in values]
            if len(items) == self.count:
                found.append(values)
            else:
                texts = np.full(self.count, None, dtype=object)
                texts[message] = values
                found.append(texts.tolist())
        return found

    def properties(self) -> list[dict[str, str] | None]:
        """Each message's properties as ``decode_message`` reads them (None where their length is <= 0)."""
        return [parse_properties(_java_utf8(data)) if data else None
                for data in self._cut(self.properties_at, self.properties_length)]

    def bodies(self) -> list[bytes]:
        return self._cut(self.body_at, self.header["bodyLength"])

    def _cut(self, starts, lengths) -> list[bytes]:
        """``buf[start:start + length]`` for each message (empty for a length <= 0), cut in a C loop."""
        return list(map(self.buf.__getitem__, map(slice, starts.tolist(), (starts + np.maximum(lengths, 0)).tolist())))


def _windows(data, width: int):
    """Every ``width`` bytes of ``data`` from each position, as rows of a view: indexing it by
    positions gathers the fixed fields there without building an index per byte."""
    if len(data) < width:
        return np.zeros((0, width), dtype=np.uint8)
    return np.lib.stride_tricks.sliding_window_view(data, width)


_SEPARATOR = PROPERTY_SEPARATOR.encode()


# --------------------------------------------------------------------------
# Store files on disk
# --------------------------------------------------------------------------


class _MappedBuffer:
    """A file's bytes in ``self.buf`` (a read-only map, or ``b""``), released by ``close``."""

    buf: "mmap.mmap | bytes"

    def close(self) -> None:
        buf, self.buf = self.buf, b""
        if isinstance(buf, mmap.mmap):
            try:
                buf.close()
            except BufferError:
                pass  # a caller still holds a view; the map is released when that is collected

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class MappedFile(_MappedBuffer):
    """A read-only mmap of one store file (empty files map to b"")."""

    def __init__(self, path):
        from segtool.source import require_regular_file

        self.path = Path(path)
        require_regular_file(self.path)
        try:
            with open(self.path, "rb") as f:
                self.size = os.fstat(f.fileno()).st_size
                self.buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        except OSError as exc:
            raise UnreadableInput(f"cannot read: {exc.strerror or exc}", str(path)) from exc



def _store_subdir(path, name: str) -> Path:
    """``path`` itself, or ``path/name`` when ``path`` is a store root containing it."""
    path = Path(path)
    sub = path / name
    return sub if sub.is_dir() else path


def list_mapped_files(directory) -> list[tuple[int, Path]]:
    """(start offset, path) for every file of a MappedFileQueue directory, by offset.

    Names are the start offset, 20 digits zero-padded; other names are ignored.
    """
    directory = Path(directory)
    if directory.is_file():
        name = directory.name
        return [(rocketmq_names.mapped_file_offset(name), directory)]
    if not directory.is_dir():
        raise UnreadableInput("not a directory", str(directory))
    files = [(int(p.name), p) for p in directory.iterdir() if rocketmq_names.is_mapped_file_name(p.name) and p.is_file()]
    return sorted(files)


class CommitLog:
    """Random access to a CommitLog by physical offset (``lookMessageByOffset``)."""

    def __init__(self, path):
        self.files = list_mapped_files(_store_subdir(path, rocketmq_names.COMMITLOG_DIR))
        self._starts = [start for start, _ in self.files]
        self._open: dict[int, MappedFile] = {}

    def _file_for(self, phy_offset: int) -> tuple[int, MappedFile] | None:
        i = bisect.bisect_right(self._starts, phy_offset) - 1
        if i < 0:
            return None
        start, file_path = self.files[i]
        mf = self._open.get(start)
        if mf is None:
            mf = self._open[start] = MappedFile(file_path)
        return (start, mf) if phy_offset - start < mf.size else None

    def message_at(self, phy_offset: int, **decode_options) -> dict | None:
        """The message starting at ``phy_offset``.

        None when no file holds that offset or the bytes there are unwritten
        zeros or the blank end-of-file record (RocketMQ's lookMessageByOffset
        finds nothing there either); CorruptData for anything else that is not
        a message record.
        """
        found = self._file_for(phy_offset)
        if found is None:
            return None
        start, mf = found
        pos = phy_offset - start
        if pos + 8 <= mf.size:
            total_size, magic = BLANK_RECORD_FAST.unpack_from(mf.buf, pos)
            if magic == BLANK_MAGIC_CODE or (magic == 0 and total_size == 0):
                return None
        return decode_message(mf.buf, pos, file_from_offset=start, file=mf.path.name,
                              path=str(mf.path), **decode_options)

    def close(self) -> None:
        for mf in self._open.values():
            mf.close()
        self._open.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------
# ConsumeQueue
# --------------------------------------------------------------------------


def consumequeue_units(buf) -> np.ndarray:
    """Zero-copy structured view of the whole 20-byte units of a ConsumeQueue buffer."""
    return np.frombuffer(buf, dtype=CONSUME_QUEUE_DTYPE, count=len(buf) // CQ_UNIT_SIZE)


class ConsumeQueueFileScan:
    """Iterates the units of one ConsumeQueue file as ``ConsumeQueue.recover`` accepts them.

    A unit is valid when commitLogOffset >= 0 and size > 0.  ``fillPreBlank``
    filler units (0, Integer.MAX_VALUE, 0) are skipped unless ``include_blank``.
    The first all-zero unit ends the file (unwritten tail); afterwards ``end`` is
    ``{"kind": WalkEnd.ZERO_TAIL | WalkEnd.END_OF_FILE, "fileOffset", "queueOffset",
    "nonZeroAfter"}``.  Any other invalid unit, or a partial unit at the end,
    raises CorruptData / TruncatedData at its file offset (``end``'s kind is then WalkEnd.CORRUPT).
    """

    def __init__(self, buf, *, topic: str | None = None, queue_id: int | None = None,
                 file_from_offset: int = 0, path: str | None = None, include_blank: bool = False):
        self.buf = buf
        self.topic = topic
        self.queue_id = queue_id
        self.first_queue_offset = file_from_offset // CQ_UNIT_SIZE
        self.path = path
        self.include_blank = include_blank
        self.end: dict | None = None
        self.units = 0  # message units yielded (filler excluded)

    def __iter__(self) -> Iterator[dict]:
        buf = self.buf
        units = consumequeue_units(buf)
        bad = np.flatnonzero((units["commitLogOffset"] < 0) | (units["size"] <= 0))
        stop = int(bad[0]) if bad.size else len(units)  # first unit recovery would not accept
        rows = units[:stop].tolist()  # one conversion instead of per-unit numpy scalars
        base = self.first_queue_offset
        for i, (offset, size, code) in enumerate(rows):
            if size == CQ_BLANK_UNIT_SIZE and offset == 0 and code == 0 and not self.include_blank:
                continue
            self.units += 1
            yield {"topic": self.topic, "queueId": self.queue_id, "queueOffset": base + i,
                   "commitLogOffset": offset, "size": size, "tagsCode": code}
        pos = stop * CQ_UNIT_SIZE
        if stop < len(units):
            offset, size, code = units[stop].tolist()
            if offset or size or code:
                self.end = {"kind": WalkEnd.CORRUPT, "fileOffset": pos, "queueOffset": base + stop}
                raise CorruptData(
                    f"invalid ConsumeQueue unit (commitLogOffset={offset}, size={size}, tagsCode={code})",
                    self.path, pos)
            self.end = {"kind": WalkEnd.ZERO_TAIL, "fileOffset": pos, "queueOffset": base + stop,
                        "nonZeroAfter": first_nonzero(buf, pos, len(buf))}
            return
        if len(buf) % CQ_UNIT_SIZE:
            if first_nonzero(buf, pos, len(buf)) is None:
                self.end = {"kind": WalkEnd.ZERO_TAIL, "fileOffset": pos, "queueOffset": base + stop,
                            "nonZeroAfter": None}
                return
            self.end = {"kind": WalkEnd.CORRUPT, "fileOffset": pos, "queueOffset": base + stop}
            raise TruncatedData(f"file ends inside a ConsumeQueue unit ({len(buf) - pos} bytes)", self.path, pos)
        self.end = {"kind": WalkEnd.END_OF_FILE, "fileOffset": pos, "queueOffset": base + stop, "nonZeroAfter": None}


def list_consume_queues(path) -> list[tuple[str, int, Path]]:
    """(topic, queueId, directory) of every queue under a store root or its consumequeue dir."""
    root = _store_subdir(path, rocketmq_names.CONSUMEQUEUE_DIR)
    if not root.is_dir():
        raise UnreadableInput("not a directory", str(root))
    queues = []
    for topic_dir in root.iterdir():
        if not topic_dir.is_dir():
            continue
        for queue_dir in topic_dir.iterdir():
            name = queue_dir.name
            if queue_dir.is_dir() and rocketmq_names.queue_id(name) is not None:
                queues.append((topic_dir.name, rocketmq_names.queue_id(name), queue_dir))
    return sorted(queues, key=lambda q: (q[0], q[1]))


class ConsumeQueue:
    """One queue directory ``consumequeue/<topic>/<queueId>/``: iteration and offset lookups."""

    def __init__(self, directory, topic: str | None = None, queue_id: int | None = None):
        self.directory = Path(directory)
        self.topic = self.directory.parent.name if topic is None else topic
        self.queue_id = rocketmq_names.queue_id(self.directory.name) if queue_id is None else queue_id
        self.files = list_mapped_files(self.directory)
        self.ends: list[dict] = []  # per file, filled by iteration

    def __iter__(self) -> Iterator[dict]:
        self.ends = []
        for start, file_path in self.files:
            with MappedFile(file_path) as mf:
                scan = ConsumeQueueFileScan(mf.buf, topic=self.topic, queue_id=self.queue_id,
                                            file_from_offset=start, path=str(file_path))
                try:
                    yield from scan
                finally:
                    self.ends.append({"file": file_path.name, "size": mf.size, **(scan.end or {})})

    def unit(self, queue_offset: int) -> dict | None:
        """The unit at ``queue_offset`` (``getIndexBuffer``); None when absent or not written."""
        byte_offset = queue_offset * CQ_UNIT_SIZE
        for start, file_path in reversed(self.files):
            if start <= byte_offset:
                with MappedFile(file_path) as mf:
                    pos = byte_offset - start
                    if pos + CQ_UNIT_SIZE > mf.size:
                        return None
                    offset, size, code = CONSUME_QUEUE_UNIT_FAST.unpack_from(mf.buf, pos)
                if offset < 0 or size <= 0:
                    return None
                return {"topic": self.topic, "queueId": self.queue_id, "queueOffset": queue_offset,
                        "commitLogOffset": offset, "size": size, "tagsCode": code}
        return None

    def summary(self) -> dict:
        """min/max offsets like ``getMinOffsetInQueue`` / ``getMaxOffsetInQueue`` and
        ``maxPhysicOffset`` (end of the last unit's message), from a full scan."""
        first = last = None
        for last in self:
            if first is None:
                first = last
        # the last file's accepted units decide the max offset, as in ConsumeQueue.recover
        max_offset = self.ends[-1]["queueOffset"] if self.ends else 0
        return {
            "topic": self.topic, "queueId": self.queue_id,
            "minOffsetInQueue": first["queueOffset"] if first else max_offset,
            "maxOffsetInQueue": max_offset,
            "maxPhysicOffset": last["commitLogOffset"] + last["size"] if last else -1,
            "files": [f"{p.name}:{p.stat().st_size}" for _, p in self.files],
        }


# --------------------------------------------------------------------------
# IndexFile
# --------------------------------------------------------------------------


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * INDEX_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


def read_index_header(buf, path: str | None = None) -> dict:
    """``IndexHeader.load``: the six fields, indexCount <= 0 read as 1 (raw value kept)."""
    if len(buf) < INDEX_HEADER_SIZE:
        raise TruncatedData(f"IndexFile shorter than its {INDEX_HEADER_SIZE}-byte header", path, len(buf))
    header = INDEX_HEADER_FAST.as_dict(buf, 0)
    header["rawIndexCountField"] = header["indexCount"]
    if header["indexCount"] <= 0:
        header["indexCount"] = 1
    return header


@dataclass(frozen=True)
class _GeometryCheck:
    passed: bool
    last_matches: bool = False
    slot_ratio: float = 0.0


def _check_geometry(buf, size: int, header: dict, slots_n: int, entries_n: int) -> _GeometryCheck:
    """Does the content agree with (slots_n, entries_n)?  Reads only the slot table and
    the written entries.

    Entry 0 is never written; entry 1 carries beginPhyOffset and starts its chain;
    every used slot points at an entry whose keyHash lands in that slot; the last
    entry carries endPhyOffset (not required: a damaged indexCount breaks it).
    """
    count = min(header["indexCount"], entries_n)
    if count <= 1 or slots_n <= 0:
        return _GeometryCheck(False)
    entries_at = INDEX_HEADER_SIZE + slots_n * INDEX_SLOT_SIZE
    entries = np.frombuffer(buf, dtype=INDEX_ENTRY_DTYPE, count=count, offset=entries_at)
    first = entries[1]
    if entries[0].tolist() != (0, 0, 0, 0):
        return _GeometryCheck(False)
    if (int(first["phyOffset"]) != header["beginPhyOffset"] or int(first["prevIndex"]) != 0
            or int(first["keyHash"]) < 0 or int(first["timeDiff"]) < 0):
        return _GeometryCheck(False)
    slots = np.frombuffer(buf, dtype=INDEX_SLOT_DTYPE, count=slots_n, offset=INDEX_HEADER_SIZE)
    used = np.flatnonzero((slots > 0) & (slots < count))
    if used.size == 0:
        return _GeometryCheck(False)
    hashes = entries["keyHash"][slots[used]].astype(np.int64)
    ratio = float(np.mean((hashes >= 0) & (hashes % slots_n == used)))
    last_matches = int(entries[count - 1]["phyOffset"]) == header["endPhyOffset"]
    return _GeometryCheck(ratio >= 0.95, last_matches, ratio)


def _geometry_candidates(buf, size: int, header: dict, chunk: int = 1 << 18) -> Iterator[tuple[int, int]]:
    """(slots, entries) with 40 + 4*slots + 20*entries == size whose entries 0 and 1 look
    right (entry 0 zero; entry 1: beginPhyOffset, prevIndex 0, keyHash > 0, timeDiff >= 0).

    Vectorised over all entry counts, in chunks, on an int32 view of the file.
    """
    # every header, slot and entry field is one or two big-endian int32 words, a slot's type
    words = np.frombuffer(buf, dtype=INDEX_SLOT_DTYPE, count=size // 4)
    max_entries = (size - INDEX_HEADER_SIZE - INDEX_SLOT_SIZE) // INDEX_ENTRY_SIZE
    begin = header["beginPhyOffset"]
    for lo in range(2, max_entries + 1, chunk):
        n = np.arange(lo, min(lo + chunk, max_entries + 1), dtype=np.int64)
        w = (size - INDEX_ENTRY_SIZE * n) // 4  # first word of entry 0
        ok = np.ones(n.shape, dtype=bool)
        for k in range(5):  # entry 0 is all zero
            ok &= words[w + k] == 0
        key_hash = words[w + 5]
        phy = (words[w + 6].astype(np.int64) << 32) | (words[w + 7].astype(np.int64) & 0xFFFFFFFF)
        ok &= (key_hash > 0) & (phy == begin) & (words[w + 8] >= 0) & (words[w + 9] == 0)
        for entries_n in n[ok].tolist():
            yield (size - INDEX_HEADER_SIZE - INDEX_ENTRY_SIZE * entries_n) // INDEX_SLOT_SIZE, entries_n


def infer_index_geometry(buf, path: str | None = None) -> tuple[int, int, str]:
    """(hashSlotNum, indexNum, how) for an IndexFile whose geometry is not known.

    The header does not record it.  In order: a file of the default size
    (420,000,040 bytes) is the default 5,000,000 / 20,000,000; then the default
    ratio indexNum = 4 * hashSlotNum if the content agrees; then every
    (slots, entries) with 40 + 4*slots + 20*entries == size is tried against the
    content (see ``_check_geometry``) and the single best one wins.
    ``how`` is "default", "ratio", "inferred" or "assumed" (no entries to check).
    """
    size = len(buf)
    header = read_index_header(buf, path)
    if size == index_file_size(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM):
        return DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, "default"
    if (size - INDEX_HEADER_SIZE) % INDEX_SLOT_SIZE or size < INDEX_HEADER_SIZE + INDEX_SLOT_SIZE + INDEX_ENTRY_SIZE:
        raise CorruptData(f"IndexFile size {size} is not 40 + 4*slots + 20*entries", path, 0)
    ratio_slots, rest = divmod(size - INDEX_HEADER_SIZE, INDEX_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE)
    if header["indexCount"] <= 1:
        if rest == 0:
            return ratio_slots, 4 * ratio_slots, "assumed"
        raise CorruptData("IndexFile has no entries, so its geometry cannot be inferred; "
                          "give hashSlotNum/indexNum", path, 0)
    if rest == 0 and _check_geometry(buf, size, header, ratio_slots, 4 * ratio_slots).passed:
        return ratio_slots, 4 * ratio_slots, "ratio"
    passed = []
    for slots_n, entries_n in _geometry_candidates(buf, size, header):
        check = _check_geometry(buf, size, header, slots_n, entries_n)
        if check.passed:
            passed.append(((check.last_matches, check.slot_ratio), slots_n, entries_n))
    if not passed:
        raise CorruptData("no IndexFile geometry (hashSlotNum, indexNum) fits this file's content; "
                          "give them explicitly", path, 0)
    passed.sort(reverse=True)
    if len(passed) > 1 and passed[0][0] == passed[1][0]:
        options = ", ".join(f"{s}/{n}" for _, s, n in passed[:4])
        raise CorruptData(f"ambiguous IndexFile geometry ({options}); give hashSlotNum/indexNum", path, 0)
    return passed[0][1], passed[0][2], "inferred"


@dataclass
class SelectOutcome:
    """How one ``selectPhyOffset`` walk ended."""

    terminated: bool = True  # False: RocketMQ would never return (endless prevIndex cycle)
    steps: int = 0  # entries read
    note: str | None = None


def index_time_diff(store_timestamp: int, begin_timestamp: int) -> int:
    """``IndexFile.putKey``'s timeDiff: whole seconds (Java division) after the header's
    beginTimestamp, clamped to 0..Integer.MAX_VALUE; 0 while the file has no beginTimestamp."""
    if begin_timestamp <= 0:
        return 0
    delta = store_timestamp - begin_timestamp
    seconds = abs(delta) // 1000
    seconds = seconds if delta >= 0 else -seconds
    return min(max(seconds, 0), _INT32_MAX)


class IndexFile(_MappedBuffer):
    """One IndexFile as ``IndexService`` holds it: header, slot table and entries over a buffer.

    ``IndexFile(path)`` maps a file read-only (``copy_on_write`` maps it
    privately, so ``put_key`` can append in memory and the file stays
    untouched); ``IndexFile.create`` makes a new one in an anonymous map.
    ``hash_slot_num`` / ``index_num`` give the geometry (the header does not);
    without them it is inferred (``infer_index_geometry``).  With an explicit
    geometry a longer file is read like RocketMQ maps it (the extra bytes are
    ignored); a shorter one is TruncatedData.  Only the pages touched cost
    memory, so a 420 MB default-geometry file is cheap.

    As in Java, lookups and ``put_key`` use the header values in ``header``;
    they reach the buffer only at ``flush_header`` (``IndexFile.flush``).
    """

    def __init__(self, path, hash_slot_num: int | None = None, index_num: int | None = None, *,
                 copy_on_write: bool = False):
        from segtool.source import require_regular_file

        path = Path(path)
        require_regular_file(path)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                access = mmap.ACCESS_COPY if copy_on_write else mmap.ACCESS_READ
                buf = mmap.mmap(f.fileno(), 0, access=access) if size else b""
        except OSError as exc:
            raise UnreadableInput(f"cannot read: {exc.strerror or exc}", str(path)) from exc
        try:
            header = read_index_header(buf, str(path))
            if hash_slot_num is None and index_num is None:
                hash_slot_num, index_num, source = infer_index_geometry(buf, str(path))
            elif hash_slot_num is None or index_num is None:
                raise ValueError("give both hash_slot_num and index_num, or neither")
            else:
                if hash_slot_num <= 0 or index_num <= 0:
                    raise ValueError("hash_slot_num and index_num must be positive")
                source = "explicit"
                need = index_file_size(hash_slot_num, index_num)
                if size < need:
                    raise TruncatedData(f"IndexFile is {size} bytes, geometry {hash_slot_num}/{index_num} "
                                        f"needs {need}", str(path), size)
        except BaseException:
            if isinstance(buf, mmap.mmap):
                buf.close()
            raise
        self._attach(path.name, buf, size, hash_slot_num, index_num, header, path=path, origin="disk",
                     geometry_source=source)

    def _attach(self, name: str, buf, size: int, hash_slot_num: int, index_num: int, header: dict, *,
                path: Path | None, origin: str, geometry_source: str) -> None:
        self.name = name
        self.buf = buf
        self.size = size
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.raw_index_count = header.pop("rawIndexCountField", header["indexCount"])
        self.header = header
        self.path = path
        self.origin = origin  # "disk", "rebuilt" (created in memory), "appended" (disk file extended in memory)
        self.geometry_source = geometry_source
        self.entries_offset = INDEX_HEADER_SIZE + hash_slot_num * INDEX_SLOT_SIZE

    @classmethod
    def create(cls, name: str, hash_slot_num: int, index_num: int, end_phy_offset: int = 0,
               end_timestamp: int = 0) -> "IndexFile":
        """``new IndexFile(name, hashSlotNum, indexNum, endPhyOffset, endTimestamp)`` in memory."""
        size = index_file_size(hash_slot_num, index_num)
        header = dict.fromkeys(INDEX_HEADER_FAST.names, 0)
        header["indexCount"] = 1  # IndexHeader: indexCount starts at 1, entry 0 is never used
        if end_phy_offset > 0:
            header["beginPhyOffset"] = header["endPhyOffset"] = end_phy_offset
        if end_timestamp > 0:
            header["beginTimestamp"] = header["endTimestamp"] = end_timestamp
        # private anonymous map: untouched pages read as the shared zero page and cost no memory
        buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        index = cls.__new__(cls)
        index._attach(name, buf, size, hash_slot_num, index_num, header, path=None, origin="rebuilt",
                      geometry_source="explicit")
        return index

    def writable_copy(self) -> "IndexFile":
        """This file, copy-on-write, to append to in memory (the file stays untouched)."""
        if self.path is None:
            return self
        copy = IndexFile(self.path, self.hash_slot_num, self.index_num, copy_on_write=True)
        copy.header = dict(self.header)
        copy.origin = "appended"
        copy.geometry_source = self.geometry_source
        return copy

    # ---- IndexHeader ----

    @property
    def begin_timestamp(self) -> int:
        return self.header["beginTimestamp"]

    @property
    def end_timestamp(self) -> int:
        return self.header["endTimestamp"]

    @property
    def end_phy_offset(self) -> int:
        return self.header["endPhyOffset"]

    @property
    def index_count(self) -> int:
        return self.header["indexCount"]

    @property
    def entries_written(self) -> int:
        """Entries 1..indexCount-1 (entry 0 is never used), as the header claims."""
        return self.index_count - 1

    def is_write_full(self) -> bool:
        return self.header["indexCount"] >= self.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        """``IndexFile.isTimeMatched``."""
        b, e = self.header["beginTimestamp"], self.header["endTimestamp"]
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    # ---- slots and entries ----

    @property
    def slots(self) -> np.ndarray:
        return np.frombuffer(self.buf, dtype=INDEX_SLOT_DTYPE, count=self.hash_slot_num, offset=INDEX_HEADER_SIZE)

    @property
    def entries(self) -> np.ndarray:
        return np.frombuffer(self.buf, dtype=INDEX_ENTRY_DTYPE, count=self.index_num, offset=self.entries_offset)

    def slot_of(self, key_hash: int) -> int:
        return key_hash % self.hash_slot_num

    def slot_position(self, key_hash: int) -> int:
        return INDEX_HEADER_SIZE + self.slot_of(key_hash) * INDEX_SLOT_SIZE

    def entry_offset(self, index: int) -> int:
        return self.entries_offset + index * INDEX_ENTRY_SIZE

    def entry(self, index: int) -> dict:
        """Entry ``index`` as a dict (with its ``index``)."""
        if not 0 <= index < self.index_num:
            raise CorruptData(f"entry {index} is outside the file's {self.index_num} entries",
                              str(self.path), self.entry_offset(min(max(index, 0), self.index_num)))
        return {"index": index, **INDEX_ENTRY_FAST.as_dict(self.buf, self.entry_offset(index))}

    def iter_entries(self, start: int = 1, stop: int | None = None) -> Iterator[dict]:
        """Entries start..stop-1; by default the written ones, 1..indexCount-1 (capped by the file)."""
        if stop is None:
            stop = self.index_count
        stop = min(stop, self.index_num)
        names = INDEX_ENTRY_FAST.names
        for i, row in enumerate(self.entries[start:stop].tolist(), start):
            yield {"index": i, **dict(zip(names, row))}

    def non_empty_slots(self) -> int:
        return int(np.count_nonzero(self.slots > 0))

    # ---- IndexFile.selectPhyOffset ----

    def select_phy_offsets(self, out: list, key_hash: int, max_num: int, begin: int, end: int) -> SelectOutcome:
        """Append the slot chain's matching phyOffsets to ``out``, as ``selectPhyOffset`` does."""
        outcome = SelectOutcome()
        buf = self.buf
        count = self.header["indexCount"]
        begin_ts = self.header["beginTimestamp"]
        (slot_value,) = INDEX_SLOT_FAST.unpack_from(buf, self.slot_position(key_hash))
        if slot_value <= 0 or slot_value > count or count <= 1:
            return outcome
        unpack = INDEX_ENTRY_FAST.unpack_from
        index_num = self.index_num
        seen: dict[int, int] = {}  # entry -> len(out) when last read (loop guard)
        current = slot_value
        while len(out) < max_num:
            if current >= index_num:
                # Java reads past the mapped buffer: IndexOutOfBoundsException, caught in selectPhyOffset
                outcome.note = (f"index file {self.name}: chain points at entry {current}, outside the file's "
                                f"{index_num} entries (RocketMQ: exception, rest of this file skipped)")
                break
            visited = seen.get(current)
            if visited is not None and visited == len(out):
                outcome.terminated = False
                outcome.note = (f"index file {self.name}: endless prevIndex cycle through entry {current} "
                                f"(RocketMQ's selectPhyOffset never returns); stopped after {outcome.steps} entries "
                                f"with {len(out)} offsets collected")
                break
            seen[current] = len(out)
            key_hash_read, phy, time_diff, prev = unpack(buf, self.entry_offset(current))
            outcome.steps += 1
            if time_diff < 0:
                break
            time_read = begin_ts + time_diff * 1000
            if key_hash_read == key_hash and begin <= time_read <= end:
                out.append(phy)
            if prev <= 0 or prev > count or prev == current or time_read < begin:
                break
            current = prev
        return outcome

    # ---- IndexFile.putKey ----

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """``IndexFile.putKey`` (4.9): False when the file is full."""
        return self.put_hash(index_key_hash(key), phy_offset, store_timestamp)

    def put_hash(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """``put_key`` for a key already hashed with ``index_key_hash``."""
        header = self.header
        count = header["indexCount"]
        if count >= self.index_num:
            return False
        slot_pos = self.slot_position(key_hash)
        buf = self.buf
        (slot_value,) = INDEX_SLOT_FAST.unpack_from(buf, slot_pos)
        if slot_value <= 0 or slot_value > count:
            slot_value = 0
        time_diff = index_time_diff(store_timestamp, header["beginTimestamp"])
        INDEX_ENTRY_FAST.pack_into(buf, self.entry_offset(count), key_hash, phy_offset, time_diff, slot_value)
        INDEX_SLOT_FAST.pack_into(buf, slot_pos, count)
        if count <= 1:
            header["beginPhyOffset"] = phy_offset
            header["beginTimestamp"] = store_timestamp
        if slot_value == 0:
            header["hashSlotCount"] += 1
        header["indexCount"] = count + 1
        header["endPhyOffset"] = phy_offset
        header["endTimestamp"] = store_timestamp
        return True

    def flush_header(self) -> None:
        """``IndexHeader.updateByteBuffer``: write the header fields into the (in-memory) buffer.

        A read-only file from disk is left alone: ``to_bytes`` / ``write`` put its header in the copy."""
        if self.origin != "disk":
            INDEX_HEADER_FAST.pack_into(self.buf, 0, *(self.header[k] for k in INDEX_HEADER_FAST.names))

    def _header_bytes(self) -> bytes:
        return INDEX_HEADER_FAST.pack(*(self.header[k] for k in INDEX_HEADER_FAST.names))

    # ---- output ----

    def to_bytes(self) -> bytes:
        """The whole file as RocketMQ would flush it (current header first)."""
        size = index_file_size(self.hash_slot_num, self.index_num)
        return self._header_bytes() + bytes(self.buf[INDEX_HEADER_SIZE:size])

    def write(self, path, *, sparse: bool = True, chunk: int = 1 << 20) -> Path:
        """Write the flushed file to ``path`` (must not exist; zero blocks left as holes when ``sparse``)."""
        path = Path(path)
        size = index_file_size(self.hash_slot_num, self.index_num)
        view = memoryview(self.buf)[:size]
        try:
            with open(path, "xb") as out:
                out.write(self._header_bytes())
                for start in range(INDEX_HEADER_SIZE, size, chunk):
                    block = view[start:start + chunk]
                    if sparse and not np.frombuffer(block, dtype=np.uint8).any():
                        out.seek(len(block), 1)
                    else:
                        out.write(block)
                out.truncate(size)
        finally:
            view.release()
        return path

    def state(self) -> dict:
        """Where the file came from, its geometry and the header IndexService holds."""
        return {"file": self.name, "origin": self.origin,
                "geometry": {"hashSlotNum": self.hash_slot_num, "indexNum": self.index_num,
                             "source": self.geometry_source},
                "header": dict(self.header)}

    def summary(self) -> dict:
        """Header, geometry and first/last entry, shaped like the corpus' indexfiles.json."""
        last = min(self.index_count, self.index_num) - 1
        return {
            "file": self.name,
            "size": self.size,
            "geometry": {"hashSlotNum": self.hash_slot_num, "indexNum": self.index_num,
                         "expectedFileSize": index_file_size(self.hash_slot_num, self.index_num),
                         "maxEntriesUsable": self.index_num - 1},
            "geometrySource": self.geometry_source,
            "header": {**self.header, "rawIndexCountField": self.raw_index_count},
            "nonEmptySlots": self.non_empty_slots(),
            "entriesWritten": self.entries_written,
            "firstEntry": self.entry(1) if last >= 1 else None,
            "lastEntry": self.entry(last) if last >= 1 else None,
        }



def list_index_files(path) -> list[Path]:
    """IndexFiles of a store root or index directory, oldest first (names are timestamps)."""
    directory = _store_subdir(path, rocketmq_names.INDEX_DIR)
    if directory.is_file():
        return [directory]
    if not directory.is_dir():
        raise UnreadableInput("not a directory", str(directory))
    files = [p for p in directory.iterdir() if p.is_file()]
    return sorted(files, key=lambda p: (not rocketmq_names.is_mapped_file_name(p.name), rocketmq_names.mapped_file_offset(p), p.name))


# --------------------------------------------------------------------------
# Checkpoint
# --------------------------------------------------------------------------


def read_checkpoint(buf, path: str | None = None) -> dict:
    """``StoreCheckpoint``: the three flush timestamps (ms) RocketMQ recovers from."""
    if len(buf) < CHECKPOINT_FAST.size:
        raise TruncatedData(f"checkpoint shorter than {CHECKPOINT_FAST.size} bytes", path, len(buf))
    return CHECKPOINT_FAST.as_dict(buf, 0)
