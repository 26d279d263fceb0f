"""`verify --engine spark`: files checked in tasks, gathered into the report the local engine prints.

Each task runs ``segtool.ops.verify.verify_file`` — the very function the
local ``verify`` calls — so a file's entry is the same whoever computed it;
the driver puts the entries back in input order and sums them up the same way.

Local paths (every executor sees them): one task per file, and the checks
across a partition's files (``check_partitions``) on the driver.  URIs: the
driver only lists them (``staged``), and one task per *unit* stages the files
its checks read on its executor and runs those checks there too: a Kafka
directory's files with the files of the log dir above it (its checkpoints,
which a partition's startup plan reads), or a RocketMQ store's files (its
checks compare the CommitLog, ConsumeQueues, IndexFiles and checkpoint).  The
cross-file checks group by directory, so checking unit by unit is checking
the whole list.
"""

from __future__ import annotations

import os
from functools import partial

from segtool.engine.detect import detect
from segtool.engine.inventory import FoundFile, inventory, store_root
from segtool.ops.verify import check_partitions, summarize, unreadable_entry, verify_file
from segtool.pipeline import staged


def verify_one(item: tuple[str, str], deep: bool = False, hash_input: bool = True) -> dict:
    """Task: ``verify_file`` on the absolute path (executors have their own working directory),
    reported under the path as the user gave it."""
    given, absolute = item
    result = verify_file(absolute, deep, None, hash_input)
    result["path"] = given
    return result


def verify_distributed(paths: list[str], engine, deep: bool = False, hash_inputs: bool = True) -> dict:
    if any(staged.is_remote(path) for path in paths):
        return _verify_units(paths, engine, deep, hash_inputs)
    entries = inventory(paths).entries
    files = [entry for entry in entries if entry.unreadable is None]
    results = iter(engine.map(partial(verify_one, deep=deep, hash_input=hash_inputs),
                              [(f.path, os.path.abspath(f.path)) for f in files], [f.size for f in files],
                              description="segtool verify"))
    # unreadable entries keep their place in the walk's order
    return summarize(check_partitions([unreadable_entry(entry) if entry.unreadable is not None else next(results)
                                       for entry in entries]))


def verify_unit(item: tuple, deep: bool = False, hash_input: bool = True) -> list[dict]:
    """Task: stage a unit's files into this task's folder, check the ones it verifies (and, for a Kafka
    directory, the checks across them), and give the entries back naming the inputs as given."""
    checked, stage, places, whole_store = item
    with staged.task_folder() as folder:
        local = {source: staged.stage(source, folder) for source in stage}
        results = [verify_file(local[source], deep, None, hash_input) for source in checked]
        if not whole_store:
            check_partitions(results)
        return staged.as_given(results, {**staged.task_places(places, folder), **places_of_local(places)})


def places_of_local(places: dict[str, str]) -> dict[str, str]:
    """A local input's absolute path -> the path as given (tasks read absolute paths)."""
    return {os.path.abspath(given): given.rstrip(os.sep) or os.sep for given in places.values()
            if not staged.is_remote(given) and os.path.abspath(given) != given.rstrip(os.sep)}


def _verify_units(paths: list[str], engine, deep: bool, hash_inputs: bool) -> dict:
    trees = [staged.list_tree(path) for path in paths if staged.is_remote(path)]
    entries: list[FoundFile] = []
    for path in paths:
        if staged.is_remote(path):
            tree = next(t for t in trees if t.uri == path)
            entries += [FoundFile(planned, detect(planned).kind, size) for planned, size in tree.files]
        else:
            entries += inventory([path]).entries
    places = {**staged.planning_places(trees), **{path: path for path in paths if not staged.is_remote(path)}}

    def source(path: str) -> str:
        found = staged.source_of(path, trees)
        return os.path.abspath(found) if found == path else found

    readable = list(dict.fromkeys(entry.path for entry in entries if entry.unreadable is None))
    sizes = {entry.path: entry.size for entry in entries}
    # a store's own files (its checkpoint, abort, config/) are told by their place below a store root
    # found from its data files: on the driver nothing is downloaded to look at them
    roots = sorted({root for root in map(lambda p: store_root(detect(p)), readable) if root is not None},
                   key=len, reverse=True)
    units: dict[tuple[str, bool], list[str]] = {}
    for path in readable:
        root = next((root for root in roots if os.path.abspath(path).startswith(root + os.sep)), None)
        units.setdefault((root, True) if root is not None else (os.path.dirname(path), False), []).append(path)
    items, costs = [], []
    for (directory, whole_store), checked in units.items():
        if whole_store:
            stage = [p for p in readable if os.path.abspath(p).startswith(directory + os.sep)]
        else:
            stage = [p for p in readable if os.path.dirname(p) in (directory, os.path.dirname(directory))]
        items.append(([source(p) for p in checked], [source(p) for p in stage], places, whole_store))
        costs.append(sum(sizes[p] for p in stage))
    results = engine.map(partial(verify_unit, deep=deep, hash_input=hash_inputs), items, costs,
                         description="segtool verify")
    found = {path: result for checked, unit in zip(units.values(), results) for path, result in zip(checked, unit)}
    return summarize([unreadable_entry(entry) if entry.unreadable is not None else found[entry.path]
                      for entry in entries])
