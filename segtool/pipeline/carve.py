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

On Spark a URI input's ranges are read by the tasks themselves (``search_uri_range``: the range and one
maximum find past it, by a ranged read), not from the driver's mirror, which the executors of a cluster
do not see; the driver still reads the mirror to decode the finds.
"""

from __future__ import annotations

import os
from functools import partial

from segtool.engine.carving import SPLIT_OVERLAP, RangeSearch, search_range
from segtool.errors import SegtoolError
from segtool.ops.carve import DEFAULT_SPLIT_BYTES, carve, search_file_range
from segtool.ops.output_schema import CarveReport
from segtool.pipeline import storage
from segtool.pipeline.tasks import in_directory


def search_uri_range(item: tuple[str, int, int]) -> RangeSearch | None:
    """Task: ``search_file_range`` of a URI's range, read with ``SPLIT_OVERLAP`` bytes past it (one
    maximum find: every find that starts in the range is whole); None when it cannot be read."""
    uri, start, stop = item
    try:
        window, shift = storage.read_range(uri, start, stop + SPLIT_OVERLAP)
    except SegtoolError:
        return None
    return search_range(window, start - shift, stop - shift).shifted(shift)


def _search_either(item: tuple[tuple[str, int, int], bool]) -> RangeSearch | None:
    ranged, remote = item
    return search_uri_range(ranged) if remote else search_file_range(ranged)


def _source(path: str, read_from: dict[str, str]) -> str | None:
    """The URI a mirrored path stands for, or None for a path read where it is."""
    for local, uri in read_from.items():
        if path == local or path.startswith(local.rstrip(os.sep) + os.sep):
            return uri.rstrip("/") + path[len(local.rstrip(os.sep)):].replace(os.sep, "/")
    return None


def _search_on(engine, read_from: dict[str, str], ranges: list[tuple[str, int, int]]) -> list:
    # each range to the task that reads it: a URI's by a ranged read, a local file's where it is
    items = [((uri, start, stop), True) if (uri := _source(path, read_from)) is not None
             else ((path, start, stop), False) for path, start, stop in ranges]
    return engine.map(partial(in_directory, os.getcwd(), _search_either), items,
                      [stop - start for _, start, stop in ranges], description="segtool carve: search")


def carve_on(paths: list[str], out_dir: str, engine, split_bytes: int = DEFAULT_SPLIT_BYTES,
             read_from: dict[str, str] | None = None, **options) -> CarveReport:
    """``ops.carve.carve`` with each input's byte ranges searched as tasks of ``engine``; the ranges of
    the files below a mirror of ``read_from`` (mirror -> URI) are read from the URI by the tasks."""
    return carve(paths, out_dir, search_ranges=partial(_search_on, engine, read_from or {}),
                 split_bytes=split_bytes, **options)
