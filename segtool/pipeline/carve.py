"""`carve --engine local|spark`: the search of every input's byte ranges as tasks, the rest as in-process.

The search (every byte position tested, chains followed) is the work that grows with the size of a
disk image, so each input is cut into ranges of ``split_bytes`` and each range is searched by one task
(``ops.carve.search_file_range``), on the local process pool or on Spark.  Tasks hand back what they
met (``engine.carving.RangeSearch``: the positions checked and the chains started), and the driver
puts the ranges together (``engine.carving.merged_chains``) into exactly the finds of one search,
then decodes, places and writes them in file and position order, as the in-process run does: the
same outputs, byte for byte.  A find belongs to the range its first byte lies in; a range's search
reads past its end as far as the find that starts in it goes (``engine.carving.SPLIT_OVERLAP``
bounds what a broker writes with its defaults).
"""

from __future__ import annotations

import os
from functools import partial

from segtool.ops.carve import DEFAULT_SPLIT_BYTES, carve, search_file_range
from segtool.ops.output_schema import CarveReport
from segtool.pipeline.tasks import in_directory


def _search_on(engine, ranges: list[tuple[str, int, int]]) -> list:
    return engine.map(partial(in_directory, os.getcwd(), search_file_range), ranges, [stop - start for _, start, stop in ranges],
                      description="segtool carve: search")


def carve_on(paths: list[str], out_dir: str, engine, split_bytes: int = DEFAULT_SPLIT_BYTES, **options) -> CarveReport:
    """``ops.carve.carve`` with each input's byte ranges searched as tasks of ``engine``."""
    return carve(paths, out_dir, search_ranges=partial(_search_on, engine), split_bytes=split_bytes, **options)
