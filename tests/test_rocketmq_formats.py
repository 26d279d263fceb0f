"""RocketMQ CommitLog / ConsumeQueue / IndexFile readers against the corpus.

Expected values come from the goldens RocketMQ 4.9.8's own classes wrote
(``corpus/rocketmq/*/expected``, ``case.json``) and from the wild corpus'
README rows; nothing is hard-coded here.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import ipaddress
import json
import re
import struct
import tracemalloc
import zlib
from pathlib import Path

import construct as cs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segtool.engine.salvage import DamagedRange, commitlog_pieces
from segtool.errors import CorruptData, SegtoolError, TruncatedData
from segtool.rocketmq import store_files as rmq
from segtool.formats.outcomes import DamageReason, WalkEnd
from tests.conftest import corpus_path

MAIN_CASES = ["clean-multi", "kill9-abort"]
CORRUPT_COMMITLOG_CASES = ["corrupt-body-crc", "corrupt-truncated-commitlog", "corrupt-torn-tail"]
INDEX_ONLY_CASES = ["corrupt-index-count", "corrupt-index-prev-loop"]


# --------------------------------------------------------------------------
# Corpus access (parsed once per session)
# --------------------------------------------------------------------------


def case_dir(case: str) -> Path:
    return corpus_path("rocketmq", case)


def load_json(case: str, name: str):
    with open(case_dir(case) / "expected" / name, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def load_jsonl(case: str, name: str) -> tuple:
    with open(case_dir(case) / "expected" / name, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


@functools.lru_cache(maxsize=None)
def case_json(case: str) -> dict:
    with open(case_dir(case) / "case.json", encoding="utf-8") as f:
        return json.load(f)


def geometry(case: str) -> tuple[int, int]:
    g = case_json(case)["index_geometry"]
    return g["hashSlotNum"], g["indexNum"]


def commitlog_walk(store, **decode_options) -> tuple[list[dict], list[dict]]:
    """Every message of a store's CommitLog files as ``rmq.walk_commitlog`` reads each file to its
    end, and one summary per file with the walk's ``CommitLogEnd``."""
    messages, files = [], []
    for start, path in rmq.list_mapped_files(Path(store) / "commitlog"):
        with rmq.MappedFile(path) as mf:
            *found, end = rmq.walk_commitlog(mf.buf, file_from_offset=start, file=path.name, path=str(path),
                                             **decode_options)
            size = mf.size
        messages += found
        files.append({"file": path.name, "fileFromOffset": start, "size": size, "messages": len(found),
                      "firstMessagePhyOffset": found[0]["phyOffset"] if found else None,
                      "lastMessagePhyOffset": found[-1]["phyOffset"] if found else None, "end": end})
    return messages, files


def golden_end(kind: str) -> WalkEnd:
    """A golden's name for how a file ends ("zero-tail"), as the walk's member."""
    return WalkEnd(kind.replace("-", "_"))


@functools.lru_cache(maxsize=None)
def scanned(case: str):
    """(messages, per-file summaries) of a case's whole commitlog."""
    messages, files = commitlog_walk(case_dir(case) / "store")
    return tuple(messages), tuple(files)


@functools.lru_cache(maxsize=None)
def cq_units(case: str) -> tuple:
    store = case_dir(case) / "store"
    return tuple(u for _, _, d in rmq.list_consume_queues(store) for u in rmq.ConsumeQueue(d))


# --------------------------------------------------------------------------
# CommitLog
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", MAIN_CASES)
def test_commitlog_messages_match_golden(case):
    golden = load_jsonl(case, "commitlog.jsonl")
    messages, _ = scanned(case)
    assert len(messages) == len(golden) == case_json(case)["counts"]["messages_in_commitlog"]
    for msg, gold in zip(messages, golden):
        assert {k: msg.get(k, "<missing>") for k in gold} == gold, gold["phyOffset"]


@pytest.mark.parametrize("case", MAIN_CASES)
def test_commitlog_file_ends_match_golden(case):
    golden = load_json(case, "commitlog-files.json")
    _, files = scanned(case)
    assert [f["file"] for f in files] == [g["file"] for g in golden["files"]]
    for summary, gold in zip(files, golden["files"]):
        for key in ("fileFromOffset", "size", "messages", "firstMessagePhyOffset", "lastMessagePhyOffset"):
            assert summary[key] == gold[key], (gold["file"], key)
        end, gold_end = summary["end"], gold["end"]
        assert (end.kind, end.file_offset, end.phy_offset, end.total_size, end.magic) == (
            golden_end(gold_end["kind"]), gold_end["fileOffset"], gold_end["phyOffset"], gold_end["totalSize"],
            gold_end["magic"]), gold["file"]
        if end.kind == WalkEnd.BLANK:
            assert end.blank_size_matches
        else:
            assert end.non_zero_after is None
    assert sum(f["messages"] for f in files) == golden["messageCount"]
    last_data_end = [f["end"].phy_offset for f in files if f["messages"]][-1]
    assert last_data_end == golden["maxPhyOffset_afterLoad"]


def test_kill9_end_of_data_and_undispatched_message():
    case = "kill9-abort"
    summary = case_json(case)["results_summary"]
    messages, files = scanned(case)
    end = [f["end"] for f in files if f["messages"]][-1]
    gold_end = summary["commitlog_end_of_data"]
    assert (end.kind, end.file_offset, end.phy_offset) == (
        golden_end(gold_end["kind"]), gold_end["fileOffset"], gold_end["phyOffset"])
    last = summary["last_message_phyOffset"]
    assert messages[-1]["phyOffset"] == last
    # the broker died before dispatching it: in the commitlog, in no ConsumeQueue and no IndexFile
    assert all(u["commitLogOffset"] != last for u in cq_units(case))
    assert all(e["phyOffset"] != last for e in load_jsonl(case, "index-entries.jsonl"))


