"""The commands whose Kafka and RocketMQ halves are separate modules (groups, inspect): which
broker the paths hold is decided here, and each returns its report with the exit code.
(The other commands read both brokers' files through ``ops.file_formats``.)"""

from __future__ import annotations

from segtool.errors import UsageError


def consumer_groups(path: str, group: str | None = None, at: str | None = None) -> tuple[dict, int]:
    """``segtool groups``: a RocketMQ store's committed offsets, or a Kafka log dir's
    ``__consumer_offsets`` replayed as of ``at`` (epoch ms or ISO-8601; None: all of it)."""
    from segtool.ops import groups, rocketmq_groups

    if rocketmq_groups.rocketmq_store_root(path) is not None:
        if at is not None:
            raise UsageError("--at replays Kafka's __consumer_offsets; a RocketMQ store keeps only the last "
                             "committed offsets")
        report = rocketmq_groups.rocketmq_groups(path, group=group)
        return report, rocketmq_groups.exit_code(report)
    from segtool.ops.lookup import parse_timestamp

    moment = None if at is None else parse_timestamp(at)
    if moment is not None and moment < 0:  # latest, earliest or max-timestamp: no time to replay to
        raise UsageError(f"--at takes epoch ms or ISO-8601, not {at!r}")
    report = groups.groups(path, group=group, at=moment)
    return report, groups.exit_code(report)


def inspect_paths(paths: list[str]) -> tuple[dict, int]:
    """``segtool inspect``: the Kafka log dirs and RocketMQ store roots named or found below the paths
    (several brokers' copies side by side, both brokers in one tree); a tree holding both gives both
    reports side by side, and the larger exit code."""
    from segtool.ops import inspect, inspect_rocketmq

    log_dirs, stores = broker_roots(paths)
    kafka = inspect.inspect(log_dirs) if log_dirs else None
    rocketmq = inspect_rocketmq.inspect_stores(stores) if stores else None
    if kafka is not None and rocketmq is not None:
        report = {"log_dirs": kafka["log_dirs"], "stores": rocketmq["stores"],
                  "summary": {"kafka": kafka["summary"], "rocketmq": rocketmq["summary"]}}
        return report, max(inspect.exit_code(kafka), inspect_rocketmq.exit_code(rocketmq))
    if rocketmq is not None:
        return rocketmq, inspect_rocketmq.exit_code(rocketmq)
    return kafka, inspect.exit_code(kafka)


class LocalTree:
    """How discovery sees its paths: the local filesystem.  ``segtool.pipeline.staged.ListedTrees`` answers the
    same questions from the listing of URI trees, on the paths their mirror would have, so that a driver can
    plan without downloading them."""

    def lexists(self, path: str) -> bool:
        import os

        return os.path.lexists(path)

    def exists(self, path: str) -> bool:
        import os

        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        import os

        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        import os

        return os.path.isfile(path)

    def is_store_root(self, path: str) -> bool:
        from segtool.rocketmq.names import is_store_root

        return is_store_root(path)

    def inventory(self, path: str):
        from segtool.engine.inventory import inventory

        return inventory([path])

    def read(self, path: str) -> bytes:
        """A small file's bytes (a broker's or a partition's identity)."""
        from segtool.source import open_buffer

        return bytes(open_buffer(path))

    def files_below(self, path: str) -> list[tuple[str, int]]:
        """(path, size) of each readable regular file below ``path`` (or ``path`` itself, a file), in walk order:
        what a report hashes.  The unreadable entries are the inventory's to name."""
        import os

        from segtool.engine.walk import walk_files

        return [(os.path.normpath(found), os.path.getsize(found)) for found in walk_files([path])]


def broker_roots(paths: list[str], tree: LocalTree = LocalTree()) -> tuple[list[str], list[str]]:
    """(Kafka log dirs, RocketMQ store roots): a path that is one is taken as it is; below any other
    directory each store root and each directory holding partitions is found (the one inventory)."""
    import os

    from segtool.kafka.names import CLEAN_SHUTDOWN, META_PROPERTIES, topic_partition

    log_dirs: list[str] = []
    stores: list[str] = []
    for path in paths:
        if tree.is_store_root(path):
            stores.append(path)
            continue
        if not tree.isdir(path):
            log_dirs.append(path)  # inspect says what it is (missing, a file)
            continue
        found = tree.inventory(path)
        holders = sorted({os.path.dirname(os.path.normpath(p.directory)) for p in found.partitions
                          if topic_partition(os.path.basename(os.path.normpath(p.directory)))[1] is not None})
        roots = sorted({os.path.normpath(store.root) for store in found.stores})
        top = os.path.normpath(path)
        # only what lies below the path: a partition directory named alone is not its log dir ("." and
        # the relative names found below it compared as absolute paths)
        below = os.path.join(os.path.abspath(top), "")
        holders = [d for d in holders if d == top or os.path.abspath(d).startswith(below)]
        if top in holders or tree.exists(os.path.join(path, META_PROPERTIES)) \
                or tree.exists(os.path.join(path, CLEAN_SHUTDOWN)) or not (holders or roots):
            log_dirs.append(path)  # a log dir itself (or nothing of a broker's: inspect says so)
            holders = [d for d in holders if d != top]
        log_dirs += [d for d in holders if not any(d == r or d.startswith(r + os.sep) for r in roots)]
        stores += roots
    return log_dirs, stores
