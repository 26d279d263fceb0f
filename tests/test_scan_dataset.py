"""`segtool scan` writes ONE hive-partitioned Parquet dataset that standard readers open as it is.

The whole corpus (Kafka and RocketMQ) is scanned once; pyarrow and DuckDB read OUT with topic and
partition as columns, and their counts per (log dir or store, topic, partition) are the records and
messages `segtool dump --json` lists for the same files.  Replicas of one partition scanned from several
brokers' log dirs are told apart by `broker_id` / `broker_label` (meta.properties' node id, else the
folder), on copies of a corpus partition and on a real 3-node KRaft cluster's log dirs.  Also here: an input without segments is
skipped (named, with the reason) instead of refusing the scan, a segment without an offset index is
split at batch starts found in its headers, and part files are written in bounded row groups.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from segtool.kafka.log import BatchScan  # noqa: E402
from segtool.kafka.names import is_log_file, topic_partition  # noqa: E402
from segtool.pipeline.engines import LocalEngine  # noqa: E402
from segtool.pipeline.scan import run_scan_task, scan  # noqa: E402
from segtool.pipeline.splits import kafka_boundaries, plan_tasks  # noqa: E402
from segtool.pipeline.inputs import discover  # noqa: E402
from segtool.source import open_buffer  # noqa: E402
from tests.conftest import corpus_path, segtool  # noqa: E402


@pytest.fixture(scope="module")
def corpus_scan(tmp_path_factory) -> tuple[Path, dict]:
    """The scan of the whole corpus, through the command line."""
    roots = [corpus_path("kafka"), corpus_path("rocketmq")]
    out = tmp_path_factory.mktemp("scan") / "out"
    run = segtool("scan", *roots, "--out", out, "--json", "--no-hash", "--workers", "2")
    assert run.returncode == 1, run.stderr  # the corpus holds damaged cases
    return out, json.loads(run.stdout)


@pytest.fixture(scope="module")
def dump_items() -> list[dict]:
    """`dump --json` of every segment and CommitLog directory the corpus holds (found by walking it, not from
    the scan): its batch, record and message items in order."""
    inputs = []
    for root in (corpus_path("kafka"), corpus_path("rocketmq")):
        for directory, _, files in os.walk(root):
            if os.path.basename(directory) == "commitlog":
                inputs.append(directory)
            else:
                inputs.extend(os.path.join(directory, name) for name in files if is_log_file(name))
    run = segtool("dump", "--json", *sorted(inputs))
    assert run.returncode in (0, 1), run.stderr
    return [item for item in map(json.loads, run.stdout.splitlines()) if item["kind"] in ("batch", "record", "message")]


@pytest.fixture(scope="module")
def dumped(dump_items) -> Counter:
    """Records and messages per (log dir or store root, topic, partition or queue id), from `dump --json`."""
    counts: Counter = Counter()
    for item in dump_items:
        home = os.path.dirname(os.path.dirname(item.get("file", "")))
        if item["kind"] == "record":
            topic, partition = topic_partition(os.path.basename(os.path.dirname(item["file"])))
            counts[(home, topic, partition)] += 1
        elif item["kind"] == "message":
            counts[(home, item["topic"], item["queue_id"])] += 1
    assert counts
    return counts


def test_the_output_is_one_dataset_with_markers_beside_it(corpus_scan):
    out, report = corpus_scan
    names = sorted(os.listdir(out))
    assert names[:2] == ["_SUCCESS", "_segtool_report.json"] and all(n.startswith("topic=") for n in names[2:])
    assert json.loads((out / "_segtool_report.json").read_text())["dataset"] == report["dataset"]
    parts = sorted(out.rglob("*.parquet"))
    assert len(parts) == report["dataset"]["files"]
    for part in parts:
        topic_dir, partition_dir = part.relative_to(out).parts[:2]
        assert topic_dir.startswith("topic=") and partition_dir.startswith("partition=")
        assert part.name.startswith("part-")
    assert not (out / "_temporary").exists()


def test_pyarrow_reads_it_as_it_is(corpus_scan, dumped):
    out, report = corpus_scan
    table = pq.read_table(out, columns=["broker", "source_dir", "topic", "partition"])
    assert table.num_rows == report["dataset"]["rows"] == sum(dumped.values())
    got = Counter(zip(table.column("source_dir").to_pylist(), table.column("topic").to_pylist(),
                      table.column("partition").to_pylist()))
    assert got == dumped
    brokers = Counter(table.column("broker").to_pylist())
    assert brokers == report["dataset"]["rows_by_broker"]
    assert set(brokers) == {"kafka", "rocketmq"}
    # no corpus log dir holds a meta.properties and no store names its broker: every row names its folder
    labels = pq.read_table(out, columns=["source_dir", "broker_id", "broker_label"]).group_by(
        ["source_dir", "broker_id", "broker_label"]).aggregate([]).to_pylist()
    assert not any(os.path.exists(os.path.join(row["source_dir"], "meta.properties")) for row in labels)
    assert all(row["broker_id"] is None and row["broker_label"] == row["source_dir"] for row in labels)


def test_duckdb_reads_it_as_it_is(corpus_scan, dumped):
    out, _ = corpus_scan
    by_key = duckdb.sql(f"select topic, partition, count(*) from read_parquet('{out}/**/*.parquet', "
                        "hive_partitioning=true) group by all").fetchall()
    expected: Counter = Counter()
    for (_, topic, partition), n in dumped.items():
        expected[(topic, partition)] += n
    assert {(topic, partition): n for topic, partition, n in by_key} == expected
    by_source = duckdb.sql(f"select source_dir, topic, partition, count(*) from read_parquet('{out}/**/*.parquet', "
                           "hive_partitioning=true) group by all").fetchall()
    assert {(s, t, p): n for s, t, p, n in by_source} == dumped


def test_an_input_without_segments_is_skipped_with_its_reason(tmp_path):
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    indexes_only = tmp_path / "indexes-only" / "orders-0"
    indexes_only.mkdir(parents=True)
    for index in sorted(partition.glob("*.index")):
        shutil.copy(index, indexes_only)
    run = segtool("scan", indexes_only.parent, partition, "--out", tmp_path / "out", "--json", "--no-hash")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    skipped = {entry["path"]: entry["reason"] for entry in report["inputs"]["skipped"]}
    assert "no Kafka .log segments or RocketMQ CommitLog files here" in skipped[str(indexes_only.parent)]
    assert all(str(index) in skipped for index in indexes_only.iterdir())
    assert report["dataset"]["rows"] > 0
    alone = segtool("scan", indexes_only.parent, "--out", tmp_path / "none")
    assert alone.returncode == 1 and alone.stderr.count("\n") == 1  # nothing anywhere: still "nothing found"


def _batch_starts(log: Path) -> list[int]:
    return [batch.position for batch in BatchScan(open_buffer(str(log)))]


def test_a_segment_without_index_is_split_at_batch_starts(tmp_path):
    source = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    partition = tmp_path / "logs" / "c01-plain-0"
    shutil.copytree(source, partition)
    for index in partition.glob("*.index"):
        index.unlink()
    split = 16 * 1024
    inputs = discover([str(partition)])
    tasks, notes = plan_tasks(inputs, split)
    segments = len(inputs.kafka[0].logs)
    assert len(tasks) > 2 * segments  # cut, though no index says where batches start
    assert any("walking the batch headers" in note for note in notes)
    for log in sorted(partition.glob("*.log")):
        boundaries, _ = kafka_boundaries(str(log), log.stat().st_size, int(log.name[:20]), split)
        assert boundaries == sorted(set(boundaries)) and set(boundaries) <= set(_batch_starts(log))
    cut = scan([str(partition)], str(tmp_path / "cut"), LocalEngine(1), split_bytes=split, hash_inputs=False)
    whole = scan([str(source)], str(tmp_path / "whole"), LocalEngine(1), split_bytes=0, hash_inputs=False)
    assert not cut["problems"] and cut["tasks"] == len(tasks)
    order = [("segment_base_offset", "ascending"), ("offset", "ascending")]
    a = pq.read_table(tmp_path / "cut").drop_columns(["source_dir", "broker_label"]).sort_by(order)
    b = pq.read_table(tmp_path / "whole").drop_columns(["source_dir", "broker_label"]).sort_by(order)
    assert a.num_rows == b.num_rows > 0 and a.equals(b)


def test_parts_are_written_in_bounded_row_groups(tmp_path):
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    store = corpus_path("rocketmq", "kill9-abort", "store")
    report = scan([str(partition), str(store)], str(tmp_path / "out"), LocalEngine(1), chunk_rows=100,
                  with_values=True, hash_inputs=False)
    groups = 0
    rows = 0
    for part in (tmp_path / "out").rglob("*.parquet"):
        parquet = pq.ParquetFile(part)
        for i in range(parquet.metadata.num_row_groups):
            group = parquet.read_row_group(i, columns=["broker", "batch_position"]).to_pylist()
            groups += 1
            rows += len(group)
            if group[0]["broker"] == "kafka":  # a row group ends with the whole batch that reached the bound
                assert sum(1 for row in group if row["batch_position"] != group[-1]["batch_position"]) < 100
            else:
                assert len(group) <= 100
    assert rows == report["dataset"]["rows"]
    assert groups > report["dataset"]["rows"] // 100  # written as they came, not as one table
    # the byte bound: about 8 KiB of keys and values per row group (plus the batch that crossed it)
    tasks, _ = plan_tasks(discover([str(partition)]), 0)
    stats = run_scan_task(tasks[0], str(tmp_path / "bytes"), with_values=True, chunk_bytes=8 * 1024)
    (staged,) = stats["parts"]
    part = pq.ParquetFile(tmp_path / "bytes" / (staged["path"] + ".staged"))
    assert part.metadata.num_row_groups > 1
    for i in range(part.metadata.num_row_groups):
        group = part.read_row_group(i, columns=["batch_position", "key_size", "value_size"]).to_pylist()
        per_batch: Counter = Counter()
        for row in group:
            per_batch[row["batch_position"]] += max(row["key_size"], 0) + max(row["value_size"], 0)
        last = group[-1]["batch_position"]  # the batch that reached the bound is written with the group
        assert sum(per_batch.values()) - per_batch[last] < 8 * 1024


# -- which broker a row comes from -----------------------------------------------------------------

REPLICA_SOURCE = ("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
WILD_KRAFT = ("wild", "apache__kafka", "core", "data")
# the log dirs of one 3-node KRaft cluster (one cluster.id) that hold __cluster_metadata-0 segments
WILD_KRAFT_LOG_DIRS = ("kafka-2167572160391180112", "kafka-7155829485418535035", "kafka-7498518511977031704")


def _write_meta_properties(log_dir: Path, node_id: int, directory_id: str) -> None:
    """meta.properties as a KRaft broker writes it (MetaProperties v1 through PropertiesUtils.writePropertiesFile:
    a comment line, a date line, then the properties)."""
    log_dir.joinpath("meta.properties").write_text(
        f"#\n#Thu Nov 27 12:00:00 UTC 2025\nnode.id={node_id}\ndirectory.id={directory_id}\nversion=1\n"
        "cluster.id=ljAoerGESXi5val3QKEeFQ\n", encoding="iso-8859-1")


def _records_per_partition(*partitions: Path) -> dict[str, int]:
    """Records `segtool dump --json` lists in each partition directory's segments, by partition directory."""
    counts: Counter = Counter()
    for partition in partitions:
        run = segtool("dump", "--json", *sorted(partition.glob("*.log")))
        assert run.returncode == 0, run.stderr
        counts[str(partition)] = sum(json.loads(line)["kind"] == "record" for line in run.stdout.splitlines())
    return counts


