"""The one directory walker: every file below the given paths, at any depth, each accounted for.

Directories are followed through symlinks (evidence is often a tree of links
into mounted images) with loops detected by device and inode, in sorted order
so reports are stable.  An entry that cannot be read — a dangling symlink, a
loop, a directory that cannot be listed, a FIFO or device — is yielded with the
reason instead of stopping the walk: one bad entry never ends a run.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Iterator

from segtool.errors import UnreadableInput


@dataclass(frozen=True)
class Entry:
    path: str
    unreadable: str | None = None  # why this entry cannot be read; None for a readable regular file


def walk(paths: list[str]) -> Iterator[Entry]:
    """Every file named or below a named directory; a named path that does not exist is an error."""
    for path in paths:
        if not os.path.lexists(path):
            raise UnreadableInput("no such file or directory", path)
        if os.path.isdir(path):
            yield from _walk_directory(path, frozenset())
        else:
            yield _file_entry(path)


def walk_files(paths: list[str]) -> list[str]:
    """The readable files of ``walk``, for callers that report unreadable entries elsewhere."""
    return [entry.path for entry in walk(paths) if entry.unreadable is None]


def _walk_directory(directory: str, ancestors: frozenset) -> Iterator[Entry]:
    info = os.stat(directory)
    identity = (info.st_dev, info.st_ino)
    if identity in ancestors:
        yield Entry(directory, "symlink loop: this directory is one of its own ancestors")
        return
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        yield Entry(directory, f"cannot list the directory: {exc.strerror or exc}")
        return
    ancestors = ancestors | {identity}
    for name in names:
        path = os.path.join(directory, name)
        try:
            is_directory = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError as exc:
            yield Entry(path, _stat_failure(path, exc))
            continue
        if is_directory:
            yield from _walk_directory(path, ancestors)
        else:
            yield _file_entry(path)


def _stat_failure(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if os.path.islink(path) and exc.errno == errno.ENOENT:
        return f"dangling symlink to {os.readlink(path)}"
    return exc.strerror or str(exc)


def _file_entry(path: str) -> Entry:
    try:
        info = os.stat(path)
    except OSError as exc:
        return Entry(path, _stat_failure(path, exc))
    if not stat.S_ISREG(info.st_mode):
        return Entry(path, "not a regular file (a FIFO, socket or device is never opened)")
    if not os.access(path, os.R_OK):
        return Entry(path, "permission denied")
    return Entry(path)
