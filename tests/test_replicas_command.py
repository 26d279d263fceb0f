"""``segtool replicas`` on Kafka replica sets built by Kafka's replication rules (tests/kafka_replica_sets.py).

Each scenario's facts come from its construction and the rules of Kafka 3.9's source named there
(Partition.makeLeader, LeaderEpochFileCache.endOffsetFor, AbstractFetcherThread.getOffsetTruncationState,
ReplicaManager.initialFetchOffset, LogSegment.truncateTo, UnifiedLog.updateHighWatermark); the command's
JSON must give the same figures: each copy as loaded, where each pair parts (offset, segment and byte on
both sides), and for each candidate where each follower truncates, what it drops, what the new leader holds
again and how many committed records the election loses.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import corpus_path, segtool
from tests.kafka_replica_sets import SCENARIOS, build


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    corpus_path("kafka")  # the sets are built from corpus segments
    root = tmp_path_factory.mktemp("replica-sets")
    cache = {}

    def get(name):
        if name not in cache:
            replica_set = build(name, root)
            run = segtool("replicas", "--json", *[str(path) for path in replica_set.brokers.values()])
            cache[name] = replica_set, run, json.loads(run.stdout)
        return cache[name]
    return get


def _label(replica_set) -> dict[str, int]:
    return {f"broker {broker}": broker for broker in replica_set.replicas}


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_copy_as_the_broker_loads_it(built, name):
    replica_set, _, report = built(name)
    label = _label(replica_set)
    (found,) = report["kafka"]
    assert {label[r["broker"]] for r in found["replicas"]} == {
        broker for broker, r in replica_set.replicas.items() if r.topic_id == found["topic_id"]}
    for replica in found["replicas"]:
        facts = replica_set.replicas[label[replica["broker"]]]
        assert (replica["log_start_offset"], replica["log_end_offset"], replica["high_watermark"]) == (
            facts.log_start_offset, facts.log_end_offset, facts.loaded_high_watermark), replica["broker"]
        assert [(e["epoch"], e["start_offset"]) for e in replica["batch_epochs"]] == [
            tuple(run) for run in facts.batch_epochs if run[0] >= 0]
        assert replica["high_watermark_checkpoint"] == facts.high_watermark
        written = None if facts.leader_epochs is None else [list(e) for e in facts.leader_epochs]
        assert (None if replica["leader_epoch_checkpoint"] is None else
                [[e["epoch"], e["start_offset"]] for e in replica["leader_epoch_checkpoint"]]) == written
        assert (replica["damage"]["recovery_cut"] is not None) == (facts.torn is not None)
        if facts.torn is not None:  # LogSegment.recover stops at the torn batch
            assert replica["damage"]["recovery_cut"]["offset"] == facts.torn.base_offset
            assert replica["damage"]["recovery_cut"]["byte"] == facts.torn.position


@pytest.mark.parametrize("name", SCENARIOS)
def test_where_each_pair_parts(built, name):
    replica_set, _, report = built(name)
    label = _label(replica_set)
    (found,) = report["kafka"]
    assert found["pairs"]
    for pair in found["pairs"]:
        a, b = label[pair["a"]], label[pair["b"]]
        facts = replica_set.first_difference[(a, b)] if (a, b) in replica_set.first_difference else \
            replica_set.first_difference[(b, a)]
        if facts is None:  # one copy is a prefix of the other
            assert not pair["diverged"], pair
            continue
        assert pair["diverged"] and pair["agreed_until"] == facts.base_offset, pair
        for side, broker in (("a", a), ("b", b)):
            place = pair[f"{side}_first_differing"]
            assert (Path(place["segment"]).name, place["byte"]) == facts.positions[broker]


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_election_truncates_and_loses_as_kafka_does(built, name):
    replica_set, _, report = built(name)
    label = _label(replica_set)
    (found,) = report["kafka"]
    assert {label[c["broker"]] for c in found["candidates"]} == set(replica_set.elections)
    for candidate in found["candidates"]:
        election = replica_set.elections[label[candidate["broker"]]]
        assert found["new_leader_epoch"] == election.leader_epoch
        assert candidate["new_epoch_start_offset"] == election.epoch_start_offset
        assert candidate["committed_records_lost"] == election.committed_lost, candidate["broker"]
        for follower in candidate["followers"]:
            truncation = election.truncations[label[follower["broker"]]]
            assert (follower["truncate_to"], follower["dropped_records"], follower["refetched_records"]) == (
                truncation.truncate_to, truncation.dropped_records, truncation.dropped_held_by_leader), follower
            assert len(follower["rounds"]) == max(len(truncation.rounds), 1)
    best = min(found["candidates"], key=lambda c: c["committed_records_lost"])
    assert next(c for c in found["candidates"] if c["broker"] == found["best_candidate"])[
        "committed_records_lost"] == best["committed_records_lost"]


def test_the_rules_taken_are_named(built):
    """multi_round: two OffsetsForLeaderEpoch rounds (an epoch the leader never had, then a match);
    follower_without_epochs: truncateToHighWatermark."""
    for name, candidate, follower, rules in (("multi_round", 1, 2, ["epoch_unknown_to_follower", "epochs_match"]),
                                             ("follower_without_epochs", 1, 2, ["high_watermark"])):
        (found,) = built(name)[2]["kafka"]
        chosen = next(c for c in found["candidates"] if c["broker"] == f"broker {candidate}")
        rounds = next(f for f in chosen["followers"] if f["broker"] == f"broker {follower}")["rounds"]
        assert [r["rule"] for r in rounds] == rules


def test_exit_codes(built):
    # copies that agree, or a follower only behind, are no problem; parted copies, damage, a committed loss are
    assert built("in_sync")[1].returncode == 0
    assert built("lagging_follower")[1].returncode == 0
    for name in ("unclean_election", "multi_round", "damaged_replica"):
        assert built(name)[1].returncode == 1, name


def _sets_and_files(stdout: str, top: Path) -> tuple[list, list]:
    """The replica sets and each broker's files of a report, paths made absolute from ``top``."""
    found = json.loads(stdout)
    sets = [(s["topic"], s["partition"], sorted((r["broker"], os.path.abspath(top / r["directory"]))
                                                for r in s["replicas"])) for s in found["kafka"]]
    files = sorted((b["broker"], sorted(os.path.abspath(top / f["path"]) for f in b["files"])) for b in found["brokers"])
    return sets, files


