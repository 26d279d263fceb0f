"""One answer per byte: lookup, inspect, verify and salvage give the same log end and the same loss for
the same damaged partition, and those equal Kafka's own recovery.

The rule checked is Kafka 3.9's LogLoader.recoverLog over LogSegment.recover: segments are recovered
from the recovery point in order, the first that loses bytes is truncated at its first invalid batch
(RecordBatch.ensureValid; FileLogInputStream.nextBatch's framing) and every later one deleted; the
indexes on disk are not trusted (recovery rebuilds them).  A fetch (UnifiedLog.read) or ListOffsets
LATEST then answers from what is kept.  Expected values come from the case files (case.json's
corruption record, Kafka's own recovered copy under expected/kafka-recovery) or from the clean
original segment the damage is generated from.
"""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest

from segtool.errors import CorruptData
from segtool.kafka.log import BatchScan
from segtool.kafka.records import batch_records
from segtool.source import open_buffer
from tests.conftest import corpus_path, segtool

CLEAN = ("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
LAST_SEGMENT = "00000000000000002093.log"


def _json(*args) -> tuple[dict, int]:
    run = segtool(*args, "--json")
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run.returncode


def _in_log_dir(source, tmp_path):
    """A copy of a partition directory inside a log dir of its own (no clean-shutdown marker, no
    checkpoints: an unclean start from recovery point 0, as Kafka recovered the corpus cases)."""
    partition = tmp_path / "logdir" / source.name
    shutil.copytree(source, partition)
    return partition


def _figures(partition, tmp_path) -> dict:
    """Each command's figures for the partition: the log end and what recovery drops."""
    latest, _ = _json("lookup", str(partition), "--timestamp", "latest")
    inspected, _ = _json("inspect", str(partition.parent))
    plan = inspected["log_dirs"][0]["partitions"][0]["plan"]
    verified, _ = _json("verify", str(partition))
    cut = [f["recovery"] for f in verified["files"] if f.get("recovery") and f["recovery"]["bytes_lost"]]
    salvaged, _ = _json("salvage", str(partition), "--out", str(tmp_path / "salvaged"))
    truncated = plan["truncated_at"]
    return {
        "lookup_log_end": latest["offset"],
        "lookup_dropped": latest.get("beyond_recovery", {}).get("records", 0),
        "lookup_gone": latest.get("beyond_recovery", {}).get("gone", 0),
        "inspect_log_end": plan["log_end_offset"],
        "inspect_dropped": truncated["records_dropped"] if truncated else 0,
        "inspect_gone": truncated["records_gone"] if truncated else 0,
        "verify_dropped": sum(r["records_lost"] for r in cut),
        "verify_salvageable": sum(r["records_salvageable"] for r in cut),
        "verify_gone": sum(r["records_gone"] for r in cut),
        "salvage_gone": salvaged["summary"]["records_lost"],
        "salvage_ranges": sum(r["last_offset"] - r["first_offset"] + 1
                              for r in salvaged["partitions"][0]["offset_ranges_lost"]),
    }


def _assert_agree(figures: dict, log_end: int, dropped: int, gone: int) -> None:
    assert figures["lookup_log_end"] == figures["inspect_log_end"] == log_end, figures
    assert figures["lookup_dropped"] == figures["inspect_dropped"] == figures["verify_dropped"] == dropped, figures
    assert (figures["lookup_gone"] == figures["inspect_gone"] == figures["verify_gone"] == figures["salvage_gone"]
            == figures["salvage_ranges"] == gone), figures
    assert figures["verify_salvageable"] == dropped - gone, figures


def test_a_torn_batch_behind_the_last_index_entry_ends_the_log_after_the_last_whole_batch(tmp_path):
    """LogSegment.recover keeps every whole batch before the torn one; the .index entry pointing at the
    torn batch is not used (OffsetIndex rebuilt), so the log ends at 2493, not at the base 2093."""
    source = corpus_path(*CLEAN)
    original = open_buffer(str(source / LAST_SEGMENT))
    batches = list(BatchScan(original, path=LAST_SEGMENT))
    torn = batches[-1]  # the file is cut 100 bytes into its last batch, past its header
    partition = _in_log_dir(source, tmp_path)
    with open(partition / LAST_SEGMENT, "r+b") as handle:
        handle.truncate(torn.position + 100)
    whole_end = batches[-2].last_offset + 1
    declared = torn.last_offset - torn.base_offset + 1
    assert whole_end == torn.base_offset  # offsets run on: the torn batch starts where the log ends

    fetched, code = _json("lookup", str(partition), "--offset", str(whole_end - 1))
    assert fetched["offset"] == whole_end - 1 and code == 1  # found, and the damage is named (exit 1)
    assert fetched["recovery_cut"] == {"segment": str(partition / LAST_SEGMENT), "byte": torn.position,
                                       "offset": whole_end}
    missed, code = _json("lookup", str(partition), "--offset", str(whole_end))
    assert missed["offset"] is None and missed["log_end_offset"] == whole_end and code == 1
    assert any("truncates" in note and str(whole_end) in note for note in missed["notes"])
    text = segtool("lookup", str(partition), "--offset", str(whole_end)).stdout
    assert text.splitlines()[0] == f"no record at or after offset {whole_end}: the log ends at offset {whole_end}"

    inspected = segtool("inspect", str(partition.parent)).stdout
    assert f"offsets 0..{whole_end - 1}" in inspected  # 00000000000000000000.log starts the partition
    _assert_agree(_figures(partition, tmp_path), whole_end, dropped=declared, gone=declared)


def test_a_damaged_first_batch_claiming_base_offset_0_cuts_its_segment_at_byte_0(tmp_path):
    """RecordBatch.ensureValid fails on the first batch of the last segment (its CRC-32C; its base offset
    field says 0): LogSegment.recover keeps nothing of that segment, the log ends at its base offset,
    and salvage gets back every later batch; only the damaged batch's offsets are gone."""
    source = corpus_path(*CLEAN)
    partition = _in_log_dir(source, tmp_path)
    data = bytearray((partition / LAST_SEGMENT).read_bytes())
    batches = list(BatchScan(open_buffer(str(source / LAST_SEGMENT)), path=LAST_SEGMENT))
    data[0:8] = struct.pack(">q", 0)
    data[batches[0].position + 100] ^= 0x20
    (partition / LAST_SEGMENT).write_bytes(bytes(data))
    on_disk = sum(b.record_count for b in batches)
    _assert_agree(_figures(partition, tmp_path), 2093, dropped=on_disk, gone=batches[0].record_count)


@pytest.mark.parametrize("case", ["c11a-crc-byte-flip", "c11b-truncated-last-batch", "c11c-zero-tail-64k",
                                  "c11f-index-pos-mid-batch"])
def test_every_command_counts_what_kafkas_recovery_dropped(case, tmp_path):
    """LogLoader's truncation point is the broker's own (case.json's recovery record, the producer snapshot
    Kafka wrote at the log end under expected/kafka-recovery); the records past it are those the clean
    original held there; of them, salvage gets back the ones in batches whose checksum holds."""
    meta = json.loads(corpus_path("kafka", case, "case.json").read_text())
    corruption, counts = meta["corruption"], meta["partitions"]["c01-plain-0"]
    partition = _in_log_dir(corpus_path("kafka", case, "data", "c01-plain-0"), tmp_path)
    # what the damaged file still holds: a torn last batch's header declares its offsets (case.json names them)
    on_disk_end = corruption.get("last_batch_last_offset", counts["last_offset"]) + 1
    if corruption.get("recovery_topic_partition") is None:  # an index-only damage: recovery keeps everything
        log_end, gone = on_disk_end, 0
    else:
        recovered = corpus_path("kafka", case, "expected", "kafka-recovery", corruption["recovery_topic_partition"])
        log_end = corruption.get("recovery", {}).get("truncated_to_offset") or min(
            int(p.stem) for p in recovered.glob("*.snapshot"))
        if corruption["kind"] == "crc-byte-flip":
            gone = corruption["batch_last_offset"] - corruption["batch_base_offset"] + 1
        elif corruption["kind"] == "zero-tail":
            gone = 0  # zeros hold no batch
        else:
            gone = on_disk_end - log_end
    dropped = 0 if corruption["kind"] == "zero-tail" else on_disk_end - log_end
    _assert_agree(_figures(partition, tmp_path), log_end, dropped=dropped, gone=gone)


def test_key_lookup_and_index_keys_search_the_records_before_a_zero_tail(tmp_path, monkeypatch):
    """The zero tail stops framing at byte 129462 (FileLogInputStream.nextBatch: "Found record size 0"),
    where Kafka's load cuts the segment; the 525 records before it are searched and the cut is named,
    exit 1 (a problem found)."""
    partition = corpus_path("kafka", "c11c-zero-tail-64k", "data", "c01-plain-0")
    log = open_buffer(str(partition / "00000000000000000000.log"))
    records, keys, end = 0, {}, 0
    try:
        for batch in BatchScan(log, path="00000000000000000000.log"):
            records += batch.record_count
            end = batch.end
    except CorruptData as exc:
        assert exc.offset == end
    for batch in BatchScan(log, 0, end, "00000000000000000000.log"):
        for record in batch_records(batch, "00000000000000000000.log"):
            if record.key is not None:
                keys.setdefault(record.key.decode(), []).append(record.offset)
    assert records == json.loads(corpus_path("kafka", "c11c-zero-tail-64k", "case.json").read_text())[
        "partitions"]["c01-plain-0"]["records"]
    key, offsets = max(keys.items(), key=lambda item: len(item[1]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for index_first in (False, True):
        if index_first:
            built = segtool("index-keys", str(partition), "--json")
            report = json.loads(built.stdout)
            assert built.returncode == 1 and report["records_indexed"] == sum(map(len, keys.values()))
            assert report["damage"][0]["byte"] == end
        run = segtool("lookup", str(partition), "--key", key, "--json")
        answer = json.loads(run.stdout)
        assert run.returncode == 1, run.stderr
        assert answer["offsets"] == offsets
        # the damage named is where Kafka's load cuts the segment (LogLoader.recoverLog), the byte framing stops at
        assert answer["damage"][0]["byte"] == end and "truncates 00000000000000000000.log at byte" in answer[
            "damage"][0]["message"]
        assert answer["method"] == ("key index" if index_first else "scan")


# --------------------------------------------------------------------------
# RocketMQ: verify, inspect, salvage, report and lookup give the same cut and the same loss
# --------------------------------------------------------------------------

ROCKETMQ_CLEAN = ("rocketmq", "clean-multi")


def _clean_messages() -> list[dict]:
    with open(corpus_path(*ROCKETMQ_CLEAN, "expected", "commitlog.jsonl")) as lines:
        return [json.loads(line) for line in lines]


def _store_figures(store, tmp_path) -> dict:
    """Each command's cut and loss for the store (lookup through a queue unit past the cut, or the first)."""
    verified, _ = _json("verify", str(store))
    commitlog = [f for f in verified["files"] if f["kind"] == "rocketmq-commitlog"]
    losing = [f for f in commitlog if f["recovery"]["bytes_lost"] or f["recovery"]["messages_lost"]]
    inspected, _ = _json("inspect", str(store))
    plan = inspected["stores"][0]["plan"]
    truncated = plan["commitlog"]["truncated_at"]
    salvaged, _ = _json("salvage", str(store), "--out", str(tmp_path / "salvaged"))
    reported, _ = _json("report", "--no-hash", str(store))
    truncation = reported["stores"][0]["truncation"]
    gone_offsets = salvaged["stores"][0]["queue_offsets_lost"]
    probe = gone_offsets[0] if gone_offsets else {"topic": "OrderTopic", "queue_id": 0, "first_offset": 0}
    looked, _ = _json("lookup", str(store), "--topic", probe["topic"], "--queue-id", str(probe["queue_id"]),
                      "--queue-offset", str(probe["first_offset"]))
    beyond = looked.get("beyond_recovery", {})
    return {
        "verify_cut": int(os.path.basename(losing[0]["path"])) + losing[0]["recovery"]["valid_bytes"]
        if losing else None,
        "inspect_cut": truncated["phy_offset"] if truncated else None,
        "report_cut": truncation["offset"] if truncation else None,
        "lookup_cut": looked["recovery_cut"]["phy_offset"] if "recovery_cut" in looked else None,
        "recovery_ends_at": plan["commitlog"]["max_phy_offset"],
        "verify_lost": sum(f["recovery"]["messages_lost"] for f in commitlog),
        "verify_salvageable": sum(f["recovery"]["messages_salvageable"] for f in commitlog),
        "verify_gone": sum(f["recovery"]["messages_gone"] for f in commitlog),
        "inspect_lost": truncated["messages_dropped"] if truncated else 0,
        "inspect_salvageable": truncated["messages_salvageable"] if truncated else 0,
        "inspect_gone": truncated["messages_gone"] if truncated else 0,
        "report_lost": truncation["messages_lost"] if truncation else 0,
        "report_salvageable": truncation["messages_salvageable"] if truncation else 0,
        "report_gone": truncation["messages_gone"] if truncation else 0,
        "lookup_lost": beyond.get("messages", 0),
        "lookup_salvageable": beyond.get("salvageable", 0),
        "lookup_gone": beyond.get("gone", 0),
        "salvage_gone": salvaged["summary"]["messages_lost"],
        "salvage_ranges": sum(r["last_offset"] - r["first_offset"] + 1 for r in gone_offsets),
        "lookup_gone_ranges": sum(r["last_offset"] - r["first_offset"] + 1 for r in beyond.get("queue_offsets_gone", [])),
        "lookup_after_cut": looked.get("after_recovery_cut"),
    }


def _assert_store_agree(figures: dict, cut: int, lost: int, gone: int) -> None:
    assert figures["recovery_ends_at"] == cut, figures
    expected_cut = cut if lost else None
    assert (figures["verify_cut"] == figures["inspect_cut"] == figures["report_cut"] == figures["lookup_cut"]
            == expected_cut), figures
    for command in ("verify", "inspect", "report", "lookup"):
        assert figures[f"{command}_lost"] == lost, (command, figures)
        assert figures[f"{command}_gone"] == gone, (command, figures)
        assert figures[f"{command}_salvageable"] == lost - gone, (command, figures)
    assert figures["salvage_gone"] == figures["salvage_ranges"] == gone, figures
    if lost:
        assert figures["lookup_gone_ranges"] == gone and figures["lookup_after_cut"] is bool(gone), figures


@pytest.mark.parametrize("case", ["corrupt-body-crc", "corrupt-torn-tail", "corrupt-truncated-commitlog"])
def test_every_command_counts_what_rocketmqs_commitlog_recovery_drops(case, tmp_path):
    """CommitLog.recoverNormally (the last three files, checkMessageAndReturnSize with checkCRCOnRecover) stops
    at the first message it refuses; processOffset is the cut, truncateDirtyFiles deletes the later files and
    truncateDirtyLogicFiles the ConsumeQueue units pointing past it.  The cut is the damaged message
    (case.json); the messages dropped are those clean-multi held from there (expected/commitlog.jsonl); gone
    are those the damage touched: the flipped body, or every message from the torn one on (zeroed or cut off
    the file).  corrupt-truncated-commitlog does not load (MappedFileQueue.doLoad refuses the short file):
    its figures are those of the recovery it runs once the length is fixed."""
    meta = json.loads(corpus_path("rocketmq", case, "case.json").read_text())
    corruption = meta["corruption"]
    cut = corruption.get("phyOffset", corruption.get("cutMessagePhyOffset"))
    dropped = [m for m in _clean_messages() if m["phyOffset"] >= cut]
    if "flippedBytePhyOffset" in corruption:
        flipped = corruption["flippedBytePhyOffset"]
        gone = sum(1 for m in dropped if m["phyOffset"] <= flipped < m["phyOffset"] + m["totalSize"])
    else:  # everything from the cut message's last kept byte on is zeros or absent
        damage_from = int(corruption["file"]) + corruption["cutMessageFileOffset"] + corruption["bytesOfCutMessageKept"]
        gone = sum(1 for m in dropped if m["phyOffset"] + m["totalSize"] > damage_from)
    recovered = json.loads(corpus_path("rocketmq", case, "expected", "recovery.json").read_text())
    if recovered["loadResult"]:
        assert recovered["maxPhyOffset"] == cut  # the broker's own recovery cut there
    _assert_store_agree(_store_figures(corpus_path("rocketmq", case, "store"), tmp_path), cut, len(dropped), gone)


def test_an_unclean_shutdown_that_tore_nothing_loses_nothing(tmp_path):
    """kill9-abort: CommitLog.recoverAbnormally reads from the checkpoint's file to the zero tail (processOffset
    = recovery.json's maxPhyOffset, the end of the last message in expected/commitlog.jsonl); no message lies
    past it and no ConsumeQueue unit points there, so no command counts a loss."""
    recovered = json.loads(corpus_path("rocketmq", "kill9-abort", "expected", "recovery.json").read_text())
    with open(corpus_path("rocketmq", "kill9-abort", "expected", "commitlog.jsonl")) as lines:
        last = max((json.loads(line) for line in lines), key=lambda m: m["phyOffset"])
    assert recovered["maxPhyOffset"] == last["phyOffset"] + last["totalSize"]
    _assert_store_agree(_store_figures(corpus_path("rocketmq", "kill9-abort", "store"), tmp_path),
                        recovered["maxPhyOffset"], 0, 0)


def test_a_zeroed_hole_cuts_the_commitlog_at_the_message_it_opens_in(tmp_path):
    """Zeros from the middle of one message's body to the middle of a message five later, in the third of
    clean-multi's four CommitLog files (recoverNormally reads it): checkMessageAndReturnSize refuses the first
    message (its body CRC or its sizes), recovery cuts at its start and deletes the fourth file.  The six
    messages the zeros touch are gone; every message after the hole is salvageable."""
    store = tmp_path / "store"
    shutil.copytree(corpus_path(*ROCKETMQ_CLEAN, "store"), store)
    name = "00000000000002097152"
    in_file = [m for m in _clean_messages() if m["file"] == name]
    first, last = in_file[500], in_file[505]
    hole_from = first["fileOffset"] + first["totalSize"] - first["bodyLength"] // 2 - 60
    hole_to = last["fileOffset"] + last["totalSize"] // 2
    assert first["fileOffset"] + 88 < hole_from  # past the header: the message is framed, its contents fail
    with open(store / "commitlog" / name, "r+b") as handle:
        handle.seek(hole_from)
        handle.write(bytes(hole_to - hole_from))
    cut = first["phyOffset"]
    dropped = [m for m in _clean_messages() if m["phyOffset"] >= cut]
    start = int(name)
    gone = sum(1 for m in dropped if m["phyOffset"] < start + hole_to and m["phyOffset"] + m["totalSize"] > start + hole_from)
    assert gone == 6
    _assert_store_agree(_store_figures(store, tmp_path), cut, len(dropped), gone)


def test_groups_lag_runs_to_the_log_end_the_broker_loads(tmp_path):
    """A consumer group's lag is the partition's log end after LogLoader.recoverLog (ListOffsets LATEST on the
    loaded log) less the committed offset: on a partition whose last batch is torn it equals lookup's log end,
    the end of the last whole batch, not what the unloaded files or their indexes declare.  c10's
    __consumer_offsets commits segtool-cg's offsets for c01-plain; c01's partition 0 lies beside it, torn."""
    log_dir = tmp_path / "logdir"
    for name in ("__consumer_offsets-0", "__consumer_offsets-2"):
        shutil.copytree(corpus_path("kafka", "c10-consumer-offsets", "data", name), log_dir / name)
    source = corpus_path(*CLEAN)
    partition = log_dir / source.name
    shutil.copytree(source, partition)
    batches = list(BatchScan(open_buffer(str(source / LAST_SEGMENT)), path=LAST_SEGMENT))
    with open(partition / LAST_SEGMENT, "r+b") as handle:
        handle.truncate(batches[-1].position + 100)
    whole_end = batches[-2].last_offset + 1
    report, _ = _json("groups", str(log_dir))
    committed = next(o for g in report["groups"] if g["group"] == "segtool-cg" for o in g["offsets"]
                     if (o["topic"], o["partition"]) == ("c01-plain", 0))
    latest, _ = _json("lookup", str(partition), "--timestamp", "latest")
    assert committed["log_end_offset"] == latest["offset"] == whole_end
    assert committed["lag"] == whole_end - committed["offset"]
