"""`segtool inspect STORE` on every RocketMQ corpus case: the inventory against counts read from
the raw files and the goldens, the start-up plan against `verify`'s prediction and against what
RocketMQ 4.9.8's own DefaultMessageStore.load did (expected/recovery.json)."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest
from jsonschema import Draft202012Validator

from segtool.findings import FindingKind
from segtool.ops.inspect_rocketmq import inspect_stores
from segtool.ops.verify import verify
from tests.conftest import REPO, case_dirs, corpus_path, segtool

CASES = case_dirs("rocketmq")
CQ_UNIT = struct.Struct(">qiq")  # commitLogOffset, size, tagsCode
INDEX_HEADER = struct.Struct(">qqqqii")  # begin/end timestamp, begin/end phy offset, hashSlotCount, indexCount


def _ids(case):
    return case.name


@pytest.fixture(scope="module")
def reports():
    """One inspect report per case, computed once."""
    return {case.name: inspect_stores([str(case / "store")])["stores"][0] for case in CASES}


def _golden(case, name):
    path = case / "expected" / name
    return json.loads(path.read_text()) if path.exists() else None


def _raw_units(path) -> int:
    data = path.read_bytes()
    return sum(1 for i in range(0, len(data) - len(data) % CQ_UNIT.size, CQ_UNIT.size)
               if CQ_UNIT.unpack_from(data, i)[0] >= 0 and CQ_UNIT.unpack_from(data, i)[1] > 0)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_files_and_counts_match_the_raw_files(case, reports):
    store = case / "store"
    report = reports[case.name]
    # ConsumeQueue: every queue directory, file and unit count, read here with struct
    raw_queues = {}
    cq_root = store / "consumequeue"
    if cq_root.is_dir():
        for topic in sorted(os.listdir(cq_root)):
            for queue in sorted(os.listdir(cq_root / topic)):
                files = sorted((cq_root / topic / queue).iterdir())
                raw_queues[(topic, int(queue))] = [(f.name, f.stat().st_size, _raw_units(f)) for f in files]
    listed = {(q["topic"], q["queue_id"]): [(f["name"], f["size"], f["units"]) for f in q["files"]]
              for q in report["consume_queues"] if q["directory"] is not None}
    assert listed == raw_queues
    assert {key: sum(u for *_, u in files) for key, files in raw_queues.items()} == \
        {(q["topic"], q["queue_id"]): q["units"] for q in report["consume_queues"] if q["directory"] is not None}
    # CommitLog files: names and sizes as on disk
    cl_dir = store / "commitlog"
    raw_files = sorted((p.name, p.stat().st_size) for p in cl_dir.iterdir()) if cl_dir.is_dir() else []
    assert [(f["name"], f["size"]) for f in (report["commitlog"] or {"files": []})["files"]] == raw_files
    # IndexFile headers, read here with struct
    index_dir = store / "index"
    raw_index = []
    for path in sorted(index_dir.iterdir()) if index_dir.is_dir() else []:
        begin_ts, end_ts, begin_phy, end_phy, slots, count = INDEX_HEADER.unpack(path.read_bytes()[:INDEX_HEADER.size])
        raw_index.append((path.name, path.stat().st_size, begin_ts, end_ts, begin_phy, end_phy, slots, max(count, 1)))
    assert [(f["name"], f["size"], f["begin_timestamp"], f["end_timestamp"], f["begin_phy_offset"],
             f["end_phy_offset"], f["hash_slot_count"], f["index_count"]) for f in report["index_files"]] == raw_index
    geometry = json.loads((case / "case.json").read_text())["index_geometry"]
    assert {(f["hash_slot_num"], f["index_num"]) for f in report["index_files"]} <= \
        {(geometry["hashSlotNum"], geometry["indexNum"])}
    # config files and markers
    config = store / "config"
    assert [f["name"] for f in report["config_files"]] == (sorted(os.listdir(config)) if config.is_dir() else [])
    assert report["shutdown"]["abort_file"] == (store / "abort").exists()
    assert report["shutdown"]["lock_file"] == (store / "lock").exists()


@pytest.mark.parametrize("case", [c for c in CASES if (c / "expected" / "commitlog-files.json").exists()], ids=_ids)
def test_commitlog_files_match_the_golden(case, reports):
    golden = _golden(case, "commitlog-files.json")
    files = reports[case.name]["commitlog"]["files"]
    assert [(f["name"], f["messages"], f["first_phy_offset"], f["last_phy_offset"]) for f in files] == \
        [(g["file"], g["messages"], g["firstMessagePhyOffset"], g["lastMessagePhyOffset"]) for g in golden["files"]]
    assert reports[case.name]["commitlog"]["configured_file_size"] == golden["mappedFileSizeCommitLog"]
    assert reports[case.name]["commitlog"]["names_continuous"]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_plan_cuts_where_verify_predicts(case, reports):
    plan = reports[case.name]["plan"]
    result = verify([str(case / "store")], hash_inputs=False)
    predicted = [f["store_recovery"] for f in result["files"] if f.get("store_recovery")]
    commitlog_files = [f for f in result["files"] if f.get("kind") == "rocketmq-commitlog"]
    if not predicted:  # an index-only copy: no CommitLog, nothing to recover
        assert not commitlog_files and plan["commitlog"] is None
        return
    prediction = predicted[0]
    assert plan["loads"] == prediction["rocketmq_loads"]
    if not plan["loads"]:  # the recovery shown is the one the broker runs once the lengths are fixed
        assert plan["refused_files"] == [str(case / "store" / "commitlog" / name.split(":")[0])
                                         for name in prediction["wrong_size_files"]]
    recovery = plan["commitlog"]
    assert recovery["max_phy_offset"] == prediction["max_phy_offset"]
    assert recovery["start_file"] == prediction["start_file"]
    assert recovery["deleted_files"] == prediction["deleted_files"]
    lost_bytes = sum(f["recovery"]["bytes_lost"] for f in commitlog_files)
    lost_messages = sum(f["recovery"]["messages_lost"] for f in commitlog_files)
    cut = recovery["truncated_at"]
    assert (cut["bytes_dropped"], cut["messages_dropped"]) == (lost_bytes, lost_messages) if cut else lost_bytes == 0


@pytest.mark.parametrize("case", [c for c in CASES if (c / "expected" / "recovery.json").exists()], ids=_ids)
def test_plan_matches_rocketmq_load(case, reports):
    """What RocketMQ's DefaultMessageStore.load did on a copy of the store: the same cut, files and queues."""
    golden = _golden(case, "recovery.json")
    report = reports[case.name]
    plan = report["plan"]
    assert plan["loads"] == golden["loadResult"]
    assert report["shutdown"]["abort_file"] == golden["abortFileExists"]
    if not golden["loadResult"]:
        return
    assert plan["commitlog"]["max_phy_offset"] == golden["maxPhyOffset"]
    assert plan["commitlog_files_after"] == [name.split(":")[0] for name in golden["commitlogFilesAfterLoad"]]
    index = plan["index"]
    assert set(index["kept"]) <= set(golden["indexFilesAfterLoad"])
    assert len(index["kept"]) + index["files_created"] == len(golden["indexFilesAfterLoad"])
    after_load = {(q["topic"], q["queue_id"]): q["after_start"] for q in report["consume_queues"]}
    on_disk = {(q["topic"], q["queue_id"]) for q in report["consume_queues"] if q["directory"] is not None}
    compared = 0
    for queue in golden["consumeQueuesAfterLoad"]:
        key = (queue["topic"], queue["queueId"])
        if key not in on_disk:  # created empty by ScheduleMessageService.load, after recovery
            assert queue["maxPhysicOffset"] == -1
            continue
        state = after_load[key]
        assert (state["min_offset"], state["max_offset_after_load"], state["max_physic_offset_after_load"]) == \
            (queue["minOffsetInQueue"], queue["maxOffsetInQueue"], queue["maxPhysicOffset"]), key
        compared += 1
    assert compared == len(on_disk)


