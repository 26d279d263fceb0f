"""Records of Kafka's ``__consumer_offsets`` topic, printed as ``kafka-dump-log.sh --offsets-decoder`` does.

Apache Kafka 3.9's DumpLogSegments ``OffsetsMessageParser`` hands each record to the
group coordinator's record serde and prints the result through the JSON converters
generated from the message schemas:

* record key   = int16 record type, then the key message read *with the record type
  as its version* (0/1 OffsetCommitKey, 2 GroupMetadataKey, 3..8 the KIP-848
  ConsumerGroup* keys).  Printed as ``{"type":"<type>","data":{...}}``.
* record value = int16 value version, then the value message of that type read
  with that version.  Printed as ``{"version":"<version>","data":{...}}``;
  a null value (tombstone) prints ``<DELETE>``.
* In a GroupMetadataValue whose ``protocolType`` is ``"consumer"``, each member's
  ``subscription`` / ``assignment`` bytes are re-read as a version-prefixed
  ConsumerProtocolSubscription / ConsumerProtocolAssignment and printed as JSON;
  when that fails the base64 of the original bytes stays.
* An unknown record type prints ``Unknown record type N at offset O, skipping.``
  as the key and no payload; any other failure prints
  ``Error at offset O, skipping. <message>`` (the serde's message, e.g.
  ``Could not read record with version 3 from value's buffer due to: null.``).
  A record without a key makes DumpLogSegments throw; here it raises
  :class:`~segtool.errors.CorruptData`.

The message layouts are declared once below (``OFFSET_COMMIT_KEY`` ...
``CONSUMER_PROTOCOL_ASSIGNMENT``) in the form of Kafka's ``common/message/*.json``
files (3.9 branch): field versions, nullable versions, flexible versions, tagged
fields.  :func:`compile_message` turns such a declaration into a construct parser
that follows the generated ``read()`` code: its version checks
(``VersionConditional``), compact (varint) lengths in flexible versions,
tagged-field sections, nested struct version checks ("Can't read version N of
MemberMetadata"), and the same ``RuntimeException`` messages (a string or byte
array longer than what is left is ``Error reading byte array of N byte(s): only M
byte(s) available``; a short fixed-size read is a BufferUnderflowException, whose
message prints as ``null``).  Parsed structs are dicts in JSON-converter field
order (fields outside the version are left out, tagged fields appear only when
non-default), so writing them out is direct.  The value's version is not checked
against the schema's valid range: like Kafka, a newer version is read with the
newest layout.

JSON is written like Jackson's ``ObjectNode.toString()``: compact; strings escape
``"``, ``\\``, ``\\b \\t \\n \\f \\r`` and other control characters as ``\\u00XX``
(upper-case hex); ``/`` and non-ASCII characters are written as they are; bytes are
standard base64 with padding; UUIDs are Kafka's 22-character URL-safe base64.
Strings are decoded from UTF-8 the way Java 17's ``new String(bytes, UTF_8)`` does,
which differs from Python's ``errors="replace"`` for some malformed input (an
encoded surrogate ``ED A0 80`` is one U+FFFD in Java, three in Python).
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from typing import Callable

import construct as cs

from segtool.errors import CorruptData

__all__ = [
    "parse_offsets_record",
    "decode_offsets_record",
    "OffsetsRecordError",
    "compile_message",
    "jackson_json",
    "java_utf8",
    "OffsetsRecord",
    "RECORD_TYPES",
]

MAX_VERSION = 0x7FFF


# --------------------------------------------------------------------------
# Java-side failures, carried with the message Java's exception would have
# --------------------------------------------------------------------------


class _JavaFailure(Exception):
    """A RuntimeException in Kafka's reader; ``message`` None prints as ``null``."""

    def __init__(self, message: str | None):
        super().__init__(message)
        self.message = message

    @property
    def text(self) -> str:
        return "null" if self.message is None else self.message


class OffsetsRecordError(CorruptData):
    """A record Kafka's group-coordinator serde rejects; ``message`` is Kafka's text
    (``Could not read ...``).  ``unknown_type`` is set for an unknown record type."""

    def __init__(self, message: str, unknown_type: int | None = None):
        super().__init__(message)
        self.unknown_type = unknown_type


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
    type: object  # "int8" | "int16" | "int32" | "int64" | "uuid" | "string" | "bytes" | Array | Struct
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: object = None
    zero_copy: bool = False


