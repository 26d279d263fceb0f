"""The input's sha256 computed beside a scan (a forked child, or a thread for pipeline tasks)
equals hashlib's, and an input that cannot be read fails as ``sha256_of`` fails."""

from __future__ import annotations

import hashlib

import pytest

from segtool import source
from segtool.errors import UnreadableInput


@pytest.mark.parametrize("fork", [True, False], ids=["child", "thread"])
def test_digest_equals_hashlib(fork, tmp_path, monkeypatch):
    monkeypatch.setattr(source, "HASH_CHUNK", 3 * 4096)  # several slices, released as they go
    data = bytes(range(256)) * 1000
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    assert source.sha256_beside(path, fork=fork).result() == hashlib.sha256(data).hexdigest()
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert source.sha256_beside(empty, fork=fork).result() == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("fork", [True, False], ids=["child", "thread"])
def test_unreadable_input_raises_as_sha256_of(fork, tmp_path):
    hashing = source.sha256_beside(tmp_path / "absent.log", fork=fork)
    with pytest.raises(UnreadableInput, match="no such file"):
        hashing.result()


def test_early_hash_is_taken_up_or_stopped(tmp_path):
    """A hash started before the command's code loads is the one ``sha256_beside`` gives for that
    file (by its real path), once; one that no one takes up is stopped and reaped at exit."""
    import os

    data = b"segment bytes " * 5000
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    source.start_sha256_early(tmp_path / "." / path.name)
    early = source._EARLY[os.path.realpath(path)]
    assert source.sha256_beside(path, fork=True) is early
    assert early.result() == hashlib.sha256(data).hexdigest()
    assert source.sha256_beside(path, fork=True) is not early  # taken once: a second hash is its own
    source.start_sha256_early(tmp_path)  # a directory: nothing to hash early
    assert not source._EARLY
    source.start_sha256_early(path)
    pid = source._EARLY[os.path.realpath(path)]._pid
    source._stop_unused()
    assert not source._EARLY
    with pytest.raises(ChildProcessError):  # killed and reaped: no child left
        os.waitpid(pid, os.WNOHANG)
