"""IndexFiles: header, slots and hash chains, and entries against the CommitLog."""

from __future__ import annotations

import os

import numpy as np

from segtool.errors import CorruptData, SegtoolError, TruncatedData
from segtool.findings import Findings, FindingKind
from segtool.rocketmq import store_files as rmq
from segtool.ops.verify_rocketmq.store import INDEX_CHECK_LIMIT, PROBLEMS_PER_KIND, StoreContext


def verify_indexfile(path: str, deep: bool, ctx: StoreContext, hash_slot_num: int | None = None,
                     index_num: int | None = None) -> dict:
    problems = Findings(PROBLEMS_PER_KIND)
    try:
        view = rmq.IndexFile(path, hash_slot_num, index_num)
    except (CorruptData, ValueError) as exc:
        # the header does not record the geometry: an empty or damaged file may still be read
        # with the geometry of the store's other index files
        view = None
        if hash_slot_num is None and not isinstance(exc, TruncatedData):
            for geometry in ctx.index_geometries(exclude=os.path.basename(path)):
                try:
                    view = rmq.IndexFile(path, *geometry)
                except (CorruptData, ValueError):
                    continue
                problems.add(FindingKind.GEOMETRY, 0,
                             f"{exc.message if isinstance(exc, SegtoolError) else exc}; read with "
                             f"the geometry of the store's other index files ({geometry[0]}/"
                             f"{geometry[1]})", info=True)
                break
        if view is None:
            problems.add(FindingKind.GEOMETRY, getattr(exc, "offset", None), str(getattr(exc, "message", exc)))
            return {"problems": problems.result()}
    try:
        return _verify_index_view(view, path, deep, ctx, problems)
    finally:
        view.close()


