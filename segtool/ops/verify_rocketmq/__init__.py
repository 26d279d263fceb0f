"""`verify` for RocketMQ store files: CommitLog, ConsumeQueue, IndexFile, checkpoint.

One module per store file (``commitlog``, ``consume_queue``, ``index_file``,
``checkpoint``); ``store`` holds what they share.

``verify_rocketmq_file(detected, deep)`` returns ``{"problems": [...], ...}``
like the Kafka checks in ``segtool.ops.verify`` (a problem is a
``segtool.findings.Finding``; "error" makes the file's status "problems", "info"
does not).

Each file is checked on its own and, when it sits in a store
(``<root>/commitlog/<20 digits>``, ``<root>/consumequeue/<topic>/<queueId>/<20
digits>``, ``<root>/index/<yyyyMMddHHmmssSSS>``, ``<root>/checkpoint``), against
the rest of the store.  What RocketMQ 4.9 does when it loads the store is
predicted once per store and shared by its files:

* ``MappedFileQueue.load`` refuses a CommitLog (or ConsumeQueue) file whose
  length is not the configured file size (inferred from the file names'
  spacing): the broker does not start;
* recovery (``CommitLog.recoverNormally``: the last 3 files; after an unclean
  shutdown, marked by the ``abort`` file, ``recoverAbnormally`` from the file
  the checkpoint selects) reads messages with ``checkMessageAndReturnSize
  (checkCRC = checkCRCOnRecover = true)``, moves to the next file at a BLANK
  record, and stops at the first record that is not a good message; the
  CommitLog is cut there (``truncateDirtyFiles``: later files are deleted) and
  the ConsumeQueues with it;
* abnormal recovery also deletes the index files whose endTimestamp is later
  than the checkpoint's indexMsgTimestamp and rebuilds them from the CommitLog.

CommitLog files get ``recovery``: ``{"valid_bytes", "bytes_lost",
"records_lost", "torn_messages", ...}`` for that file, like Kafka ``.log``
files: ``valid_bytes`` is where the recovered CommitLog ends in this file (0 for
a file recovery deletes), ``bytes_lost`` the written bytes after it (the
unwritten zero tail of a preallocated file is not counted), ``records_lost`` the
messages (whole or torn) that start there, ``torn_messages`` how many of those
are incomplete.

``The RocketMQ 5.x files (BatchConsumeQueue, the timer store, DLedger, compaction, the lock and abort
markers) are checked by ``rocketmq5``.

``deep`` also inflates compressed bodies, and checks every IndexFile entry
against its message (without it, at most ``INDEX_CHECK_LIMIT`` entries per file,
evenly spread, are checked).
"""

from __future__ import annotations

from pathlib import Path

from segtool.engine.inventory import store_root
from segtool.formats.detect import NOT_RECOGNISED
from segtool.formats.json_names import snake_case_keys
from segtool.ops.verify_rocketmq.checkpoint import verify_checkpoint
from segtool.ops.verify_rocketmq.commitlog import verify_commitlog
from segtool.ops.verify_rocketmq.consume_queue import verify_consumequeue
from segtool.ops.verify_rocketmq.index_file import verify_indexfile
from segtool.ops.verify_rocketmq.rocketmq5 import ROCKETMQ5_KINDS, verify_rocketmq5_file
from segtool.ops.verify_rocketmq.store import StoreContexts


def verify_rocketmq_file(detected, deep: bool = False, *, contexts: StoreContexts | None = None, commitlog_dir=None,
                         hash_slot_num: int | None = None, index_num: int | None = None) -> dict:
    """Check one RocketMQ store file (see the module docstring).

    ``contexts`` shares what a store's files have in common across the calls
    of one run (without it the store is read for this file alone);
    ``commitlog_dir`` points an index-only or queue-only copy at a CommitLog;
    ``hash_slot_num`` / ``index_num`` give the IndexFile geometry (inferred
    otherwise).
    """
    own = contexts is None
    contexts = StoreContexts() if own else contexts
    try:
        root = store_root(detected)
        return _verify_with(contexts.get(Path(root) if root else None, Path(commitlog_dir) if commitlog_dir else None),
                            detected, deep, hash_slot_num, index_num)
    finally:
        if own:
            contexts.close()


def _verify_with(ctx, detected, deep: bool, hash_slot_num: int | None, index_num: int | None) -> dict:
    checks = {"rocketmq-commitlog": lambda: verify_commitlog(detected.path, deep, ctx),
              "rocketmq-consumequeue": lambda: verify_consumequeue(detected.path, deep, ctx),
              "rocketmq-indexfile": lambda: verify_indexfile(detected.path, deep, ctx, hash_slot_num, index_num),
              "rocketmq-checkpoint": lambda: verify_checkpoint(detected.path, deep, ctx),
              **{kind: lambda: verify_rocketmq5_file(detected.kind, detected.path, deep) for kind in ROCKETMQ5_KINDS}}
    if detected.kind not in checks:
        return {"problems": [], "status": "skipped", "reason": NOT_RECOGNISED}
    # the checks keep RocketMQ's field names; the report speaks snake_case like every output
    return snake_case_keys(checks[detected.kind]())
