"""The Prometheus endpoint of a real broker process, after real traffic."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from kafkars.broker import Broker


def scrape(broker: Broker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_endpoint_counts_traffic(make_broker: Callable[..., Broker], topic: str) -> None:
    broker = make_broker(config={"kafkars.metrics.port": 0})
    assert broker.metrics_port
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for i in range(10):
        p.produce(topic, value=b"x" * 100, key=str(i).encode(), partition=0)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "m"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    while got < 10:
        m = c.poll(10)
        assert m is not None and m.error() is None
        got += 1
    c.close()

    m = scrape(broker)
    assert m[("kafka_server_brokertopicmetrics_messages_in_total", (("topic", topic),))] == 10
    bytes_in = m[("kafka_server_brokertopicmetrics_bytes_in_total", (("topic", topic),))]
    assert bytes_in > 10 * 100
    # What was fetched is at least what was appended (a fetch may return a batch again).
    assert m[("kafka_server_brokertopicmetrics_bytes_out_total", (("topic", topic),))] >= bytes_in
    part = (("partition", "0"), ("topic", topic))
    assert m[("kafka_log_log_end_offset", part)] == 10
    assert m[("kafka_log_log_start_offset", part)] == 0
    assert m[("kafka_log_log_size", part)] == bytes_in
    assert m[("kafka_log_num_log_segments", part)] == 1
    assert m[("kafka_network_requestmetrics_requests_total", (("request", "Produce"),))] >= 1
    assert m[("kafka_network_requestmetrics_requests_total", (("request", "Fetch"),))] >= 1
    assert (
        m[("kafka_network_requestmetrics_handler_time_seconds_total", (("request", "Fetch"),))] > 0
    )
    assert m[("kafka_server_replicamanager_under_replicated_partitions", ())] == 0
    # The consumer's last long poll may still be waiting for its max wait.
    for op in ("Fetch", "Produce"):
        waiting = m[
            ("kafka_server_delayedoperationpurgatory_purgatory_size", (("delayed_operation", op),))
        ]
        assert waiting in (0, 1)
    assert m[("kafka_network_socketserver_connections", ())] >= 1


def test_no_endpoint_unless_configured(broker: Broker) -> None:
    assert broker.metrics_port is None