def _case(name):
    found = [c for c in CASES if c.name == name]
    if not found:
        pytest.skip(f"RocketMQ case {name} not present")
    return found[0]


def test_kill9_abort_is_an_abnormal_shutdown(reports):
    case = _case("kill9-abort")
    report = reports[case.name]
    summary = json.loads((case / "case.json").read_text())["results_summary"]
    assert report["shutdown"]["last_exit"] == "abnormal"
    assert report["plan"]["last_exit"] == "abnormal"
    assert report["plan"]["commitlog"]["method"] == "recoverAbnormally"
    assert FindingKind.UNCLEAN_SHUTDOWN in {p.kind for p in report["problems"]}
    recovery = summary["recovery"]
    assert report["plan"]["index"]["destroyed"] == sorted(set(recovery["indexFilesBeforeLoad"])
                                                          - set(recovery["indexFilesAfterLoad"]))
    # the one message not in its ConsumeQueue when the broker died is put there by the recovery
    last = report["commitlog"]["last_message"]
    assert last["phy_offset"] == summary["last_message_phyOffset"]
    added = [q for q in report["consume_queues"] if q["after_start"]["units_added_by_recovery"]]
    assert [(q["topic"], q["queue_id"], q["max_offset"]) for q in added] == \
        [(last["topic"], last["queue_id"], last["queue_offset"])]
    assert report["plan"]["recovery_dispatch"]["messages"] == report["commitlog"]["messages"]
    checkpoint = report["checkpoint"]
    cp = recovery["checkpointBeforeLoad"]
    assert (checkpoint["physic_msg_timestamp"], checkpoint["logics_msg_timestamp"],
            checkpoint["index_msg_timestamp"]) == (cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"],
                                                   cp["indexMsgTimestamp"])


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_cli_json_validates_and_exit_code_follows_the_plan(case, reports):
    run = segtool("inspect", "--json", case / "store")
    assert run.returncode in (0, 1), run.stderr
    document = json.loads(run.stdout)
    validator = Draft202012Validator(json.loads((REPO / "docs" / "schemas" / "inspect.schema.json").read_text()))
    errors = list(validator.iter_errors(document))
    assert not errors, errors[0].message
    store = document["stores"][0]
    plan = store["plan"]
    # what the start-up loses: messages, units, the whole store; an IndexFile it destroys is rebuilt from
    # the CommitLog (IndexService.load then the dispatch of recovery), as Kafka's indexes are: no loss
    drops = (not plan["loads"] or (plan["commitlog"] or {}).get("truncated_at") is not None
             or plan["consume_queue_units_dropped"] > 0)
    errors_found = any(p["severity"] == "error" for p in store["problems"])
    assert run.returncode == (1 if drops or errors_found else 0)
    if case.name in ("clean-multi", "kill9-abort"):  # kill9: recovery.json's maxPhyOffset is the data's end
        assert run.returncode == 0
    if case.name in ("corrupt-body-crc", "corrupt-torn-tail", "corrupt-truncated-commitlog"):
        assert run.returncode == 1
    text = segtool("inspect", case / "store")
    assert text.returncode == run.returncode
    assert "start-up plan" in text.stdout and "Traceback" not in text.stderr


