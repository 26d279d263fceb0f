"""The segtool command line: it parses the arguments, calls ``segtool.ops``, prints and exits.

Every command calls a library function in ``segtool.ops`` that returns data (and its exit code);
the text lines come from ``ops.text`` and ``ops.render``, dump's whole run from ``ops.dump.run_dump``.
Heavy modules are imported inside commands so a cold start stays fast.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Annotated, List, Optional

import typer

from segtool import startup
from segtool.errors import NothingFound, SegtoolError
from segtool.findings import json_default
from segtool.formats.json_text import to_json
from segtool.pipeline.tasks import DEFAULT_TASK_RETRIES

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The exit-code contract, the same for all 13 commands (tests/test_cli_contract.py holds each
# command to it on a missing path, a non-broker file and an empty directory, with and without --json):
#   0    clean: the input was read and nothing is wrong
#   1    problems found (damage, a failed cross-check, a lookup with no answer), or nothing found: a
#        readable input that holds nothing the command works on (a file that is not a broker's, an
#        empty directory, a 0-byte CommitLog); reading it was not the trouble, so not 2
#   2    unreadable input (missing, no permission, a dangling link) or a usage error
#   130  interrupted (Ctrl-C); 143 terminated (SIGTERM)
# A closed stdout (`| head`) or stderr keeps the code the command had by then.  With --json every
# failure also prints one ErrorReport (ops/output_schema.py) on stdout: a script always gets JSON.
EXIT_CLEAN, EXIT_PROBLEMS, EXIT_UNREADABLE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class _State:
    debug = False
    quiet = False
    json_output = False  # --json (dump: --format json) was asked: failures print an ErrorReport too
    # the exit code when stdout closes early (`| head`): what was found by then keeps its code
    exit_if_output_closed = EXIT_CLEAN
    mirrored: dict[str, str] = {}  # the mirror of each URI input -> the URI (carve's Spark tasks read the URI)


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


def _fail(message: str) -> None:
    from segtool.errors import UsageError

    raise UsageError(message)


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


# the record filters and shapes of dump and lookup (docs/filters.md), declared once
_FromOffset = Annotated[Optional[int], typer.Option("--from-offset", min=0, help="Kafka filter: records at offsets >= N.", metavar="N")]
_ToOffset = Annotated[Optional[int], typer.Option("--to-offset", min=0, help="Kafka filter: records at offsets <= N.", metavar="N")]
_FromTime = Annotated[Optional[str], typer.Option("--from-time", help="Kafka filter: records with timestamps >= TIME (epoch ms or ISO-8601).", metavar="TIME")]
_ToTime = Annotated[Optional[str], typer.Option("--to-time", help="Kafka filter: records with timestamps <= TIME (epoch ms or ISO-8601).", metavar="TIME")]
_ProducerIds = Annotated[Optional[List[int]], typer.Option("--producer-id", help="Kafka filter: batches of this producer id (may repeat).", metavar="PID")]
_ProducerEpoch = Annotated[Optional[int], typer.Option("--producer-epoch", help="Kafka filter: batches of this producer epoch.", metavar="E")]
_LeaderEpoch = Annotated[Optional[int], typer.Option("--leader-epoch", help="Kafka filter: batches of this partition leader epoch.", metavar="E")]
_TransactionalId = Annotated[Optional[str], typer.Option("--transactional-id", help="Kafka filter: the producer ids of this transactional id, from the log dir's __transaction_state.", metavar="ID")]
_Summary = Annotated[bool, typer.Option("--summary", help="Kafka: counts, bytes, time span, per-producer and per-codec figures instead of the records.")]
_SkipRecordMetadata = Annotated[bool, typer.Option("--skip-record-metadata", help="Kafka: records as key and value only.")]
_KeyFormat = Annotated[Optional[str], typer.Option("--key-format", help="Kafka: show keys as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT")]
_ValueFormat = Annotated[Optional[str], typer.Option("--value-format", help="Kafka: show values as text, hex, base64 or json (schema-registry framing shown apart).", metavar="FORMAT")]


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
    share_group_state_decoder: bool = typer.Option(False, "--share-group-state-decoder", help="kafka: decode __share_group_state records (an option of kafka-dump-log 4.0 and later)."),
    kafka_version: str = typer.Option("3.9", "--kafka-version", help="kafka: print as this kafka-dump-log prints: 3.9, or 4.1 (__transaction_state records as JSON).", metavar="VERSION"),
    max_bytes: int = typer.Option(2**31 - 1, "--max-bytes", min=0, help="kafka: read at most this many bytes of each .log.", metavar="BYTES"),
    max_message_size: int = typer.Option(5 * 1024 * 1024, "--max-message-size", min=1, help="kafka: largest batch an index entry may point to.", metavar="BYTES"),
    shallow: bool = typer.Option(False, "--shallow", help="text/json: batches only, no records."),
    full: bool = typer.Option(False, "--full", help="text: keys and values whole (cut at 60 characters otherwise)."),
    decompress_cap: int = typer.Option(256 * 1024 * 1024, "--decompress-cap", min=1, help="Largest decompressed batch, bytes.", metavar="BYTES"),
    from_offset: _FromOffset = None,
    to_offset: _ToOffset = None,
    from_time: _FromTime = None,
    to_time: _ToTime = None,
    key: Optional[str] = typer.Option(None, "--key", help="Kafka filter: records whose key is KEY (UTF-8).", metavar="KEY"),
    producer_ids: _ProducerIds = None,
    producer_epoch: _ProducerEpoch = None,
    leader_epoch: _LeaderEpoch = None,
    transactional_id: _TransactionalId = None,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Kafka: at most N records (batches with --shallow).", metavar="N"),
    summary: _Summary = False,
    skip_record_metadata: _SkipRecordMetadata = False,
    key_format: _KeyFormat = None,
    value_format: _ValueFormat = None,
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
    from segtool.ops.dump import DumpRequest, run_dump

    startup.decoding_without_collection()
    request = DumpRequest(
        paths=list(paths or []) + [name for option in files or [] for name in option.split(",") if name],
        format="json" if as_json else format, deep=not shallow, full=full, cap=decompress_cap,
        filters=dict(from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time, key=key,
                     producer_ids=producer_ids, producer_epoch=producer_epoch, leader_epoch=leader_epoch,
                     transactional_id=transactional_id, limit=limit),
        summary=summary, key_format=key_format, value_format=value_format,
        skip_record_metadata=skip_record_metadata,
        kafka=dict(deep_iteration=deep_iteration, print_data_log=print_data_log,
                   verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                   offsets_decoder=offsets_decoder, transaction_log_decoder=transaction_log_decoder,
                   cluster_metadata_decoder=cluster_metadata_decoder,
                   remote_log_metadata_decoder=remote_log_metadata_decoder,
                   share_group_state_decoder=share_group_state_decoder, kafka_version=kafka_version,
                   max_bytes=max_bytes, max_message_size=max_message_size))
    coloured = request.format == "text" and sys.stdout.isatty()
    output = _DumpOutput(_ColourWriter() if coloured else _LineWriter())
    code = run_dump(request, output)
    output.out.flush()
    raise typer.Exit(code)


class _DumpOutput:
    """``ops.dump.DumpOutput`` on stdout and stderr."""

    def __init__(self, out):
        self.out = out
        self.line = out
        self.note = _err_line_after(out)

    def run(self, lines: list[str]) -> None:
        if isinstance(self.out, _LineWriter):
            self.out.many(lines)
        else:  # a terminal's colours are chosen line by line
            for line in lines:
                self.out(line)

    def found(self, code: int) -> None:
        _State.exit_if_output_closed = code


def _print_json(obj) -> None:
    sys.stdout.write(to_json(obj, default=json_default) + "\n")


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
    from_offset: _FromOffset = None,
    to_offset: _ToOffset = None,
    from_time: _FromTime = None,
    to_time: _ToTime = None,
    producer_ids: _ProducerIds = None,
    producer_epoch: _ProducerEpoch = None,
    leader_epoch: _LeaderEpoch = None,
    transactional_id: _TransactionalId = None,
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Kafka: at most N records (with --offset/--timestamp: the first N from the answer).", metavar="N"),
    summary: _Summary = False,
    skip_record_metadata: _SkipRecordMetadata = False,
    key_format: _KeyFormat = None,
    value_format: _ValueFormat = None,
    full: bool = typer.Option(False, "--full", help="Show keys and values whole (text output cuts them at 200 characters)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
):
    """Answer a broker lookup from files alone.

    Kafka lookups take record filters (docs/filters.md): --offset/--timestamp then answer
    with the first record from the broker's answer on that passes them, --key keeps the
    records that pass.

    Exit code 0 when something was found, 1 when nothing was or the partition is damaged (the
    answer then says where the broker's recovery cuts, or where the key search stopped), 2 for a
    usage error.

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
    if as_json:
        _print_json(answer)
    else:
        from segtool.ops.text import lookup_lines

        sys.stdout.write("\n".join(lookup_lines(answer, request, full)) + "\n")
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
    from segtool.ops.brokers import consumer_groups
    from segtool.ops.text import groups_lines, no_groups_line

    report, code = consumer_groups(log_dir, group=group, at=at)
    _State.exit_if_output_closed = code
    if as_json:
        _print_json(report)
    else:
        _print_styled(groups_lines(report))
    missing = no_groups_line(report, group, log_dir)
    if missing is not None:
        sys.stderr.write(missing + "\n")
    raise typer.Exit(code)


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
        from segtool.ops.text import transactions_lines

        _print_styled(transactions_lines(report))
    raise typer.Exit(exit_code(report))


@app.command()
def replicas(
    paths: list[str] = typer.Argument(..., help="Brokers' log dirs or stores, or folders holding several.",
                                      metavar="PATH..."),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark: one task per partition.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: one per core; small inputs in-process).", metavar="N"),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
    retries: int = typer.Option(DEFAULT_TASK_RETRIES, "--retries", help="Try a task whose worker dies (the OOM killer, a crash) this many more times; Spark: a failed task.", metavar="N"),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input file (faster on huge files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Replicas: what each broker holds of a partition, where the copies part, what an election loses.

    Brokers are told apart by meta.properties' node.id/broker.id, else by their folder; a
    partition held by two or more brokers (same name and topic id) is compared batch by
    batch.  For each replica as the next leader, every other replica truncates as Kafka's
    epoch exchange decides (Partition.makeLeader, LeaderEpochFileCache.endOffsetFor,
    AbstractFetcherThread.getOffsetTruncationState); the records it drops are named, with
    those below a high watermark counted as committed.  RocketMQ master/slave and DLedger
    stores are compared by CommitLog bytes and DLedger terms (docs/replicas.md).  Each
    partition (each RocketMQ group) is one task, on a local process pool or on Spark; the
    report is the same on either.  Every file below the brokers is reported with its
    sha256, hashed by the task reading it.

    Exit code 0 when the copies agree, 1 when they part, a replica is damaged, the best
    election still loses committed records, or nothing is held by two brokers; 2 when an
    input cannot be read.

    Examples:

      segtool replicas broker1/kafka-logs broker2/kafka-logs broker3/kafka-logs

      segtool replicas --json evidence/ > replicas.json

      segtool replicas --engine spark --master spark://head:7077 /cases/42/brokers
    """
    from segtool.ops.replicas import exit_code
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.replicas import replicas_on

    # Spark draws its own stage progress
    with _Progress(enabled=not as_json and engine_name(engine, master) == "local", title="replicas") as progress:
        runner = make_engine(engine, master, workers, quiet=_State.quiet, progress=progress and progress.task,
                             conf=conf, retries=retries)
        with runner, _interruptible():
            report = replicas_on(paths, runner, notify=_notice, hash_inputs=not no_hash)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import replicas_lines

        _print_styled(replicas_lines(report))
    raise typer.Exit(exit_code(report))


class _Progress:
    """The one progress bar of a run, on stderr, only when stderr is a terminal and not --quiet.

    One bar for the whole run (files and bytes done of the planned total, the file being read
    with its partition or store), as rsync, cargo and pip show: a bar per file made a terminal
    run of 300 files 40x slower than a piped one, redrawing hundreds of bars.  An op reports as
    often as it likes; the bar is updated at most ``_UPDATES_PER_SECOND`` times a second, and
    only once the run has lasted a second (as git's delayed progress, and its GIT_PROGRESS_DELAY:
    SEGTOOL_PROGRESS_DELAY seconds): a shorter run shows no bar and does not import rich's
    progress (40 ms of CPU).  tests/bench/test_bench_progress.py: terminal/piped <= 1.1x.
    """

    _UPDATES_PER_SECOND = 10

    def __init__(self, enabled: bool, title: str):
        self.enabled = enabled and not _State.quiet and sys.stderr.isatty()
        self.title = title
        self.bar = None
        self.sizes: dict[str, int] = {}
        self.total = 0
        self.started = 0  # files started
        self.done_before = 0  # bytes of the files finished
        self.current_size = 0
        self.label = ""
        self.base = ""
        self.next_update = time.monotonic() + _progress_delay()

    def __enter__(self):
        return self if self.enabled else None  # disabled: the ops are given no progress to report to

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()

    def plan(self, files) -> None:
        for path, size in files:
            if path not in self.sizes:
                self.sizes[path] = size
                self.total += size
        # labels relative to the folder above the files' common directory: a file shows its partition or store
        directories = [os.path.dirname(os.path.abspath(path)) for path in self.sizes]
        self.base = os.path.dirname(os.path.commonpath(directories)) if directories else ""

    def file(self, path: str):
        return self._start(path, os.path.relpath(os.path.abspath(path), self.base) if self.base else path)

    def task(self, description: str, total: int):
        """One piece of work of ``total`` bytes (a pool's tasks): ``advance(bytes done)``."""
        self.plan([(description, total)])
        return self._start(description, description)

    def _start(self, key: str, label: str):
        self.done_before += self.current_size
        self.current_size = self.sizes.get(key, 0)
        self.started += 1
        self.label = label
        self._advance(0)
        return self._advance

    def _advance(self, done: int) -> None:
        now = time.monotonic()
        if now < self.next_update:
            return
        self.next_update = now + 1 / self._UPDATES_PER_SECOND
        if self.bar is None:
            self._draw_first()
        files = f"{self.started}/{len(self.sizes)} files"
        # one line whatever the width: the current file keeps the end of its name (the other columns
        # take about 45 characters besides the title and the counts)
        room = max(self.bar.console.width - 45 - len(self.title) - len(files), 12)
        label = self.label if len(self.label) <= room else "…" + self.label[-(room - 1):]
        self.bar.update(self.task_id, completed=self.done_before + done, total=self.total or None, files=files,
                        current=label)
        self.bar.refresh()

    def _draw_first(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20),
                            TextColumn("{task.fields[files]}"), DownloadColumn(), TimeRemainingColumn(),
                            TextColumn("{task.fields[current]}"), console=Console(stderr=True), transient=True,
                            auto_refresh=False)  # drawn when updated: no drawing thread beside the work
        self.task_id = self.bar.add_task(self.title, total=None, files="", current="")
        self.bar.start()


def _progress_delay() -> float:
    try:
        return float(os.environ.get("SEGTOOL_PROGRESS_DELAY", "1"))
    except ValueError:
        return 1.0


def _print_lines(lines) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")


def _print_styled(lines) -> None:
    """``(text, style)`` lines of ``ops.text``, coloured on a terminal."""
    say = _Styled()
    for text, style in lines:
        say(text, style)


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
        startup.hash_first_input_early(paths)
    from segtool.ops.verify import exit_code, verify as run_verify

    runner = _pipeline_engine(engine, master, conf)
    if runner is not None:
        from segtool.pipeline.verify import verify_distributed

        with runner, _interruptible():
            report = verify_distributed(paths, runner, deep=deep, hash_inputs=not no_hash)
    else:
        with _Progress(enabled=not as_json, title="verify") as progress:
            report = run_verify(paths, deep=deep, progress=progress, hash_inputs=not no_hash)
    _State.exit_if_output_closed = exit_code(report)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import verify_lines

        _print_styled(verify_lines(report))
    raise typer.Exit(exit_code(report))


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

    with _Progress(enabled=not as_json, title="report") as progress:
        options = {"deep": deep, "hash_inputs": not no_hash, "progress": progress}
        if out is not None:
            from segtool.ops.report_html import write_report

            figures = write_report(paths, out, force=force, **options)
        else:
            figures = run_report(paths, **options)
    _State.exit_if_output_closed = exit_code(figures)
    if as_json:
        _print_json(figures)
    else:
        from segtool.ops.text import report_lines, report_written_lines

        _print_styled(report_lines(figures, shutil.get_terminal_size().columns) if out is None
                      else report_written_lines(figures, out))
    raise typer.Exit(exit_code(figures))


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
    from segtool.ops.brokers import inspect_paths
    from segtool.ops.text import inspect_lines

    report, code = inspect_paths(paths)
    _State.exit_if_output_closed = code
    if as_json:
        _print_json(report)
    else:
        _print_styled(inspect_lines(report))
    raise typer.Exit(code)


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
        startup.hash_first_input_early(paths)
    from segtool.ops.rebuild import rebuild_index as run_rebuild

    if out is None and not in_place:
        _fail("give --out DIR, or --in-place to replace the files beside the input")
    if out is not None and in_place:
        _fail("give either --out DIR or --in-place, not both")
    from segtool.engine.inventory import inventory, rocketmq_stores
    from segtool.engine.uris import local_path

    runner = _pipeline_engine(engine, master, conf)
    # URIs left as given (on Spark, read by the tasks): their stores are found by the listing there
    stores = rocketmq_stores(paths) if all(local_path(path) is not None for path in paths) else []
    from segtool.ops.rebuild_rocketmq import rebuild_rocketmq_stores

    # Kafka and RocketMQ data found together: each rebuilt to its own place below --out
    beside_partitions = bool(stores) and any(p.logs for p in inventory(paths).partitions)
    if stores and not beside_partitions:

        reports = rebuild_rocketmq_stores(stores, out_dir=out, in_place=in_place, hash_slot_num=hash_slot_num,
                                          index_num=index_num, hash_inputs=not no_hash, force=force)
        if as_json:
            _print_json({"stores": reports})
        else:
            from segtool.ops.text import rebuild_rocketmq_lines

            _print_lines(rebuild_rocketmq_lines(reports))
        raise typer.Exit(EXIT_PROBLEMS if any(r["recovery_cut"] for r in reports) else EXIT_CLEAN)
    if runner is not None:
        from segtool.pipeline.rebuild import rebuild_distributed

        with runner, _interruptible():
            report = rebuild_distributed(paths, runner, out_dir=out, in_place=in_place,
                                         index_interval_bytes=index_interval_bytes, force=force,
                                         hash_inputs=not no_hash)
    else:
        with _Progress(enabled=not as_json, title="rebuild-index") as progress:
            report = run_rebuild(paths, out_dir=out, in_place=in_place, index_interval_bytes=index_interval_bytes, force=force,
                             progress=progress, hash_inputs=not no_hash)
    if beside_partitions:
        report["stores"] = rebuild_rocketmq_stores(stores, out_dir=out, in_place=in_place, given=paths,
                                                   hash_slot_num=hash_slot_num, index_num=index_num,
                                                   hash_inputs=not no_hash, force=force)
        roots = tuple(os.path.abspath(root).rstrip(os.sep) + os.sep for root in stores)
        report["skipped"] = [item for item in report["skipped"] if not os.path.abspath(item["path"]).startswith(roots)]
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import rebuild_lines

        _print_lines(rebuild_lines(report))
        if beside_partitions:
            from segtool.ops.text import rebuild_rocketmq_lines

            _print_lines(rebuild_rocketmq_lines(report["stores"]))
    _name_unreadable(report["unreadable"])
    truncated = any(seg["bytes_kafka_would_truncate"] for seg in report["segments"]) or any(
        r["recovery_cut"] for r in report.get("stores", []))
    raise typer.Exit(EXIT_UNREADABLE if report["unreadable"] else EXIT_PROBLEMS if truncated else EXIT_CLEAN)


def _notice(line: str) -> None:
    """A line on stderr about how the run reads its evidence (stdout stays the report)."""
    sys.stderr.write(f"segtool: {line}\n")


def _name_unreadable(entries: list[dict]) -> None:
    """Entries a writing command could not read: one line each on stderr; the rest was done."""
    for entry in entries:
        sys.stderr.write(f"segtool: {entry['path']}: {entry['reason']}\n")


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
    paths: Optional[List[str]] = typer.Argument(None, help="Kafka log or partition directories, RocketMQ stores (or directories above them); paths or URIs (s3://, hdfs://).", metavar="PATH..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Output directory or URI: one Parquet dataset, OUT/topic=…/partition=…/part-….parquet, with OUT/_SUCCESS (the manifest of the parts, written last) and the report OUT/_segtool_report.json.", metavar="DIR"),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: one per core).", metavar="N"),
    split_size: str = typer.Option("64MiB", "--split-size", help="Cut bigger segments and CommitLog files into tasks of about this size (0: never).", metavar="SIZE"),
    with_values: bool = typer.Option(False, "--with-values", help="Also store each record's value / message body."),
    force: bool = typer.Option(False, "--force", help="Replace the dataset of an earlier scan in OUT (its _SUCCESS is removed first, its report backed up)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted scan into OUT with the same arguments: its finished tasks are kept."),
    check: Optional[str] = typer.Option(None, "--check", help="Only check that the dataset in DIR is complete: _SUCCESS present and every part as its manifest says (exit 1 if not).", metavar="DIR"),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input file in the report (one pass less)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
    retries: int = typer.Option(DEFAULT_TASK_RETRIES, "--retries", help="Try a task whose worker dies (the OOM killer, a crash) this many more times; Spark: a failed task.", metavar="N"),
):
    """Every Kafka record and RocketMQ message into Parquet, one row each, on this machine or on Spark.

    Kafka rows are what kafka-dump-log --deep-iteration lists (control records included, legacy
    wrapper messages expanded); the schema is in docs/pipeline.md. Exit code 1 when damaged data
    was met (see the report's problems), 2 when an input is unreadable.

    Examples:

      segtool scan /var/lib/kafka/data --out /cases/42/scan

      segtool scan evidence/kafka-logs evidence/rocketmq/store --out scan --engine spark --master local[4]

      spark-submit segtool/spark_job.py scan hdfs://nn/evidence --out hdfs://nn/cases/42/scan

      segtool scan --check /cases/42/scan
    """
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.scan import exit_code as scan_exit_code, parse_size, scan as run_scan

    if check is not None:
        if paths or out:
            _fail("--check DIR only checks a dataset: give no PATH and no --out with it")
        from segtool.pipeline.commit import check_dataset

        result = check_dataset(check)
        if as_json:
            _print_json(result)
        else:
            from segtool.ops.text import scan_check_lines

            _print_lines(scan_check_lines(result))
        raise typer.Exit(EXIT_CLEAN if result["complete"] else EXIT_PROBLEMS)
    if not paths or out is None:
        _fail("give PATH... and --out DIR (or --check DIR)")
    if resume and force:
        _fail("give either --resume (keep an interrupted scan's finished tasks) or --force (start over), not both")

    # Spark draws its own stage progress
    with _Progress(enabled=not as_json and engine_name(engine, master) == "local", title="scan") as progress:
        runner = make_engine(engine, master, workers, quiet=_State.quiet, progress=progress and progress.task,
                             conf=conf, retries=retries)
        with runner, _interruptible():
            report = run_scan(paths, out, runner, split_bytes=parse_size(split_size), with_values=with_values,
                              force=force, hash_inputs=not no_hash, resume=resume)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import scan_lines

        _print_lines(scan_lines(report))
    _name_unreadable(report["inputs"]["unreadable"])
    raise typer.Exit(scan_exit_code(report))


