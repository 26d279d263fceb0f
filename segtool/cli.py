"""The segtool command line: argument parsing and rendering only.

Every command calls a library function in ``segtool.ops`` that returns data.
Heavy modules are imported inside commands so a cold start stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from typing import List, Optional

import typer

from segtool.errors import NothingFound, SegtoolError
from segtool.findings import Finding, Severity, errors_first, json_default

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_UNREADABLE = 0, 1, 2


class _State:
    debug = False
    quiet = False
    # the exit code when stdout closes early (`| head`): what was found by then keeps its code
    exit_if_output_closed = EXIT_CLEAN


def _version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        sys.stdout.write(f"segtool {version('segtool')}\n")
        raise typer.Exit(EXIT_CLEAN)


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors (before or after the command)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars (before or after the command)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
):
    """Forensic toolkit for Kafka and RocketMQ storage files. Inputs are only ever read.

    Exit codes, for every command: 0 clean, 1 problems found or nothing found,
    2 unreadable input or usage error.
    """
    _State.debug = debug
    _State.quiet = quiet


# flags of the whole program, accepted wherever an operator types them
_GLOBAL_FLAGS = ("--debug", "--quiet", "-q")


def _fail(message: str, code: int = EXIT_UNREADABLE) -> None:
    sys.stderr.write(f"segtool: {message}\n")
    raise typer.Exit(code)


_STYLES = {"batch": "bold cyan", "== ": "bold", "ERROR": "bold red", "zero-filled": "yellow",
           "trailing": "yellow", "message": "cyan", "index_header": "bold cyan", "end-of-file": "dim"}


class _ColourWriter:
    """Text dump on a terminal: the same lines, coloured by kind with rich."""

    def __init__(self):
        from rich.console import Console

        self.console = Console(highlight=False, soft_wrap=True)

    def __call__(self, line: str) -> None:
        style = next((s for prefix, s in _STYLES.items() if line.startswith(prefix)), None)
        self.console.print(line, style=style, markup=False)

    def flush(self) -> None:
        pass


class _LineWriter:
    """Buffered stdout writer: one write call per many lines."""

    def __init__(self, stream=None, limit: int = 2000):
        self.stream = stream or sys.stdout
        self.lines: list[str] = []
        self.limit = limit

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) >= self.limit:
            self.flush()

    def many(self, lines: list[str]) -> None:
        """A run's lines (thousands), written at once and not kept.  Joined as text when all are
        ASCII; else each is encoded on its own and the bytes joined, since one character beyond
        ASCII would widen the whole joined text (to four bytes a character beyond the BMP)."""
        self.flush()
        if not lines:
            return
        binary = getattr(self.stream, "buffer", None)
        if binary is None or all(map(str.isascii, lines)):
            self.stream.write("\n".join(lines))
            self.stream.write("\n")
            return
        encoding, errors = self.stream.encoding, self.stream.errors
        try:
            binary.write(b"\n".join([line.encode(encoding, errors) for line in lines]))
            binary.write(b"\n")
        except BrokenPipeError:
            raise _OutputClosed() from None

    def flush(self) -> None:
        if self.lines:
            self.stream.write("\n".join(self.lines))
            self.stream.write("\n")
            self.lines.clear()
        self.stream.flush()


@app.command()
def dump(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or directories (every file below a directory, at any depth).", metavar="PATH..."),
    files: Optional[List[str]] = typer.Option(None, "--files", help="kafka-dump-log's way to name files: comma-separated, may repeat.", metavar="FILE,FILE"),
    format: str = typer.Option("text", "--format", "-f", help="text, json (JSON Lines) or kafka.", metavar="FORMAT"),
    as_json: bool = typer.Option(False, "--json", help="JSON Lines (the same as --format json)."),
    deep_iteration: bool = typer.Option(False, "--deep-iteration", help="kafka: list every record."),
    print_data_log: bool = typer.Option(False, "--print-data-log", help="kafka: print keys and values."),
    verify_index_only: bool = typer.Option(False, "--verify-index-only", help="kafka: check index against log, print no entries."),
    index_sanity_check: bool = typer.Option(False, "--index-sanity-check", help="kafka: the broker's start-up index check."),
    offsets_decoder: bool = typer.Option(False, "--offsets-decoder", help="kafka: decode __consumer_offsets records."),
    transaction_log_decoder: bool = typer.Option(False, "--transaction-log-decoder", help="kafka: decode __transaction_state records."),
    cluster_metadata_decoder: bool = typer.Option(False, "--cluster-metadata-decoder", help="kafka: decode KRaft metadata records (__cluster_metadata, snapshots, bootstrap.checkpoint)."),
    remote_log_metadata_decoder: bool = typer.Option(False, "--remote-log-metadata-decoder", help="kafka: decode __remote_log_metadata records."),
    share_group_state_decoder: bool = typer.Option(False, "--share-group-state-decoder", help="kafka: decode __share_group_state records."),
    kafka_version: str = typer.Option("3.9", "--kafka-version", help="kafka: print as this kafka-dump-log prints: 3.9, or 4.1 (__transaction_state records as JSON).", metavar="VERSION"),
    max_bytes: int = typer.Option(2**31 - 1, "--max-bytes", min=0, help="kafka: read at most this many bytes of each .log.", metavar="BYTES"),
    max_message_size: int = typer.Option(5 * 1024 * 1024, "--max-message-size", min=1, help="kafka: largest batch an index entry may point to.", metavar="BYTES"),
    shallow: bool = typer.Option(False, "--shallow", help="text/json: batches only, no records."),
    full: bool = typer.Option(False, "--full", help="text: keys and values whole (cut at 60 characters otherwise)."),
    decompress_cap: int = typer.Option(256 * 1024 * 1024, "--decompress-cap", min=1, help="Largest decompressed batch, bytes.", metavar="BYTES"),
    from_offset: Optional[int] = typer.Option(None, "--from-offset", min=0, help="Kafka filter: records at offsets >= N.", metavar="N"),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", min=0, help="Kafka filter: records at offsets <= N.", metavar="N"),
    from_time: Optional[str] = typer.Option(None, "--from-time", help="Kafka filter: records with timestamps >= TIME (epoch ms or ISO-8601).", metavar="TIME"),
    to_time: Optional[str] = typer.Option(None, "--to-time", help="Kafka filter: records with timestamps <= TIME (epoch ms or ISO-8601).", metavar="TIME"),
    key: Optional[str] = typer.Option(None, "--key", help="Kafka filter: records whose key is KEY (UTF-8).", metavar="KEY"),
    producer_ids: Optional[List[int]] = typer.Option(None, "--producer-id", help="Kafka filter: batches of this producer id (may repeat).", metavar="PID"),
    producer_epoch: Optional[int] = typer.Option(None, "--producer-epoch", help="Kafka filter: batches of this producer epoch.", metavar="E"),
    leader_epoch: Optional[int] = typer.Option(None, "--leader-epoch", help="Kafka filter: batches of this partition leader epoch.", metavar="E"),
    transactional_id: Optional[str] = typer.Option(None, "--transactional-id", help="Kafka filter: the producer ids of this transactional id, from the log dir's __transaction_state.", metavar="ID"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Kafka: at most N records (batches with --shallow).", metavar="N"),
    summary: bool = typer.Option(False, "--summary", help="Kafka: counts, bytes, time span, per-producer and per-codec figures instead of the records."),
    skip_record_metadata: bool = typer.Option(False, "--skip-record-metadata", help="Kafka: records as key and value only."),
    key_format: Optional[str] = typer.Option(None, "--key-format", help="Kafka: show keys as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT"),
    value_format: Optional[str] = typer.Option(None, "--value-format", help="Kafka: show values as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT"),
):
    """Decode files: Kafka segments, indexes, snapshots, checkpoints; RocketMQ CommitLog, ConsumeQueue, IndexFile.

    Exit code 1 when a file is damaged (a bad CRC, a zero-filled or torn tail) or
    nothing was recognised, 2 when an input cannot be read.  Files segtool does not
    recognise are named on stderr.

    Examples:

      segtool dump data/orders-0/00000000000000000000.log

      segtool dump --format kafka --deep-iteration --print-data-log --files data/orders-0/00000000000000000000.log

      segtool dump --json store/consumequeue/TopicA/0
    """
    import gc

    gc.disable()  # decoding allocates many small acyclic objects; collection only costs time here
    named = list(paths or []) + [name for option in files or [] for name in option.split(",") if name]
    if not named:
        _fail("give the files to dump: PATH... or --files FILE,FILE")
    if as_json:
        format = "json"
    filter_options = dict(from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time, key=key,
                          producer_ids=producer_ids, producer_epoch=producer_epoch, leader_epoch=leader_epoch,
                          transactional_id=transactional_id, limit=limit)
    shaped = bool(key_format or value_format or skip_record_metadata)
    record_filter = shape = shown_record_line = None
    filtered = summary or shaped or any(value not in (None, []) for value in filter_options.values())
    if filtered:  # the filters' module loads only when one is asked for
        from segtool.ops.record_filters import RecordShape, record_filter_from_options, shown_record_line

        record_filter = record_filter_from_options(**filter_options, paths=named)
        if shaped:
            shape = RecordShape(key_format or "text", value_format or "text", skip_record_metadata)
        filtered = record_filter.active or shape is not None or summary
    if filtered and format == "kafka":
        _fail("record filters, --summary and the key/value formats go with --format text or json")
    if kafka_version not in ("3.9", "4.1"):
        _fail(f"--kafka-version takes 3.9 or 4.1, not {kafka_version!r}")
    if format == "kafka":
        from segtool.engine.inventory import inventory
        from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump

        options = KafkaDumpOptions(
            deep_iteration=deep_iteration,
            print_data_log=print_data_log,
            verify_index_only=verify_index_only,
            index_sanity_check=index_sanity_check,
            offsets_decoder=offsets_decoder,
            transaction_log_decoder=transaction_log_decoder,
            cluster_metadata_decoder=cluster_metadata_decoder,
            remote_log_metadata_decoder=remote_log_metadata_decoder,
            share_group_state_decoder=share_group_state_decoder,
            kafka_version=kafka_version,
            max_bytes=max_bytes,
            max_message_size=max_message_size,
            decompress_cap=decompress_cap,
        )
        entries = inventory(named).entries
        unreadable = [entry for entry in entries if entry.unreadable is not None]
        for entry in unreadable:  # named first, then the rest is dumped: one bad entry never stops a run
            sys.stderr.write(f"segtool: {entry.path}: {entry.unreadable}\n")
        out = _LineWriter()
        code = run_kafka_dump([entry.path for entry in entries if entry.unreadable is None], options, out,
                              _err_line_after(out))
        out.flush()
        raise typer.Exit(EXIT_UNREADABLE if unreadable else code)
    if format not in ("text", "json"):
        _fail(f"unknown --format {format!r}: use text, json or kafka")
    from segtool.ops.dump import dump_paths, shows_damage
    from segtool.ops.runs import BatchRun, MessageRun
    from segtool.ops.render import render_text_item, run_json_lines, run_text_lines, to_json

    out = _LineWriter() if format == "json" or not sys.stdout.isatty() else _ColourWriter()
    note = _err_line_after(out)
    several = len(named) > 1 or os.path.isdir(named[0])
    problems = unreadable = skipped = False
    recognised = 0
    current = None
    items = dump_paths(named, deep=not shallow, cap=decompress_cap, in_runs=not filtered, for_text=format == "text")
    tally = None
    if filtered:  # item by item: the column runs print every record as it is
        from segtool.ops.record_filters import Summary, filter_dump_items, shape_dump_items

        items = filter_dump_items(items, record_filter, deep=not shallow)
        if shape is not None:
            items = shape_dump_items(items, shape)
        if summary:
            tally = Summary()
    for item in items:
        if isinstance(item, (BatchRun, MessageRun)):  # clean Kafka batches, plain RocketMQ messages: a column at a time
            if item.file != current:
                current = item.file
                recognised += 1
                if format == "text" and several:
                    out(f"== {current}")
            lines = run_json_lines(item) if format == "json" else run_text_lines(item, full)
            if isinstance(out, _LineWriter):
                out.many(lines)
            else:  # a terminal's colours are chosen line by line
                for line in lines:
                    out(line)
            continue
        kind = item["kind"]
        if kind == "skipped":
            note(f"segtool: skipped {item['file']}: {item['reason']}")
            skipped = True
            continue
        if kind == "unreadable":
            note(f"segtool: {item['file']}: {item['reason']}")
            unreadable = True
            _State.exit_if_output_closed = EXIT_UNREADABLE
            continue
        if item["file"] != current:
            current = item["file"]
            recognised += 1
            if format == "text" and several and tally is None:
                out(f"== {current}")
        problems = problems or shows_damage(item)
        if problems:
            _State.exit_if_output_closed = EXIT_PROBLEMS
        if tally is not None:
            tally.add(item)
        elif format == "json":
            out(to_json(item))
        else:
            out(shown_record_line(item, full) if shape is not None and "value_format" in item
                else render_text_item(item, full))
    if tally is not None:
        from segtool.ops.record_filters import summary_lines

        report = tally.report()
        for line in [to_json(report)] if format == "json" else summary_lines(report):
            out(line)
    out.flush()
    if unreadable:
        raise typer.Exit(EXIT_UNREADABLE)
    if not recognised and not skipped:  # a skipped file was named with its reason already
        sys.stderr.write(f"segtool: nothing to dump: no batch, record or entry in {', '.join(named)}\n")
    raise typer.Exit(EXIT_PROBLEMS if problems or not recognised else EXIT_CLEAN)


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=json_default) + "\n")


def _print_answer(answer: dict, as_json: bool, full: bool) -> None:
    if as_json:
        _print_json(answer)
        return
    from segtool.ops.render import answer_lines

    sys.stdout.write("\n".join(answer_lines(answer, full)) + "\n")


@app.command()
def lookup(
    path: str = typer.Argument(..., help="A Kafka partition directory or a RocketMQ store directory.", metavar="PATH"),
    offset: Optional[int] = typer.Option(None, "--offset", min=0, help="Kafka: the record a fetch at this offset returns.", metavar="OFFSET"),
    timestamp: Optional[str] = typer.Option(None, "--timestamp", help="Kafka: ListOffsets for epoch ms, ISO-8601, latest, earliest or max-timestamp.", metavar="TIME"),
    floor: bool = typer.Option(False, "--floor", help="With --offset: the offset index's floor entry (<=), no scan."),
    ceiling: bool = typer.Option(False, "--ceiling", help="With --offset: the offset index's ceiling entry (>=), no scan."),
    key: Optional[str] = typer.Option(None, "--key", "-k", help="Find records by key: a Kafka partition (index-keys makes it fast) or a RocketMQ store with --topic.", metavar="KEY"),
    key_index: Optional[str] = typer.Option(None, "--key-index", help="Kafka --key: the directory index-keys wrote (default: its cache place).", metavar="DIR"),
    topic: Optional[str] = typer.Option(None, "--topic", "-t", help="RocketMQ topic.", metavar="TOPIC"),
    begin: str = typer.Option("0", "--begin", help="RocketMQ key lookup: window start, epoch ms or ISO-8601.", metavar="TIME"),
    end: str = typer.Option(str(2**63 - 1), "--end", "-e", help="RocketMQ key lookup and --print-msg: window end, epoch ms or ISO-8601.", metavar="TIME"),
    max_num: int = typer.Option(64, "--max", min=1, help="RocketMQ key lookup: most offsets to return (RocketMQ caps at 64).", metavar="N"),
    include_collisions: bool = typer.Option(False, "--include-collisions", help="RocketMQ: keep hash collisions (IndexService's raw answer)."),
    queue_id: Optional[int] = typer.Option(None, "--queue-id", min=0, help="RocketMQ: ConsumeQueue id (with --queue-offset).", metavar="Q"),
    queue_offset: Optional[int] = typer.Option(None, "--queue-offset", "-o", min=0, help="RocketMQ: unit number in the ConsumeQueue.", metavar="N"),
    msg_id: Optional[str] = typer.Option(None, "--msg-id", help="RocketMQ queryMsgById: offset message ids or unique keys (UNIQ_KEY), comma-separated; with --topic a unique key goes through the IndexFile, else the CommitLog is scanned.", metavar="ID[,ID]"),
    mqadmin_i: Optional[str] = typer.Option(None, "-i", help="mqadmin's -i: the queue id with -o (queryMsgByOffset), else message ids (queryMsgById).", metavar="ID"),
    mqadmin_b: Optional[str] = typer.Option(None, "-b", help="mqadmin's -b: the broker name with -o (queryMsgByOffset), else --begin (printMsg's beginTimestamp).", metavar="B"),
    print_msg: bool = typer.Option(False, "--print-msg", help="RocketMQ printMsg: every message of --topic, per queue, within --begin/--end."),
    charset: str = typer.Option("UTF-8", "--charset", "-c", help="--print-msg: the body's charset (a Java name: UTF-8, GBK ...).", metavar="CHARSET"),
    sub_expression: str = typer.Option("*", "--sub-expression", "-s", help="--print-msg: tags, as a subscription expression (TagA || TagB).", metavar="EXPR"),
    print_body: str = typer.Option("true", "--print-body", "-d", help="--print-msg: true or false, print the body (printMsg's -d).", metavar="BOOL"),
    from_offset: Optional[int] = typer.Option(None, "--from-offset", min=0, help="Kafka filter: records at offsets >= N.", metavar="N"),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", min=0, help="Kafka filter: records at offsets <= N.", metavar="N"),
    from_time: Optional[str] = typer.Option(None, "--from-time", help="Kafka filter: records with timestamps >= TIME (epoch ms or ISO-8601).", metavar="TIME"),
    to_time: Optional[str] = typer.Option(None, "--to-time", help="Kafka filter: records with timestamps <= TIME (epoch ms or ISO-8601).", metavar="TIME"),
    producer_ids: Optional[List[int]] = typer.Option(None, "--producer-id", help="Kafka filter: batches of this producer id (may repeat).", metavar="PID"),
    producer_epoch: Optional[int] = typer.Option(None, "--producer-epoch", help="Kafka filter: batches of this producer epoch.", metavar="E"),
    leader_epoch: Optional[int] = typer.Option(None, "--leader-epoch", help="Kafka filter: batches of this partition leader epoch.", metavar="E"),
    transactional_id: Optional[str] = typer.Option(None, "--transactional-id", help="Kafka filter: the producer ids of this transactional id, from the log dir's __transaction_state.", metavar="ID"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Kafka: at most N records (with --offset/--timestamp: the first N from the answer).", metavar="N"),
    summary: bool = typer.Option(False, "--summary", help="Kafka: counts, bytes, time span, per-producer and per-codec figures instead of the records."),
    skip_record_metadata: bool = typer.Option(False, "--skip-record-metadata", help="Kafka: records as key and value only."),
    key_format: Optional[str] = typer.Option(None, "--key-format", help="Kafka: show keys as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT"),
    value_format: Optional[str] = typer.Option(None, "--value-format", help="Kafka: show values as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT"),
    full: bool = typer.Option(False, "--full", help="Show keys and values whole (text output cuts them at 200 characters)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
):
    """Answer a broker lookup from files alone.

    Kafka lookups take record filters (docs/filters.md): --offset/--timestamp then answer
    with the first record from the broker's answer on that passes them, --key keeps the
    records that pass.

    Exit code 0 when something was found, 1 when nothing was, 2 for a usage error.

    Examples:

      segtool lookup data/orders-0 --offset 1200

      segtool lookup data/orders-0 --timestamp 2026-11-21T10:00:00Z --json

      segtool lookup data/orders-0 --offset 1200 --floor

      segtool lookup store --topic TopicA --key order-42 --begin 2026-11-21T00:00:00Z

      segtool lookup data/orders-0 --offset 0 --transactional-id billing-tx --limit 10 --value-format json

      segtool lookup data/orders-0 --offset 0 --from-time 2026-11-21T10:00:00Z --summary
    """
    from segtool.ops.lookup import LookupRequest, lookup as answer_lookup
    from segtool.ops.record_filters import RecordShape, record_filter_from_options

    record_filter = record_filter_from_options(
        from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time,
        producer_ids=producer_ids, producer_epoch=producer_epoch, leader_epoch=leader_epoch,
        transactional_id=transactional_id, limit=limit, paths=[path])
    shape = None
    if key_format or value_format or skip_record_metadata:
        shape = RecordShape(key_format or "text", value_format or "text", skip_record_metadata)
    queue_id, msg_id, begin, broker_name = _mqadmin_short_options(mqadmin_i, mqadmin_b, queue_id, queue_offset,
                                                                  msg_id, begin)
    request = LookupRequest(offset=offset, timestamp=timestamp, floor=floor, ceiling=ceiling, key=key,
                            key_index=key_index, topic=topic, begin=begin, end=end, max_num=max_num,
                            include_collisions=include_collisions, queue_id=queue_id, queue_offset=queue_offset,
                            record_filter=record_filter, shape=shape, summary=summary,
                            msg_ids=None if msg_id is None else tuple(i for i in msg_id.split(",") if i.strip()),
                            print_msg=print_msg, broker_name=broker_name, charset=charset,
                            sub_expression=sub_expression, print_body=_java_boolean(print_body))
    answer, found = answer_lookup(path, request)
    if not as_json and (request.msg_ids is not None or request.print_msg or "mqadmin" in answer):
        from segtool.ops.mqadmin import mqadmin_answer_lines

        sys.stdout.write("\n".join(mqadmin_answer_lines(answer, full)) + "\n")
    elif shape is not None and not as_json:
        _print_shaped_answer(answer, full)
    else:
        _print_answer(answer, as_json, full)
    raise typer.Exit(EXIT_CLEAN if found else EXIT_PROBLEMS)


def _mqadmin_short_options(mqadmin_i, mqadmin_b, queue_id, queue_offset, msg_id, begin):
    """mqadmin's -i and -b mean two things: with -o (queryMsgByOffset -t -b -i -o) they are the
    broker name and the queue id, otherwise the message ids (queryMsgById -i) and printMsg's
    beginTimestamp.  Returns (queue_id, msg_id, begin, broker_name)."""
    from segtool.errors import UsageError

    broker_name = None
    if queue_offset is not None:
        if mqadmin_i is not None:
            if queue_id is not None or not mqadmin_i.strip().isdigit():
                raise UsageError("with -o, -i is the queue id (queryMsgByOffset): give one number, once")
            queue_id = int(mqadmin_i)
        broker_name = mqadmin_b
    else:
        if mqadmin_i is not None:
            if msg_id is not None:
                raise UsageError("give the message ids once: -i or --msg-id")
            msg_id = mqadmin_i
        if mqadmin_b is not None:
            if begin != "0":
                raise UsageError("give the window start once: -b or --begin")
            begin = mqadmin_b
    return queue_id, msg_id, begin, broker_name


def _java_boolean(text: str) -> bool:
    """``Boolean.parseBoolean``: true when the text is "true" in any case, false otherwise."""
    return text.strip().lower() == "true"


def _print_shaped_answer(answer: dict, full: bool) -> None:
    """A lookup answer whose records are shaped (``--key-format`` and so on): the answer's own
    fields as usual, then each record as its shape shows it."""
    from segtool.ops.record_filters import shown_record_lines
    from segtool.ops.render import answer_lines

    records = answer.get("records") or ([answer["record"]] if answer.get("record") else [])
    lines = answer_lines({name: value for name, value in answer.items() if name not in ("record", "records")}, full)
    for record in records:
        lines.append("")
        lines.extend(shown_record_lines(record, full))
    sys.stdout.write("\n".join(lines) + "\n")


def _say_problems(say, problems: list[Finding], indent: str = "") -> None:
    for problem in errors_first(problems):
        error = problem.severity is Severity.ERROR
        say(f"{indent}{problem.severity.value:5} {problem.kind.code}: {problem.message}", "red" if error else None)


def _render_groups(report: dict) -> None:
    """Per group: its metadata, then each committed partition with its lag."""
    from segtool.ops.render import show_text

    say = _Styled()
    for group in report["groups"]:
        head = f"group {group['group']} (__consumer_offsets-{group['coordinator_partition']})"
        if group["deleted"]:
            head += ": DELETED (tombstone)"
        elif group["protocol"] is not None:
            head += (f": {group['protocol']} protocol, type {show_text(group['protocol_type'])}"
                     f", generation {group['generation']}, assignor {show_text(group['assignor'])}"
                     f", leader {show_text(group['leader'])}, {len(group['members'])} members")
        else:
            head += ": offsets only, no group metadata"
        say(head, "bold")
        for member in group["members"]:
            assigned = " ".join(f"{a['topic']}{a['partitions']}" for a in member["assigned"])
            say(f"  member {member['member_id']} client {member['client_id']} {member['client_host']}"
                + (f" assigned {assigned}" if assigned else ""), "dim")
        for committed in group["offsets"]:
            lag = "?" if committed["lag"] is None else committed["lag"]
            end = "not here" if committed["log_end_offset"] is None else committed["log_end_offset"]
            say(f"  {committed['topic']}-{committed['partition']}: committed {committed['offset']}, log end {end}, "
                f"lag {lag}" + (f", metadata {show_text(committed['metadata'])}" if committed["metadata"] else ""),
                "yellow" if isinstance(lag, int) and lag > 0 else None)
    _say_problems(say, report["problems"])
    summary = report["summary"]
    at = "" if report["at"] is None else f" as of {report['at']}"
    say(f"{summary['groups']} groups{at}, {summary['committed_partitions']} committed partitions, "
        f"{summary['groups_deleted']} deleted, {summary['pending_transactional_commits']} transactional commits "
        "awaiting a marker", "bold")


@app.command()
def groups(
    log_dir: str = typer.Argument(..., help="A Kafka log dir holding __consumer_offsets partitions, or a RocketMQ store (commitlog/ or config/ inside).", metavar="LOGDIR|STORE"),
    group: Optional[str] = typer.Option(None, "--group", help="Only this consumer group.", metavar="G"),
    at: Optional[str] = typer.Option(None, "--at", help="Kafka: the state as of this time: epoch ms or ISO-8601.", metavar="TIME"),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Consumer groups' committed offsets, metadata and lag, replayed from __consumer_offsets.

    Records are replayed in offset order (tombstones delete; transactional commits wait
    for their marker); lag is against each partition's log end in the same log dir
    (docs/groups-transactions.md).

    A RocketMQ store: per group, topic and queue the committed offset (config/consumerOffset.json),
    the ConsumeQueue's min and max offsets, the lag (max - committed, as mqadmin consumerProgress)
    and the last consumed message's store time; the delay levels' progress (delayOffset.json);
    every config file read as the broker reads it and compared with its .bak.

    Exit code 0 when groups were found, 1 when none were (or --group is not there) or a
    problem was found, 2 when the log dir cannot be read.

    Examples:

      segtool groups /var/lib/kafka/data

      segtool groups rocketmq/store --group billing-consumers

      segtool groups evidence/kafka-logs --group billing --at 2026-11-21T10:00:00Z --json
    """
    from segtool.ops.groups import exit_code, groups as replay_groups
    from segtool.ops.lookup import parse_timestamp
    from segtool.ops.rocketmq_groups import rocketmq_store_root

    if rocketmq_store_root(log_dir) is not None:
        if at is not None:
            _fail("--at replays Kafka's __consumer_offsets; a RocketMQ store keeps only the last committed offsets")
        _rocketmq_groups(log_dir, group, as_json)
    moment = None if at is None else parse_timestamp(at)
    if moment is not None and moment < 0:
        _fail(f"--at takes epoch ms or ISO-8601, not {at!r}")
    report = replay_groups(log_dir, group=group, at=moment)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        _render_groups(report)
    if not report["groups"]:
        sys.stderr.write(f"segtool: no consumer group{'' if group is None else ' ' + repr(group)} in {log_dir}\n")
    raise typer.Exit(exit_code(report))


