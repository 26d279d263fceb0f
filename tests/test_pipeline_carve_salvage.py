"""``carve`` and ``salvage`` on the engines (segtool.pipeline.carve, segtool.pipeline.salvage).

carve searches each file as byte ranges, one task each, and puts the ranges together into the finds
of one search (``engine.carving.merged_chains``): the outputs must be the in-process run's, byte for
byte, whatever the split, with batches across every boundary, a find starting exactly on one, and a
batch nested in another across one.  salvage runs a task per partition and store: the same files and
the same report.  Then the local pool, Spark local[2] (spark marker) and evidence on an S3 server
(moto, on loopback) against the in-process run.
"""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from segtool.engine.carving import SPLIT_OVERLAP, SearchCounts, chains, merged_chains, search_range
from segtool.ops.carve import carve, search_file_range
from segtool.ops.salvage import salvage
from segtool.pipeline.carve import carve_on
from segtool.pipeline.engines import LocalEngine
from segtool.pipeline.salvage import salvage_on
from tests.conftest import corpus_path, segtool
from tests.s3_server import s3_server  # noqa: F401  (the session fixture)


def _needs_corpus():
    if not (corpus_path("kafka").is_dir() and corpus_path("rocketmq").is_dir()):
        pytest.skip("conformance corpus not present")


def _in_process_ranges(items):
    return [search_file_range(item) for item in items]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _placed(text: str, out: Path) -> dict:
    """A report with its output folder named OUT, and without the disk blocks each file was given (the
    file system's choice: the same bytes may take another block more or less)."""
    def without_blocks(value):
        if isinstance(value, dict):
            return {key: without_blocks(item) for key, item in value.items() if key != "allocated_bytes"}
        return [without_blocks(item) for item in value] if isinstance(value, list) else value

    return without_blocks(json.loads(text.replace(str(out), "OUT")))


def _same_outputs(one: Path, other: Path) -> None:
    """Every output file the same bytes; the report the same but for where it was written."""
    first, second = _files(one), _files(other)
    assert sorted(first) == sorted(second)
    for name, data in first.items():
        if name.endswith(".json"):
            assert _placed(data.decode(), one) == _placed(second[name].decode(), other), name
        else:
            assert data == second[name], name


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """A dense image (corpus batches and messages end to end) and where each of them lies."""
    from tests.dense_images import write_dense_image

    _needs_corpus()
    root = tmp_path_factory.mktemp("dense")
    (root / "evidence").mkdir()
    finds = write_dense_image(root / "evidence" / "disk.img", corpus_path(), 1)
    whole = root / "whole"
    carve([str(root / "evidence")], str(whole))
    return root, finds, whole


def test_batches_across_every_split_boundary_give_the_whole_search_finds(dense):
    root, finds, whole = dense
    size = (root / "evidence" / "disk.img").stat().st_size
    starts = {position for _, position, _ in finds}
    # the first split size from 200,000 on whose every boundary falls inside a batch or message
    split = next(s for s in range(200_000, 300_000) if not starts.intersection(range(s, size, s)))
    boundaries = list(range(split, size, split))
    inside = [next(f for f in finds if f[1] < b < f[1] + f[2]) for b in boundaries]
    assert len(inside) == len(boundaries) >= 10 and {fmt for fmt, _, _ in inside} == {"kafka", "rocketmq"}
    report = carve([str(root / "evidence")], str(root / "split"), search_ranges=_in_process_ranges,
                   split_bytes=split)
    assert report["summary"]["finds"] == len(finds)
    _same_outputs(whole, root / "split")


def test_a_find_exactly_at_a_boundary_is_found_once(dense):
    root, finds, whole = dense
    _, at, _ = next(f for f in finds if f[0] == "rocketmq" and f[1] > 100_000)  # a range of its own ends there
    report = carve([str(root / "evidence")], str(root / "at-boundary"), search_ranges=_in_process_ranges,
                   split_bytes=at)
    assert report["summary"]["finds"] == len(finds)
    messages = pq.read_table(root / "at-boundary" / "rocketmq_messages.parquet", columns=["position"])
    assert messages.column("position").to_pylist().count(at) == 1
    _same_outputs(whole, root / "at-boundary")


