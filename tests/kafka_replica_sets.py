"""Kafka replica sets built from real corpus segments by Kafka 3.9's own replication rules (issue 29).

No cluster runs here, so each scenario lays out the log dirs of brokers 1..3 as
Kafka would have left them after a history of leader changes: copies of
c01-plain-0 (or c04-txn-0) cut at batch boundaries, re-epoched by rewriting
``partitionLeaderEpoch`` (bytes 12..16 of a v2 batch, outside the CRC, which
DefaultRecordBatch computes from the attributes to the end) and extended with
c01-plain-1's batches whose ``baseOffset`` (bytes 0..8, outside the CRC too)
is rewritten so offsets continue, rolled into a new segment where Kafka's
``segment.bytes`` (131072 for these topics) would have rolled one.  Changed
segments get the indexes Kafka's recovery writes (segtool's rebuild-index
library function ``recover_partition``); unchanged ones keep the broker's.

``build(name, root)`` returns a ``ReplicaSet`` whose facts come from the
construction and from Kafka's rules applied to it, never from segtool's
replica code: each replica's offsets, checkpoints and epochs, the first
differing batch of each pair, and for each candidate leader what each follower
truncates (with the rule of the 3.9 source followed at each step) and what the
election loses.  The rules, from apache/kafka 3.9:

- ``Partition.makeLeader``: a new leader epoch is cached at the candidate's log end
  offset (``maybeAssignEpochStartOffset``) before any follower fetches.
- ``ReplicaManager.initialFetchOffset``: a follower with a latest epoch fetches from
  its log end offset with that epoch (``lastFetchedEpoch``); one without starts at
  its high watermark in the Truncating state, and
  ``AbstractFetcherThread.maybeTruncate`` sends it to ``truncateToHighWatermark``.
- ``Partition.readRecords``: the leader answers ``LeaderEpochFileCache.endOffsetFor
  (lastFetchedEpoch)``; a smaller epoch or an end offset below the fetch offset is a
  diverging epoch, which the follower passes to ``getOffsetTruncationState``, then
  ``UnifiedLog.truncateTo`` (``truncateFromEnd`` of its cache), and fetches again
  until the leader answers without one.

In 3.9 ``getOffsetTruncationState``'s ``None`` branch (the follower's
``endOffsetForEpoch`` undefined) cannot be reached through this fetch path: the
leader answers an epoch at most the follower's latest, and the follower's
``endOffsetFor`` of any epoch at most its latest is defined (its latest entry, or
``requested smaller than any known epoch`` answering that epoch with its first
entry's start offset).  ``leader_epoch_smaller`` builds the case the issue names
(the leader answers a smaller epoch the follower holds nothing at or below) and
it takes the ``Some`` branch through that answer; the model below keeps the
``None`` branch as the source has it.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from segtool.kafka.log import batch_at, frame_batches
from segtool.kafka.names import file_name
from segtool.kafka.records import batch_records, control_record_type
from segtool.ops.rebuild import recover_partition
from tests.conftest import corpus_path

C01 = ("c01-multiseg-clean", "c01-plain-0")
C01_OTHER = ("c01-multiseg-clean", "c01-plain-1")  # the records a diverging leader wrote
C01_THIRD = ("c01-multiseg-clean", "c01-plain-2")  # a re-created topic's records
C04 = ("c04-transactions", "c04-txn-0")
SEGMENT_BYTES = {"c01-plain": 131072, "c04-txn": 65536}  # case.json topic_overrides segment.bytes
INDEX_INTERVAL_BYTES = 4096  # case.json index.interval.bytes
CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"
RECREATED_TOPIC_ID = "m2b8CnUZRfGo0AHbnBYc3w"
BROKERS = (1, 2, 3)


# --- what the corpus holds ----------------------------------------------------------------------

@dataclass(frozen=True)
class Batch:
    """One whole v2 batch as its bytes, with the header fields the facts need."""

    data: bytes
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    control_type: str | None  # "COMMIT" / "ABORT" for a control batch

    @property
    def epoch(self) -> int:
        return int.from_bytes(self.data[12:16], "big", signed=True)

    @property
    def crc(self) -> int:
        return int.from_bytes(self.data[17:21], "big")

    def with_epoch(self, epoch: int) -> "Batch":
        # partitionLeaderEpoch is outside the CRC (DefaultRecordBatch: CRC covers attributes to the end)
        return _replace_bytes(self, 12, epoch.to_bytes(4, "big", signed=True), self.base_offset)

    def at_offset(self, base_offset: int) -> "Batch":
        # baseOffset is outside the CRC too; records carry deltas, so they move with it
        return _replace_bytes(self, 0, base_offset.to_bytes(8, "big"), base_offset)


def _replace_bytes(batch: Batch, at: int, value: bytes, base_offset: int) -> Batch:
    data = batch.data[:at] + value + batch.data[at + len(value):]
    shift = base_offset - batch.base_offset
    return Batch(data, base_offset, batch.last_offset + shift, batch.producer_id, batch.producer_epoch,
                 batch.base_sequence, batch.last_sequence, batch.is_transactional, batch.control_type)


@cache
def corpus_segments(case: str, partition: str) -> tuple[tuple[int, tuple[Batch, ...]], ...]:
    """(base offset, batches) of each segment of a corpus partition, in offset order."""
    directory = corpus_path("kafka", case, "data", partition)
    out = []
    for log in sorted(directory.glob("*.log")):
        data = log.read_bytes()
        positions, _, _ = frame_batches(data, 0, len(data), len(data))
        batches = []
        for position in positions:
            header = batch_at(data, position)
            control = control_record_type(batch_records(header)[0])[1] if header.is_control else None
            batches.append(Batch(header.raw(), header.base_offset, header.last_offset, header.producer_id,
                                 header.producer_epoch, header.base_sequence, header.last_sequence,
                                 header.is_transactional, control))
        out.append((int(log.name.split(".")[0]), tuple(batches)))
    return tuple(out)


def corpus_batches(source: tuple[str, str]) -> list[Batch]:
    return [batch for _, batches in corpus_segments(*source) for batch in batches]


@cache
def corpus_topic_id(case: str, partition: str) -> str:
    text = (corpus_path("kafka", case, "data", partition) / "partition.metadata").read_text()
    return text.split("topic_id:")[1].strip()


# --- a broker's log, as lists of segments -------------------------------------------------------

Segments = list[tuple[int, list[Batch]]]


def log_prefix(source: tuple[str, str], end: int, start: int = 0) -> Segments:
    """The corpus partition's segments holding offsets [start, end), both batch boundaries; a
    segment before ``start`` is gone (retention), ``start`` inside a segment is a log start
    offset Kafka moved there (its segment stays)."""
    out = []
    for base, batches in corpus_segments(*source):
        kept = [b for b in batches if b.last_offset < end]
        if kept and kept[-1].last_offset >= start:
            out.append((base, kept))
    assert end in {b.last_offset + 1 for _, bs in out for b in bs} | {start}, f"{end} is not a batch boundary"
    return out


def re_epoch(segments: Segments, runs: list[tuple[int, int]]) -> Segments:
    """Each batch takes the epoch of the last (epoch, first offset) run starting at or before it."""
    def epoch_of(offset: int) -> int:
        return [epoch for epoch, first in runs if first <= offset][-1]
    return [(base, [b.with_epoch(epoch_of(b.base_offset)) for b in batches]) for base, batches in segments]


def extend(segments: Segments, source: list[Batch], end: int, epoch: int, segment_bytes: int,
           start: int | None = None) -> Segments:
    """Append ``source``'s batches as a leader of ``epoch`` would write them, from the log end
    offset (or ``start`` for an empty log) to the first batch boundary at or after ``end``,
    rolling a segment where ``LogSegment``'s size would pass ``segment_bytes`` (UnifiedLog.maybeRoll)."""
    out = [(base, list(batches)) for base, batches in segments]
    next_offset = out[-1][1][-1].last_offset + 1 if out else start
    for batch in source:
        if next_offset >= end:
            break
        moved = batch.at_offset(next_offset).with_epoch(epoch)
        if not out or sum(len(b.data) for b in out[-1][1]) + len(moved.data) > segment_bytes:
            out.append((next_offset, []))
        out[-1][1].append(moved)
        next_offset = moved.last_offset + 1
    return out