def test_kafka_and_rocketmq_inputs_give_both_reports_side_by_side(tmp_path):
    kafka = tmp_path / "logs"
    shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data"), kafka)
    run = segtool("inspect", "--json", kafka, _case("clean-multi") / "store")
    report = json.loads(run.stdout)
    assert [d["path"] for d in report["log_dirs"]] == [str(kafka)] and len(report["stores"]) == 1
    assert report["summary"]["kafka"]["partitions"] == 3 and report["summary"]["rocketmq"]["stores"] == 1
    # each half's own exit: the unclean Kafka copy is a note, the store loads cleanly
    assert run.returncode == 0, run.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert segtool("inspect", empty, _case("clean-multi") / "store").returncode == 1  # nothing found in one


# --------------------------------------------------------------------------------------------
# The 5.x start-up plan, on a store written as RocketMQ 5.x's classes write it (tests/rocketmq5_writer.py)
# --------------------------------------------------------------------------------------------


def _written_5x(tmp_path):
    from tests.test_rocketmq5 import Written

    return Written(tmp_path / "store")


def _plan5(root) -> dict:
    result = segtool("inspect", "--json", str(root))
    assert result.returncode in (0, 1), result.stderr
    validator = Draft202012Validator(json.loads((REPO / "docs" / "schemas" / "inspect.schema.json").read_text()))
    report = json.loads(result.stdout)
    assert not list(validator.iter_errors(report))
    return report["stores"][0]


