"""mqadmin's lines offline (issue 18 item 4): queryMsgByKey, queryMsgById, queryMsgByOffset and
printMsg with mqadmin's short options give the answers of the long forms, and those answers are the
goldens' (RocketMQ's IndexService / ConsumeQueue / lookMessageByOffset over clean-multi)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import segtool
from tests.test_rocketmq_lookups import golden, rocketmq_case


@pytest.fixture(scope="module")
def store() -> str:
    return str(rocketmq_case("clean-multi") / "store")


def _json(*args) -> tuple[int, dict]:
    result = segtool("lookup", *args, "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def _messages(case: str = "clean-multi") -> list[dict]:
    with open(rocketmq_case(case) / "expected" / "commitlog.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_query_msg_by_key_short_and_long_forms_and_rows(store):
    by_phy = {m["phyOffset"]: m for m in _messages()}
    lookups = golden("clean-multi", "key-lookups.json")["lookups"]
    chosen = [g for g in lookups if g["query"]["begin"] == 0 and g["query"]["end"] == 2**63 - 1
              and g["query"]["key"]][:6]
    assert chosen
    for gold in chosen:
        topic, key = gold["query"]["topic"], gold["query"]["key"]
        short_rc, short = _json(store, "-t", topic, "-k", key)
        long_rc, long = _json(store, "--topic", topic, "--key", key)
        assert (short_rc, short) == (long_rc, long)
        # MQAdminImpl.queryMessage keeps what the broker's queryMessage returns whose KEYS hold the key
        expected = [phy for phy in gold["queryMessagePhyOffsets"] if key in (by_phy[phy]["KEYS"] or "").split(" ")]
        assert [row["phy_offset"] for row in short["mqadmin_rows"]] == expected
        for row in short["mqadmin_rows"]:
            msg = by_phy[row["phy_offset"]]
            assert row["msg_id"] == (msg["UNIQ_KEY"] or msg["offsetMsgId"])
            assert (row["queue_id"], row["queue_offset"]) == (msg["queueId"], msg["queueOffset"])


def test_query_msg_by_id_short_form(store):
    msg = _messages()[10]
    assert _json(store, "-i", msg["offsetMsgId"]) == _json(store, "--msg-id", msg["offsetMsgId"])
    rc, answer = _json(store, "-i", msg["offsetMsgId"])
    assert rc == 0 and answer["messages"][0]["mqadmin"]["commit_log_offset"] == msg["phyOffset"]


def test_query_msg_by_offset_short_form_takes_i_as_the_queue_id(store):
    summary = {(q["topic"], q["queueId"]): q for q in golden("clean-multi", "consumequeue-summary.json")["queues"]}
    for gold in golden("clean-multi", "offset-lookups.json")["consumeQueueLookups"][:8]:
        topic, queue, offset = gold["topic"], str(gold["queueId"]), str(gold["queueOffset"])
        short_rc, short = _json(store, "-t", topic, "-b", "broker-corpus", "-i", queue, "-o", offset)
        long_rc, long = _json(store, "--topic", topic, "--queue-id", queue, "--queue-offset", offset)
        assert short.pop("broker_name") == "broker-corpus"
        short["notes"] = [n for n in short["notes"] if "broker name" not in n]
        if not short["notes"]:
            del short["notes"]
        assert (short_rc, short) == (long_rc, long)
        if gold.get("offsetMsgId") is None:
            continue
        shown = short["mqadmin"]
        assert shown["offset_msg_id"] == gold["offsetMsgId"]
        assert shown["msg_id"] == (gold["UNIQ_KEY"] or gold["offsetMsgId"])
        bounds = summary[(topic, gold["queueId"])]
        # PullAPIWrapper.processPullResult adds the queue's bounds to the pulled message
        assert shown["properties"]["MIN_OFFSET"] == str(bounds["minOffsetInQueue"])
        assert shown["properties"]["MAX_OFFSET"] == str(bounds["maxOffsetInQueue"])


def test_print_msg_window_tags_and_charset(store):
    in_queue = set()
    with open(rocketmq_case("clean-multi") / "expected" / "consumequeue.jsonl", encoding="utf-8") as f:
        for line in f:
            unit = json.loads(line)
            if unit["topic"] == "OrderTopic":
                in_queue.add(unit["commitLogOffset"])
    messages = [m for m in _messages() if m["phyOffset"] in in_queue]
    stamps = sorted(m["storeTimestamp"] for m in messages)
    begin, end = stamps[len(stamps) // 4], stamps[len(stamps) // 2]
    expected = {m["phyOffset"] for m in messages if begin <= m["storeTimestamp"] < end and m["TAGS"] in ("TagA", "TagB")}
    short_rc, short = _json(store, "--print-msg", "-t", "OrderTopic", "-c", "ISO-8859-1", "-s", "TagA || TagB",
                            "-b", str(begin), "-e", str(end), "-d", "false")
    long_rc, long = _json(store, "--print-msg", "--topic", "OrderTopic", "--charset", "ISO-8859-1",
                          "--sub-expression", "TagA || TagB", "--begin", str(begin), "--end", str(end),
                          "--print-body", "false")
    assert (short_rc, short) == (long_rc, long)
    assert short_rc == 0 and {m["phy_offset"] for m in short["messages"]} == expected
    assert all(m["body_text"] is None for m in short["messages"])
    assert sum(q["messages"] for q in short["queues"]) == len(expected)
    _, bodies = _json(store, "--print-msg", "-t", "OrderTopic", "-c", "ISO-8859-1", "-b", str(begin), "-e",
                      str(begin + 1))
    first = bodies["messages"][0]
    raw = next(m for m in messages if m["phyOffset"] == first["phy_offset"])
    assert len(first["body_text"]) == raw.get("bodyDecompressedLength", raw["bodyLength"])  # one char per byte


def test_i_without_o_is_a_message_id(store):
    result = segtool("lookup", store, "-i", "3")
    assert result.returncode == 1 and "not a message id" in result.stdout
    clash = segtool("lookup", store, "-t", "OrderTopic", "-i", "x", "-o", "0")
    assert clash.returncode == 2


def test_print_msg_carries_the_pulls_min_and_max_offset(store):
    """PullAPIWrapper.processPullResult adds MIN_OFFSET and MAX_OFFSET (the pull result's queue bounds)
    to every message it hands PrintMessageSubCommand.printMessage, which prints them with the rest."""
    summary = {q["queueId"]: q for q in golden("clean-multi", "consumequeue-summary.json")["queues"]
               if q["topic"] == "OrderTopic"}
    rc, answer = _json(store, "--print-msg", "-t", "OrderTopic", "-d", "false")
    assert rc == 0 and answer["messages"]
    for message in answer["messages"]:
        bounds = summary[message["queue_id"]]
        pulled = message["mqadmin"]["properties"]
        assert (pulled["MIN_OFFSET"], pulled["MAX_OFFSET"]) == (str(bounds["minOffsetInQueue"]),
                                                                str(bounds["maxOffsetInQueue"]))
        assert "MIN_OFFSET" not in message["properties"]  # the stored message does not hold them
    text = segtool("lookup", store, "--print-msg", "-t", "OrderTopic", "-d", "false").stdout
    shown = [line for line in text.splitlines() if line.startswith("MSGID:")]
    assert len(shown) == len(answer["messages"])
    assert all("MIN_OFFSET=" in line and "MAX_OFFSET=" in line for line in shown)
