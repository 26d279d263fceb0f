"""Big scan inputs made of corpus records, and one scan task's peak memory measured in a child process.

``kafka_segment`` repeats the batches of a corpus segment (v2 batches: the base offset lies outside
the CRC, so each copy stays valid) with increasing base offsets; ``commitlog_file`` repeats a corpus
CommitLog's messages with their queue and physical offsets rewritten (outside the body CRC), as
RocketMQ would have written them one after another.  ``task_peak`` runs ``run_scan_task`` on one
task in a fresh interpreter and returns its peak resident set (``VmHWM``), which includes the
interpreter, pyarrow and numpy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from segtool.kafka.log import batch_at, frame_batches
from segtool.kafka.recovery import recover_segment
from segtool.rocketmq import store_files as rmq
from segtool.source import open_buffer
from tests.conftest import CORPUS

MIB = 1 << 20
KAFKA_SOURCE = CORPUS / "kafka" / "c03-codecs" / "data" / "c03-rdk-zstd-0" / "00000000000000000000.log"
# 66 bytes a record: scanning is paced by records, so the inputs of the largest tasks mix in plain batches
# of about 250 bytes a record (c01-plain-0, every segment), ten zstd batches in each repetition
PLAIN_SOURCES = sorted((CORPUS / "kafka" / "c01-multiseg-clean" / "data" / "c01-plain-0").glob("*.log"))
ZSTD_BATCHES_MIXED_IN = 10
COMMITLOG_SOURCE = CORPUS / "rocketmq" / "clean-multi" / "store" / "commitlog"
_QUEUE_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("queueOffset")
_QUEUE_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("queueOffset")
_PHYSICAL_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("physicalOffset")
_PHYSICAL_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("physicalOffset")


def _batches(path: Path) -> list[tuple[bytes, int]]:
    """Each batch of a segment with its record count."""
    buf = open_buffer(str(path))
    positions, end, _ = frame_batches(buf, 0, len(buf), 1 << 20)
    return [(bytes(buf[p:q]), batch_at(buf, p).last_offset_delta + 1) for p, q in zip(positions, positions[1:] + [end])]


def kafka_segment(directory: Path, size: int, with_index: bool = True, mixed: bool = False) -> Path:
    """A segment of about ``size`` bytes of a corpus segment's zstd batches repeated (``mixed``: mostly plain
    batches, some zstd), and its ``.index``."""
    batches = _batches(KAFKA_SOURCE)
    if mixed:
        batches = [batch for source in PLAIN_SOURCES for batch in _batches(source)] + batches[:ZSTD_BATCHES_MIXED_IN]
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "00000000000000000000.log"
    offset = written = 0
    with open(log, "wb") as handle:
        while written < size:
            chunk = []
            for data, count in batches:
                chunk.append(offset.to_bytes(8, "big") + data[8:])
                offset += count
                written += len(data)
            handle.write(b"".join(chunk))
    if with_index:
        recovery = recover_segment(open_buffer(str(log)), str(log), 0)
        (directory / "00000000000000000000.index").write_bytes(recovery.offset_index_bytes())
    return log


def commitlog_file(store: Path, size: int) -> Path:
    """A store whose one CommitLog file holds ``size`` bytes of the corpus messages, then a BLANK record."""
    messages = []
    for source in sorted(COMMITLOG_SOURCE.iterdir()):
        buf = open_buffer(str(source))
        messages += [(step["topic"], step["queueId"], bytes(buf[step["fileOffset"]:step["fileOffset"] + step["totalSize"]]))
                     for step in rmq.walk_commitlog(buf, digests=False, decompress=False) if isinstance(step, dict)]
    directory = store / "commitlog"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "00000000000000000000"
    queue_offsets: dict[tuple[str, int], int] = {}
    written = 0
    with open(path, "wb") as handle:
        while True:
            chunk = bytearray()
            for topic, queue_id, record in messages:
                if written + len(chunk) + len(record) + rmq.BLANK_RECORD_FAST.size > size:
                    left = size - written - len(chunk)
                    chunk += rmq.BLANK_RECORD_FAST.pack(left, rmq.BLANK_MAGIC_CODE)
                    chunk += bytes(left - rmq.BLANK_RECORD_FAST.size)
                    handle.write(chunk)
                    return path
                queue_offset = queue_offsets.get((topic, queue_id), 0)
                queue_offsets[topic, queue_id] = queue_offset + 1
                message = bytearray(record)
                message[_QUEUE_OFFSET_AT:_QUEUE_OFFSET_AT + 8] = _QUEUE_OFFSET.pack(queue_offset)
                message[_PHYSICAL_OFFSET_AT:_PHYSICAL_OFFSET_AT + 8] = _PHYSICAL_OFFSET.pack(written + len(chunk))
                chunk += message
            handle.write(chunk)
            written += len(chunk)


# VmHWM is this process image's own peak: getrusage's ru_maxrss keeps, across exec, the resident size of the
# forked copy of the parent (a long pytest session's hundreds of MB)
_CHILD = """
import json, sys
from segtool.pipeline.scan import run_scan_task
task, run_root, with_values = json.loads(sys.argv[1])
stats = run_scan_task(task, run_root, with_values=with_values)
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_mb": hwm / 1024, "rows": stats["rows"],
                  "scanned_to": stats["scanned_to"], "parts": stats["parts"]}))
"""


def task_peak(task: dict, run_root: str, with_values: bool, cwd: str, env: dict | None = None) -> dict:
    """Run one scan task in a fresh interpreter whose working directory (first on ``sys.path``) is ``cwd``;
    its peak resident set in MB, rows, where it stopped and its parts."""
    # only what a task needs from the environment: settings other tests of the session leave behind must not
    # change what is measured
    kept = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([task, run_root, with_values])], cwd=cwd,
                          capture_output=True, text=True, env={**kept, **(env or {})}, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])
