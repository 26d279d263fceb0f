"""Human-readable text rendering of dump items (the dicts from ``segtool.ops.dump``)."""

from __future__ import annotations

_SKIP = {"kind", "file"}
_PREVIEW = 60


def _preview(text: str | None, size: int | None = None) -> str:
    if text is None:
        return "null" if size in (None, -1) else f"<{size} bytes, binary>"
    if len(text) > _PREVIEW:
        return repr(text[:_PREVIEW]) + f"… ({len(text)} chars)"
    return repr(text)


def render_text_item(item: dict) -> str:
    kind = item["kind"]
    if kind == "batch":
        head = (
            f"batch @{item['position']} offsets {item['base_offset']}..{item['last_offset']}"
            f" magic {item['magic']} {item['codec']} {item['timestamp_type']} {item['max_timestamp']}"
            f" size {item['size']} crc {'ok' if item['crc_valid'] else 'BAD'}"
        )
        if item.get("is_control"):
            head += " control"
        if item.get("is_transactional"):
            head += f" txn pid {item['producer_id']} epoch {item['producer_epoch']}"
        return head
    if kind == "record":
        text = (
            f"  offset {item['offset']} ts {item['timestamp']}"
            f" key {_preview(item['key'], item['key_size'])}"
            f" value {_preview(item['value'], item['value_size'])}"
        )
        if item.get("headers"):
            text += " headers [" + ",".join(h["key"] for h in item["headers"]) + "]"
        if item.get("control_type"):
            text += f" control {item['control_type']}"
        return text
    if kind == "message":
        crc = "ok" if item.get("body_crc") == item.get("body_crc_computed") else "BAD"
        return (
            f"message @{item['phy_offset']} {item.get('topic')} queue {item.get('queue_id')}/{item.get('queue_offset')}"
            f" stored {item.get('store_timestamp')} keys {_preview(item.get('keys'))} tags {_preview(item.get('tags'))}"
            f" body {item.get('body_length')} bytes crc {crc}"
        )
    if kind in ("error", "zero_tail", "trailing_bytes", "blank_end"):
        label = {"error": "ERROR", "zero_tail": "zero-filled tail", "trailing_bytes": "trailing bytes",
                 "blank_end": "end-of-file blank marker"}[kind]
        rest = item.get("message") or (f"{item['length']} bytes" if item.get("length") is not None else "")
        return f"{label} at byte {item.get('byte_offset')}" + (f": {rest}" if rest else "")
    fields = " ".join(f"{k}={v}" for k, v in item.items() if k not in _SKIP)
    return f"{kind} {fields}"


# -- answers and records for people (lookup, verify) ---------------------------------

VALUE_LIMIT = 200  # characters of a key or value shown before it is cut (``--full`` shows all)


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC; Kafka's -1 (no timestamp) as "none"."""
    import datetime as dt

    if ms is None or ms < 0:
        return "none"
    try:
        moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms (beyond the calendar)"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _escaped(text: str) -> str:
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def show_bytes(b64: str | None, full: bool = False, limit: int = VALUE_LIMIT) -> str:
    """Bytes (given as base64, as in JSON items) for a person: text when printable, escaped when
    mostly text, hex when binary; cut after ``limit`` characters unless ``full``."""
    import base64

    if b64 is None:
        return "null"
    data = base64.b64decode(b64)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable():
        shown, how = text, ""
    elif text is not None and sum(c.isprintable() for c in text) >= 0.75 * len(text):
        shown, how = _escaped(text), " (escaped)"
    else:
        shown, how = data.hex(" "), " (hex)"
    if not full and len(shown) > limit:
        return f"{shown[:limit]}… ({len(data)} bytes{how}; --full shows all)"
    return shown + how


def record_lines(record: dict, full: bool = False) -> list[str]:
    """A Kafka record item (as ``dump --format json`` emits it) as labelled lines."""
    lines = [f"offset     {record['offset']}",
             f"time       {iso_time(record['timestamp'])}  ({record['timestamp']} ms)",
             f"key        {show_bytes(record['key_b64'], full)}",
             f"value      {show_bytes(record['value_b64'], full)}"]
    for header in record.get("headers") or []:
        lines.append(f"header     {header['key']} = {show_bytes(header['value_b64'], full)}")
    if record.get("control_type"):
        lines.append(f"control    {record['control_type']}")
    lines.append(f"file       {record['file']} (batch at byte {record['batch_position']})")
    return lines


def message_lines(message: dict, full: bool = False) -> list[str]:
    """A RocketMQ message item as labelled lines."""
    lines = [f"topic      {message['topic']}  queue {message['queue_id']}  queue offset {message['queue_offset']}",
             f"phy offset {message['phy_offset']}  ({message.get('file')})",
             f"stored     {iso_time(message['store_timestamp'])}  born {iso_time(message['born_timestamp'])}",
             f"keys       {message.get('keys')}  tags {message.get('tags')}  uniq key {message.get('uniq_key')}"]
    if "body_decompressed_b64" in message:
        lines.append(f"body       {show_bytes(message['body_decompressed_b64'], full)}  "
                     f"(decompressed from {message.get('compression')})")
    elif "body_b64" in message:
        lines.append(f"body       {show_bytes(message['body_b64'], full)}")
    for name, value in sorted((message.get("properties") or {}).items()):
        lines.append(f"property   {name} = {value}")
    return lines


def answer_lines(answer: dict, full: bool = False) -> list[str]:
    """A lookup answer for people: its fields as ``name  value`` lines, times in ISO-8601,
    then the record(s) or message(s) it found, never Python reprs."""
    nested = {"record", "records", "message", "messages"}
    width = max((len(k) for k in answer if k not in nested), default=0)
    lines = []
    for key, value in answer.items():
        if key in nested:
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            text = ("\n" + " " * (width + 2)).join(value) if value else "none"
        elif isinstance(value, (list, dict)):
            text = _compact(value)
        elif value is None:
            text = "none"
        elif "timestamp" in key and isinstance(value, int) and value >= 0:
            text = f"{iso_time(value)}  ({value} ms)"
        else:
            text = str(value)
        lines.append(f"{key.ljust(width)}  {text}")
    records = answer.get("records") or ([answer["record"]] if answer.get("record") else [])
    for record in records:
        lines.append("")
        lines.extend(record_lines(record, full))
    messages = answer.get("messages") or ([answer["message"]] if answer.get("message") else [])
    for message in messages:
        lines.append("")
        lines.extend(message_lines(message, full))
    return lines


def _compact(value) -> str:
    """A nested list or object in one line of JSON (what a person can read and paste)."""
    import json

    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
