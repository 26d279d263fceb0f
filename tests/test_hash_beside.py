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
