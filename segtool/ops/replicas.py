"""``segtool replicas``: what each broker holds of a partition, where the copies part, and what electing each
replica would drop (Kafka's rules in ``kafka.replication``; RocketMQ's in ``ops.replicas_rocketmq``).

A Kafka replica set is the partitions of one name and topic id found in two or more brokers' log dirs.  Each
replica is read as the broker loads it (``kafka.startup.load_partition``: recovery's cut applied, what lies
beyond counted as damage), by batch headers only.  For each replica as the next leader, every other replica's
truncation follows the epoch exchange; a dropped record is *committed* when it lies below the high watermark
of a replica holding that very batch, and *lost* when the new leader does not hold it.

Each replica set is one unit of work (``kafka_replica_set``, and ``replicas_rocketmq``'s per group): ``replicas``
maps them through ``map_tasks``, in-process here, or as tasks of the pipeline's engines
(``segtool.pipeline.replicas``), which give the results back in the sets' order.  Finding the sets
(``discover``) only looks at the tree through a ``LocalTree``, so a pipeline's driver can find them in a listing
of URIs and leave the reading to its tasks.

Every file below each broker's log dir or store is reported with its sha256 (``brokers[].files``), hashed once,
by the task that reads it, beside its reading (``task_map.digests_beside``): a set's task hashes its copies'
partition directories, a store's task (when stores are compared) the store; the files no comparison reads (the
log dirs' own files, partitions held once, what is skipped) are hashed by one task per broker (``hash_files``).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

import numpy as np

from segtool.engine.salvage import recovery_loss
from segtool.errors import NothingFound, SegtoolError, UnreadableInput
from segtool.kafka import names as kafka_names
from segtool.kafka import replica_batches as held
from segtool.kafka import replication as rules
from segtool.kafka.log_dir import BrokerIdentity, broker_identity_of, unreadable_meta_properties
from segtool.kafka.names import META_PROPERTIES
from segtool.kafka.partition import PartitionView
from segtool.kafka.log import increment_sequence
from segtool.kafka.startup import (LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, load_partition,
                                   producer_snapshot_offsets)
from segtool.kafka.state import (PARTITION_METADATA, EpochEntry, parse_partition_metadata,
                                 read_leader_epoch_checkpoint, read_offset_checkpoint, read_producer_snapshot)
from segtool.ops.brokers import LocalTree, broker_roots
from segtool.ops.output_schema import ReplicasReport
from segtool.ops.replicas_rocketmq import rocketmq_replica_problems, rocketmq_replica_sets
from segtool.ops.task_map import (FileDigest, Hashing, MapTasks, bytes_in, digests_beside, hash_files,
                                  in_process)

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


@dataclass(frozen=True)
class Member:
    """One broker's copy of a partition: which broker, and its partition directory."""

    broker: str
    broker_id: int | None
    directory: str


@dataclass
class Discovery:
    """What ``replicas`` finds below its paths before comparing anything: the brokers, the Kafka replica sets
    (``groups``: the unit of work each), the partitions held once, the RocketMQ stores ((broker label, root)
    each), and what was skipped or noted on the way; ``files``: each broker's files ((path, size), a broker's
    below another's its own), and ``skipped_files`` the sizes of the skipped entries that are readable files."""

    brokers: list[dict]
    groups: list[list[Member]]
    single: list[Member]
    stores: list[tuple[str, str]]
    skipped: list[dict]
    notes: list[str]
    files: list[list[tuple[str, int]]]
    skipped_files: dict[str, int]


@dataclass
class HashPlan:
    """The files each unit of work hashes, each file in one: per Kafka set its copies' directories', per
    compared store its own, and the rest (per broker, then the skipped files)."""

    sets: list[list[str]]
    stores: list[list[str]]
    rest: list[list[str]]
    sizes: dict[str, int]


def plan_hashes(found: Discovery, compared_stores: bool) -> HashPlan:
    """Which task hashes each file ``found`` holds: the deepest of a set's copy, a compared store and a
    broker that holds it."""
    owners: dict[str, tuple[str, int]] = {}
    for i, broker in enumerate(found.brokers):
        owners[os.path.normpath(broker["path"])] = ("rest", i)
    if compared_stores:
        for i, (_, root) in enumerate(found.stores):
            owners[os.path.normpath(root)] = ("stores", i)
    for g, members in enumerate(found.groups):
        for member in members:
            owners[os.path.normpath(member.directory)] = ("sets", g)
    plan = HashPlan([[] for _ in found.groups], [[] for _ in found.stores] if compared_stores else [],
                    [[] for _ in found.brokers] + [list(found.skipped_files)], dict(found.skipped_files))
    for files in found.files:
        for path, size in files:
            kind, i = _deepest_owner(path, owners)
            getattr(plan, kind)[i].append(path)
            plan.sizes[path] = size
    plan.rest = [files for files in plan.rest if files]  # a task for each broker with files left to hash
    return plan


