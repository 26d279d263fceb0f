"""One authority for Kafka's file names (LogFileUtils): every name in the corpus and wild/ goes
through it, and the partition view and scan's discovery read segments the same way."""

from __future__ import annotations

import os
import shutil

import pytest

from segtool.kafka.partition import PartitionView
from segtool.errors import UnreadableInput
from segtool.kafka.names import file_name, is_log_file, kraft_snapshot_id, offset_from_file_name
from segtool.pipeline.inputs import discover
from tests.conftest import corpus_path

_KAFKA_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".deleted", ".cleaned", ".swap",
                   ".checkpoint")


def _java_parse_long(text: str) -> int | None:
    """Long.parseLong as its Javadoc states it: an optional sign, then ASCII decimal digits, within 64 bits."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not all("0" <= c <= "9" for c in body):
        return None
    value = int(text)
    return value if -(2 ** 63) <= value < 2 ** 63 else None


def _names() -> list[str]:
    names = set()
    for root in (corpus_path("kafka"), corpus_path("wild")):
        for _, _, files in os.walk(root):
            names.update(f for f in files if f.endswith(_KAFKA_SUFFIXES))
    return sorted(names)


def test_every_corpus_name_parses_as_kafka_parses_it():
    names = _names()
    assert len(names) > 100
    for name in names + ["1_0.log", "+5.log", "-1.index", "99999999999999999999.log", ".log", "abc.log"]:
        expected = _java_parse_long(name.split(".", 1)[0])
        if expected is None:
            with pytest.raises(UnreadableInput):
                offset_from_file_name(name)
            assert not is_log_file(name)
        else:
            assert offset_from_file_name(name) == expected, name
            assert is_log_file(name) == name.endswith(".log")


def test_names_round_trip_and_snapshot_ids():
    assert file_name(1185, ".index") == "00000000000000001185.index"
    assert offset_from_file_name(file_name(2 ** 63 - 1, ".log")) == 2 ** 63 - 1
    snapshots = [n for n in _names() if n.endswith(".checkpoint") and "-" in n and n[0].isdigit()]
    assert snapshots
    for name in snapshots:
        end, epoch = kraft_snapshot_id(name)
        assert name == f"{end:020d}-{epoch:010d}.checkpoint"
    assert kraft_snapshot_id("bootstrap.checkpoint") is None


def test_partition_view_and_scan_read_the_same_segments(tmp_path):
    """A name Kafka cannot parse (1_0.log) is no segment for either; every corpus partition agrees."""
    partition = tmp_path / "t-0"
    shutil.copytree(corpus_path("kafka", "c01-multiseg-clean", "data", "c01-plain-0"), partition)
    shutil.copy(partition / "00000000000000000000.log", partition / "1_0.log")
    directories = [partition] + sorted(p for p in corpus_path("kafka").glob("*/data/*") if p.is_dir())
    for directory in directories:
        view = [(s.base_offset, os.path.basename(s.log_path)) for s in PartitionView(str(directory)).segments]
        found = discover([str(directory)])
        scanned = [(offset_from_file_name(f.path), os.path.basename(f.path)) for part in found.kafka for f in part.logs]
        assert scanned == view, directory
    assert "1_0.log" in {os.path.basename(s["path"]) for s in discover([str(partition)]).skipped}
