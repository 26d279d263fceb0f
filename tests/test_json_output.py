"""JSON output: one snake_case naming, one record shape, and a JSON Schema per command that real
output of every command on the corpus validates against.

The commands run once (a module fixture).  The fast tier validates each distinct shape of document
once (about 160,000 dump lines, a few hundred shapes) with jsonschema, the reference validator; the
full tier (`slow`) validates every line with the same schemas compiled to Python by fastjsonschema
(about 15 times faster; a fast-tier test checks that both validators give the same verdicts)."""

from __future__ import annotations

import json
from functools import cache

import fastjsonschema
import pytest
from jsonschema import Draft202012Validator

from segtool.ops.output_schema import COMMAND_OUTPUTS, schema_files
from tests.conftest import REPO, corpus_path, segtool

SCHEMAS = REPO / "docs" / "schemas"


@cache
def _schema(command: str) -> dict:
    return json.loads((SCHEMAS / f"{command}.schema.json").read_text())


@cache
def _compiled(command: str):
    """The command's schema as one Python function (fastjsonschema): it raises on an invalid document."""
    return fastjsonschema.compile(_schema(command))


def _segtool(*args):
    run = segtool(*args)
    assert run.returncode in (0, 1), (args, run.stderr)
    return [json.loads(line) for line in run.stdout.splitlines()]


def test_committed_schemas_are_the_generated_ones():
    fresh = schema_files()
    assert sorted(p.name for p in SCHEMAS.glob("*.schema.json")) == sorted(fresh)
    for name, text in fresh.items():
        assert (SCHEMAS / name).read_text() == text, f"docs/schemas/{name} is stale: make docs"