def _deepest_owner(path: str, owners: dict[str, tuple[str, int]]) -> tuple[str, int]:
    """The owner of the deepest folder holding ``path`` (every file listed lies below a broker's)."""
    folder = path
    while folder not in owners:
        folder = os.path.dirname(folder) or os.curdir  # normpath names the current folder "."
    return owners[folder]


def discover(paths: list[str], tree: LocalTree = LocalTree()) -> Discovery:
    """The brokers and replica sets below ``paths``, seen through ``tree``: the local filesystem, or (on a
    pipeline's driver) the listing of URI trees, of which only ``meta.properties`` and ``partition.metadata``
    are read."""
    for path in paths:
        if not tree.lexists(path):
            raise UnreadableInput("no such file or directory", path)
    log_dirs, stores = broker_roots(paths, tree)
    brokers, skipped, notes = [], [], []
    skipped += [{"path": d, "reason": "not a directory: a broker's log dir or store is one"}
                for d in log_dirs if not tree.isdir(d)]
    identities = _identities(log_dirs, tree)
    for log_dir, (label, identity) in identities.items():
        brokers.append({"broker": label, "broker_id": identity.broker_id, "path": identity.folder, "kind": "kafka"})
        if identity.problem is not None:
            notes.append(f"{identity.problem}: told apart by its folder")
    store_members = [(os.path.normpath(root), root) for root in stores]
    brokers += [{"broker": label, "broker_id": None, "path": root, "kind": "rocketmq"} for label, root in store_members]
    groups, single, group_notes = kafka_replica_groups(identities, skipped, tree)
    notes += group_notes
    if len(store_members) == 1:
        notes.append(f"one RocketMQ store ({store_members[0][1]}): nothing to compare it with")
    below = {os.path.normpath(broker["path"]): tree.files_below(broker["path"]) for broker in brokers}
    # a broker's log dir or store below another broker's is its own: its files are listed with it alone
    owner = {path: root for root in sorted(below, key=len) for path, _ in below[root]}
    files = [[(path, size) for path, size in below[os.path.normpath(broker["path"])]
              if owner[path] == os.path.normpath(broker["path"])] for broker in brokers]
    skipped_files = {path: size for entry in skipped if tree.isfile(entry["path"])
                     for path, size in tree.files_below(entry["path"]) if path not in owner}
    return Discovery(brokers, groups, single, store_members, skipped, notes, files, skipped_files)


def replicas(paths: list[str], map_tasks: MapTasks = in_process, hashing: Hashing = Hashing()) -> ReplicasReport:
    """The replica sets found below ``paths`` (each a broker's log dir or store, or a folder holding several);
    each set is compared by ``map_tasks``, every file hashed as ``hashing`` says."""
    found = discover(paths)
    plan = plan_hashes(found, compared_stores=len(found.stores) > 1)
    kafka = map_tasks(kafka_replica_set, [(members, files, hashing) for members, files in zip(found.groups, plan.sets)],
                      [sum(bytes_in(m.directory) for m in members) for members in found.groups])
    rocketmq, store_digests = rocketmq_replica_sets(found.stores, map_tasks, plan.stores, hashing) \
        if len(found.stores) > 1 else ([], [])
    rest = map_tasks(hash_files, plan.rest,
                     [sum(plan.sizes[path] for path in files) for files in plan.rest]) if hashing.enabled else []
    return assemble(found, [result for result, _ in kafka],
                    rocketmq, plan, [digests for _, digests in kafka] + store_digests + rest)


