"""Damaged and messy evidence for the command matrix (tests/test_damage_matrix.py).

Each fixture is built once per session in a temporary directory from copies of the conformance
corpus (or sample_data/, which always exists), then damaged the way the issue lists: a torn last
batch, a zero-filled tail, a flipped byte, an index entry pointing at a torn batch, a later segment
whose first batch claims base offset 0, garbage and cut producer snapshots, dangling links and
link loops, replicas side by side, mixed brokers, the brokers' own non-data files, RocketMQ stores
with a torn tail, a flipped body byte or a zeroed hole (4.x and 5.x), an empty directory, a file
no broker writes and a 0-byte CommitLog.  Where the damage fixes what the broker's recovery does,
the fixture carries it (``KafkaLoss`` / ``RocketLoss``), taken from the corpus goldens (Kafka's own
recovery of the c11 cases, RocketMQ's ``recovery.json``) or from the batch headers around the
bytes the builder damaged.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import CORPUS, SAMPLE_DATA

# Kafka's v2 batch header (DefaultRecordBatch): baseOffset int64, batchLength int32 at 8,
# lastOffsetDelta int32 at 23; a batch is 12 + batchLength bytes
BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT, RECORDS_AT = 8, 23, 61


@dataclass(frozen=True)
class KafkaLoss:
    """What Kafka's recovery does to a partition: its log end offset after loading and the
    records it drops (offsets at or past that end that the files held or a torn batch declares)."""
    log_end_offset: int
    records_dropped: int


@dataclass(frozen=True)
class RocketLoss:
    """What RocketMQ's recovery does to a store: the physical offset it cuts the CommitLog at."""
    cut_phy_offset: int


@dataclass
class Fixture:
    """One damaged or messy evidence tree and what each command should answer on it.

    ``root`` goes to the commands that walk a tree; ``partition`` (a Kafka partition directory)
    or ``store`` (a RocketMQ store root) to lookup and index-keys; ``logdir`` to groups and
    transactions.  ``damage`` names what is damaged, from what the commands look at:
    ``log`` (Kafka .log data: recovery truncates), ``index`` (an offset or time index),
    ``snapshot`` (a producer snapshot), ``commitlog`` (RocketMQ CommitLog data: recovery cuts),
    ``rocketmq_index`` (an IndexFile), ``unreadable`` (a dangling link or a link loop),
    ``duplicates`` (the same batches in more than one place: replicas)."""
    name: str
    root: Path
    damage: frozenset[str]
    partition: Path | None = None
    store: Path | None = None
    logdir: Path | None = None
    lookup_args: tuple[str, ...] = ()
    unreadable: tuple[Path, ...] = ()
    groups: bool = False  # committed offsets are there to find (groups answers 0 on a clean tree)
    transactions: bool = False
    recognised: bool = True  # some file of the tree is a broker's
    kafka_loss: KafkaLoss | None = None
    rocket_loss: RocketLoss | None = None

    def files(self) -> list[Path]:
        """Every file and link below the root (links not followed) and every empty directory:
        what a command that walks the tree must name, processed or skipped with its reason."""
        found = []
        for directory, dirs, names in os.walk(self.root):
            found += [Path(directory, n) for n in names]
            found += [Path(directory, d) for d in dirs if os.path.islink(os.path.join(directory, d))]
            if not dirs and not names and directory != str(self.root):
                found.append(Path(directory))
        return sorted(found)

    def digest(self) -> dict[str, str]:
        """sha256 of every regular file and the target of every link: what must not change."""
        out = {}
        for path in self.files():
            if path.is_dir() and not path.is_symlink():
                continue
            if path.is_symlink():
                out[str(path)] = "-> " + os.readlink(path)
            else:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out


def _corpus(*parts: str) -> Path:
    """A corpus path, from sample_data/ when only that is present, else the test is skipped."""
    for base in (CORPUS, SAMPLE_DATA):
        path = base.joinpath(*parts)
        if path.exists():
            return path
    pytest.skip(f"conformance corpus not present at {CORPUS.joinpath(*parts)} (needs ../shared/corpus)")


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    for directory, dirs, names in os.walk(target):  # the corpus is read-only; its copies need not be
        os.chmod(directory, 0o755)
        for name in names:
            if not os.path.islink(os.path.join(directory, name)):
                os.chmod(os.path.join(directory, name), 0o644)
    return target


