"""The records of a Kafka batch: v2 varint records decoded one by one (``decode_records``, checked
against ``RECORD_V2``), legacy inner messages, control records and the search for the first record
at an offset or time."""

from __future__ import annotations

from array import array
from functools import cache

from segtool.errors import CorruptData, TruncatedData
from segtool.kafka.log import (DEFAULT_CAP, BATCH_V2_OVERHEAD, CONTROL_KEY_FAST, CONTROL_TYPES, END_TXN_MARKER_FAST,
                               BatchScan, Record, RecordBatch, increment_sequence)


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
            return read_varint(data, q, end)
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


def batch_records(batch: RecordBatch, path=None, cap: int = DEFAULT_CAP) -> list[Record]:
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
        data = decompressed_payload(batch, buf[start:batch.end], path, cap)
        return decode_records(data, 0, len(data), count, batch, path)
    return legacy_records(batch, path, cap)


def base_offset_of(batch: RecordBatch, records: list[Record] | None = None, path=None,
                   cap: int = DEFAULT_CAP) -> int | None:
    """Kafka's ``RecordBatch.baseOffset()``: a v2 batch's header field (``DefaultRecordBatch``), a legacy
    message's own offset, and for a compressed legacy wrapper its first inner message's offset
    (``AbstractLegacyRecordBatch.baseOffset``: ``iterator().next().offset()``; the wrapper's own offset
    field is its ``lastOffset``).  ``records``: the batch's, when the caller decoded them; else a
    compressed wrapper is decompressed here (one inner set per call).  None for a wrapper whose inner
    set does not decode: its first offset is then unknown."""
    if batch.magic >= 2 or batch.codec == 0:
        return batch.base_offset
    if records is None:
        try:
            records = legacy_records(batch, path, cap)
        except CorruptData:
            return None
    return records[0].offset if records else None


def decompressed_payload(batch: RecordBatch, payload, path, cap: int) -> bytes:
    from segtool.formats.compression import decompress

    try:
        return decompress(batch.codec, payload, cap=cap, legacy_lz4=batch.magic == 0)
    except CorruptData as exc:
        raise exc.at(path, batch.position)


def legacy_records(wrapper: RecordBatch, path=None, cap: int = DEFAULT_CAP) -> list[Record]:
    """Inner messages of a legacy entry (itself when it is not compressed)."""
    if wrapper.codec == 0:
        return [Record(
            wrapper.wrapper_offset, wrapper.max_timestamp, wrapper.key, wrapper.value, (),
            attributes=wrapper.attributes, crc=wrapper.crc, crc_valid=wrapper.crc_valid,
            magic=wrapper.magic, position=wrapper.position,
        )]
    if wrapper.value is None:
        raise CorruptData("compressed wrapper message has a null value", path, wrapper.position)
    data = decompressed_payload(wrapper, wrapper.value, path, cap)
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
    if wrapper.magic >= 1 and inner and wrapper.wrapper_offset != 0:
        # v1: inner offsets are relative; the wrapper carries the absolute last offset (Kafka's
        # DeepRecordsIterator takes a wrapper offset of 0, as some librdkafka versions write, as no shift)
        shift = wrapper.wrapper_offset - inner[-1].base_offset
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


def read_varint(data, p: int, end: int) -> tuple[int, int]:
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
def record_hops() -> array:
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


def record_starts(data, p: int, end: int, n: int) -> list[int] | None:
    """Where each of ``n`` records from ``p`` starts, reading every length in full; None unless
    they end exactly at ``end``."""
    found = []
    try:
        for _ in range(n):
            found.append(p)
            length, p = read_varint(data, p, end)
            if length < 0:
                return None
            p += length
    except IndexError:
        return None
    return found if p == end else None


def _skip_records(data, p: int, n: int, end: int) -> int:
    """Past ``n`` records from ``p``, reading each length varint in full."""
    for _ in range(n):
        length, body = read_varint(data, p, end)
        p = body + length
    return p


def first_record_where(batch: RecordBatch, min_offset: int, min_timestamp: int | None = None,
                       path=None, cap: int = DEFAULT_CAP) -> Record | None:
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
    hops = record_hops()
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
                length, body = read_varint(data, p, end)
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
                    ts_delta, q = read_varint(data, q, end)
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
                    off_delta, _ = read_varint(data, q, end)
                if off_delta < rel_offset:
                    p = next_record
                    continue
            return _decode_records(data, p, next_record, 1, batch, path, start)[0]
    except IndexError:
        raise TruncatedData("record fields run past the end of the batch", path, batch.position) from None
    return None
