"""The Prometheus endpoint of a real broker process, after real traffic."""

from __future__ import annotations

import time
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
    by_topic = (("topic", topic),)
    assert m[("kafka_server_brokertopicmetrics_in_records_total", by_topic)] == 10
    bytes_in = m[("kafka_server_brokertopicmetrics_in_bytes_total", by_topic)]
    assert bytes_in > 10 * 100
    # What was fetched is at least what was appended (a fetch may return a batch again).
    assert m[("kafka_server_brokertopicmetrics_out_bytes_total", by_topic)] >= bytes_in
    # Records are counted on the way in only, as in Kafka (no header reads per fetch).
    assert ("kafka_server_brokertopicmetrics_out_records_total", by_topic) not in m
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


def test_request_histograms_lag_and_process_metrics_move(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    broker = make_broker(config={"kafkars.metrics.port": 0})
    produce_total = ("kafka_network_requestmetrics_time_seconds_count",)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for _ in range(20):
        p.produce(topic, value=b"v", partition=0)
        p.flush(10)
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"lag-{topic}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    for _ in range(5):
        assert c.poll(10) is not None
    c.commit(asynchronous=False)
    before = scrape(broker)

    for _ in range(20):
        p.produce(topic, value=b"v", partition=0)
        p.flush(10)
    produce = (("phase", "total"), ("request", "Produce"))
    # As in Kafka, a request's total time is recorded once its response is sent, which
    # can be just after the client has read it.
    deadline = time.monotonic() + 10
    while True:
        after = scrape(broker)
        counted = after[(*produce_total, produce)] - before[(*produce_total, produce)]
        if counted >= 20 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    c.close()

    assert counted >= 20
    assert after[("kafka_network_requestmetrics_time_seconds_sum", produce)] > 0
    # Every phase is recorded; a fetch that waited in the purgatory has remote time.
    for phase in ("request_queue", "local", "remote", "response_queue", "response_send"):
        key = (
            "kafka_network_requestmetrics_time_seconds_count",
            (("phase", phase),) + (("request", "Produce"),),
        )
        assert after[key] >= 20
    fetch_remote = (("phase", "remote"), ("request", "Fetch"))
    assert after[("kafka_network_requestmetrics_time_seconds_sum", fetch_remote)] > 0
    inf_bucket = ("kafka_network_requestmetrics_time_seconds_bucket", ((("le", "+Inf"),) + produce))
    assert after[(inf_bucket[0], tuple(sorted(inf_bucket[1])))] == after[(*produce_total, produce)]
    # 40 records, 5 committed: the group is 35 behind on partition 0.
    lag = (("group", f"lag-{topic}"), ("partition", "0"), ("topic", topic))
    assert after[("kafka_consumergroup_lag", lag)] == 35
    assert after[("process_resident_memory_bytes", ())] > 0
    assert any(name.startswith("python_gc_") for name, _ in after)
    assert after[("kafka_server_kafkarequesthandlerpool_idle_seconds_total", ())] > 0
    idle = ("kafka_network_socketserver_network_processor_idle_seconds_total", ())
    assert after[idle] > before[idle] > 0


def test_no_endpoint_unless_configured(broker: Broker) -> None:
    assert broker.metrics_port is None


def test_grafana_dashboard_queries_name_served_metrics(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    """Every metric the shipped dashboard queries is one the broker serves."""
    import json
    import re
    from pathlib import Path

    dashboard = json.loads(
        (Path(__file__).resolve().parents[2] / "grafana" / "kafkars-dashboard.json").read_text()
    )
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    queried = {
        name for expr in exprs for name in re.findall(r"\b((?:kafka|process)_[a-z_]+)\b", expr)
    }
    broker = make_broker(config={"kafkars.metrics.port": 0})
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce(topic, value=b"v", partition=0)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{topic}"})
    c.assign([TopicPartition(topic, 0, 0)])
    assert c.poll(10) is not None
    c.commit(asynchronous=False)
    c.close()
    served = {name for name, _ in scrape(broker)}
    assert queried and queried <= served, queried - served
