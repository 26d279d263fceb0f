"""RocketMQ broker config files: ``<storePathRootDir>/config/*.json`` and their ``.bak`` copies.

Which class writes and reads each file (``BrokerPathConfigHelper`` / ``StorePathConfigHelper``
name them; every one is a ``ConfigManager``)::

    topics.json             TopicConfigManager        {dataVersion, topicConfigTable: {topic: TopicConfig}}
    consumerOffset.json     ConsumerOffsetManager     {offsetTable: {"topic@group": {queueId: offset}},
                                                       dataVersion (5.x)}
    subscriptionGroup.json  SubscriptionGroupManager  {dataVersion, subscriptionGroupTable: {group: config},
                                                       forbiddenTable (5.x)}
    delayOffset.json        ScheduleMessageService    DelayOffsetSerializeWrapper {offsetTable: {level: offset},
                                                       dataVersion (5.x)}
    consumerFilter.json     ConsumerFilterManager     {filterDataByTopic: {topic: {topic, groupFilterData:
                                                       {group: ConsumerFilterData}}}}

The broker writes them with fastjson 1.x (``RemotingSerializable.toJson(obj, prettyFormat=true)``)
and reads them with ``JSON.parseObject`` under fastjson's default parser features.  That is not
JSON: a ``Map<Integer, Long>`` (the queue ids of ``offsetTable``, the delay levels of
``delayOffset.json``) is written with bare numeric keys (``{0:250,1:250}``), and the parser
also accepts unquoted field names and single-quoted strings (AllowUnQuotedFieldNames,
AllowSingleQuotes), runs of commas (AllowArbitraryCommas), ``/* */`` and ``//`` comments and
a leading byte-order mark.  ``parse_fastjson`` reads that dialect; strict JSON parsers and
JSON5 (whose bare keys must be identifiers) refuse every non-empty ``consumerOffset.json``.

``ConfigManager.load``: an empty file, or one that does not decode, makes the broker load the
``.bak`` instead (5.x deletes the bad file first); when the ``.bak`` fails too, the broker does
not start.  ``ConfigManager.persist`` (4.9: ``MixAll.string2File``; 5.x: a move to ``.bak``)
leaves the previous version in the ``.bak``: a ``.bak`` that differs from its file shows what
the last persist changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from segtool.errors import CorruptData, SegtoolError, UnreadableInput
from segtool.rocketmq.names import BACKUP_SUFFIX, CONFIG_DIR

TOPIC_GROUP_SEPARATOR = "@"  # ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"  # MixAll.DLQ_GROUP_TOPIC_PREFIX
MAX_NESTING = 256  # deeper input is refused instead of exhausting the stack

# -------------------------------------------------------------------------------------------
# The fastjson dialect
# -------------------------------------------------------------------------------------------

_WHITESPACE = " \t\n\r\f\b"  # JSONLexer's isWhitespace
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?([LSBFD]?)")
_IDENTIFIER = re.compile(r"[A-Za-z_$\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*")
_KEYWORDS = {"true": True, "false": False, "null": None, "undefined": None}
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "F": "\f", "n": "\n", "r": "\r",
            "t": "\t", "v": "\v"}


class _Parser:
    """Recursive descent over the decoded text; ``error`` turns a character position into the
    file's byte offset (the text is decoded with surrogateescape so the mapping is exact)."""

    def __init__(self, text: str, path: str | None):
        self.text = text
        self.pos = 0
        self.path = path

    def byte(self, pos: int) -> int:
        return len(self.text[:pos].encode("utf-8", "surrogateescape"))

    def error(self, message: str, pos: int | None = None) -> CorruptData:
        return CorruptData(message, self.path, self.byte(self.pos if pos is None else pos))

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WHITESPACE:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error(f"the text ends inside the /* comment opened at byte {self.byte(self.pos)}", n)
                self.pos = end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def document(self) -> Any:
        if self.text.startswith("\ufeff"):
            self.pos = 1
        value = self.value(0)
        if self.peek():
            raise self.error(f"unexpected {self.text[self.pos]!r} after the end of the JSON text")
        return value

    def value(self, depth: int) -> Any:
        if depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels")
        c = self.peek()
        if not c:
            raise self.error("the text ends where a value should start")
        if c == "{":
            return self.object(depth)
        if c == "[":
            return self.array(depth)
        if c in "\"'":
            return self.string()
        if c == "-" or c.isdigit():
            return self.number()
        match = _IDENTIFIER.match(self.text, self.pos)
        if match and match.group() in _KEYWORDS:
            self.pos = match.end()
            return _KEYWORDS[match.group()]
        raise self.error(f"unexpected {c!r} where a value should start")

    def object(self, depth: int) -> dict:
        start = self.pos
        self.pos += 1
        result: dict = {}
        while True:
            c = self.peek()
            if c == ",":  # AllowArbitraryCommas: empty members are skipped
                self.pos += 1
                continue
            if c == "}":
                self.pos += 1
                return result
            if not c:
                raise self.error(f"the text ends inside the object opened at byte {self.byte(start)}")
            key = self.key()
            if self.peek() != ":":
                raise self.error("expected ':' after an object key")
            self.pos += 1
            result[key] = self.value(depth + 1)  # a repeated key: the last one wins (Map.put)
            c = self.peek()
            if c not in ",}":
                raise self.error("expected ',' or '}' after an object member" if c else
                                 "the text ends inside an object")

    def key(self) -> str | int | float:
        c = self.text[self.pos]
        if c in "\"'":
            return self.string()
        if c == "-" or c.isdigit():  # Map<Integer, ...> keys are written bare
            return self.number()
        match = _IDENTIFIER.match(self.text, self.pos)  # AllowUnQuotedFieldNames
        if not match:
            raise self.error(f"unexpected {c!r} where an object key should start")
        self.pos = match.end()
        return match.group()

    def array(self, depth: int) -> list:
        start = self.pos
        self.pos += 1
        result: list = []
        while True:
            c = self.peek()
            if c == ",":
                self.pos += 1
                continue
            if c == "]":
                self.pos += 1
                return result
            if not c:
                raise self.error(f"the text ends inside the array opened at byte {self.byte(start)}")
            result.append(self.value(depth + 1))
            c = self.peek()
            if c not in ",]":
                raise self.error("expected ',' or ']' after an array element" if c else
                                 "the text ends inside an array")

    def number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if not match:
            raise self.error("a '-' that starts no number")
        self.pos = match.end()
        digits = match.group()[: len(match.group()) - len(match.group(3))]
        if match.group(1) or match.group(2) or match.group(3) in ("F", "D"):
            return float(digits)
        return int(digits)

    def string(self) -> str:
        text, quote, start = self.text, self.text[self.pos], self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            end = self.pos
            while end < len(text) and text[end] != quote and text[end] != "\\":
                end += 1
            out.append(text[self.pos:end])
            if end >= len(text):
                self.pos = end
                raise self.error(f"the text ends inside the string opened at byte {self.byte(start)}")
            self.pos = end + 1
            if text[end] == quote:
                # bytes that are not UTF-8 read as U+FFFD, as Java's decoder leaves them
                return re.sub("[\udc80-\udcff]", "\ufffd", "".join(out))
            escape = text[self.pos:self.pos + 1]
            if escape in _ESCAPES:
                out.append(_ESCAPES[escape])
                self.pos += 1
            elif escape == "u" or escape == "x":
                width = 4 if escape == "u" else 2
                hex_digits = text[self.pos + 1:self.pos + 1 + width]
                if len(hex_digits) != width or not all(h in "0123456789abcdefABCDEF" for h in hex_digits):
                    raise self.error(f"bad \\{escape} escape in a string", end)
                out.append(chr(int(hex_digits, 16)))
                self.pos += 1 + width
            elif escape in "01234567" and escape:
                out.append(chr(int(escape)))
                self.pos += 1
            else:
                raise self.error(f"bad escape \\{escape} in a string", end)


