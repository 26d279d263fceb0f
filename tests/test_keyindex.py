"""Kafka key lookups: the hash index answers exactly what a full scan answers."""

from __future__ import annotations

import os

import shutil

import pytest

from segtool.errors import SegtoolError
from segtool.kafka.log import BatchScan
from segtool.kafka.records import batch_records
from segtool.source import open_buffer
from segtool.ops.keyindex import index_keys, key_index_dir, lookup_kafka_key
from tests.conftest import case_dirs


def _partitions():
    out = []
    for case in case_dirs("kafka"):
        if case.name in ("c04-transactions", "c07-compacted", "c08-legacy-formats", "c01-multiseg-clean"):
            out.extend(pytest.param(p, id=f"{case.name}/{p.name}") for p in sorted((case / "data").iterdir()))
    return out


def _keys_by_scan(partition):
    keys = {}
    for log in sorted(partition.glob("*.log")):
        for batch in BatchScan(open_buffer(log)):
            if batch.is_control:
                continue
            for record in batch_records(batch):
                if record.key is not None:
                    keys.setdefault(record.key, []).append(record.offset)
    return keys


@pytest.mark.parametrize("source", _partitions())
def test_index_answers_like_a_scan(source, tmp_path):
    partition = tmp_path / source.name
    shutil.copytree(source, partition)
    expected = _keys_by_scan(partition)
    report = index_keys(str(partition))
    assert report["records_indexed"] == sum(len(v) for v in expected.values())
    assert not any(p.name.endswith("keyindex") for p in partition.iterdir()), "nothing is written inside"
    for key, offsets in list(expected.items())[:60]:
        text = key.decode("utf-8")
        answer = lookup_kafka_key(str(partition), text)
        assert answer["method"] == "key index"
        assert answer["offsets"] == sorted(offsets)
    assert lookup_kafka_key(str(partition), "no-such-key-anywhere")["offsets"] == []


def test_stale_index_falls_back_to_a_scan(tmp_path):
    source = _partitions()[0].values[0]
    partition = tmp_path / "p-0"
    shutil.copytree(source, partition)
    index_keys(str(partition))
    log = sorted(partition.glob("*.log"))[-1]
    log.write_bytes(log.read_bytes()[:-10])  # the segment changed after indexing
    answer = lookup_kafka_key(str(partition), "anything")
    assert answer["method"] == "scan" and "stale" in answer["note"]


def test_index_is_never_written_inside_the_partition(tmp_path):
    source = _partitions()[0].values[0]
    partition = tmp_path / "p-0"
    shutil.copytree(source, partition)
    for inside in (partition / "inside", tmp_path / "p-0.keyindex"):  # the partition, or its log dir
        with pytest.raises(SegtoolError):
            index_keys(str(partition), out_dir=str(inside))
    assert not os.path.realpath(key_index_dir(str(partition))).startswith(str(tmp_path))


def test_building_the_index_does_not_hold_the_records(tmp_path):
    """Memory grows with the number of keys, not with the bytes of the values (here 96 MiB)."""
    import subprocess
    import sys

    from tests.kafka_build import make_batch

    partition = tmp_path / "big-0"
    partition.mkdir()
    value = bytes(256 * 1024)
    with open(partition / f"{0:020d}.log", "wb") as log:
        for offset in range(384):
            log.write(make_batch(offset, [(b"key-%d" % offset, value)], 1_795_000_000_000 + offset))
    probe = ("import resource, sys; from segtool.ops.keyindex import index_keys; "
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
             "report = index_keys(sys.argv[1]); "
             "print(report['records_indexed'], (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)")
    done = subprocess.run([sys.executable, "-c", probe, str(partition)], capture_output=True, text=True, check=True)
    indexed, growth_mb = map(int, done.stdout.split())
    assert indexed == 384
    assert growth_mb < 32, f"peak RSS grew {growth_mb} MB while indexing 96 MiB of values"
