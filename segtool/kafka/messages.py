"""Kafka's message-spec declarations and the reader compiled from them.

Kafka declares every record it stores (``common/message/*.json``, ``common/metadata/*.json``)
as a message spec: fields with the versions that have them, nullable and flexible
versions, tagged fields.  Its generator turns each spec into a Java class with
``read()`` and a JSON converter.  Here the same specs are written with ``F``/``S``/``M``
(one declaration per message, in the module of its topic), and :func:`compile_message`
turns a declaration into a construct parser that follows the generated ``read()``: its
version checks (``VersionConditional``), compact (varint) lengths in flexible versions,
tagged-field sections, nested struct version checks ("Can't read version N of
MemberMetadata"), and the same ``RuntimeException`` messages (a string or byte array
longer than what is left is ``Error reading byte array of N byte(s): only M byte(s)
available``; a short fixed-size read is a BufferUnderflowException, whose message prints
as ``null``).  Parsed structs are dicts in JSON-converter field order (fields outside the
version are left out, tagged fields appear only when they differ from their default), so
writing them out is direct.  A version newer than the spec's range is read with the
newest layout, as Kafka's generated code does.

JSON is written like Jackson's ``ObjectNode.toString()``: compact; strings escape
``"``, ``\\``, ``\\b \\t \\n \\f \\r`` and other control characters as ``\\u00XX``
(upper-case hex); ``/`` and non-ASCII characters are written as they are; bytes are
standard base64 with padding; UUIDs are Kafka's 22-character URL-safe base64; doubles
as Java's ``Double.toString``.  Strings are decoded from UTF-8 the way Java 17's
``new String(bytes, UTF_8)`` does, which differs from Python's ``errors="replace"`` for
some malformed input (an encoded surrogate ``ED A0 80`` is one U+FFFD in Java, three in
Python).

:func:`snake_case_data` gives the same dicts to segtool's own JSON: field names in
snake_case, bytes as base64.
"""

from __future__ import annotations

import base64
import decimal
import io
import math
import re
from dataclasses import dataclass
from typing import Callable

import construct as cs

from segtool.errors import CorruptData
from segtool.formats.json_names import snake_case


MAX_VERSION = 0x7FFF


# --------------------------------------------------------------------------
# Java-side failures, carried with the message Java's exception would have
# --------------------------------------------------------------------------


class JavaFailure(Exception):
    """A RuntimeException in Kafka's reader; ``message`` None prints as ``null``."""

    def __init__(self, message: str | None):
        super().__init__(message)
        self.message = message

    @property
    def text(self) -> str:
        return "null" if self.message is None else self.message



def _i32(x: int) -> int:
    """Wrap to a Java int."""
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


# --------------------------------------------------------------------------
# Versions and the generator's VersionConditional
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Versions:
    """A contiguous version range as in Kafka's message generator (``none`` = 0..-1)."""

    lo: int
    hi: int

    @staticmethod
    def parse(spec: str) -> "Versions":
        spec = spec.strip()
        if spec == "none":
            return NONE
        if spec.endswith("+"):
            return Versions(int(spec[:-1]), MAX_VERSION)
        if "-" in spec:
            lo, hi = spec.split("-")
            return Versions(int(lo), int(hi))
        return Versions(int(spec), int(spec))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def intersect(self, other: "Versions") -> "Versions":
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return NONE if lo > hi else Versions(lo, hi)

    def subtract(self, other: "Versions") -> "Versions":
        if other.lo <= self.lo:
            if other.hi >= self.hi:
                return NONE
            if other.hi < self.lo:
                return self
            return Versions(other.hi + 1, self.hi)
        if other.hi >= self.hi:
            new_hi = other.lo - 1
            if new_hi < 0:
                return NONE
            return Versions(self.lo, new_hi) if new_hi < self.hi else self
        raise ValueError(f"{self} minus {other} is not contiguous")


NONE = Versions(0, -1)

_Cond = Callable[[int], bool]


def _always(_v: int) -> bool:
    return True


def _never(_v: int) -> bool:
    return False