def _outputs(tmp_path) -> dict[str, list]:
    kafka = corpus_path("kafka")
    rocketmq = corpus_path("rocketmq")
    store = rocketmq / "kill9-abort" / "store"
    compacted = kafka / "c07-compacted" / "data" / "c07-compact-0"
    out: dict[str, list] = {command: [] for command in COMMAND_OUTPUTS}
    for case in sorted(kafka.iterdir()):
        if (case / "data").is_dir():
            out["dump"] += _segtool("dump", "--json", case / "data")
            out["verify"] += _segtool("verify", "--json", "--no-hash", case / "data")
    for case in sorted(rocketmq.iterdir()):
        if (case / "store").is_dir():
            out["dump"] += _segtool("dump", "--json", case / "store")
            out["verify"] += _segtool("verify", "--json", "--no-hash", case / "store")
    txn = kafka / "c04-transactions" / "data"
    out["dump"] += _segtool("dump", "--json", "--summary", txn)
    out["dump"] += _segtool("dump", "--json", "--from-offset", "10", "--limit", "5", "--value-format", "hex", txn)
    out["dump"] += _segtool("dump", "--json", "--skip-record-metadata", "--limit", "3", txn)
    out["lookup"] += _segtool("lookup", compacted, "--offset", "3000", "--value-format", "base64", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--offset", "3000", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--offset", "99999999", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--offset", "3000", "--floor", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--timestamp", "earliest", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--timestamp", "max-timestamp", "--json")
    out["lookup"] += _segtool("lookup", compacted, "--key", "ck-044", "--json")
    out["lookup"] += _segtool("lookup", store, "--topic", "OrderTopic", "--key", "order-0-13", "--json")
    out["lookup"] += _segtool("lookup", store, "--topic", "OrderTopic", "--queue-id", "0", "--queue-offset", "5",
                              "--json")
    out["rebuild-index"] += _segtool("rebuild-index", kafka / "c04-transactions" / "data", "--out", tmp_path / "k",
                                     "--json")
    out["rebuild-index"] += _segtool("rebuild-index", store, "--out", tmp_path / "r", "--json")
    out["trim"] += _segtool("trim", kafka / "c02-unclean-hot-copy" / "data", "--out", tmp_path / "t", "--json")
    out["index-keys"] += _segtool("index-keys", compacted, "--out", tmp_path / "i", "--json")
    out["salvage"] += _segtool("salvage", kafka / "c11a-crc-byte-flip" / "data", "--out", tmp_path / "sk", "--json")
    out["salvage"] += _segtool("salvage", rocketmq / "corrupt-body-crc" / "store", "--out", tmp_path / "sr", "--json")
    out["scan"] += _segtool("scan", kafka / "c04-transactions" / "data", store, "--out", tmp_path / "s", "--json",
                            "--workers", "1")
    out["inspect"] += _segtool("inspect", "--json", kafka / "c11a-crc-byte-flip" / "data", kafka / "c02-unclean-hot-copy" / "data")
    out["groups"] += _segtool("groups", "--json", kafka / "c10-consumer-offsets" / "data")
    out["transactions"] += _segtool("transactions", "--json", kafka / "c04-transactions" / "data")
    out["carve"] += _segtool("carve", kafka / "c08-legacy-formats" / "data", store / "commitlog", "--out",
                             tmp_path / "c", "--json")
    out["inspect"] += _segtool("inspect", "--json", store)
    out["groups"] += _segtool("groups", "--json", store)
    out["lookup"] += _segtool("lookup", store, "--msg-id", "7F00000100002A9F0000000000000000", "--json")
    out["report"] += _segtool("report", "--json", "--no-hash", kafka / "c11a-crc-byte-flip" / "data", store)
    out["replicas"] += _replicas_outputs(tmp_path / "replicas")
    return out


# the built Kafka replica sets whose outputs hold the optional parts: rounds of the epoch exchange, producers and
# a hanging transaction, a damaged replica, a re-created topic (single copies and notes)
REPLICA_SCENARIOS = ("unclean_election", "hanging_transaction", "damaged_replica", "recreated_topic")


def _replicas_outputs(root) -> list:
    """replicas on built Kafka replica sets, on RocketMQ master/slave stores (a 4.x slave diverged after a
    failover; a 5.x controller-mode pair with epoch files and confirm offsets), on a DLedger group, and on the
    wild KRaft quorum's three voters."""
    from tests import rocketmq_replica_sets as rocketmq_sets
    from tests.kafka_replica_sets import build

    documents = []
    for name in REPLICA_SCENARIOS:
        documents += _segtool("replicas", "--json", *build(name, root / "kafka").brokers.values())
    clean, donor = corpus_path("rocketmq", "clean-multi"), corpus_path("rocketmq", "kill9-abort")
    golden = rocketmq_sets.golden_messages(clean)
    donors = rocketmq_sets.message_bytes(donor, rocketmq_sets.golden_messages(donor)[:5])
    cut = golden[len(golden) // 2]["phyOffset"]
    pairs = []
    for layout in ("ha", "controller"):
        master = rocketmq_sets.copy_store(clean / "store", root / layout / "master")
        slave = rocketmq_sets.copy_store(clean / "store", root / layout / "slave")
        rocketmq_sets.cut_commitlog(slave, cut)
        rocketmq_sets.append_messages(slave, cut, donors)
        if layout == "controller":  # the slave was elected for epoch 2 at the cut (AutoSwitchHAService.changeToMaster)
            rocketmq_sets.write_epochs(master, [(1, 0)])
            rocketmq_sets.write_epochs(slave, [(1, 0), (2, cut)])
            rocketmq_sets.write_confirm_offset(master, golden[-1]["phyOffset"])
            rocketmq_sets.write_confirm_offset(slave, cut)
        pairs.append((master, slave))
    for master, slave in pairs:
        documents += _segtool("replicas", "--json", master, slave)
    dledger = root / "dledger"
    rocketmq_sets.dledger_node(dledger / "n0", "n0", [1, 1, 1, 2, 3, 3, 3], ["a"] * 7, committed_index=5)
    rocketmq_sets.dledger_node(dledger / "n1", "n1", [1, 1, 1, 2, 2, 2], ["a"] * 4 + ["b"] * 2, committed_index=3)
    documents += _segtool("replicas", "--json", dledger / "n0", dledger / "n1")
    kraft = corpus_path("wild", "apache__kafka", "core", "data")
    documents += _segtool("replicas", "--json", *(kraft / f"kafka-{node}" for node in (
        "2167572160391180112", "7155829485418535035", "7498518511977031704")))
    kinds = [bool(d["kafka"]) for d in documents], [d["rocketmq"][0]["replication"] for d in documents if d["rocketmq"]]
    assert kinds == ([True] * len(REPLICA_SCENARIOS) + [False] * 3 + [True], ["ha", "controller", "dledger"]), kinds
    return documents


def _keys(value, where="$"):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, where
            if key != "properties":  # user data: a message's property names are the producer's
                yield from _keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item, f"{where}[]")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, list]:
    return _outputs(tmp_path_factory.mktemp("outputs"))