def _render_rocketmq_groups(report: dict) -> None:
    """Per group and topic, each queue's committed offset, bounds, lag and last consumed time;
    the delay levels; then the config files that do not read or differ from their .bak."""
    from segtool.ops.render import iso_time, show_text

    def known(value) -> str:
        return "-" if value is None else str(value)

    say = _Styled()
    for group in report["groups"]:
        head = f"group {show_text(group['group'])}"
        if group["subscription_configured"]:
            head += (f": consume {'enabled' if group['consume_enable'] else 'DISABLED'}, "
                     f"{'broadcast allowed' if group['consume_broadcast_enable'] else 'no broadcast'}, "
                     f"retry max {known(group['retry_max_times'])}")
        else:
            head += ": not in subscriptionGroup.json"
        say(head + f", total lag {known(group['total_lag'])}", "bold")
        for topic in group["topics"]:
            queues = "not configured" if topic["read_queue_nums"] is None else f"{topic['read_queue_nums']} read queues"
            say(f"  topic {show_text(topic['topic'])} ({queues}), lag {known(topic['total_lag'])}")
            for queue in topic["queues"]:
                committed = "none (0)" if queue["committed_offset"] is None else queue["committed_offset"]
                last = queue["last_consumed_timestamp"]
                say(f"    queue {queue['queue_id']}: committed {committed}, min {known(queue['min_offset'])}, "
                    f"max {known(queue['max_offset'])}, lag {known(queue['lag'])}"
                    + ("" if last is None else f", last consumed stored {iso_time(last)}"),
                    "yellow" if isinstance(queue["lag"], int) and queue["lag"] > 0 else None)
    for level in report["delay_levels"]:
        delay = "" if level["delay_ms"] is None else f" ({level['delay_ms'] // 1000} s by default)"
        say(f"delay level {level['delay_level']}{delay}: queue {level['queue_id']} offset {known(level['offset'])}, "
            f"max {known(level['max_offset'])}, pending {known(level['pending'])}",
            "yellow" if isinstance(level["pending"], int) and level["pending"] > 0 else None)
    for config in report["config_files"]:
        if config["loaded_from"] == "backup":
            say(f"{config['name']}: the broker loads {config['name']}.bak (the file does not read)", "red")
    _say_problems(say, report["problems"])
    summary = report["summary"]
    queues = "" if report["queues_read"] else " (no consumequeue/ in this copy: no bounds, lag or times)"
    say(f"{summary['groups']} groups, {summary['topics']} topics, {summary['queues']} queues, total lag "
        f"{known(summary['total_lag'])}; {summary['delay_levels']} delay levels, "
        f"{known(summary['pending_delayed'])} delayed messages pending{queues}", "bold")


