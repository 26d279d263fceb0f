"""How ``scan`` publishes its dataset (stage, mark, commit) and how a reader tells a complete one.

While a scan runs, everything it writes is under ``OUT/_temporary/<run>/``, a
name every dataset reader skips (Spark, pyarrow, Hadoop: names beginning with
``_``), as in Hadoop's file output committer:

```
OUT/_temporary/<run>/heartbeat                 the driver's host, pid and time, rewritten every 10 s
OUT/_temporary/<run>/plan.json                 the plan's fingerprint: what --resume must match
OUT/_temporary/<run>/topic=…/partition=…/part-<task>.parquet.staged   written by the tasks
OUT/_temporary/<run>/tasks/<task>.json         a task's marker, written after its parts: summary and parts
```

Commit, on the driver once every task has its marker: an earlier ``_SUCCESS``
is removed, the earlier dataset's parts that this run does not write are
removed (``--force``), each staged part is published (a rename on a local
disk or HDFS; a copy then a delete on object stores, which have no rename),
the report is written, and ``_SUCCESS`` last, holding the manifest of the parts
(relative path, rows, size, sha256).  Only the staging folder is removed after
it.  A dataset without ``_SUCCESS``, or whose parts differ from its manifest,
is not complete: ``check_dataset``.

A later run names and removes the staging folders of runs that are gone (a
heartbeat older than a minute, or a driver process that no longer runs on this
host), refuses to start while another run's heartbeat is fresh, and with
``--resume`` keeps the finished tasks of the newest interrupted run whose plan
is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import threading
import time

from segtool.errors import SegtoolError
from segtool.findings import Finding, FindingKind, Severity
from segtool.formats.outcomes import WalkEnd
from segtool.pipeline import storage

SUCCESS_NAME = "_SUCCESS"
STAGING_NAME = "_temporary"
STAGED_SUFFIX = ".staged"  # staged parts are not *.parquet: no reader's glob takes them
HEARTBEAT_NAME = "heartbeat"
PLAN_NAME = "plan.json"
TASKS_NAME = "tasks"
HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0  # six missed heartbeats: the driver is gone
MANIFEST_FORMAT = "segtool-scan-manifest/1"
PAUSE_VARIABLE = "SEGTOOL_PAUSE_AT"


def pause_point(stage: str) -> None:
    """A test hook: with ``SEGTOOL_PAUSE_AT=<stage>:<file>`` the run writes ``<file>`` at this stage and waits
    there, so a test can interrupt it at exactly this point (start-up, one task, the commit)."""
    wanted, _, signal_file = os.environ.get(PAUSE_VARIABLE, "").partition(":")
    if wanted != stage:
        return
    with open(signal_file, "w") as handle:
        handle.write(str(os.getpid()))
    while True:
        time.sleep(3600)


# -- the task side ------------------------------------------------------------


def staged_path(run_root: str, relative: str) -> str:
    return storage.join(run_root, relative + STAGED_SUFFIX)


def _marker_path(run_root: str, task_id: int) -> str:
    return storage.join(storage.join(run_root, TASKS_NAME), f"{task_id:06d}.json")


def mark_task_done(run_root: str, stats: dict) -> None:
    """The task's marker, written after its parts: the run may keep this task (``--resume``)."""
    marker = {**stats, "errors": [error.as_dict() for error in stats["errors"]]}
    storage.write_file(_marker_path(run_root, stats["id"]), json.dumps(marker).encode(), replace=True, backup=False)


def _stats_from_marker(marker: dict) -> dict:
    errors = [Finding(FindingKind[e["kind"].upper()], e["byte_offset"], e["message"], Severity(e["severity"]),
                      e["offset"]) for e in marker["errors"]]
    stop = marker["stop_reason"]
    return {**marker, "errors": errors, "stop_reason": None if stop is None else WalkEnd(stop)}


# -- the run's staging folder ---------------------------------------------------


def _read_json(path: str) -> dict | None:
    try:
        return json.loads(bytes(storage.read_all(path)))
    except (SegtoolError, ValueError, OSError):
        return None


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _alive(beat: dict | None, now: float) -> bool:
    """A run is live while its heartbeat is fresh and, on this host, its driver process still runs."""
    if beat is None or now - beat.get("time", 0) > STALE_SECONDS:
        return False
    if beat.get("host") == socket.gethostname():
        return beat.get("pid") != os.getpid() and _process_runs(beat.get("pid", 0))
    return True


