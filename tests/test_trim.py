"""trim: preallocated index files shrink to their valid entries, like Kafka's trimToValidSize."""

from __future__ import annotations


import pytest

from segtool.kafka.index import OffsetIndex, TimeIndex
from segtool.ops.trim import trim
from tests.conftest import case_dirs, segtool


def _hot_copy_indexes():
    for case in case_dirs("kafka"):
        if case.name == "c02-unclean-hot-copy":
            return sorted(p for p in (case / "data").glob("*/*") if p.suffix in (".index", ".timeindex"))
    return []


def test_hot_copy_indexes_trim_to_their_valid_entries(tmp_path):
    files = _hot_copy_indexes()
    if not files:
        pytest.skip("c02-unclean-hot-copy needs ../shared/corpus")
    preallocated = [f for f in files if f.stat().st_size >= 1_000_000]
    assert preallocated, "the case documents 1 MiB and 10 MiB preallocated indexes"
    for path in preallocated:
        out = tmp_path / path.parent.name
        report = trim([str(path)], out_dir=str(out))
        (item,) = report["files"]
        trimmed = (out / path.parent.name / path.name).read_bytes()
        cls = TimeIndex if path.suffix == ".timeindex" else OffsetIndex
        valid = cls(path).valid_entries
        assert len(trimmed) == valid * cls(path).entry_size == item["trimmed_size"]
        assert trimmed == path.read_bytes()[: len(trimmed)]
        assert item["bytes_reclaimed"] == path.stat().st_size - len(trimmed)
        assert len(trimmed) == 0 or trimmed[-cls(path).entry_size:].strip(b"\0")
        cls(out / path.parent.name / path.name).sanity_check()


def test_trim_names_a_non_index_file_and_finds_nothing(tmp_path):
    """A readable file trim has nothing to do with: nothing found (1), named with the reason, nothing written."""
    log = next((case_dirs("kafka")[0] / "data").glob("*/*.log"))
    run = segtool("trim", log, "--out", tmp_path)
    assert run.returncode == 1 and f"skipped {log}: not a Kafka .index or .timeindex" in run.stdout
    assert list(tmp_path.iterdir()) == []
