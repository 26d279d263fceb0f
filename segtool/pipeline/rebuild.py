"""`rebuild-index --engine spark`: index bytes computed in tasks, written by the driver.

Open transactions carry from one segment of a partition to the next (an
ABORT marker in segment N can close a transaction opened in segment N-1), so
one task takes one whole partition: it seeds the transaction state from the
producer snapshot at the partition's first segment, as the local rebuild and
Kafka's log loading do, and runs ``recover_segment`` — the same recovery
engine — over its segments in offset order.  Tasks only compute: they return
the .index/.timeindex/.txnindex bytes, and the driver writes them through
``safe_write`` (temp file, fsync, read back, rename) to the same places and
builds the same report as the local ``rebuild_index``.
"""

from __future__ import annotations

from segtool.kafka.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from segtool.ops.rebuild import rebuild_index


def rebuild_distributed(paths: list[str], engine, out_dir: str | None = None, in_place: bool = False,
                        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, force: bool = False) -> dict:
    """The local ``rebuild_index`` with its partitions run as tasks on ``engine``."""
    return rebuild_index(paths, out_dir=out_dir, in_place=in_place, index_interval_bytes=index_interval_bytes,
                         engine=engine, force=force)
