"""A partition left with the files of an interrupted log cleaning: lookups answer for the
partition Kafka's LogLoader makes of it (swap completed, .cleaned and .deleted files dropped).

The swap segment here is what the cleaner writes when it merges two segments: the
batches of both under the first one's base offset, ``<base>.log.swap``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segtool.kafka.partition import PartitionView
from segtool.ops.lookup import lookup_offset
from tests.conftest import case_dirs


@pytest.fixture
def partitions(tmp_path):
    """(the original partition, a copy with a pending swap of its two segments merged)."""
    cases = [c for c in case_dirs("kafka") if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    original = cases[0] / "data" / "c04-txn-0"
    logs = sorted(original.glob("*.log"))
    assert len(logs) == 2 and all(log.stat().st_size for log in logs)
    swapped = tmp_path / original.name
    shutil.copytree(original, swapped)
    (swapped / (logs[0].name + ".swap")).write_bytes(logs[0].read_bytes() + logs[1].read_bytes())
    return original, swapped, logs


def _answers(partition: PartitionView):
    return [(hit.offset, hit.timestamp, hit.record.key) if hit else None
            for hit in map(partition.read_at, range(partition.log_end_offset + 1))]


def test_an_interrupted_swap_is_completed_as_kafka_loads_it(partitions):
    original, swapped, logs = partitions
    view = PartitionView(str(swapped))
    swap = str(swapped / (logs[0].name + ".swap"))
    assert [s.log_path for s in view.segments] == [swap]  # both .log files lie in the swap's offset range
    assert view.notes and logs[0].name in view.notes[0] and logs[1].name in view.notes[0]
    answers = _answers(view)
    assert answers == _answers(PartitionView(str(original)))
    last_record = max(a[0] for a in answers if a is not None)  # in what was the second segment
    assert last_record >= int(logs[1].name.split(".")[0])
    answer = lookup_offset(str(swapped), last_record)
    assert answer["offset"] == last_record and answer["segment"] == swap and answer["notes"] == view.notes
    # taken as they are on disk, the .log files answer
    as_on_disk = PartitionView(str(swapped), complete_swaps=False)
    assert [Path(s.log_path).name for s in as_on_disk.segments] == [log.name for log in logs]
    assert as_on_disk.notes == []


def test_a_swap_above_a_cleaned_file_is_an_unfinished_split_and_ignored(partitions):
    _, swapped, logs = partitions
    (swapped / (logs[0].name + ".cleaned")).write_bytes(logs[0].read_bytes())
    (swapped / (logs[1].name + ".deleted")).write_bytes(logs[1].read_bytes())
    view = PartitionView(str(swapped))
    assert [Path(s.log_path).name for s in view.segments] == [log.name for log in logs]
    assert len(view.notes) == 1 and "ignored" in view.notes[0]


def test_verify_says_what_kafka_makes_of_a_pending_swap(partitions):
    from segtool.ops.verify import verify

    _, swapped, logs = partitions
    report = verify([str(swapped)], hash_inputs=False)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    swap = by_name[logs[0].name + ".swap"]
    assert swap["status"] == "ok"  # a well-formed segment; the swap itself is information
    assert [p.kind.code for p in swap["problems"]] == ["pending_swap"]
    assert swap["problems"][0].message == PartitionView(str(swapped)).notes[0]
    others = [f for name, f in by_name.items() if name != logs[0].name + ".swap"]
    assert not [p for f in others for p in f["problems"] if p.kind.code == "pending_swap"]