def test_the_current_folder_is_a_folder_like_any_other(built):
    """``replicas .`` in the folder holding the brokers, and ``.`` for one broker beside another, compare what
    the same folders named in full compare (the folder "." has no parent name: it was once a broker holding
    nothing, its partitions skipped in silence)."""
    replica_set, _, _ = built("unclean_election")
    top = replica_set.brokers[1].parent
    named = segtool("replicas", "--json", *[str(path) for path in replica_set.brokers.values()])
    here = segtool("replicas", "--json", ".", cwd=top)
    assert here.returncode == named.returncode == 1
    assert _sets_and_files(here.stdout, top) == _sets_and_files(named.stdout, Path("/"))
    pair = segtool("replicas", "--json", ".", "../broker2", cwd=replica_set.brokers[1])
    sets, _ = _sets_and_files(pair.stdout, replica_set.brokers[1])
    assert sets == [(s[0], s[1], [r for r in s[2] if r[0] in ("broker 1", "broker 2")])
                    for s in _sets_and_files(named.stdout, Path("/"))[0]]


def test_a_recreated_topic_is_two_partitions(built):
    replica_set, _, report = built("recreated_topic")
    ids = {r.topic_id for r in replica_set.replicas.values()}
    assert len(ids) == 2 and any("re-created" in note for note in report["notes"])
    lone = [r for r in replica_set.replicas.values() if list(replica_set.replicas.values()).count(r) == 1
            and sum(1 for o in replica_set.replicas.values() if o.topic_id == r.topic_id) == 1]
    assert [s["broker"] for s in report["single_copies"]] == [f"broker {r.broker_id}" for r in lone]


def test_hanging_transaction_and_sequence_gaps(built):
    # the candidate lacking the marker leaves the transaction open (ProducerStateManager: no marker, no end)
    replica_set, _, report = built("hanging_transaction")
    (found,) = report["kafka"]
    for candidate in found["candidates"]:
        facts = replica_set.replicas[_label(replica_set)[candidate["broker"]]]
        hanging = {t["producer_id"]: t["first_offset"] for t in candidate["hanging_transactions"]}
        closed_elsewhere = {pid for other in replica_set.replicas.values() if other is not facts
                            for pid in facts.open_transactions if pid not in other.open_transactions}
        assert hanging == {pid: facts.open_transactions[pid] for pid in closed_elsewhere}
    # a replica cut short holds lower last sequences of the same producer epochs: a gap if it leads
    replica_set, _, report = built("producer_sequence_gap")
    (found,) = report["kafka"]
    for candidate in found["candidates"]:
        facts = replica_set.replicas[_label(replica_set)[candidate["broker"]]]
        expected = {}
        for other in replica_set.replicas.values():
            for pid, state in other.producers.items():
                mine = facts.producers.get(pid)
                if state.last_sequence >= 0 and (mine is None or (mine.producer_epoch == state.producer_epoch
                                                                  and mine.last_sequence < state.last_sequence)):
                    expected[pid] = max(expected.get(pid, -1), state.last_sequence)
        assert {g["producer_id"]: g["last_sequence_elsewhere"] for g in candidate["sequence_gaps"]} == expected


def assert_each_file_named_once(report: dict, paths: list[str], hashed: bool = True) -> None:
    """Every regular file below ``paths`` (or named by one) is named once, in its broker's ``files`` or in
    ``skipped``; each named file's size and sha256 are those of its bytes (sha256 null when not ``hashed``)."""
    named = [f for broker in report["brokers"] for f in broker["files"]] + [
        entry for entry in report["skipped"] if entry["size"] is not None]
    on_disk = [found for path in map(Path, paths) for found in ([path] if path.is_file() else path.rglob("*"))
               if found.is_file()]
    assert sorted(os.path.realpath(f["path"]) for f in named) == sorted(os.path.realpath(p) for p in on_disk)
    for item in named:
        data = Path(item["path"]).read_bytes()
        assert item["size"] == len(data), item["path"]
        assert item["sha256"] == (hashlib.sha256(data).hexdigest() if hashed else None), item["path"]


