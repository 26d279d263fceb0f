"""segtool.formats.compression against real producer payloads from the corpus.

The corpus holds v2 batches from the Java producer and librdkafka for every
codec (c03-codecs) and legacy v0/v1 wrapper messages written by Kafka's own
MemoryRecords.builder (c08-legacy-formats, where v0 lz4 carries the broken
header checksum).  A tiny walker below pulls the compressed payloads out; the
decompressed records are parsed and compared with Kafka's own deep dump.
"""

from __future__ import annotations

import json
import random
import re
import struct
import tracemalloc
import zlib
from pathlib import Path

import lz4.frame
import pytest
import zstandard

from segtool.errors import CorruptData, LimitExceeded
from segtool.formats import compression as C
from segtool.formats.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    compress,
    decompress,
    decompress_ex,
    xxh32,
)
from tests.conftest import corpus_path

CODECS = {"gzip": CODEC_GZIP, "snappy": CODEC_SNAPPY, "lz4": CODEC_LZ4, "zstd": CODEC_ZSTD}
ALL_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
C03_PARTITIONS = [f"c03-{p}-{c}-0" for p in ("java", "rdk") for c in CODECS]
C08_PARTITIONS = ["c08-legacy-v0-0", "c08-legacy-v1-0", "c08-legacy-mixed-0"]


# --------------------------------------------------------------------------
# a tiny local walker (the real parser lives elsewhere)
# --------------------------------------------------------------------------


