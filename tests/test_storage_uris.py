"""One storage layer for evidence and outputs: URIs on a real S3 API (moto's server on loopback),
compared with the same commands on the local copy; the evidence guard on every spelling of a place;
one line for a store that cannot be reached."""

from __future__ import annotations

import io
import json
import shutil
import time
import uuid
from pathlib import Path

import pytest

from segtool.engine import uris
from tests.conftest import comparable_scan_report, corpus_path, segtool, segtool_process
from tests.s3_server import s3_server  # noqa: F401  (the session fixture)

REBUILD_CASE = ("kafka", "c09-index-rebuild")  # Kafka's own rebuilt indexes are its goldens
SCAN_CASE = ("kafka", "c01-multiseg-clean")
STORE_CASE = ("rocketmq", "kill9-abort")


@pytest.fixture
def bucket(s3_server, monkeypatch):  # noqa: F811
    """A new bucket, the AWS_* variables of the server set (as a user of an S3-compatible store sets them)."""
    for key, value in s3_server.environment.items():
        monkeypatch.setenv(key, value)
    name = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3a_only(s3_server, monkeypatch):  # noqa: F811
    """No AWS_* variables: the store is known only from --conf spark.hadoop.fs.s3a.* settings."""
    for key in s3_server.environment:
        monkeypatch.delenv(key, raising=False)
    return s3_server.s3a_conf


def _as_local(text: str, places: dict[str, str]) -> str:
    for uri, local in places.items():
        text = text.replace(uri, local)
    return text


# -- locations and the evidence guard -----------------------------------------------------------------


@pytest.mark.parametrize("one,other", [
    ("file:///x/evidence", "/x/evidence"),
    ("file://localhost/x/evidence/", "/x/evidence"),
    ("s3a://bucket/kafka-logs", "s3://bucket/kafka-logs/"),
    ("s3://Bucket/a/../kafka-logs", "s3a://bucket/kafka-logs"),
    ("abfss://c@acct.dfs.core.windows.net/ev", "abfs://c@acct.blob.core.windows.net/ev"),
    ("gcs://b/ev", "gs://b/ev"),
])
def test_one_place_has_one_location(one, other):
    assert uris.location(one) == uris.location(other)
    assert uris.within(one + "/sub", other)


def test_other_places_differ():
    assert not uris.within("s3://bucket/kafka-logs-2", "s3a://bucket/kafka-logs")
    assert not uris.within("s3://other/kafka-logs", "s3://bucket/kafka-logs")
    assert not uris.within("gs://bucket/kafka-logs", "s3://bucket/kafka-logs")


def test_file_uri_out_inside_the_evidence_is_refused(tmp_path):
    """The issue's case: ``--out file:///.../evidence/data/scanout`` wrote inside the input."""
    evidence = tmp_path / "evidence"
    shutil.copytree(corpus_path(*SCAN_CASE, "data"), evidence / "data")
    before = sorted(p.relative_to(evidence) for p in evidence.rglob("*"))
    for inputs, out in ([str(evidence / "data")], f"file://{evidence}/data/scanout"), \
                       ([f"file://{evidence}/data"], str(evidence / "data" / "scanout")):
        result = segtool("scan", *inputs, "--out", out)
        assert result.returncode == 2, result.stderr
        assert "inside the input directory" in result.stderr and len(result.stderr.splitlines()) == 1
    result = segtool("rebuild-index", f"file://{evidence}/data", "--out", f"file://{evidence}/data/rebuilt")
    assert result.returncode == 2 and "inside the input directory" in result.stderr
    assert sorted(p.relative_to(evidence) for p in evidence.rglob("*")) == before


def test_file_uri_inputs_read_and_print_as_given():
    data = corpus_path(*SCAN_CASE, "data")
    local = json.loads(segtool("verify", "--no-hash", "--json", str(data)).stdout)
    given = segtool("verify", "--no-hash", "--json", f"file://{data}")
    assert given.returncode == 0, given.stderr
    assert json.loads(_as_local(given.stdout, {f"file://{data}": str(data)})) == local
    assert all(entry["path"].startswith(f"file://{data}/") for entry in json.loads(given.stdout)["files"])


# -- one line for what cannot be reached --------------------------------------------------------------


def test_unknown_scheme_is_one_line():
    result = segtool("verify", "foo://bucket/kafka-logs")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "segtool: foo://bucket/kafka-logs: unknown storage scheme foo://: use a path, file://, s3://, s3a://, "
        "gs://, abfs://, abfss:// or hdfs://"]