def assemble(found: Discovery, kafka: list[dict], rocketmq: list[dict], plan: HashPlan,
             digests: list[list[FileDigest]]) -> ReplicasReport:
    """The report of what ``found`` holds, its Kafka sets compared (``kafka_replica_set`` each, in the groups'
    order) and its RocketMQ sets; ``digests``: the tasks' digests of ``plan``'s files (sets, stores, then the
    rest; none at all without hashing).  A file whose hash finds it unreadable is named in ``skipped``."""
    hashed = dict(zip((path for files in plan.sets + plan.stores + plan.rest for path in files),
                      (digest for each in digests for digest in each)))
    unhashed = (None, None)
    skipped = [{**entry, "size": found.skipped_files.get(os.path.normpath(entry["path"])),
                "sha256": hashed.get(os.path.normpath(entry["path"]), unhashed)[0]} for entry in found.skipped]
    brokers = []
    for broker, files in zip(found.brokers, found.files):
        listed = []
        for path, size in files:
            digest, problem = hashed.get(path, unhashed)
            if problem is None:
                listed.append({"path": path, "size": size, "sha256": digest})
            else:
                skipped.append({"path": path, "reason": f"unreadable: {problem}", "size": size, "sha256": None})
        brokers.append({**broker, "files": listed})
    return {"brokers": brokers, "kafka": kafka, "rocketmq": rocketmq,
            "single_copies": [{"topic": _topic_partition(m.directory)[0], "partition": _topic_partition(m.directory)[1],
                               "broker": m.broker, "directory": m.directory} for m in found.single],
            "skipped": skipped, "notes": found.notes, "summary": _summary(kafka, rocketmq)}


def exit_code(report: ReplicasReport) -> int:
    """2 when an entry below the paths or a replica cannot be read; 1 when copies part, a replica is damaged, the best
    election still loses committed records, or no partition or store is held by two or more brokers; else 0."""
    summary = report["summary"]
    if any(entry["reason"].startswith("unreadable") for entry in report["skipped"]) \
            or any(replica_set["unreadable"] for replica_set in report["kafka"]):
        return 2
    if not report["kafka"] and not report["rocketmq"]:
        return 1
    if summary["diverged"] or summary["damaged"] or summary["committed_loss_at_best"]:
        return 1
    return 1 if rocketmq_replica_problems(report["rocketmq"]) else 0


def _identities(log_dirs: list[str], tree: LocalTree) -> dict[str, tuple[str, BrokerIdentity]]:
    """Each log dir's broker and its label; two log dirs naming the same broker id are labelled by their folders
    too (one broker's several log dirs, or two copies of one broker's evidence)."""
    found = {log_dir: _broker_identity(log_dir, tree) for log_dir in log_dirs if tree.isdir(log_dir)}
    counts: dict[int, int] = {}
    for identity in found.values():
        if identity.broker_id is not None:
            counts[identity.broker_id] = counts.get(identity.broker_id, 0) + 1
    return {log_dir: (identity.label if identity.broker_id is None or counts[identity.broker_id] == 1
                      else f"{identity.label} ({identity.folder})", identity)
            for log_dir, identity in found.items()}


def _broker_identity(log_dir: str, tree: LocalTree) -> BrokerIdentity:
    """``kafka.log_dir.broker_identity``, its ``meta.properties`` read through ``tree``."""
    folder = os.path.normpath(log_dir)
    path = os.path.join(folder, META_PROPERTIES)
    if not tree.isfile(path):
        return BrokerIdentity(None, folder)
    try:
        data = tree.read(path)
    except (SegtoolError, OSError) as exc:
        return BrokerIdentity(None, folder, unreadable_meta_properties(path, exc))
    return broker_identity_of(folder, path, data)


def _topic_partition(directory: str) -> tuple[str, int | None]:
    return kafka_names.topic_partition(os.path.basename(os.path.normpath(directory)))


def _topic_id(directory: str, tree: LocalTree = LocalTree()) -> str | None:
    path = os.path.join(directory, PARTITION_METADATA)
    if not tree.isfile(path):
        return None
    try:
        return parse_partition_metadata(tree.read(path), path).topic_id
    except (SegtoolError, OSError):
        return None