def batches_of(segments: Segments) -> list[Batch]:
    return [b for _, batches in segments for b in batches]


def from_offset(source: list[Batch], offset: int) -> list[Batch]:
    """A corpus partition's batches from the first one at or after ``offset``: records written about
    when the replaced ones were (the partitions were produced round-robin)."""
    return [b for b in source if b.base_offset >= offset]


def boundary(source: tuple[str, str], near: int) -> int:
    """The first batch boundary of a corpus partition at or after ``near``."""
    return min(b.base_offset for b in corpus_batches(source) if b.base_offset >= near)


def epoch_runs(batches: list[Batch]) -> tuple[tuple[int, int], ...]:
    runs: list[tuple[int, int]] = []
    for b in batches:
        if not runs or runs[-1][0] != b.epoch:
            runs.append((b.epoch, b.base_offset))
    return tuple(runs)


# --- facts ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TornBatch:
    segment: str  # file name of the segment holding it
    position: int
    base_offset: int  # where Kafka's recovery (LogSegment.recover) cuts the log


@dataclass(frozen=True)
class ProducerState:
    producer_epoch: int
    last_sequence: int
    last_offset: int


@dataclass(frozen=True)
class Replica:
    broker_id: int
    log_dir: Path
    topic_id: str
    log_start_offset: int
    log_end_offset: int  # after Kafka loads the log dir (a torn batch cut by recovery)
    high_watermark: int | None  # replication-offset-checkpoint's figure; None: no such file
    loaded_high_watermark: int  # Partition.createLog: the checkpoint or 0, UnifiedLog.updateHighWatermark clamps to [log start, log end]
    recovery_point: int | None  # recovery-point-offset-checkpoint's figure
    log_start_checkpoint: int | None  # log-start-offset-checkpoint's entry (LogManager writes one only past the first segment's base)
    clean_shutdown: bool
    leader_epochs: tuple[tuple[int, int], ...] | None  # leader-epoch-checkpoint (epoch, start offset); None: no file
    batch_epochs: tuple[tuple[int, int], ...]  # (epoch, first offset) runs of the batches Kafka keeps
    producers: dict[int, ProducerState]  # idempotent/transactional producers by id, as the batches leave them
    open_transactions: dict[int, int]  # producer id -> first offset of a transaction without its marker
    torn: TornBatch | None = None
    records: frozenset = field(default=frozenset(), repr=False)  # (offset, base offset, epoch, crc, last offset) per record kept

    @property
    def cache(self) -> tuple[tuple[int, int], ...]:
        """The LeaderEpochFileCache Kafka loads: the checkpoint, or empty without one."""
        return self.leader_epochs or ()


