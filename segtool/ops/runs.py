"""Stretches of a file that print alike, kept as columns: what ``dump`` yields for a clean run of
Kafka batches (``BatchRun``) or of plain RocketMQ messages (``MessageRun``) instead of an item
per batch, record or message, for ``render.run_text_lines`` / ``run_json_lines`` to print a
column at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from segtool.kafka.record_columns import ChunkRecords
    from segtool.rocketmq.store_files import MessageColumns


class BatchRun:
    """Consecutive v2 batches of one chunk that print alike (valid CRC, not control, records decoded
    in ``records`` when deep): the items ``dump_kafka_log`` gives for them, kept as columns.

    ``render.run_json_lines`` and ``render.run_text_lines`` print them a column at a time;
    ``column`` holds the header fields (int64 arrays, with ``position`` and ``size``),
    ``record_bounds`` batch i's records as ``record_bounds[i]:record_bounds[i + 1]`` of ``records``.
    """

    __slots__ = ("file", "column", "records", "record_bounds")

    def __init__(self, file: str, column: dict, records: ChunkRecords | None, record_bounds):
        self.file, self.column, self.records, self.record_bounds = file, column, records, record_bounds


class MessageRun:
    """Consecutive plain RocketMQ messages of one CommitLog file (``rocketmq.store_files.MessageColumns``):
    the message items ``dump_rocketmq_file`` gives for them, kept as columns, printed a column at a
    time by ``render.run_text_lines`` and ``run_json_lines``.  ``file_from_offset``: the file's
    first physical offset."""

    __slots__ = ("file", "file_from_offset", "columns")

    def __init__(self, file: str, file_from_offset: int, columns: MessageColumns):
        self.file, self.file_from_offset, self.columns = file, file_from_offset, columns
