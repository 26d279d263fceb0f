"""Every RocketMQ store in the corpus's wild/ tree (files other brokers and versions left behind)
reads through inspect, dump and verify without an error: exit code 0 or 1, never a traceback;
2 only for a file that really cannot be read, and then the message names the file and byte."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from segtool.rocketmq.names import CONFIG_FILES
from tests.conftest import CORPUS, segtool

WILD = CORPUS / "wild"
DATA_DIRS = ("commitlog", "consumequeue")


def _holds_store(directory: Path, subdirs: list[str]) -> bool:
    if any(name in subdirs for name in DATA_DIRS):
        return True
    # config/ of a broker: one of the files its ConfigManagers write
    return "config" in subdirs and any(name.removesuffix(".bak") in CONFIG_FILES
                                       for name in os.listdir(directory / "config"))


def _wild_stores() -> list[Path]:
    if not WILD.is_dir():
        return []
    return sorted(Path(directory) for directory, subdirs, _ in os.walk(WILD) if _holds_store(Path(directory), subdirs))


STORES = _wild_stores()


def test_the_wild_tree_has_rocketmq_stores():
    if not WILD.is_dir():
        pytest.skip(f"conformance corpus not present at {WILD}")
    # every RocketMQ file the README lists sits in one of them (a CommitLog file by its magic)
    readme = (WILD / "README.md").read_text()
    assert STORES and "RocketMQ" in readme
    commitlogs = [p for p in WILD.rglob("*") if p.is_file() and p.parent.name == "commitlog"]
    assert commitlogs and {p.parent.parent for p in commitlogs} <= set(STORES)


def _check(run, command: str, store: Path) -> None:
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, (command, store, run.stderr)
    if run.returncode == 2:
        # a file that cannot be read: one line naming it and the byte offset
        assert re.search(r"segtool: /\S+: byte \d+: ", run.stderr), (command, store, run.stderr)
    else:
        assert run.returncode in (0, 1), (command, store, run.returncode, run.stderr)


@pytest.mark.parametrize("store", STORES, ids=lambda p: str(p.relative_to(WILD)))
def test_inspect_dump_and_verify_read_the_store(store):
    inspected = segtool("inspect", "--json", store)
    _check(inspected, "inspect", store)
    report = json.loads(inspected.stdout)["stores"][0]
    assert report["path"] == str(store)
    assert not report["unreadable"]
    commitlog = store / "commitlog"
    if commitlog.is_dir():
        assert [f["name"] for f in report["commitlog"]["files"]] == sorted(p.name for p in commitlog.iterdir())
    _check(segtool("dump", store), "dump", store)
    _check(segtool("verify", "--no-hash", store), "verify", store)