def test_checkpoint_matches_recovery_golden():
    case = "kill9-abort"
    with rmq.MappedFile(case_dir(case) / "store" / "checkpoint") as mf:
        checkpoint = rmq.read_checkpoint(mf.buf)
    assert checkpoint == load_json(case, "recovery.json")["checkpointBeforeLoad"]


@pytest.mark.parametrize("case", MAIN_CASES)
def test_physical_offset_lookups(case):
    lookups = load_json(case, "offset-lookups.json")["physicalOffsetLookups"]
    with rmq.CommitLog(case_dir(case) / "store") as log:
        for gold in lookups:
            msg = log.message_at(gold["phyOffset"])
            assert (msg is not None) == gold["found"], gold["description"]
            if msg is None:
                continue
            got = {"offsetMsgId": msg["offsetMsgId"], "UNIQ_KEY": msg["UNIQ_KEY"], "topic": msg["topic"],
                   "queueId": msg["queueId"], "queueOffset": msg["queueOffset"],
                   "storeSize": msg["totalSize"], "storeTimestamp": msg["storeTimestamp"]}
            assert got == {k: gold[k] for k in got}, gold["description"]


# --------------------------------------------------------------------------
# Corrupt commitlogs
# --------------------------------------------------------------------------


def test_body_crc_corruption_is_reported_not_fatal():
    case = "corrupt-body-crc"
    corruption = case_json(case)["corruption"]
    affected = load_json(case, "affected-message.json")
    messages, _ = commitlog_walk(case_dir(case) / "store")
    assert len(messages) == len(load_jsonl("clean-multi", "commitlog.jsonl"))
    damaged = [m for m in messages if m["bodyCRC"] != m["bodyCRCComputed"]]
    assert len(damaged) == 1
    msg = damaged[0]
    decoded = affected["MessageDecoder.decode"]
    assert (msg["file"], msg["fileOffset"], msg["phyOffset"]) == (
        corruption["file"], corruption["fileOffset_of_message"], corruption["phyOffset"])
    assert (msg["bodyCRC"], msg["bodyCRCComputed"], msg["totalSize"], msg["offsetMsgId"]) == (
        decoded["bodyCRC"], decoded["bodyCRCComputed"], decoded["storeSize"], decoded["offsetMsgId"])
    crc_true = affected["checkMessageAndReturnSize_checkCRC_true"]
    assert (msg["dispatch"]["success"], msg["dispatch"]["msgSize"]) == (crc_true["success"], crc_true["msgSize"])


def test_body_crc_corruption_opens_a_damaged_range():
    """Reading past damage (dump, salvage, scan) yields the message, then the range it opens."""
    case = "corrupt-body-crc"
    corruption = case_json(case)["corruption"]
    path = case_dir(case) / "store" / "commitlog" / corruption["file"]
    with rmq.MappedFile(path) as mf:
        pieces = list(commitlog_pieces(mf.buf, file_from_offset=int(path.name), file=path.name, path=str(path)))
    (damage,) = [p for p in pieces if isinstance(p, DamagedRange)]
    assert (damage.file, damage.first_byte, damage.reason) == (
        str(path), corruption["fileOffset_of_message"], DamageReason.CRC_MISMATCH)
    assert damage.physical_offset == corruption["phyOffset"]
    message = pieces[pieces.index(damage) - 1]
    assert (message["phyOffset"], message["bodyCRC"] != message["bodyCRCComputed"]) == (corruption["phyOffset"], True)


@pytest.mark.parametrize("case,kind,error", [
    ("corrupt-truncated-commitlog", WalkEnd.TRUNCATED, TruncatedData),
    ("corrupt-torn-tail", WalkEnd.TORN, CorruptData),
])
def test_cut_commitlog_ends_at_the_cut_message(case, kind, error):
    corruption = case_json(case)["corruption"]
    messages, files = commitlog_walk(case_dir(case) / "store")
    (end,) = [f["end"] for f in files if f["end"].damaged]
    messages = [m for m in messages if m["phyOffset"] < end.phy_offset]
    exc = end.error
    assert end.kind == kind and isinstance(exc, error)
    assert exc.offset == corruption["cutMessageFileOffset"]
    assert Path(exc.path).name == corruption["file"]
    assert f"byte {corruption['cutMessageFileOffset']}" in str(exc)
    # every complete message before the cut was delivered, identical to clean-multi
    assert messages[-1]["phyOffset"] == corruption["lastCompleteMessagePhyOffset"]
    clean = load_jsonl("clean-multi", "commitlog.jsonl")
    assert [m["bodySha256"] for m in messages] == [g["bodySha256"] for g in clean[:len(messages)]]
    assert (end.file_offset, end.phy_offset, end.total_size) == (
        corruption["cutMessageFileOffset"], corruption["cutMessagePhyOffset"], corruption["cutMessageTotalSize"])


