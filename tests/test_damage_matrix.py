"""Every command answers on damaged and messy evidence, and all commands agree about the same bytes.

The matrix of issue 27: each of the 14 commands, as text and as --json, over each fixture of
tests/damage_fixtures.py (the corpus's damaged cases, generated damage of every kind, replicas side
by side, mixed brokers, links, foreign files).  Each (command, fixture, format) runs once, in process,
and is kept for the session; the tests below only read what it printed.  For every cell: no
traceback and no Python exception text, an exit code from the one table (0 clean for what the
command looks at, 1 damage or nothing found, 2 an unreadable input or a usage error), --json output
that parses even when the command fails, every file of the tree named by the commands that walk
it, and the originals byte for byte as they were.  Then the figures of loss: the log end offset and
the records Kafka's recovery drops, as lookup, verify, inspect, salvage and report give them, and
the CommitLog cut and the messages RocketMQ's recovery drops, as verify, inspect, salvage and
report give them, equal to one another and to the corpus goldens or the bytes the builder damaged;
and replicas' figures for the torn copy among replicas side by side, equal to verify's and inspect's.

The whole matrix is the full tier (slow); SMOKE, one row of c11a from sample_data/ and a few cells
of a kill -9 RocketMQ store, runs in the fast tier.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import segtool
from tests.damage_fixtures import BUILDERS, Fixture

COMMANDS = ("dump", "lookup", "index-keys", "verify", "report", "inspect", "groups", "transactions",
            "rebuild-index", "trim", "carve", "salvage", "scan", "replicas")
FORMATS = ("text", "json")
# given --out; the originals must be byte-identical after them
WRITING = frozenset({"index-keys", "rebuild-index", "trim", "carve", "salvage", "scan"})
# commands given the whole tree; an unreadable entry anywhere in it is theirs to report
TREE = frozenset({"dump", "verify", "report", "inspect", "rebuild-index", "trim", "carve", "salvage", "scan",
                  "replicas"})
# commands that answer for every file they were given: each is named, processed or skipped with a
# reason ("nothing skipped in silence"); the text of report, carve, salvage and scan is a summary,
# so for them the --json document is where every file is named
NAMES_EVERY_FILE = {"dump": FORMATS, "verify": FORMATS, "inspect": FORMATS,
                    "report": ("json",), "carve": ("json",), "salvage": ("json",), "scan": ("json",)}

SMOKE = {("json", command, "c11a_crc_byte_flip") for command in COMMANDS} | {
    ("text", "verify", "c11a_crc_byte_flip"), ("text", "lookup", "c11a_crc_byte_flip"),
    ("text", "verify", "rocketmq_kill9_abort"), ("json", "verify", "rocketmq_kill9_abort"),
    ("json", "inspect", "rocketmq_kill9_abort"), ("json", "salvage", "rocketmq_kill9_abort"),
    ("text", "dump", "cut_producer_snapshot")}

# Python's own exception names: a command that prints one let an exception through unexplained
PYTHON_EXCEPTION = re.compile(r"\b(ValueError|TypeError|KeyError|IndexError|AttributeError|NameError|"
                              r"UnboundLocalError|ZeroDivisionError|AssertionError|RuntimeError|RecursionError|"
                              r"OverflowError|StopIteration|UnicodeDecodeError|UnicodeEncodeError|struct\.error|"
                              r"NotImplementedError)\b")
TRACEBACK_FRAME = re.compile(r'^\s*File ".*", line \d+', re.MULTILINE)


@dataclass(repr=False)
class Cell:
    command: str
    fixture: Fixture
    fmt: str
    argv: list[str]
    run: subprocess.CompletedProcess
    before: dict[str, str]
    after: dict[str, str]

    def __repr__(self) -> str:
        return (f"segtool {' '.join(self.argv)}\nexit {self.run.returncode}\nstderr: {self.run.stderr[-1500:]}\n"
                f"stdout: {self.run.stdout[:1500]}")


class Matrix:
    """The fixtures, built on first use, and every cell, run on first use; both kept."""

    def __init__(self, base: Path):
        self.base = base
        self.fixtures: dict[str, Fixture] = {}
        self.cells: dict[tuple[str, str, str], Cell] = {}

    def fixture(self, name: str) -> Fixture:
        if name not in self.fixtures:
            self.fixtures[name] = BUILDERS[name](self.base / "fixtures")
        return self.fixtures[name]

    def cell(self, fmt: str, command: str, name: str) -> Cell:
        key = (fmt, command, name)
        if key not in self.cells:
            fixture = self.fixture(name)
            argv = arguments(command, fixture, self.base / "out" / f"{command}-{fmt}-{name}")
            if fmt == "json":
                argv.append("--json")
            before = fixture.digest()
            run = segtool(*argv)
            self.cells[key] = Cell(command, fixture, fmt, argv, run, before, fixture.digest())
        return self.cells[key]


def arguments(command: str, f: Fixture, out: Path) -> list[str]:
    if command == "lookup":
        return [command, str(f.partition or f.store), *f.lookup_args]
    if command == "index-keys":
        return [command, str(f.partition or f.store), "--out", str(out)]
    if command in ("groups", "transactions"):
        return [command, str(f.logdir)]
    argv = [command, str(f.root)]
    if command in WRITING:
        argv += ["--out", str(out)]
    if command == "scan":
        argv += ["--workers", "1"]  # in this process: a pool would fork pytest's
    return argv


def expected_exit(command: str, f: Fixture) -> int:
    """The one table (segtool --help): 0 clean, 1 problems or nothing found, 2 unreadable input or
    usage error, applied to what each command looks at (damage tags: tests/damage_fixtures.py)."""
    damage = f.damage
    if command in ("lookup", "index-keys"):
        if not f.recognised or (command == "index-keys" and f.store is not None):
            return 1  # a readable path with no partition (for index-keys, no Kafka one): nothing found
        if command == "lookup":
            # the broker answers as after its load, and the answer says where that load cuts the log
            # (a problem found: 1); damage only in indexes and snapshots costs no record
            return 1 if damage & {"log", "commitlog"} else 0
        return 1 if "log" in damage else 0  # index-keys reads every record: it meets the damage
    if "unreadable" in damage and command in TREE:
        return 2  # a dangling link and a link loop are unreadable entries (docs/formats.md: unreadable, exit 2)
    if not f.recognised:
        return 1  # nothing of a broker's: nothing found
    if "unreadable" in damage and command in ("groups", "transactions"):
        return 2  # they walk the log dir too: an unreadable entry there is named and is 2, as in TREE
    if command == "replicas":
        # only what two or more brokers hold is compared: a tree of one copy is nothing found; of copies side
        # by side, one the load cuts (a torn batch) is a damaged replica, and only whole copies are clean
        return 1 if "duplicates" not in damage or damage & {"log", "commitlog"} else 0
    if command == "groups":
        return 0 if f.groups else 1  # no committed offsets: none found
    if command == "transactions":
        # none found is 1; a snapshot is rebuilt from the log, so only damage in the log is a problem here
        return 0 if f.transactions and not damage & {"log", "offsets"} else 1
    if command == "dump":
        # dump decodes: 1 where decoding meets damage; index entries out of order or pointing
        # mid-batch and a misplaced but whole batch decode (kafka-dump-log exits 0 on c11d-f:
        # expected/dump/exit-codes.json), as do a file of the wrong size and an abort marker
        return 1 if damage & {"log", "snapshot", "commitlog"} else 0
    if command in ("verify", "report"):
        # every file checked: any damage; an unclean shutdown alone loses nothing and is a note
        return 1 if damage - {"unclean_shutdown"} else 0
    if command == "inspect":
        # the plan: what the load drops or refuses is 1; what it rebuilds without a loss (indexes, whose
        # contents verify judges) and a segment it splits (LogLoader.splitOverflowedSegment: no record
        # dropped) are notes; an unclean shutdown is the plan itself
        return 1 if damage - {"index", "rocketmq_index", "offsets", "unclean_shutdown"} else 0
    if command == "carve":
        # checksum-valid finds: damaged bytes are not finds; 1 when a find cannot be placed (the same
        # batches twice: replicas; a message whose queue offset a different one holds: a compaction log's
        # rewritten copies) or nothing is found.  A Kafka batch names no topic or partition, so one claiming
        # offsets another run holds may be another partition's: no conflict for carve to name
        return 1 if damage & {"duplicates", "rewritten_copies", "rocketmq_index"} else 0
    if command == "salvage":
        # the batches and messages: data damage or an offset conflict is 1; indexes and snapshots are
        # rebuilt, not read; an index-only store has nothing to write back: nothing found
        return 1 if damage & {"log", "commitlog", "rocketmq_index", "offsets"} else 0
    if command == "scan":
        # the records as kafka-dump-log --deep-iteration lists them (a misplaced whole batch included)
        return 1 if damage & {"log", "commitlog", "rocketmq_index"} else 0
    if command == "rebuild-index":
        # indexes rebuilt from the data as recovery does: damage in the data (recovery truncates while
        # rebuilding) or no data to rebuild from is 1; the old indexes are what it replaces
        return 1 if damage & {"log", "commitlog", "rocketmq_index", "offsets"} else 0
    if command == "trim":
        # Kafka's trimToValidSize: the zero tail after the entries, not what they mean (verify's
        # to judge); a store has no Kafka index to trim: nothing found
        return 1 if f.store is not None else 0
    raise AssertionError(command)


@pytest.fixture(scope="session")
def matrix(tmp_path_factory) -> Matrix:
    return Matrix(tmp_path_factory.mktemp("damage-matrix"))


def _cells(commands=COMMANDS, formats=FORMATS, fixtures=tuple(BUILDERS)):
    return [pytest.param(fmt, command, name, id=f"{command}-{fmt}-{name}",
                         marks=() if (fmt, command, name) in SMOKE else pytest.mark.slow)
            for name in fixtures for command in commands for fmt in formats]


@pytest.mark.parametrize("fmt,command,name", _cells())
def test_answers_without_a_traceback(matrix, fmt, command, name):
    cell = matrix.cell(fmt, command, name)
    output = cell.run.stderr + cell.run.stdout
    assert "Traceback" not in output and not TRACEBACK_FRAME.search(output), cell
    assert not PYTHON_EXCEPTION.search(cell.run.stderr) and "internal error" not in cell.run.stderr, cell
    for entry in cell.fixture.unreadable:
        if command in TREE:  # each unreadable entry is named (a line on stderr, or its place in the report)
            assert entry.name in output, cell


@pytest.mark.parametrize("fmt,command,name", _cells())
def test_exit_code_follows_the_table(matrix, fmt, command, name):
    cell = matrix.cell(fmt, command, name)
    assert cell.run.returncode == expected_exit(command, cell.fixture), cell


@pytest.mark.parametrize("fmt,command,name", _cells(formats=("json",)))
def test_json_output_parses_even_on_failure(matrix, fmt, command, name):
    cell = matrix.cell(fmt, command, name)
    assert parse_json(cell.run.stdout), cell


@pytest.mark.parametrize("fmt,command,name", [
    p for p in _cells(commands=tuple(NAMES_EVERY_FILE)) if p.values[0] in NAMES_EVERY_FILE[p.values[1]]])
def test_every_file_is_named(matrix, fmt, command, name):
    cell = matrix.cell(fmt, command, name)
    output = cell.run.stdout + cell.run.stderr
    missing = [str(path.relative_to(cell.fixture.root)) for path in cell.fixture.files()
               if not named(output, cell.fixture.root, path)]
    assert not missing, f"{len(missing)} not named: {missing[:10]}\n{cell}"


@pytest.mark.parametrize("fmt,command,name", _cells())
def test_originals_are_unchanged(matrix, fmt, command, name):
    cell = matrix.cell(fmt, command, name)
    changed = sorted(path for path in cell.before.keys() | cell.after.keys()
                     if cell.before.get(path) != cell.after.get(path))
    assert not changed, cell


def parse_json(stdout: str) -> list:
    """One JSON document, or JSON Lines; empty output is not JSON."""
    text = stdout.strip()
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def named(output: str, root: Path, path: Path) -> bool:
    """Named by its path (absolute or from the root), or by its name on a line with its directory's."""
    relative = str(path.relative_to(root))
    if relative in output:
        return True
    return any(path.name in line and (path.parent == root or path.parent.name in line)
               for line in output.splitlines())


