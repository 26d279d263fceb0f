"""Issue 29's benchmark: ``segtool replicas`` over three replicas of a 1 GiB partition costs at most 1.5x
reading them once, measured beside ``sha256sum`` of the three copies' segments in the same run.  The default
run hashes every file too (each task's files in a child beside its comparison); ``--no-hash`` is printed beside.

The partition: eight 128 MiB segments of 140-record batches (segtool's builder), indexes from segtool's
rebuild-index, checkpoints and a clean-shutdown marker as a stopped broker leaves them.  Broker 2 holds the
same bytes; broker 3's last segment parts half way: its tail was written by a later leader (epoch 1), so the
comparison reads every header of all three copies and the divergence at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from segtool.kafka.log import Record, RecordBatch
from tests.bench.conftest import SEGTOOL, have, report, timed
from tests.kafka_build import build_batch_v2, build_records

BASE_TS = 1_795_000_000_000
SEGMENT_BYTES = 128 << 20
SEGMENTS = 8
RECORDS_PER_BATCH = 140


def _batches(offset: int, epoch: int, value: bytes):
    records = [Record(i, BASE_TS + i, b"key-%08d" % i, value, (), timestamp_delta=i, offset_delta=i)
               for i in range(RECORDS_PER_BATCH)]
    section = build_records(records)
    while True:
        batch = RecordBatch(position=0, magic=2, base_offset=offset, last_offset=offset + RECORDS_PER_BATCH - 1,
                            size=0, crc=0, attributes=0, max_timestamp=BASE_TS + RECORDS_PER_BATCH - 1,
                            record_count=RECORDS_PER_BATCH, partition_leader_epoch=epoch,
                            last_offset_delta=RECORDS_PER_BATCH - 1, base_timestamp=BASE_TS)
        yield offset, build_batch_v2(batch, section)
        offset += RECORDS_PER_BATCH


def _broker(root, node_id: int, end: int, epochs: str) -> None:
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "meta.properties"), "w") as out:
        out.write(f"version=1\nnode.id={node_id}\ncluster.id=bench\n")
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        with open(os.path.join(root, name), "w") as out:
            out.write(f"0\n1\nbench 0 {end}\n")
    open(os.path.join(root, ".kafka_cleanshutdown"), "w").close()
    with open(os.path.join(root, "bench-0", "leader-epoch-checkpoint"), "w") as out:
        out.write(epochs)


def _build(root) -> list[str]:
    first = os.path.join(root, "b1", "bench-0")
    os.makedirs(first)
    offset, last_base = 0, 0
    batches = _batches(0, 0, bytes(100))
    for _ in range(SEGMENTS):
        last_base = offset
        with open(os.path.join(first, "%020d.log" % offset), "wb") as out:
            written = 0
            while written < SEGMENT_BYTES:
                offset, data = next(batches)
                out.write(data)
                written += len(data)
                offset += RECORDS_PER_BATCH
    _broker(os.path.join(root, "b1"), 1, offset, "0\n1\n0 0\n")
    subprocess.run([*SEGTOOL, "rebuild-index", first, "--in-place", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    for node in (2, 3):
        shutil.copytree(os.path.join(root, "b1"), os.path.join(root, f"b{node}"))
    _broker(os.path.join(root, "b2"), 2, offset, "0\n1\n0 0\n")
    # broker 3: the last segment's second half rewritten by a leader of epoch 1 with other values
    last = os.path.join(root, "b3", "bench-0", "%020d.log" % last_base)
    size = os.path.getsize(last)
    batch_size = len(next(_batches(0, 0, bytes(100)))[1])
    keep = (size // 2) // batch_size * batch_size
    split_offset = last_base + keep // batch_size * RECORDS_PER_BATCH
    with open(last, "r+b") as out:
        out.truncate(keep)
        out.seek(keep)
        for base, data in _batches(split_offset, 1, b"\x01" * 100):
            if out.tell() >= size:
                break
            out.write(data)
    for name in os.listdir(os.path.dirname(last)):
        if name.startswith("%020d." % last_base) and not name.endswith(".log"):
            os.remove(os.path.join(os.path.dirname(last), name))
    _broker(os.path.join(root, "b3"), 3, split_offset, f"0\n2\n0 0\n1 {split_offset}\n")
    return [os.path.join(root, f"b{node}") for node in (1, 2, 3)]


def test_replicas_of_three_1gib_copies_against_sha256sum(bench_dir):
    root = bench_dir / "replicas-3x1gib"
    if not (root / "b3").exists():
        shutil.rmtree(root, ignore_errors=True)
        _build(root)
    brokers = [str(root / f"b{node}") for node in (1, 2, 3)]
    segments = sorted(str(root / f"b{node}" / "bench-0" / name) for node in (1, 2, 3)
                      for name in os.listdir(root / f"b{node}" / "bench-0") if name.endswith(".log"))
    out = subprocess.run([*SEGTOOL, "replicas", *brokers], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr  # the copies part: broker 3's tail
    assert "part at offset" in out.stdout
    listed = subprocess.run([*SEGTOOL, "replicas", "--json", *brokers], capture_output=True, text=True)
    files = {f["path"]: f["sha256"] for b in json.loads(listed.stdout)["brokers"] for f in b["files"]}
    assert sorted(files) == sorted(str(p) for b in brokers for p in Path(b).rglob("*") if p.is_file())
    for path in segments:
        with open(path, "rb") as segment:
            assert files[path] == hashlib.file_digest(segment, "sha256").hexdigest(), path
    reference = (["sha256sum", *segments] if have("sha256sum") else
                 ["python3", "-c", "import hashlib,sys\nfor p in sys.argv[1:]: hashlib.file_digest(open(p,'rb'),"
                  "'sha256')", *segments])
    hashed = timed(reference)
    compared = timed([*SEGTOOL, "replicas", *brokers])
    unhashed = timed([*SEGTOOL, "replicas", "--no-hash", *brokers])
    report("replicas, 3 x 1 GiB copies (headers + CRC-32C + sha256 of every file, diverged tail)", compared, hashed,
           "sha256sum of the three copies", target=1.5)
    report("replicas --no-hash, 3 x 1 GiB copies (headers + CRC-32C, diverged tail)", unhashed, hashed,
           "sha256sum of the three copies")
