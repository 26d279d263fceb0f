"""`segtool scan`: every Kafka record and RocketMQ message of the inputs, into one Parquet dataset.

Driver side: find the inputs, cut them into tasks (``splits``), hand the tasks
to an engine, gather each task's summary into one report.  Task side
(``run_scan_task``, the same function on every engine): decode the task's
byte range with ``rows`` and write its part files, one per (topic, partition)
it meets, ``<root>/topic=<t>/partition=<p>/part-<task id>.parquet``, a bounded
row group at a time.  Part names depend only on the plan and the data, so the
local and Spark engines produce the same files.

The output is one hive-partitioned dataset that Spark SQL, DuckDB and pyarrow
read as it is: ``OUT/topic=…/partition=…/part-….parquet``, ``OUT/_SUCCESS``
and the report ``OUT/_segtool_report.json`` (readers skip ``_`` names).  An
interrupted scan never looks complete: on a local file system the parts are
written under ``OUT/_temporary/<run>/`` (a name Spark and pyarrow skip, as in
Hadoop's output committer) with a ``.staged`` suffix (so no ``*.parquet`` glob
finds them there) and moved into place only when every task has finished;
then ``_SUCCESS`` is written and the report last.  On object stores parts go
straight to their place and ``_SUCCESS`` is still written last.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import OrderedDict
from functools import partial

from segtool.errors import SegtoolError
from segtool.findings import Finding, FindingKind, Severity, finding
from segtool.pipeline import storage
from segtool.pipeline.inputs import discover
from segtool.pipeline.rows import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS, new_stats, task_rows
from segtool.pipeline.schema import DATASET_SCHEMA, FILE_SCHEMA, KAFKA, ROCKETMQ, partition_directory
from segtool.pipeline.splits import DEFAULT_SPLIT_BYTES, plan_tasks
from segtool.ops.output_schema import ScanReport

REPORT_NAME = "_segtool_report.json"
SUCCESS_NAME = "_SUCCESS"
STAGING_NAME = "_temporary"
STAGED_SUFFIX = ".staged"
EMPTY_PART = "part-empty.parquet"
MAX_OPEN_PARTS = 64  # a CommitLog split can meet thousands of queues: bounded open files per task


def parse_size(text: str) -> int:
    """``64MiB``, ``512M``, ``1GiB``, ``1g``, ``1048576`` -> bytes (binary units)."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*", text.lower())
    if match is None:
        raise SegtoolError(f"cannot read size {text!r}: use e.g. 64MiB, 512M, 1GiB or a number of bytes")
    scale = 1024 ** "kmgt".find(match.group(2)) * 1024 if match.group(2) else 1
    return int(float(match.group(1)) * scale)


class _PartFile:
    """One part file being written a row group at a time: atomically on a local disk (``safe_write.staged``),
    streamed to a URI (an object store publishes it when it is closed)."""

    def __init__(self, root: str, relative: str, staged: bool):
        import pyarrow.parquet as pq

        self.relative = relative
        target = storage.join(root, relative + (STAGED_SUFFIX if staged else ""))
        self._stage = None
        if storage.is_uri(target):
            sink = storage.open_output(target)
        else:
            from segtool.engine.safe_write import staged as staged_file

            os.makedirs(os.path.dirname(target), exist_ok=True)
            if staged and os.path.lexists(target):
                os.unlink(target)  # a retried task's own earlier attempt, in this run's staging directory
            self._stage = staged_file(target)
            sink = self._stage.__enter__().path
        self._sink = sink
        self.writer = pq.ParquetWriter(sink, FILE_SCHEMA, compression="snappy")

    def close(self, error: BaseException | None = None) -> None:
        try:
            self.writer.close()
        finally:
            if self._stage is not None:
                self._stage.__exit__(type(error) if error else None, error, None)
            else:
                self._sink.close()


class _TaskParts:
    """The part files of one task, one per (topic, partition) met, each batch written as one row group.

    At most ``MAX_OPEN_PARTS`` are open at once; a key met again after its file
    was closed gets a new file (``part-<task>.<n>.parquet``), so memory and open
    files stay bounded and names still depend only on the data.
    """

    def __init__(self, root: str, task: dict, staged: bool):
        self.root = root
        self.task_id = task["id"]
        self.staged = staged
        self.open: OrderedDict[tuple, _PartFile] = OrderedDict()
        self.files_per_key: dict[tuple, int] = {}
        self.written: list[str] = []

    def write(self, key: tuple, batch) -> None:
        part = self.open.get(key)
        if part is None:
            if len(self.open) >= MAX_OPEN_PARTS:
                _, oldest = self.open.popitem(last=False)
                oldest.close()
            n = self.files_per_key.get(key, 0)
            self.files_per_key[key] = n + 1
            name = f"part-{self.task_id:06d}.parquet" if n == 0 else f"part-{self.task_id:06d}.{n}.parquet"
            part = _PartFile(self.root, f"{partition_directory(*key)}/{name}", self.staged)
            self.written.append(part.relative)
            self.open[key] = part
        else:
            self.open.move_to_end(key)
        part.writer.write_batch(batch)

    def close(self, error: BaseException | None = None) -> list[str]:
        for part in self.open.values():
            part.close(error)
        self.open.clear()
        return sorted(self.written)


