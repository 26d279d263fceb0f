"""Kafka indexes, producer snapshots, checkpoints and partition.metadata against the corpus.

Goldens: ``../shared/corpus/kafka/<case>/expected/dump/exit-codes.json`` names,
for every file Kafka's ``kafka-dump-log`` was run on, the argv, exit code and
the captured stdout/stderr.
"""

from __future__ import annotations

import json
import struct
from functools import lru_cache
from pathlib import Path

import construct as cs
import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from segtool.errors import CorruptData, SegtoolError, TruncatedData
from segtool.kafka.index import (
    OFFSET_INDEX_DTYPE,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    TXN_INDEX_ENTRY,
    CorruptIndex,
    KafkaReportedError,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    TransactionIndex,
    open_index,
    txn_index_dump_lines,
)
from segtool.kafka.state import (
    PRODUCER_SNAPSHOT,
    PRODUCER_SNAPSHOT_ENTRY,
    CorruptCheckpoint,
    CorruptSnapshot,
    EpochEntry,
    TopicPartitionOffset,
    TruncatedSnapshot,
    checkpoint_kind,
    decrement_sequence,
    parse_checkpoint,
    parse_partition_metadata,
    parse_producer_snapshot,
    read_checkpoint,
    read_partition_metadata,
    read_producer_snapshot,
    snapshot_dump_lines,
)
from segtool.ops.kafka_dump_log import KafkaDumpLog, KafkaDumpOptions
from tests.conftest import CORPUS, corpus_path
from tests.kafka_build import make_batch

# --------------------------------------------------------------------------
# Corpus discovery
# --------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _golden_commands() -> tuple:
    """(case dir, file key, command, info) for every kafka-dump-log run in the corpus."""
    out = []
    root = CORPUS / "kafka"
    if not root.exists():
        return ()
    for codes in sorted(root.glob("*/expected/dump/exit-codes.json")):
        case = codes.parents[2]
        for key, commands in json.loads(codes.read_text()).items():
            for command, info in commands.items():
                out.append((case, key, command, info))
    return tuple(out)


def _goldens(suffix: str, command: str) -> list:
    found = [g for g in _golden_commands() if g[1].endswith(suffix) and g[2] == command]
    return found


def _ids(goldens) -> list[str]:
    return [f"{case.name}/{key}" for case, key, _, _ in goldens]


def _read_golden(case: Path, info: dict, stream: str) -> list[str]:
    text = (case / info[stream]).read_text()
    return text.splitlines()


def _corpus_files(*patterns: str, roots=("kafka",)) -> list[Path]:
    files = []
    for root in roots:
        base = CORPUS / root
        if base.exists():
            for pattern in patterns:
                files.extend(p for p in base.rglob(pattern) if p.is_file() and "expected/dump" not in str(p))
    return sorted(set(files))


def _need_corpus() -> None:
    corpus_path("kafka")


TXN_DUMPS = _goldens(".txnindex", "dump")
SNAPSHOT_DUMPS = _goldens(".snapshot", "dump")
INDEX_DUMPS = _goldens(".index", "dump")
TIMEINDEX_DUMPS = _goldens(".timeindex", "dump")
INDEX_SANITY = _goldens(".index", "index-sanity-check")
TIMEINDEX_SANITY = _goldens(".timeindex", "index-sanity-check")

INDEX_FILES = _corpus_files("*.index", "*.timeindex")
TXN_FILES = _corpus_files("*.txnindex")
SNAPSHOT_FILES = _corpus_files("*.snapshot")


def test_corpus_has_goldens():
    _need_corpus()
    assert len(TXN_DUMPS) >= 2
    assert len(SNAPSHOT_DUMPS) >= 100
    assert len(INDEX_DUMPS) >= 100 and len(TIMEINDEX_DUMPS) >= 100
    assert INDEX_FILES and TXN_FILES and SNAPSHOT_FILES


def _header_and_body(case: Path, key: str, info: dict) -> list[str]:
    lines = _read_golden(case, info, "stdout")
    assert lines[0] == f"Dumping {key}"
    return lines[1:]


# --------------------------------------------------------------------------
# kafka-dump-log goldens
# --------------------------------------------------------------------------


