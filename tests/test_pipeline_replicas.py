"""``segtool replicas`` on the engines (segtool.pipeline.replicas): one task per partition, whichever brokers'
log dirs hold it, and one per RocketMQ store and group; the report is the in-process one, byte for byte.

The evidence is three brokers' log dirs, each holding a partition of every Kafka replica set of
tests/kafka_replica_sets.py used below (scenario k's ``<topic>-0`` becomes ``<topic>-k``, its checkpoint entries
moved with it, as a broker holding all those partitions would have them), the three KRaft voters of
wild/apache__kafka (a real quorum's ``__cluster_metadata-0``), and RocketMQ stores built by
tests/rocketmq_replica_sets.py: a master and its lagging slave, an unrelated broker's store, and three DLedger
nodes.  Each set's figures are checked against its scenario's facts (Kafka's rules applied to the
construction), so the tasks are known to compare what the scenario built.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

import pytest

from segtool.engine import uris
from segtool.ops.replicas import Member, replicas
from segtool.ops.task_map import Hashing
from segtool.ops.task_map import in_process
from segtool.pipeline.engines import LocalEngine
from segtool.pipeline.replicas import replicas_on, staged_replica_set
from tests import rocketmq_replica_sets as rocketmq_build
from tests.conftest import corpus_path, segtool
from tests.kafka_replica_sets import build
from tests.s3_server import s3_server  # noqa: F401  (the session fixture)
from tests.test_replicas_command import assert_each_file_named_once

# clean shutdowns all (a broker's one clean-shutdown marker covers all its partitions)
SCENARIOS = ("unclean_election", "multi_round", "lagging_follower", "recreated_topic", "hanging_transaction",
             "producer_sequence_gap", "follower_without_epochs")
CHECKPOINTS = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")
KRAFT_VOTERS = ("kafka-2167572160391180112", "kafka-7155829485418535035", "kafka-7498518511977031704")


def _checkpoint_entries(path: Path) -> list[list[str]]:
    """CheckpointFile's entries (version line, count line, then ``topic partition offset`` a line)."""
    return [line.split() for line in path.read_text().splitlines()[2:]] if path.exists() else []


