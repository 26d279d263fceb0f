"""Real third-party files (../shared/corpus/wild): segtool must never crash on them, and
must decode them to the values their own projects expect.

The corpus holds ~1,700 files copied byte for byte from public repositories (Kafka
0.8-3.x broker dirs, KRaft snapshots, RocketMQ unit-test stores, raw MessageSet and
Fetch-response fixtures of kafka-rust, kafkalite, kafka-go and kafkajs).  Its README
names, per file, what an independent checker found (batch/record/codec counts, index
entries, RocketMQ message counts...) and where the expected decoded values live.

* Robustness: every file goes through ``dump_paths`` (JSON items), every Kafka-suffixed
  file through ``run_kafka_dump`` (deep iteration, print data), every file through a raw
  ``BatchScan`` + ``batch_records`` at three start offsets, and a sample of 40 paths
  (files and directories) through the CLI.  Only ``SegtoolError`` may be raised; the
  CLI must exit 0/1/2 without a traceback or an "internal error".
* Expected values are read from the corpus (README check column, kafkalite golden/,
  kafka-rust fetch1.txt/fetch2.txt).  Values that exist only in the source projects'
  test code (kafka-go message_test.go, kafkajs fetch/v0 and v4 response.spec.js) are
  copied here with their origin; nothing that the corpus holds is hard-coded.

Skipped, with the reason, when the corpus is absent.
"""

from __future__ import annotations

import ast
import base64
import collections
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from segtool.source import open_buffer
from segtool.errors import SegtoolError
from segtool.rocketmq import store_files as rocketmq
from segtool.formats.compression import decompress
from segtool.engine.detect import detect, kafka_suffix
from segtool.kafka.index import OffsetIndex, TimeIndex
from segtool.kafka.log import BatchScan
from segtool.kafka.records import batch_records, control_record_type
from segtool.formats.outcomes import WalkEnd
from segtool.ops.dump import dump_paths
from segtool.ops.kafka_dump_log import KafkaDumpOptions, run_kafka_dump
from tests.conftest import corpus_path

KAFKA_DUMP_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint")
CAP = 64 * 1024 * 1024


# --------------------------------------------------------------------------
# The corpus and its README
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wild() -> Path:
    return corpus_path("wild")


def _all_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        out.extend(Path(dirpath, f) for f in sorted(files))
    return [p for p in out if p != root / "README.md"]


@pytest.fixture(scope="module")
def files(wild) -> list[Path]:
    return _all_files(wild)


@pytest.fixture(scope="module")
def table(wild) -> dict[str, dict]:
    """README "File list": relative path -> {size, sha256, check}."""
    rows = {}
    for line in (wild / "README.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| "):
            continue
        cells = line[2:].split(" | ", 5)
        if len(cells) == 6 and re.fullmatch(r"[0-9a-f]{64}", cells[4]):
            rows[cells[0]] = {"size": int(cells[3]), "sha256": cells[4], "check": cells[5].rstrip(" |")}
    assert len(rows) > 1000, "README file list not found or changed format"
    return rows


def _rel(wild: Path, path: Path) -> str:
    return path.relative_to(wild).as_posix()


def _checked(table, prefix: str) -> dict[str, str]:
    """README rows whose check starts with ``prefix``: relative path -> check text."""
    return {rel: row["check"] for rel, row in table.items() if row["check"].startswith(prefix)}


def test_readme_lists_every_file_with_its_size_and_hash(wild, files, table):
    problems = []
    for path in files:
        row = table.get(_rel(wild, path))
        if row is None:
            problems.append(f"{_rel(wild, path)}: not in README")
            continue
        data = path.read_bytes()
        if len(data) != row["size"] or hashlib.sha256(data).hexdigest() != row["sha256"]:
            problems.append(f"{_rel(wild, path)}: size/sha256 differ from README")
    assert not problems, "\n".join(problems)
    absent = [rel for rel, row in table.items() if row["check"].startswith("ABSENT")]
    assert len(files) + len(absent) == len(table)


# --------------------------------------------------------------------------
# 1. Nothing crashes
# --------------------------------------------------------------------------


def _crash(what: str, path, exc: BaseException) -> str:
    return f"{what} {path}: {type(exc).__name__}: {exc}"


