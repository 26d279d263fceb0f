"""The compiled-layout table is exactly what compiling the construct schemas gives."""

from __future__ import annotations

import construct as cs

from segtool.formats import _compiled_layouts
from segtool.formats.fastdecode import compile_fixed, compile_table, compiled, render_table


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
