"""Legacy (v0/v1) compressed wrappers: which offsets a wrapper holds, as Kafka's own classes say.

Kafka's ``AbstractLegacyRecordBatch.lastOffset()`` is the wrapper's own offset field and its
``baseOffset()`` is ``iterator().next().offset()``: the first inner message's offset (``LegacyRecord``s
unpacked by ``DeepRecordsIterator``; v1 inner offsets are relative to the wrapper's), whereas a v2
``DefaultRecordBatch.baseOffset()`` is a header field.  kafka-dump-log prints a legacy batch as
``offset: <lastOffset>`` followed, with --deep-iteration, by its inner ``| offset:`` lines: the goldens
of c08-legacy-formats give each wrapper's inner offsets, and the expectations here come from them.
"""

from __future__ import annotations

import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from tests.conftest import corpus_path, segtool

CASE = ("kafka", "c08-legacy-formats")
SEGMENTS = ("c08-legacy-v1-0/00000000000000000000.log", "c08-legacy-v0-0/00000000000000000000.log")
_BATCH_LINE = re.compile(r"^offset: (\d+) position: (\d+) .* size: (\d+) magic: ([01]) compresscodec: (\w+)")
_INNER_LINE = re.compile(r"^\| offset: (\d+) ")


def golden_wrappers(segment: str) -> dict[int, dict]:
    """Per wrapper position: its size, its own offset (kafka-dump-log's ``offset:``, lastOffset) and its
    inner offsets (the ``| offset:`` lines), for the compressed wrappers of the segment's golden."""
    golden = corpus_path(*CASE, "expected", "dump", "data", f"{segment}.deep-iteration.print-data-log.stdout")
    wrappers, current = {}, None
    for line in golden.read_text().splitlines():
        if batch := _BATCH_LINE.match(line):
            offset, position, size, _, codec = batch.groups()
            current = None
            if codec != "none":
                current = wrappers[int(position)] = {"size": int(size), "own": int(offset), "inner": []}
        elif (inner := _INNER_LINE.match(line)) and current is not None:
            current["inner"].append(int(inner.group(1)))
    assert wrappers, f"no compressed wrapper in the golden of {segment}"
    return wrappers


def copied_partition(tmp_path, segment: str):
    partition = tmp_path / "in" / segment.split("/")[0]
    shutil.copytree(corpus_path(*CASE, "data", segment.split("/")[0]), partition)
    return partition, partition / segment.split("/")[1]


def damaged_copy(tmp_path, segment: str):
    """The partition copied with one byte flipped in the middle of its first compressed wrapper of several
    inner messages; that wrapper's golden figures."""
    partition, log = copied_partition(tmp_path, segment)
    position, wrapper = next((p, w) for p, w in golden_wrappers(segment).items() if len(w["inner"]) > 1)
    data = bytearray(log.read_bytes())
    data[position + wrapper["size"] // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    return partition, log, position, wrapper


@pytest.mark.parametrize("segment", SEGMENTS)
def test_a_damaged_wrapper_loses_exactly_its_inner_offsets(tmp_path, segment):
    partition, log, position, wrapper = damaged_copy(tmp_path, segment)
    first, last = wrapper["inner"][0], wrapper["inner"][-1]
    assert last == wrapper["own"] and first < last  # lastOffset is the wrapper's field, baseOffset its first inner

    run = segtool("salvage", str(partition), "--out", str(tmp_path / "out"), "--json")
    assert run.returncode == 1, run.stderr
    (salvaged,) = json.loads(run.stdout)["partitions"]
    assert salvaged["offset_ranges_lost"] == [{"first_offset": first, "last_offset": last}]
    assert [(r["first_offset"], r["last_offset"]) for r in salvaged["damaged_ranges"]] == [(first, last)]

    dump = [json.loads(line) for line in segtool("dump", "--json", str(log)).stdout.splitlines()]
    (damaged,) = [item for item in dump if item["kind"] == "damaged_range"]
    assert (damaged["first_byte"], damaged["first_offset"], damaged["last_offset"]) == (position, first, last)
    assert damaged["message"].endswith(f"for the batch of offsets {first}..{last}")

    (checked,) = json.loads(segtool("verify", "--json", str(log)).stdout)["files"]
    problems = {problem["kind"]: problem for problem in checked["problems"]}
    assert f"offsets {first}..{last}" in problems["damaged_range"]["message"]
    assert problems["crc_mismatch"]["offset"] == first
    assert "offset_gap" not in problems  # the wrappers around it follow on without a gap


@pytest.mark.parametrize("segment", SEGMENTS)
def test_a_wrappers_base_offset_is_its_first_inner_offset_in_every_output(tmp_path, segment):
    partition, log = copied_partition(tmp_path, segment)
    wrappers = golden_wrappers(segment)
    expected = {position: (w["inner"][0], w["own"], w["inner"][-1]) for position, w in wrappers.items()}

    for deep in ((), ("--shallow",)):
        run = segtool("dump", "--json", *deep, str(log))
        assert run.returncode == 0, run.stderr
        batches = {item["position"]: (item["base_offset"], item["wrapper_offset"], item["last_offset"])
                   for item in map(json.loads, run.stdout.splitlines()) if item["kind"] == "batch"}
        assert {position: batches[position] for position in expected} == expected, deep

    run = segtool("carve", str(log), "--out", str(tmp_path / "carved"), "--json")
    assert run.returncode in (0, 1), run.stderr
    rows = pq.read_table(tmp_path / "carved" / "kafka_batches.parquet").to_pylist()
    carved = {row["position"]: (row["base_offset"], row["wrapper_offset"], row["last_offset"]) for row in rows}
    assert {position: carved[position] for position in expected} == expected

    run = segtool("scan", str(partition), "--out", str(tmp_path / "scanned"), "--json", "--no-hash")
    assert run.returncode == 0, run.stderr
    table = pq.read_table(tmp_path / "scanned", columns=["segment_base_offset", "batch_position", "batch_base_offset",
                                                          "batch_wrapper_offset", "batch_last_offset"])
    scanned = {row["batch_position"]: (row["batch_base_offset"], row["batch_wrapper_offset"], row["batch_last_offset"])
               for row in table.to_pylist() if row["segment_base_offset"] == 0}  # the segment's file is ...000.log
    assert {position: scanned[position] for position in expected} == expected