def _rocketmq_groups(store: str, group: Optional[str], as_json: bool) -> None:
    from segtool.ops.rocketmq_groups import exit_code, rocketmq_groups

    report = rocketmq_groups(store, group=group)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        _render_rocketmq_groups(report)
    if not report["groups"]:
        sys.stderr.write(f"segtool: no consumer group{'' if group is None else ' ' + repr(group)} with committed "
                         f"offsets in {store}\n")
    raise typer.Exit(exit_code(report))


def _stats_text(stats: dict, unit: str) -> str:
    if not stats["count"]:
        return "-"
    return f"{stats['min']}..{stats['max']}{unit} (mean {stats['mean']:.1f})"


def _render_transactions(report: dict) -> None:
    """Transactional ids, then each transactional partition: counts, LSO, empty and open transactions."""
    say = _Styled()
    for state in report["transactional_ids"]:
        partitions = state["partitions"] or state["marker_partitions"]
        say(f"transactional id {state['transactional_id']}: producer {state['producer_id']} epoch "
            f"{state['producer_epoch']}, {state['state']}" + (" (TIMED OUT)" if state["timed_out"] else "")
            + f", partitions {' '.join(p['topic'] + str(p['partitions']) for p in partitions) or '-'}, timeout "
            f"{state['timeout_ms']} ms", "yellow" if state["timed_out"] else None)
    for partition in report["partitions"]:
        if not partition["transactional"]:
            continue
        say(f"{partition['topic']}-{partition['partition']}: {partition['commits']} committed, {partition['aborts']} "
            f"aborted, last stable offset {partition['last_stable_offset']} of log end {partition['log_end_offset']}",
            "bold")
        say(f"  size {_stats_text(partition['size_records'], ' records')}, {_stats_text(partition['size_batches'], ' batches')}"
            f"; duration {_stats_text(partition['duration_ms'], ' ms')}; {len(partition['aborted_ranges'])} aborted ranges")
        for empty in partition["empty_transactions"]:
            say(f"  empty transaction: producer {empty['producer_id']} epoch {empty['producer_epoch']} "
                f"{empty['marker']} at offset {empty['marker_offset']}", "dim")
        for txn in partition["open_transactions"]:
            say(f"  open transaction: producer {txn['producer_id']} epoch {txn['producer_epoch']}"
                f" ({txn['transactional_id'] or 'transactional id unknown'}) from offset {txn['first_offset']}, "
                f"{txn['records']} records" + (f": HANGING, {txn['why']}" if txn["hanging"] else ""),
                "red" if txn["hanging"] else "yellow")
    _say_problems(say, report["problems"])
    summary = report["summary"]
    say(f"{summary['transactional_ids']} transactional ids, {summary['transactional_partitions']} of "
        f"{summary['partitions']} partitions transactional: {summary['commits']} committed, {summary['aborts']} "
        f"aborted, {summary['open_transactions']} open, {summary['hanging_transactions']} hanging, "
        f"{summary['disagreements']} disagreements", "bold")