def test_a_batch_nested_across_a_boundary_is_searched_again():
    """A legacy message whose value holds the first 30 bytes of a v2 batch B, whose value is a batch C,
    B's other bytes after the message, then a batch X.  One search finds the message, then C inside B's
    bytes (B starts inside a find: never looked at), then X.  A range starting inside the message finds
    B instead and follows it to X, past positions the whole search checks: they are searched again."""
    from tests.kafka_build import build_legacy_message, make_batch

    at = 1_700_000_000_000
    inner = make_batch(500, [(None, b"c" * 40)], at)
    nested = make_batch(100, [(None, inner)], at)
    holder = build_legacy_message(7, 1, 0, None, nested[:30], at)
    first, last = make_batch(0, [(None, b"a" * 30)], at), make_batch(1000, [(None, b"x" * 30)], at)
    rng = random.Random(3)
    image = rng.randbytes(1001) + first + holder + nested[30:] + last + rng.randbytes(999)
    holder_at = 1001 + len(first)
    whole_counts, split_counts = SearchCounts(), SearchCounts()
    whole = [(c.format, c.positions, c.sizes) for c in chains(image, counts=whole_counts)]
    split = holder_at + 10
    searches = [search_range(image, start, min(start + split, len(image))) for start in range(0, len(image), split)]
    assert [position for _, position, *_ in searches[1].starts] == [holder_at + 34]  # B, inside the message
    merged = [(c.format, c.positions, c.sizes) for c in merged_chains(image, searches, counts=split_counts)]
    nested_end = holder_at + len(holder) + len(nested) - 30
    assert whole == [("kafka", [1001, holder_at], [len(first), len(holder)]),
                     ("kafka", [nested_end - len(inner) - 1], [len(inner)]),
                     ("kafka", [nested_end], [len(last)])]
    assert merged == whole and split_counts == whole_counts


def test_the_overlap_is_the_largest_find_either_broker_writes():
    # Kafka: message.max.bytes 1 MiB + the 12-byte log overhead; RocketMQ: maxMessageSize 4 MiB + 64 KiB
    assert SPLIT_OVERLAP == 4 * 1024 * 1024 + 64 * 1024


@pytest.fixture(scope="module")
def carve_evidence(tmp_path_factory):
    """test_carve's image (damaged corpus files in random bytes) beside one copy of the dense image."""
    from tests.dense_images import write_dense_image
    from tests.test_carve import _pieces, build_image

    _needs_corpus()
    root = tmp_path_factory.mktemp("carve-engines")
    (root / "evidence").mkdir()
    build_image(root / "evidence" / "image.bin", _pieces())
    write_dense_image(root / "evidence" / "dense.img", corpus_path(), 1)
    carve([str(root / "evidence")], str(root / "in-process"), records=True)
    return root


@pytest.fixture(scope="module")
def salvage_evidence(tmp_path_factory):
    """Damaged and clean Kafka partitions and two damaged RocketMQ stores, salvaged in-process."""
    _needs_corpus()
    root = tmp_path_factory.mktemp("salvage-engines")
    evidence = root / "evidence"
    shutil.copytree(corpus_path("kafka", "c03-codecs", "data"), evidence / "codecs")
    shutil.copytree(corpus_path("kafka", "c11a-crc-byte-flip", "data"), evidence / "flipped")
    shutil.copytree(corpus_path("kafka", "c11b-truncated-last-batch", "data"), evidence / "truncated")
    shutil.copytree(corpus_path("rocketmq", "corrupt-body-crc", "store"), evidence / "store-crc")
    shutil.copytree(corpus_path("rocketmq", "corrupt-torn-tail", "store"), evidence / "store-torn")
    report = salvage([str(evidence)], str(root / "in-process"))
    assert len(report["partitions"]) >= 4 and len(report["stores"]) == 2 and not report["summary"]["nothing_lost"]
    return root, report


def _same_salvage(root: Path, report: dict, name: str, other: dict) -> None:
    assert _placed(json.dumps(other), root / name) == _placed(json.dumps(report), root / "in-process")
    assert _files(root / name) == _files(root / "in-process")


def test_carve_on_the_local_pool_is_the_in_process_carve(carve_evidence):
    root = carve_evidence
    with LocalEngine(workers=2) as engine:
        carve_on([str(root / "evidence")], str(root / "pool"), engine, split_bytes=1024 * 1024, records=True)
    _same_outputs(root / "in-process", root / "pool")


def test_salvage_on_the_local_pool_is_the_in_process_salvage(salvage_evidence):
    root, report = salvage_evidence
    with LocalEngine(workers=2) as engine:
        pooled = salvage_on([str(root / "evidence")], str(root / "pool"), engine)
    _same_salvage(root, report, "pool", pooled)


