"""Bounded decompression (and compression) for Kafka's record codecs.

Kafka stores a codec id in the low three bits of a batch's (or legacy
wrapper message's) attributes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
``decompress`` turns a compressed records section back into bytes while
enforcing an output cap *during* decompression, so a decompression bomb costs
at most about ``cap`` bytes of memory, and turns every failure into
``CorruptData`` / ``LimitExceeded`` (no library exception escapes).

What the producers actually write (seen in the Kafka 3.9 conformance corpus):

* gzip   -- one RFC 1952 member.  Java's GZIPOutputStream header has OS=0xff,
  librdkafka's (zlib) OS=0x03.  Java's reader accepts several members and
  ignores trailing garbage; so do we (the garbage is reported in ``info``).
* snappy -- Java (snappy-java) writes the xerial framing: ``\\x82SNAPPY\\x00``,
  int32 BE version, int32 BE compatible version, then chunks of
  ``[int32 BE length][raw snappy block]``.  librdkafka writes one plain raw
  snappy block (varint length preamble, no framing).  The xerial magic cannot
  start a valid raw block, so detection by magic is unambiguous.
* lz4    -- the LZ4 frame format.  Both Java and librdkafka write FLG 0x60
  (version 1, independent blocks, no checksums, no content size) and BD 0x40
  (64 KiB blocks).  Kafka's old clients (message format magic 0) computed the
  header checksum over the magic number too; Kafka ignores the header
  checksum for magic 0.  Both variants are accepted and reported.
* zstd   -- RFC 8878 frames without content size or checksum from both Java
  (zstd-jni streaming) and librdkafka.  Several concatenated frames and
  skippable frames are handled.

``compress`` exists so segtool can build test data; it writes what the Java
producer writes (snappy: xerial framing unless ``snappy_raw``; lz4: Kafka's
frame with the standard or, with ``legacy_lz4``, the broken header checksum).

The framing layouts are declared once, as construct schemas (``XERIAL_HEADER``,
``LZ4_FRAME_HEADER``, ``ZSTD_FRAME_HEADER``, ...; see ``_declarations``); the
readers use the layouts ``fastdecode`` compiled from them into its generated
table, so decompressing a batch does not import construct.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from functools import cache

import cramjam
import lz4.block
import lz4.frame
import zstandard

from segtool.errors import CorruptData, LimitExceeded, SegtoolError
from segtool.formats.fastdecode import compiled

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

CODEC_NAMES = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}

DEFAULT_CAP = 256 * 1024 * 1024

# Output is produced in slices of at most this many bytes, so the overshoot
# past the cap before LimitExceeded is raised is bounded.
_STEP = 1 << 20
# Compressed input is fed to zlib in slices of this size.
_GZIP_IN_STEP = 64 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
SNAPPY_FRAMING_ID = b"\xff\x06\x00\x00sNaPpY"  # the official framing format (not used by Kafka)

LZ4_MAGIC = 0x184D2204
LZ4_LEGACY_MAGIC = 0x184C2102  # lz4 command-line legacy format (not used by Kafka)
LZ4_INCOMPRESSIBLE = 0x80000000
LZ4_KAFKA_BD = 4  # 64 KiB blocks

ZSTD_MAGIC = 0xFD2FB528
ZSTD_BLOCK_MAX = 128 * 1024


# --------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------

_DECLARED = frozenset({
    "XERIAL_HEADER", "XERIAL_CHUNK_HEADER", "SKIPPABLE_FRAME_HEADER", "LZ4_FRAME_HEADER",
    "LZ4_BLOCK_HEADER", "LZ4_CHECKSUM", "ZSTD_FRAME_HEADER", "XXH32_STRIPE",
})


@cache
def _declarations() -> dict:
    """The construct declarations, built on first use (module ``__getattr__``): the readers
    below use their compiled form, and this module must stay cheap to import."""
    import construct as cs

    frame_magic = "magic" / cs.Int32ul  # LZ4 and zstd frames start with a little-endian magic number
    return {
        # snappy-java's stream header: the version that wrote it, the oldest that can read it
        "XERIAL_HEADER": cs.Struct(
            "magic" / cs.Const(XERIAL_MAGIC), "version" / cs.Int32sb, "compatible_version" / cs.Int32sb,
        ),
        # in front of every xerial chunk: the length of the raw snappy block that follows
        "XERIAL_CHUNK_HEADER": cs.Struct("length" / cs.Int32sb),
        # both LZ4 and zstd readers skip a frame whose magic is 0x184D2A50..0x184D2A5F
        "SKIPPABLE_FRAME_HEADER": cs.Struct(frame_magic, "frame_size" / cs.Int32ul),
        "LZ4_FRAME_HEADER": cs.Struct(
            frame_magic,  # LZ4_MAGIC
            # version(7-6) independent blocks(5) block checksums(4) content size(3) content checksum(2) dict id(0)
            "flg" / cs.Int8ub,
            "bd" / cs.Int8ub,  # block maximum size id (6-4)
            "content_size" / cs.If(cs.this.flg & 0x08, cs.Int64ul),
            "dict_id" / cs.If(cs.this.flg & 0x01, cs.Int32ul),
            # (xxh32(FLG .. dict_id) >> 8) & 0xFF; Kafka's magic-0 variant hashes the magic too
            "header_checksum" / cs.Int8ub,
        ),
        # in front of every block: its size, the high bit set when stored uncompressed; 0 ends the frame
        "LZ4_BLOCK_HEADER": cs.Struct("block_size" / cs.Int32ul),
        # xxh32 after each block (FLG bit 4) and after the end mark (FLG bit 2)
        "LZ4_CHECKSUM": cs.Struct("checksum" / cs.Int32ul),
        # RFC 8878 3.1.1; the reader walks it with int.from_bytes (its fields vary in size)
        "ZSTD_FRAME_HEADER": cs.Struct(
            frame_magic,  # ZSTD_MAGIC
            # content size flag(7-6) single segment(5) reserved(3) checksum(2) dict id flag(1-0)
            "descriptor" / cs.Int8ub,
            "window_descriptor" / cs.If(lambda this: not this.descriptor & 0x20, cs.Int8ub),
            "dict_id" / cs.Switch(lambda this: this.descriptor & 3,
                                  {1: cs.Int8ul, 2: cs.Int16ul, 3: cs.Int32ul}, cs.Pass),
            "content_size" / cs.Switch(lambda this: this.descriptor >> 6, {
                0: cs.If(lambda this: this.descriptor & 0x20, cs.Int8ul),  # only single-segment frames
                1: cs.ExprAdapter(cs.Int16ul, lambda obj, ctx: obj + 256, lambda obj, ctx: obj - 256),
                2: cs.Int32ul,
                3: cs.Int64ul,
            }),
        ),
        # xxHash32 reads its input as little-endian 32-bit words, four per stripe
        "XXH32_STRIPE": cs.Struct(*(f"lane{i}" / cs.Int32ul for i in range(1, 5))),
    }


def __getattr__(name: str):
    if name in _DECLARED:
        return _declarations()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


XERIAL_HEADER_FAST = compiled("XERIAL_HEADER")
XERIAL_HEADER_LEN = XERIAL_HEADER_FAST.size
XERIAL_CHUNK_HEADER_FAST = compiled("XERIAL_CHUNK_HEADER")
SKIPPABLE_FRAME_HEADER_FAST = compiled("SKIPPABLE_FRAME_HEADER")
FRAME_MAGIC_FAST = SKIPPABLE_FRAME_HEADER_FAST.field("magic")  # the first field of every frame
LZ4_CONTENT_SIZE_FAST = compiled("LZ4_CONTENT_SIZE")
LZ4_DICT_ID_FAST = compiled("LZ4_DICT_ID")
LZ4_BLOCK_HEADER_FAST = compiled("LZ4_BLOCK_HEADER")
LZ4_CHECKSUM_FAST = compiled("LZ4_CHECKSUM")
XXH32_STRIPE_FAST = compiled("XXH32_STRIPE")

# bound once: the xxh32 and block loops call them per word / block
_unpack_stripe = XXH32_STRIPE_FAST.unpack_from
_unpack_word = XXH32_STRIPE_FAST.field("lane1").unpack_from  # the tail, word by word
_unpack_magic = FRAME_MAGIC_FAST.unpack_from
_unpack_skippable = SKIPPABLE_FRAME_HEADER_FAST.unpack_from
_unpack_block_header = LZ4_BLOCK_HEADER_FAST.unpack_from
_unpack_checksum = LZ4_CHECKSUM_FAST.unpack_from
_unpack_chunk_length = XERIAL_CHUNK_HEADER_FAST.unpack_from


@dataclass
class DecompressInfo:
    """How a payload was framed, for reporting (``decompress_ex``).

    ``framing``: "none", "gzip", "snappy-xerial", "snappy-raw", "lz4-frame" or
    "zstd".  ``units``: gzip members, xerial chunks, lz4 blocks or zstd frames.
    ``lz4_header_checksum``: one entry per lz4 frame, "standard" (correct
    LZ4 HC byte), "kafka-legacy" (the pre-0.10 Kafka HC computed over the magic
    too) or "mismatch" (neither; only tolerated with ``legacy_lz4``).
    ``trailing_bytes``: bytes after the last complete unit that were ignored
    the way Kafka's Java reader ignores them.
    """

    codec: int
    framing: str = ""
    units: int = 0
    xerial_version: tuple[int, int] | None = None
    lz4_header_checksum: list[str] = field(default_factory=list)
    content_size: int | None = None
    trailing_bytes: int = 0
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------
# xxHash32 (LZ4 frame checksums)
# --------------------------------------------------------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32_py(data: bytes, seed: int = 0) -> int:
    """Reference xxHash32 in pure Python (used for short inputs)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        limit = n - 16
        while pos <= limit:
            a, b, c, d = _unpack_stripe(data, pos)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (w,) = _unpack_word(data, pos)
        h = (_rotl((h + w * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """xxHash32 of ``data``.

    Long inputs with seed 0 go through liblz4 (python-lz4): an LZ4 frame's
    content checksum *is* xxh32(content, 0), and it is the last four bytes of
    the frame, so compressing at the fastest level computes it in C.
    """
    if seed == 0 and len(data) > 256:
        frame = lz4.frame.compress(data, compression_level=0, content_checksum=True, store_size=False)
        return _unpack_checksum(frame, len(frame) - LZ4_CHECKSUM_FAST.size)[0]
    return _xxh32_py(bytes(data), seed)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


class _Ctx:
    """Error construction for one decompress call."""

    def __init__(self, codec: int, base_offset: int | None, cap: int):
        self.name = CODEC_NAMES.get(codec, str(codec))
        self.base = base_offset
        self.cap = cap

    def _where(self, rel: int | None) -> tuple[str, int | None]:
        if rel is None:
            return "", self.base
        if self.base is None:
            return f" (compressed byte {rel})", None
        return "", self.base + rel

    def corrupt(self, rel: int | None, what: str) -> CorruptData:
        suffix, off = self._where(rel)
        return CorruptData(f"{self.name}: {what}{suffix}", offset=off)

    def limit(self, rel: int | None, what: str) -> LimitExceeded:
        suffix, off = self._where(rel)
        return LimitExceeded(f"{self.name}: {what}{suffix}", offset=off)

    def over_cap(self, rel: int | None, total: int) -> LimitExceeded:
        return self.limit(rel, f"decompressed size exceeds the cap of {self.cap} bytes (reached {total})")


class _Out:
    """Accumulates output chunks and enforces the cap."""

    def __init__(self, ctx: _Ctx):
        self.ctx = ctx
        self.chunks: list[bytes] = []
        self.total = 0

    @property
    def room(self) -> int:
        return self.ctx.cap - self.total

    def add(self, chunk, rel: int | None) -> None:
        if chunk:
            self.total += len(chunk)
            if self.total > self.ctx.cap:
                raise self.ctx.over_cap(rel, self.total)
            self.chunks.append(bytes(chunk) if not isinstance(chunk, bytes) else chunk)

    def need(self, n: int, rel: int | None, what: str) -> None:
        """Refuse before allocating when a declared size would pass the cap."""
        if self.total + n > self.ctx.cap:
            raise self.ctx.limit(
                rel, f"{what} ({n} bytes) would exceed the cap of {self.ctx.cap} bytes (already {self.total} decompressed)"
            )

    def result(self) -> bytes:
        if len(self.chunks) == 1:
            return self.chunks[0]
        return b"".join(self.chunks)


def _as_view(data) -> memoryview:
    mv = memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1 or not mv.contiguous:
        mv = memoryview(mv.tobytes())
    return mv


# --------------------------------------------------------------------------
# gzip
# --------------------------------------------------------------------------


def _gunzip(mv: memoryview, out: _Out, info: DecompressInfo, ctx: _Ctx) -> None:
    info.framing = "gzip"
    n = len(mv)
    if n == 0:
        raise ctx.corrupt(0, "empty input")
    pos = 0
    while True:
        member_start = pos
        if n - pos < 2 or mv[pos] != 0x1F or mv[pos + 1] != 0x8B:
            raise ctx.corrupt(pos, "not a gzip member (bad magic)")
        d = zlib.decompressobj(wbits=31)
        while not d.eof:
            if pos >= n:
                raise ctx.corrupt(pos, f"truncated stream (member starting at byte {member_start} has no end)")
            piece = mv[pos : pos + _GZIP_IN_STEP]
            piece_start = pos
            pos += len(piece)
            try:
                chunk = d.decompress(piece, max(1, min(_STEP, out.room + 1)))
                out.add(chunk, piece_start)
                while d.unconsumed_tail and not d.eof:
                    chunk = d.decompress(d.unconsumed_tail, max(1, min(_STEP, out.room + 1)))
                    out.add(chunk, piece_start)
                # Output pending inside zlib with all input consumed: drain it.
                while not d.eof and pos >= n:
                    chunk = d.decompress(b"", max(1, min(_STEP, out.room + 1)))
                    if not chunk:
                        break
                    out.add(chunk, piece_start)
            except zlib.error as e:
                raise ctx.corrupt(piece_start, f"invalid deflate data in member starting at byte {member_start}: {e}") from None
        info.units += 1
        # bytes of this piece that belong after the member
        pos -= len(d.unused_data)
        if pos >= n:
            return
        rest = mv[pos:]
        if len(rest) >= 2 and rest[0] == 0x1F and rest[1] == 0x8B:
            continue  # another member, like Java's GZIPInputStream
        info.trailing_bytes = len(rest)
        kind = "zero bytes" if not any(rest) else "bytes"
        info.notes.append(f"{len(rest)} trailing {kind} after the last gzip member at byte {pos} (ignored, as Java does)")
        return


# --------------------------------------------------------------------------
# snappy
# --------------------------------------------------------------------------


def _snappy_len(mv: memoryview, start: int, end: int, ctx: _Ctx) -> int:
    """The uncompressed-length varint that starts every raw snappy block."""
    result = 0
    shift = 0
    pos = start
    while True:
        if pos >= end:
            raise ctx.corrupt(start, "raw block ends inside its length preamble")
        b = mv[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise ctx.corrupt(start, "raw block length preamble longer than 5 bytes")
    if result > 0xFFFFFFFF:
        raise ctx.corrupt(start, "raw block length preamble exceeds 32 bits")
    return result


def _snappy_block(mv: memoryview, start: int, end: int, out: _Out, ctx: _Ctx) -> None:
    declared = _snappy_len(mv, start, end, ctx)
    out.need(declared, start, "raw block's declared length")
    try:
        res = cramjam.snappy.decompress_raw(mv[start:end])
    except Exception as e:  # cramjam.DecompressionError and anything else from the codec
        raise ctx.corrupt(start, f"invalid raw block: {e}") from None
    res = bytes(res)
    if len(res) != declared:
        raise ctx.corrupt(start, f"raw block produced {len(res)} bytes but declares {declared}")
    out.add(res, start)


def _unsnappy(mv: memoryview, out: _Out, info: DecompressInfo, ctx: _Ctx) -> None:
    n = len(mv)
    if n == 0:
        raise ctx.corrupt(0, "empty input")
    if bytes(mv[:8]) != XERIAL_MAGIC:
        info.framing = "snappy-raw"
        try:
            _snappy_block(mv, 0, n, out, ctx)
        except LimitExceeded:
            raise
        except CorruptData as e:
            if bytes(mv[: len(SNAPPY_FRAMING_ID)]) == SNAPPY_FRAMING_ID:
                raise ctx.corrupt(0, "data uses the snappy framing format (sNaPpY), which Kafka never writes") from None
            raise e
        info.units = 1
        return
    info.framing = "snappy-xerial"
    if n < XERIAL_HEADER_LEN:
        raise ctx.corrupt(0, "truncated xerial snappy header")
    info.xerial_version = XERIAL_HEADER_FAST.unpack_from(mv, 0)[1:]
    pos = XERIAL_HEADER_LEN
    while pos < n:
        if n - pos < 4:
            # snappy-java stops silently when fewer than 4 bytes remain
            info.trailing_bytes = n - pos
            info.notes.append(f"{n - pos} trailing bytes after the last xerial chunk at byte {pos} (ignored, as snappy-java does)")
            return
        if n - pos >= XERIAL_HEADER_LEN and bytes(mv[pos : pos + 8]) == XERIAL_MAGIC:
            # snappy-java accepts concatenated streams (a new header at a chunk boundary)
            info.notes.append(f"another xerial header at byte {pos} (concatenated stream)")
            pos += XERIAL_HEADER_LEN
            continue
        (length,) = _unpack_chunk_length(mv, pos)
        if length < 0:
            raise ctx.corrupt(pos, f"negative xerial chunk length {length}")
        if length == 0:
            raise ctx.corrupt(pos, "zero-length xerial chunk")
        if pos + 4 + length > n:
            raise ctx.corrupt(pos, f"truncated xerial chunk: declares {length} bytes, {n - pos - 4} remain")
        _snappy_block(mv, pos + 4, pos + 4 + length, out, ctx)
        info.units += 1
        pos += 4 + length


def _snappy_compress(data: bytes, raw: bool) -> bytes:
    if raw:
        return bytes(cramjam.snappy.compress_raw(data))
    parts = [XERIAL_HEADER_FAST.pack(XERIAL_MAGIC, 1, 1)]
    for i in range(0, len(data), XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK]))
        parts.append(XERIAL_CHUNK_HEADER_FAST.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# --------------------------------------------------------------------------
# lz4 frame
# --------------------------------------------------------------------------


def _lz4_hc(descriptor: bytes, legacy: bool) -> int:
    """Header checksum byte: standard over FLG..(content size), Kafka-legacy over magic too."""
    src = FRAME_MAGIC_FAST.pack(LZ4_MAGIC) + descriptor if legacy else descriptor
    return (_xxh32_py(src) >> 8) & 0xFF


def _unlz4(mv: memoryview, out: _Out, info: DecompressInfo, ctx: _Ctx, legacy_lz4: bool) -> None:
    info.framing = "lz4-frame"
    n = len(mv)
    if n == 0:
        raise ctx.corrupt(0, "empty input")
    pos = 0
    frames = 0
    while pos < n:
        if n - pos < 4:
            if frames:
                break
            raise ctx.corrupt(pos, "truncated frame magic")
        (magic,) = _unpack_magic(mv, pos)
        if 0x184D2A50 <= magic <= 0x184D2A5F:
            if n - pos < 8:
                raise ctx.corrupt(pos, "truncated skippable frame header")
            size = _unpack_skippable(mv, pos)[1]
            if pos + 8 + size > n:
                raise ctx.corrupt(pos, "truncated skippable frame")
            info.notes.append(f"skippable frame of {size} bytes at byte {pos}")
            pos += 8 + size
            continue
        if magic != LZ4_MAGIC:
            if frames:
                break  # Kafka reads one frame and ignores what follows
            if magic == LZ4_LEGACY_MAGIC:
                raise ctx.corrupt(pos, "lz4 legacy (lz4 -l) format, not the LZ4 frame format Kafka uses")
            raise ctx.corrupt(pos, f"bad frame magic 0x{magic:08x} (expected 0x{LZ4_MAGIC:08x})")
        pos = _lz4_frame(mv, pos, out, info, ctx, legacy_lz4)
        frames += 1
    if pos < n:
        info.trailing_bytes = n - pos
        info.notes.append(f"{n - pos} trailing bytes after the last lz4 frame at byte {pos} (ignored, as Kafka does)")


def _lz4_frame(mv: memoryview, start: int, out: _Out, info: DecompressInfo, ctx: _Ctx, legacy_lz4: bool) -> int:
    n = len(mv)
    pos = start + 4
    if n - pos < 3:
        raise ctx.corrupt(pos, "truncated frame descriptor")
    flg, bd = mv[pos], mv[pos + 1]
    version = flg >> 6
    independent = bool(flg & 0x20)
    block_checksum = bool(flg & 0x10)
    has_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    has_dict = bool(flg & 0x01)
    if version != 1:
        raise ctx.corrupt(pos, f"unsupported frame version {version} (FLG 0x{flg:02x})")
    if flg & 0x02:
        raise ctx.corrupt(pos, f"reserved FLG bit set (FLG 0x{flg:02x})")
    if bd & 0x8F:
        raise ctx.corrupt(pos + 1, f"reserved BD bits set (BD 0x{bd:02x})")
    bsid = (bd >> 4) & 7
    if bsid < 4:
        raise ctx.corrupt(pos + 1, f"invalid block maximum size id {bsid} (BD 0x{bd:02x})")
    max_block = 1 << (2 * bsid + 8)
    desc_len = 2 + (8 if has_size else 0) + (4 if has_dict else 0)
    if n - pos < desc_len + 1:
        raise ctx.corrupt(pos, "truncated frame descriptor")
    descriptor = bytes(mv[pos : pos + desc_len])
    hc = mv[pos + desc_len]
    if hc == _lz4_hc(descriptor, legacy=False):
        info.lz4_header_checksum.append("standard")
    elif hc == _lz4_hc(descriptor, legacy=True):
        info.lz4_header_checksum.append("kafka-legacy")
        if not legacy_lz4:
            info.notes.append("lz4 header checksum uses the pre-0.10 Kafka (magic v0) variant in a non-legacy container")
    elif legacy_lz4:
        # Kafka ignores the header checksum entirely for magic 0 messages.
        info.lz4_header_checksum.append("mismatch")
        info.notes.append(f"lz4 header checksum 0x{hc:02x} matches neither variant (tolerated for magic 0, as Kafka does)")
    else:
        raise ctx.corrupt(
            pos + desc_len,
            f"frame header checksum 0x{hc:02x} matches neither the standard (0x{_lz4_hc(descriptor, False):02x}) "
            f"nor the Kafka-legacy (0x{_lz4_hc(descriptor, True):02x}) value",
        )
    content_size = None
    if has_size:
        (content_size,) = LZ4_CONTENT_SIZE_FAST.unpack_from(descriptor, 2)
        info.content_size = (info.content_size or 0) + content_size
        out.need(content_size, pos + 2, "frame content size")
    if has_dict:
        (dict_id,) = LZ4_DICT_ID_FAST.unpack_from(descriptor, desc_len - 4)
        raise ctx.corrupt(pos, f"frame needs external dictionary id {dict_id}")
    if not independent:
        info.notes.append("lz4 frame uses linked (dependent) blocks, which Kafka's reader rejects")
    pos += desc_len + 1

    frame_out_start = out.total
    first_chunk = len(out.chunks)
    history = b""
    while True:
        if n - pos < 4:
            raise ctx.corrupt(pos, "truncated: missing block header or end mark")
        (word,) = _unpack_block_header(mv, pos)
        block_pos = pos
        pos += 4
        if word == 0:
            break  # end mark
        size = word & ~LZ4_INCOMPRESSIBLE & _M32
        stored = bool(word & LZ4_INCOMPRESSIBLE)
        if size > max_block:
            raise ctx.corrupt(block_pos, f"block size {size} exceeds the frame's maximum {max_block}")
        if n - pos < size + (4 if block_checksum else 0):
            raise ctx.corrupt(block_pos, f"truncated block: declares {size} bytes, {n - pos} remain")
        block = mv[pos : pos + size]
        if block_checksum:
            (want,) = _unpack_checksum(mv, pos + size)
            got = xxh32(block)
            if got != want:
                raise ctx.corrupt(block_pos, f"block checksum mismatch (stored 0x{want:08x}, computed 0x{got:08x})")
        if stored:
            out.need(size, block_pos, "stored (uncompressed) block")
            res = bytes(block)
        else:
            try:
                if independent or not history:
                    res = lz4.block.decompress(block, uncompressed_size=max_block)
                else:
                    res = lz4.block.decompress(block, uncompressed_size=max_block, dict=history)
            except Exception as e:  # lz4.block.LZ4BlockError
                raise ctx.corrupt(block_pos, f"invalid compressed block: {e}") from None
        out.add(res, block_pos)
        info.units += 1
        if not independent:
            history = (history + res)[-65536:]
        pos += size + (4 if block_checksum else 0)

    produced = out.total - frame_out_start
    if content_size is not None and produced != content_size:
        raise ctx.corrupt(start, f"frame produced {produced} bytes but declares content size {content_size}")
    if content_checksum:
        if n - pos < 4:
            raise ctx.corrupt(pos, "truncated: missing content checksum")
        (want,) = _unpack_checksum(mv, pos)
        got = xxh32(b"".join(out.chunks[first_chunk:]))
        if got != want:
            raise ctx.corrupt(pos, f"content checksum mismatch (stored 0x{want:08x}, computed 0x{got:08x})")
        pos += 4
    return pos


def _lz4_compress(data: bytes, legacy: bool) -> bytes:
    max_block = 1 << (2 * LZ4_KAFKA_BD + 8)
    descriptor = bytes([0x60, LZ4_KAFKA_BD << 4])  # version 1, independent blocks; 64 KiB
    parts = [FRAME_MAGIC_FAST.pack(LZ4_MAGIC), descriptor, bytes([_lz4_hc(descriptor, legacy)])]
    for i in range(0, len(data), max_block):
        chunk = data[i : i + max_block]
        comp = lz4.block.compress(chunk, store_size=False)
        if len(comp) >= len(chunk):
            parts.append(LZ4_BLOCK_HEADER_FAST.pack(len(chunk) | LZ4_INCOMPRESSIBLE))
            parts.append(chunk)
        else:
            parts.append(LZ4_BLOCK_HEADER_FAST.pack(len(comp)))
            parts.append(comp)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# --------------------------------------------------------------------------
# zstd
# --------------------------------------------------------------------------


def _zstd_frame_end(mv: memoryview, start: int, ctx: _Ctx) -> tuple[int, int | None, int]:
    """Walk one zstd frame's structure; return (end, content size or None, window size)."""
    n = len(mv)
    pos = start + 4
    if pos >= n:
        raise ctx.corrupt(start, "truncated frame header")
    fhd = mv[pos]
    fcs_flag = fhd >> 6
    single = bool(fhd & 0x20)
    if fhd & 0x08:
        raise ctx.corrupt(pos, f"reserved bit set in frame header descriptor 0x{fhd:02x}")
    checksum = bool(fhd & 0x04)
    did_size = (0, 1, 2, 4)[fhd & 3]
    fcs_size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    hdr_end = pos + 1 + (0 if single else 1) + did_size + fcs_size
    if hdr_end > n:
        raise ctx.corrupt(start, "truncated frame header")
    p = pos + 1
    window = None
    if not single:
        wd = mv[p]
        p += 1
        wlog = 10 + (wd >> 3)
        base = 1 << wlog
        window = base + (base >> 3) * (wd & 7)
    if did_size:
        dict_id = int.from_bytes(mv[p : p + did_size], "little")
        p += did_size
        if dict_id:
            raise ctx.corrupt(start, f"frame needs dictionary id {dict_id}")
    content_size = None
    if fcs_size:
        content_size = int.from_bytes(mv[p : p + fcs_size], "little")
        if fcs_size == 2:
            content_size += 256
    if window is None:
        window = content_size or 0
    pos = hdr_end
    while True:
        if n - pos < 3:
            raise ctx.corrupt(pos, "truncated: frame ends before its last block")
        h = mv[pos] | (mv[pos + 1] << 8) | (mv[pos + 2] << 16)
        last = h & 1
        btype = (h >> 1) & 3
        bsize = h >> 3
        if btype == 3:
            raise ctx.corrupt(pos, "reserved block type")
        if bsize > ZSTD_BLOCK_MAX:
            raise ctx.corrupt(pos, f"block size {bsize} exceeds 128 KiB")
        body = 1 if btype == 1 else bsize
        if pos + 3 + body > n:
            raise ctx.corrupt(pos, f"truncated block: declares {body} bytes, {n - pos - 3} remain")
        pos += 3 + body
        if last:
            break
    if checksum:
        if pos + 4 > n:
            raise ctx.corrupt(pos, "truncated: missing content checksum")
        pos += 4
    return pos, content_size, window


def _unzstd(mv: memoryview, out: _Out, info: DecompressInfo, ctx: _Ctx) -> None:
    info.framing = "zstd"
    n = len(mv)
    if n == 0:
        raise ctx.corrupt(0, "empty input")
    # Bound the decoder's window buffer by about the cap (zstd's own default limit is 2**27).
    max_window = 1 << 23
    while max_window < ctx.cap and max_window < (1 << 27):
        max_window <<= 1
    pos = 0
    while pos < n:
        if n - pos < 4:
            raise ctx.corrupt(pos, f"{n - pos} trailing bytes after the last frame")
        (magic,) = _unpack_magic(mv, pos)
        if 0x184D2A50 <= magic <= 0x184D2A5F:
            if n - pos < 8:
                raise ctx.corrupt(pos, "truncated skippable frame header")
            size = _unpack_skippable(mv, pos)[1]
            if pos + 8 + size > n:
                raise ctx.corrupt(pos, "truncated skippable frame")
            info.notes.append(f"skippable frame of {size} bytes at byte {pos}")
            pos += 8 + size
            continue
        if magic != ZSTD_MAGIC:
            what = "bad frame magic" if pos == 0 else "trailing garbage after the last frame:"
            raise ctx.corrupt(pos, f"{what} 0x{magic:08x} (expected 0x{ZSTD_MAGIC:08x})")
        end, content_size, window = _zstd_frame_end(mv, pos, ctx)
        if content_size is not None:
            out.need(content_size, pos, "frame content size")
            info.content_size = (info.content_size or 0) + content_size
        if content_size is None and window > max_window:
            raise ctx.limit(pos, f"frame window of {window} bytes exceeds the limit of {max_window} bytes")
        frame_start_total = out.total
        try:
            dctx = zstandard.ZstdDecompressor(max_window_size=max(max_window, min(window, 1 << 31)))
            with dctx.stream_reader(mv[pos:end], read_size=128 * 1024, read_across_frames=False) as reader:
                while True:
                    chunk = reader.read(max(1, min(_STEP, out.room + 1)))
                    if not chunk:
                        break
                    out.add(chunk, pos)
        except SegtoolError:
            raise
        except Exception as e:  # zstandard.ZstdError
            raise ctx.corrupt(pos, f"invalid frame: {e}") from None
        produced = out.total - frame_start_total
        if content_size is not None and produced != content_size:
            raise ctx.corrupt(pos, f"frame produced {produced} bytes but declares content size {content_size}")
        info.units += 1
        pos = end
    if info.units == 0:
        raise ctx.corrupt(0, "no zstd frame in input")


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def decompress_ex(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    cap: int = DEFAULT_CAP,
    legacy_lz4: bool = False,
    base_offset: int | None = None,
) -> tuple[bytes, DecompressInfo]:
    """Decompress and also describe the framing that was found.

    ``legacy_lz4``: the payload sits in a magic-0 message, where Kafka ignores
    the lz4 header checksum; otherwise the checksum must match the standard or
    the Kafka-legacy variant.  ``base_offset``: file offset of ``data[0]``;
    when given, errors carry absolute offsets, otherwise they carry no offset
    (so the caller's ``err.at(path, offset)`` fills it in) and the message
    names the byte within the compressed data.
    """
    ctx = _Ctx(codec, base_offset, cap)
    info = DecompressInfo(codec=codec)
    if codec not in CODEC_NAMES:
        raise CorruptData(f"unknown compression codec id {codec}", offset=base_offset)
    if cap < 0:
        raise ValueError("cap must be >= 0")
    out = _Out(ctx)
    try:
        mv = _as_view(data)
        if codec == CODEC_NONE:
            info.framing = "none"
            out.need(len(mv), None, "uncompressed payload")
            out.add(mv.tobytes(), None)
        elif codec == CODEC_GZIP:
            _gunzip(mv, out, info, ctx)
        elif codec == CODEC_SNAPPY:
            _unsnappy(mv, out, info, ctx)
        elif codec == CODEC_LZ4:
            _unlz4(mv, out, info, ctx, legacy_lz4)
        else:
            _unzstd(mv, out, info, ctx)
    except SegtoolError:
        raise
    except MemoryError:
        raise
    except Exception as e:  # never let a library exception escape
        raise ctx.corrupt(None, f"{type(e).__name__}: {e}") from None
    return out.result(), info


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    cap: int = DEFAULT_CAP,
    legacy_lz4: bool = False,
    base_offset: int | None = None,
) -> bytes:
    """Decompress a Kafka records payload compressed with ``codec``.

    Raises ``LimitExceeded`` as soon as the output would pass ``cap`` bytes
    (checked while decompressing) and ``CorruptData`` for anything invalid.
    """
    return decompress_ex(codec, data, cap=cap, legacy_lz4=legacy_lz4, base_offset=base_offset)[0]


def compress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    legacy_lz4: bool = False,
    snappy_raw: bool = False,
    level: int | None = None,
) -> bytes:
    """Compress ``data`` the way Kafka's Java producer does (for building test data).

    gzip: one member (zlib, level 6 by default); snappy: xerial framing with
    32 KiB chunks (``snappy_raw`` for a librdkafka-style raw block); lz4:
    Kafka's frame (FLG 0x60, BD 0x40, 64 KiB independent blocks, no checksums)
    with the standard header checksum, or the broken magic-v0 one when
    ``legacy_lz4``; zstd: one frame without content size, level 3 by default.
    """
    data = bytes(data)
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_GZIP:
        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == CODEC_SNAPPY:
        return _snappy_compress(data, snappy_raw)
    if codec == CODEC_LZ4:
        return _lz4_compress(data, legacy_lz4)
    if codec == CODEC_ZSTD:
        c = zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False)
        return c.compress(data)
    raise ValueError(f"unknown compression codec id {codec}")
