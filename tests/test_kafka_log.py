"""Record batches: the fast decoders agree with the construct schemas, and
every batch of the corpus re-encodes from its parsed form to the original bytes."""

from __future__ import annotations

import io

import construct as cs
import pytest
from hypothesis import given, settings, strategies as st

from segtool.source import open_buffer
from segtool.errors import CorruptData
from segtool.formats.compression import decompress
from segtool.kafka.log import BATCH_V2_OVERHEAD, BatchScan
from segtool.kafka.records import batch_records
from segtool.kafka.schemas import BATCH_HEADER_V2, LEGACY_MESSAGE_V0, LEGACY_MESSAGE_V1, RECORD_V2
from segtool.formats.outcomes import WalkEnd
from tests.kafka_build import build_batch_v2, build_legacy_message, build_records, make_batch
from tests.conftest import case_dirs


def _segments():
    out = []
    for case in case_dirs("kafka"):
        for log in sorted((case / "data").glob("*/*.log")):
            out.append(pytest.param(log, id=f"{case.name}/{log.parent.name}/{log.name}"))
    return out


SEGMENTS = _segments()


def _framed(log):
    """The mapped segment and its batches; skips a segment whose framing is corrupt."""
    buf = open_buffer(log)
    try:
        return buf, list(BatchScan(buf, path=str(log)))
    except CorruptData:
        pytest.skip("segment is corrupt at a batch boundary")


def _records_section(batch, buf) -> bytes:
    payload = bytes(buf[batch.position + BATCH_V2_OVERHEAD:batch.end])
    return decompress(batch.codec, payload) if batch.codec else payload


@pytest.mark.parametrize("log", SEGMENTS)
def test_fast_decoder_matches_construct(log):
    buf = open_buffer(log)
    scan = BatchScan(buf, path=str(log))
    try:
        batches = list(scan)
    except CorruptData:
        pytest.skip("segment is corrupt at a batch boundary (covered by the conformance test)")
    for batch in batches:  # cleaned segments may be empty
        raw = batch.raw()
        if batch.magic >= 2:
            parsed = BATCH_HEADER_V2.parse(raw)
            assert parsed.base_offset == batch.base_offset
            assert parsed.crc == batch.crc and parsed.attributes == batch.attributes
            assert parsed.max_timestamp == batch.max_timestamp and parsed.record_count == batch.record_count
            assert parsed.producer_id == batch.producer_id and parsed.base_sequence == batch.base_sequence
            section = io.BytesIO(_records_section(batch, buf))
            fast = batch_records(batch, str(log))
            for record in fast:
                slow = RECORD_V2.parse_stream(section)
                assert slow.offset_delta + batch.base_offset == record.offset
                assert slow.key == record.key and slow.value == record.value
                assert [(h.key, h.value) for h in slow.headers] == list(record.headers)
                assert slow.timestamp_delta == record.timestamp_delta
            assert section.read() == b""
        else:
            schema = LEGACY_MESSAGE_V1 if batch.magic == 1 else LEGACY_MESSAGE_V0
            parsed = schema.parse(raw)
            assert (parsed.offset, parsed.crc, parsed.key, parsed.value) == (
                batch.base_offset, batch.crc, batch.key, batch.value)


@pytest.mark.parametrize("log", SEGMENTS)
def test_batches_reencode_to_original_bytes(log):
    buf, batches = _framed(log)
    for batch in batches:
        raw = batch.raw()
        if batch.magic >= 2:
            records = batch_records(batch, str(log))
            section = _records_section(batch, buf)
            assert build_records(records) == section
            payload = raw[BATCH_V2_OVERHEAD:] if batch.codec else build_records(records)
            rebuilt = build_batch_v2(batch, payload)
            if batch.crc_valid:
                assert rebuilt == raw
            else:  # the corpus' deliberately flipped byte: only the CRC differs
                assert rebuilt[21:] == raw[21:]
        else:
            rebuilt = build_legacy_message(batch.base_offset, batch.magic, batch.attributes, batch.key,
                                           batch.value, batch.max_timestamp)
            assert rebuilt[:12] == raw[:12] and rebuilt[16:] == raw[16:]
            if batch.crc_valid:
                assert rebuilt == raw