# --- the figures of loss -----------------------------------------------------------------------

KAFKA_FIXTURES = [name for name in BUILDERS if not name.startswith(("rocketmq", "foreign"))]
# corrupt-truncated-commitlog and the 0-byte CommitLog are left out: RocketMQ refuses to load them
# (a mapped file shorter than the configured size), so there is no cut to agree on
ROCKETMQ_FIXTURES = ["rocketmq_torn_tail", "rocketmq_body_crc", "rocketmq_kill9_abort", "rocketmq_zeroed_hole",
                     "rocketmq5_zeroed_hole"]


def _document(matrix: Matrix, command: str, name: str) -> dict:
    cell = matrix.cell("json", command, name)
    documents = parse_json(cell.run.stdout)
    assert len(documents) == 1, cell
    return documents[0]


def _same(path: str | None, directory: Path) -> bool:
    return path is not None and Path(path).resolve() == directory.resolve()


def _files_of(document: dict, directory: Path) -> list[dict]:
    return sorted((f for f in document["files"] if _same(str(Path(f["path"]).parent), directory)
                   and f["kind"] == "kafka-log"), key=lambda f: f["path"])


def _offsets_from(first: int, ranges: list[tuple[int, int]]) -> int:
    """How many offsets at or past `first` the (first, last) ranges cover, each counted once."""
    covered = set()
    for low, high in ranges:
        covered.update(range(max(low, first), high + 1))
    return len(covered)


