"""`lookup`: answer the broker's lookups from files, through the engine.

Kafka: fetch at an offset, ListOffsets for a timestamp (and the special
latest/earliest/max-timestamp), the offset index's own floor/ceiling answer.
Every function returns a plain dict (the CLI's ``--json`` object).
Kafka lookups take record filters (``ops.record_filters``, docs/filters.md): a fetch or a
ListOffsets answer is then the first record at or after the broker's answer that passes,
a key lookup keeps the records that pass, and ``--summary`` adds them up instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from segtool.engine.inventory import directory_kind
from segtool.formats.file_kinds import DirectoryKind
from segtool.kafka.partition import PartitionView, RecordHit
from segtool.errors import CorruptData, SegtoolError, UsageError
from segtool.formats.json_names import snake_case_keys
from segtool.formats.ranges import span
from segtool.ops.output_schema import LookupAnswer

if TYPE_CHECKING:
    from segtool.engine.salvage import RecoveryLoss
from segtool.ops.record_filters import RecordFilter, RecordShape, Summary, epoch_ms, shape_record

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
_SPECIAL = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}
ROCKETMQ_MAX_NUM = 64  # IndexService's own cap on a key lookup
LONG_MAX = 2**63 - 1
KAFKA_KEY_MAX_NUM = 1000  # a Kafka key lookup's default: a key often has many records, and no index caps them


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, a special name (latest/earliest/max-timestamp) or ISO-8601."""
    text = text.strip()
    if text.lower() in _SPECIAL:
        return _SPECIAL[text.lower()]
    moment = epoch_ms(text)
    if moment is None:
        raise SegtoolError(f"timestamp {text!r} is neither epoch ms, ISO-8601 nor latest/earliest/max-timestamp")
    return moment


def _empty(partition: PartitionView, **extra) -> dict:
    return {"partition_dir": partition.directory, "offset": None, "timestamp": None,
            "segment": None, "position": None, **extra}


def _loaded(directory: str) -> tuple[PartitionView, "RecoveryLoss | None"]:
    """The partition as the broker holds it once it has loaded these files (``kafka.startup.load_partition``),
    and what that load drops."""
    from segtool.kafka.startup import load_partition

    partition = PartitionView(directory)
    plan = load_partition(partition, state_files=False)
    if not plan.cuts:
        return partition, None
    # imported here: reading past damage loads the RocketMQ layouts too, which a whole partition never needs
    from segtool.engine.salvage import recovery_loss

    return partition, recovery_loss(plan)


def _with_notes(answer: dict, partition: PartitionView, loss: "RecoveryLoss | None" = None) -> dict:
    """The answer, with what loading the partition changed (an interrupted swap completed, a recovery
    cut), if anything."""
    notes = list(partition.notes)
    if loss is not None:
        answer["recovery_cut"] = loss.cut_dict()
        answer["beyond_recovery"] = loss.beyond_dict()
        notes.append(recovery_cut_note(loss))
    if notes:
        answer["notes"] = notes + answer.get("notes", [])
    return answer


def recovery_cut_note(loss: "RecoveryLoss") -> str:
    """The sentence a lookup answer carries when the broker's load truncates the partition."""
    beyond = (f"beyond the cut{'s' if len(loss.cuts) > 1 else ''} {loss.records} record(s) at "
              f"{span(loss.first_offset, loss.last_offset)} still lie on disk (dump lists them): salvage writes "
              f"back the {loss.salvageable} in batches whose checksum holds, {loss.gone} are gone"
              if loss.records else "no record lies on disk beyond it")
    return (f"Kafka's load: {'; '.join(cut.action() for cut in loss.cuts)}; the log ends at offset {loss.log_end} "
            f"and a fetch there or beyond finds nothing; {beyond}")


def lookup_offset(directory: str, offset: int) -> LookupAnswer:
    """The first record a fetch at ``offset`` returns (the next one inside a compaction gap)."""
    partition, loss = _loaded(directory)
    hit = partition.read_at(offset)
    if hit is None:
        answer = _empty(partition, requested_offset=offset, log_end_offset=partition.log_end_offset)
    else:
        answer = {"partition_dir": directory, "requested_offset": offset, **hit.as_dict(), "record": _record(hit)}
    return _with_notes(answer, partition, loss)


def _record(hit) -> dict:
    from segtool.ops.dump_kafka_log import record_item

    return record_item(hit.batch, hit.record, hit.segment)


