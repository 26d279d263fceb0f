"""mqadmin's message answers, offline: what ``queryMsgById`` / ``queryMsgByOffset`` print for a
message (``QueryMsgByIdSubCommand.printMsg``), ``queryMsgByKey``'s rows and ``printMsg``
(``PrintMessageSubCommand``), from a store's files (RocketMQ 4.9.8's tools are the reference).

Differences that cannot be avoided offline are said where they arise: times are ISO-8601 (mqadmin
prints ``UtilAll.timeMillisToHumanString2`` in the querying machine's zone), and the body is not
written to ``/tmp/rocketmq/msgbodys/<msgId>``: "Message Body Path" names its bytes in the CommitLog.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from segtool.errors import SegtoolError, UsageError
from segtool.rocketmq import store_files as rmq
from segtool.rocketmq.store_files import java_string_hashcode
from segtool.rocketmq import names as rocketmq_names

# QueryMsgByIdSubCommand.printMsg's labels, in its order, and the JSON name of each
PRINT_MSG_LABELS = (
    ("OffsetID:", "offset_msg_id"), ("Topic:", "topic"), ("Tags:", "tags"), ("Keys:", "keys"),
    ("Queue ID:", "queue_id"), ("Queue Offset:", "queue_offset"), ("CommitLog Offset:", "commit_log_offset"),
    ("Reconsume Times:", "reconsume_times"), ("Born Timestamp:", "born_timestamp"),
    ("Store Timestamp:", "store_timestamp"), ("Born Host:", "born_host"), ("Store Host:", "store_host"),
    ("System Flag:", "system_flag"), ("Properties:", "properties"), ("Message Body Path:", "message_body_path"),
)


def java_hashmap_order(names: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` filled with ``names`` in this order (what
    ``Map.toString`` prints): bucket ``(h ^ h >>> 16) & (capacity - 1)`` ascending, insertion order
    within a bucket (a resize splits buckets keeping that order); capacity 16, doubled whenever the
    size passes 3/4 of it.  (Buckets of 8+ names turn into trees in Java; message properties never
    have that many colliding names.)"""
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hashcode(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [name for _, _, name in sorted((bucket(name), i, name) for i, name in enumerate(names))]


def properties_text(properties: dict[str, str]) -> str:
    """``msg.getProperties().toString()``: ``{NAME=value, ...}`` in HashMap order."""
    return "{" + ", ".join(f"{name}={properties[name]}" for name in java_hashmap_order(list(properties))) + "}"


def client_msg_id(view: dict) -> str:
    """``MessageClientExt.getMsgId``: the UNIQ_KEY property, or the offset message id when there is none."""
    return view.get("uniq_key") or view["offset_msg_id"]


def print_msg_fields(view: dict, added_properties: dict[str, str] | None = None) -> dict:
    """``QueryMsgByIdSubCommand.printMsg``'s fields for a message item (``dump``'s shape).
    ``added_properties`` are the ones the client adds on the way (a pull adds MIN_OFFSET and
    MAX_OFFSET, ``PullAPIWrapper.processPullResult``)."""
    properties = {**(view.get("properties") or {}), **(added_properties or {})}
    return {
        "offset_msg_id": view["offset_msg_id"], "msg_id": client_msg_id(view), "topic": view["topic"],
        "tags": view.get("tags"), "keys": view.get("keys"), "queue_id": view["queue_id"],
        "queue_offset": view["queue_offset"], "commit_log_offset": view["physical_offset_field"],
        "reconsume_times": view["reconsume_times"], "born_timestamp": view["born_timestamp"],
        "store_timestamp": view["store_timestamp"], "born_host": view["born_host"],
        "store_host": view["store_host"], "system_flag": view["sys_flag"], "properties": properties,
        "properties_text": properties_text(properties),
        "message_body_path": f"{view['file']}@{view['body_offset']}+{view['body_length']}",
    }


def print_msg_lines(fields: dict) -> list[str]:
    """``printMsg``'s lines (``%-20s %s``) for ``print_msg_fields``, with segtool's readable values:
    no Java brackets around Tags, Keys and Properties (mqadmin's ``[TagA]``, ``{K=v, ...}``; the
    properties keep HashMap order), ``-`` for none, times ISO-8601, the body as its place in the store."""
    from segtool.ops.render import show_text, show_time

    lines = []
    for label, name in PRINT_MSG_LABELS:
        value = fields[name]
        if name in ("tags", "keys"):
            text = "-" if value is None else show_text(value)
        elif name.endswith("_timestamp"):
            text = show_time(value)
        elif name == "properties":
            text = show_text(fields["properties_text"][1:-1]) or "-"
        elif name == "message_body_path":
            file, _, place = value.rpartition("@")
            start, _, length = place.partition("+")
            text = f"{show_text(file)} bytes {start}..{int(start) + int(length) - 1} ({length} bytes, not copied)" \
                if int(length) else f"{show_text(file)} (empty body)"
        else:
            text = show_text(str(value))
        lines.append(f"{label:<20} {text}")
    return lines


def java_charset(name: str) -> str:
    """A Java charset name as Python's codec (UTF-8, GBK, ISO-8859-1, US-ASCII, UTF-16 ...); a name
    Python does not know is a usage error (mqadmin swallows the UnsupportedEncodingException and
    prints nothing)."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise UsageError(f"unknown charset {name!r} (give a Java charset name such as UTF-8 or GBK)") from None


def parse_sub_expression(expression: str) -> set[str] | None:
    """``FilterAPI.buildSubscriptionData``: ``*`` (or empty) is every tag, else tags split on ``||``."""
    expression = (expression or "*").strip()
    if expression in ("", "*"):
        return None
    return {tag.strip() for tag in expression.split("||") if tag.strip()}


def print_messages(store_path: str, topic: str, *, charset: str = "UTF-8", sub_expression: str = "*",
                   begin: int | None = None, end: int | None = None, print_body: bool = True) -> dict:
    """``mqadmin printMsg``: per queue of the topic (its ConsumeQueue directories), the messages from
    the queue's min to its max offset whose tags pass the sub expression, with the body decoded in
    ``charset``; ``begin``/``end`` (epoch ms) keep the messages stored in [begin, end).  Each
    message's ``mqadmin`` fields carry the properties as the pull delivers them: the stored ones plus
    MIN_OFFSET and MAX_OFFSET, the queue's bounds (``PullAPIWrapper.processPullResult``).

    mqadmin turns begin/end into queue offsets with ``ConsumeQueue.getOffsetInQueueByTime`` (a binary
    search for the nearest store time in the ConsumeQueue file its mtime picks); here the store time
    of each message decides, so at the edges of a window mqadmin can show one message more or less."""
    from segtool.rocketmq.store import StoreView, _message_view, queue_bounds

    codec = java_charset(charset)
    tags = parse_sub_expression(sub_expression)
    queues, messages, notes = [], [], []
    with StoreView(store_path) as store:
        topic_dir = store.root / rocketmq_names.CONSUMEQUEUE_DIR / topic
        queue_ids = sorted(rocketmq_names.queue_id(p.name) for p in topic_dir.iterdir() if rocketmq_names.queue_id(p.name) is not None) \
            if topic_dir.is_dir() else []
        for queue_id in queue_ids:
            queue = rmq.ConsumeQueue(topic_dir / str(queue_id), topic, queue_id)
            low, high = queue_bounds(queue)
            shown = 0
            for unit in queue:
                if not low <= unit["queueOffset"] < high:
                    continue
                try:
                    msg = store.message_at(unit["commitLogOffset"])
                except SegtoolError as exc:
                    notes.append(f"{topic} queue {queue_id} offset {unit['queueOffset']}: {exc}")
                    continue
                if msg is None:
                    continue
                if begin is not None and msg["storeTimestamp"] < begin or end is not None and msg["storeTimestamp"] >= end:
                    continue
                if tags is not None and msg["TAGS"] not in tags:
                    continue
                view = _message_view(msg, store.commitlog_dir)
                view["msg_id"] = client_msg_id(view)
                # the pull hands mqadmin each message with the queue's bounds added to its properties
                # (PullAPIWrapper.processPullResult), and printMsg prints them with the rest
                view["mqadmin"] = print_msg_fields(view, {"MIN_OFFSET": str(low), "MAX_OFFSET": str(high)})
                body = msg.get("bodyDecompressed", msg["body"])
                view["body_text"] = body.decode(codec, "replace") if print_body else None
                view["body_charset"] = codec
                messages.append(view)
                shown += 1
            queues.append({"queue_id": queue_id, "min_offset": low, "max_offset": high, "messages": shown})
    if not queue_ids:
        notes.append(f"no ConsumeQueue for topic {topic} in {Path(store_path)}")
    return {"store": str(store_path), "topic": topic, "charset": codec, "sub_expression": sub_expression or "*",
            "begin": begin, "end": end, "print_body": print_body, "queues": queues, "messages": messages,
            "notes": notes}


def _id_lines(entry: dict) -> list[str]:
    from segtool.ops.render import show_text, show_time

    line = f"msg id {show_text(entry['msg_id'])}: "
    if entry["id_kind"] == "offset_msg_id":
        decoded = entry["offset_msg_id"]
        line += f"offset message id (store host {decoded['store_host']}, CommitLog offset {decoded['commit_log_offset']})"
    elif entry["id_kind"] == "unique_key":
        decoded = entry["unique_key"]
        line += (f"unique key (client {decoded['client_ip']}, pid {decoded['pid']}, counter {decoded['counter']}"
                 + (f", created {show_time(decoded['created_timestamp'])}" if decoded.get("created_timestamp") else "")
                 + f"), found by {entry['searched_by'].replace('_', ' ')}")
    else:
        line += "no message has it as its offset message id or its unique key"
    return [line] + [f"  note: {show_text(note)}" for note in entry["notes"]]


def mqadmin_answer_lines(answer: dict, full: bool = False) -> list[str]:
    """The text of a ``--msg-id``, ``--print-msg`` or queue (``-t -b -i -o``) answer, as mqadmin
    shows it: ``printMsg``'s labelled lines per message; printMsg's per-queue header and
    ``MSGID: ... BODY: ...`` lines."""
    from segtool.ops.render import show_text, show_time

    lines: list[str] = []
    if "ids" in answer:
        for entry in answer["ids"]:
            lines.extend(_id_lines(entry))
            shown = [m for m in answer["messages"] if m["queried_id"] == entry["msg_id"]]
            if not shown and entry["id_kind"] is not None:
                lines.append("Message not found!")
            for number, message in enumerate(shown):
                if entry["id_kind"] == "unique_key" and number == 1:
                    lines.append("  (mqadmin prints the first one only: the oldest store time)")
                lines.extend(print_msg_lines(message["mqadmin"]))
            lines.append("")
        return lines[:-1]
    if "queues" in answer:
        messages = iter(answer["messages"])
        for queue in answer["queues"]:
            lines.append(f"minOffset={queue['min_offset']}, maxOffset={queue['max_offset']}, "
                         f"topic={show_text(answer['topic'])}, queueId={queue['queue_id']}")
            for _ in range(queue["messages"]):
                message = next(messages)
                body = "NOT PRINT BODY" if message["body_text"] is None else show_text(
                    message["body_text"] if full or len(message["body_text"]) <= 200 else message["body_text"][:200] + "...")
                lines.append(
                    f"MSGID: {message['msg_id']} queueId={message['queue_id']}, queueOffset={message['queue_offset']}, "
                    f"commitLogOffset={message['phy_offset']}, storeTimestamp={show_time(message['store_timestamp'])}, "
                    f"bornHost={message['born_host']}, storeHost={message['store_host']}, "
                    f"sysFlag={message['sys_flag']}, reconsumeTimes={message['reconsume_times']}, "
                    f"properties: {show_text(message['mqadmin']['properties_text'][1:-1])} BODY: {body}")
            lines.append("-" * 56)
        lines.extend(f"note: {show_text(note)}" for note in answer["notes"])
        return lines
    from segtool.ops.render import answer_lines

    # a queue lookup: its own fields and message as every lookup shows them, then printMsg's lines
    shown = print_msg_lines(answer["mqadmin"])
    plain = {name: value for name, value in answer.items() if name != "mqadmin"}
    return answer_lines(plain, full) + ["", "mqadmin queryMsgByOffset:"] + shown
