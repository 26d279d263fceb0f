"""How a decoding error ends a file's dump: as a last item naming the byte, not an exception.

Shared by the dump of every file family (``dump``, ``dump_kafka_files``, ``dump_rocketmq``).
"""

from __future__ import annotations

from typing import Iterator

from segtool.errors import SegtoolError


def errors_as_items(items: Iterator[dict], also=lambda exc: False) -> Iterator[dict]:
    """Pass items through; an error at a known byte becomes a final ``{"kind": "error"}`` item.

    Errors without a byte offset (unreadable input) still propagate, unless ``also`` accepts them.
    """
    try:
        yield from items
    except SegtoolError as exc:
        if exc.offset is None and not also(exc):
            raise
        yield {"kind": "error", "byte_offset": exc.offset, "message": exc.message}