def kafka_replica_groups(identities: dict[str, tuple[str, BrokerIdentity]], skipped: list,
                         tree: LocalTree) -> tuple[list[list[Member]], list[Member], list[str]]:
    """The partitions held by two or more brokers, grouped by name and topic id; those held once; notes."""
    by_name: dict[tuple[str, int], list[tuple[str | None, Member]]] = {}
    for log_dir, (label, identity) in identities.items():
        found = tree.inventory(log_dir)
        skipped += [{"path": entry.path, "reason": f"unreadable: {entry.unreadable}"} for entry in found.unreadable]
        for partition in found.partitions:
            directory = os.path.normpath(partition.directory)
            name = os.path.basename(directory)
            topic, number = kafka_names.topic_partition(name)
            if (os.path.dirname(directory) or os.curdir) != os.path.normpath(log_dir):  # "." has no dirname
                continue  # a log dir below this one is its own broker
            state = kafka_names.renamed_directory_state(name)
            if number is None or state is not None:
                skipped.append({"path": directory, "reason": f"a {state} directory: not a live replica"
                                if state else "not a topic-partition directory"})
                continue
            by_name.setdefault((topic, number), []).append((_topic_id(directory, tree), Member(label, identity.broker_id,
                                                                                         directory)))
    groups, single, notes = [], [], []
    for (topic, number), copies in sorted(by_name.items()):
        ids = sorted({topic_id for topic_id, _ in copies if topic_id is not None})
        if len(ids) > 1:
            notes.append(f"{topic}-{number}: {len(ids)} topic ids ({', '.join(ids)}): the topic was deleted and "
                         "re-created under the same name; each id is its own partition")
        for topic_id in ids or [None]:
            members = [m for tid, m in copies if tid == topic_id or (tid is None and len(ids) <= 1)]
            if len(ids) > 1:
                unknown = [m for tid, m in copies if tid is None]
                if unknown and topic_id == ids[0]:
                    notes.append(f"{topic}-{number}: no partition.metadata in "
                                 f"{', '.join(m.directory for m in unknown)}: its topic id is unknown, left out")
            (groups if len(members) > 1 else single).append(members if len(members) > 1 else members[0])
    return groups, single, notes


# -- one replica set ----------------------------------------------------------------------------------

@dataclass
class _Replica:
    member: Member
    plan: object
    batches: held.ReplicaBatches
    epochs: rules.ReplicaEpochs
    summary: dict
    keys: set
    snapshot: tuple | None  # (offset, entries) of the producer snapshot the load starts from


def _checkpoint_value(log_dir: str, name: str, topic: str, partition: int, gaps: list[str]) -> int | None:
    path = os.path.join(log_dir, name)
    if not os.path.isfile(path):
        gaps.append(f"no {name}")
        return None
    try:
        value = read_offset_checkpoint(path).get((topic, partition))
    except SegtoolError as exc:
        gaps.append(f"{name} unreadable: {exc}")
        return None
    if value is None:
        gaps.append(f"{name} has no entry for {topic}-{partition}")
    return value


def _read_replica(member: Member) -> _Replica:
    directory = member.directory
    topic, partition = _topic_partition(directory)
    log_dir = os.path.dirname(os.path.normpath(directory))
    gaps: list[str] = []
    start_checkpoint = _checkpoint_value(log_dir, LOG_START_OFFSET_CHECKPOINT, topic, partition, [])
    try:
        view = PartitionView(directory)
    except NothingFound:  # LogLoader starts an empty log at the checkpointed log start
        view = None
    plan = None if view is None else load_partition(view)
    batches = held.ReplicaBatches.empty() if plan is None else held.replica_batches(view, plan.new_log_start_offset)
    file_epochs: list[EpochEntry] | None = None
    epoch_path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
    if os.path.isfile(epoch_path):
        try:
            file_epochs = read_leader_epoch_checkpoint(epoch_path)
        except SegtoolError as exc:
            gaps.append(f"{LEADER_EPOCH_CHECKPOINT} unreadable: {exc}")
    else:
        gaps.append(f"no {LEADER_EPOCH_CHECKPOINT}")
    hw_checkpoint = None
    if topic == kafka_names.METADATA_TOPIC:  # KRaft keeps its high watermark in memory only
        gaps.append("the metadata log's high watermark is not checkpointed: what is committed is not known")
    else:
        hw_checkpoint = _checkpoint_value(log_dir, REPLICATION_OFFSET_CHECKPOINT, topic, partition, gaps)
    recovery_point = _checkpoint_value(log_dir, RECOVERY_POINT_CHECKPOINT, topic, partition, [])
    notes = []
    if plan is None:
        log_start = log_end = start_checkpoint or 0
        cache = rules.truncate_from_end(file_epochs or [], log_end)
        notes.append(f"no .log segment: Kafka's load starts an empty log at offset {log_end}")
    else:
        cache = held.loaded_epoch_cache(file_epochs or [], plan, batches)
        log_start, log_end = plan.new_log_start_offset, plan.log_end_offset
        notes += plan.notes
    # UnifiedLog.updateHighWatermark at load: the checkpoint (or the log start) kept within the log
    high_watermark = min(max(hw_checkpoint if hw_checkpoint is not None else log_start, log_start), log_end)
    known_high_watermark = None if topic == kafka_names.METADATA_TOPIC else high_watermark
    carried = [e for e in held.batch_epochs(batches) if e.epoch >= 0]
    loss = None if plan is None else recovery_loss(plan)
    crc_bad = int((batches["crc_ok"] == 0).sum()) if len(batches) else 0
    summary = {
        "broker": member.broker, "broker_id": member.broker_id, "directory": directory,
        "log_start_offset": log_start, "log_end_offset": log_end, "high_watermark": known_high_watermark,
        "high_watermark_checkpoint": hw_checkpoint, "recovery_point_checkpoint": recovery_point,
        "log_start_offset_checkpoint": start_checkpoint,
        "leader_epoch_checkpoint": None if file_epochs is None else _epochs(file_epochs),
        "leader_epoch_cache": _epochs(cache), "batch_epochs": _epochs(carried),
        "epochs_agree": _epochs(cache) == _epochs(carried),
        "batches": len(batches), "records": int(batches["records"].sum()) if len(batches) else 0,
        "damage": {"recovery_cut": None if loss is None else loss.cut_dict(),
                   "beyond_recovery": None if loss is None else loss.beyond_dict(), "checksum_mismatches": crc_bad},
        "gaps": gaps, "notes": notes,
    }
    epochs = rules.ReplicaEpochs(tuple(cache), log_start, log_end, high_watermark)
    keys = held.batch_keys(batches, range(len(batches)))
    snapshot = _latest_snapshot(directory, plan, log_end, gaps)
    summary["producer_snapshot_offset"] = None if snapshot is None else snapshot[0]
    return _Replica(member, plan, batches, epochs, summary, keys, snapshot)