@dataclass(frozen=True)
class Divergence:
    base_offset: int  # the first offset at which the two copies hold different batches
    positions: dict[int, tuple[str, int]]  # broker -> (segment file name, byte position of its batch there)


@dataclass(frozen=True)
class Round:
    fetch_offset: int
    last_fetched_epoch: int | None
    leader_answer: tuple[int, int] | None  # the leader's endOffsetFor (epoch, end offset); None for the HW path
    truncate_to: int
    rule: str


@dataclass(frozen=True)
class Truncation:
    follower: int
    truncate_to: int  # the follower's log end offset after it has truncated (its own if nothing)
    rounds: tuple[Round, ...]  # one per diverging answer (or the HW truncation); () when nothing diverges
    dropped: tuple[int, int] | None  # [first, end) offsets the follower removes
    dropped_records: int
    dropped_below_high_watermark: int  # of those, below the follower's loaded high watermark
    dropped_held_by_leader: int  # of those, on the candidate byte for byte (fetched again, not lost)


@dataclass(frozen=True)
class Election:
    candidate: int
    leader_epoch: int  # the epoch the controller gives it: one past every epoch the replicas hold
    epoch_start_offset: int  # Partition.makeLeader: the candidate's log end offset
    rule: str
    truncations: dict[int, Truncation]
    committed_lost: int  # records from the candidate's log start below some replica's loaded high watermark it lacks byte for byte


@dataclass(frozen=True)
class ReplicaSet:
    name: str
    topic: str
    partition: int
    replicas: dict[int, Replica]
    first_difference: dict[tuple[int, int], Divergence | None]  # pairs sharing a topic id; None: one a prefix of the other
    elections: dict[int, Election]  # candidates of the topic id held by two or more brokers
    intended_problems: dict[int, set[str]]  # broker -> the finding kinds of `segtool inspect` the scenario causes

    @property
    def brokers(self) -> dict[int, Path]:
        return {broker: replica.log_dir for broker, replica in self.replicas.items()}

    @property
    def partition_dir(self) -> str:
        return f"{self.topic}-{self.partition}"


# --- Kafka's rules ------------------------------------------------------------------------------

UNDEFINED = None


