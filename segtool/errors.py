"""Errors that carry the file and byte offset where an input went wrong.

Every reader raises these (never a bare struct.error or IndexError) so the CLI
can print one line naming the file and offset and exit with code 2.
"""

from __future__ import annotations


class SegtoolError(Exception):
    """Base class: a problem with an input, reported in one line."""

    def __init__(self, message: str, path: str | None = None, offset: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset

    def at(self, path: str | None = None, offset: int | None = None) -> "SegtoolError":
        """Fill in the file and offset when a lower layer did not know them."""
        if self.path is None:
            self.path = path
        if self.offset is None:
            self.offset = offset
        return self

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return ": ".join(where + [self.message])


class CorruptData(SegtoolError):
    """Bytes that do not decode as the format says they must."""


class TruncatedData(CorruptData):
    """The input ends inside a structure."""


class LimitExceeded(CorruptData):
    """A length or decompressed size beyond the configured cap."""


class UnreadableInput(SegtoolError):
    """Missing, unreadable or unrecognised input (exit code 2)."""


class NothingFound(SegtoolError):
    """The inputs are readable but hold nothing this command works on (exit code 1); ``skipped`` names
    each file that was looked at, with why it was left (the error report lists them)."""

    def __init__(self, message: str, path: str | None = None, offset: int | None = None,
                 skipped: list[dict] | None = None):
        super().__init__(message, path, offset)
        self.skipped = skipped or []


class UsageError(SegtoolError):
    """Options that do not fit together or do not fit the input (exit code 2)."""
