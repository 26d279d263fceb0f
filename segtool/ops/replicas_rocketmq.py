"""The RocketMQ half of ``segtool replicas``: the ``rocketmq`` list of its report, one
``RocketMQReplicaSet`` (ops/output_schema.py) per group of stores that replicate each other.

The rules are RocketMQ's and live in ``rocketmq.replication`` (its docstring says how copies are
grouped); this module opens the stores, reads past their damage with recovery's cut
(``engine.salvage.store_recovery_loss`` counts what lies beyond it) and shapes the answer.
"""

from __future__ import annotations

from pathlib import Path

from segtool.engine.salvage import store_recovery_loss
from segtool.ops.task_map import NO_HASHING, FileDigest, Hashing, MapTasks, bytes_in, digests_beside, in_process
from segtool.rocketmq import names as rocketmq_names
from segtool.rocketmq import replication as rep

LISTED = 100  # messages or entries listed per run; the count is always whole


def _message(msg: dict) -> dict:
    return {"phy_offset": msg["phyOffset"], "size": msg["totalSize"], "topic": msg["topic"],
            "queue_id": msg["queueId"], "queue_offset": msg["queueOffset"], "born_timestamp": msg["bornTimestamp"],
            "store_timestamp": msg["storeTimestamp"], "msg_id": msg["UNIQ_KEY"], "offset_msg_id": msg["offsetMsgId"],
            "keys": msg["KEYS"]}


def _run(copy: rep.CommitLogCopy, start: int, stop: int) -> dict | None:
    if stop <= start:
        return None
    run = rep.message_run(copy, start, stop, LISTED)
    return {"first_offset": start, "end_offset": stop, "bytes": stop - start, "messages": run.messages,
            "listed": [_message(m) for m in run.listed]}


def _entry(entry: dict, committed_index: int | None) -> dict:
    return {"index": entry["index"], "term": entry["term"], "pos": entry["pos"], "size": entry["size"],
            "committed": committed_index is not None and entry["index"] <= committed_index,
            "message": _message(entry["message"]) if entry["message"] is not None else None}


def _entry_run(entries: list[dict], committed_index: int | None) -> dict | None:
    if not entries:
        return None
    return {"first_index": entries[0]["index"], "last_index": entries[-1]["index"], "entries": len(entries),
            "listed": [_entry(e, committed_index) for e in entries[:LISTED]]}


# --------------------------------------------------------------------------
# master / slave
# --------------------------------------------------------------------------


def _store_item(label: str, copy: rep.CommitLogCopy) -> dict:
    loss = store_recovery_loss(copy.plan) if copy.files else None
    epochs = None if copy.epochs is None else [
        {"epoch": e.epoch, "start_offset": e.start_offset, "end_offset": e.end_offset}
        for e in rep.epoch_ranges(copy.epochs, copy.end)]
    notes = list(copy.notes)
    if loss is not None:
        notes.append(f"recovery cuts the CommitLog at {loss.phy_offset} ({loss.file} byte {loss.byte}): "
                     f"{loss.messages} messages and {loss.bytes} bytes lie beyond it, compared on what it keeps")
    return {"broker": label, "store": str(copy.root), "min_offset": copy.min_offset, "max_offset": copy.end,
            "checkpoint": copy.checkpoint is not None, "confirm_offset": copy.confirm_offset, "epochs": epochs,
            "beyond_recovery": loss.beyond_dict() if loss is not None else None, "notes": notes}


def _reference(copies: list[rep.CommitLogCopy], controller: bool) -> tuple[int, str]:
    if controller:
        last = [max((e.epoch for e in c.epochs), default=-1) for c in copies]
        best = max(range(len(copies)), key=lambda i: (last[i], copies[i].end, -i))
        return best, f"the highest epoch in its {rep.EPOCH_FILE} ({last[best]}), the newest master"
    best = max(range(len(copies)), key=lambda i: (copies[i].end, -i))
    return best, "the CommitLog that reaches furthest (4.x keeps no record of roles in the store)"


