"""`dump --format kafka`: the output of Apache Kafka 3.9's kafka-dump-log.sh.

Line formats, the order of the end-of-run reports and the stopping rules follow
``kafka.tools.DumpLogSegments``.  Where Kafka would die with a Java stack trace
we stop at the same point and raise a ``SegtoolError`` naming the file and byte
offset (the CLI prints it as one line); everything printed before that point is
identical.  ``KafkaDumpOptions.kafka_version="4.1"`` switches to Kafka 4.x's JSON form of
``--transaction-log-decoder``; the other decoders print the same in 3.9 and 4.1.
"""

from __future__ import annotations

import os
from functools import partial
from operator import itemgetter
from dataclasses import dataclass
from typing import Callable

from segtool.errors import CorruptData, SegtoolError, UnreadableInput
from segtool.source import open_buffer
from segtool.ops.render import column_lines, column_texts
from segtool.kafka import state as kafka_state
from segtool.kafka import index as kafka_index
from segtool.kafka.names import (BOOTSTRAP_CHECKPOINT, INDEX, KRAFT_SNAPSHOT, LOG, PRODUCER_SNAPSHOT, TIME_INDEX,
                                         TXN_INDEX, kraft_snapshot_id, offset_from_file_name, sibling)
from segtool.kafka.log import (DEFAULT_CAP, NO_TIMESTAMP, TIMESTAMP_TYPES, BatchHeaders, BatchScan, RecordBatch,
                               increment_sequences)
from segtool.kafka.record_columns import chunk_records
from segtool.kafka.records import batch_records, control_record_type, end_txn_marker

INT_MAX = 2**31 - 1


@dataclass
class KafkaDumpOptions:
    deep_iteration: bool = False
    print_data_log: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    offsets_decoder: bool = False
    transaction_log_decoder: bool = False
    cluster_metadata_decoder: bool = False
    remote_log_metadata_decoder: bool = False
    share_group_state_decoder: bool = False
    skip_record_metadata: bool = False
    max_bytes: int = INT_MAX
    max_message_size: int = 5 * 1024 * 1024
    decompress_cap: int = DEFAULT_CAP
    # the kafka-dump-log whose output is reproduced: "3.9" (the corpus goldens) or "4.1",
    # which prints __transaction_state records as JSON (see transaction_log_json_texts)
    kafka_version: str = "3.9"

    @property
    def parser(self) -> Callable | None:
        """The record parser of the chosen decoder option (DumpLogSegmentsOptions.messageParser:
        the first one set, in Kafka's order), None for the plain string decoder."""
        transaction_log_parser = _transaction_log_parser if self.kafka_version == "3.9" else _transaction_log_json_parser
        cluster_metadata_parser = partial(_cluster_metadata_parser, kafka_version=self.kafka_version)
        for chosen, parser in ((self.offsets_decoder, _offsets_parser),
                               (self.transaction_log_decoder, transaction_log_parser),
                               (self.cluster_metadata_decoder, cluster_metadata_parser),
                               (self.remote_log_metadata_decoder, _remote_log_metadata_parser),
                               (self.share_group_state_decoder, _share_group_state_parser)):
            if chosen:
                return parser
        return None

    @property
    def print_contents(self) -> bool:
        return self.print_data_log or self.parser is not None

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
    from segtool.kafka.offsets import parse_offsets_record

    return parse_offsets_record(record.key, record.value, record.offset)


def _transaction_log_parser(record) -> tuple[str | None, str | None]:
    from segtool.kafka.coordinator import transaction_log_texts

    return transaction_log_texts(record.key, record.value, record.offset)


def _transaction_log_json_parser(record) -> tuple[str | None, str | None]:
    from segtool.kafka.coordinator import transaction_log_json_texts

    return transaction_log_json_texts(record.key, record.value, record.offset)


def _cluster_metadata_parser(record, kafka_version: str) -> tuple[str | None, str | None]:
    from segtool.kafka.metadata import cluster_metadata_payload

    return None, cluster_metadata_payload(record.value, record.offset, kafka_version)  # metadata records have no key


def _remote_log_metadata_parser(record) -> tuple[str | None, str | None]:
    from segtool.kafka.coordinator import remote_log_metadata_payload

    return None, remote_log_metadata_payload(record.value, record.offset)


