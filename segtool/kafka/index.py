"""Kafka segment indexes: ``.index``, ``.timeindex`` and ``.txnindex``.

The construct ``Struct`` of each entry below is the one declaration of its
layout; ``fastdecode.compile_fixed`` derives from it the ``struct.Struct`` used
for single entries and the numpy dtype used for read-only memory-mapped views of
whole files.  ``tests/test_kafka_state.py`` checks that construct and the
derived decoders agree on every index file of the corpus.

The class design follows Kafka's ``AbstractIndex`` -> ``OffsetIndex`` /
``TimeIndex`` split (storage/.../internals/log/AbstractIndex.java, OffsetIndex.java,
TimeIndex.java): the file mapping, entry counting, Kafka's cache-friendly binary
search and the ``DumpLogSegments`` stopping rule live once in ``AbstractIndex``;
each subclass declares its entry layout and what its key and value are.

Two entry counts are exposed, because Kafka itself uses two:

* ``entries`` -- the *broker view*.  ``AbstractIndex`` maps a pre-existing file
  and sets ``position = roundDownToExactMultiple(length, entrySize)``;
  ``entries = position / entrySize``.  A file the broker still had preallocated
  (zero-filled tail) therefore counts every slot, zeros included.
* ``dump_entries`` -- the *kafka-dump-log view*.  ``DumpLogSegments.dumpIndex`` /
  ``dumpTimeIndex`` walk ``0 until index.entries`` and stop at the first slot
  ``i > 0`` whose absolute offset equals the base offset (relative offset 0):
  "since it is a sparse file, in the event of a crash there may be many zero
  entries, stop if we see one".

``.txnindex`` (TransactionIndex.java / AbortedTxn.java) is not preallocated: it
is read as consecutive 34-byte entries while at least 34 bytes remain; a shorter
tail is ignored.

Files are evidence: they are only ever opened read-only (``np.memmap`` mode
``"r"``), so read-only files and read-only mounts work.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterator, NamedTuple


from segtool.source import open_buffer
from segtool.errors import CorruptData, UnreadableInput
from segtool.formats.fastdecode import FixedLayout, compiled

if TYPE_CHECKING:
    import numpy as np
from segtool.kafka.names import INDEX, TIME_INDEX, TXN_INDEX, offset_from_file_name

# --------------------------------------------------------------------------
# Entry schemas
# --------------------------------------------------------------------------

def _numpy():
    """numpy, imported on first use: lookups work on the mapped bytes directly."""
    import numpy

    return numpy


# Declared in ``kafka_schemas``; compiled layouts from the generated table (``fastdecode``).
OFFSET_INDEX_LAYOUT: FixedLayout = compiled("OFFSET_INDEX_ENTRY")
TIME_INDEX_LAYOUT: FixedLayout = compiled("TIME_INDEX_ENTRY")
TXN_INDEX_LAYOUT: FixedLayout = compiled("TXN_INDEX_ENTRY")

_LAZY = {
    # numpy dtypes and construct schemas are built on first use: lookups need neither
    "OFFSET_INDEX_DTYPE": lambda: OFFSET_INDEX_LAYOUT.numpy_dtype(),
    "TIME_INDEX_DTYPE": lambda: TIME_INDEX_LAYOUT.numpy_dtype(),
    "TXN_INDEX_DTYPE": lambda: TXN_INDEX_LAYOUT.numpy_dtype(),
    "OFFSET_INDEX_ENTRY": lambda: _schemas().OFFSET_INDEX_ENTRY,
    "TIME_INDEX_ENTRY": lambda: _schemas().TIME_INDEX_ENTRY,
    "TXN_INDEX_ENTRY": lambda: _schemas().TXN_INDEX_ENTRY,
}


def _schemas():
    from segtool.kafka import schemas as kafka_schemas

    return kafka_schemas


def __getattr__(name: str):
    if name in _LAZY:
        value = _LAZY[name]()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP
ABORTED_TXN_CURRENT_VERSION = 0  # AbortedTxn.CURRENT_VERSION



# --------------------------------------------------------------------------
# Errors that carry Kafka's own wording
# --------------------------------------------------------------------------


class KafkaReportedError(CorruptData):
    """A problem Kafka's tools report with a known exception class and message.

    ``kafka_message`` is the exact text Kafka prints (``e.getMessage``), with the
    file shown as the caller named it; ``java_class`` the exception Kafka throws,
    so a caller can render ``Exception in thread "main" <java_class>: <message>``.
    """

    java_class = "org.apache.kafka.common.KafkaException"

    def __init__(self, kafka_message: str, path=None, offset: int | None = None,
                 java_class: str | None = None):
        super().__init__(kafka_message, str(path) if path is not None else None, offset)
        self.kafka_message = kafka_message
        if java_class is not None:
            self.java_class = java_class


class CorruptIndex(KafkaReportedError):
    """``AbstractIndex.sanityCheck`` failed (Kafka's CorruptIndexException)."""

    java_class = "org.apache.kafka.storage.internals.log.CorruptIndexException"


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------

def _file_size(path) -> int:
    try:
        st = os.stat(path)
    except OSError as e:
        raise UnreadableInput(f"cannot read: {e.strerror or e}", str(path)) from None
    if not os.path.isfile(path):
        raise UnreadableInput("not a regular file", str(path))
    return st.st_size


def map_entries(path, dtype: np.dtype, count: int | None = None) -> np.ndarray:
    """A read-only memory-mapped structured array of whole entries of ``path``.

    ``count`` defaults to ``file size // dtype.itemsize`` (a partial trailing
    entry is left out, as Kafka's ``roundDownToExactMultiple`` does).  The array
    keeps the mapping alive; it is a plain ``np.ndarray`` view (no write access).
    """
    size = _file_size(path)
    n = size // dtype.itemsize if count is None else count
    if n < 0 or n * dtype.itemsize > size:
        raise ValueError(f"{count} entries of {dtype.itemsize} bytes exceed the file size {size}")
    if n == 0:
        return _numpy().zeros(0, dtype=dtype)
    return _numpy().frombuffer(open_buffer(path), dtype=dtype, count=n)


# --------------------------------------------------------------------------
# Offset and time indexes
# --------------------------------------------------------------------------


class OffsetPosition(NamedTuple):
    """OffsetIndex entry with the offset made absolute (Kafka's OffsetPosition)."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """TimeIndex entry with the offset made absolute (Kafka's TimestampOffset)."""

    timestamp: int
    offset: int


class _FieldView:
    """One field of every entry, read from the mapping on demand: what the binary search probes."""

    __slots__ = ("buffer", "size", "offset", "unpack", "add", "warm", "warm_from")

    def __init__(self, index: "AbstractIndex", field: str, add: int):
        layout = index.LAYOUT
        self.buffer = index.buffer
        self.size = layout.size
        self.offset = layout.field_offset(field)
        code = layout.packer.format[0] + _field_code(layout, field)
        self.unpack = __import__("struct").Struct(code).unpack_from
        self.add = add
        self.warm, self.warm_from = None, -1  # the warm section's values, read once (at most 8 KiB of entries)

    def _warm_values(self, first_hot: int, entries: int) -> list[int]:
        if self.warm_from != first_hot or len(self.warm) != entries - first_hot:
            unpack, buf, size, at, add = self.unpack, self.buffer, self.size, self.offset, self.add
            self.warm = [unpack(buf, n * size + at)[0] + add for n in range(first_hot, entries)]
            self.warm_from = first_hot
        return self.warm

    def __getitem__(self, n: int) -> int:
        return self.unpack(self.buffer, n * self.size + self.offset)[0] + self.add

    def slot_range_for(self, target: int, entries: int, warm_entries: int) -> int:
        """Kafka's ``indexSlotRangeFor`` (its largest lower bound) with the same steps, so lookups on
        corrupt (non-monotonic) or zero-tailed indexes land on the slot the broker would use.

        The warm section (the lookup hot path) is probed in the list it was read
        into once; the cold part, in the mapping.
        """
        first_hot = max(0, entries - 1 - warm_entries)
        warm = self._warm_values(first_hot, entries)
        if warm[0] < target:
            keys, first, lo, hi = warm, first_hot, 0, entries - 1 - first_hot
        elif self[0] > target:
            return -1
        else:
            keys, first, lo, hi = self, 0, 0, first_hot
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = keys[mid]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return first + mid
        return first + lo


def _field_code(layout: FixedLayout, field: str) -> str:
    from segtool.formats.fastdecode import _split_codes

    return _split_codes(layout.packer.format)[layout.names.index(field)]


class AbstractIndex(ABC):
    """Read-only view of a Kafka offset or time index file.

    Subclasses set ``LAYOUT`` (compiled from the entry schema in
    ``kafka_schemas``), ``SUFFIX``, and which fields are the search key and value.
    Entries are read from the read-only mapping with the compiled layout; numpy
    views (``array``) are made only for whole-file work.
    """

    LAYOUT: ClassVar[FixedLayout]
    SUFFIX: ClassVar[str]
    KIND: ClassVar[str]
    entry_size: ClassVar[int]  # bytes per entry (Kafka's entrySize()), = LAYOUT.size
    WARM_ENTRIES: ClassVar[int]  # entries in the last 8,192 bytes: Kafka's warm section

    def __init__(self, path, base_offset: int | None = None):
        self.path = Path(path)
        self.display_path = os.fspath(path)  # as given: Kafka's messages show the path as passed
        self.base_offset = offset_from_file_name(path) if base_offset is None else int(base_offset)
        self.length = _file_size(path)
        self._buffer = None
        self._array = None
        self._keys = None
        self._values = None
        self._dump_entries: int | None = None
        self._entries = self.length // self.entry_size

    # -- sizes -------------------------------------------------------------

    @property
    def entries(self) -> int:
        """Broker view: ``roundDownToExactMultiple(length, entrySize) / entrySize``.

        After ``trim_to_valid()`` only the entries before a zero-filled tail count,
        as after the broker's recovery (``trimToValidSize``).
        """
        return self._entries

    @property
    def valid_entries(self) -> int:
        """Entries before the first all-zero slot (the preallocated tail of a hot copy).

        Stricter than the dump view: an all-zero first slot is preallocation too,
        since Kafka never indexes position 0 (the first entry needs more than
        index.interval.bytes before it).
        """
        size = self.entry_size
        end = self.entries * size
        if end == 0:
            return 0
        zero = bytes(size)
        buf = self.buffer
        pos = buf.find(zero, 0, end)
        while pos != -1 and pos % size:  # a run of zeros across two entries is not an empty slot
            pos = buf.find(zero, pos + 1, end)
        return self.entries if pos == -1 else pos // size

    def trim_to_valid(self) -> "AbstractIndex":
        """Search only the entries before a preallocated zero tail (a recovered broker's view)."""
        limit = self.valid_entries
        self._entries = limit
        self._keys = self._values = None
        if self._array is not None:
            self._array = self._array[:limit]
        return self

    @property
    def max_entries(self) -> int:
        """``mmap.limit() / entrySize``; equal to ``entries`` for a file opened read-only."""
        return self.length // self.entry_size

    @property
    def trailing_bytes(self) -> int:
        """Bytes after the last whole entry (a sanity-check failure in Kafka)."""
        return self.length % self.entry_size

    @property
    def buffer(self):
        """The file, mapped read-only."""
        if self._buffer is None:
            self._buffer = open_buffer(self.path)
        return self._buffer

    @property
    def array(self):
        """Raw entries (relative offsets, as stored) of the broker view: a numpy view of the mapping."""
        if self._array is None:
            dtype = self.LAYOUT.numpy_dtype()
            if self.entries:
                self._array = _numpy().frombuffer(self.buffer, dtype=dtype, count=self.entries)
            else:
                self._array = _numpy().zeros(0, dtype=dtype)
        return self._array

    @property
    def dump_entries(self) -> int:
        """kafka-dump-log view: entries before the first slot ``i > 0`` whose offset is the base offset."""
        if self._dump_entries is None:
            rel = self.array["relative_offset"]
            if len(rel) <= 1:
                self._dump_entries = len(rel)
            else:
                hits = _numpy().flatnonzero(rel[1:] == 0)
                self._dump_entries = int(hits[0]) + 1 if len(hits) else len(rel)
        return self._dump_entries

    @property
    def offsets(self) -> np.ndarray:
        """Absolute offsets (int64) of the broker-view entries."""
        return self.array["relative_offset"].astype("int64") + self.base_offset

    # -- entries -----------------------------------------------------------

    @abstractmethod
    def _make_entry(self, raw: tuple):
        """The entry as Kafka's OffsetPosition / TimestampOffset (offset absolute)."""

    def entry(self, n: int):
        """Entry ``n`` with the offset made absolute (Kafka's ``entry(n)``)."""
        if not 0 <= n < self.entries:
            raise IndexError(f"attempt to fetch entry {n} from {self.path}, which has {self.entries} entries")
        return self._make_entry(self.LAYOUT.unpack_from(self.buffer, n * self.entry_size))

    @abstractmethod
    def last_entry(self):
        """Kafka's lastEntry (its empty-index value differs per subclass)."""

    # -- Kafka's search (AbstractIndex.indexSlotRangeFor) --------------------

    @abstractmethod
    def _key_array(self):
        """The search key of every entry (offset for .index, timestamp for .timeindex)."""

    @abstractmethod
    def _value_array(self):
        """The other field of every entry (position for .index, offset for .timeindex)."""

    def largest_lower_bound_slot(self, target: int, by_value: bool = False) -> int:
        """Kafka's ``largestLowerBoundSlotFor``: -1 if every entry is larger than ``target``."""
        return self._slot_range_for(target, by_value)

    def ceiling_slot(self, target: int, by_value: bool = False) -> int:
        """The first entry with key >= target, or -1.

        Kafka's ``smallestUpperBoundSlotFor`` misses an entry equal to the target
        when that entry is where its binary search starts (e.g. the first entry),
        answering the next slot; this derives the ceiling from the floor instead.
        """
        floor = self.largest_lower_bound_slot(target, by_value)
        keys = self._value_array() if by_value else self._key_array()
        if floor != -1 and int(keys[floor]) == target:
            return floor
        return floor + 1 if floor + 1 < self.entries else -1

    def _slot_range_for(self, target: int, by_value: bool) -> int:
        entries = self._entries
        if entries == 0:
            return -1
        keys = self._value_array() if by_value else self._key_array()
        return keys.slot_range_for(target, entries, self.WARM_ENTRIES)

    # -- life cycle --------------------------------------------------------

    def close(self) -> None:
        """Drop this object's references to the mapping (arrays handed out keep it alive)."""
        self._array = self._keys = self._values = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.path)!r}, base_offset={self.base_offset}, "
                f"entries={self.entries})")


