"""Recovery and verify read regular chunks as columns (numpy) and everything else
batch by batch.  Both ways must give the same answers: every corpus segment (clean,
compacted, transactional, legacy, corrupted) and generated segments are run
through both, and with tiny chunks so that every rule meets a chunk boundary."""

from __future__ import annotations

import dataclasses

import pytest

from segtool.engine.recovery import recover_segment
from segtool.engine.source import open_buffer
from segtool.formats import kafka_log
from segtool.formats.detect import offset_from_file_name
from segtool.formats.kafka_build import make_batch
from segtool.ops.verify import verify_log
from tests.conftest import case_dirs


def _segments():
    return [pytest.param(log, id=f"{case.name}/{log.parent.name}/{log.name}")
            for case in case_dirs("kafka") for log in sorted((case / "data").glob("*/*.log"))]


def _batch_by_batch(monkeypatch):
    """Make every chunk irregular, so recovery and verify take the per-batch path."""
    original = kafka_log.BatchHeaders.__init__

    def irregular(self, *args):
        original(self, *args)
        self.regular = False

    monkeypatch.setattr(kafka_log.BatchHeaders, "__init__", irregular)


def _answers(log: str, index_interval_bytes: int = 4096) -> tuple:
    recovery = recover_segment(open_buffer(log), log, offset_from_file_name(log),
                               index_interval_bytes=index_interval_bytes, count_records=True)
    fields = dataclasses.asdict(recovery)
    fields.pop("framing_error")
    error = recovery.framing_error
    return fields, (error.offset, error.message) if error else None, recovery.framed_bytes, verify_log(log)


@pytest.mark.parametrize("log", _segments())
@pytest.mark.parametrize("chunk", [8192, 3])
def test_columns_and_batches_agree_on_the_corpus(log, chunk, monkeypatch):
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", chunk)
    columns = _answers(str(log))
    _batch_by_batch(monkeypatch)
    assert _answers(str(log)) == columns


def _generated(tmp_path, damage: bool):
    """Many small batches with gaps, out-of-order timestamps and (optionally) a bad CRC."""
    log = bytearray()
    offset = 1000
    for i in range(3000):
        count = 1 + i % 4
        timestamp = 1_790_000_000_000 + (i * 7919) % 5000
        log += make_batch(offset, [(b"k%d" % i, b"v" * (i % 300))] * count, timestamp)
        offset += count + (5 if i % 97 == 0 else 0)  # compaction-like gaps
    if damage:
        log[len(log) // 2 + 100] ^= 0x40
    path = tmp_path / f"{1000:020d}.log"
    path.write_bytes(bytes(log))
    return str(path)


@pytest.mark.parametrize("damage", [False, True])
@pytest.mark.parametrize("chunk", [8192, 7])
def test_columns_and_batches_agree_on_generated_segments(tmp_path, damage, chunk, monkeypatch):
    log = _generated(tmp_path, damage)
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", chunk)
    columns = [_answers(log, interval) for interval in (0, 1, 700, 4096, 100_000)]
    assert columns[3][0]["offset_entries"], "the segment is large enough to be indexed"
    kinds = {problem["kind"] for problem in columns[0][3]["problems"]}
    assert "offset_gap" in kinds and ("crc_mismatch" in kinds) == damage
    assert (columns[0][0]["stop_reason"] == "invalid_batch") == damage
    _batch_by_batch(monkeypatch)
    assert [_answers(log, interval) for interval in (0, 1, 700, 4096, 100_000)] == columns
