"""`inspect`: the inventory of a whole Kafka log dir and the broker's startup plan for it.

The files come from the one inventory (``engine.inventory``), names are parsed by
``kafka.names``, state files by ``kafka.state`` and
``kafka.log_dir``, segments are those ``PartitionView`` loads, and the
plan is ``kafka.startup.plan_partition`` (LogLoader.load on ``recover_segment``,
the recovery ``verify`` predicts with).  Cross-checks between files become
findings (``segtool.findings``).  docs/inspect.md describes the report.
"""

from __future__ import annotations

import os
from collections import defaultdict

from segtool.engine.inventory import Partition, inventory
from segtool.engine.salvage import RecoveryLoss, recovery_loss
from segtool.kafka.partition import PartitionView, Segment
from segtool.kafka.startup import PartitionPlan, plan_partition
from segtool.errors import CorruptData, NothingFound, UnreadableInput
from segtool.findings import Finding, FindingKind, Severity, finding
from segtool.kafka import log_dir as kafka_log_dir
from segtool.kafka import names as kafka_names
from segtool.kafka import state as kafka_state
from segtool.kafka.log import BatchScan
from segtool.kafka.records import batch_records, control_record_type
from segtool.kafka.messages import ApiMessageError
from segtool.kafka.metadata import decode_metadata_record
from segtool.kafka.names import (
    METADATA_TOPIC,
    PRODUCER_SNAPSHOT,
    has_offset_name,
    is_log_file,
    kraft_snapshot_id,
    offset_from_file_name,
    renamed_directory_state,
    topic_partition,
)
from segtool.ops.output_schema import (
    CheckpointEntry,
    InspectedLogDir,
    InspectedPartition,
    InspectedSegment,
    InspectReport,
    KraftSnapshotSummary,
    RecoveredSegment,
    KraftSnapshotPlan,
    StartupPlan,
)
from segtool.source import open_buffer

# LogManager skips this directory: tiered storage's index cache, no partition (RemoteIndexCache.DIR_NAME)
REMOTE_INDEX_CACHE = "remote-log-index-cache"
CHECKPOINT_FIELDS = {
    "recovery-point-offset-checkpoint": "recovery_point",
    "replication-offset-checkpoint": "replication_offset",
    "log-start-offset-checkpoint": "log_start_offset",
    "cleaner-offset-checkpoint": "cleaner_offset",
}
# the checkpoints every hosted partition has an entry in (log start and cleaner offsets are written
# only for logs that need them)
CHECKPOINTS_OF_EVERY_PARTITION = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint")


def _read(path: str) -> bytes:
    return bytes(open_buffer(path))


def inspect(paths: list[str]) -> InspectReport:
    """One report per log dir named."""
    log_dirs = [inspect_log_dir(path) for path in paths]
    partitions = [p for d in log_dirs for p in d["partitions"]]
    problems = [p for d in log_dirs for p in d["problems"]] + [p for part in partitions for p in part["problems"]]
    return {
        "log_dirs": log_dirs,
        "summary": {
            "log_dirs": len(log_dirs),
            "partitions": len(partitions),
            "partitions_recovered": sum(1 for p in partitions if p["plan"]["recovered_segments"]),
            "partitions_truncated": sum(1 for p in partitions if p["plan"]["truncated_at"] is not None),
            "errors": sum(1 for p in problems if p.severity is Severity.ERROR),
            "notes": sum(1 for p in problems if p.severity is not Severity.ERROR),
            "unreadable": sum(len(d["unreadable"]) for d in log_dirs),
        },
    }


def exit_code(report: InspectReport) -> int:
    """2 when a file cannot be read, 1 when a cross-check or the plan found an error or a log dir
    holds nothing a broker writes (nothing found), else 0."""
    if report["summary"]["unreadable"]:
        return 2
    return 1 if report["summary"]["errors"] or any(map(holds_nothing, report["log_dirs"])) else 0


def holds_nothing(log_dir: InspectedLogDir) -> bool:
    """No partition, meta.properties, checkpoint or clean-shutdown marker: not a Kafka log dir."""
    return not (log_dir["partitions"] or log_dir["meta_properties"] or log_dir["checkpoints"]
                or log_dir["clean_shutdown"]["marker_present"])