def kafka_figures(matrix: Matrix, command: str, f: Fixture) -> tuple[int | None, int | None, int | None]:
    """(log end offset after the load, records the load drops, of them the records nothing gets back)
    as one command gives them; None where the command gives no such figure."""
    partition = f.partition
    if command == "lookup":  # ListOffsets latest: the log end the broker answers with, and what lies beyond
        document = _document(matrix, "lookup", f.name)
        beyond = document.get("beyond_recovery") or {"records": 0, "gone": 0}
        return document.get("offset"), beyond["records"], beyond["gone"]
    if command == "verify":  # per file: the cut segment's figures and each segment the load deletes
        logs = _files_of(_document(matrix, "verify", f.name), partition)
        assert logs, f"verify names no .log of {partition}"
        dropped = sum(log["recovery"]["records_lost"] for log in logs)
        gone = sum(log["recovery"]["records_gone"] for log in logs)
        ends = [log["recovery"]["log_end_offset"] for log in logs if "log_end_offset" in log["recovery"]]
        if ends:
            return ends[0], dropped, gone
        return max(log["last_offset"] for log in logs if log["last_offset"] is not None) + 1, dropped, gone
    if command == "inspect":
        plans = [p["plan"] for d in _document(matrix, "inspect", f.name)["log_dirs"] for p in d["partitions"]
                 if _same(p["directory"], partition)]
        assert plans, f"inspect has no plan for {partition}"
        cut = plans[0]["truncated_at"]
        return plans[0]["log_end_offset"], cut["records_dropped"] if cut else 0, cut["records_gone"] if cut else 0
    if command == "salvage":  # salvage writes back every valid batch: what it loses is what nothing gets back
        salvaged = [p for p in _document(matrix, "salvage", f.name)["partitions"] if _same(p["directory"], partition)]
        assert salvaged, f"salvage has no partition {partition}"
        lost = [(r["first_offset"], r["last_offset"]) for r in salvaged[0]["offset_ranges_lost"]]
        return None, None, _offsets_from(0, [(low, high) for low, high in lost if low is not None and high is not None])
    if command == "report":
        parts = [p for p in _document(matrix, "report", f.name)["partitions"] if _same(p["directory"], partition)]
        assert parts, f"report has no partition {partition}"
        startup = parts[0]["startup"]
        assert startup is not None, f"report gives no start-up plan for {partition}"
        return (startup["log_end_offset"], startup["dropped_records"],
                startup["dropped_records"] - startup["salvageable_records"])
    raise AssertionError(command)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["lookup", "verify", "inspect", "report"])
