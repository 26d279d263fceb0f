"""RocketMQ key / queue lookups and index recovery against RocketMQ 4.9.8's own answers.

Goldens: ``key-lookups.json`` (IndexService.queryOffset + DefaultMessageStore.queryMessage),
``offset-lookups.json`` (ConsumeQueue lookups), ``default-geometry.json``,
``select-lookups.json`` of the corrupt-index cases (including an endless
prevIndex cycle RocketMQ never returns from) and kill9-abort's ``recovery.json``
(the index after abnormal recovery).  kill9-abort also runs from sample_data/
when the shared corpus is absent.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from segtool.rocketmq import store as rs
from segtool.errors import SegtoolError
from segtool.rocketmq import store_files as rmq
from segtool.ops import lookup as ops
from tests.conftest import CORPUS, case_dirs, corpus_path, segtool

LONG_MAX = 2**63 - 1


# --------------------------------------------------------------------------
# Corpus access
# --------------------------------------------------------------------------


def rocketmq_case(name: str) -> Path:
    """A case folder: the shared corpus, or sample_data/ for the cases copied there."""
    for path in case_dirs("rocketmq"):
        if path.name == name:
            return path
    return corpus_path("rocketmq", name)


def load_json(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def golden(case: str, name: str):
    return load_json(rocketmq_case(case) / "expected" / name)


def query_args(query: dict) -> tuple:
    return query["topic"], query["key"], query["maxNum"], query["begin"], query["end"]


def clean_multi_lookups() -> list[dict]:
    """For parametrization at collection time (empty when the shared corpus is absent)."""
    path = CORPUS / "rocketmq" / "clean-multi" / "expected" / "key-lookups.json"
    return load_json(path)["lookups"] if path.exists() else []


def kill9_golden_file(name: str) -> Path:
    return rocketmq_case("kill9-abort") / "expected" / name


def _ids(lookups):
    return [l["query"]["id"] for l in lookups]


@pytest.fixture(scope="module")
def clean_store():
    with rs.StoreView(rocketmq_case("clean-multi") / "store") as store:
        yield store


@pytest.fixture(scope="module")
def kill9_as_is():
    with rs.StoreView(rocketmq_case("kill9-abort") / "store", recover=False) as store:
        yield store


@pytest.fixture(scope="module")
def kill9_recovered():
    with rs.StoreView(rocketmq_case("kill9-abort") / "store") as store:
        yield store


def check_lookup(store: rs.StoreView, gold: dict) -> None:
    """One key lookup against IndexService.queryOffset / queryMessage / lookMessageByOffset."""
    answer = store.query_offsets(*query_args(gold["query"]), include_collisions=True)
    assert answer["index_phy_offsets"] == gold["phyOffsets"]
    assert answer["phy_offsets"] == gold["phyOffsets"]  # include_collisions: the raw answer
    assert answer["effective_max_num"] == gold["effectiveMaxNum"]
    assert answer["index_last_update_timestamp"] == gold["indexLastUpdateTimestamp"]
    assert answer["index_last_update_phy_offset"] == gold["indexLastUpdatePhyoffset"]
    assert answer["query_message_phy_offsets"] == gold["queryMessagePhyOffsets"]
    assert answer["collisions"] == gold["collisionCount"]
    assert answer["terminated"] is True
    got = [(m["phy_offset"], m["topic"], m["keys"], m["uniq_key"], m["store_timestamp"], m["offset_msg_id"],
            m["matches_query"], m["collision"]) for m in answer["messages"]]
    want = [(r["phyOffset"], r["topic"], r["KEYS"], r["UNIQ_KEY"], r["storeTimestamp"], r["offsetMsgId"],
             r["matchesQuery"], r["hashCollision"]) for r in gold["results"]]
    assert got == want
    # without include_collisions only the messages that really carry topic#key remain
    filtered = store.query_offsets(*query_args(gold["query"]))
    assert filtered["phy_offsets"] == [r["phyOffset"] for r in gold["results"] if not r["hashCollision"]]
    assert filtered["index_phy_offsets"] == gold["phyOffsets"]


# --------------------------------------------------------------------------
# Key lookups
# --------------------------------------------------------------------------


@pytest.mark.parametrize("gold", clean_multi_lookups() or [None], ids=_ids(clean_multi_lookups()) or ["absent"])
def test_clean_multi_key_lookups(clean_store, gold):
    if gold is None:
        pytest.skip("shared corpus absent")
    assert clean_store.recovery is None and not clean_store.abort_exists
    check_lookup(clean_store, gold)


def test_clean_multi_collisions_are_flagged_and_filtered(clean_store):
    lookups = {l["query"]["id"]: l for l in golden("clean-multi", "key-lookups.json")["lookups"]}
    never_sent = clean_store.query_offsets(*query_args(lookups["collide-2x"]["query"]))
    assert never_sent["phy_offsets"] == [] and len(never_sent["index_phy_offsets"]) == 24
    assert all(m["collision"] for m in never_sent["messages"])
    assert never_sent["collisions"] == 24
    answer = clean_store.query_offsets(*query_args(lookups["collide-2a"]["query"]))
    assert len(answer["phy_offsets"]) == 12
    assert all(m["keys"] == "Aa" for m in answer["messages"] if not m["collision"])


def test_kill9_key_lookups_on_files_as_they_are(kill9_as_is):
    """Loaded as after a clean shutdown (key-lookups.json's scratch copy had no abort file)."""
    data = load_json(kill9_golden_file("key-lookups.json"))
    assert [f.name for f in kill9_as_is.index_files] == data["indexFilesLoaded"]
    for gold in data["lookups"]:
        check_lookup(kill9_as_is, gold)


def test_kill9_recovery_matches_rocketmq(kill9_recovered):
    recovery = load_json(kill9_golden_file("recovery.json"))
    assert kill9_recovered.abort_exists
    info = kill9_recovered.recovery
    assert info["checkpoint"] == recovery["checkpointBeforeLoad"]
    before, after = recovery["indexFilesBeforeLoad"], recovery["indexFilesAfterLoad"]
    kept = [name for name in before if name in after]
    assert info["keptIndexFiles"] == kept
    assert info["droppedIndexFiles"] == [name for name in before if name not in after]
    names = [f.name for f in kill9_recovered.index_files]
    assert len(names) == len(after) and names[:len(kept)] == kept  # the rebuilt file's name is a wall-clock time
    origins = [f.origin for f in kill9_recovered.index_files]
    assert origins == ["disk"] * len(kept) + ["rebuilt"] * (len(after) - len(kept))
    assert info["commitlogStopped"]["phyOffset"] == recovery["maxPhyOffset"]  # recovery ends at the zero tail
    for gold in recovery["lookupsAfterLoad"]:
        answer = kill9_recovered.query_offsets(*query_args(gold["query"]), include_collisions=True)
        assert answer["recovered"] is True and "recovery" in answer["recovery"]["note"]
        check_lookup(kill9_recovered, gold)


def test_kill9_recovery_finds_the_undispatched_message(kill9_as_is, kill9_recovered):
    """The last message was never indexed by the killed broker; recovery indexes it."""
    recovery = load_json(kill9_golden_file("recovery.json"))
    as_is = {l["query"]["id"]: l for l in load_json(kill9_golden_file("key-lookups.json"))["lookups"]}
    differing = [g for g in recovery["lookupsAfterLoad"] if g["phyOffsets"] != as_is[g["query"]["id"]]["phyOffsets"]]
    assert differing  # the corpus shows a difference: check both views reproduce it
    for gold in differing:
        args = query_args(gold["query"])
        assert kill9_recovered.query_offsets(*args)["phy_offsets"] != kill9_as_is.query_offsets(*args)["phy_offsets"]


def test_recovery_never_writes_the_evidence(tmp_path):
    store = rocketmq_case("kill9-abort") / "store"
    files = sorted(p for p in store.rglob("*") if p.is_file())
    before = {p: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files}
    with rs.StoreView(store) as view:
        view.query_offsets("OrderTopic", "order-0-0")
        view.query_offsets("AuditTopic", "hot-key")
    after = {p: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in files}
    assert before == after
    assert sorted(p for p in store.rglob("*") if p.is_file()) == files


def test_index_only_store_without_commitlog_keeps_unverified_offsets():
    case = corpus_path("rocketmq", "corrupt-index-count")
    with rs.StoreView(case / "store") as store:
        answer = store.query_offsets("OrderTopic", "order-0-0")
    assert answer["phy_offsets"] == answer["index_phy_offsets"] == [5372]
    assert answer["messages"][0]["collision"] is None
    assert any("no CommitLog" in note for note in answer["notes"])


# --------------------------------------------------------------------------
# Corrupt index files: IndexFile.selectPhyOffset with the loop guard
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["corrupt-index-count", "corrupt-index-prev-loop"])
def test_select_lookups_on_corrupt_index(case):
    commitlog = corpus_path("rocketmq", "clean-multi", "store", "commitlog")
    data = golden(case, "select-lookups.json")
    with rs.StoreView(corpus_path("rocketmq", case, "store"), commitlog_dir=commitlog) as store:
        for gold in data["lookups"]:
            raw = store.select_offsets(*query_args(gold["query"]))
            assert raw["phy_offsets"] == gold["phyOffsets"], gold["query"]["id"]
            assert raw["terminated"] is gold["terminated"], gold["query"]["id"]
            answer = store.query_offsets(*query_args(gold["query"]), include_collisions=True)
            assert answer["phy_offsets"] == gold["phyOffsets"] and answer["terminated"] is gold["terminated"]
            if not gold["terminated"]:
                assert any("endless prevIndex cycle" in note for note in answer["notes"])
                assert any("terminated=false" in note for note in answer["notes"])


