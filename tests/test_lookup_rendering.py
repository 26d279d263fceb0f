"""`segtool lookup`'s text output shows every answer as a person reads it.

The rule: offset, ISO time, key, value (text when printable, escaped or hex
otherwise, cut with a note beyond a length, whole with --full), headers; yes/no,
comma-separated lists, nested objects as indented lines or tables; never Python
reprs, raw dicts or lists, True/False/None, or a raw control byte.  Plain when
piped.  ``--json`` is the library's answer, unchanged.
"""

import base64
import json
import re

import pytest

from tests.conftest import SAMPLE_DATA, corpus_path, segtool

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # everything but the newline
PY_WORDS = re.compile(r"\b(True|False|None)\b")
PY_REPR = re.compile(r"\{'|\['|\bb'|\bb\"|': |<[a-z_.]+ object")
DATA_LINES = ("value ", "body ", "property ", "header ")  # what the broker stored, shown as it is

COMPACTED = SAMPLE_DATA / "kafka" / "c07-compacted" / "data" / "c07-compact-0"
TXN = SAMPLE_DATA / "kafka" / "c04-transactions" / "data" / "c04-txn-0"
CONSUMER_OFFSETS = SAMPLE_DATA / "kafka" / "c10-consumer-offsets" / "data" / "__consumer_offsets-2"
KILL9 = SAMPLE_DATA / "rocketmq" / "kill9-abort" / "store"


def _text(*args, code=None) -> str:
    run = segtool("lookup", *args)
    assert run.returncode in ((0, 1) if code is None else (code,)), (args, run.returncode, run.stderr)
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    return run.stdout


def _summary(text: str) -> list[str]:
    """The answer's own fields: the lines before the first record or message."""
    return text.split("\n\n")[0].splitlines()


def _field(text: str, name: str) -> str:
    """The value of a top-level ``name  value`` line of the summary."""
    for line in _summary(text):
        if line.split(" ", 1)[0] == name:
            return line[len(name):].strip()
    raise AssertionError(f"no {name!r} line in:\n{text}")


def _record_field(text: str, name: str) -> str:
    """The value of a ``name  value`` line of the first record shown below the summary."""
    for line in text.split("\n\n")[1].splitlines():
        if line.split(" ", 1)[0] == name:
            return line[len(name):].strip()
    raise AssertionError(f"no {name!r} line in the record of:\n{text}")


def assert_readable(text: str) -> None:
    """The checks every lookup's text output passes."""
    assert text.endswith("\n") and text.strip(), text
    assert not CONTROL.search(text), repr(CONTROL.search(text).group(0))
    ours = "\n".join(line for line in text.splitlines() if not line.startswith(DATA_LINES))
    assert not PY_WORDS.search(ours), PY_WORDS.search(ours).group(0) + "\n" + ours
    assert not PY_REPR.search(ours), PY_REPR.search(ours).group(0) + "\n" + ours
    for line in _summary(text):
        assert "{" not in line and "[" not in line, line  # no raw JSON object or list in the answer's fields
        assert not re.fullmatch(r"\S+\s+(none|null)", line), line  # a missing value is "-", not a word
        assert line == line.rstrip(), repr(line)  # plain when piped: no padding


# -- every lookup mode, on real cases ----------------------------------------------------------

KAFKA_MODES = [
    (COMPACTED, ["--offset", "7050"]),
    (COMPACTED, ["--offset", "0"]),  # inside a compaction gap: the next surviving record
    (COMPACTED, ["--offset", "99999999"]),  # past the end: nothing found
    (COMPACTED, ["--offset", "7050", "--floor"]),
    (COMPACTED, ["--offset", "3000", "--floor"]),  # no index entry at or below: slot -1
    (COMPACTED, ["--offset", "7050", "--ceiling"]),
    (COMPACTED, ["--offset", "99999999", "--ceiling"]),
    (COMPACTED, ["--timestamp", "latest"]),
    (COMPACTED, ["--timestamp", "earliest"]),
    (COMPACTED, ["--timestamp", "max-timestamp"]),
    (COMPACTED, ["--timestamp", "0"]),
    (COMPACTED, ["--key", "ck-008"]),
    (COMPACTED, ["--key", "no-such-key"]),
    (TXN, ["--timestamp", "1795304370800"]),  # a COMMIT marker with a binary key and value
    (TXN, ["--timestamp", "2026-11-21T23:39:30.800Z"]),
    (CONSUMER_OFFSETS, ["--offset", "0"]),
    (CONSUMER_OFFSETS, ["--timestamp", "max-timestamp"]),
]

