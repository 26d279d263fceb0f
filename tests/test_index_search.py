"""Kafka's warm/cold index search against a brute-force scan (hypothesis)."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from segtool.kafka.index import OffsetIndex, TimeIndex

BASE = 1000


@st.composite
def monotonic_index(draw):
    gaps = draw(st.lists(st.integers(1, 50), min_size=0, max_size=3000))
    offsets, current = [], draw(st.integers(0, 5))
    for gap in gaps:
        offsets.append(current)
        current += gap
    zero_tail = draw(st.integers(0, 1500))
    target = draw(st.integers(-10, current + 60))
    return offsets, zero_tail, target


def _write_offset_index(path, rel_offsets, zero_tail):
    with open(path, "wb") as out:
        for i, rel in enumerate(rel_offsets):
            out.write(struct.pack(">ii", rel, (i + 1) * 100))  # Kafka never indexes position 0
        out.write(b"\0" * (8 * zero_tail))


def _brute_floor(keys, target):
    found = [i for i, k in enumerate(keys) if k <= target]
    return found[-1] if found else -1


def _brute_ceiling(keys, target):
    found = [i for i, k in enumerate(keys) if k >= target]
    return found[0] if found else -1


@settings(max_examples=150, deadline=None)
@given(monotonic_index())
def test_offset_index_floor_and_ceiling(tmp_path_factory, case):
    rel_offsets, zero_tail, target = case
    path = tmp_path_factory.mktemp("idx") / f"{BASE:020d}.index"
    _write_offset_index(path, rel_offsets, zero_tail)
    # a preallocated zero tail is trimmed first, as the broker's recovery does
    index = OffsetIndex(path).trim_to_valid()
    stored = [(r, (i + 1) * 100) for i, r in enumerate(rel_offsets)]
    expected_entries = len(rel_offsets)
    assert index.entries == expected_entries
    keys = [BASE + r for r, _ in stored[:expected_entries]]
    absolute_target = BASE + target
    assert index.largest_lower_bound_slot(absolute_target) == _brute_floor(keys, absolute_target)
    assert index.ceiling_slot(absolute_target) == _brute_ceiling(keys, absolute_target)
    positions = [p for _, p in stored[:expected_entries]]
    floor = _brute_floor(keys, absolute_target)
    assert index.lookup_position(absolute_target) == (0 if floor == -1 else positions[floor])
    assert index.ceiling_slot(target * 7, by_value=True) == _brute_ceiling(positions, target * 7)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=2000), st.integers(0, 10**6))
def test_time_index_floor(tmp_path_factory, gaps, target_delta):
    path = tmp_path_factory.mktemp("tidx") / f"{BASE:020d}.timeindex"
    timestamps, ts = [], 1_700_000_000_000
    with open(path, "wb") as out:
        for i, gap in enumerate(gaps):
            ts += gap
            timestamps.append(ts)
            out.write(struct.pack(">qi", ts, i + 1))
    index = TimeIndex(path)
    target = 1_700_000_000_000 + target_delta
    slot = index.largest_lower_bound_slot(target)
    assert slot == _brute_floor(timestamps, target)
    expected = (-1, BASE) if slot == -1 else (timestamps[slot], BASE + slot + 1)
    got = index.lookup(target)
    assert (got.timestamp, got.offset) == expected
