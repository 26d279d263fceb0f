"""Seeds and mutations for the fuzzing suite.

Seeds are real files from sample_data/ (and the corpus when present), each in
its real surroundings (a partition directory, a RocketMQ store), so every
command has what it needs.  Mutations aim at the places parsers trust: length
fields, varints, boundaries between batches/messages/entries, compressed
payloads, index order and hash chains.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from pathlib import Path

from segtool.source import open_buffer
from segtool.errors import SegtoolError
from segtool.engine.detect import detect
from segtool.kafka.log import BATCH_V2_OVERHEAD, BatchScan

REPO = Path(__file__).resolve().parents[2]

# (scenario directory relative to a root, family)
KAFKA_SCENARIOS = [
    "kafka/c04-transactions/data/c04-txn-0",
    "kafka/c08-legacy-formats/data/c08-legacy-mixed-0",
    "kafka/c08-legacy-formats/data/c08-legacy-v0-0",
    "kafka/c10-consumer-offsets/data/__consumer_offsets-0",
    "kafka/c07-compacted/data/c07-compact-0",
    "kafka/c11a-crc-byte-flip/data/c01-plain-0",
    "kafka/c03-codecs/data/c03-java-zstd-0",
    "kafka/c03-codecs/data/c03-rdk-snappy-0",
    "kafka/c03-codecs/data/c03-java-lz4-0",
    "kafka/c03-codecs/data/c03-rdk-gzip-0",
]
ROCKETMQ_SCENARIOS = ["rocketmq/kill9-abort/store"]


@dataclass(frozen=True)
class Seed:
    scenario: Path  # the directory copied as a whole
    relative: str  # the file to mutate, relative to the scenario
    family: str  # "kafka" or "rocketmq"
    kind: str  # detect() kind


def scenario_dirs() -> list[tuple[Path, str]]:
    roots = [REPO.parent / "shared" / "corpus", REPO / "sample_data"]
    found, seen = [], set()
    for family, names in (("kafka", KAFKA_SCENARIOS), ("rocketmq", ROCKETMQ_SCENARIOS)):
        for name in names:
            for root in roots:
                path = root / name
                if path.is_dir() and name not in seen:
                    seen.add(name)
                    found.append((path, family))
                    break
    return found


def seeds() -> list[Seed]:
    out = []
    for scenario, family in scenario_dirs():
        for path in sorted(p for p in scenario.rglob("*") if p.is_file()):
            kind = detect(str(path)).kind
            if kind == "unknown":
                continue
            if family == "rocketmq" and kind == "rocketmq-commitlog" and path.name != "00000000000000000000":
                continue  # the fuzz store keeps one CommitLog file (see harness.Worker.scenario_copy)
            out.append(Seed(scenario, str(path.relative_to(scenario)), family, kind))
    return out


# -- boundaries where parsers switch from one structure to the next ------------


def boundaries(kind: str, data: bytes) -> list[int]:
    if kind == "kafka-log":
        try:
            return [b.position for b in BatchScan(data)] + [len(data)]
        except SegtoolError:
            return [0, len(data)]
    if kind in ("kafka-offset-index", "rocketmq-consumequeue"):
        step = 8 if kind == "kafka-offset-index" else 20
        return list(range(0, len(data) + 1, step))[:200]
    if kind == "kafka-time-index":
        return list(range(0, len(data) + 1, 12))[:200]
    if kind == "kafka-txn-index":
        return list(range(0, len(data) + 1, 34))
    if kind == "rocketmq-commitlog":
        out, pos = [], 0
        while pos + 8 <= len(data) and len(out) < 400:
            size = struct.unpack_from(">i", data, pos)[0]
            out.append(pos)
            if size <= 0:
                break
            pos += size
        return out
    if kind == "rocketmq-indexfile":
        return [0, 40] + list(range(40 + 4000, len(data), 20))[:200]
    return [0, len(data)]


# -- mutations -------------------------------------------------------------


def _bit_flips(rng, data, kind):
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def _random_bytes(rng, data, kind):
    out = bytearray(data)
    if out:
        i = rng.randrange(len(out))
        n = rng.randint(1, 16)
        out[i:i + n] = rng.randbytes(min(n, len(out) - i))
    return bytes(out)


def _truncate_random(rng, data, kind):
    return data[: rng.randrange(len(data) + 1)] if data else data


def _truncate_boundary(rng, data, kind):
    cut = rng.choice(boundaries(kind, data)) + rng.choice([-13, -7, -1, 0, 1, 4, 9, 17, 61, 62])
    return data[: max(0, min(cut, len(data)))]


def _zero_tail(rng, data, kind):
    if rng.random() < 0.5:
        return data + bytes(rng.choice([1, 7, 12, 17, 64, 4096, 65536]))
    cut = rng.randrange(len(data) + 1) if data else 0
    return data[:cut] + bytes(len(data) - cut)


def _random_tail(rng, data, kind):
    return data + rng.randbytes(rng.choice([1, 5, 13, 61, 200, 5000]))


def _lying_length(rng, data, kind):
    """Overwrite a length/size/count field at a structure boundary with a lie."""
    spots = boundaries(kind, data)
    if not spots or not data:
        return data
    pos = rng.choice(spots)
    lies = [-1, -2**31, 2**31 - 1, 0, 13, 14, 60, len(data), len(data) * 4, 2**30]
    offsets = {
        "kafka-log": [8, 57, 12, 0],  # batch length, record count, epoch..., base offset
        "rocketmq-commitlog": [0, 84, 4],  # total size, body length (v1 ipv4), magic
        "rocketmq-consumequeue": [8, 0],
        "rocketmq-indexfile": [16, 0, 4],
        "kafka-producer-snapshot": [6, 2],
    }.get(kind, [0, 4])
    at = pos + rng.choice(offsets)
    if at + 4 > len(data):
        return data
    out = bytearray(data)
    struct.pack_into(">i", out, at, rng.choice(lies))
    return bytes(out)


def _endless_varint(rng, data, kind):
    spots = boundaries(kind, data)
    if kind != "kafka-log" or len(spots) < 2:
        return _bit_flips(rng, data, kind)
    pos = rng.choice(spots[:-1]) + BATCH_V2_OVERHEAD + rng.choice([0, 1, 2, 3, 5])
    out = bytearray(data)
    out[pos:pos + 24] = b"\xff" * min(24, max(0, len(out) - pos))
    return bytes(out)


def _swap_entries(rng, data, kind):
    size = {"kafka-offset-index": 8, "kafka-time-index": 12, "rocketmq-consumequeue": 20,
            "kafka-txn-index": 34}.get(kind)
    if size is None or len(data) < 2 * size:
        return _random_bytes(rng, data, kind)
    n = len(data) // size
    i = rng.randrange(n - 1)
    j = rng.randrange(n)
    out = bytearray(data)
    a, b = out[i * size:(i + 1) * size], out[j * size:(j + 1) * size]
    out[i * size:(i + 1) * size], out[j * size:(j + 1) * size] = b, a
    return bytes(out)


def _hash_chain(rng, data, kind):
    """IndexFile: point prevIndex at itself, forward, or far away; slots past the end."""
    if kind != "rocketmq-indexfile" or len(data) < 40:
        return _lying_length(rng, data, kind)
    out = bytearray(data)
    count = struct.unpack_from(">i", out, 36)[0]
    slots = 1000  # the corpus geometry; a wrong guess still mutates something
    entries_at = 40 + slots * 4
    if count < 2 or entries_at + count * 20 > len(out):
        return _random_bytes(rng, data, kind)
    i = rng.randrange(1, count)
    target = rng.choice([i, i + 1, count + 5, -3, 2**31 - 1, rng.randrange(count)])
    struct.pack_into(">i", out, entries_at + i * 20 + 16, target)
    if rng.random() < 0.3:
        struct.pack_into(">i", out, 40 + rng.randrange(slots) * 4, rng.choice([count + 9, -1, 2**31 - 1]))
    return bytes(out)


def _tiny(rng, data, kind):
    return data[: rng.choice([0, 1, 7])]


_BOMBS: dict[int, bytes] = {}


def _bomb(rng, data, kind):
    """Append a batch whose compressed payload expands far past the cap."""
    if kind != "kafka-log":
        return _lying_length(rng, data, kind)
    codec = rng.choice([1, 4])
    if codec not in _BOMBS:
        _BOMBS[codec] = _build_bomb(codec)
    bomb = bytearray(_BOMBS[codec])
    try:
        last = [b for b in BatchScan(data)][-1].last_offset + 1
    except (SegtoolError, IndexError):
        last = 0
    struct.pack_into(">q", bomb, 0, last)
    return data + bytes(bomb)


BOMB_EXPANDS_TO = 24 * 1024 * 1024  # past the 8 MiB cap the harness gives dump; small enough to stay quick


def _build_bomb(codec: int) -> bytes:
    from segtool.formats.compression import compress
    from tests.kafka_build import build_batch_v2, build_records
    from segtool.kafka.log import Record, RecordBatch

    # one record whose value is megabytes of zeros: a tiny payload with a large expansion
    records = build_records([Record(0, 0, b"k", bytes(BOMB_EXPANDS_TO), (), timestamp_delta=0, offset_delta=0)])
    batch = RecordBatch(position=0, magic=2, base_offset=0, last_offset=0, size=0, crc=0, attributes=codec,
                        max_timestamp=1_700_000_000_000, record_count=1, partition_leader_epoch=0,
                        last_offset_delta=0, base_timestamp=1_700_000_000_000)
    return build_batch_v2(batch, compress(codec, records))


MUTATIONS = [
    (_bit_flips, 12), (_random_bytes, 8), (_truncate_random, 8), (_truncate_boundary, 10), (_zero_tail, 8),
    (_random_tail, 6), (_lying_length, 14), (_endless_varint, 6), (_swap_entries, 6), (_hash_chain, 6),
    (_tiny, 3), (_bomb, 1),
]
STRUCTURAL = ["directory", "dangling_symlink", "symlink_loop", "fifo"]


def mutate(rng: random.Random, data: bytes, kind: str) -> tuple[str, bytes]:
    funcs, weights = zip(*MUTATIONS)
    func = rng.choices(funcs, weights)[0]
    return func.__name__.lstrip("_"), func(rng, data, kind)


SHRINK_TO = {"kafka-log": 24 * 1024, "rocketmq-commitlog": 48 * 1024}


def shrink(data: bytes, kind: str) -> bytes:
    """The first whole batches/messages of a seed, about SHRINK_TO bytes: small inputs, many of them."""
    limit = SHRINK_TO[kind]
    cut = 0
    for position in boundaries(kind, data):
        if position > limit and cut:
            break
        cut = position
    return data[:cut] if cut else data


def read_seed(path: Path) -> bytes:
    buf = open_buffer(path)
    return bytes(buf[:])
