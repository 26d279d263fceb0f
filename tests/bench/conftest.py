"""Benchmarks: generated data lives in bench-data/ (git-ignored) and is reused between runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH_DATA = REPO / "bench-data"
SEGTOOL = [sys.executable, "-m", "segtool.cli"]


def timed(cmd: list[str], runs: int = 3, stdout=subprocess.DEVNULL) -> float:
    """Best wall time of ``runs`` runs of a command (warm page cache)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=stdout, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def report(name: str, seconds: float, reference: float, reference_name: str, target: float | None = None) -> None:
    ratio = seconds / reference
    verdict = "" if target is None else (" (target <= %.2fx: %s)" % (target, "met" if ratio <= target else "NOT met"))
    print(f"\n[bench] {name}: {seconds:.3f} s = {ratio:.2f}x {reference_name} ({reference:.3f} s){verdict}")


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    BENCH_DATA.mkdir(exist_ok=True)
    return BENCH_DATA


def have(tool: str) -> bool:
    return shutil.which(tool) is not None
