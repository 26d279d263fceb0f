"""Rendering of dump items (the dicts from ``segtool.ops.dump``) as text lines and JSON Lines,
item by item, or a ``BatchRun`` of Kafka batches a column at a time (the same lines)."""

from __future__ import annotations

import json
from binascii import b2a_base64
from functools import lru_cache, partial
from itertools import repeat
from operator import itemgetter, methodcaller

from segtool.formats.json_names import bytes_fields, utf8_text
from segtool.formats.record_shapes import json_key
from segtool.kafka.record_shape import BATCH_FIELDS, RECORD_FIELDS
from segtool.rocketmq.message_shape import MESSAGE_FIELDS, message_item
from segtool.formats.ranges import span
from segtool.formats.json_text import escaped_lines, to_json

_SKIP = {"kind", "file"}
_PREVIEW = 60  # characters of a key or value a dump line shows

_json_text = json.encoder.encode_basestring  # the run's lines are escaped as to_json escapes, once made


def _control_text(value: dict | None) -> str:
    """A control record's decoded value after its type: ``name=value`` pairs, nested ones as JSON."""
    if not value:
        return ""
    return " " + " ".join(f"{name}={show_text(json.dumps(field, separators=(',', ':')))}"
                          if isinstance(field, (dict, list)) else f"{name}={show_text(str(field))}"
                          for name, field in value.items())


def render_text_item(item: dict, full: bool = False) -> str:
    kind = item["kind"]
    if kind == "batch":
        head = (
            f"batch @{item['position']} {span(item['base_offset'], item['last_offset'])}"
            f" magic {item['magic']} {item['codec']} {item['timestamp_type']} {iso_time(item['max_timestamp'])}"
            f" size {item['size']} crc {'ok' if item['crc_valid'] else 'BAD'}"
        )
        if item.get("is_control"):
            head += " control"
        if item.get("is_transactional"):
            head += f" txn pid {item['producer_id']} epoch {item['producer_epoch']}"
        return head
    if kind == "record":
        text = (
            f"  offset {item['offset']} {iso_time(item['timestamp'])}"
            f" key {show_bytes(item['key_b64'], full, _PREVIEW)}"
            f" value {show_bytes(item['value_b64'], full, _PREVIEW)}"
        )
        if item.get("headers"):
            text += " headers [" + ",".join(show_text(h["key"]) for h in item["headers"]) + "]"
        if item.get("control_type"):
            text += f" control {item['control_type']}" + _control_text(item.get("control"))
        if item.get("decoded"):
            from segtool.kafka.internal_topics import decoded_text  # only an internal topic's records have one

            text += " " + decoded_text(item["decoded"])
        return text
    if kind == "message":
        crc = "ok" if item.get("body_crc") == item.get("body_crc_computed") else "BAD"
        return (
            f"message @{item['phy_offset']} {show_text(item.get('topic'))} queue {item.get('queue_id')}/"
            f"{item.get('queue_offset')} stored {iso_time(item.get('store_timestamp'))}"
            f" keys {show_text(item.get('keys'))} tags {show_text(item.get('tags'))}"
            f" body {item.get('body_length')} bytes crc {crc}"
        )
    if kind == "damaged_range":
        return f"DAMAGED {damaged_range_text(item)}"
    if kind in ("error", "zero_tail", "trailing_bytes", "blank_end"):
        label = {"error": "ERROR", "zero_tail": "zero-filled tail", "trailing_bytes": "trailing bytes",
                 "blank_end": "end-of-file blank marker"}[kind]
        rest = item.get("message") or (f"{item['length']} bytes" if item.get("length") is not None else "")
        return f"{label} at byte {item.get('byte_offset')}" + (f": {rest}" if rest else "")
    fields = " ".join(f"{k}={_field_text(k, v)}" for k, v in item.items() if k not in _SKIP)
    return f"{kind} {fields}"


def _field_text(name: str, value) -> str:
    """One ``name=value`` field of a generic item line: timestamps in ISO-8601, nested values as
    compact JSON, the rest as any field is shown to people."""
    if isinstance(value, (dict, list)):
        return to_json(value)
    if "timestamp" in name and isinstance(value, int) and not isinstance(value, bool):
        return iso_time(value)
    return _scalar(name, value, False)


# -- a run of Kafka batches (``dump.BatchRun``), a column at a time -------------------------
# Each function gives the lines the item-by-item rendering prints for the run's batch and
# record items, in the same order (tests/test_dump_runs.py compares them on every shape).


# -- column rendering: a run of batches or records printed a column at a time --------


def column_texts(values) -> str | list[str]:
    """An int column as text: one str when every value is the same, else a str per value
    (converted once per run of equal values: timestamps repeat within a millisecond)."""
    import numpy as np

    heads = np.flatnonzero(values[1:] != values[:-1]) + 1
    if not len(heads):
        return str(values[0])
    if len(heads) > len(values) // 4:
        return list(map(str, values.tolist()))
    heads = np.concatenate(([0], heads))
    texts = np.array(list(map(str, values[heads].tolist())), dtype=object)
    return np.repeat(texts, np.diff(heads, append=len(values))).tolist()


