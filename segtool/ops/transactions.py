"""`transactions`: the transaction coordinator's state and every partition's transactions.

* Coordinator: the replay of the ``__transaction_state`` partitions (latest value per
  transactional id, a tombstone deletes it), decoded by ``kafka.coordinator``.
* Partitions: each partition's segments recovered in offset order with one producer state
  carried across them (``kafka.recovery.recover_segment``, as log loading does), which
  gives the aborted ranges (what ``.txnindex`` must hold, compared with the files) and the
  transactions still open at the end, hence the last stable offset (the first offset of
  the earliest open transaction, else the log end).  A second walk over the same valid
  bytes gives klog ``txn-stat``'s figures: COMMIT/ABORT counts, the size (records and
  batches) and duration (first data batch to marker, by their max timestamps) of each
  finished transaction, markers with no data before them (empty transactions) and open
  transactions with their producer id and epoch.
* Hanging, as ``kafka-transactions.sh find-hanging`` decides it (TransactionsCommand.
  FindHangingTransactionsCommand): an open transaction whose producer's last batch is older
  than ``transaction.max.timeout.ms`` (the command's 15-minute default) at the reference time
  (the latest timestamp found in the log dir, the best clock a copy of files has), and whose
  coordinator does not still list the partition: no state for the producer id, or a state
  that names no partition awaiting a marker (completed, empty, or an ongoing transaction
  without this partition).  An ongoing transaction that lists the partition is not hanging,
  even when timed out: the coordinator aborts it and writes the marker.
* Disagreements: a transaction the coordinator completed whose marker in a partition its
  last PrepareCommit/PrepareAbort record names (present here) is missing after the
  transaction's start or is of the other kind.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segtool.kafka.partition import PartitionView
from segtool.kafka.recovery import ProducerTxnState, recover_segment
from segtool.engine.inventory import any_unreadable
from segtool.findings import FindingKind, finding
from segtool.kafka.coordinator import TRANSACTION_STATES, decode_transaction_record
from segtool.kafka.index import TransactionIndex
from segtool.kafka.log import BatchScan
from segtool.kafka.messages import CoordinatorRecordError
from segtool.kafka.names import PRODUCER_SNAPSHOT, file_name
from segtool.ops.groups import batch_records, is_commit_marker, live_partitions, log_batches, partition_view
from segtool.ops.output_schema import (
    OpenTransaction,
    Stats,
    TransactionalIdState,
    TransactionDisagreement,
    TransactionPartition,
    TransactionsReport,
)

TRANSACTION_TOPIC = "__transaction_state"
DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms: no transaction may stay open longer
_AWAITING_MARKERS = ("Ongoing", "PrepareCommit", "PrepareAbort")


def _stats(values: list[int]) -> Stats:
    if not values:
        return {"count": 0, "min": None, "max": None, "mean": None}
    return {"count": len(values), "min": min(values), "max": max(values), "mean": sum(values) / len(values)}


def _coordinator_states(partitions, problems: list) -> tuple[dict[str, TransactionalIdState], int, list[int]]:
    """Transactional id -> its latest state, the ids deleted by tombstones, and the record timestamps seen."""
    states: dict[str, TransactionalIdState] = {}
    deleted: set[str] = set()
    prepared: dict[str, list] = {}  # transactional id -> the partitions of its last Prepare* record
    timestamps: list[int] = []
    for (topic, number), partition in sorted(partitions.items()):
        view = partition_view(partition) if topic == TRANSACTION_TOPIC else None
        if view is None:
            continue
        for segment, batch in log_batches(view, problems):
            timestamps.append(batch.max_timestamp)
            for record in batch_records(segment, batch, problems):
                try:
                    decoded = decode_transaction_record(bytes(record.key or b""),
                                                        None if record.value is None else bytes(record.value))
                except CoordinatorRecordError as e:
                    problems.append(finding(FindingKind.COORDINATOR_RECORD, batch.position,
                                            f"{segment.log_path}: record at offset {record.offset}: {e.message}",
                                            offset=record.offset))
                    continue
                transactional_id, value = decoded.key["transactionalId"], decoded.value
                if value is None:
                    states.pop(transactional_id, None)
                    deleted.add(transactional_id)
                    continue
                if not 0 <= value["transactionStatus"] < len(TRANSACTION_STATES):
                    problems.append(finding(FindingKind.COORDINATOR_RECORD, batch.position,
                                            f"{segment.log_path}: record at offset {record.offset}: unknown "
                                            f"transaction state id {value['transactionStatus']}", offset=record.offset))
                    continue
                deleted.discard(transactional_id)
                state = TRANSACTION_STATES[value["transactionStatus"]]
                partitions = [{"topic": entry["topic"], "partitions": list(entry["partitionIds"])}
                              for entry in value["transactionPartitions"] or ()]
                if state in ("PrepareCommit", "PrepareAbort"):
                    prepared[transactional_id] = partitions
                states[transactional_id] = {
                    "transactional_id": transactional_id, "producer_id": value["producerId"],
                    "producer_epoch": value["producerEpoch"],
                    "state": state, "partitions": partitions,
                    # a Complete* record lists no partitions: the markers went to the prepared ones
                    "marker_partitions": prepared.get(transactional_id, []),
                    "timeout_ms": value["transactionTimeoutMs"],
                    "start_timestamp": value["transactionStartTimestampMs"],
                    "last_update_timestamp": value["transactionLastUpdateTimestampMs"],
                    "timed_out": False, "coordinator_partition": number, "record_offset": record.offset}
    return states, len(deleted), timestamps


@dataclass
class _Open:
    producer_epoch: int
    first_offset: int
    first_timestamp: int | None
    last_timestamp: int | None  # the producer's last batch (ProducerStateEntry.lastTimestamp)
    records: int = 0
    batches: int = 0


@dataclass
class _Marker:
    commit: bool
    offset: int
    timestamp: int


class _PartitionTransactions:
    """One partition's transactions: recovery's aborted ranges and open transactions, and txn-stat's figures."""

    def __init__(self, topic: str, number: int, view: PartitionView, problems: list):
        self.topic, self.number, self.view = topic, number, view
        first = view.segments[0]
        self.recovered = ProducerTxnState.from_snapshot(
            os.path.join(view.directory, file_name(first.base_offset, PRODUCER_SNAPSHOT)))
        if self.recovered.snapshot_error is not None:
            error = self.recovered.snapshot_error
            problems.append(finding(FindingKind.SNAPSHOT_STRUCTURE, error.offset,
                                    f"{error.path}: {error.message}; Kafka deletes the snapshot and loads the "
                                    "partition without it, so transactions it carried open are not known"))
        # open transactions the snapshot carries in: their data lies before the first segment
        self.open = {pid: _Open(-1, first_offset, None) for pid, first_offset in self.recovered.ongoing.items()}
        self.aborted: list[tuple[int, int, int, int]] = []
        self.commits = self.aborts = 0
        self.sizes: list[int] = []
        self.batch_counts: list[int] = []
        self.durations: list[int] = []
        self.empty: list[dict] = []
        self.last_marker: dict[int, _Marker] = {}  # producer id -> its last marker
        self.transactional = False
        self.max_timestamp: int | None = None
        self.end = first.base_offset
        self.read(problems)

    def read(self, problems: list) -> None:
        for segment in self.view.segments:
            recovery = recover_segment(segment.log, segment.log_path, segment.base_offset, txn_state=self.recovered)
            self.aborted.extend(recovery.aborted_txns)
            self._compare_txn_index(segment, recovery.aborted_txns, problems)
            for batch in BatchScan(segment.log, 0, recovery.valid_bytes, path=segment.log_path):
                self._batch(segment, batch, problems)
            self.end = recovery.next_offset if recovery.next_offset is not None else max(self.end, segment.base_offset)
            if recovery.stop_reason is not None:
                problems.append(finding(
                    FindingKind.RECOVERY_TRUNCATION, recovery.valid_bytes,
                    f"{segment.log_path}: {recovery.stop_message}; Kafka's recovery truncates here, and the "
                    "transactions after it are not counted"))
                return

    def _compare_txn_index(self, segment, aborted: list, problems: list) -> None:
        on_disk = ([(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                    for e in TransactionIndex(segment.txnindex_path).iter_raw()]
                   if os.path.exists(segment.txnindex_path) else [])
        recovered = [tuple(entry) for entry in aborted]
        if on_disk != recovered:
            only_file = [entry for entry in on_disk if entry not in recovered]
            only_records = [entry for entry in recovered if entry not in on_disk]
            problems.append(finding(
                FindingKind.TXN_INDEX_MISMATCH, None,
                f"{segment.txnindex_path}: {len(on_disk)} aborted transactions in the file, {len(recovered)} from "
                f"the segment's control records; (producer id, first, last, last stable offset) only in the file: "
                f"{only_file[:3]}, only from the records: {only_records[:3]}"))

    def _batch(self, segment, batch, problems: list) -> None:
        if batch.max_timestamp >= 0:
            self.max_timestamp = max(self.max_timestamp or 0, batch.max_timestamp)
        if not batch.is_transactional:
            return
        self.transactional = True
        pid = batch.producer_id
        if not batch.is_control:
            txn = self.open.setdefault(pid, _Open(batch.producer_epoch, batch.base_offset, batch.max_timestamp,
                                                  batch.max_timestamp))
            txn.last_timestamp = batch.max_timestamp
            txn.records += batch.record_count
            txn.batches += 1
            return
        commit = is_commit_marker(segment, batch, problems)
        if commit is None:
            return
        self.commits += commit
        self.aborts += not commit
        self.last_marker[pid] = _Marker(commit, batch.last_offset, batch.max_timestamp)
        txn = self.open.pop(pid, None)
        if txn is None:
            self.empty.append({"producer_id": pid, "producer_epoch": batch.producer_epoch,
                               "marker": "COMMIT" if commit else "ABORT", "marker_offset": batch.last_offset,
                               "timestamp": batch.max_timestamp})
            return
        self.sizes.append(txn.records)
        self.batch_counts.append(txn.batches)
        if txn.first_timestamp is not None:
            self.durations.append(batch.max_timestamp - txn.first_timestamp)

    def report(self, open_transactions: list[OpenTransaction]) -> TransactionPartition:
        return {
            "topic": self.topic, "partition": self.number, "directory": self.view.directory,
            "transactional": self.transactional or bool(self.open), "log_end_offset": self.end,
            "last_stable_offset": min(self.recovered.ongoing.values(), default=self.end),
            "commits": self.commits, "aborts": self.aborts,
            "aborted_ranges": [{"producer_id": pid, "first_offset": first, "last_offset": last,
                                "last_stable_offset": lso} for pid, first, last, lso in self.aborted],
            "size_records": _stats(self.sizes), "size_batches": _stats(self.batch_counts),
            "duration_ms": _stats(self.durations), "empty_transactions": self.empty,
            "open_transactions": open_transactions,
        }


def _named(state: TransactionalIdState, topic: str, number: int) -> bool:
    return any(entry["topic"] == topic and number in entry["partitions"] for entry in state["partitions"])


def _why_hanging(txn: _Open, state: TransactionalIdState | None, topic: str, number: int,
                 reference: int | None) -> str | None:
    """find-hanging's verdict: only a transaction idle past the maximum timeout is a candidate,
    and a candidate hangs unless its coordinator still lists the partition."""
    if txn.last_timestamp is None or reference is None or reference - txn.last_timestamp <= DEFAULT_MAX_TIMEOUT_MS:
        return None
    idle = (f"its producer's last batch is {reference - txn.last_timestamp} ms old at the reference time, "
            f"past transaction.max.timeout.ms ({DEFAULT_MAX_TIMEOUT_MS} ms)")
    if state is None:
        return f"no coordinator state names this producer id, and {idle}"
    if state["state"] not in _AWAITING_MARKERS:
        return f"the coordinator's state for this producer is {state['state']}: no marker will come; {idle}"
    if not _named(state, topic, number):
        return f"the coordinator's {state['state']} transaction does not name this partition: no marker will come; {idle}"
    return None


def _disagreement(state: TransactionalIdState, partition: _PartitionTransactions) -> str | None:
    """What the partition shows against a transaction the coordinator completed, None when it agrees."""
    committed = state["state"] == "CompleteCommit"
    pid = state["producer_id"]
    if pid in partition.open:
        return f"an open transaction from offset {partition.open[pid].first_offset}, with no marker"
    marker = partition.last_marker.get(pid)
    if marker is None or marker.timestamp < state["start_timestamp"]:
        return "no marker after the transaction started"
    if marker.commit != committed:
        return f"{'COMMIT' if marker.commit else 'ABORT'} marker at offset {marker.offset}"
    return None


def transactions(log_dir: str) -> TransactionsReport:
    """The transaction coordinator's state and every partition's transactions in ``log_dir``."""
    problems: list = []
    partitions = live_partitions(log_dir, problems)
    states, deleted, timestamps = _coordinator_states(partitions, problems)
    read: list[_PartitionTransactions] = []
    for (topic, number), partition in sorted(partitions.items()):
        view = partition_view(partition)
        if view is not None:
            read.append(_PartitionTransactions(topic, number, view, problems))
    timestamps += [p.max_timestamp for p in read if p.max_timestamp is not None]
    reference = max(timestamps, default=None)
    by_producer = {state["producer_id"]: state for state in states.values()}
    for state in states.values():
        state["timed_out"] = (state["state"] == "Ongoing" and reference is not None
                              and reference - state["start_timestamp"] > state["timeout_ms"])
    reports, disagreements = [], []
    for partition in read:
        open_transactions: list[OpenTransaction] = []
        for pid, txn in sorted(partition.open.items()):
            state = by_producer.get(pid)
            why = _why_hanging(txn, state, partition.topic, partition.number, reference)
            open_transactions.append({
                "producer_id": pid, "producer_epoch": txn.producer_epoch,
                "transactional_id": state["transactional_id"] if state is not None else None,
                "first_offset": txn.first_offset, "first_timestamp": txn.first_timestamp, "records": txn.records,
                "batches": txn.batches, "hanging": why is not None, "why": why})
            if why is not None:
                problems.append(finding(FindingKind.HANGING_TRANSACTION, None,
                                        f"{partition.topic}-{partition.number}: producer {pid} from offset "
                                        f"{txn.first_offset}: {why}", offset=txn.first_offset))
        reports.append(partition.report(open_transactions))
    by_partition = {(p.topic, p.number): p for p in read}
    for state in sorted(states.values(), key=lambda s: s["transactional_id"]):
        if state["state"] not in ("CompleteCommit", "CompleteAbort"):
            continue
        for entry in state["marker_partitions"]:
            for number in entry["partitions"]:
                partition = by_partition.get((entry["topic"], number))
                shows = _disagreement(state, partition) if partition is not None else None
                if shows is None:
                    continue
                message = (f"{state['transactional_id']} (producer {state['producer_id']}) is {state['state']} in "
                           f"the coordinator; {entry['topic']}-{number} shows {shows}")
                item: TransactionDisagreement = {
                    "transactional_id": state["transactional_id"], "producer_id": state["producer_id"],
                    "topic": entry["topic"], "partition": number, "coordinator_state": state["state"],
                    "partition_shows": shows, "message": message}
                disagreements.append(item)
                problems.append(finding(FindingKind.TRANSACTION_DISAGREEMENT, None, message))
    listed = [states[name] for name in sorted(states)]
    open_count = sum(len(r["open_transactions"]) for r in reports)
    return {
        "log_dir": log_dir, "reference_time": reference, "transactional_ids": listed, "partitions": reports,
        "disagreements": disagreements, "problems": problems,
        "summary": {
            "transactional_ids": len(listed), "transactional_ids_deleted": deleted, "partitions": len(reports),
            "transactional_partitions": sum(r["transactional"] for r in reports),
            "commits": sum(r["commits"] for r in reports), "aborts": sum(r["aborts"] for r in reports),
            "open_transactions": open_count,
            "hanging_transactions": sum(t["hanging"] for r in reports for t in r["open_transactions"]),
            "disagreements": len(disagreements)},
    }


def exit_code(report: TransactionsReport) -> int:
    """0 when transactions were found and nothing is wrong; 1 when none were, or a transaction hangs,
    the coordinator and a partition disagree, or another problem was found; 2 when an entry could not be read."""
    if any_unreadable(report["problems"]):
        return 2
    summary = report["summary"]
    found = summary["transactional_ids"] or summary["transactional_partitions"]
    return 0 if found and not report["problems"] else 1