def _share_group_state_parser(record) -> tuple[str | None, str | None]:
    from segtool.kafka.coordinator import share_group_state_texts

    return share_group_state_texts(record.key, record.value, record.offset)


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
        if suffix in (LOG, KRAFT_SNAPSHOT):
            self.dump_log(path)
        elif suffix == INDEX:
            self.dump_offset_index(path)
        elif suffix == TIME_INDEX:
            self.dump_time_index(path)
        elif suffix == PRODUCER_SNAPSHOT:
            self.dump_producer_snapshot(path)
        elif suffix == TXN_INDEX:
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
        if name.endswith(LOG):
            self.emit(f"Log starting offset: {offset_from_file_name(path)}")
        elif name == BOOTSTRAP_CHECKPOINT:
            self.emit("KRaft bootstrap snapshot")
        else:
            snapshot = kraft_snapshot_id(path)
            if snapshot is None:
                raise CorruptData("snapshot file name is not <offset>-<epoch>.checkpoint", path)
            self.emit(f"Snapshot end offset: {snapshot[0]}, epoch: {snapshot[1]}")
        buf = open_buffer(path)
        end = min(opts.max_bytes, len(buf))
        scan = BatchScan(buf, 0, end, path=path)
        segment = _SegmentDump(self, path)
        # regular chunks (v2 batches with whole headers) are printed column by column; the
        # other batches, and batches whose records need objects, one by one
        bulk = not opts.deep or (opts.parser is None and not opts.skip_record_metadata)
        try:
            for positions, chunk_end in scan.chunks():
                headers = BatchHeaders(buf, path, positions, chunk_end)
                if bulk and headers.regular:
                    segment.chunk(headers)
                else:
                    for batch in headers.batches():
                        segment.batch(batch)
        finally:
            if segment.pairs:
                # Kafka prepends each pair, so the report lists them newest first
                self.non_consecutive[path] = segment.pairs[::-1]
        trailing = end - segment.valid_bytes
        if trailing > 0 and opts.max_bytes == INT_MAX:
            self.emit(f"Found {trailing} invalid bytes at the end of {name}")
            self.damaged = True

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
                    line += _control_text(record, opts.kafka_version)
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
        log_buf = open_buffer(sibling(path, LOG))
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
                if not 0 <= position <= len(log_buf):  # a garbage entry: name it, where it is in the index
                    raise CorruptData(f"index entry {i} (offset {offset}) points to position {position}, outside "
                                      f"the {len(log_buf)}-byte log", path, i * index.entry_size)
                end = min(len(log_buf), position + opts.max_message_size)
                first = next(iter(BatchScan(log_buf, position, end, path=path)), None)
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
        log_buf = open_buffer(sibling(path, LOG))
        offset_index = kafka_index.OffsetIndex(sibling(path, INDEX))
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
                for batch in BatchScan(log_buf, position, len(log_buf), path=sibling(path, LOG)):
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


