"""rebuild-index against the indexes Kafka itself rebuilt (c09) and left after recovery (c11*)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from segtool.ops.rebuild import rebuild_index
from tests.conftest import CORPUS, case_dirs


def _recovery_cases():
    out = []
    for case in case_dirs("kafka"):
        for name in ("kafka-rebuilt", "kafka-recovery"):
            root = case / "expected" / name
            if root.exists():
                for part in sorted(root.iterdir()):
                    out.append(pytest.param(case, part, id=f"{case.name}/{name}/{part.name}"))
    return out


def _source_partition(case: Path, expected_part: Path) -> Path:
    parts = sorted((case / "data").iterdir())
    same = [p for p in parts if p.name == expected_part.name]
    return same[0] if same else parts[0]


@pytest.mark.parametrize("case,expected_part", _recovery_cases())
def test_rebuilt_indexes_are_byte_identical_to_kafkas(case, expected_part, tmp_path):
    source = _source_partition(case, expected_part)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in source.iterdir()}
    report = rebuild_index([str(source)], out_dir=str(tmp_path))
    produced_dir = tmp_path / source.name
    expected_files = sorted(p for p in expected_part.iterdir() if p.suffix in (".index", ".timeindex", ".txnindex"))
    assert expected_files
    for expected in expected_files:
        produced = produced_dir / expected.name
        assert produced.read_bytes() == expected.read_bytes(), expected.name
    # the evidence is untouched
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in source.iterdir()} == before
    if "kafka-recovery" in str(expected_part):
        expected_log = next(expected_part.glob("*.log"))
        (segment,) = [s for s in report["segments"] if s["log"].endswith(expected_log.name)]
        assert segment["valid_bytes"] == expected_log.stat().st_size


def test_txnindex_rebuilt_like_the_broker_wrote_it(tmp_path):
    cases = [c for c in case_dirs("kafka") if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    source = cases[0] / "data" / "c04-txn-0"
    rebuild_index([str(source)], out_dir=str(tmp_path))
    originals = sorted(source.glob("*.txnindex"))
    assert originals
    for original in originals:
        assert (tmp_path / source.name / original.name).read_bytes() == original.read_bytes()


def test_refuses_to_write_inside_the_input_without_in_place(tmp_path):
    import shutil

    from segtool.errors import SegtoolError

    source = tmp_path / "evidence"
    shutil.copytree(next((case_dirs("kafka")[0] / "data").iterdir()), source)
    before = sorted(p.name for p in source.rglob("*"))
    for out in (source, source / "sub"):
        with pytest.raises(SegtoolError):
            rebuild_index([str(source)], out_dir=str(out))
    assert sorted(p.name for p in source.rglob("*")) == before


def _broker_recovered_partitions():
    """Partitions whose indexes in data/ are the broker's own recovery output: case.json says the
    broker found .log files without indexes and rebuilt them at start (c08's legacy formats)."""
    out = []
    for case in case_dirs("kafka"):
        meta = json.loads((case / "case.json").read_text())
        if not (meta.get("log_files_unchanged_by_broker") and "recovering segment and rebuilding index files"
                in meta.get("produced_by", "")):
            continue
        for part in sorted((case / "data").iterdir()):
            topic = part.name.rsplit("-", 1)[0]
            interval = meta["topics"][topic]["effective"]["index.interval.bytes"]
            out.append(pytest.param(part, interval, id=f"{case.name}/{part.name}"))
    return out


@pytest.mark.parametrize("part,interval", _broker_recovered_partitions())
def test_rebuilt_legacy_indexes_equal_those_the_broker_rebuilt_at_start(part, interval, tmp_path):
    """v0, v1 and mixed-format segments with the topic's index.interval.bytes (1024 there)."""
    rebuild_index([str(part)], out_dir=str(tmp_path), index_interval_bytes=interval)
    brokers = sorted(p for p in part.iterdir() if p.suffix in (".index", ".timeindex"))
    assert brokers
    for original in brokers:
        assert (tmp_path / part.name / original.name).read_bytes() == original.read_bytes(), original.name


def test_log_dirs_holding_partitions_of_one_name_are_kept_apart(tmp_path):
    """Three log dirs that each hold a `c01-plain-*` partition: every partition's indexes land in a folder of
    its own log dir, none is written over another, and the report names exactly the files on disk."""
    cases = {c.name: c for c in case_dirs("kafka")}
    names = ("c01-multiseg-clean", "c09-index-rebuild", "c11a-crc-byte-flip")
    if not all(name in cases for name in names):
        pytest.skip("c01, c09 and c11a not available")
    log_dirs = [str(cases[name] / "data") for name in names]
    report = rebuild_index(log_dirs, out_dir=str(tmp_path / "out"), hash_inputs=False)
    written = sorted(item["path"] for segment in report["segments"] for item in segment["written"])
    on_disk = sorted(str(p) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written == on_disk and len(set(written)) == len(written)
    assert sorted(os.listdir(tmp_path / "out")) == ["1-data", "2-data", "3-data"]
    for segment in report["segments"]:
        log = Path(segment["log"])
        number = log_dirs.index(str(log.parent.parent)) + 1
        for item in segment["written"]:
            assert Path(item["path"]).parent == tmp_path / "out" / f"{number}-data" / log.parent.name
    one = rebuild_index(log_dirs[:1], out_dir=str(tmp_path / "one"), hash_inputs=False)  # one log dir: as before
    assert {Path(i["path"]).parent.parent for s in one["segments"] for i in s["written"]} == {tmp_path / "one"}