class OffsetIndex(AbstractIndex):
    """``.index``: offset -> byte position in the ``.log`` (key: offset, value: position)."""

    LAYOUT = OFFSET_INDEX_LAYOUT
    SUFFIX = INDEX
    KIND = "offset"
    entry_size = OFFSET_INDEX_LAYOUT.size  # 8
    WARM_ENTRIES = 8192 // entry_size

    def _make_entry(self, raw: tuple) -> OffsetPosition:
        rel, position = raw
        return OffsetPosition(self.base_offset + rel, position)

    def _key_array(self):
        if self._keys is None:
            self._keys = _FieldView(self, "relative_offset", self.base_offset)
        return self._keys

    def _value_array(self):
        if self._values is None:
            self._values = _FieldView(self, "position", 0)
        return self._values

    @property
    def positions(self) -> np.ndarray:
        return self.array["position"]

    def last_entry(self) -> OffsetPosition:
        """``OffsetIndex.lastEntry``: (baseOffset, 0) when empty."""
        if self.entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(self.entries - 1)

    @property
    def last_offset(self) -> int:
        return self.last_entry().offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target; (baseOffset, 0) if none (``OffsetIndex.lookup``)."""
        slot = self._slot_range_for(target_offset, False)
        if slot == -1:
            return OffsetPosition(self.base_offset, 0)
        return self._make_entry(self.LAYOUT.unpack_from(self.buffer, slot * self.entry_size))

    def lookup_position(self, target_offset: int) -> int:
        """``lookup(target_offset).position`` without building the entry: the read path's question."""
        entries = self._entries
        if entries == 0:
            return 0
        slot = self._key_array().slot_range_for(target_offset, entries, self.WARM_ENTRIES)
        return 0 if slot == -1 else self._value_array()[slot]

    def sanity_check(self, display_path=None) -> None:
        """``OffsetIndex.sanityCheck``; raises ``CorruptIndex`` with Kafka's message."""
        shown = self.display_path if display_path is None else display_path
        last = self.last_offset
        if self.entries != 0 and last < self.base_offset:
            raise CorruptIndex(
                f"Corrupt index found, index file {shown} has non-zero size but the last offset "
                f"is {last} which is less than the base offset {self.base_offset}",
                shown, (self.entries - 1) * self.entry_size)
        if self.length % self.entry_size != 0:
            raise CorruptIndex(
                f"Index file {shown} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}",
                shown, self.length - self.trailing_bytes)