def column_lines(pieces: list, count: int) -> list[str]:
    """``count`` lines, each the concatenation of ``pieces``: a str is the same in every
    line, a list gives each line its own (joined in a C loop, no format per line)."""
    merged: list = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    if len(merged) == 1 and isinstance(merged[0], str):
        return merged * count
    return list(map("".join, zip(*[repeat(piece) if isinstance(piece, str) else piece for piece in merged])))


# each field's ``, "name": `` as a column run's JSON puts it, made once from the tables
_JSON_KEYS = {field.name: json_key(field.name) for fields in (BATCH_FIELDS, RECORD_FIELDS, MESSAGE_FIELDS)
              for field in fields}


def _item_json(kind: str, fields, values: dict, file_json: str) -> list:
    """``column_lines`` pieces of a JSON item: its kind, then the fields ``values`` holds (a piece,
    or a tuple of pieces) in the order of their table ``fields``, then its file."""
    pieces: list = ['{"kind": ' + _json_text(kind)]
    for field in fields:
        value = values.pop(field.name, None)
        if value is not None:
            pieces.append(_JSON_KEYS[field.name])
            if isinstance(value, tuple):
                pieces.extend(value)
            else:
                pieces.append(value)
    if values:
        raise KeyError(f"not fields of a {kind} item: {sorted(values)}")
    pieces += [', "file": ', file_json, "}"]
    return pieces


def run_json_lines(run) -> list[str]:
    """``to_json`` of every batch and record item of the run (all of whose CRCs are valid), or of
    every message item of a ``MessageRun``."""
    from segtool.ops.runs import MessageRun

    if isinstance(run, MessageRun):
        return escaped_lines(_message_run_json_lines(run))
    column, file_json = run.column, _json_text(run.file)
    kinds = _BatchKinds(column["attributes"])
    base, last, max_ts = column["base_offset"], _last_offsets(column), column["max_timestamp"]
    horizon = "null"
    with_horizon = column["attributes"] & 0x40 != 0
    if with_horizon.any():
        horizon = [str(ts) if flag else "null" for flag, ts in
                   zip(with_horizon.tolist(), column["base_timestamp"].tolist())]
    # texts a run's columns share are made once: single-record batches end where they start
    base_texts, max_ts_texts = column_texts(base), column_texts(max_ts)
    last_texts = base_texts if not column["last_offset_delta"].any() else column_texts(last)
    base_ts_texts = (max_ts_texts if (column["base_timestamp"] == max_ts).all()
                     else column_texts(column["base_timestamp"]))
    position_texts, base_sequence_texts = column_texts(column["position"]), column_texts(column["base_sequence"])
    last_sequences = _last_sequences(column)
    batch_lines = column_lines(_item_json("batch", BATCH_FIELDS, {
        "position": position_texts, "magic": "2", "base_offset": base_texts, "last_offset": last_texts,
        "size": column_texts(column["size"]), "crc": column_texts(column["crc"]), "crc_valid": "true",
        "codec": kinds.each(lambda kind: _json_text(kind.codec_name)),
        "timestamp_type": kinds.each(lambda kind: _json_text(kind.timestamp_type)),
        "max_timestamp": max_ts_texts, "record_count": column_texts(column["record_count"]),
        "partition_leader_epoch": column_texts(column["partition_leader_epoch"]),
        "base_timestamp": base_ts_texts, "producer_id": column_texts(column["producer_id"]),
        "producer_epoch": column_texts(column["producer_epoch"]), "base_sequence": base_sequence_texts,
        "last_sequence": (base_sequence_texts if (last_sequences == column["base_sequence"]).all()
                          else column_texts(last_sequences)),
        "is_transactional": kinds.each(lambda kind: "true" if kind.is_transactional else "false"),
        "is_control": kinds.each(lambda kind: "true" if kind.is_control else "false"),
        "delete_horizon_ms": horizon,
    }, file_json), len(base))
    if run.records is None:
        return escaped_lines(batch_lines)
    fields = _RunRecords(run)
    if not fields.count:
        return escaped_lines(batch_lines)
    records, r0, r1 = run.records, fields.r0, fields.r1
    key_text, key_b64 = _json_bytes(records.data, records.key_start[r0:r1], records.key_len[r0:r1])
    value_text, value_b64 = _json_bytes(records.data, records.value_start[r0:r1], records.value_len[r0:r1])
    headers = "[]"
    if records.headers is not None:
        headers = [to_json([{"key": key, **bytes_fields("value", value)} for key, value in found])
                   for found in records.headers[r0:r1]]
    record_lines = column_lines(_item_json("record", RECORD_FIELDS, {
        "batch_position": position_texts if fields.one_each else column_texts(column["position"][fields.batch_of]),
        "offset": fields.texts(fields.offsets, base, base_texts, column_texts),
        "timestamp": fields.texts(fields.timestamps, max_ts, max_ts_texts, column_texts),
        "key_size": column_texts(records.key_len[r0:r1]), "value_size": column_texts(records.value_len[r0:r1]),
        "key": tuple(key_text), "key_b64": key_b64, "value": tuple(value_text), "value_b64": value_b64,
        "sequence": fields.texts(fields.sequences(), column["base_sequence"], base_sequence_texts, column_texts),
        "headers": headers,
    }, file_json), fields.count)
    return escaped_lines(fields.merged(batch_lines, record_lines))