def version_condition(containing: Versions, possible: Versions) -> _Cond:
    """The ``if`` the generator emits for "version in ``containing``" when the
    code can only run for ``possible`` versions (VersionConditional.generate)."""
    lo, hi = containing.lo, containing.hi
    if possible.lo < lo:
        if possible.hi > hi:
            return lambda v: lo <= v <= hi
        return lambda v: v >= lo
    if possible.hi >= lo and possible.lo <= hi:
        if possible.hi > hi:
            return lambda v: v <= hi
        return _always
    return _never


# --------------------------------------------------------------------------
# Schema declarations (the shape of Kafka's common/message/*.json)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Array:
    element: object  # a primitive type name or a Struct


@dataclass(frozen=True)
class Struct:
    name: str  # the generated Java class name (used in "Can't read version" errors)
    versions: Versions
    fields: tuple


@dataclass(frozen=True)
class Field:
    name: str  # camelCase, as the JSON converter and error messages spell it
    type: object  # a primitive type name ("int8" ... "float64", "uuid", "string", "bytes"), Array or Struct
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: object = None  # what a tagged field equals when the converter leaves it out
    zero_copy: bool = False


@dataclass(frozen=True)
class Message:
    name: str
    valid: Versions
    flexible: Versions
    fields: tuple


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Uuid.toString prints it
_TYPE_DEFAULTS = {"bool": False, "float64": 0.0, "uuid": ZERO_UUID, "string": "", "bytes": b""}
_SPEC_DEFAULT = object()  # no "default" in the spec: the type's own (FieldSpec.defaultString)


def _type_default(type_) -> object:
    if isinstance(type_, Array):
        return []
    if isinstance(type_, Struct):
        return None
    return _TYPE_DEFAULTS.get(type_, 0)


def F(name, type_, versions="0+", *, nullable="none", tagged="none", tag=None, default=_SPEC_DEFAULT,
      zero_copy=False) -> Field:
    if default is _SPEC_DEFAULT:
        default = _type_default(type_)
    return Field(name, type_, Versions.parse(versions), Versions.parse(nullable),
                 Versions.parse(tagged), tag, default, zero_copy)


def S(name, versions, *fields) -> Struct:
    return Struct(name, Versions.parse(versions), tuple(fields))


def M(name, valid, flexible, *fields) -> Message:
    return Message(name, Versions.parse(valid), Versions.parse(flexible), tuple(fields))


# --------------------------------------------------------------------------
# construct building blocks that read like Kafka's ByteBufferAccessor
# --------------------------------------------------------------------------

_ABSENT = object()  # a field the current version does not have


def _version(context) -> int:
    return context._params.version


def _remaining(stream, context) -> int:
    return context._params.limit - stream.tell()