@pytest.mark.slow  # seconds of CPU: the full tier's
def test_dump_every_file_raises_nothing_but_segtool_errors(wild, files, table):
    crashes, kinds, unexpected = [], collections.Counter(), []
    for path in files:
        kind = detect(str(path)).kind
        kinds[kind] += 1
        try:
            items = list(dump_paths([str(path)]))
            for item in items:
                json.dumps(item, ensure_ascii=False)  # the JSON renderer's view
        except SegtoolError:
            continue
        except Exception as exc:  # noqa: BLE001 - the point of the test
            crashes.append(_crash("dump", path, exc))
            continue
        check = table[_rel(wild, path)]["check"]
        if check.startswith("OK v") and kafka_suffix(path.name) in (".log", ".checkpoint") and kind != "kafka-log":
            unexpected.append(f"{_rel(wild, path)}: detected as {kind}, not kafka-log")
        if kind == "kafka-log" and check.startswith("OK v"):
            # the independent checker read these files to the end: segtool must too
            bad = [i for i in items if i["kind"] in ("error", "trailing_bytes", "zero_tail")]
            if bad:
                unexpected.append(f"{_rel(wild, path)}: {bad[0]}")
    assert not crashes, "\n".join(crashes)
    assert not unexpected, "\n".join(unexpected)
    assert kinds["kafka-log"] >= 100 and kinds["rocketmq-commitlog"] >= 10, kinds


def test_kafka_dump_every_kafka_file(wild, files, table):
    crashes, problems = [], []
    options = KafkaDumpOptions(deep_iteration=True, print_data_log=True)
    for path in files:
        if kafka_suffix(path.name) not in KAFKA_DUMP_SUFFIXES:
            continue
        out, err = [], []
        try:
            code = run_kafka_dump([str(path)], options, out.append, err.append)
        except SegtoolError:
            continue
        except Exception as exc:  # noqa: BLE001
            crashes.append(_crash("kafka-dump", path, exc))
            continue
        if code not in (0, 1, 2):
            problems.append(f"{path}: exit code {code}")
        elif code:
            if not (err and err[-1].startswith("segtool: ")):
                problems.append(f"{path}: exit {code} without a one-line segtool error: {err[-1:]}")
        check = table[_rel(wild, path)]["check"]
        if check.startswith("OK v") and (code or any("invalid bytes" in line for line in out)):
            problems.append(f"{path}: checker read it cleanly, kafka-dump exit {code}: {(err or out)[-1]}")
    assert not crashes, "\n".join(crashes)
    assert not problems, "\n".join(problems)


def test_raw_batch_scan_of_every_file(files):
    """Every file, whatever it is, scanned as a MessageSet from byte 0, 4 and 8."""
    crashes = []
    for path in files:
        data = path.read_bytes()
        for start in (0, 4, 8):
            try:
                for batch in BatchScan(data, start, path=str(path)):
                    for record in batch_records(batch, str(path), CAP):
                        if batch.is_control:
                            control_record_type(record)
            except SegtoolError:
                pass
            except Exception as exc:  # noqa: BLE001
                crashes.append(_crash(f"BatchScan@{start}", path, exc))
    assert not crashes, "\n".join(crashes)


def test_snappy_fuzz_corpus_through_every_codec(wild):
    """kafka-go's go-xerial-snappy fuzz inputs: decompression fails cleanly or succeeds."""
    corpus = sorted((wild / "segmentio__kafka-go" / "compress" / "snappy" / "go-xerial-snappy" / "corpus").iterdir())
    assert corpus
    crashes = []
    for path in corpus:
        for codec in (1, 2, 3, 4):
            try:
                decompress(codec, path.read_bytes(), cap=1 << 20)
            except SegtoolError:
                pass
            except Exception as exc:  # noqa: BLE001
                crashes.append(_crash(f"codec {codec}", path, exc))
    assert not crashes, "\n".join(crashes)


def _segtool_command() -> list[str]:
    script = Path(sys.executable).with_name("segtool")
    return [str(script)] if script.exists() else [sys.executable, "-m", "segtool.cli"]


def _cli_sample(wild: Path, files: list[Path]) -> list[Path]:
    rng = random.Random(20240419)
    chosen_dirs = [
        wild / "kaspersorensen__kafka-record-updater",
        wild / "EricPanGopher__rocketmq" / "store" / "unit_test_store",
        wild / "apache__kafka" / "core" / "data",
        wild / "Danielowo2000__BigDataTechnologies-Version-2" / "kafka_data"
        / "_confluent-ksql-default__command_topic-0",
        wild / "asayers__kafkalite" / "tests" / "test-data" / "fs-data" / "hamlet-snappy-0",
    ]
    leaf_dirs = sorted({p.parent for p in files if p.parent != wild} - set(chosen_dirs))
    small_dirs = [d for d in leaf_dirs if sum(f.stat().st_size for f in d.iterdir() if f.is_file()) < 1 << 20]
    dirs = [d for d in chosen_dirs if d.is_dir()] + rng.sample(small_dirs, 3)
    return dirs + rng.sample(files, 40 - len(dirs))


