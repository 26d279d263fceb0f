"""Memory per scan task is bounded, and reading a URI's range in windows gives the rows of a whole read.

The windowed read of a URI task (``rows._TaskRange``) must list exactly what the
local task, which reads the whole mapped file, lists: every corpus case is scanned
both ways with windows far smaller than a batch and splits of 64 KiB (two or more in each corpus segment, sixteen in each 1 MiB CommitLog file), damaged
cases included, and the part files' rows, the problems and where each task stopped
must be the same.  The memory tests run one task of a big input made of corpus
records in a fresh interpreter and require its peak resident set (interpreter,
pyarrow and numpy included) under ``PEAK_MB``.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import CORPUS
from tests.task_memory_inputs import MIB, commitlog_file, kafka_segment, task_peak
from tests.s3_server import s3_server  # noqa: F401  (the session fixture)

pq = pytest.importorskip("pyarrow.parquet")

from segtool.pipeline import rows  # noqa: E402
from segtool.pipeline.engines import LocalEngine  # noqa: E402
from segtool.pipeline.inputs import discover  # noqa: E402
from segtool.pipeline.scan import scan  # noqa: E402
from segtool.pipeline.splits import plan_tasks  # noqa: E402

PEAK_MB = 300
SPLIT_BYTES = 64 * 1024
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

needs_corpus = pytest.mark.skipif(not CORPUS.exists(), reason="the conformance corpus is not at ../shared/corpus")


# the fast tier's cases: a torn batch, a zero tail and a torn CommitLog message (the windows' hand-over to the
# spill file); every other corpus case, damaged or clean, in the slow tier
_DAMAGED = ("c11b-truncated-last-batch", "c11c-zero-tail-64k", "corrupt-torn-tail")


def _scannable_cases() -> list:
    if not CORPUS.exists():
        return []
    cases = sorted(CORPUS.glob("kafka/*/data")) + sorted(CORPUS.glob("rocketmq/*/store"))
    found = [case for case in cases if any(case.glob("*/*.log")) or any(case.glob("commitlog/*"))]
    return [case if case.parent.name in _DAMAGED else pytest.param(case, marks=pytest.mark.slow) for case in found]


def _dataset(out) -> tuple[list, list, list]:
    """Each part file's rows (the columns naming the input place aside), the problems and each task's end."""
    import json

    parts = sorted(str(p.relative_to(out)) for p in out.rglob("part-*.parquet"))
    tables = [(part, pq.read_table(out / part).drop(["source_dir", "broker_label"])) for part in parts]
    report = json.loads((out / "_segtool_report.json").read_text())
    problems = [(p["kind"], p["message"].replace("file://", "")) for p in report["problems"]]
    ends = [(t["rows"], t["scanned_to"], t["stop_reason"]) for t in report["task_results"]]
    return tables, problems, ends


@needs_corpus
@pytest.mark.parametrize("window", [100])
@pytest.mark.parametrize("case", _scannable_cases(), ids=lambda case: case.parent.name)
def test_windowed_uri_read_gives_the_rows_of_the_whole_file(case, window, tmp_path, monkeypatch):
    local = scan([str(case)], str(tmp_path / "local"), LocalEngine(workers=1), split_bytes=SPLIT_BYTES,
                 with_values=True, hash_inputs=False)
    monkeypatch.setattr(rows, "WINDOW_BYTES", window)
    remote = scan([f"file://{case}"], str(tmp_path / "uri"), LocalEngine(workers=1), split_bytes=SPLIT_BYTES,
                  with_values=True, hash_inputs=False)
    assert remote["dataset"]["rows"] == local["dataset"]["rows"] > 0
    local_tables, local_problems, local_ends = _dataset(tmp_path / "local")
    uri_tables, uri_problems, uri_ends = _dataset(tmp_path / "uri")
    assert [part for part, _ in uri_tables] == [part for part, _ in local_tables]
    for (part, uri_table), (_, local_table) in zip(uri_tables, local_tables):
        assert uri_table.equals(local_table), part
    assert uri_problems == local_problems
    assert uri_ends == local_ends


@needs_corpus
def test_a_commitlog_task_writes_its_fullest_queue_when_a_bound_is_reached(tmp_path):
    """A Parquet writer holds every row group's metadata until its file closes (about 50 KB each), so
    RocketMQ rows must not be cut into a row group per queue per chunk: every row group but each part's
    last (the queues still pending at the task's end) is the fullest of the queues pending, so it holds
    at least ``chunk_rows`` over the number of queues."""
    chunk_rows = 200
    report = scan([str(CORPUS / "rocketmq" / "clean-multi" / "store")], str(tmp_path / "out"), LocalEngine(workers=1),
                  chunk_rows=chunk_rows, hash_inputs=False)
    parts = sorted((tmp_path / "out").rglob("part-*.parquet"))
    queues = {part.parent for part in parts}
    assert len(queues) > 20 and report["tasks"] > 1
    rows = 0
    for part in parts:
        metadata = pq.ParquetFile(part).metadata
        sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
        rows += sum(sizes)
        assert all(chunk_rows / len(queues) <= size <= chunk_rows for size in sizes[:-1]), part
    assert rows == report["dataset"]["rows"] > 4 * chunk_rows


def _peak_of_largest_task(path: str, split: int, with_values: bool, tmp_path, env: dict | None = None,
                          scanned_to: int | None = None) -> dict:
    """The peak of the largest task, which reads to its end (or to ``scanned_to``)."""
    tasks, _ = plan_tasks(discover([path]), split)
    task = max(tasks, key=lambda t: t["bytes"])
    result = task_peak(task, str(tmp_path / "run"), with_values, REPO, env)
    assert result["scanned_to"] == (task["start"] + task["bytes"] if scanned_to is None else scanned_to)
    return {**result, "task": task}


@pytest.fixture(scope="module")
def kafka_160(tmp_path_factory):
    return kafka_segment(tmp_path_factory.mktemp("k160") / "orders-0", 160 * MIB, mixed=True).parent


@pytest.fixture(scope="module")
def commitlog_160(tmp_path_factory):
    root = tmp_path_factory.mktemp("r160") / "store"
    commitlog_file(root, 160 * MIB)
    return root


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["", "file://"])
@pytest.mark.parametrize("broker", ["kafka", "rocketmq"])
def test_a_64mib_split_stays_under_the_bound(broker, scheme, kafka_160, commitlog_160, tmp_path):
    found = _peak_of_largest_task(scheme + str(kafka_160 if broker == "kafka" else commitlog_160), 64 * MIB,
                                  False, tmp_path)
    assert found["task"]["bytes"] > 48 * MIB and found["rows"] > 0
    assert found["peak_mb"] < PEAK_MB


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("broker", ["kafka", "rocketmq"])
def test_a_64mib_split_on_the_s3_server_stays_under_the_bound(broker, kafka_160, commitlog_160, s3_server,  # noqa: F811
                                                              tmp_path, monkeypatch):
    folder = kafka_160 if broker == "kafka" else commitlog_160
    s3_server.client().create_bucket(Bucket=f"memory-{broker}")
    s3_server.upload_tree(folder, f"memory-{broker}", "evidence")
    for key, value in s3_server.environment.items():  # planning in this process reads the .index there
        monkeypatch.setenv(key, value)
    found = _peak_of_largest_task(f"s3://memory-{broker}/evidence", 64 * MIB, False, tmp_path,
                                  s3_server.environment)
    assert found["task"]["bytes"] > 48 * MIB and found["rows"] > 0
    assert found["peak_mb"] < PEAK_MB


@pytest.fixture(scope="module")
def inputs_of_300mib(tmp_path_factory):
    """A partition and a store of 300 MiB: at 256 MiB splits each is one task of 300 MiB (a file up to
    1.25 splits stays whole, ``splits._SLACK``)."""
    folder = tmp_path_factory.mktemp("big")
    kafka_segment(folder / "kafka" / "orders-0", 300 * MIB, mixed=True)
    commitlog_file(folder / "rocketmq" / "store", 300 * MIB)
    return folder


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["", "file://"])
@pytest.mark.parametrize("broker", ["kafka", "rocketmq"])
def test_a_256mib_split_with_values_stays_under_the_bound(broker, scheme, inputs_of_300mib, tmp_path):
    folder = inputs_of_300mib / broker
    blank_at = _blank_record_position(folder / "store" / "commitlog" / "00000000000000000000") if broker == "rocketmq" else None
    found = _peak_of_largest_task(scheme + str(folder), 256 * MIB, True, tmp_path, scanned_to=blank_at)
    assert found["task"]["bytes"] > 256 * MIB and found["rows"] > 0
    assert found["peak_mb"] < PEAK_MB


def _blank_record_position(commitlog) -> int:
    """Where the CommitLog's BLANK end-of-file record starts (a whole CommitLog task reads to it): its magic
    code is the file's last non-zero bytes, zeros fill the rest of its size."""
    from segtool.rocketmq.store_files import BLANK_MAGIC_CODE, BLANK_RECORD_FAST

    size = commitlog.stat().st_size
    with open(commitlog, "rb") as handle:
        handle.seek(size - MIB)
        tail = handle.read()
    at = len(tail.rstrip(b"\0")) - BLANK_RECORD_FAST.size
    assert BLANK_RECORD_FAST.unpack_from(tail, at) == (len(tail) - at, BLANK_MAGIC_CODE)
    return size - len(tail) + at


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("broker", ["kafka", "rocketmq"])
def test_one_file_without_index_as_one_uri_task_stays_under_the_bound(broker, tmp_path_factory, tmp_path):
    """A URI segment without its .index cannot be split (finding batch starts would read it all): one task.
    Its 512 MiB exceed the bound: a task holding its range, as URI tasks once did (1,254 MB for 1 GiB),
    would fail here."""
    folder = tmp_path_factory.mktemp("unsplit")
    blank_at = None
    if broker == "kafka":
        kafka_segment(folder / "orders-0", 512 * MIB, with_index=False, mixed=True)
    else:
        blank_at = _blank_record_position(commitlog_file(folder / "store", 512 * MIB))
    found = _peak_of_largest_task(f"file://{folder}", 64 * MIB if broker == "kafka" else 4096 * MIB, False, tmp_path,
                                  scanned_to=blank_at)
    assert found["task"]["bytes"] >= 512 * MIB and found["rows"] > 0
    assert found["peak_mb"] < PEAK_MB