def _docs_replica_queries() -> list[str]:
    """The SQL statements of docs/pipeline.md's replicas block, as a reader would paste them."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "pipeline.md").read_text()
    (block,) = [block.split("```", 1)[0] for block in text.split("```sql")[1:] if "-- replicas:" in block]
    return [statement.strip() for statement in block.split(";") if "SELECT" in statement]


def test_replicas_from_two_brokers_are_told_apart_and_counted_once(tmp_path):
    source = corpus_path(*REPLICA_SOURCE)
    brokers = {1: tmp_path / "broker-a", 2: tmp_path / "broker-b"}
    directory_ids = {1: "5eICfu-ZSxqR41MQYQ5Mhw", 2: "hmVkgd6wQOGANqVGvXUZVA"}  # Kafka UUIDs, base64url
    for node_id, log_dir in brokers.items():
        shutil.copytree(source, log_dir / source.name)
        _write_meta_properties(log_dir, node_id, directory_ids[node_id])
    unnamed = tmp_path / "copied-without-meta"
    shutil.copytree(source, unnamed / source.name)
    out = tmp_path / "out"
    run = segtool("scan", brokers[1], brokers[2], unnamed, "--out", out, "--json", "--no-hash")
    assert run.returncode == 0, run.stderr
    assert not json.loads(run.stdout)["notes"]
    (records,) = _records_per_partition(source).values()
    assert records > 0

    by_broker = pq.read_table(out, columns=["broker_id", "broker_label"]).group_by(
        ["broker_id", "broker_label"]).aggregate([([], "count_all")]).to_pylist()
    assert sorted((row["broker_id"] is None, row["broker_id"] or 0, row["broker_label"], row["count_all"])
                  for row in by_broker) == [(False, 1, "broker 1", records), (False, 2, "broker 2", records),
                                            (True, 0, str(unnamed), records)]

    topic, partition = topic_partition(source.name)
    per_broker, distinct = (duckdb.sql(query.replace("/cases/42/scan", str(out))).fetchall()
                            for query in _docs_replica_queries())
    assert sorted((label, n) for t, p, label, _, n, _ in per_broker if (t, p) == (topic, partition)) == sorted(
        [("broker 1", records), ("broker 2", records), (str(unnamed), records)])
    assert distinct == [(topic, partition, records)]  # three copies, each record counted once


def test_a_file_uri_log_dir_reads_its_meta_properties(tmp_path):
    source = corpus_path(*REPLICA_SOURCE)
    log_dir = tmp_path / "broker-7"
    shutil.copytree(source, log_dir / source.name)
    _write_meta_properties(log_dir, 7, "hmVkgd6wQOGANqVGvXUZVA")
    uri = f"file://{log_dir}"
    report = scan([uri], str(tmp_path / "out"), LocalEngine(1), hash_inputs=False)
    table = pq.read_table(tmp_path / "out", columns=["source_dir", "broker_id", "broker_label"])
    assert table.num_rows == report["dataset"]["rows"] == sum(_records_per_partition(source).values())
    assert set(zip(*(table.column(name).to_pylist() for name in table.column_names))) == {(uri, 7, "broker 7")}


def test_a_meta_properties_that_names_no_broker_is_a_note_and_the_folder_names_it(tmp_path):
    real = corpus_path(*WILD_KRAFT, WILD_KRAFT_LOG_DIRS[0])
    log_dir = tmp_path / "node-lost"
    shutil.copytree(real, log_dir)
    meta = log_dir / "meta.properties"
    lines = meta.read_text(encoding="iso-8859-1").splitlines(keepends=True)
    meta.write_text("".join(line for line in lines if not line.startswith("node.id=")), encoding="iso-8859-1")
    run = segtool("scan", log_dir, "--out", tmp_path / "out", "--json", "--no-hash")
    assert run.returncode == 0, run.stderr
    (note,) = json.loads(run.stdout)["notes"]
    assert note.startswith(f"{meta}: ") and note.count(str(meta)) == 1
    assert "without node.id" in note and note.endswith("its rows name the broker by its folder")
    table = pq.read_table(tmp_path / "out", columns=["broker_id", "broker_label"])
    assert table.num_rows > 0
    assert set(zip(table.column("broker_id").to_pylist(), table.column("broker_label").to_pylist())) == {
        (None, str(log_dir))}


def test_a_real_kraft_clusters_log_dirs_give_one_broker_each(tmp_path):
    """Three brokers' copies of __cluster_metadata-0, as a 3-node KRaft cluster left them: the rows of each copy
    carry its broker's node.id, and a per-broker count equals each copy's records."""
    log_dirs = [corpus_path(*WILD_KRAFT, name) for name in WILD_KRAFT_LOG_DIRS]
    node_ids = {}
    for log_dir in log_dirs:  # what each meta.properties says, read as text
        (line,) = [line for line in (log_dir / "meta.properties").read_text().splitlines()
                   if line.startswith("node.id=")]
        node_ids[str(log_dir)] = int(line.split("=", 1)[1])
    assert sorted(node_ids.values()) == [0, 1, 2]
    records = _records_per_partition(*(log_dir / "__cluster_metadata-0" for log_dir in log_dirs))
    out = tmp_path / "out"
    run = segtool("scan", *log_dirs, "--out", out, "--json", "--no-hash")
    assert run.returncode == 0, run.stderr
    got = duckdb.sql(f"SELECT source_dir, broker_id, broker_label, count(*) FROM read_parquet('{out}/**/*.parquet', "
                     "hive_partitioning = true) GROUP BY ALL").fetchall()
    assert sorted(got) == sorted((str(log_dir), node_ids[str(log_dir)], f"broker {node_ids[str(log_dir)]}",
                                  records[str(log_dir / "__cluster_metadata-0")]) for log_dir in log_dirs)


# -- the columns of Spark's Kafka source, one event time -------------------------------------------

# Spark's Kafka source schema (spark-sql-kafka-0-10, KafkaRecordToRowConverter.kafkaSchema(includeHeaders = true)):
# the Parquet types Spark reads as its SQL types, and those SQL types
SPARK_KAFKA_SOURCE = {
    "key": (pa.binary(), "binary"), "value": (pa.binary(), "binary"), "topic": (pa.string(), "string"),
    "partition": (pa.int32(), "int"), "offset": (pa.int64(), "bigint"),
    "timestamp": (pa.timestamp("ms", tz="UTC"), "timestamp"), "timestampType": (pa.int32(), "int"),
    "headers": (pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])),
                "array<struct<key:string,value:binary>>"),
}
KAFKA_TIMESTAMP_TYPE_IDS = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}  # Kafka's TimestampType.id
LEGACY_MIXED = ("kafka", "c08-legacy-formats", "data", "c08-legacy-mixed-0")  # magic 0, 1 and 2 in one partition
DOCS_MINUTE = ("2026-11-21 23:39:00", "2026-11-21 23:40:00")  # the window of docs/pipeline.md's timeline query


def _epoch_ms(when) -> int | None:
    return None if when is None else round(when.timestamp() * 1000)


def _dumped_records(dump_items) -> Counter:
    """(partition dir, segment, batch position, offset, timestamp as stored or None for magic 0, timestampType) of
    every record `dump --json` lists, from the record and the batch item before it."""
    records: Counter = Counter()
    batch = None
    for item in dump_items:
        if item["kind"] == "batch":
            batch = item
        elif item["kind"] == "record":
            stored = None if batch["magic"] == 0 else item["timestamp"]
            records[(os.path.dirname(item["file"]), os.path.basename(item["file"]), item["batch_position"],
                     item["offset"], stored, KAFKA_TIMESTAMP_TYPE_IDS[batch["timestamp_type"]])] += 1
    return records


def _docs_sql(marker: str) -> list[str]:
    """The SQL statements of the docs/pipeline.md block whose first line starts with ``marker``."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "pipeline.md").read_text()
    (block,) = [block.split("```", 1)[0] for block in text.split("```sql")[1:] if block.lstrip().startswith(marker)]
    return [statement.strip() for statement in block.split(";") if "SELECT" in statement]


