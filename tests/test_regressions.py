"""Failures the fuzzer found, each kept as a minimal input that once broke a reader."""

from __future__ import annotations

import os
import struct

import pytest

from segtool.errors import SegtoolError
from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump
from segtool.ops.lookup import lookup_offset
from segtool.ops.verify import verify
from tests.kafka_build import make_batch


def _partition(tmp_path, index_entries):
    part = tmp_path / "t-0"
    part.mkdir(parents=True)
    log = b"".join(make_batch(i * 10, [(b"k%d" % i, b"v" * 5000)] * 10, 1_700_000_000_000 + i) for i in range(4))
    (part / "00000000000000000000.log").write_bytes(log)
    (part / "00000000000000000000.index").write_bytes(b"".join(struct.pack(">ii", *e) for e in index_entries))
    (part / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", 1_700_000_000_002, 19))
    return part


def test_index_position_outside_the_log(tmp_path):
    # struct.error "offset -726051010 out of range" from BatchScan at a negative position
    for position in (-726051010, 2**31 - 1):
        part = _partition(tmp_path / str(position), [(19, position)])
        lines: list[str] = []
        for name in ("00000000000000000000.index", "00000000000000000000.timeindex"):
            code = run_kafka_dump([str(part / name)], KafkaDumpOptions(), lines.append, lines.append)
            assert code in (0, 1)
        report = verify([str(part)])
        assert report["summary"]["unreadable"] == 0
        assert lookup_offset(str(part), 25)["offset"] == 25  # the engine falls back to a scan


def test_symlink_loop_is_unreadable_not_a_crash(tmp_path):
    loop = tmp_path / "00000000000000000000.log"
    loop.symlink_to(loop)
    report = verify([str(loop)])
    assert report["files"][0]["status"] == "unreadable"


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    assert verify([str(fifo)])["files"][0]["status"] == "unreadable"
    lines: list[str] = []
    assert run_kafka_dump([str(fifo)], KafkaDumpOptions(), lines.append, lines.append) == 2


def test_negative_scan_start_is_a_clean_error():
    from segtool.kafka.log import BatchScan

    with pytest.raises(SegtoolError) as info:
        BatchScan(b"\0" * 100, -5, path="x.log")
    assert "x.log" in str(info.value) and "\n" not in str(info.value)
