"""Originals are never lost: every writing command, on real corpus data.

Each test copies a corpus case to a temporary directory first; the corpus itself is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import corpus_path, segtool


def _sha(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _kafka_logdir(tmp_path: Path, case: str) -> Path:
    logdir = tmp_path / "logs"
    shutil.copytree(corpus_path("kafka", case, "data"), logdir)
    return logdir


@pytest.fixture
def cache(tmp_path) -> dict:
    """An environment whose XDG cache is inside tmp_path (index-keys' default place)."""
    return dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))


# -- 1. two partitions' files of one name never land on one another ---------------------------

def test_trim_and_rebuild_keep_partition_directories_in_out(tmp_path):
    logdir = _kafka_logdir(tmp_path, "c02-unclean-hot-copy")
    first, second = sorted(p for p in logdir.iterdir() if p.is_dir())[:2]
    indexes = [first / "00000000000000000000.index", second / "00000000000000000000.index"]
    assert _sha(indexes[0]) != _sha(indexes[1])  # two different files of one name
    trimmed = segtool("trim", *indexes, "--out", tmp_path / "trimmed", "--json")
    assert trimmed.returncode == 0, trimmed.stderr
    for index in indexes:
        copy = tmp_path / "trimmed" / index.parent.name / index.name
        assert copy.read_bytes() == index.read_bytes()[:copy.stat().st_size]
    logs = [first / "00000000000000000000.log", second / "00000000000000000000.log"]
    rebuilt = segtool("rebuild-index", *logs, "--out", tmp_path / "rebuilt", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    written = [w["path"] for seg in json.loads(rebuilt.stdout)["segments"] for w in seg["written"]]
    assert len(written) == len(set(written)) == 4
    assert {Path(p).parent.name for p in written} == {first.name, second.name}


def test_rebuild_index_finds_partitions_at_any_depth_and_names_what_it_leaves(tmp_path):
    case = corpus_path("kafka", "c04-transactions")  # case/data/<partition>/: two levels down
    run = segtool("rebuild-index", case, "--out", tmp_path / "out", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    logs = sorted(str(p) for p in case.rglob("*.log"))
    assert sorted(seg["log"] for seg in report["segments"]) == logs
    others = {str(p) for p in case.rglob("*") if p.is_file() and p.suffix != ".log"}
    assert {item["path"] for item in report["skipped"]} == others


def test_the_same_file_named_twice_is_refused_before_anything_is_written(tmp_path):
    logdir = _kafka_logdir(tmp_path, "c01-multiseg-clean")
    index = next(logdir.glob("*/00000000000000000000.index"))
    run = segtool("trim", index, index, "--out", tmp_path / "out")
    assert run.returncode == 2 and "same output file" in run.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.index"))


# -- 2. no run overwrites an original, an earlier backup, or a file in --out ---------------------

def test_existing_output_is_refused_unless_force_and_then_backed_up(tmp_path):
    partition = next(_kafka_logdir(tmp_path, "c01-multiseg-clean").iterdir())
    out = tmp_path / "rebuilt"
    assert segtool("rebuild-index", partition, "--out", out).returncode == 0
    target = out / partition.name / "00000000000000000000.index"
    target.write_bytes(b"a file the user put there")
    again = segtool("rebuild-index", partition, "--out", out)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert target.read_bytes() == b"a file the user put there"
    forced = segtool("rebuild-index", partition, "--out", out, "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    replaced = next(w for seg in json.loads(forced.stdout)["segments"] for w in seg["written"]
                    if w["path"] == str(target))
    assert replaced["replaced_sha256"] == hashlib.sha256(b"a file the user put there").hexdigest()
    assert Path(replaced["backup"]).read_bytes() == b"a file the user put there"


def test_every_writing_command_twice_in_place_keeps_every_original(tmp_path, cache):
    """rebuild-index (Kafka and RocketMQ), trim, index-keys and salvage, each run twice: every byte replaced
    by either run is still on disk, found by the sha256 the reports give."""
    logdir = _kafka_logdir(tmp_path, "c02-unclean-hot-copy")
    partition = logdir / "c02-hot-idx1m-0"
    store = tmp_path / "store"
    shutil.copytree(corpus_path("rocketmq", "kill9-abort", "store"), store)
    originals = {**{str(partition / k): v for k, v in _digests(partition).items()},
                 **{str(store / k): v for k, v in _digests(store).items()}}
    replaced: list[dict] = []
    for _ in range(2):
        kafka = segtool("rebuild-index", partition, "--in-place", "--json", env=cache)
        assert kafka.returncode == 0, kafka.stderr
        replaced += [w for seg in json.loads(kafka.stdout)["segments"] for w in seg["written"]]
        trim = segtool("trim", partition, "--in-place", "--json", env=cache)
        assert trim.returncode == 0, trim.stderr
        replaced += [f["written"] for f in json.loads(trim.stdout)["files"]]
        rocketmq = segtool("rebuild-index", store, "--in-place", "--json", env=cache)
        assert rocketmq.returncode == 0, rocketmq.stderr
        report = json.loads(rocketmq.stdout)["stores"][0]
        saved = {_sha(p) for p in Path(report["backup_dir"]).iterdir()} if report["backup_dir"] else set()
        for written in report["files"]:  # a file replaced by other bytes is moved to backup_dir first
            assert written["replaced_sha256"] is None or written["replaced_sha256"] in saved
        keys = segtool("index-keys", partition, "--json", env=cache)
        assert keys.returncode == 0, keys.stderr
        assert not Path(json.loads(keys.stdout)["index_dir"]).is_relative_to(logdir)
        for source, out in ((partition, "salvaged-partition"), (store, "salvaged-store")):
            salvaged = segtool("salvage", source, "--out", tmp_path / out, "--force", "--json", env=cache)
            assert salvaged.returncode in (0, 1), salvaged.stderr
            report = json.loads(salvaged.stdout)
            replaced += [w for p in report["partitions"] for s in p["segments"] for w in s["written"]]
            replaced += [w for s in report["stores"] for w in s["written"]]
    on_disk = {_sha(p) for root in (partition, store) for p in root.rglob("*") if p.is_file()}
    for path, digest in originals.items():
        assert digest in on_disk, f"the original bytes of {path} are gone"
    kafka_replaced = [w for w in replaced if w["replaced_sha256"]]
    assert kafka_replaced, "the in-place runs replaced nothing"
    for written in kafka_replaced:
        assert written["backup"] and _sha(Path(written["backup"])) == written["replaced_sha256"]
    backups = [w["backup"] for w in kafka_replaced if w["backup"]]
    assert len(backups) == len(set(backups))  # the second run never reused the first run's backup


# -- 2b. an output inside an input's tree is refused -------------------------------------------

@pytest.mark.parametrize("target", ["parent", "partition", "beside"])
def test_out_inside_an_input_tree_is_refused(tmp_path, target):
    logdir = _kafka_logdir(tmp_path, "c01-multiseg-clean")
    partition = next(p for p in logdir.iterdir() if p.is_dir())
    before = _digests(logdir)
    given = partition / "00000000000000000000.log" if target == "beside" else partition
    out = {"parent": logdir, "partition": partition, "beside": logdir}[target]
    run = segtool("rebuild-index", given, "--out", out)
    assert run.returncode == 2 and "inside the input directory" in run.stderr, run.stderr
    assert _digests(logdir) == before
    link = tmp_path / "link-to-logs"
    link.symlink_to(logdir)
    through_link = segtool("trim", partition, "--out", link)
    assert through_link.returncode == 2 and _digests(logdir) == before


# -- 3. index-keys writes nothing into the log dir -----------------------------------------------

def test_index_keys_default_is_outside_the_log_dir_and_lookup_finds_it_anywhere(tmp_path, cache):
    logdir = _kafka_logdir(tmp_path, "c07-compacted")
    partition = logdir / "c07-compact-0"
    before = sorted(p.name for p in logdir.iterdir())
    built = segtool("index-keys", partition, "--json", env=cache)
    assert built.returncode == 0, built.stderr
    assert sorted(p.name for p in logdir.iterdir()) == before
    assert Path(json.loads(built.stdout)["index_dir"]).is_relative_to(tmp_path / "cache")
    assert segtool("verify", logdir, env=cache).returncode == 0
    found = json.loads(segtool("lookup", partition, "--key", "ck-044", "--json", env=cache).stdout)
    assert found["method"] == "key index" and found["offsets"]
    elsewhere = tmp_path / "elsewhere.keyindex"
    assert segtool("index-keys", partition, "--out", elsewhere, env=cache).returncode == 0
    other_cache = dict(cache, XDG_CACHE_HOME=str(tmp_path / "empty-cache"))
    scanned = json.loads(segtool("lookup", partition, "--key", "ck-044", "--json", env=other_cache).stdout)
    named = json.loads(segtool("lookup", partition, "--key", "ck-044", "--key-index", elsewhere, "--json",
                                env=other_cache).stdout)
    assert scanned["method"] == "scan" and named["method"] == "key index"
    assert named["records"] == scanned["records"] == found["records"]
    inside = segtool("index-keys", partition, "--out", logdir / "keys", env=cache)
    assert inside.returncode == 2 and not (logdir / "keys").exists()


# -- 4. a RocketMQ IndexFile is written sparse and its size is said ----------------------------

@pytest.mark.slow  # seconds of CPU: the full tier's
def test_rocketmq_index_file_is_sparse_and_its_sizes_are_reported(tmp_path):
    store = corpus_path("rocketmq", "clean-multi", "store")
    out = tmp_path / "rebuilt"
    run = segtool("rebuild-index", store, "--out", out, "--hash-slot-num", "5000000", "--index-num", "20000000",
                   "--json")
    assert run.returncode == 0, run.stderr
    files = json.loads(run.stdout)["stores"][0]["files"]
    assert files
    for written in files:
        path = Path(written["path"])
        assert written["size"] == path.stat().st_size == 40 + 5_000_000 * 4 + 20_000_000 * 20
        assert written["allocated_bytes"] == path.stat().st_blocks * 512
        if written["allocated_bytes"] >= written["size"]:
            pytest.skip(f"the file system under {tmp_path} does not keep holes")
        assert written["allocated_bytes"] < written["size"] // 10
        assert _sha(path) == written["sha256"]
    human = segtool("rebuild-index", store, "--out", tmp_path / "again", "--hash-slot-num", "5000000",
                     "--index-num", "20000000")
    assert "allocated on disk" in human.stdout
