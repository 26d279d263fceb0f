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
    """``segtool inspect``: RocketMQ store roots, or Kafka log dirs; not both in one run."""
    from segtool.rocketmq.names import is_store_root

    stores = [path for path in paths if is_store_root(path)]
    if stores and len(stores) != len(paths):
        raise UsageError("give Kafka log dirs or RocketMQ stores, not both: "
                         + ", ".join(path for path in paths if path not in stores) + " are not RocketMQ stores")
    if stores:
        from segtool.ops.inspect_rocketmq import exit_code, inspect_stores

        report = inspect_stores(stores)
    else:
        from segtool.ops.inspect import exit_code, inspect

        report = inspect(paths)
    return report, exit_code(report)