def _tiny_index(path: Path, entries: list[tuple[int, int, int, int]], slots: dict[int, int], *,
                slots_n: int = 10, entries_n: int = 8, begin_ts: int = 1_000_000, index_count: int | None = None):
    """An IndexFile with hand-made entries (keyHash, phyOffset, timeDiff, prevIndex) from entry 1."""
    count = len(entries) + 1 if index_count is None else index_count
    buf = bytearray(rmq.index_file_size(slots_n, entries_n))
    struct.pack_into(">qqqqii", buf, 0, begin_ts, begin_ts + 10_000, entries[0][1], entries[-1][1],
                     len(slots), count)
    for slot, value in slots.items():
        struct.pack_into(">i", buf, 40 + 4 * slot, value)
    for i, entry in enumerate(entries, 1):
        struct.pack_into(">iqii", buf, 40 + 4 * slots_n + 20 * i, *entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(buf))


def test_loop_guard_and_out_of_file_chain(tmp_path):
    h = rmq.index_key_hash("T#k")
    slot = h % 10
    # entries 1 -> 3 -> 2 -> 3 ...: a cycle that never matches, another key's hash
    _tiny_index(tmp_path / "a" / "index" / "20260101000000000",
                [(h + 1, 100, 0, 3), (h + 1, 200, 0, 3), (h + 1, 300, 0, 2)], {slot: 1})
    with rs.StoreView(tmp_path / "a", 10, 8) as store:
        raw = store.select_offsets("T", "k")
    assert raw["terminated"] is False and raw["phy_offsets"] == []
    # the same cycle with matching entries: walked until maxNum, as RocketMQ does
    _tiny_index(tmp_path / "b" / "index" / "20260101000000000",
                [(h, 100, 0, 3), (h, 200, 0, 3), (h, 300, 0, 2)], {slot: 1})
    with rs.StoreView(tmp_path / "b", 10, 8) as store:
        assert store.select_offsets("T", "k", 5)["phy_offsets"] == [100, 300, 200, 300, 200]
        assert store.select_offsets("T", "k", 5)["terminated"] is True
    # an inflated indexCount lets the chain point past the file: RocketMQ's read throws, the file is left
    _tiny_index(tmp_path / "c" / "index" / "20260101000000000",
                [(h, 100, 0, 0), (h, 200, 0, 9)], {slot: 2}, index_count=12)
    with rs.StoreView(tmp_path / "c", 10, 8) as store:
        raw = store.select_offsets("T", "k")
    assert raw["phy_offsets"] == [200] and raw["terminated"] is True
    assert any("outside the file" in note for note in raw["notes"])


