"""Kafka `.log` segments: where the record batches (magic 2) and legacy message sets (magic 0/1) are.

The layouts are declared once, as construct schemas in ``kafka.schemas``.  The
fixed headers are decoded in the hot path by a ``struct.Struct`` compiled from
those schemas (``fastdecode``).  This module frames batches and gives their
headers; their records are decoded by ``kafka.records`` (one by one) and
``kafka.record_columns`` (as numpy columns), both checked against ``RECORD_V2``
on every batch of the corpus (tests/test_kafka_log.py).

Batch framing follows Kafka's ``FileLogInputStream.nextBatch``: a batch needs
more than 17 bytes (offset, size, epoch, magic) left in the file; a size below
14 is corrupt; a batch that runs past the end of the file ends iteration (the
rest are "invalid bytes at the end").
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from functools import cache

from segtool.formats.checksums import ChecksumHelper, checksum_ranges, crc32c
from zlib import crc32

from segtool.errors import CorruptData, TruncatedData
from segtool.source import release_pages
from segtool.formats.fastdecode import compiled
from segtool.formats.outcomes import WalkEnd

# --------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------

# The construct declarations live in ``kafka_schemas``; the hot path uses their
# compiled form (see ``fastdecode``) and never imports construct.
LOG_ENTRY_HEADER_FAST = compiled("LOG_ENTRY_HEADER")
BATCH_HEADER_V2_FAST = compiled("BATCH_HEADER_V2")
LEGACY_HEADER_V0_FAST = compiled("LEGACY_HEADER_V0")
LEGACY_HEADER_V1_FAST = compiled("LEGACY_HEADER_V1")
CONTROL_KEY_FAST = compiled("CONTROL_KEY")
END_TXN_MARKER_FAST = compiled("END_TXN_MARKER")

LOG_OVERHEAD = LOG_ENTRY_HEADER_FAST.size  # offset int64 + size int32, in front of every batch/message
MAGIC_AT = BATCH_HEADER_V2_FAST.field_offset("magic")  # the same position in v0/v1 messages
HEADER_SIZE_UP_TO_MAGIC = MAGIC_AT + 1
RECORD_OVERHEAD_V0 = LEGACY_HEADER_V0_FAST.size - LOG_OVERHEAD + 8  # smallest size field: null key and value
BATCH_V2_OVERHEAD = BATCH_HEADER_V2_FAST.size
CRC_V2_START = BATCH_HEADER_V2_FAST.field_offset("attributes")  # CRC-32C covers attributes .. end of batch
RECORD_COUNT_AT = BATCH_HEADER_V2_FAST.field_offset("record_count")

# single header fields, for the loops that step over batches reading one field of each
_SIZE = LOG_ENTRY_HEADER_FAST.field("size")
_SIZE_AT = LOG_ENTRY_HEADER_FAST.field_offset("size")
_LAST_OFFSET_DELTA = BATCH_HEADER_V2_FAST.field("last_offset_delta")
_LAST_OFFSET_DELTA_AT = BATCH_HEADER_V2_FAST.field_offset("last_offset_delta")
_MAX_TIMESTAMP = BATCH_HEADER_V2_FAST.field("max_timestamp")
_MAX_TIMESTAMP_AT = BATCH_HEADER_V2_FAST.field_offset("max_timestamp")
# a legacy message's key / value length (-1: null), bound once: read twice per message
_LEGACY_LENGTH = compiled("LEGACY_BYTES_LENGTH")
_unpack_legacy_length, _LEGACY_LENGTH_SIZE = _LEGACY_LENGTH.unpack_from, _LEGACY_LENGTH.size

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

NO_TIMESTAMP = -1
# the most bytes one batch may decompress to, unless a command is given another cap (--decompress-cap)
DEFAULT_CAP = 256 * 1024 * 1024
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


# --------------------------------------------------------------------------
# Decoded forms
# --------------------------------------------------------------------------


class Record:
    """One record (v2) or one message (legacy); offsets and timestamps absolute."""

    __slots__ = (
        "offset", "timestamp", "key", "value", "headers", "sequence",
        "attributes", "timestamp_delta", "offset_delta", "crc", "crc_valid", "magic", "position",
    )

    def __init__(self, offset, timestamp, key, value, headers=(), sequence=-1, attributes=0,
                 timestamp_delta=0, offset_delta=0, crc=None, crc_valid=None, magic=2, position=None):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence
        self.attributes = attributes
        self.timestamp_delta = timestamp_delta
        self.offset_delta = offset_delta
        self.crc = crc
        self.crc_valid = crc_valid
        self.magic = magic
        self.position = position

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)


@dataclass(slots=True)
class RecordBatch:
    """A v2 record batch or a legacy (possibly compressed wrapper) message, as framed in a file."""

    position: int  # byte position of the batch in its file
    magic: int
    # the header's offset field; for a legacy message that is its own offset, for a compressed wrapper
    # the last inner offset: Kafka's baseOffset() is then the first inner one (records.base_offset_of)
    base_offset: int
    last_offset: int
    size: int  # bytes in the file including the 12-byte log overhead
    crc: int
    attributes: int
    max_timestamp: int
    record_count: int | None = None
    partition_leader_epoch: int = -1
    last_offset_delta: int = 0
    base_timestamp: int = NO_TIMESTAMP
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    # legacy messages carry their own key/value (the wrapper's value is the compressed set)
    key: bytes | None = None
    value: bytes | None = None
    _buffer: object = field(default=None, repr=False, compare=False)
    _computed_crc: int | None = field(default=None, repr=False, compare=False)

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.codec, f"unknown({self.codec})")

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return TIMESTAMP_TYPES[(self.attributes >> 3) & 1]

    @property
    def is_log_append_time(self) -> bool:
        return self.magic > 0 and bool(self.attributes & 0x08)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)

    @property
    def delete_horizon_ms(self) -> int | None:
        if self.magic >= 2 and self.attributes & 0x40:
            return self.base_timestamp
        return None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def wrapper_offset(self) -> int | None:
        """A legacy message's own offset field (a compressed wrapper's: Kafka's lastOffset()); None for v2."""
        return self.last_offset if self.magic < 2 else None

    @property
    def crc_valid(self) -> bool:
        """Kafka's ``isValid``: enough bytes for the header and a matching checksum."""
        return self.crc == self.computed_crc()

    def computed_crc(self) -> int | None:
        if self._computed_crc is None:
            if self.magic >= 2 and self.size < BATCH_V2_OVERHEAD:
                return None
            checksum, start = (crc32c, CRC_V2_START) if self.magic >= 2 else (crc32, 16)
            with memoryview(self._buffer) as view:  # checksummed in place, not copied
                self._computed_crc = checksum(view[self.position + start:self.end])
        return self._computed_crc

    def raw(self) -> bytes:
        return bytes(self._buffer[self.position:self.end])


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps at Integer.MAX_VALUE."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


