"""Record filters, summaries and key/value renderings (segtool.ops.record_filters, docs/filters.md).

Every expected value is derived from the corpus files: decoded with the normal readers
(PartitionView, batch_records) and filtered by hand here, never typed in.
"""

from __future__ import annotations

import base64
import json
from collections import Counter

import pytest

from segtool.kafka.partition import PartitionView
from segtool.errors import UsageError
from segtool.ops.dump import dump_paths
from segtool.ops.lookup import LookupRequest, lookup
from segtool.ops.record_filters import (
    RecordFilter,
    RecordShape,
    filter_dump_items,
    record_filter_from_options,
    render_bytes,
    shape_dump_items,
    shape_record,
    summarize,
    summary_lines,
)
from segtool.ops.render import iso_time
from tests.conftest import corpus_path, segtool

WILD_CONFLUENT = ("wild", "rjmfernandes__flink-on-prem", "data")
WILD_TRANSACTIONS = ("wild", "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions", "kafka-data")


def _decoded(partition_dir) -> list[tuple[object, list]]:
    """(batch, its records) of every batch of a partition, with the normal readers."""
    view = PartitionView(str(partition_dir))
    return [(batch, list(segment.records(batch))) for segment in view.segments for batch in segment.batches_from(0)]


def _kept(items: list[dict]) -> tuple[list[int], list[int]]:
    """(batch positions, record offsets) of a filtered dump stream."""
    return ([item["position"] for item in items if item["kind"] == "batch"],
            [item["offset"] for item in items if item["kind"] == "record"])


def _expected(decoded, batch_test, record_test) -> tuple[list[int], list[int]]:
    positions, offsets = [], []
    for batch, records in decoded:
        passing = [record.offset for record in records if batch_test(batch) and record_test(record)]
        if passing:
            positions.append(batch.position)
            offsets.extend(passing)
    return positions, offsets


# -- filters on dump's item stream ----------------------------------------------------------

def test_offset_range_at_record_granularity():
    partition = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    decoded = _decoded(partition)
    multi = [batch for batch, records in decoded if len(records) > 2]
    # bounds inside batches, so the range cuts batches in two
    low, high = multi[1].base_offset + 1, multi[-2].last_offset - 1
    kept = list(filter_dump_items(dump_paths([str(partition)]), RecordFilter(first_offset=low, last_offset=high)))
    assert _kept(kept) == _expected(decoded, lambda b: True, lambda r: low <= r.offset <= high)
    assert {item["kind"] for item in kept} == {"batch", "record"}  # index entries, snapshots left out


def test_offset_range_in_a_shallow_dump_keeps_overlapping_batches():
    partition = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    decoded = _decoded(partition)
    low, high = decoded[3][0].base_offset + 1, decoded[-3][0].base_offset
    kept = list(filter_dump_items(dump_paths([str(partition)], deep=False),
                                  RecordFilter(first_offset=low, last_offset=high), deep=False))
    expected = [batch.position for batch, _ in decoded if batch.last_offset >= low and batch.base_offset <= high]
    assert _kept(kept) == (expected, [])