def end_offset_for(cache_entries: tuple[tuple[int, int], ...], requested: int, log_end: int):
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) or UNDEFINED, with the branch taken."""
    epochs = [epoch for epoch, _ in cache_entries]
    if epochs and epochs[-1] == requested:
        return (requested, log_end), "the latest epoch: the log end offset"
    higher = [(e, s) for e, s in cache_entries if e > requested]
    if not higher:
        return UNDEFINED, "no epoch above it: undefined"
    floor = [(e, s) for e, s in cache_entries if e <= requested]
    if not floor:
        return (requested, higher[0][1]), "below every epoch: the requested epoch, the first entry's start offset"
    return (floor[-1][0], higher[0][1]), "the floor epoch, the next epoch's start offset"


def truncate_from_end(cache_entries: tuple[tuple[int, int], ...], end: int) -> tuple[tuple[int, int], ...]:
    """LeaderEpochFileCache.truncateFromEnd: entries starting at or after ``end`` go."""
    return tuple((e, s) for e, s in cache_entries if s < end)


def follow(leader: Replica, leader_cache: tuple[tuple[int, int], ...], follower: Replica) -> list[Round]:
    """The rounds a follower of ``leader`` goes through before it fetches without diverging."""
    leo, follower_cache = follower.log_end_offset, follower.cache
    if not follower_cache:
        hw = follower.loaded_high_watermark
        return [Round(hw, None, None, min(hw, leo),
                      f"ReplicaManager.initialFetchOffset: no leader epoch, so the high watermark {hw}; "
                      f"AbstractFetcherThread.maybeTruncate: truncateToHighWatermark({hw})")]
    rounds = []
    while follower_cache:
        asked = follower_cache[-1][0]
        answer, leader_branch = end_offset_for(leader_cache, asked, leader.log_end_offset)
        if answer is UNDEFINED or leo < leader.log_start_offset:
            raise NotImplementedError("an OffsetOutOfRange answer: no scenario builds one")
        epoch, end = answer
        if epoch >= asked and end >= leo:
            break  # Partition.readRecords: no diverging epoch, the follower fetches from its log end
        mine, follower_branch = end_offset_for(follower_cache, epoch, leo)
        if mine is UNDEFINED:
            target, branch = min(end, leo), "None branch: min(leader's end offset, log end)"
        elif mine[0] != epoch:
            target, branch = min(mine[1], leo), (f"epoch {epoch} unknown to the follower: truncate to its end of "
                                                 f"epoch {mine[0]} and ask again")
        else:
            target, branch = min(mine[1], end, leo), "same epoch: min(follower's end, leader's end, log end)"
        rounds.append(Round(leo, asked, answer, target,
                            f"Partition.readRecords: leader's endOffsetFor({asked}) = {answer} ({leader_branch}), "
                            f"diverging; getOffsetTruncationState: follower's endOffsetFor({epoch}) = {mine} "
                            f"({follower_branch}), {branch}"))
        leo = min(leo, target)
        follower_cache = truncate_from_end(follower_cache, leo)  # UnifiedLog.truncateTo
        if len(rounds) > 10:
            raise AssertionError("truncation does not converge")
    return rounds


def elect(candidate: Replica, followers: list[Replica]) -> Election:
    epoch = 1 + max(e for r in (candidate, *followers) for e, _ in (*r.cache, *r.batch_epochs))
    start = candidate.log_end_offset
    # maybeAssignEpochStartOffset -> LeaderEpochFileCache.assign: entries at or after the new one go
    leader_cache = tuple((e, s) for e, s in candidate.cache if e < epoch and s < start) + ((epoch, start),)
    truncations = {}
    for follower in followers:
        rounds = follow(candidate, leader_cache, follower)
        end = min([follower.log_end_offset] + [r.truncate_to for r in rounds])
        # LogSegment.truncateTo cuts at the batch holding the offset (translateOffset): all of that batch goes
        dropped = {r for r in follower.records if r[4] >= end}
        truncations[follower.broker_id] = Truncation(
            follower.broker_id, end, tuple(rounds), (end, follower.log_end_offset) if dropped else None,
            len(dropped), sum(1 for r in dropped if r[0] < follower.loaded_high_watermark),
            len(dropped & candidate.records))
    # below the candidate's log start its followers delete too (they follow the leader's log start)
    committed = {r for replica in (candidate, *followers) for r in replica.records
                 if r[0] < replica.loaded_high_watermark and r[0] >= candidate.log_start_offset}
    return Election(candidate.broker_id, epoch, start,
                    f"Partition.makeLeader: leader epoch {epoch} cached at log end offset {start}", truncations,
                    len(committed - candidate.records))


def first_difference(a: Replica, b: Replica, layout: dict[int, list[tuple[str, int, Batch]]]) -> Divergence | None:
    """The first offset both hold whole batches of that differ in a byte (both from the later log start)."""
    start = max(a.log_start_offset, b.log_start_offset)
    left = [x for x in layout[a.broker_id] if x[2].last_offset >= start and x[2].base_offset < a.log_end_offset]
    right = [x for x in layout[b.broker_id] if x[2].last_offset >= start and x[2].base_offset < b.log_end_offset]
    for (ls, lp, lb), (rs, rp, rb) in zip(left, right):
        if lb.data != rb.data:
            return Divergence(max(start, min(lb.base_offset, rb.base_offset)),
                              {a.broker_id: (ls, lp), b.broker_id: (rs, rp)})
    return None


# --- writing a broker's log dir -------------------------------------------------------------------

def directory_id(broker: int) -> str:
    """A fixed base64url UUID per broker, as Kafka writes directory.id."""
    raw = hashlib.sha256(f"segtool-replicas-{broker}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def offset_checkpoint(entries: list[tuple[str, int, int]]) -> str:
    """CheckpointFile's text: version 0, the count, one ``topic partition offset`` line each."""
    return "".join(f"{line}\n" for line in ["0", str(len(entries)), *(f"{t} {p} {o}" for t, p, o in entries)])


