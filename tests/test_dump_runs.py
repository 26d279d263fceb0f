"""The fast dump (Kafka batches and plain RocketMQ messages a column at a time) prints exactly
what the straightforward per-item rendering prints: ``to_json`` (``json.dumps`` with U+0085, U+2028
and U+2029 escaped) of each ``dump_paths`` item, or ``render_text_item`` of it.

Checked on every Kafka segment and RocketMQ CommitLog of the corpus (compressed, control,
transactional, legacy, damaged) and on generated files of the shapes the corpus has few of.
Kafka: single-record batches, headers, null, empty, binary, non-UTF-8 and long keys and
values, log-append time, and the same segment damaged three ways.  RocketMQ: properties
with duplicated, empty, look-alike and non-UTF-8 items, unprintable keys, IPv6 hosts, v2
magic codes, compressed bodies, the 5.x property CRC, and damage of every kind a walk can end at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segtool.errors import NothingFound
from segtool.formats.json_text import to_json
from segtool.kafka.log import Record, RecordBatch
from segtool.ops.dump import DumpRequest, dump_paths, run_dump
from segtool.ops.runs import MessageRun
from segtool.ops.render import _iso_times, iso_time, render_text_item, run_json_lines
from tests.kafka_build import build_batch_v2, build_legacy_message, build_records, make_batch
from tests import rocketmq5_writer as rmq_writer
from tests.conftest import CORPUS, SAMPLE_DATA

BASE_TS = 1_795_000_000_000


class _Lines:
    """``ops.dump.DumpOutput`` kept in a list: stdout's lines only."""

    def __init__(self):
        self.lines: list[str] = []
        self.line = self.lines.append
        self.run = self.lines.extend

    def note(self, text: str) -> None:
        pass

    def found(self, code: int) -> None:
        pass


def fast_lines(path: str, fmt: str, deep: bool, full: bool) -> list[str]:
    """What ``segtool dump`` prints for one file: its driver, runs a column at a time."""
    out = _Lines()
    try:
        run_dump(DumpRequest([path], format=fmt, deep=deep, full=full), out)
    except NothingFound:  # an empty segment: no line, and the command line's "nothing to dump"
        assert out.lines == []
    return out.lines


def item_lines(path: str, fmt: str, deep: bool, full: bool) -> list[str]:
    """The same, item by item from the plain dicts."""
    return [to_json(item) if fmt == "json" else render_text_item(item, full)
            for item in dump_paths([path], deep=deep) if item["kind"] not in ("skipped", "unreadable")]


def assert_same_output(path: str) -> list[dict]:
    for fmt, deep, full in (("json", True, False), ("json", False, False), ("text", True, False),
                            ("text", True, True), ("text", False, False)):
        assert fast_lines(path, fmt, deep, full) == item_lines(path, fmt, deep, full), (path, fmt, deep, full)
    return list(dump_paths([path]))


def _corpus_files() -> list[Path]:
    root = CORPUS if CORPUS.is_dir() else SAMPLE_DATA
    logs = sorted(root.rglob("*.log"))
    commitlogs = sorted(p for p in root.rglob("*") if p.parent.name == "commitlog" and p.is_file())
    return logs + commitlogs


def _corpus_params() -> list:
    """Every file; the wild corpus's segments over 100 KB (most of the time) in the full tier."""
    return [pytest.param(path, marks=pytest.mark.slow) if "wild" in path.parts and path.stat().st_size > 100_000
            else path for path in _corpus_files()]


@pytest.mark.parametrize("path", _corpus_params(), ids=lambda p: str(p.relative_to(p.parents[3])))
def test_corpus_file(path):
    assert_same_output(str(path))


def _record(i: int, key, value, headers=()) -> Record:
    return Record(i, BASE_TS + i, key, value, list(headers), timestamp_delta=0, offset_delta=0)


SHAPES = [  # (key, value, headers) of one record each
    (b"key-1", b"plain value", ()),
    (None, b"null key", ()),
    (b"k", None, ()),
    (b"", b"", ()),
    (b"k", "caf\u00e9 \u2603 \U0001F600".encode(), ()),  # UTF-8 beyond ASCII
    (b"\xff\xfe", b"\x00\x01\x02binary\xff", ()),  # neither UTF-8 nor printable
    (b"k", b"tab\tand newline\n and \"quotes\" \\", ()),  # escaped in JSON and in text
    (b"k", b"x" * 500, ()),  # longer than a text line shows
    (b"k", b"\xc2\x85 next-line character", ()),  # U+0085 is a line break to str.splitlines
    (b"k", b"with headers", (("h1", b"v1"), ("h\u00e9", None), ("bin", b"\xff"))),
]


