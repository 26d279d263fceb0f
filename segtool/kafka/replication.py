"""How Kafka's replicas of one partition converge: the broker's own rules, applied offline.

A follower holds the leader's batches byte for byte (same base offset, leader epoch and CRC), so two
copies agree up to a first differing batch.  Which records a replica drops when another becomes leader
is decided by three pieces of Kafka 3.9 modelled here:

* ``Partition.makeLeader``: the new leader caches its new epoch at its log end offset
  (``UnifiedLog.maybeAssignEpochStartOffset`` → ``LeaderEpochFileCache.assign``) before any follower asks;
* ``LeaderEpochFileCache.endOffsetFor``: how the leader answers OffsetsForLeaderEpoch (and the divergence
  check of a fetch carrying ``lastFetchedEpoch``, which answers from the same cache);
* ``AbstractFetcherThread.getOffsetTruncationState``: where the follower truncates on that answer, over as
  many rounds as it takes; a follower without epochs truncates to its high watermark
  (``ReplicaManager.initialFetchOffset`` and ``truncateToHighWatermark``), and a fetch from beyond the
  leader's log end is reset to it (``fetchOffsetAndTruncate``).

What each replica holds, as batch header columns, and where two copies part: ``kafka.replica_batches``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from enum import StrEnum

from segtool.kafka.state import EpochEntry

# OffsetsForLeaderEpochResponse's "unknown" values (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


# -- LeaderEpochFileCache ---------------------------------------------------------------------------

def end_offset_for(cache: list[EpochEntry], requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset) answered for ``requested_epoch``."""
    if requested_epoch == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if cache and cache[-1].epoch == requested_epoch:
        return requested_epoch, log_end_offset
    epochs = [entry.epoch for entry in cache]
    higher = bisect.bisect_right(epochs, requested_epoch)
    if higher == len(cache):
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if higher == 0:  # below every known epoch: the start of the first one above it
        return requested_epoch, cache[0].start_offset
    return cache[higher - 1].epoch, cache[higher].start_offset


def assign(cache: list[EpochEntry], epoch: int, start_offset: int) -> list[EpochEntry]:
    """``LeaderEpochFileCache.assign``: appended unless it is the latest entry already; entries it would
    make non-monotonic (``maybeTruncateNonMonotonicEntries``) are removed first."""
    if cache and not (epoch != cache[-1].epoch or start_offset < cache[-1].start_offset):
        return cache
    kept = list(cache)
    while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
        kept.pop()
    return kept + [EpochEntry(epoch, start_offset)]


