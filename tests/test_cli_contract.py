"""One contract for every command: exit codes 0 clean, 1 problems or nothing found, 2 unreadable
input or usage error; the flags an operator types; quiet on a closed pipe.  Real corpus inputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, corpus_path, segtool, segtool_process
from tests.kafka_replica_sets import build as build_replica_set

KAFKA = ("kafka",)


def _log(case: str) -> Path:
    return next(corpus_path("kafka", case, "data").glob("*/00000000000000000000.log"))


def _rows(tmp: Path) -> list[tuple[str, list, int]]:
    clean = corpus_path("kafka", "c01-multiseg-clean", "data")
    partition = next(clean.iterdir())
    compacted = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    store = corpus_path("rocketmq", "kill9-abort", "store")
    nothing = tmp / "nothing"
    nothing.mkdir()
    (nothing / "README.md").write_text("not a broker file\n")
    in_sync, unclean = (build_replica_set(name, tmp / "replicas").brokers.values()
                        for name in ("in_sync", "unclean_election"))
    return [
        ("dump clean", ["dump", _log("c01-multiseg-clean")], 0),
        ("dump crc flip", ["dump", _log("c11a-crc-byte-flip")], 1),
        ("dump zero tail", ["dump", _log("c11c-zero-tail-64k")], 1),
        ("dump torn tail", ["dump", _log("c11b-truncated-last-batch")], 1),
        ("dump nothing recognised", ["dump", nothing / "README.md"], 1),
        ("dump missing", ["dump", tmp / "absent.log"], 2),
        ("dump usage", ["dump", "--max-bytes", "-5", _log("c01-multiseg-clean")], 2),
        ("verify clean", ["verify", clean], 0),
        ("verify crc flip", ["verify", corpus_path("kafka", "c11a-crc-byte-flip", "data")], 1),
        ("verify nothing recognised", ["verify", nothing], 1),
        ("verify missing", ["verify", tmp / "absent"], 2),
        ("lookup found", ["lookup", compacted, "--offset", "3000"], 0),
        ("lookup past the end", ["lookup", compacted, "--offset", "99999999"], 1),
        ("lookup negative offset", ["lookup", compacted, "--offset", "-5"], 2),
        ("lookup missing", ["lookup", tmp / "absent", "--offset", "1"], 2),
        ("lookup rocketmq key", ["lookup", store, "--topic", "OrderTopic", "--key", "order-0-13"], 0),
        ("lookup rocketmq no such key", ["lookup", store, "--topic", "OrderTopic", "--key", "no-such-key"], 1),
        ("rebuild-index clean", ["rebuild-index", partition, "--out", tmp / "rebuilt"], 0),
        ("rebuild-index would truncate", ["rebuild-index", _log("c11a-crc-byte-flip"), "--out", tmp / "r2"], 1),
        ("rebuild-index no out", ["rebuild-index", partition], 2),
        ("trim", ["trim", partition, "--dry-run"], 0),
        ("trim nothing to trim", ["trim", nothing, "--dry-run"], 1),
        ("trim missing", ["trim", tmp / "absent", "--dry-run"], 2),
        ("index-keys", ["index-keys", compacted, "--out", tmp / "keys"], 0),
        ("index-keys missing", ["index-keys", tmp / "absent", "--out", tmp / "keys2"], 2),
        ("scan clean", ["scan", clean, "--out", tmp / "scan", "--workers", "1"], 0),
        ("scan crc flip", ["scan", corpus_path("kafka", "c11a-crc-byte-flip", "data"), "--out", tmp / "s2",
                           "--workers", "1"], 1),
        ("scan missing", ["scan", tmp / "absent", "--out", tmp / "s3"], 2),
        ("scan nothing found", ["scan", nothing, "--out", tmp / "s4"], 1),
        ("rebuild-index nothing found", ["rebuild-index", nothing, "--out", tmp / "r3"], 1),
        ("salvage clean", ["salvage", partition, "--out", tmp / "salvaged"], 0),
        ("salvage crc flip", ["salvage", corpus_path("kafka", "c11a-crc-byte-flip", "data"), "--out", tmp / "v2"], 1),
        ("salvage no out", ["salvage", partition], 2),
        ("salvage missing", ["salvage", tmp / "absent", "--out", tmp / "v3"], 2),
        ("salvage nothing found", ["salvage", nothing, "--out", tmp / "v4"], 1),
        ("replicas in sync", ["replicas", *in_sync], 0),
        ("replicas unclean election", ["replicas", *unclean], 1),
        ("replicas one copy each", ["replicas", clean], 1),
        ("replicas missing", ["replicas", tmp / "absent"], 2),
        ("unknown command", ["frobnicate"], 2),
    ]


# the table in this process (the same exit-code mapping as `main`), and as real processes (the status
# the shell sees, after the interpreter's exit) in the full tier
@pytest.mark.parametrize("run_segtool", [segtool, pytest.param(segtool_process, marks=pytest.mark.slow)],
                         ids=["in-process", "process"])
def test_exit_code_table(tmp_path, run_segtool):
    failures = []
    for name, args, expected in _rows(tmp_path):
        run = run_segtool(*args, env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
        if run.returncode != expected:
            failures.append((name, expected, run.returncode, run.stderr[-300:]))
        assert "Traceback" not in run.stderr, name
    assert not failures, failures


@pytest.mark.parametrize("fmt", [[], ["--format", "json"], ["--format", "kafka"],
                                 ["--format", "kafka", "--deep-iteration"]])
@pytest.mark.parametrize("case", ["c11a-crc-byte-flip", "c11b-truncated-last-batch", "c11c-zero-tail-64k"])
def test_every_dump_format_gives_damage_the_same_exit_code(case, fmt):
    assert segtool("dump", *fmt, _log(case)).returncode == 1


def test_unrecognised_files_are_named_on_stderr_not_stdout():
    run = segtool("dump", REPO / "README.md")
    assert run.returncode == 1 and run.stdout == ""
    assert "skipped" in run.stderr and "README.md" in run.stderr


def test_debug_shows_the_traceback_and_keeps_the_exit_code():
    compacted = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    for args in (["--debug", "lookup", compacted, "--timestamp", "yesterday"],
                 ["lookup", compacted, "--timestamp", "yesterday", "--debug"]):
        run = segtool(*args)
        assert run.returncode == 2 and "Traceback" in run.stderr
        assert run.stderr.rstrip().splitlines()[-1].startswith("segtool: timestamp 'yesterday'")


def _read_one_line_and_close(*args) -> tuple[int, bytes]:
    """Run segtool, read one line of its stdout and close the pipe (as `| head -1` does)."""
    proc = subprocess.Popen([sys.executable, "-m", "segtool.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline()
    proc.stdout.close()
    return proc.wait(timeout=120), proc.stderr.read()


def test_a_closed_pipe_ends_quietly():
    assert _read_one_line_and_close("dump", "--format", "json", _log("c01-multiseg-clean")) == (0, b"")


def test_a_closed_pipe_keeps_the_problems_found_by_then():
    """`verify DAMAGED | head -1`: quiet, and still exit 1 (with pipefail a script sees the damage)."""
    damaged = corpus_path("kafka")  # its report (500 kB) outgrows the pipe's buffer
    assert segtool("verify", "--no-hash", damaged).returncode == 1
    assert _read_one_line_and_close("verify", "--no-hash", damaged) == (1, b"")


def test_kafka_dump_log_command_line_as_operators_type_it():
    logs = sorted(corpus_path("kafka", "c01-multiseg-clean", "data").glob("*/*.log"))[:2]
    run = segtool("dump", "--format", "kafka", "--files", ",".join(map(str, logs)), "--deep-iteration",
                   "--print-data-log")
    positional = segtool("dump", "--format", "kafka", *logs, "--deep-iteration", "--print-data-log")
    assert run.returncode == 0 and run.stdout == positional.stdout
    assert run.stdout.count("Dumping ") == 2


def test_json_on_every_command(tmp_path):
    partition = next(corpus_path("kafka", "c01-multiseg-clean", "data").iterdir())
    for args in (["dump", "--json", partition / "00000000000000000000.index"],
                 ["verify", partition, "--json"], ["lookup", partition, "--offset", "1", "--json"],
                 ["rebuild-index", partition, "--out", tmp_path / "r", "--json"],
                 ["trim", partition, "--dry-run", "--json"],
                 ["index-keys", partition, "--out", tmp_path / "k", "--json"],
                 ["salvage", partition, "--out", tmp_path / "v", "--json"],
                 ["scan", partition, "--out", tmp_path / "s", "--json", "--workers", "1"]):
        run = segtool(*args)
        assert run.returncode == 0, (args, run.stderr)
        for line in run.stdout.splitlines():
            json.loads(line)


def test_version_and_completion():
    version = segtool("--version")
    assert version.returncode == 0 and version.stdout.startswith("segtool ")
    assert "--show-completion" in segtool("--help").stdout


def test_iso_times_for_the_key_window():
    store = corpus_path("rocketmq", "kill9-abort", "store")
    epoch = json.loads(segtool("lookup", store, "--topic", "OrderTopic", "--key", "order-0-13", "--begin",
                                "1795304600000", "--json").stdout)
    iso = json.loads(segtool("lookup", store, "--topic", "OrderTopic", "--key", "order-0-13", "--begin",
                              "2026-11-21T23:43:20Z", "--json").stdout)
    assert iso["begin"] == epoch["begin"] == 1795304600000
    assert iso["phy_offsets"] == epoch["phy_offsets"]


def test_tables_are_not_padded_when_piped():
    run = segtool("verify", corpus_path("kafka", "c11a-crc-byte-flip", "data"))
    lines = run.stdout.splitlines()
    assert lines and not any(line != line.rstrip() for line in lines)
    assert len({len(line) for line in lines if line}) > 3  # not one padded width
    problems_at = next(i for i, line in enumerate(lines) if line.startswith("PROBLEMS"))
    ok_at = next(i for i, line in enumerate(lines) if line.startswith("OK"))
    assert problems_at < ok_at  # problems first
    digests = [word for line in lines for word in line.replace(")", " ").split() if len(word) == 64]
    assert digests and all(int(d, 16) >= 0 for d in digests)  # full sha256


def test_lookup_shows_the_record_as_a_person_reads_it():
    compacted = corpus_path("kafka", "c07-compacted", "data", "c07-compact-0")
    answer = json.loads(segtool("lookup", compacted, "--offset", "3000", "--json").stdout)
    dumped = [json.loads(line) for line in
              segtool("dump", "--json", answer["segment"]).stdout.splitlines()]
    same = [item for item in dumped if item.get("offset") == answer["offset"] and "value_b64" in item]
    assert answer["record"] == same[0]  # the same record shape, value included
    text = segtool("lookup", compacted, "--offset", "3000").stdout
    assert "2026-" in text and "Z" in text and answer["record"]["value"][:40] in text
    assert "{'" not in text and "b'" not in text
    cut = segtool("lookup", compacted, "--offset", "3000")
    full = segtool("lookup", compacted, "--offset", "3000", "--full")
    if len(answer["record"]["value"]) > 200:
        assert "--full shows all" in cut.stdout and answer["record"]["value"] in full.stdout


def test_trim_accepts_directories():
    run = segtool("trim", corpus_path("kafka", "c02-unclean-hot-copy", "data"), "--dry-run", "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["files"] and report["skipped"]
    assert all(f["path"].endswith((".index", ".timeindex")) for f in report["files"])
    assert all(s["reason"] for s in report["skipped"])


def test_a_copy_of_a_partition_answers_from_mtimes_with_a_note(tmp_path):
    """The timestamp of an empty segment is its file's mtime in Kafka: the answer says so."""
    partition = tmp_path / "c07-compact-0"
    shutil.copytree(corpus_path("kafka", "c07-compacted", "data", "c07-compact-0"), partition)
    answer = json.loads(segtool("lookup", partition, "--timestamp", "1795304374853", "--json").stdout)
    assert any("mtime" in note for note in answer.get("notes", [])), answer


