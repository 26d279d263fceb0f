"""`groups` on a RocketMQ store: each consumer group's progress per topic and queue, and the
delay levels' progress, from the broker's config files and its ConsumeQueues.

What ``mqadmin consumerProgress`` shows, answered offline as the broker's
``AdminBrokerProcessor.getConsumeStats`` computes it:

* the group's topics are the ``topic@group`` keys of ``consumerOffset.json``
  (``ConsumerOffsetManager.whichTopicByConsumer``); per topic, queues 0 ..
  ``readQueueNums`` - 1 of its ``topics.json`` config (plus any other committed queue);
* ``brokerOffset`` = the queue's max offset (``getMaxOffsetInQueue``), ``consumerOffset`` =
  the committed offset (0 when there is none); the lag (``#Diff``) is brokerOffset -
  consumerOffset (``ConsumeStats.computeTotalDiff``);
* the last consumed message's time (``#LastTime``) is the store timestamp of the message
  the ConsumeQueue unit at consumerOffset - 1 points at (``getMessageStoreTimeStamp``).

Delay levels: ``ScheduleMessageService`` keeps, per level, the next SCHEDULE_TOPIC_XXXX queue
offset to deliver (queue id = level - 1) in ``delayOffset.json``; a missing level starts at
0, and ``correctDelayOffset`` moves an offset outside the queue's [min, max] into it at start.

Config files are read as ``ConfigManager.load`` reads them (``rocketmq.config``: the
file, else its ``.bak``) and each ``.bak`` is compared with its file.  Queue bounds and
messages come from the store view (``rocketmq.store.StoreView``).  A copy holding
only ``config/`` (no ``consumequeue/``) gives committed offsets without bounds or lag.
"""

from __future__ import annotations

from pathlib import Path

from segtool.rocketmq.store import StoreView
from segtool.errors import UnreadableInput
from segtool.findings import FindingKind, finding, has_errors
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq.config import (
    CONFIG_KINDS,
    LoadedConfig,
    RETRY_GROUP_TOPIC_PREFIX,
    load_config,
    topic_group,
)
from segtool.rocketmq import names as rocketmq_names
from segtool.rocketmq.names import BACKUP_SUFFIX, CONFIG_DIR
from segtool.ops.output_schema import (
    DelayLevelProgress,
    RocketMQConfigRead,
    RocketMQConsumerGroup,
    RocketMQGroupsReport,
    RocketMQQueueProgress,
    RocketMQTopicProgress,
)

LISTED_DIFFERENCES = 10  # key paths named in a finding; the report lists them all


def _holds_config(directory: Path) -> bool:
    return directory.is_dir() and any((directory / (name + suffix)).is_file()
                                      for name in CONFIG_KINDS for suffix in ("", BACKUP_SUFFIX))


def rocketmq_store_root(path: str) -> Path | None:
    """The RocketMQ store a directory names for `groups`: a store the store view recognises
    (``commitlog/``, ``consumequeue/`` or ``index/`` inside, or one of those), a directory whose
    ``config/`` holds broker config files, or that ``config/`` itself.  None otherwise."""
    directory = Path(path)
    if not directory.is_dir():
        return None
    if rocketmq_names.is_store_directory(path):
        return rocketmq_names.store_directory(path)
    if _holds_config(directory / CONFIG_DIR):
        return directory
    if directory.name == CONFIG_DIR and _holds_config(directory):
        return directory.parent
    return None


class _Queues:
    """Queue bounds and last-consumed messages through the store view; nothing when the copy
    has no ``consumequeue/``."""

    def __init__(self, root: Path):
        self.view = StoreView(root) if (root / rocketmq_names.CONSUMEQUEUE_DIR).is_dir() else None

    def state(self, topic: str, queue_id: int, unit_offset: int) -> dict:
        """min/max offsets of the queue (the broker's empty queue, 0/0, when the store lacks it)
        and the message of the unit at ``unit_offset`` (< 0: none wanted)."""
        if self.view is None:
            return {"present": None, "min": None, "max": None, "message": None, "unit": None}
        answer = self.view.queue_unit(topic, queue_id, unit_offset)
        if not answer["queue_exists"]:
            return {"present": False, "min": 0, "max": 0, "message": None, "unit": None}
        return {"present": True, "min": answer["min_offset_in_queue"], "max": answer["max_offset_in_queue"],
                "message": answer["message"], "unit": answer["phy_offset"]}

    def close(self) -> None:
        if self.view is not None:
            self.view.close()


