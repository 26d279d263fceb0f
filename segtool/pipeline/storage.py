"""Where the pipeline reads inputs and writes datasets: local paths or filesystem URIs.

A plain path is read through ``segtool.source`` (read-only mmap) and
written through ``segtool.engine.safe_write`` (temp file, fsync, rename).  A URI
(``s3://bucket/kafka-logs``, ``hdfs://nn/evidence``, ``gs://…``, ``file:///…``)
goes through ``segtool.engine.uris`` (schemes, s3a settings, timeouts, one-line
errors), so executors of a cluster can read inputs that no single machine
holds: a task reads only the byte range of its split.
Inputs are only ever opened for reading (``open_input_file``).
"""

from __future__ import annotations

import os
import posixpath

from segtool.engine import uris
from segtool.engine.uris import bounded, is_uri
from segtool.errors import SegtoolError, UnreadableInput


def _split_uri(uri: str):
    """(filesystem, path inside it) for a URI: ``segtool.engine.uris`` (schemes, settings, timeouts)."""
    return uris.split(uri)


def join(base: str, name: str) -> str:
    if is_uri(base):
        return base.rstrip("/") + "/" + name
    return os.path.join(base, name)


def basename(path: str) -> str:
    if is_uri(path):
        return posixpath.basename(path.rstrip("/"))
    return os.path.basename(os.path.normpath(path))


def parent(path: str) -> str:
    if is_uri(path):
        scheme, _, rest = path.partition("://")
        return f"{scheme}://{posixpath.dirname(rest.rstrip('/'))}"
    return os.path.dirname(os.path.normpath(path))


def absolute(path: str) -> str:
    return path if is_uri(path) else os.path.abspath(path)


def exists(path: str) -> bool:
    if not is_uri(path):
        return os.path.exists(path)
    from pyarrow import fs

    filesystem, inner = _split_uri(path)
    return bounded(path, "read", filesystem.get_file_info, inner).type != fs.FileType.NotFound


def isdir(path: str) -> bool:
    if not is_uri(path):
        return os.path.isdir(path)
    from pyarrow import fs

    filesystem, inner = _split_uri(path)
    return bounded(path, "read", filesystem.get_file_info, inner).type == fs.FileType.Directory


def listdir(path: str) -> list[tuple[str, bool, int]]:
    """(name, is_dir, size) of each entry, sorted by name."""
    if not is_uri(path):
        out = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    is_dir = entry.is_dir()
                    size = 0 if is_dir else entry.stat().st_size
                    out.append((entry.name, is_dir, size))
        except OSError as exc:
            raise UnreadableInput(f"cannot list: {exc.strerror or exc}", path) from None
        return sorted(out)
    from pyarrow import fs

    filesystem, inner = _split_uri(path)
    infos = bounded(path, "list", filesystem.get_file_info, fs.FileSelector(inner, allow_not_found=False))
    return sorted((info.base_name, info.type == fs.FileType.Directory, info.size or 0) for info in infos)


def walk_files(path: str) -> list[tuple[str, int]]:
    """(URI, size) of every file below a URI directory, from one recursive listing.

    On object stores a recursive listing is a few paged LIST calls for the whole
    tree, where a directory-by-directory walk would be one call per partition.
    """
    from pyarrow import fs

    filesystem, inner = _split_uri(path)
    infos = bounded(path, "list", filesystem.get_file_info,
                    fs.FileSelector(inner, recursive=True, allow_not_found=False))
    base = path.rstrip("/")
    prefix = inner.rstrip("/")
    out = []
    for info in infos:
        if info.type == fs.FileType.File:
            out.append((base + info.path[len(prefix):], info.size or 0))
    return out


def size(path: str) -> int:
    if not is_uri(path):
        try:
            return os.path.getsize(path)
        except OSError as exc:
            raise UnreadableInput(exc.strerror or str(exc), path) from None
    filesystem, inner = _split_uri(path)
    return bounded(path, "read", filesystem.get_file_info, inner).size or 0


def read_range(path: str, start: int = 0, end: int | None = None):
    """(buffer, shift): bytes ``start..end`` of a file are ``buffer[start - shift:end - shift]``.

    A local file is mapped whole (shift 0, nothing is read until touched); a URI
    is read for that range only.
    """
    if not is_uri(path):
        from segtool.source import open_buffer

        return open_buffer(path), 0
    filesystem, inner = _split_uri(path)

    def read():
        with filesystem.open_input_file(inner) as handle:
            total = handle.size()
            stop = total if end is None else min(end, total)
            return handle.read_at(stop - start, start) if stop > start else b""

    data = bounded(path, "read", read)
    return (data if isinstance(data, bytes) else data.to_pybytes()), start


