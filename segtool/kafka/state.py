"""Kafka partition state files: producer-state ``.snapshot``, text checkpoints, ``partition.metadata``.

Producer-state snapshot (ProducerStateManager.java, ``PID_SNAPSHOT_MAP_SCHEMA``;
Kafka's protocol ``Schema``/``Struct`` types, all big-endian)::

    version   int16   PRODUCER_SNAPSHOT_VERSION = 1
    crc       uint32  CRC-32C of every byte after this field (offset 6 .. end of file)
    producer_entries  ARRAY: int32 count, then count x 46-byte entries
        producer_id                int64
        epoch                      int16
        last_sequence              int32
        last_offset                int64   -1: no batch metadata
        offset_delta               int32   last sequence - first sequence of the last batch
        timestamp                  int64   max timestamp of the last batch (= lastTimestamp)
        coordinator_epoch          int32
        current_txn_first_offset   int64   -1: no ongoing transaction

``readSnapshot`` parses the whole structure first (errors become
"Snapshot failed schema validation: ..."), then checks the version, then the CRC.
Bytes after the last entry are accepted and covered by the CRC.

Text checkpoints (server-common CheckpointFile.java): a version line, an
entry-count line, then one entry per line.  ``leader-epoch-checkpoint``
(LeaderEpochCheckpointFile.java) entries are ``epoch startOffset``; the log-dir
files ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``
(OffsetCheckpointFile.java) have ``topic partition offset``.  Fields are split on
``\\s+``; the version must be 0.

``partition.metadata`` (PartitionMetadataFile / PartitionMetadataReadBuffer.java):
``version: 0`` then ``topic_id: <22-char base64url UUID>``.

Every reader raises a subclass of ``KafkaReportedError`` (a ``CorruptData``)
carrying Kafka's own message for the same input.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import construct as cs
import numpy as np
from segtool.formats.checksums import crc32c

from segtool.errors import TruncatedData, UnreadableInput
from segtool.formats.fastdecode import FixedLayout, compile_fixed
from segtool.kafka.index import KafkaReportedError

# --------------------------------------------------------------------------
# Producer-state snapshot
# --------------------------------------------------------------------------

PRODUCER_SNAPSHOT_VERSION = 1
SNAPSHOT_CRC_START = 6  # PRODUCER_ENTRIES_OFFSET = CRC_OFFSET(2) + 4

PRODUCER_SNAPSHOT_ENTRY = cs.Struct(
    "producer_id" / cs.Int64sb,  # Kafka field "producer_id"
    "producer_epoch" / cs.Int16sb,  # "epoch"
    "last_sequence" / cs.Int32sb,  # "last_sequence": sequence of the last record of the last batch
    "last_offset" / cs.Int64sb,  # "last_offset": offset of that record; -1 = no batch metadata
    "offset_delta" / cs.Int32sb,  # "offset_delta": last offset - first offset of the last batch
    "timestamp" / cs.Int64sb,  # "timestamp": max timestamp of the last batch
    "coordinator_epoch" / cs.Int32sb,  # "coordinator_epoch": of the last transaction marker
    "current_txn_first_offset" / cs.Int64sb,  # "current_txn_first_offset": -1 = none open
)

PRODUCER_SNAPSHOT = cs.Struct(
    "version" / cs.Int16sb,  # PRODUCER_SNAPSHOT_VERSION
    "crc" / cs.Int32ub,  # CRC-32C over bytes [6, end of file)
    "entry_count" / cs.Int32sb,  # the ARRAY length prefix
    "producer_entries" / cs.Array(cs.this.entry_count, PRODUCER_SNAPSHOT_ENTRY),
)

# The fixed header is the first three fields of the declaration above.
PRODUCER_SNAPSHOT_HEADER = cs.Struct(*PRODUCER_SNAPSHOT.subcons[:3])

SNAPSHOT_HEADER_LAYOUT: FixedLayout = compile_fixed(PRODUCER_SNAPSHOT_HEADER)
SNAPSHOT_ENTRY_LAYOUT: FixedLayout = compile_fixed(PRODUCER_SNAPSHOT_ENTRY)
SNAPSHOT_ENTRY_DTYPE: np.dtype = SNAPSHOT_ENTRY_LAYOUT.numpy_dtype()

# Kafka's schema field names, in order, for its error messages.
_KAFKA_ENTRY_FIELDS = ("producer_id", "epoch", "last_sequence", "last_offset", "offset_delta",
                       "timestamp", "coordinator_epoch", "current_txn_first_offset")
_BUFFER_UNDERFLOW = "java.nio.BufferUnderflowException"


class CorruptSnapshot(KafkaReportedError):
    """``ProducerStateManager.readSnapshot`` refuses the file (CorruptSnapshotException).

    kafka-dump-log prints ``kafka_message`` on stderr and exits 0.
    """

    java_class = "org.apache.kafka.storage.internals.log.CorruptSnapshotException"


class TruncatedSnapshot(CorruptSnapshot, TruncatedData):
    """The snapshot ends inside a field (Kafka: BufferUnderflowException in schema validation)."""


def _wrap_int32(value: int) -> int:
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence`` (int32 arithmetic, wrapping at Integer.MAX_VALUE)."""
    if sequence < decrement:
        return _wrap_int32(0x7FFFFFFF - (decrement - sequence) + 1)
    return _wrap_int32(sequence - decrement)