@dataclass(frozen=True)
class Message:
    name: str
    valid: Versions
    flexible: Versions
    fields: tuple


def F(name, type_, versions="0+", *, nullable="none", tagged="none", tag=None, default=None,
      zero_copy=False) -> Field:
    return Field(name, type_, Versions.parse(versions), Versions.parse(nullable),
                 Versions.parse(tagged), tag, default, zero_copy)


def S(name, versions, *fields) -> Struct:
    return Struct(name, Versions.parse(versions), tuple(fields))


def M(name, valid, flexible, *fields) -> Message:
    return Message(name, Versions.parse(valid), Versions.parse(flexible), tuple(fields))


# group-coordinator/src/main/resources/common/message (Kafka 3.9)

OFFSET_COMMIT_KEY = M(
    "OffsetCommitKey", "0-1", "none",
    F("group", "string", "0-1"),
    F("topic", "string", "0-1"),
    F("partition", "int32", "0-1"),
)

OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue", "0-4", "4+",
    F("offset", "int64", "0+"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string", "0+"),
    F("commitTimestamp", "int64", "0+"),
    F("expireTimestamp", "int64", "1", default=-1),
)

GROUP_METADATA_KEY = M(
    "GroupMetadataKey", "2", "none",
    F("group", "string", "2"),
)

GROUP_METADATA_VALUE = M(
    "GroupMetadataValue", "0-4", "4+",
    F("protocolType", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", nullable="0+"),
    F("leader", "string", "0+", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", Array(S(
        "MemberMetadata", "0+",
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "3+", nullable="3+"),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("rebalanceTimeout", "int32", "1+"),
        F("sessionTimeout", "int32", "0+"),
        F("subscription", "bytes", "0+"),
        F("assignment", "bytes", "0+"),
    )), "0+"),
)

# KIP-848 records (3.9 shapes).


def _group_key(name: str, record_type: int, *extra: str) -> Message:
    v = str(record_type)
    return M(name, v, "none", F("groupId", "string", v), *(F(e, "string", v) for e in extra))


CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = M(
    "ConsumerGroupMetadataValue", "0", "0+",
    F("epoch", "int32"),
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key("ConsumerGroupPartitionMetadataKey", 4)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue", "0", "0+",
    F("topics", Array(S(
        "TopicMetadata", "0+",
        F("topicId", "uuid"),
        F("topicName", "string"),
        F("numPartitions", "int32"),
        F("partitionMetadata", Array(S(
            "PartitionMetadata", "0+",
            F("partition", "int32"),
            F("racks", Array("string")),
        ))),
    ))),
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key("ConsumerGroupMemberMetadataKey", 5, "memberId")
CONSUMER_GROUP_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    F("instanceId", "string", nullable="0+"),
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("subscribedTopicNames", Array("string")),
    F("subscribedTopicRegex", "string", nullable="0+"),
    F("rebalanceTimeoutMs", "int32", default=-1),
    F("serverAssignor", "string", nullable="0+"),
    F("classicMemberMetadata", S(
        "ClassicMemberMetadata", "0+",
        F("supportedProtocols", Array(S(
            "ClassicProtocol", "0+",
            F("name", "string"),
            F("metadata", "bytes"),
        ))),
    ), nullable="0+", tagged="0+", tag=0, default=None),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
    F("assignmentEpoch", "int32"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, "memberId")
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    F("topicPartitions", Array(S(
        "TopicPartition", "0+",
        F("topicId", "uuid"),
        F("partitions", Array("int32")),
    ))),
)

_TOPIC_PARTITIONS = S(
    "TopicPartitions", "0+",
    F("topicId", "uuid"),
    F("partitions", Array("int32")),
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, "memberId")
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("assignedPartitions", Array(_TOPIC_PARTITIONS)),
    F("partitionsPendingRevocation", Array(_TOPIC_PARTITIONS)),
)

# clients/src/main/resources/common/message (Kafka 3.9): the classic consumer
# protocol's embedded subscription and assignment.

