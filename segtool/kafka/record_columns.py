"""Kafka records decoded as numpy columns, a batch or a whole chunk of batches at a time, for bulk
work (dump's runs, recovery, scan): the same fields ``records.decode_records`` gives, checked
against it on the corpus."""

from __future__ import annotations

from segtool.errors import SegtoolError
from segtool.kafka.log import DEFAULT_CAP, BATCH_V2_OVERHEAD, BatchHeaders, RecordBatch
from segtool.kafka.records import decompressed_payload, read_varint, record_hops, record_starts


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
    hops = record_hops()
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
            found = record_starts(data, starts[i], ends[i], counts[i])
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
                    hklen, q = read_varint(data, q, limit)
                    if hklen < 0 or q + hklen > limit:
                        raise IndexError(q)
                    hkey = data[q:q + hklen].decode("utf-8", "replace")
                    q += hklen
                    hvlen, q = read_varint(data, q, limit)
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


def chunk_records(headers: BatchHeaders, path=None, cap: int = DEFAULT_CAP) -> ChunkRecords:
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


def batch_columns(batch: RecordBatch, path=None, cap: int = DEFAULT_CAP) -> RecordColumns | None:
    """Columns for a v2 batch's records (None for legacy or unusual batches)."""
    if batch.magic < 2 or not batch.record_count or batch.record_count < 0:
        return None
    start = batch.position + BATCH_V2_OVERHEAD
    section = batch._buffer[start:batch.end]
    if batch.codec:
        section = decompressed_payload(batch, section, path, cap)
    return record_columns(bytes(section), batch.record_count, batch)