@pytest.mark.parametrize("golden", TXN_DUMPS, ids=_ids(TXN_DUMPS))
def test_txnindex_dump_matches_kafka(golden):
    case, key, _, info = golden
    assert info["exit_code"] == 0
    expected = _header_and_body(case, key, info)
    assert list(txn_index_dump_lines(case / key, display_path=key)) == expected
    assert _read_golden(case, info, "stderr") == []


@pytest.mark.parametrize("golden", SNAPSHOT_DUMPS, ids=_ids(SNAPSHOT_DUMPS))
def test_snapshot_dump_matches_kafka(golden):
    case, key, _, info = golden
    assert info["exit_code"] == 0
    expected = _header_and_body(case, key, info)
    stderr = _read_golden(case, info, "stderr")
    if stderr:  # Kafka printed CorruptSnapshotException's message and no entries
        with pytest.raises(CorruptSnapshot) as exc:
            list(snapshot_dump_lines(case / key, display_path=key))
        assert stderr == [exc.value.kafka_message]
        assert expected == []
    else:
        assert list(snapshot_dump_lines(case / key, display_path=key)) == expected


def _dumped(path, dump: str) -> tuple[list[str], SegtoolError | None]:
    """The lines ``KafkaDumpLog.<dump>`` prints for one index file, and the error it stops with."""
    lines: list[str] = []
    try:
        getattr(KafkaDumpLog(KafkaDumpOptions(), lines.append), dump)(str(path))
    except SegtoolError as exc:
        return lines, exc
    return lines, None


def _check_entry_lines(golden, dump: str, monkeypatch):
    case, key, _, info = golden
    expected = _header_and_body(case, key, info)
    monkeypatch.chdir(case)  # the golden names the file relative to its case
    ours, error = _dumped(key, dump)
    # Mismatch reports go to stderr after all files; stdout is the entry lines.  Where
    # kafka-dump-log died checking an entry against the .log, it printed the same lines first.
    assert ours == expected
    assert (error is not None) == (info["exit_code"] != 0)


@pytest.mark.parametrize("golden", INDEX_DUMPS, ids=_ids(INDEX_DUMPS))
def test_index_entry_lines_match_kafka(golden, monkeypatch):
    _check_entry_lines(golden, "dump_offset_index", monkeypatch)


@pytest.mark.parametrize("golden", TIMEINDEX_DUMPS, ids=_ids(TIMEINDEX_DUMPS))
def test_timeindex_entry_lines_match_kafka(golden, monkeypatch):
    _check_entry_lines(golden, "dump_time_index", monkeypatch)


def _check_sanity(golden, index_cls, empty_message: bool):
    case, key, _, info = golden
    stdout = _header_and_body(case, key, info)
    stderr = _read_golden(case, info, "stderr")
    index = index_cls(case / key)
    if empty_message and index.entries == 0:
        assert stdout == [f"{key} is empty."]
        return
    if info["exit_code"] == 0:
        index.sanity_check(key)
        assert stdout == [f"{key} passed sanity check."]
    else:
        with pytest.raises(CorruptIndex) as exc:
            index.sanity_check(key)
        err = exc.value
        assert stderr[0] == f'Exception in thread "main" {err.java_class}: {err.kafka_message}'
        assert stdout == []


@pytest.mark.parametrize("golden", INDEX_SANITY, ids=_ids(INDEX_SANITY))
def test_index_sanity_check_matches_kafka(golden):
    _check_sanity(golden, OffsetIndex, empty_message=True)


@pytest.mark.parametrize("golden", TIMEINDEX_SANITY, ids=_ids(TIMEINDEX_SANITY))
def test_timeindex_sanity_check_matches_kafka(golden):
    _check_sanity(golden, TimeIndex, empty_message=False)


def test_hot_copy_preallocated_indexes():
    """c02: the active segment's indexes are preallocated; only the dump view stops at the zeros."""
    base = corpus_path("kafka", "c02-unclean-hot-copy", "data")
    case = json.loads((base.parent / "case.json").read_text())
    seen = 0
    for part, info in case["partitions"].items():
        last = info["segment_list"][-1]
        stem = f"{last['base_offset']:020d}"
        for suffix, cls in ((".index", OffsetIndex), (".timeindex", TimeIndex)):
            path = base / part / (stem + suffix)
            index = cls(path)
            assert index.length == last["files"][stem + suffix]
            assert index.entries == index.length // index.entry_size  # broker view: every slot
            assert index.dump_entries < index.entries  # kafka-dump-log view stops at a zero slot
            tail = index.array[index.dump_entries:]
            assert not tail.tobytes().strip(b"\0")
            seen += 1
    assert seen == 6