def run_text_lines(run, full: bool = False) -> list[str]:
    """``render_text_item`` of every batch and record item of the run (all of whose CRCs are valid),
    or of every message item of a ``MessageRun``."""
    from segtool.ops.runs import MessageRun

    if isinstance(run, MessageRun):
        return _message_run_text_lines(run)
    column = run.column
    kinds = _BatchKinds(column["attributes"])
    base, max_ts = column["base_offset"], column["max_timestamp"]
    transactional = column["attributes"] & 0x10 != 0
    txn = ""
    if transactional.any():
        txn = [f" txn pid {pid} epoch {epoch}" if flag else "" for flag, pid, epoch in
               zip(transactional.tolist(), column["producer_id"].tolist(), column["producer_epoch"].tolist())]
    base_texts, max_ts_times = column_texts(base), _iso_times(max_ts)
    batch_lines = column_lines([
        "batch @", column_texts(column["position"]), " offsets ", base_texts, "..",
        base_texts if not column["last_offset_delta"].any() else column_texts(_last_offsets(column)),
        " magic 2 ", kinds.each(lambda kind: f"{kind.codec_name} {kind.timestamp_type}"), " ", max_ts_times,
        " size ", column_texts(column["size"]), " crc ok", kinds.each(lambda kind: " control" if kind.is_control else ""), txn,
    ], len(base))
    if run.records is None:
        return escaped_lines(batch_lines)
    fields = _RunRecords(run)
    if not fields.count:
        return escaped_lines(batch_lines)
    records, r0, r1 = run.records, fields.r0, fields.r1
    headers = ""
    if records.headers is not None:
        headers = [" headers [" + ",".join(show_text(key) for key, _ in found) + "]" if found else ""
                   for found in records.headers[r0:r1]]
    record_lines = column_lines([
        "  offset ", fields.texts(fields.offsets, base, base_texts, column_texts), " ",
        fields.texts(fields.timestamps, max_ts, max_ts_times, _iso_times),
        " key ", _shown_bytes(records.data, records.key_start[r0:r1], records.key_len[r0:r1], full),
        " value ", _shown_bytes(records.data, records.value_start[r0:r1], records.value_len[r0:r1], full), headers,
    ], fields.count)
    return escaped_lines(fields.merged(batch_lines, record_lines))


def _message_run_text_lines(run) -> list[str]:
    from segtool.rocketmq.store_files import PROPERTY_KEYS, PROPERTY_TAGS  # loaded already: the run was read with it

    columns = run.columns
    header = columns.header
    keys, tags = columns.property_texts(PROPERTY_KEYS, PROPERTY_TAGS)
    return column_lines([
        "message @", column_texts(columns.positions + run.file_from_offset), " ",
        _shown_texts(columns.texts(columns.topic_at, columns.topic_length)),
        " queue ", column_texts(header["queueId"]), "/", column_texts(header["queueOffset"]),
        " stored ", _iso_times(header["storeTimestamp"]),
        " keys ", _shown_texts(keys), " tags ", _shown_texts(tags),
        " body ", column_texts(header["bodyLength"]), " bytes crc ok",
    ], columns.count)


