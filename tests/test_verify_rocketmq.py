"""verify and rebuild-index on RocketMQ stores, against RocketMQ 4.9.8's own behaviour (the corpus).

Every case of the corpus: clean stores have no errors; each corruption is
reported where ``case.json`` / ``affected-message.json`` put it, and the
recovery prediction agrees with ``recovery.json`` (what ``DefaultMessageStore
.load()`` did on a copy); kill9-abort's unclean shutdown is described.  The
rebuilt IndexFiles are byte-identical to the ones RocketMQ rebuilt
(``expected/rebuilt-index/``) and answer key lookups like the broker's files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from segtool.rocketmq import store as rs
from segtool.errors import SegtoolError
from segtool.findings import Finding, Severity
from segtool.rocketmq import store_files as rmq
from segtool.engine.detect import detect
from segtool.formats.json_names import snake_case_keys
from segtool.rocketmq.store import index_file_name
from segtool.ops.rebuild_rocketmq import rebuild_rocketmq_index
from segtool.ops.verify import exit_code, verify
from segtool.ops.file_formats import CheckOptions, file_format
from tests.conftest import case_dirs, corpus_path, segtool


def _check_store_file(detected, commitlog_dir=None) -> dict:
    """verify's check of one store file, as its kind's format runs it."""
    return file_format(detected.kind).check(detected, CheckOptions(commitlog_dir=commitlog_dir))


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------


def _load(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _meta(case: Path) -> dict:
    return _load(case / "case.json")


def _is_unclean(case: Path) -> bool:
    return (case / "store" / "abort").exists()


def _corruption_items(case: Path) -> list[dict]:
    c = _meta(case).get("corruption")
    return [] if c is None else (c if isinstance(c, list) else [c])


def _commitlog_corruption(case: Path) -> bool:
    return any((case / "store" / "commitlog" / item.get("file", "")).is_file() for item in _corruption_items(case))


def _index_corruption(case: Path) -> bool:
    return any((case / "store" / "index" / item.get("file", "")).is_file() for item in _corruption_items(case))


def _cases(predicate):
    found = [pytest.param(c, id=c.name) for c in case_dirs("rocketmq") if predicate(c)]
    return found or [pytest.param(None, id="absent")]


def _need(case):
    if case is None:
        pytest.skip("no RocketMQ case of this kind (needs ../shared/corpus)")
    return case


_REPORTS: dict[str, dict] = {}


def _report(case: Path) -> dict:
    key = str(case)
    if key not in _REPORTS:
        _REPORTS[key] = verify([str(case / "store")])
    return _REPORTS[key]


def _files(report: dict, kind: str | None = None) -> dict[str, dict]:
    """relative path under store/ -> file result"""
    out = {}
    for item in report["files"]:
        if kind is None or item["kind"] == kind:
            out[item["path"].split("/store/", 1)[1]] = item
    return out


def _errors(item: dict) -> list[Finding]:
    return [p for p in item["problems"] if p.severity is Severity.ERROR]


def _clean_multi() -> Path:
    for case in case_dirs("rocketmq"):
        if case.name == "clean-multi":
            return case
    return corpus_path("rocketmq", "clean-multi")


def _clean_messages() -> list[dict]:
    """clean-multi's commitlog.jsonl (the corruption cases are copies of clean-multi)."""
    with open(_clean_multi() / "expected" / "commitlog.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --------------------------------------------------------------------------
# Clean stores
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases(lambda c: not _corruption_items(c) and not _is_unclean(c)))
def test_clean_store_has_no_errors(case):
    case = _need(case)
    report = _report(case)
    assert report["summary"]["problems"] == 0 and report["summary"]["unreadable"] == 0, [
        (f["path"], _errors(f)) for f in report["files"] if f["status"] != "ok" and f["status"] != "skipped"]
    kinds = {f["kind"] for f in report["files"]}
    assert {"rocketmq-commitlog", "rocketmq-consumequeue", "rocketmq-indexfile", "rocketmq-checkpoint"} <= kinds
    golden = _load(case / "expected" / "commitlog-files.json")
    commitlog = _files(report, "rocketmq-commitlog")
    for gold in golden["files"]:
        item = commitlog[f"commitlog/{gold['file']}"]
        assert item["messages"] == gold["messages"]
        assert item["first_phy_offset"] == gold["firstMessagePhyOffset"]
        assert item["last_phy_offset"] == gold["lastMessagePhyOffset"]
        assert item["end"]["file_offset"] == gold["end"]["fileOffset"]
        assert item["recovery"]["bytes_lost"] == 0 and item["recovery"]["messages_lost"] == 0
        assert not item["recovery"]["deleted"]
    # recovery ends where RocketMQ's load ended
    load = _load(case / "expected" / "_load.json")
    (checkpoint,) = _files(report, "rocketmq-checkpoint").values()
    assert checkpoint["store_recovery"]["max_phy_offset"] == load["maxPhyOffset"]
    # every index entry resolves to a message that carries its key
    for item in _files(report, "rocketmq-indexfile").values():
        assert item["entries_checked"] == item["entries"] > 0


