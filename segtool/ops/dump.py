"""`dump`: decode any supported file into plain dicts (one per batch, record, entry or message).

The JSON renderer writes these dicts as JSON Lines and the text renderer prints
them; field names are documented in docs/formats.md.  Each file is read by its
kind's format (``ops.file_formats``).  Kafka segments and RocketMQ CommitLogs are
read past damage: each damaged stretch is a ``{"kind": "damaged_range"}`` item
(``engine.salvage``) and decoding goes on after it.  Other files stop at the first
invalid byte with a ``{"kind": "error"}`` (or ``"zero_tail"`` for a preallocated
zero-filled tail) naming the byte offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from segtool.engine.inventory import inventory
from segtool.formats.compression import DEFAULT_CAP
from segtool.formats.detect import DetectedFile, detect
from segtool.ops.file_formats import DumpOptions, file_format
from segtool.ops.runs import BatchRun, MessageRun

if TYPE_CHECKING:
    from segtool.ops.output_schema import DumpItem


def dump_file(detected: DetectedFile, deep: bool = True, cap: int = DEFAULT_CAP,
              in_runs: bool = False, for_text: bool = False) -> Iterator[dict | BatchRun | MessageRun]:
    """The file's items, read by its kind's format; every item carries the file path.  ``in_runs``:
    a Kafka segment's clean stretches come as ``BatchRun``s and a CommitLog's plain messages as
    ``MessageRun``s, for renderers that print them a column at a time.  ``for_text``: items carry
    only what the text rendering prints (RocketMQ messages without their bodies and digests)."""
    items = file_format(detected.kind).items(detected.path, DumpOptions(deep, cap, in_runs, for_text))
    for item in items:
        if not isinstance(item, (BatchRun, MessageRun)):  # a run knows its file
            item["file"] = detected.path
        yield item


def shows_damage(item: dict) -> bool:
    """Does this item show damage (exit code 1)?  A zero-filled tail is damage where the broker's
    recovery cuts it (a Kafka log), but the normal preallocated end of an index or ConsumeQueue."""
    kind = item["kind"]
    if kind in ("error", "trailing_bytes", "damaged_range") or item.get("crc_valid") is False:
        return True
    return kind == "zero_tail" and file_format(detect(item["file"]).kind).zero_tail_is_damage


def dump_paths(paths: list[str], deep: bool = True, cap: int = DEFAULT_CAP,
               in_runs: bool = False, for_text: bool = False) -> Iterator[DumpItem | BatchRun | MessageRun]:
    """Every file named or below a named directory; unreadable entries as ``unreadable`` items
    (``in_runs``, ``for_text``: see ``dump_file``)."""
    for entry in inventory(paths).entries:
        if entry.unreadable is not None:
            yield {"kind": "unreadable", "reason": entry.unreadable, "file": entry.path}
        else:
            yield from dump_file(DetectedFile(entry.path, entry.kind), deep, cap, in_runs, for_text)
