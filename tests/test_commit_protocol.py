"""scan's commit protocol: an interrupted scan never reads as a complete dataset, and --resume finishes it.

A real scan process is stopped at each stage (start-up, in the middle of one task with a row group
written, in the commit with one part published) by the test hook ``SEGTOOL_PAUSE_AT`` and then
killed with SIGKILL (the driver alone, as the OOM killer or a crash would) or sent SIGINT (to its
process group, as a terminal's Ctrl-C is), on the local pool and on Spark local.  After each, OUT
holds no ``_SUCCESS``, ``scan --check`` says incomplete, and where nothing was published a reader
reads nothing; ``--resume`` then writes the very bytes (parts and manifest) of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from segtool.errors import SegtoolError  # noqa: E402
from segtool.pipeline import storage  # noqa: E402
from segtool.pipeline.commit import PAUSE_VARIABLE, check_dataset  # noqa: E402
from segtool.pipeline.inputs import discover  # noqa: E402
from segtool.pipeline.splits import plan_tasks  # noqa: E402
from tests.conftest import SEGTOOL, corpus_path, segtool, segtool_process  # noqa: E402
from tests.s3_server import s3_server  # noqa: E402,F401  (the session fixture)

SPLIT = "16KiB"
LOCAL = ["--engine", "local", "--workers", "2"]
SPARK = ["--engine", "spark", "--master", "local[2]"]


@pytest.fixture(scope="module")
def partition() -> Path:
    return corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")


@pytest.fixture(scope="module")
def reference(partition, tmp_path_factory) -> dict[str, bytes]:
    """The uninterrupted run's parts and manifest, byte for byte."""
    out = tmp_path_factory.mktemp("reference") / "out"
    run = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL)
    assert run.returncode == 0, run.stderr
    return _dataset(out)


def _dataset(out: Path) -> dict[str, bytes]:
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))
             if "_temporary" not in p.parts}
    return {**files, "_SUCCESS": (out / "_SUCCESS").read_bytes()}


def _last_task(partition: Path) -> int:
    """The smallest task: handed out last (largest first), so the others are done or running when it pauses."""
    tasks, _ = plan_tasks(discover([str(partition)]), storage_split())
    assert len(tasks) > 4
    return min(tasks, key=lambda task: (task["bytes"], -task["id"]))["id"]


def storage_split() -> int:
    from segtool.pipeline.scan import parse_size

    return parse_size(SPLIT)