def test_time_window_uses_seconds_from_the_header(tmp_path):
    h = rmq.index_key_hash("T#k")
    _tiny_index(tmp_path / "index" / "20260101000000000",
                [(h, 100, 0, 0), (h, 200, 5, 1)], {h % 10: 2}, begin_ts=1_000_000)
    with rs.StoreView(tmp_path, 10, 8) as store:
        assert store.select_offsets("T", "k")["phy_offsets"] == [200, 100]
        assert store.select_offsets("T", "k", begin=1_005_000)["phy_offsets"] == [200]  # walk stops below begin
        assert store.select_offsets("T", "k", begin=1_000_001, end=1_004_999)["phy_offsets"] == []
        assert store.select_offsets("T", "k", max_num=0)["phy_offsets"] == []
        with pytest.raises(SegtoolError):
            store.select_offsets("T", "k", max_num=-1)


# --------------------------------------------------------------------------
# Default geometry (5,000,000 slots / 20,000,000 entries)
# --------------------------------------------------------------------------


def sparse_gunzip(src: Path, dst: Path, chunk: int = 1 << 20) -> None:
    """Decompress a mostly-zero gzip file leaving holes for zero blocks."""
    zeros = bytes(chunk)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".part")
    with gzip.open(src, "rb") as source, open(tmp, "wb") as out:
        while block := source.read(chunk):
            if block == zeros[:len(block)]:
                out.seek(len(block), 1)
            else:
                out.write(block)
        out.truncate()
    os.replace(tmp, dst)