def _config_read(loaded: LoadedConfig, problems: list) -> RocketMQConfigRead:
    for read in (loaded.file, loaded.backup):
        if read.error is not None:
            problems.append(finding(FindingKind.CONFIG_SYNTAX, read.error.offset, str(read.error)))
        elif read.empty:
            problems.append(finding(FindingKind.CONFIG_SYNTAX, 0, f"{read.path}: empty file"))
    if loaded.differences:
        shown = ", ".join(loaded.differences[:LISTED_DIFFERENCES])
        more = len(loaded.differences) - LISTED_DIFFERENCES
        problems.append(finding(
            FindingKind.CONFIG_BACKUP_DIFFERS, None,
            f"{loaded.backup.path}: differs from {loaded.kind.name} at {shown}" + (f" and {more} more" if more > 0 else "")))
    return {"name": loaded.kind.name, "source_class": loaded.kind.source_class, "path": loaded.file.path,
            "present": loaded.file.exists, "size": loaded.file.size,
            "error": None if loaded.file.error is None else str(loaded.file.error),
            "backup_present": loaded.backup.exists,
            "backup_error": None if loaded.backup.error is None else str(loaded.backup.error),
            "loaded_from": loaded.loaded_from, "backup_equal": loaded.backup_equal,
            "backup_differences": list(loaded.differences)}


def _queue_progress(queues: _Queues, topic: str, group: str, queue_id: int, committed: int | None,
                    offsets_path: str, problems: list) -> RocketMQQueueProgress:
    consumer_offset = committed if committed is not None and committed >= 0 else 0
    state = queues.state(topic, queue_id, consumer_offset - 1)
    message = state["message"]
    lag = None if state["max"] is None else max(state["max"], 0) - consumer_offset
    where = f"{offsets_path}: {topic}@{group} queue {queue_id}: committed offset {committed}"
    if committed is not None and state["max"] is not None:
        if committed > state["max"]:
            problems.append(finding(FindingKind.COMMITTED_BEYOND_QUEUE, None,
                                    f"{where} is beyond the queue's max offset {state['max']}"))
        elif committed < state["min"]:
            problems.append(finding(FindingKind.COMMITTED_BELOW_QUEUE, None,
                                    f"{where} is below the queue's min offset {state['min']}: "
                                    f"{state['min'] - committed} messages deleted unconsumed"))
    return {"queue_id": queue_id, "committed_offset": committed, "consumer_offset": consumer_offset,
            "queue_present": state["present"], "min_offset": state["min"], "max_offset": state["max"], "lag": lag,
            "last_consumed_queue_offset": consumer_offset - 1 if message is not None else None,
            "last_consumed_phy_offset": state["unit"] if message is not None else None,
            "last_consumed_timestamp": message["store_timestamp"] if message is not None else None}


def _total(values) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _delay_levels(queues: _Queues, root: Path, delay_offsets: dict[int, int], delay_path: str,
                  problems: list) -> list[DelayLevelProgress]:
    schedule_dir = root / rocketmq_names.CONSUMEQUEUE_DIR / rmq.SCHEDULE_TOPIC
    on_disk = {int(p.name) + 1 for p in schedule_dir.iterdir() if p.is_dir() and p.name.isdigit()} \
        if schedule_dir.is_dir() else set()
    delays = rmq.parse_delay_levels()
    levels = []
    for level in sorted(set(delay_offsets) | on_disk):
        offset = delay_offsets.get(level)
        start = offset if offset is not None else 0  # ScheduleMessageService: a missing level starts at 0
        state = queues.state(rmq.SCHEDULE_TOPIC, level - 1, -1)
        corrected = None
        if offset is not None and state["max"] is not None and not state["min"] <= offset <= state["max"]:
            corrected = min(max(offset, state["min"]), state["max"])
            problems.append(finding(FindingKind.DELAY_OFFSET_OUT_OF_RANGE, None,
                                    f"{delay_path}: delay level {level}: offset {offset} outside "
                                    f"{rmq.SCHEDULE_TOPIC} queue {level - 1}'s [{state['min']}, {state['max']}]; "
                                    f"the broker corrects it to {corrected}"))
        levels.append({"delay_level": level, "delay_ms": delays.get(level), "queue_id": level - 1, "offset": offset,
                       "queue_present": state["present"], "min_offset": state["min"], "max_offset": state["max"],
                       "pending": None if state["max"] is None else max(state["max"], 0) - start,
                       "corrected_offset": corrected})
    return levels


