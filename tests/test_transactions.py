"""`transactions` against a replay by hand of `segtool dump --json` (batches, control records,
coordinator records decoded here) and kafka-dump-log's .txnindex goldens; no typed-in numbers."""

from __future__ import annotations

import base64
import json
import re
import shutil

import pytest

from segtool.kafka.coordinator import TRANSACTION_STATES, decode_transaction_record
from segtool.ops.transactions import transactions
from tests.conftest import corpus_path, segtool

TRANSACTIONAL_DIRS = [
    ("kafka", "c04-transactions", "data"),
    ("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data"),
    ("wild", "Danielowo2000__BigDataTechnologies-Version-2", "kafka_data"),
]


def _dumped(directory) -> list[dict]:
    """Batches and records of a partition's .log files in offset order."""
    items = []
    for log in sorted(directory.glob("*.log")):
        run = segtool("dump", "--json", log)
        assert run.returncode == 0, run.stderr
        items += [json.loads(line) for line in run.stdout.splitlines()]
    return [item for item in items if item["kind"] in ("batch", "record")]


def _replay_partition(items) -> dict:
    """klog txn-stat's figures, the aborted ranges' producer and offsets, and what stays open."""
    open_txns, sizes, batch_counts, durations, empty, aborted = {}, [], [], [], [], []
    commits = aborts = 0
    end = 0
    batch = None
    for item in items:
        if item["kind"] == "batch":
            batch = item
            end = max(end, item["last_offset"] + 1)
            if item["is_transactional"] and not item["is_control"]:
                txn = open_txns.setdefault(item["producer_id"], {"first": item["base_offset"], "records": 0,
                                                                 "batches": 0, "ts": item["max_timestamp"]})
                txn["records"] += item["record_count"]
                txn["batches"] += 1
            continue
        if not (batch["is_control"] and batch["is_transactional"]) or item.get("control_type") not in ("COMMIT", "ABORT"):
            continue
        commits += item["control_type"] == "COMMIT"
        aborts += item["control_type"] == "ABORT"
        txn = open_txns.pop(batch["producer_id"], None)
        if txn is None:
            empty.append((batch["producer_id"], item["offset"]))
            continue
        sizes.append(txn["records"])
        batch_counts.append(txn["batches"])
        durations.append(batch["max_timestamp"] - txn["ts"])
        if item["control_type"] == "ABORT":
            aborted.append((batch["producer_id"], txn["first"], item["offset"]))
    return {"commits": commits, "aborts": aborts, "sizes": sizes, "batches": batch_counts, "durations": durations,
            "empty": empty, "aborted": aborted, "open": {pid: t["first"] for pid, t in open_txns.items()},
            "end": end}


def _stats_of(values):
    return {"count": len(values), "min": min(values, default=None), "max": max(values, default=None),
            "mean": sum(values) / len(values) if values else None}


def _check_partition(partition: dict, directory) -> None:
    expected = _replay_partition(_dumped(directory))
    assert (partition["commits"], partition["aborts"]) == (expected["commits"], expected["aborts"])
    assert partition["size_records"] == _stats_of(expected["sizes"])
    assert partition["size_batches"] == _stats_of(expected["batches"])
    assert partition["duration_ms"] == _stats_of(expected["durations"])
    assert [(e["producer_id"], e["marker_offset"]) for e in partition["empty_transactions"]] == expected["empty"]
    assert [(r["producer_id"], r["first_offset"], r["last_offset"]) for r in partition["aborted_ranges"]] == \
        expected["aborted"]
    assert {t["producer_id"]: t["first_offset"] for t in partition["open_transactions"]} == expected["open"]
    assert partition["log_end_offset"] == expected["end"]
    assert partition["last_stable_offset"] == min(expected["open"].values(), default=expected["end"])


@pytest.mark.parametrize("where", TRANSACTIONAL_DIRS, ids=lambda where: where[1])
def test_partitions_are_the_replay_of_their_dumped_batches(where):
    log_dir = corpus_path(*where)
    report = transactions(str(log_dir))
    assert report["summary"]["transactional_partitions"] > 0
    for partition in report["partitions"]:
        if partition["transactional"]:
            _check_partition(partition, log_dir / f"{partition['topic']}-{partition['partition']}")
    assert report["problems"] == []