def _verify_index_view(view: rmq.IndexFile, path: str, deep: bool, ctx: StoreContext, problems: Findings) -> dict:
    hs, n = view.hash_slot_num, view.index_num
    buf = view.buf
    raw = rmq.read_index_header(buf, path)
    header = view.header
    count = raw["rawIndexCountField"]
    entries_at = view.entries_offset
    slots = np.frombuffer(buf, dtype=rmq.INDEX_SLOT_DTYPE, count=hs, offset=rmq.INDEX_HEADER_SIZE).astype(np.int64)
    entries = np.frombuffer(buf, dtype=rmq.INDEX_ENTRY_DTYPE, count=n, offset=entries_at)
    key_hash = entries["keyHash"].astype(np.int64)
    phy = entries["phyOffset"].astype(np.int64)
    time_diff = entries["timeDiff"].astype(np.int64)
    prev = entries["prevIndex"].astype(np.int64)

    def entry_offset(i: int) -> int:
        return entries_at + i * rmq.INDEX_ENTRY_SIZE

    nonzero = (key_hash != 0) | (phy != 0) | (time_diff != 0) | (prev != 0)
    if nonzero[0]:
        problems.add(FindingKind.ENTRY_ZERO_USED, entry_offset(0),
                     "entry 0 is never written by RocketMQ but is not zero")
    written = np.flatnonzero(nonzero[1:]) + 1
    last_written = int(written[-1]) if written.size else 0
    if count <= 0:
        problems.add(FindingKind.INDEX_COUNT, 36, f"indexCount {count}: RocketMQ reads it as 1 and sees no entries"
                     + (f", but entries 1..{last_written} are written" if last_written else ""))
        count = 1
    elif count > n:
        problems.add(FindingKind.INDEX_COUNT, 36, f"indexCount {count} exceeds the file's {n} entries")
    limit = min(count, n)  # entries 1..limit-1 are claimed
    claimed_last = limit - 1
    if last_written < claimed_last:
        problems.add(FindingKind.INDEX_COUNT, 36,
                     f"indexCount {count} claims entries 1..{count - 1} but only 1..{last_written} "
                     f"are written (entries {last_written + 1}..{count - 1} are zero)")
    elif last_written > claimed_last:
        problems.add(FindingKind.ENTRIES_BEYOND_INDEX_COUNT, 36,
                     f"entries up to {last_written} are written but indexCount {count} covers 1..{count - 1} "
                     "(header not flushed, or indexCount damaged): RocketMQ ignores them")
    w = min(last_written, claimed_last)  # entries 1..w are examined
    holes = np.flatnonzero(~nonzero[1:w + 1]) + 1
    if holes.size:
        problems.add(FindingKind.EMPTY_ENTRIES, entry_offset(int(holes[0])),
                     f"{holes.size} zero entries among the written ones, the first is entry {int(holes[0])}")
    live = np.zeros(n, dtype=bool)
    live[1:w + 1] = nonzero[1:w + 1]

    # ---- keys and the slot table ----
    negative = np.flatnonzero(live & (key_hash < 0))
    for i in negative[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add(FindingKind.NEGATIVE_KEY_HASH, entry_offset(i),
                     f"entry {i} keyHash {int(key_hash[i])} is negative "
                     "(indexKeyHashMethod never gives one)")
    entry_slot = np.where(key_hash >= 0, key_hash % hs, -1)
    used = np.flatnonzero(slots != 0)
    for s in used.tolist():
        v = int(slots[s])
        if v < 0 or v > max(w, last_written) or (v >= count and last_written <= claimed_last):
            problems.add(FindingKind.SLOT_OUT_OF_RANGE, rmq.INDEX_HEADER_SIZE + 4 * s,
                         f"slot {s} points at entry {v}, outside the written entries 1..{w}")
        elif v <= w and entry_slot[v] != s:
            problems.add(FindingKind.SLOT_HASH_MISMATCH, rmq.INDEX_HEADER_SIZE + 4 * s,
                         f"slot {s} points at entry {v} whose keyHash {int(key_hash[v])} belongs to slot "
                         f"{int(entry_slot[v])}")
    non_empty = int(used.size)
    if header["hashSlotCount"] != non_empty:
        problems.add(FindingKind.HASH_SLOT_COUNT, 32,
                     f"header hashSlotCount {header['hashSlotCount']} but {non_empty} slots "
                     "are in use")

    # ---- hash chains (prevIndex) ----
    live_idx = np.flatnonzero(live)
    p = prev[live_idx]
    bad_neg = live_idx[p < 0]
    for i in bad_neg[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add(FindingKind.PREV_OUT_OF_RANGE, entry_offset(i) + 16,
                     f"entry {i} prevIndex {int(prev[i])} is negative")
    self_loops = live_idx[p == live_idx]
    for i in self_loops.tolist():
        problems.add(FindingKind.PREV_SELF_LOOP, entry_offset(i) + 16,
                     f"entry {i} (slot {int(entry_slot[i])}) has prevIndex pointing at itself: RocketMQ's "
                     "selectPhyOffset stops there, the older entries of the chain are never reached")
    forward = live_idx[(p > live_idx)]
    for i in forward.tolist():
        target = int(prev[i])
        if target > w:
            problems.add(FindingKind.PREV_OUT_OF_RANGE, entry_offset(i) + 16,
                         f"entry {i} prevIndex {target} is past the written entries 1..{w}")
            continue
        cycle = _cycle_through(prev, i, count, w)
        slot = int(entry_slot[i])
        if cycle:
            hashes = {int(key_hash[j]) for j in cycle}
            problems.add(FindingKind.PREV_CYCLE, entry_offset(i) + 16,
                         f"entry {i} (slot {slot}) prevIndex {target} points forward and closes a cycle of "
                         f"{len(cycle)} entries: RocketMQ's selectPhyOffset repeats the cycle's matches until maxNum, "
                         f"and never returns for a key of slot {slot} whose hash matches none of the cycle's "
                         f"{len(hashes)} hash(es)")
        else:
            problems.add(FindingKind.PREV_FORWARD_POINTER, entry_offset(i) + 16,
                         f"entry {i} (slot {slot}) prevIndex {target} points forward (chains only point back)")
    back = (p > 0) & (p < live_idx)
    bi = live_idx[back]
    bp = p[back]
    crossing = bi[(entry_slot[bp] != entry_slot[bi]) & (entry_slot[bi] >= 0)]
    for i in crossing[:PROBLEMS_PER_KIND + 1].tolist():
        problems.add(FindingKind.CHAIN_CROSSES_SLOTS, entry_offset(i) + 16,
                     f"entry {i} (slot {int(entry_slot[i])}) links to entry {int(prev[i])} of slot "
                     f"{int(entry_slot[int(prev[i])])}")
    unreachable = _unreachable(slots, prev, live, count, w)
    if unreachable.size:
        problems.add(FindingKind.UNREACHABLE_ENTRIES, entry_offset(int(unreachable[0])),
                     f"{unreachable.size} written entries cannot be reached from their slot by RocketMQ's "
                     f"chain walk (the first is entry {int(unreachable[0])}): lookups miss them")

    # ---- header against the entries ----
    begin_ts, end_ts = header["beginTimestamp"], header["endTimestamp"]
    if w >= 1:
        if header["beginPhyOffset"] != int(phy[1]):
            problems.add(FindingKind.HEADER_BEGIN_PHY_OFFSET, 16,
                         f"beginPhyOffset {header['beginPhyOffset']} but entry 1 is "
                         f"phyOffset {int(phy[1])}")
        if w == claimed_last and header["endPhyOffset"] != int(phy[w]):
            problems.add(FindingKind.HEADER_END_PHY_OFFSET, 24,
                         f"endPhyOffset {header['endPhyOffset']} but the last entry "
                         f"({w}) is phyOffset {int(phy[w])}")
        if end_ts < begin_ts:
            problems.add(FindingKind.HEADER_TIMESTAMPS, 8, f"endTimestamp {end_ts} is before beginTimestamp {begin_ts}")
        elif w >= 2 and w == claimed_last:
            want = rmq.index_time_diff(end_ts, begin_ts)
            if int(time_diff[w]) != want:
                problems.add(FindingKind.HEADER_END_TIMESTAMP, 8,
                             f"endTimestamp {end_ts} is {want} s after beginTimestamp but the last entry's "
                             f"timeDiff is {int(time_diff[w])} s")
        td = time_diff[2:w + 1]
        bad_td = np.flatnonzero((td < 0) | (td > max((end_ts - begin_ts) // 1000, 0))) + 2
        if bad_td.size:
            i = int(bad_td[0])
            problems.add(FindingKind.ENTRY_TIME_OUTSIDE_HEADER, entry_offset(i) + 12,
                         f"{bad_td.size} entries have a timeDiff outside the header's time span, the first is entry "
                         f"{i} ({int(time_diff[i])} s)")
        ph = phy[1:w + 1]
        order = np.flatnonzero(np.diff(ph) < 0) + 2
        if order.size:
            i = int(order[0])
            problems.add(FindingKind.ENTRIES_OUT_OF_ORDER, entry_offset(i) + 4,
                         f"{order.size} entries have a phyOffset below the previous entry's, the first is entry {i} "
                         f"({int(phy[i])} after {int(phy[i - 1])})")
        outside = np.flatnonzero((ph < header["beginPhyOffset"]) | (ph > header["endPhyOffset"])) + 1
        if outside.size and not order.size:
            i = int(outside[0])
            problems.add(FindingKind.ENTRY_PHY_OUTSIDE_HEADER, entry_offset(i) + 4,
                         f"{outside.size} entries point outside [beginPhyOffset, endPhyOffset], the first is entry "
                         f"{i} ({int(phy[i])})")

    # ---- against the CommitLog ----
    result = {"geometry": {"hashSlotNum": hs, "indexNum": n, "source": view.geometry_source},
              "header": dict(header), "entries": w, "non_empty_slots": non_empty}
    log = ctx.commitlog
    if log is None:
        problems.add(FindingKind.NO_COMMITLOG, None, "no CommitLog beside this index: entries not checked against "
                                                     "messages")
        result["entries_checked"] = 0
    elif w >= 1:
        result["entries_checked"] = _entries_vs_commitlog(
            log, ctx, view, w, deep, key_hash, phy, time_diff, entry_offset, problems)
    else:
        result["entries_checked"] = 0

    # ---- what RocketMQ's recovery does with this file ----
    if ctx.abort and ctx.checkpoint is not None:
        limit = ctx.checkpoint["indexMsgTimestamp"]
        if end_ts > limit:
            problems.add(FindingKind.DROPPED_BY_RECOVERY, 8,
                         f"unclean shutdown (abort file): endTimestamp {end_ts} is after the checkpoint's "
                         f"indexMsgTimestamp {limit}, so RocketMQ's recovery deletes this file and re-indexes "
                         "its messages from the CommitLog")
    return {**result, "problems": problems.result()}


def _cycle_through(prev: np.ndarray, start: int, count: int, w: int) -> list[int] | None:
    """The cycle RocketMQ's walk enters from entry ``start`` (bounded walk), or None."""
    seen: dict[int, int] = {}
    order = []
    current = start
    for _ in range(w + 2):
        if current in seen:
            return order[seen[current]:]
        seen[current] = len(order)
        order.append(current)
        nxt = int(prev[current])
        if nxt <= 0 or nxt > count or nxt == current or nxt > w:
            return None
        current = nxt
    return None


def _unreachable(slots: np.ndarray, prev: np.ndarray, live: np.ndarray, count: int, w: int) -> np.ndarray:
    """Live entries no chain walk from a slot reaches (following valid prevIndex links)."""
    reached = np.zeros(len(live), dtype=bool)
    frontier = slots[(slots > 0) & (slots <= w) & (slots < count)]
    frontier = np.unique(frontier)
    steps = 0
    while frontier.size and steps <= w + 1:
        frontier = frontier[~reached[frontier]]
        reached[frontier] = True
        nxt = prev[frontier]
        ok = (nxt > 0) & (nxt <= w) & (nxt < count) & (nxt != frontier)
        frontier = np.unique(nxt[ok])
        steps += 1
    return np.flatnonzero(live & ~reached)


def _message_key_hashes(msg: dict) -> set[int]:
    topic = msg["topic"]
    keys = set()
    if msg["UNIQ_KEY"] is not None:
        keys.add(rmq.index_key_hash(rmq.index_key(topic, msg["UNIQ_KEY"])))
    if msg["KEYS"]:
        for token in msg["KEYS"].split(" "):
            if token:
                keys.add(rmq.index_key_hash(rmq.index_key(topic, token)))
    return keys


def _entries_vs_commitlog(log, ctx: StoreContext, view, w: int, deep: bool, key_hash, phy, time_diff, entry_offset,
                          problems: Findings) -> int:
    header = view.header
    begin_ts = header["beginTimestamp"]
    if deep or w <= INDEX_CHECK_LIMIT:
        chosen = range(1, w + 1)
    else:
        chosen = sorted(set(np.linspace(1, w, INDEX_CHECK_LIMIT).astype(np.int64).tolist()) | {1, w})
    cut = ctx.recovery["maxPhyOffset"] if ctx.cl_files else None
    cache: dict[int, dict | str | None] = {}
    beyond = []
    checked = 0
    for i in chosen:
        offset = int(phy[i])
        checked += 1
        if offset not in cache:
            try:
                cache[offset] = log.message_at(offset, digests=False, decompress=False)
            except CorruptData as exc:
                cache[offset] = exc.message
        msg = cache[offset]
        where = f"entry {i} (phyOffset {offset})"
        if msg is None or isinstance(msg, str):
            problems.add(FindingKind.ENTRY_POINTS_NOWHERE, entry_offset(i) + 4,
                         f"{where}: no message there" + (f" ({msg})" if msg else ""))
            continue
        if cut is not None and offset >= cut:
            beyond.append(i)
        if int(key_hash[i]) not in _message_key_hashes(msg):
            problems.add(FindingKind.ENTRY_KEY_MISMATCH, entry_offset(i),
                         f"{where}: keyHash {int(key_hash[i])} is not the hash of any key of the message there "
                         f"(topic {msg['topic']}, UNIQ_KEY {msg['UNIQ_KEY']}, KEYS {msg['KEYS']!r})")
        if msg["transactionType"] == rmq.TRANSACTION_ROLLBACK_TYPE:
            problems.add(FindingKind.ENTRY_ROLLBACK_MESSAGE, entry_offset(i),
                         f"{where}: a ROLLBACK message is never indexed")
        store_ts = msg["storeTimestamp"]
        if i == 1:
            if store_ts != begin_ts:
                problems.add(FindingKind.HEADER_BEGIN_TIMESTAMP, 0,
                             f"beginTimestamp {begin_ts} but entry 1's message was "
                             f"stored at {store_ts}")
        else:
            want = rmq.index_time_diff(store_ts, begin_ts)
            if int(time_diff[i]) != want:
                problems.add(FindingKind.ENTRY_TIME_MISMATCH, entry_offset(i) + 12,
                             f"{where}: timeDiff {int(time_diff[i])} s but the message was stored {want} s after "
                             "beginTimestamp")
        if i == w and w == min(view.index_count, view.index_num) - 1 and store_ts != header["endTimestamp"]:
            problems.add(FindingKind.HEADER_END_TIMESTAMP, 8,
                         f"endTimestamp {header['endTimestamp']} but the last entry's "
                         f"message was stored at {store_ts}")
    if beyond:
        problems.add(FindingKind.BEYOND_RECOVERY_POINT, entry_offset(beyond[0]) + 4,
                     f"{len(beyond)} entries point at or after phyOffset {cut}, where RocketMQ's recovery cuts the "
                     "CommitLog: the index keeps them, so lookups return offsets the broker cannot read")
    return checked