def _epochs(entries: list[EpochEntry]) -> list[dict]:
    return [{"epoch": e.epoch, "start_offset": e.start_offset} for e in entries]


def kafka_replica_set(item: tuple[list[Member], list[str], Hashing]) -> tuple[dict, list[FileDigest]]:
    """The unit of work on the local pool and on Spark: one partition's copies compared, and the files given
    (its copies' directories') hashed beside the comparison."""
    members, files, hashing = item
    digests = digests_beside(files, hashing)
    return compare_replica_set(members), digests()


def compare_replica_set(members: list[Member]) -> dict:
    """The comparison of one partition's copies."""
    topic, partition = _topic_partition(members[0].directory)
    read, unreadable = [], []
    for member in members:
        try:
            read.append(_read_replica(member))
        except (NothingFound, SegtoolError) as exc:
            unreadable.append({"broker": member.broker, "directory": member.directory, "problem": str(exc)})
    result = {"topic": topic, "partition": partition, "topic_id": _topic_id(members[0].directory),
              "replicas": [r.summary for r in read], "unreadable": unreadable, "pairs": [], "candidates": [],
              "new_leader_epoch": None, "best_candidate": None, "producers": [], "notes": []}
    if len(read) < 2:
        return result
    committed_at = _committed_marks(read)
    result["pairs"] = [_pair(a, b) for a, b in itertools.combinations(read, 2)]
    latest = [r.epochs.cache[-1].epoch for r in read if r.epochs.cache]
    carried = [int(r.batches["epoch"].max()) for r in read if len(r.batches)]
    new_epoch = max(latest + carried + [-1]) + 1  # the controller's next epoch is above every one written
    result["new_leader_epoch"] = new_epoch
    producer_states = {r.member.broker: _producer_state(r.batches, r.snapshot) for r in read}
    result["producers"] = _producer_table(producer_states)
    candidates = [_candidate(c, read, new_epoch, committed_at, producer_states) for c in read]
    result["candidates"] = candidates
    if topic == kafka_names.METADATA_TOPIC:
        for candidate, replica in zip(candidates, read):
            candidate["electable"] = _wins_raft_vote(replica, read)
        result["notes"] = ["KRaft replicates the metadata log itself: a voter is elected only by a majority whose "
                           "logs are no more up to date than its own (KafkaRaftClient.handleVoteRequest); a "
                           "follower truncates on the diverging epoch of a fetch, as shown"]
    electable = [c for c in candidates if c["electable"] is not False] or candidates
    best = min(electable, key=lambda c: (c["committed_records_lost"], c["records_lost"], -c["log_end_offset"]))
    result["best_candidate"] = best["broker"]
    return result


