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
interrupted scan never looks complete, on any storage: tasks stage their parts
under ``OUT/_temporary/<run>/`` and the driver publishes them only at commit,
then writes ``_SUCCESS`` with the manifest of the parts (``commit``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from functools import partial

from segtool.errors import SegtoolError
from segtool.findings import Finding, FindingKind, Severity, finding
from segtool.pipeline import storage
from segtool.pipeline.commit import (SUCCESS_NAME, Staging, commit, mark_task_done, pause_point, plan_fingerprint,
                                     remove_success, staged_path)
from segtool.pipeline.inputs import discover
from segtool.pipeline.rows import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS, new_stats, task_rows
from segtool.pipeline.schema import DATASET_SCHEMA, FILE_SCHEMA, KAFKA, ROCKETMQ, partition_directory
from segtool.pipeline.splits import DEFAULT_SPLIT_BYTES, plan_tasks
from segtool.ops.output_schema import ScanReport

REPORT_NAME = "_segtool_report.json"
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


class _HashingSink:
    """A part's stream to a URI, hashed as it is written.  After a failure it takes nothing more, so closing
    the Parquet writer cannot end the file with a valid footer."""

    def __init__(self, stream):
        self.stream = stream
        self.digest = hashlib.sha256()
        self.size = 0
        self.failed = False
        self.closed = False

    def write(self, data) -> int:
        if not self.failed:
            self.stream.write(data)
            self.digest.update(data)
            self.size += len(memoryview(data))
        return len(memoryview(data))

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stream.close()


class _PartFile:
    """One part file being written a row group at a time, staged under the run's folder: atomically on a
    local disk (``safe_write.staged``), streamed to a URI (an object store publishes it when it is closed)."""

    def __init__(self, run_root: str, relative: str):
        import pyarrow.parquet as pq

        self.relative = relative
        self.rows = 0
        self.target = staged_path(run_root, relative)
        self._stage = None
        if storage.is_uri(self.target):
            self._sink = _HashingSink(storage.open_output(self.target))
            sink = self._sink
        else:
            from segtool.engine.safe_write import staged as staged_file

            os.makedirs(os.path.dirname(self.target), exist_ok=True)
            if os.path.lexists(self.target):
                os.unlink(self.target)  # an earlier attempt of this task (a retry, or an interrupted run resumed)
            self._stage = staged_file(self.target)
            self._staged = self._stage.__enter__()  # its ``written`` is filled once the file is in place
            sink = self._staged.path
        self.writer = pq.ParquetWriter(sink, FILE_SCHEMA, compression="snappy")

    def write(self, batch) -> None:
        self.writer.write_batch(batch)
        self.rows += batch.num_rows

    def close(self, error: BaseException | None = None) -> dict | None:
        """The part's entry (relative path, rows, size, sha256), or None when ``error`` ended it (nothing staged)."""
        if self._stage is None:
            self._sink.failed = error is not None
            try:
                self.writer.close()
            finally:
                self._sink.close()
            if error is not None:
                storage.remove_file(self.target)
                return None
            return {"path": self.relative, "rows": self.rows, "size": self._sink.size,
                    "sha256": self._sink.digest.hexdigest()}
        try:
            self.writer.close()
        finally:
            # on an error the temporary file is removed: nothing is staged
            self._stage.__exit__(type(error) if error else None, error, None)
        written = self._staged.written
        return {"path": self.relative, "rows": self.rows, "size": written["size"], "sha256": written["sha256"]}


class _TaskParts:
    """The part files of one task, one per (topic, partition) met, each batch written as one row group.

    At most ``MAX_OPEN_PARTS`` are open at once; a key met again after its file
    was closed gets a new file (``part-<task>.<n>.parquet``), so memory and open
    files stay bounded and names still depend only on the data.
    """

    def __init__(self, run_root: str, task: dict):
        self.run_root = run_root
        self.task_id = task["id"]
        self.open: OrderedDict[tuple, _PartFile] = OrderedDict()
        self.files_per_key: dict[tuple, int] = {}
        self.written: list[dict] = []

    def write(self, key: tuple, batch) -> None:
        part = self.open.get(key)
        if part is None:
            if len(self.open) >= MAX_OPEN_PARTS:
                _, oldest = self.open.popitem(last=False)
                self.written.append(oldest.close())
            n = self.files_per_key.get(key, 0)
            self.files_per_key[key] = n + 1
            name = f"part-{self.task_id:06d}.parquet" if n == 0 else f"part-{self.task_id:06d}.{n}.parquet"
            part = _PartFile(self.run_root, f"{partition_directory(*key)}/{name}")
            self.open[key] = part
        else:
            self.open.move_to_end(key)
        part.write(batch)

    def close(self, error: BaseException | None = None) -> list[dict]:
        """Every part's entry, sorted by path; with ``error``, each open part is discarded instead."""
        for part in self.open.values():
            closed = part.close(error)
            if closed is not None:
                self.written.append(closed)
        self.open.clear()
        return sorted(self.written, key=lambda entry: entry["path"])


def run_scan_task(task: dict, run_root: str, with_values: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> dict:
    """Decode one task's byte range into its part files, staged under the run's folder ``run_root``, then
    write the task's marker; returns the task's summary.

    Rows are written as they are decoded, a row group of at most ``chunk_rows``
    rows (and about ``chunk_bytes`` of keys and values) at a time, so a task
    never holds its whole output.  Nothing is written in the dataset's final place.
    """
    stats = new_stats(task)
    parts = _TaskParts(run_root, task)
    try:
        for key, batch in task_rows(task, stats, with_values, chunk_rows, chunk_bytes):
            parts.write(key, batch)
            pause_point(f"task-{task['id']}")
    except BaseException as exc:
        parts.close(exc)
        raise
    stats["parts"] = parts.close()
    mark_task_done(run_root, stats)
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


def _check_outputs(out: str, force: bool, resume: bool) -> None:
    """Refuse to mix with an earlier scan's dataset unless ``force`` (or ``resume``: the parts an interrupted
    commit published); nothing is removed here."""
    found = storage.dataset_files(out)
    if resume and storage.exists(storage.join(out, SUCCESS_NAME)):
        raise SegtoolError("--resume: this output is a finished scan (it has _SUCCESS): nothing to resume", out)
    if found and not (force or resume):
        complete = storage.exists(storage.join(out, SUCCESS_NAME))
        hint = "" if complete else "; it has no _SUCCESS: an interrupted scan, which --resume continues"
        raise SegtoolError(f"{out} already holds a dataset ({found[0]}){hint}: choose a new --out or give --force")
    storage.check_own_parts(out, found)


def _write_empty(out: str) -> dict:
    """A dataset with no rows still has its schema (one empty part, keys as columns), so queries over it work."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(DATASET_SCHEMA.empty_table(), sink, compression="snappy")
    written = storage.write_file(storage.join(out, EMPTY_PART), memoryview(sink.getvalue()), replace=True,
                                 backup=False)
    return {"path": EMPTY_PART, "rows": 0, "size": written["size"], "sha256": written["sha256"]}


def scan(paths: list[str], out: str, engine, split_bytes: int = DEFAULT_SPLIT_BYTES, with_values: bool = False,
         force: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS, hash_inputs: bool = True,
         resume: bool = False) -> ScanReport:
    """Scan ``paths`` into the dataset ``out``; returns the report (also written to ``out/_segtool_report.json``).

    With ``hash_inputs`` the report lists every input file with its sha256,
    hashed by the engine's workers as one more pass over the files.  With
    ``resume`` the finished tasks of an interrupted scan into ``out`` with the
    same plan are kept (``commit``).
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SegtoolError("segtool scan writes Parquet with pyarrow: pip install 'segtool[spark]'") from None
    began = time.perf_counter()
    inputs = discover(paths)
    from segtool.engine.safe_write import refuse_inside_inputs

    # nor into a log dir or store root: a broker takes a foreign folder there for a broken partition
    homes = [p.source_dir for p in inputs.kafka] + [st.source_dir for st in inputs.rocketmq]
    refuse_inside_inputs([storage.join(out, REPORT_NAME)], paths + homes)
    out = storage.absolute(out)  # tasks run elsewhere (executors have their own working directory)
    _check_outputs(out, force, resume)
    if force:
        remove_success(out)  # first of all: from here on the old dataset never reads as complete
    staging = Staging.open(out, resume)
    try:
        return _scan_staged(inputs, out, engine, staging, split_bytes, with_values, force or resume, chunk_rows,
                            hash_inputs, began)
    except SegtoolError:
        if not (staging.resumed or staging.planned):
            staging.remove()  # refused before any work (the executors' checks): nothing to resume
        raise
    finally:
        staging.close()


def _scan_staged(inputs, out: str, engine, staging: Staging, split_bytes: int, with_values: bool,
                 replace_report: bool, chunk_rows: int, hash_inputs: bool, began: float) -> ScanReport:
    startup = engine.start()
    retries_before = len(engine.retried)
    check_executors = getattr(engine, "check_executors", None)
    if check_executors is not None:
        check_executors(staging.root)
    pause_point("startup")
    planned = time.perf_counter()
    tasks, notes = plan_tasks(inputs, split_bytes,
                              mapper=lambda fn, items, costs: engine.map(fn, items, costs,
                                                                         description="segtool scan: plan splits"))
    staging.check_plan(plan_fingerprint(tasks, {"with_values": with_values, "chunk_rows": chunk_rows}))
    kept = staging.finished_tasks(tasks)
    to_run = [task for task in tasks if task["id"] not in kept]
    scanning = time.perf_counter()
    ran = engine.map(partial(run_scan_task, run_root=staging.root, with_values=with_values, chunk_rows=chunk_rows),
                     to_run, [t["bytes"] for t in to_run], description="segtool scan")
    by_id = {**kept, **{stats["id"]: stats for stats in ran}}
    results = [by_id[task["id"]] for task in tasks]
    finished = time.perf_counter()
    input_files = inputs.files
    digests = (engine.map(storage.sha256, [path for path, _ in input_files], [size for _, size in input_files],
                          description="segtool scan: sha256 of inputs") if hash_inputs else [None] * len(input_files))
    hashed = time.perf_counter()

    produced = [part for stats in results for part in stats["parts"]]
    rows_by_broker = {kind: sum(r["rows"] for t, r in zip(tasks, results) if t["kind"] == kind)
                      for kind, found in ((KAFKA, inputs.kafka), (ROCKETMQ, inputs.rocketmq)) if found}
    dataset = {"path": out, "rows": sum(rows_by_broker.values()), "files": len(produced) or 1,
               "partition_directories": len({os.path.dirname(part["path"]) for part in produced}),
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
        "commit": {"run": staging.run, "resumed_tasks": len(kept),
                   "removed_staging": staging.removed, "manifest": storage.join(out, SUCCESS_NAME)},
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
    commit(staging, produced, _write_empty, REPORT_NAME, json.dumps(report, indent=1).encode(), replace_report)
    return report


def exit_code(report: dict) -> int:
    """2 when an input entry could not be read, 1 for damaged data or no row at all (nothing found: empty
    segments, a 0-byte CommitLog), else 0."""
    if report["inputs"]["unreadable"]:
        return 2
    damaged = any(p["severity"] == Severity.ERROR.value for p in report["problems"])
    return 1 if damaged or not report["dataset"]["rows"] else 0
