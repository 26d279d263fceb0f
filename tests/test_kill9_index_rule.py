"""After a kill -9 (issue 18 item 7): which of a key's messages the broker's index returns, and why.

RocketMQ 4.9.8's DefaultMessageStore.load() with an ``abort`` file runs IndexService.load(false)
(index files whose endTimestamp > the checkpoint's indexMsgTimestamp are destroyed) and
CommitLog.recoverAbnormally, which re-dispatches every message from its start file into
IndexService.buildIndex.  The goldens say what RocketMQ answers: ``key-lookups.json`` over the files
as the killed broker left them (abort removed), ``recovery.json`` after the real abnormal recovery.
Expected states come from those and from ``index-entries.jsonl`` (which file held each entry)."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from segtool.rocketmq import store_files as rmq
from segtool.ops.lookup import lookup_key
from tests.test_rocketmq_lookups import golden, rocketmq_case


@pytest.fixture(scope="module")
def kill9():
    return rocketmq_case("kill9-abort")


def _holders(case) -> dict[tuple[int, int], str]:
    """(keyHash, phyOffset) -> the IndexFile on disk that holds the entry."""
    holders = {}
    with open(case / "expected" / "index-entries.jsonl", encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            holders.setdefault((entry["keyHash"], entry["phyOffset"]), entry["file"])
    return holders


@pytest.mark.slow  # seconds of CPU: the full tier's
def test_states_match_what_rocketmq_returns_before_and_after_recovery(kill9):
    recovery = golden("kill9-abort", "recovery.json")
    as_written = {g["query"]["id"]: g for g in golden("kill9-abort", "key-lookups.json")["lookups"]}
    dropped = set(recovery["indexFilesBeforeLoad"]) - set(recovery["indexFilesAfterLoad"])
    holders = _holders(kill9)
    seen = set()
    for gold in recovery["lookupsAfterLoad"]:
        query = gold["query"]
        if not query["key"]:
            continue
        answer = lookup_key(str(kill9 / "store"), query["key"], topic=query["topic"], begin=query["begin"],
                            end=query["end"], max_num=query["maxNum"])
        assert answer["index_phy_offsets"] == gold["phyOffsets"]  # RocketMQ's answer after its own recovery
        key_hash = rmq.index_key_hash(rmq.index_key(query["topic"], query["key"]))
        before = set(as_written[query["id"]]["phyOffsets"])
        for message in answer["messages"]:
            holder = holders.get((key_hash, message["phy_offset"]))
            if message["phy_offset"] not in before and holder is None:
                expected = "dispatched_by_recovery"  # the killed broker did not return it, the restarted one does
            elif holder in dropped:
                expected = "reindexed_by_recovery"
            else:
                expected = "indexed"
            assert message["index_state"] == expected, (query["id"], message["phy_offset"])
            seen.add(expected)
        assert answer["unindexed_messages"] == []  # recovery re-indexes everything it keeps
    assert {"dispatched_by_recovery", "reindexed_by_recovery", "indexed"} <= seen


def test_the_undispatched_last_message(kill9):
    """The CommitLog's last message: not in any IndexFile on disk, so the killed broker's
    queryOffset did not return it; the abnormal recovery indexes it, and the answer says so."""
    files = golden("kill9-abort", "commitlog-files.json")["files"]
    last_phy = max(f["lastMessagePhyOffset"] for f in files if f["lastMessagePhyOffset"] is not None)
    with open(kill9 / "expected" / "commitlog.jsonl", encoding="utf-8") as f:
        last = next(m for m in map(json.loads, f) if m["phyOffset"] == last_phy)
    as_written = {(g["query"]["topic"], g["query"]["key"]): g["phyOffsets"]
                  for g in golden("kill9-abort", "key-lookups.json")["lookups"]}
    assert as_written.get((last["topic"], last["KEYS"])) == []
    answer = lookup_key(str(kill9 / "store"), last["KEYS"], topic=last["topic"])
    assert answer["phy_offsets"] == [last_phy]
    assert answer["messages"][0]["index_state"] == "dispatched_by_recovery"
    assert "recoverAbnormally" in answer["messages"][0]["index_state_reason"]


def test_messages_lost_from_the_index_when_recovery_starts_after_them(kill9, tmp_path):
    """A checkpoint whose indexMsgTimestamp drops every IndexFile while its physic/logics times
    start the recovery at the second CommitLog file: the first file's messages are in the CommitLog,
    yet nothing indexes them again (messageIndexSafe=false)."""
    store = tmp_path / "store"
    shutil.copytree(kill9 / "store", store)
    files = golden("kill9-abort", "commitlog-files.json")["files"]
    with open(kill9 / "expected" / "commitlog.jsonl", encoding="utf-8") as f:
        messages = [json.loads(line) for line in f]
    second_start = files[1]["fileFromOffset"]
    second_first = next(m for m in messages if m["phyOffset"] == files[1]["firstMessagePhyOffset"])
    checkpoint = store / "checkpoint"
    checkpoint.chmod(0o644)
    data = bytearray(checkpoint.read_bytes())
    stamp = second_first["storeTimestamp"] + 3000  # getMinTimestamp subtracts 3 s
    data[0:24] = struct.pack(">qqq", stamp, stamp, 0)
    checkpoint.write_bytes(bytes(data))
    target = next(m for m in messages if m["phyOffset"] < second_start and m["topic"] == "OrderTopic" and m["KEYS"])
    answer = lookup_key(str(store), target["KEYS"], topic="OrderTopic")
    assert answer["recovery"]["commitlog_recovery_start_file"] == files[1]["file"]
    assert answer["phy_offsets"] == []
    carrying = [m["phyOffset"] for m in messages if m["topic"] == "OrderTopic"
                and target["KEYS"] in (m["KEYS"] or "").split(" ") + [m["UNIQ_KEY"]]]
    assert [m["phy_offset"] for m in answer["unindexed_messages"]] == carrying
    assert {m["index_state"] for m in answer["unindexed_messages"]} == {"index_file_dropped"}
