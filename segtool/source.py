"""Read-only access to input files.

Evidence is opened with ``O_RDONLY`` and mapped with ``ACCESS_READ`` only, so a
read-only file, directory or mount works and nothing can be written back.
"""

from __future__ import annotations

import atexit
import hashlib
import mmap
import os
import stat
import warnings
import weakref

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


def sha256_beside(path: str | os.PathLike, fork: bool):
    """Start ``sha256_of(path)`` beside the caller's work; its ``result()`` is the hex digest.

    With ``fork`` (a command run on its own) a child process hashes: a thread
    shares the GIL with the caller's scan and waits for it after every slice.
    Pipeline tasks hash on a thread: their engine already keeps every core busy.
    """
    if fork and hasattr(os, "fork"):
        return _EARLY.pop(os.path.realpath(path), None) or _ForkedSha256(path)
    return _on_a_thread(sha256_of, path)


def _on_a_thread(fn, argument):
    """``fn(argument)`` started on a thread of its own; its future."""
    from concurrent.futures import ThreadPoolExecutor  # here: commands that never hash start without it

    executor = ThreadPoolExecutor(max_workers=1)
    future = executor.submit(fn, argument)
    executor.shutdown(wait=False)  # the thread ends with its one task
    return future


def sha256_each_beside(paths: list[str], fork: bool):
    """Start hashing ``paths`` one after another beside the caller's work, in one child process (``fork``) or
    one thread for them all: a partition holds thousands of files, and one hash at a time keeps a core for the
    caller.  Its ``result()`` is, in their order, each file's hex digest or the ``UnreadableInput`` that
    stopped its hash."""
    if fork and hasattr(os, "fork"):
        return _ForkedSha256Each(paths)
    return _on_a_thread(sha256_each, paths)


def sha256_each(paths: list[str]) -> list:
    """Each file's hex digest, or the ``UnreadableInput`` that stopped its hash, in the paths' order."""
    digests: list = []
    for path in paths:
        try:
            digests.append(sha256_of(path))
        except UnreadableInput as exc:
            digests.append(exc)
    return digests


_HEX_DIGEST = 64
_EARLY: dict[str, "_ForkedSha256"] = {}  # hashes started before the command's code loaded, by real path


def start_sha256_early(path: str | os.PathLike) -> None:
    """Start hashing a named input file (a regular one) in a child process now, before the command
    imports what it checks with: ``sha256_beside(path, fork=True)`` takes this hash up.  A hash no one
    takes up is stopped when the command exits."""
    try:
        if not hasattr(os, "fork") or not stat.S_ISREG(os.stat(path).st_mode):
            return
    except OSError:
        return
    key = os.path.realpath(path)
    if key in _EARLY:
        return
    _EARLY[key] = _ForkedSha256(path)
    # registered (once) after the child's finalizer, so it runs first: the child is killed, not waited for
    atexit.unregister(_stop_unused)
    atexit.register(_stop_unused)


def _stop_unused() -> None:
    while _EARLY:
        _EARLY.popitem()[1].stop()


def fork_quietly() -> int | None:
    """``os.fork()``, or None when it fails.  Python 3.12+ warns about forking beside threads (a
    progress display's); segtool's children only compute and leave with ``os._exit``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return os.fork()
    except OSError:
        return None


class _ForkedSha256:
    """``sha256_of`` in a forked child that shares nothing but the path; the digest comes back
    on a pipe.  If the child cannot start or fails (an unreadable file), ``result`` hashes
    here, so the caller sees the same digest or error as from ``sha256_of``."""

    def __init__(self, path):
        self._path = path
        self._pid = None
        try:
            answer, answer_write = os.pipe()
        except OSError:
            return
        pid = fork_quietly()
        if pid is None:
            os.close(answer)
            os.close(answer_write)
            return
        if pid == 0:
            code = 1
            try:
                os.close(answer)
                os.write(answer_write, sha256_of(path).encode())  # 64 bytes: one atomic write
                code = 0
            finally:
                os._exit(code)
        os.close(answer_write)
        self._pid, self._answer = pid, answer
        # a caller that stops on an error never asks for the digest: the child is reaped all the same
        self._reap = weakref.finalize(self, _reap, pid, answer)

    def stop(self) -> None:
        if self._pid is not None:
            import signal

            os.kill(self._pid, signal.SIGKILL)
            self._reap()
            self._pid = None

    def result(self) -> str:
        if self._pid is None:
            return sha256_of(self._path)
        data = os.read(self._answer, _HEX_DIGEST)
        self._reap()
        self._pid = None
        return data.decode() if len(data) == _HEX_DIGEST else sha256_of(self._path)


class _ForkedSha256Each:
    """``sha256_each`` in a forked child writing one line per file to an unnamed temporary file (a pipe would
    fill and stop the child until the caller reads): the digest, or ``!`` and why the file cannot be read.
    When the child cannot start or does not finish, ``result`` hashes here."""

    def __init__(self, paths: list[str]):
        import tempfile

        self._paths = paths
        self._answers = tempfile.TemporaryFile()
        self._pid = fork_quietly()
        if self._pid == 0:
            code = 1
            try:
                lines = ("!" + " ".join(d.message.split()) if isinstance(d, UnreadableInput) else d
                         for d in sha256_each(paths))
                os.write(self._answers.fileno(), "".join(line + "\n" for line in lines).encode())
                code = 0
            finally:
                os._exit(code)
        if self._pid is not None:
            self._reap = weakref.finalize(self, os.waitpid, self._pid, 0)

    def result(self) -> list:
        finished = False
        if self._pid is not None:
            self._reap.detach()
            finished = os.waitstatus_to_exitcode(os.waitpid(self._pid, 0)[1]) == 0
        with self._answers:
            self._answers.seek(0)
            lines = self._answers.read().decode().splitlines()
        if not finished or len(lines) != len(self._paths):
            return sha256_each(self._paths)
        return [UnreadableInput(line[1:], path) if line.startswith("!") else line
                for path, line in zip(self._paths, lines)]


def _reap(pid: int, answer: int) -> None:
    os.close(answer)
    os.waitpid(pid, 0)


def release_pages(buf, start: int, end: int) -> int:
    """Drop already-read pages ``[start, end)`` of a mapped file from our resident set and return
    where the next release starts.  The pages stay in the page cache and come back if read again;
    only this process stops holding them, so memory does not grow with the file."""
    end -= end % mmap.PAGESIZE
    if end > start and isinstance(buf, mmap.mmap):
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)
        return end
    return start