def test_generated_batches_round_trip_every_codec():
    records = [(f"k{i}".encode(), (b"v" * i) or None) for i in range(50)]
    for codec in (0, 1, 2, 3, 4):
        data = make_batch(1000, records, 1_700_000_000_000, codec=codec)
        (batch,) = list(BatchScan(data))
        assert batch.crc_valid and batch.codec == codec
        decoded = batch_records(batch)
        assert [(r.key, r.value) for r in decoded] == records
        assert [r.offset for r in decoded] == list(range(1000, 1050))


def test_truncated_record_reports_offset():
    data = bytearray(make_batch(0, [(b"key", b"value" * 10)] * 3, 1_700_000_000_000))
    data[BATCH_V2_OVERHEAD] = 0x7E  # first record claims 63 bytes, past the batch end
    (batch,) = list(BatchScan(bytes(data)))
    with pytest.raises(CorruptData) as info:
        batch_records(batch, "x.log")
    assert info.value.offset is not None and "x.log" in str(info.value)


def test_zigzag_schema_is_kafkas_varint():
    assert cs.ZigZag.build(-1) == b"\x01" and cs.ZigZag.build(1) == b"\x02"
    assert cs.ZigZag.build(150) == b"\xac\x02"


@pytest.mark.parametrize("log", SEGMENTS)
def test_columnar_decoder_matches_the_record_decoder(log):
    from segtool.kafka.record_columns import batch_columns

    buf = open_buffer(log)
    try:
        batches = [b for b in BatchScan(buf, path=str(log)) if b.magic >= 2 and b.record_count]
    except CorruptData:
        pytest.skip("segment is corrupt at a batch boundary")
    handled = 0
    for batch in batches:
        columns = batch_columns(batch, str(log))
        if columns is None:
            continue
        handled += 1
        records = batch_records(batch, str(log))
        assert columns.offset_delta.tolist() == [r.offset_delta for r in records]
        assert columns.timestamp_delta.tolist() == [r.timestamp_delta for r in records]
        assert columns.keys() == [r.key for r in records]
        assert columns.values() == [r.value for r in records]
        headers = columns.headers or [[] for _ in records]
        assert headers == [list(r.headers) for r in records]
    assert handled == len(batches), "every well-formed corpus batch takes the columnar path"


def test_columnar_decoder_declines_malformed_sections():
    from segtool.kafka.record_columns import record_columns

    data = make_batch(0, [(b"k", b"v" * 10)] * 4, 1_700_000_000_000)
    (batch,) = list(BatchScan(data))
    section = bytes(data[BATCH_V2_OVERHEAD:])
    assert record_columns(section, 4, batch) is not None
    assert record_columns(section[:-1], 4, batch) is None  # cut short
    assert record_columns(section, 5, batch) is None  # count lies
    assert record_columns(section + b"\0", 4, batch) is None  # bytes left over


def _spread(values: list, most: int = 12) -> list:
    """At most ``most`` of ``values``, evenly spread, keeping both ends."""
    if len(values) <= most:
        return values
    step = (len(values) - 1) / (most - 1)
    return [values[round(i * step)] for i in range(most)]


def _record_fields(record):
    return None if record is None else (record.offset, record.timestamp, record.key, record.value, record.headers)