def test_inspect_gives_the_5x_recoveries_per_file(tmp_path):
    """DefaultMessageStore.recover (5.x): BatchConsumeQueue.recover keeps units while offset >= 0, size > 0,
    msgBaseOffset >= 0 and batchSize > 0 and truncateDirtyFiles deletes the files after; TimerMessageStore.recover
    runs recoverAndRevise(lastTimerLogFlushPos - last file size, true), which stops at a unit of another size or
    magic and cuts there; DLedgerMmapFileStore.recover cuts the raft log at the first entry it refuses.  A
    BatchCQ topic's messages are dispatched to its BatchConsumeQueue, not to consumequeue/."""
    import shutil

    from tests import rocketmq5_writer as w

    written = _written_5x(tmp_path)
    store = _plan5(written.root)
    plan5 = store["plan"]["rocketmq5"]
    assert {"BatchConsumeQueue.recover", "TimerMessageStore.recover (recoverAndRevise)",
            "DLedgerMmapFileStore.recover"} <= set(plan5["recoveries"])
    (queue,) = plan5["batch_queues"]
    assert [f["kept"] for f in queue["files"]] == [4, len(written.bcq_units) - 4]
    assert not any(f["dropped"] or f["deleted"] for f in queue["files"])
    assert "BatchTopic" not in {q["topic"] for q in store["consume_queues"]}
    timer = plan5["timer"]
    flush = written.timer_checkpoint[1]
    files = sorted((written.root / "timerlog").iterdir())
    begin = flush - files[-1].stat().st_size
    assert timer["begin_offset"] == begin and timer["process_offset"] == written.timer.log.offset
    assert timer["begin_file"] == max(p.name for p in files if int(p.name) <= begin)
    (dledger,) = plan5["dledger"]
    assert (dledger["entries"], dledger["last_index"], dledger["cut"]) == (len(written.dledger.entries),
                                                                          len(written.dledger.entries) - 1, None)

    # damage: a unit recover refuses in the first BatchConsumeQueue file, a bad timer unit, a DLedger term going back
    bcq = written.bcq_paths[0]
    data = bytearray(bcq.read_bytes())
    struct.pack_into(">h", data, 1 * w.BCQ_UNIT_SIZE + 36, 0)  # the second unit's batchSize
    bcq.write_bytes(bytes(data))
    second_timer = files[1]
    data = bytearray(second_timer.read_bytes())
    struct.pack_into(">i", data, 2 * w.TIMER_UNIT_SIZE + 12, 0x40)  # a magic isMagicOK refuses
    second_timer.write_bytes(bytes(data))
    entry = written.dledger.entries[2]
    data_file = written.root / "dledger-n0" / "data" / f"{0:020d}"
    data = bytearray(data_file.read_bytes())
    struct.pack_into(">q", data, entry["pos"] + 4 + 4 + 8, 0)  # term 0 after term 1
    data_file.write_bytes(bytes(data))
    damaged = _plan5(written.root)["plan"]["rocketmq5"]
    (queue,) = damaged["batch_queues"]
    assert queue["end"] == w.BCQ_UNIT_SIZE
    assert [(f["kept"], f["dropped"], f["deleted"]) for f in queue["files"]] == [
        (1, 3, False), (0, len(written.bcq_units) - 4, True)]
    timer = damaged["timer"]
    assert timer["stop"]["file"] == second_timer.name and timer["stop"]["file_offset"] == 2 * w.TIMER_UNIT_SIZE
    assert [f["deleted"] for f in timer["files"]] == [False, False, True]
    (dledger,) = damaged["dledger"]
    assert dledger["cut"]["pos"] == entry["pos"] and dledger["last_index"] == 1
    assert [(f["kept"], f["deleted"]) for f in dledger["files"]] == [(2, False), (0, True)]
    # a DLedger store (no commitlog/): ConsumeQueues are not destroyed for want of a CommitLog
    dl = tmp_path / "dl"
    shutil.copytree(written.root / "dledger-n0", dl / "dledger-n0")
    shutil.copy(written.root / "checkpoint", dl / "checkpoint")
    shutil.copytree(written.root / "batchconsumequeue", dl / "batchconsumequeue")
    only = _plan5(dl)
    assert only["checkpoint"] is not None and only["plan"]["rocketmq5"]["dledger"]
    assert only["plan"]["rocketmq5"]["batch_queues"][0]["files"][0]["kept"] == 1  # as damaged above, no more
