"""Issue 4 benchmarks: verify and rebuild-index vs `cat` of the same file, and peak memory.

(a) ~1 GiB segment of ~16 KiB batches: verify and rebuild-index <= 2x `cat`.
    Printed beside them, measured in the same run: the floor any Python verify
    has (``tests/bench/floor.py``: start, import typer, CRC-32C on both cores,
    nothing else), and sha256 of the file alone (hashlib), the bound of the
    default run that reports the input's hash.
(b) 1,000,000 single-record batches: verify and rebuild-index <= 3 s.
Peak RSS <= 150 MB whatever the file size.  Files come from segtool's builder.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from segtool.formats.kafka_build import build_batch_v2, build_records, make_batch
from segtool.formats.kafka_log import Record, RecordBatch
from tests.bench.conftest import SEGTOOL, report, timed

GIB = 1 << 30
BASE_TS = 1_795_000_000_000


def _generate_big(path) -> None:
    records = [Record(i, BASE_TS + i, b"key-%08d" % i, bytes(100), (), timestamp_delta=i, offset_delta=i)
               for i in range(140)]
    section = build_records(records)
    with open(path, "wb") as out:
        offset = written = 0
        while written < GIB:
            batch = RecordBatch(position=0, magic=2, base_offset=offset, last_offset=offset + 139, size=0, crc=0,
                                attributes=0, max_timestamp=BASE_TS + 139, record_count=140,
                                partition_leader_epoch=0, last_offset_delta=139, base_timestamp=BASE_TS)
            data = build_batch_v2(batch, section)
            out.write(data)
            written += len(data)
            offset += 140


def _generate_single_record_batches(path, count=1_000_000) -> None:
    template = make_batch(0, [(b"k", b"v" * 20)], BASE_TS)
    tail = template[8:]  # the base offset lies outside the CRC: only it changes
    pack = struct.Struct(">q").pack
    with open(path, "wb") as out:
        out.write(b"".join(pack(i) + tail for i in range(count)))


def _peak_rss_mb(cmd: list[str]) -> float:
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
    return int(out.stdout.strip()) / 1024


def _sha256_seconds(path) -> float:
    probe = ("import hashlib, mmap, sys, time; f = open(sys.argv[1], 'rb'); "
             "m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); t = time.perf_counter(); "
             "hashlib.sha256(m).digest(); print(time.perf_counter() - t)")
    runs = [float(subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True).stdout)
            for _ in range(3)]
    return min(runs)


def test_verify_and_rebuild_speed(bench_dir, tmp_path):
    big = bench_dir / "verify-1g" / "00000000000000000000.log"
    if not big.exists():
        big.parent.mkdir(parents=True, exist_ok=True)
        _generate_big(big)
    many = bench_dir / "verify-1m-batches" / "00000000000000000000.log"
    if not many.exists():
        many.parent.mkdir(parents=True, exist_ok=True)
        _generate_single_record_batches(many)
    # best of 3 for every command and for cat alike (timeit's convention; this VM's speed drifts)
    cat = timed(["cat", str(big)])
    verify_big = timed(SEGTOOL + ["verify", "--json", str(big)])
    verify_big_nohash = timed(SEGTOOL + ["verify", "--json", "--no-hash", str(big)])
    rebuild_big = timed(SEGTOOL + ["rebuild-index", str(big), "--out", str(tmp_path / "big")])
    rebuild_big_nohash = timed(SEGTOOL + ["rebuild-index", "--no-hash", str(big), "--out", str(tmp_path / "big2")])
    print(f"\n[bench] segment: {big.stat().st_size / GIB:.2f} GiB in ~16 KiB batches")
    report("verify 1 GiB (with sha256 of the input)", verify_big, cat, "cat", 2.0)
    report("verify 1 GiB --no-hash", verify_big_nohash, cat, "cat", 2.0)
    report("rebuild-index 1 GiB (with sha256 of the input)", rebuild_big, cat, "cat", 2.0)
    report("rebuild-index 1 GiB --no-hash", rebuild_big_nohash, cat, "cat", 2.0)
    floor = timed([sys.executable, str(Path(__file__).with_name("floor.py")), str(big)])
    report("floor of any Python verify (start, typer, CRC-32C on 2 cores, nothing else)", floor, cat, "cat")
    report("sha256 of the file alone, in-process", _sha256_seconds(big), cat, "cat")
    verify_many = timed(SEGTOOL + ["verify", "--json", "--no-hash", str(many)], runs=1)
    rebuild_many = timed(SEGTOOL + ["rebuild-index", "--no-hash", str(many), "--out", str(tmp_path / "many")], runs=1)
    print(f"[bench] 1,000,000 single-record batches ({many.stat().st_size / 1e6:.0f} MB): "
          f"verify --no-hash {verify_many:.2f} s, rebuild-index --no-hash {rebuild_many:.2f} s (target <= 3 s)")
    rss = max(_peak_rss_mb(SEGTOOL + ["verify", str(big)]),
              _peak_rss_mb(SEGTOOL + ["rebuild-index", str(big), "--out", str(tmp_path / "rss")]))
    print(f"[bench] peak RSS on the 1 GiB segment: {rss:.0f} MB (target <= 150 MB)")
