"""Kafka record batches and RocketMQ messages found at any byte position: the search salvage and carving share.

A find is a position where a whole batch or message starts and passes every
check its format has, its checksum included: a Kafka v2 batch's CRC-32C over
attributes..end, a legacy (v0/v1) message's CRC-32 over magic..end with key and
value lengths adding up to its size, a RocketMQ message's magic code, fields
adding up to its totalSize and the CRC-32 of its body.  A false find needs a
random 32-bit checksum to match (31 bits for a RocketMQ body), so the search
counts the checksums it computed: a report can say how likely one false find is.

The search is vectorised: numpy tests every byte position of a window at once
against the few header bytes any real batch or message has (a Kafka base offset
below 2^56, a size below 64 MiB, a magic of 0-2; a RocketMQ magic code), then
decodes only the positions that pass.  After a find it follows the chain: the
next batch or message most likely starts where this one ends (a segment, a
CommitLog), so that position is checked first and directly, a stretch at a time
(v2 batches framed, their headers tested as columns, then their CRCs; RocketMQ
messages through ``MessageColumns``: one framing loop, their body CRCs in one
pass), and the byte-by-byte search resumes only where the chain breaks.  The
finds come out as ``Chain`` pieces of bounded length.  Windows are bounded, and
pages already searched are released, so memory stays flat whatever the size of
the input.

Limits (docs/salvage.md): Kafka batches of 64 MiB or more and base offsets of
2^56 or more are not looked for; a batch nested inside another find is not
reported (finds never overlap); the search cannot tell two copies of one batch
apart from a batch written twice.
"""

from __future__ import annotations

import functools
import mmap
import re
from array import array
from dataclasses import dataclass, field
from typing import Callable, Iterator
from zlib import crc32

import numpy as np

from segtool.errors import SegtoolError
from segtool.formats.checksums import checksum_ranges, crc32c
from segtool.kafka.log import (
    BATCH_HEADER_V2_FAST, BATCH_V2_OVERHEAD, CRC_V2_START, LEGACY_HEADER_V0_FAST, LEGACY_HEADER_V1_FAST,
    LOG_ENTRY_HEADER_FAST, LOG_OVERHEAD, MAGIC_AT, RECORD_OVERHEAD_V0, frame_batches,
)
from segtool.formats.fastdecode import compiled
from segtool.rocketmq.store_files import (
    BLANK_RECORD_FAST, MESSAGE_MAGIC_BYTES, MESSAGE_VERSIONS, MIN_MESSAGE_SIZE,
    PROPERTIES_LENGTH_FAST, PROPERTY_SEPARATOR, TOPIC_LENGTH_FAST, MessageColumns, decode_message,
)

KAFKA = "kafka"
ROCKETMQ = "rocketmq"

# The largest find each broker writes with its default settings.  A search of one byte range of a bigger
# input reads this far past its range (SPLIT_OVERLAP), so every such find that starts in the range is whole.
# Kafka: UnifiedLog.analyzeAndValidateRecords refuses a batch whose sizeInBytes (the 12-byte log overhead
# counted) exceeds message.max.bytes, default ServerLogConfigs.MAX_MESSAGE_BYTES_DEFAULT = 1 MiB + LOG_OVERHEAD;
# the overhead is added once more here, as a margin.
KAFKA_LARGEST_BATCH = 1024 * 1024 + 2 * LOG_OVERHEAD
# RocketMQ: MessageStoreConfig.maxMessageSize (4 MiB) bounds the body; MessageExtEncoder allows the whole
# message 64 KiB more (its encoding buffer) and refuses anything longer.
ROCKETMQ_LARGEST_MESSAGE = 4 * 1024 * 1024 + 64 * 1024
SPLIT_OVERLAP = max(KAFKA_LARGEST_BATCH, ROCKETMQ_LARGEST_MESSAGE)