def _comparison(labels: list[str], copies: list[rep.CommitLogCopy], ref: int, other: int) -> dict:
    a, b = copies[ref], copies[other]
    compared = rep.compare_copies(a, b)
    item = {"reference": labels[ref], "other": labels[other], "compared_from": compared.compared_from,
            "agree_to": compared.agree_to, "messages_agreed": compared.messages_agreed,
            "diverged_at": compared.diverged_at, "lag_bytes": None, "lag_messages": None,
            "only_reference": None, "only_other": None}
    if compared.compared_from is None:
        return item
    split = compared.diverged_at if compared.diverged_at is not None else compared.agree_to
    item["only_reference"] = _run(a, split, a.end)
    item["only_other"] = _run(b, split, b.end)
    if compared.diverged_at is None and b.end <= a.end:
        item["lag_bytes"] = a.end - b.end
        item["lag_messages"] = item["only_reference"]["messages"] if item["only_reference"] else 0
    return item


def _controller_rejoin(labels: list[str], copies: list[rep.CommitLogCopy], leader: int, follower: int) -> dict:
    master, slave = copies[leader], copies[follower]
    truncation = rep.controller_truncation(slave.epochs, slave.end, master.epochs, master.end)
    dropped = _run(slave, truncation.offset, slave.end) if truncation.offset is not None else None
    confirmed = rep.messages_below(slave, truncation.offset, slave.end, slave.confirm_offset) \
        if truncation.offset is not None else 0
    return {"leader": labels[leader], "follower": labels[follower], "rule": truncation.rule,
            "truncate_to": truncation.offset, "dropped": dropped, "confirmed_dropped": confirmed}


def _master_slave_set(labels: list[str], copies: list[rep.CommitLogCopy], notes: list[str]) -> dict:
    controller = all(c.epochs is not None for c in copies)
    if not controller and any(c.epochs is not None for c in copies):
        notes.append(f"only some stores hold {rep.EPOCH_FILE}: compared as 4.x HA copies, without epochs")
    ref, why = _reference(copies, controller)
    stores = [_store_item(label, copy) for label, copy in zip(labels, copies)]
    comparisons = [_comparison(labels, copies, ref, i) for i in range(len(copies)) if i != ref]
    rejoins = [_controller_rejoin(labels, copies, leader, follower) for leader in range(len(copies))
               for follower in range(len(copies)) if leader != follower] if controller else []
    for item in comparisons:
        if item["compared_from"] is None:
            notes.append(f"{item['reference']} and {item['other']} hold no offset in common")
        if item["diverged_at"] is not None and not controller:
            notes.append(f"{item['other']} parts from {item['reference']} at {item['diverged_at']}: 4.x HA does not "
                         "truncate a slave (DefaultHAConnection ships from the offset the slave reports), so the "
                         "differing bytes stay")
    for copy, store in zip(copies, stores):
        store["notes"].extend(f"header framing stopped at {where}" for where in copy.unframed)
    return {"layout": "master_slave", "replication": "controller" if controller else "ha",
            "reference": labels[ref], "reference_reason": why, "stores": stores, "nodes": [],
            "comparisons": comparisons, "dledger_comparisons": [], "rejoins": rejoins, "dledger_rejoins": [],
            "committed_missing": [],
            "diverged": any(c["diverged_at"] is not None for c in comparisons),
            "damaged": any(s["beyond_recovery"] is not None or c.unframed for s, c in zip(stores, copies)),
            "loses_messages": any(r["confirmed_dropped"] for r in rejoins), "notes": notes}


# --------------------------------------------------------------------------
# DLedger
# --------------------------------------------------------------------------


def _node_item(label: str, root: str, node: rep.DLedgerNode, nodes: list[rep.DLedgerNode]) -> dict:
    cut = node.recovery["cut"]
    beyond = sum(row["dropped"] for row in node.recovery["files"])
    notes = list(node.notes)
    if cut is not None:
        notes.append(f"DLedgerMmapFileStore.recover cuts the data at pos {cut['pos']} ({cut['file']} byte "
                     f"{cut['file_offset']}: {cut['reason']}); {beyond} entries lie beyond, compared on what it keeps")
    return {"broker": label, "store": root, "self_id": node.self_id, "directory": str(node.directory),
            "begin_index": node.begin_index, "end_index": node.end_index, "end_term": node.end_term,
            "committed_index": node.committed_index, "entries": len(node.entries),
            "electable": rep.can_be_elected(node, nodes), "recovery_cut": cut, "entries_beyond_recovery": beyond,
            "notes": notes}