def _take(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise JavaFailure(None)  # java.nio.BufferUnderflowException
    return data


class _Java(cs.Subconstruct):
    """A fixed-size ``ByteBuffer.getX``: a short read is a BufferUnderflowException."""

    def _parse(self, stream, context, path):
        try:
            return self.subcon._parsereport(stream, context, path)
        except cs.StreamError:
            raise JavaFailure(None) from None


INT8 = _Java(cs.Int8sb)
INT16 = _Java(cs.Int16sb)
INT32 = _Java(cs.Int32sb)
INT64 = _Java(cs.Int64sb)
_PRIMITIVES = {"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64,
               "bool": _Java(cs.Flag),  # readByte() != 0
               "uint16": _Java(cs.Int16ub), "uint32": _Java(cs.Int32ub), "float64": _Java(cs.Float64b)}


def read_uvarint(stream) -> int:
    """ByteUtils.readUnsignedVarint: at most 5 bytes, result wrapped to a Java int."""
    value = 0
    for i in range(5):
        b = _take(stream, 1)[0]
        if i == 4:
            value = _i32(value | (b << 28))
            if b & 0x80:
                raise JavaFailure(
                    "Varint is too long, the most significant bit in the 5th byte is set, "
                    f"converted value: {value & 0xFFFFFFFF:x}")
            return value
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value
    raise AssertionError("unreachable")


class _Uuid(cs.Construct):
    """``readUuid``: two int64; printed as Uuid.toString (URL-safe base64, no padding)."""

    def _parse(self, stream, context, path):
        return base64.urlsafe_b64encode(_take(stream, 16)).rstrip(b"=").decode("ascii")


UUID = _Uuid()
_PRIMITIVES["uuid"] = UUID


def _read_length(stream, context, flexible: _Cond, classic: cs.Construct) -> int:
    if flexible(_version(context)):
        return _i32(read_uvarint(stream) - 1)
    return classic._parsereport(stream, context, "")


def _read_array(stream, context, size: int) -> bytes:
    """ByteBufferAccessor.readArray (also behind Readable.readString and
    readUnknownTaggedField): refuses a size beyond the remaining bytes."""
    remaining = _remaining(stream, context)
    if size > remaining:
        raise JavaFailure(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
    if size < 0:
        raise JavaFailure(str(size))  # new byte[size]: NegativeArraySizeException
    return stream.read(size)


class _String(cs.Construct):
    def __init__(self, name: str, flexible: _Cond, nullable: _Cond):
        super().__init__()
        self.fname, self.flexible, self.nullable = name, flexible, nullable

    def _parse(self, stream, context, path):
        length = _read_length(stream, context, self.flexible, INT16)
        if length < 0:
            if self.nullable(_version(context)):
                return None
            raise JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        if length > 0x7FFF:
            raise JavaFailure(f"string field {self.fname} had invalid length {length}")
        return java_utf8(_read_array(stream, context, length))


class _Bytes(cs.Construct):
    def __init__(self, name: str, flexible: _Cond, nullable: _Cond, zero_copy: bool):
        super().__init__()
        self.fname, self.flexible, self.nullable, self.zero_copy = name, flexible, nullable, zero_copy

    def _parse(self, stream, context, path):
        length = _read_length(stream, context, self.flexible, INT32)
        if length < 0:
            if self.nullable(_version(context)):
                return None
            raise JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        if self.zero_copy:  # readByteBuffer: slice().limit(length)
            remaining = _remaining(stream, context)
            if length > remaining:
                raise JavaFailure(f"newLimit > capacity: ({length} > {remaining})")
            return stream.read(length)
        return _read_array(stream, context, length)


class _Array(cs.Construct):
    def __init__(self, name: str, flexible: _Cond, nullable: _Cond, element: cs.Construct):
        super().__init__()
        self.fname, self.flexible, self.nullable, self.element = name, flexible, nullable, element

    def _parse(self, stream, context, path):
        count = _read_length(stream, context, self.flexible, INT32)
        if count < 0:
            if self.nullable(_version(context)):
                return None
            raise JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        remaining = _remaining(stream, context)
        if count > remaining:
            raise JavaFailure(f"Tried to allocate a collection of size {count}, "
                               f"but there are only {remaining} bytes remaining.")
        return [self.element._parsereport(stream, context, path) for _ in range(count)]


class _NullableStruct(cs.Subconstruct):
    """A nullable struct field: an int8 marker (or, tagged, an unsigned varint) first."""

    def __init__(self, subcon, nullable: _Cond, tagged: bool):
        super().__init__(subcon)
        self.nullable, self.tagged = nullable, tagged

    def _parse(self, stream, context, path):
        if self.nullable(_version(context)):
            if self.tagged:
                if read_uvarint(stream) <= 0:
                    return None
            elif INT8._parsereport(stream, context, path) < 0:
                return None
        return self.subcon._parsereport(stream, context, path)


class _When(cs.Subconstruct):
    """A field read only in some versions (the generator's ``if (_version >= N)``)."""

    def __init__(self, subcon, cond: _Cond):
        super().__init__(subcon)
        self.cond = cond

    def _parse(self, stream, context, path):
        if not self.cond(_version(context)):
            return _ABSENT
        return self.subcon._parsereport(stream, context, path)


class _TaggedFields(cs.Construct):
    """The tagged-field section of a struct in a flexible version."""

    def __init__(self, present: _Cond, known: dict):
        super().__init__()
        self.present, self.known = present, known

    def _parse(self, stream, context, path):
        values = {}
        version = _version(context)
        if not self.present(version):
            return values
        count = read_uvarint(stream)
        for _ in range(count):
            tag = read_uvarint(stream)
            size = read_uvarint(stream)
            if tag in self.known:
                name, valid, reader = self.known[tag]
                if not valid(version):
                    raise JavaFailure(f"Tag {tag} is not valid for version {version}")
                values[name] = reader._parsereport(stream, context, path)
            else:  # readUnknownTaggedField
                _read_array(stream, context, size)
        return values


class _KafkaStruct(cs.Subconstruct):
    """One generated class: its version check, then a construct Struct of its fields;
    the result is a dict in JSON-converter order."""

    def __init__(self, subcon, class_name: str, readable: _Cond, layout: tuple):
        super().__init__(subcon)
        self.class_name, self.readable, self.layout = class_name, readable, layout

    def _parse(self, stream, context, path):
        version = _version(context)
        if not self.readable(version):
            raise JavaFailure(f"Can't read version {version} of {self.class_name}")
        parsed = self.subcon._parsereport(stream, context, path)
        tagged = parsed["_tagged"]
        out = {}
        for name, present, is_tagged, default in self.layout:
            if not present(version):
                continue
            if is_tagged(version):
                value = tagged.get(name, default)
                if value is default or value == default:
                    continue  # the converter writes tagged fields only when non-default
            else:
                value = parsed[name]
            out[name] = value
        return out


def _compile_type(field: Field, possible: Versions, cur: Versions, flexible: Versions,
                  tagged: bool) -> cs.Construct:
    ftype = field.type
    flex = version_condition(flexible, possible)
    nullable = version_condition(field.nullable, possible)
    if isinstance(ftype, str):
        if ftype in _PRIMITIVES:
            return _PRIMITIVES[ftype]
        if ftype == "string":
            return _String(field.name, flex, nullable)
        if ftype == "bytes":
            return _Bytes(field.name, flex, nullable, field.zero_copy)
        raise ValueError(f"unsupported type {ftype}")
    if isinstance(ftype, Array):
        elem = ftype.element
        if isinstance(elem, Struct):
            element = _compile_struct(elem, cur, flexible)
        elif elem == "string":
            element = _String(field.name + " element", flex, _never)
        elif elem == "bytes":
            element = _Bytes(field.name + " element", flex, _never, False)
        else:
            element = _PRIMITIVES[elem]
        return _Array(field.name, flex, nullable, element)
    if isinstance(ftype, Struct):
        return _NullableStruct(_compile_struct(ftype, cur, flexible), nullable, tagged)
    raise ValueError(f"unsupported type {ftype!r}")


def _compile_struct(struct: Struct, parent: Versions, flexible: Versions) -> _KafkaStruct:
    readable = version_condition(parent, struct.versions)
    cur = parent.intersect(struct.versions)
    members = []
    known_tags = {}
    layout = []
    for field in struct.fields:
        mandatory = field.versions.subtract(field.tagged)
        reader = _compile_type(field, mandatory.intersect(cur), cur, flexible, tagged=False)
        members.append(field.name / _When(reader, version_condition(mandatory, cur)))
        valid_tagged = field.versions.intersect(field.tagged)
        if not valid_tagged.empty:
            cur_flexible = flexible.intersect(cur)
            tagged_possible = valid_tagged.intersect(cur_flexible)
            known_tags[field.tag] = (
                field.name,
                version_condition(valid_tagged, cur_flexible),
                _compile_type(field, tagged_possible, cur, flexible, tagged=True),
            )
        present = field.versions.intersect(cur)
        layout.append((field.name, version_condition(field.versions, cur),
                       version_condition(field.tagged, present), field.default))
    members.append("_tagged" / _TaggedFields(version_condition(flexible, cur), known_tags))
    return _KafkaStruct(cs.Struct(*members), struct.name, readable, tuple(layout))


def compile_message(message: Message) -> cs.Construct:
    """A construct parser for ``message``; parse with ``version=`` and ``limit=``
    (the length of the whole buffer, version prefix included)."""
    top = Struct(message.name, message.valid, message.fields)
    return _compile_struct(top, message.valid, message.flexible)


def read_message(parser: cs.Construct, buf: bytes, start: int, version: int) -> tuple[dict, int]:
    """The message at ``buf[start:]`` read as ``version``, and the byte where it ended;
    :class:`JavaFailure` where Kafka's generated ``read()`` throws."""
    stream = io.BytesIO(buf)
    stream.seek(start)
    message = parser.parse_stream(stream, version=version, limit=len(buf))
    return message, stream.tell()


def snake_case_data(value):
    """A parsed message for segtool's JSON: field names in snake_case (``topicId`` ->
    ``topic_id``), bytes as standard base64."""
    if isinstance(value, dict):
        return {snake_case(name): snake_case_data(item) for name, item in value.items()}
    if isinstance(value, list):
        return [snake_case_data(item) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


# --------------------------------------------------------------------------
# Coordinator topics: CoordinatorRecordSerde
# --------------------------------------------------------------------------


class CoordinatorRecordError(CorruptData):
    """A record a coordinator's serde rejects; ``message`` is Kafka's text
    (``Could not read ...``).  ``unknown_type`` is set for an unknown record type."""

    def __init__(self, message: str, unknown_type: int | None = None):
        super().__init__(message)
        self.unknown_type = unknown_type


@dataclass(frozen=True)
class CoordinatorRecordType:
    """One record type of a coordinator topic: its key and value messages, compiled."""

    name: str  # the key message's name without "Key" (OffsetCommit, TransactionLog, ShareSnapshot)
    key: Message
    value: Message
    key_parser: cs.Construct
    value_parser: cs.Construct


def coordinator_record_type(key: Message, value: Message) -> CoordinatorRecordType:
    return CoordinatorRecordType(key.name.removesuffix("Key"), key, value,
                                 compile_message(key), compile_message(value))


@dataclass(frozen=True)
class CoordinatorRecord:
    type_id: int
    type: CoordinatorRecordType
    key: dict
    value_version: int | None  # None with value None: a tombstone
    value: dict | None


def _read_version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise JavaFailure(f"Could not read version from {what}'s buffer.")
    return INT16.parse(buf[:2])


def _read_after_version(parser: cs.Construct, buf: bytes, version: int, what: str) -> dict:
    """CoordinatorRecordSerde.readMessage: the message after the 2-byte version."""
    try:
        return read_message(parser, buf, 2, version)[0]
    except JavaFailure as e:
        raise JavaFailure(f"Could not read record with version {version} from {what}'s buffer "
                          f"due to: {e.text}.") from None


def decode_coordinator_record(types: dict[int, CoordinatorRecordType], key: bytes,
                              value: bytes | None) -> CoordinatorRecord:
    """CoordinatorRecordSerde.deserialize: the key's int16 version is the record type, the
    value's int16 version the value message's version.  Raises :class:`CoordinatorRecordError`
    where Kafka's serde throws."""
    try:
        type_id = _read_version(key, "key")
        record_type = types.get(type_id)
        if record_type is None:
            raise CoordinatorRecordError(f"Unknown record type {type_id}", unknown_type=type_id)
        key_data = _read_after_version(record_type.key_parser, key, type_id, "key")
        if value is None:
            return CoordinatorRecord(type_id, record_type, key_data, None, None)
        value_version = _read_version(value, "value")
        value_data = _read_after_version(record_type.value_parser, value, value_version, "value")
    except JavaFailure as e:
        raise CoordinatorRecordError(e.text) from None
    return CoordinatorRecord(type_id, record_type, key_data, value_version, value_data)


# --------------------------------------------------------------------------
# Framed messages: AbstractApiMessageSerde (KRaft metadata, remote log metadata)
# --------------------------------------------------------------------------

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION


class ApiMessageError(CorruptData):
    """A value AbstractApiMessageSerde.read rejects; ``message`` is the exception's message.
    ``unknown_type`` is set for a record type the serde does not know."""

    def __init__(self, message: str, unknown_type: int | None = None):
        super().__init__(message)
        self.unknown_type = unknown_type


def _unsigned_short(stream, entity: str) -> int:
    """AbstractApiMessageSerde.unsignedIntToShort."""
    try:
        value = read_uvarint(stream)
    except JavaFailure:
        raise ApiMessageError(f"Error while reading {entity}") from None
    if value > 0x7FFF:
        raise ApiMessageError(f"Value for {entity} was too large.")
    return value


def read_api_message(value: bytes | None, parsers: dict[int, cs.Construct]) -> tuple[int, int, dict]:
    """AbstractApiMessageSerde.read: unsigned varints frame version (1), record type
    (``parsers``' keys) and record version, then the message and nothing after it.
    Returns ``(record type, version, message)``; :class:`ApiMessageError` with Kafka's
    message where it throws."""
    if value is None:  # the NullPointerException is caught around the first varint
        raise ApiMessageError("Error while reading frame version")
    value = bytes(value)
    stream = io.BytesIO(value)
    frame = _unsigned_short(stream, "frame version")
    if frame == 0:
        raise ApiMessageError("Could not deserialize metadata record with frame version 0. Note that "
                              "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                              "not supported.")
    if frame != FRAME_VERSION:
        raise ApiMessageError(f"Could not deserialize metadata record due to unknown frame version "
                              f"{frame}(only frame version {FRAME_VERSION} is supported)")
    type_id = _unsigned_short(stream, "type")
    version = _unsigned_short(stream, "version")
    if type_id not in parsers:  # MetadataRecordType.fromId, wrapped as the exception's cause
        raise ApiMessageError("org.apache.kafka.common.errors.UnsupportedVersionException: "
                              f"Unknown metadata id {type_id}", unknown_type=type_id)
    try:
        data, end = read_message(parsers[type_id], value, stream.tell(), version)
    except JavaFailure:
        raise ApiMessageError(f"Failed to deserialize record with type {type_id}") from None
    if end < len(value):
        raise ApiMessageError(f"Found {len(value) - end} byte(s) of garbage after {type_id}")
    return type_id, version, data


# --------------------------------------------------------------------------
# Jackson-compatible JSON and Java-compatible UTF-8
# --------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
for _c in range(0x20):
    _ESCAPES.setdefault(chr(_c), f"\\u{_c:04X}")
_ESCAPE_RE = re.compile('["\\\\\x00-\x1f]')


def _json_string(s: str) -> str:
    return '"' + _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], s) + '"'


def jackson_json(obj) -> str:
    """Compact JSON as Jackson's ``JsonNode.toString()`` writes it."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, str):
        return _json_string(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(obj)).decode("ascii") + '"'
    if isinstance(obj, dict):
        return "{" + ",".join(f"{_json_string(k)}:{jackson_json(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(jackson_json(v) for v in obj) + "]"
    if isinstance(obj, float):
        return java_double(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


_REPL = "\ufffd"


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def java_utf8(data: bytes) -> str:
    """``new String(data, UTF_8)`` of Java 17 (String.decodeUTF8_UTF16 with replacement)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out = []
    sp, sl = 0, len(data)
    while sp < sl:
        b1 = data[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if sp < sl:
                b2 = data[sp]
                if _cont(b2):
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    sp += 1
                else:
                    out.append(_REPL)
                continue
            out.append(_REPL)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if sp + 1 < sl:
                b2, b3 = data[sp], data[sp + 1]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    out.append(_REPL)
                    # malformed3: skip just b1, or b1 and b2
                    sp += 1 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 2
                    sp -= 1
                else:
                    sp += 2
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(_REPL if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and ((b1 == 0xE0 and (data[sp] & 0xE0) == 0x80) or not _cont(data[sp])):
                out.append(_REPL)
                continue
            out.append(_REPL)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if sp + 2 < sl:
                b2, b3, b4 = data[sp], data[sp + 1], data[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(_REPL)
                    # malformed4: skip 1, 2 or 3 bytes
                    if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)):
                        skip = 1
                    elif not _cont(b3):
                        skip = 2
                    else:
                        skip = 3
                    sp += skip - 1
                else:
                    sp += 3
                    out.append(chr(uc))
                continue
            if b1 > 0xF4 or (sp < sl and (
                    (b1 == 0xF0 and not 0x90 <= data[sp] <= 0xBF)
                    or (b1 == 0xF4 and (data[sp] & 0xF0) != 0x80) or not _cont(data[sp]))):
                out.append(_REPL)
                continue
            sp += 1
            out.append(_REPL)
            if sp < sl and not _cont(data[sp]):
                continue
            break
        else:
            out.append(_REPL)
    return "".join(out)


def java_double(value: float) -> str:
    """``Double.toString``: plain decimals from 10^-3 up to 10^7, else ``d.dddE<exp>``
    (the shortest digits that read back to the same double)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"