def lookup_timestamp(directory: str, timestamp: int) -> LookupAnswer:
    """ListOffsets: the first offset whose timestamp >= ``timestamp`` (or a special value)."""
    partition, loss = _loaded(directory)
    base = {"partition_dir": directory, "requested_timestamp": timestamp}
    if timestamp == LATEST:
        answer = {**_empty(partition), **base, "offset": partition.log_end_offset}
    elif timestamp == EARLIEST:
        answer = {**_empty(partition), **base, "offset": partition.log_start_offset}
    else:
        hit = (partition.max_timestamp_hit() if timestamp == MAX_TIMESTAMP
               else partition.offset_for_timestamp(timestamp))
        answer = {**_empty(partition), **base} if hit is None else {**base, **hit.as_dict(), "record": _record(hit)}
        if timestamp != MAX_TIMESTAMP:
            for log in partition.mtime_segments(timestamp):
                answer.setdefault("notes", []).append(
                    f"{os.path.basename(log)} holds no timestamped batch: as in Kafka, its file's mtime stands in "
                    "for its timestamp, and this answer depends on it (copies often lose mtimes: cp -p, rsync -t)")
    return _with_notes(answer, partition, loss)


def lookup_index_entry(directory: str, offset: int, ceiling: bool) -> LookupAnswer:
    """The offset index's own answer before any scan.

    Floor is ``OffsetIndex.lookup`` on the floor segment: the last entry <= offset,
    or (base offset, position 0) when the index has none.  Ceiling is the first
    entry >= offset, in this segment or a later one.
    """
    partition = PartitionView(directory)
    mode = "ceiling" if ceiling else "floor"
    first = max(partition.floor_segment(offset), 0)
    segments = partition.segments[first:] if ceiling else partition.segments[first:first + 1]
    for segment in segments:
        index = segment.offset_index
        entries = 0 if index is None else index.entries
        slot = -1
        if entries:
            slot = index.ceiling_slot(offset) if ceiling else index.largest_lower_bound_slot(offset)
        if slot == -1 and ceiling:
            continue
        found_offset, position = (segment.base_offset, 0) if slot == -1 else index.entry(slot)
        answer = {"partition_dir": directory, "requested_offset": offset, "mode": mode, "index": segment.index_path,
                  "slot": slot, "offset": found_offset, "position": position, "segment": segment.log_path,
                  "timestamp": None}
        if index is None:
            answer["notes"] = [f"{segment.index_path} does not exist: answered as an empty index would (the "
                               "broker rebuilds it when it loads the segment)"]
        return _with_notes(answer, partition)
    return _with_notes({**_empty(partition), "requested_offset": offset, "mode": mode}, partition)


# --------------------------------------------------------------------------
# RocketMQ
# --------------------------------------------------------------------------


def lookup_key(path: str, key: str, *, topic: str | None = None, begin: int = 0, end: int = 2**63 - 1,
               max_num: int = ROCKETMQ_MAX_NUM, include_collisions: bool = False, key_index: str | None = None,
               kind: str | None = None) -> LookupAnswer:
    """RocketMQ key lookup (``IndexService.queryOffset`` resolved in the CommitLog), or a Kafka
    partition's records by key (through the key index at ``key_index`` or its default place).

    ``path`` is a store root.  After an unclean shutdown (``abort`` file) the
    index is first recovered in memory as RocketMQ's abnormal recovery does.
    ``phy_offsets`` drops hash collisions unless ``include_collisions``.
    ``kind`` is ``directory_kind(path)`` when the caller has it already.
    """
    from segtool.rocketmq.store import StoreView

    if (kind or directory_kind(path)) == DirectoryKind.KAFKA_PARTITION:
        from segtool.ops.keyindex import lookup_kafka_key

        return lookup_kafka_key(path, key, max_num=max_num if max_num != ROCKETMQ_MAX_NUM else KAFKA_KEY_MAX_NUM,
                                key_index=key_index)
    if topic is None:
        raise SegtoolError("--key on a RocketMQ store needs --topic (the index key is topic#key)", path)
    with StoreView(path) as store:
        answer = snake_case_keys(store.query_offsets(topic, key, max_num=max_num, begin=begin, end=end,
                                                     include_collisions=include_collisions))
        _mark_index_states(store, answer, topic, key, begin, end)
        answer["mqadmin_rows"] = _query_msg_by_key_rows(store, answer["query_message_phy_offsets"], key)
        root = store.root
    return _with_store_recovery(answer, root, answer["query_message_phy_offsets"])


def _query_msg_by_key_rows(store, phy_offsets: list[int], key: str) -> list[dict]:
    """``mqadmin queryMsgByKey``'s rows (#Message ID, #QID, #Offset): the broker's ``queryMessage``
    answer, kept by ``MQAdminImpl.queryMessage`` when the message's KEYS (split on a space) hold the
    key -- a key that is only a UNIQ_KEY is dropped there, as are hash collisions."""
    from segtool.rocketmq.store import _message_view
    from segtool.ops.mqadmin import client_msg_id

    rows = []
    for phy in phy_offsets:
        try:
            msg = store.message_at(phy)
        except SegtoolError:
            continue
        if msg is None or key not in (msg["KEYS"] or "").split(" "):
            continue
        view = _message_view(msg, store.commitlog_dir)
        rows.append({"msg_id": client_msg_id(view), "queue_id": view["queue_id"],
                     "queue_offset": view["queue_offset"], "phy_offset": phy})
    return rows


