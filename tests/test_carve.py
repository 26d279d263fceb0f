"""`segtool carve` on real batches and messages hidden in random bytes, with damage.

Images are built from corpus files embedded at odd byte offsets in seeded random
bytes, with bytes flipped, zeroed and cut.  What carving must find is derived from
the corpus files themselves with the normal readers (BatchScan, walk_commitlog): a
batch or message is expected, at its exact position, iff its bytes are intact in
the image; nothing else may be found.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jsonschema import Draft202012Validator

from segtool.engine.carving import KAFKA, ROCKETMQ
from segtool.rocketmq.message_shape import message_json
from segtool.kafka.log import CRC_V2_START, MAGIC_AT, BatchScan
from segtool.kafka.records import batch_records
from segtool.rocketmq.store_files import decode_message, walk_commitlog
from segtool.ops.carve import FINDS_JSONL, KAFKA_RECORDS, REPORT, ROCKETMQ_MESSAGES, carve
from segtool.ops.dump_kafka_log import record_item
from tests.conftest import REPO, corpus_path, segtool

SCHEMA = REPO / "docs" / "schemas" / "carve.schema.json"


@dataclass
class Unit:
    """A batch or message of a corpus file: where it is and which of its bytes its checksum covers."""

    format: str
    position: int
    size: int
    covered_from: int  # the bytes (from position) its checksum covers
    covered_to: int

    @property
    def end(self) -> int:
        return self.position + self.size


def kafka_units(data: bytes) -> list[Unit]:
    return [Unit(KAFKA, batch.position, batch.size, CRC_V2_START if batch.magic == 2 else MAGIC_AT, batch.size)
            for batch in BatchScan(data)]


def rocketmq_units(data: bytes) -> list[Unit]:
    # the body CRC covers the body only: damage goes there (docs/salvage.md, limits)
    return [Unit(ROCKETMQ, item["fileOffset"], item["totalSize"], item["bodyOffset"] - item["fileOffset"],
                 item["bodyOffset"] - item["fileOffset"] + item["bodyLength"])
            for item in walk_commitlog(data) if isinstance(item, dict)]


@dataclass
class Piece:
    path: Path
    data: bytes  # the bytes copied into the image (cut pieces: a prefix)
    units: list[Unit]
    image_offset: int = 0
    damaged: tuple[tuple[int, int], ...] = ()  # [start, end) ranges of ``data`` changed in the image

    def intact(self) -> list[Unit]:
        return [unit for unit in self.units if unit.end <= len(self.data)
                and not any(start < unit.end and unit.position < end for start, end in self.damaged)]


def _damage(data: bytes, units: list[Unit], cut_unit: int | None) -> tuple[bytes, tuple[tuple[int, int], ...]]:
    """Flip a byte of the 3rd unit, zero up to 64 bytes of the 5th (where their checksums look), and cut
    in the middle of unit ``cut_unit``."""
    out = bytearray(data)
    flip, zero = units[2], units[4]
    at = flip.position + (flip.covered_from + flip.covered_to) // 2
    out[at] ^= 0x5A
    length = min(64, (zero.covered_to - zero.covered_from) // 2)
    start = zero.position + (zero.covered_from + zero.covered_to - length) // 2
    out[start:start + length] = bytes(length)
    damaged = ((at, at + 1), (start, start + length))
    if cut_unit is not None:
        cut = units[cut_unit]
        out = out[:cut.position + cut.size // 2]
    return bytes(out), damaged


def _pieces() -> list[Piece]:
    kafka = corpus_path("kafka")
    logs = [kafka / "c01-multiseg-clean/data/c01-plain-0/00000000000000000000.log",
            kafka / "c03-codecs/data/c03-java-gzip-0/00000000000000000000.log",
            kafka / "c03-codecs/data/c03-java-snappy-0/00000000000000000000.log",
            kafka / "c03-codecs/data/c03-rdk-lz4-0/00000000000000000000.log",
            kafka / "c03-codecs/data/c03-rdk-zstd-0/00000000000000000000.log",
            kafka / "c04-transactions/data/c04-txn-0/00000000000000000000.log",
            kafka / "c08-legacy-formats/data/c08-legacy-v0-0/00000000000000000000.log",
            kafka / "c08-legacy-formats/data/c08-legacy-v1-0/00000000000000000000.log",
            kafka / "c08-legacy-formats/data/c08-legacy-mixed-0/00000000000000000000.log"]
    commitlogs = sorted(corpus_path("rocketmq", "clean-multi", "store", "commitlog").iterdir())[:2]
    pieces = []
    for path, read in [(log, kafka_units) for log in logs] + [(log, rocketmq_units) for log in commitlogs]:
        original = path.read_bytes()
        units = read(original)
        assert len(units) > 8, path
        data, damaged = _damage(original, units, cut_unit=len(units) - 1 if read is kafka_units else 200)
        pieces.append(Piece(path, data, units, damaged=damaged))
    return pieces


def build_image(path: Path, pieces: list[Piece], seed: int = 15) -> None:
    """The pieces at odd offsets in seeded random bytes, with a run of zeros (a preallocated tail) among them."""
    rng = random.Random(seed)
    image = bytearray(rng.randbytes(4099))
    for number, piece in enumerate(pieces):
        piece.image_offset = len(image)
        image += piece.data
        image += rng.randbytes(rng.randrange(1, 70_000) | 1)
        if number == 3:
            image += bytes(65_536)
    path.write_bytes(image)


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / FINDS_JSONL).read_text().splitlines()]


@pytest.fixture(scope="module")
def carved(tmp_path_factory):
    root = tmp_path_factory.mktemp("carve")
    (root / "evidence").mkdir()
    pieces = _pieces()
    build_image(root / "evidence" / "image.bin", pieces)
    report = carve([str(root / "evidence")], str(root / "out"), records=True)
    return pieces, report, root / "out"


def test_every_intact_batch_and_message_is_found_at_its_position_and_nothing_else(carved):
    pieces, report, out = carved
    expected = {(unit.format, piece.image_offset + unit.position, unit.size)
                for piece in pieces for unit in piece.intact()}
    for piece in pieces:  # flipped, zeroed, and the unit cut in half with everything after it
        lost = [unit for unit in piece.units if unit not in piece.intact()]
        assert piece.units[2] in lost and piece.units[4] in lost and lost[-1] == piece.units[-1], piece.path
    found = {(line["format"], line["position"], line["size"]) for line in _lines(out)
             if line["kind"] in ("batch", "message")}
    assert found == expected
    assert report["summary"]["finds"] == len(expected) == report["search"]["finds"]
    assert report["search"]["checksums"] >= len(expected)
    assert report["search"]["expected_false_finds"] == report["search"]["checksums"] / 2 ** 32


def test_parquet_and_json_lines_hold_the_decoded_originals(carved):
    pieces, report, out = carved
    records = {}
    for row in pq.read_table(out / KAFKA_RECORDS).to_pylist():
        records.setdefault(row["batch_position"], []).append(row)
    messages = {row["position"]: row for row in pq.read_table(out / ROCKETMQ_MESSAGES).to_pylist()}
    lines = _lines(out)
    record_lines = {}
    for line in lines:
        if line["kind"] == "record":
            record_lines.setdefault(line["batch_position"], []).append(line)
    message_lines = {line["position"]: line for line in lines if line["kind"] == "message"}
    image = str(out.parent / "evidence" / "image.bin")
    for piece in pieces:
        original = piece.path.read_bytes()
        if piece.units[0].format == KAFKA:
            batches = {batch.position: batch for batch in BatchScan(original)}
            for unit in piece.intact():
                batch, at = batches[unit.position], piece.image_offset + unit.position
                decoded = batch_records(batch)
                assert [(r["offset"], r["timestamp"], r["key"], r["value"], r["sequence"],
                         [(h["key"], h["value"]) for h in r["headers"]]) for r in records[at]] == [
                    (r.offset, r.timestamp, r.key, r.value, r.sequence if batch.magic == 2 else None,
                     list(r.headers)) for r in decoded]
                for line, record in zip(record_lines[at], decoded, strict=True):
                    expected = record_item(batch, record, image)
                    assert {k: v for k, v in line.items() if k not in ("batch_position", "format", "run_id")} == {
                        k: v for k, v in expected.items() if k != "batch_position"}
        else:
            for unit in piece.intact():
                message = decode_message(original, unit.position, keep_body=True,
                                         file_from_offset=int(piece.path.name))
                at = piece.image_offset + unit.position
                row = messages[at]
                assert (row["topic"], row["queue_id"], row["queue_offset"], row["phy_offset"], row["body"],
                        dict(row["properties"])) == (message["topic"], message["queueId"], message["queueOffset"],
                                                     message["phyOffset"], message["body"], message["properties"])
                shown = {k: v for k, v in message_lines[at].items()
                         if k not in ("file", "file_offset", "body_offset", "position", "size", "format", "run_id",
                                  "unplaced")}
                assert shown == {"kind": "message", **{k: v for k, v in message_json(message).items()
                                                       if k not in ("file", "file_offset", "body_offset")}}


def test_runs_follow_offsets_and_queues(carved):
    pieces, report, out = carved
    lines = [line for line in _lines(out) if line["kind"] in ("batch", "message")]
    assert all(line["run_id"] is not None for line in lines) and not report["unplaced"]
    for run in report["runs"]:
        members = [line for line in lines if line["run_id"] == run["run_id"]]
        assert run["count"] == len(members)
        if run["format"] == KAFKA:
            piece = next(p for p in pieces if p.image_offset <= members[0]["position"] < p.image_offset + len(p.data))
            assert all(piece.image_offset <= m["position"] < piece.image_offset + len(piece.data) for m in members)
            assert [m["last_offset"] for m in members] == sorted({m["last_offset"] for m in members})
            assert run["last_offset"] == members[-1]["last_offset"] and run["offsets_missing"] >= 0
        else:
            assert {(m["topic"], m["queue_id"]) for m in members} == {(run["topic"], run["queue_id"])}
            offsets = {m["queue_offset"] for m in members}
            assert (run["first_offset"], run["last_offset"]) == (min(offsets), max(offsets))
            assert run["offsets_missing"] == max(offsets) - min(offsets) + 1 - len(offsets)
    # c01's producer is not idempotent: its flipped and zeroed batches split it into exactly three runs
    c01 = pieces[0]
    assert len({line["run_id"] for line in lines
                if c01.image_offset <= line["position"] < c01.image_offset + len(c01.data)}) == 3


def test_crc_flip_case_loses_only_the_flipped_batch(tmp_path):
    data = corpus_path("kafka", "c11a-crc-byte-flip", "data")
    report = carve([str(data)], str(tmp_path / "out"), records=True)
    expected = set()
    for log in data.rglob("*.log"):
        expected |= {(str(log), batch.position) for batch in BatchScan(log.read_bytes()) if batch.crc_valid}
    found = {(line["file"], line["position"]) for line in _lines(tmp_path / "out") if line["kind"] == "batch"}
    assert found == expected and report["summary"]["finds"] == len(expected)


def test_a_second_copy_is_named_as_a_duplicate(tmp_path):
    segment = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0", "00000000000000000000.log")
    rng = random.Random(7)
    data = segment.read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "image").write_bytes(rng.randbytes(333) + data + rng.randbytes(1001) + data)
    report = carve([str(tmp_path / "in")], str(tmp_path / "out"))
    batches = len(kafka_units(data))
    assert report["summary"]["placed"] == batches and report["summary"]["unplaced"] == batches
    first = report["unplaced"][0]
    assert first["reason"] == "duplicate" and first["copy_of"]["position"] == 333
    assert first["position"] == 333 + len(data) + 1001


# -- the command line ----------------------------------------------------------------------------


def test_cli_exit_codes_json_and_refusals(tmp_path):
    partition = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-1")
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    run = segtool("carve", partition, "--out", tmp_path / "out", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert not list(validator.iter_errors(report))
    assert [(r["first_offset"], r["last_offset"], len(r["spans"])) for r in report["runs"]] == [(0, 2499, 5)]
    assert all(len(item["sha256"]) == 64 for item in report["inputs"])
    assert json.loads((tmp_path / "out" / REPORT).read_text())["summary"] == report["summary"]

    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    again = segtool("carve", partition, "--out", tmp_path / "out")
    assert again.returncode == 2 and "already exists" in again.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    forced = segtool("carve", partition, "--out", tmp_path / "out", "--force")
    assert forced.returncode == 0, forced.stderr
    assert any(".segtool-backup-" in p.name for p in (tmp_path / "out").iterdir())

    noise = tmp_path / "noise"
    noise.mkdir()
    (noise / "random.bin").write_bytes(random.Random(3).randbytes(300_000))
    nothing = segtool("carve", noise, "--out", tmp_path / "out2")
    assert nothing.returncode == 1, nothing.stderr
    inside = segtool("carve", noise, "--out", noise / "carved")
    assert inside.returncode == 2 and "inside the input" in inside.stderr
    assert sorted(p.name for p in noise.iterdir()) == ["random.bin"]
    missing = segtool("carve", tmp_path / "absent", "--out", tmp_path / "out3")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_cli_unplaced_finds_exit_1(tmp_path):
    segment = corpus_path("kafka", "c08-legacy-formats", "data", "c08-legacy-v1-0", "00000000000000000400.log")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "twice").write_bytes(segment.read_bytes() * 2)
    run = segtool("carve", tmp_path / "in", "--out", tmp_path / "out")
    assert run.returncode == 1, run.stderr
    assert "duplicate" in run.stdout


# -- a dense image: a broker's disk ----------------------------------------------------------------


def test_a_dense_image_yields_exactly_the_batches_and_messages_it_was_built_from(tmp_path):
    """Corpus segments and CommitLog messages end to end, twice (the copy's offsets moved): every batch
    and message is found once, at its position, with its CRC, whether the search follows the chain
    or picks it up again after a window boundary."""
    from segtool.engine.carving import find
    from segtool.kafka.log import BATCH_HEADER_V2_FAST
    from segtool.rocketmq.store_files import message_header
    from tests.dense_images import corpus_pieces, write_dense_image

    if not (corpus_path("kafka").is_dir() and corpus_path("rocketmq").is_dir()):
        pytest.skip("conformance corpus not present")
    (tmp_path / "in").mkdir()
    image = tmp_path / "in" / "disk.img"
    one_copy = sum(len(data) for _, data, _ in corpus_pieces(corpus_path()))
    built = write_dense_image(image, corpus_path(), one_copy + 1)  # two copies
    data = image.read_bytes()
    expected = list(built)
    # small windows put many window boundaries inside chains and between them
    for window in (64 * 1024, 4 * 1024 * 1024):
        assert [(f.format, f.position, f.size) for f in find(data, window=window)] == expected

    report = carve([str(tmp_path / "in")], str(tmp_path / "out"))
    summary = report["summary"]
    assert summary["kafka_batches"] == sum(fmt == KAFKA for fmt, _, _ in built)
    assert summary["rocketmq_messages"] == sum(fmt == ROCKETMQ for fmt, _, _ in built)
    assert summary["unplaced"] == 0
    batches = pq.read_table(tmp_path / "out" / "kafka_batches.parquet").to_pylist()
    assert [(row["position"], row["size"], row["crc"]) for row in batches] == [
        (position, size, BATCH_HEADER_V2_FAST.unpack_from(data, position)[4])
        for fmt, position, size in built if fmt == KAFKA]
    messages = pq.read_table(tmp_path / "out" / "rocketmq_messages.parquet").to_pylist()
    assert [(row["position"], row["size"], row["body_crc"], row["queue_offset"]) for row in messages] == [
        (position, size, message_header(data, position)["bodyCRC"], message_header(data, position)["queueOffset"])
        for fmt, position, size in built if fmt == ROCKETMQ]
    chains = _lines(tmp_path / "out")
    assert all(line["kind"] == "chain" for line in chains)
    assert sum(line["count"] for line in chains) == len(built)
    assert sum(line["size"] for line in chains) == sum(size for _, _, size in built)


def test_chain_rows_are_the_per_find_rows_and_the_unplaced_list_is_bounded(tmp_path, monkeypatch):
    """Default carving writes its Parquet rows a column at a time and places finds in stretches; the
    rows must be those --records writes a find at a time (but the bodies and decoded record counts it
    leaves out), second copies included, and the report lists only the first unplaced finds."""
    import segtool.ops.carve as carve_module

    segment = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0", "00000000000000000000.log").read_bytes()
    commitlog = sorted(corpus_path("rocketmq", "clean-multi", "store", "commitlog").iterdir())[0].read_bytes()
    messages = rocketmq_units(commitlog)
    commitlog = commitlog[:messages[-1].end]
    rng = random.Random(27)
    pieces = [rng.randbytes(333), segment, rng.randbytes(1001), commitlog, rng.randbytes(77), segment,
              rng.randbytes(5), commitlog, rng.randbytes(19)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "image").write_bytes(b"".join(pieces))
    second_segment_at = sum(map(len, pieces[:5]))
    listed = 5
    monkeypatch.setattr(carve_module, "UNPLACED_LISTED", listed)
    report = carve([str(tmp_path / "in")], str(tmp_path / "chains"))
    records_report = carve([str(tmp_path / "in")], str(tmp_path / "records"), records=True)

    copies = len(kafka_units(segment)) + len(messages)
    assert report["summary"]["unplaced"] == copies and report["summary"]["placed"] == copies
    assert report["summary"]["unplaced_by_reason"] == {"undecodable": 0, "duplicate": copies, "offset_conflict": 0}
    assert [item["position"] for item in report["unplaced"]] == [
        second_segment_at + unit.position for unit in kafka_units(segment)[:listed]]
    assert report["unplaced"] == records_report["unplaced"] and report["runs"] == records_report["runs"]
    for name, left_out in (("kafka_batches.parquet", "records_decoded"), ("rocketmq_messages.parquet", "body")):
        chain_rows = pq.read_table(tmp_path / "chains" / name).drop_columns([left_out])
        record_rows = pq.read_table(tmp_path / "records" / name).drop_columns([left_out])
        assert chain_rows.equals(record_rows), name
        reasons = chain_rows.column("unplaced").to_pylist()
        assert reasons.count("duplicate") == len(reasons) // 2 and reasons[len(reasons) // 2:] == ["duplicate"] * (
            len(reasons) // 2)
