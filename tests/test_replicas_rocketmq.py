"""segtool replicas, RocketMQ half: replica sets built from real corpus stores by RocketMQ's own replication
rules (tests/rocketmq_replica_sets.py); every expected value comes from the construction (the cut offset,
the appended messages, the goldens of the corpus), never from segtool's output."""

from __future__ import annotations

import shutil

import jsonschema
import pytest

from segtool.ops import output_schema
from segtool.ops.replicas_rocketmq import rocketmq_replica_problems, rocketmq_replica_sets
from segtool.ops.text import rocketmq_replicas_lines
from segtool.rocketmq import replication as rep
from segtool.rocketmq import store_files as rmq
from tests import rocketmq_replica_sets as build
from tests.conftest import CORPUS, corpus_path

CUT_AT, CONFIRMED_TO, DONORS = 4000, 4100, 5
HEADER_SIZE = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4  # MessageDecoder: totalSize .. bodyLength, IPv4


def _schema() -> dict:
    defs: dict = {}
    root = output_schema._schema(output_schema.RocketMQReplicaSet, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **root, "$defs": defs}


def _sets(stores) -> list[dict]:
    sets, _ = rocketmq_replica_sets([(label, str(path)) for label, path in stores])
    for item in sets:
        jsonschema.validate(item, _schema())
    assert rocketmq_replicas_lines(sets)
    return sets


@pytest.fixture(scope="module")
def clean():
    case = corpus_path("rocketmq", "clean-multi")
    return case, build.golden_messages(case)


@pytest.fixture(scope="module")
def donor():
    case = corpus_path("rocketmq", "kill9-abort")
    return case, build.golden_messages(case)[:DONORS]


def _end(messages: list[dict]) -> int:
    return messages[-1]["phyOffset"] + messages[-1]["totalSize"]


def test_lagging_slave_is_a_byte_prefix(clean, tmp_path):
    """DefaultHAConnection ships the master's bytes from the slave's max offset: a slave that stopped at a
    message boundary agrees up to it, and lags by the master's messages after it (lag alone: no problem)."""
    case, golden = clean
    master = build.copy_store(case / "store", tmp_path / "master")
    slave = build.copy_store(case / "store", tmp_path / "slave")
    cut = golden[CUT_AT]["phyOffset"]
    build.cut_commitlog(slave, cut)
    (item,) = _sets([("slave", slave), ("master", master)])
    assert (item["layout"], item["replication"], item["reference"]) == ("master_slave", "ha", "master")
    (c,) = item["comparisons"]
    assert (c["compared_from"], c["agree_to"], c["diverged_at"]) == (0, cut, None)
    assert c["messages_agreed"] == CUT_AT
    assert (c["lag_bytes"], c["lag_messages"]) == (_end(golden) - cut, len(golden) - CUT_AT)
    first = c["only_reference"]["listed"][0]
    assert (first["phy_offset"], first["topic"], first["queue_offset"], first["msg_id"]) == (
        cut, golden[CUT_AT]["topic"], golden[CUT_AT]["queueOffset"], golden[CUT_AT]["properties"].get("UNIQ_KEY"))
    assert len(c["only_reference"]["listed"]) == 100 and c["only_other"] is None
    assert [s["max_offset"] for s in item["stores"]] == [cut, _end(golden)]
    assert not rocketmq_replica_problems([item])