# Why a message of the CommitLog is, or is not, in what IndexService.queryOffset answers after
# DefaultMessageStore.load() (RocketMQ 4.9.8's IndexService.load, CommitLog.recoverAbnormally,
# IndexService.buildIndex, DefaultMessageStore.start); docs/rocketmq-lookups.md.
INDEXED = "indexed"
REINDEXED_BY_RECOVERY = "reindexed_by_recovery"
DISPATCHED_BY_RECOVERY = "dispatched_by_recovery"
INDEX_FILE_DROPPED = "index_file_dropped"
AFTER_RECOVERY_CUT = "after_recovery_cut"
NOT_DISPATCHED = "not_dispatched"


def _disk_index_hits(path, topic: str, key: str, begin: int, end: int) -> dict[int, str]:
    """phyOffset -> name of the IndexFile on disk (as the broker left it) whose entries hold it for topic#key."""
    from segtool.rocketmq.store import StoreView
    from segtool.rocketmq import store_files as rmq

    key_hash = rmq.index_key_hash(rmq.index_key(topic, key))
    hits: dict[int, str] = {}
    with StoreView(path, recover=False) as disk:
        for index_file in disk.index_files:
            found: list[int] = []
            index_file.select_phy_offsets(found, key_hash, 2**31 - 1, begin, end)
            for phy in found:
                hits.setdefault(phy, index_file.name)
    return hits


def _mark_index_states(store, answer: dict, topic: str, key: str, begin: int, end: int) -> None:
    """Say, per message, whether the broker's index holds it and why (``index_state``,
    ``index_state_reason``), and list under ``unindexed_messages`` the CommitLog's messages that
    carry topic#key in [begin, end] but that the index after the broker's load cannot return.

    All of it comes from the files: the abort marker, the checkpoint, the IndexFile headers and
    where the (simulated) abnormal recovery started and stopped."""
    from segtool.rocketmq.store import FeedStop, _message_view, carries_key

    recovery = store.recovery
    ends: list[dict] = []
    if recovery is None:
        for message in answer["messages"]:
            if "error" not in message:
                message["index_state"] = INDEXED
                message["index_state_reason"] = "in the IndexFiles as they are on disk (the store shut down cleanly)"
        newest = store.index_files[-1] if store.index_files else None
        after = newest.end_phy_offset if newest is not None else None
        ranges = [(after or 0, None, after, NOT_DISPATCHED,
                   ("after the newest IndexFile's endPhyOffset " + str(after) if newest is not None
                    else "no IndexFile") + ": not indexed when the broker stopped; DefaultMessageStore.start "
                   "re-dispatches from the ConsumeQueues' largest physical offset, so the broker indexes it "
                   "after it starts only if its ConsumeQueue unit is missing too")]
    else:
        disk_hits = _disk_index_hits(store.root, topic, key, begin, end)
        dropped = set(recovery["droppedIndexFiles"])
        start_file = recovery["commitlogRecoveryStartFile"]
        stopped = recovery["commitlogStopped"] or {}
        cut = stopped.get("phyOffset") if stopped.get("kind") is not FeedStop.LAST_FILE else None
        cut_reason = (f"CommitLog.recoverAbnormally stops at physical offset {cut} "
                      f"({stopped.get('reason') or stopped.get('kind')}) and truncates the CommitLog there "
                      "(MappedFileQueue.truncateDirtyFiles): the broker no longer has it")
        for message in answer["messages"]:
            if "error" in message:
                continue
            holder = disk_hits.get(message["phy_offset"])
            if cut is not None and message["phy_offset"] >= cut:
                message["index_state"] = AFTER_RECOVERY_CUT
                message["index_state_reason"] = cut_reason + " (its index entry stays but points past the end)"
            elif holder is None:
                message["index_state"] = DISPATCHED_BY_RECOVERY
                message["index_state_reason"] = (
                    "in no IndexFile on disk: the broker had not dispatched it (ReputMessageService) when it "
                    "stopped, so that broker did not return it; CommitLog.recoverAbnormally re-dispatches "
                    f"every message from CommitLog file {start_file} (DefaultMessageStore.doDispatch -> "
                    "IndexService.buildIndex), so the restarted broker does")
            elif holder in dropped:
                message["index_state"] = REINDEXED_BY_RECOVERY
                message["index_state_reason"] = (
                    f"its entry is in {holder}, which IndexService.load(lastExitOK=false) destroys "
                    f"(endTimestamp > the checkpoint's indexMsgTimestamp); CommitLog.recoverAbnormally "
                    f"re-dispatches from CommitLog file {start_file} and IndexService.buildIndex indexes it again")
            else:
                message["index_state"] = INDEXED
                message["index_state_reason"] = f"in {holder}, kept by IndexService.load"
        kept_end = recovery["keptEndPhyOffset"]
        start = recovery["commitlogRecoveryStartPhyOffset"]
        ranges = []
        if start is not None and (kept_end is None or kept_end < start):
            ranges.append((kept_end or 0, start, kept_end, INDEX_FILE_DROPPED,
                           "its index entries were only in IndexFiles that IndexService.load(lastExitOK=false) "
                           f"destroys ({', '.join(sorted(dropped)) or 'none kept'}: endTimestamp > the "
                           "checkpoint's indexMsgTimestamp), and CommitLog.recoverAbnormally starts after it, at "
                           f"CommitLog file {start_file} (the last file whose first storeTimestamp <= "
                           "min(physicMsgTimestamp, logicsMsgTimestamp) - 3 s, messageIndexSafe=false): "
                           "nothing indexes it again"))
        if cut is not None:
            ranges.append((cut, None, None, AFTER_RECOVERY_CUT, cut_reason))
    returned = {message["phy_offset"] for message in answer["messages"]}
    unindexed = []
    for start, stop, after, state, reason in ranges:
        for msg in store.messages(start, stop, keep_body=True, ends=ends):
            if after is not None and msg["phyOffset"] <= after or msg["phyOffset"] in returned:
                continue
            if not begin <= msg["storeTimestamp"] <= end:
                continue
            view = _message_view(msg, store.commitlog_dir)
            if carries_key(view, topic, key):
                unindexed.append({**view, "index_state": state, "index_state_reason": reason})
    answer["unindexed_messages"] = unindexed
    for damage in ends:
        answer["notes"].append(f"CommitLog file {damage['file']} cannot be read past physical offset "
                               f"{damage['phy_offset']} ({damage['reason']}): messages after it were not "
                               "searched for unindexed copies of the key")


