"""Edges of the one contract found by trying segtool as a new user would: several RocketMQ stores in
one rebuild, stores below a directory, unreadable entries in writing commands, conflicting flags,
paths that do not exist, a missing .index, a named key index that is not there.  Real corpus data."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import corpus_path, segtool


def _store_copy(tmp_path, case: str, name: str):
    target = tmp_path / name
    shutil.copytree(corpus_path("rocketmq", case, "store"), target)
    return target


def _partition_copy(tmp_path, case: str = "c01-multiseg-clean"):
    source = next(p for p in sorted(corpus_path("kafka", case, "data").iterdir()) if p.is_dir())
    target = tmp_path / "logs" / source.name
    shutil.copytree(source, target)
    return target


def _files_below(path) -> list[str]:
    return sorted(os.path.join(d, n) for d, _, names in os.walk(path) for n in names)


def test_several_stores_get_one_output_directory_each(tmp_path):
    first, second = _store_copy(tmp_path, "clean-multi", "s1"), _store_copy(tmp_path, "kill9-abort", "s2")
    run = segtool("rebuild-index", first, second, "--out", tmp_path / "out", "--json")
    assert run.returncode == 0, run.stderr
    written = _files_below(tmp_path / "out")
    assert written and all(os.path.dirname(p) in (str(tmp_path / "out" / "s1" / "index"),
                                                  str(tmp_path / "out" / "s2" / "index")) for p in written)
    assert {os.path.basename(os.path.dirname(os.path.dirname(p))) for p in written} == {"s1", "s2"}


def test_stores_of_one_name_given_side_by_side_are_kept_apart(tmp_path):
    """Two stores named `store` given side by side: numbered as given, as rebuild-index numbers log dirs."""
    first = _store_copy(tmp_path / "a", "clean-multi", "store")
    second = _store_copy(tmp_path / "b", "corrupt-body-crc", "store")
    run = segtool("rebuild-index", first, second, "--out", tmp_path / "out")
    # the second store's CommitLog is cut by its recovery (a body CRC fails): named, exit 1
    assert run.returncode == 1 and "the CommitLog is damaged" in run.stdout, run.stderr
    assert {os.path.relpath(os.path.dirname(p), tmp_path / "out") for p in _files_below(tmp_path / "out")} == \
        {os.path.join("1-store", "index"), os.path.join("2-store", "index")}


def test_a_store_below_a_directory_is_rebuilt_not_skipped(tmp_path):
    _store_copy(tmp_path / "evidence" / "host1", "clean-multi", "store")
    run = segtool("rebuild-index", tmp_path / "evidence", "--out", tmp_path / "out")
    assert run.returncode == 0, run.stderr
    assert _files_below(tmp_path / "out" / "index")


def test_writing_commands_name_an_unreadable_entry_and_do_the_rest(tmp_path):
    partition = _partition_copy(tmp_path)
    os.symlink("/nonexistent/segtool-test", partition / "dangling")
    os.symlink("..", partition / "loop")
    for command, extra in (("trim", ["--dry-run"]), ("rebuild-index", ["--out", str(tmp_path / "rebuilt")])):
        run = segtool(command, partition, *extra)
        assert run.returncode == 2, (command, run.stderr)
        assert "dangling" in run.stderr and "loop" in run.stderr and "Traceback" not in run.stderr
        assert "00000000000000000000" in run.stdout  # the readable files were processed
    assert _files_below(tmp_path / "rebuilt")


def test_out_and_in_place_together_are_a_usage_error(tmp_path):
    partition = _partition_copy(tmp_path)
    before = {p: os.path.getmtime(p) for p in _files_below(partition)}
    for command in ("trim", "rebuild-index"):
        run = segtool(command, partition, "--out", tmp_path / "out", "--in-place")
        assert run.returncode == 2 and "not both" in run.stderr
    assert {p: os.path.getmtime(p) for p in _files_below(partition)} == before


@pytest.mark.parametrize("args", [["rebuild-index", "/nonexistent/x.log", "--out", "/tmp/segtool-nowhere"],
                                  ["index-keys", "/nonexistent/orders-0"],
                                  ["verify", "/nonexistent/orders-0"],
                                  ["lookup", "/nonexistent/orders-0", "--offset", "0"]])
def test_a_path_that_does_not_exist_says_so(args):
    run = segtool(*args)
    assert run.returncode == 2 and "no such file or directory" in run.stderr, run.stderr


def test_a_missing_offset_index_is_named_and_no_false_error_on_its_time_index(tmp_path):
    partition = _partition_copy(tmp_path)
    index = sorted(partition.glob("*.index"))[-1]
    index.unlink()
    report = segtool("verify", partition, "--json")
    import json

    items = {os.path.basename(i["path"]): i for i in json.loads(report.stdout)["files"]}
    timeindex = items[index.name.replace(".index", ".timeindex")]
    assert timeindex["status"] == "ok", timeindex["problems"]
    assert [p["kind"] for p in timeindex["problems"]] == ["missing_index"]
    assert str(index) in timeindex["problems"][0]["message"]
    floor = segtool("lookup", partition, "--offset", index.name.split(".")[0], "--floor", "--json")
    assert "does not exist" in json.loads(floor.stdout)["notes"][0]


def test_a_named_key_index_must_be_there(tmp_path):
    partition = _partition_copy(tmp_path)
    run = segtool("lookup", partition, "--key", "x", "--key-index", tmp_path / "nowhere")
    assert run.returncode == 2 and "no such file or directory" in run.stderr
    (tmp_path / "empty").mkdir()
    run = segtool("lookup", partition, "--key", "x", "--key-index", tmp_path / "empty")
    assert run.returncode == 2 and "not a key index" in run.stderr


def test_lookup_flags_that_do_not_fit_are_usage_errors(tmp_path):
    partition = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    assert segtool("lookup", partition, "--offset", "5", "--floor", "--ceiling").returncode == 2
    assert segtool("lookup", partition, "--offset", "5", "--topic", "T").returncode == 2


def test_scan_refuses_to_write_into_the_log_dir_of_its_input(tmp_path):
    pytest.importorskip("pyarrow")
    partition = _partition_copy(tmp_path)
    run = segtool("scan", partition, "--out", partition.parent, "--engine", "local")
    assert run.returncode == 2 and "inside the input directory" in run.stderr
    assert sorted(os.listdir(partition.parent)) == [partition.name]


def test_a_rerun_that_writes_the_same_bytes_leaves_files_alone(tmp_path):
    import json

    partition = _partition_copy(tmp_path)
    first = json.loads(segtool("rebuild-index", partition, "--in-place", "--index-interval-bytes", "1024",
                               "--json").stdout)
    changed = [w for s in first["segments"] for w in s["written"] if not w["unchanged"]]
    assert changed and all(w["backup"] and os.path.exists(w["backup"]) for w in changed)
    backups = sorted(p for p in os.listdir(partition) if "segtool-backup" in p)
    again = json.loads(segtool("rebuild-index", partition, "--in-place", "--index-interval-bytes", "1024",
                               "--json").stdout)
    written = [w for s in again["segments"] for w in s["written"]]
    assert written and all(w["unchanged"] and w["backup"] is None and w["replaced_sha256"] is None for w in written)
    assert sorted(p for p in os.listdir(partition) if "segtool-backup" in p) == backups


def test_lookups_on_a_segment_with_a_zero_tail_answer_from_what_recovery_keeps():
    """A hot copy's last segment ends in zeros: lookups answer from the batches before them, as the
    broker does after its recovery truncates there, and say so."""
    import json

    partition = corpus_path("kafka", "c11c-zero-tail-64k", "data", "c01-plain-0")
    log = json.loads(segtool("verify", partition, "--json", "--no-hash").stdout)["files"]
    last_offset = next(f for f in log if f["path"].endswith(".log"))["last_offset"]
    first = segtool("lookup", partition, "--offset", "0", "--json")
    # the record is there; the answer names the cut the load makes (a problem found: 1)
    assert first.returncode == 1 and json.loads(first.stdout)["recovery_cut"]["byte"] == 129462, first.stderr
    latest = json.loads(segtool("lookup", partition, "--timestamp", "latest", "--json").stdout)
    assert latest["offset"] == last_offset + 1
    assert any("truncates" in note for note in latest["notes"])
    beyond = segtool("lookup", partition, "--offset", str(last_offset + 1))
    assert beyond.returncode == 1 and "Traceback" not in beyond.stderr


def test_forced_rocketmq_rebuild_moves_only_what_it_replaces_out_of_the_index_directory(tmp_path):
    """A broker loads every file of index/: a replaced file is moved beside it, not copied into it; a
    rerun that writes the same bytes moves nothing and makes no backup folder (an IndexFile of the
    default geometry is 420 MB, which a copy per run piled up)."""
    import json

    store = corpus_path("rocketmq", "clean-multi", "store")
    out = tmp_path / "out"
    geometry = ["--index-num", "2000", "--hash-slot-num", "500"]
    assert segtool("rebuild-index", store, "--out", out, *geometry).returncode == 0
    first = {name: (out / "index" / name).read_bytes() for name in os.listdir(out / "index")}
    same = segtool("rebuild-index", store, "--out", out, *geometry, "--force", "--json")
    assert same.returncode == 0, same.stderr
    report = json.loads(same.stdout)["stores"][0]
    assert report["backup_dir"] is None and all(f["unchanged"] for f in report["files"])
    assert sorted(os.listdir(out)) == ["index"]
    other = segtool("rebuild-index", store, "--out", out, "--index-num", "3000", "--hash-slot-num", "700", "--force",
                    "--json")
    assert other.returncode == 0, other.stderr
    report = json.loads(other.stdout)["stores"][0]
    assert sorted(os.listdir(out / "index")) == sorted(f["name"] for f in report["files"])
    backup = report["backup_dir"]
    assert backup and os.path.dirname(backup) == str(out)
    assert {name: (out / backup / name).read_bytes() for name in os.listdir(backup)} == first
    for written in report["files"]:  # a file of the same name was replaced: its backup is named
        assert written["backup"] == (os.path.join(backup, written["name"]) if written["name"] in first else None)
    assert sorted(report["removed"]) == sorted(str(out / "index" / name) for name in first
                                               if name not in {f["name"] for f in report["files"]})
    text = segtool("rebuild-index", store, "--out", out, "--force")
    assert "the store's index/" not in text.stdout


def test_carve_of_an_image_into_a_folder_beside_it_as_its_help_shows(tmp_path):
    """`segtool carve /cases/42/disk.img --out /cases/42/carved`: a file no broker wrote guards only
    itself; a broker's file guards its directory (a segment's partition, where a broker would load
    what is written), and no refusal offers --in-place to a command that has none."""
    case = tmp_path / "cases" / "42"
    case.mkdir(parents=True)
    image = case / "disk.img"
    image.write_bytes(bytes(4096) + _log_bytes("c01-multiseg-clean") + bytes(4096))
    run = segtool("carve", image, "--out", case / "carved")
    assert run.returncode == 0, run.stderr
    assert (case / "carved" / "finds.jsonl").stat().st_size > 0
    assert image.read_bytes()[4096:-4096] == _log_bytes("c01-multiseg-clean")
    partition = _partition_copy(tmp_path)
    segment = partition / "00000000000000000000.log"
    inside = segtool("carve", segment, "--out", partition / "carved")
    assert inside.returncode == 2 and "inside the input directory" in inside.stderr
    assert "--in-place" not in inside.stderr  # carve has none to offer
    assert not (partition / "carved").exists()


def _log_bytes(case: str) -> bytes:
    return next(corpus_path("kafka", case, "data").glob("*/00000000000000000000.log")).read_bytes()


def test_a_zero_byte_commitlog_is_nothing_found(tmp_path):
    commitlog = tmp_path / "store" / "commitlog"
    commitlog.mkdir(parents=True)
    (commitlog / "00000000000000000000").write_bytes(b"")
    for given in (commitlog / "00000000000000000000", tmp_path / "store"):
        run = segtool("scan", given, "--out", tmp_path / f"scan-{given.name}", "--workers", "1")
        assert run.returncode == 1 and "0 rows" in run.stdout, run.stderr


@pytest.mark.parametrize("command", ["groups", "transactions"])
def test_groups_and_transactions_name_a_missing_path_as_missing(command, tmp_path):
    run = segtool(command, tmp_path / "absent")
    assert run.returncode == 2 and "no such file or directory" in run.stderr, run.stderr


def test_verify_index_only_names_a_garbage_entry_by_its_place_in_the_index(tmp_path):
    """Every byte of a real .index inverted: entry 0 points before the log's start; the error names the
    index file at that entry's byte, never a negative byte."""
    partition = _partition_copy(tmp_path)
    index = partition / "00000000000000000000.index"
    index.write_bytes(bytes(b ^ 0xFF for b in index.read_bytes()))
    run = segtool("dump", "--format", "kafka", "--verify-index-only", index)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"{index}: byte 0: index entry 0 " in run.stderr and "byte -" not in run.stderr, run.stderr
