"""Shared test fixtures: where the conformance corpus and sample data live."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import shutil
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


# tmpfs big enough for the suite's largest inputs (the memory tests' 300-512 MiB files, several at once)
_TMPFS = Path("/dev/shm")
_TMPFS_NEEDED = 8 << 30


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Test outputs on tmpfs where there is room: the writing commands fsync every file they publish,
    and on a disk those waits were half of some tests' time.  An explicit --basetemp is kept; the
    folder is this run's own (runs side by side never share it) and goes at the end."""
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    if _TMPFS.is_dir() and os.access(_TMPFS, os.W_OK) and shutil.disk_usage(_TMPFS).free >= _TMPFS_NEEDED:
        config.option.basetemp = str(_TMPFS / f"segtool-tests-{os.getpid()}")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))


# a test that uses one of these fixtures (directly or through another) carries its tier's mark
_FIXTURE_MARKS = {"spark_engine": "spark", "browser": "browser", "cluster": "cluster"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture, mark in _FIXTURE_MARKS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(mark)


@pytest.fixture(scope="module", autouse=True)
def _give_back_memory():
    """After each module, what its fixtures held goes back to the system: every fork a test makes
    (a scan's workers, verify's helpers) copies this process, and a large one costs seconds."""
    yield
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)  # glibc's; others may not have it
        except (OSError, AttributeError):
            pass


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """index-keys writes to the user's cache by default: tests (and the commands they start) use their own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


SEGTOOL = [sys.executable, "-m", "segtool.cli"]


def segtool_process(*args, **kwargs) -> subprocess.CompletedProcess:
    """Run the command line as a user does (a new process; text output captured).

    For what only a real process shows: its exit status as the shell sees it, signals, a closed
    pipe, a terminal, the Spark jobs it submits.  Everything else goes through ``segtool``."""
    return subprocess.run([*SEGTOOL, *map(str, args)], capture_output=True, text=True,
                          timeout=kwargs.pop("timeout", 900), **kwargs)


def _no_fork() -> None:
    return None  # what segtool.source.fork_quietly answers when os.fork() fails


@pytest.fixture(scope="module")
def helpers_in_process():
    """For a module whose process grows large (a Spark driver, whole-corpus scans): the helpers the
    library forks (the early sha256, the CRC-32C helper) do their work in the caller, as when a fork
    fails, as ``segtool`` below has them.  Each fork copied this process, once per file: a deep verify
    of the corpus cost 44 s of CPU instead of 12.  The children are tested in test_hash_beside.py."""
    from segtool import source
    from segtool.formats import checksums

    forks = source.fork_quietly, checksums.fork_quietly
    source.fork_quietly = checksums.fork_quietly = _no_fork
    yield
    source.fork_quietly, checksums.fork_quietly = forks


def segtool(*args, env: dict | None = None, cwd=None, input: str | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run the command line in this process, as ``segtool.cli.main`` runs it in its own.

    The same argument handling and exit-code contract (``_run_command``: one-line errors, usage
    errors, exit codes), with stdin, stdout and stderr swapped for buffers by typer's ``CliRunner``
    (not terminals, as in a pipe; help as wide as without a terminal).  What ``main`` does only for
    the process it owns is left out or undone: the SIGTERM handler, glibc's malloc thresholds and
    ``gc.freeze`` are not set; the garbage collector a command turns off is turned back on, an early
    hash no one took up is stopped (``main``'s exit hook) and the state a process starts with is reset.
    The helpers a command forks (the early sha256, the CRC-32C helper) are not forked: each fork
    would copy this process, hundreds of MB under pytest, once per file (a verify of a store took
    seconds instead of a third of one), so the command does that work itself, as it does when a
    fork fails; those children are tested on their own (test_hash_beside.py) and in real processes.
    ``env`` replaces the whole environment for the call, as for a subprocess; ``timeout`` is
    accepted for the same signature and not enforced.  Returns what ``subprocess.run`` returns.
    """
    from typer._click import formatting
    from typer.testing import CliRunner

    from segtool import cli, source
    from segtool.formats import checksums

    argv = [str(arg) for arg in args]
    saved_argv, saved_cwd, saved_environ = sys.argv, os.getcwd(), dict(os.environ)
    collecting = gc.isenabled()
    forks = source.fork_quietly, checksums.fork_quietly
    cli._State.debug = cli._State.quiet = False
    cli._State.exit_if_output_closed = cli.EXIT_CLEAN
    code = 0
    with CliRunner().isolation(input=input) as (stdout, stderr, _):
        # Python's own stdio under a UTF-8 locale: undecodable bytes pass through unchanged
        sys.stdout.reconfigure(errors="surrogateescape")
        sys.stderr.reconfigure(errors="surrogateescape")
        sys.stdout = cli._GuardedStdout(sys.stdout)
        formatting.FORCED_WIDTH = None  # help as a process without a terminal formats it (the runner fixes 80)
        try:
            source.fork_quietly = checksums.fork_quietly = _no_fork
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            if cwd is not None:
                os.chdir(cwd)
            sys.argv = ["segtool", *argv]
            cli._run_command()
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            source._stop_unused()
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            if os.environ != saved_environ:
                os.environ.clear()
                os.environ.update(saved_environ)
            if collecting:
                gc.enable()
            source.fork_quietly, checksums.fork_quietly = forks
        out, err = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(["segtool", *argv], code, out.decode(), err.decode())


def comparable_scan_report(report: dict) -> dict:
    """A scan report without what depends on the run: timing, engine, where the input was read and the
    output went, its staging."""
    out = json.loads(json.dumps(report))
    for name in ("timing", "engine", "master", "out", "commit"):
        out.pop(name)
    for name in ("path", "report"):
        out["dataset"].pop(name)
    for task in out["task_results"]:  # a part's bytes hold source_dir: where the input was read
        task["parts"] = [{"path": part["path"], "rows": part["rows"]} for part in task["parts"]]
    return out
