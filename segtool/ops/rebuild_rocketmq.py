"""`rebuild-index` for a RocketMQ store: the IndexFiles RocketMQ would build from its CommitLog.

What RocketMQ does when its ``index/`` directory is emptied and the broker
restarted: ``ReputMessageService.doReput`` reads the whole CommitLog with
``checkMessageAndReturnSize(checkCRC=false)`` and ``IndexService.buildIndex``
puts UNIQ_KEY and every KEYS token of each message (``reput_dispatches`` +
``build_index_files``).  The file contents are byte-identical to the broker's
(``expected/rebuilt-index/`` of the corpus).

File names.  RocketMQ names an IndexFile by the wall-clock time of its creation
(``yyyyMMddHHmmssSSS`` in the broker's local time zone), which a rebuild cannot
reproduce and which would make every run differ.  By default
(``naming="begin-timestamp"``) each file is named by its header's
beginTimestamp (the storeTimestamp of its first entry) in UTC, in the same
format: deterministic, close to what a live broker wrote (it creates the file
when it dispatches that first message: in the corpus the broker's names are
7-14 ms after the beginTimestamp), and in the same order (a name that would not
sort after the previous one is bumped by 1 ms).  ``naming="now"`` names files
like RocketMQ itself (local wall clock at creation).  IndexService loads every
file of ``index/`` sorted by name, so only the order matters to the broker.

Output goes to ``out_dir/index/`` (never inside the store).  ``in_place``
replaces the store's ``index/`` (broker stopped!).  Either way a file that is
replaced by other bytes, or (in place) removed, is first moved to
``<index/>.segtool-backup-<UTC time>/`` beside that ``index/`` (outside it, where
RocketMQ would load it as an index file): a rename, so the original itself is
kept at no cost (a default-geometry IndexFile is 420 MB); a file that holds the
very bytes already is left as it is, and a rerun that changes nothing makes no
backup folder.  The new files are written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

from segtool.rocketmq import store as rs
from segtool.engine.safe_write import fsync_dir, plan_outputs, tree_outputs, unused_name, write_atomically
from segtool.source import sha256_of
from segtool.errors import NothingFound, SegtoolError
from segtool.rocketmq import store_files as rmq
from segtool.formats.json_names import snake_case_keys
from segtool.ops.output_schema import RocketMQRebuildReport
from segtool.rocketmq import names as rocketmq_names

NAMINGS = ("begin-timestamp", "now")


def index_geometry(root: Path, hash_slot_num: int | None, index_num: int | None) -> tuple[int, int, str]:
    if (hash_slot_num is None) != (index_num is None):
        raise SegtoolError("give both hash_slot_num and index_num (--hash-slot-num/--index-num), or neither")
    if hash_slot_num is not None:
        if hash_slot_num <= 0 or index_num <= 0:
            raise SegtoolError("hash_slot_num and index_num must be positive")
        return hash_slot_num, index_num, "explicit"
    index_dir = root / rocketmq_names.INDEX_DIR
    if index_dir.is_dir():
        for path in reversed(rmq.list_index_files(index_dir)):
            try:
                view = rmq.IndexFile(path)
            except (SegtoolError, ValueError):
                continue
            try:
                return view.hash_slot_num, view.index_num, f"as the store's {path.name} ({view.geometry_source})"
            finally:
                view.close()
    return rmq.DEFAULT_HASH_SLOT_NUM, rmq.DEFAULT_INDEX_NUM, "RocketMQ default (maxHashSlotNum/maxIndexNum)"


class _Aside:
    """The backup folder beside an ``index/``, made when the first file is moved into it."""

    def __init__(self, index_dir: Path):
        self.index_dir = index_dir
        self.folder: Path | None = None

    def move(self, path: Path) -> str:
        """Move ``path`` into the folder (a rename, synced); returns where it now is."""
        try:
            if self.folder is None:
                while True:
                    folder = Path(unused_name(str(self.index_dir)))
                    try:
                        folder.mkdir()
                        break
                    except FileExistsError:  # another run took the name between the check and the mkdir
                        continue
                self.folder = folder
                fsync_dir(str(self.index_dir.parent))
            kept = self.folder / path.name
            os.rename(path, kept)
            fsync_dir(str(self.folder))
            fsync_dir(str(self.index_dir))
        except OSError as exc:
            raise SegtoolError(f"cannot move the file aside before replacing it: {exc.strerror or exc}",
                               str(path)) from None
        return str(kept)


def _holds(path: str, data: memoryview) -> bool:
    """The file at ``path`` holds exactly ``data`` (read a MiB at a time, stopping at the first difference)."""
    if os.path.getsize(path) != len(data):
        return False
    step = 1 << 20
    with open(path, "rb") as handle:
        return all(handle.read(step) == data[at:at + step] for at in range(0, len(data), step))


def _recovery_cut(root: Path, notes: list[str]) -> dict | None:
    """Where the store's CommitLog recovery cuts (``engine.salvage.store_recovery_loss``, the figures verify,
    inspect, salvage and lookup give), said in a note: the reput indexes what lies past it too, which the
    broker drops at its start."""
    from segtool.ops.verify_rocketmq.store import store_recovery

    loss, _abnormal = store_recovery(root)
    if loss is None:
        return None
    notes.append(f"the CommitLog is damaged: RocketMQ's recovery cuts it at physical offset {loss.phy_offset} "
                 f"({os.path.basename(loss.file)} byte {loss.byte}), dropping {loss.messages} message(s) "
                 f"({loss.salvageable} salvageable, {loss.gone} gone); index entries past the cut point at them")
    return loss.cut_dict()


def rebuild_rocketmq_index(store_dir, out_dir=None, in_place: bool = False, hash_slot_num: int | None = None,
                           index_num: int | None = None, *, naming: str = "begin-timestamp",
                           commitlog_dir=None, hash_inputs: bool = True,
                           force: bool = False) -> RocketMQRebuildReport:
    """Rebuild the IndexFiles of the RocketMQ store at ``store_dir`` from its CommitLog.

    Writes to ``out_dir/index/`` (or the store's own ``index/`` with
    ``in_place``); geometry explicit (``hash_slot_num`` and ``index_num``),
    else that of the store's existing index files, else RocketMQ's default.
    ``commitlog_dir`` reads the CommitLog from elsewhere.  Returns the report:
    ``{"store", "commitlog", "index_dir", "in_place", "geometry", "naming",
    "dispatch", "build", "files": [{"path", "name", "size", "sha256",
    "entries", "index_count", "hash_slot_count", "begin_timestamp",
    "end_timestamp", "begin_phy_offset", "end_phy_offset"}], "backup_dir",
    "removed", "notes", "inputs": [{"path", "size", "sha256"}]}`` (the CommitLog
    files; sha256 None without ``hash_inputs``).
    """
    if naming not in NAMINGS:
        raise SegtoolError(f"naming must be one of {', '.join(NAMINGS)}")
    root = rocketmq_names.store_directory(store_dir)
    commitlog = Path(commitlog_dir) if commitlog_dir is not None else root / rocketmq_names.COMMITLOG_DIR
    if not commitlog.is_dir() or not rmq.list_mapped_files(commitlog):
        raise NothingFound("no CommitLog files to rebuild the index from", str(commitlog))
    if not in_place and out_dir is None:
        raise SegtoolError("give --out DIR (or --in-place to replace the store's index/, with a backup)")
    if in_place and out_dir is not None:
        raise SegtoolError("give either --out DIR or --in-place, not both")
    hs, n, geometry_source = index_geometry(root, hash_slot_num, index_num)

    feed = rs.DispatchFeed("reput")
    pending = iter(range(1, 1 << 30))
    name_for = rs.index_file_name_now if naming == "now" else (lambda previous: f"pending-{next(pending)}")
    build = rs.build_index_files(rs.reput_dispatches(commitlog, feed=feed), hs, n, name_for=name_for)
    index_dir = root / rocketmq_names.INDEX_DIR
    target_dir = None if in_place else os.path.join(out_dir, rocketmq_names.INDEX_DIR)
    report = {
        "store": str(root), "commitlog": str(commitlog),
        "index_dir": str(index_dir) if in_place else target_dir, "in_place": in_place,
        "geometry": {"hashSlotNum": hs, "indexNum": n, "fileSize": rmq.index_file_size(hs, n),
                     "source": geometry_source},
        "naming": naming, "files": [], "backup_dir": None, "removed": [], "notes": [],
        "inputs": [{"path": str(path), "size": path.stat().st_size, "sha256": sha256_of(path) if hash_inputs else None}
                   for _, path in rmq.list_mapped_files(commitlog)],
    }
    try:
        if naming == "begin-timestamp":
            previous = None
            for view in build.created:
                view.name = previous = rs.index_file_name(view.header["beginTimestamp"], previous)
        report["dispatch"] = {"mode": "reput (checkCRC=false)", "startFile": feed.start_file,
                              "dispatched": feed.dispatched, "skipped": feed.skipped, "stopped": feed.stopped}
        report["build"] = build.stats()
        if feed.skipped:
            report["notes"].append(f"{len(feed.skipped)} undecodable record(s) made the reput skip the rest of their "
                                   "CommitLog file, as a RocketMQ master does: those messages are not indexed")
        if not build.created:
            report["notes"].append("no message carries a key: RocketMQ creates no index file")
        report["recovery_cut"] = _recovery_cut(root, report["notes"])
        targets = [str(index_dir / view.name) if in_place else os.path.join(target_dir, view.name)
                   for view in build.created]
        plan_outputs(targets, [str(root), str(commitlog)], in_place, force)
        written_dir = index_dir if in_place else Path(target_dir)
        # the files of written_dir the rebuild makes no new one for: a broker would load them with the new ones
        keep = {view.name for view in build.created}
        others = sorted(p for p in written_dir.iterdir() if p.is_file() and p.name not in keep) \
            if written_dir.is_dir() else []
        if others and not (in_place or force):
            raise SegtoolError("already holds other index files, which a broker would load with the new ones: give "
                               "--force to move them aside (into a backup folder beside it) or choose another --out",
                               str(others[0]))
        aside = _Aside(written_dir)
        written_dir.mkdir(parents=True, exist_ok=True)
        size = rmq.index_file_size(hs, n)
        for view, target in zip(build.created, targets):
            data = memoryview(view.buf)[:size]
            try:
                moved = None
                if os.path.lexists(target) and not _holds(target, data):
                    moved = aside.move(Path(target))
                written = write_atomically(target, data, replace=in_place or force, backup=False)
                if moved is not None:
                    written.update(backup=moved, replaced_sha256=sha256_of(moved))
            finally:
                data.release()
            header = view.header
            report["files"].append({
                "path": written["path"], "name": view.name, "size": written["size"],
                "allocated_bytes": written["allocated_bytes"], "sha256": written["sha256"],
                "backup": written["backup"], "replaced_sha256": written["replaced_sha256"],
                "unchanged": written["unchanged"],
                "entries": header["indexCount"] - 1, "index_count": header["indexCount"],
                "hash_slot_count": header["hashSlotCount"],
                "begin_timestamp": header["beginTimestamp"], "end_timestamp": header["endTimestamp"],
                "begin_phy_offset": header["beginPhyOffset"], "end_phy_offset": header["endPhyOffset"],
            })
        for path in others:
            aside.move(path)
            report["removed"].append(str(path))
        if in_place and (root / "abort").exists():
            report["notes"].append("the store has an abort file: on start RocketMQ's abnormal recovery drops "
                                   "index files that end after the checkpoint's indexMsgTimestamp and "
                                   "re-indexes those messages")
        report["backup_dir"] = None if aside.folder is None else str(aside.folder)
    finally:
        for view in build.created:
            view.close()
    return snake_case_keys(report)  # the build keeps RocketMQ's names; the report speaks snake_case



def rebuild_rocketmq_stores(roots: list[str], out_dir=None, in_place: bool = False, given: list[str] | None = None,
                            **options) -> list[dict]:
    """``rebuild_rocketmq_index`` for each store.  Out of place, one store alone writes to ``OUT/index/``;
    several, or a store beside Kafka partitions (``given``: the paths the command was given), write to
    their place below the given paths (``safe_write.tree_outputs``), ``OUT/<store>/index/``."""
    if in_place or (len(roots) == 1 and given is None):
        return [rebuild_rocketmq_index(root, out_dir=out_dir, in_place=in_place, **options) for root in roots]
    places = tree_outputs(roots, given or roots, out_dir)
    return [rebuild_rocketmq_index(root, out_dir=places[os.path.abspath(root)], **options) for root in roots]
