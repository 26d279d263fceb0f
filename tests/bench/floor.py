"""The least any Python verify of a segment could cost: run as ``python tests/bench/floor.py FILE``.

The interpreter starts and imports typer (the command line's framework), then
both cores checksum the file in 16 KiB slices, each reading its half with
``preadv`` into a buffer that stays in the CPU cache.  Nothing is framed,
decoded, checked or reported, and the slices are not batches: no real verify
can be faster, so the ratio of this to ``cat`` bounds what a target can ask.
"""

from __future__ import annotations

import os
import sys

import typer  # noqa: F401  (its import is part of every segtool command's start)

from segtool.formats.checksums import crc32c

SLICE = 16 * 1024
BUFFER = 4 * 1024 * 1024


def checksum_range(fd: int, start: int, stop: int) -> None:
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    position = start
    while position < stop:
        read = os.preadv(fd, [view[:min(BUFFER, stop - position)]], position)
        if not read:
            return
        for i in range(0, read, SLICE):
            crc32c(view[i:min(i + SLICE, read)])
        position += read


def main(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    half = size // 2
    pid = os.fork()
    if pid == 0:
        checksum_range(fd, half, size)
        os._exit(0)
    checksum_range(fd, 0, half)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1])
