"""Recovery and verify read regular chunks as columns (numpy) and everything else
batch by batch.  Both ways must give the same answers: every corpus segment (clean,
compacted, transactional, legacy, corrupted) and generated segments are run
through both, and with tiny chunks so that every rule meets a chunk boundary."""

from __future__ import annotations

import dataclasses

import pytest

from segtool.kafka import recovery as recovery_module
from segtool.kafka.recovery import recover_segment
from segtool.formats.checksums import ChecksumHelper
from segtool.source import open_buffer
from segtool.kafka import log as kafka_log
from segtool.kafka.names import offset_from_file_name
from segtool.ops.verify_kafka import verify_log
from tests.kafka_build import make_batch
from tests.conftest import case_dirs


def _segments():
    return [pytest.param(log, id=f"{case.name}/{log.parent.name}/{log.name}")
            for case in case_dirs("kafka") for log in sorted((case / "data").glob("*/*.log"))]


def _batch_by_batch(monkeypatch):
    """Make every chunk irregular, so recovery and verify take the per-batch path."""
    original = kafka_log.BatchHeaders.__init__

    def irregular(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.regular = False

    monkeypatch.setattr(kafka_log.BatchHeaders, "__init__", irregular)


def _answers(log: str, index_interval_bytes: int = 4096, parallel: bool = False) -> tuple:
    recovery = recover_segment(open_buffer(log), log, offset_from_file_name(log),
                               index_interval_bytes=index_interval_bytes, count_records=True, parallel=parallel)
    fields = dataclasses.asdict(recovery)
    fields.pop("framing_error")
    error = recovery.framing_error
    return (fields, (error.offset, error.message) if error else None, recovery.framed_bytes,
            verify_log(log, parallel=parallel))


def _helper_for_every_file(monkeypatch, chunk: int):
    """A checksum helper process for files of any size, and chunks small enough to hand it many."""
    monkeypatch.setattr(recovery_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(recovery_module.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", chunk)


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
    kinds = {problem.kind.code for problem in columns[0][3]["problems"]}
    assert "offset_gap" in kinds and ("crc_mismatch" in kinds) == damage
    assert (columns[0][0]["stop_reason"] == "invalid_batch") == damage
    _batch_by_batch(monkeypatch)
    assert [_answers(log, interval) for interval in (0, 1, 700, 4096, 100_000)] == columns


@pytest.mark.parametrize("log", _segments())
def test_a_checksum_helper_process_changes_no_answer_on_the_corpus(log, monkeypatch):
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", 3)
    alone = _answers(str(log))
    _helper_for_every_file(monkeypatch, 3)
    assert _answers(str(log), parallel=True) == alone


@pytest.mark.parametrize("damage", [False, True])
def test_a_checksum_helper_process_changes_no_answer_on_generated_segments(tmp_path, damage, monkeypatch):
    log = _generated(tmp_path, damage)
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", 7)
    alone = [_answers(log, interval) for interval in (0, 700, 4096)]
    _helper_for_every_file(monkeypatch, 7)
    assert [_answers(log, interval, parallel=True) for interval in (0, 700, 4096)] == alone


def test_a_helper_that_dies_is_replaced_by_checksumming_here(tmp_path, monkeypatch):
    """The helper dies with its second request unanswered (stopped before it can answer, then killed): that
    request and every later chunk are checksummed in-process."""
    import os
    import signal

    log = _generated(tmp_path, damage=True)
    monkeypatch.setattr(kafka_log.HeaderScan, "CHUNK", 11)
    alone = _answers(log)
    submitted, answered = [], []
    original_submit, original_result = ChecksumHelper.submit, ChecksumHelper.result

    def submit_then_die(self, starts, stops):
        submitted.append(len(starts))
        if len(submitted) != 2:
            return original_submit(self, starts, stops)
        os.kill(self._pid, signal.SIGSTOP)  # the request reaches the pipe, the answer never comes
        accepted = original_submit(self, starts, stops)
        os.kill(self._pid, signal.SIGKILL)
        return accepted

    def result(self):
        answered.append(original_result(self))
        return answered[-1]

    monkeypatch.setattr(ChecksumHelper, "submit", submit_then_die)
    monkeypatch.setattr(ChecksumHelper, "result", result)
    _helper_for_every_file(monkeypatch, 11)
    assert _answers(log, parallel=True) == alone
    assert answered[0] is not None and answered[1] is None, "the helper answered once, then was gone"


def test_the_helper_checksums_what_the_parent_would(tmp_path):
    data = bytes(range(256)) * 4096
    with ChecksumHelper(data) as helper:
        starts, stops = [0, 5, 1000, 70000], [5, 999, 65536, 1048576]
        assert helper.submit(starts, stops)
        assert not helper.submit([0], [1]), "one request at a time"
        assert helper.result() == [kafka_log.crc32c(data[a:b]) for a, b in zip(starts, stops)]
        assert helper.submit([], []) and helper.result() == []
    assert not helper.alive and not helper.submit([0], [1])