@app.command()
def transactions(
    log_dir: str = typer.Argument(..., help="A Kafka log dir (with __transaction_state partitions, if any).", metavar="LOGDIR"),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Transactions: the coordinator's state, each partition's transactions, hanging ones.

    Each transactional id's state from __transaction_state; per partition the last stable
    offset, aborted ranges, committed/aborted counts, size and duration statistics, empty
    and open transactions; hanging transactions and disagreements between the coordinator
    and the partitions' markers (docs/groups-transactions.md).

    Exit code 0 when transactions were found and all is well, 1 when none were or a
    transaction hangs, the coordinator and a partition disagree or another problem was
    found, 2 when the log dir cannot be read.

    Examples:

      segtool transactions /var/lib/kafka/data

      segtool transactions --json evidence/kafka-logs > transactions.json
    """
    from segtool.ops.transactions import exit_code, transactions as replay_transactions

    report = replay_transactions(log_dir)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        _render_transactions(report)
    raise typer.Exit(exit_code(report))


class _Progress:
    """A byte-progress bar on stderr for long work; silent unless stderr is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and not _State.quiet and sys.stderr.isatty()
        self.bar = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()

    def factory(self, path: str):
        """A callback(position) for one file, or None when progress is off."""
        import os

        return self.task(os.path.basename(path), os.path.getsize(path))

    def task(self, description: str, total: int):
        """A callback(bytes done) for one piece of work of ``total`` bytes, or None when progress is off."""
        if self.bar is None:
            return None
        task = self.bar.add_task(description, total=total)
        return lambda done: self.bar.update(task, completed=done)


class _Styled:
    """Lines for people: coloured with rich on a terminal, plain text (no padding, no wrapping) when piped."""

    def __init__(self):
        self.console = None
        if sys.stdout.isatty():
            from rich.console import Console

            self.console = Console(highlight=False, soft_wrap=True)

    def __call__(self, line: str, style: str | None = None) -> None:
        if self.console is not None:
            self.console.print(line, style=style, markup=False)
        else:
            sys.stdout.write(line + "\n")


def _salvage_text(salvage: dict) -> str:
    """What reading past damage keeps after the recovery point, in words."""
    if "batches" in salvage:  # Kafka
        if not salvage["batches"]:
            return "no valid batch after the recovery point"
        return (f"{salvage['batches']} valid batches after the recovery point, {salvage['records']} records, "
                f"offsets {salvage['first_offset']}..{salvage['last_offset']} (segtool salvage writes them back)")
    if not salvage["messages"]:
        return "no valid message after the recovery point"
    return (f"{salvage['messages']} valid messages after the recovery point, physical offsets "
            f"{salvage['first_phy_offset']}..{salvage['last_phy_offset']} (segtool salvage writes them back)")


def _render_verify(report: dict) -> None:
    """Problems first, in one screen; then the clean and skipped files, one line each."""
    say = _Styled()
    summary = report["summary"]
    say(f"{summary['files']} files: {summary['ok']} ok, {summary['problems']} with problems, "
        f"{summary['unreadable']} unreadable, {summary['skipped']} skipped", "bold")
    colours = {"ok": "green", "problems": "red", "unreadable": "red", "skipped": "dim"}

    def head(item: dict) -> str:
        digest = item.get("sha256") or "not hashed"
        return (f"{item['status'].upper():10} {item['path']}  ({item.get('kind')}, {item.get('size', '?')} bytes,"
                f" sha256 {digest})")

    bad = [item for item in report["files"] if item["status"] in ("problems", "unreadable")]
    for item in bad:
        say("")
        say(head(item), colours[item["status"]])
        problems = item.get("problems", [])
        ordered = errors_first(problems)
        errors = [p for p in ordered if p.severity is Severity.ERROR]
        infos = ordered[len(errors):]
        for problem in errors + infos[:20]:
            where = "" if problem.byte_offset is None else f" at byte {problem.byte_offset}"
            say(f"  {problem.severity.value:5} {problem.kind.code}{where}: {problem.message}",
                "red" if problem.severity is Severity.ERROR else None)
        if len(infos) > 20:
            say(f"  info  … {len(infos) - 20} more notes (see --json)")
        recovery = item.get("recovery")
        if recovery and recovery.get("bytes_lost"):
            broker = "RocketMQ" if item.get("kind", "").startswith("rocketmq") else "Kafka"
            say(f"  {broker}'s recovery would keep {recovery['valid_bytes']} bytes and cut "
                f"{recovery['bytes_lost']} ({recovery['records_lost']} records, stop: {recovery.get('stop_reason')})")
        salvage = (recovery or {}).get("salvage")
        if salvage:
            say(f"  reading past the damage: {_salvage_text(salvage)}")
    rest = [item for item in report["files"] if item["status"] not in ("problems", "unreadable")]
    if rest:
        say("")
    for item in rest:
        if item["status"] == "skipped":
            say(f"{'SKIPPED':10} {item['path']}: {item.get('reason', 'not checked')}", "dim")
            continue
        notes = [p for p in item.get("problems", []) if p.severity is not Severity.ERROR]
        say(head(item) + (f"  {len(notes)} note(s): {notes[0].message}" if notes else ""), colours["ok"])


@app.command()
def verify(
    paths: List[str] = typer.Argument(..., help="Files, partition directories, log directories or RocketMQ stores.", metavar="PATH..."),
    deep: bool = typer.Option(False, "--deep", help="Decode every record, not just batch headers and CRCs."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input (faster on huge files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (default) or spark: one Spark task per file.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
):
    """Check files as Kafka/RocketMQ would, and predict what the broker's recovery would cut.

    Exit code 0 when every file is clean, 1 when problems were found, 2 when an input is unreadable.

    Examples:

      segtool verify /var/lib/kafka/data/orders-0

      segtool verify --deep --json evidence/kafka-logs > report.json
    """
    if not no_hash and engine is None and master is None:
        from segtool.source import start_sha256_early

        start_sha256_early(paths[0])  # the first file's hash starts before the checking code loads
    from segtool.ops.verify import exit_code, verify as run_verify

    runner = _pipeline_engine(engine, master, conf)
    if runner is not None:
        from segtool.pipeline.verify import verify_distributed

        with runner, _interruptible():
            report = verify_distributed(paths, runner, deep=deep, hash_inputs=not no_hash)
    else:
        with _Progress(enabled=not as_json) as progress:
            report = run_verify(paths, deep=deep, progress_factory=progress.factory, hash_inputs=not no_hash)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        _render_verify(report)
    raise typer.Exit(exit_code(report))


_SPARKS = "▁▂▃▄▅▆▇█"


def _sparkline(values: list[float], width: int = 60) -> str:
    """Values summed into at most ``width`` columns, each drawn as one of eight heights."""
    if not values:
        return "(no timestamps)"
    columns = [sum(values[i * len(values) // width:(i + 1) * len(values) // width])
               for i in range(min(width, len(values)))] if len(values) > width else list(values)
    top = max(columns) or 1
    return "".join(_SPARKS[min(7, int(v / top * 7.999))] if v else " " for v in columns)


def _render_report(figures: dict) -> None:
    """Per partition and store: counts, span, rates, a sparkline of its timeline, its findings."""
    from segtool.ops.render import iso_time

    say = _Styled()

    def span(count: int, what: str, first, last) -> str:
        if first is None or last is None:
            return "no timestamps"
        seconds = (last - first) / 1000
        rate = f", {count / seconds:.1f} {what}/s" if seconds > 0 else ""
        return f"{iso_time(first)} .. {iso_time(last)} ({seconds:g} s{rate})"

    def findings(found: dict) -> None:
        if not found["total"]:
            say("  findings: none", "green")
            return
        say("  findings: " + ", ".join(f"{kind} {n}" for kind, n in sorted(found["by_kind"].items())), "red")
        errors = [f for f in found["shown"] if f["severity"] == Severity.ERROR.value]
        for item in errors[:10]:
            where = "" if item["placed_at"] is None else f" at {item['placed_at']}"
            say(f"    {item['kind']}{where}: {item['message']}", "red")
        if len(errors) > 10:
            say(f"    … {len(errors) - 10} more errors (see --json or --out)")

    for p in figures["partitions"]:
        say(f"Kafka partition {p['directory']}", "bold")
        say(f"  {len(p['segments'])} segments, {p['batches']} batches, {p['records']} records, {p['bytes']} bytes, "
            f"offsets {p['first_offset']}..{p['last_offset']}")
        say(f"  {span(p['records'], 'records', p['first_timestamp'], p['last_timestamp'])}")
        say(f"  records/s {_sparkline(p['rates']['records_per_second'])}")
        say(f"  {p['gaps']['count']} offset gaps, {p['out_of_order']['count']} timestamps out of order, "
            f"{p['future']['count']} in the future; transactions {p['transactions']['committed']} committed, "
            f"{p['transactions']['aborted']} aborted, {p['transactions']['open']} open")
        truncation = p["truncation"]
        if truncation is not None:
            say(f"  Kafka's recovery truncates {truncation['file']} at byte {truncation['byte_offset']} "
                f"(offset {truncation['offset']}, {truncation['reason']})", "red")
        findings(p["findings"])
    for s in figures["stores"]:
        say(f"RocketMQ store {s['root']}", "bold")
        say(f"  {s['messages']} messages, {s['bytes']} bytes, {len(s['queues'])} queues, "
            f"{len(s['commitlog'])} CommitLog files, {len(s['index_files'])} IndexFiles")
        say(f"  {span(s['messages'], 'messages', s['first_timestamp'], s['last_timestamp'])}")
        say(f"  messages {_sparkline([sum(c) for c in zip(*(q['messages'] for q in s['timeline']['series']))])}")
        if s["truncation"] is not None:
            say(f"  RocketMQ's recovery cuts at physical offset {s['truncation']['offset']} "
                f"({s['truncation']['reason']})", "red")
        findings(s["findings"])
    if figures["other_findings"]["total"]:
        say("Other files", "bold")
        findings(figures["other_findings"])
    summary = figures["summary"]
    say(f"{summary['files']} files: {summary['ok']} ok, {summary['problems']} with problems, "
        f"{summary['unreadable']} unreadable, {summary['skipped']} skipped", "bold")


@app.command()
def report(
    paths: List[str] = typer.Argument(..., help="Files, partition directories, log directories or RocketMQ stores.", metavar="PATH..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Write the picture as one self-contained HTML file.", metavar="FILE"),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out file (a backup is kept)."),
    deep: bool = typer.Option(False, "--deep", help="verify decodes every record, not just batch headers and CRCs."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON object."),
):
    """A picture of partitions and stores: timelines, rates, batches, every verify finding placed.

    With --out: one HTML file that opens with no network (plotly embedded); big inputs are
    aggregated (the page says where). Without it: a summary per partition and store.
    Exit codes as verify: 0 clean, 1 problems found, 2 an input is unreadable.

    Examples:

      segtool report /var/lib/kafka/data/orders-0 --out orders-0.html

      segtool report evidence/kafka-logs evidence/rocketmq-store

      segtool report --json /var/lib/kafka/data/orders-0 > figures.json
    """
    from segtool.ops.report import exit_code, report as run_report

    with _Progress(enabled=not as_json) as progress:
        options = {"deep": deep, "hash_inputs": not no_hash, "progress_factory": progress.factory}
        if out is not None:
            from segtool.ops.report_html import write_report

            figures = write_report(paths, out, force=force, **options)
        else:
            figures = run_report(paths, **options)
    _State.exit_if_output_closed = exit_code(figures)
    if as_json:
        _print_json(figures)
    elif out is not None:
        _Styled()(f"wrote {out}: {len(figures['partitions'])} partitions, {len(figures['stores'])} stores, "
                  f"{sum(f['problems'] for f in figures['files'])} findings", "bold")
    else:
        _render_report(figures)
    raise typer.Exit(exit_code(figures))


def _render_inspect(report: dict) -> None:
    """Per log dir: its files, then each partition with its startup plan; problems in red."""
    say = _Styled()
    for log_dir in report["log_dirs"]:
        meta = log_dir["meta_properties"]
        marker = log_dir["clean_shutdown"]
        say(f"log dir {log_dir['path']}", "bold")
        if meta:
            say(f"  meta.properties: version {meta['version']}, cluster.id {meta['cluster_id']}, node.id "
                f"{meta['node_id']}, directory.id {meta['directory_id']}")
        say("  shutdown: " + ("clean (.kafka_cleanshutdown present"
                              + (f", broker epoch {marker['broker_epoch']})" if marker["broker_epoch"] is not None
                                 else ")") if marker["marker_present"]
                              else "UNCLEAN (no .kafka_cleanshutdown): partitions are recovered from their "
                                   "recovery points"), None if marker["marker_present"] else "yellow")
        for checkpoint in log_dir["checkpoints"]:
            say(f"  {checkpoint['name']}: {len(checkpoint['entries'])} entries")
        for path in log_dir["other_files"]:
            say(f"  other file: {path}", "dim")
        for item in log_dir["unreadable"]:
            say(f"  UNREADABLE {item['path']}: {item['reason']}", "red")
        _say_problems(say, log_dir["problems"], "  ")
        for partition in log_dir["partitions"]:
            plan = partition["plan"]
            say("")
            say(f"  {os.path.basename(partition['directory'])} ({partition['state']}, topic id "
                f"{partition['topic_id']}): {len(partition['segments'])} segments, {partition['bytes']} bytes, "
                + (f"offsets {partition['first_offset']}..{partition['log_end_offset'] - 1}" if partition["first_offset"] is not None
                   else "no batch") + f", leader epochs "
                f"{len(partition['leader_epochs'])}, producer snapshots {len(partition['producer_snapshots'])}",
                "bold")
            if partition["quorum_state"]:
                state = partition["quorum_state"]
                say(f"    quorum-state: leader {state['leader_id']} epoch {state['leader_epoch']}, voters "
                    f"{state['current_voters']}")
            for snapshot in partition["kraft_snapshots"]:
                say(f"    KRaft snapshot end offset {snapshot['end_offset']} epoch {snapshot['epoch']}: "
                    f"{snapshot['records']} records")
            recovered = plan["recovered_segments"]
            if recovered:
                say(f"    {plan['loaded_by']} recovers {len(recovered)} segment(s) from base offset "
                    f"{recovered[0]['base_offset']} ({recovered[0]['because']}; recovery point "
                    f"{plan['recovery_point']})")
            truncated = plan["truncated_at"]
            if truncated:
                say(f"    truncates {os.path.basename(truncated['segment'])} at byte {truncated['byte_offset']} "
                    f"(offset {truncated['offset']}), dropping offsets {truncated['offset']}.."
                    f"{truncated['dropped_until'] - 1} and {truncated['bytes_dropped']} bytes", "red")
            say(f"    after start-up: log end {plan['log_end_offset']}, recovery point {plan['new_recovery_point']}, "
                f"log start {plan['new_log_start_offset']}")
            for note in plan["notes"]:
                say(f"    note: {note}", "dim")
            _say_problems(say, partition["problems"], "    ")
    summary = report["summary"]
    say("")
    say(f"{summary['partitions']} partitions: {summary['partitions_recovered']} recovered at start-up, "
        f"{summary['partitions_truncated']} truncated; {summary['errors']} errors, {summary['notes']} notes, "
        f"{summary['unreadable']} unreadable", "bold")


def _render_inspect_rocketmq(report: dict) -> None:
    """Per store: shutdown, checkpoint, files, then the start-up plan; problems in red."""
    from segtool.ops.render import iso_time

    say = _Styled()
    for store in report["stores"]:
        shutdown, checkpoint, commitlog, plan = store["shutdown"], store["checkpoint"], store["commitlog"], store["plan"]
        say(f"store {store['path']}", "bold")
        say("  shutdown: " + ("ABNORMAL (abort file present): the next start runs the abnormal recovery"
                              if shutdown["last_exit"] == "abnormal" else "normal (no abort file)")
            + (f"; lock file present ({shutdown['lock_content']})" if shutdown["lock_file"] else "; no lock file"),
            "yellow" if shutdown["last_exit"] == "abnormal" else None)
        if checkpoint:
            say(f"  checkpoint: physicMsgTimestamp {iso_time(checkpoint['physic_msg_timestamp'])}, logicsMsgTimestamp "
                f"{iso_time(checkpoint['logics_msg_timestamp'])}, indexMsgTimestamp "
                f"{iso_time(checkpoint['index_msg_timestamp'])}")
            say(f"    newest message {iso_time(checkpoint['last_message_store_timestamp'])}, newest queued message "
                f"{iso_time(checkpoint['last_unit_store_timestamp'])}, newest index end "
                f"{iso_time(checkpoint['last_index_end_timestamp'])}")
        else:
            say("  checkpoint: none")
        if commitlog:
            say(f"  commitlog: {len(commitlog['files'])} files of {commitlog['configured_file_size']} bytes, "
                f"{commitlog['messages']} messages, data up to physical offset {commitlog['data_end_phy_offset']}"
                + ("" if commitlog["names_continuous"] else ", names NOT continuous"))
            for f in commitlog["files"]:
                span = (f"{f['messages']} messages {f['first_phy_offset']}..{f['last_phy_offset']}, "
                        f"{iso_time(f['first_store_timestamp'])} .. {iso_time(f['last_store_timestamp'])}"
                        if f["messages"] else "no message")
                say(f"    {f['name']} {f['size']} bytes: {span}; ends {f['end_kind']} at {f['end_file_offset']}")
        queues = store["consume_queues"]
        say(f"  consumequeue: {len(queues)} queues, {sum(q['units'] for q in queues)} units in "
            f"{sum(len(q['files']) for q in queues)} files")
        for q in queues:
            if q["directory"] is None:
                say(f"    {q['topic']}/{q['queue_id']}: not on disk; created by the re-dispatch at start", "dim")
                continue
            say(f"    {q['topic']}/{q['queue_id']}: {len(q['files'])} files, {q['units']} units, max offset "
                f"{q['max_offset']}, max physical offset {q['max_physic_offset']}", "dim")
        for f in store["index_files"]:
            say(f"  index {f['name']}: {f['size']} bytes, geometry {f['hash_slot_num']}/{f['index_num']}, indexCount "
                f"{f['index_count']}, {iso_time(f['begin_timestamp'])} .. {iso_time(f['end_timestamp'])}, physical "
                f"offsets {f['begin_phy_offset']}..{f['end_phy_offset']}")
        if store["config_files"]:
            say("  config: " + ", ".join(f"{f['name']} ({f['size']} bytes)" for f in store["config_files"]))
        for path in store["other_files"]:
            say(f"  other file: {path}", "dim")
        for item in store["unreadable"]:
            say(f"  UNREADABLE {item['path']}: {item['reason']}", "red")
        say("  start-up plan:", "bold")
        if not plan["loads"]:
            say("    DefaultMessageStore.load fails: the broker does not start (files of the wrong length: "
                + ", ".join(plan["refused_files"]) + ")", "red")
        recovery = plan["commitlog"]
        if recovery:
            say(f"    {recovery['method']} from {recovery['start_file']}: stops at physical offset "
                f"{recovery['max_phy_offset']} ({recovery['stop_kind']}"
                + (f": {recovery['stop_reason']}" if recovery["stop_reason"] else "") + ")")
            cut = recovery["truncated_at"]
            if cut:
                say(f"    truncates the CommitLog in {cut['file']} at byte {cut['file_offset']}: "
                    f"{cut['bytes_dropped']} bytes, {cut['messages_dropped']} messages dropped", "red")
            if recovery["deleted_files"]:
                say(f"    deletes CommitLog file(s) {', '.join(recovery['deleted_files'])}")
        if plan["truncates_consume_queues"] or plan["consume_queue_units_dropped"]:
            say(f"    ConsumeQueues: {plan['consume_queue_units_dropped']} units dropped"
                + (" (truncateDirtyLogicFiles runs)" if plan["truncates_consume_queues"] else ""),
                "red" if plan["consume_queue_units_dropped"] else None)
        index = plan["index"]
        if index["destroyed"]:
            say(f"    IndexService.load destroys {', '.join(index['destroyed'])}", "yellow")
        for name, step in (("recovery dispatch", plan["recovery_dispatch"]), ("reput", plan["reput"])):
            if step:
                say(f"    {name}: {step['messages']} messages from {step['from_file']} to physical offset "
                    f"{step['to_phy_offset']}, {step['units_added']} ConsumeQueue units added")
        if index["entries_written"]:
            say(f"    index: {index['entries_written']} entries for {index['messages_indexed']} messages, "
                f"{index['files_created']} new file(s)" + (f", appended to {index['appended_to']}"
                                                           if index["appended_to"] else ""))
        for note in plan["notes"]:
            say(f"    note: {note}", "dim")
        _say_problems(say, store["problems"], "  ")
        say("")
    summary = report["summary"]
    say(f"{summary['stores']} stores: {summary['abnormal_shutdowns']} abnormal shutdowns, "
        f"{summary['stores_not_loading']} not loading, {summary['commitlogs_truncated']} CommitLogs truncated, "
        f"{summary['consume_queue_units_dropped']} ConsumeQueue units dropped, {summary['index_files_destroyed']} "
        f"IndexFiles destroyed; {summary['errors']} errors, {summary['notes']} notes, {summary['unreadable']} "
        "unreadable", "bold")


@app.command()
def inspect(
    paths: List[str] = typer.Argument(..., help="Kafka log dirs (the directories holding the partition directories), or RocketMQ store roots.", metavar="LOGDIR..."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Inventory a Kafka log dir and say what the broker will do when it starts on it.

    meta.properties, quorum-state, every checkpoint, the clean-shutdown marker and each
    partition's files; cross-checks between them; and the startup plan: which segments
    are recovered, where recovery truncates and what it drops (docs/inspect.md).

    A RocketMQ store root instead: its CommitLog, ConsumeQueue and IndexFiles, the
    checkpoint against them, config/, the abort and lock markers, and what the broker's
    normal or abnormal recovery does on start: where it cuts the CommitLog, which
    ConsumeQueue units and IndexFiles it drops, what it re-dispatches.

    Exit code 0 when nothing is wrong, 1 when a cross-check or the plan found an error,
    2 when a file cannot be read.

    Examples:

      segtool inspect /var/lib/kafka/data

      segtool inspect --json evidence/kafka-logs > startup-plan.json

      segtool inspect evidence/rocketmq/store
    """
    from segtool.engine.inventory import is_store_root

    stores = [path for path in paths if is_store_root(path)]
    if stores and len(stores) != len(paths):
        _fail("give Kafka log dirs or RocketMQ stores, not both: "
              + ", ".join(path for path in paths if path not in stores) + " are not RocketMQ stores")
    if stores:
        from segtool.ops.inspect_rocketmq import exit_code, inspect_stores

        report = inspect_stores(stores)
        render = _render_inspect_rocketmq
    else:
        from segtool.ops.inspect import exit_code, inspect as run_inspect

        report = run_inspect(paths)
        render = _render_inspect
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        render(report)
    raise typer.Exit(exit_code(report))


@app.command("rebuild-index")
def rebuild_index(
    paths: List[str] = typer.Argument(..., help="Segment .log files, partition directories or a log directory.", metavar="PATH..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Directory to write the rebuilt indexes into.", metavar="DIR"),
    in_place: bool = typer.Option(False, "--in-place", help="Replace the indexes beside the input (backup kept, atomic)."),
    force: bool = typer.Option(False, "--force", help="Replace files already in --out (each is backed up first)."),
    index_interval_bytes: int = typer.Option(4096, "--index-interval-bytes", min=1, help="Kafka: the topic's index.interval.bytes.", metavar="BYTES"),
    hash_slot_num: Optional[int] = typer.Option(None, "--hash-slot-num", min=1, help="RocketMQ: IndexFile slots (default: the store's, else 5,000,000).", metavar="N"),
    index_num: Optional[int] = typer.Option(None, "--index-num", min=2, help="RocketMQ: IndexFile entries (default: the store's, else 20,000,000).", metavar="N"),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input segment or CommitLog file (faster on huge files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
    engine: Optional[str] = typer.Option(None, "--engine", help="Kafka: local (default) or spark, one Spark task per partition.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
):
    """Rebuild indexes: Kafka's .index/.timeindex/.txnindex exactly as its log recovery does,
    or a RocketMQ store's IndexFiles as IndexService.buildIndex does.

    Examples:

      segtool rebuild-index data/orders-0 --out /tmp/rebuilt

      segtool rebuild-index data/orders-0/00000000000000000000.log --in-place

      segtool rebuild-index rocketmq/store --out /tmp/rebuilt-store
    """
    if not no_hash and engine is None and master is None and (out is not None) != in_place:
        from segtool.source import start_sha256_early

        start_sha256_early(paths[0])  # the first segment's hash starts before the recovery code loads
    from segtool.ops.rebuild import rebuild_index as run_rebuild

    if out is None and not in_place:
        _fail("give --out DIR, or --in-place to replace the files beside the input")
    if out is not None and in_place:
        _fail("give either --out DIR or --in-place, not both")
    from segtool.engine.inventory import inventory, rocketmq_stores

    stores = rocketmq_stores(paths)
    if stores:
        partitions = [p.directory for p in inventory(paths).partitions if p.logs]
        if partitions:
            _fail(f"found {len(partitions)} Kafka partition(s) (first {partitions[0]}) and {len(stores)} RocketMQ "
                  f"store(s) (first {stores[0]}): rebuild them in separate runs")
        from segtool.ops.rebuild_rocketmq import rebuild_rocketmq_stores

        reports = rebuild_rocketmq_stores(stores, out_dir=out, in_place=in_place, hash_slot_num=hash_slot_num,
                                          index_num=index_num, hash_inputs=not no_hash, force=force)
        if as_json:
            _print_json({"stores": reports})
        else:
            for rep in reports:
                for written in rep["files"]:
                    sys.stdout.write(f"wrote {written['path']} ({written['entries']} entries, {written['size']} bytes,"
                                     f" {written['allocated_bytes']} allocated on disk, sha256 {written['sha256']})\n")
                    _say_replaced(written)
                if rep["backup_dir"]:
                    sys.stdout.write(f"  the store's index/ was first copied to {rep['backup_dir']}\n")
        raise typer.Exit(EXIT_CLEAN)
    runner = _pipeline_engine(engine, master, conf)
    if runner is not None:
        from segtool.pipeline.rebuild import rebuild_distributed

        with runner, _interruptible():
            report = rebuild_distributed(paths, runner, out_dir=out, in_place=in_place,
                                         index_interval_bytes=index_interval_bytes, force=force)
    else:
        with _Progress(enabled=not as_json) as progress:
            report = run_rebuild(paths, out_dir=out, in_place=in_place, index_interval_bytes=index_interval_bytes, force=force,
                             progress_factory=progress.factory, hash_inputs=not no_hash)
    if as_json:
        _print_json(report)
    else:
        for seg in report["segments"]:
            note = "" if not seg["bytes_kafka_would_truncate"] else (
                f"  (Kafka's recovery would also cut the log at byte {seg['valid_bytes']}: {seg['stop_message']})")
            sys.stdout.write(f"{seg['log']}: {seg['offset_index_entries']} offset entries, "
                             f"{seg['time_index_entries']} time entries, {seg['aborted_transactions']} aborted txns{note}\n")
            for written in seg["written"]:
                sys.stdout.write(f"  wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})\n")
                _say_replaced(written)
        if report["skipped"]:
            sys.stdout.write(f"{len(report['skipped'])} other files left as they are (not segments; see --json)\n")
    _name_unreadable(report["unreadable"])
    truncated = any(seg["bytes_kafka_would_truncate"] for seg in report["segments"])
    raise typer.Exit(EXIT_UNREADABLE if report["unreadable"] else EXIT_PROBLEMS if truncated else EXIT_CLEAN)


def _name_unreadable(entries: list[dict]) -> None:
    """Entries a writing command could not read: one line each on stderr; the rest was done."""
    for entry in entries:
        sys.stderr.write(f"segtool: {entry['path']}: {entry['reason']}\n")


def _say_replaced(written: dict) -> None:
    if written.get("unchanged"):
        sys.stdout.write("    it held these very bytes already: left as it was, no backup made\n")
    elif written.get("replaced_sha256"):
        where = f"kept as {written['backup']}" if written.get("backup") else "backed up with its directory"
        sys.stdout.write(f"    replaced a file with sha256 {written['replaced_sha256']}, {where}\n")


def _pipeline_engine(engine: Optional[str], master: Optional[str], conf: Optional[List[str]]):
    """None for the local engine of verify/rebuild-index (their own in-process code), else the Spark engine."""
    from segtool.pipeline.engines import engine_name, make_engine

    if engine_name(engine, master) == "local" and not master and not conf:
        return None
    return make_engine(engine, master, quiet=_State.quiet, conf=conf)


class _interruptible:
    """Ctrl-C of a pipeline run: one line and exit 130 (Spark's jobs are cancelled), no Py4J traceback."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, traceback):
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            sys.stderr.write("segtool: interrupted; nothing was completed\n")
            raise typer.Exit(130) from None
        return False


@app.command()
def scan(
    paths: List[str] = typer.Argument(..., help="Kafka log or partition directories, RocketMQ stores (or directories above them); paths or URIs (s3://, hdfs://).", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Output directory or URI: one Parquet dataset, OUT/topic=…/partition=…/part-….parquet, with OUT/_SUCCESS and the report OUT/_segtool_report.json.", metavar="DIR"),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: one per core).", metavar="N"),
    split_size: str = typer.Option("64MiB", "--split-size", help="Cut bigger segments and CommitLog files into tasks of about this size (0: never).", metavar="SIZE"),
    with_values: bool = typer.Option(False, "--with-values", help="Also store each record's value / message body."),
    force: bool = typer.Option(False, "--force", help="Replace the dataset of an earlier scan in OUT (its report is backed up)."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input file in the report (one pass less)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
):
    """Every Kafka record and RocketMQ message into Parquet, one row each, on this machine or on Spark.

    Kafka rows are what kafka-dump-log --deep-iteration lists (control records included, legacy
    wrapper messages expanded); the schema is in docs/pipeline.md. Exit code 1 when damaged data
    was met (see the report's problems), 2 when an input is unreadable.

    Examples:

      segtool scan /var/lib/kafka/data --out /cases/42/scan

      segtool scan evidence/kafka-logs evidence/rocketmq/store --out scan --engine spark --master local[4]

      spark-submit segtool/spark_job.py scan hdfs://nn/evidence --out hdfs://nn/cases/42/scan
    """
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.scan import exit_code as scan_exit_code, parse_size, scan as run_scan

    # Spark draws its own stage progress
    with _Progress(enabled=not as_json and engine_name(engine, master) == "local") as progress:
        runner = make_engine(engine, master, workers, quiet=_State.quiet, progress=progress.task, conf=conf)
        with runner, _interruptible():
            report = run_scan(paths, out, runner, split_bytes=parse_size(split_size), with_values=with_values,
                              force=force, hash_inputs=not no_hash)
    if as_json:
        _print_json(report)
    else:
        dataset = report["dataset"]
        brokers = ", ".join(f"{kind} {rows}" for kind, rows in dataset["rows_by_broker"].items())
        sys.stdout.write(f"{dataset['rows']} rows ({brokers}) in {dataset['files']} files, "
                         f"{dataset['partition_directories']} topic/partition directories, under {dataset['path']}\n")
        timing = report["timing"]
        sys.stdout.write(f"{report['inputs']['bytes']} input bytes in {report['tasks']} tasks on {report['engine']}"
                         f": scan {timing['scan_seconds']} s ({timing['mb_per_second']} MB/s), "
                         f"start-up {timing['startup_seconds']} s\n")
        for problem in report["problems"]:
            where = "" if problem["byte_offset"] is None else f" byte {problem['byte_offset']}"
            sys.stdout.write(f"{problem['severity']}: {problem['path']}{where}: {problem['message']}\n")
        if report["inputs"]["skipped"]:
            sys.stdout.write(f"{len(report['inputs']['skipped'])} other files not scanned (neither segments nor "
                             f"CommitLog files), each named in {dataset['report']}\n")
    _name_unreadable(report["inputs"]["unreadable"])
    raise typer.Exit(scan_exit_code(report))


@app.command()
def carve(
    paths: List[str] = typer.Argument(..., help="Any files (disk or partition images, core dumps, damaged segments) or directories (every file below them).", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Directory for finds.jsonl, kafka_batches.parquet, kafka_records.parquet, rocketmq_messages.parquet and carve-report.json.", metavar="DIR"),
    force: bool = typer.Option(False, "--force", help="Replace the outputs of an earlier carve in DIR (each is backed up first)."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input (faster on huge images)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
):
    """Find every checksum-valid Kafka batch and RocketMQ message at any byte of any file.

    Finds are grouped into runs (Kafka: continuing offsets or a producer's sequence; RocketMQ:
    topic and queue) and written with their byte positions. Exit code 0 when something was found
    and every find placed in a run, 1 when nothing was found or a find could not be placed
    (duplicates, offset conflicts, records that do not decode; see the report), 2 when an input
    is unreadable.

    Examples:

      segtool carve /cases/42/disk.img --out /cases/42/carved

      segtool carve --json core.1234 damaged-partition/ --out carved > carve-report.json
    """
    from segtool.ops.carve import carve as run_carve, exit_code as carve_exit_code

    with _Progress(enabled=not as_json) as progress:
        report = run_carve(paths, out, force=force, hash_inputs=not no_hash, progress_factory=progress.factory)
    if as_json:
        _print_json(report)
    else:
        summary, search = report["summary"], report["search"]
        sys.stdout.write(f"{summary['kafka_batches']} Kafka batches ({summary['kafka_records']} records) and "
                         f"{summary['rocketmq_messages']} RocketMQ messages in {len(report['inputs'])} files, "
                         f"{summary['runs']} runs; {summary['unplaced']} finds not placed\n")
        sys.stdout.write(f"searched {search['bytes_searched']} bytes: {search['candidates']} candidates, "
                         f"{search['checksums']} checksums computed (false finds expected: "
                         f"{search['expected_false_finds']:.2g})\n")
        for item in report["unplaced"][:5]:
            sys.stdout.write(f"not placed: {item['file']} byte {item['position']}: {item['reason']}: {item['message']}\n")
        if summary["unplaced"] > 5:
            sys.stdout.write(f"... and {summary['unplaced'] - 5} more in {os.path.join(out, 'carve-report.json')}\n")
        for written in report["written"]:
            sys.stdout.write(f"wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})\n")
            _say_replaced(written)
        sys.stdout.write(f"wrote {os.path.join(out, 'carve-report.json')}\n")
    _name_unreadable(report["unreadable"])
    raise typer.Exit(carve_exit_code(report))


@app.command()
def trim(
    paths: List[str] = typer.Argument(..., help=".index / .timeindex files, or directories (every index file below them).", metavar="PATH..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Directory to write the trimmed files into (as OUT/<partition>/<file>).", metavar="DIR"),
    in_place: bool = typer.Option(False, "--in-place", help="Shrink the files themselves (backup kept, atomic)."),
    force: bool = typer.Option(False, "--force", help="Replace files already in --out (each is backed up first)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only report what would be reclaimed."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Shrink preallocated index files to their valid entries (Kafka's trimToValidSize).

    Examples:

      segtool trim data/orders-0/00000000000000001185.index --out /tmp/trimmed

      segtool trim --dry-run data/
    """
    from segtool.ops.trim import trim as run_trim

    if out is None and not in_place and not dry_run:
        _fail("give --out DIR, --in-place or --dry-run")
    if out is not None and in_place:
        _fail("give either --out DIR or --in-place, not both")
    report = run_trim(paths, out_dir=out, in_place=in_place, dry_run=dry_run, force=force)
    if as_json:
        _print_json(report)
    else:
        for item in report["files"]:
            where = f" -> {item['written']['path']} (sha256 {item['written']['sha256']})" if item["written"] else ""
            sys.stdout.write(f"{item['path']}: {item['valid_entries']} valid entries, "
                             f"{item['bytes_reclaimed']} bytes reclaimed{where}\n")
            if item["written"]:
                _say_replaced(item["written"])
        for item in report["skipped"]:
            sys.stdout.write(f"skipped {item['path']}: {item['reason']}\n")
        sys.stdout.write(f"total reclaimed: {report['bytes_reclaimed']} bytes\n")
    _name_unreadable(report["unreadable"])
    raise typer.Exit(EXIT_UNREADABLE if report["unreadable"] else EXIT_CLEAN if report["files"] else EXIT_PROBLEMS)


@app.command()
def salvage(
    paths: List[str] = typer.Argument(..., help="Kafka partition or log directories, or a RocketMQ store.", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Directory for the new partitions (OUT/<partition>/) or the new store.", metavar="DIR"),
    force: bool = typer.Option(False, "--force", help="Replace files already in --out (each is backed up first)."),
    index_interval_bytes: int = typer.Option(4096, "--index-interval-bytes", min=1, help="Kafka: the topic's index.interval.bytes.", metavar="BYTES"),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Write back what survives damage: every valid Kafka batch into a new partition (offsets,
    timestamps and bytes unchanged, indexes as Kafka's recovery writes them), or every valid
    RocketMQ message at its physical offset into a new store (ConsumeQueues, IndexFiles and a
    Parquet list of the survivors rebuilt).  Reports every damaged byte range and what it lost.

    Exit code 0 when nothing was lost, 1 when damage was found or something could not be written
    back, 2 when an input is unreadable.

    Examples:

      segtool salvage evidence/orders-0 --out /cases/42/salvaged

      segtool salvage evidence/rocketmq/store --out /cases/42/store --json > salvage.json
    """
    from segtool.ops.render import damaged_range_text
    from segtool.ops.salvage import exit_code as salvage_exit_code, salvage as run_salvage

    with _Progress(enabled=not as_json) as progress:
        report = run_salvage(paths, out, index_interval_bytes=index_interval_bytes, force=force,
                             progress_factory=progress.factory)
    _State.exit_if_output_closed = salvage_exit_code(report)
    if as_json:
        _print_json(report)
    else:
        for item in report["partitions"] + report["stores"]:
            sys.stdout.write(f"{item.get('directory') or item.get('store')} -> {item['out_directory']}\n")
            for damaged in item["damaged_ranges"]:
                sys.stdout.write(f"  damaged {damaged['file']}: {damaged_range_text(damaged)}\n")
            for conflict in item["conflicts"]:
                sys.stdout.write(f"  not written back: {conflict['file']} byte {conflict['position']}, offsets "
                                 f"{conflict['first_offset']}..{conflict['last_offset']}: {conflict['reason']}\n")
        for partition in report["partitions"]:
            lost = ", ".join(f"{r['first_offset']}..{'?' if r['last_offset'] is None else r['last_offset']}"
                             for r in partition["offset_ranges_lost"]) or "none"
            sys.stdout.write(f"  {partition['batches_kept']} batches kept, {partition['batches_failed_crc']} failed "
                             f"their CRC, offsets lost: {lost}\n")
            for segment in partition["segments"]:
                for written in segment["written"]:
                    sys.stdout.write(f"  wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})\n")
                    _say_replaced(written)
        for store in report["stores"]:
            lost = sum(r["last_offset"] - r["first_offset"] + 1 for r in store["queue_offsets_lost"])
            sys.stdout.write(f"  {store['messages_kept']} messages kept, {store['messages_failed_crc']} failed their "
                             f"body CRC, {lost} queue offsets lost; wrote {len(store['written'])} store files and "
                             f"{store['messages_parquet']['path']}\n")
            for note in store["notes"]:
                sys.stdout.write(f"  note: {note}\n")
        summary = report["summary"]
        sys.stdout.write("nothing lost\n" if summary["nothing_lost"] else
                         f"{summary['damaged_ranges']} damaged ranges ({summary['bytes_damaged']} bytes); see --json "
                         "for every range and lost offset\n")
        if report["skipped"]:
            sys.stdout.write(f"{len(report['skipped'])} other files not written back (each named with its reason "
                             "in --json)\n")
    _name_unreadable(report["unreadable"])
    raise typer.Exit(salvage_exit_code(report))


@app.command("index-keys")
def index_keys(
    partition_dir: str = typer.Argument(..., help="A Kafka partition directory.", metavar="PARTITION_DIR"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Where to write the index (default: segtool's cache, $XDG_CACHE_HOME/segtool/keyindex/).", metavar="DIR"),
    force: bool = typer.Option(False, "--force", help="Replace an index already in --out (backed up first)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Build a hash index of record keys (RocketMQ's IndexFile layout) so `lookup --key` need not scan.

    The index goes to segtool's cache by default, never into the log dir (a broker
    would take a foreign folder there for a broken partition).

    Examples:

      segtool index-keys data/orders-0

      segtool lookup data/orders-0 --key order-42

      segtool index-keys data/orders-0 --out /cases/42/orders-0.keyindex

      segtool lookup data/orders-0 --key order-42 --key-index /cases/42/orders-0.keyindex
    """
    from segtool.ops.keyindex import index_keys as run_index_keys

    with _Progress(enabled=not as_json) as progress:
        report = run_index_keys(partition_dir, out, progress_factory=progress.task, force=force)
    if as_json:
        _print_json(report)
    else:
        sys.stdout.write(f"indexed {report['records_indexed']} keyed records into {report['index_dir']}\n")
    raise typer.Exit(EXIT_CLEAN)


def _err_line_after(out: _LineWriter):
    def emit(line: str) -> None:
        out.flush()
        sys.stderr.write(line + "\n")

    return emit


class _OutputClosed(Exception):
    """stdout's reader has gone (``segtool dump ... | head``)."""


class _GuardedStdout:
    """sys.stdout whose writes raise ``_OutputClosed`` on a closed pipe.

    Click and Typer turn a BrokenPipeError into exit code 1 with a message; a
    closed pipe is the reader's choice, so segtool ends quietly with 0 instead.
    """

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise _OutputClosed() from None

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise _OutputClosed() from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _hoist_global_flags(args: list[str]) -> list[str]:
    """``--debug`` and ``-q/--quiet`` after the command name mean the same as before it."""
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in _GLOBAL_FLAGS]
    return flags + [a for a in args[:end] if a not in _GLOBAL_FLAGS] + args[end:]


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that running work (a worker pool) is stopped cleanly."""


def _on_sigterm(signum, frame) -> None:
    raise _Terminated()


def main() -> None:
    """Console entry point: one-line errors, the exit-code contract, quiet on a closed pipe."""
    import gc
    import signal

    sys.stdout = _GuardedStdout(sys.stdout)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _keep_freed_memory()
    try:
        _run_command()
    finally:
        # what is alive now lives to the end: the interpreter's last collection need not visit it
        # (with numpy and the layouts loaded, that collection took 60 of the 80 ms of every exit)
        gc.freeze()


def _run_command() -> None:
    """The command named on the command line; every way it ends is an exit code (``SystemExit``)."""
    try:
        # without standalone mode the parser returns the command's exit code
        sys.exit(app(args=_hoist_global_flags(sys.argv[1:]), prog_name="segtool", standalone_mode=False) or 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except _OutputClosed:
        # keep Python's final flush quiet too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        sys.exit(_State.exit_if_output_closed)
    except SegtoolError as exc:
        _show_traceback()
        sys.stderr.write(f"segtool: {exc}\n")
        sys.exit(EXIT_PROBLEMS if isinstance(exc, NothingFound) else EXIT_UNREADABLE)
    except ModuleNotFoundError as exc:
        _show_traceback()
        sys.stderr.write(f"segtool: this needs the Python package {exc.name!r}, which is not installed: "
                         "pip install 'segtool[spark]'\n")
        sys.exit(EXIT_UNREADABLE)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    except _Terminated:
        sys.exit(143)
    except Exception as exc:  # the last line of defence: never a traceback unless asked
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()  # a usage error from the argument parser
            sys.exit(EXIT_UNREADABLE)
        _show_traceback()
        sys.stderr.write(f"segtool: internal error: {type(exc).__name__}: {exc} (run with --debug for details)\n")
        sys.exit(EXIT_UNREADABLE)


def _keep_freed_memory() -> None:
    """Have glibc keep freed memory for the next allocation rather than hand it back to the system.

    A dump or scan frees and allocates tens of megabytes per chunk of a file; by default glibc
    returns them (unmapping, trimming the heap) and takes them back a page fault at a time: half
    a million faults, a fifth of the run, for a 1M-record dump.  Peak memory is the same.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's C library: glibc's has it, others may not
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 32 * 1024 * 1024)  # glibc's largest: blocks up to it come from the heap
    mallopt(m_trim_threshold, 256 * 1024 * 1024)


def _show_traceback() -> None:
    """With --debug, the traceback goes first; the exit code stays the contract's."""
    if _State.debug:
        import traceback

        traceback.print_exc()


if __name__ == "__main__":
    main()
