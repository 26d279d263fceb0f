"""CRC-32C (Kafka v2 batches, producer snapshots) from the crc32c package's compiled core,
and a helper process that shares the checksumming of a large file.

The package's ``__init__`` asks ``importlib.metadata`` for its own version,
which costs about 50 ms at every start of every command; its extension module
alone loads in about a millisecond.  When the extension cannot be found this
way, the package is imported normally.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import mmap
import os
from array import array

from segtool.source import fork_quietly


def _load_crc32c():
    spec = importlib.util.find_spec("crc32c")  # locates the package without running it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                return module.crc32c
    from crc32c import crc32c as packaged

    return packaged


crc32c = _load_crc32c()


def checksum_ranges(view: memoryview, starts, stops) -> list[int]:
    """CRC-32C of ``view[starts[i]:stops[i]]`` for every i, checksummed in place."""
    return [crc32c(view[start:stop]) for start, stop in zip(starts, stops)]


class ChecksumHelper:
    """CRC-32C of ranges of one read-only mapping, computed in a forked child process.

    Checksumming is most of a whole-segment scan, and crc32c takes back the GIL
    after every call of a few microseconds, so a thread cannot share the work.  A
    forked child shares the mapping at no cost: ranges go to it over one pipe and
    checksums come back on another, while the parent checksums other ranges.  If
    the child cannot be started or dies, ``result`` answers None and the caller
    checksums those ranges itself.
    """

    def __init__(self, buffer):
        self._pid = None
        try:
            request_read, self._requests = os.pipe()
        except OSError:
            return
        try:
            self._answers, answer_write = os.pipe()
        except OSError:
            os.close(request_read)
            os.close(self._requests)
            return
        pid = fork_quietly()
        if pid is None:
            for fd in (request_read, self._requests, self._answers, answer_write):
                os.close(fd)
            return
        if pid == 0:
            code = 1
            try:
                os.close(self._requests)
                os.close(self._answers)
                _serve(buffer, request_read, answer_write)
                code = 0
            finally:
                os._exit(code)
        os.close(request_read)
        os.close(answer_write)
        self._pid = pid
        self._pending = 0

    @property
    def alive(self) -> bool:
        return self._pid is not None

    def submit(self, starts: list[int], stops: list[int]) -> bool:
        """Ask for the checksums of ``buffer[starts[i]:stops[i]]``; False if the helper is gone."""
        if self._pid is None or self._pending:
            return False
        ranges = array("q", starts)
        ranges.extend(stops)
        try:
            _write_all(self._requests, len(starts).to_bytes(8, "little") + ranges.tobytes())
        except OSError:
            self.close()
            return False
        self._pending = len(starts)
        return True

    def result(self) -> list[int] | None:
        """The checksums asked for by the last ``submit``, in order; None if the helper died."""
        count, self._pending = self._pending, 0
        data = _read_exactly(self._answers, 4 * count) if self._pid is not None else b""
        if len(data) != 4 * count:
            self.close()
            return None
        answers = array("I")
        answers.frombytes(data)
        return answers.tolist()

    def close(self) -> None:
        if self._pid is None:
            return
        for fd in (self._requests, self._answers):
            os.close(fd)
        os.waitpid(self._pid, 0)  # the child ends at the end of its request pipe
        self._pid = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _serve(buffer, requests: int, answers: int) -> None:
    """The helper's loop: read a request, checksum its ranges, answer; stop at the end of the pipe."""
    with memoryview(buffer) as view:
        while True:
            head = _read_exactly(requests, 8)
            if len(head) < 8:
                return
            count = int.from_bytes(head, "little")
            ranges = array("q")
            ranges.frombytes(_read_exactly(requests, 16 * count))
            if len(ranges) != 2 * count:
                return
            starts, stops = ranges[:count], ranges[count:]
            sums = array("I", checksum_ranges(view, starts, stops))
            _write_all(answers, sums.tobytes())
            if count and isinstance(buffer, mmap.mmap):  # checksummed pages leave the helper's resident set
                first = starts[0] - starts[0] % mmap.PAGESIZE
                buffer.madvise(mmap.MADV_DONTNEED, first, stops[-1] - first)


def _read_exactly(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    with memoryview(data) as view:
        while view:
            view = view[os.write(fd, view):]
