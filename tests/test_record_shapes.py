"""The field tables (``kafka.record_shape``, ``rocketmq.message_shape``) are each output's one
declaration of a batch, a record and a CommitLog message: the JSON Schemas in docs/schemas, the
JSON items dump prints (per item and a column run at a time) and the Parquet files of scan, carve
and salvage agree with them, checked on corpus files.

tests/test_dump_runs.py checks that column runs print what the per-item rendering prints;
here both are checked against the tables (names, their order, the fields every item has, the
Parquet types).
"""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from segtool.formats.record_shapes import arrow_type
from segtool.kafka.record_shape import BATCH_FIELDS, RECORD_FIELDS
from segtool.ops.salvage import MESSAGES_PARQUET
from segtool.pipeline.schema import COLUMNS, ROCKETMQ
from segtool.rocketmq.message_shape import MESSAGE, MESSAGE_COLUMNS, MESSAGE_FIELDS
from tests.conftest import CORPUS, REPO, segtool

pytestmark = pytest.mark.skipif(not (CORPUS / "kafka").is_dir(), reason="needs the corpus (../shared/corpus)")

TABLES = {"batch": BATCH_FIELDS, "record": RECORD_FIELDS, "message": MESSAGE_FIELDS}
ITEM_TYPES = {"batch": "KafkaBatchItem", "record": "KafkaRecordItem", "message": "RocketMQMessageItem"}
# what an item holds besides its table's fields: its kind, and its file (where a command puts it:
# last in dump, first in carve's and lookup's messages)
AROUND = {"kind", "file"}

KAFKA_LOGS = ["c01-multiseg-clean", "c03-codecs", "c04-transactions", "c05-logappendtime", "c07-compacted",
              "c08-legacy-formats", "c10-consumer-offsets", "c11a-crc-byte-flip", "c11b-truncated-last-batch"]
STORES = ["clean-multi", "corrupt-body-crc", "corrupt-torn-tail"]


def _dump_items(path) -> list[dict]:
    result = segtool("dump", "--json", path)
    assert result.returncode in (0, 1), result.stderr
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    # an empty segment (compaction leaves them) has no item: its one line is the "nothing found" ErrorReport
    return [document for document in documents if "error" not in document]


def _check_item(item: dict) -> None:
    fields = TABLES[item["kind"]]
    names = [field.name for field in fields if field.name not in AROUND]
    keys = [key for key in item if key not in AROUND]
    assert set(keys) <= set(names), (item["kind"], set(keys) - set(names))
    assert keys == [name for name in names if name in item], item["kind"]  # the table's order
    assert {field.name for field in fields if field.required} | AROUND <= set(item), item["kind"]
    assert list(item)[0] == "kind" and list(item)[-1] == "file"  # dump puts every item's file last


@pytest.mark.parametrize("case", KAFKA_LOGS + STORES)
def test_dump_items_follow_their_tables(case):
    root = CORPUS / ("rocketmq" if case in STORES else "kafka") / case
    files = sorted(root.rglob("*.log")) if case not in STORES else sorted((root / "store" / "commitlog").iterdir())
    kinds = set()
    for path in files:
        for item in _dump_items(path):
            if item["kind"] in TABLES:
                kinds.add(item["kind"])
                _check_item(item)
    assert kinds == ({"message"} if case in STORES else {"batch", "record"})


def test_json_schemas_are_the_tables():
    defs = json.loads((REPO / "docs" / "schemas" / "dump.schema.json").read_text())["$defs"]
    for kind, fields in TABLES.items():
        schema = defs[ITEM_TYPES[kind]]
        declared = [name for name in schema["properties"] if name not in AROUND]
        table = [field.name for field in fields if field.name not in AROUND]
        assert declared[:len(table)] == table, kind
        required = {field.name for field in fields if field.required} | AROUND
        assert set(schema["required"]) == required, kind
    assert defs["RocketMQMessageItem"]["additionalProperties"] is True  # lookups add their own fields


def _assert_types(schema, fields, by_column: bool = False) -> int:
    """Every column of ``schema`` that is a field of the table has the table's Parquet type."""
    table = {(field.column_name if by_column else field.name): field for field in fields if field.arrow}
    checked = 0
    for column in schema:
        if column.name in table:
            assert column.type == arrow_type(table[column.name].arrow), column.name
            checked += 1
    return checked


def test_scan_columns_are_the_message_table():
    message_columns = [(name, typ, doc) for name, typ, broker, doc in COLUMNS
                       if broker == ROCKETMQ and name in MESSAGE_COLUMNS]
    assert len(message_columns) >= 20
    for name, typ, doc in message_columns:
        assert typ == arrow_type(MESSAGE_COLUMNS[name].arrow), name
        if name not in ("commitlog_file", "body"):  # described for the dataset: a file name, a body --with-values
            assert doc == MESSAGE_COLUMNS[name].doc, name


def test_scan_dataset_is_the_message_table(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(CORPUS / "rocketmq" / "clean-multi" / "store", store)
    out = tmp_path / "out"
    assert segtool("scan", "--workers", "1", "--out", out, store).returncode == 0
    part = next(out.rglob("*.parquet"))
    rows = pq.read_table(part).to_pylist()
    assert rows and _assert_types(pq.read_schema(part), MESSAGE_FIELDS, by_column=True) >= 20
    # the rows hold the decoded fields the table names them by: as dump prints the same messages
    dumped = {item["phy_offset"]: item for path in sorted((store / "commitlog").iterdir())
              for item in _dump_items(path) if item["kind"] == "message"}
    for row in rows:
        item = dumped[row["physical_offset"]]
        for field in MESSAGE_FIELDS:
            if field.arrow and field.column_name in row and field.name not in ("file", "body", "properties"):
                assert row[field.column_name] == item.get(field.name), field.name  # absent: null


def test_carve_and_salvage_parquet_are_the_tables(tmp_path):
    carved = tmp_path / "carved"
    commitlog = CORPUS / "rocketmq" / "corrupt-body-crc" / "store" / "commitlog" / "00000000000000000000"
    segment = next((CORPUS / "kafka" / "c04-transactions").rglob("*.log"))
    # --records: kafka_records.parquet is written only with the per-record output
    assert segtool("carve", "--records", "--out", carved, commitlog, segment).returncode in (0, 1)
    assert _assert_types(pq.read_schema(carved / "kafka_batches.parquet"), BATCH_FIELDS) >= 15
    assert _assert_types(pq.read_schema(carved / "kafka_records.parquet"), RECORD_FIELDS) >= 10
    messages = pq.read_table(carved / "rocketmq_messages.parquet")
    assert messages.num_rows and _assert_types(messages.schema, MESSAGE_FIELDS) >= 18

    store = tmp_path / "store"
    shutil.copytree(CORPUS / "rocketmq" / "corrupt-body-crc" / "store", store)
    salvaged = tmp_path / "salvaged"
    assert segtool("salvage", "--out", salvaged, store).returncode in (0, 1)
    table = pq.read_table(salvaged / MESSAGES_PARQUET)
    assert table.num_rows and _assert_types(table.schema, MESSAGE_FIELDS, by_column=True) == len(table.schema)
    first = table.to_pylist()[0]
    assert first["physical_offset"] == first["physical_offset_field"]
    assert MESSAGE["phy_offset"].column_name == "physical_offset"
