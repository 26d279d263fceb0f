"""Human-readable text rendering of dump items (the dicts from ``segtool.ops.dump``)."""

from __future__ import annotations

_SKIP = {"type", "file"}
_PREVIEW = 60


def _preview(text: str | None, size: int | None = None) -> str:
    if text is None:
        return "null" if size in (None, -1) else f"<{size} bytes, binary>"
    if len(text) > _PREVIEW:
        return repr(text[:_PREVIEW]) + f"… ({len(text)} chars)"
    return repr(text)


def render_text_item(item: dict) -> str:
    kind = item["type"]
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
        crc = "ok" if item.get("bodyCRC") == item.get("bodyCRCComputed") else "BAD"
        return (
            f"message @{item['phyOffset']} {item.get('topic')} queue {item.get('queueId')}/{item.get('queueOffset')}"
            f" stored {item.get('storeTimestamp')} keys {_preview(item.get('KEYS'))} tags {_preview(item.get('TAGS'))}"
            f" body {item.get('bodyLength')} bytes crc {crc}"
        )
    if kind in ("error", "zero_tail", "trailing_bytes", "blank_end"):
        label = {"error": "ERROR", "zero_tail": "zero-filled tail", "trailing_bytes": "trailing bytes",
                 "blank_end": "end-of-file blank marker"}[kind]
        rest = item.get("message") or (f"{item['length']} bytes" if item.get("length") is not None else "")
        return f"{label} at byte {item.get('byte_offset')}" + (f": {rest}" if rest else "")
    fields = " ".join(f"{k}={v}" for k, v in item.items() if k not in _SKIP)
    return f"{kind} {fields}"
