"""The one JSON writer of every output: UTF-8 text as it is (``ensure_ascii=False``), except the three
characters that end a line for readers other than JSON's.

U+0085 (NEL), U+2028 and U+2029 are valid raw inside a JSON string, but Python's ``str.splitlines``,
many line-based tools and JavaScript before ES2019 take them for line ends: a JSON Lines line that
holds one is cut in two for them.  They are written as ``\\u0085``, ``\\u2028``, ``\\u2029``; outside
strings JSON text is ASCII, so the replacement only ever meets them inside strings.
"""

from __future__ import annotations

import json

_LINE_ENDS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}

# json.dumps(value, ensure_ascii=False) builds an encoder per call; one is built here, once
_ENCODER = json.encoder.c_make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring,
                                       None, ": ", ", ", False, False, True)


def escape_line_ends(text: str) -> str:
    """JSON text with U+0085, U+2028 and U+2029 escaped (an ASCII text is returned as it is, at once)."""
    return text if text.isascii() else text.translate(_LINE_ENDS)


def escaped_lines(lines: list[str]) -> list[str]:
    """JSON Lines made elsewhere (a dump's column-at-a-time runs), escaped as ``to_json`` escapes."""
    return [line if line.isascii() else line.translate(_LINE_ENDS) for line in lines]


def to_json(value, default=None, indent: int | None = None) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with the line ends escaped; ``default`` turns
    values JSON has no type for into ones it has (a Finding into its dict)."""
    if default is None and indent is None:
        return escape_line_ends("".join(_ENCODER(value, 0)))
    return escape_line_ends(json.dumps(value, ensure_ascii=False, default=default, indent=indent))