def _single_record_batches() -> list[bytes]:
    batches = []
    for i, (key, value, headers) in enumerate(SHAPES * 3):
        attributes = 0x08 if i % 7 == 3 else 0  # some batches with log-append time
        batch = RecordBatch(position=0, magic=2, base_offset=i, last_offset=i, size=0, crc=0, attributes=attributes,
                            max_timestamp=BASE_TS + 5 * i, record_count=1, partition_leader_epoch=3,
                            last_offset_delta=0, base_timestamp=BASE_TS + i, producer_id=7, producer_epoch=1,
                            base_sequence=i)
        batches.append(build_batch_v2(batch, build_records([_record(0, key, value, headers)])))
    return batches


def _mixed_segment() -> bytes:
    """Many-record batches, compressed ones, a transactional batch and its COMMIT marker, an empty batch."""
    from segtool.kafka.schemas import CONTROL_KEY, END_TXN_MARKER

    out = make_batch(0, [(b"k%d" % i, b"v%d" % i) for i in range(50)], BASE_TS)
    for codec in (1, 2, 3, 4):
        out += make_batch(50 * codec, [(b"k%d" % i, b"value %d" % i * 3) for i in range(50)], BASE_TS, codec=codec)
    txn = RecordBatch(position=0, magic=2, base_offset=250, last_offset=251, size=0, crc=0, attributes=0x10,
                      max_timestamp=BASE_TS + 1, record_count=2, last_offset_delta=1, base_timestamp=BASE_TS,
                      producer_id=42, producer_epoch=3, base_sequence=0)
    out += build_batch_v2(txn, build_records([Record(250 + i, BASE_TS + i, None, b"t", (), timestamp_delta=i,
                                                      offset_delta=i) for i in range(2)]))
    marker = RecordBatch(position=0, magic=2, base_offset=252, last_offset=252, size=0, crc=0, attributes=0x30,
                         max_timestamp=BASE_TS + 2, record_count=1, last_offset_delta=0, base_timestamp=BASE_TS + 2,
                         producer_id=42, producer_epoch=3)
    out += build_batch_v2(marker, build_records([Record(
        252, BASE_TS + 2, CONTROL_KEY.build({"version": 0, "type": 1}),
        END_TXN_MARKER.build({"version": 0, "coordinator_epoch": 5}), (), timestamp_delta=0, offset_delta=0)]))
    empty = RecordBatch(position=0, magic=2, base_offset=253, last_offset=253, size=0, crc=0, attributes=0x40,
                        max_timestamp=BASE_TS, record_count=0, last_offset_delta=0, base_timestamp=BASE_TS)
    return out + build_batch_v2(empty, b"")


def test_generated_segments(tmp_path):
    batches = _single_record_batches()
    single = b"".join(batches)
    legacy = b"".join(build_legacy_message(300 + i, i % 2, 0, b"k", b"legacy %d" % i, BASE_TS + i) for i in range(4))
    mixed = _mixed_segment()
    cases = {"single": single, "mixed": mixed, "mixed-then-legacy": mixed + legacy}
    middle = len(b"".join(batches[:11])) - 1  # the last byte of batch 10 (its record's header count)
    flipped = bytearray(single)
    flipped[middle] ^= 0xFF  # the batch still frames, its CRC fails
    cases["crc-flip"] = bytes(flipped)
    cases["garbage-between"] = b"".join(batches[:11]) + b"\x07" * 50 + b"".join(batches[11:])
    cases["truncated"] = single[:-30]
    cases["zero-filled-tail"] = single + bytes(4096)
    found = {}
    for name, data in cases.items():
        path = tmp_path / name / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(data)
        found[name] = assert_same_output(str(path))
    # what the files hold, read from the items: every record of every shape, and the damage where it was made
    assert [item["offset"] for item in found["single"] if item["kind"] == "record"] == list(range(len(SHAPES) * 3))
    assert sum(item["kind"] == "record" for item in found["mixed"]) == 254 - 1  # the empty batch has none
    assert [i.get("control_type") for i in found["mixed"] if i["kind"] == "record"][-1] == "COMMIT"
    assert [i["magic"] for i in found["mixed-then-legacy"] if i["kind"] == "batch"][-4:] == [0, 1, 0, 1]
    damaged = [item for item in found["crc-flip"] if item["kind"] == "damaged_range"]
    assert [(d["reason"], d["first_byte"], d["last_byte"]) for d in damaged] == [
        ("crc_mismatch", len(b"".join(batches[:10])), middle)]
    boundary = len(b"".join(batches[:11]))  # the garbage reads as a batch running past the end
    assert [(i["reason"], i["first_byte"], i["length"]) for i in found["garbage-between"]
            if i["kind"] == "damaged_range"] == [("truncated", boundary, 50)]
    assert [i["reason"] for i in found["truncated"] if i["kind"] == "damaged_range"] == ["truncated"]
    assert [i["reason"] for i in found["zero-filled-tail"] if i["kind"] == "damaged_range"] == ["zero_filled"]


