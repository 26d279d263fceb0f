"""`groups`: each consumer group's committed offsets and metadata as of a time, and its lag.

The group coordinator's state is the replay of its ``__consumer_offsets`` partitions
(``GroupMetadataManager.loadGroupsAndOffsets`` / the 3.7+ ``CoordinatorLoaderImpl``):
records in offset order, the latest value per key winning and a null value (tombstone)
deleting the key: an OffsetCommit tombstone deletes that partition's commit, a
GroupMetadata tombstone the group's metadata (its offsets have tombstones of their own).
Offsets committed inside a transaction (``TxnOffsetCommit``) wait for their producer's
COMMIT marker and are dropped on ABORT.  With ``at``, only records whose timestamp is at
or before it count.  Lag is each committed partition's log end offset in the same log
dir minus the committed offset.

Records are decoded by ``kafka.offsets``; batches come from ``PartitionView``
and stop where Kafka's recovery would (``kafka.recovery.ensure_valid``), partitions
from the one inventory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

from segtool.engine.inventory import Partition, any_unreadable, inventory, unreadable_findings
from segtool.kafka.partition import PartitionView, Segment
from segtool.kafka.startup import load_partition
from segtool.kafka.recovery import ensure_valid
from segtool.errors import CorruptData, NothingFound, UnreadableInput
from segtool.findings import FindingKind, finding
from segtool.kafka.log import RecordBatch
from segtool.kafka.records import control_record_type
from segtool.kafka.messages import CoordinatorRecordError
from segtool.kafka.names import renamed_directory_state
from segtool.kafka.offsets import decode_offsets_record
from segtool.ops.output_schema import (
    CommittedOffset,
    ConsumerGroup,
    CoordinatorPartitionRead,
    GroupMember,
    GroupsReport,
    TopicPartitions,
)

OFFSETS_TOPIC = "__consumer_offsets"

# GroupCoordinatorRecordSerde's record types
_OFFSET_COMMIT_TYPES = (0, 1)
_GROUP_METADATA = 2
_CONSUMER_GROUP_METADATA = 3
_CONSUMER_GROUP_MEMBER_METADATA = 5


def live_partitions(log_dir: str, problems: list) -> dict[tuple[str, int], Partition]:
    """The partition directories of a log dir by (topic, partition); renamed ``-delete``,
    ``-future`` and ``-stray`` directories are not the live log and are left out.  Every entry
    that cannot be read (a dangling link, a loop) becomes an ``unreadable`` problem."""
    if not os.path.lexists(log_dir):
        raise UnreadableInput("no such file or directory", log_dir)
    if not os.path.isdir(log_dir):
        raise NothingFound("a file, not a directory (give a Kafka log dir or a RocketMQ store)", log_dir)
    found = {}
    entries = inventory([log_dir])
    problems.extend(unreadable_findings(entries))
    for partition in entries.partitions:
        topic, number = partition.topic_partition
        name = os.path.basename(os.path.normpath(partition.directory))
        if number is not None and renamed_directory_state(name) is None:
            found[(topic, number)] = partition
    return found


def partition_view(partition: Partition) -> PartitionView | None:
    """The partition's segments, None when its directory holds no ``.log`` (never written, or
    not copied)."""
    return PartitionView(partition.directory) if partition.logs else None


def log_batches(view: PartitionView, problems: list) -> Iterator[tuple[Segment, RecordBatch]]:
    """Every batch of a partition in offset order, up to where Kafka's recovery would stop
    (corrupt framing or a batch failing ``ensureValid``): that place becomes a problem."""
    for segment in view.segments:
        try:
            for batch in segment.batches_from(0):
                reason = ensure_valid(batch)
                if reason is not None:
                    problems.append(finding(
                        FindingKind.RECOVERY_TRUNCATION, batch.position,
                        f"{segment.log_path}: {reason}; what follows is not read (Kafka's recovery truncates here)",
                        offset=batch.base_offset))
                    return
                yield segment, batch
        except CorruptData as e:
            problems.append(finding(FindingKind.CORRUPT_FRAMING, e.offset,
                                    f"{segment.log_path}: {e.message}; what follows is not read"))
            return


def batch_records(segment: Segment, batch: RecordBatch, problems: list) -> list:
    """The records of one batch; one that does not decode is a problem and yields none."""
    try:
        return segment.records(batch)
    except CorruptData as e:
        problems.append(finding(FindingKind.RECORD_STRUCTURE, batch.position,
                                f"{segment.log_path}: batch at offset {batch.base_offset}: {e.message}",
                                offset=batch.base_offset))
        return []


def is_commit_marker(segment: Segment, batch: RecordBatch, problems: list) -> bool | None:
    """True for a COMMIT marker batch, False for ABORT, None for another control batch."""
    records = batch_records(segment, batch, problems)
    name = control_record_type(records[0])[1] if records else None
    return {"COMMIT": True, "ABORT": False}.get(name)


@dataclass
class _Group:
    name: str
    coordinator_partition: int
    metadata: dict | None = None  # the ConsumerGroup fields other than offsets
    deleted: bool = False
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    # the base offset of the batch each committed offset came in (CommitRecordMetadataAndOffset.
    # appendedBatchOffset): what a transaction's COMMIT compares with (olderThan)
    offset_batches: dict[tuple[str, int], int] = field(default_factory=dict)
    members: dict[str, GroupMember] = field(default_factory=dict)  # KIP-848 member records


def _topic_partitions(assignment) -> list[TopicPartitions]:
    if not isinstance(assignment, dict):  # not the consumer protocol: opaque bytes
        return []
    return [{"topic": entry["topic"], "partitions": list(entry["partitions"])}
            for entry in assignment.get("assignedPartitions") or ()]


# A value decoded at an older version lacks the later fields: their schema defaults stand in.

def _classic_metadata(value: dict, record_offset: int) -> dict:
    members = []
    for member in value["members"] or ():
        subscription = member["subscription"]
        members.append({
            "member_id": member["memberId"], "group_instance_id": member.get("groupInstanceId"),
            "client_id": member["clientId"], "client_host": member["clientHost"],
            "subscribed_topics": list(subscription.get("topics") or ()) if isinstance(subscription, dict) else [],
            "assigned": _topic_partitions(member["assignment"]),
        })
    return {"protocol": "classic", "protocol_type": value["protocolType"], "generation": value["generation"],
            "assignor": value["protocol"], "leader": value["leader"],
            "state_timestamp": value.get("currentStateTimestamp", -1) if value.get("currentStateTimestamp", -1) >= 0 else None,
            "members": members, "metadata_record_offset": record_offset}


def _consumer_protocol_metadata(value: dict, record_offset: int) -> dict:
    return {"protocol": "consumer", "protocol_type": "consumer", "generation": value["epoch"], "assignor": None,
            "leader": None, "state_timestamp": None, "members": [], "metadata_record_offset": record_offset}


class _Replay:
    """The coordinator's groups as the records so far leave them."""

    def __init__(self, problems: list):
        self.groups: dict[str, _Group] = {}
        self.problems = problems
        self.pending_commits = 0  # offsets committed in transactions whose marker never came

    def group(self, name: str, coordinator_partition: int) -> _Group:
        return self.groups.setdefault(name, _Group(name, coordinator_partition))

    def decode(self, record, where: str):
        """The record's key and value, or None (and a problem) where the serde rejects it."""
        try:
            return decode_offsets_record(bytes(record.key), None if record.value is None else bytes(record.value))
        except (CoordinatorRecordError, TypeError) as e:  # TypeError: a record without a key
            message = e.message if isinstance(e, CoordinatorRecordError) else "a record without a key"
            self.problems.append(finding(FindingKind.COORDINATOR_RECORD, None, f"{where}: {message}",
                                         offset=record.offset))
            return None

    def commit_offset(self, coordinator_partition: int, decoded, record, batch_base_offset: int,
                      producer_id: int | None) -> None:
        """An offset commit or its tombstone takes effect (a plain one as read, a transactional one
        at its COMMIT marker, only over an older commit: the caller checks)."""
        key, value = decoded.key, decoded.value
        group = self.group(key["group"], coordinator_partition)
        topic_partition = (key["topic"], key["partition"])
        if value is None:
            group.offsets.pop(topic_partition, None)
            group.offset_batches.pop(topic_partition, None)
            return
        group.offsets[topic_partition] = {
            "topic": key["topic"], "partition": key["partition"], "offset": value["offset"],
            "leader_epoch": value.get("leaderEpoch", -1), "metadata": value["metadata"],
            "commit_timestamp": value["commitTimestamp"],
            "expire_timestamp": value.get("expireTimestamp", -1) if value.get("expireTimestamp", -1) >= 0 else None,
            "record_offset": record.offset, "transactional_producer_id": producer_id,
            "log_end_offset": None, "lag": None}
        group.offset_batches[topic_partition] = batch_base_offset

    def commit_transaction(self, coordinator_partition: int, held: dict) -> None:
        """A COMMIT marker: each offset its transaction committed replaces the group's committed
        offset unless that one came in a later batch (GroupMetadataManager.loadGroupsAndOffsets,
        CommitRecordMetadataAndOffset.olderThan: the batches' base offsets compared)."""
        for (group_name, topic_partition), (decoded, record, batch_base_offset, producer_id) in held.items():
            group = self.groups.get(group_name)
            current = None if group is None else group.offset_batches.get(topic_partition)
            if current is None or current < batch_base_offset:
                self.commit_offset(coordinator_partition, decoded, record, batch_base_offset, producer_id)

    def apply(self, coordinator_partition: int, decoded, record) -> None:
        """A record outside a transaction's offset commits takes effect as read."""
        key, value = decoded.key, decoded.value
        if decoded.type_id == _GROUP_METADATA:
            group = self.group(key["group"], coordinator_partition)
            group.metadata = None if value is None else _classic_metadata(value, record.offset)
            group.deleted = value is None
        elif decoded.type_id == _CONSUMER_GROUP_METADATA:
            group = self.group(key["groupId"], coordinator_partition)
            group.metadata = None if value is None else _consumer_protocol_metadata(value, record.offset)
            group.deleted = value is None
            if value is None:
                group.members.clear()
        elif decoded.type_id == _CONSUMER_GROUP_MEMBER_METADATA:
            group = self.group(key["groupId"], coordinator_partition)
            if value is None:
                group.members.pop(key["memberId"], None)
            else:
                group.members[key["memberId"]] = {
                    "member_id": key["memberId"], "group_instance_id": value["instanceId"],
                    "client_id": value["clientId"], "client_host": value["clientHost"],
                    "subscribed_topics": list(value["subscribedTopicNames"]), "assigned": []}
        # the other record types (assignments, share groups) hold no committed offset or group summary