def increment_sequences(sequences, increments):
    """``increment_sequence`` over numpy columns, and -1 where the base sequence is -1 (none)."""
    import numpy as np

    wrapped = increments - (0x7FFFFFFF - sequences) - 1
    return np.where(sequences == -1, -1, np.where(sequences > 0x7FFFFFFF - increments, wrapped,
                                                  sequences + increments))


# --------------------------------------------------------------------------
# Batch framing
# --------------------------------------------------------------------------


class BatchScan:
    """Iterates the batches of a buffer the way FileLogInputStream does.

    After iteration ``valid_bytes`` is the end of the last whole batch and
    ``stop_reason`` says why iteration ended (``WalkEnd.TRUNCATED`` or ``WalkEnd.CORRUPT``;
    ``None`` for a clean end).
    """

    def __init__(self, buffer, start: int = 0, end: int | None = None, path: str | None = None):
        if start < 0 or start > len(buffer):
            # an index entry can point anywhere; only positions inside the file are scanned
            raise CorruptData(f"position {start} is outside the {len(buffer)}-byte file", path, start)
        self.buffer = buffer
        self.start = start
        self.end = len(buffer) if end is None else min(end, len(buffer))
        self.path = path
        self.valid_bytes = start
        self.stop_reason: WalkEnd | None = None

    def seek_offset(self, target: int) -> "BatchScan":
        """Start at the first batch whose last offset >= ``target`` (``seek_offset_position``).

        A batch that iteration would report as corrupt or truncated stops the
        seek there, so iteration reports it.
        """
        self.start, _ = seek_offset_position(self.buffer, self.start, self.end, target)
        self.valid_bytes = self.start
        return self

    def __iter__(self):
        buf, end, pos, path = self.buffer, self.end, self.start, self.path
        released = pos - pos % mmap.PAGESIZE
        most = 1  # frames ahead, doubling: a lookup reads one batch, a scan reads them all
        while True:
            positions, next_pos, stop = frame_batches(buf, pos, end, most)
            for pos in positions:
                batch = batch_at(buf, pos, path)
                self.valid_bytes = batch.end
                yield batch
                if pos - released > _RELEASE_EVERY:
                    released = release_pages(buf, released, pos)
            pos = next_pos
            if stop is not None:
                self.stop_reason = _stop_reason(stop)
                if stop is WalkEnd.CORRUPT:  # Kafka's reader throws here
                    raise undersized_batch(buf, pos, self.path)
                return
            most = min(most * 2, 4096)


    def chunks(self, most: int = 4096, span: int = 4 * 1024 * 1024):
        """The same framing in bulk: lists of batch start positions (up to ``most``, none starting
        ``span`` bytes or more past the list's first) with the position after the last batch.

        Bulk readers (``BatchHeaders``, ``chunk_records``) take a chunk at a time.
        ``valid_bytes`` and ``stop_reason`` are kept as iteration keeps them;
        corrupt framing raises after the chunks before it.
        """
        buf, end, pos = self.buffer, self.end, self.start
        released = pos - pos % mmap.PAGESIZE
        while True:
            positions, next_pos, stop = frame_batches(buf, pos, end, most, pos + span)
            if positions:
                yield positions, next_pos
                self.valid_bytes = next_pos
                if next_pos - released > _RELEASE_EVERY:
                    released = release_pages(buf, released, next_pos)
            pos = next_pos
            if stop is not None:
                self.stop_reason = _stop_reason(stop)
                if stop is WalkEnd.CORRUPT:
                    raise undersized_batch(buf, pos, self.path)
                return


