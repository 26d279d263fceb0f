"""`segtool report` over copies of one partition or store held by several brokers (issue 29 item 8).

The replica sets are built by the brokers' own replication rules (tests/kafka_replica_sets.py,
tests/rocketmq_replica_sets.py: each scenario names the rules of the source it follows).  The report's
``replicas`` must be what ``segtool replicas --json`` gives for the same paths, each partition section
must name its broker and set, and the page's replicas lane must draw those very figures: each copy's
offsets and high watermark, where the copies part (the facts of the construction), and for each
candidate the offsets each follower drops, the best candidate marked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from segtool.ops import report as report_module
from segtool.ops.report_html import BEST, REFERENCE
from tests import rocketmq_replica_sets as rocketmq_build
from tests.conftest import REPO, corpus_path, segtool
from tests.kafka_replica_sets import build
from tests.test_report import _embedded_figures, browser  # noqa: F401  (browser: the fixture)

# diverged copies with committed loss; two rounds of the epoch exchange; a re-created topic (one set, a
# single copy); a torn tail the load cuts; a follower truncating to its high watermark
SCENARIOS = ["unclean_election", "multi_round", "recreated_topic", "damaged_replica", "follower_without_epochs"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    corpus_path("kafka")  # the sets are built from corpus segments
    root = tmp_path_factory.mktemp("replica-sets")
    cache = {}

    def get(name):
        if name not in cache:
            replica_set = build(name, root)
            top = root / name
            compared = _as_in_the_report(segtool("replicas", "--json", "--no-hash", top))
            out = root / f"{name}.html"
            run = segtool("report", top, "--out", out, "--no-hash")
            assert run.returncode in (0, 1), run.stderr
            cache[name] = replica_set, compared, out
        return cache[name]
    return get


def _as_in_the_report(run) -> dict:
    """replicas' report as the report's page holds it: not hashed, the brokers' file lists left to the
    report's own file list."""
    compared = json.loads(run.stdout)
    for broker in compared["brokers"]:
        broker["files"] = []
    return compared


def _figures_in(page: str, section_id: str) -> tuple[dict, dict]:
    """The data and layout of the first figure drawn inside the section ``section_id``."""
    start = page.index(f"id={section_id}>")
    section = page[start:page.index("</section>", start)]
    call = re.search(r'Plotly\.newPlot\("[^"]+",(.*)\);\}\);</script>', section)
    data, layout = json.JSONDecoder().raw_decode(call.group(1))[0], None
    rest = call.group(1)[len(json.dumps(data, separators=(",", ":"), ensure_ascii=False)):]
    layout = json.JSONDecoder().raw_decode(rest.lstrip(","))[0]
    return data, layout


def _drawn(data: list[dict], lane: str, name_part: str = "") -> list[tuple[int, int]]:
    """The (start, end) pieces of the line traces on ``lane`` whose name holds ``name_part``."""
    spans = []
    for trace in data:
        if trace.get("mode") != "lines" or name_part not in trace["name"]:
            continue
        xs, ys = trace["x"], trace["y"]
        spans += [(xs[i], xs[i + 1]) for i in range(0, len(xs), 3) if ys[i] == lane]
    return sorted(spans)


