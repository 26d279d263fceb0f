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
import re
from collections import Counter
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from segtool.ops.report import SEGMENT_ROWS
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
    unwrapped = " ".join(line.strip() for line in summary.stdout.splitlines())  # lines wrap at the terminal's width
    assert f"at byte {partition['truncation']['byte_offset']}: offsets {partition['truncation']['offset']}.." \
           in unwrapped
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


# -- issue 27: what start-up drops, damage that stays visible, a bounded page, closed files ----------


@pytest.mark.parametrize("case", ["c11a-crc-byte-flip", "c11b-truncated-last-batch", "c11c-zero-tail-64k"])
def test_the_page_says_what_startup_drops_and_salvage_gets_back(case, tmp_path):
    data = corpus_path("kafka", case, "data")
    out = tmp_path / "report.html"
    segtool("report", data, "--out", out, "--no-hash")
    startup = _embedded_figures(out)["partitions"][0]["startup"]
    inspected, _ = _json("inspect", "--json", data)
    plan = inspected["log_dirs"][0]["partitions"][0]["plan"]
    cut = plan["truncated_at"]
    assert (startup["truncated_file"], startup["truncated_at_byte"], startup["truncated_at_offset"]) == (
        cut["segment"], cut["byte_offset"], cut["offset"])
    assert startup["segments_deleted"] == len(plan["deleted_segments"])
    assert startup["log_end_offset"] == plan["log_end_offset"] and startup["dropped_bytes"] == cut["bytes_dropped"]
    salvaged = json.loads(segtool("salvage", "--json", data / "c01-plain-0", "--out", tmp_path / "out").stdout)
    salvaged = salvaged["partitions"][0]
    # c01's offsets are dense (one record per offset): what salvage keeps past the cut is what the page offers
    kept_past_cut = sum(r["last_offset"] - max(r["first_offset"], cut["offset"]) + 1
                        for r in salvaged["offset_ranges_kept"] if r["last_offset"] >= cut["offset"])
    assert startup["salvageable_records"] == kept_past_cut
    assert [(r["first_offset"], r["last_offset"]) for r in startup["lost_ranges"]] == [
        (d["first_offset"], d["last_offset"]) for d in salvaged["damaged_ranges"]]
    verified, _ = _json("verify", "--json", "--no-hash", data)
    recovery = next(item for item in verified["files"] if item["path"] == cut["segment"])["recovery"]
    # records_lost counts a torn batch's declared records already (its header names them: c11b's 500..524)
    assert startup["dropped_records"] == recovery["records_lost"] == cut["records_dropped"]
    assert startup["torn_batch_records"] == recovery["torn_batch_records"]
    page = out.read_text()
    dropped = f"offsets {cut['offset']}..{cut['dropped_until'] - 1}" if cut["records_dropped"] else "no record"
    assert f"recovery drops {dropped} (" in page
    assert f"salvage gets back {kept_past_cut} of these records" in page


def test_rocketmq_pages_name_files_under_the_store_and_mark_the_cut(tmp_path):
    store = corpus_path("rocketmq", "corrupt-body-crc", "store")
    out = tmp_path / "report.html"
    segtool("report", store, "--out", out, "--no-hash")
    page = out.read_text()
    figures = _embedded_figures(out)["stores"][0]
    cut = figures["truncation"]["offset"]
    # every ConsumeQueue file is named 00000000000000000000: the page names it under the store
    assert re.search(r"<td>consumequeue/OrderTopic/0/\d{20}</td>", page)
    assert "Every point of a timeline" not in page  # the Kafka note belongs to Kafka pages
    dropped_messages = sum(figures["timeline"]["dropped_by_recovery"])
    deleted = next(f for f in figures["findings"]["shown"] if f["kind"] == "deleted_by_recovery")
    after_cut_file = next(c for c in figures["commitlog"] if c["file"] == deleted["file"])["messages"]
    assert dropped_messages > after_cut_file > 0 and figures["timeline"]["cut_timestamp"] is not None
    for finding in figures["findings"]["shown"]:
        if finding["kind"] == "beyond_recovery_point" and "/index/" in finding["file"]:
            assert finding["placed_at"] >= cut, finding
    index_only = tmp_path / "index-only.html"
    segtool("report", corpus_path("rocketmq", "corrupt-index-count", "store"), "--out", index_only, "--no-hash")
    assert "no CommitLog here" in index_only.read_text() and "keeps every message" not in index_only.read_text()


def test_the_terminal_summary_fits_80_columns():
    run = segtool("report", "--no-hash", corpus_path("kafka", "c11a-crc-byte-flip", "data"),
                  corpus_path("rocketmq", "corrupt-body-crc", "store"), env={"COLUMNS": "80"})
    lines = run.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert "  1 segment, 26 batches" in run.stdout


