"""`dump --format kafka` against every kafka-dump-log golden of the corpus.

Each case's expected/dump/exit-codes.json lists the argv Kafka's tool was run
with (from the case folder), its exit code and its stdout/stderr files.  We run
the same argv through segtool and require identical stdout, stderr and exit
code, except for the differences allow-listed below with their reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump
from tests.conftest import CORPUS, case_dirs

# Differences we keep on purpose, each proven from Kafka's source:
# JAVA_STACK_TRACE: where DumpLogSegments dies with an uncaught exception
#   (CorruptRecordException from FileLogInputStream.nextBatch, NoSuchElementException
#   from dumpIndex's `slice.batches.iterator.next()`, CorruptIndexException from
#   AbstractIndex/TimeIndex.sanityCheck) the JVM prints "Exception in thread "main" ..."
#   plus a stack trace and exits 1.  segtool stops at the same point with the same
#   stdout and exit code 1, but prints one line naming the file and byte offset, as
#   the project requires (no tracebacks).  The test checks that line instead.
# DAMAGE_EXIT_CODE: where a .log shows damage that kafka-dump-log prints and goes past (a batch
#   with "isvalid: false", "Found N invalid bytes at the end"), Kafka's tool exits 0; segtool
#   exits 1, as all its commands and formats do for damaged data (the exit-code contract).
#   stdout and stderr stay identical.
ALLOWED = {"JAVA_STACK_TRACE", "DAMAGE_EXIT_CODE"}


def _cases():
    out = []
    for case in case_dirs("kafka"):
        codes = json.loads((case / "expected" / "dump" / "exit-codes.json").read_text())
        for file, commands in sorted(codes.items()):
            for command, spec in sorted(commands.items()):
                out.append(pytest.param(case, spec, id=f"{case.name}:{file}:{command}"))
    return out


def options_from_argv(argv: list[str]) -> tuple[list[str], KafkaDumpOptions]:
    opts = KafkaDumpOptions()
    files: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg == "--files":
            files = next(args).split(",")
        elif arg == "--max-bytes":
            opts.max_bytes = int(next(args))
        elif arg == "--max-message-size":
            opts.max_message_size = int(next(args))
        else:
            flag = arg.lstrip("-").replace("-", "_")
            assert hasattr(opts, flag), f"unhandled kafka-dump-log option {arg}"
            setattr(opts, flag, True)
    return files, opts


def run_like_kafka(case: Path, argv: list[str], monkeypatch) -> tuple[int, str, str]:
    files, opts = options_from_argv(argv)
    monkeypatch.chdir(case)
    out: list[str] = []
    err: list[str] = []
    code = run_kafka_dump(files, opts, out.append, err.append)
    return code, "".join(line + "\n" for line in out), "".join(line + "\n" for line in err)


@pytest.mark.parametrize("case,spec", _cases())
def test_matches_kafka_dump_log(case: Path, spec: dict, monkeypatch):
    expected_out = (case / spec["stdout"]).read_bytes().decode("utf-8")
    expected_err = (case / spec["stderr"]).read_bytes().decode("utf-8")
    code, out, err = run_like_kafka(case, spec["argv"], monkeypatch)
    assert out == expected_out
    damaged = "isvalid: false" in expected_out or " invalid bytes at the end of " in expected_out
    if damaged and spec["exit_code"] == 0:
        assert "DAMAGE_EXIT_CODE" in ALLOWED and code == 1
    else:
        assert code == spec["exit_code"]
    if "Exception in thread \"main\"" in expected_err:
        assert "JAVA_STACK_TRACE" in ALLOWED
        # Kafka's reports printed before the exception are kept verbatim
        before = expected_err.split("Exception in thread")[0]
        assert err.startswith(before)
        ours = err[len(before):].splitlines()
        assert len(ours) == 1 and ours[0].startswith("segtool: ")
        assert "byte " in ours[0]
        java_message = expected_err.split("Exception in thread \"main\" ", 1)[1].splitlines()[0]
        _, _, detail = java_message.partition(": ")
        if detail:
            # same cause in our words: Kafka's sentence minus its absolute-path suffix
            assert detail.split(" in file ")[0].split(" (")[0][:40] in ours[0] or "NoSuchElement" in java_message \
                or "CorruptIndexException" in java_message
    else:
        assert err == expected_err


def test_cases_found():
    if not (CORPUS / "kafka").exists():
        pytest.skip("../shared/corpus is absent: only the sample_data cases were compared")
    assert len(case_dirs("kafka")) >= 16, "the corpus should hold the 16 Kafka cases"
