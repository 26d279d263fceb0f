"""Message ids (issue 18 item 3): the offset message id and the unique key, decoded as RocketMQ's
MessageDecoder / MessageClientIDSetter do, and ``lookup --msg-id`` finding every message of corpus
clean-multi by both kinds; the expected ids are the goldens' (computed by RocketMQ's classes)."""

from __future__ import annotations

import json
from collections import defaultdict

import jsonschema
import pytest

from segtool.rocketmq import msgid as ids
from segtool.ops.lookup import lookup_msg_ids
from tests.conftest import REPO, segtool
from tests.test_rocketmq_lookups import rocketmq_case


# the fast tier checks every 7th message (all of them over the three tests' runs), the full tier every one
STEPS = [pytest.param(7, id="every-7th"), pytest.param(1, id="every", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def clean():
    case = rocketmq_case("clean-multi")
    with open(case / "expected" / "commitlog.jsonl", encoding="utf-8") as f:
        messages = [json.loads(line) for line in f]
    return str(case / "store"), messages


def _host_bytes(host: str) -> tuple[bytes, int]:
    address, port = host.rsplit(":", 1)
    return bytes(int(part) for part in address.split(".")), int(port)


def test_offset_msg_id_layout_matches_rocketmq(clean):
    _, messages = clean
    for msg in messages:
        address, port = _host_bytes(msg["storeHost"])
        assert ids.offset_msg_id(address, port, msg["physicalOffsetField"]) == msg["offsetMsgId"]
        decoded = ids.decode_offset_msg_id(msg["offsetMsgId"].lower())
        assert decoded["store_host"] == msg["storeHost"]
        assert decoded["commit_log_offset"] == msg["phyOffset"]


@pytest.mark.parametrize("step", STEPS)
def test_unique_key_decodes_to_a_time_just_before_the_send(clean, step):
    _, messages = clean
    with_keys = [msg for msg in messages if msg["UNIQ_KEY"]]
    assert with_keys
    for msg in with_keys[::step]:
        decoded = ids.decode_uniq_key(msg["UNIQ_KEY"])
        offset = ids.infer_utc_offset(decoded["ms_since_month_start"], msg["bornTimestamp"])
        assert offset is not None, msg["UNIQ_KEY"]
        created = ids.uniq_key_time(decoded["ms_since_month_start"], msg["bornTimestamp"] + 1, offset)
        assert 0 <= msg["bornTimestamp"] - created < 60_000


def test_not_an_id():
    assert ids.decode_offset_msg_id("XYZ") is None
    assert ids.decode_uniq_key("00" * 15) is None


def test_every_message_by_its_offset_msg_id(clean):
    store, messages = clean
    answer = lookup_msg_ids(store, [msg["offsetMsgId"] for msg in messages])
    assert len(answer["ids"]) == len(messages)
    for msg, entry in zip(messages, answer["ids"]):
        assert entry["id_kind"] == "offset_msg_id"
        assert entry["phy_offsets"] == [msg["phyOffset"]]
        assert entry["notes"] == []  # the store host in the id is the message's
    assert [view["mqadmin"]["offset_msg_id"] for view in answer["messages"]] == [m["offsetMsgId"] for m in messages]


@pytest.mark.parametrize("step", STEPS)
def test_every_message_by_its_unique_key_scanning_the_commitlog(clean, step):
    store, messages = clean
    expected = defaultdict(list)
    for msg in messages:
        if msg["UNIQ_KEY"]:
            expected[msg["UNIQ_KEY"]].append(msg)
    keys = list(expected)[::step]
    answer = lookup_msg_ids(store, keys)
    for entry in answer["ids"]:
        holders = sorted(expected[entry["msg_id"]], key=lambda m: (m["storeTimestamp"], m["phyOffset"]))
        assert entry["id_kind"] == "unique_key" and entry["searched_by"] == "commitlog_scan"
        assert entry["phy_offsets"] == [m["phyOffset"] for m in holders]
        assert entry["mqadmin_phy_offset"] == holders[0]["phyOffset"]  # the oldest, as MQAdminImpl keeps
    # every message with a unique key was found by it
    found = {phy for entry in answer["ids"] for phy in entry["phy_offsets"]}
    assert found == {m["phyOffset"] for m in messages if m["UNIQ_KEY"] in keys}
    assert step > 1 or found == {m["phyOffset"] for m in messages if m["UNIQ_KEY"]}


@pytest.mark.parametrize("step", STEPS)
def test_every_message_by_its_unique_key_through_the_index(clean, step):
    store, messages = clean
    by_topic = defaultdict(lambda: defaultdict(list))
    for msg in messages:
        # IndexService.buildIndex indexes UNIQ_KEY for every message but ROLLBACK ones
        if msg["UNIQ_KEY"] and msg["transactionType"] != 0xC:
            by_topic[msg["topic"]][msg["UNIQ_KEY"]].append(msg["phyOffset"])
    for topic, keys in by_topic.items():
        answer = lookup_msg_ids(store, list(keys)[::step], topic)
        for entry in answer["ids"]:
            assert entry["searched_by"] == "index"
            assert sorted(entry["phy_offsets"]) == sorted(keys[entry["msg_id"]]), (topic, entry["msg_id"])


def test_cli_both_kinds_and_the_schema(clean):
    store, messages = clean
    msg = next(m for m in messages if m["UNIQ_KEY"] and m["topic"] == "OrderTopic")
    result = segtool("lookup", store, "--msg-id", f"{msg['offsetMsgId']},{msg['UNIQ_KEY']}", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    with open(REPO / "docs" / "schemas" / "lookup.schema.json", encoding="utf-8") as f:
        jsonschema.validate(answer, json.load(f))
    assert [entry["id_kind"] for entry in answer["ids"]] == ["offset_msg_id", "unique_key"]
    assert all(entry["phy_offsets"] == [msg["phyOffset"]] for entry in answer["ids"])
    text = segtool("lookup", store, "--msg-id", msg["offsetMsgId"])
    assert text.returncode == 0 and f"OffsetID:            {msg['offsetMsgId']}" in text.stdout
    missing = segtool("lookup", store, "--msg-id", "7F00000100002A9F7FFFFFFFFFFFFFFF")
    assert missing.returncode == 1 and "no message has it" in missing.stdout


def test_ipv6_hosts_are_written_as_java_writes_them():
    # Inet6Address.getHostAddress (a SocketAddress's text, RemotingHelper.parseSocketAddressAddr):
    # eight groups, no leading zeros, never "::"; MessageClientIDSetter.getIPStrFromID uses
    # UtilAll.ipToIPv6Str instead: eight groups of four digits
    import ipaddress

    from segtool.rocketmq.msgid import decode_offset_msg_id, decode_uniq_key, format_host, offset_msg_id

    address = ipaddress.IPv6Address("2001:db8::1").packed
    assert format_host(address, 10911) == "[2001:db8:0:0:0:0:0:1]:10911"
    assert format_host(bytes([10, 0, 0, 7]), 10911) == "10.0.0.7:10911"
    decoded = decode_offset_msg_id(offset_msg_id(address, 10911, 4096))
    assert (decoded["store_host"], decoded["store_ip"]) == ("[2001:db8:0:0:0:0:0:1]:10911", "2001:db8:0:0:0:0:0:1")
    uniq = (address + bytes.fromhex("0001") + bytes(4) + bytes(4) + bytes.fromhex("0002")).hex().upper()
    assert decode_uniq_key(uniq)["client_ip"] == "2001:0db8:0000:0000:0000:0000:0000:0001"
