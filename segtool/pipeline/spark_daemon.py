"""Spark's Python daemon on a local master, with PySpark imported from its installed copy.

Spark starts its Python daemon (``spark.python.daemon.module``, ``pyspark.daemon``
by default) with ``pyspark.zip`` and the py4j zip of its own home first on the
path.  A zip holds sources only: every start compiled PySpark's modules again,
0.7 s of CPU in the daemon and 0.3 s in each worker it forks, most of a local
run's Python warm-up (tests/bench/test_bench_pipeline.py).  A pip-installed
PySpark ships those zips inside its own package, so the copy in site-packages is
the very same code, with its bytecode cached: this module drops the zips from
the path when that copy is on it, then runs PySpark's daemon as it is.  Spark
runs it as ``python -m segtool.pipeline.spark_daemon pyspark.worker``; the
workers are forked from it as from PySpark's own.
"""

from __future__ import annotations

import os
import sys


def installed_first(path: list[str]) -> list[str]:
    """``path`` without ``<site>/pyspark/python/lib/*.zip`` entries whose package is installed in ``<site>``."""
    kept = []
    on_path = {os.path.normpath(entry) for entry in path}
    for entry in path:
        lib = os.path.dirname(entry)
        package_dir = os.path.dirname(os.path.dirname(lib))  # <site>/pyspark
        site = os.path.dirname(package_dir)
        bundled = (entry.endswith(".zip") and os.path.basename(package_dir) == "pyspark"
                   and lib == os.path.join(package_dir, "python", "lib"))
        if bundled and os.path.normpath(site) in on_path:
            package = "pyspark" if os.path.basename(entry) == "pyspark.zip" else "py4j"
            if os.path.isdir(os.path.join(site, package)):
                continue
        kept.append(entry)
    return kept


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from pyspark.daemon import manager

    manager()
