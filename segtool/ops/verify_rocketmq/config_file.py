"""A broker's ``config/*.json`` (or ``.bak``): does it read as ``ConfigManager.load`` reads it?

The reader is the one ``groups`` uses (``rocketmq.config``: fastjson's dialect, then the
typed contents of the file's kind)."""

from __future__ import annotations

from segtool.findings import FindingKind, finding
from segtool.rocketmq.config import read_config_file


def verify_config(path: str) -> dict:
    read = read_config_file(path)
    if read.error is not None:
        return {"problems": [finding(FindingKind.CONFIG_SYNTAX, read.error.offset, read.error.message)]}
    if read.empty:
        return {"problems": [finding(FindingKind.CONFIG_SYNTAX, 0, "empty file: the broker loads the .bak instead")]}
    return {"problems": []}
