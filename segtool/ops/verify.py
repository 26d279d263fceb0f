"""`verify`: check files the way Kafka and RocketMQ do, and more; predict what recovery would cut.

Each file gets ``{"path", "size", "sha256", "kind", "status", "problems", ...}``;
a problem is a ``segtool.findings.Finding`` (printed as ``{"kind", "severity",
"byte_offset", "offset", "message"}``) whose kind fixes its severity: "error"
makes the file's status "problems" and "info" does not (offset gaps, which
compaction makes legal, for example).  Each file is checked by its kind's format
(``ops.file_formats``: ``verify_kafka``, ``verify_rocketmq``); the checks across a
partition's files are here.
"""

from __future__ import annotations

import os

from segtool.source import sha256_beside
from segtool.engine.inventory import inventory
from segtool.errors import SegtoolError, UnreadableInput
from segtool.findings import FindingKind, finding, has_errors
from segtool.engine.detect import detect
from segtool.formats.file_kinds import FileKind
from segtool.kafka.names import INDEX, LOG, SWAP, offset_from_file_name, sibling
from segtool.ops.file_formats import CheckOptions, file_format
from segtool.ops.output_schema import VerifyReport
from segtool.ops.progress import RunProgress


def verify_file(path: str, deep: bool = False, progress=None, hash_input: bool = True,
                parallel: bool = False, store_contexts=None) -> dict:
    """One file's entry of the report.  ``store_contexts`` (``verify_rocketmq.StoreContexts``) lets
    the files of one RocketMQ store share what they have in common."""
    detected = detect(path)
    result = {"path": path, "kind": detected.kind}
    hasher = None
    try:
        result["size"] = os.path.getsize(path)
        if hash_input:
            # the hash runs on the other core while the file is checked (in a child process when
            # this command has the machine); it bounds a shallow check, which then takes no
            # checksum helper to compete with it
            hasher = sha256_beside(path, fork=parallel)
            parallel = parallel and deep
        result.update(file_format(detected.kind).check(detected, CheckOptions(deep, progress, parallel, store_contexts)))
        if hasher is not None:
            result["sha256"] = hasher.result()
        if result.get("status") == "skipped":
            return result
    except UnreadableInput as exc:
        result.update(status="unreadable", problems=[finding(FindingKind.UNREADABLE, exc.offset, exc.message)])
        return result
    except OSError as exc:  # e.g. a symlink loop or a file removed while we read
        result.update(status="unreadable", problems=[finding(FindingKind.UNREADABLE, None, exc.strerror or str(exc))])
        return result
    except SegtoolError as exc:
        result.setdefault("problems", []).append(finding(FindingKind.UNREADABLE, exc.offset, exc.message))
        result["status"] = "unreadable"
        return result
    result["status"] = "problems" if has_errors(result["problems"]) else "ok"
    return result


def unreadable_entry(entry) -> dict:
    """The report item of a walked entry that cannot be read (dangling symlink, loop, FIFO ...)."""
    return {"path": entry.path, "kind": FileKind.UNKNOWN, "status": "unreadable",
            "problems": [finding(FindingKind.UNREADABLE, None, entry.unreadable)]}


class _StoreContextsOnFirstUse:
    """``verify_rocketmq``'s store contexts, made at the run's first RocketMQ file: a Kafka-only run never
    imports the RocketMQ layouts (numpy, construct), so its first file's hashing starts sooner."""

    def __init__(self):
        self._contexts = None

    def get(self, root, commitlog_dir=None):
        if self._contexts is None:
            from segtool.ops.verify_rocketmq.store import StoreContexts

            self._contexts = StoreContexts()
        return self._contexts.get(root, commitlog_dir)

    def close(self) -> None:
        if self._contexts is not None:
            self._contexts.close()


def verify(paths: list[str], deep: bool = False, progress: RunProgress | None = None,
           hash_inputs: bool = True) -> VerifyReport:
    store_contexts = _StoreContextsOnFirstUse()
    try:
        files = _verify_walk(paths, deep, progress, hash_inputs, store_contexts)
    finally:
        store_contexts.close()
    return summarize(check_partitions(files))


def _verify_walk(paths, deep, progress, hash_inputs, store_contexts) -> list[dict]:
    files = []
    found = inventory(paths)
    if progress is not None:
        progress.plan((entry.path, entry.size) for entry in found.files)
    for entry in found.entries:
        if entry.unreadable is not None:
            files.append(unreadable_entry(entry))
            continue
        path = entry.path
        advance = progress.file(path) if progress is not None else None
        # one file at a time in this process: a helper process may take a share of the checksums
        files.append(verify_file(path, deep, advance, hash_inputs, parallel=True, store_contexts=store_contexts))
    return files


def check_partitions(files: list[dict]) -> list[dict]:
    """The checks across the files of a partition directory (local and distributed verify)."""
    _check_segment_order(files)
    _note_pending_swaps(files)
    _note_missing_indexes(files)
    _note_startup_cuts(files)
    return files


