"""Shared test fixtures: where the conformance corpus and sample data live."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DATA = REPO / "sample_data"
CORPUS = REPO.parent / "shared" / "corpus"


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpus, skipping the test when the corpus is absent."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"conformance corpus not present at {path} (needs ../shared/corpus beside the repo)")
    return path


@pytest.fixture
def corpus() -> Path:
    return corpus_path()


def case_dirs(family: str) -> list[Path]:
    """Every case folder of a family ("kafka" or "rocketmq").

    The full corpus when ../shared/corpus is present; otherwise the real cases
    copied into sample_data/, so the core conformance tests still run.
    """
    root = CORPUS / family if (CORPUS / family).exists() else SAMPLE_DATA / family
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "case.json").exists())


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """index-keys writes to the user's cache by default: tests (and the commands they start) use their own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


SEGTOOL = [sys.executable, "-m", "segtool.cli"]


def segtool(*args, **kwargs) -> subprocess.CompletedProcess:
    """Run the command line as a user does (a new process; text output captured)."""
    return subprocess.run([*SEGTOOL, *map(str, args)], capture_output=True, text=True,
                          timeout=kwargs.pop("timeout", 900), **kwargs)


def comparable_scan_report(report: dict) -> dict:
    """A scan report without what depends on the run: timing, engine, where the output went."""
    out = json.loads(json.dumps(report))
    for name in ("timing", "engine", "master", "out"):
        out.pop(name)
    for name in ("path", "report"):
        out["dataset"].pop(name)
    return out