@pytest.mark.parametrize("case", _cases(lambda c: not _corruption_items(c)))
def test_consume_queues_checked_against_the_commitlog(case):
    """Every ConsumeQueue file of the golden summary is verified, every unit against its message."""
    case = _need(case)
    summary = _load(case / "expected" / "consumequeue-summary.json")
    verified = _files(_report(case), "rocketmq-consumequeue")
    expected_files = {f"consumequeue/{q['topic']}/{q['queueId']}/{f.split(':')[0]}"
                      for q in summary["queues"] for f in q["files"]}
    assert set(verified) == expected_files
    assert all(not _errors(item) for item in verified.values())
    with open(case / "expected" / "consumequeue.jsonl", encoding="utf-8") as f:
        expected_units = sum(1 for line in f if line.strip())
    assert sum(item["units_checked"] for item in verified.values()) == expected_units


# --------------------------------------------------------------------------
# kill -9: described, not an error
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases(_is_unclean))
def test_unclean_shutdown_is_described(case):
    case = _need(case)
    meta = _meta(case)
    recovery = _load(case / "expected" / "recovery.json")
    report = _report(case)
    assert report["summary"]["problems"] == 0  # nothing is damaged: RocketMQ recovers without loss
    assert exit_code(report) == 0

    (checkpoint,) = _files(report, "rocketmq-checkpoint").values()
    predicted = checkpoint["store_recovery"]
    assert predicted["mode"] == "abnormal" and predicted["abort_file_exists"] is recovery["abortFileExists"]
    assert predicted["checkpoint"] == snake_case_keys(recovery["checkpointBeforeLoad"])
    assert predicted["max_phy_offset"] == recovery["maxPhyOffset"]
    assert predicted["commitlog_files_after_load"] == recovery["commitlogFilesAfterLoad"]
    before, after = recovery["indexFilesBeforeLoad"], recovery["indexFilesAfterLoad"]
    assert predicted["kept_index_files"] == [n for n in before if n in after]
    assert predicted["dropped_index_files"] == [n for n in before if n not in after]
    kinds = {p.kind.code for p in checkpoint["problems"]}
    assert {"unclean_shutdown", "stale_checkpoint"} <= kinds

    # the commitlog: where the data ends, the message the broker never dispatched, the empty file
    summary = meta["results_summary"]
    end = summary["commitlog_end_of_data"]
    commitlog = _files(report, "rocketmq-commitlog")
    files = [f.split(":")[0] for f in recovery["commitlogFilesBeforeLoad"]]
    holder = next(name for name in reversed(files) if int(name) <= end["phyOffset"]
                  and not commitlog[f"commitlog/{name}"]["recovery"]["deleted"])
    item = commitlog[f"commitlog/{holder}"]
    assert item["recovery"]["valid_bytes"] == end["fileOffset"] and item["recovery"]["bytes_lost"] == 0
    assert any(p.kind.code == "zero_tail" and p.byte_offset == end["fileOffset"] for p in item["problems"])
    last = summary["last_message_phyOffset"]
    for kind in ("not_in_consumequeue", "not_indexed"):
        (problem,) = [p for p in item["problems"] if p.kind.code == kind]
        assert problem.severity is Severity.INFO and problem.byte_offset == last - int(holder)
    after_names = {f.split(":")[0] for f in recovery["commitlogFilesAfterLoad"]}
    for name in files:
        deleted = commitlog[f"commitlog/{name}"]["recovery"]["deleted"]
        assert deleted == (name not in after_names)
        if deleted:
            assert commitlog[f"commitlog/{name}"]["recovery"]["messages_lost"] == 0
            kinds = {p.kind.code for p in commitlog[f"commitlog/{name}"]["problems"]}
            assert {"empty_file", "deleted_by_recovery"} <= kinds

    # the index file abnormal recovery deletes and rebuilds
    for name, item in _files(report, "rocketmq-indexfile").items():
        dropped = any(p.kind.code == "dropped_by_recovery" for p in item["problems"])
        assert dropped == (name.split("/")[-1] not in after)


