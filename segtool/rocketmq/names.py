"""RocketMQ's store layout and file names, in one place (``StorePathConfigHelper``, ``MappedFileQueue``).

A store root holds ``commitlog/``, ``consumequeue/<topic>/<queueId>/`` and ``index/``
with the ``checkpoint``, ``abort`` and ``lock`` files; 5.x adds ``timerlog/``,
``batchconsumequeue/`` and, under DLedger, ``dledger-<selfId>/``.  A mapped file is
named by the offset of its first byte (``UtilAll.offset2FileName``: 20 digits), which
``MappedFile`` reads back with ``Long.parseLong``; a queue directory is named by its
queue id, read with ``Integer.parseInt``; an IndexFile by its creation time
(``yyyyMMddHHmmssSSS``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from segtool.errors import UnreadableInput

COMMITLOG_DIR = "commitlog"
CONSUMEQUEUE_DIR = "consumequeue"
INDEX_DIR = "index"
CHECKPOINT = "checkpoint"
ABORT = "abort"
LOCK = "lock"
CONFIG_DIR = "config"
TIMERLOG_DIR = "timerlog"
BATCH_CONSUMEQUEUE_DIR = "batchconsumequeue"
# the directories a store is found by (a store whose data files were not kept still has its root files)
DATA_DIRS = (COMMITLOG_DIR, CONSUMEQUEUE_DIR, INDEX_DIR)
ROOT_FILES = (CHECKPOINT, ABORT, LOCK)
# what a broker's config/ holds (BrokerPathConfigHelper)
CONFIG_FILES = ("topics.json", "consumerOffset.json", "subscriptionGroup.json", "delayOffset.json",
                "consumerFilter.json")

BACKUP_SUFFIX = ".bak"  # ConfigManager.persist keeps the previous version as <file>.bak


def is_config_file_name(name: str) -> bool:
    """One of the broker's ``config/`` files or its ``.bak``."""
    return (name[: -len(BACKUP_SUFFIX)] if name.endswith(BACKUP_SUFFIX) else name) in CONFIG_FILES


_MAPPED_FILE_NAME = re.compile(r"[0-9]+")
_QUEUE_ID = re.compile(r"-?[0-9]+")
_INDEX_FILE_NAME = re.compile(r"[0-9]{17}")  # yyyyMMddHHmmssSSS
_DLEDGER_DIR = re.compile(r"dledger-.+")  # DLedgerConfig.getDefaultPath: <root>/dledger-<selfId>


def file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: a mapped file's name, 20 zero-padded digits."""
    return f"{offset:020d}"


def is_mapped_file_name(name: str) -> bool:
    return _MAPPED_FILE_NAME.fullmatch(name) is not None


def mapped_file_offset(path) -> int:
    """The offset a mapped file's name carries (its first byte's place in the log); 0 for a file
    named otherwise (a loose copy is read as if it started the log)."""
    name = os.path.basename(str(path))
    return int(name) if is_mapped_file_name(name) else 0


def queue_id(name: str) -> int | None:
    """A ConsumeQueue directory's queue id (``Integer.parseInt``), None for another name."""
    return int(name) if _QUEUE_ID.fullmatch(name) else None


def is_index_file_name(name: str) -> bool:
    return _INDEX_FILE_NAME.fullmatch(name) is not None


def is_dledger_dir(name: str) -> bool:
    return _DLEDGER_DIR.fullmatch(name) is not None


def holds_store_data(root) -> bool:
    """Does ``root`` hold a store's data directories (``commitlog/``, ``consumequeue/``, ``index/``)?"""
    root = Path(root)
    return any((root / name).is_dir() for name in DATA_DIRS)


def store_directory(path) -> Path:
    """The root of the store with data a directory names: the root itself, or one of its
    ``commitlog/``, ``consumequeue/`` or ``index/`` directories.  UnreadableInput when it is none."""
    root = Path(path)
    if not root.exists():
        raise UnreadableInput("no such file or directory", str(root))
    if not root.is_dir():
        raise UnreadableInput("expected a RocketMQ store directory, not a file", str(root))
    if root.name in DATA_DIRS and not holds_store_data(root):
        root = root.parent
    if not holds_store_data(root):
        raise UnreadableInput("not a RocketMQ store (no commitlog/, consumequeue/ or index/ inside)", str(root))
    return root


def is_store_directory(path) -> bool:
    """Does ``path`` name a RocketMQ store with data (its root or one of its data directories)?"""
    try:
        store_directory(path)
    except UnreadableInput:
        return False
    return True


def folder_entries(path) -> dict[str, bool | None] | None:
    """What a folder holds: name -> True for a directory, False for a regular file, None for anything else
    (symlinks followed); None when it cannot be listed.  A listing of URIs answers the same question."""
    try:
        return {entry.name: True if entry.is_dir() else False if entry.is_file() else None
                for entry in os.scandir(path)}
    except OSError:
        return None


def is_store_root(path, entries=folder_entries) -> bool:
    """Is ``path`` a RocketMQ store's root: it holds a ``checkpoint`` or a store's directories
    (``holds_store_directories``; a store whose data files were not kept is still one, and its
    ``lock``/``abort`` markers are)."""
    held = entries(path)
    return held is not None and (CHECKPOINT in held or holds_store_directories(path, entries))


def holds_store_directories(path, entries=folder_entries) -> bool:
    """Does ``path`` hold a store root's directories: data directories, the broker's ``config/``
    files, or 5.x's ``timerlog/``, ``batchconsumequeue/`` or ``dledger-<id>/``?"""
    held = entries(path)
    if held is None:
        return False
    if any(held.get(name) is True for name in (*DATA_DIRS, TIMERLOG_DIR, BATCH_CONSUMEQUEUE_DIR)):
        return True
    if any(is_dledger_dir(name) and is_dir is True for name, is_dir in held.items()):
        return True
    config = entries(os.path.join(path, CONFIG_DIR)) if held.get(CONFIG_DIR) is True else None
    return config is not None and any(config.get(name) is False or config.get(f"{name}.bak") is False
                                      for name in CONFIG_FILES)


def is_dledger_home(path, entries=folder_entries) -> bool:
    """Is ``path`` DLedger's own directory (``DLedgerConfig.getDefaultPath``: ``<root>/dledger-<selfId>``
    with ``data/`` and ``index/``), where ``checkpoint`` is DLedger's text checkpoint, not the store's
    (``StorePathConfigHelper.getStoreCheckpoint``: ``<root>/checkpoint``)?  A store root that happens
    to be named ``dledger-...`` holds more than an ``index/`` of a store's directories and is not one."""
    if not is_dledger_dir(Path(path).name):
        return False
    held = entries(path)
    if held is None:
        return False
    names = {name for name, is_dir in held.items() if is_dir is True}
    return not names & {COMMITLOG_DIR, CONSUMEQUEUE_DIR, CONFIG_DIR, TIMERLOG_DIR, BATCH_CONSUMEQUEUE_DIR} \
        and not any(is_dledger_dir(name) for name in names)