@pytest.mark.slow
def test_cli_carve_and_salvage_take_the_engine_options(carve_evidence, salvage_evidence, tmp_path):
    root = carve_evidence
    run = segtool("carve", root / "evidence", "--out", tmp_path / "carved", "--records", "--workers", "2",
                  "--split-size", "2MiB", "--json")
    assert run.returncode == 1, run.stderr  # test_carve's image holds duplicates and undecodable batches
    _same_outputs(root / "in-process", tmp_path / "carved")
    salvaged_root, report = salvage_evidence
    run = segtool("salvage", salvaged_root / "evidence", "--out", tmp_path / "salvaged", "--workers", "2", "--json")
    assert run.returncode == 1, run.stderr
    assert _placed(run.stdout, tmp_path / "salvaged") == _placed(json.dumps(report), salvaged_root / "in-process")
    assert _files(tmp_path / "salvaged") == _files(salvaged_root / "in-process")
    refused = segtool("carve", root / "evidence", "--out", tmp_path / "again", "--conf", "spark.executor.memory=1g")
    assert refused.returncode == 2 and "--conf sets Spark settings" in refused.stderr


@pytest.mark.spark
def test_carve_and_salvage_on_spark_local_are_the_in_process_runs(carve_evidence, salvage_evidence,
                                                                     helpers_in_process):
    from segtool.pipeline.spark import SparkEngine

    root = carve_evidence
    salvaged_root, report = salvage_evidence
    with SparkEngine("local[2]", quiet=True) as engine:
        carve_on([str(root / "evidence")], str(root / "spark"), engine, split_bytes=1024 * 1024, records=True)
        on_spark = salvage_on([str(salvaged_root / "evidence")], str(salvaged_root / "spark"), engine)
    _same_outputs(root / "in-process", root / "spark")
    _same_salvage(salvaged_root, report, "spark", on_spark)


@pytest.fixture
def bucket(s3_server, monkeypatch):  # noqa: F811
    import uuid

    for key, value in s3_server.environment.items():
        monkeypatch.setenv(key, value)
    name = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


def _remote_files(s3_server, bucket: str, prefix: str) -> dict[str, bytes]:  # noqa: F811
    return {key[len(prefix) + 1:]: s3_server.read(bucket, key) for key in s3_server.keys(bucket, prefix + "/")
            if not key.endswith("/")}


@pytest.mark.slow
def test_carve_and_salvage_of_s3_evidence_into_s3(s3_server, bucket, salvage_evidence, tmp_path):  # noqa: F811
    """The same outputs as the local run of the same evidence: the printed report names the URIs, the
    files name the copies read (carve's Parquet ``file`` column and its report, as before)."""
    from segtool.engine import uris

    source, _ = salvage_evidence
    root = tmp_path / "local"
    for name in ("flipped", "store-crc"):  # a damaged partition and a damaged store
        shutil.copytree(source / "evidence" / name, root / "evidence" / name)
    s3_server.upload_tree(root / "evidence", bucket, "evidence")
    remote = segtool("salvage", f"s3://{bucket}/evidence", "--out", f"s3://{bucket}/cases/42/salvaged", "--json",
                     "--workers", "2")
    local = segtool("salvage", root / "evidence", "--out", tmp_path / "salvaged", "--json")
    assert remote.returncode == local.returncode == 1, remote.stderr
    places = {f"s3://{bucket}/cases/42/salvaged": str(tmp_path / "salvaged"),
              f"s3://{bucket}/evidence": str(root / "evidence")}
    text = remote.stdout
    for uri, path in places.items():
        text = text.replace(uri, path)
    assert _placed(text, tmp_path) == _placed(local.stdout, tmp_path)
    assert _remote_files(s3_server, bucket, "cases/42/salvaged") == _files(tmp_path / "salvaged")

    mirror = str(Path(uris.cache_dir()) / "mirror" / "s3" / bucket / "evidence")
    remote = segtool("carve", f"s3://{bucket}/evidence/store-crc", "--out", f"s3://{bucket}/cases/42/carved",
                     "--json", "--workers", "2", "--split-size", "256KiB")
    local = segtool("carve", root / "evidence" / "store-crc", "--out", tmp_path / "carved", "--json")
    assert remote.returncode == local.returncode, remote.stderr
    carved = _remote_files(s3_server, bucket, "cases/42/carved")
    assert sorted(carved) == sorted(_files(tmp_path / "carved"))
    for name, data in carved.items():
        mine = (tmp_path / "carved" / name).read_bytes()
        if name.endswith(".parquet"):
            table = pq.read_table(io.BytesIO(data))
            files = [f.replace(mirror, str(root / "evidence")) for f in table.column("file").to_pylist()]
            assert table.drop_columns(["file"]).equals(pq.read_table(io.BytesIO(mine)).drop_columns(["file"]))
            assert files == pq.read_table(io.BytesIO(mine), columns=["file"]).column("file").to_pylist()
        elif name.endswith(".jsonl"):
            assert data.decode().replace(mirror, str(root / "evidence")) == mine.decode()
    text = remote.stdout.replace(f"s3://{bucket}/cases/42/carved", str(tmp_path / "carved")).replace(
        f"s3://{bucket}/evidence", str(root / "evidence"))
    report, expected = json.loads(text), json.loads(local.stdout)
    # what was written differs by the names of the copies read, compared above
    assert [item["path"] for item in report.pop("written")] == [item["path"] for item in expected.pop("written")]
    assert report == expected and report["summary"]["finds"] > 0


