"""Engines under failure: a pool worker killed as the OOM killer would, a driver killed with -9, a Spark task
that fails once, Ctrl-C of a Spark run.

Real processes throughout (``segtool_process`` and ``subprocess``): the signals, the exit status and what
stays alive are what the shell and /proc see.  Inputs are corpus cases, read in place (a scan never writes
to its inputs); every scan writes to tmp.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from segtool.pipeline.engines import PARENT_POLL_SECONDS  # noqa: E402
from segtool.pipeline.spark import retrying_master  # noqa: E402
from segtool.pipeline.tasks import DEFAULT_TASK_RETRIES, KILL_ONCE_ENV  # noqa: E402
from tests.conftest import SEGTOOL, corpus_path, segtool, segtool_process  # noqa: E402

# Kafka cases of several partitions and segments: hundreds of 16 KiB tasks keep a 2-worker pool busy
# for several seconds, long enough to kill a worker or the driver in the middle
CASES = ["c01-multiseg-clean", "c03-codecs"]
SPLIT = "16KiB"


@pytest.fixture(scope="module")
def inputs() -> list[str]:
    return [str(corpus_path("kafka", case, "data")) for case in CASES]


def _scan_args(inputs: list[str], out: Path, *more: str) -> list[str]:
    return ["scan", *inputs, "--out", str(out), "--split-size", SPLIT, "--no-hash", *more]


def _parts(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_when_tasks_run(args: list[str], out: Path, env: dict | None = None) -> tuple[subprocess.Popen, list[int]]:
    """A scan in its own process, returned once its pool's tasks have written parts (the run is mid-way),
    with the pids of its pool workers."""
    run = subprocess.Popen([*SEGTOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    staging = out / "_temporary"
    while run.poll() is None and time.monotonic() < deadline:
        workers = _children(run.pid)
        if len(workers) == 2 and any(staging.rglob("*.staged")):
            return run, workers
        time.sleep(0.05)
    run.kill()
    pytest.fail(f"the scan did not get under way: {run.communicate()}")


@pytest.fixture(scope="module")
def undisturbed(inputs, tmp_path_factory) -> Path:
    """The dataset of the same scan with nothing killed."""
    out = tmp_path_factory.mktemp("undisturbed") / "out"
    done = segtool(*_scan_args(inputs, out, "--workers", "1"))
    assert done.returncode == 0, done.stderr
    return out


def test_a_killed_pool_worker_costs_one_retry_and_no_row(inputs, undisturbed, tmp_path):
    out = tmp_path / "out"
    run, workers = _start_when_tasks_run(_scan_args(inputs, out, "--workers", "2"), out)
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr
    report = json.loads((out / "_segtool_report.json").read_text())
    (retry,) = report["retries"]
    assert retry["pid"] == workers[0] and retry["attempt"] == 2
    assert retry["reason"] == "was killed by SIGKILL (as the kernel's OOM killer does)"
    # the task it was running is named: its file, and its byte range when it is a split; killed between two
    # tasks it held none, and the unfinished tasks are rerun (which it was depends on timing)
    task = retry["task"]
    if task is not None:
        assert any(task.startswith(case) for case in inputs)
        assert (" split " in task and " (bytes " in task) or Path(task).is_file()  # a split, or a whole file
    assert stderr.splitlines() == [f"segtool: retrying {task or 'the unfinished tasks'} (attempt 2): its worker "
                                   f"{retry['host']}/{workers[0]} {retry['reason']}"]
    produced = _parts(out)
    assert len(produced) == report["dataset"]["files"] > 1
    assert produced == _parts(undisturbed)  # the same part files, byte for byte


def test_a_worker_lost_while_tasks_are_handed_out_costs_a_retry(tmp_path, monkeypatch):
    """The pool breaks while the driver is still submitting (the first task killed its worker at once): the
    run goes on in a fresh pool as for a worker lost later (it was "internal error: BrokenProcessPool")."""
    from concurrent.futures import ProcessPoolExecutor

    from segtool.pipeline.engines import LocalEngine

    monkeypatch.setenv(KILL_ONCE_ENV, str(tmp_path / "killed"))
    submit = ProcessPoolExecutor.submit

    def slow_submit(self, *args, **kwargs):
        future = submit(self, *args, **kwargs)
        time.sleep(0.2)  # time for the first task to kill its worker before the next is handed out
        return future

    monkeypatch.setattr(ProcessPoolExecutor, "submit", slow_submit)
    engine = LocalEngine(workers=2)
    assert engine.map(abs, [-1, -2, -3, -4, -5, -6], [1] * 6) == [1, 2, 3, 4, 5, 6]
    assert (tmp_path / "killed").exists()
    (retry,) = engine.retried
    assert retry["reason"] == "was killed by SIGKILL (as the kernel's OOM killer does)"


def test_a_task_that_keeps_losing_its_worker_fails_the_run_in_one_line(inputs, tmp_path):
    """With no retry allowed, the first worker killed stops the run: one line naming the task, exit 2,
    and no dataset that looks complete."""
    out = tmp_path / "out"
    env = {**os.environ, KILL_ONCE_ENV: str(tmp_path / "killed")}
    done = segtool_process(*_scan_args(inputs, out, "--workers", "2", "--retries", "0"), env=env)
    assert (tmp_path / "killed").exists()  # the hook did kill a worker
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("segtool: task ") and "failed 1 times" in line and line.endswith(": the run is stopped")
    assert "was killed by SIGKILL" in line
    assert not (out / "_SUCCESS").exists()


def test_pool_workers_end_when_the_driver_is_killed(inputs, tmp_path):
    out = tmp_path / "out"
    run, workers = _start_when_tasks_run(_scan_args(inputs, out, "--workers", "2"), out)
    run.kill()  # kill -9 of the driver: no handler of its own runs
    run.communicate(timeout=60)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in workers if _alive(pid)] == []
    assert not (out / "_SUCCESS").exists()


def test_a_worker_whose_parent_is_gone_ends(tmp_path):
    """The parent-pid watchdog, the fallback where the kernel's parent-death signal is not to be had: a
    process that watches for a parent it does not have ends at once; one that watches its own stays."""
    code = ("import os, sys; from segtool.pipeline.engines import _watch_parent; "
            "_watch_parent(int(sys.argv[1]) if sys.argv[1] != 'own' else os.getppid())")
    orphan = subprocess.run([sys.executable, "-c", code, "1"], timeout=60)
    assert orphan.returncode == 1
    child = subprocess.Popen([sys.executable, "-c", code, "own"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=PARENT_POLL_SECONDS * 1.5)  # it has looked at least once
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("given, run", [
    ("local[*]", f"local[*,{DEFAULT_TASK_RETRIES + 1}]"),
    ("local[4]", f"local[4,{DEFAULT_TASK_RETRIES + 1}]"),
    ("local", f"local[1,{DEFAULT_TASK_RETRIES + 1}]"),
    ("local[2,5]", "local[2,5]"),
    ("spark://127.0.0.1:7077", "spark://127.0.0.1:7077"),
])
def test_local_masters_retry_failed_tasks(given, run):
    assert retrying_master(given, DEFAULT_TASK_RETRIES) == run


# -- Spark ---------------------------------------------------------------------------------------


@pytest.fixture
def spark_env():
    from segtool.errors import SegtoolError
    from segtool.pipeline.spark import find_java

    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    pytest.importorskip("pyspark")
    return {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}


@pytest.mark.spark
def test_spark_retries_a_task_whose_python_worker_died(inputs, undisturbed, spark_env, tmp_path):
    """Under the default master (no --master), a task whose Python worker is killed is tried again."""
    out = tmp_path / "out"
    env = {**spark_env, KILL_ONCE_ENV: str(tmp_path / "killed")}
    done = segtool_process(*_scan_args(inputs, out, "--engine", "spark", "--json"), env=env)
    assert (tmp_path / "killed").exists()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["master"] == f"local[*,{DEFAULT_TASK_RETRIES + 1}]"
    (retry,) = report["retries"]
    assert retry["attempt"] == 2 and retry["reason"] == "Python worker exited unexpectedly (crashed)"
    assert done.stderr.splitlines() == [f"segtool: retrying {retry['task']} (attempt 2): its worker "
                                        f"{retry['host']}/executor {retry['executor']} {retry['reason']}"]
    assert _parts(out) == _parts(undisturbed)


@pytest.mark.spark
def test_ctrl_c_of_a_spark_scan_is_one_line(inputs, spark_env, tmp_path):
    out = tmp_path / "out"
    # many small tasks: the job is still running when Ctrl-C comes
    args = ["scan", *inputs, "--out", str(out), "--split-size", "4KiB", "--no-hash", "--engine", "spark"]
    run = subprocess.Popen([*SEGTOOL, *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=spark_env, start_new_session=True)
    deadline = time.monotonic() + 300
    while not any((out / "_temporary").rglob("*.staged")) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run.poll() is None, run.communicate()
    os.killpg(run.pid, signal.SIGINT)  # what a terminal sends to the foreground job on Ctrl-C
    stdout, stderr = run.communicate(timeout=120)
    assert (run.returncode, stderr.decode()) == (130, "segtool: interrupted; nothing was completed\n")
    assert stdout == b"" and not (out / "_SUCCESS").exists()