CONSUMER_PROTOCOL_SUBSCRIPTION = M(
    "ConsumerProtocolSubscription", "0-3", "none",
    F("topics", Array("string"), "0+"),
    F("userData", "bytes", "0+", nullable="0+", zero_copy=True),
    F("ownedPartitions", Array(S(
        "TopicPartition", "1+",
        F("topic", "string", "1+"),
        F("partitions", Array("int32"), "1+"),
    )), "1+"),
    F("generationId", "int32", "2+", default=-1),
    F("rackId", "string", "3+", nullable="3+"),
)

CONSUMER_PROTOCOL_ASSIGNMENT = M(
    "ConsumerProtocolAssignment", "0-3", "none",
    F("assignedPartitions", Array(S(
        "TopicPartition", "0+",
        F("topic", "string", "0+"),
        F("partitions", Array("int32"), "0+"),
    )), "0+"),
    F("userData", "bytes", "0+", nullable="0+", zero_copy=True),
)


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
        raise _JavaFailure(None)  # java.nio.BufferUnderflowException
    return data


class _Java(cs.Subconstruct):
    """A fixed-size ``ByteBuffer.getX``: a short read is a BufferUnderflowException."""

    def _parse(self, stream, context, path):
        try:
            return self.subcon._parsereport(stream, context, path)
        except cs.StreamError:
            raise _JavaFailure(None) from None