def _partition(case: str, name: str, logdir: Path) -> Path:
    return _copy(_corpus("kafka", case, "data", name), logdir / name)


def _batches(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, size, base offset, last offset) of each whole v2 batch of a .log."""
    data, out, position = log.read_bytes(), [], 0
    while position + RECORDS_AT <= len(data):
        base, length = struct.unpack_from(">qi", data, position)
        if length < RECORDS_AT - 12 or position + 12 + length > len(data):  # zeros or a torn batch
            break
        delta = struct.unpack_from(">i", data, position + LAST_OFFSET_DELTA_AT)[0]
        out.append((position, 12 + length, base, base + delta))
        position += 12 + length
    return out


def _next_offset(partition: Path) -> int:
    """The log end offset of an undamaged partition: one past its last batch."""
    last_log = sorted(partition.glob("*.log"))[-1]
    return _batches(last_log)[-1][3] + 1


def _kafka(name: str, base: Path, case: str, partition: str, damage: frozenset[str],
           loss: KafkaLoss | None = None, **kw) -> Fixture:
    logdir = base / name / "logs"
    target = _partition(case, partition, logdir)
    return Fixture(name, logdir, damage, partition=target, logdir=logdir, lookup_args=("--timestamp", "latest"),
                   kafka_loss=loss, **kw)


def _c01(name: str, base: Path, partition: str = "c01-plain-0") -> tuple[Path, Path]:
    logdir = base / name / "logs"
    return logdir, _partition("c01-multiseg-clean", partition, logdir)


def _recovered_end(case: str) -> int:
    """Kafka's log end offset after its own recovery of a c11 case: the snapshot it wrote on stopping."""
    recovered = next(_corpus("kafka", case, "expected", "kafka-recovery").iterdir())
    return int(sorted(recovered.glob("*.snapshot"))[-1].name.split(".")[0])


# --- Kafka: the corpus's damaged cases -------------------------------------------------------

def c11a_crc_byte_flip(base: Path) -> Fixture:
    return _kafka("c11a_crc_byte_flip", base, "c11a-crc-byte-flip", "c01-plain-0", frozenset({"log"}), c11a_loss())


def c11b_truncated_last_batch(base: Path) -> Fixture:
    corruption = json.loads(_corpus("kafka", "c11b-truncated-last-batch", "case.json").read_text())["corruption"]
    end = _recovered_end("c11b-truncated-last-batch")
    return _kafka("c11b_truncated_last_batch", base, "c11b-truncated-last-batch", "c01-plain-0",
                  frozenset({"log"}), KafkaLoss(end, corruption["last_batch_last_offset"] + 1 - end))


def c11c_zero_tail_64k(base: Path) -> Fixture:
    fixture = _kafka("c11c_zero_tail_64k", base, "c11c-zero-tail-64k", "c01-plain-0", frozenset({"log"}))
    fixture.kafka_loss = KafkaLoss(_next_offset(fixture.partition), 0)  # the zeros held no records
    return fixture


def _index_case(name: str, case: str, base: Path) -> Fixture:
    """An index-only corruption: the log is whole; recovery rebuilds the index and drops nothing."""
    fixture = _kafka(name, base, case, "c01-plain-0", frozenset({"index"}))
    fixture.kafka_loss = KafkaLoss(_next_offset(fixture.partition), 0)
    return fixture


def c11d_index_entries_swapped(base: Path) -> Fixture:
    return _index_case("c11d_index_entries_swapped", "c11d-index-entries-swapped", base)


def c11e_timeindex_ts_decreased(base: Path) -> Fixture:
    return _index_case("c11e_timeindex_ts_decreased", "c11e-timeindex-ts-decreased", base)


def c11f_index_pos_mid_batch(base: Path) -> Fixture:
    return _index_case("c11f_index_pos_mid_batch", "c11f-index-pos-mid-batch", base)


def c02_unclean_hot_copy(base: Path) -> Fixture:
    """A live copy: preallocated, zero-filled active indexes and no clean-shutdown marker.  Nothing
    is damaged: the zero tails of mapped indexes are notes (docs/formats.md, zero_tail)."""
    logdir = _copy(_corpus("kafka", "c02-unclean-hot-copy", "data"), base / "c02_unclean_hot_copy" / "logs")
    partition = logdir / "c02-hot-idx1m-0"
    return Fixture("c02_unclean_hot_copy", logdir, frozenset(), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(_next_offset(partition), 0))