class _SegmentDump:
    """The lines of one .log: batch by batch, or a regular chunk at a time over columns.

    Both ways print the same lines (tests/test_decode_shapes.py compares them);
    a chunk's batches that need record objects (control batches, records the
    columnar decoder leaves to ``batch_records``) go one by one, in their place.
    """

    def __init__(self, tool: KafkaDumpLog, path: str):
        self.tool, self.path = tool, path
        self.options = tool.options
        self.last_offset = -1
        self.pairs: list[tuple[int, int]] = []  # non-consecutive offsets
        self.valid_bytes = 0

    def batch(self, batch: RecordBatch) -> None:
        tool, opts = self.tool, self.options
        tool.emit(batch_line(batch, self.valid_bytes))
        if opts.deep:
            parse = opts.parser or _plain_parser
            records = batch_records(batch, self.path, opts.decompress_cap)
            self._follow([record.offset for record in records])
            tool.emit_many(tool._record_lines(batch, records, parse))
        self.valid_bytes += batch.size
        tool.damaged |= not batch.crc_valid

    def _follow(self, offsets) -> None:
        last = self.last_offset
        for offset in offsets:
            if offset != last + 1 and last != -1:
                self.pairs.append((last, offset))
            last = offset
        self.last_offset = last

    def chunk(self, headers: BatchHeaders) -> None:
        import numpy as np

        opts = self.options
        columns = {name: headers.column(name) for name in _HEADER_FIELDS}
        columns["crc_valid"] = columns["crc"] == headers.computed_crc
        columns["position"] = headers.position
        columns["size"] = headers.size
        records = None
        by_batch = np.ones(len(headers), dtype=bool)
        if opts.deep:
            records = chunk_records(headers, self.path, opts.decompress_cap)
            by_batch = records.decoded & (columns["attributes"] & 0x20 == 0)  # control batches: one by one
        start = 0
        for one in np.flatnonzero(~by_batch).tolist() + [len(headers)]:
            if one > start:
                self._run(columns, records, start, one)
            if one < len(headers):
                self.batch(headers.batch(one))
            start = one + 1

    def _run(self, columns: dict, records, a: int, b: int) -> None:
        """Batches a..b-1 of a chunk, with their records (decoded in ``records``) when deep."""
        import numpy as np

        tool = self.tool
        column = {name: values[a:b] for name, values in columns.items()}
        lines = _batch_lines(column)
        if records is not None:
            first = records.first[a:b + 1]
            per_batch = np.diff(first)
            batch_of = np.repeat(np.arange(b - a), per_batch)
            record_lines, offsets = _record_lines(column, records, first[0], first[-1], batch_of,
                                                  self.options.print_contents)
            if len(offsets):
                previous = np.concatenate(([self.last_offset], offsets[:-1]))
                gaps = np.flatnonzero((offsets != previous + 1) & (previous != -1))
                self.pairs.extend(zip(previous[gaps].tolist(), offsets[gaps].tolist()))
                self.last_offset = int(offsets[-1])
            # each batch's line, then its records' lines
            batch_at = np.arange(b - a) + (first[:-1] - first[0])
            merged = np.empty(len(lines) + len(record_lines), dtype=object)
            is_record = np.ones(len(merged), dtype=bool)
            is_record[batch_at] = False
            merged[batch_at] = lines
            merged[is_record] = record_lines
            lines = merged.tolist()
        tool.emit_many(lines)
        self.valid_bytes = int(column["position"][-1] + column["size"][-1])
        tool.damaged |= not column["crc_valid"].all()


_HEADER_FIELDS = ("base_offset", "partition_leader_epoch", "crc", "attributes", "last_offset_delta", "base_timestamp",
                  "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count")


def _texts_of(values, known, known_texts: str | list[str]) -> str | list[str]:
    """``column_texts(values)``, reusing ``known_texts`` (of the column ``known``) when the values are those."""
    if len(values) == len(known) and (values == known).all():
        return known_texts
    return column_texts(values)


def _chosen(flags, when_set: str, otherwise: str) -> str | list[str]:
    """A text for each flag: one str when every flag is the same."""
    if flags.all() or not flags.any():
        return when_set if flags[0] else otherwise
    return [when_set if flag else otherwise for flag in flags.tolist()]


def _batch_lines(column: dict) -> list[str]:
    """``batch_line`` of each v2 batch of a run, from header columns."""
    import numpy as np

    attributes = column["attributes"]
    kinds = [RecordBatch(0, 2, 0, 0, 0, 0, int(attrs), 0) for attrs in np.unique(attributes).tolist()]
    by_kind = [np.flatnonzero(attributes == kind.attributes) for kind in kinds]

    def per_kind(text) -> str | list[str]:
        if len(kinds) == 1:
            return text(kinds[0])
        texts = np.empty(len(attributes), dtype=object)
        for kind, rows in zip(kinds, by_kind):
            texts[rows] = text(kind)
        return texts.tolist()

    base = column["base_offset"]
    last = base + column["last_offset_delta"]
    base_texts = column_texts(base)
    base_seq = column["base_sequence"]
    with_horizon = attributes & 0x40 != 0
    horizon = _optional_long(None)
    if with_horizon.any():
        horizon = [_optional_long(ts if flag else None) for flag, ts in
                   zip(with_horizon.tolist(), column["base_timestamp"].tolist())]
    pieces = [
        "baseOffset: ", base_texts, " lastOffset: ", _texts_of(last, base, base_texts),
        " count: ", column_texts(column["record_count"]),
        " baseSequence: ", column_texts(base_seq),
        " lastSequence: ", column_texts(increment_sequences(base_seq, column["last_offset_delta"])),
        " producerId: ", column_texts(column["producer_id"]), " producerEpoch: ", column_texts(column["producer_epoch"]),
        " partitionLeaderEpoch: ", column_texts(column["partition_leader_epoch"]),
        " isTransactional: ", per_kind(lambda kind: _java_bool(kind.is_transactional)),
        " isControl: ", per_kind(lambda kind: _java_bool(kind.is_control)),
        " deleteHorizonMs: ", horizon,
        " position: ", column_texts(column["position"]), " ", per_kind(lambda kind: kind.timestamp_type), ": ",
        column_texts(column["max_timestamp"]), " size: ", column_texts(column["size"]), " magic: 2",
        " compresscodec: ", per_kind(lambda kind: kind.codec_name), " crc: ", column_texts(column["crc"]),
        " isvalid: ", _chosen(column["crc_valid"], "true", "false"),
    ]
    return column_lines(pieces, len(base))