@pytest.mark.parametrize("log", SEGMENTS)
def test_lookup_shortcuts_match_full_decoding(log):
    """first_record_where (length-prefix hops) and seek_offset (headers only) give
    what decoding every record and every batch gives, on every corpus batch."""
    from segtool.kafka.log import seek_offset_position, seek_timestamp_position
    from segtool.kafka.records import first_record_where

    buf, batches = _framed(log)
    for batch in batches:
        records = batch_records(batch, str(log))
        offsets = _spread(sorted({r.offset for r in records} | {batch.base_offset - 1, batch.last_offset + 1}))
        timestamps = _spread(sorted({r.timestamp for r in records} | {batch.max_timestamp + 1}))
        for min_offset in offsets:
            for min_timestamp in [None, *timestamps]:
                expected = next((r for r in records if r.offset >= min_offset and (
                    min_timestamp is None or r.timestamp >= min_timestamp)), None)
                got = first_record_where(batch, min_offset, min_timestamp, str(log))
                assert _record_fields(got) == _record_fields(expected), (batch.position, min_offset, min_timestamp)
    for target in sorted({b.last_offset for b in batches} | {b.base_offset for b in batches} | {-1}):
        expected = next((b for b in batches if b.last_offset >= target), None)
        seek = BatchScan(buf, path=str(log)).seek_offset(target)
        assert next(iter(seek), None) == expected
        if expected is not None:
            assert seek.start == expected.position
        position, found = seek_offset_position(buf, 0, len(buf), target)
        assert found == (expected is not None) and (not found or position == expected.position)
    for target in sorted({b.max_timestamp for b in batches} | {b.max_timestamp + 1 for b in batches}):
        # the time seek answers only over v2 batches and hands anything else to iteration
        expected = next((b for b in batches if b.magic < 2 or b.max_timestamp >= target), None)
        position, found = seek_timestamp_position(buf, 0, len(buf), target)
        assert found == (expected is not None and expected.magic >= 2)
        assert next(iter(BatchScan(buf, position, path=str(log))), None) == expected


def test_lookup_shortcut_walks_records_of_every_length_size():
    """Records whose length varint takes 1, 2, 3 and 4 bytes: the two-byte hop table covers
    only the first two, and a walk that meets a longer one is done again in full."""
    from segtool.kafka.records import first_record_where

    sizes = [3, 50, 200, 9000, 70000, 5, 3_000_000, 100, 8190, 8200, 1]
    data = make_batch(500, [(b"k%d" % i, b"v" * size) for i, size in enumerate(sizes)], 1_795_000_000_000)
    (batch,) = list(BatchScan(data))
    records = batch_records(batch)
    for target in range(batch.base_offset - 1, batch.last_offset + 2):
        expected = next((r for r in records if r.offset >= target), None)
        assert _record_fields(first_record_where(batch, target)) == _record_fields(expected), target


def test_crc32c_comes_from_the_extension_and_agrees_with_the_package():
    import crc32c as package

    from segtool.formats.checksums import crc32c

    assert crc32c.__module__ == "crc32c._crc32c"  # loaded without the package's slow __init__
    for log in SEGMENTS[:5]:
        data = bytes(open_buffer(log.values[0]))
        assert crc32c(data) == package.crc32c(data)
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def _frame_reference(buf, pos, end, most, until):
    """FileLogInputStream.nextBatch's rules one at a time, in Kafka's order: the oracle for frame_batches."""
    positions = []
    until = end if until is None else until
    for _ in range(most):
        if pos + 17 >= end:  # no room for offset, size, epoch and magic
            return positions, pos, (WalkEnd.TRUNCATED if pos < end else WalkEnd.END_OF_FILE)
        if pos >= until:
            return positions, pos, None
        size = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
        if size < 14:
            return positions, pos, WalkEnd.CORRUPT
        if pos + 12 + size > end:
            return positions, pos, WalkEnd.TRUNCATED
        positions.append(pos)
        pos += 12 + size
    return positions, pos, None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-3, 60), min_size=0, max_size=40), st.integers(0, 12), st.integers(1, 50),
       st.one_of(st.none(), st.integers(0, 2000)), st.integers(0, 3000))
def test_frame_batches_follows_kafkas_rules_in_order(sizes, tail, most, until, cut):
    """Random size fields (some below the minimum), a ragged tail, any ``most``, ``until`` and end."""
    from segtool.kafka.log import frame_batches

    buf = bytearray()
    for size in sizes:
        buf += (7).to_bytes(8, "big") + size.to_bytes(4, "big", signed=True) + bytes(max(size, 0))
    buf += bytes(tail)
    end = min(cut, len(buf))
    assert frame_batches(bytes(buf), 0, end, most, until) == _frame_reference(bytes(buf), 0, end, most, until)
