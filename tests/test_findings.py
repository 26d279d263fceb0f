"""Findings are typed: every kind verify and scan report is a FindingKind whose severity the
report carries, and the docs table of kinds is the enum's."""

from __future__ import annotations


import pytest

from segtool.findings import TABLE_END, TABLE_START, FindingKind, Findings, Severity, finding, markdown_table
from segtool.ops.verify import verify

from tests.conftest import CORPUS, REPO

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")


def test_docs_table_is_the_enum():
    text = (REPO / "docs" / "formats.md").read_text()
    table = text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)]
    assert table == markdown_table(), "run: make docs"


def test_a_kind_fixes_its_severity():
    assert finding(FindingKind.BAD_MAGIC, 0, "x")["severity"] == "error"
    assert finding(FindingKind.OFFSET_GAP, 0, "x")["severity"] == "info"
    assert finding(FindingKind.ZERO_TAIL, 0, "x", info=True)["severity"] == "info"  # a kind that allows notes
    with pytest.raises(ValueError):
        finding(FindingKind.BAD_MAGIC, 0, "x", info=True)


def test_findings_list_ten_per_kind_and_count_the_rest():
    findings = Findings(per_kind=10)
    for i in range(13):
        findings.add(FindingKind.ENTRY_POINTS_NOWHERE, i, f"entry {i}")
    out = findings.result()
    assert len(out) == 11 and out[-1]["byte_offset"] == 10 and out[-1]["message"].startswith("3 more")


def _corpus_paths() -> list[str]:
    paths = []
    for tree in sorted(CORPUS.iterdir()):
        if tree.is_dir():
            paths.append(str(tree))
    return paths


@pytest.fixture(scope="module")
def corpus_report() -> dict:
    """verify over the whole corpus (damage cases and wild/ included), once for the module."""
    return verify(_corpus_paths(), hash_inputs=False)


def test_every_reported_problem_is_a_declared_kind_with_its_severity(corpus_report):
    """verify over the whole corpus (damage cases and wild/ included): each problem's kind is a
    FindingKind, and its severity is the kind's own unless the kind declares when it is a note."""
    report = corpus_report
    seen = set()
    for item in report["files"]:
        errors = False
        for problem in item.get("problems", []):
            kind = FindingKind[problem["kind"].upper()]
            seen.add(kind)
            severity = Severity(problem["severity"])
            assert severity == kind.severity or kind.info_when is not None, (item["path"], problem)
            errors |= severity is Severity.ERROR
        if item["status"] in ("ok", "problems"):
            assert item["status"] == ("problems" if errors else "ok"), item["path"]
    # the corpus exercises both brokers' kinds, errors and notes
    assert {FindingKind.CRC_MISMATCH, FindingKind.RECOVERY_TRUNCATION, FindingKind.OFFSET_GAP} & seen
    assert any(k.severity is Severity.ERROR for k in seen) and any(k.severity is Severity.INFO for k in seen)
    assert len(seen) >= 20, sorted(k.code for k in seen)


def test_index_findings_carry_the_offset_they_concern(corpus_report):
    """An index-versus-log finding names the indexed offset as a value, not only in its message."""
    report = corpus_report
    index_kinds = {"index_offset_mismatch", "indexed_offset_not_found", "indexed_offset_inside_batch"}
    found = [p for item in report["files"] for p in item.get("problems", []) if p["kind"] in index_kinds]
    assert found, "the corpus has index damage cases"
    for problem in found:
        assert isinstance(problem["offset"], int) and str(problem["offset"]) in problem["message"]