_GOLDEN_ABORTED = re.compile(r"producerId: (-?\d+) firstOffset: (\d+) lastOffset: (\d+) lastStableOffset: (\d+)")


def test_c04_aborted_ranges_are_the_txnindex_goldens():
    case = corpus_path("kafka", "c04-transactions")
    golden = [tuple(map(int, match.groups()))
              for path in sorted((case / "expected" / "dump").rglob("*.txnindex.dump.stdout"))
              for match in _GOLDEN_ABORTED.finditer(path.read_text())]
    assert golden
    (partition,) = transactions(str(case / "data"))["partitions"]
    assert [(r["producer_id"], r["first_offset"], r["last_offset"], r["last_stable_offset"])
            for r in partition["aborted_ranges"]] == golden


def test_coordinator_state_is_the_replay_of_the_dumped_transaction_log():
    log_dir = corpus_path("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data")
    latest = {}
    for directory in sorted(log_dir.glob("__transaction_state-*")):
        for item in _dumped(directory):
            if item["kind"] == "record":
                value = None if item["value_b64"] is None else base64.b64decode(item["value_b64"])
                record = decode_transaction_record(base64.b64decode(item["key_b64"]), value)
                latest[record.key["transactionalId"]] = record.value
    report = transactions(str(log_dir))
    assert latest
    assert {s["transactional_id"]: (s["producer_id"], s["producer_epoch"], s["state"], s["timeout_ms"])
            for s in report["transactional_ids"]} == {
        tid: (v["producerId"], v["producerEpoch"], TRANSACTION_STATES[v["transactionStatus"]], v["transactionTimeoutMs"])
        for tid, v in latest.items() if v is not None}
    assert report["disagreements"] == []


def test_a_lost_marker_leaves_an_open_transaction_and_holds_the_last_stable_offset(tmp_path):
    source = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    copy = tmp_path / "logs" / source.name
    shutil.copytree(source, copy)
    last_log = sorted(copy.glob("*.log"))[-1]
    items = _dumped(copy)
    last_marker = [i for i in items if i["kind"] == "batch" and i["is_control"]][-1]
    with open(last_log, "r+b") as f:  # the copy ends just before its last marker
        f.truncate(last_marker["position"])
    (partition,) = transactions(str(tmp_path / "logs"))["partitions"]
    expected = _replay_partition(_dumped(copy))
    assert expected["open"] and partition["last_stable_offset"] == min(expected["open"].values())
    _check_partition(partition, copy)


