"""Writing without risking evidence: temp file, fsync, verify, atomic rename.

A process killed at any point leaves the target either as it was or complete:
the new bytes are written and synced under a temporary name in the target's
directory, read back and compared, and only then renamed over the target (one
atomic ``rename``), after which the directory entry is synced.

Nothing is ever lost: an existing target is replaced only when the caller says
so (``--in-place`` or ``--force``), and then its bytes are first copied to a
backup whose name no earlier run has used (``<name>.segtool-backup-<UTC time>``,
created exclusively), so a second run keeps the first run's backup.  Runs of
zeros are left as holes where the file system allows (a RocketMQ IndexFile is
mostly empty slots).  Outputs too large to hold in memory (carve's JSON Lines and
Parquet) are filled in their temporary file by the caller (``staged``) and then
put in place the same way.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from segtool.engine import uris
from segtool.errors import SegtoolError

TEMP_MARK = ".segtool-tmp"
BACKUP_MARK = ".segtool-backup-"
_CHUNK = 4096  # a page: the unit a file system allocates
_ZEROS = bytes(_CHUNK)


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):  # chunked: large index files stay out of memory
            digest.update(chunk)
    return digest.hexdigest()


def unused_name(path: str, mark: str = BACKUP_MARK) -> str:
    """``path`` + mark + UTC time, with a counter when that name is taken."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    candidate, n = f"{path}{mark}{stamp}", 1
    while os.path.lexists(candidate):
        candidate, n = f"{path}{mark}{stamp}-{n}", n + 1
    return candidate


