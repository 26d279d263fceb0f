"""Pipeline benchmark: `segtool scan` throughput, local engine vs Spark local[2].

Data: a Kafka log dir of 4 partitions x 1 segment of 272 MiB (1.06 GiB; cached
in bench-data/pipeline-kafka/), generated with segtool's builder: 64 template
batches of 48 records (keys, one header, 200-1200-byte JSON-ish values; 3/4
uncompressed, 1/8 lz4, 1/8 zstd) repeated with increasing base offsets, each
copy of an uncompressed template with its own values (a copy number written
into them, CRC recomputed), and the .index/.timeindex Kafka's recovery writes
for them.  Each segment is cut into 64 MiB splits, so both engines
have 16 tasks for their 2 cores.

Reported: session start-up of Spark (separately), then each engine's
throughput, MB/s and records/s, over planning and scanning (warm page cache,
no sha256 of the inputs): the local pool's best of 2 runs; Spark's first run on
a fresh session, which includes its Python workers' warm-up (the Python daemon
and its workers start at the first job, as in any one-off command), and its
steady state (best of the 2 runs after it).  Target: Spark with the warm-up
>= 0.9x local.  The machine is shared: absolute figures move with its load,
and the ratios less so.
"""

from __future__ import annotations

import json
import os
import random
import shutil

import pytest
from crc32c import crc32c

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from segtool.kafka.recovery import recover_segment  # noqa: E402
from segtool.source import open_buffer  # noqa: E402
from segtool.kafka.log import Record, RecordBatch  # noqa: E402
from tests.kafka_build import build_batch_v2, build_records  # noqa: E402

MIB = 1 << 20
PARTITIONS = 4
SEGMENT_BYTES = 272 * MIB
RECORDS_PER_BATCH = 48
TEMPLATES = 64
BASE_TS = 1_795_000_000_000
LAYOUT = {"partitions": PARTITIONS, "segment_bytes": SEGMENT_BYTES, "records_per_batch": RECORDS_PER_BATCH,
          "templates": TEMPLATES, "version": 2}
PLACEHOLDER = b"@@@@@@@@"  # in every value: each copy of an uncompressed template writes its number there
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def _templates() -> list[tuple[bytes, int]]:
    """(batch bytes with base offset 0, record count) for each template."""
    from segtool.formats.compression import compress

    rng = random.Random(20261122)
    out = []
    for t in range(TEMPLATES):
        records = []
        for i in range(RECORDS_PER_BATCH):
            note = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 180)))
            value = json.dumps({"id": t * RECORDS_PER_BATCH + i, "copy": PLACEHOLDER.decode(),
                                "user": f"user-{rng.randint(0, 9999):04d}",
                                "amount": round(rng.random() * 1000, 2), "note": note}).encode()
            records.append(Record(i, BASE_TS + i, b"key-%06d" % rng.randint(0, 999999), value,
                                  [("trace-id", rng.randbytes(16))], timestamp_delta=i, offset_delta=i))
        codec = 3 if t % 8 == 1 else 4 if t % 8 == 5 else 0  # lz4, zstd, none
        payload = build_records(records)
        if codec:
            payload = compress(codec, payload)
        n = len(records)
        header = RecordBatch(position=0, magic=2, base_offset=0, last_offset=n - 1, size=0, crc=0, attributes=codec,
                             max_timestamp=BASE_TS + t * 1000 + n - 1, record_count=n, partition_leader_epoch=0,
                             last_offset_delta=n - 1, base_timestamp=BASE_TS + t * 1000)
        out.append((build_batch_v2(header, payload), n))
    return out