# --------------------------------------------------------------------------
# construct schema vs derived decoders
# --------------------------------------------------------------------------

_BIG = 64 * 1024


def _schema_for(path: Path):
    if path.name.endswith(".timeindex"):
        return TIME_INDEX_ENTRY
    if path.name.endswith(".index"):
        return OFFSET_INDEX_ENTRY
    return TXN_INDEX_ENTRY


def _check_decoders_agree(path: Path):
    schema = _schema_for(path)
    view = open_index(path) if not path.name.endswith(".txnindex") else TransactionIndex(path)
    layout = view.LAYOUT
    arr = view.array
    data = path.read_bytes()
    n = len(data) // layout.size
    assert len(arr) == n
    assert arr.dtype.itemsize == layout.size == schema.sizeof()
    names = layout.names
    # numpy view vs the derived struct.Struct, on every entry
    fast = [tuple(row) for row in arr.tolist()]
    assert fast == list(layout.packer.iter_unpack(data[: n * layout.size]))
    # construct itself: every entry of ordinary files; for preallocated ones
    # the written entries, the first zero slots and the last slots.
    if len(data) <= _BIG:
        ranges = [(0, n)]
    else:
        head = min(n, getattr(view, "dump_entries", n) + 8)
        ranges = [(0, head), (max(head, n - 8), n)]
    for start, stop in ranges:
        compiled = cs.Array(stop - start, schema).compile()
        parsed = compiled.parse(data[start * layout.size: stop * layout.size])
        assert [tuple(e[k] for k in names) for e in parsed] == fast[start:stop]


@pytest.mark.parametrize("path", INDEX_FILES + TXN_FILES, ids=[str(p.relative_to(CORPUS)) for p in INDEX_FILES + TXN_FILES])
def test_construct_and_fast_decoder_agree(path):
    _check_decoders_agree(path)


def test_index_entries_are_read_only():
    path = INDEX_FILES[0] if INDEX_FILES else pytest.skip("no corpus")
    arr = open_index(path).array
    assert not arr.flags.writeable
    with pytest.raises(ValueError):
        arr[:1] = arr[:1]


# --------------------------------------------------------------------------
# Producer snapshots
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path", SNAPSHOT_FILES, ids=[str(p.relative_to(CORPUS)) for p in SNAPSHOT_FILES])
def test_snapshot_crc_and_construct(path):
    data = path.read_bytes()
    assert PRODUCER_SNAPSHOT_ENTRY.sizeof() == 46
    snap = read_producer_snapshot(path)
    assert snap.version == 1 and snap.crc_ok and snap.trailing_bytes == 0
    assert snap.crc == crc32c(data[6:])
    parsed = PRODUCER_SNAPSHOT.parse(data)
    assert parsed.entry_count == len(snap.entries)
    for c, ours in zip(parsed.producer_entries, snap.entries):
        assert {k: v for k, v in c.items() if not k.startswith("_")} == ours.__dict__


def _snapshot_bytes(entries: list[dict], version: int = 1) -> bytes:
    body = PRODUCER_SNAPSHOT.build(dict(version=version, crc=0, entry_count=len(entries),
                                        producer_entries=entries))
    return body[:2] + struct.pack(">I", crc32c(body[6:])) + body[6:]


_ENTRY = dict(producer_id=7, producer_epoch=3, last_sequence=41, last_offset=1000, offset_delta=4,
              timestamp=1795304371303, coordinator_epoch=2, current_txn_first_offset=-1)


def test_snapshot_flipped_bytes_are_detected():
    data = _snapshot_bytes([_ENTRY, dict(_ENTRY, producer_id=8, last_offset=-1)])
    parse_producer_snapshot(data)
    for pos in range(len(data)):
        for bit in (0x01, 0x20, 0x80):
            bad = bytearray(data)
            bad[pos] ^= bit
            with pytest.raises(CorruptSnapshot) as exc:
                parse_producer_snapshot(bytes(bad), "x.snapshot")
            msg = exc.value.kafka_message
            if pos < 2:
                assert msg.startswith("Snapshot contained an unknown file version ")
            elif pos < 6:
                assert msg.startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")
            else:
                assert msg.startswith(("Snapshot is corrupt (CRC is no longer valid)",
                                       "Snapshot failed schema validation: "))