def _dledger_comparison(labels: list[str], nodes: list[rep.DLedgerNode], ref: int, other: int) -> dict:
    a, b = nodes[ref], nodes[other]
    first, agree, diverged = rep.dledger_agreement(a, b)
    split = diverged if diverged is not None else (agree + 1 if agree is not None else None)
    if first is None:
        split = None
    return {"reference": labels[ref], "other": labels[other], "first_common_index": first, "agree_to_index": agree,
            "diverged_at_index": diverged,
            "only_reference": _entry_run([e for e in a.entries if split is not None and e["index"] >= split],
                                         a.committed_index),
            "only_other": _entry_run([e for e in b.entries if split is not None and e["index"] >= split],
                                     b.committed_index)}


def _dledger_rejoin(labels: list[str], nodes: list[rep.DLedgerNode], leader: int, follower: int) -> dict:
    truncation = rep.dledger_truncation(nodes[leader], nodes[follower])
    dropped = rep.dledger_dropped(nodes[leader], nodes[follower], truncation)
    committed = nodes[follower].committed_index
    return {"leader": labels[leader], "follower": labels[follower], "leader_electable":
            rep.can_be_elected(nodes[leader], nodes), "rule": truncation.rule, "truncate_index": truncation.offset,
            "dropped": _entry_run(dropped, committed),
            "committed_dropped": sum(1 for e in dropped if committed is not None and e["index"] <= committed)}


def _committed_missing(labels: list[str], nodes: list[rep.DLedgerNode]) -> list[dict]:
    out = []
    for i, holder in enumerate(nodes):
        if holder.committed_index is None:
            continue
        for j, lacker in enumerate(nodes):
            if i == j:
                continue
            missing = [e for e in holder.entries if e["index"] <= holder.committed_index and (
                lacker.get(e["index"]) is None or lacker.get(e["index"])["key"] != e["key"])]
            if missing:
                out.append({"holder": labels[i], "lacker": labels[j], "committed_index": holder.committed_index,
                            "missing": _entry_run(missing, holder.committed_index)})
    return out


def _dledger_set(labels: list[str], roots: list[str], nodes: list[rep.DLedgerNode], notes: list[str]) -> dict:
    electable = [rep.can_be_elected(n, nodes) for n in nodes]
    ref = max(range(len(nodes)), key=lambda i: (electable[i], nodes[i].end_term, nodes[i].end_index, -i))
    rejoins = [_dledger_rejoin(labels, nodes, leader, follower) for leader in range(len(nodes))
               for follower in range(len(nodes)) if leader != follower]
    comparisons = [_dledger_comparison(labels, nodes, ref, i) for i in range(len(nodes)) if i != ref]
    missing = _committed_missing(labels, nodes)
    items = [_node_item(label, root, node, nodes) for label, root, node in zip(labels, roots, nodes)]
    return {"layout": "dledger", "replication": "dledger", "reference": labels[ref],
            "reference_reason": "the node DLedgerLeaderElector.handleVote would elect: the highest ledger end "
                                "term, then end index, among those a majority votes for",
            "stores": [], "nodes": items, "comparisons": [], "dledger_comparisons": comparisons, "rejoins": [],
            "dledger_rejoins": rejoins, "committed_missing": missing,
            "diverged": any(c["diverged_at_index"] is not None for c in comparisons),
            "damaged": any(i["recovery_cut"] is not None for i in items),
            "loses_messages": bool(missing) or any(r["committed_dropped"] and r["leader_electable"] for r in rejoins),
            "notes": notes}


# --------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------


def _dledger_homes(root: Path) -> list[Path]:
    if rocketmq_names.is_dledger_home(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and rocketmq_names.is_dledger_dir(p.name))