INT8 = _Java(cs.Int8sb)
INT16 = _Java(cs.Int16sb)
INT32 = _Java(cs.Int32sb)
INT64 = _Java(cs.Int64sb)
_PRIMITIVES = {"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64}


def _read_uvarint(stream) -> int:
    """ByteUtils.readUnsignedVarint: at most 5 bytes, result wrapped to a Java int."""
    value = 0
    for i in range(5):
        b = _take(stream, 1)[0]
        if i == 4:
            value = _i32(value | (b << 28))
            if b & 0x80:
                raise _JavaFailure(
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


def _read_length(stream, context, flexible: _Cond, classic: cs.Construct) -> int:
    if flexible(_version(context)):
        return _i32(_read_uvarint(stream) - 1)
    return classic._parsereport(stream, context, "")


def _read_array(stream, context, size: int) -> bytes:
    """ByteBufferAccessor.readArray (also behind Readable.readString and
    readUnknownTaggedField): refuses a size beyond the remaining bytes."""
    remaining = _remaining(stream, context)
    if size > remaining:
        raise _JavaFailure(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
    if size < 0:
        raise _JavaFailure(str(size))  # new byte[size]: NegativeArraySizeException
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
            raise _JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        if length > 0x7FFF:
            raise _JavaFailure(f"string field {self.fname} had invalid length {length}")
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
            raise _JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        if self.zero_copy:  # readByteBuffer: slice().limit(length)
            remaining = _remaining(stream, context)
            if length > remaining:
                raise _JavaFailure(f"newLimit > capacity: ({length} > {remaining})")
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
            raise _JavaFailure(f"non-nullable field {self.fname} was serialized as null")
        remaining = _remaining(stream, context)
        if count > remaining:
            raise _JavaFailure(f"Tried to allocate a collection of size {count}, "
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
                if _read_uvarint(stream) <= 0:
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
        count = _read_uvarint(stream)
        for _ in range(count):
            tag = _read_uvarint(stream)
            size = _read_uvarint(stream)
            if tag in self.known:
                name, valid, reader = self.known[tag]
                if not valid(version):
                    raise _JavaFailure(f"Tag {tag} is not valid for version {version}")
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
            raise _JavaFailure(f"Can't read version {version} of {self.class_name}")
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
        if ftype == "uuid":
            return UUID
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


# --------------------------------------------------------------------------
# Record types
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetsRecord:
    key: Message
    value: Message
    key_parser: cs.Construct
    value_parser: cs.Construct


def _record(key: Message, value: Message) -> OffsetsRecord:
    return OffsetsRecord(key, value, compile_message(key), compile_message(value))


_OFFSET_COMMIT = _record(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)

# GroupCoordinatorRecordSerde.apiMessageKeyFor / apiMessageValueFor (3.9).
RECORD_TYPES: dict[int, OffsetsRecord] = {
    0: _OFFSET_COMMIT,
    1: _OFFSET_COMMIT,
    2: _record(GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: _record(CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: _record(CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: _record(CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: _record(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
               CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: _record(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
               CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: _record(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
               CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
}

_SUBSCRIPTION_PARSER = compile_message(CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT_PARSER = compile_message(CONSUMER_PROTOCOL_ASSIGNMENT)
_VERSION = _Java(cs.Int16sb)


def _parse_after_version(parser, buf: bytes, version: int):
    stream = io.BytesIO(buf)
    stream.seek(2)
    return parser.parse_stream(stream, version=version, limit=len(buf))


def _read_message(parser, buf: bytes, version: int, what: str) -> dict:
    """CoordinatorRecordSerde.readMessage: the message after the 2-byte version."""
    try:
        return _parse_after_version(parser, buf, version)
    except _JavaFailure as e:
        raise _JavaFailure(f"Could not read record with version {version} from {what}'s buffer "
                           f"due to: {e.text}.") from None


def _read_version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise _JavaFailure(f"Could not read version from {what}'s buffer.")
    return _VERSION.parse(buf[:2])


def _embedded(parser, raw: bytes):
    """Re-read a version-prefixed consumer-protocol blob (ByteBuffer.wrap of the bytes)."""
    if len(raw) < 2:
        raise _JavaFailure(None)
    return _parse_after_version(parser, raw, _VERSION.parse(raw[:2]))


def _expand_consumer_protocol(data: dict) -> None:
    """DumpLogSegments.prepareGroupMetadataValue: decode the classic consumer
    protocol's subscription/assignment in place, keeping the bytes on failure."""
    if data.get("protocolType") != "consumer":
        return
    for member in data.get("members") or ():
        for name, parser in (("subscription", _SUBSCRIPTION_PARSER), ("assignment", _ASSIGNMENT_PARSER)):
            raw = member.get(name)
            if isinstance(raw, bytes):
                try:
                    member[name] = _embedded(parser, raw)
                except _JavaFailure:
                    pass


def decode_offsets_record(key: bytes, value: bytes | None) -> tuple[int, dict, int | None, dict | None]:
    """Decode one record: ``(record_type, key_data, value_version, value_data)``, the
    data as JSON-ready dicts (bytes stay ``bytes``); value_version/value_data are None
    for a tombstone.  Raises :class:`OffsetsRecordError` where Kafka's serde throws."""
    try:
        record_type = _read_version(key, "key")
        schema = RECORD_TYPES.get(record_type)
        if schema is None:
            raise OffsetsRecordError(f"Unknown record type {record_type}", unknown_type=record_type)
        key_data = _read_message(schema.key_parser, key, record_type, "key")
        if value is None:
            return record_type, key_data, None, None
        value_version = _read_version(value, "value")
        value_data = _read_message(schema.value_parser, value, value_version, "value")
    except _JavaFailure as e:
        raise OffsetsRecordError(e.text) from None
    if schema.value is GROUP_METADATA_VALUE:
        _expand_consumer_protocol(value_data)
    return record_type, key_data, value_version, value_data


def parse_offsets_record(key: bytes | None, value: bytes | None, offset: int,
                         ) -> tuple[str | None, str | None]:
    """The ``(key text, payload text)`` that ``kafka-dump-log.sh --offsets-decoder``
    prints for a ``__consumer_offsets`` record at ``offset`` (None = not printed).

    ``key``/``value`` are the record's key and value bytes (None = null).  Decoding
    errors never raise: they become Kafka's ``Unknown record type ...`` /
    ``Error at offset ...`` key text with no payload.  A null key raises
    :class:`CorruptData` (DumpLogSegments throws and stops there).
    """
    if key is None:
        raise CorruptData(f"Failed to decode message at offset {offset} using offset topic decoder "
                          "(message had a missing key)")
    try:
        record_type, key_data, value_version, value_data = decode_offsets_record(
            bytes(key), None if value is None else bytes(value))
    except OffsetsRecordError as e:
        if e.unknown_type is not None:
            return f"Unknown record type {e.unknown_type} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {e.message}", None
    key_text = f'{{"type":"{record_type}","data":{jackson_json(key_data)}}}'
    if value_data is None:
        return key_text, "<DELETE>"
    return key_text, f'{{"version":"{value_version}","data":{jackson_json(value_data)}}}'


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