def _wins_raft_vote(candidate: _Replica, voters: list[_Replica]) -> bool:
    """KafkaRaftClient.handleVoteRequest: a voter grants its vote when the candidate's (last epoch, end offset)
    is at least its own (OffsetAndEpoch.compareTo: epoch first); a majority of the voters elects."""
    def position(replica: _Replica) -> tuple[int, int]:
        cache = replica.epochs.cache
        return (cache[-1].epoch if cache else 0), replica.epochs.log_end_offset

    granted = sum(1 for voter in voters if position(candidate) >= position(voter))
    return granted > len(voters) // 2


def _committed_marks(read: list[_Replica]) -> dict[tuple, int]:
    """For each batch some replica holds, the highest high watermark of the replicas holding it."""
    marks: dict[tuple, int] = {}
    for replica in read:
        for key in replica.keys:
            marks[key] = max(marks.get(key, 0), replica.epochs.high_watermark)
    return marks


def _where(replica: _Replica, i: int | None) -> dict | None:
    if i is None:
        return None
    b = replica.batches
    return {"offset": int(b["base_offset"][i]), "epoch": int(b["epoch"][i]), "crc": int(b["crc"][i]),
            "segment": b.files[int(b["segment"][i])], "byte": int(b["position"][i])}


def _past(replica: _Replica, i: int | None, from_offset: int) -> dict:
    b = replica.batches
    start = i if i is not None else b.index_of_offset(from_offset)
    records = int(b["records"][start:].sum()) if start < len(b) else 0
    return {"batches": max(len(b) - start, 0), "records": records,
            "first_offset": int(b["base_offset"][start]) if start < len(b) else None,
            "last_offset": int(b["last_offset"][-1]) if start < len(b) else None}


def _pair(a: _Replica, b: _Replica) -> dict:
    split = held.first_divergence(a.batches, b.batches)
    return {"a": a.member.broker, "b": b.member.broker, "first_common_offset": split.first_common_offset,
            "agreed_until": split.agreed_until, "diverged": split.index_a is not None,
            "a_first_differing": _where(a, split.index_a), "b_first_differing": _where(b, split.index_b),
            "a_past": _past(a, split.index_a, split.agreed_until), "b_past": _past(b, split.index_b, split.agreed_until)}


def _dropped_runs(follower: _Replica, indexes: np.ndarray, leader: _Replica, committed_at: dict) -> tuple[list, dict]:
    """The batches a follower's truncation removes, in runs of one producer and epoch, and their totals.  What
    the new leader holds is fetched again; records below its log start were deleted before (retention,
    DeleteRecords), not lost; a lost record is committed when a replica holding its batch has its high
    watermark past it."""
    b = follower.batches
    start = leader.epochs.log_start_offset
    runs: list[dict] = []
    totals = {"records": 0, "committed": 0, "refetched": 0, "lost_keys": {}}
    for i in indexes:
        key = (int(b["base_offset"][i]), int(b["last_offset"][i]), int(b["epoch"][i]), int(b["crc"][i]))
        records = int(b["records"][i])
        before_start = held.records_below(b, int(i), start)
        committed = max(held.records_below(b, int(i), committed_at.get(key, 0)) - before_start, 0)
        on_leader = key in leader.keys
        totals["records"] += records
        totals["committed"] += committed
        if on_leader:
            totals["refetched"] += records
        elif records > before_start:
            totals["lost_keys"][key] = (records - before_start, committed)
        producer = (int(b["producer_id"][i]), int(b["producer_epoch"][i]), int(b["epoch"][i]), on_leader)
        last_sequence = -1 if b["base_sequence"][i] < 0 else increment_sequence(int(b["base_sequence"][i]),
                                                                                   key[1] - key[0])
        if runs and runs[-1]["_key"] == producer:
            run = runs[-1]
            run.update(last_offset=key[1], last_sequence=last_sequence, batches=run["batches"] + 1,
                       records=run["records"] + records, committed_records=run["committed_records"] + committed,
                       max_timestamp=max(run["max_timestamp"], int(b["max_timestamp"][i])))
        else:
            runs.append({"_key": producer, "first_offset": key[0], "last_offset": key[1], "leader_epoch": key[2],
                         "first_timestamp": int(b["first_timestamp"][i]), "max_timestamp": int(b["max_timestamp"][i]),
                         "producer_id": producer[0], "producer_epoch": producer[1],
                         "first_sequence": int(b["base_sequence"][i]), "last_sequence": last_sequence,
                         "batches": 1, "records": records, "committed_records": committed, "on_new_leader": on_leader})
    for run in runs:
        del run["_key"]
    return runs, totals


