"""RocketMQ's two message ids: the offset message id and the unique key (``UNIQ_KEY``).

Both are upper-case hex of a few big-endian fields (``UtilAll.bytes2string``;
``UtilAll.string2bytes`` reads either case), 32 characters for an IPv4 host,
56 for IPv6, so the text alone does not say which kind an id is: RocketMQ's
admin tools decode every id as an offset id first and fall back to the unique
key when that finds no message (``DefaultMQAdminExtImpl.viewMessage(topic,
msgId)`` / ``queryMessage(clusterName, topic, msgId)``).

* Offset message id, ``MessageDecoder.createMessageId(ByteBuffer, storeHostBytes,
  commitLogOffset)`` (decoded by ``MessageDecoder.decodeMessageId``): the store
  host's address and port, then the message's CommitLog physical offset.  The
  broker computes it when it appends (``CommitLog.DefaultAppendMessageCallback``)
  and every decode recomputes it from the record's STOREHOST and PHYSICALOFFSET.
* Unique key, ``MessageClientIDSetter.createUniqID`` (set as the ``UNIQ_KEY``
  property by the producer): the client's IP, its pid (a short), the hash code
  of the class loader, the milliseconds since the start of the current month in
  the client's time zone (an int) and a counter (a short).
  ``getIPStrFromID``, ``getPidFromID`` and ``getNearlyTimeFromID`` decode it.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import construct as cs

# MessageDecoder.createMessageId: storeHostBytes (address + int port) then putLong(offset)
OFFSET_MSG_ID_V4 = cs.Struct(
    "storeHost" / cs.Bytes(4),
    "storePort" / cs.Int32sb,
    "commitLogOffset" / cs.Int64sb,
)
OFFSET_MSG_ID_V6 = cs.Struct(
    "storeHost" / cs.Bytes(16),
    "storePort" / cs.Int32sb,
    "commitLogOffset" / cs.Int64sb,
)

# MessageClientIDSetter: FIX_STRING = ip + putShort(pid) + putInt(classLoader.hashCode()),
# then createUniqID appends writeInt(current - startTime) and writeShort(COUNTER++)
UNIQ_KEY_V4 = cs.Struct(
    "ip" / cs.Bytes(4),
    "pid" / cs.Int16ub,  # (short) UtilAll.getPid(); getPidFromID reads it & 0xFFFF
    "classLoaderHash" / cs.Int32sb,
    "msSinceMonthStart" / cs.Int32ub,  # getNearlyTimeFromID reads these 4 bytes as an unsigned value
    "counter" / cs.Int16ub,
)
UNIQ_KEY_V6 = cs.Struct(
    "ip" / cs.Bytes(16),
    "pid" / cs.Int16ub,
    "classLoaderHash" / cs.Int32sb,
    "msSinceMonthStart" / cs.Int32ub,
    "counter" / cs.Int16ub,
)

ID_TEXT_LENGTHS = {2 * OFFSET_MSG_ID_V4.sizeof(): "ipv4", 2 * OFFSET_MSG_ID_V6.sizeof(): "ipv6"}
assert OFFSET_MSG_ID_V4.sizeof() == UNIQ_KEY_V4.sizeof() and OFFSET_MSG_ID_V6.sizeof() == UNIQ_KEY_V6.sizeof()


def id_bytes(text: str) -> bytes | None:
    """The bytes of an id (``UtilAll.string2bytes``), or None when it is not 32 or 56 hex digits."""
    text = text.strip()
    if len(text) not in ID_TEXT_LENGTHS:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None




def java_host_address(address: bytes) -> str:
    """InetAddress.getHostAddress: dotted IPv4; IPv6 as Inet6Address writes it, all eight groups
    in lower-case hex without leading zeros and never shortened with ``::``."""
    if len(address) == 4:
        return f"{address[0]}.{address[1]}.{address[2]}.{address[3]}"
    return ":".join(f"{int.from_bytes(address[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


@lru_cache(maxsize=4096)  # one text per client connection, not per message
def format_host(address: bytes, port: int) -> str:
    """A host as RocketMQ prints a SocketAddress (RemotingHelper.parseSocketAddressAddr on Java 14+:
    ``a.b.c.d:port``, an IPv6 literal in brackets)."""
    if len(address) == 4:
        return f"{java_host_address(address)}:{port}"
    return f"[{java_host_address(address)}]:{port}"


def offset_msg_id(store_host: bytes, store_port: int, commit_log_offset: int) -> str:
    """``MessageDecoder.createMessageId`` for a store host (4 or 16 address bytes), port and physical offset."""
    layout = OFFSET_MSG_ID_V4 if len(store_host) == 4 else OFFSET_MSG_ID_V6
    return layout.build({"storeHost": store_host, "storePort": store_port,
                         "commitLogOffset": commit_log_offset}).hex().upper()


def decode_offset_msg_id(text: str) -> dict | None:
    """``MessageDecoder.decodeMessageId``: the store host and the CommitLog offset an id names
    (every 32/56-hex text decodes; whether a message is there is the store's question)."""
    raw = id_bytes(text)
    if raw is None:
        return None
    fields = (OFFSET_MSG_ID_V4 if len(raw) == OFFSET_MSG_ID_V4.sizeof() else OFFSET_MSG_ID_V6).parse(raw)
    return {"store_host": format_host(fields.storeHost, fields.storePort),
            "store_ip": java_host_address(fields.storeHost),
            "store_port": fields.storePort, "commit_log_offset": fields.commitLogOffset}


def _client_ip_text(ip: bytes) -> str:
    """MessageClientIDSetter.getIPStrFromID: UtilAll.ipToIPv4Str, or ipToIPv6Str (eight groups of
    four lower-case hex digits, leading zeros kept)."""
    if len(ip) == 4:
        return java_host_address(ip)
    return ":".join(ip[i:i + 2].hex() for i in range(0, 16, 2))


def decode_uniq_key(text: str) -> dict | None:
    """What ``MessageClientIDSetter`` lets one read back from a unique key: the client's IP and pid,
    the class loader's hash, the milliseconds since the month started (client time zone) and the
    counter.  The time itself needs a month and a time zone: see ``uniq_key_time``."""
    raw = id_bytes(text)
    if raw is None:
        return None
    fields = (UNIQ_KEY_V4 if len(raw) == UNIQ_KEY_V4.sizeof() else UNIQ_KEY_V6).parse(raw)
    return {"client_ip": _client_ip_text(fields.ip), "pid": fields.pid, "class_loader_hash": fields.classLoaderHash,
            "ms_since_month_start": fields.msSinceMonthStart, "counter": fields.counter}


def _month_start_ms(moment_ms: int, utc_offset_minutes: int) -> int:
    """Epoch ms of the first day of the month holding ``moment_ms``, midnight, in a fixed UTC offset."""
    local = datetime.fromtimestamp(moment_ms / 1000, timezone.utc) + timedelta(minutes=utc_offset_minutes)
    start = datetime(local.year, local.month, 1, tzinfo=timezone.utc)
    return int(calendar.timegm(start.timetuple())) * 1000 - utc_offset_minutes * 60_000


def uniq_key_time(ms_since_month_start: int, reference_ms: int, utc_offset_minutes: int = 0) -> int:
    """``MessageClientIDSetter.getNearlyTimeFromID`` with ``reference_ms`` standing for "now": the
    month start of the reference plus the span, or of the month before when that is not before the
    reference.  RocketMQ uses the querying machine's clock and zone; offline the reference is a time
    the store gives (a message's born time) and the zone is the client's (``infer_utc_offset``)."""
    start = _month_start_ms(reference_ms, utc_offset_minutes)
    if start + ms_since_month_start >= reference_ms:
        previous = datetime.fromtimestamp(start / 1000, timezone.utc) + timedelta(minutes=utc_offset_minutes)
        previous = (previous.replace(day=1) - timedelta(days=1)).replace(day=1)
        start = int(calendar.timegm(previous.timetuple())) * 1000 - utc_offset_minutes * 60_000
    return start + ms_since_month_start


_MAX_ID_TO_BORN_MS = 10 * 60_000  # createUniqID runs just before the send stamps bornTimestamp


def infer_utc_offset(ms_since_month_start: int, born_ms: int) -> int | None:
    """The client's UTC offset (minutes, a multiple of 15) under which the id's time falls at or
    shortly before the message's born time, or None when no offset does (a clock set back, an id
    carried over from another message)."""
    best = None
    for quarter in range(-12 * 4, 14 * 4 + 1):
        offset = quarter * 15
        created = uniq_key_time(ms_since_month_start, born_ms + 1, offset)
        gap = born_ms - created
        if 0 <= gap <= _MAX_ID_TO_BORN_MS and (best is None or gap < best[0]):
            best = (gap, offset)
    return None if best is None else best[1]
