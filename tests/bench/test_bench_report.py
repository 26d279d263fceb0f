"""Issue 19 benchmark: `report --out` of a 1 GiB partition against `verify` of the same, in one run.

Targets: the page is built in at most 2x the time of `verify` (each with its defaults, and both
with ``--no-hash``), and it weighs at most 5 MB (5,000,000 bytes; plotly's own JavaScript is
about 4.8 MB of it).  The partition is verify's bench segment (~1 GiB of ~16 KiB batches,
``test_bench_verify._generate_big``), made once in bench-data/.
"""

from __future__ import annotations

from tests.bench.conftest import SEGTOOL, report, timed
from tests.bench.test_bench_verify import GIB, _generate_big, _load

SIZE_LIMIT = 5_000_000


def test_report_of_a_gib_partition(bench_dir, tmp_path):
    big = bench_dir / "verify-1g" / "00000000000000000000.log"
    if not big.exists():
        big.parent.mkdir(parents=True, exist_ok=True)
        _generate_big(big)
    partition = big.parent
    page = tmp_path / "report.html"
    print(f"\n[bench] partition: {big.stat().st_size / GIB:.2f} GiB in ~16 KiB batches; {_load()}")
    for label, flags in (("default (sha256 of the input)", []), ("--no-hash", ["--no-hash"])):
        # measured back to back, best of 3 each: the machine's speed drifts
        verify = timed(SEGTOOL + ["verify", *flags, str(partition)])
        built = timed(SEGTOOL + ["report", *flags, str(partition), "--out", str(page), "--force"])
        report(f"report --out 1 GiB, {label}", built, verify, f"verify {label}", 2.0)
    size = page.stat().st_size
    print(f"[bench] page size: {size} bytes (target <= {SIZE_LIMIT}: {'met' if size <= SIZE_LIMIT else 'NOT met'})")
    print(f"[bench] {_load()}")
