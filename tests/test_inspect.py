"""`inspect`: the startup plan against the brokers' own recoveries (expected values read from the corpus's
case.json and expected/kafka-recovery), every wild log dir without an error, and each cross-check on log
dirs built in tmp from corpus partitions."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from segtool.findings import Finding, FindingKind
from segtool.kafka.names import file_name, kraft_snapshot_id, offset_from_file_name
from segtool.ops.inspect import exit_code, inspect
from tests.conftest import corpus_path, segtool

RECOVERED_CASES = ("c11a-crc-byte-flip", "c11b-truncated-last-batch", "c11c-zero-tail-64k")


def _only_partition(report: dict) -> dict:
    (log_dir,) = report["log_dirs"]
    (partition,) = log_dir["partitions"]
    return partition


def _kinds(problems: list[Finding]) -> set[FindingKind]:
    return {p.kind for p in problems}


@pytest.mark.parametrize("case", RECOVERED_CASES)
def test_plan_matches_the_brokers_recovery(case):
    root = corpus_path("kafka", case)
    recorded = json.loads((root / "case.json").read_text())["corruption"]["recovery"]
    plan = _only_partition(inspect([str(root / "data")]))["plan"]
    assert not plan["clean_shutdown"]  # the broker ran with .kafka_cleanshutdown deleted
    (segment,) = plan["recovered_segments"]
    after = recorded["files_after"]
    base = file_name(segment["base_offset"], "")
    assert segment["valid_bytes"] == recorded["log_size_after"] == after[base + ".log"]
    assert segment["offset_index_entries"] * 8 == after[base + ".index"]
    assert segment["time_index_entries"] * 12 == after[base + ".timeindex"]
    # the broker's producer snapshot after recovery is written at the log end it recovered to
    (snapshot,) = [name for name in after if name.endswith(".snapshot")]
    assert plan["log_end_offset"] == recorded["truncated_to_offset"] == offset_from_file_name(snapshot)
    assert plan["truncated_at"]["offset"] == recorded["truncated_to_offset"]
    assert plan["truncated_at"]["byte_offset"] == recorded["log_size_after"]
    # the bytes kept are the broker's recovered .log, byte for byte
    (kept,) = (root / "expected" / "kafka-recovery").glob(f"*/{base}.log")
    data = Path(segment["path"]).read_bytes()
    assert data[:segment["valid_bytes"]] == kept.read_bytes()
    assert plan["truncated_at"]["bytes_dropped"] == recorded["log_size_before"] - recorded["log_size_after"]


def test_hot_copy_plan_recovers_every_segment_and_keeps_every_record():
    root = corpus_path("kafka", "c02-unclean-hot-copy")
    case = json.loads((root / "case.json").read_text())
    report = inspect([str(root / "data")])
    assert exit_code(report) == 0
    partitions = report["log_dirs"][0]["partitions"]
    assert {os.path.basename(p["directory"]) for p in partitions} == set(case["partitions"])
    for partition in partitions:
        recorded = case["partitions"][os.path.basename(partition["directory"])]
        plan = partition["plan"]
        assert plan["truncated_at"] is None and not plan["deleted_segments"]
        assert plan["log_end_offset"] == recorded["last_offset"] + 1
        assert [s["base_offset"] for s in plan["recovered_segments"]] == \
            [s["base_offset"] for s in recorded["segment_list"]]
        for recovered, segment in zip(plan["recovered_segments"][:-1], recorded["segment_list"]):
            files = segment["files"]
            base = file_name(segment["base_offset"], "")
            assert recovered["valid_bytes"] == files[base + ".log"]
            # rolled segments were trimmed at roll time: recovery writes the same entries
            assert recovered["offset_index_entries"] * 8 == files[base + ".index"]
            assert recovered["time_index_entries"] * 12 == files[base + ".timeindex"]


def _wild_log_dirs() -> list[Path]:
    """Every directory of wild/ holding Kafka partition directories or a meta.properties."""
    wild = corpus_path("wild")
    found = set()
    for directory, subdirectories, files in os.walk(wild):
        here = Path(directory)
        if "meta.properties" in files:
            found.add(here)
        for name in subdirectories:
            if any((here / name / marker).exists() for marker in ("partition.metadata", "leader-epoch-checkpoint")) \
                    or any(f.endswith(".log") for f in os.listdir(here / name)):
                if not (here / "partition.metadata").exists():
                    found.add(here)
    return sorted(found - {wild})


def test_every_wild_log_dir_inspects_without_error():
    log_dirs = _wild_log_dirs()
    assert len(log_dirs) > 20
    for log_dir in log_dirs:
        report = inspect([str(log_dir)])
        assert exit_code(report) in (0, 1), log_dir
        assert report["summary"]["unreadable"] == 0, log_dir
        (inspected,) = report["log_dirs"]
        if (log_dir / "meta.properties").exists():
            assert inspected["meta_properties"] is not None, log_dir
        for partition in inspected["partitions"]:
            if partition["state"] == "metadata":
                # KafkaMetadataLog recovers the metadata log at every start
                assert partition["plan"]["loaded_by"] == "KafkaMetadataLog"
                assert not partition["plan"]["clean_shutdown"]
                assert FindingKind.KRAFT_SNAPSHOT_MISMATCH not in _kinds(partition["problems"]), partition["problems"]
            elif inspected["clean_shutdown"]["marker_present"]:
                assert all(s["because"] != "unclean_shutdown" for s in partition["plan"]["recovered_segments"])


def test_wild_kraft_log_dir_reads_meta_properties_quorum_state_and_snapshots():
    root = corpus_path("wild", "rjmfernandes__flink-on-prem", "data")
    (log_dir,) = inspect([str(root)])["log_dirs"]
    properties = dict(line.split("=", 1) for line in (root / "meta.properties").read_text().splitlines()
                      if "=" in line and not line.startswith("#"))
    assert log_dir["meta_properties"]["cluster_id"] == properties["cluster.id"]
    assert log_dir["meta_properties"]["node_id"] == int(properties["node.id"])
    metadata = next(p for p in log_dir["partitions"] if p["state"] == "metadata")
    state = json.loads((root / "__cluster_metadata-0" / "quorum-state").read_text())
    assert metadata["quorum_state"]["leader_epoch"] == state["leaderEpoch"]
    assert [(s["end_offset"], s["epoch"]) for s in metadata["kraft_snapshots"]] == sorted(
        (int(n[:20]), int(n[21:31])) for n in os.listdir(root / "__cluster_metadata-0") if n.endswith(".checkpoint"))
    assert {c["name"] for c in log_dir["checkpoints"]} >= {"recovery-point-offset-checkpoint",
                                                            "replication-offset-checkpoint"}


# -- generated log dirs ---------------------------------------------------------------------------


@pytest.fixture
def log_dir(tmp_path) -> Path:
    """A log dir holding a copy of c01-plain-0 (five segments, offsets 0..2499), stopped cleanly."""
    source = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    root = tmp_path / "logs"
    shutil.copytree(source, root / "c01-plain-0")
    for path in (root / "c01-plain-0").iterdir():
        path.chmod(0o644)
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    return root


def _checkpoint(root: Path, name: str, entries: list[tuple[str, int, int]]) -> None:
    lines = ["0", str(len(entries))] + [f"{topic} {partition} {offset}" for topic, partition, offset in entries]
    (root / name).write_text("\n".join(lines) + "\n")


def _end(root: Path) -> int:
    return _only_partition(inspect([str(root)]))["log_end_offset"]


def test_clean_shutdown_recovers_nothing(log_dir):
    _checkpoint(log_dir, "recovery-point-offset-checkpoint", [("c01-plain", 0, _end(log_dir))])
    report = inspect([str(log_dir)])
    partition = _only_partition(report)
    assert exit_code(report) == 0
    assert report["log_dirs"][0]["clean_shutdown"] == {"marker_present": True, "broker_epoch": 7}
    assert partition["plan"]["recovered_segments"] == []
    assert partition["plan"]["new_recovery_point"] == partition["log_end_offset"]


def test_unclean_shutdown_recovers_from_the_segment_holding_the_recovery_point(log_dir):
    bases = sorted(offset_from_file_name(p) for p in (log_dir / "c01-plain-0").glob("*.log"))
    recovery_point = bases[2] + 5  # inside the third segment
    _checkpoint(log_dir, "recovery-point-offset-checkpoint", [("c01-plain", 0, recovery_point)])
    (log_dir / ".kafka_cleanshutdown").unlink()
    report = inspect([str(log_dir)])
    plan = _only_partition(report)["plan"]
    assert [s["base_offset"] for s in plan["recovered_segments"]] == bases[2:]
    assert {s["because"] for s in plan["recovered_segments"]} == {"unclean_shutdown"}
    assert plan["new_recovery_point"] == recovery_point
    assert FindingKind.NO_CLEAN_SHUTDOWN_MARKER in _kinds(report["log_dirs"][0]["problems"])


def test_damage_in_a_middle_segment_truncates_it_and_deletes_the_later_ones(log_dir):
    logs = sorted((log_dir / "c01-plain-0").glob("*.log"))
    data = bytearray(logs[1].read_bytes())
    data[len(data) // 2] ^= 0x20
    logs[1].write_bytes(bytes(data))
    (log_dir / ".kafka_cleanshutdown").unlink()
    report = inspect([str(log_dir)])
    plan = _only_partition(report)["plan"]
    assert plan["truncated_at"]["segment"] == str(logs[1])
    assert plan["deleted_segments"] == [str(p) for p in logs[2:]]
    assert plan["log_end_offset"] == plan["truncated_at"]["offset"] < offset_from_file_name(logs[2])
    assert exit_code(report) == 1
    # the producer snapshots at the deleted segments' bases and past the new end go
    assert plan["producer_snapshots_deleted"] == sorted(
        offset_from_file_name(p) for p in (log_dir / "c01-plain-0").glob("*.snapshot")
        if offset_from_file_name(p) > plan["log_end_offset"])


def test_checkpoints_beyond_the_log_end(log_dir):
    end = _end(log_dir)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        _checkpoint(log_dir, name, [("c01-plain", 0, end + 100)])
    partition = _only_partition(inspect([str(log_dir)]))
    beyond = [p for p in partition["problems"] if p.kind is FindingKind.CHECKPOINT_BEYOND_LOG_END]
    assert len(beyond) == 2 and all(p.offset == end + 100 for p in beyond)
    assert partition["plan"]["new_recovery_point"] == end


def test_log_start_beyond_the_log_end_deletes_every_segment(log_dir):
    end = _end(log_dir)
    _checkpoint(log_dir, "log-start-offset-checkpoint", [("c01-plain", 0, end + 100)])
    partition = _only_partition(inspect([str(log_dir)]))
    assert partition["plan"]["deletes_every_segment"]
    assert partition["plan"]["log_end_offset"] == partition["plan"]["new_log_start_offset"] == end + 100
    assert FindingKind.CHECKPOINT_BEYOND_LOG_END in _kinds(partition["problems"])


def test_checkpoint_entries_without_a_directory_and_directories_without_an_entry(log_dir):
    _checkpoint(log_dir, "replication-offset-checkpoint", [("gone", 3, 42)])
    report = inspect([str(log_dir)])
    (log_dir_report,) = report["log_dirs"]
    assert FindingKind.CHECKPOINT_WITHOUT_PARTITION in _kinds(log_dir_report["problems"])
    assert FindingKind.PARTITION_WITHOUT_CHECKPOINT in _kinds(_only_partition(report)["problems"])
    assert exit_code(report) == 1


def test_topic_ids_must_agree_between_a_topics_partitions(log_dir):
    shutil.copytree(log_dir / "c01-plain-0", log_dir / "c01-plain-1")
    other = "AAAAAAAAAAAAAAAAAAAAAg"
    (log_dir / "c01-plain-1" / "partition.metadata").write_text(f"version: 0\ntopic_id: {other}")
    report = inspect([str(log_dir)])
    for partition in report["log_dirs"][0]["partitions"]:
        assert FindingKind.TOPIC_ID_MISMATCH in _kinds(partition["problems"])


def test_a_missing_offset_index_is_rebuilt_even_after_a_clean_shutdown(log_dir):
    index = sorted((log_dir / "c01-plain-0").glob("*.index"))[1]
    index.unlink()
    plan = _only_partition(inspect([str(log_dir)]))["plan"]
    (recovered,) = plan["recovered_segments"]
    assert recovered["because"] == "missing_offset_index"
    assert recovered["base_offset"] == offset_from_file_name(index)


def test_renamed_and_foreign_directories(log_dir):
    shutil.copytree(log_dir / "c01-plain-0", log_dir / f"c01-plain-0.{'ab' * 16}-delete")
    (log_dir / "not-a-partition").mkdir()
    (log_dir / ".kafka_cleanshutdown").unlink()
    report = inspect([str(log_dir)])
    (log_dir_report,) = report["log_dirs"]
    deleted = next(p for p in log_dir_report["partitions"] if p["state"] == "delete")
    assert deleted["plan"]["recovery_skipped_for_deletion"]
    assert deleted["plan"]["recovered_segments"] == []
    assert FindingKind.NOT_A_PARTITION_DIRECTORY in _kinds(log_dir_report["problems"])


def test_a_kraft_snapshot_named_for_another_epoch(tmp_path):
    source = corpus_path("wild", "rjmfernandes__flink-on-prem", "data", "__cluster_metadata-0")
    snapshot = sorted(source.glob("*.checkpoint"))[0]
    directory = tmp_path / "logs" / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint"):
        shutil.copyfile(source / name, directory / name)
    offset, _epoch = kraft_snapshot_id(snapshot)
    shutil.copyfile(snapshot, directory / f"{offset:020d}-{99:010d}.checkpoint")
    metadata = _only_partition(inspect([str(tmp_path / "logs")]))
    assert FindingKind.KRAFT_SNAPSHOT_MISMATCH in _kinds(metadata["problems"])


def test_command_line_exit_codes_and_json(tmp_path):
    damaged = corpus_path("kafka", "c11a-crc-byte-flip", "data")
    run = segtool("inspect", damaged, "--json")
    assert run.returncode == 1
    assert json.loads(run.stdout)["summary"]["partitions_truncated"] == 1
    text = segtool("inspect", damaged)
    assert text.returncode == 1 and "truncates 00000000000000000000.log at byte" in text.stdout
    assert segtool("inspect", tmp_path / "absent").returncode == 2
    assert segtool("inspect", damaged / "c01-plain-0").returncode == 2  # a partition, not a log dir


def _topic_records(metadata_dir: Path) -> dict[str, str]:
    """Each topic's id from the metadata log's TopicRecords, read with kafka-dump-log's decoder (last one wins)."""
    from segtool.kafka.log import BatchScan
    from segtool.kafka.records import batch_records
    from segtool.kafka.metadata import decode_metadata_record

    ids = {}
    for path in sorted(metadata_dir.glob("*.log")) + sorted(metadata_dir.glob("*-*.checkpoint")):
        for batch in BatchScan(path.read_bytes()):
            for record in () if batch.is_control else batch_records(batch):
                change = decode_metadata_record(record.value)
                if change.name == "TopicRecord":
                    ids[change.data["name"]] = change.data["topicId"]
    return ids


