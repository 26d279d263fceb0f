"""Kafka `.log` segments: record batches (magic 2) and legacy message sets (magic 0/1).

The layouts are declared once, as construct schemas in ``kafka_schemas``.  The
fixed headers are decoded in the hot path by a ``struct.Struct`` compiled from
those schemas (``fastdecode``); the varint-encoded v2 records are decoded by
``decode_records`` (and, column-wise, by ``record_columns``), both checked
against ``RECORD_V2`` on every batch of the corpus (tests/test_kafka_log.py).

Batch framing follows Kafka's ``FileLogInputStream.nextBatch``: a batch needs
more than 17 bytes (offset, size, epoch, magic) left in the file; a size below
14 is corrupt; a batch that runs past the end of the file ends iteration (the
rest are "invalid bytes at the end").
"""

from __future__ import annotations

import mmap
from array import array
from dataclasses import dataclass, field
from functools import cache

from segtool.formats.checksums import ChecksumHelper, checksum_ranges, crc32c
from zlib import crc32

from segtool.errors import CorruptData, SegtoolError, TruncatedData
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


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


def _varint_error(path, pos):
    return CorruptData("varint runs past the end of the record or is longer than 10 bytes", path, pos)


def decode_records(data, start: int, end: int, count: int, batch: RecordBatch, path=None,
                   base_position: int | None = None) -> list[Record]:
    """Decode ``count`` v2 records from ``data[start:end]``.

    ``base_position`` is where ``data`` starts in the file (for error offsets);
    ``None`` means ``data`` is decompressed and errors name the batch position.
    """
    try:
        return _decode_records(data, start, end, count, batch, path, base_position)
    except IndexError:
        # a length field pointed past the buffer: the record is cut short
        where = batch.position if base_position is None else base_position + start
        raise TruncatedData("record fields run past the end of the data", path, where) from None


