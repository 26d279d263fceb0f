"""Issue 15 and 27 benchmarks: `segtool carve` of a sparse and of a dense 1 GiB image against `sha256sum` of the same image, and peak memory.

The image is random bytes with copies of corpus segments and CommitLog stretches
dropped in at random byte positions (a piece every 8 MiB or so); the dense one is
corpus batches and messages end to end.  Targets: carve <= 5x sha256sum measured in
the same run, in wall time and in CPU time (other work on the machine stretches wall
time; CPU time is each process's own, carve's hashing of its input included), peak RSS
of the carve process <= 200 MB, outputs no larger than the image.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bench.conftest import SEGTOOL, have, report
from tests.conftest import CORPUS

GIB = 1 << 30
_CHUNK = 16 << 20
_PIECE_EVERY = 8 << 20
_COMMITLOG_PREFIX = 256 << 10  # a CommitLog file's first messages (its full 1 MiB ends in a zero tail)


def _pieces() -> list[bytes]:
    kafka = [path.read_bytes() for case in ("c01-multiseg-clean", "c03-codecs", "c04-transactions",
                                            "c08-legacy-formats")
             for path in sorted((CORPUS / "kafka" / case / "data").rglob("*.log"))]
    commitlogs = [path.read_bytes()[:_COMMITLOG_PREFIX]
                  for path in sorted((CORPUS / "rocketmq" / "clean-multi" / "store" / "commitlog").iterdir())]
    return kafka + commitlogs


def _generate(path, pieces: list[bytes], seed: int = 15) -> None:
    """os.urandom filler in chunks, a corpus piece after every random stretch of up to 2 x 8 MiB."""
    rng = random.Random(seed)
    written = 0
    with open(path, "wb") as out:
        while written < GIB:
            stretch = min(rng.randrange(1, 2 * _PIECE_EVERY), GIB - written)
            for start in range(0, stretch, _CHUNK):
                out.write(os.urandom(min(_CHUNK, stretch - start)))
            piece = rng.choice(pieces)
            out.write(piece)
            written += stretch + len(piece)


@dataclass
class _Usage:
    """One child process's wall time, CPU time (user + system, every thread) and peak RSS."""

    wall: float
    cpu: float
    peak_mb: float


def _usage(cmd: list[str]) -> _Usage:
    started = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)  # this child's own resource use, not every child's so far
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode in (0, 1), f"{cmd} exited {process.returncode}"
    return _Usage(time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _best(cmd_of_run, runs: int = 3) -> _Usage:
    """The least wall and the least CPU time of ``runs`` runs (the machine is shared: others' load
    stretches wall time most), and the largest peak RSS."""
    usages = [_usage(cmd_of_run(run)) for run in range(runs)]
    return _Usage(min(u.wall for u in usages), min(u.cpu for u in usages), max(u.peak_mb for u in usages))


def _carve_against_sha256sum(name: str, image: Path, outputs: Path) -> tuple[_Usage, int]:
    """Carve ``image`` three times beside three ``sha256sum`` runs of it; prints wall and CPU ratios,
    peak RSS and the outputs' size against the image's.  Returns carve's usage and bytes written."""
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir()
    reference = _best(lambda run: ["sha256sum", str(image)])
    carved = _best(lambda run: [*SEGTOOL, "carve", str(image), "--out", str(outputs / f"run{run}")])
    written = sum(path.stat().st_size for path in (outputs / "run0").iterdir())
    size = image.stat().st_size
    report(f"{name} (wall)", carved.wall, reference.wall, "sha256sum", target=5.0)
    report(f"{name} (CPU time)", carved.cpu, reference.cpu, "sha256sum", target=5.0)
    print(f"[bench] {name}: {size / carved.wall / 1e6:.0f} MB/s; outputs {written / 1e6:.1f} MB for "
          f"{size / 1e6:.0f} MB ({written / size:.3f} of the input); peak RSS {carved.peak_mb:.0f} MB "
          f"(target <= 200 MB: {'met' if carved.peak_mb <= 200 else 'NOT met'})")
    shutil.rmtree(outputs, ignore_errors=True)
    return carved, written


@pytest.mark.skipif(not have("sha256sum"), reason="needs sha256sum for the same-run reference")
def test_carve_1gib_image_against_sha256sum(bench_dir):
    if not (CORPUS / "kafka").is_dir() or not (CORPUS / "rocketmq").is_dir():
        pytest.skip(f"conformance corpus not present at {CORPUS} (needs ../shared/corpus beside the repo)")
    image = bench_dir / "carve-1g" / "image.bin"
    if not image.exists():
        image.parent.mkdir(exist_ok=True)
        started = time.perf_counter()
        _generate(image, _pieces())
        print(f"\n[bench] generated {image} in {time.perf_counter() - started:.1f} s")
    check = subprocess.run([*SEGTOOL, "carve", str(image), "--out", str(bench_dir / "carve-1g-json"), "--json"],
                           capture_output=True, text=True)
    shutil.rmtree(bench_dir / "carve-1g-json", ignore_errors=True)
    assert check.returncode in (0, 1), check.stderr
    _carve_against_sha256sum("carve of a 1 GiB image", image, bench_dir / "carve-1g-out")


@pytest.mark.skipif(not have("sha256sum"), reason="needs sha256sum for the same-run reference")
def test_carve_dense_1gib_image_against_sha256sum(bench_dir):
    """A broker's disk: corpus segments and CommitLog messages end to end (tests/dense_images.py).
    Targets: <= 5x sha256sum in the same run (wall and CPU time), outputs no larger than the image,
    peak RSS <= 200 MB."""
    if not (CORPUS / "kafka").is_dir() or not (CORPUS / "rocketmq").is_dir():
        pytest.skip(f"conformance corpus not present at {CORPUS} (needs ../shared/corpus beside the repo)")
    from tests.dense_images import write_dense_image

    image = bench_dir / "carve-dense-1g" / "image.bin"
    if not image.exists():
        image.parent.mkdir(exist_ok=True)
        write_dense_image(image, CORPUS, GIB)
    _carve_against_sha256sum("carve of a dense 1 GiB image", image, bench_dir / "carve-dense-1g-out")