class Staging:
    """This run's folder ``OUT/_temporary/<run>``: its heartbeat, the tasks' parts and markers."""

    def __init__(self, out: str, run: str, resumed: bool, removed: list[str]):
        self.out = out
        self.run = run
        self.root = storage.join(storage.join(out, STAGING_NAME), run)
        self.resumed = resumed
        self.removed = removed  # stale folders of interrupted runs, removed before this one started
        self.planned = False  # the plan is recorded: from here on the folder may be resumed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, out: str, resume: bool) -> "Staging":
        """Remove the staging folders of runs that are gone (with ``resume``: all but the newest one that has a
        plan, which this run takes over), refuse while another run is writing, start the heartbeat."""
        parent = storage.join(out, STAGING_NAME)
        now = time.time()
        stale = []
        for name, is_dir, _ in (storage.listdir(parent) if storage.isdir(parent) else []):
            if not is_dir:
                continue
            beat = _read_json(storage.join(storage.join(parent, name), HEARTBEAT_NAME))
            if _alive(beat, now):
                raise SegtoolError(f"another scan is writing into this output ({STAGING_NAME}/{name}: host "
                                   f"{beat['host']}, pid {beat['pid']}, heartbeat {now - beat['time']:.0f} s ago); "
                                   "wait for it to end or choose another --out", out)
            stale.append(name)
        resumable = [name for name in stale if storage.exists(storage.join(storage.join(parent, name), PLAN_NAME))]
        chosen = max(resumable) if resume and resumable else None  # names begin with their UTC start time
        removed = []
        for name in stale:
            if name != chosen:
                storage.remove_tree(storage.join(parent, name))
                removed.append(storage.join(parent, name))
        run = chosen or f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}-{secrets.token_hex(2)}"
        staging = cls(out, run, chosen is not None, removed)
        staging._beat()
        staging._thread = threading.Thread(target=staging._keep_beating, name="segtool-heartbeat", daemon=True)
        staging._thread.start()
        return staging

    def _beat(self) -> None:
        beat = {"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}
        storage.write_file(storage.join(self.root, HEARTBEAT_NAME), json.dumps(beat).encode(), replace=True,
                           backup=False)

    def _keep_beating(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._beat()
            except (SegtoolError, OSError):
                pass  # a missed beat: the next one may get through, and a minute of them is needed to look gone

    def check_plan(self, fingerprint: str) -> None:
        """A new run records its plan; a resumed one must have the interrupted run's plan."""
        path = storage.join(self.root, PLAN_NAME)
        self.planned = True
        if not self.resumed:
            storage.write_file(path, json.dumps({"fingerprint": fingerprint}).encode(), replace=True, backup=False)
            return
        recorded = (_read_json(path) or {}).get("fingerprint")
        if recorded != fingerprint:
            raise SegtoolError(f"--resume: the interrupted scan in {STAGING_NAME}/{self.run} had other inputs or "
                               "options (its plan differs); rerun it with the same arguments, or without --resume "
                               "to start over (its staging is then removed)", self.out)

    def finished_tasks(self, tasks: list[dict]) -> dict[int, dict]:
        """The tasks a resumed run keeps: a marker for the same byte range, and every part it names staged
        with the size it names."""
        folder = storage.join(self.root, TASKS_NAME)
        if not self.resumed or not storage.isdir(folder):
            return {}
        by_id = {task["id"]: task for task in tasks}
        kept = {}
        for name, _, _ in storage.listdir(folder):
            marker = _read_json(storage.join(folder, name))
            task = by_id.get(marker.get("id")) if marker else None
            if task is None or any(marker.get(key) != task[key] for key in ("path", "split", "start", "end")):
                continue
            staged = [staged_path(self.root, part["path"]) for part in marker["parts"]]
            if all(storage.exists(path) and storage.size(path) == part["size"]
                   for path, part in zip(staged, marker["parts"])):
                kept[task["id"]] = _stats_from_marker(marker)
        return kept

    def close(self) -> None:
        """Stop the heartbeat (the folder stays: an interrupted run's, for --resume or the next run to remove)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def remove(self) -> None:
        self.close()
        storage.remove_tree(self.root)
        parent = storage.join(self.out, STAGING_NAME)
        if not storage.is_uri(parent):
            try:
                os.rmdir(parent)  # only when empty
            except OSError:
                pass


def plan_fingerprint(tasks: list[dict], options: dict) -> str:
    """What must be the same for a resumed run to keep the interrupted run's parts: every task's input and
    byte range, and the options that shape the rows."""
    text = json.dumps({"tasks": tasks, "options": options}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# -- commit ------------------------------------------------------------------------


def manifest_bytes(parts: list[dict]) -> bytes:
    """``_SUCCESS``: the parts (relative path, rows, size, sha256), sorted; the same for the same dataset."""
    files = sorted(parts, key=lambda part: part["path"])
    head = json.dumps({"format": MANIFEST_FORMAT, "rows": sum(part["rows"] for part in files)})[:-1]
    lines = ",\n".join(json.dumps({key: part[key] for key in ("path", "rows", "size", "sha256")}) for part in files)
    return f'{head}, "files": [\n{lines}\n]}}\n'.encode()  # one line a part


def remove_success(out: str) -> None:
    marker = storage.join(out, SUCCESS_NAME)
    if storage.exists(marker):
        storage.remove_file(marker)


def commit(staging: Staging, parts: list[dict], write_empty, report_name: str, report: bytes,
           replace_report: bool) -> None:
    """Publish the staged ``parts``, write the report, then ``_SUCCESS`` with the manifest; remove the staging.

    ``write_empty(out)`` writes the one empty part of a dataset without rows and returns its entry.
    """
    out = staging.out
    remove_success(out)
    storage.remove_dataset_files(out, keep={part["path"] for part in parts})
    directories = set()
    for n, part in enumerate(parts):
        final = storage.join(out, part["path"])
        storage.publish(staged_path(staging.root, part["path"]), final)
        directories.add(storage.parent(final))
        if n == 0:
            pause_point("commit")
    if not storage.is_uri(out):
        from segtool.engine.safe_write import fsync_dir

        for directory in sorted(directories) + [out]:
            fsync_dir(directory)
    if not parts:
        parts = [write_empty(out)]
    storage.write_file(storage.join(out, report_name), report, replace=replace_report)
    storage.write_file(storage.join(out, SUCCESS_NAME), manifest_bytes(parts), replace=True, backup=False)
    staging.remove()


# -- the reader's check --------------------------------------------------------------


def check_dataset(out: str) -> dict:
    """Whether ``out`` is a complete scan dataset: ``_SUCCESS`` holds a manifest and the parts a reader
    would read are exactly its parts, each with its size, sha256 and row count (output: ScanCheck)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = storage.absolute(out)
    if not storage.isdir(out):
        from segtool.errors import UnreadableInput

        raise UnreadableInput("no such directory", out)
    problems: list[dict] = []
    manifest = _read_json(storage.join(out, SUCCESS_NAME)) if storage.exists(storage.join(out, SUCCESS_NAME)) else None
    if not storage.exists(storage.join(out, SUCCESS_NAME)):
        problems.append({"path": SUCCESS_NAME, "reason": "absent: the scan did not finish (or is still running)"})
    elif manifest is None or manifest.get("format") != MANIFEST_FORMAT:
        problems.append({"path": SUCCESS_NAME, "reason": "holds no manifest of the parts (an older segtool, or "
                                                         "not segtool's): completeness cannot be told"})
    listed = {entry["path"]: entry for entry in (manifest or {}).get("files", [])}
    found = storage.dataset_files(out)
    for relative in found:
        if manifest is not None and relative not in listed:
            problems.append({"path": relative, "reason": "not in the manifest: a reader would read it too"})
    for relative, entry in listed.items():
        path = storage.join(out, relative)
        if relative not in found:
            problems.append({"path": relative, "reason": "in the manifest but absent"})
            continue
        size = storage.size(path)
        if size != entry["size"]:
            problems.append({"path": relative, "reason": f"{size} bytes, the manifest says {entry['size']}"})
            continue
        if storage.sha256(path) != entry["sha256"]:
            problems.append({"path": relative, "reason": "sha256 differs from the manifest's"})
            continue
        data = storage.read_all(path)
        rows = pq.read_metadata(pa.py_buffer(data)).num_rows
        if rows != entry["rows"]:
            problems.append({"path": relative, "reason": f"{rows} rows, the manifest says {entry['rows']}"})
    staging = storage.join(out, STAGING_NAME)
    runs = [storage.join(staging, name) for name, is_dir, _ in storage.listdir(staging) if is_dir] \
        if storage.isdir(staging) else []
    return {"out": out, "complete": not problems, "rows": manifest.get("rows") if manifest else None,
            "files": len(listed), "problems": problems, "staging": runs}