def _stop_reason(stop: WalkEnd) -> WalkEnd | None:
    """Why framing stopped, as scanners report it: nothing for a clean end."""
    return None if stop is WalkEnd.END_OF_FILE else stop


def seek_offset_position(buf, pos: int, end: int, target: int) -> tuple[int, bool]:
    """From ``pos``, the position of the first batch whose last offset >= ``target``, reading
    headers only, and whether a whole batch is there (else iteration from there ends or fails).

    This is how Kafka's ``searchForOffsetWithSize`` walks from an index position
    (it looks at no more than offset, size, magic and last offset delta).
    """
    unpack_head, unpack_int = LOG_ENTRY_HEADER_FAST.unpack_from, _LAST_OFFSET_DELTA.unpack_from
    while pos + HEADER_SIZE_UP_TO_MAGIC < end:
        base_offset, size = unpack_head(buf, pos)
        if size < RECORD_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > end:
            break
        if 2 <= buf[pos + 16] < 0x80:  # magic >= 2: the last offset is base + lastOffsetDelta
            if size + LOG_OVERHEAD < BATCH_V2_OVERHEAD:
                break
            last_offset = base_offset + unpack_int(buf, pos + _LAST_OFFSET_DELTA_AT)[0]
        else:  # a legacy message (or wrapper) carries its last offset in the header
            last_offset = base_offset
        if last_offset >= target:
            return pos, True
        pos += LOG_OVERHEAD + size
    return pos, False


def seek_timestamp_position(buf, pos: int, end: int, timestamp: int) -> tuple[int, bool]:
    """From ``pos``, the position of the first v2 batch whose max timestamp >= ``timestamp``
    (FileRecords.searchForTimestamp's test), reading headers only, and whether one is there.

    It stops, answering False, at anything else (a legacy message, a damaged or
    missing batch): iteration from that position takes over.
    """
    unpack_size, unpack_ts, size_at = _SIZE.unpack_from, _MAX_TIMESTAMP.unpack_from, _SIZE_AT
    while pos + HEADER_SIZE_UP_TO_MAGIC < end:
        size = unpack_size(buf, pos + size_at)[0]
        if (size + LOG_OVERHEAD < BATCH_V2_OVERHEAD or pos + LOG_OVERHEAD + size > end
                or not 2 <= buf[pos + 16] < 0x80):
            break
        if unpack_ts(buf, pos + _MAX_TIMESTAMP_AT)[0] >= timestamp:
            return pos, True
        pos += LOG_OVERHEAD + size
    return pos, False