def open_store(item: tuple[tuple[str, str], list[str], Hashing]) -> tuple[
        list[tuple[str, rep.CommitLogCopy]], list[tuple[str, rep.DLedgerNode]], list[FileDigest]]:
    """One store ((broker label, store root)) as its broker would load it: its CommitLog copy, or its DLedger
    nodes (a store root may hold several ``dledger-<selfId>`` homes: each is a node, labelled
    ``<broker>/<selfId>``), and the files given (the store's) hashed beside.  A unit of work of
    ``rocketmq_replica_sets``."""
    (label, root), files, hashing = item
    digests = digests_beside(files, hashing)
    homes = _dledger_homes(Path(root))
    if not homes:
        return [(label, rep.open_commitlog_copy(root))], [], digests()
    return [], [(label if len(homes) == 1 else f"{label}/{home.name[len('dledger-'):]}", rep.open_dledger_node(home))
                for home in homes], digests()


def master_slave_set(members: tuple[list[str], list[rep.CommitLogCopy]]) -> dict:
    """The ``RocketMQReplicaSet`` of one group of CommitLog copies (labels, copies): a unit of work."""
    labels, copies = members
    notes = _grouping_notes(labels, copies, rep.first_records_agree)
    return _master_slave_set(labels, copies, notes)


def dledger_set(members: tuple[list[str], list[str], list[rep.DLedgerNode]]) -> dict:
    """The ``RocketMQReplicaSet`` of one group of DLedger nodes (labels, store roots, nodes): a unit of work."""
    labels, roots, nodes = members
    notes = _grouping_notes(labels, nodes, rep.first_entries_agree)
    return _dledger_set(labels, roots, nodes, notes)


def rocketmq_replica_sets(stores: list[tuple[str, str]], map_tasks: MapTasks = in_process,
                          files: list[list[str]] | None = None,
                          hashing: Hashing = NO_HASHING) -> tuple[list[dict], list[list[FileDigest]]]:
    """One ``RocketMQReplicaSet`` per group of the given stores ((broker label, store root) each) that
    replicate each other: master/slave CommitLogs, and DLedger nodes; and the digests of each store's
    ``files``, hashed as ``hashing`` says while it is opened.  ``map_tasks`` opens the stores, then compares
    each group."""
    sizes = [bytes_in(root) for _, root in stores]
    files = files if files is not None else [[] for _ in stores]
    copy_labels, copies, copy_sizes = [], [], []
    node_labels, node_roots, nodes, node_sizes = [], [], [], []
    opened = map_tasks(open_store, [(store, own, hashing) for store, own in zip(stores, files)], sizes)
    for (label, root), size, (found_copies, found_nodes, _) in zip(stores, sizes, opened):
        for copy_label, copy in found_copies:
            copy_labels.append(copy_label)
            copies.append(copy)
            copy_sizes.append(size)
        for node_label, node in found_nodes:
            node_labels.append(node_label)
            node_roots.append(str(root))
            nodes.append(node)
            node_sizes.append(size // len(found_nodes))
    copy_groups = rep.group_members(len(copies), lambda a, b: rep.first_records_agree(copies[a], copies[b]))
    node_groups = rep.group_members(len(nodes), lambda a, b: rep.first_entries_agree(nodes[a], nodes[b]))
    sets = (map_tasks(master_slave_set, [([copy_labels[i] for i in group], [copies[i] for i in group])
                                          for group in copy_groups],
                       [sum(copy_sizes[i] for i in group) for group in copy_groups])
            + map_tasks(dledger_set, [([node_labels[i] for i in group], [node_roots[i] for i in group],
                                       [nodes[i] for i in group]) for group in node_groups],
                        [sum(node_sizes[i] for i in group) for group in node_groups]))
    return sets, [digests for _, _, digests in opened]


def _grouping_notes(labels: list[str], members: list, agree) -> list[str]:
    """Why a member sits in its group without a record in common with the group's first member."""
    return [f"{labels[i]} shares no record with {labels[0]}: kept with the stores given with it"
            for i in range(1, len(members)) if agree(members[0], members[i]) is None]


def rocketmq_replica_problems(sets: list[dict]) -> bool:
    """True when copies part, a store is damaged, or a rejoin or a lost node would lose confirmed or
    committed messages (``segtool replicas`` exits 1); a slave's lag alone is not a problem."""
    return any(s["diverged"] or s["damaged"] or s["loses_messages"] for s in sets)
