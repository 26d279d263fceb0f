"""`report`: the figures of a picture of Kafka partitions and RocketMQ stores (typed data, no plotting).

Everything comes from the one engine: ``verify`` gives every finding, the recovery
point and what lies past damage; each Kafka segment is then framed once more by the
batch walker (``HeaderScan``, the framing verify's recovery uses, so the same
batches) for batch-level columns, and each RocketMQ CommitLog file is read by the
CommitLog walker past damage (``commitlog_pieces``).  No record is decoded except
the one of a transaction marker and the inner messages of a legacy wrapper.

Big inputs stay small: a partition's batches are grouped into at most
``TIMELINE_POINTS`` buckets of consecutive batches (one bucket per batch when there
are fewer), index entries and events are sampled or capped, and the page says so
(``notes``).  ``report_html`` draws these figures; ``--json`` prints them.

When the paths hold one partition in several brokers' directories (or two or more
RocketMQ stores), ``replicas`` is ``ops.replicas.replicas`` of the same paths, as
``segtool replicas --json`` gives it (its longest lists capped, said in ``notes``),
and each partition or store section names its broker and replica set: a section is
one broker's copy, and no figure is summed across sections.
"""

from __future__ import annotations

import bisect
import os
import time
from collections import Counter
from typing import Iterable

import numpy as np

from segtool.engine.inventory import Partition, inventory
from segtool.kafka.partition import PartitionView, Segment
from segtool.kafka.recovery import PARALLEL_MIN_BYTES, ProducerTxnState, recoveries_remembered
from segtool.errors import CorruptData, SegtoolError
from segtool.findings import Finding, FindingKind, Severity
from segtool.rocketmq import names as rocketmq_names
from segtool.kafka import index as kafka_index
from segtool.formats.checksums import ChecksumHelper
from segtool.formats.file_kinds import FileKind
from segtool.kafka.log import CODEC_NAMES, HeaderScan, batch_at
from segtool.kafka.records import batch_records, control_record_type
from segtool.kafka.names import LOG, PRODUCER_SNAPSHOT, file_name, has_offset_name, offset_from_file_name, sibling
from segtool.ops.file_formats import file_format
from segtool.kafka.startup import startup_plan
from segtool.ops.output_schema import (
    ReportFigures,
    ReportFindings,
    ReplicasReport,
    ReportPartition,
    ReportStore,
)
from segtool.ops.progress import RunProgress
from segtool.ops.verify import exit_code as verify_exit_code
from segtool.ops.verify import verify
from segtool.source import open_buffer

# The page stays under 5 MB whatever the input: every list below is capped per page and shared by
# its sections (partitions, stores, the other files), each section keeping at least its minimum.
TIMELINE_POINTS = 600  # buckets of consecutive batches drawn per page, shared by its partitions
MIN_PARTITION_POINTS = 50
FINDINGS_SHOWN = 400  # findings listed (errors first) per page; every finding is counted in the bins
FINDING_BINS = 200  # bins along the offsets per section: each finding kind is drawn as counts per bin
DAMAGED_SHOWN = 200  # damaged ranges listed and drawn one by one per page; the rest drawn per bin
SEGMENT_ROWS = 200  # rows of the segments table per page; more segments are collapsed into runs
FILES_SHOWN = 400  # verify's per-file figures embedded per page (those with problems first)
MIN_SHARE = 20
INDEX_POINTS = 300  # index entries drawn per partition and index kind
EVENTS_SHOWN = 200  # out-of-order and future timestamps, gaps, transactions listed per partition
RATE_BUCKETS = 300
MIN_RATE_BUCKET_MS = 100
STORE_TIME_BUCKETS = 200
QUEUE_SERIES = 24  # queues drawn one by one per store; the others together
PRODUCERS_SHOWN = 20
SIZE_BIN_EDGES = [0] + [1 << k for k in range(6, 25)]  # 64 B .. 16 MiB, then larger
# replica sets: the runs of dropped batches listed per page, shared by every follower of every election
# (each run's records are counted in its follower's totals whatever is listed), producers and single copies
REPLICA_RUNS_SHOWN = 600
REPLICA_PRODUCERS_SHOWN = 100  # per replica set, those whose state the replicas disagree on first
SINGLE_COPIES_SHOWN = 200

_TRANSACTIONAL, _CONTROL, _LOG_APPEND_TIME = 0x10, 0x20, 0x08
_NEVER = np.iinfo(np.int64).max


def exit_code(figures: ReportFigures) -> int:
    """verify's exit code (2 unreadable input, 1 problems or nothing recognised, 0 clean), and 1 when copies held
    by several brokers part or an election would lose committed records (``segtool replicas``' verdict)."""
    from segtool.ops.replicas import exit_code as replicas_exit_code

    code = verify_exit_code({"summary": figures["summary"]})
    if figures["replicas"] is not None and (figures["replicas"]["kafka"] or figures["replicas"]["rocketmq"]):
        code = max(code, replicas_exit_code(figures["replicas"]))
    return code


