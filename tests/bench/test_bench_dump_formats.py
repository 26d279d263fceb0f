"""Issue 16 benchmarks: `segtool dump` as JSON Lines and as text, against `sha256sum` of the same file.

Kafka: the 1,000,000-record segments of ``test_bench_dump`` (1,470-record batches) and
``test_bench_shapes`` (single-record batches).  RocketMQ: a 64 MiB CommitLog file of
real messages (the corpus's clean-multi store, repeated with their physical and queue
offsets moved on, as the broker would have written them), ended by a BLANK record.
Targets, each a ratio to `sha256sum` of the same file measured in the same run:
Kafka text and JSON <= 9.5x on both shapes; RocketMQ text and JSON <= 2.5x (RocketMQ's
own MessageDecoder: 3.5x) with a peak RSS of at most 100 MB.  Printed beside the RocketMQ
rows: the floor of any Python text dump (``rocketmq_floor.py``) and a direct Python JSON
dump of the same messages (``rocketmq_json_floor.py``), each against the same reference.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from segtool.rocketmq import store_files as rmq
from segtool.source import open_buffer
from tests.bench.conftest import SEGTOOL, report, timed
from tests.bench.test_bench_dump import generate_segment
from tests.bench.test_bench_shapes import _segment, generate_single_record_batches
from tests.conftest import CORPUS

COMMITLOG_SIZE = 64 * 1024 * 1024
_QUEUE_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("queueOffset")
_QUEUE_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("queueOffset")
_PHYSICAL_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("physicalOffset")
_PHYSICAL_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("physicalOffset")


def generate_commitlog(path: Path) -> None:
    """The clean-multi store's messages over and over until the next one does not fit, then the BLANK record."""
    messages = []
    for source in sorted((CORPUS / "rocketmq" / "clean-multi" / "store" / "commitlog").iterdir()):
        buf = open_buffer(str(source))
        messages += [(step["topic"], step["queueId"], bytes(buf[step["fileOffset"]:step["fileOffset"] + step["totalSize"]]))
                     for step in rmq.walk_commitlog(buf, digests=False, decompress=False) if isinstance(step, dict)]
    next_queue_offset: dict[tuple[str, int], int] = {}
    written = bytearray()
    while True:
        for topic, queue_id, record in messages:
            if len(written) + len(record) + rmq.BLANK_RECORD_FAST.size > COMMITLOG_SIZE:
                left = COMMITLOG_SIZE - len(written)
                written += rmq.BLANK_RECORD_FAST.pack(left, rmq.BLANK_MAGIC_CODE) + bytes(left - rmq.BLANK_RECORD_FAST.size)
                path.write_bytes(written)
                return
            queue_offset = next_queue_offset.get((topic, queue_id), 0)
            next_queue_offset[topic, queue_id] = queue_offset + 1
            message = bytearray(record)
            message[_QUEUE_OFFSET_AT:_QUEUE_OFFSET_AT + 8] = _QUEUE_OFFSET.pack(queue_offset)
            message[_PHYSICAL_OFFSET_AT:_PHYSICAL_OFFSET_AT + 8] = _PHYSICAL_OFFSET.pack(len(written))
            written += message


def timed_with_rss(cmd: list[str], runs: int = 3) -> tuple[float, float]:
    """Best wall time of ``runs`` runs and the peak RSS in MB of one run alone (a child of its own)."""
    script = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([SEGTOOL[0], "-c", script, *cmd], capture_output=True, text=True, check=True).stdout
    return timed(cmd, runs), int(out) / 1024


@pytest.mark.skipif(not (CORPUS / "rocketmq").is_dir(), reason="needs the corpus's clean-multi store")
def test_dump_formats_speed(bench_dir):
    segments = {
        "1,470-record batches": _segment(bench_dir, "dump-1m", generate_segment),
        "single-record batches": _segment(bench_dir, "shapes-1m-single", generate_single_record_batches),
    }
    for shape, segment in segments.items():
        print(f"\n[bench] {shape}: {segment.stat().st_size / 1e6:.1f} MB, 1,000,000 records")
        reference = timed(["sha256sum", str(segment)])
        for name, options in (("dump --format json", ["--format", "json"]), ("dump (text)", [])):
            report(f"{name}, {shape}", timed(SEGTOOL + ["dump", *options, str(segment)]), reference,
                   "sha256sum", 9.5)

    commitlog = bench_dir / "rocketmq-64m" / "store" / "commitlog" / "00000000000000000000"
    if not commitlog.exists():
        commitlog.parent.mkdir(parents=True, exist_ok=True)
        generate_commitlog(commitlog)
    reference = timed(["sha256sum", str(commitlog)], runs=5)
    started = time.perf_counter()
    messages = sum(1 for step in rmq.walk_commitlog(open_buffer(str(commitlog)), digests=False, decompress=False)
                   if isinstance(step, dict))
    print(f"\n[bench] RocketMQ CommitLog: {commitlog.stat().st_size / 2**20:.0f} MiB, {messages} messages "
          f"(walked in {time.perf_counter() - started:.2f} s)")
    floor = timed([SEGTOOL[0], str(Path(__file__).with_name("rocketmq_floor.py")), str(commitlog)], runs=5)
    report("floor of any Python text dump of it (tests/bench/rocketmq_floor.py)", floor, reference, "sha256sum")
    direct_json = timed([SEGTOOL[0], str(Path(__file__).with_name("rocketmq_json_floor.py")), str(commitlog)])
    report("a direct Python JSON dump of it, message by message (tests/bench/rocketmq_json_floor.py)", direct_json,
           reference, "sha256sum")
    for name, options in (("dump (text)", []), ("dump --json", ["--json"])):
        seconds, rss = timed_with_rss(SEGTOOL + ["dump", *options, str(commitlog)], runs=5 if not options else 3)
        report(f"RocketMQ 64 MiB CommitLog, {name}", seconds, reference, "sha256sum", 2.5)
        print(f"[bench] RocketMQ 64 MiB CommitLog, {name}: peak RSS {rss:.0f} MB (target <= 100 MB: "
              f"{'met' if rss <= 100 else 'NOT met'})")
