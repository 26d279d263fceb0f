"""`segtool report`: the page as a person sees it, in headless Chromium, for every corpus case.

Each case's page must render (plotly's SVG drawn, no JavaScript error) and the figures it embeds
(``<script id="segtool-figures">``) must agree with ``verify --json`` on the same input: every
file's status, batch and record counts and recovery, every finding with its offsets, the point
where recovery truncates; the timeline's own batch counts (a second framing pass) must equal
verify's, and its record counts those of ``verify --deep`` (which counts legacy messages too).
The fast tier reads the figures from the page's file; the browser tests (full tier) from the page.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import REPO, case_dirs, corpus_path, segtool

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]


def _cases() -> list[Path]:
    """Every case's input, found by walking the corpus: Kafka data/ dirs, RocketMQ store/ dirs."""
    inputs = [case / "data" for case in case_dirs("kafka") if (case / "data").is_dir()]
    return inputs + [case / "store" for case in case_dirs("rocketmq") if (case / "store").is_dir()]


CASES = _cases()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no browser at {CHROMIUM} (Debian's chromium package; `make test` installs it where it can)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


def _json(*args) -> tuple[dict, int]:
    run = segtool(*args)
    assert run.returncode in (0, 1, 2), (args, run.stderr)
    return json.loads(run.stdout), run.returncode


def _shown(page_figures: dict) -> list[dict]:
    groups = [p["findings"] for p in page_figures["partitions"]] + [s["findings"] for s in page_figures["stores"]]
    return [f for group in groups + [page_figures["other_findings"]] for f in group["shown"]]


def _report_and_verify(case: Path, out: Path) -> tuple[dict, dict]:
    """The report's page of a case written to ``out``; verify's and verify --deep's reports of it."""
    run = segtool("report", case, "--out", out, "--no-hash")
    verified, verify_code = _json("verify", "--json", "--no-hash", case)
    deep, _ = _json("verify", "--json", "--no-hash", "--deep", case)
    assert run.returncode == verify_code, run.stderr
    return verified, deep


def _embedded_figures(page: Path) -> dict:
    """The figures a page embeds, read from its file (no browser)."""
    html = page.read_text()
    start = html.index('id="segtool-figures">') + len('id="segtool-figures">')
    return json.loads(html[start:html.index("</script>", start)])


CASE_IDS = [f"{p.parent.parent.name}-{p.parent.name}" for p in CASES]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_page_agrees_with_verify(case, tmp_path):
    out = tmp_path / "report.html"
    verified, deep = _report_and_verify(case, out)
    _agree_with_verify(_embedded_figures(out), verified, deep)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_page_renders_and_agrees_with_verify(case, browser, tmp_path):
    out = tmp_path / "report.html"
    verified, deep = _report_and_verify(case, out)

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(out.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    plots = page.locator(".js-plotly-plot").count()
    drawn = page.locator(".js-plotly-plot .main-svg").count()
    figures = page.evaluate("JSON.parse(document.getElementById('segtool-figures').textContent)")
    page.close()
    assert not errors, errors
    assert plots >= len(figures["partitions"]) + len(figures["stores"]) >= 1
    assert drawn >= plots
    assert figures == _embedded_figures(out)
    _agree_with_verify(figures, verified, deep)


def _agree_with_verify(figures: dict, verified: dict, deep: dict) -> None:
    # every file: verify's figures
    by_path = {item["path"]: item for item in verified["files"]}
    assert figures["summary"] == verified["summary"]
    assert [f["path"] for f in figures["files"]] == [item["path"] for item in verified["files"]]
    for shown in figures["files"]:
        item = by_path[shown["path"]]
        assert shown["status"] == item["status"], shown["path"]
        assert shown["problems"] == len(item["problems"]), shown["path"]
        for name in ("batches", "records", "first_offset", "last_offset", "recovery"):
            assert shown[name] == item.get(name), (shown["path"], name)

    # every finding, listed once with its kind and offsets, and placed on a timeline
    expected = Counter((item["path"], p["kind"], p["byte_offset"], p["offset"])
                       for item in verified["files"] for p in item["problems"])
    listed = _shown(figures)
    assert Counter((f["file"], f["kind"], f["byte_offset"], f["offset"]) for f in listed) == expected
    placed = [f for p in figures["partitions"] + figures["stores"] for f in p["findings"]["shown"]]
    assert all(f["placed_at"] is not None for f in placed)

    # Kafka: the timeline's batches are verify's, its records verify --deep's; the truncation point
    deep_records = {item["path"]: item.get("records") for item in deep["files"]}
    for partition in figures["partitions"]:
        for segment in partition["segments"]:
            item = by_path[segment["file"]]
            assert segment["batches"] == item["batches"], segment["file"]
            assert segment["records"] == deep_records[segment["file"]], segment["file"]
            assert segment["first_offset"] == item["first_offset"] and segment["last_offset"] == item["last_offset"]
        timeline = partition["timeline"]
        assert sum(timeline["batches"]) == partition["batches"] == sum(s["batches"] for s in partition["segments"])
        cut = next((by_path[s["file"]] for s in partition["segments"]
                    if (by_path[s["file"]].get("recovery") or {}).get("bytes_lost")), None)
        if cut is None:
            assert partition["truncation"] is None
        else:
            truncation = partition["truncation"]
            assert (truncation["file"], truncation["byte_offset"], truncation["reason"]) == (
                cut["path"], cut["recovery"]["valid_bytes"], cut["recovery"]["stop_reason"])
            damaged = [p for p in cut["problems"] if p["kind"] == "damaged_range"]
            assert [d["first_byte"] for d in partition["damaged"]] == [p["byte_offset"] for p in damaged]
            assert truncation["offset"] == damaged[0]["offset"]

    # RocketMQ: the CommitLog walk's messages are verify's, the cut is its recovery's
    for store in figures["stores"]:
        for coverage in store["commitlog"]:
            assert coverage["messages"] == by_path[coverage["file"]]["messages"], coverage["file"]
        assert sum(q["messages"] for q in store["queues"]) == store["messages"] == sum(
            sum(series["messages"]) for series in store["timeline"]["series"])
        cut = next((by_path[c["file"]] for c in store["commitlog"]
                    if by_path[c["file"]]["recovery"]["bytes_lost"]), None)
        assert (store["truncation"] is None) == (cut is None)
        if cut is not None:
            assert store["truncation"]["byte_offset"] == cut["recovery"]["valid_bytes"]


def test_json_follows_its_schema_and_the_summary_reads_in_a_terminal():
    case = corpus_path("kafka", "c11a-crc-byte-flip", "data")
    figures, code = _json("report", "--json", "--no-hash", case)
    schema = json.loads((REPO / "docs" / "schemas" / "report.schema.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(figures))
    assert not errors, errors[0].message
    assert code == 1
    summary = segtool("report", "--no-hash", case)
    assert summary.returncode == 1
    partition = figures["partitions"][0]
    assert f"{partition['batches']} batches, {partition['records']} records" in summary.stdout
    assert f"at byte {partition['truncation']['byte_offset']} (offset {partition['truncation']['offset']}" \
           in summary.stdout
    assert any(mark in summary.stdout for mark in "▁▂▃▄▅▆▇█")
    assert "crc_mismatch" in summary.stdout and "\x1b[" not in summary.stdout  # plain when piped


def test_transactions_and_out_of_order_timestamps_come_from_the_batches():
    transactions, _ = _json("transactions", "--json", corpus_path("kafka", "c04-transactions", "data"))
    figures, _ = _json("report", "--json", "--no-hash", corpus_path("kafka", "c04-transactions", "data"))
    expected = transactions["partitions"][0]
    shown = figures["partitions"][0]["transactions"]
    assert (shown["committed"], shown["aborted"]) == (expected["commits"], expected["aborts"])
    aborted = [(s["producer_id"], s["first_offset"], s["last_offset"]) for s in shown["shown"] if s["outcome"] == "abort"]
    assert aborted == [(r["producer_id"], r["first_offset"], r["last_offset"]) for r in expected["aborted_ranges"]]
    dumped = segtool("dump", "--json", corpus_path("kafka", "c06-ooo-timestamps", "data", "c06-ooo-ts-0"))
    batches = [item for item in map(json.loads, dumped.stdout.splitlines()) if item["kind"] == "batch"]
    late, highest = [], -1
    for batch in batches:
        if 0 <= batch["max_timestamp"] < highest:
            late.append(batch["base_offset"])
        highest = max(highest, batch["max_timestamp"])
    figures, _ = _json("report", "--json", "--no-hash", corpus_path("kafka", "c06-ooo-timestamps", "data", "c06-ooo-ts-0"))
    events = figures["partitions"][0]["out_of_order"]
    assert late and events["count"] == len(late) and [e["offset"] for e in events["shown"]] == late


def test_an_unreadable_input_and_an_output_inside_the_evidence_are_refused(tmp_path):
    missing = segtool("report", tmp_path / "absent", "--out", tmp_path / "r.html")
    assert missing.returncode == 2 and not (tmp_path / "r.html").exists()
    case = corpus_path("kafka", "c04-transactions", "data")
    inside = segtool("report", case, "--out", case / "report.html")
    assert inside.returncode == 2 and "inside the input" in inside.stderr