class TimeIndex(AbstractIndex):
    """``.timeindex``: timestamp -> offset (key: timestamp, value: offset)."""

    LAYOUT = TIME_INDEX_LAYOUT
    SUFFIX = TIME_INDEX
    KIND = "time"
    entry_size = TIME_INDEX_LAYOUT.size  # 12
    WARM_ENTRIES = 8192 // entry_size

    def _make_entry(self, raw: tuple) -> TimestampOffset:
        timestamp, rel = raw
        return TimestampOffset(timestamp, self.base_offset + rel)

    def _key_array(self):
        if self._keys is None:
            self._keys = _FieldView(self, "timestamp", 0)
        return self._keys

    def _value_array(self):
        if self._values is None:
            self._values = _FieldView(self, "relative_offset", self.base_offset)
        return self._values

    @property
    def timestamps(self) -> np.ndarray:
        return self.array["timestamp"]

    def last_entry(self) -> TimestampOffset:
        """``TimeIndex.lastEntryFromIndexFile``: (NO_TIMESTAMP, baseOffset) when empty."""
        if self.entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self.entries - 1)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= target; (NO_TIMESTAMP, baseOffset) if none."""
        slot = self._slot_range_for(target_timestamp, False)
        if slot == -1:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self._make_entry(self.LAYOUT.unpack_from(self.buffer, slot * self.entry_size))

    def sanity_check(self, display_path=None) -> None:
        """``TimeIndex.sanityCheck``; raises ``CorruptIndex`` with Kafka's message."""
        shown = self.display_path if display_path is None else display_path
        last = self.last_entry()
        if self.entries != 0:
            first_ts = self.entry(0).timestamp
            if last.timestamp < first_ts:
                raise CorruptIndex(
                    f"Corrupt time index found, time index file ({shown}) has non-zero size but "
                    f"the last timestamp is {last.timestamp} which is less than the first "
                    f"timestamp {first_ts}",
                    shown, (self.entries - 1) * self.entry_size)
            if last.offset < self.base_offset:
                raise CorruptIndex(
                    f"Corrupt time index found, time index file ({shown}) has non-zero size but "
                    f"the last offset is {last.offset} which is less than the first offset "
                    f"{self.base_offset}",
                    shown, (self.entries - 1) * self.entry_size)
        if self.length % self.entry_size != 0:
            raise CorruptIndex(
                f"Time index file {shown} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}",
                shown, self.length - self.trailing_bytes)


