"""segtool's pipeline as a Spark application, for spark-submit.

Same arguments as the ``segtool`` command (``scan``, ``verify``,
``rebuild-index``, ``replicas``, ``carve``, ``salvage``); the engine is Spark, with the master and configuration
spark-submit was given::

    spark-submit --master yarn --deploy-mode client \\
        --archives segtool-env.tar.gz#env --conf spark.pyspark.python=./env/bin/python \\
        segtool/spark_job.py scan hdfs://nn/evidence/kafka-logs --out hdfs://nn/cases/42/scan

    spark-submit --master local[4] segtool/spark_job.py verify /evidence/kafka-logs --json

Executors need segtool's dependencies (a packed virtualenv as above, or
segtool installed on every node); the driver also ships its own copy of the
segtool package to them (``SparkContext.addPyFile``) so code versions match.
"""

from __future__ import annotations

import os
import sys

_COMMANDS = ("scan", "verify", "rebuild-index", "replicas", "carve", "salvage")


def job_argv(argv: list[str]) -> list[str]:
    """``segtool`` arguments with ``--engine spark`` added after the command when absent."""
    argv = list(argv)
    index = next((i for i, arg in enumerate(argv) if arg in _COMMANDS), None)
    if index is None:
        raise SystemExit(f"spark_job.py: give one of {', '.join(_COMMANDS)} and its arguments (see segtool -h)")
    if "--engine" not in argv and not any(arg.startswith("--engine=") for arg in argv):
        argv[index + 1:index + 1] = ["--engine", "spark"]
    return argv


def main(argv: list[str] | None = None) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    # run as a script, this directory is first on sys.path: its module names must not shadow others
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import segtool  # noqa: F401
    except ImportError:  # run as a file from a source tree: the package's parent holds it
        sys.path.insert(0, os.path.dirname(here))
    from segtool.cli import main as cli_main

    sys.argv = ["segtool", *job_argv(sys.argv[1:] if argv is None else argv)]
    cli_main()


if __name__ == "__main__":
    main()
