"""How segtool reads, checks and salvages each kind of file: one ``FileFormat`` per ``FileKind``.

``formats.file_kinds`` declares the kinds and ``engine.detect`` recognises them;
this registry is where each kind meets the commands: ``dump`` takes its items,
``verify`` its check, ``salvage`` what it does with a file it does not rewrite,
``trim`` and ``report`` its index view.  No command keeps a table of kinds of its own:
a new kind is one ``FileKind`` member, its recognition in ``detect``, and one entry here.

The readers and checks are loaded at their first use: they bring construct, numpy and
the RocketMQ layouts, which a dump or verify of one Kafka segment never needs (together
about 0.2 s of start-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from segtool.engine.detect import NOT_RECOGNISED, DetectedFile
from segtool.formats.file_kinds import FileKind
from segtool.kafka.log import DEFAULT_CAP
from segtool.kafka.index import AbstractIndex, OffsetIndex, TimeIndex
from segtool.kafka.names import internal_topic


@dataclass(frozen=True)
class DumpOptions:
    deep: bool = True  # records, not only batches
    cap: int = DEFAULT_CAP  # the most bytes one batch may decompress to
    in_runs: bool = False  # clean stretches as column runs (``ops.runs``)
    for_text: bool = False  # only what the text rendering prints


@dataclass(frozen=True)
class CheckOptions:
    deep: bool = False
    progress: Callable[[int], None] | None = None
    parallel: bool = False  # this process has the machine: a helper process may share the checksums
    store_contexts: Any = None  # verify_rocketmq.StoreContexts shared by a run's store files
    commitlog_dir: str | None = None  # the CommitLog an index-only or queue-only copy points into


@dataclass(frozen=True)
class FileFormat:
    """What the commands do with one kind of file."""

    items: Callable[[str, DumpOptions], Iterator]  # dump's items
    check: Callable[[DetectedFile, CheckOptions], dict]  # verify's entry, without path, kind, size, hash, status
    salvage_note: str | None = None  # why salvage does not copy it (None: the reason of its group)
    zero_tail_is_damage: bool = False  # the broker's recovery cuts a zero-filled tail
    index_view: Callable[[str], AbstractIndex] | None = None  # a Kafka index's entries (trim, report)


def file_format(kind: FileKind) -> FileFormat:
    return FORMATS[kind]


# -- the readers and checks, loaded at first use -----------------------------------------------------


def _kafka_log():
    from segtool.ops import dump_kafka_log

    return dump_kafka_log


def _kafka_files():
    from segtool.ops import dump_kafka_files

    return dump_kafka_files


def _verify_kafka():
    from segtool.ops import verify_kafka

    return verify_kafka


def _rocketmq_files():
    from segtool.ops import dump_rocketmq

    return dump_rocketmq


def _store_checks():
    from segtool.ops import verify_rocketmq
    from segtool.ops.verify_rocketmq import checkpoint, commitlog, consume_queue, index_file, rocketmq5  # noqa: F401

    return verify_rocketmq


def _segment_items(path: str, options: DumpOptions) -> Iterator:
    reader = _kafka_log()
    # internal topics' records are decoded one by one: only plain records print a column at a time
    runs = options.in_runs and internal_topic(path) is None
    return (reader.kafka_log_runs if runs else reader.dump_kafka_log)(path, options.deep, options.cap)


def _segment_check(detected: DetectedFile, options: CheckOptions) -> dict:
    return _verify_kafka().verify_log(detected.path, options.deep, options.progress, options.parallel)


def _kafka_check(check: Callable[[Any, str], dict]) -> Callable[[DetectedFile, CheckOptions], dict]:
    return lambda detected, options: check(_verify_kafka(), detected.path)


def _in_store(check: Callable[[Any], Callable]) -> Callable[[DetectedFile, CheckOptions], dict]:
    """A store file's check (picked from ``verify_rocketmq``), run with its store's context."""
    def run(detected: DetectedFile, options: CheckOptions) -> dict:
        checks = _store_checks()
        return checks.verify_in_store(check(checks), detected, options.deep, contexts=options.store_contexts,
                                      commitlog_dir=options.commitlog_dir)
    return run


def _commitlog_items(path: str, options: DumpOptions) -> Iterator:
    return _rocketmq_files().commitlog(path, options.for_text, options.in_runs)


def _skipped(reason: str) -> tuple[Callable[[str, DumpOptions], Iterator], Callable[[DetectedFile, CheckOptions], dict]]:
    """The dump items and the check of a file no command reads: named with ``reason`` (and hashed)."""
    def items(path: str, options: DumpOptions) -> Iterator[dict]:
        yield {"kind": "skipped", "reason": reason}

    def check(detected: DetectedFile, options: CheckOptions) -> dict:
        return {"problems": [], "status": "skipped", "reason": reason}
    return items, check


def _config_check(detected: DetectedFile, options: CheckOptions) -> dict:
    from segtool.ops.verify_rocketmq.config_file import verify_config

    return verify_config(detected.path)


def _log_dir_file_check(parser_name: str) -> Callable[[DetectedFile, CheckOptions], dict]:
    """The check of a log dir's own file by its ``kafka.log_dir`` parser (the reader inspect uses)."""
    def check(detected: DetectedFile, options: CheckOptions) -> dict:
        from segtool.kafka import log_dir

        return _verify_kafka().verify_log_dir_file(getattr(log_dir, parser_name))(detected.path)
    return check