WINDOW = 4 * 1024 * 1024  # positions tested at once: bounds the temporary arrays (a few bytes per position)
_RELEASE_EVERY = 8 * 1024 * 1024  # searched pages leave the resident set this often
CHAIN_MOST = 4096  # finds in one Chain piece: bounds what a caller holds at once
_CHAIN_SPAN = 1024 * 1024  # bytes of RocketMQ messages framed and checksummed at once

_SIZE_AT = LOG_ENTRY_HEADER_FAST.field_offset("size")
_V2_ATTRIBUTES_AT = BATCH_HEADER_V2_FAST.field_offset("attributes")
_LEGACY_ATTRIBUTES_AT = LEGACY_HEADER_V0_FAST.field_offset("attributes")
_SMALLEST_KAFKA = LOG_OVERHEAD + RECORD_OVERHEAD_V0  # a v0 message with null key and value
_LARGEST_SIZE_HIGH_BYTE = 4  # the size field's first byte is below this: batches under 64 MiB
_LENGTH_LIMIT = _LARGEST_SIZE_HIGH_BYTE << 24
_BASE_OFFSET_LIMIT = 1 << 56  # the base offset's first byte is 0
_KNOWN_CODECS = 4  # none, gzip, snappy, lz4, zstd

_LEGACY_LENGTH = compiled("LEGACY_BYTES_LENGTH")  # a legacy key or value length, -1 for null
_MAGIC_CODE_AT = BLANK_RECORD_FAST.field_offset("magicCode")
_MESSAGE_MAGIC_PREFIX = MESSAGE_MAGIC_BYTES[0][:3]  # the two versions differ only in their last byte
_MESSAGE_MAGIC_LAST = tuple(code[3] for code in MESSAGE_MAGIC_BYTES)


@dataclass(frozen=True)
class Find:
    """A whole, checksum-valid batch (Kafka) or message (RocketMQ) at ``position``."""

    format: str  # KAFKA or ROCKETMQ
    position: int
    size: int  # bytes, the Kafka log overhead included
    magic: int  # Kafka magic 0, 1 or 2; RocketMQ message version 1 or 2

    @property
    def end(self) -> int:
        return self.position + self.size


@dataclass
class Chain:
    """Finds of one format that follow each other in the bytes, each starting where the previous ends.

    ``messages`` (RocketMQ) holds, when the whole piece was read a stretch at a time,
    their fixed fields as columns (``MessageColumns``, aligned with ``positions``).
    """

    format: str
    positions: list[int]
    sizes: list[int]
    magics: list[int]
    messages: list[MessageColumns] | None = None

    @property
    def position(self) -> int:
        return self.positions[0]

    @property
    def end(self) -> int:
        return self.positions[-1] + self.sizes[-1]

    def __len__(self) -> int:
        return len(self.positions)

    def finds(self) -> Iterator[Find]:
        for position, size, magic in zip(self.positions, self.sizes, self.magics):
            yield Find(self.format, position, size, magic)


@dataclass
class SearchCounts:
    """What a search looked at: every figure a carving report gives for its false-find odds."""

    bytes_searched: int = 0
    candidates: int = 0  # positions whose header bytes passed and were decoded
    checksums: int = 0  # candidates whose checksum was computed (each a 2^-32 chance of a false find)
    finds: int = 0

    def add(self, other: "SearchCounts") -> None:
        self.bytes_searched += other.bytes_searched
        self.candidates += other.candidates
        self.checksums += other.checksums
        self.finds += other.finds


# --------------------------------------------------------------------------
# One position, checked in full
# --------------------------------------------------------------------------