def test_diverged_slave_parts_where_the_appended_messages_begin(clean, donor, tmp_path):
    """After a failover a 4.x slave keeps bytes the master lacks (HA never truncates): the copies part at the
    common prefix's end, with the master's and the slave's own messages on each side."""
    case, golden = clean
    donor_case, donors = donor
    master = build.copy_store(case / "store", tmp_path / "master")
    slave = build.copy_store(case / "store", tmp_path / "slave")
    cut = golden[CUT_AT]["phyOffset"]
    build.cut_commitlog(slave, cut)
    placed = build.append_messages(slave, cut, build.message_bytes(donor_case, donors))
    (item,) = _sets([("master", master), ("slave", slave)])
    (c,) = item["comparisons"]
    assert (c["agree_to"], c["diverged_at"], c["lag_bytes"]) == (cut, cut, None)
    assert c["only_other"]["messages"] == DONORS
    assert [(m["phy_offset"], m["topic"], m["queue_id"], m["queue_offset"], m["born_timestamp"],
             m["store_timestamp"], m["keys"]) for m in c["only_other"]["listed"]] == [
        (at, d["topic"], d["queueId"], d["queueOffset"], d["bornTimestamp"], d["storeTimestamp"],
         d["properties"].get("KEYS")) for at, d in zip(placed, donors)]
    assert c["only_reference"]["messages"] == len(golden) - CUT_AT
    assert item["diverged"] and rocketmq_replica_problems([item])
    assert any("4.x HA does not truncate" in note for note in item["notes"])


def test_controller_mode_truncates_to_the_epochs_consistent_point(clean, donor, tmp_path):
    """5.x controller mode: A led epoch 1 from 0; B, its slave up to C1, was elected for epoch 2 at C1
    (AutoSwitchHAService.changeToMaster appends EpochEntry(2, maxPhyOffset)) and wrote on.  Rejoining, each
    is cut to EpochFileCache.findConsistentPoint = min(end of epoch 1 on both) = C1 (AutoSwitchHAClient.doTruncate);
    A's messages past C1 up to its confirmPhyOffset had been confirmed."""
    case, golden = clean
    donor_case, donors = donor
    old = build.copy_store(case / "store", tmp_path / "a")
    new = build.copy_store(case / "store", tmp_path / "b")
    c1, confirmed = golden[CUT_AT]["phyOffset"], golden[CONFIRMED_TO]["phyOffset"]
    build.cut_commitlog(new, c1)
    build.append_messages(new, c1, build.message_bytes(donor_case, donors))
    build.write_epochs(old, [(1, 0)])
    build.write_epochs(new, [(1, 0), (2, c1)])
    build.write_confirm_offset(old, confirmed)
    build.write_confirm_offset(new, c1)
    (item,) = _sets([("a", old), ("b", new)])
    assert (item["replication"], item["reference"]) == ("controller", "b")
    assert [s["confirm_offset"] for s in item["stores"]] == [confirmed, c1]
    assert item["stores"][1]["epochs"][1]["start_offset"] == c1
    rejoin = {(r["leader"], r["follower"]): r for r in item["rejoins"]}
    a_under_b, b_under_a = rejoin["b", "a"], rejoin["a", "b"]
    assert (a_under_b["rule"], a_under_b["truncate_to"]) == ("epoch_consistent_point", c1)
    assert a_under_b["dropped"]["messages"] == len(golden) - CUT_AT
    assert a_under_b["confirmed_dropped"] == CONFIRMED_TO - CUT_AT
    assert (b_under_a["truncate_to"], b_under_a["dropped"]["messages"], b_under_a["confirmed_dropped"]) == (
        c1, DONORS, 0)
    assert item["loses_messages"] and item["diverged"]


def test_controller_rule_branches():
    """AutoSwitchHAClient.doTruncate: no local epochs skips truncation; epochs that share no (epoch, start)
    have no consistent point; EpochFileCache.initEntries ends each epoch where the next starts."""
    master = [rep.EpochEntry(1, 0), rep.EpochEntry(3, 500)]
    assert rep.controller_truncation([], 900, master, 1000) == rep.Truncation(None, "slave_epochs_empty")
    assert rep.controller_truncation([rep.EpochEntry(2, 100)], 900, master, 1000).rule == "no_consistent_point"
    assert rep.controller_truncation([rep.EpochEntry(1, 0), rep.EpochEntry(2, 400)], 900, master, 1000) == \
        rep.Truncation(400, "epoch_consistent_point")
    assert rep.epoch_ranges(master, 1000) == [rep.EpochEntry(1, 0, 500), rep.EpochEntry(3, 500, 1000)]