_BROKER_TEXT_LOG = ("a Kafka broker's own text log (log4j), written for people: the broker never loads it, and "
                    "its name holds no base offset, so it is no segment (LogFileUtils.offsetFromFileName)")
_LOG_DIR_FILE = "not copied: it describes the input broker's log dir, not the salvaged partitions"
_REBUILT_INDEX = "not copied: salvage writes the index Kafka's recovery builds for the surviving batches"
_REBUILT_IN_STORE = "not copied: salvage rebuilds the ConsumeQueues and IndexFiles from the surviving messages"

FORMATS: dict[FileKind, FileFormat] = {
    FileKind.KAFKA_LOG: FileFormat(_segment_items, _segment_check, zero_tail_is_damage=True),
    FileKind.KAFKA_OFFSET_INDEX: FileFormat(
        lambda path, options: _kafka_files().offset_index(path),
        _kafka_check(lambda checks, path: checks.verify_index(path, time_index=False)),
        _REBUILT_INDEX, index_view=OffsetIndex),
    FileKind.KAFKA_TIME_INDEX: FileFormat(
        lambda path, options: _kafka_files().time_index(path),
        _kafka_check(lambda checks, path: checks.verify_index(path, time_index=True)),
        _REBUILT_INDEX, index_view=TimeIndex),
    FileKind.KAFKA_TXN_INDEX: FileFormat(
        lambda path, options: _kafka_files().txn_index(path),
        _kafka_check(lambda checks, path: checks.verify_txn_index(path)), _REBUILT_INDEX),
    FileKind.KAFKA_PRODUCER_SNAPSHOT: FileFormat(
        lambda path, options: _kafka_files().producer_snapshot(path),
        _kafka_check(lambda checks, path: checks.verify_snapshot(path)),
        "not copied: a producer snapshot describes producer state up to batches that may be lost; the broker "
        "rebuilds it from the salvaged log"),
    FileKind.KAFKA_LEADER_EPOCH_CHECKPOINT: FileFormat(
        lambda path, options: _kafka_files().checkpoint(path),
        _kafka_check(lambda checks, path: checks.verify_leader_epochs(path))),
    FileKind.KAFKA_OFFSET_CHECKPOINT: FileFormat(
        lambda path, options: _kafka_files().checkpoint(path),
        _kafka_check(lambda checks, path: checks.verify_offset_checkpoint(path))),
    FileKind.KAFKA_PARTITION_METADATA: FileFormat(
        lambda path, options: _kafka_files().partition_metadata(path),
        _kafka_check(lambda checks, path: checks.verify_partition_metadata(path))),
    FileKind.KAFKA_META_PROPERTIES: FileFormat(
        lambda path, options: _kafka_files().meta_properties(path), _log_dir_file_check("parse_meta_properties"),
        _LOG_DIR_FILE),
    FileKind.KAFKA_QUORUM_STATE: FileFormat(
        lambda path, options: _kafka_files().quorum_state(path), _log_dir_file_check("parse_quorum_state"),
        _LOG_DIR_FILE),
    # any content is a clean shutdown to the broker (CleanShutdownFileHandler.read gives -1 for text it cannot parse)
    FileKind.KAFKA_CLEAN_SHUTDOWN: FileFormat(
        lambda path, options: _kafka_files().clean_shutdown(path), lambda detected, options: {"problems": []},
        _LOG_DIR_FILE),
    FileKind.KAFKA_BROKER_TEXT_LOG: FileFormat(*_skipped(_BROKER_TEXT_LOG)),

    FileKind.ROCKETMQ_COMMITLOG: FileFormat(
        _commitlog_items, _in_store(lambda checks: checks.commitlog.verify_commitlog)),
    FileKind.ROCKETMQ_CONSUMEQUEUE: FileFormat(
        lambda path, options: _rocketmq_files().consumequeue(path),
        _in_store(lambda checks: checks.consume_queue.verify_consumequeue), _REBUILT_IN_STORE),
    FileKind.ROCKETMQ_INDEXFILE: FileFormat(
        lambda path, options: _rocketmq_files().indexfile(path),
        _in_store(lambda checks: checks.index_file.verify_indexfile), _REBUILT_IN_STORE),
    FileKind.ROCKETMQ_CHECKPOINT: FileFormat(
        lambda path, options: _rocketmq_files().checkpoint(path),
        _in_store(lambda checks: checks.checkpoint.verify_checkpoint),
        "not copied: it records the input store's flush times, not the salvaged store's"),
    FileKind.ROCKETMQ_BATCHCONSUMEQUEUE: FileFormat(
        lambda path, options: _rocketmq_files().batch_queue(path),
        _in_store(lambda checks: checks.rocketmq5.verify_batch_queue)),
    FileKind.ROCKETMQ_COMPACTION_CQ: FileFormat(
        lambda path, options: _rocketmq_files().batch_queue(path),
        _in_store(lambda checks: checks.rocketmq5.verify_batch_queue)),
    # a compaction log holds CommitLog messages
    FileKind.ROCKETMQ_COMPACTION_LOG: FileFormat(
        _commitlog_items, _in_store(lambda checks: checks.rocketmq5.verify_compaction_log)),
    FileKind.ROCKETMQ_COMPACTION_POSITION: FileFormat(
        lambda path, options: _rocketmq_files().compaction_positions(path),
        _in_store(lambda checks: checks.rocketmq5.verify_compaction_positions)),
    FileKind.ROCKETMQ_TIMERLOG: FileFormat(
        lambda path, options: _rocketmq_files().timer_log(path),
        _in_store(lambda checks: checks.rocketmq5.verify_timer_log)),
    FileKind.ROCKETMQ_TIMERWHEEL: FileFormat(
        lambda path, options: _rocketmq_files().timer_wheel(path),
        _in_store(lambda checks: checks.rocketmq5.verify_timer_wheel)),
    FileKind.ROCKETMQ_TIMERCHECK: FileFormat(
        lambda path, options: _rocketmq_files().timer_checkpoint(path),
        _in_store(lambda checks: checks.rocketmq5.verify_timer_checkpoint)),
    FileKind.ROCKETMQ_TIMERMETRICS: FileFormat(
        lambda path, options: _rocketmq_files().timer_metrics(path),
        _in_store(lambda checks: checks.rocketmq5.verify_timer_metrics)),
    FileKind.ROCKETMQ_DLEDGER_DATA: FileFormat(
        lambda path, options: _rocketmq_files().dledger_data(path, options.for_text),
        _in_store(lambda checks: checks.rocketmq5.verify_dledger_data)),
    FileKind.ROCKETMQ_DLEDGER_INDEX: FileFormat(
        lambda path, options: _rocketmq_files().dledger_index(path),
        _in_store(lambda checks: checks.rocketmq5.verify_dledger_index)),
    FileKind.ROCKETMQ_DLEDGER_CHECKPOINT: FileFormat(
        lambda path, options: _rocketmq_files().dledger_checkpoint(path),
        _in_store(lambda checks: checks.rocketmq5.verify_dledger_checkpoint)),
    FileKind.ROCKETMQ_LOCK: FileFormat(
        lambda path, options: _rocketmq_files().lock(path), _in_store(lambda checks: checks.rocketmq5.verify_lock)),
    FileKind.ROCKETMQ_ABORT: FileFormat(
        lambda path, options: _rocketmq_files().abort(path), _in_store(lambda checks: checks.rocketmq5.verify_abort)),

    FileKind.ROCKETMQ_CONFIG: FileFormat(
        lambda path, options: _rocketmq_files().config(path), _config_check,
        "not copied: the broker's config/ is not rebuilt from messages; copy it from the input if it is wanted"),

    FileKind.UNKNOWN: FileFormat(*_skipped(NOT_RECOGNISED)),
}