def test_torn_tail_record_matches_rocketmq_view():
    case = "corrupt-torn-tail"
    corruption = case_json(case)["corruption"]
    affected = load_json(case, "affected-message.json")
    path = case_dir(case) / "store" / "commitlog" / corruption["file"]
    with rmq.MappedFile(path) as mf:
        with pytest.raises(CorruptData) as info:
            rmq.decode_message(mf.buf, affected["fileOffset"], path=str(path))
    # RocketMQ: "[BUG]read total count not equals msg total size. totalSize=..., readTotalCount=..."
    log = affected["checkMessageAndReturnSize_checkCRC_false"]["storeLog"][0]
    total, read = re.search(r"totalSize=(\d+), readTotalCount=(\d+)", log).groups()
    assert f"add up to {read} bytes but totalSize is {total}" in str(info.value)
    assert info.value.offset == affected["fileOffset"]


def test_message_at_reports_bad_offsets():
    case = "clean-multi"
    messages, _ = scanned(case)
    with rmq.CommitLog(case_dir(case) / "store") as log:
        inside = messages[0]["phyOffset"] + 1  # not the start of a record
        with pytest.raises(CorruptData) as info:
            log.message_at(inside)
        assert info.value.offset == inside - messages[0]["phyOffset"] + messages[0]["fileOffset"]
        assert log.message_at(-1) is None


# --------------------------------------------------------------------------
# ConsumeQueue
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", MAIN_CASES)
def test_consumequeue_units_match_golden(case):
    assert list(cq_units(case)) == list(load_jsonl(case, "consumequeue.jsonl"))


@pytest.mark.parametrize("case", MAIN_CASES)
def test_consumequeue_summary_matches_golden(case):
    golden = load_json(case, "consumequeue-summary.json")
    store = case_dir(case) / "store"
    present = {(t, q): d for t, q, d in rmq.list_consume_queues(store)}
    for gold in golden["queues"]:
        directory = present.pop((gold["topic"], gold["queueId"]), None)
        if not gold["files"]:  # queue known to the broker but never written
            assert directory is None
            continue
        summary = rmq.ConsumeQueue(directory).summary()
        assert {k: summary[k] for k in gold} == gold
        assert all(int(f.split(":")[1]) == golden["mappedFileSizeConsumeQueue_effective"] for f in gold["files"])
    assert not present


@pytest.mark.parametrize("case", MAIN_CASES)
def test_consumequeue_units_point_at_their_messages(case):
    messages = {m["phyOffset"]: m for m in scanned(case)[0]}
    for unit in cq_units(case):
        msg = messages[unit["commitLogOffset"]]
        assert (msg["topic"], msg["queueId"], msg["queueOffset"], msg["totalSize"]) == (
            unit["topic"], unit["queueId"], unit["queueOffset"], unit["size"])
        assert msg["dispatch"]["tagsCode"] == unit["tagsCode"]


@pytest.mark.parametrize("case", MAIN_CASES)
def test_consumequeue_offset_lookups(case):
    store = case_dir(case) / "store"
    queues = {(t, q): d for t, q, d in rmq.list_consume_queues(store)}
    for gold in load_json(case, "offset-lookups.json")["consumeQueueLookups"]:
        directory = queues.get((gold["topic"], gold["queueId"]))
        assert (directory is not None) == gold["queueExists"], gold["description"]
        if directory is None:
            continue
        queue = rmq.ConsumeQueue(directory)
        unit = queue.unit(gold["queueOffset"])
        if gold.get("cqPhyOffset") is None:
            assert unit is None, gold["description"]
        else:
            assert (unit["commitLogOffset"], unit["size"], unit["tagsCode"]) == (
                gold["cqPhyOffset"], gold["cqSize"], gold["cqTagsCode"]), gold["description"]
        summary = queue.summary()
        assert (summary["minOffsetInQueue"], summary["maxOffsetInQueue"]) == (
            gold["minOffsetInQueue"], gold["maxOffsetInQueue"])


