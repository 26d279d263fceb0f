"""RocketMQ key lookup on a full-geometry IndexFile (5,000,000 slots / 20,000,000 entries).

Data: clean-multi's default-geometry IndexFile (420,000,040 bytes, RocketMQ's own
rebuild of that CommitLog) decompressed sparsely into bench-data/; the messages
are resolved in clean-multi's CommitLog.  Each measurement runs in a fresh
process so its peak RSS is its own.

Targets: in-process key lookup p50 <= 1 ms (``StoreView.query_offsets``: index
walk + CommitLog decode of every candidate + queryMessage); peak RSS with the
420 MB file no more than a few MB above the same lookups on the 84 KB files of
the same data (the file is mapped, only the pages a lookup touches are read).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bench.conftest import REPO
from tests.conftest import corpus_path
from tests.test_rocketmq_lookups import sparse_gunzip

P50_TARGET_MS = 1.0
RSS_GROWTH_LIMIT_MB = 16

MEASURE = r"""
import json, resource, sys, time
from segtool.rocketmq.store import StoreView
store, commitlog, queries_path, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
queries = json.load(open(queries_path, encoding="utf-8"))
rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
view = StoreView(store, commitlog_dir=commitlog)
view.index_files
open_ms = (time.perf_counter() - t) * 1e3
timings = {"select_offsets": [], "query_offsets": []}
found = 0
for _ in range(rounds):
    for q in queries:
        args = (q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        t = time.perf_counter()
        raw = view.select_offsets(*args)
        timings["select_offsets"].append(time.perf_counter() - t)
        t = time.perf_counter()
        answer = view.query_offsets(*args)
        timings["query_offsets"].append(time.perf_counter() - t)
        found += len(answer["index_phy_offsets"])
def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1e3
print(json.dumps({
    "open_ms": open_ms, "lookups": len(queries) * rounds, "offsets_found": found,
    "index_files": [(f.name, f.hash_slot_num, f.index_num, f.geometry_source) for f in view.index_files],
    **{f"{name}_p50_ms": pct(v, 0.5) for name, v in timings.items()},
    **{f"{name}_p95_ms": pct(v, 0.95) for name, v in timings.items()},
    "rss_start_mb": rss_start / 1024, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def measure(store, commitlog, queries, rounds: int = 20) -> dict:
    done = subprocess.run([sys.executable, "-c", MEASURE, str(store), str(commitlog), str(queries), str(rounds)],
                          capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout)


def test_key_lookup_on_default_geometry_index(bench_dir):
    clean = corpus_path("rocketmq", "clean-multi")
    meta_dir = clean / "expected" / "rebuilt-index-default-geometry"
    with open(meta_dir / "default-geometry.json", encoding="utf-8") as f:
        meta = json.load(f)
    index = bench_dir / "rocketmq-default-geometry" / "store" / "index" / meta["file"]
    if not index.exists() or index.stat().st_size != meta["uncompressedSize"]:
        sparse_gunzip(meta_dir / meta["gzFile"], index)
    store = index.parent.parent
    commitlog = clean / "store" / "commitlog"
    queries = clean / "expected" / "queries.json"

    big = measure(store, commitlog, queries)
    small = measure(clean / "store", commitlog, queries)
    assert big["index_files"] == [[meta["file"], 5_000_000, 20_000_000, "default"]]
    assert big["offsets_found"] == small["offsets_found"] > 0  # same answers from both geometries

    disk_mb = index.stat().st_blocks * 512 / 1e6
    print(f"\n[bench] default-geometry IndexFile: {meta['uncompressedSize']:,} bytes "
          f"({disk_mb:.1f} MB on disk, sparse), "
          f"{big['lookups']} lookups of {len(json.load(open(queries, encoding='utf-8')))} queries")
    for label, r in (("420 MB default geometry", big), ("3 x 84 KB files", small)):
        print(f"[bench] {label}: open {r['open_ms']:.2f} ms; index walk p50 {r['select_offsets_p50_ms']:.3f} ms "
              f"(p95 {r['select_offsets_p95_ms']:.3f}); key lookup p50 {r['query_offsets_p50_ms']:.3f} ms "
              f"(p95 {r['query_offsets_p95_ms']:.3f}); peak RSS {r['peak_rss_mb']:.1f} MB")
    p50 = big["query_offsets_p50_ms"]
    growth = big["peak_rss_mb"] - small["peak_rss_mb"]
    verdict = "met" if p50 <= P50_TARGET_MS else "NOT met"
    print(f"[bench] key lookup p50 {p50:.3f} ms (target <= {P50_TARGET_MS} ms: {verdict}); "
          f"peak RSS growth for a 5000x larger file: {growth:+.1f} MB (limit {RSS_GROWTH_LIMIT_MB} MB)")
    assert growth <= RSS_GROWTH_LIMIT_MB
    assert p50 <= P50_TARGET_MS