def _copy(data: bytes, offset: int, copy: int) -> bytes:
    """A template batch at a new base offset; uncompressed ones get distinct values (and a fresh CRC)."""
    if PLACEHOLDER not in data:
        return offset.to_bytes(8, "big") + data[8:]  # the base offset lies outside the CRC
    batch = bytearray(data.replace(PLACEHOLDER, b"%08x" % copy))
    batch[0:8] = offset.to_bytes(8, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


def _write_partition(directory, templates, partition: int) -> int:
    """One segment of SEGMENT_BYTES, plus its indexes as Kafka's recovery rebuilds them; returns records."""
    os.makedirs(directory, exist_ok=True)
    log = os.path.join(directory, "00000000000000000000.log")
    offset = written = copy = 0
    with open(log, "wb") as handle:
        while written < SEGMENT_BYTES:
            chunk = []
            for data, n in templates:
                copy += 1
                chunk.append(_copy(data, offset, partition << 24 | copy))
                offset += n
                written += len(data)
            handle.write(b"".join(chunk))
    recovery = recover_segment(open_buffer(log), log, 0)
    with open(os.path.join(directory, "00000000000000000000.index"), "wb") as handle:
        handle.write(recovery.offset_index_bytes())
    with open(os.path.join(directory, "00000000000000000000.timeindex"), "wb") as handle:
        handle.write(recovery.time_index_bytes())
    return offset


@pytest.fixture(scope="module")
def kafka_logs(bench_dir):
    root = bench_dir / "pipeline-kafka"
    marker = root / "layout.json"
    if marker.exists() and json.loads(marker.read_text()).get("layout") == LAYOUT:
        return root / "logs", json.loads(marker.read_text())["records"]
    shutil.rmtree(root, ignore_errors=True)
    templates = _templates()
    records = sum(_write_partition(root / "logs" / f"bench-{p}", templates, p) for p in range(PARTITIONS))
    marker.write_text(json.dumps({"layout": LAYOUT, "records": records}))
    return root / "logs", records


def _run_seconds(report: dict) -> float:
    """Planning and scanning: what a run costs after the engine has started."""
    return report["timing"]["plan_seconds"] + report["timing"]["scan_seconds"]


def _scans(paths, out, engine, runs: int) -> list[dict]:
    from segtool.pipeline.scan import scan

    reports = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        reports.append(scan(paths, str(out), engine, hash_inputs=False))
    return reports


def _line(name: str, report: dict, input_bytes: int) -> str:
    seconds = _run_seconds(report)
    rows = report["dataset"]["rows"]
    return (f"[bench] scan {name}: {input_bytes / 1e6:.0f} MB, {rows} records, {report['tasks']} tasks, plan + scan "
            f"{seconds:.2f} s = {input_bytes / 1e6 / seconds:.1f} MB/s, {rows / seconds:,.0f} records/s")


def test_scan_throughput_local_vs_spark(kafka_logs, tmp_path):
    from segtool.pipeline.engines import LocalEngine
    from segtool.pipeline.spark import SparkEngine

    logs, records = kafka_logs
    input_bytes = sum(p.stat().st_size for p in logs.glob("*/*.log"))
    assert input_bytes >= 10**9
    for log in logs.glob("*/*.log"):  # warm the page cache: both engines read from memory
        with open(log, "rb") as handle:
            while handle.read(64 * MIB):
                pass

    local = min(_scans([str(logs)], tmp_path / "local", LocalEngine(2), runs=2), key=_run_seconds)
    assert local["dataset"]["rows_by_broker"]["kafka"] == records

    engine = SparkEngine("local[2]")
    startup = engine.start()
    try:
        first, *later = _scans([str(logs)], tmp_path / "spark", engine, runs=3)
    finally:
        engine.stop()
    steady = min(later, key=_run_seconds)
    for report in (first, steady):
        assert report["dataset"]["rows_by_broker"]["kafka"] == records
    parquet = sum(f.stat().st_size for f in (tmp_path / "spark").rglob("*.parquet"))

    with_warmup = _run_seconds(local) / _run_seconds(first)
    steady_ratio = _run_seconds(local) / _run_seconds(steady)
    print()
    print(f"[bench] input: {PARTITIONS} partitions x 1 segment of {SEGMENT_BYTES // MIB} MiB, "
          f"{records} records; Parquet out: {parquet / 1e6:.0f} MB ({parquet / input_bytes:.1%} of the input)")
    print(_line("--engine local (2 processes)", local, input_bytes))
    print(_line(f"--engine spark ({engine.master}, first run: Python workers' warm-up included)", first, input_bytes))
    print(_line(f"--engine spark ({engine.master}, steady state)", steady, input_bytes))
    print(f"[bench] Spark session start-up {startup:.2f} s (not in the figures above); warm-up cost of the first "
          f"run {_run_seconds(first) - _run_seconds(steady):.2f} s")
    print(f"[bench] Spark / local throughput: {with_warmup:.2f}x with the warm-up (target >= 0.90x: "
          f"{'met' if with_warmup >= 0.9 else 'NOT met'}), {steady_ratio:.2f}x steady state")
    assert with_warmup >= 0.9