def test_corpus_snapshot_with_flipped_byte():
    path = next((p for p in SNAPSHOT_FILES if p.stat().st_size > 10), None) or pytest.skip("no corpus")
    data = bytearray(path.read_bytes())
    data[20] ^= 0x20
    with pytest.raises(CorruptSnapshot) as exc:
        parse_producer_snapshot(bytes(data), path)
    stored = struct.unpack(">I", data[2:6])[0]
    assert exc.value.kafka_message == (
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
        f"Computed crc: {crc32c(bytes(data[6:]))}")
    assert isinstance(exc.value, CorruptData)
    snap = parse_producer_snapshot(bytes(data), path, verify=False)
    assert not snap.crc_ok


@pytest.mark.parametrize("size, message", [
    (0, "Error reading field 'version': java.nio.BufferUnderflowException"),
    (1, "Error reading field 'version': java.nio.BufferUnderflowException"),
    (5, "Error reading field 'crc': java.nio.BufferUnderflowException"),
    (9, "Error reading field 'producer_entries': java.nio.BufferUnderflowException"),
    (10, "Error reading field 'producer_entries': Error reading array of size 2, only 0 bytes available"),
    (10 + 46 + 7, "Error reading field 'producer_entries': Error reading field 'producer_id': "
                  "java.nio.BufferUnderflowException"),
    (10 + 46 + 9, "Error reading field 'producer_entries': Error reading field 'epoch': "
                  "java.nio.BufferUnderflowException"),
    (10 + 46 + 45, "Error reading field 'producer_entries': Error reading field "
                   "'current_txn_first_offset': java.nio.BufferUnderflowException"),
])
def test_truncated_snapshot_messages(size, message):
    data = _snapshot_bytes([_ENTRY, _ENTRY])[:size]
    with pytest.raises(TruncatedSnapshot) as exc:
        parse_producer_snapshot(data)
    assert exc.value.kafka_message == "Snapshot failed schema validation: " + message
    assert isinstance(exc.value, TruncatedData)


def test_snapshot_negative_count_and_trailing_bytes():
    data = bytearray(_snapshot_bytes([]))
    data[6:10] = struct.pack(">i", -1)
    with pytest.raises(CorruptSnapshot, match="Array size -1 cannot be negative"):
        parse_producer_snapshot(bytes(data))
    # Kafka's Schema.read does not reject bytes after the array; the CRC covers them.
    body = _snapshot_bytes([_ENTRY])[6:] + b"\x00\x01"
    data = b"\x00\x01" + struct.pack(">I", crc32c(body)) + body
    snap = parse_producer_snapshot(data)
    assert snap.trailing_bytes == 2 and len(snap.entries) == 1


def test_snapshot_line_without_batch_metadata():
    data = _snapshot_bytes([dict(_ENTRY, last_offset=-1, current_txn_first_offset=12)])
    snap = parse_producer_snapshot(data)
    from segtool.kafka.state import format_snapshot_entry

    assert format_snapshot_entry(snap.entries[0]) == (
        "producerId: 7 producerEpoch: 3 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong[12] "
        "lastTimestamp: 1795304371303 ")


def test_decrement_sequence_wraps_like_kafka():
    assert decrement_sequence(390, 0) == 390
    assert decrement_sequence(719, 8) == 711
    assert decrement_sequence(2, 5) == 2147483645  # Integer.MAX_VALUE - 3 + 1
    assert decrement_sequence(-1, 0) == 2147483647  # NO_SEQUENCE: -1 < 0 takes the wrap branch
    assert decrement_sequence(2147483647, -1) == -2147483648


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_snapshot_parser_raises_only_segtool_errors(data):
    try:
        parse_producer_snapshot(data)
    except CorruptSnapshot:
        pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.fixed_dictionaries({k: st.integers(-(1 << (8 * s - 1)), (1 << (8 * s - 1)) - 1)
                                       for k, s in (("producer_id", 8), ("producer_epoch", 2),
                                                    ("last_sequence", 4), ("last_offset", 8),
                                                    ("offset_delta", 4), ("timestamp", 8),
                                                    ("coordinator_epoch", 4),
                                                    ("current_txn_first_offset", 8))}),
                max_size=5))
