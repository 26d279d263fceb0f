"""Writing without risking evidence: temp file, fsync, verify, atomic rename.

A process killed at any point leaves the target either as it was or complete:
the new bytes are written and synced under a temporary name in the target's
directory, read back and compared, and only then renamed over the target (one
atomic ``rename``), after which the directory entry is synced.  With a backup,
the old file is first copied (and synced) beside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil

from segtool.errors import SegtoolError

TEMP_MARK = ".segtool-tmp"
BACKUP_SUFFIX = ".segtool-backup"


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(target: str, data: bytes, backup: bool = False) -> dict:
    """Replace (or create) ``target`` with ``data``; returns what was written."""
    directory = os.path.dirname(os.path.abspath(target))
    temp = os.path.join(directory, f".{os.path.basename(target)}{TEMP_MARK}-{os.getpid()}")
    backup_path = None
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        expected = hashlib.sha256(data).digest()
        readback = hashlib.sha256()
        with open(temp, "rb") as check:
            while chunk := check.read(1 << 20):  # chunked: large index files stay out of memory
                readback.update(chunk)
        if readback.digest() != expected:
            raise SegtoolError("the written file does not read back identically; target left untouched", target)
        if backup and os.path.exists(target):
            backup_path = target + BACKUP_SUFFIX
            shutil.copy2(target, backup_path)
            with open(backup_path, "rb+") as handle:
                os.fsync(handle.fileno())
        os.replace(temp, target)
        _fsync_dir(directory)
    except OSError as exc:
        raise SegtoolError(f"cannot write: {exc.strerror or exc}", target) from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return {"path": target, "size": len(data), "sha256": expected.hex(), "backup": backup_path}


def output_path(source: str, out_dir: str | None, in_place: bool, name: str | None = None) -> str:
    """Where a file derived from ``source`` goes: ``out_dir`` by default, beside it only in place."""
    name = name or os.path.basename(source)
    if in_place:
        return os.path.join(os.path.dirname(source), name)
    if out_dir is None:
        raise SegtoolError("give --out DIR (or --in-place to replace files beside the input, with a backup)")
    os.makedirs(out_dir, exist_ok=True)
    return os.path.join(out_dir, name)


def check_out_dir(out_dir: str | None, inputs: list[str]) -> None:
    """Refuse an output directory that is an input's directory or lies inside one.

    Evidence directories stay untouched unless ``--in-place`` is given (even for
    root, whom file permissions do not stop).
    """
    if out_dir is None:
        return
    out = os.path.realpath(out_dir)
    for path in inputs:
        real = os.path.realpath(path)
        directory = real if os.path.isdir(real) else os.path.dirname(real)
        if out == directory or out.startswith(directory + os.sep):
            raise SegtoolError(
                "--out is inside an input directory: choose another directory, or --in-place to write "
                "beside the input with a backup", out_dir)
