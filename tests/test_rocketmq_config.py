"""RocketMQ config files (config/*.json and .bak) read as the broker reads them (fastjson's
dialect): every file the corpus holds parses, and what it gives equals an independent reading
in the test (a regular expression over the raw text for the bare-key maps, the standard json
module for the files that happen to be strict JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from segtool.errors import CorruptData
from segtool.rocketmq.config import (
    CONFIG_KINDS,
    load_config,
    parse_fastjson,
    read_config_file,
    value_differences,
)
from tests.conftest import CORPUS


def _corpus_config_files() -> list[Path]:
    """Every file in a ``config`` directory of the corpus whose name is a broker config file
    or its .bak (found by walking, so new stores are picked up)."""
    if not CORPUS.exists():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.parent.name == "config"
                  and re.fullmatch(r"[A-Za-z]+\.json(\.bak)?", p.name))


CONFIG_FILES = _corpus_config_files()
_needs_corpus = pytest.mark.skipif(not CONFIG_FILES, reason=f"no config files under {CORPUS} (corpus absent)")


def _id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def _bare_key_table(text: str) -> dict[str, dict[int, int]] | dict[int, int]:
    """The offsetTable of consumerOffset.json / delayOffset.json by regular expressions alone."""
    body = text[re.search(r'"offsetTable"\s*:\s*\{', text).end():]
    nested = re.findall(r'"([^"]+)"\s*:\s*\{([^{}]*)\}', body)
    if nested:
        return {key: {int(q): int(o) for q, o in re.findall(r"(-?\d+)\s*:\s*(-?\d+)", inner)}
                for key, inner in nested}
    inner = re.search(r'"offsetTable"\s*:\s*\{([^{}]*)\}', text).group(1)
    return {int(k): int(v) for k, v in re.findall(r"(-?\d+)\s*:\s*(-?\d+)", inner)}


@_needs_corpus
def test_the_walk_finds_the_wild_and_corpus_config_files():
    assert any("wild" in _id(p) for p in CONFIG_FILES) and any("rocketmq" in _id(p) for p in CONFIG_FILES)
    assert {p.name.removesuffix(".bak") for p in CONFIG_FILES} <= set(CONFIG_KINDS)
    assert {p.name for p in CONFIG_FILES} >= {"consumerOffset.json", "consumerOffset.json.bak", "delayOffset.json",
                                              "topics.json", "subscriptionGroup.json", "consumerFilter.json"}


@_needs_corpus
@pytest.mark.parametrize("path", CONFIG_FILES, ids=_id)
def test_every_config_file_reads(path):
    read = read_config_file(path)
    assert read.error is None, str(read.error)
    assert read.decoded is not None
    text = path.read_text(encoding="utf-8")
    kind = path.name.removesuffix(".bak")
    if kind in ("consumerOffset.json", "delayOffset.json"):
        assert read.decoded.offset_table == _bare_key_table(text)
        if kind == "consumerOffset.json" and read.decoded.offset_table:
            with pytest.raises(json.JSONDecodeError):  # bare numeric keys: not JSON
                json.loads(text)
    else:  # the other files carry string keys only: strict JSON reads them too
        assert parse_fastjson(path.read_bytes()) == json.loads(text)


@_needs_corpus
@pytest.mark.parametrize("path", [p for p in CONFIG_FILES if p.name.endswith(".json")], ids=_id)
def test_typed_contents_are_the_files_fields(path):
    decoded = read_config_file(path).decoded
    text = path.read_text(encoding="utf-8")
    if path.name == "topics.json":
        table = json.loads(text)["topicConfigTable"]
        assert {name: (c.topic_name, c.read_queue_nums, c.write_queue_nums, c.perm)
                for name, c in decoded.topic_config_table.items()} == \
            {name: (c["topicName"], c["readQueueNums"], c["writeQueueNums"], c["perm"]) for name, c in table.items()}
        assert decoded.data_version.counter == json.loads(text)["dataVersion"]["counter"]
    elif path.name == "subscriptionGroup.json":
        table = json.loads(text)["subscriptionGroupTable"]
        assert {name: (g.group_name, g.retry_max_times, g.consume_enable)
                for name, g in decoded.subscription_group_table.items()} == \
            {name: (g["groupName"], g["retryMaxTimes"], g["consumeEnable"]) for name, g in table.items()}
    elif path.name == "consumerOffset.json":
        pairs = decoded.by_topic_group()
        assert sorted(pairs) == sorted(tuple(key.split("@")) for key in _bare_key_table(text))


@_needs_corpus
def test_each_bak_is_compared_with_its_file():
    directories = sorted({p.parent for p in CONFIG_FILES})
    compared = differing = 0
    for directory in directories:
        for name in CONFIG_KINDS:
            main, bak = directory / name, directory / (name + ".bak")
            if not (main.exists() and bak.exists()):
                continue
            loaded = load_config(directory, name)
            compared += 1
            if main.read_bytes() == bak.read_bytes():
                assert loaded.backup_equal is True and loaded.differences == []
                continue
            differing += 1
            assert loaded.backup_equal is False
            # what differs, derived independently: strict JSON where the file is, the regex tables elsewhere
            if name in ("consumerOffset.json", "delayOffset.json"):
                a, b = _bare_key_table(main.read_text()), _bare_key_table(bak.read_text())
                expected = {f"offsetTable.{k}" for k in set(a) | set(b) if a.get(k) != b.get(k)}
                assert {d.rsplit(".", 1)[0] if d.count(".") > 1 else d for d in loaded.differences} == expected
            else:
                a, b = json.loads(main.read_text()), json.loads(bak.read_text())
                tops = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
                assert {d.split(".", 1)[0] for d in loaded.differences} == tops
                for d in loaded.differences:
                    section, _, rest = d.partition(".")
                    key = rest.split(".", 1)[0]
                    assert a[section].get(key) != b[section].get(key)
    assert compared and differing  # the corpus has both kinds (topics.json.bak is one version behind)


def test_fastjson_dialect():
    assert parse_fastjson(b'{"offsetTable":{"t@g":{0:250,1:250,2:251\n\t\t},"%RETRY%g@g":{0:0}}}') == \
        {"offsetTable": {"t@g": {0: 250, 1: 250, 2: 251}, "%RETRY%g@g": {0: 0}}}
    assert parse_fastjson(b"{'a':'x\\'y', b: [1,,2], c: 12L, d: 1.5D,,}") == {"a": "x'y", "b": [1, 2], "c": 12, "d": 1.5}
    assert parse_fastjson(b'\xef\xbb\xbf/* c */ {"x": // c\n 3, "y": null, "z": true}') == {"x": 3, "y": None, "z": True}
    assert parse_fastjson(b'{"s":"\\u00e9\\t\\/"}') == {"s": "\u00e9\t/"}
    assert parse_fastjson(b"") is None and parse_fastjson(b" \n\t") is None
    assert parse_fastjson(b'{"a":1,"a":2}') == {"a": 2}  # Map.put: the last one wins


@pytest.mark.parametrize("text, where", [
    ('{"a":1} x', 8), ('{"a" 1}', 5), ('{"a":tru}', 5), ('{"a":\\q}', 5), ('{"\u00e9\u00e9":x}', 8),
    ('{"a":', None), ('{"\u00e9":[1,2', None), ('{"a":"\u00e9\u00e9', None), ('/* x', None),
])
def test_parse_errors_name_the_byte(text, where):
    """The byte offset in the file (not the character), the end of the data when it ends too soon."""
    data = text.encode("utf-8")
    with pytest.raises(CorruptData) as error:
        parse_fastjson(data, "f.json")
    assert error.value.path == "f.json"
    assert error.value.offset == (len(data) if where is None else where)


def test_a_broken_file_falls_back_to_its_bak(tmp_path):
    (tmp_path / "consumerOffset.json").write_bytes(b'{\n\t"offsetTable":{\n\t\t"T@g":{0:25')
    (tmp_path / "consumerOffset.json.bak").write_bytes(b'{"offsetTable":{"T@g":{0:20,1:7}}}')
    loaded = load_config(tmp_path, "consumerOffset.json")
    assert loaded.file.error is not None and loaded.file.error.offset == len(b'{\n\t"offsetTable":{\n\t\t"T@g":{0:25')
    assert loaded.loaded_from == "backup"
    assert loaded.decoded.offset_table == {"T@g": {0: 20, 1: 7}}
    (tmp_path / "consumerOffset.json").write_bytes(b'{"offsetTable":{"T@g":{0:"x"}}}')
    wrong_type = load_config(tmp_path, "consumerOffset.json")
    assert wrong_type.loaded_from == "backup" and "expected an integer" in str(wrong_type.file.error)
    missing = load_config(tmp_path, "delayOffset.json")
    assert missing.loaded_from is None and missing.decoded.offset_table == {}


def test_value_differences_name_key_paths():
    assert value_differences({"a": {0: 1, 1: 2}, "b": 1}, {"a": {0: 1, 1: 3, 2: 0}, "b": 1}) == ["a.1", "a.2"]
    assert value_differences({"a": 1}, {"a": 1}) == []