def _interrupt(tmp_path: Path, args: list, stage: str, how: signal.Signals) -> subprocess.CompletedProcess:
    """Run ``segtool scan ARGS`` until it reaches ``stage``, then SIGKILL its driver or Ctrl-C its group;
    whatever it left running (pool workers, a JVM) is killed after, so nothing writes while OUT is checked."""
    flag = tmp_path / f"paused-{stage}"
    env = {**os.environ, PAUSE_VARIABLE: f"{stage}:{flag}"}
    run = subprocess.Popen([*SEGTOOL, "scan", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while not flag.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flag.exists(), run.communicate()
    if how is signal.SIGKILL:
        run.kill()
    else:
        os.killpg(run.pid, how)
    run.wait(timeout=120)
    try:
        os.killpg(run.pid, signal.SIGKILL)  # before reading: a worker left running holds the pipes open
    except ProcessLookupError:
        pass
    stdout, stderr = run.communicate(timeout=60)
    time.sleep(0.5)
    return subprocess.CompletedProcess(run.args, run.returncode, stdout.decode(), stderr.decode())


def _never_complete(out: Path, published: bool) -> None:
    assert not (out / "_SUCCESS").exists()
    check = check_dataset(str(out))
    assert not check["complete"] and check["staging"]
    assert {"path": "_SUCCESS", "reason": "absent: the scan did not finish (or is still running)"} in check["problems"]
    assert bool(storage.dataset_files(str(out))) == published
    if not published:  # a reader reads nothing: pyarrow finds no file, or raises
        try:
            assert pq.read_table(out).num_rows == 0
        except (OSError, ValueError):
            pass
    if not published:  # nor does a *.parquet glob: staged parts are not named so
        assert not list(out.rglob("*.parquet"))


def _stopped_as_asked(stopped: subprocess.CompletedProcess, how: signal.Signals) -> None:
    if how is signal.SIGKILL:
        assert stopped.returncode == -signal.SIGKILL
    else:
        assert (stopped.returncode, stopped.stderr) == (130, "segtool: interrupted; nothing was completed\n")


def _resume_matches(partition: Path, out: Path, engine: list, reference: dict, kept_tasks: bool) -> dict:
    """--resume completes OUT as the uninterrupted run did; an interrupted run that had not planned yet has
    nothing to keep: its staging is named and removed."""
    interrupted = sorted(str(p) for p in (out / "_temporary").iterdir())
    run = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", "--resume", "--json", *engine)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["commit"]["resumed_tasks"] > 0) == kept_tasks
    assert report["commit"]["removed_staging"] == ([] if kept_tasks else interrupted)
    assert _dataset(out) == reference
    assert check_dataset(str(out))["complete"] and not (out / "_temporary").exists()
    return report


# the fast tier keeps two of the six (a killed task, a Ctrl-C in the commit); the full tier runs every one
_SLOW = pytest.mark.slow
LOCAL_STOPS = [pytest.param("startup", signal.SIGKILL, id="startup-kill-9", marks=_SLOW),
               pytest.param("startup", signal.SIGINT, id="startup-ctrl-c", marks=_SLOW),
               pytest.param("task", signal.SIGKILL, id="task-kill-9"),
               pytest.param("task", signal.SIGINT, id="task-ctrl-c", marks=_SLOW),
               pytest.param("commit", signal.SIGKILL, id="commit-kill-9", marks=_SLOW),
               pytest.param("commit", signal.SIGINT, id="commit-ctrl-c")]


@pytest.mark.parametrize(("stage", "how"), LOCAL_STOPS)
def test_an_interrupted_local_scan_never_reads_complete_and_resumes_to_the_same_bytes(
        stage, how, partition, reference, tmp_path):
    out = tmp_path / "out"
    pause = f"task-{_last_task(partition)}" if stage == "task" else stage
    stopped = _interrupt(tmp_path, [partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL], pause, how)
    _stopped_as_asked(stopped, how)
    _never_complete(out, published=stage == "commit")
    report = _resume_matches(partition, out, LOCAL, reference, kept_tasks=stage != "startup")
    if stage == "task":  # every task but the paused one (and at most one beside it) had finished
        assert report["commit"]["resumed_tasks"] >= report["tasks"] - 2


@pytest.mark.spark
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
@pytest.mark.parametrize("stage", ["startup", "task", "commit"])
def test_an_interrupted_spark_scan_never_reads_complete_and_resumes_to_the_same_bytes(
        stage, how, partition, reference, tmp_path):
    out = tmp_path / "out"
    pause = f"task-{_last_task(partition)}" if stage == "task" else stage
    stopped = _interrupt(tmp_path, [partition, "--out", out, "--split-size", SPLIT, "--no-hash", *SPARK], pause, how)
    _stopped_as_asked(stopped, how)
    _never_complete(out, published=stage == "commit")
    _resume_matches(partition, out, SPARK, reference, kept_tasks=stage != "startup")


def test_force_removes_the_old_success_before_anything_else(partition, reference, tmp_path):
    """A --force rerun killed at start-up leaves the old parts without _SUCCESS: not complete."""
    out = tmp_path / "out"
    first = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL)
    assert first.returncode == 0 and check_dataset(str(out))["complete"]
    stopped = _interrupt(tmp_path, [partition, "--out", out, "--split-size", SPLIT, "--no-hash", "--force", *LOCAL],
                         "startup", signal.SIGKILL)
    _stopped_as_asked(stopped, signal.SIGKILL)
    _never_complete(out, published=True)  # the old parts are there, the old _SUCCESS is not
    _resume_matches(partition, out, LOCAL, reference, kept_tasks=False)


def test_a_rerun_names_and_removes_an_interrupted_runs_staging(partition, reference, tmp_path):
    out = tmp_path / "out"
    _interrupt(tmp_path, [partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL],
               f"task-{_last_task(partition)}", signal.SIGKILL)
    (left,) = (out / "_temporary").iterdir()
    run = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL)
    assert run.returncode == 0, run.stderr
    assert f"removed {left}: the staging folder of an interrupted scan" in run.stdout
    report = json.loads((out / "_segtool_report.json").read_text())
    assert report["commit"]["removed_staging"] == [str(left)] and report["commit"]["resumed_tasks"] == 0
    assert _dataset(out) == reference and not (out / "_temporary").exists()