@pytest.mark.parametrize("name", KAFKA_FIXTURES)
def test_kafka_log_end_offset_agrees(matrix, name, command):
    f = matrix.fixture(name)
    reference = f.kafka_loss.log_end_offset if f.kafka_loss else kafka_figures(matrix, "inspect", f)[0]
    assert kafka_figures(matrix, command, f)[0] == reference, (command, f.partition)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["lookup", "verify", "inspect", "report"])
@pytest.mark.parametrize("name", KAFKA_FIXTURES)
def test_kafka_records_dropped_agree(matrix, name, command):
    f = matrix.fixture(name)
    reference = f.kafka_loss.records_dropped if f.kafka_loss else kafka_figures(matrix, "verify", f)[1]
    assert kafka_figures(matrix, command, f)[1] == reference, (command, f.partition)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["lookup", "inspect", "salvage", "report"])
@pytest.mark.parametrize("name", KAFKA_FIXTURES)
def test_kafka_records_gone_agree(matrix, name, command):
    """What nothing gets back (dropped and in no batch whose checksum holds), against verify's figure."""
    f = matrix.fixture(name)
    assert kafka_figures(matrix, command, f)[2] == kafka_figures(matrix, "verify", f)[2], (command, f.partition)


def _commitlog_cut(files: list[dict]) -> tuple[int, int, int]:
    """(cut, messages lost, of them gone) from verify's per-CommitLog-file recovery figures: the cut is in
    the first file that loses bytes, else at the end of the last file recovery keeps."""
    files = sorted((x for x in files if x["kind"] == "rocketmq-commitlog" and x.get("recovery")),
                   key=lambda x: x["path"])
    assert files, "no CommitLog recovery figures"
    lost = sum(x["recovery"]["messages_lost"] for x in files)
    gone = sum(x["recovery"]["messages_gone"] for x in files)
    kept = [x for x in files if not x["recovery"]["deleted"]]
    cut = next((x for x in kept if x["recovery"]["bytes_lost"]), kept[-1] if kept else files[0])
    return int(Path(cut["path"]).name) + cut["recovery"]["valid_bytes"], lost, gone


