"""`groups` against a replay by hand: the expected offsets come from kafka-dump-log's
--offsets-decoder goldens (c10) and from `segtool dump --json` records decoded here (wild log
dirs), never from typed-in numbers."""

from __future__ import annotations

import base64
import json
import re

import pytest

from segtool.kafka.offsets import decode_offsets_record
from segtool.ops.groups import groups
from tests.conftest import corpus_path, segtool

WILD_OFFSETS_DIRS = [
    "rjmfernandes__flink-on-prem/data",
    "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data",
    "Balaji-MohanAG__Kirana-store/kafka/data",
]

_GOLDEN_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) .* key: (\{.*\}) payload: (.*)$")


def _golden_records(case) -> list[tuple[int, int, dict, dict | None]]:
    """(offset, timestamp, key, value or None) of every record kafka-dump-log printed, partition by partition."""
    records = []
    for golden in sorted((case / "expected" / "dump").rglob("*.log.offsets-decoder.stdout")):
        for line in golden.read_text().splitlines():
            match = _GOLDEN_RECORD.match(line)
            if match:
                payload = match.group(4)
                records.append((int(match.group(1)), int(match.group(2)), json.loads(match.group(3)),
                                None if payload == "<DELETE>" else json.loads(payload)))
    return records


def _replay_golden(records, at=None) -> dict[str, dict[tuple[str, int], int]]:
    committed: dict[str, dict[tuple[str, int], int]] = {}
    for _offset, timestamp, key, value in records:
        if key["type"] not in ("0", "1") or (at is not None and timestamp > at):
            continue
        data = key["data"]
        offsets = committed.setdefault(data["group"], {})
        if value is None:
            offsets.pop((data["topic"], data["partition"]), None)
        else:
            offsets[(data["topic"], data["partition"])] = value["data"]["offset"]
    return {group: offsets for group, offsets in committed.items() if offsets}


def _committed(report) -> dict[str, dict[tuple[str, int], int]]:
    return {g["group"]: {(o["topic"], o["partition"]): o["offset"] for o in g["offsets"]}
            for g in report["groups"] if g["offsets"]}


def test_c10_offsets_are_the_golden_replay_at_every_time():
    case = corpus_path("kafka", "c10-consumer-offsets")
    records = _golden_records(case)
    assert records
    assert _committed(groups(str(case / "data"))) == _replay_golden(records)
    # as of each record's time: only what was written by then counts
    for _offset, timestamp, _key, _value in records:
        assert _committed(groups(str(case / "data"), at=timestamp)) == _replay_golden(records, at=timestamp)
    assert _committed(groups(str(case / "data"), at=min(r[1] for r in records) - 1)) == {}


def test_c10_group_metadata_is_the_last_golden_group_record():
    case = corpus_path("kafka", "c10-consumer-offsets")
    last = {}
    for _offset, _timestamp, key, value in _golden_records(case):
        if key["type"] == "2":
            last[key["data"]["group"]] = value
    report = {g["group"]: g for g in groups(str(case / "data"))["groups"]}
    assert set(report) == set(last)
    for name, value in last.items():
        data = value["data"]
        assert (report[name]["protocol_type"], report[name]["generation"], report[name]["leader"],
                [m["member_id"] for m in report[name]["members"]]) == (
            data["protocolType"], data["generation"], data["leader"], [m["memberId"] for m in data["members"]])


def _dumped_offsets_records(log_dir) -> list[tuple[int, dict, int]]:
    """(coordinator partition, decoded record, record timestamp) of every __consumer_offsets record,
    from `segtool dump --json`, decoded here."""
    out = []
    for directory in sorted(log_dir.glob("__consumer_offsets-*"), key=lambda d: int(d.name.rsplit("-", 1)[1])):
        if not list(directory.glob("*.log")):
            continue
        run = segtool("dump", "--json", directory)
        assert run.returncode == 0, run.stderr
        for line in run.stdout.splitlines():
            item = json.loads(line)
            if item["kind"] == "record":
                value = None if item["value_b64"] is None else base64.b64decode(item["value_b64"])
                out.append((int(directory.name.rsplit("-", 1)[1]),
                             decode_offsets_record(base64.b64decode(item["key_b64"]), value), item["timestamp"]))
    return out


@pytest.mark.parametrize("wild", WILD_OFFSETS_DIRS)
def test_wild_groups_are_the_replay_of_their_dumped_records(wild):
    log_dir = corpus_path("wild", wild)
    committed: dict[str, dict] = {}
    metadata: dict[str, dict | None] = {}
    for _partition, record, _timestamp in _dumped_offsets_records(log_dir):
        if record.type_id in (0, 1):
            offsets = committed.setdefault(record.key["group"], {})
            topic_partition = (record.key["topic"], record.key["partition"])
            if record.value is None:
                offsets.pop(topic_partition, None)
            else:
                offsets[topic_partition] = record.value["offset"]
        elif record.type_id == 2:
            metadata[record.key["group"]] = record.value
    report = groups(str(log_dir))
    assert report["problems"] == []
    assert _committed(report) == {g: o for g, o in committed.items() if o}
    listed = {g["group"]: g for g in report["groups"]}
    for name, value in metadata.items():
        assert listed[name]["deleted"] == (value is None)
        if value is not None:
            assert (listed[name]["generation"], listed[name]["protocol_type"], len(listed[name]["members"])) == (
                value["generation"], value["protocolType"], len(value["members"]))
    # lag: each committed partition's end, as ListOffsets(latest) answers it
    for group in report["groups"]:
        for committed_offset in group["offsets"]:
            directory = log_dir / f"{committed_offset['topic']}-{committed_offset['partition']}"
            if not list(directory.glob("*.log")):
                assert committed_offset["lag"] is None
                continue
            end = json.loads(segtool("lookup", directory, "--timestamp", "latest", "--json").stdout)["offset"]
            assert committed_offset["log_end_offset"] == end
            assert committed_offset["lag"] == end - committed_offset["offset"]


def test_groups_command_exit_codes_and_json(tmp_path):
    case = corpus_path("kafka", "c10-consumer-offsets")
    run = segtool("groups", case / "data", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["summary"]["groups"] == len(_replay_golden(_golden_records(case)))
    assert segtool("groups", case / "data", "--group", "no-such-group").returncode == 1
    assert segtool("groups", tmp_path).returncode == 1  # a log dir with no group
    assert segtool("groups", tmp_path / "missing").returncode == 2
    assert segtool("groups", case / "data", "--at", "not-a-time").returncode == 2
    text = segtool("groups", case / "data", "--at", "2026-11-21T00:00:00Z")
    assert text.returncode in (0, 1) and "groups as of" in text.stdout