def test_epoch_file_as_checkpoint_file_reads_it(tmp_path):
    """CheckpointFile.read: count and CRC checked; a bad or empty file falls back to .bak; none: not controller."""
    assert rep.read_epoch_entries(tmp_path) == (None, [])
    build.write_epochs(tmp_path, [(1, 0), (2, 4096)])
    assert rep.read_epoch_entries(tmp_path)[0] == [rep.EpochEntry(1, 0), rep.EpochEntry(2, 4096)]
    (tmp_path / "epochFileCheckpoint.bak").write_text(build.epoch_file_text([(1, 0)]))
    (tmp_path / "epochFileCheckpoint").write_text("2\n12345\n1-0\n2-4096\n")
    entries, notes = rep.read_epoch_entries(tmp_path)
    assert entries == [rep.EpochEntry(1, 0)] and "CRC32" in notes[0] and ".bak" in notes[1]
    (tmp_path / "epochFileCheckpoint").write_text("3\n0\n1-0\n")
    with pytest.raises(Exception, match="says 3 entries but holds 1"):
        rep.parse_epoch_file((tmp_path / "epochFileCheckpoint").read_text())


def test_damaged_store_is_compared_on_what_recovery_keeps(clean, tmp_path):
    """A torn tail: recovery (checkMessageAndReturnSize) cuts at the torn message, RocketMQ's maxPhyOffset in
    the case's recovery.json; the store is compared on what it keeps and the loss counted."""
    case, golden = clean
    torn = corpus_path("rocketmq", "corrupt-torn-tail")
    recovered = build.json.loads((torn / "expected" / "recovery.json").read_text())["maxPhyOffset"]
    master = build.copy_store(case / "store", tmp_path / "master")
    slave = build.copy_store(torn / "store", tmp_path / "slave")
    (tmp_path / "slave" / "checkpoint").unlink()
    (item,) = _sets([("master", master), ("slave", slave)])
    (c,) = item["comparisons"]
    assert (c["agree_to"], c["diverged_at"]) == (recovered, None)
    store = item["stores"][1]
    assert store["max_offset"] == recovered and store["beyond_recovery"]["messages"] > 0
    assert not store["checkpoint"] and any("missing" in note for note in store["notes"])
    assert item["damaged"] and rocketmq_replica_problems([item])


def test_stores_of_different_brokers_form_different_sets(clean, tmp_path):
    """Stores given together are one group unless the first record both hold differs (two unrelated stores);
    an empty store shares nothing and stays with the group, said in a note."""
    case, _ = clean
    other = corpus_path("rocketmq", "kill9-abort")
    empty = build.copy_store(case / "store", tmp_path / "empty")
    build.cut_commitlog(empty, 0)
    sets = _sets([("a", case / "store"), ("b", other / "store"), ("e", empty)])
    assert [[s["broker"] for s in item["stores"]] for item in sets] == [["a", "e"], ["b"]]
    assert any("e shares no record with a" in note for note in sets[0]["notes"])


def _nodes(tmp_path):
    root = tmp_path / "dledger"
    # n0 led term 3 after n1 led term 2 and wrote 4, 5 alone; n2 trails n0
    build.dledger_node(root / "n0", "n0", [1, 1, 1, 2, 3, 3, 3], ["a"] * 7, committed_index=5)
    build.dledger_node(root / "n1", "n1", [1, 1, 1, 2, 2, 2], ["a"] * 4 + ["b"] * 2, committed_index=3)
    build.dledger_node(root / "n2", "n2", [1, 1, 1, 2, 3], ["a"] * 5, committed_index=3)
    return [(name, root / name) for name in ("n0", "n1", "n2")]