def epoch_checkpoint(entries: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"{line}\n" for line in ["0", str(len(entries)), *(f"{e} {s}" for e, s in entries)])


@dataclass
class BrokerPlan:
    """What one broker's log dir holds, before it is written."""

    broker: int
    source: tuple[str, str]
    segments: Segments
    high_watermark: int | None  # None: no replication-offset-checkpoint
    leader_epochs: tuple[tuple[int, int], ...] | None = None  # None with write_epochs: from the batches
    write_epochs: bool = True
    clean_shutdown: bool = True
    recovery_point: int | None = None  # None: the log end offset (a clean stop flushes all)
    log_start_offset: int | None = None  # None: the first segment's base
    topic_id: str | None = None
    tear_last_batch: bool = False
    write_recovery_point: bool = True
    write_high_watermark: bool = True


def _write_broker(plan: BrokerPlan, root: Path, topic: str, partition: int) -> tuple[Replica, list]:
    log_dir = root / f"broker{plan.broker}"
    part_dir = log_dir / f"{topic}-{partition}"
    part_dir.mkdir(parents=True)
    corpus_dir = corpus_path("kafka", plan.source[0], "data", plan.source[1])
    originals = dict(corpus_segments(*plan.source))
    unchanged_end = 0  # offsets below this equal the corpus partition's: its producer snapshots hold
    for (base, mine), original in zip(plan.segments, [originals.get(b) for b, _ in plan.segments]):
        if original is None or [b.data for b in mine] != [b.data for b in original[:len(mine)]]:
            break
        unchanged_end = mine[-1].last_offset + 1
    layout = []  # (segment name, position, batch) of each whole batch written
    torn = None
    for index, (base, seg_batches) in enumerate(plan.segments):
        name = file_name(base, ".log")
        data = b"".join(b.data for b in seg_batches)
        position = 0
        for b in seg_batches:
            layout.append((name, position, b))
            position += len(b.data)
        if plan.tear_last_batch and index == len(plan.segments) - 1:
            last = seg_batches[-1]
            torn = TornBatch(name, len(data) - len(last.data), last.base_offset)
            data = data[:len(data) - len(last.data) // 2]  # a crash in the middle of the last write
            layout.pop()
        (part_dir / name).write_bytes(data)
        original_log = corpus_dir / name
        if original_log.exists() and original_log.read_bytes() == data:
            for suffix in (".index", ".timeindex", ".txnindex"):
                if (corpus_dir / file_name(base, suffix)).exists():
                    shutil.copyfile(corpus_dir / file_name(base, suffix), part_dir / file_name(base, suffix))
        else:
            snapshot = corpus_dir / file_name(base, ".snapshot")
            seed = str(snapshot) if base <= unchanged_end and snapshot.exists() else str(part_dir / "none.snapshot")
            result = recover_partition([str(part_dir / name)], seed, INDEX_INTERVAL_BYTES, hash_inputs=False)[0]
            (part_dir / file_name(base, ".index")).write_bytes(result["offset_index"])
            (part_dir / file_name(base, ".timeindex")).write_bytes(result["time_index"])
            if result["txn_index"] is not None:
                (part_dir / file_name(base, ".txnindex")).write_bytes(result["txn_index"])
    kept = [b for _, _, b in layout]
    first_base = plan.segments[0][0]
    log_start = plan.log_start_offset if plan.log_start_offset is not None else first_base
    kept = [b for b in kept if b.last_offset >= log_start]
    log_end = kept[-1].last_offset + 1 if kept else log_start
    for snapshot in corpus_dir.glob("*.snapshot"):
        offset = int(snapshot.name.split(".")[0])
        if first_base <= offset <= min(unchanged_end, log_end):
            shutil.copyfile(snapshot, part_dir / snapshot.name)
    topic_id = plan.topic_id or corpus_topic_id(*plan.source)
    (part_dir / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")
    runs = epoch_runs(kept)
    leader_epochs = None
    if plan.write_epochs:
        leader_epochs = plan.leader_epochs if plan.leader_epochs is not None else runs
        (part_dir / "leader-epoch-checkpoint").write_text(epoch_checkpoint(leader_epochs))
    (log_dir / "meta.properties").write_text(
        f"#\n#Thu Nov 27 19:31:00 UTC 2025\nnode.id={plan.broker}\ndirectory.id={directory_id(plan.broker)}\n"
        f"version=1\ncluster.id={CLUSTER_ID}\n")
    recovery_point = plan.recovery_point if plan.recovery_point is not None else log_end
    if plan.write_recovery_point:
        (log_dir / "recovery-point-offset-checkpoint").write_text(
            offset_checkpoint([(topic, partition, recovery_point)]))
    if plan.high_watermark is not None:
        (log_dir / "replication-offset-checkpoint").write_text(
            offset_checkpoint([(topic, partition, plan.high_watermark)]))
    log_start_entry = log_start if log_start > first_base else None
    (log_dir / "log-start-offset-checkpoint").write_text(
        offset_checkpoint([(topic, partition, log_start_entry)] if log_start_entry is not None else []))
    if plan.clean_shutdown:
        (log_dir / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":%d}' % (100 + plan.broker))
    producers: dict[int, ProducerState] = {}
    open_transactions: dict[int, int] = {}
    for b in kept:
        if b.producer_id < 0:
            continue
        if b.control_type is not None:
            open_transactions.pop(b.producer_id, None)
            continue
        producers[b.producer_id] = ProducerState(b.producer_epoch, b.last_sequence, b.last_offset)
        if b.is_transactional:
            open_transactions.setdefault(b.producer_id, b.base_offset)
    records = frozenset((o, b.base_offset, b.epoch, b.crc, b.last_offset) for b in kept
                        for o in range(max(b.base_offset, log_start), b.last_offset + 1))
    hw = plan.high_watermark if plan.high_watermark is not None else 0
    replica = Replica(
        plan.broker, log_dir, topic_id, log_start, log_end, plan.high_watermark,
        min(max(hw, log_start), log_end), recovery_point if plan.write_recovery_point else None, log_start_entry,
        plan.clean_shutdown, leader_epochs, runs, producers, open_transactions, torn, records)
    return replica, layout


def _replica_set(name: str, root: Path, topic: str, plans: list[BrokerPlan],
                 intended: dict[int, set[str]] | None = None) -> ReplicaSet:
    root = root / name
    written = {p.broker: _write_broker(p, root, topic, 0) for p in plans}
    replicas = {broker: replica for broker, (replica, _) in written.items()}
    layout = {broker: lay for broker, (_, lay) in written.items()}
    differences, elections = {}, {}
    for a in replicas.values():
        peers = [b for b in replicas.values() if b.topic_id == a.topic_id and b.broker_id != a.broker_id]
        for b in peers:
            if a.broker_id < b.broker_id:
                differences[(a.broker_id, b.broker_id)] = first_difference(a, b, layout)
        if peers:
            elections[a.broker_id] = elect(a, peers)
    return ReplicaSet(name, topic, 0, replicas, differences, elections, intended or {})


# --- the scenarios --------------------------------------------------------------------------------

def in_sync(root: Path) -> ReplicaSet:
    """Three identical copies; leaders changed cleanly twice (epochs 0, 1 from 1047, 2 from 1571)."""
    runs = [(0, 0), (1, 1047), (2, 1571)]
    segments = re_epoch(log_prefix(C01, 2500), runs)
    return _replica_set("in_sync", root, "c01-plain",
                        [BrokerPlan(b, C01, segments, high_watermark=2500) for b in BROKERS])


def lagging_follower(root: Path) -> ReplicaSet:
    """Broker 2 fell behind (out of the ISR): its copy ends at a batch boundary near 2200 and its
    high watermark, as the leader last told it, near 2000; brokers 1 and 3 hold all 2500."""
    cut, hw = boundary(C01, 2200), boundary(C01, 2000)
    full = log_prefix(C01, 2500)
    return _replica_set("lagging_follower", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, log_prefix(C01, cut), high_watermark=hw),
        BrokerPlan(3, C01, full, high_watermark=2500)])


def unclean_election(root: Path) -> ReplicaSet:
    """Broker 1, leader of epoch 0, wrote to 2500 with its high watermark near 2200; broker 2, out
    of the ISR at a boundary near 1900, was elected uncleanly with epoch 1 (broker 1 down) and
    wrote c01-plain-1's records to about 2300; broker 3 then followed broker 2 (truncated to
    broker 2's epoch 1 start and fetched) and lags it at about 2150."""
    lag, old_hw = boundary(C01, 1900), boundary(C01, 2200)
    other = corpus_batches(C01_OTHER)
    new_leader = extend(log_prefix(C01, lag), from_offset(other, lag), 2300, 1, SEGMENT_BYTES["c01-plain"])
    new_end = batches_of(new_leader)[-1].last_offset + 1
    follower_end = min(b.base_offset for b in batches_of(new_leader) if b.base_offset >= 2150)
    follower = [(base, [b for b in bs if b.last_offset < follower_end]) for base, bs in new_leader]
    follower = [(base, bs) for base, bs in follower if bs]
    new_hw = min(b.base_offset for b in batches_of(new_leader) if b.base_offset >= 2050)
    assert lag < new_hw < follower_end < new_end
    return _replica_set("unclean_election", root, "c01-plain", [
        BrokerPlan(1, C01, log_prefix(C01, 2500), high_watermark=old_hw),
        BrokerPlan(2, C01, new_leader, high_watermark=new_hw),
        BrokerPlan(3, C01, follower, high_watermark=new_hw)])


def multi_round(root: Path) -> ReplicaSet:
    """Leadership went back and forth with unclean elections: epoch 0 (broker 1) to 2500 of which
    broker 2 had y≈1600; epoch 1: broker 2 led from y and wrote c01-plain-1 records to w≈1800;
    epoch 2: broker 1 led from its x≈1900 (re-epoching its own records from there); epoch 3:
    broker 2 again from w, writing to ≈2100.  Broker 1 never had epochs 1 and 3, broker 2
    never had 2: a follower's first answer names an epoch it lacks, so truncation takes a
    second OffsetsForLeaderEpoch round.  Broker 3 is an in-sync copy of broker 1."""
    y, x = boundary(C01, 1600), boundary(C01, 1900)
    other = corpus_batches(C01_OTHER)
    leader = re_epoch(log_prefix(C01, 2500), [(0, 0), (2, x)])
    written = from_offset(other, y)  # what broker 2 wrote as leader, epoch 1 then epoch 3
    prefix = log_prefix(C01, y)
    epoch1 = extend(prefix, written, 1800, 1, SEGMENT_BYTES["c01-plain"])
    w = batches_of(epoch1)[-1].last_offset + 1
    used = len(batches_of(epoch1)) - len(batches_of(prefix))
    zombie = extend(epoch1, written[used:], 2100, 3, SEGMENT_BYTES["c01-plain"])
    assert y < w < x
    return _replica_set("multi_round", root, "c01-plain", [
        BrokerPlan(1, C01, leader, high_watermark=2500),
        BrokerPlan(2, C01, zombie, high_watermark=y),
        BrokerPlan(3, C01, leader, high_watermark=2500)])


def follower_without_epochs(root: Path) -> ReplicaSet:
    """Broker 2 holds a prefix of the log to about 2300 with its high watermark near 2000 and no
    leader-epoch-checkpoint, after a clean stop (so no recovery rebuilds a cache): as a follower
    it truncates to its high watermark, not by epochs."""
    runs = [(0, 0), (1, 1047)]
    cut, hw = boundary(C01, 2300), boundary(C01, 2000)
    full = re_epoch(log_prefix(C01, 2500), runs)
    return _replica_set("follower_without_epochs", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, re_epoch(log_prefix(C01, cut), runs), high_watermark=hw, write_epochs=False),
        BrokerPlan(3, C01, full, high_watermark=2500)])


