"""Read-only access to input files.

Evidence is opened with ``O_RDONLY`` and mapped with ``ACCESS_READ`` only, so a
read-only file, directory or mount works and nothing can be written back.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat

from segtool.errors import UnreadableInput


def require_regular_file(path: str | os.PathLike) -> None:
    """Refuse directories, FIFOs, sockets and devices before opening (a FIFO would block)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UnreadableInput("no such file", str(path)) from None
    except OSError as exc:
        raise UnreadableInput(exc.strerror or str(exc), str(path)) from None
    if stat.S_ISDIR(mode):
        raise UnreadableInput("is a directory, expected a file", str(path))
    if not stat.S_ISREG(mode):
        raise UnreadableInput("not a regular file", str(path))


def open_buffer(path: str | os.PathLike):
    """The whole file as a read-only buffer (an mmap, or ``b""`` when empty)."""
    try:
        # a FIFO or device would block or never end: only regular files are evidence files
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(mode):
            raise UnreadableInput("not a regular file", str(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UnreadableInput("no such file", str(path)) from None
    except IsADirectoryError:
        raise UnreadableInput("is a directory, expected a file", str(path)) from None
    except OSError as exc:
        raise UnreadableInput(exc.strerror or str(exc), str(path)) from None
    try:
        size = os.fstat(fd).st_size
        if os.path.isdir(path):
            raise UnreadableInput("is a directory, expected a file", str(path))
        if size == 0:
            return b""
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise UnreadableInput(f"cannot map file: {exc}", str(path)) from None
    finally:
        os.close(fd)


HASH_CHUNK = 16 * 1024 * 1024


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file (reports cite the evidence they read).

    Hashed from the read-only mapping in large slices: no copy, and hashlib
    releases the GIL for each slice, so a caller's thread hashing beside a scan
    rarely waits.  Hashed pages leave our resident set as we go.
    """
    digest = hashlib.sha256()
    buf = open_buffer(path)
    try:
        with memoryview(buf) as view:
            for start in range(0, len(buf), HASH_CHUNK):
                digest.update(view[start:start + HASH_CHUNK])
                if isinstance(buf, mmap.mmap):
                    buf.madvise(mmap.MADV_DONTNEED, start, min(HASH_CHUNK, len(buf) - start))
    except OSError as exc:
        raise UnreadableInput(exc.strerror or str(exc), str(path)) from None
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    return digest.hexdigest()
