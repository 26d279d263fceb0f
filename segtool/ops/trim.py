"""`trim`: shrink preallocated .index/.timeindex files to their valid entries.

Kafka's ``trimToValidSize`` cuts an index to ``entries * entrySize``; for a hot
copy the valid entries are those before the zero-filled preallocated tail.
Directories are walked to any depth: every index file below them is trimmed,
every other file is named in the report as skipped.
"""

from __future__ import annotations

import os

from segtool.engine.safe_write import partition_output, plan_outputs, tree_outputs, write_atomically
from segtool.source import open_buffer, sha256_of
from segtool.engine.inventory import inventory
from segtool.ops.file_formats import file_format
from segtool.ops.output_schema import TrimReport

_NOT_AN_INDEX = "not a Kafka .index or .timeindex file; trim only shrinks index files"


def trim(paths: list[str], out_dir: str | None = None, in_place: bool = False, dry_run: bool = False,
         force: bool = False) -> TrimReport:
    indexes, skipped, unreadable = [], [], []
    found = inventory(paths)
    for entry in found.entries:
        if entry.unreadable is not None:  # named in the report; the rest is trimmed (exit 2)
            unreadable.append({"path": entry.path, "reason": entry.unreadable})
        elif file_format(entry.kind).index_view is not None:
            indexes.append(entry)
        else:  # named or found below a directory: a readable file trim has nothing to do with
            skipped.append({"path": entry.path, "reason": _NOT_AN_INDEX})
    places = tree_outputs([os.path.dirname(entry.path) for entry in indexes], paths, out_dir) \
        if out_dir is not None else None
    targets = [] if dry_run else [partition_output(entry.path, out_dir, in_place, places=places) for entry in indexes]
    plan_outputs(targets, paths, in_place, force)
    results = []
    for number, entry in enumerate(indexes):
        path = entry.path
        index = file_format(entry.kind).index_view(path)
        keep = index.valid_entries * index.entry_size
        data = bytes(open_buffer(path)[:keep])
        result = {"path": path, "sha256": sha256_of(path), "size": index.length, "valid_entries": index.valid_entries,
                  "trimmed_size": keep, "bytes_reclaimed": index.length - keep, "written": None}
        if not dry_run:
            result["written"] = write_atomically(targets[number], data, replace=in_place or force)
        results.append(result)
    return {"files": results, "skipped": skipped, "unreadable": unreadable, "bytes_reclaimed": sum(r["bytes_reclaimed"] for r in results)}