def test_cli_on_a_sample_of_files_and_directories(wild, files):
    command = _segtool_command()
    formats = (["--format", "text"], ["--format", "json"],
               ["--format", "kafka", "--deep-iteration", "--print-data-log"])
    jobs = [(command + formats[i % 3] + [str(path)], i % 3 == 1)
            for i, path in enumerate(_cli_sample(wild, files))]

    def run(job):
        argv, is_json = job
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60)
        return argv, is_json, done

    problems = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        for argv, is_json, done in pool.map(run, jobs):
            where = " ".join(argv[-2:])
            if done.returncode not in (0, 1, 2):
                problems.append(f"{where}: exit {done.returncode}")
            if "Traceback" in done.stderr or "internal error" in done.stderr:
                problems.append(f"{where}: {done.stderr.strip()[-500:]}")
            if is_json:
                for line in done.stdout.splitlines():
                    json.loads(line)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------
# 2. Expected values
# --------------------------------------------------------------------------

_CENSUS_KEY = re.compile(
    r"(v\d codec=\w+|records|control-type=-?\d+|control|transactional|idempotent/pid!=-1|"
    r"logAppendTime|truncated-tail|record-parse-fail|CRC32-FAIL)=(\d+)"
)
_OPTIONAL_KEYS = {"records"}  # the checker leaves it out for legacy-only sets


def _readme_census(check: str) -> collections.Counter:
    return collections.Counter({k: int(v) for k, v in _CENSUS_KEY.findall(check)})


def _census(record_sets, path) -> collections.Counter:
    """The README checker's counters, computed with segtool's engine."""
    c = collections.Counter()
    for data in record_sets:
        scan = BatchScan(data, path=path)
        for batch in scan:
            c[f"v{batch.magic} codec={batch.codec_name}"] += 1
            if batch.is_log_append_time:
                c["logAppendTime"] += 1
            if batch.magic < 2:
                if not batch.crc_valid:
                    c["CRC32-FAIL"] += 1
                batch_records(batch, path, CAP)
                continue
            if not batch.crc_valid:
                c["CRC32C-FAIL"] += 1
            if batch.is_transactional:
                c["transactional"] += 1
            if batch.producer_id != -1:
                c["idempotent/pid!=-1"] += 1
            if batch.is_control:
                c["control"] += 1
            try:
                records = batch_records(batch, path, CAP)
            except SegtoolError:
                c["record-parse-fail"] += 1
                continue
            c["records"] += len(records)
            if batch.is_control:
                for record in records:
                    c[f"control-type={control_record_type(record)[0]}"] += 1
        if scan.stop_reason is WalkEnd.TRUNCATED and len(data) - scan.valid_bytes >= 12:
            # a partial batch whose offset and size are readable (fewer bytes: silently ignored)
            c["truncated-tail"] += 1
    return c


def _compare_census(rel: str, got: collections.Counter, check: str) -> str | None:
    want = _readme_census(check)
    assert want, f"{rel}: no counts in README check {check!r}"
    keys = set(want) | {k for k, v in got.items() if v and k not in _OPTIONAL_KEYS}
    diff = {k: (got.get(k, 0), want.get(k, 0)) for k in sorted(keys) if got.get(k, 0) != want.get(k, 0)}
    return f"{rel}: (segtool, README) {diff}" if diff else None


def test_kafka_segments_match_readme_counts(wild, table):
    """Every .log / .checkpoint the checker read: batches per magic and codec, records,
    control batches and their types, transactional / idempotent / LogAppendTime batches."""
    checked = _checked(table, "OK v")
    assert len(checked) >= 80
    problems = []
    for rel, check in checked.items():
        path = wild / rel
        problem = _compare_census(rel, _census([open_buffer(str(path))], str(path)), check)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


def _index_facts(index) -> dict:
    raw = index.array
    keys = raw[raw.dtype.names[0]].astype("int64")
    vals = raw[raw.dtype.names[1]].astype("int64")
    # the README names offsets relative to the file's base offset, as stored
    base = index.base_offset
    pairs = [(e.offset - base, e.position) if isinstance(index, OffsetIndex) else (e.timestamp, e.offset - base)
             for e in map(index.entry, range(index.entries))]
    return {
        "entries": index.entries,
        "zero": int(sum(1 for i in range(len(raw)) if keys[i] == 0 and vals[i] == 0)),
        "first": pairs[0] if pairs else None,
        "last": pairs[-1] if pairs else None,
    }


