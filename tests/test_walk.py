"""Nothing skipped in silence: every file under a path is processed or named with the reason,
at any depth, through bad entries; what dump reads, verify checks; no false alarm on a hot copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import corpus_path, segtool


def _all_files(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


@pytest.mark.slow  # the whole wild corpus to Parquet; verify accounts for every wild file in the fast tier
def test_scan_reads_every_log_of_the_wild_corpus_at_any_depth_and_names_the_rest(tmp_path):
    wild = corpus_path("wild")
    run = segtool("scan", wild, "--out", tmp_path / "scan", "--json", "--no-hash", "--workers", "2")
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    every = _all_files(wild)
    scanned = {f["path"] for f in report["inputs"]["files"]}
    skipped = {f["path"] for f in report["inputs"]["skipped"]}
    unreadable = {f["path"] for f in report["inputs"]["unreadable"]}
    assert all(f["reason"] for f in report["inputs"]["skipped"])
    assert scanned | skipped | unreadable == every
    logs = {f for f in every if f.endswith(".log")}
    assert logs and logs <= scanned | skipped  # .log files not named <20 digits>.log are skipped, with reason
    deep = {f for f in logs if f.count(os.sep) - str(wild).count(os.sep) > 5}
    assert deep and deep <= scanned  # below the old four-level limit
    assert sum(1 for f in logs if f in scanned) >= 120


def test_verify_accounts_for_every_wild_file(tmp_path):
    wild = corpus_path("wild")
    run = segtool("verify", wild, "--json", "--no-hash")
    report = json.loads(run.stdout)
    reported = {f["path"] for f in report["files"]}
    assert reported == _all_files(wild)
    for item in report["files"]:
        assert item["status"] in ("ok", "problems", "unreadable", "skipped")
        if item["status"] == "skipped":
            assert item["reason"]


def _partition_with_bad_links(tmp_path: Path) -> Path:
    logdir = tmp_path / "logs"
    shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data"), logdir)
    (logdir / "dangling.log").symlink_to(tmp_path / "gone")
    (logdir / "loop").symlink_to(logdir)
    (logdir / "self").symlink_to(logdir / "self")
    return logdir


def test_verify_reports_dangling_links_and_loops_and_goes_on(tmp_path):
    logdir = _partition_with_bad_links(tmp_path)
    run = segtool("verify", logdir, "--json")
    assert run.returncode == 2, run.stderr
    report = json.loads(run.stdout)
    by_path = {f["path"]: f for f in report["files"]}
    for name, reason in (("dangling.log", "dangling symlink"), ("loop", "symlink loop"), ("self", "symlink loop")):
        item = by_path[str(logdir / name)]
        assert item["status"] == "unreadable" and reason in item["problems"][0]["message"]
    checked = [f for f in report["files"] if f["status"] == "ok"]
    assert len(checked) == len(_all_files(corpus_path("kafka", "c01-multiseg-clean", "data")))


@pytest.mark.parametrize("fmt", ["text", "json", "kafka"])
def test_dump_names_dangling_links_and_loops_and_goes_on(tmp_path, fmt):
    logdir = _partition_with_bad_links(tmp_path)
    run = segtool("dump", "--format", fmt, logdir)
    assert run.returncode == 2
    for name in ("dangling.log", "loop", "self"):
        assert f"{logdir / name}: " in run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout.count("00000000000000000000.log") >= 1  # the readable files were dumped


def test_scan_reports_dangling_links_and_loops_and_goes_on(tmp_path):
    logdir = _partition_with_bad_links(tmp_path)
    run = segtool("scan", logdir, "--out", tmp_path / "scan", "--json", "--workers", "1")
    assert run.returncode == 2, run.stderr
    report = json.loads(run.stdout)
    assert {Path(f["path"]).name for f in report["inputs"]["unreadable"]} == {"dangling.log", "loop", "self"}
    assert report["dataset"]["rows_by_broker"]["kafka"] > 0


def test_interrupted_scan_leaves_nothing_that_looks_complete(tmp_path):
    """A scan killed while its tasks run has written no dataset and no _SUCCESS marker."""
    out = tmp_path / "scan"
    code = ("import sys; from segtool.pipeline import scan\n"
            "real = scan.run_scan_task\n"
            "calls = []\n"
            "def dying(task, **kw):\n"
            "    calls.append(1)\n"
            "    if len(calls) == 2: raise SystemExit(9)\n"
            "    return real(task, **kw)\n"
            "scan.run_scan_task = dying\n"
            "from segtool.cli import main; main()\n")
    partition = corpus_path("kafka", "c01-multiseg-clean", "data")
    killed = subprocess.run([sys.executable, "-c", code, "scan", partition, "--out", out, "--workers", "1",
                             "--split-size", "16KiB"], capture_output=True, text=True, timeout=600)
    assert killed.returncode != 0
    assert not (out / "_SUCCESS").exists() and not (out / "_segtool_report.json").exists()
    assert not [p for p in out.iterdir() if not p.name.startswith(("_", "."))]
    assert not list(out.rglob("*.parquet"))  # staged parts are not named so: no reader's glob finds them
    left = sorted((out / "_temporary").iterdir())  # the killed run's staging (Spark and pyarrow skip `_` names)
    done = segtool("scan", partition, "--out", out, "--json", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert (out / "_SUCCESS").exists() and not (out / "_temporary").exists()
    assert json.loads(done.stdout)["commit"]["removed_staging"] == [str(run) for run in left]  # named, removed


def test_scan_without_pyarrow_says_what_to_install():
    code = "import sys; sys.modules['pyarrow'] = None\nfrom segtool.cli import main; main()\n"
    run = subprocess.run([sys.executable, "-c", code, "scan", corpus_path("kafka", "c01-multiseg-clean", "data"),
                          "--out", "/nonexistent-never-written"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "pyarrow" in run.stderr and "pip install" in run.stderr and "internal error" not in run.stderr


def test_verify_checks_every_kraft_snapshot_dump_reads():
    wild = corpus_path("wild")
    snapshots = sorted(p for p in wild.rglob("*.checkpoint")
                       if p.name == "bootstrap.checkpoint" or p.parent.name.startswith("__cluster_metadata"))
    assert snapshots
    for path in snapshots:
        dumped = segtool("dump", "--shallow", path)
        verified = json.loads(segtool("verify", path, "--json", "--no-hash").stdout)["files"][0]
        assert verified["status"] != "unreadable", (path, verified)
        if dumped.returncode == 0:
            assert verified["status"] == "ok", (path, verified["problems"])


def test_a_healthy_hot_copy_verifies_clean():
    run = segtool("verify", corpus_path("kafka", "c02-unclean-hot-copy", "data"), "--json", "--no-hash")
    assert run.returncode == 0, [f for f in json.loads(run.stdout)["files"] if f["status"] != "ok"]


def test_a_missing_index_names_the_file(tmp_path):
    partition = tmp_path / "p-0"
    shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0"), partition)
    (partition / "00000000000000000000.index").unlink()
    report = json.loads(segtool("verify", partition, "--json", "--no-hash").stdout)
    log = next(f for f in report["files"] if f["path"].endswith("00000000000000000000.log"))
    missing = [p for p in log["problems"] if p["kind"] == "missing_index"]
    assert missing and str(partition / "00000000000000000000.index") in missing[0]["message"]


def test_a_terminated_scan_stops_at_once_and_leaves_no_worker(tmp_path):
    """SIGTERM (or Ctrl-C) during a scan on the process pool: it ends within seconds, not after
    every queued task, and kills its workers instead of leaving them running."""
    import os
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "segtool.cli", "-q", "scan", corpus_path(), "--out",
                             tmp_path / "scan", "--engine", "local", "--workers", "2", "--split-size", "64KiB"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while not children and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as handle:
            children = {int(pid) for pid in handle.read().split()}
    assert children, "the scan started no worker pool"
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 143
    assert proc.stderr.read() == b""
    time.sleep(0.5)
    assert not [pid for pid in children if os.path.exists(f"/proc/{pid}")], "workers left running"
    assert not (tmp_path / "scan" / "_SUCCESS").exists()
