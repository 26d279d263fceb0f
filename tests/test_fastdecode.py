"""The compiled-layout table is exactly what compiling the construct schemas gives, no struct
format is written by hand, and the derived one-field readers agree with construct on the corpus."""

from __future__ import annotations

import ast
from pathlib import Path

import construct as cs
import numpy as np
import pytest

import segtool
from segtool.formats import _compiled_layouts
from segtool.kafka import log as kafka_log
from segtool.kafka import schemas as kafka_schemas
from segtool.rocketmq import store_files as rmq
from segtool.formats.fastdecode import compile_field, compile_fixed, compile_table, compiled, render_table
from tests.conftest import corpus_path
from tests.test_rocketmq_formats import commitlog_walk


def test_generated_table_matches_the_schemas():
    fresh = compile_table()
    assert {k: (f, tuple(n)) for k, (f, n) in _compiled_layouts.LAYOUTS.items()} == fresh
    assert render_table(fresh) == open(_compiled_layouts.__file__).read(), \
        "regenerate with `python -m segtool.formats.fastdecode`"


def test_compiled_layouts_decode_like_construct():
    schema = cs.Struct("a" / cs.Int64sb, "b" / cs.Int32ub, "c" / cs.Int16sb, "d" / cs.Int8ub)
    layout = compile_fixed(schema)
    data = schema.build({"a": -5, "b": 2**32 - 1, "c": -300, "d": 200})
    assert layout.unpack_from(data) == (-5, 2**32 - 1, -300, 200)
    assert layout.field_offset("c") == 12
    assert layout.numpy_dtype().itemsize == schema.sizeof()
    batch = compiled("BATCH_HEADER_V2")
    assert batch.size == 61 and batch.field_offset("crc") == 17 and batch.field_offset("attributes") == 21


# --------------------------------------------------------------------------
# no layout is written by hand: struct formats come from the declarations
# --------------------------------------------------------------------------

_STRUCT_FUNCS = {"Struct", "pack", "unpack", "unpack_from", "pack_into", "iter_unpack", "calcsize"}
_BYTE_ORDERS = tuple("<>=!|@")


