"""A small writer of Kafka messages from segtool's declarations, as Kafka's generated
``write()`` lays them out (used to build records no real broker file in the corpus holds),
and sample values for every field of a version."""

from __future__ import annotations

import base64
import struct

from segtool.kafka.messages import Array, Field, Message, Struct, Versions

_FIXED = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "uint32": ">I",
          "float64": ">d", "bool": ">?"}
_SAMPLES = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6, "float64": 1.5,
            "bool": True, "string": "s", "bytes": b"\x01\x02", "uuid": base64.urlsafe_b64encode(bytes(range(16)))
            .rstrip(b"=").decode()}


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _has(versions: Versions, version: int) -> bool:
    return versions.lo <= version <= versions.hi


def _length(size: int | None, flexible: bool, classic: str) -> bytes:
    if flexible:
        return uvarint(0 if size is None else size + 1)
    return struct.pack(classic, -1 if size is None else size)


def _value(field: Field, type_, value, version: int, flexible: bool) -> bytes:
    if isinstance(type_, str):
        if type_ in _FIXED:
            return struct.pack(_FIXED[type_], value)
        if type_ == "uuid":
            return base64.urlsafe_b64decode(value + "==")
        raw = None if value is None else (value.encode() if type_ == "string" else value)
        return _length(None if raw is None else len(raw), flexible, ">h" if type_ == "string" else ">i") + (raw or b"")
    if isinstance(type_, Array):
        if value is None:
            return _length(None, flexible, ">i")
        return _length(len(value), flexible, ">i") + b"".join(
            write_struct(type_.element.fields, version, flexible, item) if isinstance(type_.element, Struct)
            else _value(field, type_.element, item, version, flexible) for item in value)
    marker = b""
    if _has(field.nullable, version):  # a nullable struct field (not an array's element)
        marker = (uvarint(1) if _has(field.tagged, version) else b"\x01")
    return marker + write_struct(type_.fields, version, flexible, value)


def write_struct(fields, version: int, flexible: bool, data: dict) -> bytes:
    out, tagged = b"", []
    for field in fields:
        if not _has(field.versions, version):
            continue
        if _has(field.tagged, version):
            if field.name in data:
                tagged.append((field.tag, _value(field, field.type, data[field.name], version, flexible)))
            continue
        out += _value(field, field.type, data[field.name], version, flexible)
    if flexible:
        out += uvarint(len(tagged)) + b"".join(uvarint(tag) + uvarint(len(raw)) + raw for tag, raw in sorted(tagged))
    return out


def write_message(message: Message, version: int, data: dict) -> bytes:
    return write_struct(message.fields, version, _has(message.flexible, version), data)


def _sample(type_, version: int):
    if isinstance(type_, Array):
        return [_sample(type_.element, version)]
    if isinstance(type_, Struct):
        return sample_data(type_.fields, version)
    return _SAMPLES[type_]


def sample_data(fields, version: int) -> dict:
    """A value for every field the version has, tagged ones included (non-default, so the
    JSON converter writes them): what the reader must give back."""
    return {field.name: _sample(field.type, version) for field in fields if _has(field.versions, version)}


def versions_of(message: Message) -> range:
    return range(message.valid.lo, message.valid.hi + 1)
