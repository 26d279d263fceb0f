"""Kafka's index search, shared by offset and time indexes.

Mirrors ``AbstractIndex.indexSlotRangeFor``: the last 8,192 bytes of an index
(the "warm" section, where recent lookups land) are searched first, then the
cold part.  The search runs over all ``entries`` the broker would see, a
preallocated zero tail included, so answers match the broker's even on files
whose tail breaks monotonicity.
"""

from __future__ import annotations

WARM_SECTION_BYTES = 8192


def slot_range(keys, entries: int, target: int, entry_size: int) -> tuple[int, int]:
    """(largest slot with key <= target, smallest slot with key >= target); -1 when none.

    ``keys`` is any indexable sequence of the entries' search keys (absolute
    offsets, relative offsets or timestamps, as long as ``target`` matches).
    """
    if entries == 0:
        return -1, -1
    warm_entries = WARM_SECTION_BYTES // entry_size
    first_hot = max(0, entries - 1 - warm_entries)
    if keys[first_hot] < target:
        return _binary_search(keys, entries, target, first_hot, entries - 1)
    if keys[0] > target:
        return -1, 0
    return _binary_search(keys, entries, target, 0, first_hot)


def _binary_search(keys, entries: int, target: int, lo: int, hi: int) -> tuple[int, int]:
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        found = keys[mid]
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            return mid, mid
    return lo, (-1 if lo == entries - 1 else lo + 1)


def floor_slot(keys, entries: int, target: int, entry_size: int) -> int:
    """Kafka's largestLowerBoundSlotFor: the last entry with key <= target, or -1."""
    return slot_range(keys, entries, target, entry_size)[0]


def ceiling_slot(keys, entries: int, target: int, entry_size: int) -> int:
    """Kafka's smallestUpperBoundSlotFor: the first entry with key >= target, or -1."""
    return slot_range(keys, entries, target, entry_size)[1]