_INDEX_CHECK = re.compile(
    r"OK (offset|time) index: (\d+) entries, monotonic=(True|False), zero-entries=(\d+), "
    r"first=\[\((-?\d+), (-?\d+)\)\] last=\[\((-?\d+), (-?\d+)\)\]"
)


def test_kafka_indexes_match_readme(wild, table):
    checked = _checked(table, "OK offset index") | _checked(table, "OK time index")
    assert len(checked) >= 50
    problems = []
    for rel, check in checked.items():
        m = _INDEX_CHECK.match(check)
        assert m, check
        kind, n, _mono, zeros, a, b, c, d = m.groups()
        cls = OffsetIndex if kind == "offset" else TimeIndex
        with cls(str(wild / rel)) as index:
            got = _index_facts(index)
        want = {"entries": int(n), "zero": int(zeros), "first": (int(a), int(b)), "last": (int(c), int(d))}
        if got != want:
            problems.append(f"{rel}: segtool {got} README {want}")
    assert not problems, "\n".join(problems)


def test_kafka_small_files_match_readme(wild, table):
    """Producer snapshots, checkpoints and partition.metadata, re-rendered from dump items."""
    problems, compared = [], 0
    for rel, row in table.items():
        check, path = row["check"], wild / rel
        if not path.exists():
            continue
        kind = detect(str(path)).kind
        m = re.match(r"OK producer-state snapshot v(\d+): (\d+) entries, crc32c ok=(True|False)", check)
        if m:
            head = next(i for i in dump_paths([str(path)]) if i["kind"] == "producer_snapshot")
            got = (head["version"], head["producers"], head["crc_valid"])
            want = (int(m[1]), int(m[2]), m[3] == "True")
        elif check.startswith("text: ") and kind in (
                "kafka-leader-epoch-checkpoint", "kafka-offset-checkpoint", "kafka-partition-metadata"):
            want = ast.literal_eval(check[len("text: "):])  # the file's first bytes, as repr()
            items = list(dump_paths([str(path)]))
            if kind == "kafka-partition-metadata":
                got = "version: {version}\ntopic_id: {topic_id}".format(**items[0])
            else:
                head, lines = items[0], []
                for item in items[1:]:
                    if "epoch" in item:
                        lines.append(f"{item['epoch']} {item['start_offset']}")
                    else:
                        lines.append(f"{item['topic']} {item['partition']} {item['offset']}")
                got = "".join(f"{x}\n" for x in [head["version"], head["count"], *lines])
            got = got[:len(want)]
        else:
            continue
        compared += 1
        if got != want:
            problems.append(f"{rel}: segtool {got!r} README {want!r}")
    assert compared >= 1000
    assert not problems, "\n".join(problems)


# -- RocketMQ ------------------------------------------------------------------


def _base(path: Path) -> int:
    return int(path.name) if path.name.isdigit() else 0


def test_rocketmq_commitlogs_match_readme(wild, table):
    checked = _checked(table, "OK RocketMQ commitlog")
    assert len(checked) >= 10
    problems = []
    pattern = re.compile(r"OK RocketMQ commitlog: (\d+) msgs magic=(\{.*?\}) bodyCRC ok, "
                         r"PHYSICALOFFSET==fileBase\+pos; end: (BLANK magic|zero-fill) at (\d+)")
    for rel, check in checked.items():
        m = pattern.match(check)
        assert m, check
        path = wild / rel
        items = list(dump_paths([str(path)]))
        msgs = [i for i in items if i["kind"] == "message"]
        versions = collections.Counter(f"V{i['version']}" for i in msgs)
        end = [i for i in items if i["kind"] in ("blank_end", "zero_tail")]
        got = (len(msgs), dict(versions), [(i["kind"], i["byte_offset"]) for i in end],
               all(i["body_crc"] == i["body_crc_computed"] for i in msgs),
               all(i["physical_offset_field"] == _base(path) + i["file_offset"] for i in msgs),
               [i for i in items if i["kind"] == "error"])
        want = (int(m[1]), ast.literal_eval(m[2]),
                [("blank_end" if m[3] == "BLANK magic" else "zero_tail", int(m[4]))], True, True, [])
        if got != want:
            problems.append(f"{rel}: segtool {got} README {want}")
    assert not problems, "\n".join(problems)


