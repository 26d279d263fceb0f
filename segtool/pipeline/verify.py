"""`verify --engine spark`: one task per file, gathered into the report the local engine prints.

Each task runs ``segtool.ops.verify.verify_file`` — the very function the
local ``verify`` calls — so a file's entry is the same whoever computed it;
the driver puts the entries back in input order and sums them up the same way.
"""

from __future__ import annotations

import os
from functools import partial

from segtool.engine.inventory import inventory
from segtool.ops.verify import check_partitions, summarize, unreadable_entry, verify_file


def verify_one(item: tuple[str, str], deep: bool = False, hash_input: bool = True) -> dict:
    """Task: ``verify_file`` on the absolute path (executors have their own working directory),
    reported under the path as the user gave it."""
    given, absolute = item
    result = verify_file(absolute, deep, None, hash_input)
    result["path"] = given
    return result


def verify_distributed(paths: list[str], engine, deep: bool = False, hash_inputs: bool = True) -> dict:
    entries = inventory(paths).entries
    files = [entry for entry in entries if entry.unreadable is None]
    results = iter(engine.map(partial(verify_one, deep=deep, hash_input=hash_inputs),
                              [(f.path, os.path.abspath(f.path)) for f in files], [f.size for f in files],
                              description="segtool verify"))
    # unreadable entries keep their place in the walk's order
    return summarize(check_partitions([unreadable_entry(entry) if entry.unreadable is not None else next(results)
                                       for entry in entries]))