UNIQ_KEY_MAX_NUM = 32  # QueryMessageProcessor: a unique-key query asks for defaultQueryMaxNum


def lookup_msg_ids(path: str, ids: list[str], topic: str | None = None) -> LookupAnswer:
    """``mqadmin queryMsgById -i ID[,ID...]`` offline, for both kinds of id.

    As ``DefaultMQAdminExtImpl.queryMessage`` does, each id is first read as an offset message id:
    the message whose record starts at its CommitLog offset (its store host checked against the
    message's); when none starts there it is a unique key: with ``topic``, the IndexFile's answer
    for topic#key (``queryMessageByUniqKey``, max 32), else a scan of the CommitLog (one pass for
    every such id) -- each message whose UNIQ_KEY property equals it, oldest store time first
    (mqadmin prints that first one only)."""
    from segtool.rocketmq.store import StoreView, _message_view
    from segtool.rocketmq import msgid as ids_format
    from segtool.ops.mqadmin import print_msg_fields

    answers: list[dict] = []
    messages: list[dict] = []
    pending: dict[str, dict] = {}  # unique keys to find by scanning
    with StoreView(path) as store:
        def found(entry: dict, msg: dict) -> None:
            view = _message_view(msg, store.commitlog_dir)
            view["queried_id"] = entry["msg_id"]
            view["mqadmin"] = print_msg_fields(view)
            entry["phy_offsets"].append(view["phy_offset"])
            messages.append(view)

        for text in ids:
            text = text.strip()
            entry = {"msg_id": text, "id_kind": None, "searched_by": None, "offset_msg_id": None,
                     "unique_key": None, "phy_offsets": [], "notes": []}
            answers.append(entry)
            decoded = ids_format.decode_offset_msg_id(text)
            if decoded is None:
                entry["notes"].append("not a message id: RocketMQ's ids are 32 (IPv4) or 56 (IPv6) hex digits")
                continue
            entry["offset_msg_id"] = decoded
            entry["unique_key"] = ids_format.decode_uniq_key(text)
            try:
                msg = store.message_at(decoded["commit_log_offset"]) if decoded["commit_log_offset"] >= 0 else None
            except SegtoolError:
                msg = None  # no record starts there: not an offset id of this store
            if msg is not None and msg["physicalOffsetField"] == decoded["commit_log_offset"]:
                entry.update(id_kind="offset_msg_id", searched_by="commitlog_offset")
                entry["unique_key"] = None
                if msg["storeHost"] != decoded["store_host"]:
                    entry["notes"].append(
                        f"the id names store host {decoded['store_host']} but the message here was stored by "
                        f"{msg['storeHost']}: mqadmin asks the broker at {decoded['store_host']}, which may not "
                        "be this store")
                found(entry, msg)
                continue
            entry["id_kind"] = "unique_key"
            entry["offset_msg_id"] = None
            if topic is not None:
                entry["searched_by"] = "index"
                answer = store.query_offsets(topic, text, max_num=UNIQ_KEY_MAX_NUM)
                for phy in sorted(set(answer["phy_offsets"])):
                    msg = store.message_at(phy)
                    if msg is not None and msg["UNIQ_KEY"] == text:
                        found(entry, msg)
                entry["notes"].extend(answer["notes"])
            else:
                entry["searched_by"] = "commitlog_scan"
                pending[text] = entry
        if pending:
            ends: list[dict] = []
            for msg in store.messages(keep_body=True, ends=ends):
                entry = pending.get(msg["UNIQ_KEY"])
                if entry is not None:
                    found(entry, msg)
            for damage in ends:
                for entry in pending.values():
                    entry["notes"].append(f"CommitLog file {damage['file']} cannot be read past physical offset "
                                          f"{damage['phy_offset']} ({damage['reason']}): not searched further")
    by_id: dict[str, list[dict]] = {}
    for view in messages:
        by_id.setdefault(view["queried_id"], []).append(view)
    for entry in answers:
        shown = sorted(by_id.get(entry["msg_id"], []), key=lambda view: (view["store_timestamp"], view["phy_offset"]))
        entry["phy_offsets"] = [view["phy_offset"] for view in shown]
        if entry["id_kind"] == "unique_key" and shown:
            entry["unique_key"] = _unique_key_times(entry["unique_key"], shown[0])
            entry["mqadmin_phy_offset"] = shown[0]["phy_offset"]
        if entry["id_kind"] == "unique_key" and not shown and topic is None:
            entry["id_kind"] = None  # neither kind finds a message here
    ordered = [view for entry in answers for view in sorted(
        by_id.get(entry["msg_id"], []), key=lambda view: (view["store_timestamp"], view["phy_offset"]))]
    return {"store": str(path), "topic": topic, "ids": answers, "messages": ordered}


