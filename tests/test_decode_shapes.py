"""The bulk record decoder (``chunk_records``) against the reference decoder (``batch_records``).

Every batch of every corpus segment (compressed, control, transactional, legacy
c03/c08 cases...) is read both ways; and the kafka-dump-log lines printed a chunk
at a time must be those printed batch by batch, on generated segments of every
shape (single-record batches, mixed counts, codecs, nulls, headers, non-UTF-8
bytes, LogAppendTime, sequences that wrap, control batches, offset gaps).
"""

from __future__ import annotations

import pytest

from segtool.errors import CorruptData
from segtool.formats.compression import compress
from segtool.kafka.log import BatchHeaders, BatchScan, Record, RecordBatch
from segtool.kafka.record_columns import chunk_records
from segtool.kafka.records import batch_records
from segtool.ops.kafka_dump_log import KafkaDumpLog, KafkaDumpOptions, _plain_parser, batch_line
from segtool.source import open_buffer
from tests.kafka_build import build_batch_v2, build_legacy_message, build_records, make_batch
from tests.test_kafka_log import SEGMENTS


def _chunks(buf, path):
    """Regular chunks of a segment, small (many chunk boundaries); a v2 batch among legacy
    messages comes as a chunk of its own."""
    for positions, end in BatchScan(buf, path=path).chunks(most=64):
        headers = BatchHeaders(buf, path, positions, end)
        if headers.regular:
            yield headers
            continue
        for i, position in enumerate(positions):
            alone = BatchHeaders(buf, path, [position], position + int(headers.size[i]))
            if alone.regular:
                yield alone


def _compare(buf, path) -> int:
    compared = 0
    for headers in _chunks(buf, path):
        records = chunk_records(headers, path)
        data = records.data
        for i in range(len(headers)):
            batch = headers.batch(i)
            if not records.decoded[i]:
                with pytest.raises(CorruptData):  # left to the reference only when it is damaged
                    batch_records(batch, path)
                continue
            got = [(int(records.offset_delta[r]), int(records.timestamp_delta[r]),
                    None if records.key_len[r] < 0 else
                    data[records.key_start[r]:records.key_start[r] + records.key_len[r]],
                    None if records.value_len[r] < 0 else
                    data[records.value_start[r]:records.value_start[r] + records.value_len[r]],
                    list(records.headers[r]) if records.headers is not None else [])
                   for r in range(int(records.first[i]), int(records.first[i + 1]))]
            assert got == [(r.offset_delta, r.timestamp_delta, r.key, r.value, list(r.headers))
                           for r in batch_records(batch, path)], (path, batch.position)
            compared += 1
    return compared


@pytest.mark.parametrize("log", SEGMENTS)
def test_bulk_decoder_matches_the_reference_on_every_corpus_batch(log):
    buf = open_buffer(log)
    try:
        compared = _compare(buf, str(log))
    except CorruptData:
        return  # framing stops at a corrupt size field (the batches before it were compared)
    assert compared == sum(b.magic >= 2 and b.size >= 61 for b in BatchScan(buf, path=str(log)))


BASE_TS = 1_795_000_000_000


def _batch(base_offset, records, attributes=0, base_sequence=-1, producer_id=-1, last_delta=None,
           max_timestamp=None):
    built = [Record(base_offset + d, BASE_TS + t, k, v, tuple(h), offset_delta=d, timestamp_delta=t)
             for d, t, k, v, h in records]
    payload = build_records(built)
    if attributes & 0x07:
        payload = compress(attributes & 0x07, payload)
    last_delta = max(d for d, *_ in records) if last_delta is None else last_delta
    return build_batch_v2(RecordBatch(
        position=0, magic=2, base_offset=base_offset, last_offset=base_offset + last_delta, size=0, crc=0,
        attributes=attributes, max_timestamp=BASE_TS + 99 if max_timestamp is None else max_timestamp,
        record_count=len(records), partition_leader_epoch=3, last_offset_delta=last_delta, base_timestamp=BASE_TS,
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence),
        payload)


def _shapes() -> dict[str, bytes]:
    singles = b"".join(make_batch(i, [(b"k%d" % i, b"v" * (i % 300))], BASE_TS + i // 3) for i in range(500))
    mixed = b"".join(make_batch(o, [(b"key", b"x" * n)] * c, BASE_TS)
                     for o, c, n in [(0, 1, 5), (1, 7, 9000), (8, 1, 0), (9, 300, 20), (309, 2, 1)])
    odd = b"".join([
        _batch(0, [(0, 0, None, b"value", []), (1, 5, b"key", None, []), (2, -3, None, None, [])]),
        _batch(3, [(0, 1, "é\u00ff✓".encode(), b"\xff\xfe bad utf-8 \xc3", [("h1", b"a"), ("h2", None)])]),
        _batch(4, [(0, 0, b"k", b"v", [("only", b"")])], attributes=0x08),  # LogAppendTime
        _batch(5, [(0, 0, b"a", b"b", []), (1, 1, b"c", b"d", [])], base_sequence=0x7FFFFFFF, producer_id=7),
        _batch(7, [(0, 0, b"p", b"q", [])], base_sequence=41, producer_id=7, attributes=0x10),  # transactional
        _batch(8, [(0, 0, b"\x00\x01", b"\x00\x00\x00\x00\x00\x00", [])], attributes=0x30),  # control: COMMIT
        _batch(20, [(0, 0, b"after", b"a gap", []), (3, 0, b"compacted", b"away", [])], last_delta=5),
        _batch(26, [(0, 0, b"deleted", None, [])], attributes=0x40),  # delete horizon
    ])
    compressed = b"".join(_batch(i * 10, [(d, d, b"k%d" % d, b"v" * 50, []) for d in range(10)], attributes=codec)
                          for i, codec in enumerate([1, 2, 3, 4, 0, 1]))
    legacy_then_v2 = build_legacy_message(0, 1, 0, b"old", b"message", BASE_TS) + make_batch(1, [(b"k", b"v")],
                                                                                           BASE_TS)
    damaged = bytearray(singles[:182 * 20])
    damaged[182 * 10 + 70] ^= 0xFF  # a CRC mismatch inside one record's bytes
    return {"singles": singles, "mixed": mixed, "odd": odd, "compressed": compressed,
            "legacy_then_v2": legacy_then_v2, "damaged": bytes(damaged), "torn": singles[:-7]}


def _reference_lines(tool: KafkaDumpLog, buf, path) -> list[str]:
    """Batch by batch, as kafka_dump_log printed before it went by chunks."""
    lines = []
    for batch in BatchScan(buf, 0, len(buf), path=path):
        lines.append(batch_line(batch, batch.position))
        lines.extend(tool._record_lines(batch, batch_records(batch, path), _plain_parser))
    return lines


@pytest.mark.parametrize("shape", sorted(_shapes()))
@pytest.mark.parametrize("deep", [False, True])
def test_dump_prints_the_same_lines_a_chunk_at_a_time(tmp_path, shape, deep):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(_shapes()[shape])
    options = KafkaDumpOptions(deep_iteration=deep, print_data_log=deep)
    out: list[str] = []
    tool = KafkaDumpLog(options, out.append)
    tool.dump_log(str(log))
    reference = KafkaDumpLog(options, lambda line: None)
    expected = ["Log starting offset: 0"] + [
        line for line in _reference_lines(reference, open_buffer(str(log)), str(log))
        if deep or not line.startswith("|")]
    trailing = [line for line in out if line.startswith("Found ")]
    assert out[:len(expected)] == expected
    assert out[len(expected):] == trailing
