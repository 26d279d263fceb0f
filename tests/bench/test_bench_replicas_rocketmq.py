"""Issue 29's benchmark, RocketMQ half: ``segtool replicas`` over three stores of a 1 GiB CommitLog costs at
most 1.5x reading them once, measured beside ``sha256sum`` of the three stores' CommitLog files in the same run.

The stores: one CommitLog file of RocketMQ's default size (mappedFileSizeCommitLog, 1 GiB) filled with
clean-multi's messages over and over, each appended as ``CommitLog.DefaultAppendMessageCallback.doAppend``
writes it (its QUEUEOFFSET the next of its queue, its PHYSICALOFFSET where it lands, the body and so its CRC
unchanged, the BLANK record where the next one does not fit), with clean-multi's checkpoint and no abort
marker (a clean shutdown).  The slave is the master's bytes cut at a message three quarters in (HA ships
bytes in order; the rest of the preallocated file stays zero).  The diverged copy holds the master's bytes up
to a message half way, then other messages written by a later master (the same corpus messages from another
starting point, its queues continued from where the common prefix left them) up to seven eighths of the file:
the master reaches furthest, so it is the reference the others are compared with.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from segtool.rocketmq import store_files as rmq
from segtool.source import open_buffer
from tests.bench.conftest import SEGTOOL, have, report, timed
from tests.conftest import corpus_path

COMMITLOG_FILE_SIZE = 1 << 30  # MessageStoreConfig.mappedFileSizeCommitLog's default
# of the file: where the slave stops, where the diverged copy parts and where its writer stopped
LAGGING_AT, DIVERGED_AT, DIVERGED_TO = 3 / 4, 1 / 2, 7 / 8
_QUEUE_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("queueOffset")
_QUEUE_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("queueOffset")
_PHYSICAL_OFFSET = rmq.MESSAGE_PREFIX_FAST.field("physicalOffset")
_PHYSICAL_OFFSET_AT = rmq.MESSAGE_PREFIX_FAST.field_offset("physicalOffset")
FILE_NAME = "%020d" % 0


def _corpus_messages() -> list[tuple[str, int, bytes]]:
    """(topic, queue id, stored bytes) of every message of clean-multi's CommitLog, in order."""
    messages = []
    for source in sorted((corpus_path("rocketmq", "clean-multi") / "store" / "commitlog").iterdir()):
        buf = open_buffer(str(source))
        messages += [(step["topic"], step["queueId"], bytes(buf[step["fileOffset"]:step["fileOffset"] + step["totalSize"]]))
                     for step in rmq.walk_commitlog(buf, digests=False, decompress=False) if isinstance(step, dict)]
    return messages


def _append(out: bytearray, messages, first: int, queues: dict[tuple[str, int], int],
            stop: int = COMMITLOG_FILE_SIZE) -> list[int]:
    """``messages`` from index ``first`` on, round and round, appended to ``out`` as doAppend writes them until
    the next does not fit in the file, then the BLANK record (or, with ``stop``, until the next would pass it,
    then zeros: the writer stopped there); the position of each message written."""
    positions = []
    index = first
    while True:
        topic, queue_id, record = messages[index % len(messages)]
        if len(out) + len(record) > stop:
            out += bytes(COMMITLOG_FILE_SIZE - len(out))
            return positions
        if len(out) + len(record) + rmq.BLANK_RECORD_FAST.size > COMMITLOG_FILE_SIZE:
            left = COMMITLOG_FILE_SIZE - len(out)
            out += rmq.BLANK_RECORD_FAST.pack(left, rmq.BLANK_MAGIC_CODE) + bytes(left - rmq.BLANK_RECORD_FAST.size)
            return positions
        queue_offset = queues.get((topic, queue_id), 0)
        queues[topic, queue_id] = queue_offset + 1
        message = bytearray(record)
        message[_QUEUE_OFFSET_AT:_QUEUE_OFFSET_AT + 8] = _QUEUE_OFFSET.pack(queue_offset)
        message[_PHYSICAL_OFFSET_AT:_PHYSICAL_OFFSET_AT + 8] = _PHYSICAL_OFFSET.pack(len(out))
        positions.append(len(out))
        out += message
        index += 1