def test_rocketmq_consumequeues_match_readme_and_commitlog(wild, table):
    checked = _checked(table, "OK RocketMQ ConsumeQueue")
    assert checked
    pattern = re.compile(r"OK RocketMQ ConsumeQueue: \d+B = \d+ x 20B units, (\d+) used; "
                         r"first=\((-?\d+), (-?\d+), (-?\d+)\)")
    problems = []
    for rel, check in checked.items():
        m = pattern.match(check)
        assert m, check
        path = wild / rel
        units = [i for i in dump_paths([str(path)]) if i["kind"] == "cq_unit"]
        got = (len(units), (units[0]["commit_log_offset"], units[0]["size"], units[0]["tags_code"]))
        want = (int(m[1]), (int(m[2]), int(m[3]), int(m[4])))
        if got != want:
            problems.append(f"{rel}: segtool {got} README {want}")
        # every unit points at a CommitLog message with its size and queue offset
        store = path.parents[3]
        for unit in units:
            size = 8192  # mappedFileSizeCommitLog of the unit test (README)
            log = store / "commitlog" / f"{unit['commit_log_offset'] // size * size:020d}"
            msg = next((i for i in dump_paths([str(log)])
                        if i["kind"] == "message" and i["phy_offset"] == unit["commit_log_offset"]), None)
            if msg is None or (msg["total_size"], msg["queue_offset"]) != (unit["size"], unit["queue_offset"]):
                problems.append(f"{rel}: unit {unit} -> {msg and (msg['total_size'], msg['queue_offset'])}")
    assert not problems, "\n".join(problems)


def test_rocketmq_checkpoints_and_indexfile_match_readme(wild, table):
    problems = []
    checkpoints = _checked(table, "OK RocketMQ StoreCheckpoint")
    assert checkpoints
    for rel, check in checkpoints.items():
        want = {k: int(v) for k, v in re.findall(r"(\w+Timestamp)=(\d+)", check)}
        got = rocketmq.read_checkpoint(open_buffer(str(wild / rel)), str(wild / rel))
        if {k: got[k] for k in want} != want:
            problems.append(f"{rel}: segtool {got} README {want}")
    indexes = _checked(table, "OK RocketMQ IndexFile")
    assert indexes
    for rel, check in indexes.items():
        m = re.search(r"(\d+) slots\*4 \+ (\d+) items\*20; header=\(([-\d, ]+)\)", check)
        assert m, check
        with rocketmq.IndexFile(str(wild / rel)) as index:
            h = index.header
            got = (index.hash_slot_num, index.index_num,
                   (h["beginTimestamp"], h["endTimestamp"], h["beginPhyOffset"], h["endPhyOffset"],
                    h["hashSlotCount"], h["indexCount"]),
                   len(list(index.iter_entries())))
        header = tuple(int(x) for x in m[3].split(","))
        want = (int(m[1]), int(m[2]), header, header[5] - 1)  # indexCount starts at 1
        if got != want:
            problems.append(f"{rel}: segtool {got} README {want}")
    assert not problems, "\n".join(problems)


# -- kafkalite: on-disk segments vs golden/ ------------------------------------

_HS_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", '"': '"', "a": "\a", "b": "\b",
               "f": "\f", "v": "\v", "&": ""}


def _haskell_unshow(text: str) -> bytes:
    """A Haskell ``show``n string literal body back to bytes (ByteString chars are bytes)."""

    def unescape(m):
        esc = m.group(1)
        if esc.isdigit():
            return chr(int(esc))
        if esc not in _HS_ESCAPES:
            raise ValueError(f"unhandled escape \\{esc} in golden file")
        return _HS_ESCAPES[esc]

    return re.sub(r"\\(\d+|.)", unescape, text).encode("latin-1")


def _golden_names(wild: Path) -> list[str]:
    golden = wild / "asayers__kafkalite" / "tests" / "test-data" / "golden"
    return sorted(p.name for p in golden.iterdir()) if golden.is_dir() else []


@pytest.mark.parametrize("name", ["hamlet-gzip-0", "hamlet-none-0", "hamlet-snappy-0", "numbers-0"])
def test_kafkalite_segments_decode_to_golden(wild, name):
    base = wild / "asayers__kafkalite" / "tests" / "test-data"
    assert name in _golden_names(wild)
    want = []
    for line in (base / "golden" / name).read_text(encoding="latin-1").splitlines():
        m = re.fullmatch(r'(\d+): "(.*)"', line)
        assert m, line
        want.append((int(m[1]), _haskell_unshow(m[2])))
    log = str(base / "fs-data" / name / "00000000000000000000.log")
    buf = open_buffer(log)
    got = [(r.offset, r.value) for b in BatchScan(buf, path=log) for r in batch_records(b, log, CAP)]
    assert got == want
    # the same through dump's JSON items
    items = [i for i in dump_paths([log]) if i["kind"] == "record"]
    assert [(i["offset"], base64.b64decode(i["value_b64"])) for i in items] == want