def _replay_partition(replay: _Replay, number: int, view: PartitionView, at: int | None) -> CoordinatorPartitionRead:
    read: CoordinatorPartitionRead = {"directory": view.directory, "partition": number, "records": 0,
                                      "records_after_at": 0, "log_end_offset": view.log_end_offset}
    # producer id -> its open transaction's offset commits by (group, topic-partition), the latest
    # of each (a tombstone in the transaction drops it), until the producer's marker
    pending: dict[int, dict] = {}
    for segment, batch in log_batches(view, replay.problems):
        where = f"{segment.log_path}: batch at offset {batch.base_offset}"
        if batch.is_control:
            if at is not None and batch.max_timestamp > at:
                continue
            commit = is_commit_marker(segment, batch, replay.problems)
            held = pending.pop(batch.producer_id, {})
            if commit:
                replay.commit_transaction(number, held)
            continue
        records = batch_records(segment, batch, replay.problems)
        batch_base_offset = records[0].offset if records else batch.base_offset
        for record in records:
            if at is not None and record.timestamp > at:
                read["records_after_at"] += 1
                continue
            read["records"] += 1
            decoded = replay.decode(record, where)
            if decoded is None:
                continue
            if decoded.type_id not in _OFFSET_COMMIT_TYPES:
                replay.apply(number, decoded, record)
            elif not batch.is_transactional:
                replay.commit_offset(number, decoded, record, batch_base_offset, None)
            else:
                held = pending.setdefault(batch.producer_id, {})
                key = (decoded.key["group"], (decoded.key["topic"], decoded.key["partition"]))
                if decoded.value is None:
                    held.pop(key, None)
                else:
                    held[key] = (decoded, record, batch_base_offset, batch.producer_id)
    replay.pending_commits += sum(len(held) for held in pending.values())
    return read