def _check_log_dir(path: str) -> str:
    if not os.path.exists(path):
        raise UnreadableInput("no such file or directory", path)
    if not os.path.isdir(path):
        raise NothingFound("a file, not a directory: inspect takes a Kafka log dir or a RocketMQ store root", path)
    name = os.path.basename(os.path.normpath(path))
    if topic_partition(name)[1] is not None and any(is_log_file(entry) for entry in os.listdir(path)):
        raise UnreadableInput("a partition directory, not a log dir: inspect its parent", path)
    return os.path.normpath(path)


def _is_directory(entry: os.DirEntry) -> bool:
    """A directory (through links); a link loop or a dangling link is not one (the inventory names it)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def inspect_log_dir(path: str) -> InspectedLogDir:
    root = _check_log_dir(path)
    found = inventory([root])
    by_directory: dict[str, Partition] = {os.path.normpath(p.directory): p for p in found.partitions}
    top_files = [f for f in found.files if os.path.dirname(os.path.normpath(f.path)) == root]
    problems: list[Finding] = []
    meta = _meta_properties(root, problems)
    marker = os.path.join(root, kafka_names.CLEAN_SHUTDOWN)
    clean = os.path.isfile(marker)
    checkpoints, offsets_by_file = _checkpoints(root, problems)
    directories = sorted(entry.name for entry in os.scandir(root) if _is_directory(entry) and entry.name != REMOTE_INDEX_CACHE)
    partitions = []
    for name in directories:
        topic, number = topic_partition(name)
        if number is None:
            problems.append(finding(FindingKind.NOT_A_PARTITION_DIRECTORY, None,
                                    f"{name}: not <topic>-<partition>; Kafka's parseTopicPartitionName throws and "
                                    "the broker does not start"))
            continue
        directory = os.path.join(root, name)
        partitions.append(_inspect_partition(directory, topic, number, by_directory.get(directory), clean,
                                             offsets_by_file))
    _cross_check_checkpoints(partitions, offsets_by_file, problems)
    _cross_check_topic_ids(partitions)
    metadata = [p for p in partitions if p["topic"] == METADATA_TOPIC and p["state"] == "metadata"]
    if metadata:
        _cross_check_metadata_topic_ids(partitions, _metadata_topic_ids(metadata[0]["directory"]))
    if partitions and not clean:
        problems.append(finding(FindingKind.NO_CLEAN_SHUTDOWN_MARKER, None,
                                f"no {kafka_names.CLEAN_SHUTDOWN} in {root}: the broker recovers every partition "
                                "from the segment holding its recovery point on"))
    named = {os.path.join(root, n) for n in (*CHECKPOINT_FIELDS, kafka_names.META_PROPERTIES,
                                             kafka_names.CLEAN_SHUTDOWN)}
    return {
        "path": root,
        "meta_properties": meta,
        "clean_shutdown": {"marker_present": clean,
                           "broker_epoch": kafka_log_dir.clean_shutdown_broker_epoch(_read(marker)) if clean else None},
        "checkpoints": checkpoints,
        "partitions": partitions,
        "files": sorted(entry.name for entry in os.scandir(root) if not _is_directory(entry)),
        "other_files": sorted(f.path for f in top_files if os.path.normpath(f.path) not in named),
        "unreadable": [{"path": f.path, "reason": f.unreadable} for f in found.unreadable],
        "problems": problems,
    }


def _meta_properties(root: str, problems: list[Finding]) -> dict | None:
    path = os.path.join(root, kafka_names.META_PROPERTIES)
    if not os.path.isfile(path):
        return None
    try:
        meta = kafka_log_dir.parse_meta_properties(_read(path), path)
    except CorruptData as exc:
        problems.append(finding(FindingKind.FORMAT, exc.offset, f"{path}: {exc.message}"))
        return None
    return {"version": meta.version, "cluster_id": meta.cluster_id, "node_id": meta.node_id,
            "directory_id": meta.directory_id,
            "other": [{"key": key, "value": value} for key, value in meta.other.items()]}


def _checkpoints(root: str, problems: list[Finding]) -> tuple[list[dict], dict[str, dict[tuple[str, int], int]]]:
    """Every offset checkpoint of the log dir with its entries; an unreadable one is a finding and
    counts as empty, as LogManager resets to 0 on a read error."""
    reports, offsets = [], {}
    for name in CHECKPOINT_FIELDS:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        try:
            entries = kafka_state.read_checkpoint(path, "offset").entries
        except kafka_state.CorruptCheckpoint as exc:
            problems.append(finding(FindingKind.FORMAT, exc.offset, f"{path}: {exc.message}; the broker reads it "
                                                                     "as empty"))
            entries = []
        offsets[name] = {(e.topic, e.partition): e.offset for e in entries}
        reports.append({"name": name, "path": path,
                        "entries": [CheckpointEntry(topic=e.topic, partition=e.partition, offset=e.offset)
                                    for e in entries]})
    return reports, offsets


def _segment_summary(segment: Segment) -> InspectedSegment:
    """The segment as it is on disk: its whole batches from the start, whatever its index says."""
    first = first_timestamp = last = None
    try:
        for batch in segment.batches_from(0):
            if first is None:
                first = batch.base_offset
                first_timestamp = batch.base_timestamp if batch.magic >= 2 else batch.max_timestamp
            last = batch.last_offset
    except CorruptData:  # a torn or zero-filled tail: the whole batches before it are the segment's
        pass
    end = segment.base_offset if last is None else last + 1
    try:
        max_timestamp = segment.max_timestamp_so_far()[0]
    except CorruptData:
        max_timestamp = None
    return {"path": segment.log_path, "base_offset": segment.base_offset, "size": segment.size,
            "first_offset": first, "next_offset": end, "first_timestamp": first_timestamp,
            "max_timestamp": max_timestamp if max_timestamp is None or max_timestamp >= 0 else None}


def _inspect_partition(directory: str, topic: str, number: int, files: Partition | None, clean: bool,
                       offsets_by_file: dict) -> InspectedPartition:
    problems: list[Finding] = []
    paths = sorted(f.path for f in files.files) if files is not None else []
    state = renamed_directory_state(os.path.basename(directory))
    is_metadata = topic == METADATA_TOPIC
    topic_id = None
    metadata_file = os.path.join(directory, kafka_state.PARTITION_METADATA)
    if os.path.isfile(metadata_file):
        try:
            topic_id = kafka_state.read_partition_metadata(metadata_file).topic_id
        except kafka_state.CorruptCheckpoint as exc:
            problems.append(finding(FindingKind.FORMAT, exc.offset, f"{metadata_file}: {exc.message}"))
    epochs = _leader_epochs(directory, problems)
    snapshots = _producer_snapshots(paths, problems)
    view = PartitionView(directory) if any(is_log_file(path) for path in paths) else None
    checkpointed = {field: offsets_by_file[name].get((topic, number)) for name, field in CHECKPOINT_FIELDS.items()
                    if name in offsets_by_file}
    plan = _plan(directory, view, topic, state, clean, checkpointed, epochs, snapshots)
    segments = view.segments if view is not None else []
    summaries = [_segment_summary(segment) for segment in segments]
    loss = recovery_loss(plan)
    report: InspectedPartition = {
        "directory": directory, "topic": topic, "partition": number,
        "state": "metadata" if is_metadata else state or "live",
        "topic_id": topic_id,
        "segments": summaries,
        "log_bytes": sum(s["size"] for s in summaries),
        "bytes": sum(os.path.getsize(path) for path in paths),
        "files": sorted(entry.name for entry in os.scandir(directory) if not _is_directory(entry)),
        "first_offset": next((s["first_offset"] for s in summaries if s["first_offset"] is not None), None),
        "log_end_offset": summaries[-1]["next_offset"] if summaries else None,
        "first_timestamp": next((s["first_timestamp"] for s in summaries if s["first_timestamp"] is not None), None),
        "max_timestamp": max((s["max_timestamp"] for s in summaries if s["max_timestamp"] is not None), default=None),
        "leader_epochs": [{"epoch": e.epoch, "start_offset": e.start_offset} for e in epochs],
        "producer_snapshots": snapshots,
        "kraft_snapshots": [],
        "quorum_state": None,
        "checkpoints": checkpointed,
        "plan": _plan_report(plan, is_metadata, loss),
        "problems": problems,
    }
    if is_metadata:
        _metadata_partition(report, paths, epochs)
    stops = {step.log_path: step.recovery.stop_message for step in plan.cuts}
    for cut in loss.cuts if loss is not None else ():
        problems.append(finding(FindingKind.RECOVERY_TRUNCATION, cut.byte,
                                f"{cut.segment}: {cut.action()}, where recovery stops ({stops[cut.segment]}); "
                                f"{cut.dropped()}",
                                offset=cut.offset))
    return report


def _leader_epochs(directory: str, problems: list[Finding]) -> list:
    epoch_file = os.path.join(directory, kafka_state.LEADER_EPOCH_CHECKPOINT)
    if os.path.isfile(epoch_file):
        try:
            return kafka_state.read_leader_epoch_checkpoint(epoch_file)
        except kafka_state.CorruptCheckpoint as exc:
            problems.append(finding(FindingKind.CHECKPOINT_FORMAT, exc.offset, f"{epoch_file}: {exc.message}"))
    return []


def _producer_snapshots(paths: list[str], problems: list[Finding]) -> list[dict]:
    snapshots = []
    for path in paths:
        if path.endswith(PRODUCER_SNAPSHOT) and has_offset_name(path):
            try:
                producers = len(kafka_state.read_producer_snapshot(path).entries)
            except kafka_state.CorruptSnapshot as exc:
                problems.append(finding(FindingKind.SNAPSHOT_STRUCTURE, exc.offset, f"{path}: {exc.kafka_message}"))
                producers = None
            snapshots.append({"offset": offset_from_file_name(path), "producers": producers})
    return snapshots


def _plan(directory: str, view: PartitionView | None, topic: str, state: str | None, clean: bool,
          checkpointed: dict, epochs: list, snapshots: list[dict]) -> PartitionPlan:
    is_metadata = topic == METADATA_TOPIC
    # KafkaMetadataLog loads the metadata log with recovery point and log start 0 and no clean shutdown
    recovery_point = 0 if is_metadata else checkpointed.get("recovery_point") or 0
    log_start = 0 if is_metadata else checkpointed.get("log_start_offset") or 0
    return plan_partition(directory, view.segments if view is not None else [], view.notes if view is not None
                          else [], clean and not is_metadata, recovery_point, log_start, epochs,
                          [s["offset"] for s in snapshots], state == "delete")


def _plan_report(plan: PartitionPlan, is_metadata: bool, loss: RecoveryLoss | None) -> StartupPlan:
    recovered: list[RecoveredSegment] = []
    for step in plan.recovered:
        recovery = step.recovery
        recovered.append({"path": step.log_path, "base_offset": step.base_offset, "because": step.recovered_because,
                          "detail": step.reason_detail, "valid_bytes": recovery.valid_bytes,
                          "bytes_truncated": recovery.bytes_lost, "next_offset": step.next_offset_after_recovery,
                          "offset_index_entries": len(recovery.offset_entries),
                          "time_index_entries": len(recovery.time_entries),
                          "stop_reason": recovery.stop_reason, "stop_message": recovery.stop_message})
    truncated = None
    if loss is not None:
        truncated = {"segment": loss.segment, "byte_offset": loss.byte, "offset": loss.offset,
                     "dropped_until": loss.offset if loss.last_offset is None else loss.last_offset + 1,
                     "bytes_dropped": loss.bytes, "records_dropped": loss.records,
                     "records_salvageable": loss.salvageable, "records_gone": loss.gone}
    moved = plan.leader_epoch_start_moved_to
    return {
        "loaded_by": "KafkaMetadataLog" if is_metadata else "LogManager",
        "clean_shutdown": plan.clean_shutdown,
        "recovery_point": plan.recovery_point_checkpoint,
        "log_start_offset": plan.log_start_offset_checkpoint,
        "recovery_skipped_for_deletion": plan.recovery_skipped_for_deletion,
        "split_segments": [{"path": s.log_path, "base_offset": s.base_offset, "split_from": s.split_from,
                            "first_byte": s.split_first_byte, "size": s.size}
                           for s in plan.segments if s.split_from is not None],
        "recovered_segments": recovered,
        "truncated_at": truncated,
        "deleted_segments": [s.log_path for s in plan.segments if s.deleted_by_recovery],
        "deletes_every_segment": plan.deletes_every_segment,
        "log_end_offset": plan.log_end_offset,
        "new_recovery_point": plan.new_recovery_point,
        "new_log_start_offset": plan.new_log_start_offset,
        "leader_epochs_dropped": [{"epoch": e.epoch, "start_offset": e.start_offset}
                                  for e in plan.leader_epochs_dropped],
        "leader_epoch_start_moved_to": None if moved is None else {"epoch": moved.epoch,
                                                                   "start_offset": moved.start_offset},
        "producer_snapshots_deleted": plan.producer_snapshots_deleted,
        "kraft_snapshots": _kraft_snapshot_plan(plan),
        "notes": plan.notes,
    }


def _kraft_snapshot_plan(plan: PartitionPlan) -> KraftSnapshotPlan | None:
    kraft = plan.kraft_snapshots
    if kraft is None:
        return None
    return {"log_latest_epoch": kraft.log_latest_epoch, "log_end_offset": kraft.log_end_offset,
            "latest_snapshot": None if kraft.latest is None else os.path.join(plan.directory, kraft.latest[2]),
            "latest_epoch": None if kraft.latest is None else kraft.latest[1],
            "truncates_to": kraft.latest[0] if kraft.truncates_to_latest else None,
            "deleted": [{"path": os.path.join(plan.directory, name), "end_offset": end, "epoch": epoch,
                         "reason": reason} for end, epoch, name, reason in kraft.deleted],
            "failure": kraft.failure}


def _metadata_partition(report: InspectedPartition, paths: list[str], epochs) -> None:
    """``quorum-state`` and the KRaft snapshots of ``__cluster_metadata-0``, each snapshot against its name."""
    problems = report["problems"]
    quorum = os.path.join(report["directory"], kafka_names.QUORUM_STATE)
    if os.path.isfile(quorum):
        try:
            state = kafka_log_dir.parse_quorum_state(_read(quorum), quorum)
            report["quorum_state"] = {"leader_id": state.leader_id, "leader_epoch": state.leader_epoch,
                                      "voted_id": state.voted_id, "applied_offset": state.applied_offset,
                                      "current_voters": state.current_voters, "data_version": state.data_version}
        except CorruptData as exc:
            problems.append(finding(FindingKind.FORMAT, exc.offset, f"{quorum}: {exc.message}"))
    for path in paths:
        snapshot_id = kraft_snapshot_id(path)
        if snapshot_id is None:
            continue
        summary, mismatches = _kraft_snapshot(path, *snapshot_id, epochs)
        report["kraft_snapshots"].append(summary)
        problems.extend(finding(FindingKind.KRAFT_SNAPSHOT_MISMATCH, None, f"{path}: {m}") for m in mismatches)


def _kraft_snapshot(path: str, end_offset: int, epoch: int, epochs) -> tuple[KraftSnapshotSummary, list[str]]:
    """What a snapshot holds, and where that disagrees with ``<end offset>-<epoch>`` (RecordsSnapshotWriter
    writes every batch with the snapshot's epoch, a SnapshotHeader first and a SnapshotFooter last)."""
    batches = records = 0
    batch_epochs: set[int] = set()
    control_types: list[str] = []
    mismatches = []
    try:
        for batch in BatchScan(open_buffer(path), path=path):
            batches += 1
            records += batch.record_count or 0
            batch_epochs.add(batch.partition_leader_epoch)
            if batch.is_control:
                control_types += [control_record_type(r)[1] for r in batch_records(batch, path)]
    except CorruptData as exc:
        mismatches.append(f"unreadable after {batches} batches: {exc.message}")
    if batch_epochs - {epoch}:
        mismatches.append(f"named for epoch {epoch} but its batches carry leader epoch(s) "
                          f"{', '.join(map(str, sorted(batch_epochs)))}")
    if not control_types or control_types[0] != "SNAPSHOT_HEADER":
        mismatches.append("no SnapshotHeader control record first")
    if not control_types or control_types[-1] != "SNAPSHOT_FOOTER":
        mismatches.append("no SnapshotFooter control record last")
    covering = [e for e in epochs if e.start_offset <= end_offset - 1]
    if end_offset > 0 and covering and covering[-1].epoch != epoch and end_offset - 1 >= epochs[0].start_offset:
        mismatches.append(f"the metadata log's leader-epoch-checkpoint gives offset {end_offset - 1} to epoch "
                          f"{covering[-1].epoch}, not {epoch}")
    return ({"path": path, "end_offset": end_offset, "epoch": epoch, "batches": batches, "records": records},
            mismatches)


def _cross_check_checkpoints(partitions: list[InspectedPartition], offsets_by_file: dict,
                             problems: list[Finding]) -> None:
    """Checkpoint entries against the partitions: beyond the log end, without a directory, missing."""
    present = {(p["topic"], p["partition"]) for p in partitions}
    for name, offsets in offsets_by_file.items():
        for (topic, number), offset in sorted(offsets.items()):
            if (topic, number) not in present:
                problems.append(finding(FindingKind.CHECKPOINT_WITHOUT_PARTITION, None,
                                        f"{name} has {topic}-{number} at offset {offset}, but the log dir has no "
                                        "directory for it", offset=offset))
    for partition in partitions:
        if partition["state"] != "live":
            continue
        plan = partition["plan"]
        # the end recovery leaves, before a log start beyond it deletes every segment
        if plan["truncated_at"] is not None:
            end = plan["truncated_at"]["offset"]
        elif partition["log_end_offset"] is not None:
            end = partition["log_end_offset"]
        else:
            end = plan["log_end_offset"]
        for name, field in CHECKPOINT_FIELDS.items():
            offset = partition["checkpoints"].get(field)
            if name not in offsets_by_file:
                continue
            if offset is None:
                if name in CHECKPOINTS_OF_EVERY_PARTITION:
                    partition["problems"].append(finding(FindingKind.PARTITION_WITHOUT_CHECKPOINT, None,
                                                         f"no entry in {name}"))
                continue
            if offset > end:
                consequence = ("LogLoader deletes every segment and starts the log empty at it"
                               if field == "log_start_offset" else "the broker lowers it to the log end")
                partition["problems"].append(finding(
                    FindingKind.CHECKPOINT_BEYOND_LOG_END, None,
                    f"{name} gives {offset}, beyond the log end {end}: {consequence}", offset=offset))


def _cross_check_topic_ids(partitions: list[InspectedPartition]) -> None:
    """partition.metadata of a topic's live partitions must name one topic id."""
    ids: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for partition in partitions:
        if partition["state"] == "live" and partition["topic_id"] is not None:
            ids[partition["topic"]][partition["topic_id"]].append(partition["partition"])
    for partition in partitions:
        seen = ids.get(partition["topic"], {})
        if partition["state"] == "live" and len(seen) > 1:
            others = "; ".join(f"{topic_id} in partition(s) {', '.join(map(str, numbers))}"
                               for topic_id, numbers in sorted(seen.items()) if topic_id != partition["topic_id"])
            partition["problems"].append(finding(FindingKind.TOPIC_ID_MISMATCH, None,
                                                 f"topic id {partition['topic_id']}, but {others}"))


def _metadata_topic_ids(directory: str) -> dict[str, str]:
    """Each topic's id as the metadata log leaves it: the newest KRaft snapshot, then the log after
    its end offset (a TopicRecord names a topic's id, a RemoveTopicRecord drops it)."""
    names = sorted(os.listdir(directory))
    # the latest snapshot as OffsetAndEpoch orders them: epoch first, then end offset
    snapshots = sorted((kraft_snapshot_id(name)[::-1], name) for name in names if kraft_snapshot_id(name) is not None)
    start = snapshots[-1][0][1] if snapshots else 0
    sources = [(os.path.join(directory, snapshots[-1][1]), True)] if snapshots else []
    sources += [(os.path.join(directory, name), False) for name in names if is_log_file(name)]
    ids: dict[str, str] = {}
    for path, whole in sources:
        try:
            for batch in BatchScan(open_buffer(path), path=path):
                if batch.is_control or (not whole and batch.last_offset < start):
                    continue
                for record in batch_records(batch, path):
                    if not whole and record.offset < start:
                        continue
                    try:
                        change = decode_metadata_record(record.value)
                    except ApiMessageError:  # reported by dump; here it changes no topic id
                        continue
                    if change.name == "TopicRecord":
                        ids[change.data["name"]] = change.data["topicId"]
                    elif change.name == "RemoveTopicRecord":
                        ids = {name: topic_id for name, topic_id in ids.items() if topic_id != change.data["topicId"]}
        except CorruptData:  # damage ends the replay there; the partition's plan reports it
            continue
    return ids


def _cross_check_metadata_topic_ids(partitions: list[InspectedPartition], ids: dict[str, str]) -> None:
    """partition.metadata's topic id against the metadata log's TopicRecord for that topic."""
    for partition in partitions:
        expected = ids.get(partition["topic"])
        if partition["state"] == "live" and partition["topic_id"] is not None and expected is not None \
                and expected != partition["topic_id"]:
            partition["problems"].append(finding(
                FindingKind.TOPIC_ID_MISMATCH, None,
                f"partition.metadata names topic id {partition['topic_id']}, but the metadata log's TopicRecord "
                f"for {partition['topic']} names {expected}: the broker treats the directory as stray"))