def _message_run_json_lines(run) -> list[str]:
    import hashlib

    import numpy as np

    from segtool.rocketmq import store_files as rmq  # loaded already: the run was read with it

    columns, file_json = run.columns, _json_text(run.file)
    header, count = columns.header, columns.count
    topics = columns.texts(columns.topic_at, columns.topic_length)
    properties = columns.properties()
    bodies = columns.bodies()
    per_message = list(map(_message_property_json, topics, properties, header["storeTimestamp"].tolist(),
                           header["totalSize"].tolist(), header["physicalOffset"].tolist()))
    first = int(columns.positions[0])
    body_text, body_b64 = _json_bytes(columns.buf[first:int(columns.positions[-1] + header["totalSize"][-1])],
                                      columns.body_at - first, header["bodyLength"])
    sys_flag, body_crc, physical_offset = header["sysFlag"], header["bodyCRC"], header["physicalOffset"]
    lines = column_lines(_item_json("message", MESSAGE_FIELDS, {
        "file_offset": column_texts(columns.positions),
        "phy_offset": column_texts(columns.positions + run.file_from_offset),
        "total_size": column_texts(header["totalSize"]), "magic": str(rmq.MESSAGE_MAGIC_CODE), "version": "1",
        "body_crc": column_texts(body_crc), "body_crc_computed": column_texts(body_crc),
        "queue_id": column_texts(header["queueId"]), "flag": column_texts(header["flag"]),
        "queue_offset": column_texts(header["queueOffset"]), "physical_offset_field": column_texts(physical_offset),
        "sys_flag": column_texts(sys_flag), "transaction_type": column_texts(sys_flag & rmq.TRANSACTION_ROLLBACK_TYPE),
        "compressed": "false", "born_timestamp": column_texts(header["bornTimestamp"]),
        "born_host": _host_texts(header["bornHost"], header["bornPort"]),
        "store_timestamp": column_texts(header["storeTimestamp"]),
        "store_host": _host_texts(header["storeHost"], header["storePort"]),
        "reconsume_times": column_texts(header["reconsumeTimes"]),
        "prepared_transaction_offset": column_texts(header["preparedTransactionOffset"]),
        "body_offset": column_texts(columns.body_at), "body_length": column_texts(header["bodyLength"]),
        "topic": list(map(_json_text, topics)), "properties": [fields[0] for fields in per_message],
        "offset_msg_id": ('"', _offset_message_ids(header), '"'), "uniq_key": [fields[1] for fields in per_message],
        "keys": [fields[2] for fields in per_message], "tags": [fields[3] for fields in per_message],
        "body_sha256": ('"', list(map(_hexdigest, map(hashlib.sha256, bodies))), '"'),
        "dispatch": [fields[4] for fields in per_message], "body": tuple(body_text), "body_b64": body_b64,
    }, file_json), count)
    # what a plain message's columns do not hold: a compressed body, the 5.x property CRC
    special = (sys_flag & rmq.COMPRESSED_FLAG != 0) | np.fromiter(
        (values is not None and rmq.PROPERTY_CRC32 in values for values in properties), bool, count)
    for i in np.flatnonzero(special).tolist():
        item = message_item(rmq.decode_message(columns.buf, int(columns.positions[i]),
                                               file_from_offset=run.file_from_offset, keep_body=True))
        lines[i] = to_json({**item, "file": run.file})
    return lines


def _message_property_json(topic: str, properties: dict | None, store_timestamp: int, total_size: int,
                           physical_offset: int) -> tuple[str, str, str, str, str]:
    """The JSON of what a message item derives from its properties: them, its uniq key, keys and tags,
    and its dispatch (``decode_message``'s, for a message whose body CRC matches)."""
    from segtool.rocketmq import store_files as rmq

    try:
        code, keys, uniq = rmq.dispatch_info(topic, properties, store_timestamp)
    except ValueError:
        dispatch = '{"success": false, "msg_size": -1, "reason": "bad DELAY property"}'
    else:
        dispatch = (f'{{"success": true, "msg_size": {total_size}, "tags_code": {code}, "keys": {_json_or_null(keys)}, '
                    f'"uniq_key": {_json_or_null(uniq)}, "commit_log_offset": {physical_offset}}}')
    if properties is None:
        return "{}", "null", "null", "null", dispatch
    return (to_json(properties), _json_or_null(properties.get(rmq.PROPERTY_UNIQ_KEY)),
            _json_or_null(properties.get(rmq.PROPERTY_KEYS)), _json_or_null(properties.get(rmq.PROPERTY_TAGS)), dispatch)


def _json_or_null(text: str | None) -> str:
    return "null" if text is None else _json_text(text)


_hexdigest = methodcaller("hexdigest")


def _host_texts(addresses, ports) -> str | list[str]:
    """``host:port`` of each IPv4 address and port, made once per distinct pair."""
    import numpy as np

    from segtool.rocketmq.msgid import format_host

    pairs = np.stack((addresses.astype("S4").view(">u4").astype(np.int64), ports.astype(np.int64)), axis=1)
    distinct, where = np.unique(pairs, axis=0, return_inverse=True)
    texts = [_json_text(format_host(address.to_bytes(4, "big"), port)) for address, port in distinct.tolist()]
    return texts[0] if len(texts) == 1 else list(itemgetter(*where.reshape(-1).tolist())(texts))


def _offset_message_ids(header) -> list[str]:
    """``MessageDecoder.createMessageId`` of each message: store address, store port and the
    PHYSICALOFFSET field, in upper-case hex, made for all at once."""
    import numpy as np

    count = len(header)
    raw = np.empty((count, 16), dtype=np.uint8)
    raw[:, :4] = header["storeHost"].astype("S4").view(np.uint8).reshape(count, 4)
    raw[:, 4:8] = header["storePort"].astype(">i4").view(np.uint8).reshape(count, 4)
    raw[:, 8:] = header["physicalOffset"].astype(">i8").view(np.uint8).reshape(count, 8)
    text = raw.tobytes().hex().upper()
    return [text[at:at + 32] for at in range(0, 32 * count, 32)]


def _shown_texts(texts: list[str | None]) -> list[str]:
    """``show_text`` of each text: once per distinct text when they repeat (topics, tags), and not
    at all when every one prints as it is (keys)."""
    distinct = set(texts)
    if len(distinct) * 4 < len(texts):
        shown = {text: show_text(text) for text in distinct}
        return list(map(shown.__getitem__, texts))
    if None not in distinct and "" not in distinct and "".join(texts).isprintable():
        return texts
    return list(map(show_text, texts))