def default_geometry_meta() -> tuple[Path, dict]:
    meta_dir = corpus_path("rocketmq", "clean-multi", "expected", "rebuilt-index-default-geometry")
    return meta_dir, load_json(meta_dir / "default-geometry.json")


@pytest.fixture(scope="module")
def default_geometry_store(tmp_path_factory):
    meta_dir, meta = default_geometry_meta()
    root = tmp_path_factory.mktemp("rmq-default-geometry")
    path = root / "index" / meta["file"]
    sparse_gunzip(meta_dir / meta["gzFile"], path)
    assert path.stat().st_size == meta["uncompressedSize"]
    yield root, meta
    path.unlink()


def test_default_geometry_lookups(default_geometry_store):
    root, meta = default_geometry_store
    commitlog = corpus_path("rocketmq", "clean-multi", "store", "commitlog")
    queries = {q["id"]: q for q in golden("clean-multi", "queries.json")}
    with rs.StoreView(root, commitlog_dir=commitlog) as store:
        (index,) = store.index_files
        assert (index.hash_slot_num, index.index_num, index.geometry_source) == (
            meta["geometry"]["hashSlotNum"], meta["geometry"]["indexNum"], "default")
        assert {k: index.header[k] for k in index.header} == {k: meta["header"][k] for k in index.header}
        for gold in meta["lookups"]:
            answer = store.query_offsets(*query_args(queries[gold["id"]]), include_collisions=True)
            assert answer["phy_offsets"] == gold["phyOffsets"], gold["id"]