def test_time_range_on_out_of_order_timestamps():
    partition = corpus_path("kafka", "c06-ooo-timestamps", "data", "c06-ooo-ts-0")
    decoded = _decoded(partition)
    stamps = sorted({record.timestamp for _, records in decoded for record in records})
    low, high = stamps[len(stamps) // 4], stamps[len(stamps) // 2]
    # ISO-8601 and epoch ms name the same bounds
    record_filter = record_filter_from_options(from_time=iso_time(low), to_time=str(high))
    assert (record_filter.first_timestamp, record_filter.last_timestamp) == (low, high)
    kept = list(filter_dump_items(dump_paths([str(partition)]), record_filter))
    expected = _expected(decoded, lambda b: True, lambda r: low <= r.timestamp <= high)
    assert expected[1] and _kept(kept) == expected
    # out of order: some batches straddle the bounds, and the batch test must not drop them
    assert any(low <= r.timestamp <= high and any(not low <= o.timestamp <= high for o in records)
               for _, records in decoded for r in records)


@pytest.mark.parametrize("producer_id", [0, 1])
def test_producer_id_and_epoch_on_transactions(producer_id):
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    decoded = _decoded(partition)
    epoch = next(batch.producer_epoch for batch, _ in decoded if batch.producer_id == producer_id)
    record_filter = record_filter_from_options(producer_ids=[producer_id], producer_epoch=epoch)
    kept = list(filter_dump_items(dump_paths([str(partition)]), record_filter))
    expected = _expected(decoded, lambda b: b.producer_id == producer_id and b.producer_epoch == epoch,
                         lambda r: True)
    assert expected[1] and _kept(kept) == expected
    # the control markers of that producer are its batches too
    assert any(item.get("is_control") for item in kept if item["kind"] == "batch")


def test_leader_epoch_and_key_filters():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    decoded = _decoded(partition)
    epoch = decoded[-1][0].partition_leader_epoch
    key = next(record.key for _, records in decoded for record in records if record.key)
    record_filter = record_filter_from_options(leader_epoch=epoch, key=key.decode())
    kept = list(filter_dump_items(dump_paths([str(partition)]), record_filter))
    assert _kept(kept) == _expected(decoded, lambda b: b.partition_leader_epoch == epoch, lambda r: r.key == key)
    assert _kept(list(filter_dump_items(dump_paths([str(partition)]),
                                        RecordFilter(leader_epoch=epoch + 1000)))) == ([], [])


def test_limit_ends_the_stream():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    offsets = [record.offset for _, records in _decoded(partition) for record in records]
    kept = list(filter_dump_items(dump_paths([str(partition)]), RecordFilter(limit=7)))
    assert _kept(kept)[1] == offsets[:7]


def test_transactional_id_maps_to_its_producer_ids():
    from segtool.ops.transactions import transactions

    log_dir = corpus_path(*WILD_TRANSACTIONS)
    states = transactions(str(log_dir))["transactional_ids"]
    state = next(s for s in states if s["transactional_id"])
    record_filter = record_filter_from_options(transactional_id=state["transactional_id"], paths=[str(log_dir)])
    assert state["producer_id"] in record_filter.producer_ids
    partition = next(p for p in log_dir.iterdir() if p.name == "_confluent-ksql-default__command_topic-0")
    decoded = _decoded(partition)
    kept = list(filter_dump_items(dump_paths([str(partition)]), record_filter))
    expected = _expected(decoded, lambda b: b.producer_id in record_filter.producer_ids, lambda r: True)
    assert expected[1] and _kept(kept) == expected


def test_transactional_id_without_the_coordinator_log_is_a_usage_error():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    with pytest.raises(UsageError, match="__transaction_state"):
        record_filter_from_options(transactional_id="any", paths=[str(partition)])


def test_unparsable_times_and_crossed_bounds_are_usage_errors():
    for options in ({"from_time": "yesterday"}, {"to_time": "latest"}, {"from_offset": 9, "to_offset": 3}):
        with pytest.raises(UsageError):
            record_filter_from_options(**options)
    with pytest.raises(UsageError):
        RecordShape(value_format="yaml")


# -- summaries ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["c04-transactions", "c03-codecs"])
def test_summary_counts_equal_dumps_counts(case):
    data = corpus_path("kafka", case, "data")
    items = list(dump_paths([str(data)]))
    summary = summarize(filter_dump_items(items, RecordFilter()))
    batches = [item for item in items if item["kind"] == "batch"]
    records = [item for item in items if item["kind"] == "record"]
    assert summary["batches"] == len(batches) and summary["records"] == len(records)
    assert summary["bytes"] == sum(item["size"] for item in batches)
    assert summary["control_batches"] == sum(bool(item.get("is_control")) for item in batches)
    assert {c["codec"]: c["batches"] for c in summary["codecs"]} == Counter(item["codec"] for item in batches)
    assert {p["producer_id"]: p["batches"] for p in summary["producers"]} == Counter(
        item.get("producer_id", -1) for item in batches)
    stamps = [item["timestamp"] for item in records if item["timestamp"] >= 0]
    assert (summary["first_timestamp"], summary["last_timestamp"]) == (min(stamps), max(stamps))
    assert summary["time_span_ms"] == max(stamps) - min(stamps)
    assert (summary["first_offset"], summary["last_offset"]) == (min(r["offset"] for r in records),
                                                                  max(r["offset"] for r in records))


def test_summary_of_a_filtered_stream_counts_what_passed():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    decoded = _decoded(partition)
    summary = summarize(filter_dump_items(dump_paths([str(partition)]), RecordFilter(producer_ids=frozenset({1}))))
    mine = [(batch, records) for batch, records in decoded if batch.producer_id == 1]
    assert summary["records"] == sum(len(records) for _, records in mine)
    assert summary["bytes"] == sum(batch.size for batch, _ in mine)
    assert [p["producer_id"] for p in summary["producers"]] == [1]


# -- keys and values ------------------------------------------------------------------------

def test_schema_registry_framing_on_confluent_values():
    log_dir = corpus_path(*WILD_CONFLUENT)
    registered = set()
    for _, records in _decoded(log_dir / "_schemas-0"):
        for record in records:
            if record.value and record.key and json.loads(record.key).get("keytype") == "SCHEMA":
                registered.add(json.loads(record.value)["id"])
    shape = RecordShape(key_format="text", value_format="base64")
    partition = log_dir / "orders-0"
    framed_ids = set()
    items = [item for item in dump_paths([str(partition)]) if item["kind"] == "record"]
    for item in items:
        raw = base64.b64decode(item["value_b64"])
        shown = shape_record(item, shape)
        assert raw[0] == 0
        assert shown["value_schema_id"] == int.from_bytes(raw[1:5], "big")
        assert base64.b64decode(shown["value"]) == raw[5:]
        framed_ids.add(shown["value_schema_id"])
    assert items and framed_ids <= registered  # the ids the registry handed out
    summary = summarize(dump_paths([str(partition)]))
    assert summary["schema_registry_framed_values"] == len(items)


def test_json_format_renders_the_payload_after_the_framing():
    partition = corpus_path(*WILD_CONFLUENT, "promotions-0")
    framed = 0
    for item in dump_paths([str(partition)]):
        if item["kind"] != "record" or item["value_b64"] is None:
            continue
        raw = base64.b64decode(item["value_b64"])
        shown = shape_record(item, RecordShape(value_format="json"))
        assert "value_schema_id" in shown
        framed += 1
        try:
            expected = json.dumps(json.loads(raw[5:]), separators=(",", ":")), "json"
        except ValueError:  # an Avro payload: text when it is UTF-8, else hex
            try:
                expected = raw[5:].decode("utf-8"), "text"
            except UnicodeDecodeError:
                expected = raw[5:].hex(), "hex"
        assert (shown["value"], shown["value_format"]) == expected
    assert framed


@pytest.mark.parametrize("wanted", ["hex", "base64", "text", "json"])
def test_key_and_value_formats_round_trip(wanted):
    partition = corpus_path("kafka", "c03-codecs", "data", "c03-java-zstd-0")
    shape = RecordShape(key_format=wanted, value_format=wanted)
    seen = 0
    for item in dump_paths([str(partition)]):
        if item["kind"] != "record":
            continue
        shown = shape_record(item, shape)
        for name in ("key", "value"):
            raw = None if item[f"{name}_b64"] is None else base64.b64decode(item[f"{name}_b64"])
            if raw is None:
                assert shown[name] is None
                continue
            used = shown[f"{name}_format"]
            back = {"hex": bytes.fromhex, "base64": base64.b64decode,
                    "text": str.encode, "json": str.encode}[used](shown[name])
            if used == "json":
                assert json.loads(back) == json.loads(raw)
            else:
                assert back == raw
            seen += 1
    assert seen


def test_render_bytes_falls_back_to_what_the_bytes_allow():
    assert render_bytes(b"\xff\x00", "text") == ("ff00", "hex")
    assert render_bytes(b"not json", "json") == ("not json", "text")


def test_skip_record_metadata_keeps_key_and_value_only():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    shaped = list(shape_dump_items(dump_paths([str(partition)]), RecordShape(skip_metadata=True)))
    records = [item for item in shaped if item["kind"] == "record"]
    assert records and not any(item["kind"] == "batch" for item in shaped)
    assert all(set(item) <= {"kind", "key", "key_format", "value", "value_format", "file", "key_schema_id",
                             "value_schema_id"} for item in records)


# -- lookup ---------------------------------------------------------------------------------

def test_filtered_fetch_is_the_first_passing_record_from_the_offset():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    decoded = _decoded(partition)
    start = decoded[len(decoded) // 2][0].base_offset
    passing = [record.offset for batch, records in decoded if batch.producer_id == 1 and not batch.is_control
               for record in records if record.offset >= start]
    request = LookupRequest(offset=start, record_filter=RecordFilter(producer_ids=frozenset({1}), limit=3))
    answer, found = lookup(str(partition), request)
    assert found and answer["offset"] == passing[0]
    assert [record["offset"] for record in answer["records"]] == passing[:3]


def test_filtered_list_offsets_keeps_the_timestamp_bound():
    partition = corpus_path("kafka", "c06-ooo-timestamps", "data", "c06-ooo-ts-0")
    decoded = _decoded(partition)
    target = sorted(record.timestamp for _, records in decoded for record in records)[10]
    listed, _ = lookup(str(partition), LookupRequest(timestamp=str(target)))
    passing = [record.offset for _, records in decoded for record in records
               if record.offset >= listed["offset"] and record.timestamp >= target]
    answer, found = lookup(str(partition), LookupRequest(timestamp=str(target), record_filter=RecordFilter(limit=4)))
    assert found and [record["offset"] for record in answer["records"]] == passing[:4]


def test_key_lookup_with_a_producer_filter_and_summary():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    decoded = _decoded(partition)
    key = next(record.key for batch, records in decoded if batch.producer_id == 0 for record in records)
    passing = [record.offset for batch, records in decoded if batch.producer_id == 0 and not batch.is_control
               for record in records if record.key == key]
    request = LookupRequest(key=key.decode(), record_filter=RecordFilter(producer_ids=frozenset({0})))
    answer, found = lookup(str(partition), request)
    assert found and answer["offsets"] == passing
    answer, found = lookup(str(partition), LookupRequest(key=key.decode(), summary=True,
                                                         record_filter=RecordFilter(producer_ids=frozenset({1}))))
    assert "records" not in answer and answer["summary"]["records"] == 0 and not found


# -- the command line -----------------------------------------------------------------------

def test_lookup_cli_exit_codes():
    partition = corpus_path("kafka", "c04-transactions", "data", "c04-txn-0")
    producer = _decoded(partition)[0][0].producer_id
    found = segtool("lookup", partition, "--offset", 0, "--producer-id", producer, "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["record"]["offset"] == 0
    nothing = segtool("lookup", partition, "--offset", 0, "--producer-id", 10**12)
    assert nothing.returncode == 1, nothing.stderr
    for usage in (["--offset", 0, "--from-time", "yesterday"], ["--offset", 0, "--floor", "--limit", 2],
                  ["--offset", 0, "--transactional-id", "x"], ["--offset", 0, "--value-format", "yaml"],
                  ["--timestamp", "latest", "--producer-id", producer]):
        result = segtool("lookup", partition, *usage)
        assert result.returncode == 2, (usage, result.stdout, result.stderr)
        assert result.stderr.startswith("segtool: ") and "Traceback" not in result.stderr


def test_lookup_cli_shows_formats_and_summary():
    partition = corpus_path(*WILD_CONFLUENT, "orders-0")
    first = _decoded(partition)[0][1][0]
    shown = segtool("lookup", partition, "--offset", first.offset, "--value-format", "hex", "--full")
    assert shown.returncode == 0, shown.stderr
    assert f"[schema {int.from_bytes(first.value[1:5], 'big')}] {first.value[5:].hex()} (hex)" in shown.stdout
    summary = segtool("lookup", partition, "--offset", 0, "--summary", "--json")
    assert summary.returncode == 0, summary.stderr
    report = json.loads(summary.stdout)["summary"]
    assert report["records"] == sum(len(records) for _, records in _decoded(partition))


def test_summary_lines_name_every_producer_and_codec():
    data = corpus_path("kafka", "c03-codecs", "data")
    summary = summarize(dump_paths([str(data)]))
    text = "\n".join(summary_lines(summary))
    assert text.startswith(f"{summary['records']} records in {summary['batches']} batches")
    assert all(f"codec {codec['codec']}: {codec['batches']} batches" in text for codec in summary["codecs"])
    assert all(f"producer {p['producer_id']} " in text for p in summary["producers"])
    assert "{" not in text and "[" not in text  # never a Python repr


def test_dump_command_filters_by_offset_and_summarizes():
    """`segtool dump --from-offset/--to-offset` lists exactly the records in range; `--summary` counts them."""
    partition = corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0")
    view = PartitionView(str(partition))
    expected = [r.offset for segment in view.segments for batch in segment.batches_from(0)
                for r in segment.records(batch) if 100 <= r.offset <= 140]
    done = segtool("dump", "--json", "--from-offset", "100", "--to-offset", "140", str(partition))
    items = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert [i["offset"] for i in items if i["kind"] == "record"] == expected
    done = segtool("dump", "--json", "--summary", "--from-offset", "100", "--to-offset", "140", str(partition))
    (summary,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert (summary["kind"], summary["records"], summary["first_offset"], summary["last_offset"]) == (
        "records_summary", len(expected), expected[0], expected[-1])
    assert segtool("dump", "--format", "kafka", "--limit", "1", str(partition)).returncode == 2