def kafka_batch_size(buf, pos: int, end: int, counts: SearchCounts | None = None) -> tuple[int, int] | None:
    """(size, magic) of the valid Kafka batch or legacy message at ``pos``, or None."""
    if pos + _SMALLEST_KAFKA > end:
        return None
    base_offset, length = LOG_ENTRY_HEADER_FAST.unpack_from(buf, pos)
    size = LOG_OVERHEAD + length
    # the limits the vectorised search tests every position for, so that following a chain finds what it would
    if (not 0 <= base_offset < _BASE_OFFSET_LIMIT or not RECORD_OVERHEAD_V0 <= length < _LENGTH_LIMIT
            or pos + size > end):
        return None
    magic = buf[pos + MAGIC_AT]
    if magic == 2:
        if size < BATCH_V2_OVERHEAD:
            return None
        (_, _, _, _, crc, attributes, last_delta, _, _, _, producer_epoch, base_sequence,
         count) = BATCH_HEADER_V2_FAST.unpack_from(buf, pos)
        if (attributes & ~0x7F or (attributes & 7) > _KNOWN_CODECS or last_delta < 0 or not 0 <= count <= last_delta + 1
                or producer_epoch < -1 or base_sequence < -1):
            return None
        start = pos + CRC_V2_START
        checksum = crc32c
    elif magic < 2:
        header = LEGACY_HEADER_V1_FAST if magic else LEGACY_HEADER_V0_FAST
        if size < header.size + 8:
            return None
        fields = header.unpack_from(buf, pos)
        crc, attributes = fields[2], fields[4]
        if attributes & (0xF0 if magic else 0xF8) or (attributes & 7) > _KNOWN_CODECS:
            return None
        if not _legacy_lengths_fit(buf, pos + header.size, pos + size):
            return None
        start = pos + MAGIC_AT
        checksum = crc32
    else:
        return None
    if counts is not None:
        counts.checksums += 1
    with memoryview(buf) as view:
        if checksum(view[start:pos + size]) != crc:
            return None
    return size, magic


def _legacy_lengths_fit(buf, p: int, end: int) -> bool:
    """Do a legacy message's key and value lengths (-1: null) end exactly at ``end``?"""
    for _ in range(2):
        if p + _LEGACY_LENGTH.size > end:
            return False
        (length,) = _LEGACY_LENGTH.unpack_from(buf, p)
        p += _LEGACY_LENGTH.size + max(length, 0)
        if length < -1 or p > end:
            return False
    return p == end


def rocketmq_message_size(buf, pos: int, end: int, counts: SearchCounts | None = None) -> tuple[int, int] | None:
    """(totalSize, version) of the valid RocketMQ message at ``pos``, or None."""
    if pos + MIN_MESSAGE_SIZE > end:
        return None
    total_size, magic = BLANK_RECORD_FAST.unpack_from(buf, pos)
    version = MESSAGE_VERSIONS.get(magic)
    if version is None or total_size < MIN_MESSAGE_SIZE or pos + total_size > end:
        return None
    try:
        message = decode_message(buf, pos, end=pos + total_size, digests=False, decompress=False)
    except SegtoolError:
        return None
    if counts is not None:
        counts.checksums += 1
    if message["bodyCRC"] != message["bodyCRCComputed"]:
        return None
    if not _names_plausible(buf, message["bodyOffset"] + message["bodyLength"], version):
        return None
    return total_size, version


_TOPIC = re.compile(rb"[%|a-zA-Z0-9_-]+")  # TopicValidator.VALID_PATTERN_STR: a broker stores no other topic
# name NAME_VALUE_SEPARATOR value pairs, each after a PROPERTY_SEPARATOR but the first, as
# messageProperties2String writes them (an empty item between two separators passes, as the broker's
# string2messageProperties skips it)
_PROPERTIES = re.compile(rb"(?:\x02|[^\x01\x02]+\x01[^\x02]+)*")
assert PROPERTY_SEPARATOR == "\x02"
_SEPARATOR = PROPERTY_SEPARATOR.encode()


@functools.lru_cache(maxsize=1024)  # a store holds a few topics: most messages repeat one
def _topic_valid(topic: bytes) -> bool:
    return _TOPIC.fullmatch(topic) is not None