ROCKETMQ_MODES = [
    ["--topic", "OrderTopic", "--key", "order-0-0"],
    ["--topic", "OrderTopic", "--key", "no-such-key-12345"],
    ["--topic", "AuditTopic", "--key", "hot-key", "--max", "3"],
    ["--topic", "CollideTopic", "--key", "C#", "--include-collisions"],
    ["--topic", "CollideTopic", "--key", "emoji-😀-key"],
    ["--topic", "OrderTopic", "--queue-id", "2", "--queue-offset", "0"],
    ["--topic", "OrderTopic", "--queue-id", "2", "--queue-offset", "99999"],
    ["--topic", "NoSuchTopic", "--queue-id", "0", "--queue-offset", "0"],
    ["--topic", "SCHEDULE_TOPIC_XXXX", "--queue-id", "1", "--queue-offset", "0"],
]


@pytest.mark.parametrize("partition,args", KAFKA_MODES, ids=lambda v: " ".join(v) if isinstance(v, list) else v.name)
def test_every_kafka_mode_reads_as_text(partition, args):
    text = _text(partition, *args)
    assert_readable(text)
    for line in _summary(text):
        name, _, value = line.partition(" ")
        if name.endswith("timestamp") and value.strip() != "-" and not value.strip().startswith(
                ("latest", "earliest", "max-timestamp", "no timestamp")):
            assert re.fullmatch(ISO.pattern + r"  \(\d+ ms\)", value.strip()), line
    if "\n\noffset " in text:  # a record was found: its time in ISO-8601
        time_line = next(line for line in text.splitlines() if line.startswith("time "))
        assert ISO.search(time_line), time_line


@pytest.mark.parametrize("args", ROCKETMQ_MODES, ids=" ".join)
def test_every_rocketmq_mode_reads_as_text(args):
    text = _text(KILL9, *args)
    assert_readable(text)
    for line in text.splitlines():
        if line.startswith("stored "):
            assert len(ISO.findall(line)) == 2, line  # store and born times


# -- the audit's three failures ----------------------------------------------------------------

def test_a_binary_key_is_escaped_or_hex_in_the_summary_too():
    partition = corpus_path("kafka", "c10-consumer-offsets", "data", "__consumer_offsets-2")
    text = _text(partition, "--offset", "0", code=0)
    assert_readable(text)
    answer = json.loads(segtool("lookup", partition, "--offset", "0", "--json").stdout)
    assert "\n" in answer["key"] and "\x00" in answer["key"]  # the key that used to break the line
    key_lines = [line for line in text.splitlines() if line.startswith("key ")]
    assert len(key_lines) == 1  # the record's: the answer does not repeat what its record shows
    assert key_lines[0].split(None, 1)[1].endswith(("(hex)", "(escaped)"))
    assert _record_field(text, "offset") == "0" and ISO.search(_record_field(text, "time"))


def test_rocketmq_key_answer_has_yes_no_iso_times_and_readable_index_files():
    store = corpus_path("rocketmq", "clean-multi", "store")
    text = _text(store, "--topic", "AuditTopic", "--key", "user-1", code=0)
    assert_readable(text)
    assert _field(text, "include_collisions") == "no"
    assert _field(text, "terminated") == "yes"
    assert _field(text, "recovered") == "no"
    assert _field(text, "begin").startswith("1970-01-01T00:00:00.000Z")
    assert _field(text, "end").startswith("no limit")
    assert ISO.search(_field(text, "index_last_update_timestamp"))
    answer = json.loads(segtool("lookup", store, "--topic", "AuditTopic", "--key", "user-1", "--json").stdout)
    assert _field(text, "phy_offsets") == ", ".join(map(str, answer["phy_offsets"]))
    # every index file below its name, its header's times in ISO-8601
    lines = text.splitlines()
    start = lines.index("index_files")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        block.append(line)
    assert sum(line.lstrip().startswith("- file") for line in block) == len(answer["index_files"])
    for index_file in answer["index_files"]:
        assert any(index_file["file"] in line for line in block)
        begin = index_file["header"]["begin_timestamp"]
        assert any("begin_timestamp" in line and ISO.search(line) and f"({begin} ms)" in line for line in block)
    # what each index file gave, as a table
    searched = lines[lines.index("index_searched") + 1].split()
    assert searched == ["file", "found", "entries_read"]