def run_scan_task(task: dict, out: str, with_values: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  staged: bool = True, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> dict:
    """Decode one task's byte range into its part files under ``out``; returns the task's summary.

    Rows are written as they are decoded, a row group of at most ``chunk_rows``
    rows (and about ``chunk_bytes`` of keys and values) at a time, so a task
    never holds its whole output.
    """
    stats = new_stats(task)
    parts = _TaskParts(out, task, staged)
    try:
        for key, batch in task_rows(task, stats, with_values, chunk_rows, chunk_bytes):
            parts.write(key, batch)
    except BaseException as exc:
        parts.close(exc)
        raise
    stats["parts"] = parts.close()
    return stats


def _problems(tasks: list[dict], results: list[dict]) -> list[dict]:
    problems = []

    def add(found: Finding, stats):
        problems.append({**found.as_dict(), "path": stats["path"], "split": stats["split"]})

    for task, stats in zip(tasks, results):
        last = task["end"] is None
        for error in stats["errors"]:
            add(error, stats)
        if stats["crc_invalid"]:
            add(finding(FindingKind.CRC_MISMATCH, None, f"{stats['crc_invalid']} batch(es) whose stored CRC does not "
                                                        "match (rows flagged crc_valid=false)"), stats)
        if not last and (stats["scanned_to"] != task["end"] or stats["stop_reason"] is not None):
            add(finding(FindingKind.SPLIT_BOUNDARY, stats["scanned_to"],
                        f"split {task['split']} read to byte {stats['scanned_to']} but the next split starts at "
                        f"{task['end']}: the offset index pointed at a batch that is not on the chain of batches"),
                stats)
    return problems


def _task_result(stats: dict) -> dict:
    """A task's stats as the report lists them: each error as its kind, byte offset and message."""
    errors = [{"kind": e.kind.code, "byte_offset": e.byte_offset, "message": e.message} for e in stats["errors"]]
    return {**stats, "errors": errors}


def _check_outputs(out: str, force: bool) -> None:
    """Refuse to mix with an earlier scan's dataset unless ``force``; nothing is removed yet."""
    found = storage.dataset_files(out)
    if found and not force:
        raise SegtoolError(f"{out} already holds a dataset ({found[0]}): choose a new --out or give --force")
    storage.check_own_parts(out, found)


def _staging_dir(out: str) -> str | None:
    """Where tasks write their parts: a fresh ``OUT/_temporary/<run>`` locally, ``OUT`` itself on object stores."""
    if storage.is_uri(out):
        return None
    run = os.path.join(out, STAGING_NAME, f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}")
    os.makedirs(run)
    return run


def _commit(out: str, staging: str | None, produced: list[str]) -> None:
    """Publish the finished parts: remove an earlier scan's parts, move the new ones in, mark ``_SUCCESS``."""
    from segtool.engine.safe_write import fsync_dir

    marker = storage.join(out, SUCCESS_NAME)
    if storage.exists(marker):
        storage.remove_file(marker)
    if staging is not None:
        storage.remove_dataset_files(out, keep=set())
        directories = set()
        for relative in produced:
            final = os.path.join(out, relative)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.replace(os.path.join(staging, relative + STAGED_SUFFIX), final)
            directories.add(os.path.dirname(final))
        for directory in sorted(directories):
            fsync_dir(directory)
        fsync_dir(out)
        shutil.rmtree(staging)
        try:
            os.rmdir(os.path.dirname(staging))  # _temporary itself, unless another run is writing there
        except OSError:
            pass
    else:
        storage.remove_dataset_files(out, keep=set(produced))
    if not produced:
        _write_empty(out)
    storage.write_file(marker, b"")


def _write_empty(out: str) -> None:
    """A dataset with no rows still has its schema (one empty part, keys as columns), so queries over it work."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(DATASET_SCHEMA.empty_table(), sink, compression="snappy")
    storage.write_file(storage.join(out, EMPTY_PART), memoryview(sink.getvalue()), replace=True, backup=False)


def scan(paths: list[str], out: str, engine, split_bytes: int = DEFAULT_SPLIT_BYTES, with_values: bool = False,
         force: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS, hash_inputs: bool = True) -> ScanReport:
    """Scan ``paths`` into the dataset ``out``; returns the report (also written to ``out/_segtool_report.json``).

    With ``hash_inputs`` the report lists every input file with its sha256,
    hashed by the engine's workers as one more pass over the files.
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SegtoolError("segtool scan writes Parquet with pyarrow: pip install 'segtool[spark]'") from None
    began = time.perf_counter()
    inputs = discover(paths)
    if not storage.is_uri(out):
        from segtool.engine.safe_write import refuse_inside_inputs

        # nor into a log dir or store root: a broker takes a foreign folder there for a broken partition
        homes = [p.source_dir for p in inputs.kafka] + [st.source_dir for st in inputs.rocketmq]
        refuse_inside_inputs([os.path.join(out, REPORT_NAME)],
                             [p for p in paths + homes if not storage.is_uri(p)])
        out = storage.absolute(out)  # tasks run elsewhere (executors have their own working directory)
    _check_outputs(out, force)
    staging = _staging_dir(out)
    parts_root = staging or out
    startup = engine.start()
    retries_before = len(engine.retried)
    planned = time.perf_counter()
    tasks, notes = plan_tasks(inputs, split_bytes,
                              mapper=lambda fn, items, costs: engine.map(fn, items, costs,
                                                                         description="segtool scan: plan splits"))
    scanning = time.perf_counter()
    results = engine.map(partial(run_scan_task, out=parts_root, with_values=with_values, chunk_rows=chunk_rows,
                                 staged=staging is not None),
                         tasks, [t["bytes"] for t in tasks], description="segtool scan")
    finished = time.perf_counter()
    input_files = inputs.files
    digests = (engine.map(storage.sha256, [path for path, _ in input_files], [size for _, size in input_files],
                          description="segtool scan: sha256 of inputs") if hash_inputs else [None] * len(input_files))
    hashed = time.perf_counter()

    produced = [relative for stats in results for relative in stats["parts"]]
    rows_by_broker = {kind: sum(r["rows"] for t, r in zip(tasks, results) if t["kind"] == kind)
                      for kind, found in ((KAFKA, inputs.kafka), (ROCKETMQ, inputs.rocketmq)) if found}
    dataset = {"path": out, "rows": sum(rows_by_broker.values()), "files": len(produced) or 1,
               "partition_directories": len({os.path.dirname(relative) for relative in produced}),
               "rows_by_broker": rows_by_broker, "report": storage.join(out, REPORT_NAME)}
    partitions = {}
    for part in inputs.kafka:
        topic, partition = part.topic_partition
        partitions[part.directory] = {"source_dir": part.source_dir, "topic": topic, "partition": partition,
                                      "segments": len(part.logs), "rows": 0}
    stores = {}
    for store in inputs.rocketmq:
        stores[store.source_dir] = {"source_dir": store.source_dir, "files": len(store.commitlog), "rows": 0}
    for task, stats in zip(tasks, results):
        if task["kind"] == KAFKA:
            partitions[storage.parent(task["path"])]["rows"] += stats["rows"]
        else:
            stores[task["source_dir"]]["rows"] += stats["rows"]
    input_bytes = inputs.bytes
    scan_seconds = finished - scanning
    problems = _problems(tasks, results)
    report = {
        "out": out,
        "engine": engine.name,
        "master": getattr(engine, "master", None),
        "dataset": dataset,
        "inputs": {
            "kafka_partitions": len(inputs.kafka),
            "kafka_segments": sum(len(p.logs) for p in inputs.kafka),
            "rocketmq_stores": len(inputs.rocketmq),
            "commitlog_files": sum(len(s.commitlog) for s in inputs.rocketmq),
            "bytes": input_bytes,
            "files": [{"path": path, "size": size, "sha256": digest}
                      for (path, size), digest in zip(input_files, digests)],
            "skipped": inputs.skipped,
            "unreadable": inputs.unreadable,
        },
        "tasks": len(tasks),
        "split_bytes": split_bytes,
        "partitions": list(partitions.values()),
        "stores": list(stores.values()),
        "problems": problems,
        "notes": notes,
        "task_results": [_task_result(stats) for stats in results],
        "retries": engine.retried[retries_before:],
        "timing": {
            "startup_seconds": round(startup, 3),
            "plan_seconds": round(scanning - planned, 3),
            "scan_seconds": round(scan_seconds, 3),
            "hash_seconds": round(hashed - finished, 3),
            "total_seconds": round(hashed - began, 3),
            "mb_per_second": round(input_bytes / 1e6 / scan_seconds, 1) if scan_seconds > 0 else None,
            "rows_per_second": round(dataset["rows"] / scan_seconds)
            if scan_seconds > 0 else None,
        },
    }
    _commit(out, staging, produced)
    storage.write_file(storage.join(out, REPORT_NAME), json.dumps(report, indent=1).encode(), replace=force)
    return report


def exit_code(report: dict) -> int:
    """2 when an input entry could not be read, 1 for damaged data or no row at all (nothing found: empty
    segments, a 0-byte CommitLog), else 0."""
    if report["inputs"]["unreadable"]:
        return 2
    damaged = any(p["severity"] == Severity.ERROR.value for p in report["problems"])
    return 1 if damaged or not report["dataset"]["rows"] else 0