def groups(log_dir: str, group: str | None = None, at: int | None = None) -> GroupsReport:
    """Every consumer group of ``log_dir`` (or only ``group``) as of ``at`` (epoch ms; None:
    everything in the files), with each committed partition's lag where the partition is here."""
    problems: list = []
    partitions = live_partitions(log_dir, problems)
    replay = _Replay(problems)
    reads = []
    for (topic, number), partition in sorted(partitions.items()):
        if topic != OFFSETS_TOPIC:
            continue
        view = partition_view(partition)
        if view is None:
            reads.append({"directory": partition.directory, "partition": number, "records": 0,
                          "records_after_at": 0, "log_end_offset": None})
            continue
        reads.append(_replay_partition(replay, number, view, at))
    ends: dict[tuple[str, int], int | None] = {}

    def log_end(topic_partition: tuple[str, int]) -> int | None:
        """The log end as the broker's load leaves it (``kafka.startup.load_partition``: lookup's log end)."""
        if topic_partition not in ends:
            partition = partitions.get(topic_partition)
            view = partition_view(partition) if partition is not None else None
            if view is not None:
                load_partition(view, state_files=False)
            ends[topic_partition] = view.log_end_offset if view is not None else None
        return ends[topic_partition]

    listed = []
    for state in sorted(replay.groups.values(), key=lambda g: g.name):
        if group is not None and state.name != group:
            continue
        if state.metadata is None and not state.offsets and not state.deleted:
            continue  # every commit was deleted and the group never had metadata: nothing is left
        offsets = []
        for topic_partition in sorted(state.offsets):
            committed = state.offsets[topic_partition]
            end = log_end(topic_partition)
            offsets.append({**committed, "log_end_offset": end, "lag": None if end is None else end - committed["offset"]})
        metadata = state.metadata or {"protocol": None, "protocol_type": None, "generation": None, "assignor": None,
                                      "leader": None, "state_timestamp": None, "members": [],
                                      "metadata_record_offset": None}
        if metadata["protocol"] == "consumer":
            metadata = {**metadata, "members": [state.members[m] for m in sorted(state.members)]}
        lags = [o["lag"] for o in offsets if o["lag"] is not None]
        item: ConsumerGroup = {"group": state.name, "coordinator_partition": state.coordinator_partition,
                               **metadata, "deleted": state.deleted, "offsets": offsets,
                               "total_lag": sum(lags) if lags else None}
        listed.append(item)
    return {"log_dir": log_dir, "at": at, "coordinator_partitions": reads, "groups": listed, "problems": problems,
            "summary": {"groups": len(listed), "committed_partitions": sum(len(g["offsets"]) for g in listed),
                        "groups_deleted": sum(g["deleted"] for g in listed),
                        "pending_transactional_commits": replay.pending_commits}}


def exit_code(report: GroupsReport) -> int:
    """2 when an entry could not be read, 0 when groups were found and nothing is wrong, 1 when none
    were or a problem was found."""
    if any_unreadable(report["problems"]):
        return 2
    return 0 if report["groups"] and not report["problems"] else 1