@pytest.mark.parametrize("name", ["unclean_election", "recreated_topic", "damaged_replica"])
def test_every_file_is_hashed_once(built, name):
    """Segments, indexes, snapshots, checkpoints, meta.properties and partition.metadata of the copies compared,
    and of the partitions held once (recreated_topic), each with the sha256 of its bytes; ``--no-hash`` names
    the same files with null digests and changes nothing else."""
    replica_set, run, report = built(name)
    paths = [str(path) for path in replica_set.brokers.values()]
    assert_each_file_named_once(report, paths)
    kinds = {Path(f["path"]).name.rsplit(".", 1)[-1] for broker in report["brokers"] for f in broker["files"]}
    assert {"log", "index", "timeindex", "properties", "metadata", "replication-offset-checkpoint"} <= kinds
    unhashed = segtool("replicas", "--json", "--no-hash", *paths)
    assert unhashed.returncode == run.returncode
    without = json.loads(unhashed.stdout)
    assert_each_file_named_once(without, paths, hashed=False)
    for broker in report["brokers"]:
        for item in broker["files"]:
            item["sha256"] = None
    assert without == report


def test_a_skipped_file_is_hashed_and_each_broker_has_a_line(built, tmp_path):
    """A file given where a log dir belongs is skipped with its size and sha256; the text gives each broker's
    file count and bytes, and says when they were not hashed."""
    replica_set, _, _ = built("unclean_election")
    stray = tmp_path / "replication-offset-checkpoint"
    shutil.copyfile(replica_set.brokers[1] / "replication-offset-checkpoint", stray)
    paths = [str(stray), *map(str, replica_set.brokers.values())]
    report = json.loads(segtool("replicas", "--json", *paths).stdout)
    (skipped,) = report["skipped"]
    assert skipped["path"] == str(stray) and skipped["reason"].startswith("not a directory")
    assert_each_file_named_once(report, paths)
    text = segtool("replicas", *paths).stdout.splitlines()
    for broker in report["brokers"]:
        size = sum(f.stat().st_size for f in Path(broker["path"]).rglob("*") if f.is_file())
        count = sum(1 for f in Path(broker["path"]).rglob("*") if f.is_file())
        assert f"{broker['broker']} ({broker['path']}): {count} files hashed, {size} bytes (each sha256 in --json)" \
            in text
    unhashed = segtool("replicas", "--no-hash", *paths).stdout
    assert f"{report['brokers'][0]['broker']} ({report['brokers'][0]['path']}): " in unhashed
    assert unhashed.count("not hashed (--no-hash)") == len(report["brokers"])


def test_text_names_the_parting_and_the_best_election(built):
    replica_set, _, _ = built("unclean_election")
    run = segtool("replicas", *map(str, replica_set.brokers.values()))
    assert run.returncode == 1
    assert "part at offset" in run.stdout and "(best)" in run.stdout and "truncates to" in run.stdout
    assert "Traceback" not in run.stderr


def test_a_real_kraft_quorums_metadata_log_replicas():
    """wild/apache__kafka: three voters of one cluster (meta.properties' cluster.id ljAoer..., node ids 0-2) left
    by Kafka's own tests.  Nodes 0 and 1 hold byte-identical logs; node 2's is a byte prefix of theirs, so it
    agrees to its log end and no vote elects it (KafkaRaftClient.handleVoteRequest: the others' logs are ahead)."""
    data = corpus_path("wild", "apache__kafka", "core", "data")
    dirs = {0: data / "kafka-2167572160391180112", 1: data / "kafka-7155829485418535035",
            2: data / "kafka-7498518511977031704"}
    logs = {node: (d / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes() for node, d in dirs.items()}
    assert logs[0] == logs[1] and logs[0].startswith(logs[2]) and len(logs[2]) < len(logs[0])
    inspected = {node: json.loads(segtool("inspect", "--json", str(d)).stdout) for node, d in dirs.items()}
    ends = {node: next(p["plan"]["log_end_offset"] for p in report["log_dirs"][0]["partitions"]
                       if p["directory"].endswith("__cluster_metadata-0")) for node, report in inspected.items()}
    run = segtool("replicas", "--json", *map(str, dirs.values()))
    (found,) = json.loads(run.stdout)["kafka"]
    assert {r["broker"]: r["log_end_offset"] for r in found["replicas"]} == {f"broker {n}": e for n, e in ends.items()}
    assert all(r["high_watermark"] is None for r in found["replicas"])
    pairs = {(p["a"], p["b"]): p for p in found["pairs"]}
    assert not any(p["diverged"] for p in pairs.values())
    assert pairs[("broker 0", "broker 2")]["agreed_until"] == ends[2]
    assert {c["broker"]: c["electable"] for c in found["candidates"]} == {"broker 0": True, "broker 1": True,
                                                                        "broker 2": False}
    assert found["best_candidate"] in ("broker 0", "broker 1")
