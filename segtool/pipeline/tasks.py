"""What every engine does around a task: run it guarded, raise its error again, order by cost, name it,
report its retries.

Shared by the local process pool (``engines``) and Spark (``spark``), so
neither engine module needs the other.
"""

from __future__ import annotations

import os
import reprlib
import signal
import sys
from typing import Callable, Sequence

# a task whose worker dies is tried this many more times before the run fails (--retries)
DEFAULT_TASK_RETRIES = 2
# tests: the first task to create this file (it must not exist) kills its own worker with SIGKILL, as the
# kernel's OOM killer would
KILL_ONCE_ENV = "SEGTOOL_TEST_KILL_TASK_ONCE"


def guarded(fn: Callable, item):
    """Run ``fn(item)`` in a worker; a SegtoolError comes back as data (exceptions lose path/offset in pickling)."""
    from segtool.errors import SegtoolError

    marker = os.environ.get(KILL_ONCE_ENV)
    if marker:
        _kill_once(marker)
    try:
        return ("ok", fn(item))
    except SegtoolError as exc:
        return ("error", type(exc).__name__, exc.message, exc.path, exc.offset)


def unwrap(outcome):
    """The result of ``guarded``, or its SegtoolError raised again on the driver with path and offset."""
    if outcome[0] == "ok":
        return outcome[1]
    from segtool import errors

    _, name, message, path, offset = outcome
    cls = getattr(errors, name, errors.SegtoolError)
    if not (isinstance(cls, type) and issubclass(cls, errors.SegtoolError)):
        cls = errors.SegtoolError
    raise cls(message, path, offset)


def order_by_cost(costs: Sequence[int] | None, n: int) -> list[int]:
    """Item numbers, largest first (the usual cure for a long tail of one big task)."""
    if costs is None:
        return list(range(n))
    return sorted(range(n), key=lambda i: -costs[i])


def in_directory(directory: str, fn: Callable, item):
    """``fn(item)`` run from ``directory`` (the driver's working directory): the paths of an op's units
    of work are as the user gave them, relative ones included, and its report names them so; a Spark
    executor's Python starts elsewhere."""
    import os

    here = os.getcwd()
    if here == directory or not os.path.isdir(directory):
        return fn(item)
    os.chdir(directory)
    try:
        return fn(item)
    finally:
        os.chdir(here)


def _kill_once(marker: str) -> None:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def task_label(item) -> str:
    """A task as a line names it: its file (and byte range of a split), else a short repr."""
    if isinstance(item, dict) and "path" in item:
        if item.get("splits", 1) > 1:
            end = "end" if item["end"] is None else item["end"]
            return f"{item['path']} split {item['split']} (bytes {item['start']}-{end})"
        return str(item["path"])
    if isinstance(item, str):
        return item
    if isinstance(item, (list, tuple)):  # a planning item (kind, path, ...) or a replica set's members
        parts = (getattr(part, "directory", part) for part in item)
        paths = [str(part) for part in parts if isinstance(part, (str, os.PathLike)) and
                 (os.sep in str(part) or "://" in str(part))]
        if paths:
            return ", ".join(paths)
    return reprlib.repr(item)


def why_process_ended(exit_code: int | None) -> str:
    """A worker's end as a line says it: the signal that killed it, or its exit status."""
    if exit_code is None:
        return "was lost"
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        oom = " (as the kernel's OOM killer does)" if -exit_code == signal.SIGKILL else ""
        return f"was killed by {name}{oom}"
    return f"exited with status {exit_code}"


def say_retry(retry: dict) -> None:
    """The one stderr line of a retried task."""
    task = retry["task"] or "the unfinished tasks"
    worker = f"executor {retry['executor']}" if retry["pid"] is None else retry["pid"]
    sys.stderr.write(f"segtool: retrying {task} (attempt {retry['attempt']}): its worker "
                     f"{retry['host']}/{worker} {retry['reason']}\n")
    sys.stderr.flush()
