"""Kafka 3.9's replication rules (segtool.kafka.replication), each branch on hand-made caches.

Every expected value is worked out from the rule of the source named in the test, not from segtool.
"""

import pytest

from segtool.kafka.replication import (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, ReplicaEpochs, TruncationRule,
                                       assign, elected, end_offset_for, offset_truncation_state, resync,
                                       truncate_from_end, truncate_from_start)
from segtool.kafka.state import EpochEntry as E


CACHE = [E(0, 0), E(2, 100), E(5, 250)]


@pytest.mark.parametrize("requested, log_end, expected", [
    # LeaderEpochFileCache.endOffsetFor, branch by branch
    (UNDEFINED_EPOCH, 300, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),  # an undefined request
    (5, 300, (5, 300)),  # the latest epoch: the log end offset
    (7, 300, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),  # above every epoch: no higherEntry
    (2, 300, (2, 250)),  # a known epoch: itself, ending where the next one starts
    (3, 300, (2, 250)),  # between epochs: the floor epoch, ending where the higher one starts
    (1, 300, (0, 100)),
])
def test_end_offset_for_each_branch(requested, log_end, expected):
    assert end_offset_for(CACHE, requested, log_end) == expected


def test_end_offset_for_below_every_epoch_answers_the_requested_epoch():
    # LeaderEpochFileCache.endOffsetFor: floorEntry null -> (requestedEpoch, first higher entry's start offset)
    assert end_offset_for([E(3, 40), E(4, 90)], 1, 120) == (1, 40)


def test_assign_keeps_the_cache_monotonic():
    # LeaderEpochFileCache.assign: isUpdateNeeded, then maybeTruncateNonMonotonicEntries removes from the end every
    # entry whose epoch >= the new one or whose start offset >= the new one
    assert assign(CACHE, 5, 250) == CACHE  # the latest entry again: no update
    assert assign(CACHE, 5, 240) == [E(0, 0), E(2, 100), E(5, 240)]  # same epoch, earlier start: replaced
    assert assign(CACHE, 6, 300) == CACHE + [E(6, 300)]
    assert assign(CACHE, 6, 250) == [E(0, 0), E(2, 100), E(6, 250)]  # epoch 5 started at 250: removed
    assert assign(CACHE, 4, 400) == [E(0, 0), E(2, 100), E(4, 400)]  # epoch 5 >= 4: removed


def test_truncate_from_end_and_start():
    # truncateFromEnd removes entries starting at or after the offset; truncateFromStart keeps the latest entry at
    # or below the offset, moved to start there
    assert truncate_from_end(CACHE, 250) == [E(0, 0), E(2, 100)]
    assert truncate_from_end(CACHE, 251) == CACHE
    assert truncate_from_start(CACHE, 120) == [E(2, 120), E(5, 250)]
    assert truncate_from_start(CACHE, 0) == CACHE


def test_offset_truncation_state_each_branch():
    # AbstractFetcherThread.getOffsetTruncationState
    follower = [E(0, 0), E(2, 100), E(4, 180)]
    # the leader knows no end offset: truncate to the fetch offset (the initial one)
    assert offset_truncation_state(3, UNDEFINED_EPOCH_OFFSET, follower, 200, 150) == (
        150, True, TruncationRule.LEADER_OFFSET_UNDEFINED)
    # an answer without an epoch (protocol before IBP 2.0): min(leader's offset, replica end)
    assert offset_truncation_state(UNDEFINED_EPOCH, 170, follower, 200, 200) == (
        170, True, TruncationRule.LEADER_EPOCH_UNDEFINED)
    # the follower knows the epoch answered: min(follower's end for it, leader's end, replica end)
    assert offset_truncation_state(2, 160, follower, 200, 200) == (160, True, TruncationRule.EPOCHS_MATCH)
    assert offset_truncation_state(2, 190, follower, 200, 200) == (180, True, TruncationRule.EPOCHS_MATCH)
    # the leader answers epoch 3, which the follower never had: truncate to the follower's end of epoch 2 (where
    # epoch 4 starts) and ask again
    assert offset_truncation_state(3, 190, follower, 200, 200) == (
        180, False, TruncationRule.EPOCH_UNKNOWN_TO_FOLLOWER)
    # the follower's endOffsetForEpoch is None (it tracks no epoch there): the leader's offset
    assert offset_truncation_state(3, 120, [], 200, 200) == (120, True, TruncationRule.BELOW_FOLLOWER_EPOCHS)


