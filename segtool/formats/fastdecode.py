"""Derive fast decoders from construct schemas.

The construct ``Struct`` in each format module is the single declaration of a
layout.  For fixed-size layouts built from integer fields, ``compile_fixed``
generates one ``struct.Struct`` that unpacks every field in a single call (in
the spirit of dissect.cstruct's compiler), plus a numpy dtype for array views
over memory-mapped files.

The hot Kafka paths (lookups, scans) load their compiled layouts from
``_compiled_layouts.py``, a table this module generates from the schemas
(``python -m segtool.formats.fastdecode``), so a short-lived command does not
pay for importing construct.  ``tests/test_fastdecode.py`` requires the table
to equal a fresh compilation of every registered schema, and the corpus tests
require both decoders to agree.
"""

from __future__ import annotations

import importlib
import struct
from dataclasses import dataclass, field

_INT_CODES = {
    (1, False): "B", (1, True): "b",
    (2, False): "H", (2, True): "h",
    (4, False): "I", (4, True): "i",
    (8, False): "Q", (8, True): "q",
}

# Schemas whose compiled form is kept in the generated table: name -> (module, attribute),
# or (module, attribute, field) for one field of a Struct that is not fixed as a whole
# (see ``compile_field``).
TABLE_SCHEMAS = {
    "LOG_ENTRY_HEADER": ("segtool.kafka.schemas", "LOG_ENTRY_HEADER"),
    "BATCH_HEADER_V2": ("segtool.kafka.schemas", "BATCH_HEADER_V2"),
    "LEGACY_HEADER_V0": ("segtool.kafka.schemas", "LEGACY_HEADER_V0"),
    "LEGACY_HEADER_V1": ("segtool.kafka.schemas", "LEGACY_HEADER_V1"),
    "CONTROL_KEY": ("segtool.kafka.schemas", "CONTROL_KEY"),
    "END_TXN_MARKER": ("segtool.kafka.schemas", "END_TXN_MARKER"),
    "OFFSET_INDEX_ENTRY": ("segtool.kafka.schemas", "OFFSET_INDEX_ENTRY"),
    "TIME_INDEX_ENTRY": ("segtool.kafka.schemas", "TIME_INDEX_ENTRY"),
    "TXN_INDEX_ENTRY": ("segtool.kafka.schemas", "TXN_INDEX_ENTRY"),
    # a legacy message's key and value lengths (declared alike; the reader uses one layout for both)
    "LEGACY_BYTES_LENGTH": ("segtool.kafka.schemas", "LEGACY_MESSAGE_V0", "key"),
    "XERIAL_HEADER": ("segtool.formats.compression", "XERIAL_HEADER"),
    "XERIAL_CHUNK_HEADER": ("segtool.formats.compression", "XERIAL_CHUNK_HEADER"),
    "SKIPPABLE_FRAME_HEADER": ("segtool.formats.compression", "SKIPPABLE_FRAME_HEADER"),
    "LZ4_CONTENT_SIZE": ("segtool.formats.compression", "LZ4_FRAME_HEADER", "content_size"),
    "LZ4_DICT_ID": ("segtool.formats.compression", "LZ4_FRAME_HEADER", "dict_id"),
    "LZ4_BLOCK_HEADER": ("segtool.formats.compression", "LZ4_BLOCK_HEADER"),
    "LZ4_CHECKSUM": ("segtool.formats.compression", "LZ4_CHECKSUM"),
    "XXH32_STRIPE": ("segtool.formats.compression", "XXH32_STRIPE"),
}


def _field_code(subcon) -> tuple[str, str]:
    """Return (struct code, byte order char) for one fixed-size integer field."""
    import construct as cs

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


def _split_codes(fmt: str) -> list[str]:
    """'>qi16sB' -> ['q', 'i', '16s', 'B']."""
    codes, digits = [], ""
    for ch in fmt[1:]:
        if ch.isdigit():
            digits += ch
        else:
            codes.append(digits + ch)
            digits = ""
    return codes


