"""How an op hands its units of work to whoever runs them: in this process, or as the pipeline's tasks.

An op that compares or reads many independent things (``replicas``: one replica set each) takes a
``MapTasks`` and calls it with a module-level function, so that an engine (``segtool.pipeline.engines``)
can run it in another process or on Spark; ops never import the pipeline.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

# ``map_tasks(fn, items, costs)``: ``[fn(item) for item in items]`` in the items' order; ``costs`` are their
# bytes, so that an engine can start the largest first
MapTasks = Callable[[Callable, Sequence, Sequence[int]], list]


def in_process(fn: Callable, items: Sequence, costs: Sequence[int]) -> list:
    return [fn(item) for item in items]


def bytes_in(directory: str) -> int:
    """The bytes of the files below ``directory``: at most what a task reading it reads (its cost)."""
    return sum(os.path.getsize(path) for folder, _, files in os.walk(directory)
               for path in (os.path.join(folder, name) for name in files) if os.path.isfile(path))
