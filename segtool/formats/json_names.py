"""One naming style in every JSON output: snake_case.

RocketMQ's decoders keep RocketMQ's own Java field names (``phyOffset``,
``bodyCRC``, the ``KEYS``/``TAGS`` properties) so they read like the broker's
source; every output that leaves segtool passes through ``snake_case_keys``.
Maps whose keys are user data (a message's ``properties``) are left as they are.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache

USER_KEYED = frozenset({"properties"})
_BODIES = ("body", "bodyDecompressed")  # bytes, shown as text and base64 (``bytes_fields``)
_WORD_START = re.compile(r"([a-z0-9])([A-Z])")
_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")


@lru_cache(maxsize=4096)
def snake_case(name: str) -> str:
    """``bodyCRCComputed`` -> ``body_crc_computed``, ``UNIQ_KEY`` -> ``uniq_key``."""
    return _ACRONYM_END.sub(r"\1_\2", _WORD_START.sub(r"\1_\2", name)).lower()


def snake_case_keys(value):
    """``value`` with every dict key in snake_case, recursively (user-keyed maps excepted)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = snake_case(key) if isinstance(key, str) else key
            out[name] = item if key in USER_KEYED else snake_case_keys(item)
        return out
    if isinstance(value, list):
        return [snake_case_keys(item) for item in value]
    return value


def bytes_fields(name: str, data: bytes | None) -> dict:
    """``name`` as UTF-8 text when it decodes, and always as base64 (both None for null)."""
    if data is None:
        return {name: None, f"{name}_b64": None}
    data = bytes(data)
    return {name: utf8_text(data), f"{name}_b64": base64.b64encode(data).decode("ascii")}


def utf8_text(data: bytes) -> str | None:
    """The bytes as UTF-8 text, None when they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def message_json(msg: dict) -> dict:
    """A decoded CommitLog message (kept with ``keep_body``) as every command shows it:
    snake_case names, the body (and a compressed body's plain bytes) as text and base64."""
    item = dict(zip(map(snake_case, msg), msg.values()))  # the names alone: no recursion into every value
    dispatch = item.get("dispatch")
    if dispatch is not None:
        item["dispatch"] = dict(zip(map(snake_case, dispatch), dispatch.values()))
    for name in _BODIES:
        item.pop(snake_case(name), None)
    if "body" in msg:
        item.update(bytes_fields("body", msg["body"]))
    if "bodyDecompressed" in msg:
        item.update(bytes_fields("body_decompressed", msg["bodyDecompressed"]))
    return item


def message_item(msg: dict) -> dict:
    """A decoded CommitLog message as a dump item (``message_json``; its file is the item's, added by the dump)."""
    msg.pop("file", None)
    return {"kind": "message", **message_json(msg)}
