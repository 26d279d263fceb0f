"""The one way a range of offsets, bytes or entries is written in text: ``offsets 500..524``.

A range whose end lies before its start holds nothing and is said in words (``no offsets``), so no
output ever prints ``500..499``; a side not known is ``?``.
"""

from __future__ import annotations

EMPTY = "none"


def bounds(first: int | None, last: int | None) -> str:
    """``first..last`` (in a list of ranges); ``none`` for an empty range."""
    if first is not None and last is not None and last < first:
        return EMPTY
    return f"{'?' if first is None else first}..{'?' if last is None else last}"


def span(first: int | None, last: int | None, noun: str = "offsets") -> str:
    """``<noun> first..last``; ``no <noun>`` for an empty range."""
    text = bounds(first, last)
    return f"no {noun}" if text == EMPTY else f"{noun} {text}"
