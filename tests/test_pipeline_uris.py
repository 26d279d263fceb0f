"""verify and rebuild-index on Spark over URIs read on the executors: each task stages its own files, and
the driver's mirror is never used.  On moto's S3 server bound to 127.0.0.1 (``tests/s3_server.py``), the
Spark run's JSON must be byte for byte the in-process run's over the same URIs (which reads through the
driver's mirror), and the indexes the executors write must be Kafka's own rebuild (corpus c09)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from segtool.engine import uris
from tests.conftest import corpus_path, segtool
from tests.s3_server import s3_server  # noqa: F401  (the session fixture)

pytestmark = pytest.mark.spark

pytest.importorskip("pyspark")

SPARK = ("--engine", "spark", "--master", "local[2]")
REBUILD_CASE = ("kafka", "c09-index-rebuild")  # Kafka's own rebuilt indexes are its goldens
# a partition whose load cuts segments (the startup plan reads the log dir's checkpoints), a damaged
# batch, and a RocketMQ store whose checks read across its CommitLog, ConsumeQueues and IndexFiles
VERIFY_TREES = {"kafka-logs": ("kafka", "c02-unclean-hot-copy", "data"),
                "damaged/kafka-logs": ("kafka", "c11a-crc-byte-flip", "data"),
                "rocketmq/store": ("rocketmq", "kill9-abort", "store")}


@pytest.fixture
def bucket(s3_server, monkeypatch):  # noqa: F811
    """A new bucket, the AWS_* variables of the server set (the Spark workers inherit them)."""
    for key, value in s3_server.environment.items():
        monkeypatch.setenv(key, value)
    name = f"evidence-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


def _driver_mirror() -> Path:
    return Path(uris.cache_dir()) / "mirror"


def _objects(s3_server, bucket: str, prefix: str) -> dict[str, bytes]:  # noqa: F811
    """The objects below a prefix, but pyarrow's directory markers (empty keys ending in ``/``)."""
    return {key[len(prefix) + 1:]: s3_server.read(bucket, key) for key in s3_server.keys(bucket, prefix + "/")
            if not key.endswith("/")}


def test_verify_on_spark_reads_on_the_executors(s3_server, bucket, helpers_in_process):  # noqa: F811
    for prefix, case in VERIFY_TREES.items():
        s3_server.upload_tree(corpus_path(*case), bucket, f"evidence/{prefix}")
    evidence = f"s3://{bucket}/evidence"
    on_spark = segtool("verify", "--deep", "--json", evidence, *SPARK, *s3_server.s3a_conf)
    assert not _driver_mirror().exists(), "the driver staged the evidence: the executors were to read it"
    in_process = segtool("verify", "--deep", "--json", evidence)
    assert _driver_mirror().exists()
    assert on_spark.returncode == in_process.returncode == 1, on_spark.stderr
    assert on_spark.stdout == in_process.stdout
    # what makes it a real comparison: every tree's files were checked, the damage and the cut found
    assert f'"path": "{evidence}/rocketmq/store/commitlog/' in on_spark.stdout
    assert '"segment_deleted_by_recovery"' in on_spark.stdout or '"records_lost"' in on_spark.stdout
    assert '"crc_mismatch"' in on_spark.stdout


def test_rebuild_index_on_spark_writes_from_the_executors(s3_server, bucket, helpers_in_process):  # noqa: F811
    s3_server.upload_tree(corpus_path(*REBUILD_CASE, "data"), bucket, "kafka-logs")
    on_spark = segtool("rebuild-index", f"s3a://{bucket}/kafka-logs", "--out", f"s3a://{bucket}/spark/indexes",
                       "--json", *SPARK, *s3_server.s3a_conf)
    assert on_spark.returncode == 0, on_spark.stderr
    assert not _driver_mirror().exists(), "the driver staged the evidence: the executors were to read it"
    written = _objects(s3_server, bucket, "spark/indexes")
    # Kafka's own rebuild of these segments is the judge
    goldens = corpus_path(*REBUILD_CASE, "expected", "kafka-rebuilt")
    expected = {p.relative_to(goldens).as_posix(): p.read_bytes() for p in goldens.rglob("*") if p.is_file()}
    assert expected and {name: written[name] for name in expected} == expected
    # nothing but the indexes: no temporary object left beside them
    assert all(name.rsplit("/", 1)[-1][0] not in "._" for name in written)
    in_process = segtool("rebuild-index", f"s3a://{bucket}/kafka-logs", "--out", f"s3a://{bucket}/local/indexes",
                         "--json")
    assert in_process.returncode == 0, in_process.stderr
    assert _objects(s3_server, bucket, "local/indexes") == written
    assert on_spark.stdout == in_process.stdout.replace(f"s3a://{bucket}/local/", f"s3a://{bucket}/spark/")


def test_rebuild_index_on_spark_from_s3_into_a_local_folder(s3_server, bucket, tmp_path,
                                                             helpers_in_process):  # noqa: F811
    s3_server.upload_tree(corpus_path(*REBUILD_CASE, "data"), bucket, "kafka-logs")
    on_spark = segtool("rebuild-index", f"s3://{bucket}/kafka-logs", "--out", tmp_path / "spark", "--json", *SPARK, *s3_server.s3a_conf)
    assert on_spark.returncode == 0, on_spark.stderr
    assert not _driver_mirror().exists()
    in_process = segtool("rebuild-index", f"s3://{bucket}/kafka-logs", "--out", tmp_path / "local", "--json")
    assert on_spark.stdout == in_process.stdout.replace(str(tmp_path / "local"), str(tmp_path / "spark"))
    spark_files = {p.relative_to(tmp_path / "spark"): p.read_bytes() for p in (tmp_path / "spark").rglob("*")
                   if p.is_file()}
    assert spark_files == {p.relative_to(tmp_path / "local"): p.read_bytes()
                           for p in (tmp_path / "local").rglob("*") if p.is_file()} != {}