def _decode_records(data, start, end, count, batch, path, base_position):
    records = []
    append = records.append
    p = start
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp
    log_append = batch.is_log_append_time
    max_ts = batch.max_timestamp
    base_seq = batch.base_sequence

    def err_pos(q):
        return batch.position if base_position is None else base_position + q

    def varint(q):
        # the one- and two-byte cases are inline below; a varint that never ends is corrupt data
        try:
            return _read_varint(data, q, end)
        except IndexError:
            raise _varint_error(path, err_pos(q)) from None

    for _ in range(count):
        rec_start = p
        if p >= end:
            raise TruncatedData(f"batch declares {count} records but holds {len(records)}", path, err_pos(p))
        b = data[p]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            length, p = varint(p)
        body_end = p + length
        if length < 0 or body_end > end:
            raise CorruptData(f"record length {length} runs past the end of the batch", path, err_pos(rec_start))
        attributes = data[p]
        p += 1
        b = data[p]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            ts_delta, p = varint(p)
        b = data[p]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            off_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            off_delta, p = varint(p)
        b = data[p]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            klen = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            klen, p = varint(p)
        if klen >= 0:
            if p + klen > body_end:
                raise CorruptData("record key runs past the record end", path, err_pos(p))
            key = bytes(data[p:p + klen])
            p += klen
        else:
            key = None
        b = data[p]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            p += 1
        elif data[p + 1] < 0x80:
            b = (b & 0x7F) | (data[p + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            vlen, p = varint(p)
        if vlen >= 0:
            if p + vlen > body_end:
                raise CorruptData("record value runs past the record end", path, err_pos(p))
            value = bytes(data[p:p + vlen])
            p += vlen
        else:
            value = None
        b = data[p]
        if b < 0x80:
            nheaders = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            nheaders, p = varint(p)
        if nheaders < 0:
            raise CorruptData(f"record has {nheaders} headers", path, err_pos(p))
        headers = []
        for _h in range(nheaders):
            hklen, p = varint(p)
            if hklen < 0 or p + hklen > body_end:
                raise CorruptData("record header key runs past the record end", path, err_pos(p))
            hkey = bytes(data[p:p + hklen]).decode("utf-8", "replace")
            p += hklen
            hvlen, p = varint(p)
            if hvlen >= 0:
                if p + hvlen > body_end:
                    raise CorruptData("record header value runs past the record end", path, err_pos(p))
                hval = bytes(data[p:p + hvlen])
                p += hvlen
            else:
                hval = None
            headers.append((hkey, hval))
        if p != body_end:
            raise CorruptData(
                f"record body is {length} bytes but its fields use {p - (body_end - length)}",
                path, err_pos(rec_start),
            )
        if base_seq == -1:
            seq = -1
        else:
            seq = increment_sequence(base_seq, off_delta)
        append(Record(
            base_offset + off_delta,
            max_ts if log_append else base_ts + ts_delta,
            key, value, headers, seq, attributes, ts_delta, off_delta, position=rec_start,
        ))
    if p != end:
        raise CorruptData(f"{end - p} bytes left over after the last record of the batch", path, err_pos(p))
    return records


def batch_records(batch: RecordBatch, path=None, cap: int = 256 * 1024 * 1024) -> list[Record]:
    """Deep iteration of one batch: its records, decompressing when needed."""
    buf = batch._buffer
    if batch.magic >= 2:
        count = batch.record_count
        if not count:
            return []
        if count < 0:
            raise CorruptData(f"batch declares {count} records", path, batch.position)
        start = batch.position + BATCH_V2_OVERHEAD
        if batch.codec == 0:
            # one copy per batch: indexing bytes is several times faster than indexing an mmap
            section = buf[start:batch.end]
            return decode_records(section, 0, len(section), count, batch, path, base_position=start)
        data = _decompress(batch, buf[start:batch.end], path, cap)
        return decode_records(data, 0, len(data), count, batch, path)
    return legacy_records(batch, path, cap)


def _decompress(batch: RecordBatch, payload, path, cap: int) -> bytes:
    from segtool.formats.compression import decompress

    try:
        return decompress(batch.codec, payload, cap=cap, legacy_lz4=batch.magic == 0)
    except CorruptData as exc:
        raise exc.at(path, batch.position)


def legacy_records(wrapper: RecordBatch, path=None, cap: int = 256 * 1024 * 1024) -> list[Record]:
    """Inner messages of a legacy entry (itself when it is not compressed)."""
    if wrapper.codec == 0:
        return [Record(
            wrapper.base_offset, wrapper.max_timestamp, wrapper.key, wrapper.value, (),
            attributes=wrapper.attributes, crc=wrapper.crc, crc_valid=wrapper.crc_valid,
            magic=wrapper.magic, position=wrapper.position,
        )]
    if wrapper.value is None:
        raise CorruptData("compressed wrapper message has a null value", path, wrapper.position)
    data = _decompress(wrapper, wrapper.value, path, cap)
    inner = []
    scan = BatchScan(data, path=path)
    try:
        for msg in scan:
            if msg.magic >= 2:
                raise CorruptData("compressed legacy message contains a v2 batch", path, wrapper.position)
            inner.append(msg)
    except CorruptData as exc:
        # positions inside decompressed data mean nothing in the file
        exc.offset = wrapper.position
        raise
    if scan.valid_bytes != len(data):
        raise CorruptData("compressed wrapper message ends inside an inner message", path, wrapper.position)
    records = []
    if wrapper.magic >= 1 and inner:
        # v1: inner offsets are relative; the wrapper carries the absolute last offset
        shift = wrapper.base_offset - inner[-1].base_offset
    else:
        shift = 0
    for msg in inner:
        if wrapper.is_log_append_time:
            timestamp = wrapper.max_timestamp
        else:
            timestamp = msg.max_timestamp
        records.append(Record(
            msg.base_offset + shift, timestamp, msg.key, msg.value, (),
            attributes=msg.attributes, crc=msg.crc, crc_valid=msg.crc_valid, magic=msg.magic,
            position=wrapper.position,
        ))
    return records


def control_record_type(record: Record) -> tuple[int, str]:
    """The control type id of a control record's key and its Kafka name."""
    key = record.key
    if key is None or len(key) < CONTROL_KEY_FAST.size:
        return -1, "UNKNOWN"
    _version, type_id = CONTROL_KEY_FAST.unpack_from(key)
    return type_id, CONTROL_TYPES.get(type_id, "UNKNOWN")


def end_txn_marker(record: Record) -> tuple[int, int]:
    """(version, coordinator epoch) of an ABORT/COMMIT marker's value."""
    value = record.value
    if value is None or len(value) < END_TXN_MARKER_FAST.size:
        raise CorruptData("end transaction marker value is too short", None, None)
    return END_TXN_MARKER_FAST.unpack_from(value)


def kraft_control_value(record: Record, name: str) -> tuple[str, dict] | None:
    """(message name, fields without the tagged fields) of a KRaft control record's value,
    or None for a control type without a declared value (``KRAFT_CONTROL_VALUES``)."""
    import construct as cs

    from segtool.kafka.schemas import KRAFT_CONTROL_VALUES

    declared = KRAFT_CONTROL_VALUES.get(name)
    if declared is None:
        return None
    label, schema = declared
    value = record.value
    if value is None:
        raise CorruptData(f"{name} control record at offset {record.offset} has a null value")
    try:
        parsed = schema.parse(bytes(value))
    except cs.ConstructError:
        raise CorruptData(f"{name} control record at offset {record.offset}: value of {len(value)} bytes"
                          " is truncated") from None
    return label, {sub.name: parsed[sub.name] for sub in schema.subcons if sub.name != "tagged_fields"}


def _read_varint(data, p: int, end: int) -> tuple[int, int]:
    """A zigzag varint at ``p``: (value, position after it); IndexError past ``end`` or 10 bytes."""
    result = shift = 0
    while True:
        if p >= end or shift > 63:
            raise IndexError(p)
        b = data[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), p
        shift += 7


@cache
def _record_hops() -> array:
    """Bytes from a v2 record's start to the next record's, indexed by its first two bytes.

    Covers the length prefixes of one and two bytes with a non-negative length
    (records up to 8,191 bytes); ``_NO_HOP`` elsewhere, where the varint is read
    in full.  ``_NO_HOP`` jumps past the end of any batch, so a walk that adds
    hops without looking at them still notices it met one.
    """
    hops = array("I")
    for first in range(0x80):  # a one-byte length: the second byte is already the record's
        hops.extend([_NO_HOP if first & 1 else 1 + (first >> 1)] * 0x100)
    for first in range(0x80, 0x100):
        low = first & 0x7F
        if low & 1:  # odd zigzag value: a negative length
            hops.extend([_NO_HOP] * 0x100)
        else:  # length = low / 2 + 64 * second byte, for a second byte below 0x80
            hops.extend(range(2 + (low >> 1), 2 + (low >> 1) + 0x80 * 64, 64))
            hops.extend([_NO_HOP] * 0x80)
    return hops


_NO_HOP = 0xFFFFFFFF


def _record_starts(data, p: int, end: int, n: int) -> list[int] | None:
    """Where each of ``n`` records from ``p`` starts, reading every length in full; None unless
    they end exactly at ``end``."""
    found = []
    try:
        for _ in range(n):
            found.append(p)
            length, p = _read_varint(data, p, end)
            if length < 0:
                return None
            p += length
    except IndexError:
        return None
    return found if p == end else None


def _skip_records(data, p: int, n: int, end: int) -> int:
    """Past ``n`` records from ``p``, reading each length varint in full."""
    for _ in range(n):
        length, body = _read_varint(data, p, end)
        p = body + length
    return p


def first_record_where(batch: RecordBatch, min_offset: int, min_timestamp: int | None = None,
                       path=None, cap: int = 256 * 1024 * 1024) -> Record | None:
    """The first record with offset >= min_offset (and timestamp >= min_timestamp).

    Lookups need one record of a batch: records before it are skipped by their
    length prefix instead of being decoded, then the match is decoded in full.
    """
    attributes, count = batch.attributes, batch.record_count
    if batch.magic < 2 or attributes & 0x07 or not count:  # legacy, compressed or empty: decode it all
        for record in batch_records(batch, path, cap):
            if record.offset >= min_offset and (min_timestamp is None or record.timestamp >= min_timestamp):
                return record
        return None
    log_append = attributes & 0x08  # the timestamp type bit (a v2 batch here)
    if log_append and min_timestamp is not None and batch.max_timestamp < min_timestamp:
        return None  # every record carries the batch's max timestamp
    by_time = min_timestamp is not None and not log_append
    start = batch.position + BATCH_V2_OVERHEAD
    data = batch._buffer[start:batch.end]
    end = len(data)
    p = 0
    rel_offset = min_offset - batch.base_offset
    dense = count == batch.last_offset_delta + 1  # not compacted: record k holds offset base + k
    if dense and rel_offset >= count:
        return None
    skip = rel_offset if dense and rel_offset > 0 else 0
    by_offset = rel_offset > 0 and not dense
    base_ts = batch.base_timestamp
    hops = _record_hops()
    try:
        # The lookup hot path: one table lookup per record skipped, keyed by the
        # first two bytes (read by indexing: cheaper than a struct call) and added
        # unchecked; a length the table does not cover sends p past the end, and
        # the walk is done again reading every length in full.
        try:
            for _ in range(skip):
                p += hops[data[p] << 8 | data[p + 1]]
        except IndexError:
            p = end + 1
        if p > end:
            p = _skip_records(data, 0, skip, end)
        for _ in range(count - skip):
            hop = hops[data[p] << 8 | data[p + 1]]
            if hop != _NO_HOP:
                body, next_record = p + 1 + (data[p] >> 7), p + hop
            else:
                length, body = _read_varint(data, p, end)
                next_record = body + length
            q = body + 1  # past the attributes byte, at the timestamp delta
            if by_time:
                b = data[q]
                if b < 0x80:
                    ts_delta, q = (b >> 1) ^ -(b & 1), q + 1
                elif data[q + 1] < 0x80:
                    b = (b & 0x7F) | (data[q + 1] << 7)
                    ts_delta, q = (b >> 1) ^ -(b & 1), q + 2
                else:
                    ts_delta, q = _read_varint(data, q, end)
                if base_ts + ts_delta < min_timestamp:
                    p = next_record
                    continue
            if by_offset:
                if not by_time:
                    while data[q] >= 0x80:
                        q += 1
                    q += 1
                b = data[q]
                if b < 0x80:
                    off_delta = (b >> 1) ^ -(b & 1)
                else:
                    off_delta, _ = _read_varint(data, q, end)
                if off_delta < rel_offset:
                    p = next_record
                    continue
            return _decode_records(data, p, next_record, 1, batch, path, start)[0]
    except IndexError:
        raise TruncatedData("record fields run past the end of the batch", path, batch.position) from None
    return None


# --------------------------------------------------------------------------
# Columnar record decoding (numpy), for bulk work over whole batches
# --------------------------------------------------------------------------


class RecordColumns:
    """The records of one batch as columns: numpy arrays of deltas and byte spans.

    ``data`` holds the records section (decompressed when needed); keys and
    values are ``data[key_start[i]:key_start[i] + key_len[i]]`` (length -1 = null).
    Headers are decoded per record, and only for records that have any.
    """

    __slots__ = ("data", "count", "timestamp_delta", "offset_delta", "key_start", "key_len",
                 "value_start", "value_len", "headers")

    def __init__(self, data, count, timestamp_delta, offset_delta, key_start, key_len, value_start, value_len,
                 headers):
        self.data = data
        self.count = count
        self.timestamp_delta = timestamp_delta
        self.offset_delta = offset_delta
        self.key_start = key_start
        self.key_len = key_len
        self.value_start = value_start
        self.value_len = value_len
        self.headers = headers  # None when no record has headers, else a list per record

    def keys(self) -> list:
        data = self.data
        return [None if n < 0 else data[s:s + n] for s, n in zip(self.key_start.tolist(), self.key_len.tolist())]

    def values(self) -> list:
        data = self.data
        return [None if n < 0 else data[s:s + n] for s, n in zip(self.value_start.tolist(), self.value_len.tolist())]


def _column_varint(arr, pos):
    """Zigzag varints at every position of ``pos`` at once: (values, positions after them).

    Up to 9 bytes, whose values fit an int64; a longer one raises IndexError (the
    scalar decoder reads it).
    """
    import numpy as np

    b = arr[pos].astype(np.int64)
    result = b & 0x7F
    cur = pos + 1
    active = np.flatnonzero(b >= 0x80)  # usually none: one-byte varints
    shift = 7
    while len(active):
        if shift > 56:
            raise IndexError("varint longer than 9 bytes")
        b = arr[cur[active]].astype(np.int64)
        result[active] |= (b & 0x7F) << shift
        cur[active] += 1
        active = active[b >= 0x80]
        shift += 7
    return (result >> 1) ^ -(result & 1), cur


def _section_columns(data: bytes, starts: list[int], ends: list[int], counts: list[int]):
    """Decode the records sections ``data[starts[i]:ends[i]]``, ``counts[i]`` records each, all at once.

    Returns (first, usable, columns): section i's records are ``first[i]:first[i + 1]``
    of the columns (timestamp delta, offset delta, key start, key length, value start,
    value length: numpy arrays; headers: None when no record has any, else a list per
    record).  ``usable[i]`` is False when anything in section i is unusual (its
    records in the columns mean nothing then): ``decode_records`` reads it and names
    the byte where it goes wrong.  Each field is read for every record in one numpy
    pass, so many small sections cost what one large one does.
    """
    import numpy as np

    count = np.array(counts, dtype=np.int64)
    start = np.array(starts, dtype=np.int64)
    end = np.array(ends, dtype=np.int64)
    usable = count >= 0
    arr = np.frombuffer(data, dtype=np.uint8)
    # where each record starts: a single record at its section's start; in longer sections
    # found by a walk from length prefix to length prefix (a table lookup per record)
    single = (count == 1) & (start < end)
    usable &= (count != 1) | single
    hops = _record_hops()
    walked: list[int] = []
    append = walked.append
    for i in np.flatnonzero(count > 1).tolist():
        mark, p = len(walked), starts[i]
        try:
            for _ in range(counts[i]):
                append(p)
                p += hops[data[p] << 8 | data[p + 1]]
        except IndexError:
            p = -1
        if p != ends[i]:  # a length the table does not cover, or a damaged section
            del walked[mark:]
            found = _record_starts(data, starts[i], ends[i], counts[i])
            if found is None:
                usable[i] = False
            else:
                walked += found
    per_section = np.where(usable, count, 0)
    first = np.concatenate(([0], np.cumsum(per_section)))
    section_of = np.repeat(np.arange(len(count)), per_section)
    from_single = single[section_of]
    record_start = np.empty(len(section_of), dtype=np.int64)
    record_start[from_single] = start[single & usable]
    record_start[~from_single] = walked
    # each record ends where the next of its section starts, the last where its section ends
    record_end = np.append(record_start[1:], 0)
    nonempty = np.flatnonzero(per_section)
    record_end[first[nonempty + 1] - 1] = end[nonempty]
    try:
        length, body_start = _column_varint(arr, record_start)
        body_end = body_start + length
        pos = body_start + 1  # past the attributes byte
        ts_delta, pos = _column_varint(arr, pos)
        off_delta, pos = _column_varint(arr, pos)
        key_len, pos = _column_varint(arr, pos)
        key_start = pos
        pos = pos + np.maximum(key_len, 0)
        value_len, pos = _column_varint(arr, pos)
        value_start = pos
        pos = pos + np.maximum(value_len, 0)
        nheaders, pos = _column_varint(arr, pos)
    except IndexError:  # fields ran off the end of ``data``: some record is malformed
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(len(first), dtype=np.int64), np.zeros_like(usable), (empty,) * 6 + (None,)
    fine = (length >= 0) & (body_end == record_end) & (key_len >= -1) & (value_len >= -1) & (nheaders >= 0)
    headers = None
    with_headers = np.flatnonzero(fine & (nheaders > 0))
    if len(with_headers):
        headers = [[] for _ in range(len(section_of))]
        for r, n, q, limit in zip(with_headers.tolist(), nheaders[with_headers].tolist(),
                                  pos[with_headers].tolist(), body_end[with_headers].tolist()):
            found = headers[r]
            try:
                for _ in range(n):
                    hklen, q = _read_varint(data, q, limit)
                    if hklen < 0 or q + hklen > limit:
                        raise IndexError(q)
                    hkey = data[q:q + hklen].decode("utf-8", "replace")
                    q += hklen
                    hvlen, q = _read_varint(data, q, limit)
                    if hvlen >= 0:
                        if q + hvlen > limit:
                            raise IndexError(q)
                        hval = data[q:q + hvlen]
                        q += hvlen
                    else:
                        hval = None
                    found.append((hkey, hval))
            except IndexError:
                fine[r] = False
                continue
            pos[r] = q
    fine &= pos == body_end
    usable[section_of[~fine]] = False
    return first, usable, (ts_delta, off_delta, key_start, key_len, value_start, value_len, headers)


def record_columns(data: bytes, count: int, batch: RecordBatch) -> RecordColumns | None:
    """Decode a whole records section into columns; None when anything is unusual.

    A None answer sends the caller to ``decode_records``, which names the byte
    where the data goes wrong.  Both decoders are checked against ``RECORD_V2``
    on the corpus (tests/test_kafka_log.py).
    """
    _, usable, columns = _section_columns(data, [0], [len(data)], [count])
    if not usable[0]:
        return None
    return RecordColumns(data, count, *columns)


class ChunkRecords:
    """The records of a regular chunk's batches (``BatchHeaders``), decoded together as columns.

    Batch i's records are ``first[i]:first[i + 1]`` of the columns when
    ``decoded[i]``; a batch not decoded here (an unusual or damaged records
    section, a codec that fails, past the decompression budget) is left to
    ``batch_records``, which names what is wrong.  ``data`` holds the batches'
    records sections one after another, decompressed where needed; keys and values
    are ``data[key_start[r]:key_start[r] + key_len[r]]`` (length -1: null).
    """

    __slots__ = ("data", "first", "decoded", "timestamp_delta", "offset_delta", "key_start", "key_len",
                 "value_start", "value_len", "headers")

    def __init__(self, data, first, decoded, columns):
        self.data, self.first, self.decoded = data, first, decoded
        (self.timestamp_delta, self.offset_delta, self.key_start, self.key_len, self.value_start,
         self.value_len, self.headers) = columns


# decompressed bytes one chunk holds at most; compressed batches past it are left to ``batch_records``
_DECOMPRESSED_PER_CHUNK = 64 * 1024 * 1024


def chunk_records(headers: BatchHeaders, path=None, cap: int = 256 * 1024 * 1024) -> ChunkRecords:
    """The records of every batch of a regular chunk, decoded together (``ChunkRecords``).

    Consecutive small batches cost what one large batch does: the fields of all
    their records are read column by column over the chunk.
    """
    import numpy as np

    from segtool.formats.compression import decompress

    buf, first, end = headers.buffer, headers.positions[0], headers.end
    counts = headers.column("record_count")
    codecs = headers.column("attributes") & 0x07
    # the chunk's bytes in one copy: uncompressed sections are read where they are in it,
    # decompressed ones are appended after it
    starts = headers.position - first + BATCH_V2_OVERHEAD
    stops = starts + headers.size - BATCH_V2_OVERHEAD
    pieces = [buf[first:end]]
    size, decompressed = end - first, 0
    compressed = np.flatnonzero((codecs != 0) & (counts > 0))
    for i, codec in zip(compressed.tolist(), codecs[compressed].tolist()):
        section = None
        if decompressed < _DECOMPRESSED_PER_CHUNK:
            try:
                section = decompress(codec, buf[starts[i] + first:stops[i] + first], cap=cap)
            except SegtoolError:
                pass  # batch_records raises it again, in its place
        if section is None:
            counts[i] = -1  # not decoded here
            section = b""
        pieces.append(section)
        starts[i], stops[i] = size, size + len(section)
        size += len(section)
        decompressed += len(section)
    data = b"".join(pieces)
    return ChunkRecords(data, *_section_columns(data, starts.tolist(), stops.tolist(), counts.tolist()))


def batch_columns(batch: RecordBatch, path=None, cap: int = 256 * 1024 * 1024) -> RecordColumns | None:
    """Columns for a v2 batch's records (None for legacy or unusual batches)."""
    if batch.magic < 2 or not batch.record_count or batch.record_count < 0:
        return None
    start = batch.position + BATCH_V2_OVERHEAD
    section = batch._buffer[start:batch.end]
    if batch.codec:
        section = _decompress(batch, section, path, cap)
    return record_columns(bytes(section), batch.record_count, batch)