def test_a_running_scan_is_not_disturbed_by_another(partition, tmp_path):
    """While a scan's heartbeat is fresh and its driver runs, a second scan into the same OUT is refused."""
    out = tmp_path / "out"
    flag = tmp_path / "paused"
    env = {**os.environ, PAUSE_VARIABLE: f"startup:{flag}"}
    first = subprocess.Popen([*SEGTOOL, "scan", partition, "--out", out, "--no-hash", *LOCAL], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        (staging,) = (out / "_temporary").iterdir()
        second = segtool("scan", partition, "--out", out, "--no-hash", *LOCAL)
        assert second.returncode == 2
        assert f"another scan is writing into this output (_temporary/{staging.name}: host" in second.stderr
        assert f"pid {first.pid}" in second.stderr and second.stderr.count("\n") == 1
        assert (out / "_temporary" / staging.name).is_dir()  # left alone
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_resume_refuses_another_plan_and_a_finished_dataset(partition, tmp_path):
    out = tmp_path / "out"
    _interrupt(tmp_path, [partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL], "commit",
               signal.SIGKILL)
    other = segtool("scan", partition, "--out", out, "--split-size", "32KiB", "--no-hash", "--resume", *LOCAL)
    assert other.returncode == 2 and "its plan differs" in other.stderr
    plain = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL)
    assert plain.returncode == 2 and "no _SUCCESS: an interrupted scan, which --resume continues" in plain.stderr
    done = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", "--resume", *LOCAL)
    assert done.returncode == 0, done.stderr
    again = segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", "--resume", *LOCAL)
    assert again.returncode == 2 and "a finished scan (it has _SUCCESS): nothing to resume" in again.stderr


