"""The segtool command line: argument parsing and rendering only.

Every command calls a library function in ``segtool.ops`` that returns data.
Heavy modules are imported inside commands so a cold start stays fast.
"""

from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer

from segtool.errors import SegtoolError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Forensic toolkit for Kafka and RocketMQ storage files. Inputs are only ever read.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_UNREADABLE = 0, 1, 2


class _State:
    debug = False
    quiet = False


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
):
    _State.debug = debug
    _State.quiet = quiet


# the long-running commands also take --quiet after their name, where users type it
_QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress bars (also: segtool --quiet COMMAND).")


def _quiet(asked: bool) -> None:
    _State.quiet = _State.quiet or asked


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
        self.lines.extend(lines)
        if len(self.lines) >= self.limit:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            self.stream.write("\n".join(self.lines))
            self.stream.write("\n")
            self.lines.clear()
        self.stream.flush()


@app.command()
def dump(
    paths: List[str] = typer.Argument(..., help="Files or directories (every file below a directory).", metavar="PATH..."),
    format: str = typer.Option("text", "--format", "-f", help="text, json (JSON Lines) or kafka.", metavar="FORMAT"),
    deep_iteration: bool = typer.Option(False, "--deep-iteration", help="kafka: list every record."),
    print_data_log: bool = typer.Option(False, "--print-data-log", help="kafka: print keys and values."),
    verify_index_only: bool = typer.Option(False, "--verify-index-only", help="kafka: check index against log, print no entries."),
    index_sanity_check: bool = typer.Option(False, "--index-sanity-check", help="kafka: the broker's start-up index check."),
    offsets_decoder: bool = typer.Option(False, "--offsets-decoder", help="kafka: decode __consumer_offsets records."),
    max_bytes: int = typer.Option(2**31 - 1, "--max-bytes", help="kafka: read at most this many bytes of each .log.", metavar="BYTES"),
    max_message_size: int = typer.Option(5 * 1024 * 1024, "--max-message-size", help="kafka: largest batch an index entry may point to.", metavar="BYTES"),
    shallow: bool = typer.Option(False, "--shallow", help="text/json: batches only, no records."),
    decompress_cap: int = typer.Option(256 * 1024 * 1024, "--decompress-cap", help="Largest decompressed batch, bytes.", metavar="BYTES"),
):
    """Decode files: Kafka segments, indexes, snapshots, checkpoints; RocketMQ CommitLog, ConsumeQueue, IndexFile.

    Examples:

      segtool dump data/orders-0/00000000000000000000.log

      segtool dump --format kafka --deep-iteration --print-data-log data/orders-0/00000000000000000000.log

      segtool dump --format json store/consumequeue/TopicA/0
    """
    import gc

    gc.disable()  # decoding allocates many small acyclic objects; collection only costs time here
    if format == "kafka":
        from segtool.formats.detect import expand_paths
        from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump

        options = KafkaDumpOptions(
            deep_iteration=deep_iteration,
            print_data_log=print_data_log,
            verify_index_only=verify_index_only,
            index_sanity_check=index_sanity_check,
            offsets_decoder=offsets_decoder,
            max_bytes=max_bytes,
            max_message_size=max_message_size,
            decompress_cap=decompress_cap,
        )
        try:
            files = expand_paths(paths)
        except SegtoolError as exc:
            _fail(str(exc))
        out = _LineWriter()
        code = run_kafka_dump(files, options, out, _err_line_after(out))
        out.flush()
        raise typer.Exit(code)
    if format not in ("text", "json"):
        _fail(f"unknown --format {format!r}: use text, json or kafka")
    from segtool.formats.detect import expand_paths
    from segtool.ops.dump import dump_paths
    from segtool.ops.render import render_text_item

    files = expand_paths(paths)
    out = _LineWriter() if format == "json" or not sys.stdout.isatty() else _ColourWriter()
    problems = False
    current = None
    for item in dump_paths(files, deep=not shallow, cap=decompress_cap):
        if item["type"] in ("error", "trailing_bytes") or item.get("crc_valid") is False:
            problems = True
        if format == "json":
            out(json.dumps(item, ensure_ascii=False))
        else:
            if item["file"] != current and len(files) > 1:
                current = item["file"]
                out(f"== {current}")
            out(render_text_item(item))
    out.flush()
    raise typer.Exit(EXIT_PROBLEMS if problems else EXIT_CLEAN)


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _print_answer(answer: dict, as_json: bool) -> None:
    if as_json:
        _print_json(answer)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200)
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in answer.items():
        if key == "messages":
            continue
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            text = "\n".join(value)  # notes: one per line
        else:
            text = "null" if value is None else str(value)
        table.add_row(key, text)
    console.print(table)
    for message in answer.get("messages", []):
        console.print(message)