# Validation keywords whose outcome depends only on a document's shape: its keys, the JSON type of each
# value, and the values of the properties a const or enum tests (_valued_properties).  A schema using any
# other keyword (pattern on values, minimum, format...) is validated document by document.
_SHAPE_KEYWORDS = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties", "required",
                   "additionalProperties", "propertyNames", "anyOf", "items", "const", "enum"}


def _valued_properties(schema: dict) -> set[str] | None:
    """The property names whose values the schema tests (a const or enum in the property's own schema,
    its anyOf branches, items or references); None when it uses a keyword outside _SHAPE_KEYWORDS."""
    defs = schema.get("$defs", {})

    def tests_value(node, seen) -> bool:
        if not isinstance(node, dict):
            return False
        if "const" in node or "enum" in node:
            return True
        ref = node.get("$ref")
        if ref is not None and ref not in seen:
            if tests_value(defs[ref.rsplit("/", 1)[1]], seen | {ref}):
                return True
        branches = list(node.get("anyOf", [])) + [node.get("items")]
        return any(tests_value(branch, seen) for branch in branches)

    valued: set[str] = set()

    def walk(node) -> bool:
        if isinstance(node, list):
            return all(walk(item) for item in node)
        if not isinstance(node, dict):
            return True
        for keyword, value in node.items():
            if keyword not in _SHAPE_KEYWORDS:
                return False
            if keyword == "propertyNames" and set(value) != {"pattern"}:
                return False
            if keyword == "properties":
                valued.update(name for name, sub in value.items() if tests_value(sub, frozenset()))
                if not all(walk(sub) for sub in value.values()):
                    return False
            elif keyword == "$defs":
                if not all(walk(sub) for sub in value.values()):
                    return False
            elif keyword in ("anyOf", "items", "additionalProperties") and not walk(value):
                return False
        return True

    return valued if walk(schema) else None


def _shape(value, valued: set[str], name: str | None = None):
    """What validation against a schema of _SHAPE_KEYWORDS sees of a value: keys, JSON types, and the
    values of the properties named in ``valued``."""
    if isinstance(value, dict):
        # in the document's key order: the same code gives the same order (and another order is only another shape)
        return ("object", tuple((key, _shape(item, valued, key)) for key, item in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_shape(item, valued, name) for item in value))
    if name in valued:
        return (type(value).__name__, value)
    return type(value).__name__


def _check_command_output(command: str, documents: list, every_document: bool) -> None:
    import re

    snake = re.compile(r"^[a-z][a-z0-9_]*$")
    assert documents, command
    schema = _schema(command)
    validator = Draft202012Validator(schema)
    compiled = _compiled(command) if every_document else None
    valued = None if every_document else _valued_properties(schema)
    shapes = set()
    kinds = set()
    for document in documents:
        if compiled is not None:
            try:
                compiled(document)
            except fastjsonschema.JsonSchemaValueException:
                validate = True  # jsonschema's errors say what is wrong
            else:
                validate = False
        elif valued is not None:
            shape = _shape(document, valued)
            validate = shape not in shapes
            shapes.add(shape)
        else:
            validate = True
        if validate:
            errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
            assert not errors, (command, errors[0].message, list(errors[0].path))
            assert compiled is None, (command, "fastjsonschema rejects a document jsonschema accepts", document)
        bad = [(key, where) for key, where in _keys(document) if not snake.match(key)]
        assert not bad, (command, bad[:5])
        kinds.add(document.get("kind"))
    if command == "dump":
        assert {"batch", "record", "message", "cq_unit", "index_entry"} <= kinds