# --------------------------------------------------------------------------
# CommitLog corruption
# --------------------------------------------------------------------------


def _expected_kind(corruption: dict) -> str:
    if "flippedByteFileOffset" in corruption:
        return "crc_mismatch"
    if "truncatedToLength" in corruption:
        return "truncated_message"
    if "zeroedFromFileOffset" in corruption:
        return "torn_message"
    raise AssertionError(f"unknown corruption {corruption}")


@pytest.mark.parametrize("case", _cases(_commitlog_corruption))
def test_commitlog_corruption_found_where_rocketmq_stops(case):
    case = _need(case)
    (corruption,) = _corruption_items(case)
    affected = _load(case / "expected" / "affected-message.json")
    recovery = _load(case / "expected" / "recovery.json")
    report = _report(case)
    assert exit_code(report) == 1
    item = _files(report, "rocketmq-commitlog")[f"commitlog/{affected['file']}"]
    assert item["status"] == "problems"
    assert affected["file"] == corruption["file"] and item["size"] == affected["fileLength"]
    offset = affected["fileOffset"]
    assert offset == corruption.get("fileOffset_of_message", corruption.get("cutMessageFileOffset"))
    first = min(_errors(item), key=lambda p: p.byte_offset if p.byte_offset is not None else 1 << 62)
    assert (first.kind.code, first.byte_offset) == (_expected_kind(corruption), offset)

    start = int(affected["file"])
    rec = item["recovery"]
    assert rec["valid_bytes"] == offset
    assert rec["rocketmq_loads"] is recovery["loadResult"]
    if recovery["loadResult"]:
        assert rec["valid_bytes"] == recovery["maxPhyOffset"] - start
    else:
        assert any(p.kind.code == "file_size" for p in _errors(item))
        sizes = dict(f.split(":") for f in recovery["commitlogFilesBeforeLoad"])
        assert item["size"] == int(sizes[affected["file"]]) == corruption["truncatedToLength"]

    decoded = affected["MessageDecoder.decode"]
    torn = decoded is None or not affected["checkMessageAndReturnSize_checkCRC_false"]["success"]
    # recovery drops the messages clean-multi held in the file from the cut (the ConsumeQueue still points at
    # those the damage zeroed or cut off)
    clean = [m for m in _clean_messages() if start <= m["phyOffset"] < start + (1 << 20)]
    assert rec["messages_lost"] == sum(1 for m in clean if m["phyOffset"] >= start + offset)
    if torn:  # the cut message is incomplete, and nothing after it is left: every message lost is gone
        assert rec["torn_messages"] == 1 and rec["messages_gone"] == rec["messages_lost"]
        assert rec["bytes_lost"] == corruption["bytesOfCutMessageKept"]
    else:  # a whole message fails the CRC check: it is gone, the messages after it are salvageable
        assert rec["torn_messages"] == 0 and rec["messages_gone"] == 1

    # later files: RocketMQ's recovery deletes them (truncateDirtyFiles)
    before = [f.split(":")[0] for f in recovery["commitlogFilesBeforeLoad"]]
    after = {f.split(":")[0] for f in recovery["commitlogFilesAfterLoad"]}
    clean = _clean_messages()
    for name in before:
        other = _files(report, "rocketmq-commitlog")[f"commitlog/{name}"]
        assert other["recovery"]["deleted"] == (name not in after)
        if name not in after:
            lost = sum(1 for m in clean if int(name) <= m["phyOffset"] < int(name) + other["size"])
            assert other["recovery"]["messages_lost"] == lost > 0
            assert [p.kind.code for p in _errors(other)] == ["deleted_by_recovery"]
        elif name != affected["file"]:
            assert not _errors(other) and other["recovery"]["bytes_lost"] == 0