def test_snapshot_round_trip(entries):
    snap = parse_producer_snapshot(_snapshot_bytes(entries))
    assert [e.__dict__ for e in snap.entries] == entries


# --------------------------------------------------------------------------
# Transaction index details
# --------------------------------------------------------------------------


def _txn_bytes(*entries) -> bytes:
    return b"".join(TXN_INDEX_ENTRY.build(dict(version=v, producer_id=p, first_offset=f, last_offset=l,
                                               last_stable_offset=s)) for v, p, f, l, s in entries)


def test_txnindex_version_is_read_as_one_byte(tmp_path):
    path = tmp_path / "00000000000000000100.txnindex"
    # 0x0001: AbortedTxn.version() reads byte 0 only -> 0, accepted.  Partial tail ignored.
    path.write_bytes(_txn_bytes((1, 5, 100, 120, 99)) + b"\x00" * 33)
    assert list(txn_index_dump_lines(path)) == [
        "version: 0 producerId: 5 firstOffset: 100 lastOffset: 120 lastStableOffset: 99"]
    index = TransactionIndex(path)
    assert index.entries == 1 and index.trailing_bytes == 33
    index.sanity_check()
    # 0x0100: byte 0 is 1 > CURRENT_VERSION -> Kafka's KafkaException, before any line.
    path.write_bytes(_txn_bytes((0, 5, 100, 120, 99), (0x100, 6, 130, 140, 129)))
    lines = txn_index_dump_lines(path, display_path="p.txnindex")
    with pytest.raises(KafkaReportedError) as exc:
        next(lines)
    assert exc.value.kafka_message == (
        "Unexpected aborted transaction version 1 in transaction index p.txnindex, current version is 0")
    assert exc.value.offset == 34


def test_txnindex_sanity_check(tmp_path):
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(_txn_bytes((0, 5, 10, 99, 9)))
    with pytest.raises(CorruptIndex) as exc:
        TransactionIndex(path).sanity_check("t")
    assert exc.value.kafka_message == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=5, firstOffset=10, "
        "lastOffset=99, lastStableOffset=9) in index t is less than start offset 100")


# --------------------------------------------------------------------------
# Offset/time index behaviour on synthetic files
# --------------------------------------------------------------------------


def _log_of(path: Path, *last_offsets: int) -> list[int]:
    """A .log beside ``path`` of one-record batches at these offsets; their positions."""
    batches = [make_batch(offset, [(b"k", b"v")], 1_700_000_000_000) for offset in last_offsets]
    path.with_suffix(".log").write_bytes(b"".join(batches))
    return [sum(map(len, batches[:i])) for i in range(len(batches))]


def test_zero_tailed_offset_index(tmp_path):
    path = tmp_path / "00000000000000000500.index"
    positions = _log_of(path, 510, 525, 540)
    entries = list(zip((10, 25, 40), positions))
    path.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries) + bytes(8 * 100) + b"\x01\x02\x03")
    index = OffsetIndex(path)
    assert index.entries == 103 and index.dump_entries == 3 and index.trailing_bytes == 3
    assert _dumped(path, "dump_offset_index") == (
        [f"offset: {offset} position: {at}" for offset, at in zip((510, 525, 540), positions)], None)
    # Kafka's lookups over the broker view, zero tail included.
    assert index.lookup(530) == OffsetPosition(500, 0)  # binary search lands in the zero tail
    with pytest.raises(CorruptIndex, match="is corrupt, found 827 bytes which is neither positive nor a multiple of 8"):
        index.sanity_check()
    exact = tmp_path / "00000000000000000500.timeindex"
    exact.write_bytes(b"".join(struct.pack(">qi", 1000 + i, i + 1) for i in range(5)))
    t = TimeIndex(exact)
    assert t.lookup(1002) == TimestampOffset(1002, 503)
    assert t.lookup(5) == TimestampOffset(-1, 500)
    t.sanity_check()