def _unique_key_times(decoded: dict, first: dict) -> dict:
    """The unique key's time, resolved against its first message's born time: the client's UTC offset
    that puts the id's creation just before the send, and the creation time under it."""
    from segtool.rocketmq.msgid import infer_utc_offset, uniq_key_time

    offset = infer_utc_offset(decoded["ms_since_month_start"], first["born_timestamp"])
    created = None if offset is None else uniq_key_time(decoded["ms_since_month_start"],
                                                        first["born_timestamp"] + 1, offset)
    return {**decoded, "client_utc_offset_minutes": offset, "created_timestamp": created}


def lookup_print_msg(path: str, request: "LookupRequest") -> LookupAnswer:
    """``mqadmin printMsg -t T [-c charset] [-s expr] [-b begin] [-e end] [-d printBody]`` offline."""
    from segtool.ops.mqadmin import print_messages

    if request.topic is None:
        raise UsageError("--print-msg needs --topic (-t)")
    begin, end = (mqadmin_time(text) for text in (request.begin, request.end))
    return print_messages(path, request.topic, charset=request.charset, sub_expression=request.sub_expression,
                          begin=begin or None, end=None if end == LONG_MAX else end, print_body=request.print_body)


def mqadmin_time(text: str) -> int:
    """``PrintMessageSubCommand.timestampFormat``: epoch ms, or yyyy-MM-dd#HH:mm:ss:SSS (read as UTC
    here: mqadmin reads it in the querying machine's zone); ISO-8601 is accepted too."""
    import re
    from datetime import datetime, timezone

    text = text.strip()
    match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})", text)
    if match:
        year, month, day, hour, minute, second, millis = map(int, match.groups())
        return int(datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=timezone.utc).timestamp()
                   * 1000)
    moment = parse_timestamp(text)
    if moment < 0:
        raise UsageError(f"{text!r}: give epoch ms, yyyy-MM-dd#HH:mm:ss:SSS or ISO-8601")
    return moment