def _driver_mirror() -> Path:
    from segtool.engine import uris

    return Path(uris.cache_dir()) / "mirror"


@pytest.mark.spark
def test_salvage_on_spark_reads_s3_evidence_on_the_executors(s3_server, bucket, salvage_evidence, tmp_path,
                                                               helpers_in_process):  # noqa: F811
    """Each task stages its partition's or store's files itself: the driver's mirror stays empty, and the
    report and files are the in-process run's over the same URIs (which reads through that mirror)."""
    pytest.importorskip("pyspark")
    source, _ = salvage_evidence
    s3_server.upload_tree(source / "evidence", bucket, "evidence")
    evidence = f"s3a://{bucket}/evidence"
    on_spark = segtool("salvage", evidence, "--out", tmp_path / "spark", "--json", "--master", "local[2]",
                       *s3_server.s3a_conf)  # a Spark context started earlier in this process keeps its environment
    assert not _driver_mirror().exists(), "the driver staged the evidence: the executors were to read it"
    in_process = segtool("salvage", evidence, "--out", tmp_path / "in-process", "--json")
    assert _driver_mirror().exists()
    assert on_spark.returncode == in_process.returncode == 1, on_spark.stderr
    assert on_spark.stdout.replace(str(tmp_path / "spark"), "OUT") == \
        in_process.stdout.replace(str(tmp_path / "in-process"), "OUT")
    assert _files(tmp_path / "spark") == _files(tmp_path / "in-process")
    # what makes it a real comparison: every partition and store of the evidence salvaged, damage found
    report = json.loads(on_spark.stdout)
    assert len(report["partitions"]) >= 4 and len(report["stores"]) == 2
    assert all(item["path"].startswith(f"{evidence}/") for item in report["inputs"])
    assert report["summary"]["damaged_ranges"] > 0


@pytest.mark.spark
def test_carve_on_spark_searches_s3_ranges_on_the_executors(s3_server, bucket, carve_evidence, tmp_path,
                                                              helpers_in_process):  # noqa: F811
    """A range task reads its range of the URI (plus one maximum find) and meets what the search of the
    whole file meets there; the Spark run's outputs are the in-process run's over the same URIs."""
    pytest.importorskip("pyspark")
    from segtool.pipeline.carve import search_uri_range

    root = carve_evidence
    s3_server.upload_tree(root / "evidence", bucket, "evidence")
    image, size = root / "evidence" / "dense.img", (root / "evidence" / "dense.img").stat().st_size
    middle = (size // 3, 2 * size // 3)
    ranged = search_uri_range((f"s3://{bucket}/evidence/dense.img", *middle))
    whole = search_file_range((str(image), *middle))
    assert ranged == whole and whole.starts
    spark = segtool("carve", f"s3a://{bucket}/evidence", "--out", tmp_path / "spark", "--records", "--json",
                    "--split-size", "1MiB", "--master", "local[2]", *s3_server.s3a_conf)
    in_process = segtool("carve", f"s3a://{bucket}/evidence", "--out", tmp_path / "in-process", "--records",
                         "--json")
    assert spark.returncode == in_process.returncode == 1, spark.stderr  # duplicates, undecodable batches
    _same_outputs(tmp_path / "in-process", tmp_path / "spark")
    assert _placed(spark.stdout, tmp_path / "spark") == _placed(in_process.stdout, tmp_path / "in-process")