def _written_out(node) -> bool:
    """A format given as a literal, an f-string, or a literal glued on with + or %."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and _written_out(side)
                   for side in (node.left, node.right))
    return False


def hand_written_formats(source: str) -> list[int]:
    """Lines of struct calls whose format is written out, and of numpy dtypes given as byte-order strings."""
    tree = ast.parse(source)
    modules, functions = set(), set()  # what ``struct`` and its functions are called in this file
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "struct"}
        elif isinstance(node, ast.ImportFrom) and node.module == "struct":
            functions |= {a.asname or a.name for a in node.names if a.name in _STRUCT_FUNCS}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        is_struct = (isinstance(func, ast.Attribute) and func.attr in _STRUCT_FUNCS
                     and isinstance(func.value, ast.Name) and func.value.id in modules) or (
                     isinstance(func, ast.Name) and func.id in functions)
        fmt = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "format"), None)
        if is_struct and fmt is not None and _written_out(fmt):
            lines.append(node.lineno)
            continue
        is_dtype = (isinstance(func, ast.Attribute) and func.attr == "dtype") or (
            isinstance(func, ast.Name) and func.id == "dtype")
        dtypes = ([node.args[0]] if is_dtype and node.args else []) + [
            k.value for k in node.keywords if k.arg == "dtype"]
        if any(isinstance(d, ast.Constant) and isinstance(d.value, str) and d.value.startswith(_BYTE_ORDERS)
               for d in dtypes):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_finds_written_out_formats():
    source = '''
import struct
import struct as st
from struct import Struct as S, unpack_from
import numpy as np
struct.unpack_from("<I", b, 0)
st.pack(">iq", 1, 2)
S(">i")
unpack_from(format=">h", buffer=b)
struct.iter_unpack(">H", data)
struct.calcsize(f">{n}i")
struct.Struct(">" + "i")
np.dtype(">i4")
np.frombuffer(b, dtype="<u4")
struct.Struct(order + "".join(codes))
layout.unpack_from(b, 0)
memoryview(b).cast("H")
np.dtype(fields)
'''
    assert hand_written_formats(source) == list(range(6, 15))


def test_no_struct_format_is_written_by_hand():
    """Every struct format in segtool comes from a construct declaration (via fastdecode)."""
    root = Path(segtool.__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        if path.name == "_compiled_layouts.py":  # generated from the declarations
            continue
        lines = hand_written_formats(path.read_text(encoding="utf-8"))
        if lines:
            found[str(path.relative_to(root.parent))] = lines
    assert not found, f"declare these layouts in formats/ and derive their readers with fastdecode: {found}"


# --------------------------------------------------------------------------
# one-field layouts
# --------------------------------------------------------------------------


def test_field_layouts():
    batch = compiled("BATCH_HEADER_V2")
    data = kafka_schemas.BATCH_HEADER_V2.build(dict(
        base_offset=7, batch_length=49, partition_leader_epoch=3, magic=2, crc=2**32 - 2, attributes=4,
        last_offset_delta=-9, base_timestamp=11, max_timestamp=-2**40, producer_id=5, producer_epoch=6,
        base_sequence=8, record_count=9))
    for name, value in batch.as_dict(data).items():
        one = batch.field(name)
        assert one.names == (name,) and one.unpack_from(data, batch.field_offset(name)) == (value,)
    schema = cs.Struct(
        "flags" / cs.Int8ub,
        "maybe" / cs.If(cs.this.flags & 1, cs.Int64ul),
        "either" / cs.IfThenElse(cs.this.flags & 2, cs.Int16sb, cs.Int8sb),
        "blob" / cs.Prefixed(cs.Int32ub, cs.GreedyBytes),
    )
    assert compile_field(schema, "maybe").packer.format == "<Q"
    assert compile_field(schema, "either").packer.format == ">h"
    assert compile_field(schema, "either", branch=False).packer.format == ">b"
    blob = compile_field(schema, "blob")
    assert blob.names == ("blob_length",) and blob.packer.format == ">I"
    with pytest.raises(TypeError):
        compile_field(schema, "maybe", branch=False)  # nothing to read there


# --------------------------------------------------------------------------
# the derived readers agree with the declarations on the corpus
# --------------------------------------------------------------------------


def _entries(buf: bytes):
    head = compiled("LOG_ENTRY_HEADER")
    pos = 0
    while pos + kafka_log.HEADER_SIZE_UP_TO_MAGIC <= len(buf):
        _, size = head.unpack_from(buf, pos)
        yield pos, buf[pos:pos + head.size + size]
        pos += head.size + size


@pytest.mark.parametrize("case,partition", [("c01-multiseg-clean", "c01-plain-0"),
                                            ("c08-legacy-formats", "c08-legacy-v0-0"),
                                            ("c08-legacy-formats", "c08-legacy-v1-0"),
                                            ("c08-legacy-formats", "c08-legacy-mixed-0")])
def test_kafka_field_readers_match_construct(case, partition):
    """kafka_log's one-field readers and the legacy key/value length read what construct parses."""
    assert compile_field(kafka_schemas.LEGACY_MESSAGE_V0, "value").packer.format == \
        compiled("LEGACY_BYTES_LENGTH").packer.format  # key and value lengths are declared alike
    seen = set()
    for log in sorted((corpus_path("kafka", case) / "data" / partition).glob("*.log")):
        for pos, entry in _entries(log.read_bytes()):
            magic = entry[kafka_log.MAGIC_AT]
            seen.add(magic)
            assert kafka_log._SIZE.unpack_from(entry, kafka_log._SIZE_AT)[0] == len(entry) - kafka_log.LOG_OVERHEAD
            if magic == 2:
                header = kafka_schemas.BATCH_HEADER_V2.parse(entry)
                assert kafka_log._LAST_OFFSET_DELTA.unpack_from(entry, kafka_log._LAST_OFFSET_DELTA_AT) == \
                    (header.last_offset_delta,)
                assert kafka_log._MAX_TIMESTAMP.unpack_from(entry, kafka_log._MAX_TIMESTAMP_AT) == \
                    (header.max_timestamp,)
                continue
            message = (kafka_schemas.LEGACY_MESSAGE_V1 if magic else kafka_schemas.LEGACY_MESSAGE_V0).parse(entry)
            p = (kafka_log.LEGACY_HEADER_V1_FAST if magic else kafka_log.LEGACY_HEADER_V0_FAST).size
            for value in (message.key, message.value):
                (length,) = kafka_log._unpack_legacy_length(entry, p)
                assert length == (-1 if value is None else len(value))
                p += kafka_log._LEGACY_LENGTH_SIZE + max(length, 0)
            assert p == len(entry)
            assert kafka_log._legacy_bytes(entry, p - kafka_log._LEGACY_LENGTH_SIZE - max(length, 0),
                                           len(entry), None)[0] == message.value
    assert seen


