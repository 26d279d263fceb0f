"""verify against the corpus: clean cases are clean, each corruption is found where it is,
and the recovery prediction agrees with what Kafka's own recovery did."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from segtool.findings import Severity
from segtool.ops.verify import verify
from tests.conftest import case_dirs, segtool

CLEAN = {"c01-multiseg-clean", "c03-codecs", "c04-transactions", "c05-logappendtime", "c06-ooo-timestamps",
         "c07-compacted", "c08-legacy-formats", "c09-index-rebuild", "c10-consumer-offsets"}


def _cases(names=None):
    return [pytest.param(c, id=c.name) for c in case_dirs("kafka") if names is None or c.name in names]


def _case_json(case: Path) -> dict:
    return json.loads((case / "case.json").read_text())


def _deep_records(case: Path, root: str, part: str, name: str) -> int:
    golden = case / "expected" / "dump" / root / part / f"{name}.deep-iteration.print-data-log.stdout"
    return sum(1 for line in golden.read_text().splitlines() if line.startswith("| offset:"))


def test_sha256_of_hashes_every_slice_of_the_mapping(monkeypatch, tmp_path):
    """Inputs are hashed from the mapping in slices (released as they go): every byte counts once."""
    from segtool import source

    monkeypatch.setattr(source, "HASH_CHUNK", 3 * 4096)
    sample = Path(__file__).parent.parent / "sample_data" / "kafka" / "c04-transactions"
    for log in sorted(sample.rglob("*.log")):
        assert source.sha256_of(log) == hashlib.sha256(log.read_bytes()).hexdigest()
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert source.sha256_of(empty) == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("case", _cases(CLEAN))
def test_clean_cases_have_no_errors(case):
    report = verify([str(case / "data")])
    assert report["summary"]["problems"] == 0 and report["summary"]["unreadable"] == 0
    for item in report["files"]:
        assert item["sha256"] == hashlib.sha256(Path(item["path"]).read_bytes()).hexdigest()
        if item["kind"] == "kafka-log":
            assert item["recovery"]["bytes_lost"] == 0


@pytest.mark.parametrize("case", [c for c in case_dirs("kafka") if (c / "expected" / "kafka-recovery").exists()],
                         ids=lambda c: c.name)
def test_recovery_prediction_matches_kafkas_recovery(case):
    meta = _case_json(case)["corruption"]
    recovered_dir = next((case / "expected" / "kafka-recovery").iterdir())
    report = verify([str(case / "data")])
    (log,) = [f for f in report["files"] if f["kind"] == "kafka-log"]
    assert log["status"] == "problems"
    assert log["recovery"]["valid_bytes"] == meta["recovery"]["log_size_after"]
    assert log["recovery"]["bytes_lost"] == meta["recovery"]["log_size_before"] - meta["recovery"]["log_size_after"]
    part = Path(log["path"]).parent.name
    name = Path(log["path"]).name
    before = _deep_records(case, "data", part, name)
    after = _deep_records(case, "kafka-recovery", recovered_dir.name, name)
    # records_lost counts every offset recovery drops: the whole batches kafka-dump-log still lists there, and
    # the offsets a torn last batch's header declares (case.json names that batch)
    torn = meta.get("last_batch_last_offset", -1) - meta.get("last_batch_base_offset", 0) + 1
    assert log["recovery"]["torn_batch_records"] == torn
    assert log["recovery"]["records_lost"] == before - after + torn
    first_error = min(p.byte_offset for p in log["problems"] if p.severity is Severity.ERROR)
    assert first_error == meta["recovery"]["log_size_after"]


def test_index_corruptions_are_found():
    found = {}
    for case in case_dirs("kafka"):
        if case.name in ("c11d-index-entries-swapped", "c11e-timeindex-ts-decreased", "c11f-index-pos-mid-batch"):
            report = verify([str(case / "data")])
            found[case.name] = {p.kind.code for f in report["files"] for p in f["problems"]
                                if p.severity is Severity.ERROR}
    if not found:
        pytest.skip("index corruption cases need ../shared/corpus")
    assert "entries_out_of_order" in found["c11d-index-entries-swapped"]
    assert {"timestamp_mismatch", "timestamp_out_of_order"} <= found["c11e-timeindex-ts-decreased"]
    assert "index_points_nowhere" in found["c11f-index-pos-mid-batch"]


def test_kafka_sanity_check_wording_on_hot_copies():
    cases = [c for c in case_dirs("kafka") if c.name == "c02-unclean-hot-copy"]
    if not cases:
        pytest.skip("c02 needs ../shared/corpus")
    report = verify([str(cases[0] / "data")])
    messages = [p.message for f in report["files"] for p in f["problems"] if p.kind.code == "sanity_check"]
    goldens = sorted((cases[0] / "expected" / "dump" / "data").glob("*/*.index-sanity-check.stderr"))
    expected = [g.read_text().splitlines()[0].split(": ", 1)[1] for g in goldens if g.read_text()]
    assert expected and len(messages) == len(expected)
    for text in expected:
        # Kafka printed the path relative to the case; we print the path we were given
        tail = text.split(") has non-zero size")[1]
        assert any(tail in m for m in messages)


def test_cli_exit_codes_and_json(tmp_path):
    cases = {c.name: c for c in case_dirs("kafka")}
    clean = cases["c04-transactions"] / "data"
    broken = cases["c11a-crc-byte-flip"] / "data"
    run = segtool
    ok = run("verify", "--json", str(clean))
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert {"path", "size", "sha256", "status", "problems"} <= set(report["files"][0])
    bad = run("verify", "--json", str(broken))
    assert bad.returncode == 1
    log = [f for f in json.loads(bad.stdout)["files"] if f["kind"] == "kafka-log"][0]
    assert {"valid_bytes", "bytes_lost", "records_lost"} <= set(log["recovery"])
    missing = run("verify", str(tmp_path / "nothing-here"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_leader_epoch_checkpoint_against_the_batches(tmp_path, monkeypatch):
    """c04's batches carry leader epoch 0: a checkpoint that gives part of them to another
    epoch is contradicted at the first such batch; the broker's own checkpoint is clean,
    also named by a bare relative path."""
    cases = [c for c in case_dirs("kafka") if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    partition = tmp_path / "c04-txn-0"
    shutil.copytree(cases[0] / "data" / "c04-txn-0", partition)
    checkpoint = partition / "leader-epoch-checkpoint"
    assert verify([str(checkpoint)])["files"][0]["problems"] == []
    monkeypatch.chdir(partition)
    assert verify(["leader-epoch-checkpoint"])["files"][0]["status"] == "ok"
    checkpoint.write_text("0\n2\n0 0\n5 100\n")
    (item,) = verify([str(checkpoint)])["files"]
    assert item["status"] == "problems"
    assert [p.message for p in item["problems"]] == [
        "the checkpoint gives offsets from 100 to epoch 5, but the batch at offset 100 carries leader epoch 0"]
    checkpoint.write_text("0\n2\n0 0\n5 100000\n")  # an epoch that starts past the last batch: nothing to contradict
    assert verify([str(checkpoint)])["files"][0]["problems"] == []


def test_segments_that_overlap_are_reported(tmp_path):
    """A partition whose first segment runs into the second one's offsets (c04's first batch of
    the second segment appended to the first): the second segment is flagged, nothing else."""
    from segtool.source import open_buffer
    from segtool.kafka.log import BatchScan

    cases = [c for c in case_dirs("kafka") if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    partition = tmp_path / "c04-txn-0"
    shutil.copytree(cases[0] / "data" / "c04-txn-0", partition)
    first, second = sorted(partition.glob("*.log"))
    clean = {f["path"]: f["status"] for f in verify([str(partition)], hash_inputs=False)["files"]}
    assert set(clean.values()) == {"ok"}
    head = next(iter(BatchScan(open_buffer(second))))
    with open(first, "ab") as out:
        out.write(second.read_bytes()[:head.size])
    report = verify([str(partition)], hash_inputs=False)
    flagged = {f["path"]: [p for p in f["problems"] if p.kind.code == "segments_overlap"] for f in report["files"]}
    assert [path for path, found in flagged.items() if found] == [str(second)]
    (problem,) = flagged[str(second)]
    assert problem.severity is Severity.ERROR and f"last offset {head.last_offset} of {first.name}" in problem.message
    assert {f["path"]: f["status"] for f in report["files"]} == {**clean, str(second): "problems"}