def leader_epoch_smaller(root: Path) -> ReplicaSet:
    """Broker 1 led epochs 0 and 1 (from ≈1300) to 2500; broker 2 led an epoch 2 alone (broker 1
    down), writing c01-plain-1's records, and DeleteRecords then moved its log start to a batch
    boundary inside its first remaining segment (1571): its cache holds only (2, log start).
    Asked for epoch 2, broker 1 as leader answers epoch 1, below every epoch broker 2 holds."""
    p = boundary(C01, 1300)
    other = corpus_batches(C01_OTHER)
    full = re_epoch(log_prefix(C01, 2500), [(0, 0), (1, p)])
    zombie = extend([], from_offset(other, 1571), 2200, 2, SEGMENT_BYTES["c01-plain"], start=1571)
    log_start = batches_of(zombie)[2].base_offset
    return _replica_set("leader_epoch_smaller", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, zombie, high_watermark=log_start, leader_epochs=((2, log_start),),
                   log_start_offset=log_start),
        BrokerPlan(3, C01, full, high_watermark=2500)])


def recreated_topic(root: Path) -> ReplicaSet:
    """c01-plain was deleted and re-created while broker 3 was away: brokers 1 and 2 hold the old
    topic id's copies, broker 3 the new topic's first two segments (c01-plain-2's records)."""
    full = log_prefix(C01, 2500)
    return _replica_set("recreated_topic", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, full, high_watermark=2500),
        BrokerPlan(3, C01_THIRD, log_prefix(C01_THIRD, 1047), high_watermark=1047, topic_id=RECREATED_TOPIC_ID)])


