"""Reading past damage (engine.salvage): every intact batch or message survives, damaged ranges are exact.

Expected values come from the undamaged originals in the corpus: a batch (message)
is expected to be read iff its bytes are unchanged in the damaged copy, and each
damaged range must run exactly from the end of one intact batch to the start of
the next.
"""

from __future__ import annotations

import struct

import json
import random

import pytest

from segtool.engine.salvage import DamagedRange, commitlog_pieces, kafka_pieces
from segtool.rocketmq import store_files as rmq
from segtool.errors import CorruptData
from segtool.kafka.log import CRC_V2_START, BatchScan, RecordBatch
from segtool.ops.dump import dump_paths
from segtool.ops.verify import verify
from tests.conftest import case_dirs, corpus_path

C01_SEGMENT = ("kafka", "c01-multiseg-clean", "data", "c01-plain-0", "00000000000000000000.log")


def _batches(data: bytes) -> list[tuple[int, bytes]]:
    """The whole batches Kafka's reader frames, up to the first framing error."""
    found = []
    try:
        for batch in BatchScan(data):
            found.append((batch.position, batch.raw()))
    except CorruptData:
        pass
    return found


def _read(data: bytes, base_offset: int = 0) -> tuple[list[RecordBatch], list[DamagedRange], list[RecordBatch]]:
    pieces = list(kafka_pieces(data, "segment", base_offset=base_offset))
    valid = [p for p in pieces if isinstance(p, RecordBatch) and p.crc_valid]
    bad = [p for p in pieces if isinstance(p, RecordBatch) and not p.crc_valid]
    return valid, [p for p in pieces if isinstance(p, DamagedRange)], bad


def _intact(original: list[tuple[int, bytes]], damaged: bytes, moved: dict[int, int]) -> list[tuple[int, bytes]]:
    """The original batches whose bytes are unchanged in ``damaged``, at their new positions."""
    kept = []
    for position, raw in original:
        new = moved.get(position, position)
        if new is not None and damaged[new:new + len(raw)] == raw:
            kept.append((new, raw))
    return kept


def _assert_partition_of_file(valid, ranges, size):
    """Valid batches and damaged ranges cover the file exactly, in order, with no gap or overlap."""
    spans = sorted([(b.position, b.end) for b in valid] + [(r.first_byte, r.end_byte) for r in ranges])
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def _damage_cases(segment: bytes, positions: list[int], seed: int):
    """(label, damaged bytes, old position -> new position or None) for flips, zeros, random overwrites, cuts
    (``positions``: where the batches or messages start)."""
    rng = random.Random(seed)
    size = len(segment)
    for _ in range(3):
        at = rng.randrange(size)
        flipped = bytearray(segment)
        flipped[at] ^= 1 << rng.randrange(8)
        yield f"flip@{at}", bytes(flipped), {}
        start, length = rng.randrange(size - 9000), rng.randrange(1, 9000)
        zeroed = bytearray(segment)
        zeroed[start:start + length] = bytes(length)
        yield f"zero@{start}+{length}", bytes(zeroed), {}
        scribbled = bytearray(segment)
        scribbled[start:start + length] = rng.randbytes(length)
        yield f"random@{start}+{length}", bytes(scribbled), {}
        cut = segment[:start] + segment[start + length:]
        moved = {p: (p if p + 1 <= start else p - length if p >= start + length else None)
                 for p in positions}
        yield f"cut@{start}+{length}", cut, moved


