"""`segtool salvage`: every intact batch or message written back, with offsets and bytes unchanged.

Expected survivors are always derived from the original bytes (a corpus case's clean source,
or the file a test damaged itself): a batch or message survives when its exact bytes are still
in the damaged copy.  The corpus is never written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from segtool.rocketmq import store_files as rmq
from segtool.kafka.log import BatchScan
from tests.conftest import corpus_path, segtool

SEGMENT = "00000000000000000000.log"


def _batches(log: Path) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, bytes) of every batch of a whole, valid segment."""
    data = log.read_bytes()
    return [(batch.base_offset, batch.last_offset, data[batch.position:batch.position + batch.size])
            for batch in BatchScan(data, path=str(log))]


def _salvage(*args) -> tuple[int, dict]:
    run = segtool("salvage", *args, "--json")
    assert run.returncode in (0, 1), run.stderr
    return run.returncode, json.loads(run.stdout)


def _verify_clean(out: Path) -> None:
    """verify finds no problem and its recovery prediction drops nothing."""
    run = segtool("verify", out, "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0, [(f["path"], f["problems"]) for f in report["files"] if f["status"] != "ok"]
    for item in report["files"]:
        assert not (item.get("recovery") or {}).get("bytes_lost"), item


def _expected_ranges(damaged: bytes, intact: list[bytes]) -> list[tuple[int, int]]:
    """The byte ranges of ``damaged`` that none of the intact batches covers (found where they now are)."""
    ranges, position = [], 0
    for batch in intact:
        start = damaged.find(batch, position)
        if start > position:
            ranges.append((position, start))
        position = start + len(batch)
    if position < len(damaged):
        ranges.append((position, len(damaged)))
    return ranges


# -- Kafka: clean corpus cases come back byte for byte ------------------------------------------

@pytest.mark.parametrize("case", ["c01-multiseg-clean", "c04-transactions", "c08-legacy-formats"])
def test_a_clean_log_dir_comes_back_byte_for_byte(tmp_path, case):
    data = corpus_path("kafka", case, "data")
    code, report = _salvage(data, "--out", tmp_path / "out")
    assert code == 0 and report["summary"]["nothing_lost"]
    logs = sorted(data.rglob("*.log"))
    assert [s["log"] for p in report["partitions"] for s in p["segments"]] == [str(p) for p in logs]
    for log in logs:
        assert (tmp_path / "out" / log.parent.name / log.name).read_bytes() == log.read_bytes()
    rebuilt = segtool("rebuild-index", data, "--out", tmp_path / "rebuilt")
    assert rebuilt.returncode == 0, rebuilt.stderr
    for index in sorted((tmp_path / "rebuilt").rglob("*index")):  # the indexes Kafka's recovery writes
        assert (tmp_path / "out" / index.parent.name / index.name).read_bytes() == index.read_bytes()
    written = {c["written"]["path"] for p in report["partitions"] for c in p["copied"]}
    assert written == {str(tmp_path / "out" / f.parent.name / f.name)
                       for f in data.rglob("*") if f.name in ("partition.metadata", "leader-epoch-checkpoint")}
    assert {i["path"] for i in report["inputs"]} >= {str(p) for p in logs}
    assert not list((tmp_path / "out").rglob("*.snapshot"))
    _verify_clean(tmp_path / "out")


# -- Kafka: damaged corpus cases keep every intact batch ---------------------------------------

@pytest.mark.parametrize("case", ["c11a-crc-byte-flip", "c11b-truncated-last-batch", "c11c-zero-tail-64k"])
def test_a_damaged_corpus_segment_keeps_every_intact_batch(tmp_path, case):
    original = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0", SEGMENT)  # what c11 was made from
    damaged_log = corpus_path("kafka", case, "data", "c01-plain-0", SEGMENT)
    damaged = damaged_log.read_bytes()
    intact = [b for b in _batches(original) if b[2] in damaged]
    assert len(intact) < len(_batches(original)) or len(damaged) > original.stat().st_size
    code, report = _salvage(corpus_path("kafka", case, "data"), "--out", tmp_path / "out")
    assert code == 1 and not report["summary"]["nothing_lost"]
    out_log = tmp_path / "out" / "c01-plain-0" / SEGMENT
    assert _batches(out_log) == intact
    partition = report["partitions"][0]
    ranges = [(r["first_byte"], r["last_byte"] + 1) for r in partition["damaged_ranges"]]
    assert ranges == _expected_ranges(damaged, [b[2] for b in intact])
    assert partition["batches_kept"] == len(intact)
    _verify_clean(tmp_path / "out")


# -- Kafka: damage made here, in the middle of a real segment ----------------------------------

def _damage(data: bytes, kind: str) -> bytes:
    middle = len(data) // 2
    if kind == "zero":
        return data[:middle] + bytes(3000) + data[middle + 3000:]
    if kind == "flip":
        return data[:middle] + bytes([data[middle] ^ 0x20]) + data[middle + 1:]
    if kind == "cut":
        return data[:middle] + data[middle + 1000:]
    if kind == "header":  # a batch's length field: the framing itself is wrong
        first = _batches_at(data)[10]
        return data[:first + 8] + bytes([0x7F]) + data[first + 9:]
    return _damage(_damage(_damage(data[:len(data) // 3], "flip") + data[len(data) // 3:], "zero"), "cut")


def _batches_at(data: bytes) -> list[int]:
    return [b.position for b in BatchScan(data)]


@pytest.mark.parametrize("kind", ["zero", "flip", "cut", "header", "all"])
def test_generated_damage_keeps_every_intact_batch_with_its_offsets(tmp_path, kind):
    source = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    partition = tmp_path / "evidence" / "c01-plain-0"
    partition.mkdir(parents=True)
    original = _batches(source / SEGMENT)
    damaged = _damage((source / SEGMENT).read_bytes(), kind)
    (partition / SEGMENT).write_bytes(damaged)
    intact = [b for b in original if b[2] in damaged]
    assert 0 < len(intact) < len(original)
    code, report = _salvage(partition, "--out", tmp_path / "out")
    assert code == 1
    assert _batches(tmp_path / "out" / "c01-plain-0" / SEGMENT) == intact  # bytes and offsets unchanged
    result = report["partitions"][0]
    ranges = [(r["first_byte"], r["last_byte"] + 1) for r in result["damaged_ranges"]]
    assert ranges == _expected_ranges(damaged, [b[2] for b in intact])
    kept = {offset for first, last, _ in intact for offset in range(first, last + 1)}
    lost = {offset for first, last, _ in original for offset in range(first, last + 1)} - kept
    reported = {offset for r in result["offset_ranges_lost"]
                for offset in range(r["first_offset"], r["last_offset"] + 1)}
    assert reported == lost
    _verify_clean(tmp_path / "out")


def test_a_copy_of_a_batch_is_dropped_and_an_overlapping_one_reported(tmp_path):
    source = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0", SEGMENT)
    original = _batches(source)
    last_base = original[-1][0]
    partition = tmp_path / "evidence" / "c01-plain-0"
    partition.mkdir(parents=True)
    (partition / SEGMENT).write_bytes(source.read_bytes())
    # a second segment that holds the last batch again, then a batch claiming offsets inside it (the v2
    # CRC does not cover the base offset, so the moved batch still passes its checksum)
    moved = (last_base + 1).to_bytes(8, "big") + original[3][2][8:]
    (partition / f"{last_base:020d}.log").write_bytes(original[-1][2] + moved)
    code, report = _salvage(partition, "--out", tmp_path / "out")
    result = report["partitions"][0]
    assert code == 1 and result["duplicates_dropped"] == 1
    assert [(c["first_offset"], c["position"]) for c in result["conflicts"]] == [(last_base + 1, len(original[-1][2]))]
    assert _batches(tmp_path / "out" / "c01-plain-0" / SEGMENT) == original[:-1]
    assert _batches(tmp_path / "out" / "c01-plain-0" / f"{last_base:020d}.log") == [original[-1]]
    _verify_clean(tmp_path / "out")


# -- RocketMQ ---------------------------------------------------------------------------------

def _messages(commitlog: Path) -> list[tuple[str, dict, bytes]]:
    """(file name, message, its bytes) of every message of a clean CommitLog."""
    out = []
    for _, path in rmq.list_mapped_files(commitlog):
        data = path.read_bytes()
        for step in rmq.walk_commitlog(data, file=path.name, digests=False, decompress=False):
            if isinstance(step, dict):
                out.append((path.name, step, data[step["fileOffset"]:step["fileOffset"] + step["totalSize"]]))
    return out


def _lookup(*args) -> dict:
    """A lookup's answer: found (exit 0), or found beside the recovery cut it names (exit 1, as a salvaged
    store with a hole where a damaged message was is cut there by RocketMQ's recovery)."""
    run = segtool("lookup", *args, "--json")
    answer = json.loads(run.stdout)
    assert run.returncode == (1 if "recovery_cut" in answer else 0), run.stderr
    return answer


@pytest.mark.parametrize("case", ["clean-multi", "corrupt-body-crc", "corrupt-torn-tail",
                                  "corrupt-truncated-commitlog"])
def test_a_store_keeps_every_intact_message_at_its_physical_offset(tmp_path, case):
    clean = _messages(corpus_path("rocketmq", "clean-multi", "store", "commitlog"))
    store = corpus_path("rocketmq", case, "store")
    damaged = {p.name: p.read_bytes() for _, p in rmq.list_mapped_files(store / "commitlog")}
    intact = [(name, m, data) for name, m, data in clean
              if damaged[name][m["fileOffset"]:m["fileOffset"] + m["totalSize"]] == data]
    out = tmp_path / "out"
    code, report = _salvage(store, "--out", out)
    assert code == (0 if case == "clean-multi" else 1)
    result = report["stores"][0]
    assert result["messages_kept"] == len(intact)
    for name, m, data in intact:
        written = (out / "commitlog" / name).read_bytes()
        assert written[m["fileOffset"]:m["fileOffset"] + m["totalSize"]] == data
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "salvaged-messages.parquet").to_pydict()
    assert sorted(rows["physical_offset"]) == sorted(int(name) + m["fileOffset"] for name, m, _ in intact)
    # the broker's own lookups find survivors from the rebuilt ConsumeQueue and IndexFile
    for name, m, _ in (intact[0], intact[len(intact) // 2], intact[-1]):
        phy = int(name) + m["fileOffset"]
        unit = _lookup(out, "--topic", m["topic"], "--queue-id", m["queueId"], "--queue-offset", m["queueOffset"])
        assert unit["phy_offset"] == phy
    name, keyed = next((name, m) for name, m, _ in reversed(intact) if m["KEYS"])
    found = _lookup(out, "--topic", keyed["topic"], "--key", keyed["KEYS"].split(" ")[0])
    assert int(name) + keyed["fileOffset"] in found["phy_offsets"]
    run = segtool("verify", out, "--json")
    files = json.loads(run.stdout)["files"]
    assert all(f["status"] == "ok" for f in files if f["kind"] in ("rocketmq-consumequeue", "rocketmq-indexfile"))
    commitlog = [f for f in files if f["kind"] == "rocketmq-commitlog"]
    if result["notes"]:  # a hole with survivors after it: zeros there, which RocketMQ's recovery stops at
        first = result["damaged_ranges"][0]["first_byte"]
        assert any(p["kind"] == "damaged_range" and p["byte_offset"] == first and "zero" in p["message"]
                   for f in commitlog for p in f["problems"])
    else:
        assert run.returncode == 0 and all(f["status"] == "ok" for f in commitlog)


def test_clean_store_comes_back_identical(tmp_path):
    store = corpus_path("rocketmq", "clean-multi", "store")
    code, report = _salvage(store, "--out", tmp_path / "out")
    assert code == 0
    for path in list((store / "commitlog").iterdir()) + list((store / "consumequeue").rglob("*")):
        if path.is_file():
            assert (tmp_path / "out" / path.relative_to(store)).read_bytes() == path.read_bytes(), path
    rebuilt = sorted(p.read_bytes() for p in (tmp_path / "out" / "index").iterdir())
    assert rebuilt == sorted(p.read_bytes() for p in (store / "index").iterdir())


# -- the writing rules --------------------------------------------------------------------------

def test_salvage_refuses_its_input_tree_and_existing_files_and_backs_up_with_force(tmp_path):
    partition = tmp_path / "evidence" / "c01-plain-0"
    shutil.copytree(corpus_path("kafka", "c11a-crc-byte-flip", "data", "c01-plain-0"), partition)
    inside = segtool("salvage", partition, "--out", tmp_path / "evidence")
    assert inside.returncode == 2 and "inside the input directory" in inside.stderr
    assert sorted(p.name for p in (tmp_path / "evidence").iterdir()) == ["c01-plain-0"]
    first = segtool("salvage", partition, "--out", tmp_path / "out")
    assert first.returncode == 1, first.stderr
    target = tmp_path / "out" / "c01-plain-0" / "00000000000000000000.index"
    target.write_bytes(b"put there by a person")
    again = segtool("salvage", partition, "--out", tmp_path / "out")
    assert again.returncode == 2 and "already exists" in again.stderr
    assert target.read_bytes() == b"put there by a person"
    code, report = _salvage(partition, "--out", tmp_path / "out", "--force")
    replaced = [w for s in report["partitions"][0]["segments"] for w in s["written"] if w["replaced_sha256"]]
    assert [Path(w["backup"]).read_bytes() for w in replaced] == [b"put there by a person"]


def test_partitions_and_stores_in_one_run_go_each_to_their_place(tmp_path):
    log_dir = corpus_path("kafka", "c01-multiseg-clean", "data")
    run = segtool("salvage", log_dir, corpus_path("rocketmq", "clean-multi", "store"), "--out", tmp_path / "out")
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [p.name for p in log_dir.iterdir() if p.is_dir()] + ["store"])
    assert any((tmp_path / "out" / "store" / "commitlog").iterdir())