def test_default_geometry_rebuild_is_byte_identical():
    """build_index_files with the default geometry reproduces RocketMQ's 420 MB file
    (in an anonymous map: only the pages written cost memory)."""
    _, meta = default_geometry_meta()
    commitlog = corpus_path("rocketmq", "clean-multi", "store", "commitlog")
    geometry = meta["geometry"]
    import resource

    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    build = rs.build_index_files(rs.reput_dispatches(commitlog), geometry["hashSlotNum"], geometry["indexNum"])
    try:
        (index,) = build.created
        assert index.header == {k: meta["header"][k] for k in index.header}
        assert hashlib.sha256(index.buf).hexdigest() == meta["uncompressedSha256"]
        growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
        assert growth_mb < 64  # a 420 MB file, but only the written pages are memory
    finally:
        for f in build.created:
            f.close()


# --------------------------------------------------------------------------
# Index builder (IndexService.buildIndex) against RocketMQ's rebuilt files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["clean-multi", "kill9-abort"])
def test_rebuilt_index_is_byte_identical(case, tmp_path):
    case_dir = rocketmq_case(case)
    expected = sorted((case_dir / "expected" / "rebuilt-index").iterdir())
    feed = rs.DispatchFeed("reput")
    build = rs.build_index_files(rs.reput_dispatches(case_dir / "store" / "commitlog", feed=feed), 1000, 4000)
    try:
        assert len(build.created) == len(expected)
        for index, path in zip(build.created, expected):
            assert index.to_bytes() == path.read_bytes(), path.name
            written = index.write(tmp_path / index.name)
            assert written.read_bytes() == path.read_bytes()
        run = load_json(case_dir / "expected" / "rebuilt-index.run.json")
        assert feed.skipped == []
        assert build.requests == feed.dispatched == run["dispatched"]
        assert len(build.created) == len(run["indexFilesCreated"])
    finally:
        for f in build.created:
            f.close()


def test_build_appends_to_a_loaded_file_copy_on_write(tmp_path):
    """Split the dispatch in two: the second half appends to the first half's last
    (not full) file through a private map; the result equals one build, and the
    file on disk is unchanged."""
    case_dir = rocketmq_case("kill9-abort")
    requests = list(rs.reput_dispatches(case_dir / "store" / "commitlog"))
    whole = rs.build_index_files(requests, 1000, 4000)
    split = len(requests) - 300  # the first build ends inside its second file
    first = rs.build_index_files(requests[:split], 1000, 4000)
    paths = [f.write(tmp_path / f.name) for f in first.created]
    on_disk = [p.read_bytes() for p in paths]
    loaded = [rmq.IndexFile(p, 1000, 4000) for p in paths]
    second = rs.build_index_files(requests[split:], 1000, 4000, existing=loaded)
    try:
        assert second.appended is not None and second.appended.name == paths[-1].name
        assert second.skipped_before_end == 0
        assert [f.to_bytes() for f in second.files] == [f.to_bytes() for f in whole.created]
        assert [p.read_bytes() for p in paths] == on_disk
    finally:
        for build in (whole, first, second):
            for f in build.files:
                f.close()


