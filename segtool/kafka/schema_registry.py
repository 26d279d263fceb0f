"""The schema-registry wire format (Confluent's): a key or value framed by its schema's id.

A serializer that uses a schema registry (Avro, JSON Schema, Protobuf) writes one magic
byte 0, the schema id as a big-endian int32, then the serialized payload.  Nothing in
the record says the framing is there, so it is recognised by its shape: at least the
5 header bytes, magic 0 and a positive id (the registry numbers schemas from 1).  Other
bytes can have that shape too (a ``__consumer_offsets`` value of version 0 or 1 starts
with a 0 byte), so the framing is shown beside the bytes, never instead of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as cs

from segtool.formats.fastdecode import compile_fixed

WIRE_HEADER = cs.Struct(
    "magic" / cs.Int8ub,
    "schema_id" / cs.Int32sb,
)
WIRE_HEADER_LAYOUT = compile_fixed(WIRE_HEADER)
WIRE_MAGIC = 0


@dataclass(frozen=True, slots=True)
class Framed:
    """A key or value in the wire format: the registry's schema id and the serialized payload."""

    schema_id: int
    payload: bytes


def unframe(data: bytes | None) -> Framed | None:
    """The schema id and payload of ``data`` when it has the wire format's shape, else None."""
    if data is None or len(data) < WIRE_HEADER_LAYOUT.size:
        return None
    magic, schema_id = WIRE_HEADER_LAYOUT.unpack_from(data)
    if magic != WIRE_MAGIC or schema_id <= 0:
        return None
    return Framed(schema_id, bytes(data[WIRE_HEADER_LAYOUT.size:]))