def test_check_names_each_way_a_dataset_differs_from_its_manifest(partition, tmp_path):
    out = tmp_path / "out"
    assert segtool("scan", partition, "--out", out, "--split-size", SPLIT, "--no-hash", *LOCAL).returncode == 0
    whole = segtool("scan", "--check", out, "--json")
    assert whole.returncode == 0, whole.stderr
    manifest = json.loads((out / "_SUCCESS").read_text())
    assert json.loads(whole.stdout) == {"out": str(out), "complete": True, "rows": manifest["rows"],
                                        "files": len(manifest["files"]), "problems": [], "staging": []}
    assert manifest["rows"] == pq.read_table(out).num_rows > 0
    first, second, third = (entry["path"] for entry in manifest["files"][:3])
    (out / first).unlink()
    torn = (out / second).read_bytes()
    (out / second).write_bytes(torn[:len(torn) // 2])
    flipped = bytearray((out / third).read_bytes())
    flipped[len(flipped) // 2] ^= 0xFF
    (out / third).write_bytes(bytes(flipped))
    shutil.copy(out / manifest["files"][3]["path"], out / Path(first).parent / "part-999999.parquet")
    broken = segtool("scan", "--check", out, "--json")
    assert broken.returncode == 1
    reasons = {p["path"]: p["reason"] for p in json.loads(broken.stdout)["problems"]}
    assert reasons == {first: "in the manifest but absent",
                       second: f"{len(torn) // 2} bytes, the manifest says {len(torn)}",
                       third: "sha256 differs from the manifest's",
                       str(Path(first).parent / "part-999999.parquet"): "not in the manifest: a reader would read it too"}
    (out / "_SUCCESS").unlink()
    text = segtool("scan", "--check", out)
    assert text.returncode == 1 and text.stdout.startswith(f"NOT complete: {out}\n")
    assert "_SUCCESS: absent" in text.stdout


def test_a_failed_task_stages_nothing(partition, tmp_path, monkeypatch):
    """A task that fails while writing leaves no part, staged or final, and no marker."""
    from segtool.pipeline import scan as scan_module

    tasks, _ = plan_tasks(discover([str(partition)]), storage_split())
    real = scan_module.task_rows

    def failing(task, stats, *args):
        for n, item in enumerate(real(task, stats, *args)):
            if n == 1:
                raise OSError("disk gone")
            yield item

    monkeypatch.setattr(scan_module, "task_rows", failing)
    with pytest.raises(SegtoolError, match="disk gone"):
        scan_module.run_scan_task(tasks[0], str(tmp_path), chunk_rows=10)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_input_an_executor_cannot_see_is_named_with_the_executor(partition, tmp_path):
    """What a Spark executor sends back for a task whose local input is not there (a node without the
    shared mount): the executor's host in the one line."""
    import socket
    from functools import partial

    from segtool.errors import UnreadableInput
    from segtool.pipeline.scan import run_scan_task
    from segtool.pipeline.spark import _run_chunk
    from segtool.pipeline.tasks import unwrap

    copy = tmp_path / "c01-plain-0"
    shutil.copytree(partition, copy)
    tasks, _ = plan_tasks(discover([str(copy)]), storage_split())
    for log in copy.glob("*.log"):
        log.unlink()
    ((_, outcome),) = _run_chunk(partial(run_scan_task, run_root=str(tmp_path / "staging")), {}, [(0, tasks[0])])
    with pytest.raises(UnreadableInput) as raised:
        unwrap(outcome)
    assert str(raised.value).startswith(f"{tasks[0]['path']}: not visible on executor {socket.gethostname()}: ")


def test_the_executor_probe_finds_an_output_the_driver_cannot_see(tmp_path):
    from segtool.pipeline.spark import _probe, judge_probe

    (found,) = _probe(str(tmp_path), None)  # an executor on this machine: the driver sees its marker
    assert Path(found["marker"]).exists() and found["missing"] is None
    judge_probe(found, "python3", str(tmp_path))
    assert not Path(found["marker"]).exists()
    elsewhere = {**found, "host": "worker-7", "marker": str(tmp_path / "x" / "executor-probe-worker-7-1")}
    with pytest.raises(SegtoolError, match="--out is not shared with the executors: executor worker-7 wrote "
                                           "executor-probe-worker-7-1 there and the driver does not see it"):
        judge_probe(elsewhere, "python3", str(tmp_path))


def _pythons() -> list:
    import sys

    other = "/root/.pyenv/versions/3.12.1/bin/python"
    base = os.path.join(sys.base_prefix, "bin", "python3")  # the venv's base Python: no pyarrow in it
    return [pytest.param(other, "is Python 3.12, the driver's is 3.11", id="other-version",
                         marks=pytest.mark.skipif(not os.path.exists(other) or sys.version_info[:2] != (3, 11),
                                                  reason="needs a Python 3.12 beside a 3.11 driver")),
            pytest.param(base, "lacks pyarrow (No module named 'pyarrow')", id="no-dependencies",
                         marks=pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtualenv")),
            pytest.param("/nonexistent/python", 'cannot be started: Cannot run program "/nonexistent/python"',
                         id="absent")]


@pytest.mark.spark
@pytest.mark.parametrize(("python", "cause"), _pythons())
def test_a_wrong_executor_python_is_named_before_any_work(python, cause, partition, tmp_path):
    out = tmp_path / "out"
    # a real process: Spark's JVM writes to the process's stderr, which is what must stay one line
    run = segtool_process("scan", partition, "--out", out, "--no-hash", "--master", "local[1]",
                          "--conf", f"spark.pyspark.python={python}")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and cause in run.stderr and "collectAndServe" not in run.stderr
    assert not (out / "_temporary").exists() and not (out / "_SUCCESS").exists()


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["task", "commit"])
def test_an_interrupted_scan_into_s3_never_reads_complete_and_resumes_to_the_same_bytes(
        stage, partition, s3_server, tmp_path, monkeypatch):  # noqa: F811
    """The same bars on an S3 API (moto's server on loopback): staged objects, copy-then-delete publishing."""
    import uuid

    server = s3_server
    for key, value in server.environment.items():  # the store's address and keys, for this process and the run
        monkeypatch.setenv(key, value)
    bucket = f"cases-{uuid.uuid4().hex[:12]}"
    server.client().create_bucket(Bucket=bucket)
    whole, out = f"s3://{bucket}/whole", f"s3://{bucket}/out"
    args = ["--split-size", SPLIT, "--no-hash", *LOCAL]
    assert segtool("scan", partition, "--out", whole, *args).returncode == 0
    pause = f"task-{_last_task(partition)}" if stage == "task" else stage
    _stopped_as_asked(_interrupt(tmp_path, [partition, "--out", out, *args], pause, signal.SIGKILL), signal.SIGKILL)
    check = check_dataset(out)
    assert not check["complete"] and check["staging"]
    assert bool(storage.dataset_files(out)) == (stage == "commit")
    run = segtool("scan", partition, "--out", out, *args, "--resume", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["commit"]["resumed_tasks"] > 0
    assert check_dataset(out)["complete"]

    def objects(prefix: str) -> dict[str, bytes]:
        return {key[len(prefix) + 1:]: server.read(bucket, key) for key in server.keys(bucket, prefix + "/")
                if not key.endswith("/") and "_segtool_report" not in key}

    assert objects("out") == objects("whole") and "_SUCCESS" in objects("out")
    assert not [key for key in objects("out") if key.startswith("_temporary")]