def _combine(replica_sets, root: Path) -> dict[int, Path]:
    """Each broker's partitions of every set moved into one log dir; set k's partition is renumbered k."""
    entries: dict[tuple[int, str], list[str]] = {}
    log_dirs: dict[int, Path] = {}
    for k, replica_set in enumerate(replica_sets):
        for broker, source in replica_set.brokers.items():
            target = log_dirs.setdefault(broker, root / f"broker{broker}")
            target.mkdir(parents=True, exist_ok=True)
            for name in ("meta.properties", ".kafka_cleanshutdown"):
                if not (target / name).exists():
                    shutil.copyfile(source / name, target / name)
                assert (target / name).read_bytes() == (source / name).read_bytes()
            (source / replica_set.partition_dir).rename(target / f"{replica_set.topic}-{k}")
            for name in CHECKPOINTS:
                entries.setdefault((broker, name), []).extend(
                    f"{topic} {k} {offset}" for topic, _, offset in _checkpoint_entries(source / name))
    for (broker, name), lines in entries.items():
        (log_dirs[broker] / name).write_text("".join(f"{line}\n" for line in ["0", str(len(lines)), *lines]))
    return log_dirs


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    corpus_path("kafka")
    clean = corpus_path("rocketmq", "clean-multi")
    voters = corpus_path("wild", "apache__kafka", "core", "data")
    root = tmp_path_factory.mktemp("replicas-engines")
    replica_sets = [build(name, root / "built") for name in SCENARIOS]
    log_dirs = _combine(replica_sets, root / "kafka")
    master = rocketmq_build.copy_store(clean / "store", root / "rocketmq" / "master")
    slave = rocketmq_build.copy_store(clean / "store", root / "rocketmq" / "slave")
    golden = rocketmq_build.golden_messages(clean)
    rocketmq_build.cut_commitlog(slave, golden[len(golden) // 2]["phyOffset"])
    for name, terms, tags, committed in (("n0", [1, 1, 1, 2, 3, 3, 3], ["a"] * 7, 5),
                                         ("n1", [1, 1, 1, 2, 2, 2], ["a"] * 4 + ["b"] * 2, 3),
                                         ("n2", [1, 1, 1, 2, 3], ["a"] * 5, 3)):
        rocketmq_build.dledger_node(root / "rocketmq" / name, name, terms, tags, committed_index=committed)
    paths = ([str(d) for d in log_dirs.values()] + [str(voters / name) for name in KRAFT_VOTERS]
             + [str(master), str(slave), str(corpus_path("rocketmq", "kill9-abort", "store"))]
             + [str(root / "rocketmq" / name) for name in ("n0", "n1", "n2")])
    return paths, replica_sets


@pytest.fixture
def bucket(s3_server, monkeypatch):  # noqa: F811
    """A new bucket on the S3 server, the AWS_* variables of the server set (Spark's workers inherit them)."""
    for key, value in s3_server.environment.items():
        monkeypatch.setenv(key, value)
    name = f"replicas-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


def _driver_mirror() -> Path:
    return Path(uris.cache_dir()) / "mirror"


def _kafka_groups(replica_sets) -> int:
    """Partitions held by two or more brokers: per set, its topic ids held twice or more; and the voters'."""
    held = [[r.topic_id for r in s.replicas.values()] for s in replica_sets]
    return sum(sum(1 for topic_id in set(ids) if ids.count(topic_id) > 1) for ids in held) + 1


class _CountingEngine(LocalEngine):
    """The local pool, noting each map: which function, over how many items."""

    def __init__(self, workers: int):
        super().__init__(workers)
        self.maps: list[tuple[str, int]] = []

    def map(self, fn, items, costs=None, description=None):
        self.maps.append((fn.__name__, len(items)))
        return super().map(fn, items, costs, description)


def test_the_pool_and_in_process_print_the_same_json(evidence):
    paths, replica_sets = evidence
    in_process_run = segtool("replicas", "--json", "--workers", "1", *paths)
    pool_run = segtool("replicas", "--json", "--workers", "2", *paths)
    assert pool_run.stdout == in_process_run.stdout
    assert pool_run.returncode == in_process_run.returncode == 1  # copies part in several sets
    report = json.loads(pool_run.stdout)
    assert len(report["kafka"]) == _kafka_groups(replica_sets)
    assert [[s["broker"] for s in item["stores"]] or [n["broker"] for n in item["nodes"]]
            for item in report["rocketmq"]] == [paths[-6:-4], paths[-4:-3], paths[-3:]]
    # each file hashed by the task reading it (a set's, a store's, or its log dir's), each once, alike
    assert_each_file_named_once(report, paths)
    unhashed = segtool("replicas", "--json", "--no-hash", "--workers", "2", *paths)
    assert unhashed.returncode == 1
    assert_each_file_named_once(json.loads(unhashed.stdout), paths, hashed=False)


def test_one_task_per_partition_and_per_store(evidence):
    paths, replica_sets = evidence
    engine = _CountingEngine(workers=2)
    with engine:
        pooled = replicas_on(paths, engine)
    # and one hashing each Kafka log dir's own files (meta.properties, checkpoints), which no comparison reads
    assert engine.maps == [("kafka_replica_set", _kafka_groups(replica_sets)), ("open_store", 6),
                           ("master_slave_set", 2), ("dledger_set", 1), ("hash_files", 6)]
    assert pooled == replicas(paths)


def test_each_set_holds_its_scenarios_facts(evidence):
    """The tasks compared what each scenario built: each replica's log end, each election's committed loss."""
    paths, replica_sets = evidence
    with LocalEngine(workers=2) as engine:
        report = replicas_on(paths, engine)
    found = {(s["topic"], s["partition"], s["topic_id"]): s for s in report["kafka"]}
    for k, replica_set in enumerate(replica_sets):
        for topic_id in {r.topic_id for r in replica_set.replicas.values()}:
            brokers = {b: r for b, r in replica_set.replicas.items() if r.topic_id == topic_id}
            if len(brokers) < 2:
                continue
            item = found[(replica_set.topic, k, topic_id)]
            broker_ids = {r["broker"]: r["broker_id"] for r in item["replicas"]}
            assert {r["broker_id"]: r["log_end_offset"] for r in item["replicas"]} == {
                b: r.log_end_offset for b, r in brokers.items()}, replica_set.name
            assert {broker_ids[c["broker"]]: c["committed_records_lost"] for c in item["candidates"]} == {
                b: replica_set.elections[b].committed_lost for b in brokers}, replica_set.name


def test_a_replica_a_task_cannot_read_is_named_in_its_set(tmp_path):
    """A task that cannot open a broker's copy (a Spark executor that does not see the path, a disk gone since
    the listing) names it in its set's ``unreadable`` and compares the others, as in-process: the run goes on."""
    corpus_path("kafka")
    replica_sets = [build(name, tmp_path / "built") for name in ("unclean_election", "hanging_transaction")]
    log_dirs = _combine(replica_sets, tmp_path / "kafka")  # two partitions: two tasks, so the pool runs them
    paths = [str(d) for d in log_dirs.values()]
    hidden = log_dirs[2] / "c01-plain-0"

    def hiding(run):
        def map_tasks(fn, items, costs):
            hidden.rename(hidden.with_name("elsewhere"))
            try:
                return run(fn, items, costs)
            finally:
                hidden.with_name("elsewhere").rename(hidden)
        return map_tasks

    with LocalEngine(workers=2) as engine:
        pooled = replicas(paths, hiding(lambda fn, items, costs: engine.map(fn, items, costs)))
    assert pooled == replicas(paths, hiding(in_process))
    item, other = pooled["kafka"]
    assert not other["unreadable"] and len(other["replicas"]) == 3
    assert item["unreadable"] == [{"broker": "broker 2", "directory": str(hidden),
                                   "problem": f"{hidden}: no such file or directory"}]
    assert sorted(r["broker"] for r in item["replicas"]) == ["broker 1", "broker 3"]
    assert [c["broker"] for c in item["candidates"]] == ["broker 1", "broker 3"]
    from segtool.ops.replicas import exit_code

    assert exit_code(pooled) == 2  # an unreadable input: the contract's 2, with every other figure given


@pytest.mark.spark
def test_spark_prints_the_same_json(evidence):
    from segtool.errors import SegtoolError
    from segtool.pipeline.spark import find_java

    pytest.importorskip("pyspark")
    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    paths, _ = evidence
    spark_run = segtool("replicas", "--json", "--engine", "spark", "--master", "local[2]", *paths)
    assert spark_run.returncode == 1, spark_run.stderr
    assert spark_run.stdout == segtool("replicas", "--json", "--workers", "1", *paths).stdout


def test_spark_submit_runs_replicas_on_spark():
    from segtool.spark_job import job_argv

    assert job_argv(["replicas", "--json", "a", "b"]) == ["replicas", "--engine", "spark", "--json", "a", "b"]


def _spark_or_skip() -> None:
    from segtool.errors import SegtoolError
    from segtool.pipeline.spark import find_java

    pytest.importorskip("pyspark")
    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))