@app.command()
def lookup(
    path: str = typer.Argument(..., help="A Kafka partition directory or a RocketMQ store directory.", metavar="PATH"),
    offset: Optional[int] = typer.Option(None, "--offset", help="Kafka: the record a fetch at this offset returns.", metavar="OFFSET"),
    timestamp: Optional[str] = typer.Option(None, "--timestamp", help="Kafka: ListOffsets for epoch ms, ISO-8601, latest, earliest or max-timestamp.", metavar="TIME"),
    floor: bool = typer.Option(False, "--floor", help="With --offset: the offset index's floor entry (<=), no scan."),
    ceiling: bool = typer.Option(False, "--ceiling", help="With --offset: the offset index's ceiling entry (>=), no scan."),
    key: Optional[str] = typer.Option(None, "--key", help="Find records by key: a Kafka partition (index-keys makes it fast) or a RocketMQ store with --topic.", metavar="KEY"),
    topic: Optional[str] = typer.Option(None, "--topic", help="RocketMQ topic.", metavar="TOPIC"),
    begin: int = typer.Option(0, "--begin", help="RocketMQ key lookup: window start, epoch ms.", metavar="MS"),
    end: int = typer.Option(2**63 - 1, "--end", help="RocketMQ key lookup: window end, epoch ms.", metavar="MS"),
    max_num: int = typer.Option(64, "--max", help="RocketMQ key lookup: most offsets to return (RocketMQ caps at 64).", metavar="N"),
    include_collisions: bool = typer.Option(False, "--include-collisions", help="RocketMQ: keep hash collisions (IndexService's raw answer)."),
    queue_id: Optional[int] = typer.Option(None, "--queue-id", help="RocketMQ: ConsumeQueue id (with --queue-offset).", metavar="Q"),
    queue_offset: Optional[int] = typer.Option(None, "--queue-offset", help="RocketMQ: unit number in the ConsumeQueue.", metavar="N"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
):
    """Answer a broker lookup from files alone.

    Examples:

      segtool lookup data/orders-0 --offset 1200

      segtool lookup data/orders-0 --timestamp 2026-11-21T10:00:00Z --json

      segtool lookup data/orders-0 --offset 1200 --floor

      segtool lookup store --topic TopicA --key order-42
    """
    from segtool.ops import lookup as ops

    chosen = [x is not None for x in (offset, timestamp, key, queue_id)]
    if sum(chosen) != 1:
        _fail("give exactly one of --offset, --timestamp, --key, --queue-id", EXIT_UNREADABLE)
    if key is not None:
        answer = ops.lookup_key(path, key, topic=topic, begin=begin, end=end, max_num=max_num,
                                include_collisions=include_collisions)
        found = bool(answer.get("phy_offsets") or answer.get("offsets"))
    elif queue_id is not None:
        if topic is None or queue_offset is None:
            _fail("--queue-id needs --topic and --queue-offset", EXIT_UNREADABLE)
        answer = ops.lookup_queue(path, topic, queue_id, queue_offset)
        found = answer.get("phy_offset") is not None
    elif offset is not None:
        if floor or ceiling:
            answer = ops.lookup_index_entry(path, offset, ceiling=ceiling)
        else:
            answer = ops.lookup_offset(path, offset)
        found = answer.get("offset") is not None
    else:
        answer = ops.lookup_timestamp(path, ops.parse_timestamp(timestamp))
        found = answer.get("offset") is not None
    _print_answer(answer, as_json)
    raise typer.Exit(EXIT_CLEAN if found else EXIT_PROBLEMS)


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


def _render_verify(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200)  # a log or a pipe: no wrapping inside paths
    colours = {"ok": "green", "problems": "red", "unreadable": "red", "skipped": "dim"}
    for item in report["files"]:
        errors = [p for p in item.get("problems", []) if p["severity"] == "error"]
        infos = [p for p in item.get("problems", []) if p["severity"] != "error"]
        status = item["status"]
        console.print(f"[{colours.get(status, 'white')}]{status.upper():10}[/] {item['path']}"
                      f"  [dim]{item.get('kind')} {item.get('size', '?')} bytes sha256 {item.get('sha256', '?')[:16]}…[/]",
                      highlight=False, soft_wrap=True)
        if errors or infos:
            table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
            table.add_column("severity")
            table.add_column("kind")
            table.add_column("byte", justify="right")
            table.add_column("message", overflow="fold")
            for problem in errors + infos[:20]:
                table.add_row(problem["severity"], problem["kind"],
                              "" if problem["byte_offset"] is None else str(problem["byte_offset"]), problem["message"])
            if len(infos) > 20:
                table.add_row("info", "…", "", f"{len(infos) - 20} more notes (see --json)")
            console.print(table)
        recovery = item.get("recovery")
        if recovery and recovery.get("bytes_lost"):
            broker = "RocketMQ" if item.get("kind", "").startswith("rocketmq") else "Kafka"
            console.print(f"  {broker}'s recovery would keep {recovery['valid_bytes']} bytes and cut "
                          f"{recovery['bytes_lost']} ({recovery['records_lost']} records, stop: "
                          f"{recovery.get('stop_reason')})", highlight=False)
    summary = report["summary"]
    console.print(f"{summary['files']} files: {summary['ok']} ok, {summary['problems']} with problems, "
                  f"{summary['unreadable']} unreadable, {summary['skipped']} skipped", highlight=False)


@app.command()
def verify(
    paths: List[str] = typer.Argument(..., help="Files, partition directories, log directories or RocketMQ stores.", metavar="PATH..."),
    deep: bool = typer.Option(False, "--deep", help="Decode every record, not just batch headers and CRCs."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input (faster on huge files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (default) or spark: one Spark task per file.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    quiet: bool = _QUIET_OPTION,
):
    """Check files as Kafka/RocketMQ would, and predict what the broker's recovery would cut.

    Exit code 0 when every file is clean, 1 when problems were found, 2 when an input is unreadable.

    Examples:

      segtool verify /var/lib/kafka/data/orders-0

      segtool verify --deep --json evidence/kafka-logs > report.json
    """
    from segtool.ops.verify import exit_code, verify as run_verify

    _quiet(quiet)
    runner = _pipeline_engine(engine, master)
    if runner is not None:
        from segtool.pipeline.verify import verify_distributed

        with runner:
            report = verify_distributed(paths, runner, deep=deep, hash_inputs=not no_hash)
    else:
        with _Progress(enabled=not as_json) as progress:
            report = run_verify(paths, deep=deep, progress_factory=progress.factory, hash_inputs=not no_hash)
    if as_json:
        _print_json(report)
    else:
        _render_verify(report)
    raise typer.Exit(exit_code(report))


@app.command("rebuild-index")
def rebuild_index(
    paths: List[str] = typer.Argument(..., help="Segment .log files, partition directories or a log directory.", metavar="PATH..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Directory to write the rebuilt indexes into.", metavar="DIR"),
    in_place: bool = typer.Option(False, "--in-place", help="Replace the indexes beside the input (backup kept, atomic)."),
    index_interval_bytes: int = typer.Option(4096, "--index-interval-bytes", help="Kafka: the topic's index.interval.bytes.", metavar="BYTES"),
    hash_slot_num: Optional[int] = typer.Option(None, "--hash-slot-num", help="RocketMQ: IndexFile slots (default: the store's, else 5,000,000).", metavar="N"),
    index_num: Optional[int] = typer.Option(None, "--index-num", help="RocketMQ: IndexFile entries (default: the store's, else 20,000,000).", metavar="N"),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input segment or CommitLog file (faster on huge files)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
    engine: Optional[str] = typer.Option(None, "--engine", help="Kafka: local (default) or spark, one Spark task per partition.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    quiet: bool = _QUIET_OPTION,
):
    """Rebuild indexes: Kafka's .index/.timeindex/.txnindex exactly as its log recovery does,
    or a RocketMQ store's IndexFiles as IndexService.buildIndex does.

    Examples:

      segtool rebuild-index data/orders-0 --out /tmp/rebuilt

      segtool rebuild-index data/orders-0/00000000000000000000.log --in-place

      segtool rebuild-index rocketmq/store --out /tmp/rebuilt-store
    """
    from segtool.ops.rebuild import rebuild_index as run_rebuild

    _quiet(quiet)
    if out is None and not in_place:
        _fail("give --out DIR, or --in-place to replace the files beside the input")
    import os

    stores = [p for p in paths if os.path.isdir(os.path.join(p, "commitlog")) or os.path.basename(os.path.normpath(p)) == "commitlog"]
    if stores:
        if len(stores) != len(paths):
            _fail("give either RocketMQ stores or Kafka segments, not both")
        from segtool.ops.rebuild_rocketmq import rebuild_rocketmq_index

        reports = [rebuild_rocketmq_index(store, out_dir=out, in_place=in_place, hash_slot_num=hash_slot_num,
                                          index_num=index_num, hash_inputs=not no_hash) for store in stores]
        if as_json:
            _print_json({"stores": reports})
        else:
            for rep in reports:
                for written in rep["files"]:
                    sys.stdout.write(f"wrote {written['path']} ({written['entries']} entries, {written['size']} bytes,"
                                     f" sha256 {written['sha256'][:16]}…)\n")
        raise typer.Exit(EXIT_CLEAN)
    runner = _pipeline_engine(engine, master)
    if runner is not None:
        from segtool.pipeline.rebuild import rebuild_distributed

        with runner:
            report = rebuild_distributed(paths, runner, out_dir=out, in_place=in_place,
                                         index_interval_bytes=index_interval_bytes)
    else:
        with _Progress(enabled=not as_json) as progress:
            report = run_rebuild(paths, out_dir=out, in_place=in_place, index_interval_bytes=index_interval_bytes,
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
                sys.stdout.write(f"  wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256'][:16]}…)\n")
    truncated = any(seg["bytes_kafka_would_truncate"] for seg in report["segments"])
    raise typer.Exit(EXIT_PROBLEMS if truncated else EXIT_CLEAN)


def _pipeline_engine(engine: Optional[str], master: Optional[str]):
    """None for the local engine of verify/rebuild-index (their own in-process code), else the Spark engine."""
    from segtool.pipeline.engines import engine_name, make_engine

    if engine_name(engine, master) == "local" and not master:
        return None
    return make_engine(engine, master, quiet=_State.quiet)


@app.command()
def scan(
    paths: List[str] = typer.Argument(..., help="Kafka log or partition directories, RocketMQ stores (or directories above them); paths or URIs (s3://, hdfs://).", metavar="PATH..."),
    out: str = typer.Option(..., "--out", "-o", help="Output directory or URI: Parquet datasets OUT/kafka and OUT/rocketmq, and OUT/scan-report.json.", metavar="DIR"),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (a process pool; the default) or spark.", metavar="ENGINE"),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (implies --engine spark; default local[*]).", metavar="URL"),
    workers: Optional[int] = typer.Option(None, "--workers", help="local engine: worker processes (default: one per core).", metavar="N"),
    split_size: str = typer.Option("64MiB", "--split-size", help="Cut bigger segments and CommitLog files into tasks of about this size (0: never).", metavar="SIZE"),
    with_values: bool = typer.Option(False, "--with-values", help="Also store each record's value / message body."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the part files of an earlier scan in OUT."),
    no_hash: bool = typer.Option(False, "--no-hash", help="Skip the sha256 of each input file in the report (one pass less)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = _QUIET_OPTION,
):
    """Every Kafka record and RocketMQ message into Parquet, one row each, on this machine or on Spark.

    Kafka rows are what kafka-dump-log --deep-iteration lists (control records included, legacy
    wrapper messages expanded); the schema is in docs/pipeline.md. Exit code 1 when damaged data
    was met (see the report's problems), 2 when an input is unreadable.

    Examples:

      segtool scan /var/lib/kafka/data --out /cases/42/scan

      segtool scan evidence/kafka-logs evidence/rocketmq/store --out scan --engine spark --master local[4]

      spark-submit segtool/pipeline/spark_job.py scan hdfs://nn/evidence --out hdfs://nn/cases/42/scan
    """
    from segtool.pipeline.engines import engine_name, make_engine
    from segtool.pipeline.scan import exit_code as scan_exit_code, parse_size, scan as run_scan

    _quiet(quiet)
    # Spark draws its own stage progress
    with _Progress(enabled=not as_json and engine_name(engine, master) == "local") as progress:
        runner = make_engine(engine, master, workers, quiet=_State.quiet, progress=progress.task)
        with runner:
            report = run_scan(paths, out, runner, split_bytes=parse_size(split_size), with_values=with_values,
                              overwrite=overwrite, hash_inputs=not no_hash)
    if as_json:
        _print_json(report)
    else:
        for kind, data in report["datasets"].items():
            sys.stdout.write(f"{kind}: {data['rows']} rows in {data['files']} files under {data['path']}\n")
        timing = report["timing"]
        sys.stdout.write(f"{report['inputs']['bytes']} input bytes in {report['tasks']} tasks on {report['engine']}"
                         f": scan {timing['scan_seconds']} s ({timing['mb_per_second']} MB/s), "
                         f"start-up {timing['startup_seconds']} s\n")
        for problem in report["problems"]:
            where = "" if problem["byte_offset"] is None else f" byte {problem['byte_offset']}"
            sys.stdout.write(f"{problem['severity']}: {problem['path']}{where}: {problem['message']}\n")
    raise typer.Exit(scan_exit_code(report))


@app.command()
def trim(
    paths: List[str] = typer.Argument(..., help=".index / .timeindex files.", metavar="INDEX..."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Directory to write the trimmed files into.", metavar="DIR"),
    in_place: bool = typer.Option(False, "--in-place", help="Shrink the files themselves (backup kept, atomic)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only report what would be reclaimed."),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
):
    """Shrink preallocated index files to their valid entries (Kafka's trimToValidSize).

    Examples:

      segtool trim data/orders-0/00000000000000001185.index --out /tmp/trimmed

      segtool trim --dry-run data/orders-0/*.timeindex
    """
    from segtool.ops.trim import trim as run_trim

    if out is None and not in_place and not dry_run:
        _fail("give --out DIR, --in-place or --dry-run")
    report = run_trim(paths, out_dir=out, in_place=in_place, dry_run=dry_run)
    if as_json:
        _print_json(report)
    else:
        for item in report["files"]:
            where = f" -> {item['written']['path']}" if item["written"] else ""
            sys.stdout.write(f"{item['path']}: {item['valid_entries']} valid entries, "
                             f"{item['bytes_reclaimed']} bytes reclaimed{where}\n")
        sys.stdout.write(f"total reclaimed: {report['bytes_reclaimed']} bytes\n")
    raise typer.Exit(EXIT_CLEAN)


@app.command("index-keys")
def index_keys(
    partition_dir: str = typer.Argument(..., help="A Kafka partition directory.", metavar="PARTITION_DIR"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Where to write the index (default: PARTITION_DIR.keyindex beside it).", metavar="DIR"),
    as_json: bool = typer.Option(False, "--json", help="One JSON report on stdout."),
    quiet: bool = _QUIET_OPTION,
):
    """Build a hash index of record keys (RocketMQ's IndexFile layout) so `lookup --key` need not scan.

    The index goes beside the partition directory, never inside it.

    Examples:

      segtool index-keys data/orders-0

      segtool lookup data/orders-0 --key order-42
    """
    from segtool.ops.keyindex import index_keys as run_index_keys

    _quiet(quiet)
    with _Progress(enabled=not as_json) as progress:
        report = run_index_keys(partition_dir, out, progress_factory=progress.task)
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


def main() -> None:
    """Console entry point: one-line errors and exit code 2 instead of tracebacks."""
    try:
        # without standalone mode the parser returns the command's exit code
        sys.exit(app(standalone_mode=False) or 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SegtoolError as exc:
        if _State.debug:
            raise
        sys.stderr.write(f"segtool: {exc}\n")
        sys.exit(EXIT_UNREADABLE)
    except BrokenPipeError:
        # the reader (e.g. `head`) left: stop quietly, and keep Python's final flush quiet too
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_CLEAN)
    except KeyboardInterrupt:
        sys.exit(130)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:  # the last line of defence: never a traceback unless asked
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()  # a usage error from the argument parser
            sys.exit(EXIT_UNREADABLE)
        if _State.debug:
            raise
        sys.stderr.write(f"segtool: internal error: {type(exc).__name__}: {exc} (run with --debug for details)\n")
        sys.exit(EXIT_UNREADABLE)

if __name__ == "__main__":
    main()