def test_dledger_group(tmp_path):
    """DLedgerEntryPusher.doCompare for each leader, DLedgerLeaderElector.handleVote for who can lead, and the
    committed entries (checkpoint committedIndex) a node lacks."""
    (item,) = _sets(_nodes(tmp_path))
    assert (item["layout"], item["reference"]) == ("dledger", "n0")
    assert [n["electable"] for n in item["nodes"]] == [True, False, True]
    assert [(n["begin_index"], n["end_index"], n["end_term"], n["committed_index"]) for n in item["nodes"]] == [
        (0, 6, 3, 5), (0, 5, 2, 3), (0, 4, 3, 3)]
    comparisons = {c["other"]: c for c in item["dledger_comparisons"]}
    assert (comparisons["n1"]["agree_to_index"], comparisons["n1"]["diverged_at_index"]) == (3, 4)
    assert comparisons["n1"]["only_other"]["entries"] == 2 and comparisons["n1"]["only_reference"]["entries"] == 3
    assert (comparisons["n2"]["agree_to_index"], comparisons["n2"]["diverged_at_index"]) == (4, None)
    rejoin = {(r["leader"], r["follower"]): r for r in item["dledger_rejoins"]}
    assert (rejoin["n0", "n1"]["rule"], rejoin["n0", "n1"]["truncate_index"]) == ("match_below_follower_end", 3)
    assert [e["index"] for e in rejoin["n0", "n1"]["dropped"]["listed"]] == [4, 5]
    assert (rejoin["n0", "n2"]["rule"], rejoin["n0", "n2"]["dropped"]) == ("append", None)
    # n2 elected: n0 is cut back to n2's end, losing its committed index 5
    assert (rejoin["n2", "n0"]["truncate_index"], rejoin["n2", "n0"]["committed_dropped"]) == (4, 1)
    assert not rejoin["n1", "n0"]["leader_electable"]
    missing = {(m["holder"], m["lacker"]): m["missing"] for m in item["committed_missing"]}
    assert [e["index"] for e in missing["n0", "n1"]["listed"]] == [4, 5]
    assert [e["index"] for e in missing["n0", "n2"]["listed"]] == [5]
    assert item["diverged"] and item["loses_messages"] and rocketmq_replica_problems([item])
    message = rejoin["n0", "n1"]["dropped"]["listed"][0]["message"]
    assert (message["topic"], message["keys"]) == ("RaftTopic", "b-4")


def test_dledger_truncation_branches(tmp_path):
    """doCompare's other branches: an empty leader never compares, an empty follower does not intersect, and
    a compare index that falls below the follower's or the leader's begin index truncates to the leader's begin."""
    def node(name, terms, tags, drop=False):
        build.dledger_node(tmp_path / name, name, terms, tags, committed_index=0, drop_first_file=drop)
        return rep.open_dledger_node(tmp_path / name / f"dledger-{name}")

    full = node("full", [1] * 12, ["a"] * 12)
    empty = node("empty", [], [])
    later = node("later", [1] * 12, ["c"] * 12, drop=True)
    assert later.begin_index > 0
    assert rep.dledger_truncation(empty, full) == rep.Truncation(None, "leader_empty")
    assert rep.dledger_truncation(full, empty) == rep.Truncation(0, "no_intersection")
    assert rep.dledger_truncation(full, later) == rep.Truncation(0, "below_follower_begin")
    truncation = rep.dledger_truncation(later, full)
    assert truncation == rep.Truncation(later.begin_index, "below_leader_begin")
    assert [e["index"] for e in rep.dledger_dropped(later, full, truncation)] == list(range(later.begin_index, 12))
    assert rep.first_entries_agree(full, later) is False and rep.first_entries_agree(full, empty) is None