def test_partition_metadata_topic_ids_are_checked_against_the_metadata_log(tmp_path):
    source = corpus_path("wild", "rjmfernandes__flink-on-prem", "data")
    ids = _topic_records(source / "__cluster_metadata-0")
    report = inspect([str(source)])
    live = [p for p in report["log_dirs"][0]["partitions"] if p["topic_id"] is not None and p["topic"] in ids]
    assert live and all(p["topic_id"] == ids[p["topic"]] for p in live)
    assert not any(x.kind is FindingKind.TOPIC_ID_MISMATCH for p in live for x in p["problems"])

    # a copy whose partition.metadata names another topic's id
    root = tmp_path / "data"
    shutil.copytree(source / "__cluster_metadata-0", root / "__cluster_metadata-0")
    victim = next(p for p in live if p["topic"] != "__cluster_metadata")
    other = next(topic_id for topic, topic_id in ids.items() if topic != victim["topic"])
    copied = root / os.path.basename(victim["directory"])
    shutil.copytree(victim["directory"], copied)
    (copied / "partition.metadata").write_text(f"version: 0\ntopic_id: {other}")
    (root / ".kafka_cleanshutdown").write_text("")
    (partition,) = [p for p in inspect([str(root)])["log_dirs"][0]["partitions"] if p["topic"] == victim["topic"]]
    (problem,) = [x for x in partition["problems"] if x.kind is FindingKind.TOPIC_ID_MISMATCH]
    assert other in problem.message and ids[victim["topic"]] in problem.message


