"""DescribeTopicPartitions (KIP-966) over the wire, through the broker's codec: pages of
at most the requested (and the broker's) partition limit, followed by `next_cursor`
until every partition was seen exactly once; unknown topics and bad cursors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from raw_client import CodecConnection

from kafkars.broker import Broker

API_VERSIONS, DESCRIBE_TOPIC_PARTITIONS = 18, 75
UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST = 3, 17, 42


def create_topics(broker: Broker, partitions: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    new = [NewTopic(name, count, 1) for name, count in partitions.items()]
    for future in admin.create_topics(new).values():
        future.result(10)


def describe(
    conn: CodecConnection, names: list[str], limit: int, cursor: dict[str, Any] | None = None
) -> dict[str, Any]:
    body = {
        "topics": [{"name": n} for n in names],
        "response_partition_limit": limit,
        "cursor": cursor,
    }
    return conn.call(DESCRIBE_TOPIC_PARTITIONS, 0, body)


def all_pages(conn: CodecConnection, names: list[str], limit: int) -> list[dict[str, Any]]:
    """Every response, following next_cursor from the first request to the last page."""
    pages = [describe(conn, names, limit)]
    while pages[-1]["next_cursor"] is not None:
        assert len(pages) < 100, "the cursor does not advance"
        pages.append(describe(conn, names, limit, pages[-1]["next_cursor"]))
    return pages


def seen(pages: list[dict[str, Any]], wanted: set[str]) -> list[tuple[str, int]]:
    return [
        (t["name"], p["partition_index"])
        for page in pages
        for t in page["topics"]
        if t["name"] in wanted
        for p in t["partitions"]
    ]


def test_advertised_in_api_versions(broker: Broker) -> None:
    conn = CodecConnection(broker)
    keys = {k["api_key"]: k for k in conn.call(API_VERSIONS, 3, {})["api_keys"]}
    assert (keys[75]["min_version"], keys[75]["max_version"]) == (0, 0)
    conn.close()


def test_named_topics_paginate_and_every_partition_is_seen_once(broker: Broker, topic: str) -> None:
    a, b, missing = f"{topic}-a", f"{topic}-b", f"{topic}-missing"
    create_topics(broker, {a: 7, b: 3})
    conn = CodecConnection(broker)
    pages = all_pages(conn, [b, missing, a], limit=3)
    for page in pages:
        assert sum(len(t["partitions"]) for t in page["topics"]) <= 3
    got = seen(pages, {a, b})
    # Sorted by name, then by partition; each exactly once.
    assert got == [(a, i) for i in range(7)] + [(b, i) for i in range(3)]
    assert [c["next_cursor"] for c in pages[:3]] == [
        {"topic_name": a, "partition_index": 3},
        {"topic_name": a, "partition_index": 6},
        {"topic_name": b, "partition_index": 2},
    ]
    first = pages[0]["topics"][0]
    assert first["error_code"] == 0 and not first["is_internal"]
    assert first["topic_id"].int != 0
    p0 = first["partitions"][0]
    assert p0["leader_id"] >= 0 and p0["leader_epoch"] >= 0
    assert p0["replica_nodes"] == p0["isr_nodes"] == [p0["leader_id"]]
    assert p0["eligible_leader_replicas"] == [] and p0["offline_replicas"] == []
    # No authorizer: every topic operation is allowed (bits 3-11 but 9, CLUSTER_ACTION).
    assert first["topic_authorized_operations"] == 0b1101_1111_1000
    # The unknown topic sorts after b's last partition, so the last page names it.
    [unknown] = [t for page in pages for t in page["topics"] if t["name"] == missing]
    assert unknown["error_code"] == UNKNOWN_TOPIC_OR_PARTITION and unknown["partitions"] == []
    assert unknown is pages[-1]["topics"][-1]
    conn.close()


def test_empty_topic_list_lists_every_topic_from_the_cursor(broker: Broker, topic: str) -> None:
    names = {f"{topic}-{c}": n for c, n in zip("xyz", (2, 5, 1), strict=True)}
    create_topics(broker, names)
    conn = CodecConnection(broker)
    # Start at the first of this test's topics: earlier ones (other tests') are skipped.
    start = {"topic_name": f"{topic}-x", "partition_index": 1}
    pages = [describe(conn, [], 2, start)]
    while pages[-1]["next_cursor"] is not None:
        pages.append(describe(conn, [], 2, pages[-1]["next_cursor"]))
    got = seen(pages, set(names))
    expected = [(f"{topic}-x", 1)] + [(f"{topic}-y", i) for i in range(5)] + [(f"{topic}-z", 0)]
    assert got == expected
    listed = [t["name"] for page in pages for t in page["topics"]]
    assert listed == sorted(listed) and all(n >= f"{topic}-x" for n in listed)
    conn.close()


def test_the_broker_caps_the_page(make_broker: Callable[..., Broker], topic: str) -> None:
    broker = make_broker(config={"max.request.partition.size.limit": 2})
    create_topics(broker, {topic: 5})
    conn = CodecConnection(broker)
    pages = all_pages(conn, [topic], limit=2000)
    assert [len(p["topics"][0]["partitions"]) for p in pages] == [2, 2, 1]
    # A limit below one still makes progress, one partition a page.
    assert len(all_pages(conn, [topic], limit=0)) == 5
    conn.close()


def test_bad_cursors_and_names_are_refused(broker: Broker, topic: str) -> None:
    create_topics(broker, {topic: 1})
    conn = CodecConnection(broker)
    elsewhere = describe(conn, [topic], 10, {"topic_name": f"{topic}-other", "partition_index": 0})
    assert [(t["name"], t["error_code"]) for t in elsewhere["topics"]] == [(topic, INVALID_REQUEST)]
    negative = describe(conn, [topic], 10, {"topic_name": topic, "partition_index": -1})
    assert negative["topics"][0]["error_code"] == INVALID_REQUEST
    past_the_end = describe(conn, [topic], 10, {"topic_name": topic, "partition_index": 9})
    assert past_the_end["topics"][0]["partitions"] == []
    assert past_the_end["next_cursor"] is None
    illegal = describe(conn, ["bad/name"], 10)
    assert illegal["topics"][0]["error_code"] == INVALID_TOPIC_EXCEPTION
    conn.close()