def test_hdfs_without_libhdfs_names_what_is_missing(monkeypatch):
    monkeypatch.setenv("HADOOP_HOME", "/nonexistent")
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    result = segtool("dump", "hdfs://namenode:8020/evidence/orders-0")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("segtool: hdfs://namenode:8020/evidence/orders-0: hdfs:// needs libhdfs and a Java runtime")


@pytest.mark.slow  # seconds of waiting on a store that does not answer
def test_gs_without_credentials_fails_within_seconds():
    """It hung 15 minutes and ignored SIGTERM: now one line after the client's bounded retries."""
    began = time.monotonic()
    result = segtool_process("verify", "gs://segtool-no-such-bucket/kafka-logs", timeout=90,
                             env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GCE_METADATA_HOST": "127.0.0.1:9"})
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("segtool: gs://segtool-no-such-bucket/kafka-logs: cannot read: ")
    assert time.monotonic() - began < 60


@pytest.mark.slow  # seconds of waiting on a store that does not answer
def test_sigterm_ends_a_run_waiting_on_a_store(tmp_path):
    """A native SDK call that blocks does not hold the main thread: SIGTERM ends the run (143), no trace."""
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as silent:  # accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        process = subprocess.Popen(
            [sys.executable, "-m", "segtool.cli", "verify", "s3a://bucket/kafka-logs", "--conf",
             f"spark.hadoop.fs.s3a.endpoint={endpoint}", "--conf", "spark.hadoop.fs.s3a.access.key=a", "--conf",
             "spark.hadoop.fs.s3a.secret.key=b"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        time.sleep(3)
        assert process.poll() is None  # still waiting for the store
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 143
    assert "Traceback" not in err


# -- a real S3 API ------------------------------------------------------------------------------------


def _parts(files: dict[str, bytes]):
    """The dataset's rows, part by part, the columns that name where the input was (``source_dir``, and
    ``broker_label`` where no meta.properties names the broker) left out."""
    import pyarrow.parquet as pq

    return {name: pq.read_table(io.BytesIO(data)).drop_columns(["source_dir", "broker_label"])
            for name, data in sorted(files.items()) if not name.startswith("_")}


def _remote_files(s3_server, bucket: str, prefix: str) -> dict[str, bytes]:  # noqa: F811
    """The objects below a prefix, but pyarrow's directory markers (empty keys ending in ``/``)."""
    return {key[len(prefix) + 1:]: s3_server.read(bucket, key) for key in s3_server.keys(bucket, prefix + "/")
            if not key.endswith("/")}


def _local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _scan_compared(s3_server, bucket, tmp_path, scheme: str, extra: list[str]):  # noqa: F811
    """Scan Kafka and RocketMQ evidence on S3 into S3, and the same evidence locally; both reports
    and datasets, paths aside."""
    kafka, store = corpus_path(*SCAN_CASE, "data"), corpus_path(*STORE_CASE, "store")
    s3_server.upload_tree(kafka, bucket, "kafka-logs")
    s3_server.upload_tree(store, bucket, "rocketmq/store")
    local = segtool("scan", str(kafka), str(store), "--out", str(tmp_path / "scan"), "--json", "--split-size",
                    "1MiB", *extra)
    remote = segtool("scan", f"{scheme}://{bucket}/kafka-logs", f"{scheme}://{bucket}/rocketmq/store",
                     "--out", f"{scheme}://{bucket}/cases/42/scan", "--json", "--split-size", "1MiB", *extra)
    assert remote.returncode == local.returncode == 0, remote.stderr
    places = {f"{scheme}://{bucket}/kafka-logs": str(kafka), f"{scheme}://{bucket}/rocketmq/store": str(store)}
    assert comparable_scan_report(json.loads(_as_local(remote.stdout, places))) == comparable_scan_report(
        json.loads(local.stdout))
    written = _remote_files(s3_server, bucket, "cases/42/scan")
    produced = _local_files(tmp_path / "scan")
    assert sorted(written) == sorted(produced) and "_SUCCESS" in written
    remote_parts, local_parts = _parts(written), _parts(produced)
    assert remote_parts.keys() == local_parts.keys()
    for name, table in remote_parts.items():
        assert table.equals(local_parts[name]), name
    rows = sum(table.num_rows for table in remote_parts.values())
    assert rows == json.loads(local.stdout)["dataset"]["rows"] > 0
    return json.loads(remote.stdout)


def test_scan_s3_evidence_into_s3_on_the_local_pool(s3_server, bucket, tmp_path):  # noqa: F811
    report = _scan_compared(s3_server, bucket, tmp_path, "s3", ["--workers", "2"])
    assert all(f["path"].startswith(f"s3://{bucket}/") for f in report["inputs"]["files"])


@pytest.mark.slow
def test_scan_with_s3a_settings_only(s3_server, s3a_only, tmp_path):  # noqa: F811
    bucket = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    _scan_compared(s3_server, bucket, tmp_path, "s3a", ["--workers", "2", *s3a_only])


def test_verify_over_s3a_with_spark_settings(s3_server, s3a_only):  # noqa: F811
    bucket = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    data = corpus_path(*REBUILD_CASE, "data")
    s3_server.upload_tree(data, bucket, "kafka-logs")
    local = segtool("verify", "--deep", "--json", str(data))
    remote = segtool("verify", "--deep", "--json", f"s3a://{bucket}/kafka-logs", *s3a_only)
    assert remote.returncode == local.returncode, remote.stderr
    assert json.loads(_as_local(remote.stdout, {f"s3a://{bucket}/kafka-logs": str(data)})) == json.loads(local.stdout)
    # the mirror it read is read-only; the URI names every file in the output, the mirror none
    mirror = Path(uris.cache_dir()) / "mirror" / "s3" / bucket / "kafka-logs"
    assert all(not (p.stat().st_mode & 0o222) for p in mirror.rglob("*") if p.is_file())
    assert str(mirror) not in remote.stdout


def test_rebuild_index_from_s3_into_s3(s3_server, bucket, tmp_path):  # noqa: F811
    data = corpus_path(*REBUILD_CASE, "data")
    s3_server.upload_tree(data, bucket, "kafka-logs")
    out = f"s3a://{bucket}/cases/42/indexes"
    result = segtool("rebuild-index", f"s3://{bucket}/kafka-logs", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    written = _remote_files(s3_server, bucket, "cases/42/indexes")
    # Kafka's own rebuild of these segments is the judge
    goldens = corpus_path(*REBUILD_CASE, "expected", "kafka-rebuilt")
    expected = {p.relative_to(goldens).as_posix(): p.read_bytes() for p in goldens.rglob("*") if p.is_file()}
    assert expected and {name: written[name] for name in expected} == expected
    local = segtool("rebuild-index", str(data), "--out", str(tmp_path / "indexes"), "--json")
    assert written == _local_files(tmp_path / "indexes")
    places = {out: str(tmp_path / "indexes"), f"s3://{bucket}/kafka-logs": str(data)}
    assert json.loads(_as_local(result.stdout, places)) == json.loads(local.stdout)
    # a second run into the same place is refused, and leaves it as it was
    again = segtool("rebuild-index", f"s3://{bucket}/kafka-logs", "--out", out)
    assert again.returncode == 2 and "already holds files" in again.stderr
    assert _remote_files(s3_server, bucket, "cases/42/indexes") == written


def test_out_inside_the_evidence_refused_on_s3_whatever_the_spelling(s3_server, bucket):  # noqa: F811
    s3_server.upload_tree(corpus_path(*REBUILD_CASE, "data"), bucket, "kafka-logs")
    before = s3_server.keys(bucket, "")
    for command in (["scan", f"s3a://{bucket}/kafka-logs", "--out", f"s3://{bucket}/kafka-logs/scan"],
                    ["rebuild-index", f"s3://{bucket}/kafka-logs", "--out", f"s3a://{bucket}/kafka-logs/x/../idx"],
                    ["scan", f"s3://{bucket}/kafka-logs/c01-plain-1", "--out", f"s3a://{bucket}/kafka-logs/scan"]):
        result = segtool(*command)
        assert result.returncode == 2, command
        assert "inside the input directory" in result.stderr and len(result.stderr.splitlines()) == 1
    assert s3_server.keys(bucket, "") == before


def test_missing_bucket_is_one_line(bucket):
    result = segtool("verify", "s3://segtool-no-such-bucket/kafka-logs")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["segtool: s3://segtool-no-such-bucket/kafka-logs: no such file or directory"]


@pytest.mark.spark
def test_scan_s3a_on_spark_local(s3_server, s3a_only, tmp_path, helpers_in_process):  # noqa: F811
    """The s3a settings travel with the tasks to Spark's Python workers."""
    bucket = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    _scan_compared(s3_server, bucket, tmp_path, "s3a", ["--engine", "spark", "--master", "local[2]", *s3a_only])
