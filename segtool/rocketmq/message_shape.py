"""A CommitLog message as every output shows it, declared once (``formats.record_shapes``).

``MESSAGE_FIELDS`` lists, in the order of its JSON (``store_files.decode_message``'s, the bodies
last), every field of a decoded message: its JSON name (snake_case of RocketMQ's Java name), its type, its Parquet
type and dataset column name, and what it means.  ``message_json`` turns a decoded message into
its JSON form by this table; the dump item's TypedDict, the column runs' JSON
(``ops/render.py``), and the Parquet files of scan, carve and salvage take their names and
types from it.
"""

from __future__ import annotations

from segtool.formats.json_names import bytes_fields, snake_case
from segtool.formats.record_shapes import Field, by_name

MESSAGE_FIELDS = (
    Field("file", "file", str, "string", "the CommitLog file holding the message", column="commitlog_file"),
    Field("file_offset", "fileOffset", int, "int64", "byte position of the message in its file"),
    Field("phy_offset", "phyOffset", int, "int64",
          "where the message starts in the CommitLog (file start + position)", column="physical_offset"),
    Field("total_size", "totalSize", int, "int32", "the message record's totalSize"),
    Field("magic", "magic", int, None, "the record's magic code (MESSAGE_MAGIC_CODE or _V2)"),
    Field("version", "version", int, "int8", "record format: 1 (MESSAGE_MAGIC_CODE) or 2 (MESSAGE_MAGIC_CODE_V2)"),
    Field("body_crc", "bodyCRC", int, "int64", "the body CRC as stored"),
    Field("body_crc_computed", "bodyCRCComputed", int, None, "the CRC of the stored body, computed"),
    Field("queue_id", "queueId", int, "int32", "the queue id"),
    Field("flag", "flag", int, "int32", "the producer's flag"),
    Field("queue_offset", "queueOffset", int, "int64", "the message's offset in its ConsumeQueue"),
    Field("physical_offset_field", "physicalOffsetField", int, "int64",
          "the PHYSICALOFFSET field as stored (equals physical_offset when sound)"),
    Field("sys_flag", "sysFlag", int, "int32", "sysFlag bits (compression, transaction type, IPv6 hosts)"),
    Field("transaction_type", "transactionType", int, None, "the sysFlag's transaction type bits"),
    Field("compressed", "compressed", bool, "bool_", "the body is compressed (sysFlag bit 0)"),
    Field("born_timestamp", "bornTimestamp", int, "int64", "born timestamp, ms"),
    Field("born_host", "bornHost", str, "string", "born host:port"),
    Field("store_timestamp", "storeTimestamp", int, "int64", "store timestamp, ms"),
    Field("store_host", "storeHost", str, "string", "store host:port"),
    Field("reconsume_times", "reconsumeTimes", int, "int32", "reconsume times"),
    Field("prepared_transaction_offset", "preparedTransactionOffset", int, "int64", "prepared transaction offset"),
    Field("body_offset", "bodyOffset", int, None, "byte position of the body in its file"),
    Field("body_length", "bodyLength", int, "int32",
          "stored body length (compressed length for compressed bodies)", column="body_size"),
    Field("topic", "topic", str, "string", "the topic"),
    Field("properties", "properties", dict[str, str], "string_map", "all properties: map<string, string>"),
    Field("offset_msg_id", "offsetMsgId", str, "string",
          "offsetMsgId (store host + port + physical offset, hex), as RocketMQ prints it", column="msg_id"),
    Field("uniq_key", "UNIQ_KEY", str | None, "string",
          "the UNIQ_KEY property (client message id), null when absent"),
    Field("keys", "KEYS", str | None, "string", "the KEYS property (space-separated keys), null when absent"),
    Field("tags", "TAGS", str | None, "string", "the TAGS property, null when absent"),
    Field("body_sha256", "bodySha256", str, "string", "sha256 of the stored body, hex", required=False),
    Field("compression", "compression", str, "string", "zlib, lz4 or zstd for a compressed body", required=False),
    Field("body_decompress_error", "bodyDecompressError", str, None,
          "why a compressed body does not decompress", required=False),
    Field("body_decompressed_length", "bodyDecompressedLength", int, "int32",
          "decompressed body length (compressed bodies that decompress), else null", required=False,
          column="body_uncompressed_size"),
    Field("body_decompressed_sha256", "bodyDecompressedSha256", str, None,
          "sha256 of the decompressed body, hex", required=False),
    Field("dispatch", "dispatch", "MessageDispatch", None,
          "what CommitLog.checkMessageAndReturnSize hands the dispatcher"),
    Field("prop_crc", "propCRC", int, None, "5.x: the CRC32 property's value", required=False),
    Field("prop_crc_computed", "propCRCComputed", int, None,
          "5.x: the CRC32 of the record up to its reserved tail, computed", required=False),
    Field("body", "body", str | None, "binary", "the stored body as UTF-8 text when it is (Parquet: its bytes)",
          required=False),
    Field("body_b64", "body", str | None, None, "the stored body's bytes in base64", required=False),
    Field("body_decompressed", "bodyDecompressed", str | None, None,
          "the decompressed body as UTF-8 text when it is", required=False),
    Field("body_decompressed_b64", "bodyDecompressed", str | None, None,
          "the decompressed body's bytes in base64", required=False),
)
MESSAGE = by_name(MESSAGE_FIELDS)
MESSAGE_COLUMNS = {field.column_name: field for field in MESSAGE_FIELDS if field.arrow}  # by dataset column name
BYTES_FIELDS = ("body", "body_decompressed")  # bytes: as UTF-8 text and as base64 (``<name>_b64``) in JSON

# reversed: a body's first field, its text, names its source (its ``_b64`` follows it)
_JSON_NAME = {field.source: field.name for field in reversed(MESSAGE_FIELDS)}
_BYTES_SOURCES = {MESSAGE[name].source: name for name in BYTES_FIELDS}


def message_json(msg: dict) -> dict:
    """A decoded CommitLog message (kept with ``keep_body``) as every command shows it: the table's
    names in the decoder's order, the bodies last as text and base64, the dispatch in snake_case."""
    item = dict(zip(map(_JSON_NAME.__getitem__, msg), msg.values()))  # a decoder field not in the table: KeyError
    dispatch = item.get("dispatch")
    if dispatch is not None:
        item["dispatch"] = dict(zip(map(snake_case, dispatch), dispatch.values()))
    for source, name in _BYTES_SOURCES.items():
        if source in msg:
            del item[name]
    for source, name in _BYTES_SOURCES.items():
        if source in msg:
            item.update(bytes_fields(name, msg[source]))
    return item


def message_item(msg: dict) -> dict:
    """A decoded CommitLog message as a dump item (``message_json``; its file is the item's, added by the dump)."""
    msg.pop("file", None)
    return {"kind": "message", **message_json(msg)}
