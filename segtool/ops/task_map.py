"""How an op hands its units of work to whoever runs them: in this process, or as the pipeline's tasks.

An op that compares or reads many independent things (``replicas``: one replica set each) takes a
``MapTasks`` and calls it with a module-level function, so that an engine (``segtool.pipeline.engines``)
can run it in another process or on Spark; ops never import the pipeline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from segtool.errors import UnreadableInput
from segtool.source import sha256_each, sha256_each_beside

# ``map_tasks(fn, items, costs)``: ``[fn(item) for item in items]`` in the items' order; ``costs`` are their
# bytes, so that an engine can start the largest first
MapTasks = Callable[[Callable, Sequence, Sequence[int]], list]


def in_process(fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return [fn(item) for item in items]


def bytes_in(directory: str) -> int:
    """The bytes of the files below ``directory``: at most what a task reading it reads (its cost)."""
    return sum(os.path.getsize(path) for folder, _, files in os.walk(directory)
               for path in (os.path.join(folder, name) for name in files) if os.path.isfile(path))


@dataclass(frozen=True)
class Hashing:
    """How a task hashes the input files it is given: not at all (``--no-hash``: sha256 null), or beside its
    work, in a forked child (``fork``: a command on its own, a local pool's worker) or on a thread (a Spark
    task: its engine keeps every core busy already)."""

    enabled: bool = True
    fork: bool = True


NO_HASHING = Hashing(enabled=False)

# one file's hash as a task gives it back: (hex digest, None), (None, why it cannot be read), or (None, None)
# when not hashed
FileDigest = tuple[Optional[str], Optional[str]]


def digests_beside(paths: Sequence[str], hashing: Hashing) -> Callable[[], list[FileDigest]]:
    """Start hashing ``paths`` (local files) beside the caller's work; the function returned waits for the
    digests, in the paths' order."""
    if not hashing.enabled or not paths:
        return lambda: [(None, None)] * len(paths)
    started = sha256_each_beside(list(paths), hashing.fork)
    return lambda: [_file_digest(digest) for digest in started.result()]


def hash_files(paths: list[str]) -> list[FileDigest]:
    """Task: the digests of local files that no other task reads (nothing to hash beside)."""
    return [_file_digest(digest) for digest in sha256_each(paths)]


def _file_digest(digest: str | UnreadableInput) -> FileDigest:
    return (None, digest.message) if isinstance(digest, UnreadableInput) else (digest, None)
