"""`groups STORE` against what the test derives itself: committed offsets by regular expressions
over consumerOffset.json / delayOffset.json, queue bounds from raw 20-byte ConsumeQueue units
(struct) or the corpus goldens (RocketMQ's own consumequeue.jsonl, consumequeue-summary.json,
commitlog.jsonl), read queue counts from topics.json with the json module."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from segtool.findings import Severity
from segtool.ops.rocketmq_groups import exit_code, rocketmq_groups
from tests.conftest import CORPUS, REPO, corpus_path, segtool

SCHEMA = REPO / "docs" / "schemas" / "groups.schema.json"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


def _stores_with_config() -> list[Path]:
    """Every store in the corpus with a config/ directory (found by walking)."""
    if not CORPUS.exists():
        return []
    return sorted(p.parent for p in CORPUS.rglob("config") if p.is_dir() and (p / "consumerOffset.json").exists())


STORES = _stores_with_config()
_needs_corpus = pytest.mark.skipif(not STORES, reason=f"no RocketMQ config/ under {CORPUS} (corpus absent)")


def _id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def _table(path: Path) -> dict:
    """offsetTable by regular expressions: {"topic@group": {queue: offset}} or {level: offset}."""
    text = path.read_text()
    body = text[re.search(r'"offsetTable"\s*:\s*\{', text).end():]
    nested = re.findall(r'"([^"]+)"\s*:\s*\{([^{}]*)\}', body)
    if nested:
        return {key: {int(q): int(o) for q, o in re.findall(r"(-?\d+)\s*:\s*(-?\d+)", inner)} for key, inner in nested}
    inner = body[:body.index("}")]
    return {int(k): int(v) for k, v in re.findall(r"(-?\d+)\s*:\s*(-?\d+)", inner)}


def _raw_queue_bounds(queue_dir: Path) -> tuple[int, int]:
    """(min, max) offset of a ConsumeQueue from its files' raw units: the first valid unit of the
    first file, and the end of the valid units of the last file (file name = byte offset)."""
    files = sorted(p for p in queue_dir.iterdir() if p.name.isdigit())
    if not files:
        return 0, 0
    bounds = []
    for path in (files[0], files[-1]):
        data = path.read_bytes()
        units = [struct.unpack_from(">qiq", data, i) for i in range(0, len(data) - 19, 20)]
        stop = next((i for i, (offset, size, _) in enumerate(units) if offset < 0 or size <= 0), len(units))
        first = next((i for i, (_, size, _) in enumerate(units[:stop]) if size != 0x7FFFFFFF), stop)
        bounds.append((int(path.name) // 20 + first, int(path.name) // 20 + stop))
    return bounds[0][0], bounds[1][1]


def _read_queue_nums(store: Path) -> dict[str, int]:
    topics = store / "config" / "topics.json"
    return {name: c["readQueueNums"] for name, c in json.loads(topics.read_text())["topicConfigTable"].items()} \
        if topics.exists() else {}


def _expected_groups(store: Path, goldens: Path | None = None) -> dict:
    """group -> topic -> queue -> (committed, min, max, lag, last consumed store time), derived here."""
    read_nums = _read_queue_nums(store)
    units, stored = {}, {}
    if goldens is not None:
        for line in (goldens / "consumequeue.jsonl").read_text().splitlines():
            u = json.loads(line)
            units[(u["topic"], u["queueId"], u["queueOffset"])] = u["commitLogOffset"]
        for line in (goldens / "commitlog.jsonl").read_text().splitlines():
            m = json.loads(line)
            stored[m["phyOffset"]] = m["storeTimestamp"]
    expected: dict = {}
    for key, offsets in _table(store / "config" / "consumerOffset.json").items():
        topic, group = key.split("@")
        queues = {}
        for queue_id in sorted(set(offsets) | set(range(read_nums.get(topic, 0)))):
            committed = offsets.get(queue_id)
            consumer = committed if committed is not None else 0
            queue_dir = store / "consumequeue" / topic / str(queue_id)
            if not (store / "consumequeue").is_dir():
                bounds, lag, last = (None, None), None, None
            else:
                bounds = _raw_queue_bounds(queue_dir) if queue_dir.is_dir() else (0, 0)
                lag = bounds[1] - consumer
                phy = units.get((topic, queue_id, consumer - 1))
                last = stored.get(phy) if phy is not None else None
            queues[queue_id] = (committed, *bounds, lag, last)
        expected.setdefault(group, {})[topic] = queues
    return expected


def _reported_groups(report) -> dict:
    return {g["group"]: {t["topic"]: {q["queue_id"]: (q["committed_offset"], q["min_offset"], q["max_offset"], q["lag"],
                                                      q["last_consumed_timestamp"]) for q in t["queues"]}
                         for t in g["topics"]}
            for g in report["groups"]}


def _expected_delay_levels(store: Path) -> dict:
    table = _table(store / "config" / "delayOffset.json")
    schedule = store / "consumequeue" / SCHEDULE_TOPIC
    levels = set(table) | ({int(p.name) + 1 for p in schedule.iterdir()} if schedule.is_dir() else set())
    out = {}
    for level in levels:
        bounds = _raw_queue_bounds(schedule / str(level - 1)) if (schedule / str(level - 1)).is_dir() else (0, 0)
        if not (store / "consumequeue").is_dir():
            bounds = (None, None)
        offset = table.get(level)
        out[level] = (offset, *bounds, None if bounds[1] is None else bounds[1] - (offset or 0))
    return out


@_needs_corpus
@pytest.mark.parametrize("store", STORES, ids=_id)
def test_groups_and_delay_levels_are_what_the_files_say(store):
    report = rocketmq_groups(str(store))
    assert report["queues_read"] == (store / "consumequeue").is_dir()
    assert _reported_groups(report) == _expected_groups(store)
    assert {d["delay_level"]: (d["offset"], d["min_offset"], d["max_offset"], d["pending"])
            for d in report["delay_levels"]} == _expected_delay_levels(store)
    assert not [p for p in report["problems"] if p.severity is Severity.ERROR]
    assert exit_code(report) == (0 if report["groups"] else 1)


@_needs_corpus
def test_the_walk_covers_wild_and_corpus_stores():
    assert any("wild" in _id(s) for s in STORES) and any(_id(s).startswith("rocketmq") for s in STORES)
    wild = [rocketmq_groups(str(s)) for s in STORES if "wild" in _id(s)]
    assert all(r["groups"] and not r["queues_read"] for r in wild)


@_needs_corpus
def test_delay_levels_match_rocketmqs_consumequeue_summary():
    for case in ("clean-multi", "kill9-abort"):
        summary = json.loads(corpus_path("rocketmq", case, "expected", "consumequeue-summary.json").read_text())
        bounds = {q["queueId"]: (q["minOffsetInQueue"], q["maxOffsetInQueue"])
                  for q in summary["queues"] if q["topic"] == SCHEDULE_TOPIC}
        report = rocketmq_groups(str(corpus_path("rocketmq", case, "store")))
        assert report["delay_levels"]
        for level in report["delay_levels"]:
            assert (level["min_offset"], level["max_offset"]) == bounds[level["queue_id"]]


def _store_with_offsets(tmp_path: Path, offsets_text: str) -> Path:
    """A copy of clean-multi's store whose consumerOffset.json is ``offsets_text``."""
    store = tmp_path / "store"
    shutil.copytree(corpus_path("rocketmq", "clean-multi", "store"), store)
    (store / "config" / "consumerOffset.json").write_text(offsets_text)
    return store


