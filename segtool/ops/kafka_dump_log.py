"""`dump --format kafka`: the output of Apache Kafka 3.9's kafka-dump-log.sh.

Line formats, the order of the end-of-run reports and the stopping rules follow
``kafka.tools.DumpLogSegments``.  Where Kafka would die with a Java stack trace
we stop at the same point and raise a ``SegtoolError`` naming the file and byte
offset (the CLI prints it as one line); everything printed before that point is
identical.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable

from segtool.errors import CorruptData, SegtoolError, UnreadableInput
from segtool.source import open_buffer
from segtool.formats import kafka_index, kafka_state
from segtool.formats.kafka_names import kraft_snapshot_id, offset_from_file_name, sibling
from segtool.formats.kafka_log import (
    NO_TIMESTAMP,
    BatchScan,
    RecordBatch,
    batch_columns,
    batch_records,
    increment_sequence,
    control_record_type,
    end_txn_marker,
    kraft_control_value,
)

INT_MAX = 2**31 - 1


@dataclass
class KafkaDumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    offsets_decoder: bool = False
    skip_record_metadata: bool = False
    max_bytes: int = INT_MAX
    max_message_size: int = 5 * 1024 * 1024
    decompress_cap: int = 256 * 1024 * 1024

    @property
    def print_contents(self) -> bool:
        return self.print_data_log or self.offsets_decoder

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.print_contents


def _utf8(data: bytes) -> str:
    # Java's new String(bytes, UTF_8): malformed input becomes U+FFFD
    return data.decode("utf-8", "replace")


def _plain_parser(record) -> tuple[str | None, str | None]:
    # StringDecoder for key and value (the record loop inlines this for speed)
    key = None if record.key is None else _utf8(record.key)
    value = None if record.value is None else _utf8(record.value)
    return key, value


def _offsets_parser(record) -> tuple[str | None, str | None]:
    from segtool.formats.kafka_offsets import parse_offsets_record

    return parse_offsets_record(record.key, record.value, record.offset)


def _java_bool(flag: bool) -> str:
    return "true" if flag else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def batch_line(batch: RecordBatch, position: int) -> str:
    """DumpLogSegments.printBatchLevel."""
    if batch.magic >= 2:
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count}"
            f" baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence}"
            f" producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch}"
            f" partitionLeaderEpoch: {batch.partition_leader_epoch}"
            f" isTransactional: {_java_bool(batch.is_transactional)}"
            f" isControl: {_java_bool(batch.is_control)}"
            f" deleteHorizonMs: {_optional_long(batch.delete_horizon_ms)}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {position} {batch.timestamp_type}: {batch.max_timestamp}"
        f" size: {batch.size} magic: {batch.magic} compresscodec: {batch.codec_name}"
        f" crc: {batch.crc} isvalid: {_java_bool(batch.crc_valid)}"
    )


class KafkaDumpLog:
    """One kafka-dump-log run over several files.

    ``emit`` receives stdout lines; ``report_lines()`` gives the stderr reports
    Kafka prints after the last file.
    """

    def __init__(self, options: KafkaDumpOptions, emit: Callable[[str], None]):
        self.options = options
        self.emit = emit
        # a writer may take many lines at once (a list's extend, or our buffered writer)
        self.emit_many = getattr(emit, "extend", None) or getattr(emit, "many", None) or (
            lambda lines: [emit(line) for line in lines])
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.errors: list[str] = []  # printed to stderr as they happen in Kafka; kept in order here
        # a CRC mismatch or invalid trailing bytes: exit code 1, as in segtool's other formats
        self.damaged = False
        self.ignored = 0

    # -- dispatch -----------------------------------------------------------

    def dump_file(self, path: str) -> None:
        self.emit(f"Dumping {path}")
        name = os.path.basename(path)
        suffix = name[name.rfind("."):] if "." in name else ""
        if suffix in (".log", ".checkpoint"):
            self.dump_log(path)
        elif suffix == ".index":
            self.dump_offset_index(path)
        elif suffix == ".timeindex":
            self.dump_time_index(path)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(path)
        elif suffix == ".txnindex":
            self.dump_txn_index(path)
        else:
            self.errors.append(f"Ignoring unknown file {path}")
            self.ignored += 1

    def report_lines(self) -> list[str]:
        lines = list(self.errors)
        for path, pairs in self.index_mismatches.items():
            lines.append(f"Mismatches in :{path}")
            lines.extend(f"  Index offset: {a}, log offset: {b}" for a, b in pairs)
        for path, pairs in self.time_mismatches.items():
            lines.append(f"Found timestamp mismatch in :{path}")
            lines.extend(f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs)
        for path, pairs in self.time_out_of_order.items():
            lines.append(f"Found out of order timestamp in :{path}")
            lines.extend(f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs)
        for pairs in self.time_not_found.values():
            lines.append("The following indexed offsets are not found in the log.")
            lines.extend(f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs)
        for path, pairs in self.non_consecutive.items():
            lines.append(f"Non-consecutive offsets in {path}")
            lines.extend(f"  {a} is followed by {b}" for a, b in pairs)
        return lines

    # -- .log ---------------------------------------------------------------

    def dump_log(self, path: str) -> None:
        opts = self.options
        name = os.path.basename(path)
        if name.endswith(".log"):
            self.emit(f"Log starting offset: {offset_from_file_name(path)}")
        elif name == "bootstrap.checkpoint":
            self.emit("KRaft bootstrap snapshot")
        else:
            snapshot = kraft_snapshot_id(path)
            if snapshot is None:
                raise CorruptData("snapshot file name is not <offset>-<epoch>.checkpoint", path)
            self.emit(f"Snapshot end offset: {snapshot[0]}, epoch: {snapshot[1]}")
        buf = open_buffer(path)
        end = min(opts.max_bytes, len(buf))
        scan = BatchScan(buf, 0, end, path=path)
        parse = _offsets_parser if opts.offsets_decoder else _plain_parser
        emit = self.emit
        emit_many = self.emit_many
        last_offset = -1
        pairs: list[tuple[int, int]] = []
        valid_bytes = 0
        try:
            for batch in scan:
                emit(batch_line(batch, valid_bytes))
                if opts.deep:
                    columns = None
                    if parse is _plain_parser and not batch.is_control and not opts.skip_record_metadata:
                        columns = batch_columns(batch, path, opts.decompress_cap)
                    if columns is not None:
                        offsets, lines = self._column_lines(batch, columns)
                    else:
                        records = batch_records(batch, path, opts.decompress_cap)
                        offsets = [record.offset for record in records]
                        lines = self._record_lines(batch, records, parse)
                    for offset in offsets:
                        if offset != last_offset + 1 and last_offset != -1:
                            pairs.append((last_offset, offset))
                        last_offset = offset
                    emit_many(lines)
                valid_bytes += batch.size
                self.damaged |= not batch.crc_valid
        finally:
            if pairs:
                # Kafka prepends each pair, so the report lists them newest first
                self.non_consecutive[path] = pairs[::-1]
        trailing = end - valid_bytes
        if trailing > 0 and opts.max_bytes == INT_MAX:
            emit(f"Found {trailing} invalid bytes at the end of {name}")
            self.damaged = True

    def _column_lines(self, batch: RecordBatch, columns) -> tuple[list[int], list[str]]:
        """The same lines as ``_record_lines``, built from columnar records (v2, not control)."""
        count = columns.count
        offsets = (columns.offset_delta + batch.base_offset).tolist()
        if batch.is_log_append_time:
            timestamps = [batch.max_timestamp] * count
        else:
            timestamps = (columns.timestamp_delta + batch.base_timestamp).tolist()
        if batch.base_sequence == -1:
            sequences = [-1] * count
        else:
            sequences = [increment_sequence(batch.base_sequence, d) for d in columns.offset_delta.tolist()]
        if columns.headers is None:
            header_keys = [""] * count
        else:
            header_keys = [",".join([h[0] for h in hs]) for hs in columns.headers]
        ts_type = batch.timestamp_type
        print_contents = self.options.print_contents
        lines = []
        append = lines.append
        for offset, ts, seq, hk, key, value in zip(offsets, timestamps, sequences, header_keys,
                                                   columns.keys(), columns.values()):
            line = (f"| offset: {offset} {ts_type}: {ts} keySize: {-1 if key is None else len(key)}"
                    f" valueSize: {-1 if value is None else len(value)} sequence: {seq} headerKeys: [{hk}]")
            if print_contents:
                if key is not None:
                    line += f" key: {key.decode('utf-8', 'replace')}"
                if value is not None:
                    line += f" payload: {value.decode('utf-8', 'replace')}"
            append(line)
        return offsets, lines

    def _record_lines(self, batch: RecordBatch, records, parse) -> list[str]:
        """The "| offset: ..." lines of one batch (DumpLogSegments.dumpLog's inner loop)."""
        opts = self.options
        lines = []
        ts_type = batch.timestamp_type
        v2 = batch.magic >= 2
        control = batch.is_control
        print_contents = opts.print_contents and not control
        plain = parse is _plain_parser
        for record in records:
            key = record.key
            value = record.value
            prefix = "| "
            if opts.skip_record_metadata:
                line = ""
            else:
                line = (
                    f"| offset: {record.offset} {ts_type}: {record.timestamp}"
                    f" keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)}"
                )
                prefix = " "
                if v2:
                    line += f" sequence: {record.sequence} headerKeys: [{','.join([h[0] for h in record.headers])}]"
                else:
                    line += f" isValid: {_java_bool(record.crc_valid)} crc: {record.crc}}}"
                if control:
                    line += _control_text(record)
            if print_contents:
                if plain:
                    # Java's new String(bytes, UTF_8): malformed input becomes U+FFFD
                    if key is not None:
                        line += f"{prefix}key: {key.decode('utf-8', 'replace')}"
                    if value is not None:
                        line += f" payload: {value.decode('utf-8', 'replace')}"
                else:
                    key_text, payload = parse(record)
                    if key_text is not None:
                        line += f"{prefix}key: {key_text}"
                    if payload is not None:
                        line += f" payload: {payload}"
            lines.append(line)
        return lines

    # -- indexes ------------------------------------------------------------

    def dump_offset_index(self, path: str) -> None:
        opts = self.options
        index = kafka_index.OffsetIndex(path)
        log_buf = open_buffer(sibling(path, ".log"))
        if index.entries == 0:
            self.emit(f"{path} is empty.")
            return
        if opts.index_sanity_check:
            index.sanity_check()
            self.emit(f"{path} passed sanity check.")
            return
        mismatches = []
        try:
            for i in range(index.entries):
                offset, position = index.entry(i)
                if offset == index.base_offset and i > 0:
                    return
                end = min(len(log_buf), position + opts.max_message_size)
                first = next(iter(BatchScan(log_buf, position, end, path=path)), None) if position <= len(log_buf) else None
                if first is None:
                    raise CorruptData(
                        f"no record batch found at position {position} of the log for index entry {i} "
                        f"(offset {offset})",
                        path, i * index.entry_size,
                    )
                if first.last_offset != offset:
                    mismatches.append((offset, first.last_offset))
                if not opts.verify_index_only:
                    self.emit(f"offset: {offset} position: {position}")
        finally:
            if mismatches:
                self.index_mismatches[path] = mismatches[::-1]

    def dump_time_index(self, path: str) -> None:
        opts = self.options
        log_buf = open_buffer(sibling(path, ".log"))
        offset_index = kafka_index.OffsetIndex(sibling(path, ".index"))
        time_index = kafka_index.TimeIndex(path)
        if opts.index_sanity_check:
            time_index.sanity_check()
            self.emit(f"{path} passed sanity check.")
            return
        prev_ts = NO_TIMESTAMP
        for i in range(time_index.entries):
            timestamp, offset = time_index.entry(i)
            if offset == time_index.base_offset and i > 0:
                return
            position = offset_index.lookup(offset).position
            found = None
            if position <= len(log_buf):
                for batch in BatchScan(log_buf, position, len(log_buf), path=sibling(path, ".log")):
                    if batch.last_offset >= offset:
                        found = batch
                        break
            if found is None:
                self.time_not_found.setdefault(path, []).append((offset, -1))
            elif found.last_offset != offset:
                self.time_not_found.setdefault(path, []).append((offset, found.last_offset))
            else:
                max_ts = NO_TIMESTAMP
                for record in batch_records(found, path, opts.decompress_cap):
                    max_ts = max(max_ts, record.timestamp)
                if max_ts != timestamp:
                    self.time_mismatches.setdefault(path, []).append((timestamp, max_ts))
                if prev_ts >= timestamp:
                    self.time_out_of_order.setdefault(path, []).append((timestamp, prev_ts))
            if not opts.verify_index_only:
                self.emit(f"timestamp: {timestamp} offset: {offset}")
            prev_ts = timestamp

    # -- files that need no log ---------------------------------------------

    def dump_producer_snapshot(self, path: str) -> None:
        try:
            for line in kafka_state.snapshot_dump_lines(path):
                self.emit(line)
        except kafka_state.CorruptSnapshot as exc:
            # DumpLogSegments catches CorruptSnapshotException, prints its message, carries on
            self.errors.append(exc.kafka_message)

    def dump_txn_index(self, path: str) -> None:
        for line in kafka_index.txn_index_dump_lines(path):
            self.emit(line)


def _json_name(snake: str) -> str:
    """The generated JSON converter's name of a schema field given in snake_case (k_raft_version -> kRaftVersion)."""
    first, *rest = snake.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def _control_text(record) -> str:
    type_id, name = control_record_type(record)
    if name in ("ABORT", "COMMIT"):
        _version, epoch = end_txn_marker(record)
        return f" endTxnMarker: {name} coordinatorEpoch: {epoch}"
    # KRaft control records whose value is a generated message (formats/kafka_schemas.KRAFT_CONTROL_VALUES):
    # Kafka 3.9 prints it with the generated JSON converter, camelCase field names, e.g.
    # ` SnapshotHeader {"version":0,"lastContainedLogTimestamp":1713537540000}`.  KRaftVoters
    # (type 6) has no declared value and keeps the generic `controlType:` text.
    decoded = kraft_control_value(record, name)
    if decoded is not None:
        label, fields = decoded
        converted = {_json_name(field_name): value for field_name, value in fields.items()}
        return f" {label} {json.dumps(converted, separators=(',', ':'))}"
    return f" controlType: {name}({type_id})"


def run_kafka_dump(paths: list[str], options: KafkaDumpOptions, emit: Callable[[str], None],
                   emit_err: Callable[[str], None]) -> int:
    """Dump files as kafka-dump-log does; returns the exit code (0, 1 or 2)."""
    tool = KafkaDumpLog(options, emit)
    for path in paths:
        try:
            tool.dump_file(path)
        except UnreadableInput as exc:
            emit_err(f"segtool: {exc}")
            return 2
        except SegtoolError as exc:
            emit_err(f"segtool: {exc.at(path)}")
            return 1
    for line in tool.report_lines():
        emit_err(line)
    # index reports stay exit 0 as in Kafka: a hot copy's preallocated index shows "not found" entries
    # that are no damage; `segtool verify` judges indexes
    nothing_dumped = tool.ignored == len(paths)
    return 1 if tool.damaged or nothing_dumped else 0