def _damaged_copies(clean_case, root):
    """clean-multi's CommitLog with one kind of damage each, as (name, commitlog directory)."""
    golden = build.golden_messages(clean_case)
    source = clean_case / "store" / "commitlog"
    made = []

    def copy(name, message, change):
        target = root / name / "commitlog"
        shutil.copytree(source, target)
        path = target / message["file"]
        data = bytearray(path.read_bytes())
        change(data, message["fileOffset"], message)
        path.write_bytes(bytes(data))
        made.append((name, target))

    def flip_body_byte(data, at, message):
        data[at + HEADER_SIZE + message["bodyLength"] - 1] ^= 0xFF  # the body's last byte (IPv4 hosts)

    def bad_delay_level(data, at, message):
        record = bytes(data[at:at + message["totalSize"]])
        level = record.index(b"DELAY\x01") + len(b"DELAY\x01")
        data[at + level] = ord("x")  # Integer.parseInt throws: checkMessageAndReturnSize fails

    def zeros_inside(data, at, message):
        data[at + message["totalSize"] // 2:] = bytes(len(data) - at - message["totalSize"] // 2)

    def bad_magic(data, at, message):
        data[at + 4:at + 8] = b"\x00\x00\x00\x01"

    last_file = [m for m in golden if m["file"] == golden[-1]["file"]]
    scheduled = [m for m in golden if m["topic"] == "SCHEDULE_TOPIC_XXXX" and "DELAY" in m["properties"]]
    copy("body-byte", golden[CUT_AT], flip_body_byte)
    copy("delay-level", scheduled[-1], bad_delay_level)
    copy("torn", last_file[len(last_file) // 2], zeros_inside)
    copy("magic", golden[CUT_AT + 7], bad_magic)
    return made


def _mixed_layouts(root, bad_delay: bool):
    """A CommitLog of 16 KiB files written as doAppend writes them: runs of v1 IPv4 messages (what
    MessageColumns reads) between runs of v2 messages (a 2-byte topic length) and of IPv6 hosts, delayed
    messages in SCHEDULE_TOPIC_XXXX, with ``bad_delay`` one whose DELAY level Integer.parseInt refuses, and
    more messages after it."""
    log = build.w.CommitLogWriter(root / "commitlog", 16 * 1024)
    v6 = {"born_host": bytes(range(16)), "store_host": bytes(range(16, 32)),
          "sys_flag": rmq.BORNHOST_V6_FLAG | rmq.STOREHOSTADDRESS_V6_FLAG}
    runs = [({}, 40), ({"version": 2}, 15), (v6, 15), ({}, 30), (v6, 1), ({}, 1), ({"version": 2}, 1), ({}, 60)]
    if bad_delay:
        runs.append(({"topic": "SCHEDULE_TOPIC_XXXX", "properties": {"DELAY": "x"}}, 1))
    runs.append(({}, 20))
    number = 0
    for fields, count in runs * 2:
        for _ in range(count):
            options = {"topic": "Mixed", "body": b"body %d " % number * (1 + number % 7),
                       "properties": {"KEYS": f"k{number}", "UNIQ_KEY": f"u{number}"}, "queue_offset": number, **fields}
            if number % 25 == 3:
                options.update(topic="SCHEDULE_TOPIC_XXXX", properties={"DELAY": str(1 + number % 3)})
            log.append(build.w.Message(**options))
            number += 1
    log.write()
    return root / "commitlog"


def test_recovery_counted_a_plain_run_at_a_time_stops_where_the_walk_stops(clean, tmp_path):
    """replicas opens each copy through commitlog_recovery_plan, which counts plain runs of messages
    (store.commitlog_recovery_feed, MessageColumns) instead of walking them one by one: on every CommitLog of
    the corpus and on damage made from clean-multi (a body byte flipped: the CRC check fails; a
    SCHEDULE_TOPIC_XXXX message whose DELAY level Integer.parseInt refuses; zeros from inside a message; a bad
    magic code), and on CommitLogs mixing the layouts MessageColumns reads with v2 and IPv6 messages, it starts,
    stops and counts as commitlog_recovery's walk does, in both recovery modes."""
    from segtool.rocketmq import store as rs

    case, _ = clean
    commitlogs = [(str(p.parent), p) for p in sorted(CORPUS.rglob("commitlog")) if p.is_dir()]
    commitlogs += _damaged_copies(case, tmp_path)
    commitlogs += [("mixed", _mixed_layouts(tmp_path / "mixed", False)),
                   ("mixed-bad-delay", _mixed_layouts(tmp_path / "mixed-bad-delay", True))]
    stops = set()
    for name, commitlog in commitlogs:
        for abnormal in (False, True):
            for check_crc in (True, False):
                walked = rs.DispatchFeed("recover")
                for _ in rs.commitlog_recovery(commitlog, None, abnormal=abnormal, check_crc=check_crc, feed=walked):
                    pass
                counted = rs.commitlog_recovery_feed(commitlog, None, abnormal=abnormal, check_crc=check_crc)
                assert (counted.start_file, counted.dispatched, counted.stopped) == (
                    walked.start_file, walked.dispatched, walked.stopped), (name, abnormal, check_crc)
                stops.add((walked.stopped["kind"], walked.stopped["reason"]))
    assert {kind for kind, _ in stops} >= {rs.FeedStop.FAILED, rs.FeedStop.ZERO_TAIL, rs.FeedStop.CORRUPT}
    assert ("failed", "bad DELAY property") in stops and ("failed", "CRC check failed") in stops


def test_copies_part_at_the_message_holding_the_first_differing_byte(clean, tmp_path):
    """HA ships bytes, so copies are compared byte for byte: a slave whose first file differs in one body byte
    (outside the three files recoverNormally reads, so its recovery keeps it) parts from the master at the
    message holding that byte, with the messages before it agreed; a byte that differs in a BLANK record's
    filler (after its totalSize and magic code: the broker never reads it) parts nothing."""
    case, golden = clean
    first_file = [m for m in golden if m["file"] == golden[0]["file"]]
    master = build.copy_store(case / "store", tmp_path / "master")
    body = build.copy_store(case / "store", tmp_path / "body")
    filler = build.copy_store(case / "store", tmp_path / "filler")
    changed = first_file[len(first_file) // 2]
    first_path = "commitlog/" + changed["file"]
    data = bytearray((body / first_path).read_bytes())
    data[changed["fileOffset"] + HEADER_SIZE + changed["bodyLength"] // 2] ^= 0xFF
    (body / first_path).write_bytes(bytes(data))
    data = bytearray((filler / first_path).read_bytes())
    blank_at = first_file[-1]["fileOffset"] + first_file[-1]["totalSize"]
    assert len(data) - blank_at > 8 and data[-1] == 0
    data[-1] = 0x5A
    (filler / first_path).write_bytes(bytes(data))
    (item,) = _sets([("master", master), ("body", body), ("filler", filler)])
    assert item["reference"] == "master" and [s["max_offset"] for s in item["stores"]] == [_end(golden)] * 3
    comparisons = {c["other"]: c for c in item["comparisons"]}
    parted = comparisons["body"]
    index = golden.index(changed)
    assert (parted["agree_to"], parted["diverged_at"], parted["messages_agreed"]) == (
        changed["phyOffset"], changed["phyOffset"], index)
    assert parted["only_other"]["messages"] == parted["only_reference"]["messages"] == len(golden) - index
    assert parted["only_other"]["listed"][0]["phy_offset"] == changed["phyOffset"]
    same = comparisons["filler"]
    assert (same["agree_to"], same["diverged_at"], same["messages_agreed"]) == (_end(golden), None, len(golden))
    assert (same["lag_bytes"], same["lag_messages"]) == (0, 0)
    assert item["diverged"] and any("body parts from master" in note for note in item["notes"])
