"""RocketMQ 5.x store files round-trip through a writer that follows the Java code and segtool.

No real 5.x store is in the corpus (the lock and abort markers excepted: 4.9.8 writes those too):
``tests/rocketmq5_writer.py`` writes a store as RocketMQ 5.x's classes write it, and every layout is
read back by segtool's readers, its ``dump``, ``verify`` and ``--json`` output, and compared with what
the writer wrote.  The construct declarations and the struct/numpy readers derived from them are
checked against each other on the same files.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import construct as cs
import pytest
from jsonschema import Draft202012Validator

from segtool.errors import SegtoolError
from segtool.findings import Severity
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq import v5 as r5
from segtool.engine.detect import detect
from segtool.ops.dump import dump_file
from segtool.ops.verify import verify_file
from tests import rocketmq5_writer as w
from tests.conftest import corpus_path, segtool

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"
LONG_TOPIC = "LongTopic-" + "x" * 190  # > 127 characters: CommitLog writes it as a MessageVersion V2 message
PID = 4242
BATCH_TOPIC, COMPACT_TOPIC = "BatchTopic", "CompactTopic"
INNER_BATCH_FLAG = 0x80  # MessageSysFlag.INNER_BATCH_FLAG
WRITE_TIME = 1_700_000_000_000  # the timer wheel's write time
DAY_MS = 86_400_000


class Written:
    """The store the writer made and what it wrote into each file."""

    def __init__(self, root: Path):
        self.root = root
        self.commitlog = w.CommitLogWriter(root / "commitlog", 4096)
        self.plain_then_crc: list[int] = []
        queue_offsets: dict[tuple[str, int], int] = {}

        def put(topic: str, body: bytes, props: dict, queue_id: int = 0, batch: int = 1, sys_flag: int = 0,
                ts: int = 0) -> dict:
            key = (topic, queue_id)
            offset = queue_offsets.get(key, 0)
            if sys_flag & INNER_BATCH_FLAG:  # BatchConsumeQueue.assignQueueOffset puts INNER_BASE
                props = {**props, "INNER_NUM": str(batch), "INNER_BASE": str(offset)}
            msg = w.Message(topic, body, props, queue_id=queue_id, queue_offset=offset, sys_flag=sys_flag,
                            store_timestamp=1_700_000_000_100 + ts)
            self.commitlog.append(msg)
            queue_offsets[key] = offset + batch
            return self.commitlog.records[-1]

        # the first messages before enabledAppendPropCRC was switched on, the rest with the __CRC32# property
        put("TopicA", b"before crc", {"TAGS": "a", "KEYS": "k0"})
        self.commitlog.append_crc = True
        for i in range(30):
            put("TopicA", f"body {i}".encode() * (i % 4 + 1), {"TAGS": "tag" + str(i % 3), "KEYS": f"k{i}"}, ts=i)
            put(LONG_TOPIC, f"long {i}".encode(), {"UNIQ_KEY": f"U{i:04d}"}, queue_id=1, ts=i)
        self.batch_records = [put(BATCH_TOPIC, bytes([i]) * 40, {"TAGS": "b"}, batch=3 + i % 2,
                                  sys_flag=INNER_BATCH_FLAG, ts=100 + i) for i in range(7)]
        self.timer_records = [put(r5.TIMER_TOPIC, f"timer {i}".encode(), {"REAL_TOPIC": f"Real{i % 2}",
                                  "TIMER_OUT_MS": str(WRITE_TIME + 5000 + 1000 * (i % 3))}, ts=200 + i)
                              for i in range(8)]
        # delays past the roll window (TimerMessageStore.doEnqueue writes them as MAGIC_ROLL units)
        self.roll_delays = (int(2.2 * DAY_MS), 5 * DAY_MS)
        self.timer_records += [put(r5.TIMER_TOPIC, f"far timer {i}".encode(), {"REAL_TOPIC": "Real0",
                                   "TIMER_OUT_MS": str(WRITE_TIME + delay)}, ts=210 + i)
                               for i, delay in enumerate(self.roll_delays)]
        self.compact_records = [put(COMPACT_TOPIC, f"value {i}".encode(), {"KEYS": f"key{i % 3}", "TAGS": "c"},
                                    ts=300 + i) for i in range(9)]
        self.commitlog_paths = self.commitlog.write()
        self.commitlog_end = self.commitlog.offset

        # StoreCheckpoint with the 5.x offsets
        last_ts = self.commitlog.records[-1]["message"].store_timestamp
        self.checkpoint = (last_ts, last_ts, last_ts, self.commitlog_end, self.commitlog_end)
        w.write_file(root / "checkpoint", w.checkpoint_bytes(*self.checkpoint))

        # BatchConsumeQueue: 4 units a file
        self.bcq_units = []
        for record in self.batch_records:
            msg = record["message"]
            self.bcq_units.append({"commit_log_offset": record["offset"], "size": len(record["bytes"]),
                                   "tags_code": w.java_hash("b"), "store_timestamp": msg.store_timestamp,
                                   "msg_base_offset": msg.queue_offset, "batch_size": int(msg.properties["INNER_NUM"]),
                                   "compacted_offset": -1, "reserved": 0})
        bcq = w.MappedFileQueue(root / "batchconsumequeue" / BATCH_TOPIC / "0", 4 * w.BCQ_UNIT_SIZE)
        for u in self.bcq_units:
            bcq.put(w.bcq_unit(u["commit_log_offset"], u["size"], u["tags_code"], u["store_timestamp"],
                               u["msg_base_offset"], u["batch_size"]))
        self.bcq_paths = bcq.write()

        # timer store: a timer log of 5 units a file, a wheel, its checkpoint and metrics
        self.timer = w.TimerStore(root, 5 * w.TIMER_UNIT_SIZE + 40)
        for record in self.timer_records:
            msg = record["message"]
            self.timer.enqueue(record["offset"], len(record["bytes"]), int(msg.properties["TIMER_OUT_MS"]),
                               WRITE_TIME, msg.properties["REAL_TOPIC"])
        # a delete of the first message (TIMER_DEL_UNIQKEY): one more unit, the slot's num one lower
        first = self.timer_records[0]
        self.timer.enqueue(first["offset"], len(first["bytes"]), int(first["message"].properties["TIMER_OUT_MS"]),
                           WRITE_TIME, first["message"].properties["REAL_TOPIC"], delete=True)
        self.timer.write()
        self.timer_checkpoint = (WRITE_TIME, self.timer.log.offset, 8, 8, 0, WRITE_TIME, 3)
        w.write_file(root / "config" / "timercheck", w.timer_checkpoint_bytes(*self.timer_checkpoint))
        self.timer_metrics = {"Real0": (4, WRITE_TIME), "Real1": (4, WRITE_TIME + 1), "Réel": (0, 5)}
        w.write_file(root / "config" / "timermetrics",
                     w.timer_metrics_text(self.timer_metrics, 3, 0, WRITE_TIME).encode())

        # DLedger CommitLog: 1 KiB data files, 4 index entries a file, a term change
        self.dledger = w.DLedgerWriter(root, "n0", 1024, 4 * w.DLEDGER_INDEX_UNIT_SIZE)
        for i in range(7):
            topic = LONG_TOPIC if i % 3 == 2 else "DTopic"
            msg = w.Message(topic, f"raft {i}".encode() * 5, {"KEYS": f"d{i}"}, queue_offset=i)
            self.dledger.append(msg, term=1 if i < 4 else 2)
        self.dledger.write(committed_index=5)

        # compaction store: CompactTopic queue 0, the last message of each key, 2 units a queue file
        self.compaction = w.CompactionWriter(root, COMPACT_TOPIC, 0, 1024, 3)
        for record in self.compact_records[-3:]:  # the newest value of each of the three keys
            self.compaction.append(record["bytes"], w.java_hash("c"), record["message"].store_timestamp)
        self.compaction.write({f"{COMPACT_TOPIC}_0": 9})

        w.write_markers(root, PID)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Written:
    return Written(tmp_path_factory.mktemp("rocketmq5") / "store")


def _dump(path) -> list[dict]:
    return [item for item in dump_file(detect(str(path)))]


def _json_lines(run) -> list[dict]:
    return [json.loads(line) for line in run.stdout.splitlines()]


# --------------------------------------------------------------------------------------------
# The declarations: Java's sizes, and construct against the derived readers on the written files
# --------------------------------------------------------------------------------------------


def test_layout_sizes_are_the_java_constants():
    assert r5.BATCH_CQ_UNIT_SIZE == w.BCQ_UNIT_SIZE == 46
    assert r5.TIMER_LOG_UNIT_SIZE == w.TIMER_UNIT_SIZE == 52
    assert r5.TIMER_LOG_BLANK_FAST.size == w.TIMER_MIN_BLANK_LEN
    assert r5.TIMER_LOG_BLANK_MAGIC == w.TIMER_BLANK_MAGIC_CODE
    assert r5.TIMER_WHEEL_SLOT_SIZE == w.SLOT_SIZE and r5.TIMER_WHEEL_SLOTS == 2 * w.TIMER_SLOTS_TOTAL
    assert r5.DLEDGER_BODY_OFFSET == w.DLEDGER_BODY_OFFSET and r5.DLEDGER_INDEX_UNIT_SIZE == w.DLEDGER_INDEX_UNIT_SIZE
    assert rmq.CRC32_RESERVED_LEN == w.CRC32_RESERVED_LEN
    assert (rmq.MESSAGE_MAGIC_CODE, rmq.MESSAGE_MAGIC_CODE_V2) == (w.MESSAGE_MAGIC_CODE, w.MESSAGE_MAGIC_CODE_V2)


def _construct_rows(schema, data: bytes, count: int) -> list[tuple]:
    return [tuple(v for k, v in row.items() if k != "_io") for row in cs.Array(count, schema).parse(data)]


def test_construct_declarations_agree_with_the_fast_readers(store):
    for path in store.bcq_paths:
        data = path.read_bytes()
        count = len(data) // r5.BATCH_CQ_UNIT_SIZE
        assert r5.batch_cq_units(data).tolist() == _construct_rows(r5.BATCH_CQ_UNIT, data, count)
        assert cs.Array(count, r5.BATCH_CQ_UNIT).build(cs.Array(count, r5.BATCH_CQ_UNIT).parse(data)) == data
    wheel = (store.root / "timerwheel").read_bytes()
    for slot in r5.used_timer_slots(wheel):
        at = slot["slot"] * r5.TIMER_WHEEL_SLOT_SIZE
        parsed = r5.TIMER_WHEEL_SLOT.parse(wheel[at:at + r5.TIMER_WHEEL_SLOT_SIZE])
        assert {k: parsed[k] for k in r5.TIMER_WHEEL_SLOT_FAST.names} == {k: slot[k] for k in
                                                                         r5.TIMER_WHEEL_SLOT_FAST.names}
    for start, path in rmq.list_mapped_files(store.root / "timerlog"):
        data = path.read_bytes()
        for unit in r5.walk_timer_log(data, file_from_offset=start):
            if isinstance(unit, r5.TimerLogEnd):
                break
            raw = data[unit["fileOffset"]:unit["fileOffset"] + r5.TIMER_LOG_UNIT_SIZE]
            assert r5.TIMER_LOG_UNIT.build(r5.TIMER_LOG_UNIT.parse(raw)) == raw
            assert tuple(r5.TIMER_LOG_UNIT.parse(raw).values())[1:] == r5.TIMER_LOG_UNIT_FAST.unpack_from(raw)
    for record in store.dledger.entries:
        raw = struct.pack(">iiqqqiiii", w.DLEDGER_MAGIC, record["size"], record["index"], record["term"],
                          record["pos"], 0, 0, 0, len(record["body"]))
        assert tuple(r5.DLEDGER_ENTRY_HEADER.parse(raw).values())[1:] == r5.DLEDGER_ENTRY_HEADER_FAST.unpack_from(raw)
    for path in (store.root / "dledger-n0" / "index").iterdir():
        data = path.read_bytes()
        rows, _ = r5.dledger_index_entries(data)
        assert [tuple(r[k] for k in r5.DLEDGER_INDEX_ENTRY_FAST.names) for r in rows] == \
            _construct_rows(r5.DLEDGER_INDEX_ENTRY, data, len(rows))
    checkpoint = (store.root / "checkpoint").read_bytes()
    assert tuple(r5.CHECKPOINT_5X.parse(checkpoint).values())[1:] == store.checkpoint
    timercheck = (store.root / "config" / "timercheck").read_bytes()
    assert tuple(r5.TIMER_CHECKPOINT.parse(timercheck).values())[1:] == store.timer_checkpoint


# --------------------------------------------------------------------------------------------
# CommitLog: MagicCode V1 and V2 side by side, the __CRC32# property
# --------------------------------------------------------------------------------------------


def _messages(paths) -> list[dict]:
    out = []
    for path in paths:
        buf = path.read_bytes()
        out += [step for step in rmq.walk_commitlog(buf, file_from_offset=int(path.name), keep_body=True)
                if not isinstance(step, rmq.CommitLogEnd)]
    return out


def _expected_message(record: dict) -> dict:
    msg = record["message"]
    return {"phyOffset": record["offset"], "physicalOffsetField": record["offset"], "totalSize": len(record["bytes"]),
            "magic": msg.magic, "version": 2 if msg.magic == w.MESSAGE_MAGIC_CODE_V2 else 1, "topic": msg.topic,
            "queueId": msg.queue_id, "queueOffset": msg.queue_offset, "sysFlag": msg.sys_flag, "body": msg.body,
            "bodyCRC": w.crc32(msg.body), "storeTimestamp": msg.store_timestamp,
            "bornHost": "10.0.0.7:50000", "storeHost": "10.0.0.1:10911"}


def test_v1_and_v2_messages_side_by_side_decode_as_written(store):
    decoded = _messages(store.commitlog_paths)
    assert len(decoded) == len(store.commitlog.records)
    for got, record in zip(decoded, store.commitlog.records):
        expected = _expected_message(record)
        assert {k: got[k] for k in expected} == expected
        # the properties the producer set, and the CRC property the broker appended
        assert {k: v for k, v in got["properties"].items() if k != rmq.PROPERTY_CRC32} == record["message"].properties
    versions_by_file: dict[int, set] = {}
    for got in decoded:
        versions_by_file.setdefault(got["phyOffset"] // 4096, set()).add(got["version"])
    assert {1, 2} in versions_by_file.values()  # one CommitLog file holds both


def test_property_crc_is_read_where_present(store):
    decoded = _messages(store.commitlog_paths)
    without = [m for m, r in zip(decoded, store.commitlog.records) if rmq.PROPERTY_CRC32.encode() not in r["bytes"]]
    assert len(without) == 1 and "propCRC" not in without[0]
    for got, record in zip(decoded[1:], store.commitlog.records[1:]):
        expected = w.crc32(record["bytes"][:-w.CRC32_RESERVED_LEN])
        assert record["bytes"][-w.CRC32_RESERVED_LEN:] == w.create_crc32(expected)
        assert got["propCRC"] == got["propCRCComputed"] == expected


def _copy(store: Written, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(store.root, copy, ignore=shutil.ignore_patterns("timerwheel"))
    return copy


def _flip(path: Path, at: int, value: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    data[at] = data[at] ^ 0x01 if value is None else value
    path.write_bytes(bytes(data))


def _kinds(report_file: dict) -> set[str]:
    """The codes of the errors of a verify_file result."""
    return {p.kind.code for p in report_file["problems"] if p.severity is Severity.ERROR}


def test_a_bad_property_crc_is_a_typed_finding(store, tmp_path):
    copy = _copy(store, tmp_path)
    record = store.commitlog.records[5]
    path = copy / "commitlog" / f"{record['offset'] // 4096 * 4096:020d}"
    born_timestamp_at = record["offset"] % 4096 + 4 * 5 + 8 + 8 + 4 + 7  # its last byte: not in the body CRC
    _flip(path, born_timestamp_at)
    run = segtool("verify", "--json", "--no-hash", path)
    report = json.loads(run.stdout)["files"][0]
    assert run.returncode == 1 and {p["kind"] for p in report["problems"] if p["severity"] == "error"} == {
        "property_crc_mismatch"}
    (problem,) = [p for p in report["problems"] if p["kind"] == "property_crc_mismatch"]
    assert (problem["byte_offset"], problem["offset"]) == (record["offset"] % 4096, record["offset"])
    message = next(m for m in _messages([path]) if m["phyOffset"] == record["offset"])
    assert message["bodyCRC"] == message["bodyCRCComputed"] and message["propCRC"] != message["propCRCComputed"]


# --------------------------------------------------------------------------------------------
# Each 5.x file: dump equals what was written, verify finds it clean
# --------------------------------------------------------------------------------------------


def test_checkpoint_5x_fields(store, tmp_path):
    (item,) = _dump(store.root / "checkpoint")
    names = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset",
             "confirm_phy_offset")
    assert tuple(item[n] for n in names) == store.checkpoint
    report = verify_file(str(store.root / "checkpoint"), hash_input=False)
    assert report["status"] == "ok" and report["checkpoint"]["confirm_phy_offset"] == store.commitlog_end
    copy = _copy(store, tmp_path)
    w.write_file(copy / "checkpoint", w.checkpoint_bytes(*store.checkpoint[:3], -1, store.commitlog_end + 4096))
    assert _kinds(verify_file(str(copy / "checkpoint"), hash_input=False)) == {"checkpoint_offset"}


def test_batch_consume_queue_round_trips(store, tmp_path):
    items = [i for path in store.bcq_paths for i in _dump(path)]
    units = [i for i in items if i["kind"] == "bcq_unit"]
    names = list(store.bcq_units[0])
    assert [{n: u[n] for n in names} for u in units] == store.bcq_units
    assert all(u["topic"] == BATCH_TOPIC and u["queue_id"] == 0 for u in units)
    assert [i["kind"] for i in items if i["kind"] != "bcq_unit"] == ["zero_tail"]  # the last file's tail
    for path in store.bcq_paths:
        report = verify_file(str(path), hash_input=False)
        assert report["status"] == "ok" and report["units_checked"] == report["units"] > 0
    copy = _copy(store, tmp_path)
    bad = copy / "batchconsumequeue" / BATCH_TOPIC / "0" / store.bcq_paths[0].name
    _flip(bad, 3 * r5.BATCH_CQ_UNIT_SIZE + r5.BATCH_CQ_UNIT_FAST.field_offset("batchSize") + 1, 9)  # the last unit
    assert _kinds(verify_file(str(bad), hash_input=False)) == {"batch_unit_mismatch"}
    _flip(bad, r5.BATCH_CQ_UNIT_FAST.field_offset("size"), 0xFF)  # a negative size: recovery stops
    assert "batch_unit_invalid" in _kinds(verify_file(str(bad), hash_input=False))


def test_an_inner_batch_jump_in_queue_offsets_is_no_gap(store, tmp_path):
    """CommitLog.getMessageNum: an inner batch takes INNER_NUM queue offsets (BatchConsumeQueue.assignQueueOffset
    gives it the base, increaseQueueOffset adds INNER_NUM), so the next message of its queue is INNER_NUM
    further on: verify notes no queue_offset_sequence there, and does note a real jump."""
    offsets = [r["message"].queue_offset for r in store.batch_records]
    assert any(b - a > 1 for a, b in zip(offsets, offsets[1:]))  # the writer's batches do jump

    def sequence_notes(root: Path) -> list[str]:
        return [p.message for path in sorted((root / "commitlog").iterdir())
                for p in verify_file(str(path), hash_input=False)["problems"] if p.kind.code == "queue_offset_sequence"]

    assert sequence_notes(store.root) == []
    copy = _copy(store, tmp_path)
    third = store.batch_records[2]
    path = copy / "commitlog" / f"{third['offset'] // 4096 * 4096:020d}"
    at = third["offset"] % 4096 + 4 + 4 + 4 + 4 + 4  # QUEUEOFFSET
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, at, offsets[2] + 1)
    path.write_bytes(bytes(data))
    notes = sequence_notes(copy)
    assert len(notes) == 2 and f"queueOffset {offsets[2] + 1} where" in notes[0], notes


def test_timer_log_and_wheel_round_trip(store, tmp_path):
    paths = sorted((store.root / "timerlog").iterdir())
    items = [i for path in paths for i in _dump(path)]
    units = [i for i in items if i["kind"] == "timer_log_unit"]
    assert [{k: u[k] for k in store.timer.units[0]} for u in units] == store.timer.units
    assert [u["delayed_time"] for u in units] == [u["curr_write_time"] + u["delay_time"] for u in store.timer.units]
    assert units[-1]["flags"] == "default,delete"
    # TimerMessageStore.doEnqueue: past timerRollWindowSlots the unit is a MAGIC_ROLL one at half the window
    # (the delay overshoots the window by less than a third of it) or at the whole window
    rolled = [u for u in units if u["magic"] & r5.TIMER_MAGIC_ROLL]
    assert [(u["flags"], u["delay_time"]) for u in rolled] == [
        ("default,roll", w.TIMER_ROLL_WINDOW_SLOTS // 2 * 1000), ("default,roll", w.TIMER_ROLL_WINDOW_SLOTS * 1000)]
    assert [u["offset_py"] for u in rolled] == [r["offset"] for r in store.timer_records[-2:]]
    assert all(u["flags"] == ("default,delete" if u is units[-1] else "default") for u in units if u not in rolled)
    blanks = [i for i in items if i["kind"] == "blank_end"]
    assert [(b["byte_offset"], b["length"]) for b in blanks] == [(5 * 52, 40)] * (len(paths) - 1)
    slots = [i for i in _dump(store.root / "timerwheel")]
    wheel = store.timer.wheel
    expected = [struct.unpack_from(">qqqii", wheel, i * 32) for i in range(len(wheel) // 32) if any(wheel[i * 32:i * 32 + 32])]
    assert [(s["time"], s["first_pos"], s["last_pos"], s["num"], s["magic"]) for s in slots] == expected
    for path in [*paths, store.root / "timerwheel"]:
        report = verify_file(str(path), hash_input=False)
        assert report["status"] == "ok" and not _kinds(report), report["problems"]
    copy = _copy(store, tmp_path)
    (copy / "timerwheel").write_bytes(wheel[:-32])
    assert "timer_wheel_size" in _kinds(verify_file(str(copy / "timerwheel"), hash_input=False))
    _flip(copy / "timerlog" / paths[0].name, 52 + 15, 0x40)  # a unit's magic the recovery refuses
    assert _kinds(verify_file(str(copy / "timerlog" / paths[0].name), hash_input=False)) == {"timer_log_unit"}


def test_timer_checkpoint_and_metrics(store):
    (item,) = _dump(store.root / "config" / "timercheck")
    names = ("last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset", "master_timer_queue_offset",
             "state_version", "data_version_timestamp", "data_version_counter")
    assert tuple(item[n] for n in names) == store.timer_checkpoint
    head, *rows = _dump(store.root / "config" / "timermetrics")
    assert (head["data_version_counter"], head["data_version_timestamp"], head["topics"]) == (3, WRITE_TIME, 3)
    assert {r["topic"]: (r["count"], r["time_stamp"]) for r in rows} == store.timer_metrics
    for path in (store.root / "config" / "timercheck", store.root / "config" / "timermetrics"):
        assert verify_file(str(path), hash_input=False)["status"] == "ok"


def test_dledger_entries_and_index_round_trip(store, tmp_path):
    data_paths = sorted((store.root / "dledger-n0" / "data").iterdir())
    items = [i for path in data_paths for i in _dump(path)]
    entries = [i for i in items if i["kind"] == "dledger_entry"]
    messages = [i for i in items if i["kind"] == "message"]
    assert [(e["pos"], e["size"], e["index"], e["term"], e["body_size"]) for e in entries] == \
        [(r["pos"], r["size"], r["index"], r["term"], len(r["body"])) for r in store.dledger.entries]
    for message, record in zip(messages, store.dledger.entries, strict=True):
        assert message["phy_offset"] == message["physical_offset_field"] == record["pos"] + w.DLEDGER_BODY_OFFSET
        assert (message["topic"], message["body"].encode(), message["version"]) == (
            record["message"].topic, record["message"].body, 2 if len(record["message"].topic) > 127 else 1)
    index = [i for path in sorted((store.root / "dledger-n0" / "index").iterdir()) for i in _dump(path)
             if i["kind"] == "dledger_index_entry"]
    assert [(e["slot"], e["pos"], e["size"], e["index"], e["term"]) for e in index] == \
        [(r["index"], r["pos"], r["size"], r["index"], r["term"]) for r in store.dledger.entries]
    (checkpoint,) = _dump(store.root / "dledger-n0" / "checkpoint")
    assert (checkpoint["end_index"], checkpoint["committed_index"]) == (6, 5)
    for path in [*data_paths, *sorted((store.root / "dledger-n0" / "index").iterdir())]:
        report = verify_file(str(path), hash_input=False)
        assert report["status"] == "ok", report["problems"]
    copy = _copy(store, tmp_path)
    second = store.dledger.entries[1]
    data_file = copy / "dledger-n0" / "data" / data_paths[0].name
    _flip(data_file, second["pos"] + 16 + 7)  # its term: the index entry disagrees, and the term order breaks
    assert _kinds(verify_file(str(data_file), hash_input=False)) == {"dledger_entry"}
    index_file = copy / "dledger-n0" / "index" / f"{0:020d}"
    assert "dledger_index_mismatch" in _kinds(verify_file(str(index_file), hash_input=False))


def test_a_dledger_store_has_the_store_checkpoint_at_its_root(store, tmp_path):
    """A DLedger broker keeps no commitlog/: StorePathConfigHelper.getStoreCheckpoint(storePathRootDir)
    is still <root>/checkpoint, read by StoreCheckpoint, and DLedgerMmapFileStore keeps its own text
    checkpoint in DLedgerConfig.getDefaultPath() = <root>/dledger-<selfId>, beside its index/."""
    root = tmp_path / "dledger-store"
    shutil.copytree(store.root / "dledger-n0", root / "dledger-n0")
    shutil.copy(store.root / "checkpoint", root / "checkpoint")
    w.write_markers(root, PID)
    assert detect(str(root / "checkpoint")).kind.value == "rocketmq-checkpoint"
    assert detect(str(root / "dledger-n0" / "checkpoint")).kind.value == "rocketmq-dledger-checkpoint"
    (item,) = _dump(root / "checkpoint")
    names = ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset",
             "confirm_phy_offset")
    assert tuple(item[n] for n in names) == store.checkpoint
    (dledger,) = _dump(root / "dledger-n0" / "checkpoint")
    assert (dledger["end_index"], dledger["committed_index"]) == (len(store.dledger.entries) - 1, 5)
    report = json.loads(segtool("verify", "--json", "--no-hash", root).stdout)
    kinds = {Path(f["path"]).relative_to(root).as_posix(): f["kind"] for f in report["files"]}
    assert kinds["checkpoint"] == "rocketmq-checkpoint"
    assert kinds["dledger-n0/checkpoint"] == "rocketmq-dledger-checkpoint"
    assert report["summary"]["skipped"] == 0
    # a store root that happens to be named dledger-<x> keeps its own checkpoint
    named = tmp_path / "dledger-named"
    shutil.copytree(store.root / "commitlog", named / "commitlog")
    shutil.copy(store.root / "checkpoint", named / "checkpoint")
    assert detect(str(named / "checkpoint")).kind.value == "rocketmq-checkpoint"


def test_compaction_log_and_queue_round_trip(store):
    log_paths = sorted((store.root / "compaction" / "compactionLog" / COMPACT_TOPIC / "0").iterdir())
    messages = [i for path in log_paths for i in _dump(path) if i["kind"] == "message"]
    assert [(m["phy_offset"], m["physical_offset_field"], m["queue_offset"]) for m in messages] == \
        [(u["commit_log_offset"], u["commit_log_offset"], u["msg_base_offset"]) for u in store.compaction.units]
    cq_paths = sorted((store.root / "compaction" / "compactionCq" / COMPACT_TOPIC / "0").iterdir())
    items = [i for path in cq_paths for i in _dump(path)]
    names = list(store.compaction.units[0])
    assert [{n: i[n] for n in names} for i in items if i["kind"] == "bcq_unit"] == store.compaction.units
    assert "end_position" in [i["kind"] for i in items]  # SparseConsumeQueue.putEndPositionInfo
    for path in [*log_paths, *cq_paths]:
        report = verify_file(str(path), hash_input=False)
        assert report["status"] == "ok", report["problems"]
    # the copies' __CRC32# was computed at their CommitLog offset, which the copy replaces
    notes = [p for path in log_paths for p in verify_file(str(path), hash_input=False)["problems"]
             if p.kind.code == "property_crc_mismatch"]
    assert len(notes) == len(messages) and {p.severity for p in notes} == {Severity.INFO}
    (position,) = _dump(store.root / "compaction" / "position-checkpoint")
    assert (position["topic"], position["queue_id"], position["offset"]) == (COMPACT_TOPIC, 0, 9)


def test_compaction_queue_files_are_named_after_their_log_files(store, tmp_path):
    """CompactionLog.TopicPartitionLog.roll creates the queue file with SparseConsumeQueue.createFile(the new
    log file's fileFromOffset), and TopicPartitionLog.sanityCheck throws when a log file and a queue file
    differ in name.  A queue unit's logic offset is its file's fileFromOffset plus its place, as
    SparseConsumeQueue.recover counts processOffset."""
    log_dir = store.root / "compaction" / "compactionLog" / COMPACT_TOPIC / "0"
    cq_dir = store.root / "compaction" / "compactionCq" / COMPACT_TOPIC / "0"
    log_names = sorted(p.name for p in log_dir.iterdir())
    assert sorted(p.name for p in cq_dir.iterdir()) == log_names and len(log_names) > 1
    for name in log_names:
        units = [i for i in _dump(cq_dir / name) if i["kind"] == "bcq_unit"]
        assert units and all(u["logic_offset"] == int(name) + u["byte_offset"] for u in units)
        # each unit points into the log file of its queue file's name
        assert all(int(name) <= u["commit_log_offset"] < int(name) + 1024 for u in units)
    # the layout a broker refuses: queue files named by their own byte offsets
    copy = _copy(store, tmp_path)
    copy_cq = copy / "compaction" / "compactionCq" / COMPACT_TOPIC / "0"
    cq_size = (cq_dir / log_names[0]).stat().st_size
    for i, name in enumerate(log_names):
        (copy_cq / name).rename(copy_cq / f"{i * cq_size:020d}")
    copy_log = copy / "compaction" / "compactionLog" / COMPACT_TOPIC / "0"
    refused = {p.name: _kinds(verify_file(str(p), hash_input=False)) for d in (copy_cq, copy_log)
               for p in sorted(d.iterdir()) if p.name != f"{0:020d}"}
    assert refused and all("compaction_file_mismatch" in kinds for kinds in refused.values()), refused
    assert not _kinds(verify_file(str(copy_cq / f"{0:020d}"), hash_input=False))


def test_lock_and_abort_markers_written_and_real(store):
    (lock,) = _dump(store.root / "lock")
    (abort,) = _dump(store.root / "abort")
    assert lock["content"] == "lock" and abort["pid"] == PID
    report = verify_file(str(store.root / "abort"), hash_input=False)
    assert report["status"] == "ok" and [p.kind.code for p in report["problems"]] == ["unclean_shutdown"]
    real = corpus_path("rocketmq", "kill9-abort", "store")  # written by RocketMQ 4.9.8
    (real_abort,) = _dump(real / "abort")
    (real_lock,) = _dump(real / "lock")
    assert real_abort["content"] == "" and "pid" not in real_abort and real_lock["content"] == "lock"


# --------------------------------------------------------------------------------------------
# The command line on the whole written store
# --------------------------------------------------------------------------------------------


def test_dump_verify_and_json_on_a_written_store(store):
    dump = segtool("dump", "--json", store.root)
    verify = segtool("verify", "--json", "--no-hash", store.root)
    text = segtool("dump", store.root)
    assert dump.returncode == verify.returncode == text.returncode == 0, (dump.stderr, verify.stderr)
    items = _json_lines(dump)
    report = json.loads(verify.stdout)
    kinds = {f["kind"] for f in report["files"]}
    assert {"rocketmq-batchconsumequeue", "rocketmq-timerlog", "rocketmq-timerwheel", "rocketmq-timercheck",
            "rocketmq-timermetrics", "rocketmq-dledger-data", "rocketmq-dledger-index", "rocketmq-dledger-checkpoint",
            "rocketmq-compaction-log", "rocketmq-compaction-cq", "rocketmq-compaction-position", "rocketmq-lock",
            "rocketmq-abort", "rocketmq-commitlog", "rocketmq-checkpoint"} == kinds
    assert report["summary"]["problems"] == report["summary"]["skipped"] == 0
    for command, lines in (("dump", items), ("verify", [report])):
        validator = Draft202012Validator(json.loads((SCHEMAS / f"{command}.schema.json").read_text()))
        for line in lines:
            errors = list(validator.iter_errors(line))
            assert not errors, (line.get("kind"), errors[0].message)
    messages = [i for i in items if i["kind"] == "message"]
    written = len(store.commitlog.records) + len(store.dledger.entries) + len(store.compaction.units)
    assert len(messages) == written
    assert "Traceback" not in text.stdout + text.stderr and "{'" not in text.stdout and "None" not in text.stdout


@pytest.mark.parametrize("cut", [1, 7, 45, 100])
def test_damaged_5x_files_end_in_findings_not_tracebacks(store, tmp_path, cut):
    copy = _copy(store, tmp_path)
    for path in sorted(p for p in copy.rglob("*") if p.is_file()):
        data = path.read_bytes()
        path.write_bytes(data[:max(len(data) - cut, 0)] + zlib.compress(data[-cut:])[:cut])
    for path in sorted(p for p in copy.rglob("*") if p.is_file()):
        report = verify_file(str(path), hash_input=False)
        assert report["status"] in ("ok", "problems", "unreadable")
        try:
            list(dump_file(detect(str(path))))
        except SegtoolError:
            pass


def test_salvage_leaves_a_topic_zeroed_to_nul_bytes_unqueued(store, tmp_path):
    """Zeros over part of a message's topic: the body CRC (CommitLog.checkMessageAndReturnSize's check) still
    holds, so salvage keeps the message in the CommitLog, but such a topic cannot name a ConsumeQueue directory
    (ConsumeQueue's storePath/topic/queueId): it is named as not queued (salvage once stopped there with
    "embedded null byte")."""
    root = tmp_path / "store"
    shutil.copytree(store.root, root)
    record = next(r for r in store.commitlog.records if r["message"].topic == LONG_TOPIC and r["offset"] > 4096)
    name = f"{record['offset'] // 4096 * 4096:020d}"
    at = record["offset"] % 4096 + bytes(record["bytes"]).index(LONG_TOPIC.encode()) + 50
    with open(root / "commitlog" / name, "r+b") as handle:
        handle.seek(at)
        handle.write(bytes(30))
    run = segtool("salvage", root, "--out", tmp_path / "out", "--json")
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)["stores"][0]
    assert report["messages_kept"] == len(store.commitlog.records) and report["messages_failed_crc"] == 0
    assert [(c["position"], c["queue_id"], c["first_offset"]) for c in report["conflicts"]] == [
        (record["offset"] % 4096, 1, record["message"].queue_offset)]
    assert "\x00" in report["conflicts"][0]["topic"]
    assert not any("\x00" in str(path) for path in (tmp_path / "out").rglob("*"))
