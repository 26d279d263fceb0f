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


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in chunks (reports cite the evidence they read)."""
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UnreadableInput("not a regular file", str(path))
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise UnreadableInput(exc.strerror or str(exc), str(path)) from None
    return digest.hexdigest()
