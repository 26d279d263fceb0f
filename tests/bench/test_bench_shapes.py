"""Issue 16 benchmarks (Kafka side): record decoding on every batch shape, against `sha256sum`.

Segments of 1,000,000 records, 12-byte keys and 100-byte values, built with
segtool's own builder: one in 1,470-record batches (``test_bench_dump``'s) and
one in single-record batches (a linger-0 producer's shape).  Targets, each as a
ratio to `sha256sum` of the same file measured in the same run:
deep dump with data <= 9.5x on both shapes, `verify --deep` of the
single-record batches <= 6x, `lookup --key` by scan <= 3x.
"""

from __future__ import annotations

from pathlib import Path

from segtool.formats.checksums import crc32c
from segtool.formats.fastdecode import compiled
from segtool.kafka.log import CRC_V2_START, Record, RecordBatch
from tests.kafka_build import build_batch_v2, build_records
from tests.bench.conftest import SEGTOOL, report, timed
from tests.bench.test_bench_dump import generate_segment

RECORDS = 1_000_000
BASE_TS = 1_795_000_000_000
HEADER = compiled("BATCH_HEADER_V2")


def _key(i: int) -> bytes:
    return b"key-%08d" % i


def _value(i: int) -> bytes:
    return (b"v%07d" % i) * 12 + b"0123"


def generate_single_record_batches(path: Path) -> None:
    """One record per batch, each with its own key, value and timestamp.

    The builder makes the first batch; every other one is that batch with its
    header fields, key and value replaced (all of fixed width) and its CRC-32C
    computed again: building a million batches through construct takes minutes.
    """
    template = build_batch_v2(
        RecordBatch(position=0, magic=2, base_offset=0, last_offset=0, size=0, crc=0, attributes=0,
                    max_timestamp=BASE_TS, record_count=1, partition_leader_epoch=0, last_offset_delta=0,
                    base_timestamp=BASE_TS),
        build_records([Record(0, BASE_TS, _key(0), _value(0), (), timestamp_delta=0, offset_delta=0)]))
    fields = list(HEADER.unpack_from(template))
    names = HEADER.names
    base_offset, base_ts, max_ts, crc = (names.index(n) for n in ("base_offset", "base_timestamp",
                                                                  "max_timestamp", "crc"))
    section = template[HEADER.size:]
    key_at, value_at = section.index(_key(0)), section.index(_value(0))
    key_end, value_end = key_at + len(_key(0)), value_at + len(_value(0))
    with open(path, "wb") as out:
        for i in range(RECORDS):
            body = b"".join((section[:key_at], _key(i), section[key_end:value_at], _value(i), section[value_end:]))
            fields[base_offset] = i
            fields[base_ts] = fields[max_ts] = BASE_TS + i // 100
            fields[crc] = 0
            fields[crc] = crc32c(HEADER.pack(*fields)[CRC_V2_START:] + body)
            out.write(HEADER.pack(*fields) + body)


def _segment(bench_dir: Path, name: str, generate) -> Path:
    segment = bench_dir / name / "00000000000000000000.log"
    if not segment.exists():
        segment.parent.mkdir(parents=True, exist_ok=True)
        generate(segment)
    return segment


def test_decode_speed_by_batch_shape(bench_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no key index in the cache: lookup --key scans
    shapes = {
        "1,470-record batches": _segment(bench_dir, "dump-1m", generate_segment),
        "single-record batches": _segment(bench_dir, "shapes-1m-single", generate_single_record_batches),
    }
    deep_dump = ["dump", "--format", "kafka", "--deep-iteration", "--print-data-log"]
    for shape, segment in shapes.items():
        print(f"\n[bench] {shape}: {segment.stat().st_size / 1e6:.1f} MB, {RECORDS} records")
        reference = timed(["sha256sum", str(segment)])
        report(f"dump --format kafka --deep-iteration --print-data-log, {shape}",
               timed(SEGTOOL + deep_dump + [str(segment)], runs=1), reference, "sha256sum", 9.5)
        report(f"verify --deep --no-hash, {shape}",
               timed(SEGTOOL + ["verify", "--deep", "--no-hash", "--json", str(segment)], runs=1), reference,
               "sha256sum", 6.0 if shape == "single-record batches" else None)
        # a key both segments hold (every 1,470-record batch repeats the same keys)
        report(f"lookup --key by scan, {shape}",
               timed(SEGTOOL + ["lookup", str(segment.parent), "--key", _key(700).decode(), "--json"],
                     runs=1), reference, "sha256sum", 3.0)