def truncate_from_end(cache: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """``LeaderEpochFileCache.truncateFromEnd``: entries starting at or after ``end_offset`` go."""
    return [entry for entry in cache if entry.start_offset < end_offset]


def truncate_from_start(cache: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """``LeaderEpochFileCache.truncateFromStart``: entries starting at or below ``start_offset`` go, the
    latest of them kept and moved to start there."""
    below = [entry for entry in cache if entry.start_offset <= start_offset]
    if not below:
        return list(cache)
    return [EpochEntry(below[-1].epoch, start_offset)] + [e for e in cache if e.start_offset > start_offset]


# -- getOffsetTruncationState -------------------------------------------------------------------------

class TruncationRule(StrEnum):
    """Which branch of the follower's code decided a truncation (the value is what outputs print)."""

    EPOCHS_MATCH = "epochs_match"  # the follower knows the epoch the leader answered: the lower end of it
    EPOCH_UNKNOWN_TO_FOLLOWER = "epoch_unknown_to_follower"  # truncate to the follower's end of a lower epoch, ask again
    BELOW_FOLLOWER_EPOCHS = "below_follower_epochs"  # the follower has no entry at or below the answer: the leader's offset
    LEADER_OFFSET_UNDEFINED = "leader_offset_undefined"  # the leader knows no end offset: the initial fetch offset
    LEADER_EPOCH_UNDEFINED = "leader_epoch_undefined"  # an old protocol answer without an epoch: the leader's offset
    HIGH_WATERMARK = "high_watermark"  # a follower without epochs: truncateToHighWatermark
    LEADER_LOG_END = "leader_log_end"  # fetching past the leader's log end: fetchOffsetAndTruncate
    BELOW_LEADER_LOG_START = "below_leader_log_start"  # the follower ends before the leader's log start: truncated fully


@dataclass(frozen=True)
class TruncationRound:
    """One exchange: the epoch the follower asks for, the leader's answer, where the follower truncates."""

    requested_epoch: int | None
    leader_epoch: int | None
    leader_end_offset: int | None
    truncate_to: int
    completed: bool
    rule: TruncationRule


def offset_truncation_state(leader_epoch: int, leader_end_offset: int, follower_cache: list[EpochEntry],
                            follower_log_end: int, fetch_offset: int) -> tuple[int, bool, TruncationRule]:
    """``AbstractFetcherThread.getOffsetTruncationState``: (offset, truncation completed, branch)."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return fetch_offset, True, TruncationRule.LEADER_OFFSET_UNDEFINED
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, follower_log_end), True, TruncationRule.LEADER_EPOCH_UNDEFINED
    # UnifiedLog.endOffsetForEpoch: the follower's own answer for the leader's epoch, None when undefined
    follower_epoch, follower_end = end_offset_for(follower_cache, leader_epoch, follower_log_end)
    if follower_end == UNDEFINED_EPOCH_OFFSET:
        return min(leader_end_offset, follower_log_end), True, TruncationRule.BELOW_FOLLOWER_EPOCHS
    if follower_epoch != leader_epoch:
        return min(follower_end, follower_log_end), False, TruncationRule.EPOCH_UNKNOWN_TO_FOLLOWER
    return min(follower_end, leader_end_offset, follower_log_end), True, TruncationRule.EPOCHS_MATCH


@dataclass(frozen=True)
class ReplicaEpochs:
    """What the epoch exchange reads of a replica: its loaded leader-epoch cache and offsets."""

    cache: tuple[EpochEntry, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int


@dataclass(frozen=True)
class Resync:
    """Where a follower's log ends once it has truncated to its new leader, and how it got there."""

    truncate_to: int
    rounds: tuple[TruncationRound, ...]
    fully_truncated: bool  # it ended before the leader's log start: every segment goes

    @property
    def rules(self) -> list[str]:
        return [r.rule.value for r in self.rounds]


def elected(candidate: ReplicaEpochs, new_epoch: int) -> ReplicaEpochs:
    """The candidate as leader: ``Partition.makeLeader`` caches ``new_epoch`` at its log end offset."""
    cache = assign(list(candidate.cache), new_epoch, candidate.log_end_offset)
    return ReplicaEpochs(tuple(cache), candidate.log_start_offset, candidate.log_end_offset, candidate.high_watermark)


def resync(leader: ReplicaEpochs, follower: ReplicaEpochs) -> Resync:
    """The follower's truncation when it starts fetching from ``leader`` (already ``elected``)."""
    cache, log_end = list(follower.cache), follower.log_end_offset
    rounds: list[TruncationRound] = []
    if not cache:  # ReplicaManager.initialFetchOffset: no epochs, fetch from the high watermark, truncate there
        target = min(follower.high_watermark, log_end)
        rounds.append(TruncationRound(None, None, None, target, True, TruncationRule.HIGH_WATERMARK))
        log_end = target
    fetch_offset = log_end
    while cache and (not rounds or not rounds[-1].completed):
        requested = cache[-1].epoch
        leader_epoch, leader_end = end_offset_for(list(leader.cache), requested, leader.log_end_offset)
        target, completed, rule = offset_truncation_state(leader_epoch, leader_end, cache, log_end, fetch_offset)
        rounds.append(TruncationRound(requested, leader_epoch, leader_end, target, completed, rule))
        log_end = min(log_end, target)
        cache = truncate_from_end(cache, log_end)
        fetch_offset = log_end
        if not completed and not cache:  # no epochs left: truncateToHighWatermark at the fetch offset
            rounds.append(TruncationRound(None, None, None, log_end, True, TruncationRule.HIGH_WATERMARK))
    fully = False
    if log_end > leader.log_end_offset:  # OFFSET_OUT_OF_RANGE on the first fetch
        log_end = leader.log_end_offset
        rounds.append(TruncationRound(None, None, leader.log_end_offset, log_end, True,
                                      TruncationRule.LEADER_LOG_END))
    elif log_end < leader.log_start_offset:
        fully = True
        rounds.append(TruncationRound(None, None, leader.log_start_offset, log_end, True,
                                      TruncationRule.BELOW_LEADER_LOG_START))
    return Resync(log_end, tuple(rounds), fully)
