"""URI evidence read on the executors: the driver lists, each task stages only the files it reads.

The commands that read through ``segtool.source`` (mmap) need local files.  In-process, the CLI stages
a URI argument whole into the read-only mirror of the user's cache (``uris.mirror``).  On an engine the
driver only lists each URI tree (one recursive listing) and plans on the paths the mirror would have
(``uris.mirror_path``: the *planning paths*; nothing is downloaded there), so the in-process planning
code runs unchanged.  Each task stages just its own files into a folder of its executor (the same
mirror code: streamed in slices, so memory stays bounded whatever a file's size), works on them,
removes the folder, and returns its results with every local path written as the URI it stands for,
as the in-process run prints them.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import posixpath
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from segtool.engine import uris
from segtool.errors import SegtoolError
from segtool.pipeline import storage


@dataclass(frozen=True)
class UriTree:
    """A URI argument as listed on the driver."""

    uri: str  # as given
    root: str  # its planning path: where the mirror would put it
    files: list[tuple[str, int]]  # (planning path, size) of every file below it, in the walk's order


def is_remote(path: str) -> bool:
    """A URI that is not a local path (``file://`` is one)."""
    return uris.local_path(path) is None


def list_tree(uri: str) -> UriTree:
    """The files a URI names, ordered as ``engine.walk`` walks their mirror (names sorted in each
    directory, depth first: ``a/x`` before ``a.txt``, where a key order would put ``a.txt`` first)."""
    root = uris.mirror_path(uri)
    if not storage.exists(uri):
        from segtool.errors import UnreadableInput

        raise UnreadableInput("no such file or directory", uri)
    if not storage.isdir(uri):
        return UriTree(uri, root, [(root, storage.size(uri))])
    base = uri.rstrip("/")
    relative = sorted(((found[len(base) + 1:], size) for found, size in storage.walk_files(uri)),
                      key=lambda pair: pair[0].split("/"))
    return UriTree(uri, root, [(os.path.join(root, *name.split("/")), size) for name, size in relative])


def source_of(path: str, trees: list[UriTree]) -> str:
    """The URI a planning path stands for (the path itself when no tree holds it: a local input)."""
    for tree in sorted(trees, key=lambda t: -len(t.root)):
        if path == tree.root or path.startswith(tree.root + os.sep):
            return tree.uri.rstrip("/") + path[len(tree.root):].replace(os.sep, "/")
    return path


def planning_places(trees: list[UriTree]) -> dict[str, str]:
    """planning root -> URI as given, for ``as_given``."""
    return {tree.root: tree.uri for tree in trees}


@contextmanager
def task_folder() -> Iterator[str]:
    """A folder of this task's own on its executor (Spark's local directory when there is one), removed
    when the task ends: the next task's files take its place, so the disk holds only running tasks'."""
    spark_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    folder = tempfile.mkdtemp(prefix="segtool-task-", dir=spark_dirs.split(",")[0] if spark_dirs else None)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stage(source: str, folder: str) -> str:
    """The local path to read ``source`` at: a URI staged into ``folder`` (mirror code), or the local path."""
    return uris.mirror(source, folder) if is_remote(source) else source


def task_places(places: dict[str, str], folder: str) -> dict[str, str]:
    """Local path in a task -> what to print for it: a URI argument's mirror in ``folder`` -> the URI."""
    return {uris.mirror_path(uri, folder): uri for uri in places.values() if is_remote(uri)}


def as_given(value, places: dict[str, str]):
    """``value`` (dicts, lists, strings) with each local path of ``places`` written as its URI, wherever
    it appears in a string: as the CLI's output stream rewrites the in-process run's text."""
    ordered = sorted(places.items(), key=lambda pair: -len(pair[0]))

    def rewrite(item):
        if isinstance(item, enum.Enum):  # kinds and severities: some are strings too, and name no file
            return item
        if isinstance(item, str):
            for local, uri in ordered:
                item = item.replace(local, uri.rstrip("/"))
            return item
        if isinstance(item, dict):
            return {key: rewrite(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return type(item)(rewrite(inner) for inner in item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):  # a Finding: its message may name a file
            return dataclasses.replace(item, **{field.name: rewrite(getattr(item, field.name))
                                                for field in dataclasses.fields(item) if field.init})
        return item

    return rewrite(value)


def publish(local_file: str, uri: str) -> None:
    """Put a finished local file at ``uri``: uploaded under a hidden temporary name beside it (readers
    skip names that begin with ``.``), then moved into place, so the name never shows a partial file."""
    filesystem, inner = uris.split(uri)
    temporary = posixpath.join(posixpath.dirname(inner), f".{posixpath.basename(inner)}.segtool-{os.getpid()}")
    uris.bounded(uri, "write", lambda: filesystem.create_dir(posixpath.dirname(inner), recursive=True))
    try:
        out = uris.bounded(uri, "write", filesystem.open_output_stream, temporary)
        with open(local_file, "rb") as handle:
            while chunk := handle.read(uris.COPY_SLICE_BYTES):
                uris.bounded(uri, "write", out.write, chunk)
        uris.bounded(uri, "write", out.close)
        uris.bounded(uri, "write", filesystem.move, temporary, inner)
    except BaseException:
        try:
            uris.bounded(uri, "write", filesystem.delete_file, temporary)
        except SegtoolError:
            pass  # never written, or already moved
        raise
    size = uris.bounded(uri, "read", filesystem.get_file_info, inner).size
    if size != os.path.getsize(local_file):
        raise SegtoolError(f"wrote {os.path.getsize(local_file)} bytes, the store holds {size}", uri)