def test_kafka_key_answer_lists_offsets_plainly_and_cuts_long_lists():
    compacted = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    text = _text(compacted, "--key", "ck-103", code=0)
    assert_readable(text)
    answer = json.loads(segtool("lookup", compacted, "--key", "ck-103", "--json").stdout)
    assert len(answer["offsets"]) > 1 and answer["note"] is None
    assert _field(text, "offsets") == ", ".join(map(str, answer["offsets"]))
    assert _field(text, "note") == "-"
    assert _field(text, "method") == "scan"
    assert text.count("\noffset     ") == len(answer["offsets"])  # every record, offset first

    many = corpus_path("kafka", "c03-codecs", "data", "c03-java-lz4-0")
    offsets = json.loads(segtool("lookup", many, "--key", "key-0144", "--json").stdout)["offsets"]
    assert len(offsets) > 20
    cut = _field(_text(many, "--key", "key-0144", code=0), "offsets")
    assert cut.startswith(", ".join(map(str, offsets[:20])) + ", …")
    assert f"({len(offsets)} in all; --full shows all)" in cut
    full = _text(many, "--key", "key-0144", "--full", code=0)
    assert_readable(full)
    assert _field(full, "offsets") == ", ".join(map(str, offsets))


def test_kafka_key_answer_through_the_key_index(tmp_path):
    segtool("index-keys", COMPACTED, "--out", tmp_path / "keys")
    text = _text(COMPACTED, "--key", "ck-008", "--key-index", tmp_path / "keys", code=0)
    assert_readable(text)
    assert _field(text, "method") == "key index"


# -- the details ---------------------------------------------------------------------------------

def test_special_timestamps_are_named():
    assert _field(_text(COMPACTED, "--timestamp", "latest"), "requested_timestamp") == "latest  (-1)"
    assert _field(_text(COMPACTED, "--timestamp", "earliest"), "requested_timestamp") == "earliest  (-2)"
    text = _text(COMPACTED, "--timestamp", "max-timestamp", code=0)
    assert _field(text, "requested_timestamp") == "max-timestamp  (-3)"
    assert re.fullmatch(ISO.pattern + r"  \(\d+ ms\)", _record_field(text, "time"))


def test_nothing_found_says_so_in_a_sentence():
    text = _text(COMPACTED, "--offset", "99999999", code=1)
    assert_readable(text)
    assert text.splitlines()[0] == "no record at or after offset 99999999: the log ends at offset 8000"
    assert not [line for line in _summary(text) if line.split(" ", 1)[0] in ("offset", "segment", "position")]
    assert _field(text, "log_end_offset") == "8000"


def test_a_record_without_a_timestamp_says_so():
    legacy = SAMPLE_DATA / "kafka" / "c08-legacy-formats" / "data" / "c08-legacy-v0-0"
    text = _text(legacy, "--offset", "0", code=0)
    assert_readable(text)
    assert _record_field(text, "time") == "no timestamp  (-1)"


def test_schedule_topic_tags_code_is_a_delivery_time():
    text = _text(KILL9, "--topic", "SCHEDULE_TOPIC_XXXX", "--queue-id", "1", "--queue-offset", "0", code=0)
    assert "delivery time" in _field(text, "tags_code") and ISO.search(_field(text, "tags_code"))
    assert _field(text, "queue_exists") == "yes"


def test_recovery_is_shown_as_indented_fields():
    text = _text(KILL9, "--topic", "OrderTopic", "--key", "order-0-0", code=0)
    assert_readable(text)
    assert _field(text, "recovered") == "yes"
    lines = text.splitlines()
    below = lines[lines.index("recovery") + 1:]
    assert below[0].startswith("  note ")
    assert any(re.match(r"\s+abort_file_exists\s+yes$", line) for line in below)
    assert any(re.match(r"\s+physic_msg_timestamp\s+" + ISO.pattern, line) for line in below)