def _damage_mark_widths(page) -> list[float]:
    """The drawn widths (px) of the damaged-range marks of every plot that has them."""
    return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd => {
        const index = gd.data.findIndex(t => t.name === 'damaged (marks)');
        if (index < 0) return [];
        const group = [...gd.querySelectorAll('.scatterlayer .trace')]
            .find(g => g.__data__ && g.__data__[0] && g.__data__[0].trace.index === index);
        return [...group.querySelectorAll('path.point')].map(p => p.getBoundingClientRect().width);
    })""")


@pytest.mark.browser
@pytest.mark.parametrize("case", [("kafka", "c11b-truncated-last-batch", "data"),
                                  ("rocketmq", "corrupt-truncated-commitlog", "store")], ids=lambda c: c[1])
def test_a_torn_tail_is_drawn_wider_than_nothing(case, browser, tmp_path):
    out = tmp_path / "report.html"
    segtool("report", corpus_path(*case), "--out", out, "--no-hash")
    damaged = _embedded_figures(out)
    # the torn tail is there, a few KB at the end of a MB axis (c11b: 2955 bytes; its offsets, 500..524,
    # are the ones the torn batch's header declares)
    assert any(d["reason"] == "truncated" for section in damaged["partitions"] + damaged["stores"]
               for d in section["damaged"])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(out.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    widths = _damage_mark_widths(page)
    page.close()
    assert widths and min(widths) > 0


def _many_segments(directory: Path, segments: int, damaged: bool) -> None:
    """A partition of ``segments`` segments of two real c01 batches each (base offsets rewritten, which
    the CRC does not cover), with the indexes Kafka's recovery writes; ``damaged``: one byte flipped
    in the records of every segment's second batch (a CRC mismatch in each)."""
    from segtool.kafka.log import BatchScan
    from segtool.kafka.names import INDEX, LOG, TIME_INDEX, file_name
    from segtool.kafka.recovery import recover_segment

    source = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0", "00000000000000000000.log").read_bytes()
    batches = [(bytes(source[b.position:b.end]), b.last_offset - b.base_offset + 1) for b in BatchScan(source)]
    directory.mkdir(parents=True)
    offset = 0
    for number in range(segments):
        base, parts = offset, []
        for k in range(2):
            raw, count = batches[(2 * number + k) % len(batches)]
            raw = bytearray(raw)
            raw[0:8] = offset.to_bytes(8, "big")
            if damaged and k == 1:
                raw[len(raw) // 2] ^= 0x20
            parts.append(bytes(raw))
            offset += count
        log = b"".join(parts)
        (directory / file_name(base, LOG)).write_bytes(log)
        recovery = recover_segment(log, str(directory / file_name(base, LOG)), base)
        (directory / file_name(base, INDEX)).write_bytes(recovery.offset_index_bytes())
        (directory / file_name(base, TIME_INDEX)).write_bytes(recovery.time_index_bytes())


@pytest.mark.slow
def test_every_index_is_drawn_with_few_file_descriptors(tmp_path):
    partition = tmp_path / "logs" / "many-0"
    _many_segments(partition, 1200, damaged=False)
    script = ("import json, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
              "from segtool.ops.report import report; figures = report([sys.argv[1]], hash_inputs=False); "
              "print(json.dumps(figures['partitions'][0], default=str))")
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", script, str(partition)], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(run.stdout)
    from segtool.kafka.index import OffsetIndex

    entries = sum(OffsetIndex(str(path), int(path.stem)).trim_to_valid().entries for path in partition.glob("*.index"))
    assert entries > 500 and figures["offset_index"]["entries"] == entries
    assert not [note for note in figures["notes"] if "not drawn" in note]
    assert figures["segments_total"] == 1200 and figures["batches"] == 2400


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_of_10000_damaged_segments_stays_under_5_mb(browser, tmp_path):
    partition = tmp_path / "logs" / "many-0"
    _many_segments(partition, 10_000, damaged=True)
    out = tmp_path / "report.html"
    run = segtool("report", partition, "--out", out, "--no-hash")
    assert run.returncode == 1, run.stderr
    assert out.stat().st_size <= 5_000_000
    figures = _embedded_figures(out)["partitions"][0]
    findings = figures["findings"]
    assert findings["total"] >= 10_000
    # every finding of every kind is drawn: the bins count them all, along the whole partition
    assert {b["kind"] for b in findings["bins"]} == set(findings["by_kind"])
    assert sum(b["count"] for b in findings["bins"]) == findings["total"]
    assert max(b["last"] for b in findings["bins"]) >= figures["last_offset"] - 100
    assert figures["segments_total"] == 10_000 and len(figures["segments"]) <= SEGMENT_ROWS
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(out.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    widths = _damage_mark_widths(page)
    page.close()
    assert not errors and widths and min(widths) > 0
