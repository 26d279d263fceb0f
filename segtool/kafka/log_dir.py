"""The files of a Kafka log dir itself: ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.

``meta.properties`` (metadata/.../properties/MetaProperties.java, PropertiesUtils):
a Java properties file.  ``version=0`` (ZooKeeper brokers) carries ``broker.id``,
``version=1`` (KRaft) ``node.id``; both carry ``cluster.id``, and Kafka 3.7+ adds
``directory.id`` (a base64url UUID).

``quorum-state`` (raft/FileQuorumStateStore.java, QuorumStateData.json): one JSON
object with ``leaderId``, ``leaderEpoch``, ``votedId``, ``appliedOffset``,
``currentVoters`` and ``data_version`` (the file's own version; 1 adds
``votedDirectoryId`` and drops the voters).

``.kafka_cleanshutdown`` (storage/.../checkpoint/CleanShutdownFileHandler.java):
its presence means the broker stopped cleanly; since Kafka 3.7 it holds
``{"version":0,"brokerEpoch":N}``, before that it is empty.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from segtool.errors import CorruptData, SegtoolError
from segtool.kafka.names import META_PROPERTIES
from segtool.source import open_buffer
from segtool.kafka.state import kafka_uuid_from_string, kafka_uuid_to_string


_PROPERTY_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


@dataclass(frozen=True)
class MetaProperties:
    version: int
    cluster_id: str | None
    node_id: int | None  # node.id (version 1) or broker.id (version 0)
    directory_id: str | None
    other: dict[str, str]  # keys Kafka does not define, as written


def _properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` for the one-line ``key=value`` entries Kafka writes."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.lstrip()
        if not line or line[0] in "#!":
            continue
        parts = _PROPERTY_SEPARATOR.split(line, maxsplit=1)
        found[parts[0]] = parts[1] if len(parts) > 1 else ""
    return found


def _int(properties: dict[str, str], key: str, path) -> int | None:
    text = properties.get(key)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise CorruptData(f"{key} is not an integer: {text!r}", str(path)) from None


def parse_meta_properties(data: bytes, path=None) -> MetaProperties:
    """The fields ``MetaProperties.Builder`` reads, checked as it checks them."""
    properties = _properties(data.decode("iso-8859-1"))  # Properties.load(InputStream) reads ISO 8859-1
    version = _int(properties, "version", path)
    if version not in (0, 1):
        raise CorruptData(f"unknown meta.properties version {properties.get('version')!r} (Kafka knows 0 and 1)",
                          str(path))
    node_key = "node.id" if version == 1 else "broker.id"
    node_id = _int(properties, node_key, path)
    if version == 1 and node_id is None:
        raise CorruptData("version 1 meta.properties without node.id", str(path))
    directory_id = properties.get("directory.id")
    if directory_id is not None:
        raw = kafka_uuid_from_string(directory_id)
        if raw is None:
            raise CorruptData(f"directory.id is not a Kafka UUID: {directory_id!r}", str(path))
        directory_id = kafka_uuid_to_string(raw)
    known = {"version", "cluster.id", "node.id", "broker.id", "directory.id"}
    return MetaProperties(version, properties.get("cluster.id"), node_id, directory_id,
                          {k: v for k, v in properties.items() if k not in known})


@dataclass(frozen=True)
class QuorumState:
    leader_id: int
    leader_epoch: int
    voted_id: int
    applied_offset: int
    current_voters: list[int]
    data_version: int


def parse_quorum_state(data: bytes, path=None) -> QuorumState:
    """``FileQuorumStateStore.readElectionState``'s JSON, with QuorumStateData's defaults (-1, 0)."""
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptData(f"quorum-state is not JSON: {exc}", str(path)) from None
    if not isinstance(state, dict):
        raise CorruptData("quorum-state is not a JSON object", str(path))
    voters = state.get("currentVoters") or []
    try:
        return QuorumState(int(state.get("leaderId", -1)), int(state.get("leaderEpoch", -1)),
                           int(state.get("votedId", -1)), int(state.get("appliedOffset", 0)),
                           [int(voter["voterId"]) for voter in voters], int(state.get("data_version", 0)))
    except (TypeError, ValueError, KeyError) as exc:
        raise CorruptData(f"quorum-state field of the wrong type: {exc}", str(path)) from None


def clean_shutdown_broker_epoch(data: bytes) -> int | None:
    """``CleanShutdownFileHandler.read``: the broker epoch, None for the older empty file or any other text."""
    try:
        epoch = json.loads(data.decode("utf-8")).get("brokerEpoch")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return None
    return epoch if isinstance(epoch, int) else None


@dataclass(frozen=True)
class BrokerIdentity:
    """Which broker a log dir belongs to: ``meta.properties``' node.id or broker.id, else its folder."""

    broker_id: int | None
    folder: str  # the log dir's path as given
    problem: str | None = None  # why meta.properties did not name the broker

    @property
    def label(self) -> str:
        return f"broker {self.broker_id}" if self.broker_id is not None else self.folder


def broker_identity(log_dir: str) -> BrokerIdentity:
    """The broker of ``log_dir``: the id in its ``meta.properties`` when that file is there and readable."""
    folder = os.path.normpath(log_dir)
    path = os.path.join(folder, META_PROPERTIES)
    if not os.path.isfile(path):
        return BrokerIdentity(None, folder)
    try:
        data = bytes(open_buffer(path))
    except (SegtoolError, OSError) as exc:
        return BrokerIdentity(None, folder, unreadable_meta_properties(path, exc))
    return broker_identity_of(folder, path, data)


def unreadable_meta_properties(path: str, exc: SegtoolError | OSError) -> str:
    """Why ``meta.properties`` at ``path`` could not be read: one line naming the file once."""
    if isinstance(exc, SegtoolError):
        return str(exc.at(path))
    return f"{path}: {exc.strerror or exc}"


def broker_identity_of(folder: str, path: str, data: bytes) -> BrokerIdentity:
    """The broker named by the bytes of ``meta.properties`` read from ``path`` (a URI's log dir reads them
    through its own filesystem); the folder when they do not name one."""
    try:
        meta = parse_meta_properties(data, path)
    except SegtoolError as exc:
        return BrokerIdentity(None, folder, unreadable_meta_properties(path, exc))
    return BrokerIdentity(meta.node_id, folder, None if meta.node_id is not None else f"{path}: no broker.id")