def rocketmq_figures(matrix: Matrix, command: str, f: Fixture) -> tuple[int | None, int | None, int | None]:
    """(physical offset where recovery cuts the CommitLog, messages it drops, of them the messages
    nothing gets back) as one command gives them; None where it gives no such figure."""
    if command == "verify":
        return _commitlog_cut(_document(matrix, command, f.name)["files"])
    if command == "report":
        store = _document(matrix, "report", f.name)["stores"][0]
        truncation = store["truncation"]
        if truncation is None:  # recovery keeps every message: it ends where the CommitLog's data ends
            return max((c["data_end_offset"] for c in store["commitlog"] if c["messages"]), default=None), 0, 0
        return truncation["offset"], truncation["messages_lost"], truncation["messages_gone"]
    if command == "inspect":
        plan = _document(matrix, "inspect", f.name)["stores"][0]["plan"]
        cut = plan["commitlog"]["truncated_at"]
        return (plan["commitlog"]["max_phy_offset"], cut["messages_dropped"] if cut else 0,
                cut["messages_gone"] if cut else 0)
    if command == "salvage":  # salvage writes back every message whose CRC holds: its loss is what is gone
        document = _document(matrix, "salvage", f.name)
        assert document["stores"], "salvage has no store"
        return None, None, document["summary"]["messages_lost"]
    raise AssertionError(command)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["verify", "inspect", "report"])
