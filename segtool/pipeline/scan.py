"""`segtool scan`: every Kafka record and RocketMQ message of the inputs, into Parquet.

Driver side: find the inputs, cut them into tasks (``splits``), hand the tasks
to an engine, gather each task's summary into one report.  Task side
(``run_scan_task``, the same function on every engine): decode the task's
byte range with ``rows`` and write one Parquet part file,
``<staging>/<kafka|rocketmq>/part-<task id>.parquet``, atomically.  Part names
depend only on the plan, so the local and Spark engines produce the same files.

An interrupted scan never looks complete: on a local file system the parts are
written under ``OUT/_temporary/<run>/`` (a name Spark and pyarrow skip when they
read a dataset, as in Hadoop's output committer) and moved into
``OUT/<kind>/`` only when every task has finished; then each dataset gets the
empty ``_SUCCESS`` marker Spark and Hadoop users check for, and the report is
written last.  On object stores parts go straight to their place and
``_SUCCESS`` is still written last.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from functools import partial

from segtool.errors import SegtoolError
from segtool.findings import FindingKind, finding, has_errors
from segtool.pipeline import storage
from segtool.pipeline.inputs import discover
from segtool.pipeline.rows import DEFAULT_CHUNK_ROWS, new_stats, task_rows
from segtool.pipeline.schema import SCHEMAS
from segtool.pipeline.splits import DEFAULT_SPLIT_BYTES, plan_tasks
from segtool.ops.output_schema import ScanReport

REPORT_NAME = "scan-report.json"
SUCCESS_NAME = "_SUCCESS"
STAGING_NAME = "_temporary"
KINDS = ("kafka", "rocketmq")


def parse_size(text: str) -> int:
    """``64MiB``, ``512M``, ``1GiB``, ``1g``, ``1048576`` -> bytes (binary units)."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*", text.lower())
    if match is None:
        raise SegtoolError(f"cannot read size {text!r}: use e.g. 64MiB, 512M, 1GiB or a number of bytes")
    scale = 1024 ** "kmgt".find(match.group(2)) * 1024 if match.group(2) else 1
    return int(float(match.group(1)) * scale)


def part_name(task: dict) -> str:
    return f"part-{task['id']:06d}.parquet"