def _every_command(path, out) -> dict[str, list]:
    """The 14 commands on one input (writing ones to a fresh --out below ``out``)."""
    return {
        "dump": ["dump", path], "verify": ["verify", path], "report": ["report", path],
        "lookup": ["lookup", path, "--offset", "0"], "groups": ["groups", path],
        "transactions": ["transactions", path], "inspect": ["inspect", path],
        "rebuild-index": ["rebuild-index", path, "--out", out / "rebuilt"], "trim": ["trim", path, "--dry-run"],
        "index-keys": ["index-keys", path, "--out", out / "keys"],
        "scan": ["scan", path, "--out", out / "scan", "--workers", "1"],
        "carve": ["carve", path, "--out", out / "carved"], "salvage": ["salvage", path, "--out", out / "salvaged"],
        "replicas": ["replicas", path],
    }


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("given", ["missing path", "non-broker file", "empty directory"])
def test_every_command_on_inputs_with_nothing_to_read(tmp_path, given, as_json):
    """A missing path is unreadable (2); a readable file no broker wrote and an empty directory hold
    nothing to work on (1).  With --json stdout is JSON all the same: the ErrorReport of the one line
    on stderr, or the command's own report saying it found nothing."""
    from jsonschema import validate

    error_schema = json.loads((REPO / "docs" / "schemas" / "error.schema.json").read_text())
    path = {"missing path": tmp_path / "absent", "non-broker file": tmp_path / "notes.txt",
            "empty directory": tmp_path / "empty"}[given]
    (tmp_path / "notes.txt").write_text("not a broker file\n")
    (tmp_path / "empty").mkdir()
    expected = 2 if given == "missing path" else 1
    wrong = []
    for command, args in _every_command(path, tmp_path / command_out(given, as_json)).items():
        run = segtool(*args, *(["--json"] if as_json else []), env={"XDG_CACHE_HOME": str(tmp_path / "cache"),
                                                                    "PATH": "/usr/bin:/bin"})
        assert "Traceback" not in run.stderr, (command, run.stderr)
        if run.returncode != expected:
            wrong.append((command, run.returncode, run.stderr[-200:]))
        if as_json:
            documents = [json.loads(line) for line in run.stdout.splitlines()]
            assert documents, (command, run.stderr)
            errors = [d for d in documents if "error" in d and "exit_code" in d]
            for error in errors:
                validate(error, error_schema)
                assert error["exit_code"] == run.returncode and error["message"] in run.stderr
            if given == "missing path":
                assert errors and errors[-1]["path"] == str(path), (command, documents)
        else:
            assert run.stderr or run.stdout, command  # never silent
    assert not wrong, wrong


