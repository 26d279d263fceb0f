"""Issue 15 and 27 benchmarks: `segtool carve` of a sparse and of a dense 1 GiB image against `sha256sum` of the same image, and peak memory.

The image is random bytes with copies of corpus segments and CommitLog stretches
dropped in at random byte positions (a piece every 8 MiB or so).  Targets: carve
<= 5x sha256sum measured in the same run, peak RSS of the carve process <= 200 MB.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time

import pytest

from tests.bench.conftest import SEGTOOL, have, report, timed
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


def _peak_rss_mb(cmd: list[str]) -> float:
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
    return int(out.stdout.strip()) / 1024


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
    outputs = bench_dir / "carve-1g-out"
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir()
    reference = timed(["sha256sum", str(image)])
    best = float("inf")
    for run in range(3):
        best = min(best, timed([*SEGTOOL, "carve", str(image), "--out", str(outputs / f"run{run}")], runs=1))
    peak = _peak_rss_mb([*SEGTOOL, "carve", str(image), "--out", str(outputs / "rss")])
    check = subprocess.run([*SEGTOOL, "carve", str(image), "--out", str(outputs / "json"), "--json"],
                           capture_output=True, text=True)
    assert check.returncode in (0, 1), check.stderr
    report("carve of a 1 GiB image", best, reference, "sha256sum", target=5.0)
    print(f"[bench] carve peak RSS: {peak:.0f} MB (target <= 200 MB: {'met' if peak <= 200 else 'NOT met'})")
    shutil.rmtree(outputs, ignore_errors=True)


@pytest.mark.skipif(not have("sha256sum"), reason="needs sha256sum for the same-run reference")
def test_carve_dense_1gib_image_against_sha256sum(bench_dir):
    """A broker's disk: corpus segments and CommitLog messages end to end (tests/dense_images.py).
    Targets: <= 5x sha256sum in the same run, outputs no larger than the image, peak RSS <= 200 MB."""
    if not (CORPUS / "kafka").is_dir() or not (CORPUS / "rocketmq").is_dir():
        pytest.skip(f"conformance corpus not present at {CORPUS} (needs ../shared/corpus beside the repo)")
    from tests.dense_images import write_dense_image

    image = bench_dir / "carve-dense-1g" / "image.bin"
    if not image.exists():
        image.parent.mkdir(exist_ok=True)
        write_dense_image(image, CORPUS, GIB)
    outputs = bench_dir / "carve-dense-1g-out"
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir()
    reference = timed(["sha256sum", str(image)])
    best = float("inf")
    for run in range(3):
        best = min(best, timed([*SEGTOOL, "carve", str(image), "--out", str(outputs / f"run{run}")], runs=1))
    peak = _peak_rss_mb([*SEGTOOL, "carve", str(image), "--out", str(outputs / "rss")])
    written = sum(path.stat().st_size for path in (outputs / "run0").iterdir())
    report("carve of a dense 1 GiB image", best, reference, "sha256sum", target=5.0)
    size = image.stat().st_size
    print(f"[bench] dense carve: {size / best / 1e6:.0f} MB/s; outputs {written / 1e6:.1f} MB for {size / 1e6:.0f} MB "
          f"({written / size:.3f} of the input); peak RSS {peak:.0f} MB (target <= 200 MB: "
          f"{'met' if peak <= 200 else 'NOT met'})")
    shutil.rmtree(outputs, ignore_errors=True)