def lookup_queue_mqadmin(path: str, topic: str, queue_id: int, queue_offset: int,
                         broker_name: str | None = None) -> LookupAnswer:
    """``mqadmin queryMsgByOffset -t -b -i -o``: the ConsumeQueue unit and its message, with the
    fields ``printMsg`` shows; the pull that mqadmin makes adds MIN_OFFSET and MAX_OFFSET (the
    queue's bounds) to the properties (``PullAPIWrapper.processPullResult``)."""
    from segtool.ops.mqadmin import print_msg_fields

    answer = lookup_queue(path, topic, queue_id, queue_offset)
    message = answer.get("message")
    in_range = (answer["min_offset_in_queue"] is not None
                and answer["min_offset_in_queue"] <= queue_offset < answer["max_offset_in_queue"])
    if message is not None and in_range:
        # beside the message, not in it: a message has one shape whichever way it was found
        answer["mqadmin"] = print_msg_fields(message, {"MIN_OFFSET": str(answer["min_offset_in_queue"]),
                                                        "MAX_OFFSET": str(answer["max_offset_in_queue"])})
    elif message is not None:
        answer.setdefault("notes", []).append(
            "the unit is outside [min, max) of the queue: a pull there answers OFFSET_ILLEGAL and mqadmin "
            "prints nothing")
    if broker_name is not None:
        answer["broker_name"] = broker_name
        answer.setdefault("notes", []).append(
            f"broker name {broker_name!r} taken as naming this store (a store does not record its broker name)")
    return answer


def lookup_queue(path: str, topic: str, queue_id: int, queue_offset: int) -> LookupAnswer:
    """RocketMQ ConsumeQueue lookup: the unit at ``queue_offset`` and the message it points at."""
    from segtool.rocketmq.store import StoreView

    with StoreView(path) as store:
        answer = snake_case_keys(store.queue_unit(topic, queue_id, queue_offset))
        root = store.root
    return _with_store_recovery(answer, root, [] if answer["phy_offset"] is None else [answer["phy_offset"]])


def _with_store_recovery(answer: dict, root, phy_offsets: list[int]) -> dict:
    """A queue or key answer, with where the store's CommitLog recovery cuts and what it drops
    (``engine.salvage.store_recovery_loss``: the figures verify, inspect and salvage give), if it drops
    anything; ``after_recovery_cut`` says whether a message the answer names lies past the cut."""
    from segtool.ops.verify_rocketmq.store import store_recovery

    loss, abnormal = store_recovery(Path(root))
    if loss is None:
        return answer
    answer["recovery_cut"] = loss.cut_dict()
    answer["beyond_recovery"] = loss.beyond_dict()
    past = any(phy >= loss.phy_offset for phy in phy_offsets)
    answer["after_recovery_cut"] = past
    deleted = f" and deletes {', '.join(loss.deleted_files)}" if loss.deleted_files else ""
    if "queue_offset" in answer:
        unit = (f"this unit points past it: truncateDirtyLogicFiles removes it and a pull at queue offset "
                f"{answer['queue_offset']} finds nothing; " if past else "")
    else:
        unit = ("messages named here lie past it: after the load they are not in the store; " if past else "")
    answer.setdefault("notes", []).append(
        f"RocketMQ's recovery (CommitLog.recover{'Abnormally' if abnormal else 'Normally'}) cuts the CommitLog at "
        f"physical offset {loss.phy_offset} ({os.path.basename(loss.file)} byte {loss.byte}){deleted}: {unit}"
        f"{loss.messages} message(s) dropped, {loss.salvageable} whose body CRC holds (salvage writes them back), "
        f"{loss.gone} gone")
    return answer


# --------------------------------------------------------------------------
# Kafka lookups through record filters
# --------------------------------------------------------------------------


def _passing_hits(partition: PartitionView, start: int, record_filter: RecordFilter, not_before: int | None,
                  most: int | None) -> tuple[list[RecordHit], list[str]]:
    """The records a fetch from ``start`` returns that pass ``record_filter`` (and, for ListOffsets,
    have a timestamp >= ``not_before``), in offset order, at most ``most``; and notes on where a
    damaged segment stopped the scan.  Control records are left out, as consumers never see them."""
    start = max(start, record_filter.first_offset or 0)
    hits: list[RecordHit] = []
    notes: list[str] = []
    first = max(partition.floor_segment(start), 0)
    for number, segment in enumerate(partition.segments[first:]):
        batches = segment.batches_reaching(start) if number == 0 else segment.batches_from(0)
        try:
            for batch in batches:
                if record_filter.last_offset is not None and batch.base_offset > record_filter.last_offset:
                    return hits, notes
                if batch.is_control or batch.last_offset < start or not record_filter.admits_batch(batch):
                    continue
                for record in segment.records(batch):
                    if (record.offset >= start and (not_before is None or record.timestamp >= not_before)
                            and record_filter.admits_record(record.offset, record.timestamp, record.key)):
                        hits.append(RecordHit(record.offset, record.timestamp, segment.log_path, batch.position,
                                              batch, record))
                        if most is not None and len(hits) >= most:
                            return hits, notes
        except CorruptData as e:
            notes.append(f"{segment.log_path} cannot be read past byte {e.offset} ({e.message}): "
                         "the records after it were not searched")
    return hits, notes