@dataclass(frozen=True)
class ProducerSnapshotEntry:
    """One producer of a snapshot, as written."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_batch_metadata(self) -> bool:
        """readSnapshot builds BatchMetadata only when ``last_offset >= 0``."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        """``BatchMetadata.firstSeq()``."""
        return decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """``BatchMetadata.firstOffset()``."""
        return self.last_offset - self.offset_delta

    @property
    def current_txn_first_offset_text(self) -> str:
        """Java ``OptionalLong.toString`` of the ongoing transaction's first offset."""
        if self.current_txn_first_offset >= 0:
            return f"OptionalLong[{self.current_txn_first_offset}]"
        return "OptionalLong.empty"


@dataclass(frozen=True)
class ProducerSnapshot:
    version: int
    crc: int  # stored
    computed_crc: int
    entries: list[ProducerSnapshotEntry]
    size: int  # file length
    end_of_entries: int  # where the last entry ends; bytes after it are tolerated by Kafka

    @property
    def crc_ok(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def trailing_bytes(self) -> int:
        return self.size - self.end_of_entries


def _read_bytes(path) -> bytes:
    from segtool.source import require_regular_file

    require_regular_file(path)
    try:
        with open(path, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise UnreadableInput("not a regular file", str(path)) from None
    except OSError as e:
        raise UnreadableInput(f"cannot read: {e.strerror or e}", str(path)) from None


def parse_producer_snapshot(data, path=None, verify: bool = True) -> ProducerSnapshot:
    """Decode a producer-state snapshot the way ``readSnapshot`` does.

    Order of checks (and messages) as in Kafka: schema (structure), version, CRC.
    With ``verify=False`` the version and CRC are reported in the result but not
    enforced (structure errors still raise).
    """
    data = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
    size = len(data)

    def schema_error(message: str, offset: int, truncated: bool) -> CorruptSnapshot:
        cls = TruncatedSnapshot if truncated else CorruptSnapshot
        return cls(f"Snapshot failed schema validation: {message}", path, offset)

    if size < 2:
        raise schema_error(f"Error reading field 'version': {_BUFFER_UNDERFLOW}", 0, True)
    if size < 6:
        raise schema_error(f"Error reading field 'crc': {_BUFFER_UNDERFLOW}", 2, True)
    if size < 10:
        raise schema_error(f"Error reading field 'producer_entries': {_BUFFER_UNDERFLOW}", 6, True)
    version, crc, count = SNAPSHOT_HEADER_LAYOUT.unpack_from(data, 0)
    remaining = size - 10
    if count < 0:
        raise schema_error(f"Error reading field 'producer_entries': Array size {count} cannot be negative",
                           6, False)
    if count > remaining:
        raise schema_error(f"Error reading field 'producer_entries': Error reading array of size {count}, "
                           f"only {remaining} bytes available", 6, True)
    entry_size = SNAPSHOT_ENTRY_LAYOUT.size
    whole = remaining // entry_size
    if whole < count:
        # Entry ``whole`` is cut short: name the first field that does not fit.
        start = 10 + whole * entry_size
        left = size - start
        pos = 0
        field = _KAFKA_ENTRY_FIELDS[-1]
        for name, sub in zip(_KAFKA_ENTRY_FIELDS, PRODUCER_SNAPSHOT_ENTRY.subcons):
            pos += sub.sizeof()
            if pos > left:
                field = name
                break
        raise schema_error(f"Error reading field 'producer_entries': Error reading field '{field}': "
                           f"{_BUFFER_UNDERFLOW}", start, True)
    end = 10 + count * entry_size
    raw = np.frombuffer(data, dtype=SNAPSHOT_ENTRY_DTYPE, count=count, offset=10) if count else ()
    entries = [ProducerSnapshotEntry(*r) for r in (raw.tolist() if count else ())]
    computed = crc32c(bytes(data[SNAPSHOT_CRC_START:]))
    snap = ProducerSnapshot(version, crc, computed, entries, size, end)
    if verify:
        check_producer_snapshot(snap, path)
    return snap


def check_producer_snapshot(snap: ProducerSnapshot, path=None) -> None:
    """Kafka's version and CRC checks, in Kafka's order."""
    if snap.version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshot(f"Snapshot contained an unknown file version {snap.version}", path, 0)
    if not snap.crc_ok:
        raise CorruptSnapshot(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snap.crc}. "
                              f"Computed crc: {snap.computed_crc}", path, 2)


def read_producer_snapshot(path, verify: bool = True) -> ProducerSnapshot:
    """Read and decode a ``.snapshot`` file (see ``parse_producer_snapshot``)."""
    return parse_producer_snapshot(_read_bytes(path), path, verify)


def format_snapshot_entry(entry: ProducerSnapshotEntry) -> str:
    """One line of ``kafka-dump-log --files X.snapshot`` (``dumpProducerIdSnapshot``).

    Without batch metadata (last offset < 0) the line ends after
    ``lastTimestamp: N `` -- with the trailing space Kafka prints.
    """
    line = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} "
            f"currentTxnFirstOffset: {entry.current_txn_first_offset_text} "
            f"lastTimestamp: {entry.timestamp} ")
    if entry.has_batch_metadata:
        line += (f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
                 f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
                 f"timestamp: {entry.timestamp}")
    return line