def _record_lines(column: dict, records, r0: int, r1: int, batch_of, print_contents: bool):
    """The "| offset: ..." lines of records r0..r1-1 of a chunk (v2, not control) and their offsets;
    ``batch_of`` gives each record's batch in the run's header ``column``s."""
    import numpy as np

    count = r1 - r0
    if not count:
        return [], np.zeros(0, dtype=np.int64)
    one_each = count == len(column["base_offset"])  # every batch holds one record
    base = column["base_offset"][batch_of]
    offsets = base + records.offset_delta[r0:r1]
    log_append = (column["attributes"] & 0x08 != 0)[batch_of]
    max_ts = column["max_timestamp"][batch_of]
    timestamps = np.where(log_append, max_ts, column["base_timestamp"][batch_of] + records.timestamp_delta[r0:r1])
    if one_each:  # the batch line's texts say the same
        offset_texts = _texts_of(offsets, base, column_texts(base))
        timestamp_texts = _texts_of(timestamps, max_ts, column_texts(max_ts))
    else:
        offset_texts, timestamp_texts = column_texts(offsets), column_texts(timestamps)
    key_len, value_len = records.key_len[r0:r1], records.value_len[r0:r1]
    if records.headers is None:
        header_keys = ""
    else:
        header_keys = [",".join([h[0] for h in found]) for found in records.headers[r0:r1]]
    pieces = [
        "| offset: ", offset_texts, " ", _chosen(log_append, TIMESTAMP_TYPES[1], TIMESTAMP_TYPES[0]), ": ",
        timestamp_texts, " keySize: ", column_texts(key_len), " valueSize: ", column_texts(value_len),
        " sequence: ", column_texts(increment_sequences(column["base_sequence"][batch_of], records.offset_delta[r0:r1])),
        " headerKeys: [", header_keys, "]",
    ]
    if print_contents:
        data = records.data
        for label, starts, lengths in ((" key: ", records.key_start[r0:r1], key_len),
                                       (" payload: ", records.value_start[r0:r1], value_len)):
            present = lengths >= 0
            if present.any():
                pieces += [_chosen(present, label, ""), _utf8_texts(data, starts, lengths)]
    return column_lines(pieces, count), offsets


def _utf8_texts(data: bytes, starts, lengths) -> list[str]:
    """Java's new String(bytes, UTF_8) of ``data[start:start + length]`` for each ("" for length -1)."""
    stops = (starts + lengths).tolist()
    starts = starts.tolist()
    # every byte a character: all texts cut in one C loop; ASCII ones are already right
    cut = itemgetter(*map(slice, starts, stops))(data.decode("latin-1"))
    texts = list(cut) if len(starts) > 1 else [cut]
    for i in [i for i, ascii in enumerate(map(str.isascii, texts)) if not ascii]:
        texts[i] = _utf8(data[starts[i]:stops[i]])
    return texts


def _control_text(record, kafka_version: str) -> str:
    """What DumpLogSegments prints after a control record's metadata (its control-record branch)."""
    from segtool.kafka.messages import jackson_json
    from segtool.kafka.metadata import kraft_control_value

    type_id, name = control_record_type(record)
    if name in ("ABORT", "COMMIT"):
        _version, epoch = end_txn_marker(record)
        return f" endTxnMarker: {name} coordinatorEpoch: {epoch}"
    # 3.9 has no LEADER_CHANGE case and prints it as any other type; 4.1 prints its value with a
    # colon after the label (KAFKA-19069), the other KRaft values without one
    if name == "LEADER_CHANGE" and kafka_version == "3.9":
        return f" controlType: {name}({type_id})"
    decoded = kraft_control_value(record.value, name, record.offset)
    if decoded is None:
        return f" controlType: {name}({type_id})"
    label, data = decoded
    separator = ": " if name == "LEADER_CHANGE" else " "
    return f" {label}{separator}{jackson_json(data)}"


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