class _Shares:
    """Each section's share of the page's caps."""

    def __init__(self, partitions: int, sections: int):
        self.points = max(MIN_PARTITION_POINTS, TIMELINE_POINTS // max(partitions, 1))

        def share(cap: int) -> int:
            return max(MIN_SHARE, cap // max(sections, 1))

        self.findings, self.bins = share(FINDINGS_SHOWN), share(FINDING_BINS)
        self.damaged, self.segment_rows = share(DAMAGED_SHOWN), share(SEGMENT_ROWS)


def report(paths: list[str], deep: bool = False, hash_inputs: bool = True, now_ms: int | None = None,
           progress: RunProgress | None = None) -> ReportFigures:
    """The figures of every partition and store under ``paths`` (``deep``, ``hash_inputs``: as verify's)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    with recoveries_remembered():  # the startup plans recover the segments verify has just recovered
        return _report(paths, deep, hash_inputs, now_ms, progress)


def _report(paths: list[str], deep: bool, hash_inputs: bool, now_ms: int, progress) -> ReportFigures:
    verified = verify(paths, deep=deep, progress=progress, hash_inputs=hash_inputs)
    by_path = {item["path"]: item for item in verified["files"]}
    found = inventory(paths)
    notes: list[str] = []
    partitions = [p for p in found.partitions if p.logs]
    shares = _Shares(len(partitions), len(partitions) + len(found.stores) + 1)
    share = shares.points
    partition_figures = [_PartitionFigures(p, by_path, shares, now_ms).figures() for p in partitions]
    roots = [os.path.join(str(store.root), "") for store in found.stores]
    store_files = [[f.path for f in store.files] for store in found.stores]
    placed = {f.path for p in partitions for f in p.files} | {path for paths in store_files for path in paths}
    others = []
    for item in verified["files"]:
        if item["path"] in placed:
            continue
        # a store's own marker files (abort, lock) lie in its root, outside its data directories
        home = next((i for i, root in enumerate(roots) if item["path"].startswith(root)), None)
        if home is None:
            others.append(item)
        else:
            store_files[home].append(item["path"])
    store_figures = [_store_figures(store.root, [f.path for f in store.commitlog], paths, by_path, shares)
                     for store, paths in zip(found.stores, store_files)]
    if len(partitions) > TIMELINE_POINTS // MIN_PARTITION_POINTS:
        notes.append(f"{len(partitions)} partitions: each timeline has at most {share} points")
    compared = _replicas(paths, found, notes)
    _name_copies(compared, partition_figures, store_figures)
    return {
        "generated_at": now_ms,
        "inputs": [str(p) for p in paths],
        "files": _files_figures(verified["files"], notes),
        "files_total": len(verified["files"]),
        "summary": verified["summary"],
        "partitions": partition_figures,
        "stores": store_figures,
        "other_findings": _findings(others, None, shares),
        "replicas": compared,
        "notes": notes,
    }


# -- replica sets: one partition or store held by several brokers ---------------------------------


def _same_place(path: str) -> str:
    return os.path.realpath(path)


def _replicas(paths: list[str], found, notes: list[str]) -> ReplicasReport | None:
    """``segtool replicas`` of the same paths when they hold a partition name in two or more directories
    or two or more stores (DLedger nodes are stores to replicas, not to the inventory: a path that is a
    store root counts); None otherwise: nothing to compare, nothing read twice."""
    names = Counter(os.path.basename(os.path.normpath(p.directory)) for p in found.partitions)
    stores = max(len(found.stores), sum(1 for path in paths if rocketmq_names.is_store_root(path)))
    if max(names.values(), default=0) < 2 and stores < 2:
        return None
    from segtool.ops.replicas import replicas
    from segtool.ops.task_map import NO_HASHING

    try:
        compared = replicas(paths, hashing=NO_HASHING)  # the report's own file list hashes each file once
    except SegtoolError as exc:
        notes.append(f"replicas: the copies are not compared ({exc.message})")
        return None
    in_sets = {os.path.basename(os.path.normpath(r["directory"])) for s in compared["kafka"]
               for r in s["replicas"] + s["unreadable"]}
    for name, count in sorted(names.items()):
        if count > 1 and name not in in_sets:
            notes.append(f"{name}: found in {count} directories but in no replica set: replicas compares the "
                         "partitions of brokers' log dirs (give each broker's log dir, or the folder holding them)")
    _bound_replicas(compared, notes)
    return compared


def _bound_replicas(compared: ReplicasReport, notes: list[str]) -> None:
    """The lists of a replicas report that grow with the input, capped for the page (the totals beside
    them stay whole; `segtool replicas --json` lists every item)."""
    per_set = max(MIN_SHARE, REPLICA_RUNS_SHOWN // max(len(compared["kafka"]), 1))
    for replica_set in compared["kafka"]:
        name = f"{replica_set['topic']}-{replica_set['partition']}"
        truncations = [f for c in replica_set["candidates"] for f in c["followers"]]
        each = max(1, per_set // max(len(truncations), 1))
        cut = [f for f in truncations if len(f["dropped"]) > each]
        for follower in cut:
            del follower["dropped"][each:]
        if cut:
            notes.append(f"{name}: each follower's dropped batches are listed as at most {each} runs (every "
                         "dropped record is counted in its totals); `segtool replicas --json` lists every run")
        producers = replica_set["producers"]
        if len(producers) > REPLICA_PRODUCERS_SHOWN:
            kept = sorted(range(len(producers)), key=lambda i: producers[i]["agree"])[:REPLICA_PRODUCERS_SHOWN]
            replica_set["producers"] = [producers[i] for i in sorted(kept)]
            notes.append(f"{name}: {REPLICA_PRODUCERS_SHOWN} of {len(producers)} producers across the replicas "
                         "are listed (those the replicas disagree on first); `segtool replicas --json` lists every one")
    for broker in compared["brokers"]:
        broker["files"] = []
    notes.append("replicas: each broker's files are in the report's own file list, with their sha256")
    singles = compared["single_copies"]
    if len(singles) > SINGLE_COPIES_SHOWN:
        del singles[SINGLE_COPIES_SHOWN:]
        notes.append(f"replicas: {SINGLE_COPIES_SHOWN} of the partitions held by one broker only are listed; "
                     "`segtool replicas --json` lists every one")


def _name_copies(compared: ReplicasReport | None, partitions: list[ReportPartition], stores: list[ReportStore]) -> None:
    """Each section's broker and replica set (its index in ``replicas``' lists), None when it is in none."""
    copies: dict[str, tuple[int, str]] = {}
    store_copies: dict[str, tuple[int, str]] = {}
    if compared is not None:
        for number, replica_set in enumerate(compared["kafka"]):
            for replica in replica_set["replicas"] + replica_set["unreadable"]:
                copies[_same_place(replica["directory"])] = (number, replica["broker"])
        for number, replica_set in enumerate(compared["rocketmq"]):
            for store in replica_set["stores"] + replica_set["nodes"]:
                store_copies.setdefault(_same_place(store["store"]), (number, store["broker"]))
    for partition in partitions:
        partition["replica_set"], partition["broker"] = copies.get(_same_place(partition["directory"]), (None, None))
    for store in stores:
        store["replica_set"], store["broker"] = store_copies.get(_same_place(store["root"]), (None, None))


def _files_figures(items: list[dict], notes: list[str]) -> list[dict]:
    """verify's figures per file, those with problems first when there are more than the page holds."""
    if len(items) <= FILES_SHOWN:
        return [_file_figures(item) for item in items]
    chosen = sorted(range(len(items)), key=lambda i: items[i]["status"] == "ok")[:FILES_SHOWN]
    notes.append(f"{len(items)} files: verify's figures of {FILES_SHOWN} are embedded (those with problems "
                 f"first); `segtool verify --json` gives every one")
    return [_file_figures(items[i]) for i in sorted(chosen)]


def _file_figures(item: dict) -> dict:
    problems = item.get("problems", [])
    return {
        "path": item["path"], "kind": item.get("kind", FileKind.UNKNOWN), "status": item["status"],
        "size": item.get("size"), "sha256": item.get("sha256"),
        "batches": item.get("batches"), "records": item.get("records"),
        "first_offset": item.get("first_offset"), "last_offset": item.get("last_offset"),
        "recovery": item.get("recovery"), "problems": len(problems),
        "errors": sum(1 for p in problems if p.severity is Severity.ERROR),
    }


def _findings(items: Iterable[dict], place, shares: _Shares) -> ReportFindings:
    """Every finding of ``items`` (verify entries): the first ones listed (errors first), every one
    counted by kind and, where ``place`` (None: not drawn) gives it a place, in its kind's bins along
    the offsets."""
    found = []
    by_kind: dict[str, int] = {}
    for item in items:
        for problem in item.get("problems", []):
            by_kind[problem.kind.code] = by_kind.get(problem.kind.code, 0) + 1
            found.append((item, problem))
    found.sort(key=lambda entry: entry[1].severity is not Severity.ERROR)
    shown, placed = [], []
    for number, (item, problem) in enumerate(found):
        placed_at, placed_by = place(item, problem) if place is not None else (None, "none")
        if number < shares.findings:
            shown.append({"file": item["path"], **problem.as_dict(), "placed_at": placed_at, "placed_by": placed_by})
        if placed_at is not None:
            placed.append((problem.kind.code, problem.severity.value, placed_at))
    return {"total": len(found), "by_kind": by_kind, "shown": shown, "bins": _finding_bins(placed, shares.bins)}


def _finding_bins(placed: list[tuple[str, str, int]], bins: int) -> list[dict]:
    """Per finding kind, the findings counted in equal bins along the offsets the section spans (a bin
    per finding when they are few): where each bin's findings lie and how many there are."""
    if not placed:
        return []
    low = min(p[2] for p in placed)
    width = max(1, -(-(max(p[2] for p in placed) - low + 1) // bins))
    gathered: dict[tuple[str, int], list] = {}
    for kind, severity, at in placed:
        entry = gathered.setdefault((kind, (at - low) // width), [kind, severity, at, at, 0])
        entry[2], entry[3], entry[4] = min(entry[2], at), max(entry[3], at), entry[4] + 1
        if severity == Severity.ERROR.value:
            entry[1] = severity
    return [{"kind": kind, "severity": severity, "first": first, "last": last, "count": count}
            for (_, _), (kind, severity, first, last, count) in sorted(gathered.items())]


def _sample(count: int, most: int) -> np.ndarray:
    """Indices of at most ``most`` of ``count`` items, evenly spread, first and last kept."""
    if count <= most:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, most).astype(np.int64))


def _none_below_zero(values) -> list:
    return [int(v) if v >= 0 else None for v in values.tolist()]


# -- Kafka ------------------------------------------------------------------------------------


class _Columns:
    """Batch-level columns of consecutive framed batches (numpy int64 arrays)."""

    __slots__ = ("base", "last", "position", "size", "records", "max_ts", "create_ts", "attributes",
                 "producer_id", "producer_epoch")

    @classmethod
    def of_headers(cls, headers) -> "_Columns":
        cols = cls()
        cols.base = headers.column("base_offset")
        cols.last = cols.base + headers.column("last_offset_delta")
        cols.position, cols.size = headers.position, headers.size
        cols.records = np.maximum(headers.column("record_count"), 0)
        cols.attributes = headers.column("attributes")
        cols.max_ts = headers.column("max_timestamp")
        # LogAppendTime batches keep the producer's create time as their base timestamp
        cols.create_ts = np.where(cols.attributes & _LOG_APPEND_TIME, headers.column("base_timestamp"), cols.max_ts)
        cols.producer_id = headers.column("producer_id")
        cols.producer_epoch = headers.column("producer_epoch")
        return cols

    @classmethod
    def of_batches(cls, batches: list, path: str) -> "_Columns":
        """Legacy messages and short batches, as objects."""
        cols = cls()

        def column(values: list[int]):
            return np.array(values, dtype=np.int64)

        cols.base = column([b.base_offset for b in batches])
        cols.last = column([b.last_offset for b in batches])
        cols.position = column([b.position for b in batches])
        cols.size = column([b.size for b in batches])
        cols.records = column([_record_count(b, path) for b in batches])
        # a legacy message has no transactional or control bits: only its codec and timestamp type count
        cols.attributes = column([b.attributes if b.magic >= 2 else b.attributes & 0x0F for b in batches])
        cols.max_ts = column([b.max_timestamp for b in batches])
        cols.create_ts = column([b.base_timestamp if b.magic >= 2 and b.is_log_append_time else b.max_timestamp
                                 for b in batches])
        cols.producer_id = column([b.producer_id for b in batches])
        cols.producer_epoch = column([b.producer_epoch for b in batches])
        return cols


def _record_count(batch, path: str) -> int:
    """A v2 batch's header count; a legacy message's inner messages (as verify --deep counts them)."""
    if batch.magic >= 2:
        return max(batch.record_count or 0, 0)
    try:
        return len(batch_records(batch, path))
    except CorruptData:
        return 0


class _PartitionFigures:
    """The figures of one partition the inventory found, gathered segment by segment in one framing
    pass each."""

    def __init__(self, partition: Partition, verified: dict, shares: _Shares, now_ms: int):
        self.partition, self.directory, self.verified = partition, partition.directory, verified
        self.logs, self.files = [f.path for f in partition.logs], [f.path for f in partition.files]
        self.now_ms, self.shares = now_ms, shares
        self.notes: list[str] = []
        points = shares.points
        try:
            self.view: PartitionView | None = PartitionView(self.directory)
        except SegtoolError as exc:
            self.view = None
            self.notes.append(f"{self.directory}: no startup plan ({exc.message})")
        total = sum(verified.get(path, {}).get("batches") or 0 for path in self.logs)  # verify framed them already
        self.per_bucket = max(1, -(-total // points))  # ceil: at most `points` buckets
        if self.per_bucket > 1:
            self.notes.append(f"{total} batches drawn as {-(-total // self.per_bucket)} points of up to "
                              f"{self.per_bucket} consecutive batches each (sums, minima and maxima per point)")
        self.buckets = {name: [] for name in ("segment", "first_offset", "last_offset", "first_position", "batches",
                                              "records", "bytes", "create_min", "create_max", "log_append")}
        self.previous_last: int | None = None
        self.running_max = -1
        self.out_of_order = {"count": 0, "shown": []}
        self.future = {"count": 0, "shown": []}
        self.gaps = {"count": 0, "offsets_missing": 0, "shown": []}
        first_log = self.logs[0]
        snapshot = os.path.join(os.path.dirname(first_log),
                                file_name(offset_from_file_name(first_log), PRODUCER_SNAPSHOT)) \
            if has_offset_name(first_log) else ""
        self.open_txns = dict(ProducerTxnState.from_snapshot(snapshot).ongoing) if snapshot else {}
        self.txn = {"committed": 0, "aborted": 0, "open": 0, "empty": 0, "shown": []}
        self.codecs: dict[int, list[int]] = {}
        self.producers: dict[int, dict] = {}
        self.sizes = np.zeros(len(SIZE_BIN_EDGES), dtype=np.int64)
        self.log_append_batches = 0
        self.damaged: list[dict] = []
        self.truncation = None
        self.segments = []

    # -- the pass -------------------------------------------------------------------------------

    def figures(self) -> ReportPartition:
        for number, path in enumerate(self.logs):
            self._segment(number, path, self.verified.get(path))
        for pid, first in self.open_txns.items():
            self._transaction(pid, first, self.previous_last if self.previous_last is not None else first, "open")
        return self._result()

    def _startup(self) -> dict | None:
        """What the broker's start-up drops (``inspect``'s plan: which segment it truncates where, which it
        deletes) and what reading past the damage gets back of it: ``engine.salvage.recovery_loss``, the
        figures inspect and lookup give; no figure of its own."""
        if self.view is None:
            return None
        loaded = {os.path.normpath(s.log_path) for s in self.view.segments}
        if loaded != {os.path.normpath(path) for path in self.logs}:
            self.notes.append("startup plan: not shown, the report holds only some of the segments the broker loads "
                              "from this directory")
            return None
        plan = startup_plan(self.view)
        at_startup = {}
        for step in plan.segments:
            at_startup[os.path.normpath(step.log_path)] = (
                "deleted" if step.deleted_by_recovery else "truncated" if step in plan.cuts
                else "recovered" if step.recovery is not None else "kept")
        for segment in self.segments:
            segment["at_startup"] = at_startup.get(os.path.normpath(segment["file"]), "not loaded")
        figures = {"clean_shutdown": plan.clean_shutdown, "recovery_point": plan.recovery_point_checkpoint,
                   "log_end_offset": plan.log_end_offset, "truncated_file": None, "truncated_at_byte": None,
                   "truncated_at_offset": None, "segments_deleted": 0, "first_deleted": None, "last_deleted": None,
                   "dropped_bytes": 0, "dropped_records": 0, "dropped_first_offset": None,
                   "dropped_last_offset": None, "torn_batch_records": 0, "salvageable_records": 0,
                   "lost_ranges": [], "notes": plan.notes}
        from segtool.engine.salvage import recovery_loss  # reading past damage: only when the load cuts

        loss = recovery_loss(plan)
        if loss is None:
            return figures
        figures.update(truncated_file=loss.segment, truncated_at_byte=loss.byte, truncated_at_offset=loss.offset,
                       segments_deleted=len(loss.deleted_segments),
                       first_deleted=loss.deleted_segments[0] if loss.deleted_segments else None,
                       last_deleted=loss.deleted_segments[-1] if loss.deleted_segments else None,
                       dropped_bytes=loss.bytes, dropped_records=loss.records, salvageable_records=loss.salvageable,
                       dropped_first_offset=loss.first_offset, dropped_last_offset=loss.last_offset)
        cut_files = {os.path.normpath(path) for cut in loss.cuts for path in (cut.segment, *cut.deleted_segments)}
        by_path = {os.path.normpath(path): self.verified.get(path, {}) for path in self.logs}
        figures["torn_batch_records"] = sum((by_path.get(path, {}).get("recovery") or {}).get("torn_batch_records")
                                            or 0 for path in cut_files)
        lost = [d for d in self.damaged if os.path.normpath(d["file"]) in cut_files]
        figures["lost_ranges"] = [{"file": d["file"], "first_offset": d["first_offset"], "last_offset": d["last_offset"],
                                   "reason": d["reason"]} for d in lost[:self.shares.damaged]]
        return figures

    def _segment(self, number: int, path: str, entry: dict | None) -> None:
        base = offset_from_file_name(path) if has_offset_name(path) else 0
        segment = {"file": path, "base_offset": base, "size": (entry or {}).get("size") or 0,
                   "status": (entry or {}).get("status", "unreadable"), "batches": 0, "records": 0,
                   "first_offset": None, "last_offset": None, "first_timestamp": None, "last_timestamp": None,
                   "valid_bytes": None, "bytes_lost": None}
        self.segments.append(segment)
        if entry is None or entry["status"] in ("unreadable", "skipped"):
            self.notes.append(f"{path}: not drawn ({(entry or {}).get('status', 'not verified')})")
            return
        recovery = entry.get("recovery") or {}
        segment["valid_bytes"], segment["bytes_lost"] = recovery.get("valid_bytes"), recovery.get("bytes_lost")
        buf = open_buffer(path)
        start_bucket = len(self.buckets["segment"])
        truncated_at = recovery.get("valid_bytes") if recovery.get("bytes_lost") else None
        truncation_offset = None
        offset_before = None  # the last offset framed before the truncation point
        helper = None
        if len(buf) >= PARALLEL_MIN_BYTES and (os.cpu_count() or 1) > 1 and hasattr(os, "fork"):
            helper = ChecksumHelper(buf)  # checksums on the other core, as verify's recovery pass shares them
        index = 0
        try:
            for cols in self._framed(buf, path, helper):
                if truncated_at is not None:
                    before = cols.position < truncated_at
                    if before.any():
                        offset_before = max(int(cols.last[before].max()), offset_before or 0)
                    hit = np.flatnonzero(cols.position == truncated_at)
                    if hit.size and truncation_offset is None:
                        truncation_offset = int(cols.base[hit[0]])
                self._add(cols, number, index, buf, path)
                index += len(cols.base)
        finally:
            if helper is not None:
                helper.close()
        segment["batches"] = index
        taken = slice(start_bucket, len(self.buckets["segment"]))
        if index:
            b = self.buckets
            segment["records"] = int(sum(b["records"][taken]))
            # verify's figure where it has one: a legacy compressed wrapper's first offset is its first inner
            # message's (AbstractLegacyRecordBatch.baseOffset), which the header columns do not hold
            segment["first_offset"] = entry.get("first_offset") if entry.get("first_offset") is not None \
                else int(min(b["first_offset"][taken]))
            segment["last_offset"] = int(max(b["last_offset"][taken]))
            stamps = [t for t in b["create_min"][taken] if t >= 0]
            segment["first_timestamp"] = min(stamps) if stamps else None
            stamps = [max(c, a) for c, a in zip(b["create_max"][taken], b["log_append"][taken]) if max(c, a) >= 0]
            segment["last_timestamp"] = max(stamps) if stamps else None
        if truncated_at is not None:
            self._damage(buf, path, truncated_at, base if offset_before is None else offset_before + 1)
            if truncation_offset is None:
                truncation_offset = next((d["first_offset"] for d in self.damaged if d["file"] == path), None)
            if self.truncation is None:
                self.truncation = {"file": path, "byte_offset": truncated_at, "offset": truncation_offset,
                                   "reason": recovery.get("stop_reason")}

    def _framed(self, buf, path: str, helper):
        """Columns of every framed batch, chunk by chunk, as verify's recovery pass frames them."""
        scan = HeaderScan(buf, path, helper)
        try:
            for headers in scan:
                if headers.regular:
                    yield _Columns.of_headers(headers)
                    continue
                batches, reading = [], headers.batches()
                try:
                    for batch in reading:
                        batches.append(batch)
                except CorruptData:  # framing breaks inside the chunk: the batches before it count
                    if batches:
                        yield _Columns.of_batches(batches, path)
                    raise
                yield _Columns.of_batches(batches, path)
        except CorruptData:
            pass  # verify reports the broken framing; the damaged range is read from the recovery point

    def _damage(self, buf, path: str, position: int, next_offset: int) -> None:
        # imported here: reading past damage loads the RocketMQ layouts too, which a clean partition never needs
        from segtool.engine.salvage import DamagedRange, kafka_pieces

        for piece in kafka_pieces(buf, path, base_offset=next_offset, start=position):
            if isinstance(piece, DamagedRange):
                self.damaged.append({"file": path, "first_byte": piece.first_byte, "last_byte": piece.last_byte,
                                     "reason": piece.reason, "first_offset": piece.first_offset,
                                     "last_offset": piece.last_offset, "physical_offset": None})

    def _add(self, cols: _Columns, segment: int, index: int, buf, path: str) -> None:
        n = len(cols.base)
        # buckets: consecutive batches of this segment, `per_bucket` at a time
        which = (index + np.arange(n)) // self.per_bucket
        first_bucket = index // self.per_bucket
        count = int(which[-1]) - first_bucket + 1
        local = which - first_bucket
        b = self.buckets
        # the previous chunk's last bucket may continue in this one
        continuing = b["segment"] and b["segment"][-1] == segment and index % self.per_bucket != 0
        offset = len(b["segment"]) - (1 if continuing else 0)
        # the batches of a bucket are consecutive: each reduction runs over slices
        starts = np.flatnonzero(np.concatenate(([True], local[1:] != local[:-1])))
        sums = {name: np.add.reduceat(values, starts) for name, values in
                (("batches", np.ones(n, dtype=np.int64)), ("records", cols.records), ("bytes", cols.size))}
        create_min = np.minimum.reduceat(np.where(cols.create_ts >= 0, cols.create_ts, _NEVER), starts)
        create_min[create_min == _NEVER] = -1
        create_max = np.maximum.reduceat(cols.create_ts, starts)
        appended = (cols.attributes & _LOG_APPEND_TIME) != 0
        log_append = np.maximum.reduceat(np.where(appended, cols.max_ts, -1), starts)
        first_offset = np.minimum.reduceat(cols.base, starts)
        last_offset = np.maximum.reduceat(cols.last, starts)
        first_position = cols.position[starts]
        new = {"segment": [segment] * count, "first_offset": first_offset.tolist(),
               "last_offset": last_offset.tolist(), "first_position": first_position.tolist(),
               "batches": sums["batches"].tolist(), "records": sums["records"].tolist(),
               "bytes": sums["bytes"].tolist(), "create_min": create_min.tolist(),
               "create_max": create_max.tolist(), "log_append": log_append.tolist()}
        if continuing:
            for name in ("batches", "records", "bytes"):
                b[name][offset] += new[name].pop(0)
            for name, pick in (("first_offset", min), ("first_position", min), ("last_offset", max),
                               ("create_max", max), ("log_append", max)):
                b[name][offset] = pick(b[name][offset], new[name].pop(0))
            earlier, now = b["create_min"][offset], new["create_min"].pop(0)
            b["create_min"][offset] = min(t for t in (earlier, now) if t >= 0) if max(earlier, now) >= 0 else -1
            new["segment"].pop(0)
        for name, values in new.items():
            b[name].extend(values)
        self.log_append_batches += int(appended.sum())
        self._events(cols)
        self._totals(cols)
        if (cols.attributes & _TRANSACTIONAL).any():
            self._transactions(cols, buf, path)

    def _events(self, cols: _Columns) -> None:
        """Out-of-order and future timestamps, offset gaps: vectorised over the chunk."""
        ts = cols.max_ts
        running = np.maximum.accumulate(np.concatenate(([self.running_max], np.maximum(ts, -1))))
        late = np.flatnonzero((ts >= 0) & (ts < running[:-1]))
        self._note_events(self.out_of_order, late, cols, running[:-1])
        self.running_max = int(running[-1])
        ahead = np.flatnonzero(ts > self.now_ms)
        self._note_events(self.future, ahead, cols, np.full(len(ts), self.now_ms))
        previous = np.concatenate(([self.previous_last if self.previous_last is not None else -2], cols.last[:-1]))
        gap = cols.base > previous + 1
        if self.previous_last is None:
            gap[0] = False
        where = np.flatnonzero(gap)
        if where.size:
            self.gaps["count"] += int(where.size)
            self.gaps["offsets_missing"] += int((cols.base[where] - previous[where] - 1).sum())
            room = EVENTS_SHOWN - len(self.gaps["shown"])
            for i in where[:max(room, 0)].tolist():
                self.gaps["shown"].append({"first_offset": int(previous[i] + 1), "last_offset": int(cols.base[i] - 1)})
        self.previous_last = int(cols.last[-1])

    def _note_events(self, events: dict, where, cols: _Columns, reference) -> None:
        events["count"] += int(where.size)
        room = EVENTS_SHOWN - len(events["shown"])
        for i in where[:max(room, 0)].tolist():
            events["shown"].append({"offset": int(cols.base[i]), "timestamp": int(cols.max_ts[i]),
                                    "reference": int(reference[i])})

    def _totals(self, cols: _Columns) -> None:
        codecs = cols.attributes & 0x07
        for codec in np.unique(codecs).tolist():
            chosen = codecs == codec
            figures = self.codecs.setdefault(codec, [0, 0, 0])
            figures[0] += int(chosen.sum())
            figures[1] += int(cols.records[chosen].sum())
            figures[2] += int(cols.size[chosen].sum())
        self.sizes += np.bincount(np.searchsorted(SIZE_BIN_EDGES, cols.size, side="right") - 1,
                                  minlength=len(SIZE_BIN_EDGES))[:len(SIZE_BIN_EDGES)]
        pids = cols.producer_id
        if (pids == pids[0]).all():  # the usual chunk: one producer (or none, -1)
            self._producer(int(pids[0]), len(pids), int(cols.records.sum()), int(cols.size.sum()),
                           int(cols.base.min()), int(cols.last.max()),
                           bool((cols.attributes & _TRANSACTIONAL).any()), np.unique(cols.producer_epoch).tolist())
            return
        for pid in np.unique(pids).tolist():
            chosen = pids == pid
            self._producer(pid, int(chosen.sum()), int(cols.records[chosen].sum()), int(cols.size[chosen].sum()),
                           int(cols.base[chosen].min()), int(cols.last[chosen].max()),
                           bool((cols.attributes[chosen] & _TRANSACTIONAL).any()),
                           np.unique(cols.producer_epoch[chosen]).tolist())

    def _producer(self, pid: int, batches: int, records: int, size: int, first: int, last: int,
                  transactional: bool, epochs: list[int]) -> None:
        figures = self.producers.get(pid)
        if figures is None:
            figures = self.producers[pid] = {"producer_id": pid, "producer_epochs": set(), "transactional": False,
                                             "batches": 0, "records": 0, "bytes": 0, "first_offset": first,
                                             "last_offset": last}
        figures["batches"] += batches
        figures["records"] += records
        figures["bytes"] += size
        figures["transactional"] |= transactional
        figures["first_offset"] = min(figures["first_offset"], first)
        figures["last_offset"] = max(figures["last_offset"], last)
        figures["producer_epochs"].update(epochs)

    def _transactions(self, cols: _Columns, buf, path: str) -> None:
        """Committed and aborted ranges: each producer's first data offset to its marker."""
        attributes = cols.attributes
        for i in np.flatnonzero(attributes & _TRANSACTIONAL).tolist():
            pid = int(cols.producer_id[i])
            if not attributes[i] & _CONTROL:
                self.open_txns.setdefault(pid, int(cols.base[i]))
                continue
            try:
                records = batch_records(batch_at(buf, int(cols.position[i]), path), path)
            except CorruptData:
                continue
            marker = control_record_type(records[0])[1] if records else None
            if marker not in ("COMMIT", "ABORT"):
                continue
            first = self.open_txns.pop(pid, None)
            if first is None:
                self.txn["empty"] += 1
                continue
            self._transaction(pid, first, int(cols.last[i]), "commit" if marker == "COMMIT" else "abort")

    def _transaction(self, pid: int, first: int, last: int, outcome: str) -> None:
        self.txn[{"commit": "committed", "abort": "aborted", "open": "open"}[outcome]] += 1
        if len(self.txn["shown"]) < EVENTS_SHOWN:
            self.txn["shown"].append({"producer_id": pid, "first_offset": first, "last_offset": last,
                                      "outcome": outcome})

    # -- the figures ----------------------------------------------------------------------------

    def _result(self) -> ReportPartition:
        b = self.buckets
        topic, partition = self.partition.topic_partition
        create_min = np.array(b["create_min"], dtype=np.int64)
        latest = np.maximum(np.array(b["create_max"], dtype=np.int64), np.array(b["log_append"], dtype=np.int64))
        stamped = create_min[create_min >= 0]
        transactions = self.txn["committed"] + self.txn["aborted"] + self.txn["open"]
        for total, what in ((self.out_of_order["count"], "timestamps below an earlier batch's"),
                            (self.future["count"], "timestamps after the report's reference time"),
                            (self.gaps["count"], "offset gaps"), (transactions, "transactions")):
            if total > EVENTS_SHOWN:
                self.notes.append(f"{total} {what}: the first {EVENTS_SHOWN} are listed and drawn")
        offset_index, time_index = self._index_points()
        startup = self._startup()
        if startup is not None:
            self._truncation_from(startup)
        figures: ReportPartition = {
            "directory": self.directory,
            "topic": topic,
            "partition": partition,
            "segments": self._segment_rows(),
            "segments_total": len(self.segments),
            "batches": int(sum(b["batches"])),
            "records": int(sum(b["records"])),
            "bytes": int(sum(b["bytes"])),
            "first_offset": min(b["first_offset"]) if b["first_offset"] else None,
            "last_offset": max(b["last_offset"]) if b["last_offset"] else None,
            "first_timestamp": int(stamped.min()) if stamped.size else None,
            "last_timestamp": int(latest.max()) if latest.size and latest.max() >= 0 else None,
            "log_append_time_batches": self.log_append_batches,
            "timeline": {
                "batches_per_bucket": self.per_bucket, "segment": b["segment"], "first_offset": b["first_offset"],
                "last_offset": b["last_offset"], "first_position": b["first_position"], "batches": b["batches"],
                "records": b["records"], "bytes": b["bytes"],
                "create_time_min": _none_below_zero(create_min),
                "create_time_max": _none_below_zero(np.array(b["create_max"], dtype=np.int64)),
                "log_append_time": _none_below_zero(np.array(b["log_append"], dtype=np.int64)),
            },
            "out_of_order": self.out_of_order,
            "future": self.future,
            "gaps": self.gaps,
            "transactions": self.txn,
            "damaged": self.damaged[:self.shares.damaged],
            "damaged_count": len(self.damaged),
            "damaged_bins": self._damaged_bins(),
            "truncation": self.truncation,
            "startup": startup,
            "offset_index": offset_index,
            "time_index": time_index,
            "rates": self._rates(latest),
            "batch_sizes": {"bin_edges": SIZE_BIN_EDGES, "batches": self.sizes.tolist()},
            "codecs": [{"codec": CODEC_NAMES.get(codec, f"unknown({codec})"), "batches": f[0], "records": f[1],
                        "bytes": f[2]} for codec, f in sorted(self.codecs.items())],
            "producers": self._producers(),
            "producer_count": len(self.producers),
            "findings": self._findings(),
            "replica_set": None,  # set by _name_copies once the replica sets are known
            "broker": None,
            "notes": self.notes,
        }
        return figures

    def _truncation_from(self, startup: dict) -> None:
        """The cut of the startup plan (verify's per-file view stands when the plan truncates nothing)."""
        if startup["truncated_file"] is None:
            self.truncation = None
            return
        file = startup["truncated_file"]
        reason = (self.verified.get(file, {}).get("recovery") or {}).get("stop_reason")
        self.truncation = {"file": file, "byte_offset": startup["truncated_at_byte"],
                           "offset": startup["truncated_at_offset"], "reason": reason}

    def _damaged_bins(self) -> list[dict]:
        """Damaged ranges beyond those drawn one by one, merged per bin along the offsets."""
        if len(self.damaged) <= self.shares.damaged:
            return []
        self.notes.append(f"{len(self.damaged)} damaged ranges: the first {self.shares.damaged} are listed, every one "
                          f"is drawn in {self.shares.bins} bins along the offsets")
        placed = [d for d in self.damaged if d["first_offset"] is not None]
        if not placed:
            return []
        low = min(d["first_offset"] for d in placed)
        high = max(d["first_offset"] for d in placed)
        width = max(1, -(-(high - low + 1) // self.shares.bins))
        bins: dict[int, dict] = {}
        for d in placed:
            last = d["last_offset"] if d["last_offset"] is not None else d["first_offset"]
            entry = bins.setdefault((d["first_offset"] - low) // width, {"first_offset": d["first_offset"],
                                                                          "last_offset": last, "ranges": 0,
                                                                          "bytes": 0})
            entry["first_offset"] = min(entry["first_offset"], d["first_offset"])
            entry["last_offset"] = max(entry["last_offset"], last)
            entry["ranges"] += 1
            entry["bytes"] += d["last_byte"] - d["first_byte"] + 1
        return [bins[key] for key in sorted(bins)]

    def _segment_rows(self) -> list[dict]:
        """One row per segment, or, beyond the page's share, runs of consecutive segments with their sums."""
        rows = self.shares.segment_rows
        if len(self.segments) <= rows:
            return [{**s, "segments": 1, "last_file": s["file"]} for s in self.segments]
        per_row = -(-len(self.segments) // rows)
        self.notes.append(f"{len(self.segments)} segments: the segments table and lane show runs of up to {per_row} "
                          f"consecutive segments (sums, extremes, each status counted)")
        collapsed = []
        for start in range(0, len(self.segments), per_row):
            run = self.segments[start:start + per_row]

            def extreme(name: str, pick):
                values = [s[name] for s in run if s[name] is not None]
                return pick(values) if values else None

            def counted(name: str) -> str:
                counts: dict[str, int] = {}
                for s in run:
                    counts[s.get(name, "-")] = counts.get(s.get(name, "-"), 0) + 1
                return ", ".join(f"{value} {n}" for value, n in sorted(counts.items()))

            lost = [s["bytes_lost"] for s in run if s["bytes_lost"] is not None]
            collapsed.append({"file": run[0]["file"], "last_file": run[-1]["file"], "segments": len(run),
                              "base_offset": run[0]["base_offset"], "size": sum(s["size"] for s in run),
                              "status": counted("status"), "batches": sum(s["batches"] for s in run),
                              "records": sum(s["records"] for s in run),
                              "first_offset": extreme("first_offset", min), "last_offset": extreme("last_offset", max),
                              "first_timestamp": extreme("first_timestamp", min),
                              "last_timestamp": extreme("last_timestamp", max),
                              "valid_bytes": None, "bytes_lost": sum(lost) if lost else None,
                              **({"at_startup": counted("at_startup")} if "at_startup" in run[0] else {})})
        return collapsed

    def _rates(self, latest: np.ndarray) -> dict:
        """Records and bytes per second, the buckets binned by their latest timestamp."""
        b = self.buckets
        stamped = latest >= 0
        if not stamped.any():
            return {"bucket_ms": 0, "start": [], "records_per_second": [], "bytes_per_second": []}
        times = latest[stamped]
        low, high = int(times.min()), int(times.max())
        bucket_ms = max(MIN_RATE_BUCKET_MS, -(-(high - low + 1) // RATE_BUCKETS))
        low -= low % bucket_ms
        bins = (times - low) // bucket_ms
        count = int(bins.max()) + 1
        records = np.bincount(bins, weights=np.array(b["records"])[stamped], minlength=count)
        sizes = np.bincount(bins, weights=np.array(b["bytes"])[stamped], minlength=count)
        seconds = bucket_ms / 1000
        if self.per_bucket > 1:
            self.notes.append("rates: each point's batches are counted at the point's latest timestamp")
        return {"bucket_ms": bucket_ms, "start": (low + np.arange(count) * bucket_ms).tolist(),
                "records_per_second": (records / seconds).round(3).tolist(),
                "bytes_per_second": (sizes / seconds).round(3).tolist()}

    def _producers(self) -> list[dict]:
        ranked = sorted(self.producers.values(), key=lambda f: (-f["records"], f["producer_id"]))
        if len(ranked) > PRODUCERS_SHOWN:
            self.notes.append(f"{len(ranked)} producer ids: the {PRODUCERS_SHOWN} with most records are shown")
        return [{**f, "producer_epochs": sorted(f["producer_epochs"])} for f in ranked[:PRODUCERS_SHOWN]]

    def _index_points(self) -> tuple[dict, dict]:
        offsets, positions, time_offsets, stamps = [], [], [], []
        loaded = {os.path.normpath(s.log_path): s for s in self.view.segments} if self.view is not None else {}
        for path in self.logs:
            if not has_offset_name(path):
                continue
            segment = loaded.get(os.path.normpath(path)) or Segment(path)
            # copies, not views: a view keeps its index's mapping (and file descriptor) open to the end
            try:
                index = segment.offset_index
                if index is not None and index.entries:
                    offsets.append(index.offsets)
                    positions.append(np.array(index.positions, dtype=np.int64))
                index = segment.time_index
                if index is not None and index.entries:
                    time_offsets.append(index.offsets)
                    stamps.append(np.array(index.timestamps, dtype=np.int64))
            except (SegtoolError, OSError, ValueError) as exc:
                self.notes.append(f"{path}: its indexes are not drawn ({exc})")
            finally:
                segment.release()
        return _points(offsets, positions, "offset index", self.notes), _points(time_offsets, stamps, "time index",
                                                                                 self.notes)

    def _findings(self) -> ReportFindings:
        b = self.buckets
        segment_of = {path: number for number, path in enumerate(self.logs)}
        by_segment: dict[int, list[int]] = {}
        for i, number in enumerate(b["segment"]):
            by_segment.setdefault(number, []).append(i)
        stems = {sibling(path, ""): path for path in self.logs if path.endswith(LOG)}
        damage_at = {(d["file"], d["first_byte"]): d["first_offset"] for d in self.damaged
                     if d["first_offset"] is not None}
        positions_of = {number: [b["first_position"][i] for i in buckets] for number, buckets in by_segment.items()}

        def place(item: dict, problem: Finding) -> tuple[int | None, str]:
            if problem.offset is not None:
                return problem.offset, "offset"
            path = item["path"]
            number = segment_of.get(path)
            if number is not None and problem.byte_offset is not None:
                lost = damage_at.get((path, problem.byte_offset))  # damage where framing ends: the first offset lost
                if lost is not None:
                    return lost, "byte_offset"
                buckets = by_segment.get(number, [])
                positions = positions_of.get(number, [])
                k = bisect.bisect_right(positions, problem.byte_offset) - 1
                if k >= 0:
                    return b["first_offset"][buckets[k]], "byte_offset"
            if problem.byte_offset is not None and file_format(item.get("kind", FileKind.UNKNOWN)).index_view is not None:
                try:
                    index = kafka_index.open_index(path)
                    slot = problem.byte_offset // index.entry_size
                    if 0 <= slot < index.entries:
                        return int(index.entry(slot).offset), "byte_offset"
                except (SegtoolError, OSError, ValueError):
                    pass  # the index's own finding says why; it is placed at its segment
            if has_offset_name(path):
                return offset_from_file_name(path), "file"
            log = stems.get(sibling(path, ""))
            if log is not None:
                return offset_from_file_name(log), "file"
            first = min(b["first_offset"]) if b["first_offset"] else None
            return first, "file" if first is not None else "none"

        return _findings((self.verified[path] for path in self.files if path in self.verified), place, self.shares)


def _points(offsets: list, values: list, what: str, notes: list[str]) -> dict:
    if not offsets:
        return {"entries": 0, "offsets": [], "values": [], "sampled": False}
    offsets, values = np.concatenate(offsets), np.concatenate(values)
    chosen = _sample(len(offsets), INDEX_POINTS)
    if len(chosen) < len(offsets):
        notes.append(f"{len(offsets)} {what} entries: {len(chosen)} of them drawn, evenly spread")
    return {"entries": len(offsets), "offsets": offsets[chosen].astype(np.int64).tolist(),
            "values": values[chosen].astype(np.int64).tolist(), "sampled": len(chosen) < len(offsets)}


# -- RocketMQ ---------------------------------------------------------------------------------


def _store_figures(root: str, commitlogs: list[str], files: list[str], verified: dict,
                   shares: _Shares) -> ReportStore:
    from segtool.engine.salvage import DamagedRange, commitlog_pieces
    from segtool.rocketmq import store_files as rmq

    notes: list[str] = []
    stamps, queue_of, sizes, dropped = [], [], [], []
    queues: dict[tuple[str, int], dict] = {}
    coverage, damaged = [], []
    truncation = _store_truncation(commitlogs, verified)
    cut = _NEVER if truncation is None else truncation["offset"]
    for path in commitlogs:
        name = os.path.basename(path)
        start = rocketmq_names.mapped_file_offset(name)
        entry = verified.get(path, {})
        messages = 0
        data_end = 0
        try:
            buf = open_buffer(path)
            for piece in commitlog_pieces(buf, file_from_offset=start, file=name, path=path, digests=False,
                                          decompress=False):
                if isinstance(piece, DamagedRange):
                    damaged.append({"file": path, "first_byte": piece.first_byte, "last_byte": piece.last_byte,
                                    "reason": piece.reason, "first_offset": piece.first_offset,
                                    "last_offset": piece.last_offset, "physical_offset": piece.physical_offset})
                elif isinstance(piece, rmq.CommitLogEnd):
                    data_end = piece.data_end
                else:
                    messages += 1
                    key = (piece["topic"], piece["queueId"])
                    queue = queues.get(key)
                    if queue is None:
                        queue = queues[key] = {"topic": key[0], "queue_id": key[1], "messages": 0, "bytes": 0,
                                               "first_timestamp": None, "last_timestamp": None,
                                               "first_queue_offset": None, "last_queue_offset": None,
                                               "number": len(queues)}
                    stamp = piece["storeTimestamp"]
                    queue["messages"] += 1
                    queue["bytes"] += piece["totalSize"]
                    queue["first_timestamp"] = stamp if queue["first_timestamp"] is None else min(
                        queue["first_timestamp"], stamp)
                    queue["last_timestamp"] = stamp if queue["last_timestamp"] is None else max(
                        queue["last_timestamp"], stamp)
                    offset = piece["queueOffset"]
                    queue["first_queue_offset"] = offset if queue["first_queue_offset"] is None else min(
                        queue["first_queue_offset"], offset)
                    queue["last_queue_offset"] = offset if queue["last_queue_offset"] is None else max(
                        queue["last_queue_offset"], offset)
                    stamps.append(stamp)
                    dropped.append(start + piece["fileOffset"] >= cut)
                    queue_of.append(queue["number"])
                    sizes.append(piece["totalSize"])
        except SegtoolError as exc:
            notes.append(f"{path}: read up to an error ({exc.message})")
        coverage.append({"file": path, "start_offset": start, "size": entry.get("size") or 0,
                         "data_end_offset": start + data_end, "messages": messages,
                         "status": entry.get("status", "unreadable")})
    index_files = []
    for path in files:
        entry = verified.get(path, {})
        if entry.get("kind") != FileKind.ROCKETMQ_INDEXFILE:
            continue
        header = entry.get("header") or {}
        index_files.append({"file": path, "begin_timestamp": header.get("begin_timestamp"),
                            "end_timestamp": header.get("end_timestamp"),
                            "begin_phy_offset": header.get("begin_phy_offset"),
                            "end_phy_offset": header.get("end_phy_offset"),
                            "index_count": header.get("index_count"), "status": entry.get("status", "unreadable")})
    ordered = sorted(queues.values(), key=lambda q: (q["topic"], q["queue_id"]))
    timeline = _store_timeline(np.array(stamps, dtype=np.int64), np.array(queue_of, dtype=np.int64),
                               np.array(dropped, dtype=bool), ordered, notes)
    for queue in ordered:
        queue.pop("number")
    all_stamps = [q["first_timestamp"] for q in ordered] + [q["last_timestamp"] for q in ordered]
    progress = _consumer_progress(root, ordered, notes)

    def place(item: dict, problem: Finding) -> tuple[int | None, str]:
        return _store_place(item, problem, truncation)

    return {
        "root": str(root), "messages": len(stamps), "bytes": int(sum(sizes)),
        "first_timestamp": min(all_stamps) if all_stamps else None,
        "last_timestamp": max(all_stamps) if all_stamps else None,
        "queues": ordered, "timeline": timeline, "commitlog": coverage, "index_files": index_files,
        "damaged": damaged[:shares.damaged], "damaged_count": len(damaged), "truncation": truncation,
        "consumer_progress": progress,
        "findings": _findings((verified[path] for path in files if path in verified), place, shares),
        "replica_set": None,  # set by _name_copies once the replica sets are known
        "broker": None,
        "notes": notes,
    }


def _store_timeline(stamps: np.ndarray, queue_of: np.ndarray, dropped: np.ndarray, queues: list[dict],
                    notes: list[str]) -> dict:
    """Messages per queue and time bucket; those past the recovery cut counted apart, and the store
    time of the last message recovery keeps (None: no cut, or nothing kept)."""
    if not stamps.size:
        return {"bucket_ms": 0, "start": [], "series": [], "dropped_by_recovery": [], "cut_timestamp": None}
    low, high = int(stamps.min()), int(stamps.max())
    bucket_ms = max(1000, -(-(high - low + 1) // STORE_TIME_BUCKETS))
    low -= low % 1000
    bins = (stamps - low) // bucket_ms
    count = int(bins.max()) + 1
    ranked = sorted(queues, key=lambda q: -q["messages"])
    shown = sorted(ranked[:QUEUE_SERIES], key=lambda q: (q["topic"], q["queue_id"]))
    series = []
    for queue in shown:
        chosen = queue_of == queue["number"]
        series.append({"topic": queue["topic"], "queue_id": queue["queue_id"],
                       "messages": np.bincount(bins[chosen], minlength=count).tolist()})
    rest = ranked[QUEUE_SERIES:]
    if rest:
        chosen = np.isin(queue_of, [q["number"] for q in rest])
        series.append({"topic": f"{len(rest)} other queues", "queue_id": None,
                       "messages": np.bincount(bins[chosen], minlength=count).tolist()})
        notes.append(f"{len(queues)} queues: the {QUEUE_SERIES} with most messages are drawn one by one, "
                     f"the other {len(rest)} together")
    kept = stamps[~dropped]
    return {"bucket_ms": bucket_ms, "start": (low + np.arange(count) * bucket_ms).tolist(), "series": series,
            "dropped_by_recovery": np.bincount(bins[dropped], minlength=count).tolist(),
            "cut_timestamp": int(kept[-1]) if dropped.any() and kept.size else None}


def _store_truncation(commitlogs: list[str], verified: dict) -> dict | None:
    """Where RocketMQ's CommitLog recovery cuts: the first file whose recovery loses bytes or messages, and
    what it drops (verify's figures: engine.salvage.store_recovery_loss, file by file)."""
    recoveries = [verified.get(path, {}).get("recovery") or {} for path in commitlogs]
    for path, recovery in zip(commitlogs, recoveries):
        if recovery.get("bytes_lost") or recovery.get("messages_lost"):
            name = os.path.basename(path)
            start = rocketmq_names.mapped_file_offset(name)
            return {"file": path, "byte_offset": recovery["valid_bytes"], "offset": start + recovery["valid_bytes"],
                    "reason": recovery.get("stop_message") or recovery.get("stop_reason"),
                    **{figure: sum(r.get(figure) or 0 for r in recoveries)
                       for figure in ("messages_lost", "messages_salvageable", "messages_gone")}}
    return None


def _store_place(item: dict, problem: Finding, truncation: dict | None) -> tuple[int | None, str]:
    """A store finding's physical offset: its own, its CommitLog byte, its ConsumeQueue unit, its file's."""
    from segtool.rocketmq import store_files as rmq

    if problem.offset is not None:
        return problem.offset, "offset"
    kind, path = item.get("kind"), item["path"]
    name = os.path.basename(path)
    if kind == FileKind.ROCKETMQ_COMMITLOG and rocketmq_names.is_mapped_file_name(name):
        return int(name) + (problem.byte_offset or 0), "byte_offset" if problem.byte_offset is not None else "file"
    if kind == FileKind.ROCKETMQ_CONSUMEQUEUE and problem.byte_offset is not None:
        units = rmq.consumequeue_units(open_buffer(path))
        unit = min(problem.byte_offset // rmq.CQ_UNIT_SIZE, len(units) - 1)
        while unit >= 0 and units["size"][unit] <= 0:  # an unwritten unit: the last one written before it
            unit -= 1
        if unit >= 0:
            return int(units["commitLogOffset"][unit]), "consume_queue_unit"
    if kind == FileKind.ROCKETMQ_INDEXFILE:
        header = item.get("header") or {}
        begin = header.get("begin_phy_offset")
        if problem.kind is FindingKind.BEYOND_RECOVERY_POINT and truncation is not None:
            # its entries point past the cut: drawn there, not at the file's first (kept) offset
            return max(truncation["offset"], header.get("end_phy_offset") or 0), "file"
        if begin is not None:
            return begin, "file"
    if truncation is not None:
        return truncation["offset"], "file"
    return 0, "file"


def _consumer_progress(root: str, queues: list[dict], notes: list[str]) -> list[dict] | None:
    """Committed offsets of config/consumerOffset.json (or its .bak, as the broker loads them) against
    the end of each queue in the CommitLog."""
    from segtool.rocketmq.config import load_config

    config = os.path.join(root, "config")
    loaded = load_config(config, "consumerOffset.json")
    if loaded.loaded_from is None:
        why = "no config/consumerOffset.json" if not loaded.file.exists else f"neither {loaded.file.path} nor " \
            f"its .bak gives committed offsets ({loaded.file.error or 'empty'})"
        notes.append(f"consumer progress: not shown ({why})")
        return None
    ends = {(q["topic"], q["queue_id"]): q["last_queue_offset"] for q in queues}
    progress = []
    for (topic, group), offsets in sorted(loaded.decoded.by_topic_group().items()):
        for queue_id, committed in sorted(offsets.items()):
            end = ends.get((topic, queue_id))
            end = None if end is None else end + 1
            progress.append({"group": group, "topic": topic, "queue_id": queue_id, "committed_offset": committed,
                             "max_queue_offset": end, "lag": None if end is None else end - committed})
    if not progress:
        notes.append(f"consumer progress: {os.path.join(config, 'consumerOffset.json')} holds no committed offset"
                     + (" (read from its .bak)" if loaded.loaded_from == "backup" else ""))
    return progress
