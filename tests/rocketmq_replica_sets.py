"""Builders of RocketMQ replica sets from real corpus stores, as the brokers' replication would leave them.

No broker runs here: a master/slave pair is a corpus store copied twice, the slave's CommitLog then cut at
a message boundary (HA ships bytes in order, so a lagging slave holds a byte prefix of the master's; the
rest of its preallocated file stays zero, as a MappedFile's unwritten tail is) or continued past a common
prefix with real messages of another corpus store (a diverged slave after a failover: each message is
appended as ``CommitLog.DefaultAppendMessageCallback.doAppend`` does, its PHYSICALOFFSET field rewritten
to where it lands, the body and so its CRC unchanged, a BLANK record where it does not fit).  5.x epoch
files are written as ``CheckpointFile.write`` writes them, the store checkpoint as ``StoreCheckpoint.flush``.
DLedger nodes are written with ``tests/rocketmq5_writer.py``'s ``DLedgerWriter``.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

from tests import rocketmq5_writer as w

PHYSICAL_OFFSET_POSITION = 4 + 4 + 4 + 4 + 4 + 8  # MessageDecoder: PHYSICALOFFSET after QUEUEOFFSET
BLANK_MAGIC_CODE = -875286124
END_FILE_MIN_BLANK_LENGTH = 8


def golden_messages(case: Path) -> list[dict]:
    """The case's ``expected/commitlog.jsonl``: every message RocketMQ's MessageDecoder read, in order."""
    with open(case / "expected" / "commitlog.jsonl") as lines:
        return [json.loads(line) for line in lines]


def copy_store(source: Path, target: Path) -> Path:
    """A copy of a store's CommitLog, ConsumeQueues and checkpoint (what replication and recovery read)."""
    target.mkdir(parents=True)
    for name in ("commitlog", "consumequeue"):
        shutil.copytree(source / name, target / name)
    shutil.copy2(source / "checkpoint", target / "checkpoint")
    return target


def _files(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def cut_commitlog(store: Path, offset: int) -> None:
    """The store as a slave holds it when HA stopped at ``offset`` (a message boundary): the CommitLog file
    holding it zero from there, the later files never created, and its ConsumeQueues without the units the
    slave never dispatched (20-byte units: commitLogOffset, size, tagsCode; zero from the first at or past
    ``offset``, as ``ConsumeQueue.truncateDirtyLogicFiles`` leaves them)."""
    for queue_file in sorted((store / "consumequeue").glob("*/*/*")):
        data = bytearray(queue_file.read_bytes())
        for unit in range(0, len(data) - 19, 20):
            if struct.unpack_from(">q", data, unit)[0] >= offset and data[unit:unit + 20] != bytes(20):
                data[unit:] = bytes(len(data) - unit)
                break
        queue_file.write_bytes(bytes(data))
    for path in _files(store):
        start, size = int(path.name), path.stat().st_size
        if start > offset or start == offset != 0:
            path.unlink()
        elif start <= offset < start + size:
            data = bytearray(path.read_bytes())
            data[offset - start:] = bytes(size - (offset - start))
            path.write_bytes(bytes(data))


def append_messages(store: Path, offset: int, records: list[bytes]) -> list[int]:
    """Continue the CommitLog at ``offset`` with ``records`` (real message bytes) as doAppend writes them;
    returns where each landed."""
    paths = _files(store)
    size = paths[0].stat().st_size
    files = {int(p.name): bytearray(p.read_bytes()) for p in paths}
    placed = []
    position = offset
    for record in records:
        start = position - position % size
        data = files.setdefault(start, bytearray(size))
        left = size - (position - start)
        if len(record) + END_FILE_MIN_BLANK_LENGTH > left:  # END_OF_FILE: a BLANK record, then the next file
            struct.pack_into(">ii", data, position - start, left, BLANK_MAGIC_CODE)
            position = start + size
            start = position
            data = files.setdefault(start, bytearray(size))
        moved = bytearray(record)
        struct.pack_into(">q", moved, PHYSICAL_OFFSET_POSITION, position)
        data[position - start:position - start + len(moved)] = moved
        placed.append(position)
        position += len(moved)
    for start, data in files.items():
        (store / "commitlog" / f"{start:020d}").write_bytes(bytes(data))
    return placed


def message_bytes(case: Path, messages: list[dict]) -> list[bytes]:
    """The stored bytes of golden messages, read from the case's own CommitLog files."""
    out = []
    for message in messages:
        with open(case / "store" / "commitlog" / message["file"], "rb") as f:
            f.seek(message["fileOffset"])
            out.append(f.read(message["totalSize"]))
    return out


def epoch_file_text(entries: list[tuple[int, int]]) -> str:
    """``CheckpointFile.write`` of ``EpochEntrySerializer.toLine`` lines: count, CRC32 of the lines, the lines."""
    body = "".join(f"{epoch}-{start}\n" for epoch, start in entries)
    return f"{len(entries)}\n{zlib.crc32(body.encode()) & 0x7FFFFFFF}\n{body}"


def write_epochs(store: Path, entries: list[tuple[int, int]]) -> None:
    (store / "epochFileCheckpoint").write_text(epoch_file_text(entries))


def write_confirm_offset(store: Path, confirm: int) -> None:
    """``StoreCheckpoint.flush`` of 5.x: the three timestamps kept, masterFlushedOffset 0, confirmPhyOffset."""
    physic, logics, index = struct.unpack(">qqq", (store / "checkpoint").read_bytes()[:24])
    (store / "checkpoint").write_bytes(w.checkpoint_bytes(physic, logics, index, 0, confirm))


def dledger_message(i: int, tag: str) -> w.Message:
    return w.Message("RaftTopic", f"{tag} {i}".encode() * 4, {"KEYS": f"{tag}-{i}"}, queue_offset=i,
                     store_timestamp=1_700_000_000_000 + i)


def dledger_node(root: Path, self_id: str, terms: list[int], tags: list[str], committed_index: int,
                 drop_first_file: bool = False) -> w.DLedgerWriter:
    """A node whose entry i has term ``terms[i]`` and a message tagged ``tags[i]`` (equal tags and terms at an
    index: the same entry, as the leader pushed it); 512-byte data files.  ``drop_first_file``: its first data
    file deleted, as DLedgerMmapFileStore's cleaning does, so its ledger begins later."""
    node = w.DLedgerWriter(root, self_id, 512, 64 * w.DLEDGER_INDEX_UNIT_SIZE)
    for i, (term, tag) in enumerate(zip(terms, tags, strict=True)):
        node.append(dledger_message(i, tag), term=term)
    node.write(committed_index=committed_index)
    if drop_first_file:
        sorted((node.base / "data").iterdir())[0].unlink()
    return node