# -- Fetch responses: kafka-rust (v0), kafka-go (v10 hex), kafkajs (v0-v11 JSON) ---------------


def _fetch_partitions(data: bytes, version: int) -> list[dict]:
    """The partitions of a Fetch response body (after the correlation id), versions 0-11."""
    p = 0

    def take(fmt):
        nonlocal p
        values = struct.unpack_from(fmt, data, p)
        p += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    def string():
        nonlocal p
        n = take(">h")
        p += n
        return data[p - n:p].decode("utf-8")

    if version >= 1:
        take(">i")  # throttle_time_ms
    if version >= 7:
        take(">hi")  # error_code, session_id
    out = []
    for _ in range(take(">i")):
        topic = string()
        for _ in range(take(">i")):
            partition, error, hw = take(">ihq")
            if version >= 4:
                take(">q")  # last_stable_offset
            if version >= 5:
                take(">q")  # log_start_offset
            if version >= 4:
                aborted = take(">i")
                p += 16 * max(aborted, 0)
            if version >= 11:
                take(">i")  # preferred_read_replica
            size = take(">i")
            records = data[p:p + max(size, 0)]
            p += max(size, 0)
            out.append({"topic": topic, "partition": partition, "error": error, "hw": hw, "records": records})
    assert p == len(data), f"{len(data) - p} bytes left after the fetch response"
    return out


def _records_of(record_set: bytes, path: str):
    return [r for b in BatchScan(record_set, path=path) for r in batch_records(b, path, CAP)]


def _rust_dir(wild: Path) -> Path:
    return wild / "kafka-rust__kafka-rust" / "test-data"


@pytest.mark.parametrize("name", [
    "fetch1.mytopic.1p.nocompression.kafka.0821",
    "fetch1.mytopic.1p.gzip.kafka.0821",
    "fetch1.mytopic.1p.snappy.kafka.0821",
    "fetch1.mytopic.1p.snappy.kafka.0822",
    "fetch2.mytopic.nocompression.kafka.0900",
    "fetch2.mytopic.nocompression.invalid_crc.kafka.0900",
])
def test_kafka_rust_fetch_responses_decode_to_the_input_lines(wild, table, name):
    base = _rust_dir(wild)
    path = base / name
    lines = (base / (name.split(".")[0] + ".txt")).read_bytes().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    data = path.read_bytes()
    (part,) = _fetch_partitions(data[4:], 0)  # after the correlation id
    check = table[_rel(wild, path)]["check"]
    assert f"topic={part['topic']} hw={part['hw']}:" in check
    assert part["hw"] == len(lines)
    records = _records_of(part["records"], str(path))
    assert [r.value.decode("utf-8") for r in records] == lines
    assert [r.offset for r in records] == list(range(len(lines)))
    assert all(r.crc_valid for r in records) == ("invalid_crc" not in name)
    assert _compare_census(name, _census([part["records"]], str(path)), check) is None


def test_kafka_rust_snappy_java_stream_decodes_to_fetch1(wild):
    base = _rust_dir(wild)
    framed = (base / "fetch1.snappy.chunked.4k").read_bytes()
    assert decompress(2, framed) == (base / "fetch1.txt").read_bytes()