def _varint(b: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = b[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _entries(path: Path):
    """Yield (position, magic, entry bytes) for each batch / legacy message of a .log."""
    b = path.read_bytes()
    pos = 0
    while pos + 17 <= len(b):
        _, size = struct.unpack_from(">qi", b, pos)
        assert pos + 12 + size <= len(b), f"{path}: entry at {pos} runs past the end"
        yield pos, b[pos + 16], b[pos : pos + 12 + size]
        pos += 12 + size
    assert pos == len(b)


def _v2_records(records: bytes, count: int, base_offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """Parse a decompressed v2 records section: it must hold exactly `count` records."""
    out = []
    pos = 0
    for _ in range(count):
        length, pos = _varint(records, pos)
        end = pos + length
        p = pos + 1  # attributes
        _, p = _varint(records, p)  # timestampDelta
        odelta, p = _varint(records, p)
        klen, p = _varint(records, p)
        key = None if klen < 0 else records[p : p + klen]
        p += max(klen, 0)
        vlen, p = _varint(records, p)
        value = None if vlen < 0 else records[p : p + vlen]
        p += max(vlen, 0)
        nheaders, p = _varint(records, p)
        for _ in range(nheaders):
            hk, p = _varint(records, p)
            p += hk
            hv, p = _varint(records, p)
            p += max(hv, 0)
        assert p == end, "record fields do not fill the record length"
        out.append((base_offset + odelta, key, value))
        pos = end
    assert pos == len(records), f"{len(records) - pos} bytes left after {count} records"
    return out


def _legacy_fields(msg: bytes) -> tuple[int, int, int, bytes | None, bytes | None]:
    """(offset, magic, attributes, key, value) of one legacy message; checks its CRC32."""
    offset, size, crc, magic, attr = struct.unpack_from(">qiIbb", msg, 0)
    assert len(msg) == 12 + size
    assert zlib.crc32(msg[16:]) == crc, f"legacy message at offset {offset}: CRC mismatch"
    p = 18 + (8 if magic == 1 else 0)
    (klen,) = struct.unpack_from(">i", msg, p)
    p += 4
    key = None if klen < 0 else msg[p : p + klen]
    p += max(klen, 0)
    (vlen,) = struct.unpack_from(">i", msg, p)
    p += 4
    value = None if vlen < 0 else msg[p : p + vlen]
    p += max(vlen, 0)
    assert p == len(msg)
    return offset, magic, attr, key, value


def _legacy_message_set(data: bytes) -> list[bytes]:
    """Split a decompressed inner message set; it must consist of whole messages."""
    msgs = []
    pos = 0
    while pos < len(data):
        assert len(data) - pos >= 12, "partial message header in inner message set"
        (size,) = struct.unpack_from(">i", data, pos + 8)
        assert pos + 12 + size <= len(data), "partial message in inner message set"
        msgs.append(data[pos : pos + 12 + size])
        pos += 12 + size
    return msgs


_GOLDEN = re.compile(r"^\| offset: (\d+) .*?keySize: (-?\d+) valueSize: (-?\d+)")


def _golden(case: Path, partition: str, log: Path) -> list[str]:
    name = f"{log.name}.deep-iteration.print-data-log.stdout"
    text = (case / "expected" / "dump" / "data" / partition / name).read_text(encoding="utf-8")
    return [line for line in text.split("\n") if line.startswith("| offset: ")]


def _check_against_golden(line: str, offset: int, key: bytes | None, value: bytes | None) -> None:
    m = _GOLDEN.match(line)
    assert m, line[:120]
    assert int(m.group(1)) == offset
    assert int(m.group(2)) == (-1 if key is None else len(key))
    assert int(m.group(3)) == (-1 if value is None else len(value))
    suffix = ""
    if key is not None:
        suffix += " key: " + key.decode("utf-8")
    if value is not None:
        suffix += " payload: " + value.decode("utf-8")
    assert line.endswith(suffix), (line[-80:], suffix[-80:])


def _case_json(case: Path) -> dict:
    return json.loads((case / "case.json").read_text(encoding="utf-8"))


def _payloads(*cases_partitions: tuple[str, str]):
    """(codec, payload, legacy_lz4, label) for every compressed payload in the given partitions."""
    for case_name, partition in cases_partitions:
        case = corpus_path("kafka", case_name)
        for log in sorted((case / "data" / partition).glob("*.log")):
            for pos, magic, entry in _entries(log):
                if magic == 2:
                    codec = struct.unpack_from(">h", entry, 21)[0] & 7
                    payload = entry[61:]
                else:
                    _, _, attr, _, payload = _legacy_fields(entry)
                    codec = attr & 7
                if codec:
                    yield codec, payload, magic == 0, f"{partition}/{log.name}@{pos}"


def _one_payload_per_codec() -> dict[str, tuple[int, bytes, bool]]:
    """One real payload per framing variant (Java and librdkafka, legacy v0 lz4)."""
    found: dict[str, tuple[int, bytes, bool]] = {}
    sources = [("c03-codecs", p) for p in C03_PARTITIONS] + [("c08-legacy-formats", "c08-legacy-v0-0")]
    for case_name, partition in sources:
        for codec, payload, legacy, _ in _payloads((case_name, partition)):
            label = partition if partition.startswith("c03") else f"v0-{C.CODEC_NAMES[codec]}"
            found.setdefault(label, (codec, payload, legacy))
    return found


# --------------------------------------------------------------------------
# the corpus: every payload decompresses to exactly what Kafka dumped
# --------------------------------------------------------------------------


@pytest.mark.parametrize("partition", C03_PARTITIONS)
def test_c03_v2_batches_decompress_to_kafkas_records(partition: str) -> None:
    case = corpus_path("kafka", "c03-codecs")
    producer, codec_name = partition.split("-")[1:3]
    codec = CODECS[codec_name]
    total = 0
    batches = 0
    for log in sorted((case / "data" / partition).glob("*.log")):
        golden = _golden(case, partition, log)
        got = []
        for pos, magic, batch in _entries(log):
            assert magic == 2
            base_offset = struct.unpack_from(">q", batch, 0)[0]
            assert struct.unpack_from(">h", batch, 21)[0] & 7 == codec
            (count,) = struct.unpack_from(">i", batch, 57)
            out, info = decompress_ex(codec, memoryview(batch)[61:], base_offset=pos + 61)
            got += _v2_records(out, count, base_offset)
            batches += 1
            # framing facts learnt from the corpus
            if codec == CODEC_SNAPPY:
                assert info.framing == ("snappy-xerial" if producer == "java" else "snappy-raw")
                if producer == "java":
                    assert info.xerial_version == (1, 1)
            elif codec == CODEC_LZ4:
                assert info.lz4_header_checksum == ["standard"]
                assert batch[61:68].hex() == "04224d18604082"  # FLG 0x60, BD 0x40 from both producers
            elif codec == CODEC_GZIP:
                assert batch[61 + 9] == (0xFF if producer == "java" else 0x03)  # gzip OS byte
            elif codec == CODEC_ZSTD:
                params = zstandard.get_frame_parameters(batch[61:])
                assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
                assert not params.has_checksum
            assert info.trailing_bytes == 0 and not info.notes
        assert len(got) == len(golden)
        for line, (offset, key, value) in zip(golden, got):
            _check_against_golden(line, offset, key, value)
        total += len(got)
    expected = _case_json(case)["partitions"][partition]
    assert total == expected["records"]
    assert batches == expected["batches"]


@pytest.mark.parametrize("partition", C08_PARTITIONS)
def test_c08_legacy_wrappers_decompress_to_whole_messages(partition: str) -> None:
    case = corpus_path("kafka", "c08-legacy-formats")
    total = 0
    seen_codecs = set()
    for log in sorted((case / "data" / partition).glob("*.log")):
        golden = _golden(case, partition, log)
        got = []
        for pos, magic, entry in _entries(log):
            if magic == 2:
                base_offset = struct.unpack_from(">q", entry, 0)[0]
                codec = struct.unpack_from(">h", entry, 21)[0] & 7
                (count,) = struct.unpack_from(">i", entry, 57)
                got += _v2_records(decompress(codec, entry[61:]), count, base_offset)
                continue
            offset, magic, attr, key, value = _legacy_fields(entry)
            codec = attr & 7
            if codec == CODEC_NONE:
                got.append((offset, key, value))
                continue
            seen_codecs.add((magic, codec))
            out, info = decompress_ex(codec, value, legacy_lz4=magic == 0)
            if codec == CODEC_LZ4:
                assert info.lz4_header_checksum == (["kafka-legacy"] if magic == 0 else ["standard"])
                assert value[:7].hex() == ("04224d1860401a" if magic == 0 else "04224d18604082")
            if codec == CODEC_SNAPPY:
                assert info.framing == "snappy-xerial"
            inner = [_legacy_fields(m) for m in _legacy_message_set(out)]
            assert inner, "empty wrapper"
            for i_off, i_magic, i_attr, i_key, i_value in inner:
                assert i_magic == magic and i_attr & 7 == 0
            if magic == 1:  # inner offsets are relative; the wrapper carries the last one
                last_rel = inner[-1][0]
                got += [(offset - last_rel + o, k, v) for o, _, _, k, v in inner]
            else:
                got += [(o, k, v) for o, _, _, k, v in inner]
        assert len(got) == len(golden)
        for line, (offset, key, value) in zip(golden, got):
            _check_against_golden(line, offset, key, value)
        total += len(got)
    assert total == _case_json(case)["partitions"][partition]["records"]
    if partition == "c08-legacy-v0-0":
        assert seen_codecs == {(0, CODEC_GZIP), (0, CODEC_SNAPPY), (0, CODEC_LZ4)}


def test_v0_lz4_broken_header_checksum() -> None:
    """v0 lz4 wrappers carry Kafka's old header checksum (xxh32 over magic+FLG+BD)."""
    payloads = [p for c, p, legacy, _ in _payloads(("c08-legacy-formats", "c08-legacy-v0-0")) if c == CODEC_LZ4]
    assert payloads
    for p in payloads:
        assert p[6] == (xxh32(p[:6]) >> 8) & 0xFF  # broken: includes the 4 magic bytes
        assert p[6] != (xxh32(p[4:6]) >> 8) & 0xFF
        # accepted with or without the legacy flag, and reported
        for flag in (True, False):
            out, info = decompress_ex(CODEC_LZ4, p, legacy_lz4=flag)
            assert info.lz4_header_checksum == ["kafka-legacy"]
            assert _legacy_message_set(out)
        assert any("non-legacy" in n for n in decompress_ex(CODEC_LZ4, p)[1].notes)
        # a header checksum matching neither: Kafka ignores it for magic 0, so do we
        bad = bytearray(p)
        bad[6] ^= 0xFF
        with pytest.raises(CorruptData, match="lz4: frame header checksum"):
            decompress(CODEC_LZ4, bytes(bad))
        out, info = decompress_ex(CODEC_LZ4, bytes(bad), legacy_lz4=True)
        assert info.lz4_header_checksum == ["mismatch"]
        assert out == decompress(CODEC_LZ4, p)
    # our builder writes the same headers as Kafka
    assert compress(CODEC_LZ4, b"x", legacy_lz4=True)[:7] == payloads[0][:7]
    assert compress(CODEC_LZ4, b"x")[:7].hex() == "04224d18604082"


# --------------------------------------------------------------------------
# caps: bombs stop while decompressing, without big allocations
# --------------------------------------------------------------------------

BOMB_VARIANTS = [
    ("gzip", CODEC_GZIP, {}),
    ("snappy-xerial", CODEC_SNAPPY, {}),
    ("snappy-raw", CODEC_SNAPPY, {"snappy_raw": True}),
    ("lz4", CODEC_LZ4, {}),
    ("lz4-legacy", CODEC_LZ4, {"legacy_lz4": True}),
    ("zstd", CODEC_ZSTD, {}),
    ("none", CODEC_NONE, {}),
]


@pytest.mark.parametrize("label,codec,kw", BOMB_VARIANTS, ids=[v[0] for v in BOMB_VARIANTS])
def test_bomb_hits_cap_without_big_memory(label: str, codec: int, kw: dict) -> None:
    bomb = compress(codec, bytes(10 * 1024 * 1024), **kw)
    cap = 1024 * 1024
    legacy = kw.get("legacy_lz4", False)
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceeded, match=f"{C.CODEC_NAMES[codec]}: .*cap of {cap} bytes") as exc:
            decompress(codec, bomb, cap=cap, legacy_lz4=legacy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(exc.value, CorruptData)
    assert peak < 4 * cap, f"peak traced allocation {peak} bytes"
    # the same payload is fine under a cap that fits it
    assert decompress(codec, bomb, cap=10 * 1024 * 1024, legacy_lz4=legacy) == bytes(10 * 1024 * 1024)


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_cap_boundary(codec: int) -> None:
    data = bytes(range(256)) * 400 + bytes(50000)
    blob = compress(codec, data)
    assert decompress(codec, blob, cap=len(data)) == data
    with pytest.raises(LimitExceeded):
        decompress(codec, blob, cap=len(data) - 1)
    with pytest.raises(LimitExceeded):
        decompress(codec, blob, cap=0)


def test_declared_sizes_are_refused_before_allocating() -> None:
    # raw snappy declaring 4 GiB - 1
    with pytest.raises(LimitExceeded, match=r"snappy: raw block's declared length \(4294967295 bytes\) would exceed the cap"):
        decompress(CODEC_SNAPPY, b"\xff\xff\xff\xff\x0f" + b"\x00" * 8)
    # xerial chunk whose raw block declares 2 GiB
    xerial = C.XERIAL_MAGIC + struct.pack(">iii", 1, 1, 6) + b"\x80\x80\x80\x80\x08\x00"
    with pytest.raises(LimitExceeded):
        decompress(CODEC_SNAPPY, xerial)
    # lz4 frame with a content size of 1 TiB
    desc = bytes([0x68, 0x40]) + struct.pack("<Q", 1 << 40)
    frame = struct.pack("<I", C.LZ4_MAGIC) + desc + bytes([C._lz4_hc(desc, False)]) + b"\x00" * 4
    with pytest.raises(LimitExceeded, match="lz4: frame content size"):
        decompress(CODEC_LZ4, frame)
    # zstd frame declaring 1 TiB (8-byte content size, single segment), one empty raw block
    frame = struct.pack("<I", C.ZSTD_MAGIC) + b"\xe0" + struct.pack("<Q", 1 << 40) + bytes([1, 0, 0])
    with pytest.raises(LimitExceeded, match="zstd: frame content size"):
        decompress(CODEC_ZSTD, frame)
    # a real 10 MB frame with its content size, under a 1 MB cap
    zeros = bytes(10 * 1024 * 1024)
    decl = zstandard.ZstdCompressor(write_content_size=True).compress(zeros)
    with pytest.raises(LimitExceeded, match="zstd: frame content size"):
        decompress(CODEC_ZSTD, decl, cap=1024 * 1024)
    # zstd frame without content size but a window far beyond the cap
    wd = bytes([(30 - 10) << 3])  # window 1 GiB
    frame = struct.pack("<I", C.ZSTD_MAGIC) + b"\x00" + wd + bytes([1, 0, 0])  # one empty last raw block
    with pytest.raises(LimitExceeded, match="window"):
        decompress(CODEC_ZSTD, frame, cap=1024 * 1024)


# --------------------------------------------------------------------------
# corruption and truncation of real payloads
# --------------------------------------------------------------------------


def test_truncated_real_payloads_raise_corrupt_data() -> None:
    samples = _one_payload_per_codec()
    assert set(samples) >= {f"c03-{p}-{c}-0" for p in ("java", "rdk") for c in CODECS} | {"v0-lz4"}
    for label, (codec, payload, legacy) in samples.items():
        for cut in (len(payload) - 1, len(payload) - 4, len(payload) // 2, 20, 5, 1, 0):
            with pytest.raises(CorruptData) as exc:
                decompress(codec, payload[:cut], legacy_lz4=legacy)
            assert not isinstance(exc.value, LimitExceeded)
            assert exc.value.message.startswith(C.CODEC_NAMES[codec] + ": "), exc.value.message


def test_structural_corruption_raises_corrupt_data() -> None:
    s = _one_payload_per_codec()
    cases = []
    gz = s["c03-java-gzip-0"][1]
    cases.append((CODEC_GZIP, b"\x1f\x8c" + gz[2:], "bad magic"))
    cases.append((CODEC_GZIP, gz[:-8] + bytes(b ^ 0x55 for b in gz[-8:-4]) + gz[-4:], "invalid deflate data"))
    cases.append((CODEC_GZIP, gz[:40] + bytes([gz[40] ^ 0x10]) + gz[41:], "gzip"))
    sx = s["c03-java-snappy-0"][1]
    cases.append((CODEC_SNAPPY, sx[:16] + struct.pack(">i", -5) + sx[20:], "negative xerial chunk length"))
    cases.append((CODEC_SNAPPY, sx[:16] + struct.pack(">i", len(sx)) + sx[20:], "truncated xerial chunk"))
    sr = s["c03-rdk-snappy-0"][1]
    declared = C._snappy_len(memoryview(sr), 0, len(sr), C._Ctx(2, None, 1 << 30))
    bigger = declared + 1
    varint = bytearray()
    while True:
        varint.append((bigger & 0x7F) | (0x80 if bigger > 0x7F else 0))
        bigger >>= 7
        if not bigger:
            break
    n = 1
    while sr[n - 1] & 0x80:
        n += 1
    cases.append((CODEC_SNAPPY, bytes(varint) + sr[n:], "snappy: "))
    lz = s["c03-rdk-lz4-0"][1]
    cases.append((CODEC_LZ4, b"\x05" + lz[1:], "bad frame magic"))
    cases.append((CODEC_LZ4, lz[:7] + struct.pack("<I", 0x20000) + lz[11:], "exceeds the frame's maximum"))
    cases.append((CODEC_LZ4, lz[:4] + b"\xa0" + lz[5:], "unsupported frame version"))
    cases.append((CODEC_LZ4, lz[:5] + b"\x30" + lz[6:], "block maximum size id"))
    # a compressed block whose first token promises more literals than exist
    cases.append((CODEC_LZ4, lz[:11] + b"\xff\xff\xff" + lz[14:], "lz4: "))
    zs = s["c03-java-zstd-0"][1]
    cases.append((CODEC_ZSTD, b"\x29" + zs[1:], "bad frame magic"))
    cases.append((CODEC_ZSTD, zs + b"garbage!", "trailing garbage"))
    cases.append((CODEC_ZSTD, zs[:4] + bytes([zs[4] | 0x08]) + zs[5:], "reserved bit"))
    for codec, blob, match in cases:
        with pytest.raises(CorruptData, match=re.escape(match)) as exc:
            decompress(codec, blob)
        assert not isinstance(exc.value, LimitExceeded), exc.value.message


def test_random_damage_never_leaks_library_exceptions() -> None:
    rng = random.Random(1234)
    for label, (codec, payload, legacy) in _one_payload_per_codec().items():
        for _ in range(150):
            blob = bytearray(payload)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(blob))
                blob[i] = rng.randrange(256)
            if rng.random() < 0.3:
                blob = blob[: rng.randrange(len(blob) + 1)]
            try:
                out = decompress(codec, bytes(blob), cap=4 * 1024 * 1024, legacy_lz4=legacy)
            except CorruptData as e:
                assert e.message.startswith(C.CODEC_NAMES[codec] + ": ")
            else:
                assert isinstance(out, bytes)
    for codec in CODECS.values():
        for n in (0, 1, 3, 7, 16, 100):
            try:
                decompress(codec, rng.randbytes(n), cap=1 << 20)
            except CorruptData:
                pass


def test_checksums_are_verified() -> None:
    data = b"".join(b"record %d " % i for i in range(50000))
    gz = bytearray(compress(CODEC_GZIP, data))
    gz[-6] ^= 1  # CRC32 in the trailer
    with pytest.raises(CorruptData, match="gzip: "):
        decompress(CODEC_GZIP, bytes(gz))
    zs = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    zs[-1] ^= 1  # XXH64 content checksum
    with pytest.raises(CorruptData, match="zstd: invalid frame"):
        decompress(CODEC_ZSTD, bytes(zs))
    lzf = bytearray(lz4.frame.compress(data, content_checksum=True, block_checksum=True))
    bad = bytearray(lzf)
    bad[-1] ^= 1
    with pytest.raises(CorruptData, match="content checksum mismatch"):
        decompress(CODEC_LZ4, bytes(bad))
    bad = bytearray(lzf)
    bad[30] ^= 1  # inside the first block
    with pytest.raises(CorruptData, match="lz4: "):
        decompress(CODEC_LZ4, bytes(bad))


# --------------------------------------------------------------------------
# round trips and framings other producers could write
# --------------------------------------------------------------------------

ROUND_TRIP_DATA = {
    "empty": b"",
    "one": b"x",
    "text": b"".join(b'{"id":%d,"note":"alpha bravo charlie"}' % i for i in range(20000)),
    "random": random.Random(7).randbytes(300_000),
}


@pytest.mark.parametrize("name", list(ROUND_TRIP_DATA))
@pytest.mark.parametrize(
    "codec,kw",
    [
        (CODEC_NONE, {}),
        (CODEC_GZIP, {}),
        (CODEC_SNAPPY, {}),
        (CODEC_SNAPPY, {"snappy_raw": True}),
        (CODEC_LZ4, {}),
        (CODEC_LZ4, {"legacy_lz4": True}),
        (CODEC_ZSTD, {}),
    ],
    ids=["none", "gzip", "snappy-xerial", "snappy-raw", "lz4", "lz4-legacy", "zstd"],
)
def test_round_trip(codec: int, kw: dict, name: str) -> None:
    data = ROUND_TRIP_DATA[name]
    blob = compress(codec, data, **kw)
    legacy = kw.get("legacy_lz4", False)
    out, info = decompress_ex(codec, blob, legacy_lz4=legacy)
    assert out == data
    assert decompress(codec, memoryview(blob), legacy_lz4=legacy) == data
    assert decompress(codec, bytearray(blob), legacy_lz4=legacy) == data
    if codec == CODEC_LZ4:
        assert info.lz4_header_checksum == ["kafka-legacy" if legacy else "standard"]
        # the standard frame is also readable by liblz4 itself
        if not legacy:
            assert lz4.frame.decompress(blob) == data
    if codec == CODEC_SNAPPY:
        assert info.framing == ("snappy-raw" if kw else "snappy-xerial")
    if codec == CODEC_GZIP:
        assert zlib.decompress(blob, 31) == data
    if codec == CODEC_ZSTD:
        assert zstandard.ZstdDecompressor().decompressobj().decompress(blob) == data


def test_multiple_members_frames_and_chunks() -> None:
    a, b = b"first part " * 1000, b"second part " * 3000
    out, info = decompress_ex(CODEC_GZIP, compress(CODEC_GZIP, a) + compress(CODEC_GZIP, b))
    assert out == a + b and info.units == 2
    out, info = decompress_ex(CODEC_GZIP, compress(CODEC_GZIP, a) + b"\x00" * 7)
    assert out == a and info.trailing_bytes == 7 and info.notes  # ignored, as Java does
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    out, info = decompress_ex(CODEC_ZSTD, compress(CODEC_ZSTD, a) + skippable + compress(CODEC_ZSTD, b))
    assert out == a + b and info.units == 2
    out, info = decompress_ex(CODEC_LZ4, compress(CODEC_LZ4, a) + compress(CODEC_LZ4, b))
    assert out == a + b
    out, info = decompress_ex(CODEC_SNAPPY, compress(CODEC_SNAPPY, a) + compress(CODEC_SNAPPY, b))
    assert out == a + b and any("concatenated" in n for n in info.notes)
    # xerial with only the header is an empty stream for snappy-java
    assert decompress(CODEC_SNAPPY, C.XERIAL_MAGIC + struct.pack(">ii", 1, 1)) == b""
    # big enough for many xerial chunks and lz4 blocks
    big = ROUND_TRIP_DATA["text"] * 3
    out, info = decompress_ex(CODEC_SNAPPY, compress(CODEC_SNAPPY, big))
    assert out == big and info.units == -(-len(big) // C.XERIAL_BLOCK)
    out, info = decompress_ex(CODEC_LZ4, compress(CODEC_LZ4, big))
    assert out == big and info.units == -(-len(big) // 65536)


@pytest.mark.parametrize("linked", [False, True])
@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
def test_lz4_frames_from_liblz4(linked: bool, block_size: int) -> None:
    """Standard LZ4F frames with every optional field (content size, checksums, linked blocks)."""
    data = ROUND_TRIP_DATA["text"] * 4 + ROUND_TRIP_DATA["random"]
    blob = lz4.frame.compress(
        data,
        block_size=block_size,
        block_linked=linked,
        content_checksum=True,
        block_checksum=True,
        store_size=True,
    )
    out, info = decompress_ex(CODEC_LZ4, blob)
    assert out == data
    assert info.content_size == len(data)
    assert info.lz4_header_checksum == ["standard"]
    # liblz4 marks a frame that fits in one block as independent even when asked for linked blocks
    assert any("dependent" in n for n in info.notes) == (linked and block_size == lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(LimitExceeded):
        decompress(CODEC_LZ4, blob, cap=len(data) - 1)


def test_zstd_with_content_size_and_checksum() -> None:
    data = ROUND_TRIP_DATA["text"]
    for kw in ({"write_content_size": True, "write_checksum": True}, {"level": 19}, {"level": -5}):
        blob = zstandard.ZstdCompressor(**kw).compress(data)
        out, info = decompress_ex(CODEC_ZSTD, blob)
        assert out == data and info.units == 1
    chunks = zstandard.ZstdCompressor().compressobj()
    streamed = chunks.compress(data) + chunks.flush()
    assert decompress(CODEC_ZSTD, streamed) == data


# --------------------------------------------------------------------------
# API details
# --------------------------------------------------------------------------


def test_xxh32_matches_reference_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    rng = random.Random(3)
    for n in (0, 1, 15, 16, 17, 255, 256, 257, 1000, 5000):
        blob = rng.randbytes(n)
        assert xxh32(blob) == C._xxh32_py(blob)


def test_errors_and_offsets() -> None:
    with pytest.raises(CorruptData, match="unknown compression codec id 5"):
        decompress(5, b"abc")
    with pytest.raises(CorruptData) as exc:
        decompress(CODEC_LZ4, b"\x04\x22\x4d\x18\x60", base_offset=1000)
    assert exc.value.offset == 1004
    with pytest.raises(CorruptData) as exc:
        decompress(CODEC_LZ4, b"\x04\x22\x4d\x18\x60")
    assert exc.value.offset is None and "(compressed byte 4)" in exc.value.message
    exc.value.at("x.log", 77)
    assert str(exc.value).startswith("x.log: byte 77: lz4: ")
    for codec in CODECS.values():
        with pytest.raises(CorruptData, match="empty input"):
            decompress(codec, b"")
    assert decompress(CODEC_NONE, b"abc") == b"abc"
    with pytest.raises(ValueError):
        compress(9, b"")


# --------------------------------------------------------------------------
# the framing declarations and the readers compiled from them agree
# --------------------------------------------------------------------------


def _check_xerial(payload: bytes, info) -> None:
    header = C.XERIAL_HEADER.parse(payload)
    assert C.XERIAL_HEADER_FAST.unpack_from(payload) == (header.magic, header.version, header.compatible_version)
    assert info.xerial_version == (header.version, header.compatible_version)
    pos, chunks = C.XERIAL_HEADER_FAST.size, 0
    while pos < len(payload):
        (length,) = C.XERIAL_CHUNK_HEADER_FAST.unpack_from(payload, pos)
        assert length == C.XERIAL_CHUNK_HEADER.parse(payload[pos:]).length
        pos += C.XERIAL_CHUNK_HEADER_FAST.size + length
        chunks += 1
    assert pos == len(payload) and chunks == info.units


def _check_lz4(payload: bytes, info) -> int:
    """Walk one frame with the compiled readers, checking each field against construct; its end."""
    header = C.LZ4_FRAME_HEADER.parse(payload)
    assert C.FRAME_MAGIC_FAST.unpack_from(payload) == (header.magic,) == (C.LZ4_MAGIC,)
    size = len(C.LZ4_FRAME_HEADER.build(header))
    assert C.LZ4_FRAME_HEADER.build(header) == payload[:size]
    if header.content_size is not None:
        assert C.LZ4_CONTENT_SIZE_FAST.unpack_from(payload, 6) == (header.content_size,)
        assert info.content_size == header.content_size
    pos, blocks = size, 0
    while True:
        (word,) = C.LZ4_BLOCK_HEADER_FAST.unpack_from(payload, pos)
        assert word == C.LZ4_BLOCK_HEADER.parse(payload[pos:]).block_size
        pos += C.LZ4_BLOCK_HEADER_FAST.size
        if word == 0:
            break
        pos += word & ~C.LZ4_INCOMPRESSIBLE
        if header.flg & 0x10:
            assert C.LZ4_CHECKSUM_FAST.unpack_from(payload, pos) == (C.LZ4_CHECKSUM.parse(payload[pos:]).checksum,)
            pos += C.LZ4_CHECKSUM_FAST.size
        blocks += 1
    if header.flg & 0x04:
        (checksum,) = C.LZ4_CHECKSUM_FAST.unpack_from(payload, pos)
        assert checksum == C.LZ4_CHECKSUM.parse(payload[pos:]).checksum
        pos += C.LZ4_CHECKSUM_FAST.size
    assert blocks == info.units
    return pos


def _check_zstd(payload: bytes) -> None:
    header = C.ZSTD_FRAME_HEADER.parse(payload)
    assert C.FRAME_MAGIC_FAST.unpack_from(payload) == (header.magic,) == (C.ZSTD_MAGIC,)
    end, content_size, window = C._zstd_frame_end(memoryview(payload), 0, C._Ctx(CODEC_ZSTD, None, C.DEFAULT_CAP))
    params = zstandard.get_frame_parameters(payload)
    assert content_size == header.content_size
    assert (params.content_size == zstandard.CONTENTSIZE_UNKNOWN) == (header.content_size is None)
    assert window == params.window_size
    assert (header.dict_id or 0) == params.dict_id
    assert bool(header.descriptor & 0x04) == params.has_checksum
    assert C.ZSTD_FRAME_HEADER.build(header) == payload[:zstandard.frame_header_size(payload)]


def test_framing_declarations_match_the_compiled_readers() -> None:
    """On every compressed corpus payload, construct's parse of each declaration equals what the
    readers derived from it (the compiled table) read."""
    sources = [("c03-codecs", p) for p in C03_PARTITIONS] + [("c08-legacy-formats", p) for p in C08_PARTITIONS]
    seen = set()
    for codec, payload, legacy, label in _payloads(*sources):
        info = decompress_ex(codec, payload, legacy_lz4=legacy)[1]
        if len(payload) >= 16:
            stripe = C.XXH32_STRIPE.parse(payload)
            assert C.XXH32_STRIPE_FAST.unpack_from(payload) == tuple(stripe[f"lane{i}"] for i in range(1, 5))
        if info.framing == "snappy-xerial":
            _check_xerial(payload, info)
        elif codec == CODEC_LZ4:
            assert _check_lz4(payload, info) == len(payload) - info.trailing_bytes, label
        elif codec == CODEC_ZSTD:
            _check_zstd(payload)
        else:
            continue
        seen.add(info.framing)
    assert seen == {"snappy-xerial", "lz4-frame", "zstd"}


def test_framing_declarations_optional_fields() -> None:
    """The fields Kafka's producers leave out: lz4 content size, dictionary id and checksums,
    zstd content sizes of every width, skippable frames."""
    data = ROUND_TRIP_DATA["text"]
    blob = lz4.frame.compress(data, content_checksum=True, block_checksum=True, store_size=True)
    info = decompress_ex(CODEC_LZ4, blob)[1]
    assert _check_lz4(blob, info) == len(blob) and C.LZ4_FRAME_HEADER.parse(blob).content_size == len(data)
    header = dict(magic=C.LZ4_MAGIC, flg=0x61, bd=0x40, content_size=None, dict_id=1234, header_checksum=0)
    descriptor = C.LZ4_FRAME_HEADER.build(header)[4:-1]
    header["header_checksum"] = C._lz4_hc(descriptor, False)
    with_dict = C.LZ4_FRAME_HEADER.build(header)
    assert C.LZ4_DICT_ID_FAST.unpack_from(descriptor, len(descriptor) - 4) == (1234,)
    with pytest.raises(CorruptData, match="dictionary id 1234"):
        decompress(CODEC_LZ4, with_dict + bytes(4))
    for n in (10, 300, 70_000):  # 1-byte (single segment), 2-byte (+256) and 4-byte content sizes
        _check_zstd(zstandard.ZstdCompressor(write_content_size=True, write_checksum=True).compress(data[:n]))
    skip = C.SKIPPABLE_FRAME_HEADER.build(dict(magic=0x184D2A5F, frame_size=3))
    assert skip == C.SKIPPABLE_FRAME_HEADER_FAST.pack(0x184D2A5F, 3)
    assert decompress_ex(CODEC_ZSTD, skip + b"abc" + compress(CODEC_ZSTD, data))[0] == data
    # what compress writes is what the declarations build
    assert compress(CODEC_SNAPPY, b"x")[:16] == C.XERIAL_HEADER.build(dict(version=1, compatible_version=1))
    assert compress(CODEC_LZ4, b"x")[:7] == C.LZ4_FRAME_HEADER.build(dict(
        magic=C.LZ4_MAGIC, flg=0x60, bd=0x40, content_size=None, dict_id=None, header_checksum=0x82))