def clean_multisegment(base: Path) -> Fixture:
    """The reference: a clean partition, on which every command but groups and transactions
    (nothing of theirs is there) answers 0."""
    logdir, partition = _c01("clean_multisegment", base)
    return Fixture("clean_multisegment", logdir, frozenset(), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(_next_offset(partition), 0))


# --- Kafka: generated damage ------------------------------------------------------------------

def _torn(partition: Path, cut_into_last: int) -> KafkaLoss:
    """Cut the last segment `cut_into_last` bytes into its last batch; recovery ends before it."""
    last_log = sorted(partition.glob("*.log"))[-1]
    position, _, first, last = _batches(last_log)[-1]
    os.truncate(last_log, position + cut_into_last)
    return KafkaLoss(first, last + 1 - first)


def torn_last_batch(base: Path) -> Fixture:
    logdir, partition = _c01("torn_last_batch", base, "c01-plain-2")
    loss = _torn(partition, 800)
    return Fixture("torn_last_batch", logdir, frozenset({"log"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=loss)


def zero_filled_tail(base: Path) -> Fixture:
    """The last segment zeroed from the middle of its last batch to its end, its size kept (a
    write the page cache never flushed)."""
    logdir, partition = _c01("zero_filled_tail", base)
    last_log = sorted(partition.glob("*.log"))[-1]
    position, size, first, last = _batches(last_log)[-1]
    with open(last_log, "r+b") as handle:
        handle.seek(position + size // 2)
        handle.write(bytes(size - size // 2))
    return Fixture("zero_filled_tail", logdir, frozenset({"log"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(first, last + 1 - first))


def flipped_byte_middle_segment(base: Path) -> Fixture:
    """One record byte of a batch in the second of five segments flipped: the CRC fails there,
    recovery truncates that segment and deletes the three after it."""
    logdir, partition = _c01("flipped_byte_middle_segment", base)
    end = _next_offset(partition)
    segment = sorted(partition.glob("*.log"))[1]
    position, size, first, _ = _batches(segment)[10]
    data = bytearray(segment.read_bytes())
    data[position + RECORDS_AT + size // 3] ^= 0x20
    segment.write_bytes(bytes(data))
    return Fixture("flipped_byte_middle_segment", logdir, frozenset({"log"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(first, end - first))


def index_entry_at_torn_batch(base: Path) -> Fixture:
    """The issue's recipe: c01-plain-0's last segment cut to 100566 bytes, inside the batch its
    last .index entry points at."""
    logdir, partition = _c01("index_entry_at_torn_batch", base)
    last_log = partition / "00000000000000002093.log"
    position, _, first, last = _batches(last_log)[-1]
    os.truncate(last_log, 100566)
    assert position < 100566 < position + 1603, "the corpus segment is not the one the recipe names"
    return Fixture("index_entry_at_torn_batch", logdir, frozenset({"log", "index"}), partition=partition,
                   logdir=logdir, lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(first, last + 1 - first))


def later_segment_claims_offset_zero(base: Path) -> Fixture:
    """The third segment's first batch rewritten to claim base offset 0 (its CRC does not cover the
    base offset, so only its place says it is wrong).  What Kafka's loader makes of it (an offset
    out of the segment's range) is the tools' to say; the matrix asks only that they agree."""
    logdir, partition = _c01("later_segment_claims_offset_zero", base)
    segment = sorted(partition.glob("*.log"))[2]
    data = bytearray(segment.read_bytes())
    data[0:8] = bytes(8)
    segment.write_bytes(bytes(data))
    return Fixture("later_segment_claims_offset_zero", logdir, frozenset({"offsets"}), partition=partition,
                   logdir=logdir, lookup_args=("--timestamp", "latest"))


def garbage_producer_snapshot(base: Path) -> Fixture:
    """The newest producer snapshot replaced by 300 random bytes (seeded).  Kafka deletes a snapshot
    it cannot read and rebuilds the producer state from the log: no record is lost."""
    logdir, partition = _c01("garbage_producer_snapshot", base)
    end = _next_offset(partition)
    (partition / f"{end:020d}.snapshot").write_bytes(random.Random(27).randbytes(300))
    return Fixture("garbage_producer_snapshot", logdir, frozenset({"snapshot"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(end, 0))


def cut_producer_snapshot(base: Path) -> Fixture:
    """A real producer snapshot with entries (a transactional producer's) cut to 30 bytes."""
    fixture = _kafka("cut_producer_snapshot", base, "c04-transactions", "c04-txn-0", frozenset({"snapshot"}),
                     transactions=True)
    snapshot = sorted(fixture.partition.glob("*.snapshot"))[-1]
    os.truncate(snapshot, 30)
    fixture.kafka_loss = KafkaLoss(_next_offset(fixture.partition), 0)
    return fixture


def dangling_link_and_loop(base: Path) -> Fixture:
    """A clean log dir with a link to nowhere and a link to itself beside the partition: both
    unreadable entries (exit 2, named), the partition read in full."""
    logdir, partition = _c01("dangling_link_and_loop", base)
    os.symlink("/nonexistent/segtool-damage-matrix", logdir / "dangling.log")
    os.symlink("loop", logdir / "loop")
    return Fixture("dangling_link_and_loop", logdir, frozenset({"unreadable"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), unreadable=(logdir / "dangling.log", logdir / "loop"),
                   kafka_loss=KafkaLoss(_next_offset(partition), 0))


def replicas_side_by_side(base: Path) -> Fixture:
    """ev/broker1..3/c01-plain-0: three replicas of one partition; broker2's last segment is torn
    inside the batch its last index entry points at (the issue's recipe)."""
    root = base / "replicas_side_by_side" / "ev"
    for broker in ("broker1", "broker2", "broker3"):
        _partition("c01-multiseg-clean", "c01-plain-0", root / broker)
    torn = root / "broker2" / "c01-plain-0"
    last_log = torn / "00000000000000002093.log"
    _, _, first, last = _batches(last_log)[-1]
    os.truncate(last_log, 100566)
    return Fixture("replicas_side_by_side", root, frozenset({"log", "index", "duplicates"}), partition=torn,
                   logdir=root / "broker2", lookup_args=("--timestamp", "latest"),
                   kafka_loss=KafkaLoss(first, last + 1 - first))


def mixed_brokers(base: Path) -> Fixture:
    """One evidence tree: a Kafka log dir (a partition with a flipped byte, __consumer_offsets) and
    a RocketMQ store after a kill -9, side by side."""
    root = base / "mixed_brokers" / "evidence"
    logdir = root / "kafka-logs"
    partition = _partition("c11a-crc-byte-flip", "c01-plain-0", logdir)
    _partition("c10-consumer-offsets", "__consumer_offsets-0", logdir)
    _copy(_corpus("rocketmq", "kill9-abort", "store"), root / "rocketmq" / "store")
    return Fixture("mixed_brokers", root, frozenset({"log", "unclean_shutdown"}), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), groups=True,
                   kafka_loss=c11a_loss())


def c11a_loss() -> KafkaLoss:
    """c11a: a CRC failure in the middle batch of a segment; Kafka's recovery keeps what is before
    it (its recovered copy) and drops the rest of the segment's records (case.json's count)."""
    case = json.loads(_corpus("kafka", "c11a-crc-byte-flip", "case.json").read_text())
    end = _recovered_end("c11a-crc-byte-flip")
    return KafkaLoss(end, case["partitions"]["c01-plain-0"]["records"] - end)


SERVER_LOG = """\
[2026-11-21 23:39:12,004] INFO Registered kafka:type=kafka.Log4jController MBean (kafka.utils.Log4jControllerRegistration$)
[2026-11-21 23:39:12,311] INFO [ControllerServer id=1] Starting controller (kafka.server.ControllerServer)
[2026-11-21 23:39:13,120] INFO [LogLoader partition=c01-plain-0, dir=/var/lib/kafka/data] Loading producer state till offset 2500 with message format version 2 (kafka.log.UnifiedLog$)
[2026-11-21 23:39:13,126] INFO Completed load of Log(dir=/var/lib/kafka/data/c01-plain-0, topicId=Zr5Hq0mJTQ2c2hVQ6w7LXA, topic=c01-plain, partition=0, highWatermark=2500, lastStableOffset=2500, logStartOffset=0, logEndOffset=2500) with 5 segments in 14ms (1/1 completed in /var/lib/kafka/data) (kafka.log.LogManager)
[2026-11-21 23:41:02,877] WARN [SocketServer listenerType=BROKER, nodeId=1] Unexpected error from /127.0.0.1 (channelId=127.0.0.1:9092-127.0.0.1:52144-0); closing connection (org.apache.kafka.common.network.Selector)
org.apache.kafka.common.network.InvalidReceiveException: Invalid receive (size = 1195725856 larger than 104857600)
\tat org.apache.kafka.common.network.NetworkReceive.readFrom(NetworkReceive.java:94)
\tat org.apache.kafka.common.network.KafkaChannel.receive(KafkaChannel.java:462)
[2026-11-21 23:44:30,515] INFO [BrokerServer id=1] Transition from STARTED to SHUTTING_DOWN (kafka.server.BrokerServer)
"""

STATE_CHANGE_LOG = """\
[2026-11-21 23:39:13,402] INFO [Broker id=1] Transitioning 1 partition(s) to local leaders. (state.change.logger)
[2026-11-21 23:39:13,410] INFO [Broker id=1] Creating new partition c01-plain-0 with topic id Zr5Hq0mJTQ2c2hVQ6w7LXA. (state.change.logger)
[2026-11-21 23:39:13,433] INFO [Broker id=1] Leader c01-plain-0 with topic id Some(Zr5Hq0mJTQ2c2hVQ6w7LXA) starts at leader epoch 0 from offset 2500 with partition epoch 0, high watermark 2500, ISR [1], adding replicas [] and removing replicas [] . Previous leader None and previous leader epoch was -1. (state.change.logger)
"""


def broker_own_files(base: Path) -> Fixture:
    """A clean log dir holding what a Kafka broker keeps beside its partitions: meta.properties,
    bootstrap.checkpoint and __cluster_metadata-0 (with quorum-state) from a real Confluent 7.6
    log dir (wild/), the clean-shutdown marker as Kafka 3.9's CleanShutdownFileHandler writes it,
    and its server.log and state-change.log (log4j text)."""
    logdir, partition = _c01("broker_own_files", base)
    wild = _corpus("wild", "rjmfernandes__flink-on-prem", "data")
    for name in ("meta.properties", "bootstrap.checkpoint"):
        shutil.copyfile(wild / name, logdir / name)
    _copy(wild / "__cluster_metadata-0", logdir / "__cluster_metadata-0")
    (logdir / ".kafka_cleanshutdown").write_text("version: 0\nbrokerEpoch: 12")
    (logdir / "server.log").write_text(SERVER_LOG)
    (logdir / "state-change.log").write_text(STATE_CHANGE_LOG)
    return Fixture("broker_own_files", logdir, frozenset(), partition=partition, logdir=logdir,
                   lookup_args=("--timestamp", "latest"), kafka_loss=KafkaLoss(_next_offset(partition), 0))


def foreign_files(base: Path) -> Fixture:
    """No broker's files at all: an empty directory, a text file, random bytes and an empty file."""
    root = base / "foreign_files" / "evidence"
    (root / "empty").mkdir(parents=True)
    (root / "notes.txt").write_text("collected from host kafka-3 at 2026-11-21T23:50Z\n")
    (root / "image.bin").write_bytes(random.Random(270).randbytes(5000))
    (root / "empty.dat").write_bytes(b"")
    return Fixture("foreign_files", root, frozenset(), partition=root, logdir=root, store=root,
                   lookup_args=("--timestamp", "latest"), recognised=False)


# --- RocketMQ --------------------------------------------------------------------------------

def _rocket_cut(case: str) -> RocketLoss:
    """RocketMQ's own cut: maxPhyOffset after its load (expected/recovery.json)."""
    return RocketLoss(json.loads(_corpus("rocketmq", case, "expected", "recovery.json").read_text())["maxPhyOffset"])


def _store(name: str, base: Path, case: str, damage: frozenset[str], topic_key=("OrderTopic", "order-0-0"),
           **kw) -> Fixture:
    store = _copy(_corpus("rocketmq", case, "store"), base / name / "store")
    return Fixture(name, store, damage, store=store, logdir=store,
                   lookup_args=("--topic", topic_key[0], "--key", topic_key[1]), **kw)


def rocketmq_torn_tail(base: Path) -> Fixture:
    return _store("rocketmq_torn_tail", base, "corrupt-torn-tail", frozenset({"commitlog"}),
                  rocket_loss=_rocket_cut("corrupt-torn-tail"))


def rocketmq_body_crc(base: Path) -> Fixture:
    return _store("rocketmq_body_crc", base, "corrupt-body-crc", frozenset({"commitlog"}),
                  rocket_loss=_rocket_cut("corrupt-body-crc"))


def rocketmq_truncated_commitlog(base: Path) -> Fixture:
    """The last CommitLog file cut mid-message: RocketMQ refuses to load the store (case.json)."""
    return _store("rocketmq_truncated_commitlog", base, "corrupt-truncated-commitlog", frozenset({"commitlog"}))


def rocketmq_kill9_abort(base: Path) -> Fixture:
    """An abnormal exit: the abort marker, a stale checkpoint and an all-zero preallocated file;
    RocketMQ's abnormal recovery loses nothing it had written (recovery.json) but drops the
    zeroed file and rebuilds the newer IndexFile."""
    return _store("rocketmq_kill9_abort", base, "kill9-abort", frozenset({"unclean_shutdown"}),
                  rocket_loss=_rocket_cut("kill9-abort"))


def rocketmq_index_count(base: Path) -> Fixture:
    """Index files only, the newest one's indexCount inflated."""
    return _store("rocketmq_index_count", base, "corrupt-index-count", frozenset({"rocketmq_index"}))


def rocketmq_index_prev_loop(base: Path) -> Fixture:
    """Index files only, with prevIndex self-loops and cycles."""
    return _store("rocketmq_index_prev_loop", base, "corrupt-index-prev-loop", frozenset({"rocketmq_index"}))


def rocketmq_zeroed_hole(base: Path) -> Fixture:
    """clean-multi with 4 KiB zeroed in the middle of its second CommitLog file (a hole from a lost
    page): recovery stops at the first message the hole touches."""
    fixture = _store("rocketmq_zeroed_hole", base, "clean-multi", frozenset({"commitlog"}))
    commitlog = sorted((fixture.store / "commitlog").iterdir())[1]
    with open(commitlog, "r+b") as handle:
        handle.seek(500_000)
        handle.write(bytes(4096))
    return fixture


def rocketmq5_zeroed_hole(base: Path) -> Fixture:
    """A RocketMQ 5.x store (written by tests/rocketmq5_writer.py as 5.x's classes write it: no real
    one is in the corpus) with a zeroed hole in its first CommitLog file."""
    from tests.test_rocketmq5 import Written

    store = Written(base / "rocketmq5_zeroed_hole" / "store").root
    commitlog = sorted((store / "commitlog").iterdir())[0]
    with open(commitlog, "r+b") as handle:
        handle.seek(1000)
        handle.write(bytes(1024))
    # "rewritten_copies": its compaction log holds messages of the CommitLog rewritten (other bytes, the
    # same queue offsets), as CompactionLog writes them
    return Fixture("rocketmq5_zeroed_hole", store, frozenset({"commitlog", "rewritten_copies"}), store=store,
                   logdir=store,
                   lookup_args=("--topic", "TopicA", "--key", "k0"))


def rocketmq_zero_byte_commitlog(base: Path) -> Fixture:
    """A real 4.x unit-test store (wild/) whose last CommitLog file has 0 bytes, left with its abort
    marker.  A mapped file whose length is not the configured size makes RocketMQ's load fail
    (MappedFileQueue.doLoad: "length not matched message store config value"): damage."""
    store = _copy(_corpus("wild", "EricPanGopher__rocketmq", "store", "unit_test_store"),
                  base / "rocketmq_zero_byte_commitlog" / "store")
    return Fixture("rocketmq_zero_byte_commitlog", store, frozenset({"layout", "unclean_shutdown"}), store=store, logdir=store,
                   lookup_args=("--topic", "abc", "--queue-id", "0", "--queue-offset", "0"))


BUILDERS: dict[str, Callable[[Path], Fixture]] = {builder.__name__: builder for builder in (
    clean_multisegment, c11a_crc_byte_flip, c11b_truncated_last_batch, c11c_zero_tail_64k,
    c11d_index_entries_swapped, c11e_timeindex_ts_decreased, c11f_index_pos_mid_batch, c02_unclean_hot_copy,
    torn_last_batch, zero_filled_tail, flipped_byte_middle_segment, index_entry_at_torn_batch,
    later_segment_claims_offset_zero, garbage_producer_snapshot, cut_producer_snapshot, dangling_link_and_loop,
    replicas_side_by_side, mixed_brokers, broker_own_files, foreign_files,
    rocketmq_torn_tail, rocketmq_body_crc, rocketmq_truncated_commitlog, rocketmq_kill9_abort,
    rocketmq_index_count, rocketmq_index_prev_loop, rocketmq_zeroed_hole, rocketmq5_zeroed_hole,
    rocketmq_zero_byte_commitlog)}