def _summary_bounds(topic: str) -> dict[int, tuple[int, int]]:
    summary = json.loads(corpus_path("rocketmq", "clean-multi", "expected", "consumequeue-summary.json").read_text())
    return {q["queueId"]: (q["minOffsetInQueue"], q["maxOffsetInQueue"]) for q in summary["queues"] if q["topic"] == topic}


def test_committed_offsets_against_real_queues_lag_and_last_consumed_time(tmp_path):
    audit = _summary_bounds("AuditTopic")
    bulk = _summary_bounds("BulkTopic")
    # fastjson's own shape: bare numeric keys, tabs, the closing brace on its own line
    committed = {0: audit[0][1], 1: audit[1][1] // 2, 2: 1}  # queue 3: no entry
    text = ('{\n\t"offsetTable":{\n\t\t"AuditTopic@audit-consumers":{'
            + ",".join(f"{q}:{o}" for q, o in committed.items()) + '\n\t\t},\n'
            + '\t\t"BulkTopic@stale-consumers":{0:' + str(bulk[0][1] + 7) + '\n\t\t}\n\t}\n}')
    store = _store_with_offsets(tmp_path, text)
    report = rocketmq_groups(str(store))
    goldens = corpus_path("rocketmq", "clean-multi", "expected")
    assert _reported_groups(report) == _expected_groups(store, goldens)
    queues = {q["queue_id"]: q for q in report["groups"][0]["topics"][0]["queues"]}
    assert report["groups"][0]["group"] == "audit-consumers" and sorted(queues) == [0, 1, 2, 3]
    assert [queues[q]["lag"] for q in range(4)] == [0, audit[1][1] - committed[1], audit[2][1] - 1, audit[3][1]]
    assert all(queues[q]["last_consumed_timestamp"] is not None for q in (0, 1, 2))
    assert queues[3]["committed_offset"] is None and queues[3]["last_consumed_timestamp"] is None
    kinds = [p.kind.code for p in report["problems"]]
    assert kinds.count("committed_beyond_queue") == 1
    assert exit_code(report) == 1  # the stale group's offset is beyond its queue
    assert exit_code(rocketmq_groups(str(store), group="audit-consumers")) == 0


def test_a_broken_offsets_file_is_a_problem_and_the_bak_is_used(tmp_path):
    store = _store_with_offsets(tmp_path, '{\n\t"offsetTable":{\n\t\t"AuditTopic@g":{0:3,')
    (store / "config" / "consumerOffset.json.bak").write_text('{"offsetTable":{"AuditTopic@g":{0:2}}}')
    report = rocketmq_groups(str(store))
    problem = next(p for p in report["problems"] if p.kind.code == "config_syntax")
    assert problem.byte_offset == len((store / "config" / "consumerOffset.json").read_bytes())
    read = next(c for c in report["config_files"] if c["name"] == "consumerOffset.json")
    assert read["loaded_from"] == "backup" and read["error"]
    assert _reported_groups(report)["g"]["AuditTopic"][0][0] == 2
    assert exit_code(report) == 1


def test_a_delay_offset_beyond_its_queue_is_corrected(tmp_path):
    store = _store_with_offsets(tmp_path, '{"offsetTable":{}}')
    delays = _table(corpus_path("rocketmq", "clean-multi", "store", "config", "delayOffset.json"))
    level = min(delays)
    (store / "config" / "delayOffset.json").write_text('{"offsetTable":{%d:%d}}' % (level, delays[level] + 5))
    report = rocketmq_groups(str(store))
    item = next(d for d in report["delay_levels"] if d["delay_level"] == level)
    assert item["corrected_offset"] == item["max_offset"] and item["pending"] == -5
    assert "delay_offset_out_of_range" in [p.kind.code for p in report["problems"]]


@_needs_corpus
def test_cli_exit_codes_and_json_schema(tmp_path):
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    for store in STORES:
        run = segtool("groups", "--json", store)
        document = json.loads(run.stdout)
        assert not list(validator.iter_errors(document)), _id(store)
        assert run.returncode == (0 if document["groups"] else 1), (_id(store), run.stderr)
    wild = next(s for s in STORES if "wild" in _id(s))
    text = segtool("groups", wild)
    assert text.returncode == 0 and "group " in text.stdout and "{" not in text.stdout
    assert segtool("groups", wild / "config").returncode == 0  # the config/ directory itself names the store
    assert segtool("groups", wild, "--group", "no-such-group").returncode == 1
    clean = segtool("groups", corpus_path("rocketmq", "clean-multi", "store"))
    assert clean.returncode == 1 and "delay level 2" in clean.stdout and "no consumer group" in clean.stderr
    assert segtool("groups", wild, "--at", "0").returncode == 2
    refused = segtool("groups", tmp_path / "no-such-store")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


def test_total_lag_is_mqadmins_diff_total(tmp_path):
    # AdminBrokerProcessor.getConsumeStats: a topic topics.json lacks is skipped ("consumeStats,
    # topic config not exist") and only queues 0 .. readQueueNums - 1 are read, so
    # ConsumeStats.computeTotalDiff (consumerProgress's Diff Total) counts no others
    audit = _summary_bounds("AuditTopic")
    read_nums = _read_queue_nums(corpus_path("rocketmq", "clean-multi", "store"))["AuditTopic"]
    beyond = read_nums + 1  # a committed queue id at or above readQueueNums
    text = ('{"offsetTable":{"AuditTopic@g":{0:0,' + f"{beyond}:0" + '},"NoSuchTopic@g":{0:0}}}')
    store = _store_with_offsets(tmp_path, text)
    (group,) = rocketmq_groups(str(store))["groups"]
    topics = {t["topic"]: t for t in group["topics"]}
    audit_queues = {q["queue_id"]: q for q in topics["AuditTopic"]["queues"]}
    assert not audit_queues[beyond]["counted_in_total"] and audit_queues[0]["counted_in_total"]
    assert topics["AuditTopic"]["total_lag"] == sum(audit[q][1] for q in range(read_nums))
    assert topics["NoSuchTopic"]["total_lag"] is None
    assert group["total_lag"] == topics["AuditTopic"]["total_lag"]