@pytest.mark.parametrize("seed", range(4))
def test_every_intact_kafka_batch_survives_generated_damage(seed):
    segment = corpus_path(*C01_SEGMENT).read_bytes()
    original = _batches(segment)
    for label, damaged, moved in _damage_cases(segment, [p for p, _ in original], seed):
        valid, ranges, _ = _read(damaged)
        found = {b.position: b.raw() for b in valid}
        starts = {new: raw for new, raw in ((moved.get(p, p), raw) for p, raw in original) if new is not None}
        assert set(dict(_intact(original, damaged, moved))) <= set(found), label  # every intact batch
        for position, raw in found.items():  # no false find: an original batch whose checksummed bytes are intact
            assert raw[CRC_V2_START:] == starts[position][CRC_V2_START:], label
        _assert_partition_of_file(valid, ranges, len(damaged))
        for damage in ranges:  # offsets lost, inferred from the intact neighbours
            before = [b for b in valid if b.end <= damage.first_byte]
            after = [b for b in valid if b.position >= damage.end_byte]
            assert damage.first_offset == (before[-1].last_offset + 1 if before else 0), label
            # nothing after it: a range that is one batch failing its checksum ends where that batch's
            # header says (AbstractRecordBatch.lastOffset: the offsets lie outside the checksummed bytes)
            alone = [raw for position, raw in original if position == damage.first_byte
                     and position + len(raw) == damage.end_byte] if damage.reason == "crc_mismatch" else []
            end = (struct.unpack_from(">q", alone[0])[0] + struct.unpack_from(">i", alone[0], 23)[0]) if alone else None
            assert damage.last_offset == (after[0].base_offset - 1 if after else end), label


def test_clean_corpus_segments_have_no_damaged_range():
    for family_case in case_dirs("kafka"):
        if family_case.name.startswith("c11"):
            continue
        for log in sorted(family_case.glob("data/*/*.log")):
            data = log.read_bytes()
            valid, ranges, bad = _read(data, int(log.name.split(".")[0]))
            assert not ranges and not bad, log
            assert [(b.position, b.raw()) for b in valid] == _batches(data), log


def _c11(name: str) -> tuple[bytes, dict]:
    case = corpus_path("kafka", name)
    return (case / "data" / "c01-plain-0" / "00000000000000000000.log").read_bytes(), \
        json.loads((case / "case.json").read_text())["corruption"]


def test_c11a_the_flipped_batch_is_the_one_damaged_range():
    data, _ = _c11("c11a-crc-byte-flip")
    original = corpus_path(*C01_SEGMENT).read_bytes()
    changed = next(i for i, (a, b) in enumerate(zip(data, original)) if a != b)
    hit = next(b for b in BatchScan(original) if b.position <= changed < b.end)
    valid, ranges, bad = _read(data)
    assert [(r.first_byte, r.end_byte, r.reason) for r in ranges] == [(hit.position, hit.end, "crc_mismatch")]
    assert (ranges[0].first_offset, ranges[0].last_offset) == (hit.base_offset, hit.last_offset)
    assert [b.position for b in bad] == [hit.position]
    assert len(valid) == len(_batches(original)) - 1


def test_c11b_and_c11c_end_in_one_range_after_the_last_whole_batch():
    for name, reason in (("c11b-truncated-last-batch", "truncated"), ("c11c-zero-tail-64k", "zero_filled")):
        data, corruption = _c11(name)
        whole = _batches(data)
        valid, ranges, _ = _read(data)
        end_of_whole = whole[-1][0] + len(whole[-1][1])
        assert [(r.first_byte, r.end_byte, r.reason) for r in ranges] == [(end_of_whole, len(data), reason)], name
        assert corruption["new_size"] == len(data)
        assert ranges[0].first_offset == valid[-1].last_offset + 1
        # a torn batch's whole header bounds the range (its declared last offset); zeros bound nothing
        assert ranges[0].last_offset == corruption.get("last_batch_last_offset"), name


# -- RocketMQ ---------------------------------------------------------------------------------------


def _messages(data: bytes, base: int) -> list[tuple[int, bytes]]:
    return [(m["fileOffset"], data[m["fileOffset"]:m["fileOffset"] + m["totalSize"]])
            for m in rmq.walk_commitlog(data, file_from_offset=base, digests=False) if isinstance(m, dict)]


def _read_commitlog(data: bytes, base: int):
    pieces = list(commitlog_pieces(data, file_from_offset=base, digests=False, decompress=False))
    valid = [p for p in pieces if isinstance(p, dict) and (p["bodyLength"] <= 0 or p["bodyCRC"] == p["bodyCRCComputed"])]
    return valid, [p for p in pieces if isinstance(p, DamagedRange)], pieces[-1]