def parse_fastjson(data: bytes, path: str | None = None) -> Any:
    """The value fastjson's default parser reads from ``data`` (UTF-8): dicts (keys str, or int
    for bare numeric keys), lists, str, int, float, bool, None.  CorruptData at the byte where
    the text stops making sense; None for an empty file (the broker then loads the ``.bak``)."""
    text = data.decode("utf-8", "surrogateescape")
    if not text.strip(_WHITESPACE + "\ufeff"):
        return None
    return _Parser(text, path).document()


# -------------------------------------------------------------------------------------------
# Typed contents
# -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataVersion:
    """``DataVersion``: bumped on every change of the table it guards."""

    timestamp: int | None
    counter: int | None
    state_version: int | None  # 5.x


@dataclass
class TopicConfig:
    topic_name: str | None
    read_queue_nums: int | None
    write_queue_nums: int | None
    perm: int | None  # PermName bits: 2 write, 4 read, 1 inherit
    topic_filter_type: str | None
    topic_sys_flag: int | None
    order: bool | None
    attributes: dict  # 5.x
    other_fields: dict  # fields this reader does not know, as written


@dataclass
class TopicConfigs:
    """``topics.json``: ``TopicConfigSerializeWrapper``."""

    data_version: DataVersion | None
    topic_config_table: dict[str, TopicConfig]
    other_fields: dict