# --------------------------------------------------------------------------
# IndexFile corruption (index-only cases: the CommitLog is clean-multi's)
# --------------------------------------------------------------------------

_PREV_KINDS = {"self-loop": "prev_self_loop", "forward-pointer-cycle": "prev_cycle",
               "forward-pointer-cycle-nonmatching-probe": "prev_cycle"}


def _index_expectations(case: Path) -> dict[str, set]:
    """file -> {(kind, byte offset)} from case.json"""
    expected: dict[str, set] = {}
    for item in _corruption_items(case):
        if "headerOffset" in item:  # indexCount rewritten in the header
            assert item["newIndexCount"] > item["entriesActuallyWritten"] + 1
            expected.setdefault(item["file"], set()).add(("index_count", item["headerOffset"]))
        else:
            expected.setdefault(item["file"], set()).add((_PREV_KINDS[item["kind"]], item["entryFileOffset"]))
    return expected


@pytest.mark.parametrize("with_commitlog", [False, True], ids=["index-only", "with-clean-commitlog"])
@pytest.mark.parametrize("case", _cases(_index_corruption))
def test_index_corruption_found(case, with_commitlog):
    case = _need(case)
    geometry = _meta(case)["index_geometry"]
    expected = _index_expectations(case)
    commitlog = _clean_multi() / "store" / "commitlog" if with_commitlog else None
    for path in sorted((case / "store" / "index").iterdir()):
        result = _check_store_file(detect(str(path)), commitlog_dir=commitlog)
        assert (result["geometry"]["hash_slot_num"], result["geometry"]["index_num"]) == (
            geometry["hashSlotNum"], geometry["indexNum"])
        found = {(p.kind.code, p.byte_offset) for p in _errors(result)}
        want = expected.get(path.name, set())
        assert want <= found, (path.name, found)
        if not want:
            assert not found
        # only the chain damage itself and what it makes unreachable; every entry still names its message
        assert {k for k, _ in found} <= {k for k, _ in want} | {"unreachable_entries"}
        if with_commitlog:
            assert result["entries_checked"] == result["entries"] > 0


def test_index_cycle_detection_is_bounded():
    """A cycle that never matches (RocketMQ spins forever) is reported, and verify returns."""
    cases = [c for c in case_dirs("rocketmq") if any(i.get("probeKey") for i in _corruption_items(c))]
    if not cases:
        pytest.skip("needs corrupt-index-prev-loop")
    (item,) = [i for i in _corruption_items(cases[0]) if i.get("probeKey")]
    result = _check_store_file(detect(str(cases[0] / "store" / "index" / item["file"])))
    (problem,) = [p for p in result["problems"] if p.kind.code == "prev_cycle"]
    assert f"slot {item['slot']}" in problem.message and "never returns" in problem.message