def test_first_zero_entry_is_printed(tmp_path):
    # An all-zero preallocated index: slot 0 is printed, slot 1 stops the dump.
    path = tmp_path / "00000000000000001185.index"
    path.write_bytes(bytes(8 * 16))
    _log_of(path, 1185)
    assert _dumped(path, "dump_offset_index") == (["offset: 1185 position: 0"], None)
    empty = tmp_path / "00000000000000000000.index"
    empty.write_bytes(b"")
    _log_of(empty)
    assert _dumped(empty, "dump_offset_index") == ([f"{empty} is empty."], None)
    assert open_index(empty).array.dtype == OFFSET_INDEX_DTYPE


def test_lookup_matches_plain_search_on_sorted_index():
    path = next((p for p in INDEX_FILES if p.name.endswith(".index") and p.stat().st_size > 64), None)
    index = OffsetIndex(path) if path else pytest.skip("no corpus")
    offsets = index.offsets
    for target in range(int(offsets[0]) - 2, int(offsets[-1]) + 3):
        i = int(np.searchsorted(offsets, target, side="right")) - 1
        expected = OffsetPosition(index.base_offset, 0) if i < 0 else index.entry(i)
        assert index.lookup(target) == expected


# --------------------------------------------------------------------------
# Checkpoints and partition.metadata
# --------------------------------------------------------------------------

PARTITION_DIRS = sorted({p.parent for p in _corpus_files("partition.metadata", "leader-epoch-checkpoint")})


@pytest.mark.parametrize("part", PARTITION_DIRS, ids=[str(p.relative_to(CORPUS)) for p in PARTITION_DIRS])
def test_partition_state_files_parse(part):
    epochs = read_checkpoint(part / "leader-epoch-checkpoint")
    assert epochs.kind == "leader-epoch" and epochs.version == 0
    assert epochs.expected_count == len(epochs.entries) >= 1
    assert all(isinstance(e, EpochEntry) for e in epochs.entries)
    assert [e.epoch for e in epochs.entries] == sorted(e.epoch for e in epochs.entries)
    meta = read_partition_metadata(part / "partition.metadata")
    assert meta.version == 0 and len(meta.topic_id) == 22
    assert meta.topic_id == meta.topic_id_text
    assert meta.encode() == (part / "partition.metadata").read_text()


def test_topic_ids_consistent_per_topic():
    if not PARTITION_DIRS:
        pytest.skip("../shared/corpus is absent")
    by_topic: dict[str, set[str]] = {}
    for part in PARTITION_DIRS:
        if "kafka/" in str(part) and (part / "partition.metadata").exists():
            topic = part.name.rsplit("-", 1)[0]
            case = part.relative_to(CORPUS).parts[1]
            by_topic.setdefault((case, topic), set()).add(read_partition_metadata(part / "partition.metadata").topic_id)
    assert by_topic
    assert all(len(ids) == 1 for ids in by_topic.values())


def test_offset_checkpoint_format():
    cp = parse_checkpoint(b"0\n3\n__consumer_offsets 13 0\nt 0 8\nt  1\t9\n", "offset")
    assert cp.entries == [TopicPartitionOffset("__consumer_offsets", 13, 0),
                          TopicPartitionOffset("t", 0, 8), TopicPartitionOffset("t", 1, 9)]
    assert parse_checkpoint(b"", "offset").entries == []
    assert parse_checkpoint(b"0\n", "leader-epoch").entries == []
    assert parse_checkpoint(b"0\r\n1\r\n3 600\r\n", "leader-epoch").entries == [EpochEntry(3, 600)]
    assert checkpoint_kind("x/replication-offset-checkpoint.tmp") == "offset"
    assert checkpoint_kind("x/leader-epoch-checkpoint") == "leader-epoch"
    assert checkpoint_kind("x/bootstrap.checkpoint") is None