def _spark_source_query(dialect: str, out: Path) -> list[str]:
    """docs/pipeline.md's query written for Spark's Kafka source, on one real partition with its three formats."""
    topic, partition = topic_partition(corpus_path(*LEGACY_MIXED).name)
    return [statement.replace("/cases/42/scan", str(out)).replace("'orders'", f"'{topic}'")
            .replace("partition = 3", f"partition = {partition}") for statement in _docs_sql(f"-- {dialect}")]


def _dumped_partition(dump_items) -> list[tuple]:
    """(key text, offset, timestamp ms or None, timestampType) of LEGACY_MIXED's records, in offset order."""
    partition = str(corpus_path(*LEGACY_MIXED))
    rows = []
    batch = None
    for item in dump_items:
        if item["kind"] == "batch":
            batch = item
        elif item["kind"] == "record" and os.path.dirname(item["file"]) == partition:
            stored = None if batch["magic"] == 0 or item["timestamp"] == -1 else item["timestamp"]
            rows.append((item["key"], item["offset"], stored, KAFKA_TIMESTAMP_TYPE_IDS[batch["timestamp_type"]]))
    return sorted(rows, key=lambda row: row[1])


def _timeline_query(dump_items) -> tuple[str, Counter]:
    """docs/pipeline.md's one-minute timeline query moved to the minute of the corpus's first RocketMQ message,
    and the (broker, ms) of the records and messages `dump --json` lists in that minute."""
    (query,) = _docs_sql("-- everything written in one minute")
    first = min(item["born_timestamp"] for item in dump_items if item["kind"] == "message")
    start = datetime.fromtimestamp(first // 60_000 * 60, timezone.utc)
    for docs, moved in zip(DOCS_MINUTE, (start, start + timedelta(minutes=1))):
        assert docs in query
        query = query.replace(docs, moved.strftime("%Y-%m-%d %H:%M:%S"))
    low, high = first // 60_000 * 60_000, first // 60_000 * 60_000 + 60_000
    expected = Counter(("rocketmq", item["born_timestamp"]) for item in dump_items
                       if item["kind"] == "message" and low <= item["born_timestamp"] < high)
    for (_, _, _, _, stored, _), n in _dumped_records(dump_items).items():
        if stored not in (None, -1) and low <= stored < high:
            expected[("kafka", stored)] += n
    assert expected[("rocketmq", first)] > 0
    return query, expected


def test_kafka_rows_have_the_columns_of_sparks_kafka_source(corpus_scan):
    out, _ = corpus_scan
    keys = pads.partitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]), flavor="hive")
    schema = pads.dataset(str(out), format="parquet", partitioning=keys).schema
    assert {name: schema.field(name).type for name in SPARK_KAFKA_SOURCE} == {
        name: arrow for name, (arrow, _) in SPARK_KAFKA_SOURCE.items()}