# --------------------------------------------------------------------------
# The CLI and the evidence
# --------------------------------------------------------------------------


def test_cli_verify_json_shape_and_exit_codes():
    clean = [c for c in case_dirs("rocketmq") if not _corruption_items(c) and not _is_unclean(c)]
    damaged = [c for c in case_dirs("rocketmq") if _commitlog_corruption(c)]
    if not clean or not damaged:
        pytest.skip("needs a clean and a damaged RocketMQ store")
    for case, code in ((clean[0], 0), (damaged[0], 1)):
        run = segtool("verify", str(case / "store"), "--json")
        assert run.returncode == code, run.stderr
        report = json.loads(run.stdout)
        assert set(report) >= {"files", "summary"}
        assert (report["summary"]["problems"] > 0) == (code == 1) and report["summary"]["unreadable"] == 0
        for item in report["files"]:
            assert {"path", "kind", "status", "problems"} <= set(item)
            if item["status"] == "skipped":
                continue
            assert len(item["sha256"]) == 64 and item["size"] == Path(item["path"]).stat().st_size
            for problem in item["problems"]:
                assert set(problem) == {"kind", "severity", "byte_offset", "offset", "message"}
                assert problem["severity"] in ("error", "info")
                assert problem["byte_offset"] is None or isinstance(problem["byte_offset"], int)
            if item["kind"] == "rocketmq-commitlog":
                assert {"valid_bytes", "bytes_lost", "messages_lost", "messages_gone"} <= set(item["recovery"])
    text = segtool("verify", str(damaged[0] / "store"))
    assert text.returncode == 1 and "PROBLEMS" in text.stdout


def test_verify_never_writes_the_evidence():
    case = next((c for c in case_dirs("rocketmq") if _is_unclean(c)), None)
    if case is None:
        pytest.skip("needs kill9-abort")
    store = case / "store"
    files = sorted(p for p in store.rglob("*") if p.is_file())
    before = {p: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files}
    verify([str(store)], deep=True)
    after = {p: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files}
    assert before == after and sorted(p for p in store.rglob("*") if p.is_file()) == files


def test_deep_checks_every_index_entry_and_inflates_bodies():
    case = _clean_multi()
    report = verify([str(case / "store")], deep=True)
    assert report["summary"]["problems"] == 0
    for item in _files(report, "rocketmq-indexfile").values():
        assert item["entries_checked"] == item["entries"]


def test_loose_commitlog_file_outside_a_store(tmp_path):
    """A single copied file: checked alone, recovery as if it were the store's only file."""
    case = next((c for c in case_dirs("rocketmq") if _commitlog_corruption(c)
                 and "flippedByteFileOffset" in _corruption_items(c)[0]), None)
    if case is None:
        pytest.skip("needs corrupt-body-crc")
    (corruption,) = _corruption_items(case)
    loose = tmp_path / corruption["file"]
    shutil.copyfile(case / "store" / "commitlog" / corruption["file"], loose)
    detected = detect(str(loose))
    assert detected.kind == "rocketmq-commitlog"  # by its magic
    result = _check_store_file(detected)
    at = corruption["fileOffset_of_message"]
    # the flipped message, and the range reading past it skips: that message's bytes exactly
    assert [(p.kind.code, p.byte_offset) for p in _errors(result)] == [("crc_mismatch", at), ("damaged_range", at)]
    assert result["recovery"]["valid_bytes"] == at
    after = [m for m in rmq.walk_commitlog(loose.read_bytes(), file_from_offset=int(corruption["file"]))
             if isinstance(m, dict) and m["fileOffset"] > at]
    salvage = result["recovery"]["salvage"]
    assert (salvage["messages"], salvage["first_phy_offset"], salvage["last_phy_offset"]) == (
        len(after), after[0]["phyOffset"], after[-1]["phyOffset"])


# --------------------------------------------------------------------------
# rebuild-index
# --------------------------------------------------------------------------