@pytest.mark.parametrize("name", ROCKETMQ_FIXTURES)
def test_rocketmq_cut_agrees(matrix, name, command):
    f = matrix.fixture(name)
    reference = f.rocket_loss.cut_phy_offset if f.rocket_loss else rocketmq_figures(matrix, "inspect", f)[0]
    assert rocketmq_figures(matrix, command, f)[0] == reference, command


@pytest.mark.slow
@pytest.mark.parametrize("command", ["inspect", "report"])
@pytest.mark.parametrize("name", ROCKETMQ_FIXTURES)
def test_rocketmq_messages_lost_agree(matrix, name, command):
    f = matrix.fixture(name)
    assert rocketmq_figures(matrix, command, f)[1] == rocketmq_figures(matrix, "verify", f)[1], command


@pytest.mark.slow
@pytest.mark.parametrize("command", ["inspect", "salvage", "report"])
@pytest.mark.parametrize("name", ROCKETMQ_FIXTURES)
def test_rocketmq_messages_gone_agree(matrix, name, command):
    """What nothing gets back (dropped, and no CRC holds), against verify's figure.  Damage before the
    file where RocketMQ's recovery starts (a clean shutdown recovers the last files only) is never
    dropped: salvage counts it lost, verify's recovery figures do not, and it lies before the cut."""
    f = matrix.fixture(name)
    figure, reference = rocketmq_figures(matrix, command, f)[2], rocketmq_figures(matrix, "verify", f)[2]
    if command == "salvage" and figure != reference:
        cut = rocketmq_figures(matrix, "verify", f)[0]
        damaged = _document(matrix, "salvage", f.name)["stores"][0]["damaged_ranges"]
        before = [r for r in damaged if r.get("physical_offset") is not None and r["physical_offset"] < cut]
        assert before and figure - reference == sum(r["offsets_lost"] or 0 for r in before), command
        return
    assert figure == reference, command


# --- replicas: the damaged copy's figures are everyone's ---------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("command", ["verify", "inspect"])
def test_replicas_figures_of_the_torn_copy_agree(matrix, command):
    """Among replicas side by side, the torn copy's log end offset and the records beyond its recovery cut
    are what verify and inspect say of the same directory (and the builder's cut); electing it drops exactly
    those records from the whole copies, none of them committed (no high watermark checkpoint: the loaded
    high watermark is the log start)."""
    f = matrix.fixture("replicas_side_by_side")
    (replica_set,) = _document(matrix, "replicas", f.name)["kafka"]
    torn = [r for r in replica_set["replicas"] if _same(r["directory"], f.partition)]
    assert len(torn) == 1, replica_set["replicas"]
    log_end, dropped, gone = kafka_figures(matrix, command, f)
    beyond = torn[0]["damage"]["beyond_recovery"]
    assert (torn[0]["log_end_offset"], beyond["records"], beyond["gone"]) == (log_end, dropped, gone)
    assert (log_end, dropped) == (f.kafka_loss.log_end_offset, f.kafka_loss.records_dropped)
    elected = next(c for c in replica_set["candidates"] if c["broker"] == torn[0]["broker"])
    assert (elected["records_lost"], elected["committed_records_lost"]) == (dropped, 0)
    assert all(follower["truncate_to"] == log_end for follower in elected["followers"])