def test_collisions_and_unreadable_offsets_are_marked():
    text = _text(KILL9, "--topic", "CollideTopic", "--key", "C#", "--include-collisions", code=0)
    assert "collision  yes" in text
    # an index without its CommitLog: offsets it cannot read are named, not a crash
    index_only = corpus_path("rocketmq", "corrupt-index-count", "store")
    text = _text(index_only, "--topic", "AuditTopic", "--key", "hot-key", "--max", "3")
    assert_readable(text)
    assert text.count("not read   no commitlog") == 3


def test_a_damaged_body_is_escaped_and_its_crc_flagged():
    store = corpus_path("rocketmq", "corrupt-body-crc", "store")
    # the damaged message is where RocketMQ's recovery cuts the CommitLog: the answer says so (exit 1)
    text = _text(store, "--topic", "OrderTopic", "--key", "order-4-588", code=1)
    assert "cuts the CommitLog at physical offset" in text
    assert_readable(text)
    assert "body crc   BAD" in text
    body = next(line for line in text.splitlines() if line.startswith("body       "))
    assert "\\x8b" in body and "escaped" in body  # one flipped byte, the rest still text


def test_json_is_the_library_answer_unchanged():
    from segtool.ops.lookup import LookupRequest, lookup

    store = corpus_path("rocketmq", "clean-multi", "store")
    cases = [(COMPACTED, ["--offset", "7050"], LookupRequest(offset=7050)),
             (COMPACTED, ["--timestamp", "latest"], LookupRequest(timestamp="latest")),
             (COMPACTED, ["--key", "ck-008"], LookupRequest(key="ck-008")),
             (CONSUMER_OFFSETS, ["--offset", "0"], LookupRequest(offset=0)),
             (store, ["--topic", "AuditTopic", "--key", "user-1"], LookupRequest(topic="AuditTopic", key="user-1"))]
    for path, args, request in cases:
        printed = segtool("lookup", path, *args, "--json").stdout
        assert printed.count("\n") == 1
        answer, _ = lookup(str(path), request)
        assert json.loads(printed) == json.loads(json.dumps(answer)), args


def test_rendering_leaves_the_answer_alone():
    from segtool.ops.lookup import LookupRequest, lookup
    from segtool.ops.render import answer_lines

    answer, _ = lookup(str(CONSUMER_OFFSETS), LookupRequest(offset=0))
    before = json.dumps(answer, sort_keys=True)
    answer_lines(answer)
    answer_lines(answer, full=True)
    assert json.dumps(answer, sort_keys=True) == before


def test_show_bytes():
    from segtool.ops.render import show_bytes

    def shown(data: bytes, **kw) -> str:
        return show_bytes(base64.b64encode(data).decode(), **kw)

    assert shown(b"order-42") == "order-42"
    assert shown("ключ 😀".encode()) == "ключ 😀"
    assert shown(b"two\nlines") == "two\\nlines (escaped)"
    assert shown(b"back\\slash\n") == "back\\\\slash\\n (escaped)"  # a literal backslash stays apart
    assert shown(b"almost text \x8b here") == "almost text \\x8b here (escaped)"
    assert shown(b"\x00\x01\x02") == "00 01 02 (hex)"
    assert shown(b"") == "(empty)"
    assert show_bytes(None) == "null"
    long = shown(b"x" * 500)
    assert long.startswith("x" * 200 + "…") and long.endswith("(500 bytes; --full shows all)")
    assert shown(b"x" * 500, full=True) == "x" * 500
    assert shown(b"\x00" * 300).endswith("(300 bytes, hex; --full shows all)")


@pytest.mark.parametrize("path", [CONSUMER_OFFSETS, TXN, KILL9 / "commitlog"])
def test_dump_text_shows_records_and_messages_as_people_read_them(path):
    """dump's text lines too: ISO times, keys and values as text, escaped or hex, never a repr."""
    run = segtool("dump", path)
    assert run.returncode in (0, 1) and "Traceback" not in run.stderr
    lines = [line for line in run.stdout.splitlines() if line.lstrip().startswith(("offset ", "message @"))]
    assert lines
    for line in lines:
        assert not CONTROL.search(line) and not PY_REPR.search(line) and ISO.search(line), line
        assert " ts " not in line and "binary>" not in line, line
    full = segtool("dump", path, "--full").stdout
    assert len(full) >= len(run.stdout) and "--full shows all" not in full