class _BatchKinds:
    """A run's batches grouped by their attributes (codec, timestamp type, flags): texts that
    depend only on those are made once per kind."""

    def __init__(self, attributes):
        import numpy as np

        from segtool.kafka.log import RecordBatch

        self.attributes = attributes
        self.kinds = [RecordBatch(0, 2, 0, 0, 0, 0, value, 0) for value in np.unique(attributes).tolist()]

    def each(self, text) -> str | list[str]:
        """``text(kind)`` of every batch: one str when all batches are of one kind."""
        if len(self.kinds) == 1:
            return text(self.kinds[0])
        by_kind = {kind.attributes: text(kind) for kind in self.kinds}
        return [by_kind[value] for value in self.attributes.tolist()]


def _last_offsets(column):
    return column["base_offset"] + column["last_offset_delta"]


def _last_sequences(column):
    from segtool.kafka.log import increment_sequences

    return increment_sequences(column["base_sequence"], column["last_offset_delta"])


class _RunRecords:
    """The record fields of a run that both renderings print, derived from the batch columns."""

    def __init__(self, run):
        import numpy as np

        column, records, bounds = run.column, run.records, run.record_bounds
        self.r0, self.r1 = int(bounds[0]), int(bounds[-1])
        self.count = self.r1 - self.r0
        per_batch = np.diff(bounds)
        self.batch_of = np.repeat(np.arange(len(per_batch)), per_batch)
        self.batch_rows = np.arange(len(per_batch)) + (bounds[:-1] - bounds[0])  # each batch's line among all
        self.one_each = self.count == len(per_batch)  # single-record batches: the batch columns say it all
        self.column, self.records = column, records
        self.offset_delta = records.offset_delta[self.r0:self.r1]
        self.offsets = column["base_offset"][self.batch_of] + self.offset_delta
        log_append = (column["attributes"] & 0x08 != 0)[self.batch_of]
        max_ts = column["max_timestamp"][self.batch_of]
        self.timestamps = np.where(log_append, max_ts, column["base_timestamp"][self.batch_of]
                                   + records.timestamp_delta[self.r0:self.r1])

    def texts(self, values, batch_values, batch_texts, convert):
        """``convert(values)`` of a record column, or the batch lines' ``batch_texts`` of the same
        values (single-record batches: a record's offset and timestamp are its batch's)."""
        if self.one_each and (values == batch_values).all():
            return batch_texts
        return convert(values)

    def sequences(self):
        from segtool.kafka.log import increment_sequences

        return increment_sequences(self.column["base_sequence"][self.batch_of], self.offset_delta)

    def merged(self, batch_lines: list[str], record_lines: list[str]) -> list[str]:
        """Each batch's line, then its records' lines."""
        import numpy as np

        merged = np.empty(len(batch_lines) + len(record_lines), dtype=object)
        is_record = np.ones(len(merged), dtype=bool)
        is_record[self.batch_rows] = False
        merged[self.batch_rows] = batch_lines
        merged[is_record] = record_lines
        return merged.tolist()


_b64 = partial(b2a_base64, newline=False)


def _byte_strings(data: bytes, starts, lengths) -> tuple[list[bytes], list[str]]:
    """``data[start:start + length]`` for each (empty for length -1), as bytes and as latin-1 text
    (one character per byte: ASCII texts are already right), cut in C loops."""
    import numpy as np

    cut = list(map(slice, starts.tolist(), (starts + np.maximum(lengths, 0)).tolist()))
    if len(cut) == 1:
        return [data[cut[0]]], [data[cut[0]].decode("latin-1")]
    take = itemgetter(*cut)
    return list(take(data)), list(take(data.decode("latin-1")))


# the bytes a JSON string holds as they are (not ", \\, control bytes or non-ASCII): deleting
# them from a string's bytes leaves nothing when its latin-1 text is its JSON text unquoted
_PLAIN_IN_JSON = bytes(b for b in range(0x20, 0x80) if b not in b'"\\')


def _json_bytes(data: bytes, starts, lengths) -> tuple[list, list[str]]:
    """The JSON of ``bytes_fields`` for each byte string, as pieces for ``column_lines``: its UTF-8
    text (null when it is not UTF-8) and its base64 (both null for length -1)."""
    import numpy as np

    chunks, texts = _byte_strings(data, starts, lengths)
    # quoted and decoded in one piece, then split: no call per string
    b64 = (b'"' + b'"\n"'.join(map(_b64, chunks)) + b'"').decode("ascii").split("\n")
    absent = np.flatnonzero(lengths < 0).tolist()
    for i in absent:
        b64[i] = "null"
    if not absent and not b"".join(chunks).translate(None, _PLAIN_IN_JSON):
        return ['"', texts, '"'], b64  # the common case: every text goes between quotes as it is
    quoted = []
    for chunk, text in zip(chunks, texts):
        quoted.append(f'"{text}"' if not chunk.translate(None, _PLAIN_IN_JSON) else to_json(utf8_text(chunk)))
    for i in absent:
        quoted[i] = "null"
    return [quoted], b64