def _store(root, commitlog: bytes) -> None:
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / FILE_NAME).write_bytes(commitlog)
    shutil.copy2(corpus_path("rocketmq", "clean-multi") / "store" / "checkpoint", root / "checkpoint")


def _build(root) -> dict:
    """The three stores; the facts of their making (message counts and offsets) to check the output by."""
    messages = _corpus_messages()
    master = bytearray()
    positions = _append(master, messages, 0, {})
    _store(root / "master", bytes(master))
    lag_index = int(len(positions) * LAGGING_AT)
    cut = positions[lag_index]
    _store(root / "slave", bytes(master[:cut]) + bytes(COMMITLOG_FILE_SIZE - cut))
    split_index = int(len(positions) * DIVERGED_AT)
    split = positions[split_index]
    diverged = bytearray(master[:split])
    queues: dict[tuple[str, int], int] = {}
    for number in range(split_index):
        topic, queue_id, _ = messages[number % len(messages)]
        queues[topic, queue_id] = queues.get((topic, queue_id), 0) + 1
    own = _append(diverged, messages, split_index + len(messages) // 2, queues, int(COMMITLOG_FILE_SIZE * DIVERGED_TO))
    _store(root / "diverged", bytes(diverged))
    return {"messages": len(positions), "cut": cut, "lag_messages": len(positions) - lag_index, "split": split,
            "split_messages": split_index, "diverged_own": len(own)}


def test_replicas_of_three_1gib_commitlogs_against_sha256sum(bench_dir):
    root = bench_dir / "replicas-rocketmq-3x1gib"
    facts_file = root / "facts.json"
    if not facts_file.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        facts_file.write_text(json.dumps(_build(root)))
    facts = json.loads(facts_file.read_text())
    stores = [str(root / name) for name in ("master", "slave", "diverged")]
    commitlogs = [str(root / name / "commitlog" / FILE_NAME) for name in ("master", "slave", "diverged")]
    out = subprocess.run([*SEGTOOL, "replicas", "--json", *stores], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr  # the diverged copy parts from the master
    (item,) = json.loads(out.stdout)["rocketmq"]
    assert item["reference"] == stores[0]
    by_other = {c["other"]: c for c in item["comparisons"]}
    lagging, parted = by_other[stores[1]], by_other[stores[2]]
    assert (lagging["agree_to"], lagging["diverged_at"], lagging["messages_agreed"]) == (
        facts["cut"], None, facts["messages"] - facts["lag_messages"])
    assert (lagging["lag_bytes"], lagging["lag_messages"]) == (
        item["stores"][0]["max_offset"] - facts["cut"], facts["lag_messages"])
    assert (parted["agree_to"], parted["diverged_at"], parted["messages_agreed"]) == (
        facts["split"], facts["split"], facts["split_messages"])
    assert parted["only_other"]["messages"] == facts["diverged_own"]
    assert parted["only_reference"]["messages"] == facts["messages"] - facts["split_messages"]
    reference = (["sha256sum", *commitlogs] if have("sha256sum") else
                 ["python3", "-c", "import hashlib,sys\nfor p in sys.argv[1:]: hashlib.file_digest(open(p,'rb'),"
                  "'sha256')", *commitlogs])
    hashed = timed(reference)
    compared = timed([*SEGTOOL, "replicas", *stores])
    unhashed = timed([*SEGTOOL, "replicas", "--no-hash", *stores])
    report("replicas, 3 RocketMQ stores x 1 GiB CommitLog (lagging slave, diverged copy; sha256 of every file)",
           compared, hashed, "sha256sum of the three CommitLogs", target=1.5)
    report("replicas --no-hash, 3 RocketMQ stores x 1 GiB CommitLog", unhashed, hashed,
           "sha256sum of the three CommitLogs")
