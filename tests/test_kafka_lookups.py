"""Offset and timestamp lookups against the live broker's answers in the corpus.

timestamp-lookups.json holds ListOffsets answers (kafka-get-offsets.sh) and
offset-lookups.json what a consumer got when fetching at an offset.  Segment
mtimes matter for empty segments (Kafka's largestTimestamp falls back to them),
so each case is copied and its recorded mtimes restored first.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from segtool.ops.lookup import lookup_offset, lookup_timestamp
from tests.conftest import case_dirs, segtool


def _lookup_cases():
    return [c for c in case_dirs("kafka") if (c / "expected" / "timestamp-lookups.json").exists()]


def restore_case(case: Path, tmp_path: Path) -> Path:
    """Copy the case's data/ and set file mtimes from case.json (git does not keep them)."""
    target = tmp_path / case.name
    shutil.copytree(case / "data", target / "data")
    meta = json.loads((case / "case.json").read_text())
    mtimes = meta.get("file_mtimes_ms", {})
    for part_dir in (target / "data").iterdir():
        for file in part_dir.iterdir():
            ms = mtimes.get(f"{part_dir.name}/{file.name}", mtimes.get(file.name))
            if ms is not None:
                os.utime(file, ns=(ms * 1_000_000, ms * 1_000_000))
    return target


@pytest.fixture(params=_lookup_cases(), ids=lambda c: c.name)
def restored(request, tmp_path):
    return request.param, restore_case(request.param, tmp_path)


def test_timestamp_lookups_match_broker(restored):
    case, target = restored
    rows = json.loads((case / "expected" / "timestamp-lookups.json").read_text())
    assert rows
    for row in rows:
        directory = str(target / "data" / f"{row['topic']}-{row['partition']}")
        answer = lookup_timestamp(directory, row["timestamp"])
        assert answer["offset"] == row["offset"], row


def test_offset_lookups_match_broker(restored):
    case, target = restored
    rows = json.loads((case / "expected" / "offset-lookups.json").read_text())
    assert rows
    for row in rows:
        directory = str(target / "data" / f"{row['topic']}-{row['partition']}")
        answer = lookup_offset(directory, row["requested_offset"])
        assert answer["offset"] == row["offset"], row
        if row["offset"] is not None:
            assert answer["timestamp"] == row["timestamp"], row
            assert answer["timestamp_type"] == row["timestamp_type"], row
            assert (answer["key"] or "null") == (row["key"] if row["key"] is not None else "null"), row


def test_cli_json_answers(tmp_path):
    cases = [c for c in case_dirs("kafka") if c.name == "c07-compacted"]
    if not cases:
        pytest.skip("c07-compacted not available")
    target = restore_case(cases[0], tmp_path)
    part = target / "data" / "c07-compact-0"
    rows = json.loads((cases[0] / "expected" / "offset-lookups.json").read_text())
    row = next(r for r in rows if r["offset"] is not None)
    run = segtool("lookup", part, "--offset", row["requested_offset"], "--json")
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert {"offset", "timestamp", "segment", "position"} <= set(answer)
    assert answer["offset"] == row["offset"] and answer["timestamp"] == row["timestamp"]
    past = segtool("lookup", part, "--timestamp", "2100-01-01T00:00:00Z", "--json")
    assert past.returncode == 1 and json.loads(past.stdout)["offset"] is None
