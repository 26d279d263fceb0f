"""Evidence is never modified: read-only inputs work and keep their bytes and mtimes;
in-place writes are atomic, even when the writer is killed at a random moment."""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import case_dirs, segtool


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _case(name: str) -> Path:
    for case in case_dirs("kafka"):
        if case.name == name:
            return case
    pytest.skip(f"{name} is not available")


def test_read_only_inputs_are_read_and_left_identical(tmp_path):
    evidence = tmp_path / "evidence"
    shutil.copytree(_case("c11a-crc-byte-flip") / "data", evidence)
    for path in sorted(evidence.rglob("*"), reverse=True):
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | (stat.S_IXUSR | stat.S_IXGRP if path.is_dir() else 0))
    evidence.chmod(stat.S_IRUSR | stat.S_IXUSR)
    before = _snapshot(evidence)
    part = evidence / "c01-plain-0"
    log = part / "00000000000000000000.log"
    runs = [
        segtool("dump", log),
        segtool("dump", "--format", "json", part),
        segtool("dump", "--format", "kafka", "--deep-iteration", "--print-data-log", log),
        segtool("dump", "--format", "kafka", part / "00000000000000000000.timeindex"),
        segtool("verify", "--deep", evidence),
        segtool("lookup", part, "--offset", "100"),
        segtool("lookup", part, "--timestamp", "earliest"),
        segtool("rebuild-index", part, "--out", tmp_path / "rebuilt"),
        segtool("trim", part / "00000000000000000000.index", "--out", tmp_path / "trimmed"),
        segtool("salvage", evidence, "--out", tmp_path / "salvaged"),
    ]
    for run in runs:
        assert run.returncode in (0, 1), run.stderr
        assert "Traceback" not in run.stderr
    assert _snapshot(evidence) == before
    assert (tmp_path / "rebuilt" / "c01-plain-0" / "00000000000000000000.index").exists()
    assert (tmp_path / "salvaged" / "c01-plain-0" / "00000000000000000000.log").exists()
    evidence.chmod(stat.S_IRWXU)


def test_writing_commands_refuse_the_evidence_directory(tmp_path):
    evidence = tmp_path / "evidence"
    shutil.copytree(_case("c04-transactions") / "data" / "c04-txn-0", evidence)
    before = _snapshot(evidence)
    for args in (("rebuild-index", evidence, "--out", evidence), ("rebuild-index", evidence),
                 ("trim", evidence / "00000000000000000000.index", "--out", evidence / "x"),
                 ("salvage", evidence, "--out", evidence / "x")):
        run = segtool(*args)
        assert run.returncode == 2 and run.stderr.startswith("segtool: ")
    assert _snapshot(evidence) == before


def test_in_place_rebuild_keeps_a_backup(tmp_path):
    part = tmp_path / "c01-plain-0"
    shutil.copytree(_case("c11a-crc-byte-flip") / "data" / "c01-plain-0", part)
    index = part / "00000000000000000000.index"
    old = index.read_bytes()
    run = segtool("rebuild-index", part, "--in-place")
    assert run.returncode == 1  # Kafka's recovery would also truncate this log
    backups = list(part.glob("00000000000000000000.index.segtool-backup-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == old
    assert index.read_bytes() != old
    assert not list(part.glob(".*segtool-tmp*"))


@pytest.mark.slow  # 25 real processes killed at random moments
def test_killed_writer_never_leaves_a_mixed_file(tmp_path):
    source = _case("c11a-crc-byte-flip") / "data" / "c01-plain-0"
    reference = tmp_path / "reference"
    shutil.copytree(source, reference)
    assert segtool("rebuild-index", reference, "--in-place").returncode == 1
    names = ("00000000000000000000.index", "00000000000000000000.timeindex")
    new = {n: (reference / n).read_bytes() for n in names}
    old = {n: (source / n).read_bytes() for n in names}
    assert all(new[n] != old[n] for n in names)
    rng = random.Random(2026)
    for round_number in range(25):
        work = tmp_path / f"round-{round_number}"
        shutil.copytree(source, work)
        proc = subprocess.Popen([sys.executable, "-m", "segtool.cli", "rebuild-index", str(work), "--in-place"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name in names:
            content = (work / name).read_bytes()
            assert content in (old[name], new[name]), f"round {round_number}: {name} is neither old nor new"
        shutil.rmtree(work)