def _commitlog_messages() -> list[rmq_writer.Message]:
    """Messages of every shape a column run must print as ``decode_message`` reads them."""
    plain = [rmq_writer.Message("Orders", b"order %d" % i, {"KEYS": f"k{i}", "TAGS": "tagA" if i % 3 else "tagB",
                                                           "UNIQ_KEY": f"U{i:08d}"},
                                queue_id=i % 4, queue_offset=i // 4, store_timestamp=1_700_000_000_000 + 37 * i,
                                born_host=bytes([192, 168, 1, i % 3]), born_port=40_000 + i % 2)
             for i in range(40)]
    odd_properties = [
        b"",  # no properties: keys and tags absent
        b"TAGS\x01only-tags\x02",
        b"KEYS\x01first\x02KEYS\x01second\x02",  # HashMap.put: the last one
        b"KEYS\x01kept\x02KEYS\x01\x02",  # an empty value is no item: the earlier one stays
        b"XKEYS\x01not-keys\x02A\x01KEYS\x01inside-a-value\x02",  # look-alikes that are not the item
        b"KEYS\x01a\x01b\x02TAGS\x01t",  # a value holding the name-value separator, no trailing separator
        b"\x02\x02KEYS\x01after-empty-items\x02",
        "KEYS\x01caf\u00e9 \u2603\x02TAGS\x01\u00fcber\x02".encode(),  # UTF-8 beyond ASCII
        b"KEYS\x01bad \xff\xfe utf8\x02TAGS\x01\xe2\x02",  # malformed UTF-8, a truncated sequence at the end
        b"KEYS\x01two\nlines\ttab\x02TAGS\x01back\\slash\x02",  # escaped in a text line
        b"KEYS" + b"\x01" + b"x" * 300 + b"\x02",
    ]
    odd = [rmq_writer.Message("Odd", b"body %d" % i, raw_properties=raw, queue_offset=i)
           for i, raw in enumerate(odd_properties)]
    odd.append(rmq_writer.Message("t\u00f6pic", b"unicode topic", {"KEYS": "u"}))
    odd.append(rmq_writer.Message("?", b"bad topic bytes", {"KEYS": "v"}, raw_topic=b"bad\xfftopic"))
    odd.append(rmq_writer.Message("", b"empty topic", {"KEYS": "w"}))
    odd.append(rmq_writer.Message("Orders", b"", {"KEYS": "empty-body"}))
    others = [  # each read by decode_message alone, between runs
        rmq_writer.Message("V6", b"ipv6 born host", {"KEYS": "v6"}, sys_flag=rmq_writer.BORNHOST_V6_FLAG,
                           born_host=bytes(range(16))),
        rmq_writer.Message("V6", b"ipv6 store host", {"KEYS": "v6s"}, sys_flag=rmq_writer.STOREHOSTADDRESS_V6_FLAG,
                           store_host=bytes(range(16, 32))),
        rmq_writer.Message("T" * 130, b"v2 magic: a long topic", {"KEYS": "long"}),
        rmq_writer.Message("Zipped", __import__("zlib").compress(b"compressed body"), {"KEYS": "z"}, sys_flag=0x1),
    ]
    return plain[:20] + odd + plain[20:30] + others + plain[30:]


def _commitlog_file(messages, append_crc: bool = False) -> bytes:
    out = bytearray()
    for msg in messages:
        out += rmq_writer.encode_message(msg, len(out), append_crc)
    return bytes(out)