def _candidate(candidate: _Replica, read: list[_Replica], new_epoch: int, committed_at: dict,
               producer_states: dict) -> dict:
    leader = rules.elected(candidate.epochs, new_epoch)
    followers, lost = [], {}
    for follower in read:
        if follower is candidate:
            continue
        outcome = rules.resync(leader, follower.epochs)
        indexes = held.truncated_batches(follower.batches, outcome.truncate_to)
        if outcome.fully_truncated:
            indexes = np.arange(len(follower.batches))
        runs, totals = _dropped_runs(follower, indexes, candidate, committed_at)
        lost.update(totals["lost_keys"])
        followers.append({
            "broker": follower.member.broker, "truncate_to": outcome.truncate_to,
            "fully_truncated": outcome.fully_truncated,
            "rounds": [{"requested_epoch": r.requested_epoch, "leader_epoch": r.leader_epoch,
                        "leader_end_offset": r.leader_end_offset, "truncate_to": r.truncate_to,
                        "completed": r.completed, "rule": r.rule.value} for r in outcome.rounds],
            "dropped_records": totals["records"], "dropped_committed_records": totals["committed"],
            "refetched_records": totals["refetched"], "dropped": runs})
    committed = sum(c for _, c in lost.values())
    records = sum(r for r, _ in lost.values())
    return {"broker": candidate.member.broker, "electable": None, "log_end_offset": candidate.epochs.log_end_offset,
            "new_epoch_start_offset": candidate.epochs.log_end_offset, "followers": followers,
            "records_lost": records, "committed_records_lost": committed,
            "uncommitted_records_lost": records - committed,
            **_producer_effects(candidate.member.broker, producer_states)}


# -- producer state across replicas -------------------------------------------------------------------

def _latest_snapshot(directory: str, plan, log_end: int, gaps: list[str]):
    """The producer snapshot the load rebuilds producer state from (the latest at or below the log end that the
    load keeps), as (offset, entries); None without one."""
    deleted = set(plan.producer_snapshots_deleted) if plan is not None else set()
    offsets = sorted(o for o in producer_snapshot_offsets(directory) if o <= log_end and o not in deleted)
    if not offsets:
        return None
    path = os.path.join(directory, kafka_names.file_name(offsets[-1], kafka_names.PRODUCER_SNAPSHOT))
    try:
        return offsets[-1], read_producer_snapshot(path).entries
    except SegtoolError as exc:
        gaps.append(f"producer snapshot unreadable, producers rebuilt from the log alone: {exc}")
        return None


def _producer_state(batches: held.ReplicaBatches, snapshot) -> dict[int, dict]:
    """Each producer's state at the log's end as ``ProducerStateManager`` rebuilds it at load: the latest
    snapshot's entries, then the batches from its offset on: epoch, last sequence and offset, and the first
    offset of a transaction with no marker yet."""
    state: dict[int, dict] = {}
    start = 0
    if snapshot is not None:
        start, entries = snapshot
        for entry in entries:
            state[entry.producer_id] = {
                "producer_epoch": entry.producer_epoch, "last_sequence": entry.last_sequence,
                "last_offset": entry.last_offset, "closed_at": None,
                "open_transaction_first_offset": entry.current_txn_first_offset
                if entry.current_txn_first_offset >= 0 else None}
    if not len(batches):
        return state
    pid, magic, attributes = batches["producer_id"], batches["magic"], batches["attributes"]
    producing = (pid >= 0) & (magic >= 2)
    for i in np.flatnonzero(producing):
        if batches["base_offset"][i] < start and int(pid[i]) not in state:
            continue  # expired before the snapshot: the load does not know it
        entry = state.setdefault(int(pid[i]), {"producer_epoch": -1, "last_sequence": -1, "last_offset": -1,
                                                "open_transaction_first_offset": None, "closed_at": None})
        attrs = int(attributes[i])
        if attrs & 0x20:  # a COMMIT or ABORT marker ends the producer's transaction (seen in the log, snapshot or not)
            entry["closed_at"] = int(batches["base_offset"][i])
            if batches["base_offset"][i] >= start:
                entry["open_transaction_first_offset"] = None
                entry["producer_epoch"] = int(batches["producer_epoch"][i])
            continue
        if batches["base_offset"][i] < start:  # the snapshot holds its effect already
            continue
        entry["producer_epoch"] = int(batches["producer_epoch"][i])
        base, last = int(batches["base_offset"][i]), int(batches["last_offset"][i])
        if batches["base_sequence"][i] >= 0:
            entry["last_sequence"] = increment_sequence(int(batches["base_sequence"][i]), last - base)
        entry["last_offset"] = last
        if attrs & 0x10 and entry["open_transaction_first_offset"] is None:
            entry["open_transaction_first_offset"] = base
    return state


