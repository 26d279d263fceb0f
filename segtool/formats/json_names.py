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