def batch_at(buf, pos: int, path=None) -> RecordBatch:
    """The batch at ``pos`` with its header decoded; its framing (size within the file) is already checked."""
    base_offset, size = LOG_ENTRY_HEADER_FAST.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic >= 0x80:
        magic -= 0x100
    if magic < 2:
        return _legacy_message(buf, pos, size, magic, path)
    if size + LOG_OVERHEAD >= BATCH_V2_OVERHEAD:
        (_, _, epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
         pid, pepoch, base_seq, count) = _UNPACK_V2(buf, pos)
    else:
        # Too short for a v2 header: Kafka reads what it can; we report it invalid.
        epoch, crc, attrs, last_delta, base_ts, max_ts = -1, 0, 0, 0, NO_TIMESTAMP, NO_TIMESTAMP
        pid, pepoch, base_seq, count = -1, -1, -1, None
    return RecordBatch(pos, magic, base_offset, base_offset + last_delta, size + LOG_OVERHEAD, crc, attrs,
                       max_ts, count, epoch, last_delta, base_ts, pid, pepoch, base_seq, _buffer=buf)


_UNPACK_V2 = BATCH_HEADER_V2_FAST.unpack_from


def frame_batches(buf, pos: int, end: int, most: int,
                  until: int | None = None) -> tuple[list[int], int, WalkEnd | None]:
    """FileLogInputStream's framing: the start positions of up to ``most`` whole batches from ``pos``
    (and none starting at or after ``until``).

    Returns (positions, the position after them, stop): stop is None when
    ``most`` batches (or ``until``) were reached, else END_OF_FILE (a clean end
    at ``end``), TRUNCATED (a batch runs past ``end``) or CORRUPT (a size field
    below the minimum).
    """
    positions = []
    append = positions.append
    unpack_size, size_at = _SIZE.unpack_from, _SIZE_AT
    # one comparison per test in the loop (it runs once per batch of every scan);
    # which rule stopped it is worked out after
    header_room = end - HEADER_SIZE_UP_TO_MAGIC  # a batch must start before this
    bound = header_room if until is None else min(until, header_room)
    overhead, smallest = LOG_OVERHEAD, RECORD_OVERHEAD_V0
    for _ in range(most):
        if pos >= bound:
            if pos >= header_room:
                return positions, pos, (WalkEnd.TRUNCATED if pos < end else WalkEnd.END_OF_FILE)
            break  # reached ``until``
        size = unpack_size(buf, pos + size_at)[0]
        after = pos + overhead + size
        if size < smallest or after > end:
            return positions, pos, (WalkEnd.CORRUPT if size < smallest else WalkEnd.TRUNCATED)
        append(pos)
        pos = after
    return positions, pos, None


def undersized_batch(buf, pos: int, path) -> CorruptData:
    """The error for a size field below the smallest legal message, in Kafka's words."""
    size = _SIZE.unpack_from(buf, pos + _SIZE_AT)[0]
    return CorruptData(f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
                       path, pos)


class BatchHeaders:
    """Consecutive framed batches as columns: the bulk counterpart of ``BatchScan``.

    When every batch is a v2 batch with a whole header (``regular``), the
    headers are gathered into one numpy array with the dtype derived from the
    ``BATCH_HEADER_V2`` schema, and ``computed_crc`` holds each batch's CRC-32C.
    Other chunks (legacy messages, short batches) only carry positions and
    sizes; their readers take ``batch(i)`` objects one by one.
    """

    def __init__(self, buffer, path, positions: list[int], end: int, checksums: list[int] | None = None):
        import numpy as np

        self.buffer, self.path = buffer, path
        self.positions, self.end = positions, end  # the list, for bisection
        self.position = np.array(positions, dtype=np.int64)
        self.size = np.diff(self.position, append=end)  # with the 12-byte log overhead
        raw = np.frombuffer(buffer, dtype=np.uint8)
        self.regular = bool((raw[self.position + 16] == 2).all() and (self.size >= BATCH_V2_OVERHEAD).all())
        if self.regular:
            rows = raw[self.position[:, None] + np.arange(BATCH_V2_OVERHEAD)]
            self.header = rows.view(_batch_header_dtype()).ravel()
            if checksums is None:
                with memoryview(buffer) as view:
                    checksums = checksum_ranges(view, *crc_ranges(positions, end))
            self.computed_crc = np.array(checksums, dtype=np.int64)
        del raw  # release the buffer export: the mapping may be closed after the scan

    def __len__(self) -> int:
        return len(self.position)

    def column(self, name: str):
        """A header field as int64 (regular chunks only)."""
        return self.header[name].astype("int64")

    def batch(self, i: int) -> RecordBatch:
        """Batch ``i`` as an object, for per-batch work on the rare or damaged ones."""
        start = self.positions[i]
        return next(iter(BatchScan(self.buffer, start, start + int(self.size[i]), self.path)))

    def batches(self) -> BatchScan:
        """Every batch of the chunk as objects (legacy messages raise here when malformed)."""
        return BatchScan(self.buffer, self.positions[0], self.end, self.path)