def _note_startup_cuts(files: list[dict]) -> None:
    """What a partition's load drops, on the files it drops it from (``kafka.startup.startup_plan``,
    ``engine.salvage.recovery_loss``): a cut segment's figures are the cut's, and every segment the load
    deletes after it has its records lost, so the files' figures add up to what lookup, inspect, salvage
    and report give for the partition."""
    from segtool.engine.salvage import recovery_loss
    from segtool.kafka.partition import PartitionView
    from segtool.kafka.startup import startup_plan

    partitions: dict[str, dict[str, dict]] = {}
    for item in files:
        if item.get("kind") == FileKind.KAFKA_LOG and item.get("recovery") and item["path"].endswith(LOG):
            partitions.setdefault(os.path.dirname(item["path"]) or ".", {})[os.path.normpath(item["path"])] = item
    for directory, items in partitions.items():
        if not any(item["recovery"]["bytes_lost"] for item in items.values()):
            continue  # no segment here is cut: the load keeps every batch (a missing index aside, noted above)
        try:
            loss = recovery_loss(startup_plan(PartitionView(directory)))
        except SegtoolError:
            continue
        if loss is None:
            continue
        for cut in loss.cuts:
            for number, (path, part) in enumerate(cut.per_segment):
                item = items.get(os.path.normpath(path))
                if item is None:  # a segment of the partition that was not given
                    continue
                recovery = item["recovery"]
                recovery.update(records_lost=part.records, records_salvageable=part.salvageable,
                                records_gone=part.gone)
                if number == 0:
                    recovery["log_end_offset"] = loss.log_end
                    continue
                recovery.update(valid_bytes=0, bytes_lost=item.get("size", recovery["bytes_lost"]))
                item["problems"].append(finding(
                    FindingKind.SEGMENT_DELETED_BY_RECOVERY, 0,
                    f"{cut.action()}: this later segment goes with its {part.records} record(s) "
                    f"({part.salvageable} salvageable, {part.gone} gone)", offset=part.first_offset))
                item["status"] = "problems"


def _note_missing_indexes(files: list[dict]) -> None:
    """A segment without its .index: name the file the broker will look for."""
    for item in files:
        if item.get("kind") == FileKind.KAFKA_LOG and item["path"].endswith(LOG) and item.get("status") != "unreadable":
            index = sibling(item["path"], INDEX)
            if not os.path.exists(index):
                item["problems"].append(finding(
                    FindingKind.MISSING_INDEX, None,
                        f"{index} does not exist: Kafka's LogSegment.sanityCheck throws "
                        "NoSuchFileException when it loads the segment, and the broker rebuilds the index by "
                        "recovering the segment"))


def _note_pending_swaps(files: list[dict]) -> None:
    """A ``.log.swap`` is an interrupted log cleaning or split: say what Kafka makes of it at start."""
    from segtool.kafka.partition import PartitionView

    swaps: dict[str, list[dict]] = {}
    for item in files:
        if item["path"].endswith(LOG + SWAP) and item.get("status") != "unreadable":
            swaps.setdefault(os.path.dirname(item["path"]) or ".", []).append(item)
    for directory, items in swaps.items():
        try:
            notes = PartitionView(directory).notes
        except SegtoolError as exc:
            notes = [f"Kafka could not load the partition to complete the swap: {exc.message}"]
        for item in items:
            item["problems"].extend(finding(FindingKind.PENDING_SWAP, None, note) for note in notes)


def _check_segment_order(files: list[dict]) -> None:
    """Across the segments of a partition: each must start after the previous one's last offset.

    Kafka keeps segments by base offset and never checks this; overlapping
    segments (a bad copy, an interrupted swap) make fetches skip or repeat records.
    """
    by_directory: dict[str, list[dict]] = {}
    for item in files:
        if item.get("kind") == FileKind.KAFKA_LOG and item["path"].endswith(LOG) and item.get("first_offset") is not None:
            by_directory.setdefault(os.path.dirname(item["path"]), []).append(item)
    for segments in by_directory.values():
        segments.sort(key=lambda item: offset_from_file_name(item["path"]))
        for previous, item in zip(segments, segments[1:]):
            if item["first_offset"] <= previous["last_offset"]:
                item["problems"].append(finding(
                    FindingKind.SEGMENTS_OVERLAP, 0,
                        f"its first offset {item['first_offset']} is not above the last offset "
                        f"{previous['last_offset']} of {os.path.basename(previous['path'])}"))
                if item["status"] == "ok":
                    item["status"] = "problems"


def summarize(files: list[dict]) -> dict:
    """The report: every file's result and the counts by status (local and distributed verify)."""
    statuses = [f["status"] for f in files]
    return {
        "files": files,
        "summary": {
            "files": len(files),
            "ok": statuses.count("ok"),
            "problems": statuses.count("problems"),
            "unreadable": statuses.count("unreadable"),
            "skipped": statuses.count("skipped"),
        },
    }


def exit_code(report: dict) -> int:
    """2 when an input is unreadable, 1 for problems or when nothing was recognised, else 0."""
    summary = report["summary"]
    if summary["unreadable"]:
        return 2
    if summary["problems"] or summary["ok"] == 0:
        return 1
    return 0