def _covered(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Touching pieces merged."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(m) for m in merged]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_report_holds_what_replicas_gives_and_names_each_copy(built, name):
    replica_set, compared, out = built(name)
    figures = _embedded_figures(out)
    assert figures["replicas"] == compared
    schema = json.loads((REPO / "docs" / "schemas" / "report.schema.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(figures))
    assert not errors, errors[0].message
    # each partition section is one broker's copy: named by its broker, in its set when its topic id is shared
    (found,) = compared["kafka"]
    in_set = {Path(replica.log_dir).name for replica in replica_set.replicas.values()
              if replica.topic_id == found["topic_id"]}
    assert len(figures["partitions"]) == len(replica_set.replicas)
    for partition in figures["partitions"]:
        broker_dir = Path(partition["directory"]).parent.name
        if broker_dir in in_set:
            assert (partition["replica_set"], partition["broker"]) == (0, f"broker {broker_dir[len('broker'):]}")
        else:
            assert (partition["replica_set"], partition["broker"]) == (None, None)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_lane_draws_each_copy_the_parting_and_each_election(built, name):
    replica_set, compared, out = built(name)
    (found,) = compared["kafka"]
    page = out.read_text()
    data, layout = _figures_in(page, "replica-set-0")
    lanes = layout["yaxis"]["categoryarray"]
    for replica in found["replicas"]:
        facts = replica_set.replicas[replica["broker_id"]]
        lane = f"{replica['broker']} holds"
        # the offsets the broker holds once loaded (the construction's facts), one unit per offset
        assert _covered(_drawn(data, lane)) == [(facts.log_start_offset, facts.log_end_offset)]
        marks = [t["x"][0] for t in data if t["name"] == "high watermark" and t["y"] == [lane]]
        assert marks == [facts.loaded_high_watermark]
        cut = [t["x"][0] for t in data if t["name"] == "recovery cut" and t["y"] == [lane]]
        assert cut == ([] if facts.torn is None else [facts.torn.base_offset])
    # where each pair parts: the construction's first differing batch, a dashed line naming the pair
    partings = {}
    for (a, b), divergence in replica_set.first_difference.items():
        if divergence is not None:
            partings.setdefault(divergence.base_offset, []).append(f"broker {a} | broker {b}")
    drawn = {note["x"]: note["text"] for note in layout["annotations"]}
    assert set(drawn) == set(partings)
    for offset, pairs in partings.items():
        assert all(pair in drawn[offset] for pair in pairs)
    # each election: the offsets each follower drops are drawn, committed ones apart, and the figures named
    for candidate in found["candidates"]:
        best = candidate["broker"] == found["best_candidate"]
        lane = next(lane for lane in lanes if lane.startswith(f"elect {candidate['broker']}")
                    and ": " not in lane)
        assert (BEST in lane) == best
        for follower in candidate["followers"]:
            drops = f"{lane}: {follower['broker']} drops"
            runs = follower["dropped"]
            assert _covered(_drawn(data, drops)) == _covered([(r["first_offset"], r["last_offset"] + 1) for r in runs])
            assert (drops in lanes) == bool(runs)
            committed = sum(end - start for start, end in _drawn(data, drops, "dropped, committed"))
            dense = all(r["records"] == r["last_offset"] - r["first_offset"] + 1 for r in runs)
            if dense:  # c01's offsets hold one record each: the red part is the committed records, exactly
                assert committed == sum(r["committed_records"] for r in runs if not r["on_new_leader"])
        section = page[page.index("id=replica-set-0>"):]
        elections = section[section.index('<table class="elections">'):]
        row = re.search(r"<tr><td>" + re.escape(candidate["broker"]) + r"( ★ best)?(?: \([^<]*\))?</td>(.*?)</tr>",
                        elections)
        assert bool(row.group(1)) == best
        cells = re.findall(r"<td>(.*?)</td>", row.group(2))
        assert cells[2:5] == [str(candidate["records_lost"]), str(candidate["committed_records_lost"]),
                              str(candidate["uncommitted_records_lost"])]


def test_the_unclean_election_page_names_the_loss(built):
    """broker 1 led epoch 0 to 2500 (high watermark near 2200); broker 2 was elected uncleanly at ~1900:
    electing broker 1 again is best, and its loss is what brokers 2 and 3 wrote or fetched past the parting."""
    replica_set, compared, out = built("unclean_election")
    (found,) = compared["kafka"]
    assert found["best_candidate"] == "broker 1"
    parting = replica_set.first_difference[(1, 2)].base_offset
    page = out.read_text()
    best = next(c for c in found["candidates"] if c["broker"] == "broker 1")
    assert (f"the copies part at offset {parting}; best candidate broker 1: its election loses "
            f"{best['records_lost']} records, {best['committed_records_lost']} of them committed") in page
    assert "3 of the 3 partition sections below are copies of 1 partitions held by several brokers" in page
    assert "Kafka partition /" in page and "(broker 2&#x27;s copy)" in page


def test_no_copies_no_replicas_and_partition_directories_are_said(tmp_path, built):
    figures = json.loads(segtool("report", "--json", "--no-hash", corpus_path("kafka", "c01-multiseg-clean", "data")).stdout)
    assert figures["replicas"] is None
    assert all(p["replica_set"] is None and p["broker"] is None for p in figures["partitions"])
    replica_set, _, _ = built("unclean_election")
    directories = [replica.log_dir / replica_set.partition_dir for replica in replica_set.replicas.values()]
    figures = json.loads(segtool("report", "--json", "--no-hash", *directories).stdout)
    assert figures["replicas"]["kafka"] == []
    assert any(note.startswith(f"{replica_set.partition_dir}: found in 3 directories but in no replica set")
               for note in figures["notes"])


def test_long_lists_are_capped_and_the_totals_stay(built, monkeypatch):
    """multi_round's elections drop two runs per follower; capped to one, every total stays whole."""
    _, compared, _ = built("multi_round")
    monkeypatch.setattr(report_module, "REPLICA_RUNS_SHOWN", 6)
    monkeypatch.setattr(report_module, "MIN_SHARE", 1)
    bounded, notes = json.loads(json.dumps(compared)), []
    report_module._bound_replicas(bounded, notes)
    followers = [(f, g) for c, d in zip(compared["kafka"][0]["candidates"], bounded["kafka"][0]["candidates"])
                 for f, g in zip(c["followers"], d["followers"])]
    assert any(len(f["dropped"]) > 1 for f, _ in followers)
    for full, capped in followers:
        assert capped["dropped"] == full["dropped"][:1]
        assert {k: v for k, v in capped.items() if k != "dropped"} == {k: v for k, v in full.items() if k != "dropped"}
    assert notes and "at most 1 runs" in notes[0] and "segtool replicas --json" in notes[0]


@pytest.fixture(scope="module")
def rocketmq_sets(tmp_path_factory):
    """5.x controller mode (tests/test_replicas_rocketmq.py's construction: b elected for epoch 2 at c1,
    AutoSwitchHAClient.doTruncate cuts a back to c1) and a DLedger group (n1 led term 2 alone)."""
    root = tmp_path_factory.mktemp("rocketmq-replicas")
    case = corpus_path("rocketmq", "clean-multi")
    golden = rocketmq_build.golden_messages(case)
    donor = corpus_path("rocketmq", "kill9-abort")
    old = rocketmq_build.copy_store(case / "store", root / "controller" / "a")
    new = rocketmq_build.copy_store(case / "store", root / "controller" / "b")
    c1, confirmed = golden[4000]["phyOffset"], golden[4100]["phyOffset"]
    rocketmq_build.cut_commitlog(new, c1)
    rocketmq_build.append_messages(new, c1, rocketmq_build.message_bytes(donor, rocketmq_build.golden_messages(donor)[:5]))
    rocketmq_build.write_epochs(old, [(1, 0)])
    rocketmq_build.write_epochs(new, [(1, 0), (2, c1)])
    rocketmq_build.write_confirm_offset(old, confirmed)
    rocketmq_build.write_confirm_offset(new, c1)
    nodes = root / "dledger"
    rocketmq_build.dledger_node(nodes / "n0", "n0", [1, 1, 1, 2, 3, 3, 3], ["a"] * 7, committed_index=5)
    rocketmq_build.dledger_node(nodes / "n1", "n1", [1, 1, 1, 2, 2, 2], ["a"] * 4 + ["b"] * 2, committed_index=3)
    rocketmq_build.dledger_node(nodes / "n2", "n2", [1, 1, 1, 2, 3], ["a"] * 5, committed_index=3)
    return {"controller": ([root / "controller"], c1, confirmed),
            "dledger": ([nodes / "n0", nodes / "n1", nodes / "n2"], None, None)}, root


@pytest.mark.parametrize("layout", ["controller", "dledger"])
def test_rocketmq_copies_in_the_report_and_the_lane(rocketmq_sets, layout):
    sets, root = rocketmq_sets
    paths, c1, confirmed = sets[layout]
    compared = _as_in_the_report(segtool("replicas", "--json", "--no-hash", *paths))
    out = root / f"{layout}.html"
    segtool("report", *paths, "--out", out, "--no-hash", "--force")
    figures = _embedded_figures(out)
    assert figures["replicas"] == compared
    (found,) = compared["rocketmq"]
    data, layout_ = _figures_in(out.read_text(), "rocketmq-replica-set-0")
    lanes = layout_["yaxis"]["categoryarray"]
    assert sum(REFERENCE in lane for lane in lanes if lane.endswith(f"holds {REFERENCE}")) == 1
    if layout == "controller":
        # a's messages past c1 are dropped when b leads: those below a's confirm offset were confirmed
        assert [s["replica_set"] for s in figures["stores"]] == [0, 0]
        rejoin = next(r for r in found["rejoins"] if r["follower"].endswith("/a"))
        assert rejoin["truncate_to"] == c1
        lane = next(lane for lane in lanes if lane.endswith(f": {rejoin['follower']} drops"))
        assert _drawn(data, lane, "dropped, confirmed") == [(c1, confirmed)]
        assert _covered(_drawn(data, lane)) == [(c1, rejoin["dropped"]["end_offset"])]
        assert [note["x"] for note in layout_["annotations"]] == [c1]
    else:
        # electing n1 (a vote cannot) cuts n0 back to 3: entries 4 and 5 committed there, 6 not
        rejoin = next(r for r in found["dledger_rejoins"] if r["leader"].endswith("n1") and r["follower"].endswith("n0"))
        lane = f"elect {rejoin['leader']} (a vote cannot elect it): {rejoin['follower']} drops"
        assert _drawn(data, lane, "dropped, committed") == [(4, 6)]
        assert _drawn(data, lane, "never committed") == [(6, 7)] and rejoin["committed_dropped"] == 2
        assert [note["x"] for note in layout_["annotations"]] == [4]


def test_the_lane_renders(built, browser):  # noqa: F811
    _, compared, out = built("unclean_election")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(out.as_uri())
    page.wait_for_selector("#replica-set-0 .js-plotly-plot .main-svg", timeout=30_000)
    lanes = page.evaluate("""() => {
        const gd = document.querySelector('#replica-set-0 .js-plotly-plot');
        return [...gd.querySelectorAll('.ytick text')].map(t => t.textContent);
    }""")
    widths = page.evaluate("""() => {
        const gd = document.querySelector('#replica-set-0 .js-plotly-plot');
        return [...gd.querySelectorAll('.scatterlayer .trace path.js-line')].map(p => p.getBoundingClientRect().width);
    }""")
    page.close()
    assert not errors, errors
    (found,) = compared["kafka"]
    assert {f"{r['broker']} holds" for r in found["replicas"]} <= set(lanes)
    assert any(BEST in lane for lane in lanes)
    assert widths and max(widths) > 100


def test_parted_copies_make_the_report_exit_1_and_its_text_says_where(built):
    """report's verdict includes replicas': copies that part are a problem found (1), said in the text too."""
    replica_set, compared, _ = built("unclean_election")
    parting = replica_set.first_difference[(1, 2)].base_offset
    run = segtool("report", "--no-hash", *[str(p) for p in replica_set.brokers.values()])
    assert run.returncode == 1, run.stderr
    (found,) = compared["kafka"]
    best = next(c for c in found["candidates"] if c["broker"] == found["best_candidate"])
    said = (f"Replicas of c01-plain-0: 3 copies, parting at offset {parting}; best election broker 1 loses "
            f"{best['records_lost']} records ({best['committed_records_lost']} committed)")
    assert " ".join(said.split()) in " ".join(run.stdout.split())  # lines are fitted to 80 columns