@cache
def _batch_header_dtype():
    return BATCH_HEADER_V2_FAST.numpy_dtype()


class HeaderScan:
    """Frames a whole buffer in chunks of ``BatchHeaders`` (for recovery and verify).

    Like ``BatchScan``: ``valid_bytes`` is the end of the last whole batch,
    ``stop_reason`` why framing ended, and corrupt framing raises after the
    chunk before it was yielded.
    """

    # a chunk is at most this many batches and starts none past this many bytes:
    # memory (and resident pages) stay bounded whatever the file size
    CHUNK = 8192
    CHUNK_BYTES = 16 * 1024 * 1024

    def __init__(self, buffer, path: str | None = None, helper: ChecksumHelper | None = None):
        self.buffer, self.path = buffer, path
        self.helper = helper  # when given, it checksums every other chunk while we do the next one
        self.valid_bytes = 0
        self.stop_reason: WalkEnd | None = None
        self._stop = self._stop_at = None  # why framing stopped (END_OF_FILE included), and where

    def __iter__(self):
        buf, path, helper = self.buffer, self.path, self.helper
        released = 0
        handed_over = None  # a framed chunk whose checksums the helper is computing
        for positions, next_pos in self._frames():
            if helper is not None and handed_over is None and helper.submit(*crc_ranges(positions, next_pos)):
                handed_over = positions, next_pos
                continue
            chunk = BatchHeaders(buf, path, positions, next_pos)
            if handed_over is not None:
                yield self._emit(BatchHeaders(buf, path, *handed_over, checksums=helper.result()))
                handed_over = None
            yield self._emit(chunk)
            if chunk.end - released > _RELEASE_EVERY:
                released = release_pages(buf, released, chunk.end)
        if handed_over is not None:
            yield self._emit(BatchHeaders(buf, path, *handed_over, checksums=helper.result()))
        if self._stop is WalkEnd.CORRUPT:
            raise undersized_batch(buf, self._stop_at, path)

    def _emit(self, chunk: BatchHeaders) -> BatchHeaders:
        self.valid_bytes = chunk.end
        return chunk

    def _frames(self):
        """(positions, end) of each chunk; where and why framing stopped go to ``_stop_at``, ``stop_reason``."""
        buf, end, pos = self.buffer, len(self.buffer), 0
        while True:
            positions, pos, stop = frame_batches(buf, pos, end, self.CHUNK, pos + self.CHUNK_BYTES)
            if positions:
                yield positions, pos
            if stop is not None:
                self._stop, self._stop_at, self.stop_reason = stop, pos, _stop_reason(stop)
                return


def crc_ranges(positions: list[int], end: int) -> tuple[list[int], list[int]]:
    """The byte ranges the CRC-32C of each v2 batch covers (attributes to the batch's end)."""
    return [p + CRC_V2_START for p in positions], positions[1:] + [end]


_RELEASE_EVERY = 32 * 1024 * 1024


def _legacy_message(buf, pos: int, size: int, magic: int, path) -> RecordBatch:
    """Decode one legacy message (a shallow entry) at ``pos``."""
    end = pos + LOG_OVERHEAD + size
    header = LEGACY_HEADER_V1_FAST if magic == 1 else LEGACY_HEADER_V0_FAST
    if pos + header.size > end:
        raise CorruptData(f"legacy message of size {size} is shorter than its header", path, pos)
    fields = header.unpack_from(buf, pos)
    offset, _, crc, magic, attrs = fields[:5]
    timestamp = fields[5] if magic == 1 else NO_TIMESTAMP
    p = pos + header.size
    key, p = _legacy_bytes(buf, p, end, path)
    value, p = _legacy_bytes(buf, p, end, path)
    return RecordBatch(
        pos, magic, offset, offset, size + LOG_OVERHEAD, crc, attrs, timestamp,
        key=key, value=value, _buffer=buf,
    )


def _legacy_bytes(buf, p: int, end: int, path):
    if p + _LEGACY_LENGTH_SIZE > end:
        raise TruncatedData("legacy message ends inside a length field", path, p)
    (length,) = _unpack_legacy_length(buf, p)
    p += _LEGACY_LENGTH_SIZE
    if length < 0:
        return None, p
    if p + length > end:
        raise TruncatedData(f"legacy message field of {length} bytes runs past the message end", path,
                            p - _LEGACY_LENGTH_SIZE)
    return bytes(buf[p:p + length]), p + length