def open_index(path, base_offset: int | None = None) -> AbstractIndex:
    """``OffsetIndex`` for ``*.index``, ``TimeIndex`` for ``*.timeindex`` (by suffix)."""
    name = Path(path).name
    if name.endswith(TIME_INDEX):
        return TimeIndex(path, base_offset)
    if name.endswith(INDEX):
        return OffsetIndex(path, base_offset)
    raise UnreadableInput("not a .index or .timeindex file", str(path))


# --------------------------------------------------------------------------
# Transaction index
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AbortedTxn:
    """One ``.txnindex`` entry (AbortedTxn.java)."""

    version: int  # the int16 as written
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    @property
    def kafka_version(self) -> int:
        """What ``AbortedTxn.version()`` returns: ``buffer.get(0)``, the high byte, signed."""
        return self.version >> 8

    def __str__(self) -> str:  # AbortedTxn.toString
        return (f"AbortedTxn(version={self.kafka_version}, producerId={self.producer_id}, "
                f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
                f"lastStableOffset={self.last_stable_offset})")


class TransactionIndex:
    """Read-only view of a ``.txnindex`` (TransactionIndex.java)."""

    LAYOUT = TXN_INDEX_LAYOUT
    SUFFIX = TXN_INDEX
    entry_size = TXN_INDEX_LAYOUT.size  # 34

    def __init__(self, path, base_offset: int | None = None):
        self.path = Path(path)
        self.display_path = os.fspath(path)
        self.base_offset = offset_from_file_name(path) if base_offset is None else int(base_offset)
        self.length = _file_size(path)
        self._array = None

    @property
    def entries(self) -> int:
        """Whole entries: Kafka's iterator continues while ``size - position >= 34``."""
        return self.length // self.entry_size

    @property
    def trailing_bytes(self) -> int:
        """Bytes after the last whole entry; Kafka ignores them silently."""
        return self.length % self.entry_size

    @property
    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = map_entries(self.path, self.LAYOUT.numpy_dtype(), self.entries)
        return self._array

    def iter_raw(self) -> Iterator[AbortedTxn]:
        """Every whole entry, without Kafka's version check."""
        for raw in self.array.tolist():
            yield AbortedTxn(*raw)

    def aborted_txns(self, display_path=None) -> list[AbortedTxn]:
        """``allAbortedTxns``: every entry, failing like Kafka on a version above 0.

        Raises ``KafkaReportedError`` (Kafka's KafkaException) naming the entry.
        """
        shown = self.display_path if display_path is None else display_path
        result = []
        versions = self.array["version"]
        bad = _numpy().flatnonzero((versions >> 8) > ABORTED_TXN_CURRENT_VERSION)
        limit = int(bad[0]) if len(bad) else self.entries
        for raw in self.array[:limit].tolist():
            result.append(AbortedTxn(*raw))
        if len(bad):
            v = int(versions[limit]) >> 8
            raise KafkaReportedError(
                f"Unexpected aborted transaction version {v} in transaction index {shown}, "
                f"current version is {ABORTED_TXN_CURRENT_VERSION}",
                shown, limit * self.entry_size)
        return result

    def sanity_check(self, display_path=None) -> None:
        """``TransactionIndex.sanityCheck``: every lastOffset >= the segment base offset."""
        shown = self.display_path if display_path is None else display_path
        for i, txn in enumerate(self.iter_raw()):
            if txn.kafka_version > ABORTED_TXN_CURRENT_VERSION:
                self.aborted_txns(display_path)  # raises Kafka's version error
            if txn.last_offset < self.base_offset:
                raise CorruptIndex(
                    f"Last offset of aborted transaction {txn} in index {shown} is less than "
                    f"start offset {self.base_offset}", shown, i * self.entry_size)

    def close(self) -> None:
        self._array = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def format_aborted_txn(txn: AbortedTxn) -> str:
    """One line of ``kafka-dump-log --files X.txnindex``."""
    return (f"version: {txn.kafka_version} producerId: {txn.producer_id} "
            f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
            f"lastStableOffset: {txn.last_stable_offset}")


def txn_index_dump_lines(index, display_path=None) -> Iterator[str]:
    """Lines of ``kafka-dump-log --files X.txnindex`` after the ``Dumping`` header.

    Kafka collects every entry before printing, so a bad version raises
    ``KafkaReportedError`` before any line is produced (the tool then dies with
    that exception, exit code 1).
    """
    if not isinstance(index, TransactionIndex):
        index = TransactionIndex(index, base_offset=_base_or_zero(index))
    txns = index.aborted_txns(display_path)
    for txn in txns:
        yield format_aborted_txn(txn)


def _base_or_zero(path) -> int:
    try:
        return offset_from_file_name(path)
    except UnreadableInput:
        return 0