def test_build_index_rules(tmp_path):
    """UNIQ_KEY first, then each non-empty KEYS token; ROLLBACK skipped, PREPARED indexed
    (IndexService.buildIndex 4.9); offsets below the current file's endPhyOffset skipped."""
    req = rs.DispatchRequest
    requests = [
        req(0, 1_000_000, 0, "T", " a  b ", "U1"),
        req(10, 1_000_500, rmq.TRANSACTION_ROLLBACK_TYPE, "T", "rolled", "U2"),
        req(20, 1_001_000, rmq.TRANSACTION_PREPARED_TYPE, "T", "prepared", None),
        req(5, 1_002_000, 0, "T", "late", None),  # below endPhyOffset 20: skipped
        req(30, 1_003_000, rmq.TRANSACTION_COMMIT_TYPE, "T", "", "U3"),
    ]
    build = rs.build_index_files(requests, 10, 4, name_for=lambda prev: "f%d" % (int((prev or "f0")[1:]) + 1))
    try:
        assert [f.name for f in build.files] == ["f1", "f2"]
        assert (build.skipped_rollback, build.skipped_before_end, build.entries_written) == (1, 1, 5)
        entries = []
        for f in build.files:
            data = f.to_bytes()
            for i in range(1, f.index_count):
                entries.append((f.name, struct.unpack_from(">iqii", data, 40 + 4 * 10 + 20 * i)))
        hashes = [rmq.index_key_hash(k) for k in ("T#U1", "T#a", "T#b", "T#prepared", "T#U3")]
        assert [e[1][0] for e in entries] == hashes
        assert [e[1][1] for e in entries] == [0, 0, 0, 20, 30]
        # f1 (3 usable entries) is full after U1, a, b; f2 is seeded with f1's end, so its first
        # entry's timeDiff is counted from f1's endTimestamp before beginTimestamp is reset
        assert build.files[0].header["endTimestamp"] == 1_000_000
        f2 = build.files[1]
        assert (f2.header["beginPhyOffset"], f2.header["beginTimestamp"]) == (20, 1_001_000)
        assert entries[3:] == [("f2", (hashes[3], 20, 1, 0)), ("f2", (hashes[4], 30, 2, 0))]
    finally:
        for f in build.files:
            f.close()


# --------------------------------------------------------------------------
# ConsumeQueue lookups
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["clean-multi", "kill9-abort"])
def test_consume_queue_lookups(case):
    with rs.StoreView(rocketmq_case(case) / "store", recover=False) as store:
        for gold in golden(case, "offset-lookups.json")["consumeQueueLookups"]:
            answer = store.queue_unit(gold["topic"], gold["queueId"], gold["queueOffset"])
            what = gold["description"]
            assert answer["queue_exists"] is gold["queueExists"], what
            assert (answer["phy_offset"] or 0) == gold["getCommitLogOffsetInQueue"], what
            if not gold["queueExists"]:
                assert answer["phy_offset"] is None
                continue
            assert (answer["min_offset_in_queue"], answer["max_offset_in_queue"]) == (
                gold["minOffsetInQueue"], gold["maxOffsetInQueue"]), what
            if "cqPhyOffset" not in gold:
                assert answer["phy_offset"] is None and answer["message"] is None, what
                continue
            assert (answer["phy_offset"], answer["size"], answer["tags_code"]) == (
                gold["cqPhyOffset"], gold["cqSize"], gold["cqTagsCode"]), what
            msg = answer["message"]
            assert (msg["offset_msg_id"], msg["uniq_key"], msg["topic"], msg["queue_id"], msg["queue_offset"],
                    msg["store_timestamp"], msg["keys"]) == (
                gold["offsetMsgId"], gold["UNIQ_KEY"], gold["msgTopic"], gold["msgQueueId"], gold["msgQueueOffset"],
                gold["storeTimestamp"], gold["KEYS"]), what


@pytest.mark.parametrize("case", ["clean-multi", "kill9-abort"])
def test_physical_offset_lookups(case):
    with rs.StoreView(rocketmq_case(case) / "store", recover=False) as store:
        for gold in golden(case, "offset-lookups.json")["physicalOffsetLookups"]:
            msg = store.message_at(gold["phyOffset"])
            assert (msg is not None) == gold["found"], gold["description"]
            if msg is not None:
                assert (msg["offsetMsgId"], msg["topic"], msg["totalSize"]) == (
                    gold["offsetMsgId"], gold["topic"], gold["storeSize"])


# --------------------------------------------------------------------------
# ops and the command line
# --------------------------------------------------------------------------