def test_kafka_timestamps_are_dumps_and_absent_ones_are_null(corpus_scan, dump_items):
    """Every Kafka row's timestamp is the one `dump --json` gives its record, as a TIMESTAMP; magic-0 records and
    Kafka's NO_TIMESTAMP (-1) give null, `timestamp_ms` keeps what is stored, `timestampType` is Kafka's id."""
    out, _ = corpus_scan
    names = ["source_dir", "topic", "partition", "segment_base_offset", "batch_position", "offset", "timestamp",
             "timestamp_ms", "timestampType", "magic"]
    rows = pq.read_table(out, columns=names, filters=[("broker", "=", "kafka")]).to_pylist()
    got: Counter = Counter()
    for row in rows:
        directory = os.path.join(row["source_dir"], f"{row['topic']}-{row['partition']}")
        got[(directory, f"{row['segment_base_offset']:020d}.log", row["batch_position"], row["offset"],
             row["timestamp_ms"], row["timestampType"])] += 1
        assert _epoch_ms(row["timestamp"]) == (None if row["timestamp_ms"] in (None, -1) else row["timestamp_ms"])
    assert got == _dumped_records(dump_items)
    magic0 = [row for row in rows if row["magic"] == 0]
    assert magic0 and all(row["timestamp"] is None and row["timestamp_ms"] is None and row["timestampType"] == -1
                          for row in magic0)
    assert {row["timestampType"] for row in rows} == {-1, 0, 1}  # c05-logappendtime's batches among them