@app.command()
def carve(
    paths: List[str] = typer.Argument(..., help="Any files (disk or partition images, core dumps, damaged segments) or directories (every file below them).", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Directory for finds.jsonl, kafka_batches.parquet, rocketmq_messages.parquet, carve-report.json (and kafka_records.parquet with --records).", metavar="DIR"),
    force: bool = typer.Option(False, "--force", help="Replace the outputs of an earlier carve in DIR (each is backed up first)."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input (faster on huge images)."),
    records: bool = typer.Option(False, "--records", help="Decode every Kafka record and copy every message body: finds.jsonl gets an item per batch, record and message (not per chain), kafka_records.parquet is written and rocketmq_messages.parquet holds the bodies."),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark: the search of each byte range is a task.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: 1, the search in this process; the driver decodes every find again, so more pay off only on sparse images).", metavar="N"),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
    split_size: str = typer.Option("64MiB", "--split-size", help="Search bigger files as byte ranges of about this size, one task each (0: a file is one task).", metavar="SIZE"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
):
    """Find every checksum-valid Kafka batch and RocketMQ message at any byte of any file.

    Finds are grouped into runs (Kafka: continuing offsets or a producer's sequence; RocketMQ:
    topic and queue) and written with their byte positions.  Each file is searched as byte ranges,
    each a task on a local process pool or on Spark; the finds, and so the outputs, are those of
    one search of the whole file.  Exit code 0 when something was found
    and every find placed in a run, 1 when nothing was found or a find could not be placed
    (duplicates, offset conflicts, records that do not decode; see the report), 2 when an input
    is unreadable.

    Examples:

      segtool carve /cases/42/disk.img --out /cases/42/carved

      segtool carve --json core.1234 damaged-partition/ --out carved > carve-report.json
    """
    from segtool.ops.carve import exit_code as carve_exit_code
    from segtool.pipeline.carve import carve_on
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.scan import parse_size

    split_bytes = parse_size(split_size)
    # Spark draws its own stage progress
    local = engine_name(engine, master) == "local"
    # one process unless asked: a pool of 2 took 1.62x as long on a dense 1 GiB image (the driver re-reads finds)
    with _Progress(enabled=not as_json and local, title="carve") as progress:
        runner = make_engine(engine, master, 1 if local and workers is None else workers, quiet=_State.quiet,
                             progress=progress and progress.task, conf=conf)
        with runner, _interruptible():
            report = carve_on(paths, out, runner, split_bytes=split_bytes, force=force, hash_inputs=not no_hash,
                              records=records, read_from={} if local else _State.mirrored)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import carve_lines

        _print_lines(carve_lines(report, out))
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
        from segtool.ops.text import trim_lines

        _print_lines(trim_lines(report))
    _name_unreadable(report["unreadable"])
    raise typer.Exit(EXIT_UNREADABLE if report["unreadable"] else EXIT_CLEAN if report["files"] else EXIT_PROBLEMS)


@app.command()
def salvage(
    paths: List[str] = typer.Argument(..., help="Kafka partition or log directories, or a RocketMQ store.", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Directory for the new partitions (OUT/<partition>/) or the new store.", metavar="DIR"),
    force: bool = typer.Option(False, "--force", help="Replace files already in --out (each is backed up first)."),
    index_interval_bytes: int = typer.Option(4096, "--index-interval-bytes", min=1, help="Kafka: the topic's index.interval.bytes.", metavar="BYTES"),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark: one task per partition or store.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: one per core; small inputs in-process).", metavar="N"),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="A Spark setting, KEY=VALUE (repeatable; with --engine spark).", metavar="KEY=VALUE"),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Write back what survives damage: every valid Kafka batch into a new partition (offsets,
    timestamps and bytes unchanged, indexes as Kafka's recovery writes them), or every valid
    RocketMQ message at its physical offset into a new store (ConsumeQueues, IndexFiles and a
    Parquet list of the survivors rebuilt).  Reports every damaged byte range and what it lost.
    Each partition and store is a task on a local process pool or on Spark; the files and the
    report are the same on either.

    Exit code 0 when nothing was lost, 1 when damage was found or something could not be written
    back, 2 when an input is unreadable.

    Examples:

      segtool salvage evidence/orders-0 --out /cases/42/salvaged

      segtool salvage evidence/rocketmq/store --out /cases/42/store --json > salvage.json
    """
    from segtool.ops.salvage import exit_code as salvage_exit_code
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.salvage import salvage_on

    # Spark draws its own stage progress
    with _Progress(enabled=not as_json and engine_name(engine, master) == "local", title="salvage") as progress:
        runner = make_engine(engine, master, workers, quiet=_State.quiet, progress=progress and progress.task,
                             conf=conf)
        with runner, _interruptible():
            report = salvage_on(paths, out, runner, index_interval_bytes=index_interval_bytes, force=force)
    _State.exit_if_output_closed = salvage_exit_code(report)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import salvage_lines

        _print_lines(salvage_lines(report))
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

    with _Progress(enabled=not as_json, title="index-keys") as progress:
        report = run_index_keys(partition_dir, out, progress=progress, force=force)
    if as_json:
        _print_json(report)
    else:
        from segtool.ops.text import index_keys_lines

        _print_lines(index_keys_lines(report))
    raise typer.Exit(EXIT_PROBLEMS if report["damage"] else EXIT_CLEAN)


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
    import signal

    sys.stdout = _GuardedStdout(sys.stdout)
    signal.signal(signal.SIGTERM, _on_sigterm)
    startup.keep_freed_memory()
    try:
        _run_command()
    except SystemExit as exc:
        uris = sys.modules.get("segtool.engine.uris")
        if uris is not None and uris.calls_in_flight():
            # a store call still blocks in native code (Ctrl-C, SIGTERM, a deadline): pyarrow's exit
            # handlers would wait for it, so end here, the line said and the output flushed
            _say(lambda: None)
            os._exit(exc.code if isinstance(exc.code, int) else EXIT_UNREADABLE)
        raise
    finally:
        startup.freeze_what_is_alive()


class _UriArguments:
    """URI arguments of any command, through one storage layer (``segtool.engine.uris``).

    ``--conf spark.hadoop.fs.…`` settings are taken out of the arguments and set for the run (and
    shipped to its tasks).  For the commands that read through ``segtool.source`` (every one but
    scan, which reads URIs itself, a byte range per task), a URI input is read from its read-only
    mirror in the cache and a URI ``--out`` is written to a local staging folder, refused first when
    it lies inside an input (compared as locations) or holds files and ``--force`` is not given, and
    uploaded when the command ends.  Whatever the command prints names the URIs, not the local copies.
    """

    _OUT = ("--out", "-o")
    _NOT_PATHS = ("--master", "--conf", "--engine")

    def __init__(self, args: list[str]):
        from segtool.engine import uris

        self.uris = uris
        self.places: dict[str, str] = {}  # local path -> the URI it stands for
        self.mirrored: dict[str, str] = {}  # a URI input's mirror -> the URI
        self.outgoing: tuple[str, str] | None = None  # (local staging folder, URI)
        end = args.index("--") if "--" in args else len(args)
        words, settings = [], {}
        pairs = iter(enumerate(args[:end]))
        for i, word in pairs:
            if word == "--conf" and i + 1 < end:
                found, rest = uris.storage_conf([args[i + 1]])
                if found:
                    settings.update(found)
                    next(pairs)
                    continue
            if word.startswith("--conf="):
                found, _ = uris.storage_conf([word[len("--conf="):]])
                if found:
                    settings.update(found)
                    continue
            words.append(word)
        uris.configure(settings)
        self.args = words + args[end:]
        self.command = next((w for w in words if not w.startswith("-")), None)

    def _known(self, word: str) -> bool:
        """A URI of a storage scheme; any other ``scheme://`` argument is refused by name."""
        import re

        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", word) is None:
            return False
        if self.uris.scheme_of(word) not in self.uris.SCHEMES:
            raise SegtoolError(f"unknown storage scheme {self.uris.scheme_of(word)}://: use a path, file://, s3://, "
                               "s3a://, gs://, abfs://, abfss:// or hdfs://", word)
        return True

    # on Spark these read URI evidence on the executors (``segtool.pipeline.staged``), not from a mirror here
    _READ_BY_TASKS = ("verify", "rebuild-index", "replicas", "salvage")
    # ... and of those, these write a URI --out from the executors too (the others' is staged here)
    _WRITTEN_BY_TASKS = ("rebuild-index",)

    def _on_spark(self, words: list[str]) -> bool:
        return any(word in ("--master", "--engine=spark") or word.startswith("--master=")
                   or (word == "--engine" and after == "spark") for word, after in zip(words, words[1:] + [""]))

    def stage(self) -> list[str]:
        """The arguments with URI inputs as local paths (read from their mirror) and a URI --out as a
        local staging folder; on Spark, the input URIs of the commands in ``_READ_BY_TASKS`` stay as given
        (``file://`` aside)."""
        if self.command == "scan":
            return self.args
        end = self.args.index("--") if "--" in self.args else len(self.args)
        staged, inputs, out = list(self.args), [], None
        for i, word in enumerate(self.args[:end]):
            before = self.args[i - 1] if i else ""
            if before in self._NOT_PATHS or not self._known(word.partition("=")[2] if word.startswith("--out=")
                                                              else word):
                continue
            if before in self._OUT or word.startswith("--out="):
                out = (i, word.partition("=")[2] if word.startswith("--out=") else word)
            else:
                inputs.append((i, word))
        by_tasks = self.command in self._READ_BY_TASKS and self._on_spark(self.args[:end])
        if out is not None:
            i, uri = out
            local = self._output(uri, [word for _, word in inputs], force="--force" in self.args[:end],
                                 by_tasks=by_tasks and self.command in self._WRITTEN_BY_TASKS)
            staged[i] = f"--out={local}" if staged[i].startswith("--out=") else local
        for i, uri in inputs:
            if by_tasks and self.uris.local_path(uri) is None:
                continue
            local = self.uris.mirror(uri)
            self.places[local] = uri
            if self.uris.local_path(uri) is None:
                self.mirrored[local] = uri
            staged[i] = local
        return staged

    def _output(self, uri: str, inputs: list[str], force: bool, by_tasks: bool = False) -> str:
        from segtool.engine.safe_write import refuse_inside_inputs

        try:
            refuse_inside_inputs([uri.rstrip("/") + "/-"], inputs)  # what goes below --out, whatever its name
        except SegtoolError as exc:
            raise SegtoolError(exc.message, uri) from None
        local = self.uris.local_path(uri)
        if local is not None:
            self.places[local] = uri
            return local
        if self.uris.has_files(uri) and not force:
            raise SegtoolError("already holds files: segtool never overwrites them; give --force to replace "
                               "them (no backup is kept on object storage) or choose another --out", uri)
        if by_tasks:  # the tasks write there themselves
            return uri
        import tempfile

        os.makedirs(self.uris.cache_dir(), exist_ok=True)
        local = tempfile.mkdtemp(prefix="outgoing-", dir=self.uris.cache_dir())
        self.places[local] = uri
        self.outgoing = (local, uri)
        return local

    def publish(self, code) -> None:
        """Upload a URI --out's files when the command ran to its end (not interrupted), then drop the
        local staging folder."""
        if self.outgoing is None:
            return
        local, uri = self.outgoing
        try:
            if code in (EXIT_CLEAN, EXIT_PROBLEMS, EXIT_UNREADABLE, None):
                self.uris.upload_tree(local, uri)
        finally:
            shutil.rmtree(local, ignore_errors=True)


class _AsGiven:
    """stdout or stderr naming every local copy (a URI's mirror, a URI --out's staging) as its URI."""

    def __init__(self, stream, places: dict[str, str]):
        self._stream = stream
        self._places = sorted(places.items(), key=lambda pair: -len(pair[0]))

    def write(self, text):
        for local, uri in self._places:
            text = text.replace(local, uri.rstrip("/"))
        return self._stream.write(text)

    def __getattr__(self, name):
        if name == "buffer":  # bytes written past write() would name the local copies
            raise AttributeError(name)
        return getattr(self._stream, name)


def _run_command() -> None:
    """The command named on the command line; every way it ends is an exit code (``SystemExit``)."""
    args = _hoist_global_flags(sys.argv[1:])
    _State.json_output = _asks_for_json(args)
    streams = sys.stdout, sys.stderr
    arguments = None
    try:
        arguments = _UriArguments(args)
        args = arguments.stage()
        _State.mirrored = arguments.mirrored
        if arguments.places:
            sys.stdout, sys.stderr = _AsGiven(sys.stdout, arguments.places), _AsGiven(sys.stderr, arguments.places)
        try:
            # without standalone mode the parser returns the command's exit code
            code = app(args=args, prog_name="segtool", standalone_mode=False) or 0
        except typer.Exit as exc:
            arguments.publish(exc.exit_code)
            raise
        arguments.publish(code)
        sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except _OutputClosed:
        _quiet_from_now(sys.__stdout__)
        sys.exit(_State.exit_if_output_closed)
    except SegtoolError as exc:
        _show_traceback()
        _end_on_error(_error_name(exc), exc.message, exc.path, exc.offset, skipped=getattr(exc, "skipped", None))
    except ModuleNotFoundError as exc:
        _show_traceback()
        _end_on_error("missing_package", f"this needs the Python package {exc.name!r}, which is not installed: "
                                         "pip install 'segtool[spark]'")
    except (KeyboardInterrupt, typer.Abort):
        _end_on_error("interrupted", "interrupted", shown=False)
    except _Terminated:
        _end_on_error("terminated", "terminated", shown=False)
    except Exception as exc:  # the last line of defence: never a traceback unless asked
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # a usage error from the argument parser
            _say(exc.show)
            _end_on_error("usage_error", exc.format_message(), shown=False)
        _show_traceback()
        _end_on_error("internal_error", f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)")
    finally:
        if arguments is not None and arguments.outgoing is not None:
            shutil.rmtree(arguments.outgoing[0], ignore_errors=True)
        sys.stdout, sys.stderr = streams


_EXIT_OF_ERROR = {"nothing_found": EXIT_PROBLEMS, "interrupted": EXIT_INTERRUPTED, "terminated": EXIT_TERMINATED}


def _error_name(exc: SegtoolError) -> str:
    from segtool.errors import CorruptData, UnreadableInput, UsageError

    if isinstance(exc, NothingFound):
        return "nothing_found"
    if isinstance(exc, UsageError):
        return "usage_error"
    if isinstance(exc, CorruptData):
        return "corrupt_data"
    return "unreadable_input" if isinstance(exc, UnreadableInput) else "refused"


def _end_on_error(name: str, reason: str, path: str | None = None, offset: int | None = None,
                  shown: bool = True, skipped: list[dict] | None = None) -> None:
    """The one line on stderr (unless the parser showed it: ``shown=False``), with --json the
    ErrorReport on stdout, and the contract's exit code, whichever of stdout and stderr is closed."""
    code = _EXIT_OF_ERROR.get(name, EXIT_UNREADABLE)
    message = str(SegtoolError(reason, path, offset))
    if shown:
        _say(lambda: sys.stderr.write(f"segtool: {message}\n"))
    if _State.json_output:
        report = {"error": name, "message": message, "path": None if path is None else str(path),
                  "byte_offset": offset, "reason": reason, "exit_code": code}
        if skipped:
            report["skipped"] = skipped
        _say(lambda: sys.stdout.write(to_json(report) + "\n"))
    sys.exit(code)


def _say(write) -> None:
    """Run ``write``; a closed pipe (`2>&1 | head -0`) silences the stream instead of changing the exit code."""
    try:
        write()
        sys.stdout.flush()
        sys.stderr.flush()
    except (_OutputClosed, BrokenPipeError):
        _quiet_from_now(sys.__stdout__)
        _quiet_from_now(sys.__stderr__)


def _quiet_from_now(stream) -> None:
    """Python's final flush of a closed stream would fail (exit 120): the stream goes to /dev/null."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError):  # no descriptor (a test's buffer)
        pass


def _asks_for_json(args: list[str]) -> bool:
    """--json, or dump's --format/-f json, before a ``--``."""
    words = args[:args.index("--")] if "--" in args else args
    return ("--json" in words or "--format=json" in words
            or any(flag in ("--format", "-f") and value == "json" for flag, value in zip(words, words[1:])))


def _show_traceback() -> None:
    """With --debug, the traceback goes first; the exit code stays the contract's."""
    if _State.debug:
        import traceback

        traceback.print_exc()


if __name__ == "__main__":
    main()
