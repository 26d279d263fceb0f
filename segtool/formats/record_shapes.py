"""Output record shapes declared once: a table of ``Field``s per record kind.

Each broker package declares its record kinds' tables (``kafka/record_shape.py``: batch and
record items; ``rocketmq/message_shape.py``: the CommitLog message) and everything that prints or
stores such a record is derived from its table: the JSON names and their order, the items'
TypedDicts and so docs/schemas (``ops/output_schema.py``), the JSON text of a column run
(``ops/render.py``: each field's ``"name": `` piece, made once at import), the Parquet types
(``arrow_schema``) and which decoded value a row takes (``Field.source``).  A field is added
by one line in its table (and, for column runs, how its column is printed).
"""

from __future__ import annotations

import json
from typing import NamedTuple, NotRequired


class Field(NamedTuple):
    name: str  # its name in JSON output (snake_case) and, unless ``column`` says otherwise, in Parquet
    source: str  # where the decoded value holds it: the decoder's dict key or the object's attribute
    json: object  # its JSON type, as a Python annotation (``int``, ``str | None``, or a name output_schema defines)
    arrow: str | None  # its Parquet type (a key of ``ARROW_TYPES``); None: never a Parquet column
    doc: str
    required: bool = True  # in every item of its kind (NotRequired otherwise: a v2 batch's, a compressed body's)
    column: str | None = None  # its name in the scan and salvage datasets, where it differs from ``name``

    @property
    def column_name(self) -> str:
        return self.column or self.name


def by_name(fields: tuple[Field, ...]) -> dict[str, Field]:
    return {field.name: field for field in fields}


def json_key(name: str, first: bool = False) -> str:
    """The text before a field's value in a JSON Lines item: ``, "name": `` (``{"name": `` first)."""
    return ("{" if first else ", ") + json.dumps(name) + ": "


def annotations(fields: tuple[Field, ...]) -> dict[str, object]:
    """Each field's JSON type, NotRequired where it is, for a TypedDict (``ops/output_schema.py``)."""
    return {field.name: field.json if field.required else NotRequired[field.json] for field in fields}


# the Parquet types a field may have, by name (pyarrow is imported only where Parquet is written)
ARROW_TYPES = ("int8", "int16", "int32", "int64", "bool_", "string", "binary", "string_map", "headers")


def arrow_type(name: str):
    import pyarrow as pa

    if name == "string_map":
        return pa.map_(pa.string(), pa.string())
    if name == "headers":  # a Kafka record's headers in order
        return pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
    return getattr(pa, name)()


def arrow_fields(fields: tuple[Field, ...], names: tuple[str, ...], by_column: bool = False) -> list[tuple]:
    """(name, pyarrow type) of the named fields, in the order given (each Parquet file keeps its
    own column order); ``by_column``: the names are the datasets' ``Field.column_name``s."""
    table = {(field.column_name if by_column else field.name): field for field in fields}
    return [(name, arrow_type(table[name].arrow)) for name in names]