def _producer_table(states: dict[str, dict[int, dict]]) -> list[dict]:
    producers = sorted({pid for state in states.values() for pid in state})
    table = []
    for pid in producers:
        rows = [{"broker": broker, **{k: v for k, v in state[pid].items() if k != "closed_at"}}
                for broker, state in states.items() if pid in state]
        figures = {(r["producer_epoch"], r["last_sequence"], r["open_transaction_first_offset"]) for r in rows}
        table.append({"producer_id": pid, "replicas": rows,
                      "absent_on": [b for b, state in states.items() if pid not in state],
                      "agree": len(figures) == 1 and len(rows) == len(states)})
    return table


def _producer_effects(candidate: str, states: dict[str, dict[int, dict]]) -> dict:
    """What electing ``candidate`` leaves its producers with: sequence gaps (another replica holds later
    sequences of the same producer epoch) and transactions left hanging (open on the candidate, closed by a
    marker another replica holds)."""
    own = states[candidate]
    gaps, hanging = [], []
    for broker, state in states.items():
        if broker == candidate:
            continue
        for pid, theirs in state.items():
            mine = own.get(pid)
            if (mine is None or (mine["producer_epoch"] == theirs["producer_epoch"]
                                 and mine["last_sequence"] < theirs["last_sequence"])) and theirs["last_sequence"] >= 0:
                gaps.append({"producer_id": pid, "producer_epoch": theirs["producer_epoch"],
                             "last_sequence_on_new_leader": -1 if mine is None else mine["last_sequence"],
                             "last_sequence_elsewhere": theirs["last_sequence"], "held_by": broker})
            if mine is not None and mine["open_transaction_first_offset"] is not None \
                    and theirs["closed_at"] is not None and theirs["closed_at"] > mine["last_offset"]:
                hanging.append({"producer_id": pid, "first_offset": mine["open_transaction_first_offset"],
                                "marker_offset_elsewhere": theirs["closed_at"], "held_by": broker})
    return {"sequence_gaps": _first_per_producer(gaps, "last_sequence_elsewhere"),
            "hanging_transactions": _first_per_producer(hanging, "marker_offset_elsewhere")}


def _first_per_producer(items: list[dict], widest: str) -> list[dict]:
    best: dict[int, dict] = {}
    for item in items:
        if item["producer_id"] not in best or item[widest] > best[item["producer_id"]][widest]:
            best[item["producer_id"]] = item
    return [best[pid] for pid in sorted(best)]


def _summary(kafka: list[dict], rocketmq: list[dict]) -> dict:
    """Sets whose copies part and damaged replicas, of both brokers; the committed records the best Kafka
    elections still lose."""
    diverged = sum(1 for s in kafka if any(p["diverged"] for p in s["pairs"])) + sum(1 for s in rocketmq
                                                                                     if s["diverged"])
    damaged = sum(1 for s in kafka for r in s["replicas"]
                  if r["damage"]["recovery_cut"] is not None or r["damage"]["checksum_mismatches"])
    damaged += sum(1 for s in rocketmq for store in s["stores"] if store["beyond_recovery"] is not None)
    damaged += sum(1 for s in rocketmq for node in s["nodes"] if node["entries_beyond_recovery"])
    best = [next(c for c in s["candidates"] if c["broker"] == s["best_candidate"]) for s in kafka
            if s["best_candidate"] is not None]
    return {"kafka_replica_sets": len(kafka), "rocketmq_replica_sets": len(rocketmq), "diverged": diverged,
            "damaged": damaged, "committed_loss_at_best": sum(c["committed_records_lost"] for c in best)}