def command_out(given: str, as_json: bool) -> str:
    return f"out-{given.replace(' ', '-')}-{'json' if as_json else 'text'}"


@pytest.mark.parametrize("as_json", [[], ["--json"]], ids=["text", "json"])
def test_a_closed_pipe_while_printing_an_error_keeps_its_code(tmp_path, as_json):
    """`segtool dump nope 2>&1 | head -0`: the reader has gone before the error line; still 2."""
    proc = subprocess.Popen([sys.executable, "-m", "segtool.cli", "dump", str(tmp_path / "nope"), *as_json],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 2


def test_json_escapes_the_characters_that_end_lines_elsewhere(tmp_path):
    """U+0085, U+2028 and U+2029 in a record's value: one JSON Lines line each, escaped, the value intact."""
    from tests.kafka_build import make_batch

    value = "a\u0085b\u2028c\u2029d"
    partition = tmp_path / "t-0"
    partition.mkdir()
    (partition / "00000000000000000000.log").write_bytes(make_batch(0, [(b"k", value.encode())], 1795000000000))
    run = segtool("dump", "--json", partition / "00000000000000000000.log")
    assert run.returncode == 0, run.stderr
    assert "\\u0085" in run.stdout and "\\u2028" in run.stdout and "\\u2029" in run.stdout
    lines = run.stdout.splitlines()  # str.splitlines breaks at all three: none is left raw
    records = [json.loads(line) for line in lines if '"kind": "record"' in line]
    assert [r["value"] for r in records] == [value]
