"""Every command answers on damaged and messy evidence (issue 27, items 3-6): a bad producer snapshot,
dangling links and loops, replicas side by side, Kafka beside RocketMQ, and the files of a broker that
are not data (its text logs, meta.properties, quorum-state, config/*.json).  Each tree is built in tmp
from corpus copies; each command must answer, name every file and go on with the other partitions."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import corpus_path, segtool

# what a Kafka 3.x broker's log4j appenders write (config/log4j.properties' ConversionPattern)
SERVER_LOG = """\
[2024-05-01 10:15:02,118] INFO [KafkaRaftServer nodeId=1] Kafka Server started (kafka.server.KafkaRaftServer)
[2024-05-01 10:15:03,407] INFO [LogLoader partition=c01-plain-0, dir=/var/lib/kafka/data] Loading producer state till offset 2500 with message format version 2 (kafka.log.UnifiedLog$)
[2024-05-01 10:15:03,522] WARN [UnifiedLog partition=c01-plain-1, dir=/var/lib/kafka/data] Found a corrupted index file corresponding to log file /var/lib/kafka/data/c01-plain-1/00000000000000000000.log due to Corrupt time index found, rebuilding index... (kafka.log.LogLoader)
"""
STATE_CHANGE_LOG = """\
[2024-05-01 10:15:04,001] INFO [Broker id=1] Transitioning 3 partition(s) to local leaders. (state.change.logger)
[2024-05-01 10:15:04,019] INFO [Broker id=1] Creating new partition c01-plain-0 with topic id WYuTji_VTlS3urQ1cjoOpA. (state.change.logger)
"""


def _log_dir(tmp_path: Path, *cases: str) -> Path:
    """A log dir holding the partitions of the named Kafka cases, writable."""
    log_dir = tmp_path / "logs"
    for case in cases:
        shutil.copytree(corpus_path("kafka", case, "data"), log_dir, dirs_exist_ok=True)
    for path in log_dir.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return log_dir


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _json(run) -> dict:
    assert "Traceback" not in run.stderr, run.stderr
    return json.loads(run.stdout)


# -- 3: a producer snapshot the broker cannot read ---------------------------------------------------------


@pytest.fixture(params=["random", "cut"])
def bad_snapshot(request, tmp_path):
    """c04's transactional partition beside c01's three; one bad snapshot at a first segment's base offset:
    300 random bytes (fixed seed) in c01-plain-1, or c04's real snapshot cut to 30 bytes in c04-txn-0."""
    log_dir = _log_dir(tmp_path, "c04-transactions", "c01-multiseg-clean")
    if request.param == "random":
        bad = log_dir / "c01-plain-1" / "00000000000000000000.snapshot"
        bad.write_bytes(random.Random(27).randbytes(300))
    else:
        bad = log_dir / "c04-txn-0" / "00000000000000000000.snapshot"
        bad.write_bytes((log_dir / "c04-txn-0" / "00000000000000001014.snapshot").read_bytes()[:30])
    return log_dir, bad


def test_transactions_names_a_bad_snapshot_and_reports_every_partition(bad_snapshot, tmp_path):
    log_dir, bad = bad_snapshot
    clean = _json(segtool("transactions", "--json", _log_dir(tmp_path / "clean", "c04-transactions",
                                                                    "c01-multiseg-clean")))
    run = segtool("transactions", "--json", log_dir)
    assert run.returncode == 1, run.stderr
    report = _json(run)
    found = [p for p in report["problems"] if p["kind"] == "snapshot_structure"]
    assert len(found) == 1 and found[0]["message"].startswith(f"{bad}: ") and found[0]["byte_offset"] is not None
    assert [p["topic"] + str(p["partition"]) for p in report["partitions"]] == \
        [p["topic"] + str(p["partition"]) for p in clean["partitions"]]
    # the cut snapshot carried no open transaction (c04 ends with none open): the counts stand
    assert report["summary"]["commits"] == clean["summary"]["commits"] > 0


def test_report_goes_on_past_a_bad_snapshot(bad_snapshot, tmp_path):
    log_dir, bad = bad_snapshot
    run = segtool("report", "--json", log_dir, "--out", tmp_path / "report.html")
    assert run.returncode == 1, run.stderr
    figures = _json(run)
    assert (tmp_path / "report.html").stat().st_size > 0
    assert len(figures["partitions"]) == 4
    run = segtool("verify", "--json", log_dir)
    by_path = {f["path"]: f for f in _json(run)["files"]}
    assert by_path[str(bad)]["status"] == "problems" and by_path[str(bad)]["sha256"] == _sha256(bad)


