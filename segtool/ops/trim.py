"""`trim`: shrink preallocated .index/.timeindex files to their valid entries.

Kafka's ``trimToValidSize`` cuts an index to ``entries * entrySize``; for a hot
copy the valid entries are those before the zero-filled preallocated tail.
"""

from __future__ import annotations

from segtool.engine.safe_write import check_out_dir, output_path, write_atomically
from segtool.engine.source import open_buffer, sha256_of
from segtool.errors import UnreadableInput
from segtool.formats.detect import detect
from segtool.formats.kafka_index import OffsetIndex, TimeIndex

_INDEX_CLASSES = {"kafka-offset-index": OffsetIndex, "kafka-time-index": TimeIndex}


def trim(paths: list[str], out_dir: str | None = None, in_place: bool = False, dry_run: bool = False) -> dict:
    check_out_dir(None if dry_run else out_dir, paths)
    results = []
    for path in paths:
        kind = detect(path).kind
        if kind not in _INDEX_CLASSES:
            raise UnreadableInput("not a Kafka .index or .timeindex file; trim only shrinks index files", path)
        index = _INDEX_CLASSES[kind](path)
        valid = index.valid_entries
        keep = valid * index.entry_size
        data = bytes(open_buffer(path)[:keep])
        result = {"path": path, "sha256": sha256_of(path), "size": index.length, "valid_entries": valid, "trimmed_size": keep,
                  "bytes_reclaimed": index.length - keep, "written": None}
        if not dry_run:
            target = output_path(path, out_dir, in_place)
            result["written"] = write_atomically(target, data, backup=in_place)
        results.append(result)
    return {"files": results, "bytes_reclaimed": sum(r["bytes_reclaimed"] for r in results)}