@dataclass
class ConsumerOffsets:
    """``consumerOffset.json``: ``ConsumerOffsetManager``'s committed offsets."""

    offset_table: dict[str, dict[int, int]]  # "topic@group" -> {queue id: committed offset}
    data_version: DataVersion | None  # 5.x
    other_fields: dict

    def by_topic_group(self) -> dict[tuple[str, str], dict[int, int]]:
        """(topic, group) -> offsets for every key the broker matches to a group."""
        return {pair: offsets for key, offsets in self.offset_table.items()
                if (pair := topic_group(key)) is not None}


@dataclass
class SubscriptionGroupConfig:
    group_name: str | None
    consume_enable: bool | None
    consume_from_min_enable: bool | None
    consume_broadcast_enable: bool | None
    retry_queue_nums: int | None
    retry_max_times: int | None
    broker_id: int | None
    which_broker_when_consume_slowly: int | None
    notify_consumer_ids_changed_enable: bool | None
    other_fields: dict  # 5.x's consumeMessageOrderly, groupRetryPolicy, attributes, ... as written


@dataclass
class SubscriptionGroups:
    """``subscriptionGroup.json``: ``SubscriptionGroupManager``."""

    data_version: DataVersion | None
    subscription_group_table: dict[str, SubscriptionGroupConfig]
    other_fields: dict  # 5.x's forbiddenTable, as written


@dataclass
class DelayOffsets:
    """``delayOffset.json``: ``ScheduleMessageService``'s progress per delay level (its
    SCHEDULE_TOPIC_XXXX queue id is the level - 1)."""

    offset_table: dict[int, int]  # delay level -> next queue offset to deliver
    data_version: DataVersion | None  # 5.x
    other_fields: dict


@dataclass
class ConsumerFilterData:
    consumer_group: str | None
    topic: str | None
    expression: str | None
    expression_type: str | None
    born_time: int | None
    dead_time: int | None
    client_version: int | None
    other_fields: dict  # bloomFilterData, as written


@dataclass
class ConsumerFilters:
    """``consumerFilter.json``: ``ConsumerFilterManager``'s SQL92 filters."""

    filter_data_by_topic: dict[str, dict[str, ConsumerFilterData]]  # topic -> group -> filter
    other_fields: dict