def test_magic_0_records_have_null_timestamps(corpus_scan, dump_items):
    partition = str(corpus_path(*LEGACY_MIXED))
    magic0 = sum(n for (directory, _, _, _, stored, kind), n in _dumped_records(dump_items).items()
                 if directory == partition and kind == -1 and stored is None)
    assert magic0 > 0
    out, _ = corpus_scan
    topic, number = topic_partition(os.path.basename(partition))
    ((nulls,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/**/*.parquet', hive_partitioning = true) "
                             f"WHERE topic = '{topic}' AND partition = {number} AND timestamp IS NULL").fetchall()
    assert nulls == magic0


def test_a_rocketmq_rows_event_time_is_its_born_timestamp(corpus_scan, dump_items):
    out, _ = corpus_scan
    rows = pq.read_table(out, columns=["source_dir", "physical_offset", "timestamp", "store_timestamp"],
                         filters=[("broker", "=", "rocketmq")]).to_pylist()
    got = Counter((row["source_dir"], row["physical_offset"], _epoch_ms(row["timestamp"])) for row in rows)
    expected = Counter((os.path.dirname(os.path.dirname(item["file"])), item["phy_offset"], item["born_timestamp"])
                       for item in dump_items if item["kind"] == "message")
    assert got == expected and rows
    # born and store times differ in the corpus, so the choice shows
    assert any(_epoch_ms(row["timestamp"]) != row["store_timestamp"] for row in rows)


def test_a_spark_kafka_source_query_runs_in_duckdb_with_offset_quoted(corpus_scan, dump_items):
    (spark_query,) = _docs_sql("-- Spark SQL")
    _, duckdb_query = _docs_sql("-- DuckDB")
    spark_query = "\n".join(line for line in spark_query.splitlines() if not line.startswith("--"))
    assert duckdb_query == spark_query.replace("offset", '"offset"')  # the same query, offset quoted
    out, _ = corpus_scan
    create, query = _spark_source_query("DuckDB", out)
    connection = duckdb.connect()
    connection.sql("SET TimeZone = 'America/New_York'")  # a TIMESTAMPTZ names one instant in any zone
    connection.sql(create)
    rows = [(key, offset, _epoch_ms(when), kind) for key, offset, when, kind in connection.sql(query).fetchall()]
    assert rows == _dumped_partition(dump_items)
    assert any(when is None for _, _, when, _ in rows) and any(when is not None for _, _, when, _ in rows)
    timeline, expected = _timeline_query(dump_items)
    got = Counter((broker, _epoch_ms(when)) for broker, _, _, _, when in connection.sql(timeline).fetchall())
    assert got == expected


def _set_batch_clock(log: Path, position: int, base_timestamp: int) -> int:
    """Give the v2 batch at ``position`` a producer clock of ``base_timestamp`` (its records keep their deltas) and a
    CRC that matches again, as a producer with a wild clock writes it; returns its record count."""
    from segtool.formats.checksums import crc32c
    from segtool.kafka.log import CRC_V2_START
    from segtool.kafka.schemas import BATCH_HEADER_V2

    data = bytearray(log.read_bytes())
    header = BATCH_HEADER_V2.parse(bytes(data[position:position + BATCH_HEADER_V2.sizeof()]))
    assert header.magic == 2 and not header.attributes & 0x08  # CreateTime: the records' times are base + delta
    header.max_timestamp += base_timestamp - header.base_timestamp
    header.base_timestamp = base_timestamp
    data[position:position + BATCH_HEADER_V2.sizeof()] = BATCH_HEADER_V2.build(header)
    end = position + 12 + header.batch_length
    data[position + 17:position + 21] = crc32c(bytes(data[position + CRC_V2_START:end])).to_bytes(4, "big")
    log.write_bytes(bytes(data))
    return header.record_count


@pytest.fixture(scope="module")
def wild_clock_scan(tmp_path_factory) -> tuple[Path, dict]:
    """A corpus segment whose first two batches a producer stamped past year 9999 and before year 1."""
    source = corpus_path(*REPLICA_SOURCE)
    root = tmp_path_factory.mktemp("wild-clock")
    partition = root / "logs" / source.name
    partition.mkdir(parents=True)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        shutil.copy(source / name, partition)
    log = partition / "00000000000000000000.log"
    first, second = _batch_starts(log)[:2]
    wild = {first: 2**62, second: -(2**62)}  # ms: year 146,140,482 and its mirror before the epoch
    counts = {position: _set_batch_clock(log, position, clock) for position, clock in wild.items()}
    run = segtool("dump", "--json", log)
    assert run.returncode == 0, run.stderr  # the CRCs match: to Kafka these are sound batches
    stored = {(item["batch_position"], item["offset"]): item["timestamp"]
              for item in map(json.loads, run.stdout.splitlines()) if item["kind"] == "record"}
    assert sum(1 for (position, _), ms in stored.items() if position in wild) == sum(counts.values())
    report = scan([str(partition.parent)], str(root / "out"), LocalEngine(1), hash_inputs=False)
    return root / "out", {"stored": stored, "wild": wild, "rows": report["dataset"]["rows"]}


def test_a_wild_producer_clock_is_null_in_timestamp_and_kept_in_timestamp_ms(wild_clock_scan):
    out, facts = wild_clock_scan
    rows = pq.read_table(out, columns=["batch_position", "offset", "timestamp", "timestamp_ms"]).to_pylist()
    assert len(rows) == len(facts["stored"]) == facts["rows"]
    for row in rows:  # to_pylist makes Python datetimes: one past year 9999 would raise here
        stored = facts["stored"][(row["batch_position"], row["offset"])]
        assert row["timestamp_ms"] == stored
        assert _epoch_ms(row["timestamp"]) == (None if row["batch_position"] in facts["wild"] else stored)
    wild = sum(1 for row in rows if row["batch_position"] in facts["wild"])
    ((nulls, kept),) = duckdb.sql(f"SELECT count(*) FILTER (WHERE timestamp IS NULL), count(timestamp_ms) FROM "
                                  f"read_parquet('{out}/**/*.parquet', hive_partitioning = true)").fetchall()
    assert (nulls, kept) == (wild, len(rows)) and wild > 0


@pytest.fixture(scope="module")
def spark_engine():
    from segtool.errors import SegtoolError
    from segtool.pipeline.spark import SparkEngine, find_java

    try:
        find_java()
    except SegtoolError as exc:
        pytest.skip(str(exc))
    engine = SparkEngine("local[1]")
    engine.start()
    yield engine
    engine.stop()


def test_a_spark_kafka_source_query_runs_unchanged_in_spark_sql(corpus_scan, dump_items, spark_engine):
    from pyspark.sql import SparkSession

    out, _ = corpus_scan
    spark = SparkSession(spark_engine.sc)
    spark.read.parquet(str(out)).createOrReplaceTempView("records")
    types = {field.name: field.dataType.simpleString() for field in spark.table("records").schema}
    assert {name: types[name] for name in SPARK_KAFKA_SOURCE} == {
        name: sql for name, (_, sql) in SPARK_KAFKA_SOURCE.items()}
    (query,) = _spark_source_query("Spark SQL", out)
    rows = [(r["key"], r["offset"], _epoch_ms(r["timestamp"]), r["timestampType"]) for r in spark.sql(query).collect()]
    assert rows == _dumped_partition(dump_items)
    timeline, expected = _timeline_query(dump_items)
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")  # the literals name their zone
    got = Counter((r["broker"], _epoch_ms(r["timestamp"])) for r in spark.sql(timeline).collect())
    assert got == expected


def test_spark_reads_a_dataset_with_a_wild_producer_clock(wild_clock_scan, spark_engine):
    from pyspark.sql import SparkSession

    out, facts = wild_clock_scan
    spark = SparkSession(spark_engine.sc)
    rows = spark.read.parquet(str(out)).select("batch_position", "offset", "timestamp", "timestamp_ms").collect()
    assert sorted((r["batch_position"], r["offset"], r["timestamp_ms"]) for r in rows) == sorted(
        (position, offset, stored) for (position, offset), stored in facts["stored"].items())
    assert all((r["timestamp"] is None) == (r["batch_position"] in facts["wild"]) for r in rows)