def _names_plausible(buf, p: int, version: int) -> bool:
    """Are the topic and properties after the body (which the body CRC does not cover) what a broker writes?

    A message cut short and followed by other bytes can keep a valid body CRC;
    its topic or properties are then almost never a valid topic and a list of
    UTF-8 name/value pairs.
    """
    topic_length = TOPIC_LENGTH_FAST[version]
    (length,) = topic_length.unpack_from(buf, p)
    p += topic_length.size
    topic_at, topic_end = p, p + length
    (length,) = PROPERTIES_LENGTH_FAST.unpack_from(buf, topic_end)
    properties_at = topic_end + PROPERTIES_LENGTH_FAST.size
    return _texts_plausible(buf[topic_at:topic_end], buf[properties_at:properties_at + max(length, 0)])


def _texts_plausible(topic: bytes, properties: bytes) -> bool:
    return _topic_valid(topic) and _properties_plausible(properties)


def _properties_plausible(properties: bytes) -> bool:
    try:
        str(properties, "utf-8")  # any buffer: scan's and salvage's maps give memoryviews
    except UnicodeDecodeError:
        return False
    return _PROPERTIES.fullmatch(properties) is not None


# --------------------------------------------------------------------------
# Every position of a range
# --------------------------------------------------------------------------


def _kafka_positions(data: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Positions in [lo, hi) whose header bytes could start a Kafka batch or message."""
    n = hi - lo
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    at = lambda shift: data[lo + shift:hi + shift]  # noqa: E731 - the byte ``shift`` after every position
    keep = at(MAGIC_AT) <= 2
    keep &= at(0) == 0  # base offset below 2^56
    keep &= at(_SIZE_AT) < _LARGEST_SIZE_HIGH_BYTE
    keep &= ((at(_SIZE_AT + 1) | at(_SIZE_AT + 2)) != 0) | (at(_SIZE_AT + 3) >= RECORD_OVERHEAD_V0)
    found = np.flatnonzero(keep) + lo
    return found[_kafka_attributes_plausible(data, found)]


def _kafka_attributes_plausible(data: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Which of the positions ``found`` (whose magic byte is 0-2) hold attributes a batch or message can have."""
    magic = data[found + MAGIC_AT]
    v2 = magic == 2
    # v2: attributes is a non-negative int16 below 0x80; v0/v1: a byte with codec and timestamp-type bits only
    high, low = data[found + _V2_ATTRIBUTES_AT], data[found + _V2_ATTRIBUTES_AT + 1]
    legacy_attributes = data[found + _LEGACY_ATTRIBUTES_AT]
    return np.where(v2, (high == 0) & (low < 0x80), (legacy_attributes & 0xF0) == 0)


def _kafka_plausible_at(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``_kafka_positions``' test at the given positions (each with room for a Kafka header)."""
    keep = (data[positions + MAGIC_AT] <= 2) & (data[positions] == 0) & (data[positions + _SIZE_AT] < _LARGEST_SIZE_HIGH_BYTE)
    keep &= ((data[positions + _SIZE_AT + 1] | data[positions + _SIZE_AT + 2]) != 0) | (
        data[positions + _SIZE_AT + 3] >= RECORD_OVERHEAD_V0)
    keep[keep] = _kafka_attributes_plausible(data, positions[keep])
    return keep


def _rocketmq_positions(data: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Positions in [lo, hi) holding a RocketMQ message magic code (v1 or v2) and a positive totalSize."""
    if hi <= lo:
        return np.empty(0, dtype=np.int64)
    at = _MAGIC_CODE_AT
    found = np.flatnonzero(data[lo + at:hi + at] == _MESSAGE_MAGIC_PREFIX[0]) + lo
    keep = (data[found + at + 1] == _MESSAGE_MAGIC_PREFIX[1]) & (data[found + at + 2] == _MESSAGE_MAGIC_PREFIX[2])
    last = data[found + at + 3]
    keep &= (last == _MESSAGE_MAGIC_LAST[0]) | (last == _MESSAGE_MAGIC_LAST[1])
    keep &= data[found] < 0x80
    return found[keep]


_SEARCHES = {
    KAFKA: (_kafka_positions, kafka_batch_size, _SMALLEST_KAFKA),
    ROCKETMQ: (_rocketmq_positions, rocketmq_message_size, MIN_MESSAGE_SIZE),
}


def chains(buf, start: int = 0, end: int | None = None, formats: tuple[str, ...] = (KAFKA, ROCKETMQ),
           counts: SearchCounts | None = None, window: int = WINDOW,
           progress: Callable[[int], None] | None = None, stop: int | None = None,
           log: "RangeSearch | None" = None) -> Iterator[Chain]:
    """Every find in ``buf[start:end]`` in position order, as chains; finds never overlap (the search
    goes on after each).

    ``buf`` is anything with the buffer protocol (a mapped file is searched in
    place); a mapped file's searched pages are released as the search moves on.
    ``progress`` is called with the position searched up to after each window
    and chain piece.  ``stop``: no chain starts at or after it (a split search's
    range; its chains still end where they end, up to ``end``).  ``log`` notes
    every position the search checks and every chain it starts (``search_range``).
    """
    end = len(buf) if end is None else min(end, len(buf))
    stop = end if stop is None else min(stop, end)
    counts = counts if counts is not None else SearchCounts()
    searches = [_SEARCHES[name] + (name,) for name in formats]
    smallest = min(search[2] for search in searches)
    data = np.frombuffer(buf, dtype=np.uint8)
    release = _Releaser(buf, start)

    try:
        free = start  # no find may start before this (the end of the last find)
        lo = start
        last_position = min(end - smallest, stop - 1)  # no whole find starts after this
        while lo <= last_position:
            hi = min(lo + window, last_position + 1)
            found_at = [positions(data, lo, hi) for positions, _, _, _ in searches]
            at = np.concatenate(found_at)
            which = np.repeat(np.arange(len(searches)), [len(positions) for positions in found_at])
            order = np.argsort(at, kind="stable")  # by position; at one position, in the order of ``formats``
            at, which = at[order], which[order]
            i = 0
            while i < len(at):
                pos = int(at[i])
                _, check, _, name = searches[which[i]]
                i += 1
                counts.candidates += 1
                checksums = counts.checksums
                found = check(buf, pos, end, counts)
                if log is not None:
                    log.checked(pos, counts.checksums != checksums)
                if found is None:
                    continue
                if log is not None:
                    log.started(name, pos, found)
                for chain in _follow(buf, name, pos, found, end, formats, counts):
                    free = chain.end
                    if log is not None:
                        log.followed(free)
                    yield chain
                    if progress is not None:
                        progress(free)
                    release(free)
                if free >= hi:
                    break
                i = int(np.searchsorted(at, free))  # candidates inside the chain are not looked at
            lo = max(hi, free)
            if progress is not None:
                progress(min(lo, end))
            release(lo)
        counts.bytes_searched += max(0, stop - start)
    finally:
        del data  # release the buffer export: the caller may close the mapping


class _Releaser:
    """Drops the pages of a mapped file that a search has passed from the resident set, every
    _RELEASE_EVERY bytes (a search of a whole disk image would otherwise hold all of it)."""

    def __init__(self, buf, start: int):
        self.buf = buf if isinstance(buf, mmap.mmap) else None
        self.released = start - start % mmap.PAGESIZE

    def __call__(self, upto: int) -> None:
        if self.buf is not None and upto - self.released > _RELEASE_EVERY:
            page_end = upto - upto % mmap.PAGESIZE
            self.buf.madvise(mmap.MADV_DONTNEED, self.released, page_end - self.released)
            self.released = page_end


def _follow(buf, fmt: str, pos: int, found: tuple[int, int], end: int, formats: tuple[str, ...],
            counts: SearchCounts) -> Iterator[Chain]:
    """The chain that starts with the find ``found`` (size, magic) at ``pos``, in pieces of at most
    CHAIN_MOST finds: each next position is checked as the search would check it (every format,
    in the search's order), until one holds no find."""
    chain = Chain(fmt, [pos], [found[0]], [found[1]])
    counts.finds += 1
    pos += found[0]
    while True:
        following = _batch_stretch(buf, pos, end, counts) if formats[0] == KAFKA else None
        for name in formats if following is None else ():
            if name == ROCKETMQ and (following := _message_stretch(buf, pos, end, KAFKA in formats, counts)):
                break
            counts.candidates += 1
            checked = _SEARCHES[name][1](buf, pos, end, counts)
            if checked is not None:
                following = Chain(name, [pos], [checked[0]], [checked[1]])
                break
        if following is None:
            yield chain
            return
        counts.finds += len(following)
        pos = following.end
        if (following.format == chain.format and (following.messages is None) == (chain.messages is None)
                and len(chain) + len(following) <= CHAIN_MOST):
            chain.positions += following.positions
            chain.sizes += following.sizes
            chain.magics += following.magics
            if following.messages is not None:
                chain.messages += following.messages
            continue
        yield chain
        chain = following


def _batch_stretch(buf, pos: int, end: int, counts: SearchCounts) -> Chain | None:
    """The v2 batches from ``pos`` on, each starting where the previous ends, that ``kafka_batch_size``
    finds (the search checks Kafka first at every position), checked a stretch at a time: their
    headers as columns, then their checksums; None when the one at ``pos`` is not one."""
    framed, _, _ = frame_batches(buf, pos, end, CHAIN_MOST, until=pos + _CHAIN_SPAN)
    positions = np.array(framed, dtype=np.int64)
    positions = positions[:np.searchsorted(positions, end - BATCH_V2_OVERHEAD, side="right")]  # room for a header
    if not len(positions):
        return None
    with memoryview(buf) as view:
        data = np.frombuffer(view, dtype=np.uint8)
        header = np.lib.stride_tricks.sliding_window_view(data, BATCH_V2_OVERHEAD)[positions]
        header = header.copy().view(_BATCH_HEADER_DTYPE).reshape(len(positions))
        del data
    length = header["batch_length"].astype(np.int64)
    attributes, last_delta = header["attributes"].astype(np.int64), header["last_offset_delta"].astype(np.int64)
    record_count = header["record_count"].astype(np.int64)
    plausible = ((header["magic"] == 2) & (header["base_offset"] >= 0) & (header["base_offset"] < _BASE_OFFSET_LIMIT)
                 & (length < _LENGTH_LIMIT) & (length + LOG_OVERHEAD >= BATCH_V2_OVERHEAD)
                 & ((attributes & ~0x7F) == 0) & ((attributes & 7) <= _KNOWN_CODECS) & (last_delta >= 0)
                 & (record_count >= 0) & (record_count <= last_delta + 1) & (header["producer_epoch"] >= -1)
                 & (header["base_sequence"] >= -1))
    count = int(np.argmin(plausible)) if not plausible.all() else len(plausible)
    ends = positions[:count] + LOG_OVERHEAD + length[:count]
    with memoryview(buf) as view:
        checksums = checksum_ranges(view, (positions[:count] + CRC_V2_START).tolist(), ends.tolist())
    matches = np.array(checksums, dtype=np.int64) == header["crc"][:count]
    count = count if matches.all() else int(np.argmin(matches))
    if not count:
        return None
    # the batches found are counted; the caller checks the first that is not one again, and counts it
    counts.candidates += count
    counts.checksums += count
    return Chain(KAFKA, positions[:count].tolist(), (ends[:count] - positions[:count]).tolist(), [2] * count)


_BATCH_HEADER_DTYPE = BATCH_HEADER_V2_FAST.numpy_dtype()


def _message_stretch(buf, pos: int, end: int, kafka_too: bool, counts: SearchCounts) -> Chain | None:
    """The plain RocketMQ messages (``MessageColumns``) framed from ``pos`` whose topic and properties are
    what a broker writes, checked a stretch at a time; None when the message at ``pos`` is not one.

    With ``kafka_too`` a message whose first bytes could also start a Kafka batch is checked for
    one first, as the search checks every position (``pos`` itself has been); the stretch stops
    before a Kafka find."""
    columns = MessageColumns(buf, pos, span=_CHAIN_SPAN)
    if kafka_too and columns.count > 1:
        with memoryview(buf) as view:
            data = np.frombuffer(view, dtype=np.uint8)
            kafka_like = np.flatnonzero(_kafka_plausible_at(data, columns.positions[1:])) + 1
            del data
        for index in kafka_like.tolist():
            counts.candidates += 1
            if kafka_batch_size(buf, int(columns.positions[index]), end, counts) is not None:
                _keep_first(columns, index)
                break
    ends = columns.positions + columns.header["totalSize"]
    within = ends <= end
    count = int(np.argmin(within)) if not within.all() else len(within)
    topics = _cut(buf, columns.topic_at[:count], columns.topic_length[:count])
    properties = _cut(buf, columns.properties_at[:count], columns.properties_length[:count])
    # the properties joined by the separator are plausible exactly when each message's are (items
    # cannot cross a separator; a broken UTF-8 sequence stays broken before one): checked at once,
    # and one by one only to find the first that is not
    if not (all(map(_topic_valid, set(topics))) and _properties_plausible(_SEPARATOR.join(properties))):
        count = next(index for index, texts in enumerate(zip(topics, properties)) if not _texts_plausible(*texts))
    count = min(count, CHAIN_MOST)
    if not count:
        return None
    counts.candidates += count
    counts.checksums += count
    positions = columns.positions[:count].tolist()
    _keep_first(columns, count)
    return Chain(ROCKETMQ, positions, (ends[:count] - columns.positions).tolist(), [1] * count, [columns])


def _cut(buf, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """``buf[start:start + length]`` for each start (empty for a length <= 0)."""
    return list(map(buf.__getitem__, map(slice, starts.tolist(), (starts + np.maximum(lengths, 0)).tolist())))


def _keep_first(columns: MessageColumns, count: int) -> None:
    """Cut ``columns`` to its first ``count`` messages."""
    if count < columns.count:
        columns.stop = int(columns.positions[count])
        columns.count = count
        for name in ("positions", "header", "body_at", "topic_at", "topic_length", "properties_at",
                     "properties_length"):
            setattr(columns, name, getattr(columns, name)[:count])


# --------------------------------------------------------------------------
# One input searched as byte ranges, put together again
# --------------------------------------------------------------------------


@dataclass
class RangeSearch:
    """What the search of one byte range ``[start, stop)`` met: every position it checked (and whether
    a checksum was computed there) and every chain it started, with how far it followed each.

    Small (a few bytes per checked position: real data and zeros pass the header test at only a
    few positions), so a task can hand it back; ``merged_chains`` puts the ranges of an input
    together into exactly what one search of the whole input finds."""

    start: int
    stop: int
    checked_at: array = field(default_factory=lambda: array("q"))
    checksummed: bytearray = field(default_factory=bytearray)
    # (format, position, size, magic, the end of the chain as far as this search followed it)
    starts: list[tuple[str, int, int, int, int]] = field(default_factory=list)

    def checked(self, position: int, checksummed: bool) -> None:
        self.checked_at.append(position)
        self.checksummed.append(checksummed)

    def started(self, fmt: str, position: int, found: tuple[int, int]) -> None:
        self.starts.append((fmt, position, found[0], found[1], position + found[0]))

    def followed(self, end: int) -> None:
        fmt, position, size, magic, _ = self.starts[-1]
        self.starts[-1] = (fmt, position, size, magic, end)

    def shifted(self, by: int) -> "RangeSearch":
        """The same search with every position ``by`` bytes further on (a range read into its own buffer)."""
        moved = array("q", (position + by for position in self.checked_at))
        return RangeSearch(self.start + by, self.stop + by, moved, self.checksummed,
                           [(fmt, position + by, size, magic, end + by)
                            for fmt, position, size, magic, end in self.starts])


def search_range(buf, start: int, stop: int, end: int | None = None,
                 formats: tuple[str, ...] = (KAFKA, ROCKETMQ)) -> RangeSearch:
    """The search of ``buf`` from ``start`` as far as chains that start before ``stop`` go: every find
    starting in [start, stop), each read up to ``end`` (the whole buffer by default).

    A chain is followed until it passes ``stop`` (the next range's search meets the rest of it
    anyway); ``merged_chains`` follows it to its end."""
    log = RangeSearch(start, stop)
    for chain in chains(buf, start, end, formats, SearchCounts(), stop=stop, log=log):
        if chain.end >= stop:
            break
    return log


def merged_chains(buf, searches: list[RangeSearch], formats: tuple[str, ...] = (KAFKA, ROCKETMQ),
                  counts: SearchCounts | None = None,
                  progress: Callable[[int], None] | None = None) -> Iterator[Chain]:
    """``chains(buf)``, the same chains and counts, from the searches of consecutive ranges of ``buf``.

    A range's search began at its first byte as if nothing came before; the whole search may
    still be inside a chain there (a batch across the boundary).  So the ranges are walked in
    order with the end of the last chain: a checked position before it is not counted, a chain
    starting before it is dropped (the find inside a batch that the whole search never looks
    at), and every other chain is followed here to its end, as the whole search follows it.  A
    find belongs to the range its first byte lies in.  Only when a dropped chain ran on past that
    end (a batch nested in another, found by the range and hiding positions the whole search
    checks) is the rest of the range searched again, here, from that end."""
    counts = counts if counts is not None else SearchCounts()
    end = len(buf)
    free = 0
    release = _Releaser(buf, 0)
    pending = list(reversed(searches))
    while pending:
        search = pending.pop()
        checked, checksummed = search.checked_at, search.checksummed
        i = 0
        for fmt, position, size, magic, followed in [*search.starts, (None, search.stop, 0, 0, 0)]:
            while i < len(checked) and checked[i] <= position and checked[i] < search.stop:
                if checked[i] >= free:
                    counts.candidates += 1
                    counts.checksums += checksummed[i]
                i += 1
            if fmt is None:
                break
            if position < free:
                if followed > free and free < search.stop:
                    pending.append(search_range(buf, free, search.stop, end, formats))
                    break
                continue
            for chain in _follow(buf, fmt, position, (size, magic), end, formats, counts):
                free = chain.end
                yield chain
                if progress is not None:
                    progress(free)
                release(free)
    counts.bytes_searched += end


def find(buf, start: int = 0, end: int | None = None, formats: tuple[str, ...] = (KAFKA, ROCKETMQ),
         counts: SearchCounts | None = None, window: int = WINDOW,
         progress: Callable[[int], None] | None = None) -> Iterator[Find]:
    """Every find in ``buf[start:end]`` in position order (``chains``, one find at a time)."""
    for chain in chains(buf, start, end, formats, counts, window, progress):
        yield from chain.finds()


def next_find(buf, start: int, end: int, fmt: str, counts: SearchCounts | None = None) -> Find | None:
    """The first find of format ``fmt`` at or after ``start``: where reading resumes after damage."""
    for found in find(buf, start, end, (fmt,), counts, window=64 * 1024):
        return found
    return None