def _rebuild_cases():
    return _cases(lambda c: (c / "expected" / "rebuilt-index").is_dir())


@pytest.mark.parametrize("case", _rebuild_cases())
def test_rebuilt_index_files_are_rocketmqs(case, tmp_path):
    case = _need(case)
    geometry = _meta(case)["index_geometry"]
    out = tmp_path / "out"
    report = rebuild_rocketmq_index(case / "store", out)
    expected = sorted((case / "expected" / "rebuilt-index").iterdir())
    run = _load(case / "expected" / "rebuilt-index.run.json")
    assert report["dispatch"]["dispatched"] == run["dispatched"]
    assert len(run["indexFilesCreated"]) == len(expected) == len(report["files"])
    assert (report["geometry"]["hash_slot_num"], report["geometry"]["index_num"]) == (
        geometry["hashSlotNum"], geometry["indexNum"])
    written = sorted((out / "index").iterdir())
    assert [p.name for p in written] == [f["name"] for f in report["files"]]
    previous = None
    for item, path, gold in zip(report["files"], written, expected):
        data = path.read_bytes()
        assert data == gold.read_bytes(), (path.name, gold.name)  # content; names are creation times
        assert item["sha256"] == hashlib.sha256(data).hexdigest() and item["size"] == len(data)
        assert item["path"] == str(path)
        # deterministic names: the file's beginTimestamp, yyyyMMddHHmmssSSS UTC
        assert item["name"] == index_file_name(item["begin_timestamp"], previous)
        previous = item["name"]
        assert item["entries"] == item["index_count"] - 1
    assert [f["name"] for f in report["files"]] == sorted(f["name"] for f in report["files"])


def test_rebuilt_index_answers_like_the_brokers_files(tmp_path):
    case = _clean_multi()
    rebuild_rocketmq_index(case / "store", tmp_path / "out")
    lookups = _load(case / "expected" / "key-lookups.json")["lookups"]
    with rs.StoreView(tmp_path / "out", commitlog_dir=case / "store" / "commitlog", recover=False) as store:
        assert len(store.index_files) == len(list((case / "store" / "index").iterdir()))
        for gold in lookups:
            q = gold["query"]
            answer = store.query_offsets(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"],
                                         include_collisions=True)
            assert answer["index_phy_offsets"] == gold["phyOffsets"], q["id"]
            assert answer["query_message_phy_offsets"] == gold["queryMessagePhyOffsets"], q["id"]
            assert answer["index_last_update_timestamp"] == gold["indexLastUpdateTimestamp"]
            assert answer["index_last_update_phy_offset"] == gold["indexLastUpdatePhyoffset"]


def test_rebuilt_index_of_a_killed_broker_has_what_recovery_indexes(tmp_path):
    """kill9-abort: the broker's index misses the last message; the rebuild (like RocketMQ's own
    recovery) has it, so it answers as the index after RocketMQ's recovery (recovery.json)."""
    case = next((c for c in case_dirs("rocketmq") if _is_unclean(c)), None)
    if case is None:
        pytest.skip("needs kill9-abort")
    rebuild_rocketmq_index(case / "store", tmp_path / "out")
    recovery = _load(case / "expected" / "recovery.json")
    as_left = {g["query"]["id"]: g for g in _load(case / "expected" / "key-lookups.json")["lookups"]}
    differing = 0
    with rs.StoreView(tmp_path / "out", commitlog_dir=case / "store" / "commitlog", recover=False) as store:
        for gold in recovery["lookupsAfterLoad"]:
            q = gold["query"]
            answer = store.query_offsets(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"],
                                         include_collisions=True)
            assert answer["index_phy_offsets"] == gold["phyOffsets"], q["id"]
            assert answer["query_message_phy_offsets"] == gold["queryMessagePhyOffsets"], q["id"]
            differing += gold["phyOffsets"] != as_left[q["id"]]["phyOffsets"]
    assert differing  # and the broker's own files answer differently