def test_corrupt_body_crc_loses_exactly_the_flipped_message():
    case = corpus_path("rocketmq", "corrupt-body-crc")
    corruption = json.loads((case / "case.json").read_text())["corruption"]
    name = corruption["file"]
    data = (case / "store" / "commitlog" / name).read_bytes()
    clean = corpus_path("rocketmq", "clean-multi", "store", "commitlog", name).read_bytes()
    valid, ranges, _ = _read_commitlog(data, int(name))
    at, before = corruption["fileOffset_of_message"], corruption["message_before"]
    assert [(r.first_byte, r.length, r.reason) for r in ranges] == [(at, before["totalSize"], "crc_mismatch")]
    damage = ranges[0]
    assert (damage.topic, damage.queue_id, damage.first_offset, damage.last_offset) == (
        before["topic"], before["queueId"], before["queueOffset"], before["queueOffset"])
    assert [m["fileOffset"] for m in valid] == [p for p, _ in _messages(clean, int(name)) if p != at]


@pytest.mark.parametrize("name", ["corrupt-torn-tail", "corrupt-truncated-commitlog"])
def test_torn_and_truncated_commitlogs_keep_every_whole_message(name):
    case = corpus_path("rocketmq", name)
    corruption = json.loads((case / "case.json").read_text())["corruption"]
    data = (case / "store" / "commitlog" / corruption["file"]).read_bytes()
    valid, ranges, end = _read_commitlog(data, int(corruption["file"]))
    assert [(r.first_byte, r.end_byte) for r in ranges] == [(corruption["cutMessageFileOffset"], len(data))]
    assert valid[-1]["phyOffset"] == corruption["lastCompleteMessagePhyOffset"]
    assert isinstance(end, rmq.CommitLogEnd) and end.file_offset == len(data)


@pytest.mark.parametrize("seed", range(3))
def test_every_intact_message_survives_generated_damage(seed):
    commitlog = corpus_path("rocketmq", "clean-multi", "store", "commitlog", "00000000000000000000").read_bytes()
    original = _messages(commitlog, 0)
    data_end = original[-1][0] + len(original[-1][1])
    for label, damaged, moved in _damage_cases(commitlog[:data_end], [p for p, _ in original], seed):
        valid, ranges, _ = _read_commitlog(damaged, 0)
        starts = {moved.get(p, p) for p, _ in original} - {None}
        intact = {new for new, raw in ((moved.get(p, p), raw) for p, raw in original)
                  if new is not None and damaged[new:new + len(raw)] == raw}
        found = [m["fileOffset"] for m in valid]
        # every intact message; no false find (the body CRC does not cover the header: a message whose header
        # took the damage can still pass every check RocketMQ has, at its own position)
        assert intact <= set(found) <= starts, label
        covered = sorted([(m["fileOffset"], m["fileOffset"] + m["totalSize"]) for m in valid]
                         + [(r.first_byte, r.end_byte) for r in ranges])
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:])), label


# -- the commands ---------------------------------------------------------------------------------------


def test_dump_and_verify_read_past_a_damaged_batch(tmp_path):
    segment = corpus_path(*C01_SEGMENT).read_bytes()
    original = BatchScan(segment)
    batches = list(original)
    victim = batches[len(batches) // 2]
    damaged = bytearray(segment)
    damaged[victim.position + 8:victim.position + 12] = b"\xff" * 4  # a size no batch can have
    partition = tmp_path / "orders-0"
    partition.mkdir()
    log = partition / "00000000000000000000.log"
    log.write_bytes(bytes(damaged))

    items = list(dump_paths([str(log)], deep=False))
    shown = [i["position"] for i in items if i["kind"] == "batch"]
    assert shown == [b.position for b in batches if b is not victim]
    (damage,) = [i for i in items if i["kind"] == "damaged_range"]
    assert (damage["first_byte"], damage["last_byte"], damage["first_offset"], damage["last_offset"]) == (
        victim.position, victim.end - 1, victim.base_offset, victim.last_offset)

    (result,) = [f for f in verify([str(partition)], hash_inputs=False)["files"] if f["path"] == str(log)]
    after = [b for b in batches if b.position > victim.position]
    assert result["recovery"]["valid_bytes"] == victim.position  # the broker's prediction is unchanged
    assert result["recovery"]["salvage"] == {
        "batches": len(after), "records": sum(b.record_count for b in after),
        "first_offset": after[0].base_offset, "last_offset": after[-1].last_offset}
    assert [p.byte_offset for p in result["problems"] if p.kind.code == "damaged_range"] == [victim.position]
