"""What a long command tells the one progress bar of its run (``cli._Progress`` draws it on a terminal).

An op that reads many files takes ``progress: RunProgress | None``: it names the files it will
read and their sizes once (``plan``), then each file as it starts it (``file``), whose callback it
calls with the bytes done in that file as often as it likes (the bar throttles, not the op).
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol


class RunProgress(Protocol):
    def plan(self, files: Iterable[tuple[str, int]]) -> None:
        """The files of the run, ``(path, size)``, before the first is started (may be called again to add more)."""

    def file(self, path: str) -> Callable[[int], None]:
        """``path`` is started (the one before it is done); returns ``advance(bytes done in this file)``."""
