"""What every engine does around a task: run it guarded, raise its error again, order by cost.

Shared by the local process pool (``engines``) and Spark (``spark``), so
neither engine module needs the other.
"""

from __future__ import annotations

from typing import Callable, Sequence


def guarded(fn: Callable, item):
    """Run ``fn(item)`` in a worker; a SegtoolError comes back as data (exceptions lose path/offset in pickling)."""
    from segtool.errors import SegtoolError

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