def _summary(pairs: list[tuple[object, dict]]) -> dict:
    """``Summary`` of (batch, record item) pairs in offset order, each batch counted once."""
    from segtool.ops.dump_kafka_log import batch_item

    summary = Summary()
    counted = None
    for batch, record in pairs:
        if (record["file"], batch.position) != counted:
            summary.add_batch({**batch_item(batch, path=record["file"]), "file": record["file"]})
            counted = (record["file"], batch.position)
        summary.add_record(record)
    return summary.report()


def _with_records(answer: dict, pairs: list[tuple[object, dict]], request: "LookupRequest", many: bool) -> dict:
    """``answer`` carrying what passed: the summary (``--summary``), or the records (``many``: all of
    them as ``records``, else the first as ``record``), shaped as asked; and the filter applied."""
    if request.record_filter.active:
        answer["filter"] = request.record_filter.described()
    if request.summary:
        answer.pop("records", None)
        answer["summary"] = _summary(pairs)
        return answer
    shown = [record if request.shape is None else shape_record(record, request.shape) for _, record in pairs]
    if many:
        answer["records"] = shown
    elif shown:
        answer["record"] = shown[0]
    return answer


def _filtered_fetch(path: str, request: "LookupRequest") -> LookupAnswer:
    """A fetch (``--offset``) or ListOffsets (``--timestamp``) answer through the record filter: the
    first passing record at or after the broker's answer (``--limit`` N: the first N)."""
    from segtool.ops.dump_kafka_log import record_item

    partition, loss = _loaded(path)
    record_filter = request.record_filter
    if request.offset is not None:
        base = {"partition_dir": path, "requested_offset": request.offset}
        start, not_before = request.offset, None
    else:
        timestamp = parse_timestamp(request.timestamp)
        if timestamp < 0:
            raise UsageError("record filters go with --timestamp TIME (epoch ms or ISO-8601): latest, earliest "
                             "and max-timestamp are one offset of the whole partition")
        base = {"partition_dir": path, "requested_timestamp": timestamp}
        listed = partition.offset_for_timestamp(timestamp)
        start, not_before = (None, None) if listed is None else (listed.offset, timestamp)
    most = None if request.summary and record_filter.limit is None else record_filter.limit or 1
    hits, notes = ([], []) if start is None else _passing_hits(partition, start, record_filter, not_before, most)
    answer = {**_empty(partition, **base), **(hits[0].as_dict() if hits else {})}
    if notes:
        answer["notes"] = notes
    pairs = [(hit.batch, record_item(hit.batch, hit.record, hit.segment)) for hit in hits]
    return _with_notes(_with_records(answer, pairs, request, many=record_filter.limit is not None), partition, loss)


def _filtered_key_lookup(path: str, request: "LookupRequest") -> LookupAnswer:
    """A Kafka key lookup through the record filter: every record of the key, then those whose
    batch header and offset/time pass, at most ``--limit`` (else ``--max``)."""
    from segtool.kafka.log import batch_at
    from segtool.ops.keyindex import lookup_kafka_key
    from segtool.source import open_buffer

    record_filter = request.record_filter
    answer = lookup_kafka_key(path, request.key, max_num=2**62, key_index=request.key_index)
    most = record_filter.limit or (request.max_num if request.max_num != ROCKETMQ_MAX_NUM else KAFKA_KEY_MAX_NUM)
    pairs = []
    logs: dict[str, object] = {}  # segment path -> its mapping, opened once
    for record in answer["records"]:
        if record["file"] not in logs:
            logs[record["file"]] = open_buffer(record["file"])
        batch = batch_at(logs[record["file"]], record["batch_position"], record["file"])
        if record_filter.admits_batch(batch) and record_filter.admits_record_item(record):
            pairs.append((batch, record))
    pairs = pairs[:most]
    answer["offsets"] = [record["offset"] for _, record in pairs]
    return _with_records(answer, pairs, request, many=True)


# --------------------------------------------------------------------------
# One entry point
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LookupRequest:
    """One lookup, as asked on the command line: exactly one of ``offset``, ``timestamp``, ``key``,
    ``queue_id`` (times as epoch ms, ISO-8601 or, for ``timestamp``, latest/earliest/max-timestamp)."""

    offset: int | None = None
    timestamp: str | None = None
    floor: bool = False
    ceiling: bool = False
    key: str | None = None
    key_index: str | None = None
    topic: str | None = None
    begin: str = "0"
    end: str = str(2**63 - 1)
    max_num: int = ROCKETMQ_MAX_NUM
    include_collisions: bool = False
    queue_id: int | None = None
    queue_offset: int | None = None
    record_filter: RecordFilter = RecordFilter()
    shape: RecordShape | None = None  # None: records as every command shows them
    summary: bool = False
    msg_ids: tuple[str, ...] | None = None  # RocketMQ queryMsgById: offset message ids or unique keys
    print_msg: bool = False  # RocketMQ printMsg over --topic
    broker_name: str | None = None  # queryMsgByOffset's -b: named, not checked
    charset: str = "UTF-8"
    sub_expression: str = "*"
    print_body: bool = True

    @property
    def filtered(self) -> bool:
        """Does the request go through the record filters (Kafka only)?"""
        return self.record_filter.active or self.shape is not None or self.summary