def damaged_replica(root: Path) -> ReplicaSet:
    """Broker 2 crashed while writing its last batch (half of it on disk, no clean-shutdown
    marker, recovery point at its last segment's base): LogLoader recovers that segment and
    LogSegment.recover cuts the torn batch."""
    full = log_prefix(C01, 2500)
    last_base = full[-1][0]
    return _replica_set("damaged_replica", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, full, high_watermark=2500, clean_shutdown=False, recovery_point=last_base,
                   tear_last_batch=True),
        BrokerPlan(3, C01, full, high_watermark=2500)],
        intended={2: {"no_clean_shutdown_marker", "recovery_truncation", "checkpoint_beyond_log_end"}})


def missing_checkpoints(root: Path) -> ReplicaSet:
    """Broker 2 lags at about 2200 and has no replication-offset-checkpoint: Kafka loads its high
    watermark as 0 (then its log start); the others hold all 2500."""
    full = log_prefix(C01, 2500)
    return _replica_set("missing_checkpoints", root, "c01-plain", [
        BrokerPlan(1, C01, full, high_watermark=2500),
        BrokerPlan(2, C01, log_prefix(C01, boundary(C01, 2200)), high_watermark=None),
        BrokerPlan(3, C01, full, high_watermark=2500)])


def hanging_transaction(root: Path) -> ReplicaSet:
    """c04: broker 2 holds every record of the last round's transactions and producer A's COMMIT
    marker, but not producer B's COMMIT (the last batch, committed on broker 1, high watermark
    1014): electing broker 2 leaves B's transaction open with no coordinator to end it."""
    full = log_prefix(C04, 1014)
    last = batches_of(full)[-1]
    assert last.control_type == "COMMIT"
    return _replica_set("hanging_transaction", root, "c04-txn", [
        BrokerPlan(1, C04, full, high_watermark=1014),
        BrokerPlan(2, C04, log_prefix(C04, last.base_offset), high_watermark=last.base_offset - 1),
        BrokerPlan(3, C04, full, high_watermark=1014)])