def test_every_command_output_validates_against_its_schema_and_is_snake_case(outputs):
    """Every document is snake_case; each distinct shape of document is validated."""
    for command, documents in outputs.items():
        _check_command_output(command, documents, every_document=False)


def test_the_shapes_stand_for_the_schemas():
    """The shape shortcut holds for the dump schema (else the test above validates every document),
    and a value a const or enum tests is part of a shape."""
    schema = json.loads((SCHEMAS / "dump.schema.json").read_text())
    valued = _valued_properties(schema)
    assert valued is not None and {"kind", "reason"} <= valued
    assert _shape({"kind": "batch", "size": 1}, valued) != _shape({"kind": "record", "size": 1}, valued)
    assert _shape({"kind": "batch", "size": 1}, valued) == _shape({"kind": "batch", "size": 2}, valued)
    assert _shape({"size": 1}, valued) != _shape({"size": True}, valued) != _shape({"size": None}, valued)
    assert _valued_properties({"properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}}}) is None


# a value of another JSON type for each: True for an integer (Python's bool is an int; JSON's is not)
_RETYPED = {bool: "x", int: True, float: "x", str: 1, type(None): "x", list: {}, dict: []}


def _variants(document: dict):
    """The document, and the document with one property added, removed or given a value of another JSON type."""
    yield document
    yield {**document, "not_in_any_schema": 1}
    for key, value in document.items():
        yield {name: item for name, item in document.items() if name != key}
        yield {**document, key: _RETYPED[type(value)]}


@pytest.mark.slow
def test_the_compiled_schemas_judge_as_jsonschema_does(outputs):
    """The full tier's fast validator (fastjsonschema) against the reference (jsonschema) on one real
    document of each kind per command and its variants: the same verdict on each, and some rejected."""
    for command, documents in outputs.items():
        validator = Draft202012Validator(_schema(command))
        compiled = _compiled(command)
        firsts = {}
        for document in documents:
            firsts.setdefault(document.get("kind"), document)
        rejected = 0
        for first in firsts.values():
            for variant in _variants(first):
                try:
                    compiled(variant)
                    fast_verdict = True
                except fastjsonschema.JsonSchemaValueException:
                    fast_verdict = False
                assert fast_verdict == validator.is_valid(variant), (command, variant)
                rejected += not fast_verdict
        assert rejected, command


@pytest.mark.slow
def test_every_command_output_validates_document_by_document(outputs):
    """Every document of every command validated against its schema, and snake_case."""
    for command, documents in outputs.items():
        _check_command_output(command, documents, every_document=True)


def test_a_record_has_one_shape_whichever_way_it_was_found():
    compacted = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    by_offset = _segtool("lookup", compacted, "--offset", "7016", "--json")[0]["record"]
    by_key = _segtool("lookup", compacted, "--key", by_offset["key"], "--json")[0]["records"]
    dumped = [item for item in _segtool("dump", "--json", by_offset["file"])
              if item["kind"] == "record" and item["offset"] == 7016]
    assert by_offset == dumped[0] == next(r for r in by_key if r["offset"] == 7016)
    transactions = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    by_time = _segtool("lookup", transactions, "--timestamp", "1795304370800", "--json")[0]["record"]
    dumped = [item for item in _segtool("dump", "--json", by_time["file"])
              if item["kind"] == "record" and item["offset"] == by_time["offset"]]
    assert by_time == dumped[0]
    store = corpus_path("rocketmq", "kill9-abort", "store")
    answer = _segtool("lookup", store, "--topic", "OrderTopic", "--queue-id", "0", "--queue-offset", "5", "--json")[0]
    message = answer["message"]
    commitlog = store / "commitlog" / f"{message['phy_offset'] // (1 << 20) * (1 << 20):020d}"
    dumped = [item for item in _segtool("dump", "--json", commitlog)
              if item["kind"] == "message" and item["phy_offset"] == message["phy_offset"]]
    assert dumped and message == dumped[0]


@pytest.mark.parametrize("command", sorted(COMMAND_OUTPUTS))
def test_every_command_has_a_schema_file(command):
    assert (SCHEMAS / f"{command}.schema.json").exists()
