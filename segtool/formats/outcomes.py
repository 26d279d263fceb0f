"""How reading a file ends, and why bytes hold nothing valid: one vocabulary for every reader.

``WalkEnd`` is how a walk over the records of one file stopped: every walker (Kafka's batch
framing, the CommitLog, ConsumeQueue, batch queue, timer log and DLedger walkers) ends with
one, and whoever reads the walk compares members, never spellings.  ``DamageReason`` is why a
range of bytes that reading past damage skips holds no valid batch or message.  The values are
what outputs print (snake_case, like every identifier segtool prints).
"""

from __future__ import annotations

from enum import StrEnum


class WalkEnd(StrEnum):
    END_OF_FILE = "end_of_file"  # the last record ends exactly where the bytes read end
    SHORT_TAIL = "short_tail"  # too few bytes after the last record to start one (zeros or not: see non_zero_after)
    BLANK = "blank"  # the BLANK end-of-file record (CommitLog, timer log, DLedger data)
    ZERO_TAIL = "zero_tail"  # zeros where the next record should start: preallocated space never written
    END_POSITION = "end_position"  # a sparse queue's end-position unit (SparseConsumeQueue.putEndPositionInfo)
    BAD_MAGIC = "bad_magic"  # neither a record's nor a BLANK magic code where a record should start
    TRUNCATED = "truncated"  # the record's size runs past the end of the bytes read
    TORN = "torn"  # the record does not add up and its bytes are zero from some point to the end (torn write)
    CORRUPT = "corrupt"  # the record's fields do not add up
    INVALID = "invalid"  # a batch queue unit recovery refuses (not zeros)
    BAD_UNIT = "bad_unit"  # a timer log unit whose size or magic recoverAndRevise refuses
    BAD_ENTRY = "bad_entry"  # a DLedger entry header recover refuses

    @property
    def damaged(self) -> bool:
        """The walk stopped at a record that cannot be read, not at an end a broker writes."""
        return self in _DAMAGED


_DAMAGED = frozenset({WalkEnd.BAD_MAGIC, WalkEnd.TRUNCATED, WalkEnd.TORN, WalkEnd.CORRUPT, WalkEnd.INVALID,
                      WalkEnd.BAD_UNIT, WalkEnd.BAD_ENTRY})


class DamageReason(StrEnum):
    CRC_MISMATCH = "crc_mismatch"  # framing intact, checksum wrong: the bytes were changed after they were written
    CORRUPT_FRAMING = "corrupt_framing"  # a size, magic or length that no batch or message can have
    TRUNCATED = "truncated"  # a batch or message runs past the end of the file (or of what follows it)
    ZERO_FILLED = "zero_filled"  # zero bytes where data should be (a torn write, a zeroed block)
