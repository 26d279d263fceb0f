"""The input's sha256 computed beside a scan (a forked child, or a thread for pipeline tasks)
equals hashlib's, and an input that cannot be read fails as ``sha256_of`` fails."""

from __future__ import annotations

import hashlib
import os

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


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd")
def test_a_failed_fork_leaves_no_pipe_open(tmp_path, monkeypatch):
    """When fork fails (EAGAIN under load, or a caller that keeps the work in-process) the pipes made for
    the child are closed: a long-lived caller (a fuzzing worker, a notebook) ran out of descriptors after
    about 500 rebuild-index runs."""
    from segtool.formats import checksums

    monkeypatch.setattr(source, "fork_quietly", lambda: None)
    monkeypatch.setattr(checksums, "fork_quietly", lambda: None)
    data = bytes(range(256)) * 64
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    before = _open_descriptors()
    for _ in range(50):
        assert source.sha256_beside(path, fork=True).result() == hashlib.sha256(data).hexdigest()
        with checksums.ChecksumHelper(data) as helper:
            assert not helper.alive and not helper.submit([0], [len(data)])
    assert _open_descriptors() == before