def sha256(path: str) -> str:
    """Hex sha256 of a whole input file (reports cite the evidence they read), read in slices."""
    if not is_uri(path):
        from segtool.source import sha256_of

        return sha256_of(path)
    import hashlib

    from segtool.source import HASH_CHUNK

    digest = hashlib.sha256()
    filesystem, inner = _split_uri(path)
    with bounded(path, "read", filesystem.open_input_stream, inner) as handle:
        while chunk := bounded(path, "read", handle.read, HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_all(path: str):
    buf, _ = read_range(path)
    return buf


def write_file(path: str, data: bytes, replace: bool = False, backup: bool = True) -> dict:
    """Write a whole output file: atomically (temp, fsync, rename) for local paths.

    A local file that exists is refused unless ``replace`` (then it is backed up
    first, unless ``backup`` is False: a retried task's own part file).
    """
    if not is_uri(path):
        from segtool.engine.safe_write import write_atomically

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return write_atomically(path, data, replace=replace, backup=backup)
    import hashlib

    filesystem, inner = _split_uri(path)

    def write():
        filesystem.create_dir(posixpath.dirname(inner), recursive=True)
        # object stores publish an object only when the upload completes: no torn file is ever visible
        with filesystem.open_output_stream(inner) as out:
            out.write(data)

    bounded(path, "write", write)
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "backup": None}


def open_output(path: str):
    """A stream writing a whole new file at a URI (object stores publish the object when it is closed)."""
    filesystem, inner = _split_uri(path)

    def open_stream():
        filesystem.create_dir(posixpath.dirname(inner), recursive=True)
        return filesystem.open_output_stream(inner)

    return bounded(path, "write", open_stream)


def _hidden(relative: str) -> bool:
    """A path dataset readers skip: one of its names starts with `_` or `.` (markers, reports, staging)."""
    return any(name.startswith(("_", ".")) for name in relative.split("/"))


def dataset_files(root: str) -> list[str]:
    """Relative paths (with ``/``) of the files a dataset reader would read below ``root``, sorted."""
    if not exists(root):
        return []
    if is_uri(root):
        base = root.rstrip("/") + "/"
        found = [path[len(base):] for path, _ in walk_files(root)]
    else:
        found = []
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            relative = os.path.relpath(directory, root)
            found.extend(name if relative == "." else f"{relative}/{name}" for name in files)
    return sorted(f for f in found if not _hidden(f))


def _own_part(relative: str) -> bool:
    """A part file ``scan`` writes: ``topic=…/partition=…/part-….parquet``, or the empty part at the top."""
    *directories, name = relative.split("/")
    return name.startswith("part-") and name.endswith(".parquet") and (
        not directories or (len(directories) == 2 and directories[0].startswith("topic=")
                            and directories[1].startswith("partition=")))


def check_own_parts(root: str, found: list[str]) -> None:
    """Refuse a dataset directory holding files ``scan`` did not write (``--force`` removes only its own)."""
    for relative in found:
        if not _own_part(relative):
            raise SegtoolError(f"{relative} in the output directory was not written by segtool scan (as a part "
                               "of a topic=…/partition=… dataset); choose another --out", root)


def remove_file(path: str) -> None:
    if is_uri(path):
        filesystem, inner = _split_uri(path)
        bounded(path, "remove", filesystem.delete_file, inner)
    else:
        os.unlink(path)


def remove_dataset_files(root: str, keep: set[str]) -> None:
    """Remove the part files an earlier scan wrote (``--force``), but those in ``keep``; then empty partition dirs."""
    found = dataset_files(root)
    check_own_parts(root, found)
    for relative in found:
        if relative not in keep:
            remove_file(join(root, relative))
    if not is_uri(root):
        for relative in sorted({os.path.dirname(f) for f in found if "/" in f}, reverse=True):
            for directory in (os.path.join(root, relative), os.path.dirname(os.path.join(root, relative))):
                try:
                    os.rmdir(directory)  # only when empty: a partition directory of this run stays
                except OSError:
                    pass


def publish(source: str, target: str) -> None:
    """Move a finished file to its final place: a rename on a local disk or HDFS (atomic, replacing what is
    there); object stores have no rename, so a copy, then the source is deleted."""
    if not is_uri(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(source, target)
        return
    filesystem, inner = _split_uri(source)
    _, destination = _split_uri(target)

    def move():
        if filesystem.type_name in ("local", "hdfs"):
            filesystem.create_dir(posixpath.dirname(destination), recursive=True)
            filesystem.move(inner, destination)
        else:
            filesystem.copy_file(inner, destination)
            filesystem.delete_file(inner)

    bounded(target, "publish", move)


def remove_tree(path: str) -> None:
    """Remove a directory and everything below it (a run's staging folder); nothing when it is gone."""
    if not is_uri(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    filesystem, inner = _split_uri(path)

    def remove():
        try:
            filesystem.delete_dir(inner)
        except FileNotFoundError:
            pass

    bounded(path, "remove", remove)