def _parquet_bytes(batches, schema):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_batches(batches, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return memoryview(sink.getvalue())


def run_scan_task(task: dict, out: str, with_values: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> dict:
    """Decode one task's byte range and write its part file; returns the task's summary."""
    stats = new_stats(task)
    batches = list(task_rows(task, stats, with_values, chunk_rows))
    if stats["rows"]:
        name = part_name(task)
        # a retried or speculative task rewrites its own part in this run's staging directory
        storage.write_file(storage.join(storage.join(out, task["kind"]), name),
                           _parquet_bytes(batches, SCHEMAS[task["kind"]]), replace=True, backup=False)
        stats["part"] = name
    return stats


def _problems(tasks: list[dict], results: list[dict]) -> list[dict]:
    problems = []

    def add(kind: FindingKind, stats, byte_offset, message):
        problems.append({**finding(kind, byte_offset, message), "path": stats["path"], "split": stats["split"]})

    for task, stats in zip(tasks, results):
        last = task["end"] is None
        for error in stats["errors"]:
            add(FindingKind[error["kind"].upper()], stats, error["byte_offset"], error["message"])
        if stats["crc_invalid"]:
            add(FindingKind.CRC_MISMATCH, stats, None,
                f"{stats['crc_invalid']} batch(es) whose stored CRC does not match (rows flagged crc_valid=false)")
        if last and stats["stop_reason"] == "truncated":
            add(FindingKind.TRAILING_BYTES, stats, stats["scanned_to"],
                "the last batch is cut short by the end of the file; its records are not in the dataset")
        if not last and (stats["scanned_to"] != task["end"] or stats["stop_reason"] not in (None, "corrupt")):
            add(FindingKind.SPLIT_BOUNDARY, stats, stats["scanned_to"],
                f"split {task['split']} read to byte {stats['scanned_to']} but the next split starts at {task['end']}: "
                "the offset index pointed at a batch that is not on the chain of batches")
    return problems


def _check_outputs(out: str, kinds: list[str], force: bool) -> None:
    """Refuse to mix with an earlier scan's dataset unless ``force``; nothing is removed yet."""
    if force:
        return
    for kind in kinds:
        directory = storage.join(out, kind)
        if storage.dataset_files(directory):
            raise SegtoolError(f"{directory} already holds a dataset: choose a new --out or give --force")


def _staging_dir(out: str) -> str | None:
    """Where tasks write their parts: a fresh ``OUT/_temporary/<run>`` locally, ``OUT`` itself on object stores."""
    if storage.is_uri(out):
        return None
    run = os.path.join(out, STAGING_NAME, f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}")
    os.makedirs(run)
    return run


def _commit(out: str, staging: str | None, kinds: list[str]) -> None:
    """Publish the finished parts: replace an earlier scan's parts, move the new ones in, mark ``_SUCCESS``."""
    from segtool.engine.safe_write import fsync_dir

    for kind in kinds:
        final = storage.join(out, kind)
        marker = storage.join(final, SUCCESS_NAME)
        if storage.exists(marker):
            storage.remove_file(marker)
        if staging is not None:
            storage.remove_dataset_files(final)
            os.makedirs(final, exist_ok=True)
            produced = os.path.join(staging, kind)
            for name in sorted(os.listdir(produced)) if os.path.isdir(produced) else []:
                os.replace(os.path.join(produced, name), os.path.join(final, name))
            fsync_dir(final)
        storage.write_file(marker, b"")
    if staging is not None:
        shutil.rmtree(staging)
        try:
            os.rmdir(os.path.dirname(staging))  # _temporary itself, unless another run is writing there
        except OSError:
            pass


def _write_empty(out: str, kind: str) -> None:
    """A dataset with no rows still has its schema (one empty part), so queries over it work."""
    data = _parquet_bytes([], SCHEMAS[kind])
    storage.write_file(storage.join(storage.join(out, kind), "part-empty.parquet"), data)


def scan(paths: list[str], out: str, engine, split_bytes: int = DEFAULT_SPLIT_BYTES, with_values: bool = False,
         force: bool = False, chunk_rows: int = DEFAULT_CHUNK_ROWS, hash_inputs: bool = True) -> ScanReport:
    """Scan ``paths`` into ``out``; returns the report (also written to ``out/scan-report.json``).

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
    kinds = [kind for kind, found in zip(KINDS, (inputs.kafka, inputs.rocketmq)) if found]
    _check_outputs(out, kinds, force)
    staging = _staging_dir(out)
    parts_root = staging or out
    startup = engine.start()
    planned = time.perf_counter()
    tasks, notes = plan_tasks(inputs, split_bytes,
                              mapper=lambda fn, items, costs: engine.map(fn, items, costs,
                                                                         description="segtool scan: plan splits"))
    scanning = time.perf_counter()
    results = engine.map(partial(run_scan_task, out=parts_root, with_values=with_values, chunk_rows=chunk_rows),
                         tasks, [t["bytes"] for t in tasks], description="segtool scan")
    finished = time.perf_counter()
    input_files = inputs.files
    digests = (engine.map(storage.sha256, [path for path, _ in input_files], [size for _, size in input_files],
                          description="segtool scan: sha256 of inputs") if hash_inputs else [None] * len(input_files))
    hashed = time.perf_counter()

    datasets = {}
    for kind in kinds:
        rows = sum(r["rows"] for t, r in zip(tasks, results) if t["kind"] == kind)
        files = sum(1 for t, r in zip(tasks, results) if t["kind"] == kind and r["part"])
        if files == 0:
            _write_empty(parts_root, kind)
        datasets[kind] = {"path": storage.join(out, kind), "rows": rows, "files": max(files, 1)}
    partitions = {}
    for part in inputs.kafka:
        partitions[part.directory] = {"source_dir": part.source_dir, "topic": part.topic, "partition": part.partition,
                                      "segments": len(part.segments), "rows": 0}
    stores = {}
    for store in inputs.rocketmq:
        stores[store.source_dir] = {"source_dir": store.source_dir, "files": len(store.files), "rows": 0}
    for task, stats in zip(tasks, results):
        if task["kind"] == "kafka":
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
        "datasets": datasets,
        "inputs": {
            "kafka_partitions": len(inputs.kafka),
            "kafka_segments": sum(len(p.segments) for p in inputs.kafka),
            "rocketmq_stores": len(inputs.rocketmq),
            "commitlog_files": sum(len(s.files) for s in inputs.rocketmq),
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
        "task_results": results,
        "timing": {
            "startup_seconds": round(startup, 3),
            "plan_seconds": round(scanning - planned, 3),
            "scan_seconds": round(scan_seconds, 3),
            "hash_seconds": round(hashed - finished, 3),
            "total_seconds": round(hashed - began, 3),
            "mb_per_second": round(input_bytes / 1e6 / scan_seconds, 1) if scan_seconds > 0 else None,
            "rows_per_second": round(sum(d["rows"] for d in datasets.values()) / scan_seconds)
            if scan_seconds > 0 else None,
        },
    }
    _commit(out, staging, kinds)
    storage.write_file(storage.join(out, REPORT_NAME), json.dumps(report, indent=1).encode(), replace=force)
    return report


def exit_code(report: dict) -> int:
    """2 when an input entry could not be read, 1 for damaged data, else 0."""
    if report["inputs"]["unreadable"]:
        return 2
    return 1 if has_errors(report["problems"]) else 0