def test_rebuild_refuses_output_inside_the_store_and_needs_a_target():
    case = _clean_multi()
    with pytest.raises(SegtoolError, match="inside the input directory"):
        rebuild_rocketmq_index(case / "store", case / "store" / "rebuilt")
    with pytest.raises(SegtoolError, match="--out"):
        rebuild_rocketmq_index(case / "store")
    with pytest.raises(SegtoolError):
        rebuild_rocketmq_index(case / "store", "/tmp/x", hash_slot_num=1000)


def test_rebuild_in_place_keeps_a_backup_outside_index(tmp_path):
    case = next((c for c in case_dirs("rocketmq") if _is_unclean(c)), None)
    if case is None:
        pytest.skip("needs kill9-abort")
    store = tmp_path / "store"
    shutil.copytree(case / "store", store)
    for p in store.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    old = {p.name: p.read_bytes() for p in (store / "index").iterdir()}
    report = rebuild_rocketmq_index(store, in_place=True)
    backup = Path(report["backup_dir"])
    assert backup.parent == store and backup.name.startswith("index.segtool-backup-")
    assert {p.name: p.read_bytes() for p in backup.iterdir()} == old
    expected = sorted((case / "expected" / "rebuilt-index").iterdir())
    now = sorted((store / "index").iterdir())
    assert [p.read_bytes() for p in now] == [p.read_bytes() for p in expected]  # only the new files remain
    assert sorted(report["removed"]) == sorted(str(store / "index" / n) for n in old if n not in {p.name for p in now})
    assert any("abort" in note for note in report["notes"])
    commitlog = sorted((store / "commitlog").iterdir())
    assert [(i["path"], i["size"], i["sha256"]) for i in report["inputs"]] == [
        (str(p), p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()) for p in commitlog]


@pytest.mark.slow  # seconds of CPU: the full tier's
def test_rebuild_with_default_geometry_matches_rocketmqs_420mb_file(tmp_path):
    meta_dir = _clean_multi() / "expected" / "rebuilt-index-default-geometry"
    if not meta_dir.is_dir():
        pytest.skip("needs the default-geometry golden")
    meta = _load(meta_dir / "default-geometry.json")
    g = meta["geometry"]
    report = rebuild_rocketmq_index(_clean_multi() / "store", tmp_path / "out", hash_slot_num=g["hashSlotNum"],
                                    index_num=g["indexNum"])
    (item,) = report["files"]
    assert item["size"] == meta["uncompressedSize"] and item["sha256"] == meta["uncompressedSha256"]
    assert item["index_count"] == meta["header"]["indexCount"]
    with gzip.open(meta_dir / meta["gzFile"]) as f:  # the golden itself, for good measure
        assert f.read(40) == Path(item["path"]).read_bytes()[:40]


def test_index_geometry_from_the_stores_other_files(tmp_path):
    """An index file without entries does not show its geometry; the store's other files do."""
    commitlog = _clean_multi() / "store" / "commitlog"
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    requests = list(rs.reput_dispatches(commitlog))[:40]
    names = iter(["20260101000000000", "20260101000000001", "20260101000000002", "20260101000000003"])
    build = rs.build_index_files(requests, 10, 30, name_for=lambda previous: next(names))  # not the 1:4 ratio
    empty = rmq.IndexFile.create("20270101000000000", 10, 30)
    empty.flush_header()
    for view in [*build.created, empty]:
        view.write(index_dir / view.name)
        view.close()
    for path in sorted(index_dir.iterdir()):
        result = _check_store_file(detect(str(path)), commitlog_dir=commitlog)
        assert (result["geometry"]["hash_slot_num"], result["geometry"]["index_num"]) == (10, 30)
        assert not _errors(result), result["problems"]
        if path.name == "20270101000000000":
            assert result["entries"] == 0 and any(p.kind.code == "geometry" for p in result["problems"])
        else:
            assert result["entries_checked"] == result["entries"] > 0
