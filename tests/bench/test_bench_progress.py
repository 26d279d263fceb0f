"""Issue 27 item 13: a terminal run costs at most 1.1x a piped one.

verify of a 306-file log dir (the partitions of four Kafka corpus cases side by side) and of
corpus/wild/ (1,696 files), with stderr on a pseudo-terminal (the progress bar drawn) against
the same command with stderr piped (no bar), stdout to /dev/null in both; best of five each,
interleaved.  Wall times and, for a machine that is not idle, the processes' CPU times.
Before one bar per run, the log dir took 42 s on a terminal (1.9 MB drawn) against 0.98 s piped.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import threading
import time

import pytest

from tests.bench.conftest import SEGTOOL, report
from tests.conftest import corpus_path

TARGET = 1.10
CASES = ("c01-multiseg-clean", "c03-codecs", "c05-logappendtime", "c06-ooo-timestamps")


def log_dir_of_cases(target) -> str:
    """The partitions of ``CASES`` side by side in one log dir (306 files)."""
    if not target.exists():
        for case in CASES:
            for partition in sorted(corpus_path("kafka", case, "data").iterdir()):
                if partition.is_dir():
                    shutil.copytree(partition, target / partition.name)
    return str(target)


def terminal_seconds(args: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall time of one run with stderr on a pseudo-terminal (read as it comes), and the bytes it drew."""
    master, slave = os.openpty()
    drawn = [0]

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            drawn[0] += len(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    start = time.perf_counter()
    try:
        subprocess.run(SEGTOOL + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                       timeout=900, env=env)
        seconds = time.perf_counter() - start
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    return seconds, drawn[0]


def _cpu_seconds_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def piped_seconds(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(SEGTOOL + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   timeout=900)
    return time.perf_counter() - start


@pytest.mark.parametrize("which", ["log dir of 306 files", "log dir of 306 files, bar from the start", "wild"])
def test_terminal_run_costs_at_most_a_tenth_more(which, bench_dir):
    """The bar appears after a second: a run shorter than that draws nothing, so the second case
    draws it from the start (SEGTOOL_PROGRESS_DELAY=0), the cost of rich's import included."""
    path = log_dir_of_cases(bench_dir / "progress-logdir") if which != "wild" else str(corpus_path("wild"))
    args = ["verify", "--no-hash", path]
    env = {**os.environ, "SEGTOOL_PROGRESS_DELAY": "0"} if "from the start" in which else None
    piped, terminal, piped_cpu, terminal_cpu, drawn = [float("inf")] * 4 + [0]
    for _ in range(5):  # interleaved: both meet the same load
        before = _cpu_seconds_of_children()
        piped = min(piped, piped_seconds(args))
        middle = _cpu_seconds_of_children()
        seconds, drawn = terminal_seconds(args, env)
        terminal = min(terminal, seconds)
        piped_cpu = min(piped_cpu, middle - before)
        terminal_cpu = min(terminal_cpu, _cpu_seconds_of_children() - middle)
    report(f"verify {which} on a terminal ({drawn} bytes drawn)", terminal, piped, "piped", TARGET)
    report(f"verify {which} on a terminal, CPU", terminal_cpu, piped_cpu, "piped, CPU", TARGET)