# -- 4: dangling links and loops -----------------------------------------------------------------------------


@pytest.fixture
def bad_links(tmp_path):
    log_dir = _log_dir(tmp_path, "c04-transactions", "c01-multiseg-clean")
    (log_dir / "c01-plain-1" / "00000000000000009999.log").symlink_to(tmp_path / "gone.log")  # dangling
    (log_dir / "c01-plain-0" / "loop-a").symlink_to(log_dir / "c01-plain-0" / "loop-b")  # a loop of links
    (log_dir / "c01-plain-0" / "loop-b").symlink_to(log_dir / "c01-plain-0" / "loop-a")
    (log_dir / "c04-txn-0" / "self").symlink_to(log_dir / "c04-txn-0")  # a directory inside itself
    return log_dir, ["00000000000000009999.log", "loop-a", "loop-b", "self"]


@pytest.mark.parametrize("command", ["inspect", "transactions", "groups"])
def test_log_dir_commands_name_bad_links_and_go_on(bad_links, command):
    log_dir, names = bad_links
    run = segtool(command, "--json", log_dir)
    assert run.returncode == 2, run.stderr
    report = _json(run)
    text = json.dumps(report)
    for name in names:
        assert name in text, (command, name)
    if command == "inspect":
        assert len(report["log_dirs"][0]["partitions"]) == 4
    if command == "transactions":
        assert len(report["partitions"]) == 4 and report["summary"]["commits"] > 0


# -- 5: replicas side by side, Kafka beside RocketMQ ---------------------------------------------------------


@pytest.fixture
def replicas(tmp_path):
    evidence = tmp_path / "ev"
    for broker in ("broker1", "broker2"):
        shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0"),
                        evidence / broker / "c01-plain-0")
    return evidence


@pytest.mark.parametrize("command,written", [("salvage", ".log"), ("trim", ".index"), ("rebuild-index", ".index")])
def test_replicas_keep_their_place_below_the_given_root(replicas, tmp_path, command, written):
    out = tmp_path / "o"
    run = segtool(command, replicas, "--out", out)
    assert run.returncode == 0, run.stderr
    for broker in ("broker1", "broker2"):
        made = sorted(p.name for p in (out / broker / "c01-plain-0").iterdir() if p.suffix == written)
        given = sorted(p.name for p in (replicas / broker / "c01-plain-0").iterdir() if p.suffix == written)
        assert made == given and made
    if command == "salvage":  # a clean segment comes back byte for byte
        for log in (replicas / "broker2" / "c01-plain-0").glob("*.log"):
            assert (out / "broker2" / "c01-plain-0" / log.name).read_bytes() == log.read_bytes()


@pytest.fixture
def mixed(tmp_path):
    tree = tmp_path / "wild"
    shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data"), tree / "kafka-logs")
    shutil.copytree(corpus_path("rocketmq", "clean-multi", "store"), tree / "rocketmq-store")
    return tree


@pytest.mark.parametrize("command", ["salvage", "rebuild-index"])
def test_kafka_beside_rocketmq_goes_through_in_one_run(mixed, tmp_path, command):
    out = tmp_path / "o"
    run = segtool(command, mixed, "--out", out, "--json")
    assert run.returncode == 0, run.stderr
    partitions = sorted(p.name for p in (mixed / "kafka-logs").iterdir() if p.is_dir())
    assert sorted(p.name for p in (out / "kafka-logs").iterdir()) == partitions
    assert any((out / "rocketmq-store" / "index").iterdir())
    report = _json(run)
    if command == "rebuild-index":
        assert [Path(s["store"]).name for s in report["stores"]] == ["rocketmq-store"]
        assert not [s for s in report["skipped"] if "rocketmq-store" in s["path"]]


# -- 6: a broker's files that are not data ------------------------------------------------------------------


