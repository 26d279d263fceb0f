"""Derive fast decoders from construct schemas.

The construct ``Struct`` in each format module is the single declaration of a
layout.  For fixed-size layouts built from integer fields this module generates
one ``struct.Struct`` that unpacks every field in a single call (in the spirit
of dissect.cstruct's compiler), plus a numpy dtype for array views over
memory-mapped files.  ``tests/test_fastdecode.py`` checks that the derived
decoders and construct agree on the corpus.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import construct as cs
import numpy as np

_INT_CODES = {
    (1, False): "B", (1, True): "b",
    (2, False): "H", (2, True): "h",
    (4, False): "I", (4, True): "i",
    (8, False): "Q", (8, True): "q",
}


def _field_code(subcon: cs.Construct) -> tuple[str, str]:
    """Return (struct code, byte order char) for one fixed-size integer field."""
    sub = subcon
    while isinstance(sub, (cs.Renamed, cs.Const)) or type(sub).__name__ == "Transformed":
        sub = sub.subcon
    if isinstance(sub, cs.FormatField):
        order, code = sub.fmtstr[0], sub.fmtstr[1:]
        # construct uses "l"/"L" for 4 bytes; normalise by size so numpy agrees.
        return _INT_CODES[(sub.length, code.islower())], order
    if isinstance(sub, cs.BytesInteger):
        raise TypeError("BytesInteger fields have no struct code")
    if isinstance(sub, cs.Bytes) and isinstance(sub.length, int):
        return f"{sub.length}s", ""
    raise TypeError(f"field {subcon!r} is not a fixed-size integer or bytes field")


@dataclass(frozen=True)
class FixedLayout:
    """A fixed-size construct Struct compiled to a struct.Struct."""

    schema: cs.Struct
    names: tuple[str, ...]
    packer: struct.Struct

    @property
    def size(self) -> int:
        return self.packer.size

    def unpack_from(self, buffer, offset: int = 0) -> tuple:
        return self.packer.unpack_from(buffer, offset)

    def as_dict(self, buffer, offset: int = 0) -> dict:
        return dict(zip(self.names, self.packer.unpack_from(buffer, offset)))

    def numpy_dtype(self) -> np.dtype:
        """A structured dtype with the same layout, for views over index files."""
        order = "<" if self.packer.format.startswith("<") else ">"
        fields = []
        for name, sub in zip(self.names, _fields(self.schema)):
            code, _ = _field_code(sub)
            fields.append((name, order + ("S" + code[:-1] if code.endswith("s") else code)))
        return np.dtype(fields)


def _fields(schema: cs.Struct):
    return [sub for sub in schema.subcons if sub.name is not None]


def compile_fixed(schema: cs.Struct) -> FixedLayout:
    """Turn a Struct of fixed-size integer/bytes fields into one struct format."""
    codes = []
    orders = set()
    names = []
    for sub in schema.subcons:
        if sub.name is None:
            raise TypeError("anonymous fields are not supported in fixed layouts")
        code, order = _field_code(sub)
        codes.append(code)
        if order:
            orders.add(order)
        names.append(sub.name)
    if len(orders) > 1:
        raise TypeError("mixed byte order in one layout")
    order = orders.pop() if orders else ">"
    packer = struct.Struct(order + "".join(codes))
    if packer.size != schema.sizeof():
        raise TypeError("derived struct size differs from the schema size")
    return FixedLayout(schema, tuple(names), packer)
