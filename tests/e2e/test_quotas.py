"""Client quotas: AlterClientQuotas/DescribeClientQuotas, and a producer over its byte
rate answered with a throttle time and held back for it."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient, NewTopic
from raw_client import CodecConnection

from kafkars import _core
from kafkars.broker import Broker

ALTER_QUOTAS, DESCRIBE_QUOTAS, PRODUCE = 49, 48, 0


Connection = CodecConnection


def test_producer_byte_rate_throttles(make_broker: Callable[..., Broker], topic: str) -> None:
    # Two one-second samples, so the throttle this test waits out stays short.
    broker = make_broker(config={"quota.window.num": 2})
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topics.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    admin = Connection(broker, "admin")
    entity = [{"entity_type": "client-id", "entity_name": f"{topic}-slow"}]
    ops = [{"key": "producer_byte_rate", "value": 10_000.0, "remove": False}]
    altered = admin.call(ALTER_QUOTAS, 1, {"entries": [{"entity": entity, "ops": ops}]})
    assert altered["entries"][0]["error_code"] == 0
    described = admin.call(
        DESCRIBE_QUOTAS,
        1,
        {
            "components": [
                {"entity_type": "client-id", "match_type": 0, "_match": f"{topic}-slow"}
            ],
            "strict": False,
        },
    )
    assert described["entries"][0]["values"] == [{"key": "producer_byte_rate", "value": 10_000.0}]
    bad = admin.call(
        ALTER_QUOTAS,
        1,
        {"entries": [{"entity": entity, "ops": [{"key": "nonsense", "value": 1.0}]}]},
    )
    assert bad["entries"][0]["error_code"] == 42  # INVALID_REQUEST

    slow = Connection(broker, f"{topic}-slow")
    batch = _core.build_batch([(None, b"x" * 50_000, 1_000, [])])
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    first = slow.call(PRODUCE, 9, body)
    throttle = first["throttle_time_ms"]
    # 50 KB within a 2 s sample against 10 KB/s: the client must wait (at most the sample).
    assert throttle > 0
    started = time.monotonic()
    slow.call(PRODUCE, 9, body)
    assert time.monotonic() - started >= throttle / 1000 * 0.8
    # Other clients are not throttled.
    other = Connection(broker, f"{topic}-other")
    assert other.call(PRODUCE, 9, body)["throttle_time_ms"] == 0
    # Removing the quota ends it.
    remove = [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]
    admin.call(ALTER_QUOTAS, 1, {"entries": [{"entity": entity, "ops": remove}]})


def test_quota_metrics_show_rate_and_throttle(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    broker = make_broker(config={"quota.window.num": 2, "kafkars.metrics.port": 0})
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topics.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    admin = Connection(broker, "admin")
    entity = [{"entity_type": "client-id", "entity_name": "metered"}]
    ops = [{"key": "producer_byte_rate", "value": 10_000.0, "remove": False}]
    admin.call(ALTER_QUOTAS, 1, {"entries": [{"entity": entity, "ops": ops}]})
    client = Connection(broker, "metered")
    batch = _core.build_batch([(None, b"x" * 50_000, 1_000, [])])
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    throttle = client.call(PRODUCE, 9, body)["throttle_time_ms"]
    assert throttle > 0
    url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
    families = text_string_to_metric_families(urllib.request.urlopen(url).read().decode())
    quota_samples = {
        s.name: s.value
        for family in families
        for s in family.samples
        if s.labels == {"quota": "producer_byte_rate", "user": "ANONYMOUS", "client_id": "metered"}
    }
    assert quota_samples["kafka_server_quota_rate"] > 10_000
    assert quota_samples["kafka_server_quota_throttle_time_seconds_total"] == throttle / 1000