@dataclass(frozen=True)
class FixedLayout:
    """A fixed-size layout compiled to a struct.Struct (``schema`` is None when loaded from the table)."""

    names: tuple[str, ...]
    packer: struct.Struct
    schema: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        # the packer's own methods and size, bound once: hot loops use them per entry (writers too)
        object.__setattr__(self, "unpack_from", self.packer.unpack_from)
        object.__setattr__(self, "pack", self.packer.pack)
        object.__setattr__(self, "pack_into", self.packer.pack_into)
        object.__setattr__(self, "size", self.packer.size)

    def as_dict(self, buffer, offset: int = 0) -> dict:
        return dict(zip(self.names, self.packer.unpack_from(buffer, offset)))

    def field_offset(self, name: str) -> int:
        """Byte offset of a field inside the layout."""
        order = self.packer.format[0]
        codes = _split_codes(self.packer.format)
        index = self.names.index(name)
        return struct.calcsize(order + "".join(codes[:index]))

    def field(self, name: str) -> "FixedLayout":
        """A layout of one field alone (its code and byte order), for loops that read just that
        field: unpack it at ``field_offset(name)`` past the start of the whole layout."""
        code = _split_codes(self.packer.format)[self.names.index(name)]
        return FixedLayout((name,), struct.Struct(self.packer.format[0] + code))

    def numpy_dtype(self):
        """A structured dtype with the same layout, for views over index files."""
        import numpy as np

        order = self.packer.format[0]
        fields = [(name, order + ("S" + code[:-1] if code.endswith("s") else code))
                  for name, code in zip(self.names, _split_codes(self.packer.format))]
        return np.dtype(fields)


def compile_fixed(schema) -> FixedLayout:
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
    return FixedLayout(tuple(names), packer, schema)


def compile_field(schema, name: str, branch: bool = True) -> FixedLayout:
    """One field of a Struct whose layout is not fixed as a whole, as a one-field layout.

    A conditional field compiles to its ``branch`` (then / else) subcon; a
    length-prefixed field (one with a ``lengthfield``) to its length prefix,
    named ``<name>_length``.
    """
    import construct as cs

    sub = next(s.subcon for s in schema.subcons if s.name == name)
    if isinstance(sub, cs.IfThenElse):
        sub = sub.thensubcon if branch else sub.elsesubcon
    if hasattr(sub, "lengthfield"):
        name, sub = f"{name}_length", sub.lengthfield
    return compile_fixed(cs.Struct(name / sub))


def compiled(name: str) -> FixedLayout:
    """The compiled layout of a registered schema, from the generated table."""
    from segtool.formats._compiled_layouts import LAYOUTS

    if name not in LAYOUTS:
        # registered after the table was generated: compile it here, or the generator, which
        # imports the modules that load their layouts from the table, could not add it
        return _compile_registered(name)
    fmt, names = LAYOUTS[name]
    return FixedLayout(tuple(names), struct.Struct(fmt))


def _compile_registered(name: str) -> FixedLayout:
    module, attribute, *field_name = TABLE_SCHEMAS[name]
    schema = getattr(importlib.import_module(module), attribute)
    return compile_field(schema, *field_name) if field_name else compile_fixed(schema)


def compile_table() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Compile every registered schema afresh (what the generated table must hold)."""
    table = {}
    for name in TABLE_SCHEMAS:
        layout = _compile_registered(name)
        table[name] = (layout.packer.format, layout.names)
    return table


def render_table(table: dict) -> str:
    lines = [
        '"""Generated by `python -m segtool.formats.fastdecode` from the construct schemas; do not edit.',
        "",
        "Each entry: schema name -> (struct format, field names).  tests/test_fastdecode.py",
        'checks this table against a fresh compilation of the schemas."""',
        "",
        "LAYOUTS = {",
    ]
    for name, (fmt, names) in table.items():
        lines.append(f"    {name!r}: ({fmt!r}, {tuple(names)!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import pathlib

    target = pathlib.Path(__file__).with_name("_compiled_layouts.py")
    target.write_text(render_table(compile_table()))
    print(f"wrote {target}")