@pytest.mark.parametrize("text, kind, message", [
    (b"1\n0\n", "offset", "Unrecognised version:1, expected version: 0 in checkpoint file at: f"),
    (b"x\n", "offset", "Malformed line in checkpoint file [f]: x"),
    (b"0\n2\n0 0\n", "leader-epoch", "Expected [2] entries in checkpoint file [f], but found only [1]"),
    (b"0\n1\n0 0 0\n", "leader-epoch", "Malformed line in checkpoint file [f]: 0 0 0"),
    (b"0\n1\n 0 0\n", "leader-epoch", "Malformed line in checkpoint file [f]:  0 0"),
    (b"0\n1\n\n", "leader-epoch", "Malformed line in checkpoint file [f]: "),
    (b"0\n1\nt 0\n", "offset", "Malformed line in checkpoint file [f]: t 0"),
    (b"0\n1\nt x 5\n", "offset", 'For input string: "x"'),
    (b"0\n1\n0 99999999999999999999\n", "leader-epoch", 'For input string: "99999999999999999999"'),
    (b"0\n1\n\xff 0\n", "leader-epoch", "Input length = 1"),
])
def test_checkpoint_errors_use_kafkas_messages(text, kind, message):
    with pytest.raises(CorruptCheckpoint) as exc:
        parse_checkpoint(text, kind, "f")
    assert exc.value.kafka_message == message


@pytest.mark.parametrize("text, message", [
    (b"", "Malformed line in partition metadata file [f]: null"),
    (b"version: 0\n", "Malformed line in partition metadata file [f]: null"),
    (b"version:0\ntopic_id: _s8Y1bv2Qg6Z9ffAxfrojg", "Malformed line in partition metadata file [f]: version:0"),
    (b"version: -1\ntopic_id: _s8Y1bv2Qg6Z9ffAxfrojg", "Unrecognized version of partition metadata file (f): -1"),
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID in partition metadata file (f)"),
    (b"version: 0\ntopic_id: _s8Y1bv2Qg6Z9ffAxfroj", "Malformed line in partition metadata file [f]: topic_id: _s8Y1bv2Qg6Z9ffAxfroj"),
    (b"version: 0\ntopic_id: /s8Y1bv2Qg6Z9ffAxfrojg", "Malformed line in partition metadata file [f]: topic_id: /s8Y1bv2Qg6Z9ffAxfrojg"),
])
def test_partition_metadata_errors(text, message):
    with pytest.raises(CorruptCheckpoint) as exc:
        parse_partition_metadata(text, "f")
    assert exc.value.kafka_message == message


def test_partition_metadata_lenient_parts():
    meta = parse_partition_metadata(b"version: 1\ntopic_id:   _s8Y1bv2Qg6Z9ffAxfrojg==\nextra\n")
    assert meta.version == 1 and meta.topic_id == "_s8Y1bv2Qg6Z9ffAxfrojg"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.sampled_from(["offset", "leader-epoch", "meta"]))
def test_text_parsers_raise_only_segtool_errors(data, kind):
    try:
        if kind == "meta":
            parse_partition_metadata(data)
        else:
            parse_checkpoint(data, kind)
    except CorruptCheckpoint:
        pass


# --------------------------------------------------------------------------
# Third-party files in the wild
# --------------------------------------------------------------------------

WILD = _corpus_files("*.index", "*.timeindex", "*.txnindex", "*.snapshot", "partition.metadata",
                     "*checkpoint*", roots=("wild",))


def _parse_wild(path: Path):
    name = path.name
    if name.endswith((".index", ".timeindex")):
        index = open_index(path)
        entries = [index.entry(i) for i in range(index.dump_entries)]  # what kafka-dump-log lists
        if index.entries:
            index.lookup(int(index.last_entry()[0]))
        _check_decoders_agree(path)
        try:
            index.sanity_check()
        except CorruptIndex:
            pass
        return entries
    if name.endswith(".txnindex"):
        return list(txn_index_dump_lines(path))
    if name.endswith(".snapshot"):
        return list(snapshot_dump_lines(path))
    if name == "partition.metadata":
        return read_partition_metadata(path)
    if checkpoint_kind(path) is not None:
        return read_checkpoint(path)
    return None  # KRaft .checkpoint snapshots, RocketMQ checkpoints: other formats


@pytest.mark.parametrize("path", WILD, ids=[str(p.relative_to(CORPUS)) for p in WILD])
def test_wild_files_parse_or_raise_segtool_errors(path):
    try:
        _parse_wild(path)
    except SegtoolError:
        pass


def test_wild_kafka_state_files_all_parse():
    if not WILD:
        pytest.skip("no wild corpus")
    failures = []
    for path in WILD:
        try:
            _parse_wild(path)
        except SegtoolError as e:
            failures.append((path, e))
    # Broker-written files should all be readable; report any that are not.
    assert not failures, [f"{p.relative_to(CORPUS)}: {e}" for p, e in failures]