def test_offsets_beyond_a_segments_relative_range_split_it(log_dir):
    """LogSegment.recover throws LogSegmentOffsetOverflowException on a batch whose last offset is more
    than 2^31-1 past the segment's base; LogLoader splits the segment (LocalLog.splitOverflowedSegment)
    and loads again: nothing is truncated."""
    from tests.kafka_build import make_batch

    logs = sorted((log_dir / "c01-plain-0").glob("*.log"))
    last = logs[-1]
    original_size = last.stat().st_size
    far = offset_from_file_name(last) + 2**31 + 10
    appended = make_batch(far, [(b"k", b"v%d" % i) for i in range(3)], 1_700_000_000_000)
    with open(last, "ab") as f:
        f.write(appended)
    (log_dir / ".kafka_cleanshutdown").unlink()
    _checkpoint(log_dir, "recovery-point-offset-checkpoint", [("c01-plain", 0, offset_from_file_name(last))])
    report = inspect([str(log_dir)])
    plan = _only_partition(report)["plan"]
    assert [(s["base_offset"], s["first_byte"], s["size"], s["split_from"]) for s in plan["split_segments"]] == [
        (offset_from_file_name(last), 0, original_size, str(last)),
        (far, original_size, len(appended), str(last))]
    assert [s["base_offset"] for s in plan["recovered_segments"]] == [offset_from_file_name(last), far]
    assert plan["truncated_at"] is None and plan["deleted_segments"] == []
    assert plan["log_end_offset"] == far + 3
    assert any("splits it" in note for note in plan["notes"])
    # verify names the overflow and, as the broker splits rather than cuts, predicts no loss
    run = segtool("verify", "--json", last)
    (checked,) = json.loads(run.stdout)["files"]
    kinds = [p["kind"] for p in checked["problems"]]
    assert "relative_offset_overflow" in kinds and "recovery_truncation" not in kinds
    assert checked["recovery"]["records_lost"] == 0 and checked["recovery"]["salvage"] is None
