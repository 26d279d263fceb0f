"""The progress bar: one per run, on stderr when it is a terminal, never with --quiet (before or
after the command's name), --json, or when stderr is not a terminal; stdout is the same either way.
The bar appears at once here (SEGTOOL_PROGRESS_DELAY=0; an operator's runs show it after a second)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

PARTITION = Path(__file__).resolve().parent.parent / "sample_data" / "kafka" / "c07-compacted" / "data" / "c07-compact-0"
SEGTOOL = [sys.executable, "-m", "segtool.cli"]
# the bar at once, and a terminal wide enough for the current file's partition and name
TERMINAL_ENV = {**os.environ, "SEGTOOL_PROGRESS_DELAY": "0", "COLUMNS": "160"}


def _run_on_terminal(args: list[str]) -> tuple[int, bytes, bytes]:
    """Run segtool with stderr on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    seen: list[bytes] = []

    def drain():  # read as it comes: a full terminal buffer would block the command
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the last writer closed the terminal
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run(SEGTOOL + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                              timeout=120, env=TERMINAL_ENV)
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    return done.returncode, done.stdout, b"".join(seen)


def _without_timings(stdout: bytes) -> list[bytes]:
    # scan's timing line, and what a repeated --force run says of the first run's files it meets
    return [line for line in stdout.splitlines()
            if b"MB/s" not in line and b"replaced a file" not in line and b"held these very bytes" not in line]


def _commands(tmp_path):
    return {
        "verify": ["verify", str(PARTITION)],
        "rebuild-index": ["rebuild-index", str(PARTITION), "--out", str(tmp_path / "rebuilt"), "--force"],
        # two workers: the local engine's process pool, not its in-process path for small inputs
        "scan": ["scan", str(PARTITION), "--out", str(tmp_path / "scan"), "--force", "--workers", "2"],
        "index-keys": ["index-keys", str(PARTITION), "--out", str(tmp_path / "keys"), "--force"],
    }


# each a dozen real processes on a pseudo-terminal: one command in the fast tier, the rest in the full one
@pytest.mark.parametrize("command", [pytest.param("verify", marks=pytest.mark.slow),
                                     pytest.param("rebuild-index", marks=pytest.mark.slow),
                                     pytest.param("scan", marks=pytest.mark.slow), "index-keys"])
def test_progress_bar_only_on_a_terminal_and_never_when_quiet(command, tmp_path):
    args = _commands(tmp_path)[command]
    code, stdout, terminal = _run_on_terminal(args)
    assert code == 0
    # the current file with its partition (scan: its pool's tasks, one piece of work)
    # the file being read, with its partition (which one the bar catches at its 10 redraws a second depends on load)
    name = b"segtool scan" if command == "scan" else f"{PARTITION.name}/".encode()
    assert name in terminal and "━".encode() in terminal  # rich's bar
    for quiet in (args + ["--quiet"], ["--quiet"] + args, args[:1] + ["-q"] + args[1:], args + ["--json"]):
        quiet_code, quiet_stdout, quiet_terminal = _run_on_terminal(quiet)
        assert quiet_code == 0 and quiet_terminal == b"", quiet
        if "--json" not in quiet:
            assert _without_timings(quiet_stdout) == _without_timings(stdout)
    piped = subprocess.run(SEGTOOL + args, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == b""
    assert _without_timings(piped.stdout) == _without_timings(stdout)


def test_one_bar_for_a_run_of_hundreds_of_files(tmp_path):
    """A bar per file drew 1.9 MB for 306 files and redrew every bar ever made at each refresh."""
    from tests.bench.test_bench_progress import log_dir_of_cases

    log_dir = log_dir_of_cases(tmp_path / "logs")
    files = sum(len(names) for _, _, names in os.walk(log_dir))
    code, stdout, terminal = _run_on_terminal(["verify", "--no-hash", log_dir])
    assert code == 0 and stdout
    assert f"/{files} files".encode() in terminal and "━".encode() in terminal
    assert len(terminal) < 64 * 1024, len(terminal)
    # rich clears the lines of every bar before it redraws: one bar never clears two lines at once
    erase_line, cursor_up = b"\x1b[2K", b"\x1b[1A"
    assert erase_line + cursor_up + erase_line not in terminal