def producer_sequence_gap(root: Path) -> ReplicaSet:
    """c04: broker 2 stopped after round 22's markers and lost the last round: both idempotent
    producers' last batches (A's four, B's four) and their markers; its producer state ends
    their sequences short of what brokers 1 and 3 (and the producers) have acknowledged."""
    batches = batches_of(log_prefix(C04, 1014))
    markers = [b for b in batches if b.control_type is not None]
    cut = markers[-3].last_offset + 1  # after the second-to-last round's two markers
    assert markers[-4].last_offset + 1 == markers[-3].base_offset
    return _replica_set("producer_sequence_gap", root, "c04-txn", [
        BrokerPlan(1, C04, log_prefix(C04, 1014), high_watermark=1014),
        BrokerPlan(2, C04, log_prefix(C04, cut), high_watermark=cut),
        BrokerPlan(3, C04, log_prefix(C04, 1014), high_watermark=1014)])


SCENARIOS = {f.__name__: f for f in (
    in_sync, lagging_follower, unclean_election, multi_round, follower_without_epochs, leader_epoch_smaller,
    recreated_topic, damaged_replica, missing_checkpoints, hanging_transaction, producer_sequence_gap)}


def build(name: str, root: Path) -> ReplicaSet:
    """The scenario ``name``'s broker log dirs under ``root/name`` and its facts."""
    return SCENARIOS[name](Path(root))