def test_transactions_command_exit_codes(tmp_path):
    run = segtool("transactions", corpus_path("kafka", "c04-transactions", "data"), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["summary"]["transactional_partitions"] == 1
    assert segtool("transactions", tmp_path).returncode == 1  # nothing transactional
    assert segtool("transactions", tmp_path / "missing").returncode == 2
    assert "committed" in segtool("transactions", corpus_path("kafka", "c04-transactions", "data")).stdout


def _truncated_before_last_marker(partition_dir) -> dict:
    """Cut the partition's last segment just before its last control batch; that batch's item."""
    items = _dumped(partition_dir)
    last_marker = [i for i in items if i["kind"] == "batch" and i["is_control"]][-1]
    last_log = sorted(partition_dir.glob("*.log"))[-1]
    with open(last_log, "r+b") as f:
        f.truncate(last_marker["position"])
    return last_marker


def test_a_completed_transaction_whose_marker_is_missing_hangs_and_disagrees(tmp_path):
    """The coordinator wrote CompleteCommit naming the partition; the partition has no marker."""
    source = corpus_path("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data")
    log_dir = tmp_path / "logs"
    shutil.copytree(source, log_dir)
    before = transactions(str(log_dir))
    completed = {s["producer_id"]: s for s in before["transactional_ids"] if s["state"] == "CompleteCommit"}
    named = [(entry["topic"], number, state) for state in completed.values()
             for entry in state["marker_partitions"] for number in entry["partitions"]]
    assert named and before["disagreements"] == []
    topic, number, state = named[0]
    marker = _truncated_before_last_marker(log_dir / f"{topic}-{number}")
    assert marker["producer_id"] == state["producer_id"]

    report = transactions(str(log_dir))
    (partition,) = [p for p in report["partitions"] if (p["topic"], p["partition"]) == (topic, number)]
    (open_txn,) = partition["open_transactions"]
    assert open_txn["producer_id"] == state["producer_id"] and open_txn["hanging"]
    assert "CompleteCommit" in open_txn["why"]
    (disagreement,) = report["disagreements"]
    assert disagreement["transactional_id"] == state["transactional_id"]
    assert report["summary"]["hanging_transactions"] == 1
    assert segtool("transactions", log_dir).returncode == 1


@pytest.mark.parametrize("past_timeout", [True, False])
def test_an_open_transaction_hangs_once_open_longer_than_the_timeout(tmp_path, past_timeout):
    """No coordinator state: find-hanging's candidates are the transactions whose producer's last
    batch (ProducerStateEntry.lastTimestamp) is older than transaction.max.timeout.ms at the
    reference time, the latest timestamp in the log dir (here a one-record partition written at
    the chosen moment)."""
    from tests.kafka_build import make_batch
    from segtool.ops.transactions import DEFAULT_MAX_TIMEOUT_MS

    source = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    log_dir = tmp_path / "logs"
    shutil.copytree(source, log_dir / source.name)
    _truncated_before_last_marker(log_dir / source.name)
    (open_txn,) = transactions(str(log_dir))["partitions"][0]["open_transactions"]
    last_data = [i for i in _dumped(log_dir / source.name)
                 if i["kind"] == "batch" and i["producer_id"] == open_txn["producer_id"]
                 and i["base_offset"] >= open_txn["first_offset"]][-1]
    assert not open_txn["hanging"]  # the partition's own clock ends inside the timeout

    moment = last_data["max_timestamp"] + DEFAULT_MAX_TIMEOUT_MS + (1 if past_timeout else 0)
    (log_dir / "clock-0").mkdir()
    (log_dir / "clock-0" / "00000000000000000000.log").write_bytes(make_batch(0, [(b"k", b"now")], moment))
    report = transactions(str(log_dir))
    assert report["reference_time"] == moment
    (partition,) = [p for p in report["partitions"] if p["topic"] == "c04-txn"]
    (open_txn,) = partition["open_transactions"]
    assert open_txn["hanging"] is past_timeout
    if past_timeout:
        assert f"past transaction.max.timeout.ms ({DEFAULT_MAX_TIMEOUT_MS} ms)" in open_txn["why"]


def test_an_ongoing_transaction_that_lists_the_partition_is_not_hanging_even_when_timed_out(tmp_path):
    """TransactionsCommand.FindHangingTransactionsCommand.filterHangingTransactions: a candidate
    whose coordinator's DescribeTransactions still lists the partition is not hanging (the
    coordinator times the transaction out and writes the ABORT marker itself)."""
    from tests.kafka_build import make_batch
    from segtool.ops.transactions import DEFAULT_MAX_TIMEOUT_MS, _Open, _why_hanging

    source = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    log_dir = tmp_path / "logs"
    shutil.copytree(source, log_dir / source.name)
    _truncated_before_last_marker(log_dir / source.name)
    (open_txn,) = transactions(str(log_dir))["partitions"][0]["open_transactions"]
    last = [i for i in _dumped(log_dir / source.name) if i["kind"] == "batch"
            and i["producer_id"] == open_txn["producer_id"]][-1]["max_timestamp"]
    txn = _Open(open_txn["producer_epoch"], open_txn["first_offset"], open_txn["first_timestamp"], last)
    reference = last + DEFAULT_MAX_TIMEOUT_MS + 1
    ongoing = {"state": "Ongoing", "partitions": [{"topic": "c04-txn", "partitions": [0]}]}
    assert _why_hanging(txn, ongoing, "c04-txn", 0, reference) is None
    other = {"state": "Ongoing", "partitions": [{"topic": "c04-txn", "partitions": [1]}]}
    assert "does not name this partition" in _why_hanging(txn, other, "c04-txn", 0, reference)
    # not yet a candidate: idle for exactly the timeout
    assert _why_hanging(txn, other, "c04-txn", 0, last + DEFAULT_MAX_TIMEOUT_MS) is None