def _shown_bytes(data: bytes, starts, lengths, full: bool) -> list[str]:
    """``show_data`` of each byte string ("null" for length -1), with the dump line's preview length."""
    import numpy as np


    chunks, texts = _byte_strings(data, starts, lengths)
    count = len(texts)
    plain = np.fromiter(map(str.isascii, texts), bool, count) & np.fromiter(map(str.isprintable, texts), bool, count)
    shown = np.array(texts, dtype=object)
    long = np.flatnonzero(plain & (lengths > _PREVIEW)) if not full else []
    if len(long):  # printable text, cut: the common case of a value, made a column at a time
        previews = _byte_strings(data, starts[long], np.full(len(long), _PREVIEW))[1]
        shown[long] = column_lines([previews, "… (", column_texts(lengths[long]), " bytes; --full shows all)"], len(long))
    for i in np.flatnonzero(~plain).tolist():
        shown[i] = show_data(chunks[i], full, _PREVIEW)
    shown[lengths == 0] = "(empty)"
    shown[lengths < 0] = "null"
    return shown.tolist()


def _iso_times(values) -> str | list[str]:
    """``iso_time`` of an int column, converted once per distinct value (and once per second)."""
    import numpy as np

    distinct, where = np.unique(values, return_inverse=True)
    if len(distinct) and 0 <= distinct[0] and distinct[-1] < _EXACT_SECONDS_UP_TO:
        texts = list(map(str.__add__, map(_iso_second, (distinct // 1000).tolist()),
                         map(_MILLISECONDS.__getitem__, (distinct % 1000).tolist())))
    else:
        texts = [iso_time(ms) for ms in distinct.tolist()]
    if len(texts) == 1:
        return texts[0]
    return list(itemgetter(*where.tolist())(texts))


def damaged_range_text(item: dict) -> str:
    """A damaged range's bytes, why, and what it lost, on one line."""
    text = f"{span(item['first_byte'], item['last_byte'], 'bytes')} ({item['length']} bytes, {item['reason']}): {item['message']}"
    where = f"{item['topic']} queue {item['queue_id']} " if item.get("topic") is not None else ""
    first, last = item["first_offset"], item["last_offset"]
    if item["offsets_lost"] == 0:
        return text + "; no offsets lost"
    if first is None and last is None:
        return text
    if last is None:
        return text + f"; {where}offsets from {first} on lost, if it held any"
    if first is None:
        return text + f"; {where}offsets up to {last} lost, if it held any"
    return text + f"; {where}{span(first, last)} ({item['offsets_lost']}) lost"


# -- answers and records for people (lookup, verify) ---------------------------------

VALUE_LIMIT = 200  # characters of a key or value shown before it is cut (``--full`` shows all)
LIST_LIMIT = 20  # items of a list of offsets shown before it is cut (``--full`` shows all)
INLINE_LIMIT = 100  # a nested object of plain fields up to this width is shown on one line
NONE = "-"  # a field without a value
_NO_LIMIT = 2**63 - 1  # Long.MAX_VALUE: an open end of a time window
_SPECIAL_TIMES = {-1: "latest", -2: "earliest", -3: "max-timestamp"}  # ListOffsets' special timestamps
_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # its ConsumeQueue's tags code is the delivery time


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC; Kafka's -1 as "no timestamp", no value as "-"."""
    if ms is None:
        return NONE
    if ms < 0:
        return "no timestamp"
    if ms < _EXACT_SECONDS_UP_TO:
        return _iso_second(ms // 1000) + _MILLISECONDS[ms % 1000]
    return _iso_time_of_float(ms)


# below 2**32 seconds the float ms / 1000 that datetime takes rounds to the exact millisecond:
# the second's text can be made once and the milliseconds appended
_EXACT_SECONDS_UP_TO = 2**32 * 1000
_MILLISECONDS = tuple(f".{ms:03d}Z" for ms in range(1000))


@lru_cache(maxsize=4096)
def _iso_second(seconds: int) -> str:
    return _iso_time_of_float(seconds * 1000)[:-5]  # without ".000Z"


def _iso_time_of_float(ms: int) -> str:
    import datetime as dt

    try:
        moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms (beyond the calendar)"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _escaped(text: str) -> str:
    """Text with every character a terminal would not print (control bytes, newlines) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escape_char(c) for c in text)


def _escape_char(c: str) -> str:
    if "\udc80" <= c <= "\udcff":  # a byte that is not UTF-8 (decoded with surrogateescape)
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c.encode("unicode_escape").decode("ascii")  # a backslash too: \\ stays apart from \n


def show_text(text: str | None) -> str:
    """A string field for people: escaped, "-" when absent, "(empty)" when empty."""
    if text is None:
        return NONE
    return _escaped(text) if text else "(empty)"


def show_bytes(b64: str | None, full: bool = False, limit: int = VALUE_LIMIT) -> str:
    """Bytes (given as base64, as in JSON items) for a person: text when printable, escaped when
    mostly text, hex when binary; cut after ``limit`` characters unless ``full``."""
    import base64

    if b64 is None:
        return "null"
    return show_data(base64.b64decode(b64), full, limit)


def show_data(data: bytes, full: bool = False, limit: int = VALUE_LIMIT) -> str:
    """``show_bytes`` of the bytes themselves."""
    if not data:
        return "(empty)"
    text = data.decode("utf-8", "surrogateescape")  # a byte that is not UTF-8 counts as unprintable
    if text.isprintable():
        shown, how = text, ""
    elif sum(c.isprintable() for c in text) >= 0.75 * len(text):
        shown, how = _escaped(text), "escaped"
    else:
        shown, how = data.hex(" "), "hex"
    if not full and len(shown) > limit:
        return f"{shown[:limit]}… ({len(data)} bytes{', ' + how if how else ''}; --full shows all)"
    return f"{shown} ({how})" if how else shown


def show_time(ms: int | None) -> str:
    """A timestamp field: ISO-8601 UTC with the epoch ms kept beside it."""
    if ms is None:
        return NONE
    if ms == _NO_LIMIT:
        return f"no limit  ({ms})"
    if ms < 0:
        return f"no timestamp  ({ms})"
    return f"{iso_time(ms)}  ({ms} ms)"


def record_lines(record: dict, full: bool = False) -> list[str]:
    """A Kafka record item (as ``dump --format json`` emits it) as labelled lines."""
    lines = [f"offset     {record['offset']}",
             f"time       {show_time(record['timestamp'])}",
             f"key        {show_bytes(record['key_b64'], full)}",
             f"value      {show_bytes(record['value_b64'], full)}"]
    for header in record.get("headers") or []:
        lines.append(f"header     {show_text(header['key'])} = {show_bytes(header['value_b64'], full)}")
    if record.get("control_type"):
        lines.append(f"control    {show_text(record['control_type'])}{_control_text(record.get('control'))}")
    if record.get("crc_valid") is False:
        lines.append("crc        BAD")
    lines.append(f"file       {show_text(record['file'])} (batch at byte {record['batch_position']})")
    return lines


def message_lines(message: dict, full: bool = False) -> list[str]:
    """A RocketMQ message item as labelled lines (or the offset and why it could not be read)."""
    if "topic" not in message:  # an index entry whose message could not be read
        return [f"phy offset {message.get('phy_offset')}",
                f"not read   {show_text(message.get('error') or 'no message at this offset')}"]
    lines = [f"topic      {show_text(message['topic'])}  queue {message['queue_id']}"
             f"  queue offset {message['queue_offset']}",
             f"phy offset {message['phy_offset']}  ({show_text(message.get('file'))})",
             f"stored     {iso_time(message['store_timestamp'])}  born {iso_time(message['born_timestamp'])}",
             f"keys       {show_text(message.get('keys'))}  tags {show_text(message.get('tags'))}"
             f"  uniq key {show_text(message.get('uniq_key'))}"]
    if message.get("collision"):
        lines.append("collision  yes: this message does not carry the key (its topic#key has the same hash)")
    stored_crc, computed_crc = message.get("body_crc"), message.get("body_crc_computed")
    if stored_crc is not None and computed_crc is not None and stored_crc != computed_crc:
        lines.append(f"body crc   BAD: stored {stored_crc}, computed {computed_crc}")
    dispatch = message.get("dispatch")
    if isinstance(dispatch, dict) and dispatch.get("success") is False:
        lines.append(f"dispatch   refused: {show_text(dispatch.get('reason') or 'no reason given')}")
    if "body_decompressed_b64" in message:
        lines.append(f"body       {show_bytes(message['body_decompressed_b64'], full)}  "
                     f"(decompressed from {show_text(message.get('compression'))})")
    elif "body_b64" in message:
        lines.append(f"body       {show_bytes(message['body_b64'], full)}")
    for name, value in sorted((message.get("properties") or {}).items()):
        lines.append(f"property   {show_text(name)} = {show_text(value)}")
    return lines


def answer_lines(answer: dict, full: bool = False) -> list[str]:
    """A lookup answer for people: its fields as ``name  value`` lines (times in ISO-8601,
    yes/no, lists comma-separated, nested objects as indented lines or tables), then the
    record(s) or message(s) it found; never Python reprs, never a raw control byte."""
    nested = {"record", "records", "message", "messages"}
    record = answer.get("record")
    if record and "batch_position" in record:  # a Kafka record: its block below shows these once
        nested |= {"offset", "timestamp", "key", "segment", "position"}
    missed = _kafka_miss(answer)
    if missed is not None:  # nothing found: say so, without a row of dashes
        nested |= {key for key in ("offset", "timestamp", "segment", "position") if answer.get(key) is None}
    fields = {key: value for key, value in answer.items() if key not in nested}
    if record and "key_b64" in record and "key" in fields:
        fields["key"] = _Shown(show_bytes(record["key_b64"], full))  # the key's bytes, not a lossy decoding
    if answer.get("topic") == _SCHEDULE_TOPIC and isinstance(fields.get("tags_code"), int):
        fields["tags_code"] = _Shown(f"{fields['tags_code']}  (delivery time {iso_time(fields['tags_code'])})")
    if fields.get("slot") == -1 and "mode" in fields:
        fields["slot"] = _Shown("-1  (no index entry at or below the offset: the segment's start)")
    if isinstance(fields.get("requested_timestamp"), int) and fields["requested_timestamp"] in _SPECIAL_TIMES:
        code = fields["requested_timestamp"]
        fields["requested_timestamp"] = _Shown(f"{_SPECIAL_TIMES[code]}  ({code})")
    lines = ([missed] if missed is not None else []) + _field_lines(fields, full, "")
    records = answer.get("records") or ([record] if record else [])
    for item in records:
        lines.append("")
        lines.extend(record_lines(item, full))
    messages = answer.get("messages") or ([answer["message"]] if answer.get("message") else [])
    for item in messages:
        lines.append("")
        lines.extend(message_lines(item, full))
    return lines


def _kafka_miss(answer: dict) -> str | None:
    """The sentence of a Kafka fetch or ListOffsets answer that found nothing; None when it found something."""
    if "partition_dir" not in answer or answer.get("offset") is not None or answer.get("record") \
            or answer.get("records") or "mode" in answer or "summary" in answer:
        return None
    end = answer.get("log_end_offset")
    if "requested_offset" in answer:
        where = f"no record at or after offset {answer['requested_offset']}"
        return where + (f": the log ends at offset {end}" if end is not None else "")
    if "requested_timestamp" in answer:
        return f"no record with a timestamp at or after {_scalar('timestamp', answer['requested_timestamp'], False)}"
    return None


class _Shown(str):
    """A value already rendered for people."""


def _is_time(name: str) -> bool:
    return "timestamp" in name or name in ("begin", "end") or name.endswith(("_time", "_time_ms"))


def _scalar(name: str, value, full: bool) -> str:
    if isinstance(value, _Shown):
        return str(value)
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and _is_time(name):
        return show_time(value)
    if isinstance(value, str):
        return show_text(value)
    return _escaped(str(value))


def _plain(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _inline(name: str, value, full: bool) -> str | None:
    """A scalar, a list of plain values or a small object of plain fields on one line; None when
    it needs lines of its own."""
    if _plain(value):
        return _scalar(name, value, full)
    if isinstance(value, list) and not value:
        return NONE
    if isinstance(value, list) and all(_plain(v) for v in value):
        if any(isinstance(v, str) and (" " in v or len(v) > 40) for v in value):
            return None  # sentences (notes): one a line
        shown = value if full or len(value) <= LIST_LIMIT else value[:LIST_LIMIT]
        text = ", ".join(_scalar(name, v, full) for v in shown)
        if len(shown) < len(value):
            text += f", … ({len(value)} in all; --full shows all)"
        return text
    if isinstance(value, dict) and not value:
        return NONE
    if isinstance(value, dict) and all(_plain(v) for v in value.values()):
        text = ", ".join(f"{show_text(k)} {_scalar(k, v, full)}" for k, v in value.items())
        return text if len(text) <= INLINE_LIMIT else None
    return None


def _field_lines(fields: dict, full: bool, indent: str) -> list[str]:
    """``name  value`` lines of an object, names aligned; what does not fit a line goes below its name."""
    names = {key: show_text(key) for key in fields}
    width = max((len(name) for name in names.values()), default=0)
    lines = []
    for key, value in fields.items():
        label = names[key].ljust(width)
        text = _inline(key, value, full)
        if text is not None:
            lines.append(f"{indent}{label}  {text}".rstrip())
            continue
        lines.append(f"{indent}{names[key]}")
        lines.extend(_block_lines(key, value, full, indent + "  "))
    return lines


def _block_lines(name: str, value, full: bool, indent: str) -> list[str]:
    """A list or object that needs lines of its own, each line starting with ``indent``."""
    if isinstance(value, dict):
        return _field_lines(value, full, indent)
    items = value if full or len(value) <= LIST_LIMIT else value[:LIST_LIMIT]
    lines: list[str] = []
    if all(isinstance(v, dict) and all(_plain(x) for x in v.values()) for v in items):
        lines = _table_lines(items, full, indent)
    else:
        for item in items:
            if isinstance(item, dict):
                inner = _field_lines(item, full, indent + "  ")
                lines.append(indent + "- " + inner[0][len(indent) + 2:] if inner else indent + "- " + NONE)
                lines.extend(inner[1:])
            elif isinstance(item, list):
                inline = _inline(name, item, full)
                lines.append(indent + "- " + (inline or f"list of {len(item)}"))
                if inline is None:
                    lines.extend(_block_lines(name, item, full, indent + "  "))
            else:
                lines.append(indent + _scalar(name, item, full))
    if len(items) < len(value):
        lines.append(f"{indent}… ({len(value)} in all; --full shows all)")
    return lines


def _table_lines(rows: list[dict], full: bool, indent: str) -> list[str]:
    """Objects of plain fields as a table: a heading of field names, one row each, columns aligned."""
    columns: list[str] = []
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    cells = [[show_text(c) for c in columns]]
    cells += [[_scalar(c, row[c], full) if c in row else NONE for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(line, widths))).rstrip() for line in cells]