def topic_group(key: str) -> tuple[str, str] | None:
    """``topic@group`` split as the broker splits it (``String.split("@")``, two parts), or None."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    while parts and parts[-1] == "":  # Java's split drops trailing empty strings
        parts.pop()
    return (parts[0], parts[1]) if len(parts) == 2 else None


class _Typed:
    """Type checks with the file and the key path in the message (fastjson's own casts: a
    number in a string reads as the number, as TypeUtils.castToLong does)."""

    def __init__(self, path: str | None):
        self.path = path

    def fail(self, where: str, expected: str, value) -> CorruptData:
        return CorruptData(f"{where}: expected {expected}, found {type(value).__name__} {value!r:.60}", self.path)

    def object(self, value, where: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(where, "an object", value)
        return value

    def integer(self, value, where: str) -> int | None:
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return int(value)
        raise self.fail(where, "an integer", value)

    def boolean(self, value, where: str) -> bool | None:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if isinstance(value, int):
            return value == 1
        raise self.fail(where, "a boolean", value)

    def text(self, value, where: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise self.fail(where, "a string", value)

    def fields(self, value, where: str, spec: dict[str, tuple[str, str]]) -> dict:
        """The declared Java fields (``spec``: Java name -> (Python name, kind)) plus ``other_fields``."""
        obj = self.object(value, where)
        out = {name: None for name, _ in spec.values()}
        out["other_fields"] = {}
        for key, item in obj.items():
            if key in spec:
                name, kind = spec[key]
                out[name] = getattr(self, kind)(item, f"{where}.{key}")
            else:
                out["other_fields"][key] = item
        return out

    def data_version(self, value, where: str) -> DataVersion | None:
        if value is None:
            return None
        return DataVersion(**{k: v for k, v in self.fields(value, where, _DATA_VERSION).items()
                              if k != "other_fields"})

    def offset_map(self, value, where: str) -> dict[int, int]:
        """A ``Map<Integer, Long>``: bare or quoted numeric keys."""
        return {self.integer(k, f"{where} key"): self.integer(v, f"{where}.{k}")
                for k, v in self.object(value, where).items()}


_DATA_VERSION = {"timestamp": ("timestamp", "integer"), "counter": ("counter", "integer"),
                 "stateVersion": ("state_version", "integer")}
_TOPIC_CONFIG = {"topicName": ("topic_name", "text"), "readQueueNums": ("read_queue_nums", "integer"),
                 "writeQueueNums": ("write_queue_nums", "integer"), "perm": ("perm", "integer"),
                 "topicFilterType": ("topic_filter_type", "text"), "topicSysFlag": ("topic_sys_flag", "integer"),
                 "order": ("order", "boolean"), "attributes": ("attributes", "object")}
_SUBSCRIPTION_GROUP = {
    "groupName": ("group_name", "text"), "consumeEnable": ("consume_enable", "boolean"),
    "consumeFromMinEnable": ("consume_from_min_enable", "boolean"),
    "consumeBroadcastEnable": ("consume_broadcast_enable", "boolean"),
    "retryQueueNums": ("retry_queue_nums", "integer"), "retryMaxTimes": ("retry_max_times", "integer"),
    "brokerId": ("broker_id", "integer"),
    "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", "integer"),
    "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", "boolean")}
_FILTER_DATA = {"consumerGroup": ("consumer_group", "text"), "topic": ("topic", "text"),
                "expression": ("expression", "text"), "expressionType": ("expression_type", "text"),
                "bornTime": ("born_time", "integer"), "deadTime": ("dead_time", "integer"),
                "clientVersion": ("client_version", "integer")}


def _rest(obj: dict, *known: str) -> dict:
    return {k: v for k, v in obj.items() if k not in known}


def decode_topics(value, path: str | None = None) -> TopicConfigs:
    typed = _Typed(path)
    obj = typed.object(value, "$")
    table = typed.object(obj.get("topicConfigTable"), "topicConfigTable")
    configs = {str(name): TopicConfig(**typed.fields(item, f"topicConfigTable.{name}", _TOPIC_CONFIG))
               for name, item in table.items()}
    for config in configs.values():
        config.attributes = config.attributes or {}
    return TopicConfigs(typed.data_version(obj.get("dataVersion"), "dataVersion"), configs,
                        _rest(obj, "dataVersion", "topicConfigTable"))


def decode_consumer_offsets(value, path: str | None = None) -> ConsumerOffsets:
    typed = _Typed(path)
    obj = typed.object(value, "$")
    table = typed.object(obj.get("offsetTable"), "offsetTable")
    offsets = {str(key): typed.offset_map(item, f"offsetTable.{key}") for key, item in table.items()}
    return ConsumerOffsets(offsets, typed.data_version(obj.get("dataVersion"), "dataVersion"),
                           _rest(obj, "offsetTable", "dataVersion"))


def decode_subscription_groups(value, path: str | None = None) -> SubscriptionGroups:
    typed = _Typed(path)
    obj = typed.object(value, "$")
    table = typed.object(obj.get("subscriptionGroupTable"), "subscriptionGroupTable")
    groups = {str(name): SubscriptionGroupConfig(**typed.fields(item, f"subscriptionGroupTable.{name}",
                                                                _SUBSCRIPTION_GROUP))
              for name, item in table.items()}
    return SubscriptionGroups(typed.data_version(obj.get("dataVersion"), "dataVersion"), groups,
                              _rest(obj, "dataVersion", "subscriptionGroupTable"))


def decode_delay_offsets(value, path: str | None = None) -> DelayOffsets:
    typed = _Typed(path)
    obj = typed.object(value, "$")
    return DelayOffsets(typed.offset_map(obj.get("offsetTable"), "offsetTable"),
                        typed.data_version(obj.get("dataVersion"), "dataVersion"),
                        _rest(obj, "offsetTable", "dataVersion"))


def decode_consumer_filters(value, path: str | None = None) -> ConsumerFilters:
    typed = _Typed(path)
    obj = typed.object(value, "$")
    by_topic = {}
    for topic, per_topic in typed.object(obj.get("filterDataByTopic"), "filterDataByTopic").items():
        where = f"filterDataByTopic.{topic}"
        groups = typed.object(typed.object(per_topic, where).get("groupFilterData"), f"{where}.groupFilterData")
        by_topic[str(topic)] = {str(group): ConsumerFilterData(**typed.fields(item, f"{where}.groupFilterData.{group}",
                                                                              _FILTER_DATA))
                                for group, item in groups.items()}
    return ConsumerFilters(by_topic, _rest(obj, "filterDataByTopic"))


@dataclass(frozen=True)
class ConfigKind:
    name: str  # the file name in config/
    source_class: str  # the RocketMQ class that persists and loads it
    decode: Callable[[Any, str | None], Any]


CONFIG_KINDS = {kind.name: kind for kind in (
    ConfigKind("topics.json", "TopicConfigManager", decode_topics),
    ConfigKind("consumerOffset.json", "ConsumerOffsetManager", decode_consumer_offsets),
    ConfigKind("subscriptionGroup.json", "SubscriptionGroupManager", decode_subscription_groups),
    ConfigKind("delayOffset.json", "ScheduleMessageService", decode_delay_offsets),
    ConfigKind("consumerFilter.json", "ConsumerFilterManager", decode_consumer_filters),
)}


def config_kind(path) -> ConfigKind | None:
    """The kind of a config file (or its ``.bak``) by name."""
    name = Path(path).name
    return CONFIG_KINDS.get(name[: -len(BACKUP_SUFFIX)] if name.endswith(BACKUP_SUFFIX) else name)


# -------------------------------------------------------------------------------------------
# Files
# -------------------------------------------------------------------------------------------


@dataclass
class ConfigFileRead:
    """One file as read: its parsed value and typed contents, or why it could not be."""

    path: str
    exists: bool
    size: int | None = None
    value: Any = None  # the fastjson value (None: missing, empty or not parsed)
    decoded: Any = None  # the typed contents
    error: SegtoolError | None = None

    @property
    def empty(self) -> bool:
        return self.exists and self.error is None and self.value is None


def read_config_file(path, kind: ConfigKind | None = None) -> ConfigFileRead:
    """Read and decode one config file; a missing file, a parse or type error is recorded, not raised."""
    path = Path(path)
    kind = kind or config_kind(path)
    if kind is None:
        raise UnreadableInput(f"not a RocketMQ config file (expected one of {', '.join(CONFIG_KINDS)})", str(path))
    if not path.is_file():
        return ConfigFileRead(str(path), exists=False)
    read = ConfigFileRead(str(path), exists=True)
    try:
        data = path.read_bytes()
    except OSError as exc:
        read.error = UnreadableInput(exc.strerror or str(exc), str(path))
        return read
    read.size = len(data)
    try:
        read.value = parse_fastjson(data, str(path))
        if read.value is not None:
            read.decoded = kind.decode(read.value, str(path))
    except CorruptData as exc:
        read.value = None
        read.error = exc
    return read


@dataclass
class LoadedConfig:
    """A config file and its ``.bak`` as ``ConfigManager.load`` takes them."""

    kind: ConfigKind
    file: ConfigFileRead
    backup: ConfigFileRead
    loaded_from: str | None  # "file", "backup", or None (neither gives contents)
    differences: list[str] = field(default_factory=list)  # key paths where file and .bak differ

    @property
    def decoded(self):
        """What the broker ends up with (the kind's empty contents when neither file gives any)."""
        source = {"file": self.file, "backup": self.backup}.get(self.loaded_from or "")
        return source.decoded if source is not None else self.kind.decode({}, None)

    @property
    def backup_equal(self) -> bool | None:
        """Do file and .bak hold the same contents (None when one of them gives none)?"""
        if self.file.value is None or self.backup.value is None:
            return None
        return not self.differences


def load_config(config_dir, name: str) -> LoadedConfig:
    """``ConfigManager.load`` for ``config_dir/name``: the file, else (empty or undecodable) its ``.bak``."""
    kind = CONFIG_KINDS[name]
    main = read_config_file(Path(config_dir) / name, kind)
    backup = read_config_file(Path(config_dir) / (name + BACKUP_SUFFIX), kind)
    if main.decoded is not None:
        loaded = "file"
    elif backup.decoded is not None:  # missing, empty or undecodable: loadBak
        loaded = "backup"
    else:
        loaded = None
    differences = value_differences(main.value, backup.value) \
        if main.value is not None and backup.value is not None else []
    return LoadedConfig(kind, main, backup, loaded, differences)


def value_differences(a, b, where: str = "") -> list[str]:
    """Key paths (``offsetTable.TopicTest@g.2``) where two parsed values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in list(a) + [k for k in b if k not in a]:
            path = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                out.append(path)
            else:
                out.extend(value_differences(a[key], b[key], path))
        return out
    if a != b or type(a) is not type(b):
        return [where or "$"]
    return []