_KAFKA_MODES = ("offset", "timestamp", "key")
_ROCKETMQ_MODES = ("key", "queue_id", "msg_ids", "print_msg")


def lookup(path: str, request: LookupRequest) -> tuple[LookupAnswer, bool]:
    """The answer to ``request`` on the partition or store at ``path``, and whether it found something
    with nothing wrong (damage a Kafka answer names is a problem found: exit 1).  What ``path`` is (a
    Kafka partition or a RocketMQ store) is decided here, once; a request that does not fit it is a
    usage error (UsageError)."""
    answer, found = _lookup(path, request)
    return answer, found and "recovery_cut" not in answer and "damage" not in answer


def _lookup(path: str, request: LookupRequest) -> tuple[LookupAnswer, bool]:
    modes = [name for name in ("offset", "timestamp", "key", "queue_id", "msg_ids") if getattr(request, name) is not None]
    modes += ["print_msg"] if request.print_msg else []
    if len(modes) != 1:
        raise UsageError("give exactly one of --offset, --timestamp, --key, --queue-id, --msg-id, --print-msg")
    mode = modes[0]
    if request.filtered and (request.floor or request.ceiling):
        raise UsageError("--floor and --ceiling give the offset index's entry, not records: record filters, "
                         "--summary and the key/value formats do not apply")
    if (request.floor or request.ceiling) and mode != "offset":
        raise UsageError("--floor and --ceiling go with --offset")
    if request.floor and request.ceiling:
        raise UsageError("give --floor or --ceiling, not both")
    kind = directory_kind(path)
    if kind == DirectoryKind.KAFKA_PARTITION and request.topic is not None:
        raise UsageError("--topic is for a RocketMQ store: a Kafka partition directory is one topic's partition",
                         path)
    if request.filtered and kind != DirectoryKind.KAFKA_PARTITION:
        raise UsageError("record filters, --limit, --summary and the key/value formats are for a Kafka "
                         "partition's records (a RocketMQ key lookup takes --begin, --end and --max)", path)
    allowed = _KAFKA_MODES if kind == DirectoryKind.KAFKA_PARTITION else _ROCKETMQ_MODES
    if mode not in allowed:
        options = ", ".join("--" + name.replace("_", "-") for name in allowed)
        what = "a Kafka partition" if kind == DirectoryKind.KAFKA_PARTITION else "a RocketMQ store"
        raise UsageError(f"--{mode.replace('_', '-')} does not apply to {what}: it takes {options}", path)
    if request.filtered:
        answer = (_filtered_key_lookup(path, request) if mode == "key"
                  else _filtered_fetch(path, request))
        found = answer["summary"]["records"] > 0 if request.summary else bool(
            answer.get("record") or answer.get("records"))
        return answer, found
    if mode == "key":
        window = [parse_timestamp(text) for text in (request.begin, request.end)]
        if min(window) < 0:
            raise UsageError("--begin and --end take epoch ms or ISO-8601 times")
        answer = lookup_key(path, request.key, topic=request.topic, begin=window[0], end=window[1],
                            max_num=request.max_num, include_collisions=request.include_collisions,
                            key_index=request.key_index, kind=kind)
        return answer, bool(answer.get("phy_offsets") or answer.get("offsets"))
    if mode == "queue_id":
        if request.topic is None or request.queue_offset is None:
            raise UsageError("--queue-id needs --topic and --queue-offset")
        answer = lookup_queue_mqadmin(path, request.topic, request.queue_id, request.queue_offset,
                                      request.broker_name)
        return answer, answer.get("phy_offset") is not None
    if mode == "msg_ids":
        answer = lookup_msg_ids(path, list(request.msg_ids), request.topic)
        return answer, all(entry["phy_offsets"] for entry in answer["ids"])
    if mode == "print_msg":
        answer = lookup_print_msg(path, request)
        return answer, bool(answer["messages"])
    if mode == "offset":
        answer = (lookup_index_entry(path, request.offset, ceiling=request.ceiling) if request.floor or request.ceiling
                  else lookup_offset(path, request.offset))
    else:
        answer = lookup_timestamp(path, parse_timestamp(request.timestamp))
    return answer, answer.get("offset") is not None