@pytest.fixture
def broker_files(tmp_path):
    """A log dir with the broker's text logs, meta.properties, .kafka_cleanshutdown and a KRaft quorum-state
    (from a real Kafka 3.x log dir in wild/), and a RocketMQ store without commitlog/ (config/ and checkpoint)."""
    wild_logs = corpus_path("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data")
    log_dir = _log_dir(tmp_path, "c01-multiseg-clean")
    shutil.copy(wild_logs / "meta.properties", log_dir)
    shutil.copy(wild_logs / ".kafka_cleanshutdown", log_dir)
    (log_dir / "__cluster_metadata-0").mkdir()
    shutil.copy(wild_logs / "__cluster_metadata-0" / "quorum-state", log_dir / "__cluster_metadata-0")
    (log_dir / "server.log").write_text(SERVER_LOG)
    (log_dir / "state-change.log").write_text(STATE_CHANGE_LOG)
    shutil.copytree(corpus_path("wild", "Shaoxubao__rocketmq-study", "store"), tmp_path / "store",
                    ignore=shutil.ignore_patterns("unit_test_store"))
    return tmp_path


KINDS = {"meta.properties": "kafka-meta-properties", ".kafka_cleanshutdown": "kafka-clean-shutdown",
         "quorum-state": "kafka-quorum-state", "server.log": "kafka-broker-text-log",
         "state-change.log": "kafka-broker-text-log", "checkpoint": "rocketmq-checkpoint",
         "topics.json": "rocketmq-config", "consumerOffset.json.bak": "rocketmq-config"}


def test_verify_names_and_hashes_every_file_of_a_broker(broker_files):
    run = segtool("verify", "--json", broker_files)
    assert run.returncode == 0, run.stderr
    files = _json(run)["files"]
    assert {f["path"] for f in files} == _files(broker_files)
    for item in files:
        assert item["sha256"] == _sha256(Path(item["path"])), item["path"]
        assert item["status"] in ("ok", "skipped"), item
        if item["status"] == "skipped":
            assert item["reason"]
    by_name = {Path(f["path"]).name: f for f in files}
    for name, kind in KINDS.items():
        assert by_name[name]["kind"] == kind, name
    assert by_name["server.log"]["status"] == "skipped" and "text log" in by_name["server.log"]["reason"]


def test_dump_reads_a_brokers_own_files_as_inspect_and_groups_do(broker_files):
    run = segtool("dump", broker_files, "--json")
    assert run.returncode == 0, run.stderr
    items = [json.loads(line) for line in run.stdout.splitlines()]
    by_kind = {item["kind"]: item for item in items}
    meta = (broker_files / "logs" / "meta.properties").read_text()
    assert f"cluster.id={by_kind['meta_properties']['cluster_id']}" in meta
    assert f"node.id={by_kind['meta_properties']['node_id']}" in meta
    quorum = json.loads((broker_files / "logs" / "__cluster_metadata-0" / "quorum-state").read_text())
    assert by_kind["quorum_state"]["leader_epoch"] == quorum["leaderEpoch"]
    shutdown = json.loads((broker_files / "logs" / ".kafka_cleanshutdown").read_text())
    assert by_kind["clean_shutdown"]["broker_epoch"] == shutdown["brokerEpoch"]
    configs = {(Path(i["file"]).name, i["config_file"]) for i in items if i["kind"] == "rocketmq_config"}
    assert configs == {(p.name, p.name.removesuffix(".bak")) for p in (broker_files / "store" / "config").iterdir()}
    assert "checkpoint" in by_kind
    for name in ("server.log", "state-change.log"):
        assert f"skipped {broker_files / 'logs' / name}: " in run.stderr


def test_a_misnamed_log_is_no_segment_for_any_command(broker_files, tmp_path):
    """server.log is never framed as batches: not by dump, verify, rebuild-index, trim or scan."""
    logs = broker_files / "logs"
    server_log = str(logs / "server.log")
    run = segtool("dump", server_log)  # named with its reason; nothing to dump is exit 1
    assert run.returncode == 1 and "text log" in run.stderr and not run.stdout
    for command, extra in (("rebuild-index", ["--out", tmp_path / "rebuilt"]), ("trim", ["--dry-run"]),
                           ("scan", ["--out", tmp_path / "scan", "--engine", "local", "--workers", "1"])):
        run = segtool(command, logs, "--json", *extra)
        assert run.returncode == 0, (command, run.stderr)
        report = _json(run)
        skipped = report["inputs"]["skipped"] if command == "scan" else report["skipped"]
        assert server_log in {item["path"] for item in skipped}, command
