"""Kafka 3.9's start-up, step by step, in the one plan every command answers from (issue 28, items 4-6).

- ``LogLoader.loadSegmentFiles``: a segment whose ``.index`` does not exist fails
  ``LogSegment.sanityCheck`` (NoSuchFileException) and is recovered there (``recoverSegment``), with or
  without a clean-shutdown marker; ``LogSegment.recover`` truncates it at its first invalid batch and the
  segments after it stay (``recoverLog`` recovers it again and truncates nothing more).
- ``KafkaMetadataLog.apply``: ``recoverSnapshots`` deletes ``.checkpoint.part`` / ``.checkpoint.deleted``
  files, then ``truncateToLatestSnapshot`` takes the latest snapshot in ``OffsetAndEpoch.compareTo``'s
  order (epoch first, then end offset); when its epoch is above ``UnifiedLog.latestEpoch`` or equal with
  an end offset past the log end, ``truncateFullyAndStartAt`` empties the log at that offset and
  ``forgetSnapshotsBefore`` deletes every older snapshot.
- ``LogLoader.load`` of a ``-delete`` directory skips ``recoverLog`` and returns next offset 0.
- A batch cut short whose header is whole names its offsets (``FileLogInputStream.nextBatch`` reads
  the header): no command says a range whose end is before its start.

Expected values come from the corpus files (the batches of the clean original, the damaged batch's
record count, case.json's corruption record, the leader-epoch-checkpoint and snapshot names).
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from segtool.kafka.log import BatchScan
from segtool.source import open_buffer
from tests.conftest import corpus_path, segtool

CLEAN = ("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
DAMAGED = "00000000000000000525.log"
NEXT_BASE = 1047  # the segment after it
METADATA = ("wild", "Danielowo2000__BigDataTechnologies-Version-2", "kafka_data", "__cluster_metadata-0")
RANGE = re.compile(r"(?<![\d.])(\d+)\.\.(\d+)(?![\d.])")


def _json(*args) -> tuple[dict, int]:
    run = segtool(*args, "--json")
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout), run.returncode


def _no_inverted_range(text: str) -> None:
    for first, last in RANGE.findall(text):
        assert int(last) >= int(first), f"{first}..{last} in {text!r}"


@pytest.fixture(params=[False, True], ids=["unclean", "clean-shutdown-marker"])
def missing_index(request, tmp_path):
    """c01-plain-0 with one byte flipped in the records of a middle batch of segment 525 and that
    segment's .index removed; with or without .kafka_cleanshutdown in its log dir."""
    partition = tmp_path / "logdir" / "c01-plain-0"
    shutil.copytree(corpus_path(*CLEAN), partition)
    for path in partition.iterdir():
        path.chmod(0o644)
    batches = list(BatchScan(open_buffer(str(partition / DAMAGED)), path=DAMAGED))
    damaged = batches[len(batches) // 2]
    data = bytearray((partition / DAMAGED).read_bytes())
    data[damaged.position + 100] ^= 0x20  # past the 61-byte header: the records, so the CRC-32C fails
    (partition / DAMAGED).write_bytes(bytes(data))
    (partition / DAMAGED.replace(".log", ".index")).unlink()
    if request.param:
        (partition.parent / ".kafka_cleanshutdown").write_bytes(b"")
    return partition, damaged, len(data)


def test_load_segment_files_truncates_a_segment_missing_its_index(missing_index, tmp_path):
    """LogLoader.loadSegmentFiles -> LogSegment.sanityCheck (NoSuchFileException) -> recoverSegment:
    the segment is cut at the batch whose CRC fails; the log end stays the last segment's."""
    partition, damaged, size = missing_index
    cut, cut_offset = damaged.position, damaged.base_offset
    dropped, gone = NEXT_BASE - cut_offset, damaged.record_count  # c01's offsets are dense
    inspected, code = _json("inspect", str(partition.parent))
    assert code == 1
    found = inspected["log_dirs"][0]["partitions"][0]
    plan = found["plan"]
    recovered = {s["path"]: s for s in plan["recovered_segments"]}[str(partition / DAMAGED)]
    assert recovered["because"] == "missing_offset_index" and recovered["bytes_truncated"] == size - cut
    assert plan["truncated_at"] == {"segment": str(partition / DAMAGED), "byte_offset": cut, "offset": cut_offset,
                                    "dropped_until": NEXT_BASE, "bytes_dropped": size - cut,
                                    "records_dropped": dropped, "records_salvageable": dropped - gone,
                                    "records_gone": gone}
    assert plan["deleted_segments"] == [] and plan["log_end_offset"] == 2500
    truncations = [p for p in found["problems"] if p["kind"] == "recovery_truncation"]
    assert [(p["byte_offset"], p["offset"]) for p in truncations] == [(cut, cut_offset)]
    assert inspected["summary"]["partitions_truncated"] == 1
    text = segtool("inspect", str(partition.parent)).stdout
    assert f"dropping {size - cut} bytes and {dropped} record(s) at offsets {cut_offset}..{NEXT_BASE - 1}" in text
    assert "LogLoader.loadSegmentFiles recovers 00000000000000000525.log" in text
    assert "0 truncated" not in text

    latest, code = _json("lookup", str(partition), "--timestamp", "latest")
    assert code == 1 and latest["offset"] == 2500
    assert latest["beyond_recovery"]["records"] == dropped and latest["beyond_recovery"]["gone"] == gone
    fetched, _ = _json("lookup", str(partition), "--offset", str(cut_offset))
    assert fetched["offset"] == NEXT_BASE  # the cut offsets are gone: a fetch goes on to the next segment
    verified, _ = _json("verify", str(partition))
    recovery = next(f for f in verified["files"] if f["path"] == str(partition / DAMAGED))["recovery"]
    assert (recovery["bytes_lost"], recovery["records_lost"], recovery["records_gone"]) == (size - cut, dropped, gone)
    salvaged, _ = _json("salvage", str(partition), "--out", str(tmp_path / "salvaged"))
    assert salvaged["summary"]["records_lost"] == gone
    assert salvaged["partitions"][0]["offset_ranges_lost"] == [
        {"first_offset": cut_offset, "last_offset": damaged.last_offset}]


def _metadata_copy(tmp_path, renames: dict[str, str], extra: dict[str, str] | None = None):
    source = corpus_path(*METADATA)
    directory = tmp_path / "logdir" / source.name
    shutil.copytree(source, directory)
    for path in directory.iterdir():
        path.chmod(0o644)
    for old, new in renames.items():
        (directory / old).rename(directory / new)
    for name, copied_from in (extra or {}).items():
        shutil.copyfile(directory / copied_from, directory / name)
    return directory


def _kraft_rule(directory) -> tuple[tuple[int, int, str] | None, int, int]:
    """truncateToLatestSnapshot's inputs from the files: the latest snapshot (OffsetAndEpoch: epoch, then
    offset), the log's latest leader epoch (leader-epoch-checkpoint's last entry) and the log end (the
    last whole batch of the one segment)."""
    snapshots = [(int(p.name[:20]), int(p.name[21:31]), p.name) for p in directory.glob("*.checkpoint")]
    latest = max(snapshots, key=lambda s: (s[1], s[0]), default=None)
    entries = (directory / "leader-epoch-checkpoint").read_text().split("\n")[2:]
    log_epoch = int([line for line in entries if line.strip()][-1].split()[0])
    log = directory / "00000000000000000000.log"
    log_end = list(BatchScan(open_buffer(str(log)), path=str(log)))[-1].last_offset + 1
    return latest, log_epoch, log_end


LATEST = "00000000000000014707-0000000001.checkpoint"
OLDER = "00000000000000007334-0000000001.checkpoint"


@pytest.mark.parametrize("renamed, truncates", [
    ("00000000000000020000-0000000001.checkpoint", True),   # same epoch, end past the log end
    ("00000000000000014707-0000000002.checkpoint", True),   # a higher epoch, end inside the log
    ("00000000000000020000-0000000000.checkpoint", False),  # past the end, but a lower epoch: not the latest
])
def test_truncate_to_latest_snapshot(renamed, truncates, tmp_path):
    """KafkaMetadataLog.truncateToLatestSnapshot acts on the latest snapshot alone and forgets every
    older one (forgetSnapshotsBefore); recoverSnapshots deletes a .checkpoint.deleted leftover."""
    directory = _metadata_copy(tmp_path, {LATEST: renamed}, {OLDER + ".deleted": OLDER})
    latest, log_epoch, log_end = _kraft_rule(directory)
    assert truncates == (latest[1] > log_epoch or (latest[1] == log_epoch and latest[0] > log_end))
    inspected, _ = _json("inspect", str(directory.parent))
    plan = inspected["log_dirs"][0]["partitions"][0]["plan"]
    kraft = plan["kraft_snapshots"]
    assert kraft["latest_snapshot"] == str(directory / latest[2])
    assert (kraft["log_latest_epoch"], kraft["log_end_offset"]) == (log_epoch, log_end)
    older = [name for name in (OLDER, renamed) if name != latest[2]] if truncates else []
    assert sorted((d["path"], d["reason"]) for d in kraft["deleted"]) == sorted(
        [(str(directory / (OLDER + ".deleted")), "marked_deleted")]
        + [(str(directory / name), "before_latest") for name in older])
    text = segtool("inspect", str(directory.parent)).stdout
    assert "ends past the metadata log's end" not in text
    answer, _ = _json("lookup", str(directory), "--timestamp", "latest")
    if truncates:
        assert kraft["truncates_to"] == plan["log_end_offset"] == plan["new_log_start_offset"] == latest[0]
        assert plan["deleted_segments"] == [str(directory / "00000000000000000000.log")]
        assert f"truncateToLatestSnapshot: the latest snapshot {latest[2]}" in text
        assert answer["offset"] == latest[0]
    else:
        assert kraft["truncates_to"] is None and plan["log_end_offset"] == log_end
        assert plan["deleted_segments"] == [] and "truncateToLatestSnapshot" not in text
        assert answer["offset"] == log_end


def test_a_torn_last_batch_is_named_by_its_header_everywhere(tmp_path):
    """c11b: the last batch is cut 2955 bytes in; its whole header declares offsets 500..524
    (case.json), and every command says so; no text says a range that ends before it starts."""
    corruption = json.loads(corpus_path("kafka", "c11b-truncated-last-batch", "case.json").read_text())["corruption"]
    first, last = corruption["last_batch_base_offset"], corruption["last_batch_last_offset"]
    partition = tmp_path / "logdir" / "c01-plain-0"
    shutil.copytree(corpus_path("kafka", "c11b-truncated-last-batch", "data", "c01-plain-0"), partition)
    expected = f"{first}..{last}"
    runs = {"inspect": [str(partition.parent)], "verify": [str(partition)],
            "lookup": [str(partition), "--timestamp", "latest"], "report": [str(partition)]}
    for command, args in runs.items():
        text = segtool(command, *args).stdout
        assert expected in text, command
        _no_inverted_range(text)
    salvage_text = segtool("salvage", str(partition), "--out", str(tmp_path / "s1")).stdout
    assert f"offsets lost: {expected}" in salvage_text
    _no_inverted_range(salvage_text)
    plan = _json("inspect", str(partition.parent))[0]["log_dirs"][0]["partitions"][0]["plan"]
    assert (plan["truncated_at"]["offset"], plan["truncated_at"]["dropped_until"] - 1) == (first, last)
    assert plan["truncated_at"]["records_dropped"] == last - first + 1
    beyond = _json("lookup", str(partition), "--timestamp", "latest")[0]["beyond_recovery"]
    assert (beyond["first_offset"], beyond["last_offset"], beyond["records"]) == (first, last, last - first + 1)
    report = _json("report", str(partition))[0]["partitions"][0]["startup"]
    assert (report["dropped_first_offset"], report["dropped_last_offset"], report["dropped_records"]) == (
        first, last, last - first + 1)
    salvaged = _json("salvage", str(partition), "--out", str(tmp_path / "s2"))[0]
    assert salvaged["partitions"][0]["offset_ranges_lost"] == [{"first_offset": first, "last_offset": last}]


def test_a_delete_directory_ends_at_offset_0(tmp_path):
    """LogLoader.load: a directory named ``<topic>-<partition>.<uuid>-delete`` skips recoverLog and
    answers next offset 0 whatever its segments hold."""
    directory = tmp_path / "logdir" / "c01-plain-0.0123456789abcdef0123456789abcdef-delete"
    shutil.copytree(corpus_path(*CLEAN), directory)
    plan = _json("inspect", str(directory.parent))[0]["log_dirs"][0]["partitions"][0]["plan"]
    assert plan["recovery_skipped_for_deletion"] and plan["log_end_offset"] == 0
    assert plan["new_recovery_point"] == 0 and plan["truncated_at"] is None
    latest, _ = _json("lookup", str(directory), "--timestamp", "latest")
    assert latest["offset"] == 0
    missed, _ = _json("lookup", str(directory), "--offset", "5")
    assert missed["offset"] is None and missed["log_end_offset"] == 0