SPARK = ("--engine", "spark", "--master", "local[2]")


@pytest.mark.spark
def test_spark_over_s3_compares_kafka_sets_on_the_executors(evidence, s3_server, bucket, tmp_path,  # noqa: F811
                                                            helpers_in_process):
    """One folder on S3 holding three brokers' log dirs and the three KRaft voters: the driver lists it and
    reads only meta.properties and partition.metadata (its mirror is never made), each task stages its
    partition's copies; the JSON is the in-process run's over the same URI (read through the driver's mirror),
    and the local run's over the same folder on disk, paths aside."""
    _spark_or_skip()
    paths, replica_sets = evidence
    folder = tmp_path / "brokers"
    for path in map(Path, paths[:6]):  # the three brokers' log dirs, the three voters'
        shutil.copytree(path, folder / path.name)
        s3_server.upload_tree(path, bucket, f"brokers/{path.name}")
    uri = f"s3a://{bucket}/brokers"
    # the store told as Spark users tell it (a Spark context another test started does not see AWS_* set since)
    on_spark = segtool("replicas", "--json", uri, *SPARK, *s3_server.s3a_conf)
    assert on_spark.returncode == 1, on_spark.stderr  # copies part in several sets
    assert not _driver_mirror().exists(), "the driver staged the evidence: the executors were to read it"
    assert on_spark.stderr == ""
    in_process = segtool("replicas", "--json", uri)
    assert _driver_mirror().exists()
    assert on_spark.stdout == in_process.stdout
    local = segtool("replicas", "--json", folder)
    assert on_spark.stdout == local.stdout.replace(str(folder), uri)
    report = json.loads(on_spark.stdout)
    assert len(report["kafka"]) == _kafka_groups(replica_sets)
    directories = [r["directory"] for s in report["kafka"] for r in s["replicas"]]
    assert directories and all(d.startswith(f"{uri}/") for d in directories)
    # the checkpoints were staged with each partition: every replica has its high watermark (the voters'
    # metadata log keeps none), as on disk
    assert all(r["high_watermark_checkpoint"] is not None for s in report["kafka"] if s["topic"] != "__cluster_metadata"
               for r in s["replicas"])
    # every file hashed on the executors (the staged copies, and the log dirs' own files through the storage
    # layer), named by its URI, with the digest of the bytes on disk
    assert_each_file_named_once(json.loads(local.stdout), [str(folder)])