def _commitlog_messages(case: str):
    """(file bytes, decoded message, construct parse) of every message of a case's commitlog."""
    store = corpus_path("rocketmq", case) / "store"
    files = {p.name: p.read_bytes() for p in (store / "commitlog").iterdir()}
    for msg in commitlog_walk(store, digests=False, decompress=False)[0]:
        buf = files[msg["file"]]
        pos = msg["fileOffset"]
        yield buf, msg, rmq.COMMITLOG_MESSAGE.parse(buf[pos:pos + msg["totalSize"]])


def test_rocketmq_field_readers_match_construct():
    count = 0
    for buf, msg, parsed in _commitlog_messages("clean-multi"):
        pos = msg["fileOffset"]
        assert rmq._SYSFLAG.unpack_from(buf, pos + rmq._SYSFLAG_POSITION) == (parsed.sysFlag,)
        q = msg["bodyOffset"] + parsed.bodyLength
        topic_length = rmq.TOPIC_LENGTH_FAST[msg["version"]]
        assert topic_length.unpack_from(buf, q) == (parsed.topicLength,)
        q += topic_length.size + parsed.topicLength
        assert rmq.PROPERTIES_LENGTH_FAST.unpack_from(buf, q) == (parsed.propertiesLength,)
        tail = rmq.OFFSET_MSG_ID_TAIL.build(parsed)
        assert tail == rmq.OFFSET_MSG_ID_TAIL_FAST.pack(parsed.storePort, parsed.physicalOffset)
        assert msg["offsetMsgId"] == (parsed.storeHost + tail).hex().upper()
        count += 1
    assert count


def test_rocketmq_v2_topic_length_is_a_short():
    """A 5.x (magic v2) record, built from the declaration, decodes through the derived readers."""
    fields = dict(
        totalSize=0, magicCode=rmq.MESSAGE_MAGIC_CODE_V2, bodyCRC=0, queueId=1, flag=0, queueOffset=2,
        physicalOffset=0, sysFlag=0, bornTimestamp=3, bornHost=bytes(4), bornPort=4, storeTimestamp=5,
        storeHost=bytes([10, 0, 0, 1]), storePort=10911, reconsumeTimes=0, preparedTransactionOffset=0,
        bodyLength=0, body=b"", topicLength=300, topic=b"t" * 300, propertiesLength=0, properties=b"",
    )
    fields["totalSize"] = len(rmq.COMMITLOG_MESSAGE.build(fields))
    data = rmq.COMMITLOG_MESSAGE.build(fields)
    msg = rmq.decode_message(data, digests=False)
    assert msg["topic"] == "t" * 300 and msg["version"] == 2
    assert rmq.TOPIC_LENGTH_FAST[2].size == 2 and rmq.TOPIC_LENGTH_FAST[1].size == 1


def test_rocketmq_slot_dtype_is_the_slot_declaration():
    assert rmq.INDEX_SLOT_DTYPE.itemsize == rmq.INDEX_SLOT.sizeof() == rmq.INDEX_SLOT_SIZE
    slots = rmq.INDEX_SLOT[3].build([1, -2, 2**31 - 1])
    assert np.frombuffer(slots, dtype=rmq.INDEX_SLOT_DTYPE).tolist() == [1, -2, 2**31 - 1]