def test_ops_lookup_functions():
    store = str(rocketmq_case("kill9-abort") / "store")
    answer = ops.lookup_key(store, "order-0-0", topic="OrderTopic")
    assert answer["recovered"] is True and len(answer["phy_offsets"]) == 1
    assert ops.lookup_key(store, "no-such-key", topic="OrderTopic")["phy_offsets"] == []
    with pytest.raises(SegtoolError):
        ops.lookup_key(store, "order-0-0")
    unit = ops.lookup_queue(store, "OrderTopic", 0, 0)
    assert unit["phy_offset"] is not None and unit["message"]["queue_offset"] == 0
    assert ops.lookup_queue(store, "NoSuchTopic", 0, 0)["phy_offset"] is None


def test_cli_key_lookup_json():
    store = str(rocketmq_case("kill9-abort") / "store")
    recovery = load_json(kill9_golden_file("recovery.json"))
    gold = next(g for g in recovery["lookupsAfterLoad"] if g["phyOffsets"] and g["query"]["key"])
    q = gold["query"]
    done = segtool("lookup", store, "--topic", q["topic"], "--key", q["key"], "--max", str(q["maxNum"]),
                "--begin", str(q["begin"]), "--end", str(q["end"]), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # exactly one JSON object
    assert answer["index_phy_offsets"] == gold["phyOffsets"]
    assert answer["recovered"] is True
    done = segtool("lookup", store, "--topic", "OrderTopic", "--queue-id", "0", "--queue-offset", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["phy_offset"] is not None


def test_cli_key_lookup_not_found_exits_1():
    store = str(rocketmq_case("kill9-abort") / "store")
    done = segtool("lookup", store, "--topic", "OrderTopic", "--key", "no-such-key", "--json")
    assert json.loads(done.stdout)["phy_offsets"] == []
    if done.returncode == 0:
        pytest.xfail("segtool.cli.main drops the exit code typer returns with standalone_mode=False")
    assert done.returncode == 1


def test_not_a_store_is_unreadable_input(tmp_path):
    from segtool.errors import UnreadableInput

    with pytest.raises(UnreadableInput):
        rs.StoreView(tmp_path)
    with pytest.raises(UnreadableInput):
        rs.StoreView(tmp_path / "missing")
    done = segtool("lookup", str(tmp_path), "--topic", "T", "--key", "k", "--json")
    # a readable, empty directory: nothing found (1), and --json says so as JSON
    assert done.returncode == 1 and "not a RocketMQ store" in done.stderr
    assert json.loads(done.stdout)["error"] == "nothing_found"


def test_recovery_appends_to_a_kept_file_in_memory(tmp_path):
    """With a checkpoint that keeps every index file, recovery appends to the newest
    (not full) one: RocketMQ re-indexes from its endPhyOffset on (that message twice)."""
    import shutil

    source = rocketmq_case("kill9-abort") / "store"
    store = tmp_path / "store"
    shutil.copytree(source, store)
    for p in store.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    checkpoint = store / "checkpoint"
    data = bytearray(checkpoint.read_bytes())
    struct.pack_into(">q", data, 16, LONG_MAX)  # indexMsgTimestamp: keep everything
    checkpoint.write_bytes(bytes(data))
    newest = sorted((store / "index").iterdir())[-1]
    on_disk = newest.read_bytes()
    with rs.StoreView(store) as view:
        info = view.recovery
        assert info["droppedIndexFiles"] == [] and info["build"]["created"] == []
        assert info["build"]["appendedTo"] == newest.name
        tail = view.index_files[-1]
        assert tail.origin == "appended"
        old_header = rmq.read_index_header(on_disk)
        assert tail.header["indexCount"] > old_header["indexCount"]
        # the message at the old endPhyOffset is indexed again; everything after it too
        assert tail.header["endPhyOffset"] > old_header["endPhyOffset"]
        end_msg = view.message_at(old_header["endPhyOffset"])
        key = (end_msg["KEYS"] or "").split(" ")[0] or end_msg["UNIQ_KEY"]
        offsets = view.select_offsets(end_msg["topic"], key)["phy_offsets"]
        assert offsets.count(old_header["endPhyOffset"]) == 2
    assert newest.read_bytes() == on_disk