def rocketmq_groups(store: str, group: str | None = None) -> RocketMQGroupsReport:
    """Every consumer group with committed offsets in ``store`` (or only ``group``), per topic and
    queue, and the delay levels' progress."""
    root = rocketmq_store_root(store)
    if root is None:
        raise UnreadableInput("not a RocketMQ store (no commitlog/, consumequeue/, index/, or config/ with broker "
                              "config files inside)", store)
    config_dir = root / CONFIG_DIR
    problems: list = []
    loaded = {name: load_config(config_dir, name) for name in CONFIG_KINDS}
    config_reads = [_config_read(item, problems) for item in loaded.values()]
    topics = loaded["topics.json"].decoded.topic_config_table
    offset_table = loaded["consumerOffset.json"].decoded.offset_table
    subscriptions = loaded["subscriptionGroup.json"].decoded.subscription_group_table
    offsets_path = loaded["consumerOffset.json"].file.path
    by_group: dict[str, dict[str, dict[int, int]]] = {}
    for key, offsets in offset_table.items():
        pair = topic_group(key)
        if pair is None:
            problems.append(finding(FindingKind.CONFIG_ENTRY_IGNORED, None,
                                    f"{offsets_path}: offsetTable key {key!r} is not topic@group"))
            continue
        by_group.setdefault(pair[1], {})[pair[0]] = offsets
    queues = _Queues(root)
    listed: list[RocketMQConsumerGroup] = []
    try:
        for name in sorted(by_group):
            if group is not None and name != group:
                continue
            topic_items: list[RocketMQTopicProgress] = []
            for topic in sorted(by_group[name]):
                committed = by_group[name][topic]
                config = topics.get(topic)
                read_queue_nums = config.read_queue_nums if config is not None else None
                if config is None and topics:
                    problems.append(finding(FindingKind.TOPIC_NOT_CONFIGURED, None,
                                            f"{offsets_path}: group {name} committed topic {topic}, which topics.json "
                                            "does not list"))
                queue_ids = sorted(set(committed) | set(range(read_queue_nums or 0)))
                items = [_queue_progress(queues, topic, name, queue_id, committed.get(queue_id), offsets_path, problems)
                         for queue_id in queue_ids]
                # getConsumeStats skips a topic topics.json lacks and reads queues below readQueueNums
                # only, so mqadmin's Diff Total leaves the others out (a copy without topics.json
                # counts every committed queue: its topics are unknown, not absent)
                for item in items:
                    item["counted_in_total"] = not topics or (
                        read_queue_nums is not None and item["queue_id"] < read_queue_nums)
                topic_items.append({"topic": topic, "retry_topic": topic.startswith(RETRY_GROUP_TOPIC_PREFIX),
                                    "read_queue_nums": read_queue_nums, "queues": items,
                                    "total_lag": _total(q["lag"] for q in items if q["counted_in_total"])})
            subscription = subscriptions.get(name)
            listed.append({
                "group": name, "subscription_configured": subscription is not None,
                "consume_enable": subscription.consume_enable if subscription is not None else None,
                "consume_broadcast_enable": subscription.consume_broadcast_enable if subscription is not None else None,
                "retry_max_times": subscription.retry_max_times if subscription is not None else None,
                "topics": topic_items, "total_lag": _total(t["total_lag"] for t in topic_items)})
        delay_levels = _delay_levels(queues, root, loaded["delayOffset.json"].decoded.offset_table,
                                     loaded["delayOffset.json"].file.path, problems)
    finally:
        queues.close()
    return {"store": str(root), "queues_read": queues.view is not None, "config_files": config_reads,
            "groups": listed, "delay_levels": delay_levels, "problems": problems,
            "summary": {"groups": len(listed), "topics": sum(len(g["topics"]) for g in listed),
                        "queues": sum(len(t["queues"]) for g in listed for t in g["topics"]),
                        "total_lag": _total(g["total_lag"] for g in listed), "delay_levels": len(delay_levels),
                        "pending_delayed": _total(level["pending"] for level in delay_levels)}}


def exit_code(report: RocketMQGroupsReport) -> int:
    """0 when groups were found and no error-level problem; 1 when none were or there is one."""
    return 0 if report["groups"] and not has_errors(report["problems"]) else 1