@pytest.mark.spark
def test_spark_over_s3_compares_rocketmq_stores_on_the_driver(evidence, s3_server, bucket,  # noqa: F811
                                                              helpers_in_process):
    """Kafka log dirs and RocketMQ stores given as URIs: the Kafka sets are compared on the executors, the
    stores are mirrored on the driver (and only they: no Kafka file comes down) and compared there, which the
    run says; the JSON is the in-process run's."""
    _spark_or_skip()
    paths, _ = evidence
    given = []
    for i, path in enumerate(map(Path, paths)):
        s3_server.upload_tree(path, bucket, f"evidence/{i}-{path.name}")
        given.append(f"s3://{bucket}/evidence/{i}-{path.name}")
    stores = given[6:]
    on_spark = segtool("replicas", "--json", *given, *SPARK, *s3_server.s3a_conf)
    assert on_spark.returncode == 1, on_spark.stderr
    assert on_spark.stderr == (f"segtool: RocketMQ stores are compared on the driver, from its mirror of "
                               f"{', '.join(stores)}: which stores replicate each other is known only from their "
                               "CommitLogs\n")
    mirrored = {p.parent.relative_to(_driver_mirror() / "s3" / bucket / "evidence").parts[0]
                for p in _driver_mirror().rglob("*") if p.is_file()}
    assert mirrored == {uri.rsplit("/", 1)[1] for uri in stores}
    in_process = segtool("replicas", "--json", *given)
    assert on_spark.stdout == in_process.stdout
    report = json.loads(on_spark.stdout)
    assert [[s["broker"] for s in item["stores"]] or [n["broker"] for n in item["nodes"]]
            for item in report["rocketmq"]] == [stores[:2], stores[2:3], stores[3:]]
    # the files staged by the Kafka tasks, mirrored for the stores and read through the storage layer, each
    # with the digest of the uploaded bytes
    named = [item for broker in report["brokers"] for item in broker["files"]]
    assert len(named) == sum(1 for path in paths for found in Path(path).rglob("*") if found.is_file())
    for item in named:
        uri, path = next((uri, path) for uri, path in zip(given, paths) if item["path"].startswith(f"{uri}/"))
        assert item["sha256"] == hashlib.sha256(Path(path + item["path"][len(uri):]).read_bytes()).hexdigest()


def test_a_copy_a_task_cannot_stage_is_named_in_its_set(evidence, s3_server, bucket):  # noqa: F811
    """A task whose copy cannot be staged (an object gone since the driver listed it) names that copy in its
    set's ``unreadable`` with the storage layer's reason, and compares the others."""
    paths, replica_sets = evidence
    log_dirs = [Path(p) for p in paths[:3]]
    topic = f"{replica_sets[0].topic}-0"
    for log_dir in log_dirs:
        s3_server.upload_tree(log_dir, bucket, f"brokers/{log_dir.name}")
    members, sources, hashed = [], [], {}
    for log_dir in log_dirs:
        base = f"s3://{bucket}/brokers/{log_dir.name}"
        broker = int(log_dir.name.removeprefix("broker"))
        members.append(Member(f"broker {broker}", broker, f"{base}/{topic}"))
        sources.append([f"{base}/{topic}/{p.name}" for p in sorted((log_dir / topic).iterdir())]
                       + [f"{base}/{name}" for name in CHECKPOINTS])
        hashed.update({f"{base}/{topic}/{p.name}": p for p in sorted((log_dir / topic).iterdir())})
    gone = sources[1][0]
    s3_server.client().delete_object(Bucket=bucket, Key=gone.removeprefix(f"s3://{bucket}/"))
    result, digests = staged_replica_set((members, sources, {"/planning/brokers": f"s3://{bucket}/brokers"},
                                          list(hashed), Hashing(fork=False)))
    # the staged copies are hashed beside the comparison; the copy that could not be staged is not there
    for (source, local), digest in zip(hashed.items(), digests):
        assert digest == ((None, "no such file") if source.startswith(f"{members[1].directory}/")
                          else (hashlib.sha256(local.read_bytes()).hexdigest(), None)), source
    [entry] = result["unreadable"]
    assert entry["broker"] == members[1].broker and entry["directory"] == members[1].directory
    assert entry["problem"].startswith(gone), entry["problem"]
    held = {r["broker_id"]: r["log_end_offset"] for r in result["replicas"]}
    assert held == {m.broker_id: replica_sets[0].replicas[m.broker_id].log_end_offset for m in members
                    if m is not members[1]}
    assert all(r["directory"].startswith(f"s3://{bucket}/brokers/") for r in result["replicas"])