def test_consumequeue_zero_tail_and_bad_units():
    unit = rmq.CONSUME_QUEUE_UNIT.build
    good = unit({"commitLogOffset": 0, "size": 100, "tagsCode": 7})
    filler = unit({"commitLogOffset": 0, "size": rmq.CQ_BLANK_UNIT_SIZE, "tagsCode": 0})
    buf = filler + good + bytes(20) + bytes(20)
    scan = rmq.ConsumeQueueFileScan(buf, topic="t", queue_id=0, file_from_offset=6000)
    units = list(scan)
    assert [(u["queueOffset"], u["size"]) for u in units] == [(6000 // 20 + 1, 100)]
    assert scan.end == {"kind": WalkEnd.ZERO_TAIL, "fileOffset": 40, "queueOffset": 302, "nonZeroAfter": None}
    bad = good + unit({"commitLogOffset": -5, "size": 10, "tagsCode": 0})
    with pytest.raises(CorruptData) as info:
        list(rmq.ConsumeQueueFileScan(bad, path="q"))
    assert info.value.offset == 20
    with pytest.raises(TruncatedData) as info:
        list(rmq.ConsumeQueueFileScan(good + good[8:15], path="q"))
    assert info.value.offset == 20


# --------------------------------------------------------------------------
# IndexFile
# --------------------------------------------------------------------------


def _index_files(case: str) -> list[Path]:
    return rmq.list_index_files(case_dir(case) / "store")


def _check_index_summary(index: rmq.IndexFile, gold: dict):
    summary = index.summary()
    for key in ("file", "size", "header", "nonEmptySlots", "entriesWritten", "firstEntry", "lastEntry"):
        assert summary[key] == gold[key], (gold["file"], key)
    assert {k: summary["geometry"][k] for k in gold["geometry"]} == gold["geometry"]


@pytest.mark.parametrize("case", MAIN_CASES + INDEX_ONLY_CASES)
@pytest.mark.parametrize("explicit", [True, False], ids=["explicit", "inferred"])
def test_index_files_match_golden(case, explicit):
    golden = load_json(case, "indexfiles.json")
    golden = golden["files"] if isinstance(golden, dict) else golden
    files = _index_files(case)
    assert [p.name for p in files] == [g["file"] for g in golden]
    slots, entries = geometry(case) if explicit else (None, None)
    for path, gold in zip(files, golden):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == gold["sha256"]
        with rmq.IndexFile(path, slots, entries) as index:
            assert (index.hash_slot_num, index.index_num) == geometry(case)
            _check_index_summary(index, gold)
            if "slots" in gold:
                assert index.slots.tolist() == gold["slots"]


@pytest.mark.parametrize("case", MAIN_CASES)
def test_index_entries_match_golden(case):
    got = []
    for path in _index_files(case):
        with rmq.IndexFile(path, *geometry(case)) as index:
            got.extend({"file": path.name, **e} for e in index.iter_entries())
    assert got == list(load_jsonl(case, "index-entries.jsonl"))


@pytest.mark.parametrize("case", MAIN_CASES)
def test_index_keys_are_uniq_key_then_keys_hashed(case):
    """IndexService.buildIndex order: UNIQ_KEY, then each non-empty KEYS token, per message."""
    derived = []
    for msg in scanned(case)[0]:
        if msg["transactionType"] == rmq.TRANSACTION_ROLLBACK_TYPE:
            continue
        keys = [msg["dispatch"]["uniqKey"]] if msg["dispatch"]["uniqKey"] else []
        keys += [k for k in (msg["dispatch"]["keys"] or "").split(" ") if k]
        derived += [(rmq.index_key_hash(rmq.index_key(msg["topic"], k)), msg["phyOffset"]) for k in keys]
    golden = [(e["keyHash"], e["phyOffset"]) for e in load_jsonl(case, "index-entries.jsonl")]
    assert derived[:len(golden)] == golden
    # kill9: the undispatched last message is the only thing not indexed
    assert all(phy == case_json(case).get("results_summary", {}).get("last_message_phyOffset")
               for _, phy in derived[len(golden):])


def test_index_slot_chains_follow_key_hashes():
    case = "clean-multi"
    for path in _index_files(case):
        with rmq.IndexFile(path) as index:
            entries = index.entries
            for slot in np.flatnonzero(index.slots > 0).tolist():
                i = int(index.slots[slot])
                while i > 0:  # clean files: every chain ends at 0 and stays in its slot
                    assert index.slot_of(int(entries[i]["keyHash"])) == slot
                    i = int(entries[i]["prevIndex"])


def test_corrupt_index_prev_loop_entries_are_readable():
    case = "corrupt-index-prev-loop"
    for corruption in case_json(case)["corruption"]:
        path = case_dir(case) / "store" / "index" / corruption["file"]
        with rmq.IndexFile(path) as index:
            # entryFileOffset is where the rewritten prevIndex field sits inside the entry
            prev_field = sum(sub.sizeof() for sub in rmq.INDEX_ENTRY.subcons[:3])
            assert index.entry_offset(corruption["entry"]) + prev_field == corruption["entryFileOffset"]
            entry = index.entry(corruption["entry"])
            assert entry["prevIndex"] == corruption["newPrevIndex"]
            assert index.slot_of(index_hash := rmq.index_key_hash(corruption["key"])) == corruption["slot"]
            assert entry["keyHash"] % index.hash_slot_num == index_hash % index.hash_slot_num


def test_geometry_search_without_the_ratio_shortcut():
    """The content-based search alone finds each corpus file's (and the wild IndexFile's) geometry."""
    paths = [(p, geometry(c)) for c in MAIN_CASES + INDEX_ONLY_CASES for p in _index_files(c)]
    for path, expected in paths:
        with rmq.MappedFile(path) as mf:
            header = rmq.read_index_header(mf.buf)
            passed = [(s, n) for s, n in rmq._geometry_candidates(mf.buf, mf.size, header)
                      if rmq._check_geometry(mf.buf, mf.size, header, s, n).passed]
        assert passed == [expected], path


def _write_index_file(path: Path, keys_and_offsets, slots_n: int, entries_n: int):
    """A small IndexFile written the way IndexFile.putKey does, for an odd geometry."""
    data = bytearray(rmq.index_file_size(slots_n, entries_n))
    count, begin_ts, begin_phy = 1, 0, 0
    end_ts = end_phy = 0
    for key, phy, ts in keys_and_offsets:
        if count >= entries_n:
            break
        h = rmq.index_key_hash(key)
        slot_pos = rmq.INDEX_HEADER_SIZE + (h % slots_n) * 4
        (prev,) = struct.unpack_from(">i", data, slot_pos)
        diff = 0 if begin_ts <= 0 else max(0, (ts - begin_ts) // 1000)
        struct.pack_into(">iqii", data, rmq.INDEX_HEADER_SIZE + slots_n * 4 + count * 20, h, phy, diff, prev)
        struct.pack_into(">i", data, slot_pos, count)
        if count <= 1:
            begin_ts, begin_phy = ts, phy
        count += 1
        end_ts, end_phy = ts, phy
    struct.pack_into(">qqqqii", data, 0, begin_ts, end_ts, begin_phy, end_phy, 0, count)
    path.write_bytes(bytes(data))
    return count


def test_geometry_inferred_for_an_odd_geometry(tmp_path):
    keys = []
    for msg in scanned("clean-multi")[0][:600]:
        for k in [msg["UNIQ_KEY"], *(msg["KEYS"] or "").split(" ")]:
            if k:
                keys.append((rmq.index_key(msg["topic"], k), msg["phyOffset"], msg["storeTimestamp"]))
    path = tmp_path / "odd"
    slots_n, entries_n = 997, 1500  # not the 1:4 default ratio
    count = _write_index_file(path, keys, slots_n, entries_n)
    with rmq.IndexFile(path) as index:
        assert (index.hash_slot_num, index.index_num, index.geometry_source) == (slots_n, entries_n, "inferred")
        assert [(e["keyHash"], e["phyOffset"]) for e in index.iter_entries()] == [
            (rmq.index_key_hash(k), phy) for k, phy, _ in keys[:count - 1]]


def test_index_file_errors_are_segtool_errors(tmp_path):
    path = tmp_path / "short"
    path.write_bytes(bytes(30))
    with pytest.raises(TruncatedData):
        rmq.IndexFile(path)
    path.write_bytes(bytes(rmq.index_file_size(10, 40)))  # no entries: ratio geometry assumed
    with rmq.IndexFile(path) as index:
        assert (index.hash_slot_num, index.index_num, index.geometry_source) == (10, 40, "assumed")
    with pytest.raises(TruncatedData) as info:
        rmq.IndexFile(path, 10, 41)
    assert info.value.offset == rmq.index_file_size(10, 40)


@pytest.fixture(scope="module")
def default_geometry_index(tmp_path_factory):
    """The gzip-stored 420 MB default-geometry IndexFile, written sparse to a temp dir."""
    meta_dir = case_dir("clean-multi") / "expected" / "rebuilt-index-default-geometry"
    with open(meta_dir / "default-geometry.json", encoding="utf-8") as f:
        meta = json.load(f)
    path = tmp_path_factory.mktemp("rmq-default-index") / meta["file"]
    chunk = 1 << 20
    zeros = bytes(chunk)
    with gzip.open(meta_dir / meta["gzFile"], "rb") as src, open(path, "wb") as dst:
        while block := src.read(chunk):
            if block == zeros[:len(block)]:
                dst.seek(len(block), 1)  # keep the copy sparse: it is almost all zeros
            else:
                dst.write(block)
        dst.truncate()
    assert path.stat().st_size == meta["uncompressedSize"]
    yield path, meta
    path.unlink()


def test_default_geometry_index_file(default_geometry_index):
    path, meta = default_geometry_index
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    assert digest.hexdigest() == meta["uncompressedSha256"]
    tracemalloc.start()
    try:
        with rmq.IndexFile(path) as index:
            assert index.geometry_source == "default"
            assert (index.hash_slot_num, index.index_num) == (
                meta["geometry"]["hashSlotNum"], meta["geometry"]["indexNum"])
            summary = index.summary()
            entries = [(e["keyHash"], e["phyOffset"]) for e in index.iter_entries()]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for key in ("header", "nonEmptySlots", "entriesWritten", "firstEntry", "lastEntry"):
        assert summary[key] == meta[key], key
    assert {k: summary["geometry"][k] for k in meta["geometry"]} == meta["geometry"]
    # the slot table is 20 MB and the entries 400 MB: only what is used may be allocated
    assert peak < 32 * 1024 * 1024
    # same dispatch over the same commitlog: the same (keyHash, phyOffset) sequence as the 3 small files
    assert entries == [(e["keyHash"], e["phyOffset"]) for e in load_jsonl("clean-multi", "index-entries.jsonl")]


# --------------------------------------------------------------------------
# Fast decoders against the construct schemas
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", MAIN_CASES)
def test_fast_message_decoder_agrees_with_construct(case):
    messages, _ = scanned(case)
    store = case_dir(case) / "store" / "commitlog"
    by_file: dict[str, list] = {}
    for msg in messages:
        by_file.setdefault(msg["file"], []).append(msg)
    for name, msgs in by_file.items():
        with rmq.MappedFile(store / name) as mf:
            for msg in msgs:
                raw = mf.buf[msg["fileOffset"]:msg["fileOffset"] + msg["totalSize"]]
                parsed = rmq.COMMITLOG_MESSAGE.parse(raw)
                layout = rmq.MESSAGE_HEADER_FAST[(parsed.sysFlag >> 4) & 3]
                assert layout.unpack_from(raw) == tuple(layout.schema.parse(raw).values())[1:]
                properties = parsed.properties.decode("utf-8", "replace") if parsed.propertiesLength > 0 else ""
                assert {
                    "totalSize": parsed.totalSize, "magic": parsed.magicCode, "bodyCRC": parsed.bodyCRC,
                    "queueId": parsed.queueId, "flag": parsed.flag, "queueOffset": parsed.queueOffset,
                    "physicalOffsetField": parsed.physicalOffset, "sysFlag": parsed.sysFlag,
                    "bornTimestamp": parsed.bornTimestamp,
                    "bornHost": rmq.format_host(parsed.bornHost, parsed.bornPort),
                    "storeTimestamp": parsed.storeTimestamp,
                    "storeHost": rmq.format_host(parsed.storeHost, parsed.storePort),
                    "reconsumeTimes": parsed.reconsumeTimes,
                    "preparedTransactionOffset": parsed.preparedTransactionOffset,
                    "bodyLength": parsed.bodyLength, "bodySha256": hashlib.sha256(parsed.body).hexdigest(),
                    "topic": parsed.topic.decode("utf-8", "replace"),
                    "properties": rmq.parse_properties(properties),
                } == {k: msg[k] for k in (
                    "totalSize", "magic", "bodyCRC", "queueId", "flag", "queueOffset", "physicalOffsetField",
                    "sysFlag", "bornTimestamp", "bornHost", "storeTimestamp", "storeHost", "reconsumeTimes",
                    "preparedTransactionOffset", "bodyLength", "bodySha256", "topic", "properties")}
                del raw


@pytest.mark.parametrize("case", MAIN_CASES)
def test_fast_consumequeue_decoder_agrees_with_construct(case):
    for _, _, directory in rmq.list_consume_queues(case_dir(case) / "store"):
        for _, path in rmq.list_mapped_files(directory):
            data = path.read_bytes()
            count = len(data) // rmq.CQ_UNIT_SIZE
            parsed = cs.Array(count, rmq.CONSUME_QUEUE_UNIT).parse(data)
            fast = rmq.consumequeue_units(data).tolist()
            assert fast == [(u.commitLogOffset, u.size, u.tagsCode) for u in parsed]
            assert fast[:3] == [rmq.CONSUME_QUEUE_UNIT_FAST.unpack_from(data, i * 20) for i in range(min(3, count))]


@pytest.mark.parametrize("case", MAIN_CASES)
def test_fast_index_decoder_agrees_with_construct(case):
    for path in _index_files(case):
        data = path.read_bytes()
        with rmq.IndexFile(path, *geometry(case)) as index:
            header = rmq.INDEX_HEADER.parse(data)
            assert {k: v for k, v in header.items() if k != "_io"} == {
                k: index.header[k] for k in rmq.INDEX_HEADER_FAST.names}
            slots = cs.Array(index.hash_slot_num, rmq.INDEX_SLOT).parse(data[rmq.INDEX_HEADER_SIZE:])
            assert index.slots.tolist() == list(slots)
            count = index.index_count
            entries = cs.Array(count, rmq.INDEX_ENTRY).parse(data[index.entries_offset:])
            assert index.entries[:count].tolist() == [
                (e.keyHash, e.phyOffset, e.timeDiff, e.prevIndex) for e in entries]


# --------------------------------------------------------------------------
# Synthetic records: what the 4.9.8 corpus does not contain (v2 magic, IPv6, codecs)
# --------------------------------------------------------------------------


def _build_record(body: bytes = b"payload", topic: str = "T", properties: str = "TAGS\x01x\x02",
                  **fields) -> bytes:
    """A CommitLog record built with the COMMITLOG_MESSAGE schema (totalSize filled in)."""
    sys_flag = fields.get("sysFlag", 0)
    values = {
        "totalSize": 0, "magicCode": rmq.MESSAGE_MAGIC_CODE, "bodyCRC": zlib.crc32(body) & 0x7FFFFFFF,
        "queueId": 1, "flag": 0, "queueOffset": 5, "physicalOffset": 0, "sysFlag": sys_flag,
        "bornTimestamp": 1, "bornHost": bytes(16 if sys_flag & rmq.BORNHOST_V6_FLAG else 4), "bornPort": 1,
        "storeTimestamp": 2, "storeHost": bytes(16 if sys_flag & rmq.STOREHOSTADDRESS_V6_FLAG else 4),
        "storePort": 10911, "reconsumeTimes": 0, "preparedTransactionOffset": 0,
        "bodyLength": len(body), "body": body, "topicLength": len(topic.encode()), "topic": topic.encode(),
        "propertiesLength": len(properties.encode()), "properties": properties.encode(),
    }
    values.update(fields)
    values["totalSize"] = len(rmq.COMMITLOG_MESSAGE.build(values))
    return rmq.COMMITLOG_MESSAGE.build(values)


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "zlib":
        return zlib.compress(data, 5)
    if kind == "lz4":
        lz4_frame = pytest.importorskip("lz4.frame")
        return lz4_frame.compress(data)
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_v2_magic_ipv6_hosts_and_codecs(codec):
    plain = bytes(range(256)) * 40
    kind = rmq.COMPRESSION_TYPES[codec]
    born = ipaddress.IPv6Address("2001:db8::1")
    store = ipaddress.IPv6Address("fe80::2")
    sys_flag = rmq.COMPRESSED_FLAG | codec << 8 | rmq.BORNHOST_V6_FLAG | rmq.STOREHOSTADDRESS_V6_FLAG
    topic = "t" * 200  # needs the 2-byte topic length of MESSAGE_MAGIC_CODE_V2
    record = _build_record(_compress(kind, plain), topic, "KEYS\x01a b\x02UNIQ_KEY\x01U1",
                           magicCode=rmq.MESSAGE_MAGIC_CODE_V2, sysFlag=sys_flag, physicalOffset=4096,
                           bornHost=born.packed, bornPort=7, storeHost=store.packed, storePort=9)
    msg = rmq.decode_message(b"\0" * 16 + record, 16, file_from_offset=4080)
    assert (msg["phyOffset"], msg["version"], msg["topic"]) == (4096, 2, topic)
    # Inet6Address.getHostAddress: every group, no "::"
    assert (msg["bornHost"], msg["storeHost"]) == ("[2001:db8:0:0:0:0:0:1]:7", "[fe80:0:0:0:0:0:0:2]:9")
    assert msg["offsetMsgId"] == (store.packed + struct.pack(">iq", 9, 4096)).hex().upper()
    assert (msg["compression"], msg["bodyDecompressedLength"]) == (kind, len(plain))
    assert msg["bodyDecompressedSha256"] == hashlib.sha256(plain).hexdigest()
    assert msg["dispatch"] == {"success": True, "msgSize": len(record), "tagsCode": 0, "keys": "a b",
                               "uniqKey": "U1", "commitLogOffset": 4096}


def test_decompression_is_capped():
    record = _build_record(zlib.compress(bytes(1 << 20)), sysFlag=rmq.COMPRESSED_FLAG)
    msg = rmq.decode_message(record, max_decompressed=1000)
    assert "exceeds 1000 bytes" in msg["bodyDecompressError"]
    assert "bodyDecompressedLength" not in msg


def test_walk_ends_and_errors():
    first = _build_record()
    second = _build_record(b"two", physicalOffset=len(first))
    data = first + second
    blank_size = 64
    blank = rmq.BLANK_RECORD.build({"totalSize": blank_size, "magicCode": rmq.BLANK_MAGIC_CODE})
    *messages, end = rmq.walk_commitlog(data + blank + bytes(blank_size - len(blank)), file_from_offset=1000)
    assert [m["phyOffset"] for m in messages] == [1000, 1000 + len(first)]
    assert end == rmq.CommitLogEnd(WalkEnd.BLANK, len(data), 1000 + len(data), blank_size, rmq.BLANK_MAGIC_CODE,
                                   len(data), blank_size_matches=True)

    *messages, end = rmq.walk_commitlog(data + bytes(100) + b"x" + bytes(3))
    assert len(messages) == 2
    assert (end.kind, end.non_zero_after, end.data_end) == (WalkEnd.ZERO_TAIL, len(data) + 100, len(data) + 101)

    *_, end = rmq.walk_commitlog(data + b"\1\2\3", path="f")  # stray bytes after the last record
    assert (end.kind, end.file_offset, end.non_zero_after, end.error) == (WalkEnd.SHORT_TAIL, len(data), len(data),
                                                                           None)
    for junk, kind, error in (
            (struct.pack(">ii", 200, 0x12345678) + bytes(16), WalkEnd.BAD_MAGIC, CorruptData),
            (struct.pack(">ii", 12, rmq.MESSAGE_MAGIC_CODE) + bytes(16), WalkEnd.CORRUPT, CorruptData),  # bad size
            (first[:50], WalkEnd.TRUNCATED, TruncatedData)):  # record cut by the end of the file
        *_, end = rmq.walk_commitlog(data + junk, path="f")
        assert (end.kind, end.file_offset, end.damaged) == (kind, len(data), True)
        assert isinstance(end.error, error) and (end.error.offset, end.error.path) == (len(data), "f")


# --------------------------------------------------------------------------
# Java helpers
# --------------------------------------------------------------------------


def test_special_keys_of_the_corpus_hash_like_java():
    """case.json lists the colliding keys and the Integer.MIN_VALUE-hash key by name."""
    keys = case_json("clean-multi")["counts"]["key_counts_selected (topic#key -> messages)"]
    producer = case_json("clean-multi")["producer"]["per_phase"]
    groups = re.findall(r"keys ([A-Za-z,]+) \(x2 each\) and ([A-Za-z,]+) \(all share", producer)[0]
    for group in groups:
        hashes = {rmq.java_string_hashcode(f"CollideTopic#{k}") for k in group.split(",")}
        assert len(hashes) == 1 and all(f"CollideTopic#{k}" in keys for k in group.split(","))
    (minhash,) = [k for k in keys if "minhash" in k]
    assert rmq.java_string_hashcode(minhash) == -(2**31)
    assert rmq.index_key_hash(minhash) == 0
    # and it is found in the index under hash 0 at its message
    (msg,) = [m for m in scanned("clean-multi")[0] if rmq.index_key(m["topic"], m["KEYS"] or "") == minhash]
    assert (0, msg["phyOffset"]) in {(e["keyHash"], e["phyOffset"])
                                     for e in load_jsonl("clean-multi", "index-entries.jsonl")}


@given(st.text())
def test_java_string_hashcode_definition(text):
    units = struct.unpack(f">{len(text.encode('utf-16-be', 'surrogatepass')) // 2}H",
                          text.encode("utf-16-be", "surrogatepass"))
    expected = sum(u * pow(31, len(units) - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    expected -= 2**32 if expected >= 2**31 else 0
    assert rmq.java_string_hashcode(text) == expected
    assert 0 <= rmq.index_key_hash(text) < 2**31


_prop_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1)


@given(st.dictionaries(_prop_text, _prop_text), st.booleans())
def test_properties_round_trip(props, trailing):
    text = "\x02".join(f"{k}\x01{v}" for k, v in props.items()) + ("\x02" if trailing and props else "")
    assert rmq.parse_properties(text) == props


def test_properties_edge_cases_follow_string2messageProperties():
    assert rmq.parse_properties("a\x01\x02\x01b\x02ok\x01v") == {"ok": "v"}
    assert rmq.parse_properties("k\x01v\x01w\x02") == {"k": "v\x01w"}


# --------------------------------------------------------------------------
# Robustness: mutated records and the wild corpus
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _sample_records() -> tuple[bytes, ...]:
    messages, _ = scanned("clean-multi")
    path = case_dir("clean-multi") / "store" / "commitlog" / messages[0]["file"]
    data = path.read_bytes()
    picks = [m for m in messages if m["file"] == messages[0]["file"]][:40:7]
    return tuple(data[m["fileOffset"]:m["fileOffset"] + m["totalSize"]] for m in picks)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_records_never_escape_as_other_exceptions(data):
    records = _sample_records()
    record = bytearray(data.draw(st.sampled_from(records)))
    for _ in range(data.draw(st.integers(1, 4))):
        record[data.draw(st.integers(0, len(record) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(record)))
    blob = bytes(record[:cut]) + data.draw(st.binary(max_size=64))
    *_, end = rmq.walk_commitlog(blob, path="fuzz")
    if end.error is not None:
        assert isinstance(end.error, SegtoolError) and 0 <= end.error.offset <= len(blob)


def _wild_readme_rows() -> dict[str, str]:
    readme = corpus_path("wild", "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 6 and "RocketMQ" in cells[6] and cells[6].startswith("OK"):
            rows[cells[1]] = cells[6]
    return rows


def test_wild_rocketmq_files_match_readme():
    rows = _wild_readme_rows()
    assert rows
    wild = corpus_path("wild")
    for rel, note in rows.items():
        path = wild / rel
        with rmq.MappedFile(path) as mf:
            buf = mf.buf
            if "commitlog:" in note:
                *messages, end = rmq.walk_commitlog(buf, file_from_offset=int(path.name), path=str(path))
                count = int(re.search(r"(\d+) msgs", note).group(1))
                assert len(messages) == count, rel
                assert all(m["bodyCRC"] == m["bodyCRCComputed"] for m in messages)
                assert all(m["physicalOffsetField"] == m["phyOffset"] for m in messages)
                if blank := re.search(r"BLANK magic at (\d+) \(total=(\d+)\)", note):
                    assert (end.kind, end.file_offset, end.total_size) == (
                        WalkEnd.BLANK, int(blank.group(1)), int(blank.group(2))), rel
                else:
                    zero = re.search(r"zero-fill at (\d+)", note)
                    assert (end.kind, end.file_offset) == (WalkEnd.ZERO_TAIL, int(zero.group(1))), rel
                del messages
            elif "ConsumeQueue:" in note:
                units = list(rmq.ConsumeQueueFileScan(buf, file_from_offset=int(path.name), path=str(path)))
                used = int(re.search(r"(\d+) used", note).group(1))
                first = tuple(int(x) for x in re.search(r"first=\((-?\d+), (-?\d+), (-?\d+)\)", note).groups())
                assert len(units) == used, rel
                assert (units[0]["commitLogOffset"], units[0]["size"], units[0]["tagsCode"]) == first
            elif "IndexFile" in note:
                with rmq.IndexFile(path) as index:
                    slots, entries = map(int, re.search(r"(\d+) slots\*4 \+ (\d+) items", note).groups())
                    assert (index.hash_slot_num, index.index_num) == (slots, entries)
                    header = tuple(int(x) for x in re.search(r"header=\(([-\d, ]+)\)", note).group(1).split(","))
                    assert tuple(index.header[k] for k in rmq.INDEX_HEADER_FAST.names) == header
            elif "StoreCheckpoint" in note:
                expected = {k: int(v) for k, v in re.findall(r"(\w+MsgTimestamp)=(\d+)", note)}
                assert rmq.read_checkpoint(buf) == expected
            else:
                pytest.fail(f"unclassified README row {rel}: {note}")
            del buf


def test_wild_consumequeue_points_at_wild_commitlog():
    """The 2018 unit-test store: every ConsumeQueue unit resolves to its message; the
    tagsCodes are ConsumeQueueExt addresses (consume-queue ext was enabled)."""
    rows = _wild_readme_rows()
    queues = {Path(rel).parent for rel, note in rows.items() if "ConsumeQueue:" in note}
    assert queues
    wild = corpus_path("wild")
    for rel_queue in queues:
        store = wild / rel_queue.parent.parent.parent
        queue = rmq.ConsumeQueue(wild / rel_queue)
        with rmq.CommitLog(store) as log:
            units = list(queue)
            for unit in units:
                msg = log.message_at(unit["commitLogOffset"])
                assert (msg["topic"], msg["queueId"], msg["queueOffset"], msg["totalSize"]) == (
                    queue.topic, queue.queue_id, unit["queueOffset"], unit["size"])
                assert rmq.is_cq_ext_address(unit["tagsCode"])
        assert len(commitlog_walk(store)[0]) >= len(units)


def _raise_at_damage(walk) -> None:
    *_, end = walk
    if end.error is not None:
        raise end.error


def test_every_wild_file_reads_or_raises_segtool_error():
    """Every reader on every wild file (Kafka ones included): decodes or raises a SegtoolError
    naming the file and a byte offset, never anything else."""
    wild = corpus_path("wild")
    for path in sorted(p for p in wild.rglob("*") if p.is_file() and p.name != "README.md"):
        with rmq.MappedFile(path) as mf:
            buf = mf.buf
            readers = (
                lambda: _raise_at_damage(rmq.walk_commitlog(buf, path=str(path))),
                lambda: list(rmq.ConsumeQueueFileScan(buf, path=str(path))),
                lambda: rmq.read_checkpoint(buf, str(path)),
            )
            for read in readers:
                try:
                    read()
                except SegtoolError as exc:
                    assert exc.path == str(path) and exc.offset is not None
            del buf, readers
        try:
            rmq.IndexFile(path).close()
        except SegtoolError as exc:
            assert exc.path == str(path) and exc.offset is not None