def snapshot_dump_lines(path, display_path=None) -> Iterator[str]:
    """Lines of ``kafka-dump-log --files X.snapshot`` after the ``Dumping`` header.

    Kafka reads the whole snapshot before printing: a ``CorruptSnapshot`` is
    raised before any line.  kafka-dump-log then prints ``e.kafka_message`` to
    stderr and carries on (exit code 0).
    """
    shown = path if display_path is None else display_path
    snap = parse_producer_snapshot(_read_bytes(path), shown, verify=True)
    for entry in snap.entries:
        yield format_snapshot_entry(entry)


# --------------------------------------------------------------------------
# Java text parsing helpers
# --------------------------------------------------------------------------

_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # java.util.regex \s (ASCII)
_JAVA_INT = re.compile(r"[+-]?\d+")  # Character.digit(c, 10) accepts Unicode decimal digits


class CorruptCheckpoint(KafkaReportedError):
    """A checkpoint or partition.metadata file Kafka would refuse (an IOException in Kafka)."""

    java_class = "java.io.IOException"


def _java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` splitting: ``\\n``, ``\\r`` or ``\\r\\n``; no empty last line."""
    if not text:
        return []
    lines = re.split(r"\r\n|\r|\n", text)
    if text.endswith(("\n", "\r")):
        lines.pop()
    return lines


def _java_split_ws(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``: leading empty kept, trailing empties dropped."""
    if not _JAVA_WS.search(line):
        return [line]
    parts = _JAVA_WS.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _parse_java_int(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64); None if Java would throw."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        return None
    return value


def _number_format(text: str) -> str:
    return f'For input string: "{text}"'


def _decode_text(data: bytes, path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptCheckpoint(f"Input length = {e.end - e.start}", path, e.start,
                                java_class="java.nio.charset.MalformedInputException") from None


# --------------------------------------------------------------------------
# Text checkpoints
# --------------------------------------------------------------------------

CHECKPOINT_VERSION = 0  # LeaderEpochCheckpointFile / OffsetCheckpointFile CURRENT_VERSION

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
OFFSET_CHECKPOINT_FILES = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


@dataclass(frozen=True)
class EpochEntry:
    """``leader-epoch-checkpoint`` line: the leader epoch and its first offset."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class TopicPartitionOffset:
    """Offset-checkpoint line: ``topic partition offset``."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class Checkpoint:
    kind: str  # "leader-epoch" or "offset"
    version: int | None  # None: empty file
    expected_count: int | None  # None: file without a count line
    entries: list


def checkpoint_kind(path) -> str | None:
    """``"leader-epoch"`` / ``"offset"`` from the file name (a ``.tmp`` suffix is ignored)."""
    name = Path(path).name
    if name.endswith(".tmp"):
        name = name[: -len(".tmp")]
    if name == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch"
    if name in OFFSET_CHECKPOINT_FILES:
        return "offset"
    return None


def _line_offset(lines: list[str], text: str, index: int) -> int:
    # Byte-ish position of line ``index`` (characters; exact for ASCII files).
    pos = 0
    for i in range(index):
        pos += len(lines[i])
        pos += 2 if text.startswith("\r\n", pos) else 1
    return pos


def parse_checkpoint(data: bytes, kind: str, path=None) -> Checkpoint:
    """Parse a text checkpoint as ``CheckpointFile.CheckpointReadBuffer.read`` does.

    ``kind`` is ``"leader-epoch"`` or ``"offset"``.  An empty file, or one with
    only a version line, is an empty checkpoint (as in Kafka).
    """
    if kind not in ("leader-epoch", "offset"):
        raise ValueError(f"unknown checkpoint kind {kind!r}")
    location = "" if path is None else str(path)
    text = _decode_text(bytes(data), path)
    lines = _java_lines(text)

    def malformed(i: int) -> CorruptCheckpoint:
        return CorruptCheckpoint(f"Malformed line in checkpoint file [{location}]: {lines[i]}",
                                 path, _line_offset(lines, text, i))

    if not lines:
        return Checkpoint(kind, None, None, [])
    version = _parse_java_int(lines[0], 32)
    if version is None:
        raise malformed(0)
    if version != CHECKPOINT_VERSION:
        raise CorruptCheckpoint(f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} "
                                f"in checkpoint file at: {location}", path, 0)
    if len(lines) < 2:
        return Checkpoint(kind, version, None, [])
    expected = _parse_java_int(lines[1], 32)
    if expected is None:
        raise malformed(1)
    entries: list = []
    for i in range(2, len(lines)):
        parts = _java_split_ws(lines[i])
        if kind == "leader-epoch":
            if len(parts) != 2:
                raise malformed(i)
            epoch = _parse_java_int(parts[0], 32)
            start = _parse_java_int(parts[1], 64)
            bad = parts[0] if epoch is None else parts[1] if start is None else None
            if bad is not None:
                raise CorruptCheckpoint(_number_format(bad), path, _line_offset(lines, text, i),
                                        java_class="java.lang.NumberFormatException")
            entries.append(EpochEntry(epoch, start))
        else:
            if len(parts) != 3:
                raise malformed(i)
            partition = _parse_java_int(parts[1], 32)
            offset = _parse_java_int(parts[2], 64)
            bad = parts[1] if partition is None else parts[2] if offset is None else None
            if bad is not None:
                raise CorruptCheckpoint(_number_format(bad), path, _line_offset(lines, text, i),
                                        java_class="java.lang.NumberFormatException")
            entries.append(TopicPartitionOffset(parts[0], partition, offset))
    if len(entries) != expected:
        raise CorruptCheckpoint(f"Expected [{expected}] entries in checkpoint file [{location}], "
                                f"but found only [{len(entries)}]", path, _line_offset(lines, text, 1))
    return Checkpoint(kind, version, expected, entries)


def read_checkpoint(path, kind: str | None = None) -> Checkpoint:
    """Read a ``leader-epoch-checkpoint`` or an offset checkpoint (kind from the file name)."""
    if kind is None:
        kind = checkpoint_kind(path)
        if kind is None:
            raise UnreadableInput("not a known Kafka text checkpoint file name", str(path))
    return parse_checkpoint(_read_bytes(path), kind, path)


def read_leader_epoch_checkpoint(path) -> list[EpochEntry]:
    return read_checkpoint(path, "leader-epoch").entries


def read_offset_checkpoint(path) -> dict[tuple[str, int], int]:
    """``OffsetCheckpointFile.read``: (topic, partition) -> offset (later lines win)."""
    return {(e.topic, e.partition): e.offset for e in read_checkpoint(path, "offset").entries}


# --------------------------------------------------------------------------
# partition.metadata
# --------------------------------------------------------------------------

PARTITION_METADATA = "partition.metadata"
PARTITION_METADATA_VERSION = 0
_KEY_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: str  # Kafka's Uuid.toString: base64url of the 16 bytes, no padding
    topic_id_bytes: bytes
    topic_id_text: str  # as written in the file

    def encode(self) -> str:
        """What Kafka writes (``PartitionMetadata.encode``)."""
        return f"version: {self.version}\ntopic_id: {self.topic_id}"


def _java_base64url_decode(text: str) -> bytes | None:
    """``Base64.getUrlDecoder().decode``; None where Java throws IllegalArgumentException."""
    body = text.rstrip("=")
    pad = len(text) - len(body)
    if not _B64URL.fullmatch(body) or pad > 2:
        return None
    if pad:
        if len(text) % 4 != 0 or (len(body) % 4) + pad != 4:
            return None
    elif len(body) % 4 == 1:
        return None  # "Last unit does not have enough valid bits"
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))


def kafka_uuid_from_string(text: str) -> bytes | None:
    """``Uuid.fromString``: 16 bytes, or None where Kafka throws IllegalArgumentException."""
    if len(text.encode("utf-16-le")) // 2 > 24:
        return None
    raw = _java_base64url_decode(text)
    if raw is None or len(raw) != 16:
        return None
    return raw


def kafka_uuid_to_string(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def parse_partition_metadata(data: bytes, path=None) -> PartitionMetadata:
    """Parse ``partition.metadata`` as ``PartitionMetadataReadBuffer.read`` does.

    Lines after the second are ignored; any version >= 0 is accepted.
    """
    location = "" if path is None else str(path)
    text = _decode_text(bytes(data), path)
    lines = _java_lines(text)

    def malformed(i: int) -> CorruptCheckpoint:
        line = lines[i] if i < len(lines) else None
        offset = _line_offset(lines, text, i) if i < len(lines) else len(data)
        err = TruncatedPartitionMetadata if line is None else CorruptCheckpoint
        shown = "null" if line is None else line  # String.format("%s", null)
        return err(f"Malformed line in partition metadata file [{location}]: {shown}", path, offset)

    def field(i: int, key: str) -> str:
        if i >= len(lines):
            raise malformed(i)
        parts = _KEY_SEPARATOR.split(lines[i], maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise malformed(i)
        return parts[1]

    version = _parse_java_int(field(0, "version"), 32)
    if version is None:
        raise malformed(0)
    if version < PARTITION_METADATA_VERSION:
        raise CorruptCheckpoint(f"Unrecognized version of partition metadata file ({location}): {version}",
                                path, 0)
    topic_text = field(1, "topic_id")
    raw = kafka_uuid_from_string(topic_text)
    if raw is None:
        raise malformed(1)
    if raw == bytes(16):
        raise CorruptCheckpoint(f"Invalid topic ID in partition metadata file ({location})",
                                path, _line_offset(lines, text, 1))
    return PartitionMetadata(version, kafka_uuid_to_string(raw), raw, topic_text)


class TruncatedPartitionMetadata(CorruptCheckpoint, TruncatedData):
    """``partition.metadata`` ends before its version or topic_id line."""


def read_partition_metadata(path) -> PartitionMetadata:
    return parse_partition_metadata(_read_bytes(path), path)