# kafka-go message_test.go TestMessageFixtures (segmentio/kafka-go @ 3ce29796, lines 568-660):
# the fixture messages and which of them each capture starts with.  Not in the corpus.
KAFKA_GO_MESSAGES = {c: (key, '{"count":0,"filler":"%s"}' % (c * 10)) for c, key in zip(
    "abcdefgh", ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"))}
KAFKA_GO_FIXTURES = {
    "v2b-v1.hex": "abab",
    "v2bc-v1c.hex": "abab",
    "v2bc-v1.hex": "abcd",
    "v2bc-v1-v1c.hex": "abcdef",
    "v1-v1.hex": "abcd",
    "v1c-v1c.hex": "abcd",
    "v1c-v1-v1c.hex": "abcdef",
    "v2-v2.hex": "abcd",
    "v2c-v2c.hex": "abcd",
    "v2c-v2-v2c.hex": "abcdef",
    "v1-v1c-v2-v2c-v2b-v2b-v2b-v2bc-v1b-v1bc.hex": "ababcdcdefefghghghgh",
}


@pytest.mark.parametrize("name", sorted(KAFKA_GO_FIXTURES))
def test_kafka_go_fixtures_decode_to_expected_messages(wild, table, name):
    path = wild / "segmentio__kafka-go" / "fixtures" / name
    data = bytes.fromhex(path.read_text().strip())
    (part,) = _fetch_partitions(data[8:], 10)  # 4-byte size + correlation id, as the Go test skips
    check = table[_rel(wild, path)]["check"]
    assert f"topic={part['topic']} hw={part['hw']} " in check
    records = _records_of(part["records"], str(path))
    expected = [KAFKA_GO_MESSAGES[c] for c in KAFKA_GO_FIXTURES[name]]
    # the Go test reads as many messages as it expects; the capture may hold more
    got = [(r.key.decode(), r.value.decode()) for r in records[:len(expected)]]
    assert got == expected
    assert _compare_census(name, _census([part["records"]], str(path)), check) is None


def _kafkajs_bytes(path: Path) -> bytes:
    doc = json.loads(path.read_text())
    assert doc["type"] == "Buffer"
    return bytes(doc["data"])


def _kafkajs_fetch(wild: Path) -> Path:
    return wild / "tulios__kafkajs" / "src" / "protocol" / "requests" / "fetch" / "fixtures"


def test_kafkajs_fetch_responses_match_readme_counts(wild, table):
    fixtures = sorted(_kafkajs_fetch(wild).glob("v*_response*.json"))
    assert len(fixtures) >= 20
    problems = []
    for path in fixtures:
        version = int(re.match(r"v(\d+)_", path.name)[1])
        partitions = _fetch_partitions(_kafkajs_bytes(path), version)
        got = _census([p["records"] for p in partitions], str(path))
        check = table[_rel(wild, path)]["check"]
        if not check.startswith("OK Fetch"):
            continue  # the checker did not parse it (the Scala-producer capture): decoding must still work
        assert f"topic={partitions[0]['topic'][:30]}" in check, (path.name, check)  # README cuts names
        problem = _compare_census(path.name, got, check)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


def test_kafkajs_message_set_and_record_batch_fixtures(wild, table):
    base = wild / "tulios__kafkajs" / "src" / "protocol"
    problems = []
    for path in sorted((base / "messageSet" / "fixtures").glob("*.json")):
        data = _kafkajs_bytes(path)
        (size,) = struct.unpack_from(">i", data)
        assert size == len(data) - 4
        problem = _compare_census(path.name, _census([data[4:]], str(path)), table[_rel(wild, path)]["check"])
        if problem:
            problems.append(problem)
    for name in ("v0_recordbatch.json", "v0_recordbatch_zstd.json"):
        path = base / "recordBatch" / "fixtures" / name
        check = table[_rel(wild, path)]["check"]
        problem = _compare_census(name, _census([_kafkajs_bytes(path)], str(path)), check)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


# kafkajs src/protocol/requests/fetch/v{0,2,4}/response.spec.js
# (tulios/kafkajs @ 55b0b416): (partition, hw, [(offset, magic, key, value, timestamp, headers, crc)]);
# timestamp/crc None = not asserted by the spec.  Not in the corpus.
def _kv(i, k=None):
    return f"key-{i if k is None else k}", f"some-value-{i if k is None else k}"


KAFKAJS_EXPECTED = {
    ("v0_response.json", 0): (0, 1, [(0, 0, *_kv(0), None, {}, 120234579)]),
    ("v0_response_gzip.json", 0): (0, 3, [
        (0, 0, *_kv(0), None, {}, 120234579),
        (1, 0, *_kv(1), None, {}, -141862522),
        (2, 0, *_kv(2), None, {}, 1025004472),
    ]),
    # v2/response.spec.js: 9 bytes after the last whole message are not a message
    ("v2_response_index_out_of_range.json", 2): (1, 15734209, [
        (15733908, 0, *_kv(0), None, {}, 120234579),
        (15733909, 0, *_kv(1), None, {}, -141862522),
        (15733910, 0, *_kv(2), None, {}, 1025004472),
    ]),
    ("v4_response.json", 4): (0, 3, [
        (i, 2, *_kv(i), 1509827900073, {f"header-key-{i}": f"header-value-{i}"}, None) for i in range(3)
    ]),
    ("v4_response_gzip.json", 4): (0, 6, [
        (i, 2, *_kv(i, k), 1509827900073, {}, None) for i, k in enumerate((0, 1, 2, 1, 2, 3))
    ]),
    ("v4_response_010_format.json", 4): (1, 1, [(
        0, 1, "key-9bf6284dc11345082649-78767-f79b4780-f2aa-4bbb-979f-9a4815652b5c",
        "value-9bf6284dc11345082649-78767-f79b4780-f2aa-4bbb-979f-9a4815652b5c",
        1538502423117, {}, 2036710961,
    )]),
    ("v4_from_scala_producer_response.json", 4): (0, 6, [
        (i, 2, f"KEY-{i + 1}", f"VALUE-Lorem ipsum dolor sit amet-{i + 1}", ts, {}, None)
        for i, ts in enumerate((1539644731680, 1539644732194, 1539644732699,
                                1539644733203, 1539644733708, 1539644734213))
    ]),
}


@pytest.mark.parametrize("name,version", sorted(KAFKAJS_EXPECTED))
def test_kafkajs_fetch_responses_decode_to_spec_values(wild, name, version):
    path = _kafkajs_fetch(wild) / name
    (part,) = _fetch_partitions(_kafkajs_bytes(path), version)
    partition, hw, messages = KAFKAJS_EXPECTED[(name, version)]
    assert (part["partition"], part["error"], part["hw"]) == (partition, 0, hw)
    records = _records_of(part["records"], str(path))
    got = []
    for r, (_o, _m, _k, _v, ts, _h, crc) in zip(records, messages):
        got.append((r.offset, r.magic, r.key.decode(), r.value.decode(),
                    r.timestamp if ts is not None else None,
                    {k: v.decode() for k, v in r.headers},
                    r.crc if crc is not None else None))
    assert got == [m[:6] + ((m[6] & 0xFFFFFFFF) if m[6] is not None else None,) for m in messages]


def test_kafkajs_partial_messages_yield_no_records(wild):
    """v2/response.spec.js: four partitions whose 1024-byte record sets end inside their
    first message decode to no messages."""
    path = _kafkajs_fetch(wild) / "v2_response_partial_messages_many_partitions.json"
    partitions = _fetch_partitions(_kafkajs_bytes(path), 2)
    assert [(p["partition"], p["error"], p["hw"]) for p in partitions] == [
        (9, 0, 325), (3, 0, 314), (6, 0, 292), (0, 0, 263)]
    for p in partitions:
        scan = BatchScan(p["records"], path=str(path))
        assert list(scan) == [] and scan.stop_reason is WalkEnd.TRUNCATED


def test_ruby_kafka_message_fixture(wild, table):
    """zendesk/ruby-kafka spec/fixtures/message-0.9-format: key/value as the README states them."""
    rel = "zendesk__ruby-kafka/spec/fixtures/message-0.9-format"
    readme = (wild / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### zendesk/ruby-kafka"):]
    m = re.search(r'key "([^"]*)", value "([^"]*)", no timestamp', section)
    assert m, "README no longer names the ruby-kafka key/value"
    path = str(wild / rel)
    records = _records_of(open_buffer(path), path)
    assert [(r.key.decode(), r.value.decode(), r.timestamp, r.magic, r.crc_valid) for r in records] == [
        (m[1], m[2], -1, 0, True)]
    assert _compare_census(rel, _census([open_buffer(path)], path), table[rel]["check"]) is None


# --------------------------------------------------------------------------
# kafka-dump-log rendering of KRaft control records found in the corpus
# --------------------------------------------------------------------------


def test_kraft_snapshot_control_records_render_as_kafka_json(wild, table):
    """DumpLogSegments prints SnapshotHeader/SnapshotFooter with the generated JSON converters
    and LeaderChange as the bare control type."""
    snapshots = [rel for rel, check in _checked(table, "OK v2").items() if "control-type=3=" in check]
    leader_changes = [rel for rel, check in _checked(table, "OK v2").items() if "control-type=2=" in check]
    assert snapshots and leader_changes
    for rel in snapshots + leader_changes:
        path = str(wild / rel)
        out, err = [], []
        assert run_kafka_dump([path], KafkaDumpOptions(deep_iteration=True), out.append, err.append) == 0
        want = _readme_census(table[rel]["check"])
        headers = [line for line in out if " SnapshotHeader {" in line]
        footers = [line for line in out if " SnapshotFooter {" in line]
        leaders = [line for line in out if line.endswith(" controlType: LEADER_CHANGE(2)")]
        assert (len(headers), len(footers), len(leaders)) == (
            want["control-type=3"], want["control-type=4"], want["control-type=2"]), rel
        records = [r for b in BatchScan(open_buffer(path), path=path) if b.is_control
                   for r in batch_records(b, path)]
        for line in headers:
            body = json.loads(line.split(" SnapshotHeader ", 1)[1])
            assert list(body) == ["version", "lastContainedLogTimestamp"] and body["version"] == 0
            raw = next(r.value for r in records if control_record_type(r)[0] == 3)
            assert body["lastContainedLogTimestamp"] == struct.unpack_from(">q", raw, 2)[0]
        for line in footers:
            assert line.endswith(' SnapshotFooter {"version":0}')
