"""`verify` for RocketMQ store files: CommitLog, ConsumeQueue, IndexFile, checkpoint.

One module per store file (``commitlog``, ``consume_queue``, ``index_file``,
``checkpoint``); ``store`` holds what they share.

Each check returns ``{"problems": [...], ...}`` like the Kafka checks in
``segtool.ops.verify_kafka``; ``ops.file_formats`` names the check of each kind and
runs it through ``verify_in_store`` (a problem is ``{"kind",
"severity", "byte_offset", "message"}``; "error" makes the file's status
"problems", "info" does not).

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
"messages_lost", "messages_salvageable", "messages_gone", "torn_messages", ...}`` for
that file, like Kafka ``.log`` files: ``valid_bytes`` is where the recovered CommitLog
ends in this file (0 for a file recovery deletes), ``bytes_lost`` the written bytes
after it (the unwritten zero tail of a preallocated file is not counted),
``messages_lost`` the file's share of what the recovery drops
(``engine.salvage.store_recovery_loss``: messages framed past the cut, and queue
offsets known to have been there that no readable message holds), split into
``messages_salvageable`` (body CRC holds: salvage writes them back) and
``messages_gone``; ``torn_messages`` is 1 when a message is cut short there.

``The RocketMQ 5.x files (BatchConsumeQueue, the timer store, DLedger, compaction, the lock and abort
markers) are checked by ``rocketmq5``.

``deep`` also inflates compressed bodies, and checks every IndexFile entry
against its message (without it, at most ``INDEX_CHECK_LIMIT`` entries per file,
evenly spread, are checked).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from segtool.engine.inventory import store_root
from segtool.engine.detect import DetectedFile
from segtool.formats.json_names import snake_case_keys
from segtool.ops.verify_rocketmq.store import StoreContext, StoreContexts


def verify_in_store(check: Callable[[str, bool, StoreContext], dict], detected: DetectedFile, deep: bool = False, *,
                    contexts: StoreContexts | None = None, commitlog_dir: str | None = None) -> dict:
    """Run one store file's ``check`` with what its store has in common (see the module docstring).

    ``contexts`` shares that across the calls of one run (without it the store is read for this
    file alone); ``commitlog_dir`` points an index-only or queue-only copy at a CommitLog.
    """
    own = contexts is None
    contexts = StoreContexts() if own else contexts
    try:
        root = store_root(detected)
        ctx = contexts.get(Path(root) if root else None, Path(commitlog_dir) if commitlog_dir else None)
        # the checks keep RocketMQ's field names; the report speaks snake_case like every output
        return snake_case_keys(check(detected.path, deep, ctx))
    finally:
        if own:
            contexts.close()