def _replica(cache, log_end, high_watermark=0, log_start=0):
    return ReplicaEpochs(tuple(cache), log_start, log_end, high_watermark)


def test_make_leader_caches_the_new_epoch_at_the_log_end():
    # Partition.makeLeader: leaderLog.maybeAssignEpochStartOffset(leaderEpoch, leaderLog.logEndOffset)
    leader = elected(_replica([E(0, 0), E(1, 50)], 80), 2)
    assert leader.cache == (E(0, 0), E(1, 50), E(2, 80))


def test_resync_unclean_election_truncates_the_old_leader_to_the_new_epoch_start():
    # the old leader wrote epoch 0 to 120; the follower (end 100) is elected with epoch 1 at 100: asked for epoch 0
    # the new leader answers (0, 100) and the old leader truncates to min(120, 100, 120) = 100
    new_leader = elected(_replica([E(0, 0)], 100), 1)
    outcome = resync(new_leader, _replica([E(0, 0)], 120, high_watermark=110))
    assert outcome.truncate_to == 100
    assert [r.rule for r in outcome.rounds] == [TruncationRule.EPOCHS_MATCH]
    assert outcome.rounds[0].requested_epoch == 0 and outcome.rounds[0].leader_end_offset == 100


def test_resync_takes_several_rounds_when_the_follower_holds_epochs_the_leader_never_had():
    # follower: 0@0 1@40 3@70, end 90; leader: 0@0 2@50, end 60, elected with epoch 4 at 60.
    # round 1: asks 3 -> leader answers (2, 60); follower's endOffsetFor(2) = (1, 70): epoch 1 != 2, truncate to 70
    # round 2: asks 1 -> leader answers (0, 50); follower's endOffsetFor(0) = (0, 40): 0 != 0? equal -> min(40, 50,
    # 70) = 40, completed
    leader = elected(_replica([E(0, 0), E(2, 50)], 60), 4)
    outcome = resync(leader, _replica([E(0, 0), E(1, 40), E(3, 70)], 90))
    assert [(r.requested_epoch, r.leader_epoch, r.leader_end_offset, r.truncate_to, r.rule) for r in outcome.rounds] \
        == [(3, 2, 60, 70, TruncationRule.EPOCH_UNKNOWN_TO_FOLLOWER), (1, 0, 50, 40, TruncationRule.EPOCHS_MATCH)]
    assert outcome.truncate_to == 40


def test_resync_without_epochs_truncates_to_the_high_watermark():
    # ReplicaManager.initialFetchOffset: no latest epoch -> the fetch starts at the high watermark, and
    # AbstractFetcherThread.truncateToHighWatermark truncates there
    leader = elected(_replica([E(0, 0)], 100), 1)
    outcome = resync(leader, _replica([], 120, high_watermark=90))
    assert outcome.truncate_to == 90
    assert [r.rule for r in outcome.rounds] == [TruncationRule.HIGH_WATERMARK]


def test_resync_from_past_the_leaders_end_is_reset_to_it():
    # AbstractFetcherThread.fetchOffsetAndTruncate: a follower without epochs whose high watermark lies past the new
    # leader's log end gets OFFSET_OUT_OF_RANGE and truncates to the leader's end
    leader = elected(_replica([E(0, 0)], 70), 1)
    outcome = resync(leader, _replica([], 120, high_watermark=90))
    assert outcome.truncate_to == 70
    assert [r.rule for r in outcome.rounds] == [TruncationRule.HIGH_WATERMARK, TruncationRule.LEADER_LOG_END]


def test_resync_of_a_follower_ending_before_the_leaders_log_start_truncates_fully():
    # fetchOffsetAndTruncate: leaderStartOffset > replicaEndOffset -> truncateFullyAndStartAt(leaderStartOffset)
    leader = elected(_replica([E(0, 0)], 500, log_start=300), 1)
    outcome = resync(leader, _replica([E(0, 0)], 200))
    assert outcome.fully_truncated
    assert outcome.rounds[-1].rule is TruncationRule.BELOW_LEADER_LOG_START


def test_an_in_sync_follower_keeps_its_log():
    # the follower's epochs all known to the leader and its end at or below the leader's: min(...) = its own end
    leader = elected(_replica([E(0, 0), E(1, 30)], 100), 2)
    outcome = resync(leader, _replica([E(0, 0), E(1, 30)], 100))
    assert outcome.truncate_to == 100 and not outcome.fully_truncated
