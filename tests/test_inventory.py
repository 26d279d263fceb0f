"""The one inventory of inputs: partitions and stores found at any depth, every file accounted for,
and lookup deciding once what its PATH is."""

from __future__ import annotations

import os

import pytest

from segtool.engine.inventory import directory_kind, inventory, store_root
from segtool.formats.file_kinds import DirectoryKind
from segtool.errors import NothingFound, UsageError
from segtool.engine.detect import detect
from segtool.kafka.names import is_log_file
from segtool.ops.lookup import LookupRequest, lookup

from tests.conftest import SAMPLE_DATA, corpus_path, segtool


def _os_walk_files(root) -> list[str]:
    return sorted(os.path.join(d, name) for d, _, names in os.walk(root, followlinks=True) for name in names)


@pytest.mark.parametrize("tree", ["kafka", "rocketmq", "wild"])
def test_every_file_of_the_corpus_is_an_entry_and_grouped_where_it_belongs(tree):
    root = corpus_path(tree)
    found = inventory([str(root)])
    assert sorted(e.path for e in found.entries) == _os_walk_files(root)
    # partitions: exactly the directories that hold a segment, found independently with os.walk
    with_logs = {os.path.dirname(p) for p in _os_walk_files(root) if is_log_file(p)}
    assert {p.directory for p in found.partitions if p.logs} == with_logs
    for partition in found.partitions:
        assert all(os.path.dirname(f.path) == partition.directory for f in partition.files)
    # stores: every CommitLog file sits in <root>/commitlog/ of its store
    commitlogs = [p for p in _os_walk_files(root) if detect(p).kind == "rocketmq-commitlog"
                  and os.path.basename(os.path.dirname(p)) == "commitlog"]
    grouped = {f.path: store.root for store in found.stores for f in store.commitlog}
    assert set(grouped) == set(commitlogs)
    for path, store in grouped.items():
        assert os.path.dirname(os.path.dirname(os.path.abspath(path))) == store


def test_store_root_of_each_store_file():
    store = corpus_path("rocketmq", "clean-multi", "store")
    found = inventory([str(store)])
    assert [s.root for s in found.stores] == [str(store)]
    kinds = {f.kind for f in found.stores[0].files}
    assert {"rocketmq-commitlog", "rocketmq-consumequeue", "rocketmq-indexfile", "rocketmq-checkpoint"} <= kinds
    assert store_root(detect(str(store / "checkpoint"))) == str(store)


def test_lookup_decides_what_its_path_is_once():
    partition = SAMPLE_DATA / "kafka" / "c07-compacted" / "data" / "c07-compact-0"
    store = SAMPLE_DATA / "rocketmq" / "kill9-abort" / "store"
    assert directory_kind(str(partition)) == DirectoryKind.KAFKA_PARTITION
    assert directory_kind(str(store)) == DirectoryKind.ROCKETMQ_STORE
    assert directory_kind(str(store / "index")) == DirectoryKind.ROCKETMQ_STORE
    with pytest.raises(NothingFound):
        directory_kind(str(partition.parent.parent))  # a case folder is neither: readable, nothing found
    with pytest.raises(UsageError):
        lookup(str(store), LookupRequest(offset=4))
    with pytest.raises(UsageError):
        lookup(str(partition), LookupRequest(queue_id=0, topic="T", queue_offset=0))
    answer, found = lookup(str(partition), LookupRequest(offset=3000))
    assert found and answer["offset"] >= 3000


def test_a_lookup_that_does_not_fit_its_path_is_a_usage_error():
    store = SAMPLE_DATA / "rocketmq" / "kill9-abort" / "store"
    run = segtool("lookup", store, "--offset", "4")
    assert run.returncode == 2 and "--offset does not apply to a RocketMQ store" in run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
