"""`dump`: decode any supported file into plain dicts (one per batch, record, entry or message).

The JSON renderer writes these dicts as JSON Lines and the text renderer prints
them; field names are documented in docs/formats.md.  Each file is read by its
kind's format (``ops.file_formats``).  Kafka segments and RocketMQ CommitLogs are
read past damage: each damaged stretch is a ``{"kind": "damaged_range"}`` item
(``engine.salvage``) and decoding goes on after it.  Other files stop at the first
invalid byte with a ``{"kind": "error"}`` (or ``"zero_tail"`` for a preallocated
zero-filled tail) naming the byte offset.

``run_dump`` is the command's driver: the record filters, shapes and summary, runs or items,
the output lines and the exit code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Protocol

from segtool.engine.inventory import inventory
from segtool.kafka.log import DEFAULT_CAP
from segtool.errors import NothingFound, UnreadableInput, UsageError
from segtool.engine.detect import DetectedFile, detect
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
    empty = True
    for item in items:
        if not isinstance(item, (BatchRun, MessageRun)):  # a run knows its file
            item["file"] = detected.path
        empty = False
        yield item
    if empty:  # every file given is named: one that holds nothing (a 0-byte index) is said to
        yield {"kind": "skipped", "file": detected.path, "reason": "it holds no batch, record, entry or message"}


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


class DumpOutput(Protocol):
    """Where a dump's output goes, as it is made (files of any size are dumped)."""

    def line(self, text: str) -> None: ...  # one line of stdout
    def run(self, lines: list[str]) -> None: ...  # a run's lines (thousands), written at once
    def note(self, text: str) -> None: ...  # a line of stderr, after the stdout written before it
    def found(self, code: int) -> None: ...  # the exit code so far, should the reader go early (`| head`)


@dataclass
class DumpRequest:
    """What ``segtool dump`` is asked: the files, the format (text, json or kafka) and its options."""

    paths: list[str]
    format: str = "text"
    deep: bool = True
    full: bool = False
    cap: int = DEFAULT_CAP
    filters: dict = field(default_factory=dict)  # the keywords of record_filter_from_options
    summary: bool = False
    key_format: str | None = None
    value_format: str | None = None
    skip_record_metadata: bool = False
    kafka: dict = field(default_factory=dict)  # the fields of KafkaDumpOptions (--format kafka)


def run_dump(request: DumpRequest, out: DumpOutput) -> int:
    """Dump the files as asked, to ``out``; returns the exit code: 2 when an input is unreadable,
    1 when a file shows damage or nothing was recognised, else 0.  Usage errors raise ``UsageError``."""
    named = request.paths
    if not named:
        raise UsageError("give the files to dump: PATH... or --files FILE,FILE")
    shaped = bool(request.key_format or request.value_format or request.skip_record_metadata)
    record_filter = shape = None
    filtered = request.summary or shaped or any(value not in (None, []) for value in request.filters.values())
    if filtered:  # the filters' module loads only when one is asked for
        from segtool.ops.record_filters import RecordShape, record_filter_from_options

        record_filter = record_filter_from_options(**request.filters, paths=named)
        if shaped:
            shape = RecordShape(request.key_format or "text", request.value_format or "text",
                                request.skip_record_metadata)
        filtered = record_filter.active or shape is not None or request.summary
    if filtered and request.format == "kafka":
        raise UsageError("record filters, --summary and the key/value formats go with --format text or json")
    kafka_version = request.kafka.get("kafka_version", "3.9")
    if kafka_version not in ("3.9", "4.1"):
        raise UsageError(f"--kafka-version takes 3.9 or 4.1, not {kafka_version!r}")
    if request.format == "kafka":
        return _run_kafka_dump(request, out)
    if request.format not in ("text", "json"):
        raise UsageError(f"unknown --format {request.format!r}: use text, json or kafka")
    return _run_item_dump(request, record_filter, shape, out)


def _run_kafka_dump(request: DumpRequest, out: DumpOutput) -> int:
    from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump

    entries = inventory(request.paths).entries
    unreadable = [entry for entry in entries if entry.unreadable is not None]
    for entry in unreadable:  # named first, then the rest is dumped: one bad entry never stops a run
        out.note(f"segtool: {entry.path}: {entry.unreadable}")
    code = run_kafka_dump([entry.path for entry in entries if entry.unreadable is None],
                          KafkaDumpOptions(**request.kafka, decompress_cap=request.cap), out.line, out.note)
    return 2 if unreadable else code


def _run_item_dump(request: DumpRequest, record_filter, shape, out: DumpOutput) -> int:
    """Text or JSON Lines: clean stretches a column at a time (``in_runs``) unless records are
    filtered, shaped or summed up, which goes item by item."""
    from segtool.ops.render import render_text_item, run_json_lines, run_text_lines, to_json

    named, text, full, deep = request.paths, request.format == "text", request.full, request.deep
    filtered = record_filter is not None
    several = len(named) > 1 or os.path.isdir(named[0])
    problems = False
    unreadable: tuple[str, str] | None = None  # the first entry that could not be read: (file, reason)
    recognised = 0
    current = None
    items = dump_paths(named, deep=deep, cap=request.cap, in_runs=not filtered, for_text=text)
    tally = None
    if filtered:
        from segtool.ops.record_filters import Summary, filter_dump_items, shape_dump_items, shown_record_line

        items = filter_dump_items(items, record_filter, deep=deep)
        if shape is not None:
            items = shape_dump_items(items, shape)
        if request.summary:
            tally = Summary()
    line = out.line
    for item in items:
        if isinstance(item, (BatchRun, MessageRun)):  # clean Kafka batches, plain RocketMQ messages
            if item.file != current:
                current = item.file
                recognised += 1
                if text and several:
                    line(f"== {current}")
            out.run(run_text_lines(item, full) if text else run_json_lines(item))
            continue
        kind = item["kind"]
        if kind == "skipped":
            out.note(f"segtool: skipped {item['file']}: {item['reason']}")
            continue
        if kind == "unreadable":
            out.note(f"segtool: {item['file']}: {item['reason']}")
            unreadable = unreadable or (item["file"], item["reason"])
            out.found(2)
            continue
        if item["file"] != current:
            current = item["file"]
            recognised += 1
            if text and several and tally is None:
                line(f"== {current}")
        if not problems and shows_damage(item):
            problems = True
            out.found(2 if unreadable else 1)
        if tally is not None:
            tally.add(item)
        elif not text:
            line(to_json(item))
        else:
            line(shown_record_line(item, full) if shape is not None and "value_format" in item
                 else render_text_item(item, full))
    if tally is not None:
        from segtool.ops.record_filters import summary_lines

        report = tally.report()
        for shown in summary_lines(report) if text else [to_json(report)]:
            line(shown)
    # ended by the command line's one error line (and --json's error document): the unreadable
    # entries and the skipped files were named on stderr as they came
    if not recognised and unreadable:
        raise UnreadableInput(unreadable[1], unreadable[0])
    if not recognised:
        raise NothingFound(f"nothing to dump: no batch, record or entry in {', '.join(named)}")
    return 2 if unreadable else 1 if problems else 0
