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
from segtool.engine.detect import detect
from segtool.engine.inventory import FoundFile, Inventory, classify
from segtool.errors import SegtoolError
from segtool.ops.brokers import LocalTree
from segtool.pipeline import storage
from segtool.rocketmq import names as rocketmq_names


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


class ListedTrees(LocalTree):
    """Discovery's view (``ops.brokers.LocalTree``) of the listed URI trees, on their planning paths: what
    exists and what a folder holds are answered from the listing; a file's bytes are read through the
    storage layer (the few small files a plan opens); a path outside every tree is a local path.  What the
    driver has put at a planning path since (a RocketMQ store mirrored there) is looked at as it is."""

    def __init__(self, trees: list[UriTree]):
        self.trees = trees
        self.files = {path: size for tree in trees for path, size in tree.files}
        # every folder holding a listed file, up to its tree's root: name -> is a folder, of what it holds
        self.folders: dict[str, dict[str, bool]] = {}
        for tree in trees:
            if [path for path, _ in tree.files] == [tree.root]:
                continue  # the URI names one file
            self.folders.setdefault(tree.root, {})
            for path, _ in tree.files:
                self.folders.setdefault(os.path.dirname(path), {})[os.path.basename(path)] = False
                folder = os.path.dirname(path)
                while folder != tree.root:
                    parent, name = os.path.split(folder)
                    held = self.folders.setdefault(parent, {})
                    if name in held:
                        break  # its parents are known already
                    held[name] = True
                    folder = parent

    def lists(self, path: str) -> bool:
        """Does a listed tree hold ``path`` (a planning path)?"""
        return any(path == tree.root or path.startswith(tree.root + os.sep) for tree in self.trees)

    def lexists(self, path: str) -> bool:
        path = os.path.normpath(path)
        return path in self.files or path in self.folders if self.lists(path) else super().lexists(path)

    def exists(self, path: str) -> bool:
        return self.lexists(path) if self.lists(os.path.normpath(path)) else super().exists(path)

    def isdir(self, path: str) -> bool:
        path = os.path.normpath(path)
        return path in self.folders if self.lists(path) else super().isdir(path)

    def isfile(self, path: str) -> bool:
        path = os.path.normpath(path)
        return path in self.files if self.lists(path) else super().isfile(path)

    def is_store_root(self, path: str) -> bool:
        return rocketmq_names.is_store_root(path, self.entries) if self.lists(os.path.normpath(path)) \
            else super().is_store_root(path)

    def entries(self, path: str) -> dict[str, bool] | None:
        """``rocketmq.names.folder_entries`` of a listed folder: its files and folders."""
        return self.folders.get(os.path.normpath(path))

    def inventory(self, path: str) -> Inventory:
        top = os.path.normpath(path)
        if not self.lists(top):
            return super().inventory(path)
        return classify(FoundFile(found, detect(found, self.entries).kind, size) for tree in self.trees
                        for found, size in tree.files if found == top or found.startswith(top + os.sep))

    def read(self, path: str) -> bytes:
        path = os.path.normpath(path)
        return bytes(storage.read_all(source_of(path, self.trees))) if self.lists(path) else super().read(path)

    def files_below(self, path: str) -> list[tuple[str, int]]:
        top = os.path.normpath(path)
        if not self.lists(top):
            return super().files_below(path)
        return [(found, size) for found, size in self.files.items() if found == top or found.startswith(top + os.sep)]

    def below(self, directory: str) -> list[str]:
        """The listed files directly in ``directory``."""
        return [os.path.join(directory, name) for name, is_folder in self.folders.get(directory, {}).items()
                if not is_folder]


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


def local_place(source: str, folder: str) -> str:
    """Where ``stage`` puts ``source`` in ``folder`` (a local path stays where it is)."""
    return uris.mirror_path(source, folder) if is_remote(source) else source


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
