"""Issue 2 benchmark: dump --format kafka on a 1,000,000-record segment vs sha256sum.

Segment: uncompressed v2 batches of 1,470 records, 12-byte keys, 100-byte values
(~123 MB), built with segtool's own builder.  Targets: deep dump with data
<= 9.5x sha256sum (Kafka 3.9: 19x), shallow dump <= 1.5x (Kafka: 3.0x).
"""

from __future__ import annotations

from pathlib import Path

from segtool.kafka.log import Record, RecordBatch
from tests.kafka_build import build_batch_v2, build_records
from tests.bench.conftest import SEGTOOL, report, timed

RECORDS = 1_000_000
PER_BATCH = 1470
BASE_TS = 1_795_000_000_000


def generate_segment(path: Path) -> None:
    records = [
        Record(i, BASE_TS + i // 100, b"key-%08d" % i, (b"v%07d" % i) * 12 + b"0123", (), timestamp_delta=i // 100,
               offset_delta=i)
        for i in range(PER_BATCH)
    ]
    section = build_records(records)  # same deltas in every batch: build the records once
    with open(path, "wb") as out:
        offset = 0
        while offset < RECORDS:
            count = min(PER_BATCH, RECORDS - offset)
            payload = section if count == PER_BATCH else build_records(records[:count])
            batch = RecordBatch(position=0, magic=2, base_offset=offset, last_offset=offset + count - 1, size=0,
                                crc=0, attributes=0, max_timestamp=BASE_TS + (count - 1) // 100,
                                record_count=count, partition_leader_epoch=0, last_offset_delta=count - 1,
                                base_timestamp=BASE_TS)
            out.write(build_batch_v2(batch, payload))
            offset += count


def test_dump_kafka_format_speed(bench_dir):
    segment = bench_dir / "dump-1m" / "00000000000000000000.log"
    if not segment.exists():
        segment.parent.mkdir(parents=True, exist_ok=True)
        generate_segment(segment)
    reference = timed(["sha256sum", str(segment)])
    deep = timed(SEGTOOL + ["dump", "--format", "kafka", "--deep-iteration", "--print-data-log", str(segment)], runs=1)
    shallow = timed(SEGTOOL + ["dump", "--format", "kafka", str(segment)])
    print(f"\n[bench] segment: {segment.stat().st_size / 1e6:.1f} MB, {RECORDS} records")
    report("dump --format kafka --deep-iteration --print-data-log", deep, reference, "sha256sum", 9.5)
    report("dump --format kafka (shallow)", shallow, reference, "sha256sum", 1.5)
