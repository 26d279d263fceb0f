"""`replicas --engine local|spark`: each replica set compared in a task, the report built as in-process.

``ops.replicas.replicas`` hands its units of work to a ``MapTasks``: here an engine's ``map``, so a Kafka
partition's copies (``kafka_replica_set``: one task per partition, whichever brokers' log dirs hold them),
a RocketMQ store's opening and a RocketMQ group's comparison each run as one task, on the local process pool
or on Spark.  The engines give the results back in the items' order, so the report is the one the
in-process run builds, byte for byte.  A replica that cannot be read is named in its set's ``unreadable``
by the task itself, as in-process.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

from segtool.ops.output_schema import ReplicasReport
from segtool.ops.replicas import replicas


def _engine_map(engine, fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return engine.map(fn, items, costs, description=f"segtool replicas: {fn.__name__.replace('_', ' ')}")


def replicas_on(paths: list[str], engine) -> ReplicasReport:
    """``ops.replicas.replicas`` with its replica sets run as tasks of ``engine``."""
    return replicas(paths, partial(_engine_map, engine))
