"""The built Kafka replica sets (tests/kafka_replica_sets.py) are what they claim to be.

Each broker's log dir loads in `segtool inspect` with no damage but the scenario's own,
its checkpoints parse to the facts, its batches carry the intended epochs with their
checksums intact, and two copies hold the same bytes up to their first difference.
The truncation facts are checked against the branch of Kafka 3.9's rules each scenario
was built to reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segtool.kafka.log import batch_at, frame_batches
from segtool.kafka.log_dir import parse_meta_properties
from segtool.kafka.state import read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata
from tests.conftest import segtool
from tests.kafka_replica_sets import (SCENARIOS, ReplicaSet, build, directory_id, end_offset_for, truncate_from_end)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[dict[str, ReplicaSet], Path]:
    root = tmp_path_factory.mktemp("replica-sets")
    return {}, root


def _scenario(built, name: str) -> ReplicaSet:
    cache, root = built
    if name not in cache:
        cache[name] = build(name, root)
    return cache[name]


def _file_batches(partition_dir: Path) -> list[tuple[str, int, object]]:
    """(segment name, position, batch) of every whole batch in the built files, in offset order."""
    out = []
    for log in sorted(partition_dir.glob("*.log")):
        data = log.read_bytes()
        positions, _, _ = frame_batches(data, 0, len(data), len(data))
        out.extend((log.name, position, batch_at(data, position)) for position in positions)
    return out


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_broker_loads_in_inspect_as_built(built, name):
    """inspect (Kafka's LogManager load) finds only the damage the scenario made, and the log end,
    log start, epochs, checkpoints and topic id the facts give."""
    replicas = _scenario(built, name)
    for broker, replica in replicas.replicas.items():
        result = segtool("inspect", replica.log_dir, "--json")
        report = json.loads(result.stdout)
        (log_dir,) = report["log_dirs"]
        (partition,) = log_dir["partitions"]
        kinds = {p["kind"] for p in log_dir["problems"] + partition["problems"]}
        intended = replicas.intended_problems.get(broker, set())
        assert kinds == intended, (broker, kinds)
        assert result.returncode == (1 if "recovery_truncation" in intended else 0), result.stdout
        assert log_dir["meta_properties"]["node_id"] == broker
        assert log_dir["clean_shutdown"]["marker_present"] == replica.clean_shutdown
        assert partition["topic_id"] == replica.topic_id
        assert partition["plan"]["log_end_offset"] == replica.log_end_offset
        assert partition["plan"]["new_log_start_offset"] == replica.log_start_offset
        assert [(e["epoch"], e["start_offset"]) for e in partition["leader_epochs"]] == list(replica.cache)
        assert partition["checkpoints"].get("replication_offset") == replica.high_watermark
        assert partition["checkpoints"]["recovery_point"] == replica.recovery_point
        assert partition["checkpoints"].get("log_start_offset") == replica.log_start_checkpoint
        truncated = partition["plan"]["truncated_at"]
        assert (truncated and truncated["offset"]) == (replica.torn and replica.torn.base_offset)


@pytest.mark.parametrize("name", SCENARIOS)
def test_checkpoints_parse_to_the_facts(built, name):
    """Kafka's text formats as CheckpointFile, MetaProperties and PartitionMetadataFile read them."""
    replicas = _scenario(built, name)
    key = (replicas.topic, replicas.partition)
    for broker, replica in replicas.replicas.items():
        meta = parse_meta_properties((replica.log_dir / "meta.properties").read_bytes())
        assert (meta.version, meta.node_id, meta.directory_id) == (1, broker, directory_id(broker))
        hw_file = replica.log_dir / "replication-offset-checkpoint"
        assert (read_offset_checkpoint(hw_file).get(key) if hw_file.exists() else None) == replica.high_watermark
        assert read_offset_checkpoint(replica.log_dir / "recovery-point-offset-checkpoint") == \
            {key: replica.recovery_point}
        assert read_offset_checkpoint(replica.log_dir / "log-start-offset-checkpoint").get(key) == \
            replica.log_start_checkpoint
        partition_dir = replica.log_dir / replicas.partition_dir
        epochs_file = partition_dir / "leader-epoch-checkpoint"
        assert (tuple((e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(epochs_file))
                if epochs_file.exists() else None) == replica.leader_epochs
        assert read_partition_metadata(partition_dir / "partition.metadata").topic_id == replica.topic_id
        assert (replica.log_dir / ".kafka_cleanshutdown").exists() == replica.clean_shutdown


@pytest.mark.parametrize("name", SCENARIOS)
def test_batches_carry_the_intended_epochs(built, name):
    """Every whole batch keeps its checksum (the rewritten epoch and base offset lie outside it),
    offsets run on without a gap, and the epoch runs are the facts' (and the cache's, where the
    scenario writes one); a torn batch is the only bytes past the last whole one."""
    replicas = _scenario(built, name)
    for replica in replicas.replicas.values():
        batches = [b for _, _, b in _file_batches(replica.log_dir / replicas.partition_dir)]
        assert all(b.crc_valid for b in batches)
        assert all(a.last_offset + 1 == b.base_offset for a, b in zip(batches, batches[1:]))
        kept = [b for b in batches if b.last_offset >= replica.log_start_offset]
        runs = []
        for b in kept:
            if not runs or runs[-1][0] != b.partition_leader_epoch:
                runs.append((b.partition_leader_epoch, b.base_offset))
        assert tuple(runs) == replica.batch_epochs
        assert kept[-1].last_offset + 1 == replica.log_end_offset
        if replica.leader_epochs is not None:
            assert [e for e, _ in replica.leader_epochs] == [e for e, _ in runs]


@pytest.mark.parametrize("name", SCENARIOS)
def test_copies_share_their_bytes_up_to_the_first_difference(built, name):
    """Two copies hold the same batches byte for byte from the later log start up to the first
    difference the facts give (or the shorter end), and differ in the batches named there."""
    replicas = _scenario(built, name)
    assert replicas.first_difference, "every scenario has two copies of one partition"
    for (a, b), difference in replicas.first_difference.items():
        left, right = (replicas.replicas[x] for x in (a, b))
        start = max(left.log_start_offset, right.log_start_offset)
        end = difference.base_offset if difference else min(left.log_end_offset, right.log_end_offset)
        sides = [[(s, p, x) for s, p, x in _file_batches(r.log_dir / replicas.partition_dir)
                  if x.last_offset >= start] for r in (left, right)]
        shared = [[x.raw() for _, _, x in side if x.last_offset < end] for side in sides]
        assert shared[0] == shared[1] and (end == start or shared[0])
        if difference is not None:
            at = [next((s, p) for s, p, x in side if x.last_offset >= end) for side in sides]
            assert at == [difference.positions[a], difference.positions[b]]
            firsts = [next(x for _, _, x in side if x.last_offset >= end) for side in sides]
            assert firsts[0].raw() != firsts[1].raw()


def test_a_recreated_topic_is_another_partition(built):
    """Broker 3's copy has its own topic id: it is compared with no one and elects no one."""
    replicas = _scenario(built, "recreated_topic")
    assert replicas.replicas[3].topic_id != replicas.replicas[1].topic_id == replicas.replicas[2].topic_id
    assert set(replicas.first_difference) == {(1, 2)} and set(replicas.elections) == {1, 2}


# --- the branch of Kafka's rules each scenario reaches ---------------------------------------------

def test_end_offset_for_follows_leader_epoch_file_cache():
    """LeaderEpochFileCacheTest's cases (3.9): the latest epoch answers the log end offset, a
    missing epoch the floor epoch and the next start offset, an epoch below every entry itself
    with the first entry's start, one above every entry (not the latest) undefined."""
    cache = ((2, 6), (4, 8), (6, 14))  # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    assert end_offset_for(cache, 6, 20)[0] == (6, 20)
    assert end_offset_for(cache, 5, 20)[0] == (4, 14)
    assert end_offset_for(cache, 3, 20)[0] == (2, 8)
    assert end_offset_for(cache, 1, 20)[0] == (1, 6)
    assert end_offset_for(((2, 6),), 7, 20)[0] is None
    assert end_offset_for((), 0, 20)[0] is None
    assert truncate_from_end(cache, 8) == ((2, 6),)


def test_unclean_election_loses_committed_records_either_way(built):
    """Broker 2's epoch 1 began at its log end when broker 1 held more: electing broker 1 again drops
    broker 2's and 3's epoch-1 records, electing broker 2 drops broker 1's tail past the lag."""
    replicas = _scenario(built, "unclean_election")
    lag = replicas.replicas[2].batch_epochs[1][1]
    assert replicas.first_difference[(1, 2)].base_offset == lag
    for candidate, followers in ((1, (2, 3)), (2, (1,))):
        for follower in followers:
            truncation = replicas.elections[candidate].truncations[follower]
            assert truncation.truncate_to == lag and truncation.dropped_below_high_watermark > 0
    assert all(election.committed_lost > 0 for election in replicas.elections.values())


def test_multi_round_takes_two_rounds(built):
    """The follower's answer to the leader's first epoch names an epoch it never had, so it
    truncates to its own end of an earlier epoch and asks again (getOffsetTruncationState's
    ``truncationCompleted = false``), landing on the offset where their epoch-0 records part."""
    replicas = _scenario(built, "multi_round")
    y = replicas.replicas[2].batch_epochs[1][1]
    for candidate, follower in ((1, 2), (2, 1), (3, 2), (2, 3)):
        truncation = replicas.elections[candidate].truncations[follower]
        assert len(truncation.rounds) == 2 and truncation.truncate_to == y
        first = truncation.rounds[0]
        assert first.leader_answer[0] < first.last_fetched_epoch and first.truncate_to > y


def test_follower_without_epochs_truncates_to_its_high_watermark(built):
    """No leader-epoch-checkpoint and a clean stop: no latest epoch, so ReplicaManager starts it at
    its high watermark and truncateToHighWatermark drops what is above, which the leader holds."""
    replicas = _scenario(built, "follower_without_epochs")
    follower = replicas.replicas[2]
    assert follower.leader_epochs is None and follower.clean_shutdown
    truncation = replicas.elections[1].truncations[2]
    (only,) = truncation.rounds
    assert only.leader_answer is None and truncation.truncate_to == follower.high_watermark
    assert truncation.dropped_held_by_leader == truncation.dropped_records == \
        follower.log_end_offset - follower.high_watermark


def test_leader_answers_an_epoch_below_all_the_follower_holds(built):
    """Broker 1 never had epoch 2: asked for it, it answers epoch 1, below broker 2's only entry;
    endOffsetFor then answers epoch 1 with that entry's start, so broker 2 truncates to its log start."""
    replicas = _scenario(built, "leader_epoch_smaller")
    follower = replicas.replicas[2]
    (only,) = replicas.elections[1].truncations[2].rounds
    assert (only.last_fetched_epoch, only.leader_answer[0]) == (2, 1)
    assert follower.cache == ((2, follower.log_start_offset),)
    assert only.truncate_to == follower.log_start_offset


def test_lag_alone_loses_nothing_under_the_leader(built):
    """A follower that only lags (or whose torn tail recovery cut) truncates nothing when an
    up-to-date replica leads; electing it loses the records past its end."""
    for name in ("lagging_follower", "damaged_replica", "missing_checkpoints", "producer_sequence_gap"):
        replicas = _scenario(built, name)
        short = replicas.replicas[2]
        for candidate in (1, 3):
            assert replicas.elections[candidate].truncations[2].dropped is None
            assert replicas.elections[candidate].committed_lost == 0
        full = replicas.replicas[1].log_end_offset
        assert replicas.elections[2].committed_lost == full - short.log_end_offset


def test_transaction_and_producer_facts(built):
    """c04: the follower without B's COMMIT holds B's last transaction open from its first batch; the
    one cut after round 22 holds both producers' sequences short of the others'."""
    hanging = _scenario(built, "hanging_transaction")
    assert hanging.replicas[1].open_transactions == {} == hanging.replicas[3].open_transactions
    (producer, first), = hanging.replicas[2].open_transactions.items()
    assert hanging.replicas[2].producers[producer] == hanging.replicas[1].producers[producer]
    assert first < hanging.replicas[2].log_end_offset
    assert hanging.elections[2].committed_lost == 1  # the marker
    gap = _scenario(built, "producer_sequence_gap")
    ahead, behind = gap.replicas[1].producers, gap.replicas[2].producers
    assert ahead.keys() == behind.keys() and all(behind[p].last_sequence < ahead[p].last_sequence for p in ahead)
    assert gap.replicas[2].open_transactions == {}