def back_up(path: str) -> dict:
    """Copy ``path`` to a new backup file (never an existing one), synced; its name and sha256."""
    while True:
        backup = unused_name(path)
        try:
            out = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:  # another run took the name between the check and the open
            continue
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as source:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        os.fsync(out)
    finally:
        os.close(out)
    stat = os.stat(path)
    os.utime(backup, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return {"backup": backup, "replaced_sha256": digest.hexdigest()}


def _write_sparse(fd: int, data) -> None:
    """Write ``data``, seeking over whole zero chunks so they stay holes."""
    view = memoryview(data).cast("B")
    for start in range(0, len(view), _CHUNK):
        chunk = view[start:start + _CHUNK]
        if chunk == _ZEROS[:len(chunk)]:
            continue
        os.lseek(fd, start, os.SEEK_SET)
        while chunk:
            chunk = chunk[os.write(fd, chunk):]
    os.ftruncate(fd, len(view))


def write_atomically(target: str, data, replace: bool = False, backup: bool = True) -> dict:
    """Create ``target`` with ``data``; returns what was written and what it replaced.

    An existing target is refused unless ``replace``; then it is first backed up
    (unless ``backup`` is False because the caller has already copied it away).
    """
    exists = os.path.lexists(target)
    if exists and not replace:
        raise SegtoolError("already exists: segtool never overwrites a file; give --force to replace it "
                           "(a backup is kept) or choose another --out", target)
    expected = hashlib.sha256(data).hexdigest()
    if exists and os.path.isfile(target) and _sha256_file(target) == expected:
        return _unchanged(target, expected)
    temp = _temp_name(target)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_sparse(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if _sha256_file(temp) != expected:
            raise SegtoolError("the written file does not read back identically; target left untouched", target)
        return _put_in_place(temp, target, expected, exists, backup)
    except OSError as exc:
        raise SegtoolError(f"cannot write: {exc.strerror or exc}", target) from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _temp_name(target: str) -> str:
    directory = os.path.dirname(os.path.abspath(target))
    return os.path.join(directory, f".{os.path.basename(target)}{TEMP_MARK}-{os.getpid()}")


def _unchanged(target: str, sha256: str) -> dict:
    """The same bytes are there already: nothing replaced, no backup piled up by a rerun."""
    return {"path": target, "size": os.path.getsize(target), "allocated_bytes": os.stat(target).st_blocks * 512,
            "sha256": sha256, "backup": None, "replaced_sha256": None, "unchanged": True}


def _put_in_place(temp: str, target: str, sha256: str, exists: bool, backup: bool) -> dict:
    """Rename the synced ``temp`` over ``target`` (backed up first when it exists) and sync the directory."""
    replaced = {"backup": None, "replaced_sha256": None}
    if exists:
        replaced = back_up(target) if backup else {"backup": None, "replaced_sha256": _sha256_file(target)}
    os.replace(temp, target)
    fsync_dir(os.path.dirname(os.path.abspath(target)))
    stat = os.stat(target)
    return {"path": target, "size": stat.st_size, "allocated_bytes": stat.st_blocks * 512, "sha256": sha256,
            **replaced, "unchanged": False}


@dataclass
class Staged:
    """The temporary file a caller fills (``path``), and once it is in place what was written."""

    path: str
    written: dict | None = None


@contextmanager
def staged(target: str, replace: bool = False) -> Iterator[Staged]:
    """Create ``target`` from a temporary file the caller writes (an output too large for memory).

    When the block ends without an error the file is synced, hashed as read
    back from disk and renamed over ``target`` as ``write_atomically`` does
    (an existing target only when ``replace``, backed up first); on an error
    the temporary file is removed and ``target`` is left as it was.
    """
    exists = os.path.lexists(target)
    if exists and not replace:
        raise SegtoolError("already exists: segtool never overwrites a file; give --force to replace it "
                           "(a backup is kept) or choose another --out", target)
    stage = Staged(_temp_name(target))
    try:
        yield stage
        fd = os.open(stage.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        written_sha256 = _sha256_file(stage.path)
        if exists and os.path.isfile(target) and _sha256_file(target) == written_sha256:
            stage.written = _unchanged(target, written_sha256)
        else:
            stage.written = _put_in_place(stage.path, target, written_sha256, exists, backup=True)
    except OSError as exc:
        raise SegtoolError(f"cannot write: {exc.strerror or exc}", target) from None
    finally:
        if os.path.exists(stage.path):
            os.unlink(stage.path)


def _guarded(path: str) -> tuple[str, bool]:
    """What an input guards: ``(location, whole tree)`` (``uris.location``: one spelling per place, so
    ``file:///x`` is ``/x`` and ``s3a://`` is ``s3://``).  A directory guards its tree, and so does
    the directory of a file a broker wrote (a segment's partition, a CommitLog's store: a broker would
    load what is written there).  Any other file (a disk image, a core dump) guards only itself:
    ``carve /cases/42/disk.img --out /cases/42/carved`` is what carve's help shows.  A remote file
    guards its directory: what it is would take reading it."""
    from segtool.engine.detect import detect
    from segtool.formats.file_kinds import FileKind

    place = uris.location(path)
    if uris.local_path(path) is None:
        from pyarrow import fs

        filesystem, inner = uris.split(path)
        info = uris.bounded(path, "read", filesystem.get_file_info, inner)
        return (posixpath.dirname(place), True) if info.type == fs.FileType.File else (place, True)
    if os.path.isdir(place):
        return place, True
    if os.path.isfile(place) and detect(place).kind == FileKind.UNKNOWN:
        return place, False
    return os.path.dirname(place), True


def refuse_inside_inputs(targets: list[str], inputs: list[str]) -> None:
    """Refuse output files inside (or equal to) any guarded input tree, or on an input file.

    Locations are compared (real paths, URIs normalised), so ``--out`` given as
    an input's parent (which would make ``OUT/<partition>`` the partition
    itself), reached through a symlink, or spelled as another URI of the same
    place (``file:///x`` for ``/x``, ``s3a://`` for ``s3://``) is caught.
    Evidence directories stay untouched unless the command replaces files in
    place, which it is asked for by name.
    """
    guarded = {_guarded(path) for path in inputs}
    for target in targets:
        real = uris.location(target)
        where = posixpath.dirname(real) if uris.is_uri(real) else os.path.dirname(real)
        for place, whole_tree in guarded:
            if not whole_tree and real == place:
                raise SegtoolError(f"the output would replace the input file {place}: choose another --out", target)
            if whole_tree and uris.within(where, place):
                raise SegtoolError(f"the output would go inside the input directory {place}: choose an --out "
                                   "outside every input", target)


def refuse_collisions(targets: list[str]) -> None:
    """Refuse two outputs with one path (two partitions' files of the same name, say)."""
    seen: dict[str, str] = {}
    for target in targets:
        real = os.path.realpath(target)
        if real in seen:
            raise SegtoolError("two inputs would write the same output file; give them separately "
                               "or to different --out directories", target)
        seen[real] = target


def plan_outputs(targets: list[str], inputs: list[str], in_place: bool, force: bool) -> None:
    """Check every output of a run before the first byte is written.

    Out of place: no output inside an input's tree, no two outputs on one path,
    no existing file unless ``force``.  In place, targets are the inputs' own
    companions and are replaced with backups.
    """
    refuse_collisions(targets)
    if in_place:
        return
    refuse_inside_inputs(targets, inputs)
    if not force:
        for target in targets:
            if os.path.lexists(target):
                raise SegtoolError("already exists: segtool never overwrites a file; give --force to replace "
                                   "it (a backup is kept) or choose another --out", target)
    for directory in sorted({os.path.dirname(os.path.abspath(t)) for t in targets}):
        os.makedirs(directory, exist_ok=True)


def tree_outputs(directories: list[str], roots: list[str], out_dir: str) -> dict[str, str]:
    """Where the outputs made from each input directory go under ``out_dir``: its path below the given
    root that holds it, or its own name when it was given itself or lies below none.  Replicas side by
    side (``ev/broker1/p-0``, ``ev/broker2/p-0`` below ``ev``) stay apart as ``OUT/broker1/p-0`` and
    ``OUT/broker2/p-0``.  When roots given side by side would still put two directories on one place (two
    log dirs that each hold ``p-0``), each root's part goes below ``<n>-<root name>/``, numbered from 1 in
    the order given.  Returns input directory (absolute) -> output directory."""
    given = [os.path.abspath(root) for root in roots]
    places: dict[str, tuple[str | None, str]] = {}
    for directory in dict.fromkeys(os.path.abspath(d) for d in directories):
        holders = [root for root in given if directory == root or directory.startswith(root.rstrip(os.sep) + os.sep)]
        root = max(holders, key=len, default=None)
        places[directory] = (root, os.path.basename(directory) if root in (None, directory)
                             else os.path.relpath(directory, root))
    relatives = [relative for _, relative in places.values()]
    if len(set(relatives)) < len(relatives):
        numbers = {root: number for number, root in enumerate(dict.fromkeys(given), 1)}
        # a root given itself is named by its number alone: OUT/1-store, not OUT/1-store/store
        return {directory: os.path.join(out_dir, f"{numbers[root]}-{os.path.basename(root) or 'root'}",
                                        *([] if directory == root else [relative])) if root
                else os.path.join(out_dir, relative)
                for directory, (root, relative) in places.items()}
    return {directory: os.path.join(out_dir, relative) for directory, (_, relative) in places.items()}


def partition_output(source: str, out_dir: str | None, in_place: bool, name: str | None = None,
                     places: dict[str, str] | None = None) -> str:
    """Where a file derived from ``source`` in a partition goes.

    In place: beside it.  Otherwise where ``places`` (``tree_outputs`` of the run) puts its directory,
    else ``OUT/<partition dir name>/<name>``, so the files of two partitions never land on one another.
    """
    name = name or os.path.basename(source)
    directory = os.path.dirname(os.path.abspath(source))
    if in_place:
        return os.path.join(directory, name)
    if out_dir is None:
        raise SegtoolError("give --out DIR (or --in-place to replace files beside the input, with a backup)")
    if places is not None:
        return os.path.join(places[directory], name)
    return os.path.join(out_dir, os.path.basename(directory), name)