def test_generated_commitlogs(tmp_path):
    messages = _commitlog_messages()
    clean = _commitlog_file(messages)
    starts = [0]
    for msg in messages:
        starts.append(starts[-1] + len(rmq_writer.encode_message(msg, 0, False)))
    size = 1 << 16
    cases = {
        "clean": clean,
        "blank-end": clean + rmq_writer.struct.pack(">ii", size - len(clean), rmq_writer.BLANK_MAGIC_CODE),
        "zero-tail": clean + bytes(4096),
        "property-crc": _commitlog_file(messages[:30], append_crc=True),
        "truncated": clean[:-7],
        "stray-bytes": clean + b"\x05\x06",
    }
    body_crc_broken = bytearray(clean)
    body_crc_broken[starts[25] + 88] ^= 0x01  # in message 25's body: its CRC fails, the framing holds
    cases["crc-mismatch"] = bytes(body_crc_broken)
    cases["garbage-between"] = clean[:starts[30]] + b"\x07" * 50 + clean[starts[30]:]
    cases["torn"] = clean[:starts[44] + 40] + bytes(starts[45] - starts[44] - 40) + clean[starts[45]:]
    wrong_length = bytearray(clean)
    wrong_length[starts[12] + 84:starts[12] + 88] = (1 << 20).to_bytes(4, "big")  # a body length past the record
    cases["fields-do-not-add-up"] = bytes(wrong_length)
    for name, data in cases.items():
        if name == "blank-end":
            data = data.ljust(size, b"\0")
        path = tmp_path / name / "commitlog" / "00000000000000000000"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        items = assert_same_output(str(path))
        runs = [item for item in dump_paths([str(path)], in_runs=True, for_text=True) if isinstance(item, MessageRun)]
        assert sum(run.columns.count for run in runs) >= 30, name  # most messages went through the columns
        shown = [item for item in items if item["kind"] == "message"]
        if name == "clean":  # what the file holds, read back from the items
            assert [item["topic"] for item in shown] == [m.topic if m.raw_topic is None else "bad\ufffdtopic"
                                                        for m in messages]
            assert [item["keys"] for item in shown[20:31]] == [
                None, None, "second", "kept", None, "a\x01b", "after-empty-items", "caf\u00e9 \u2603",
                "bad \ufffd\ufffd utf8", "two\nlines\ttab", "x" * 300]
    kinds = {name: [item["kind"] for item in assert_same_output(str(tmp_path / name / "commitlog" / "00000000000000000000"))
                    if item["kind"] not in ("message",)] for name in cases}
    assert kinds["clean"] == [] and kinds["zero-tail"] == ["zero_tail"] and kinds["blank-end"] == ["blank_end"]
    for damaged in ("truncated", "stray-bytes", "crc-mismatch", "garbage-between", "torn", "fields-do-not-add-up"):
        assert "damaged_range" in kinds[damaged], damaged


def test_iso_times_of_a_column():
    """The column form of ``iso_time`` (once per second, milliseconds appended) equals it value by value."""
    import numpy as np

    values = np.array([0, 999, 1000, 1_700_000_000_123, 1_700_000_000_123, 2**32 * 1000 - 1, 2**32 * 1000, -1])
    for column in (values[:-3], values):
        texts = _iso_times(column)
        assert (texts if isinstance(texts, list) else [texts]) == [iso_time(ms) for ms in column.tolist()]


def test_iso_time_matches_datetime():
    """``iso_time``'s per-second texts equal datetime's own rendering of every millisecond."""
    import datetime as dt
    import random

    rng = random.Random(16)
    for ms in [0, 999, 1000, 2**32 * 1000 - 1, 2**32 * 1000, 253402300799999, 10**17] + \
              [rng.randrange(2**32 * 1000) for _ in range(2000)]:
        try:
            expected = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(
                timespec="milliseconds").replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            expected = f"{ms} ms (beyond the calendar)"
        assert iso_time(ms) == expected, ms


def test_command_line_writes_runs_beyond_ascii(tmp_path):
    """``segtool dump`` writes a run whose lines go beyond ASCII (encoded line by line, not widened
    as one text) as the items' own lines, through a pipe, in both formats."""
    from tests.conftest import segtool

    messages = [rmq_writer.Message("Emoji", f"body {i} \U0001F600 caf\u00e9".encode() if i % 7 == 3 else b"plain %d" % i,
                                   {"KEYS": f"k{i}\u2603" if i % 5 == 0 else f"k{i}"}) for i in range(60)]
    path = tmp_path / "commitlog" / "00000000000000000000"
    path.parent.mkdir()
    path.write_bytes(_commitlog_file(messages))
    for fmt in ("json", "text"):
        shown = segtool("dump", "--format", fmt, str(path))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines() == item_lines(str(path), fmt, True, False), fmt


@pytest.mark.skipif(not (CORPUS / "rocketmq").is_dir(), reason="needs ../shared/corpus (RocketMQ's own CommitLog goldens)")
def test_column_runs_match_rocketmq_goldens():
    """Every message of RocketMQ's own CommitLog goldens (``expected/commitlog.jsonl``) is printed by
    the column runs with each of its fields as the golden has it."""
    from segtool.formats.json_names import snake_case, snake_case_keys

    cases = [case for case in sorted((CORPUS / "rocketmq").iterdir()) if (case / "expected" / "commitlog.jsonl").exists()]
    assert cases
    for case in cases:
        printed = {}
        for path in sorted((case / "store" / "commitlog").iterdir()):
            for run in dump_paths([str(path)], in_runs=True):
                if isinstance(run, MessageRun):
                    printed.update((item["phy_offset"], item) for item in map(json.loads, run_json_lines(run)))
        golden = [json.loads(line) for line in (case / "expected" / "commitlog.jsonl").read_text().splitlines()]
        assert len(golden) == len(printed), case.name
        for message in golden:
            item = printed[message["phyOffset"]]
            for name, value in message.items():
                if name != "file":  # the golden names the file, the item gives its path
                    assert item[snake_case(name)] == (value if name == "properties" else snake_case_keys(value)), \
                        (case.name, message["phyOffset"], name)
