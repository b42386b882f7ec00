"""Broker metrics in Prometheus's text format, served on `kafkars.metrics.port`.

The names follow Kafka's JMX beans as Prometheus exporters usually render them, with
Prometheus's unit suffixes (`_bytes`, `_seconds`, counters ending `_total`):
BrokerTopicMetrics (records and bytes in and out per topic), RequestMetrics (requests per
API and histograms of where their time went, kept by the Rust network layer), the request
queue, handler idle time, purgatory sizes, ReplicaManager's under-replicated partitions,
per-partition log gauges, consumer-group lag, and the process_* and python_* collectors of
prometheus-client. The hot paths only bump plain integers; every family is built when
Prometheus scrapes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from kafkars.protocol import ApiKey

if TYPE_CHECKING:
    from kafkars.server.kafka_server import KafkaServer

log = logging.getLogger("kafkars.server.Metrics")


class BrokerCollector:
    """Builds every family from the broker's live state at scrape time."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        yield from self._topic_metrics()
        yield from self._request_metrics()
        yield from self._request_time_histograms()
        yield from self._broker_gauges()
        yield from self._log_gauges()
        yield from self._group_lag()
        yield from self._quota_metrics()

    def _topic_metrics(self) -> Iterator[Metric]:
        """Kafka's BrokerTopicMetrics, summed per topic from the counters the Rust
        partitions keep (plus those of partitions deleted since start-up)."""
        replica_manager = self.server.replica_manager
        totals: dict[str, list[int]] = {
            topic: list(values) for topic, values in replica_manager.retired_counters.items()
        }
        for p in replica_manager.partitions():
            sums = totals.setdefault(p.topic, [0, 0, 0])
            for i, value in enumerate(p.counters):
                sums[i] += value
        # CounterMetricFamily appends `_total` to each name.
        for i, (name, doc) in enumerate(
            (
                ("kafka_server_brokertopicmetrics_in_bytes", "Bytes appended."),
                ("kafka_server_brokertopicmetrics_in_records", "Records in."),
                ("kafka_server_brokertopicmetrics_out_bytes", "Bytes fetched."),
            )
        ):
            family = CounterMetricFamily(name, doc, labels=["topic"])
            for topic, values in sorted(totals.items()):
                if values[i]:
                    family.add_metric([topic], values[i])
            yield family

    def _request_metrics(self) -> Iterator[Metric]:
        apis = getattr(self.server, "apis", None)
        if apis is None:
            return
        count = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests handled.", labels=["request"]
        )
        seconds = CounterMetricFamily(
            "kafka_network_requestmetrics_handler_time_seconds",
            "Time spent in the request handler.",
            labels=["request"],
        )
        times = dict(apis.request_time_ns)
        for key, n in sorted(dict(apis.request_count).items()):
            name = _request_name(key)
            count.add_metric([name], n)
            seconds.add_metric([name], times.get(key, 0) / 1e9)
        yield count
        yield seconds

    def _request_time_histograms(self) -> Iterator[Metric]:
        socket_server = self.server.socket_server
        if socket_server is None:
            return
        bounds = [f"{b:g}" for b in socket_server.request_metrics_buckets()] + ["+Inf"]
        family = HistogramMetricFamily(
            "kafka_network_requestmetrics_time_seconds",
            "Where requests' time went, per API and phase (Kafka's RequestMetrics: "
            "request_queue, local, remote, response_queue, response_send, total).",
            labels=["request", "phase"],
        )
        for key, phase, cumulative, count, total in socket_server.request_metrics():
            buckets = list(zip(bounds, [*cumulative, count], strict=True))
            family.add_metric([_request_name(key), phase], buckets, total)
        yield family

    def _broker_gauges(self) -> Iterator[Metric]:
        server = self.server
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatory_size",
            "Operations waiting in a purgatory.",
            labels=["delayed_operation"],
        )
        delayed = server.delayed_operations
        purgatory.add_metric(["Fetch"], delayed.delayed_fetches)
        purgatory.add_metric(["Produce"], delayed.delayed_produces)
        yield purgatory
        led = [p for p in server.replica_manager.partitions() if p.is_leader]
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_under_replicated_partitions",
            "Partitions this broker leads whose ISR is smaller than their replica set.",
            value=sum(1 for p in led if len(p.isr) < len(p.replicas)),
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_leader_count",
            "Partitions this broker leads.",
            value=len(led),
        )
        cluster = getattr(server, "cluster", None)
        if cluster is not None:
            controller = cluster.controller
            yield GaugeMetricFamily(
                "kafka_controller_kafkacontroller_active_controller_count",
                "1 on the broker that is the elected controller.",
                value=1 if controller.active else 0,
            )
            yield GaugeMetricFamily(
                "kafka_controller_kafkacontroller_offline_partitions_count",
                "Partitions without a live leader (reported by the active controller).",
                value=controller.offline_partition_count() if controller.active else 0,
            )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_partition_count",
            "Partitions this broker hosts.",
            value=len(server.replica_manager.partitions()),
        )
        socket_server = server.socket_server
        if socket_server is not None:
            yield GaugeMetricFamily(
                "kafka_network_socketserver_connections",
                "Open client connections.",
                value=socket_server.connection_count,
            )
            yield GaugeMetricFamily(
                "kafka_network_requestchannel_request_queue_size",
                "Requests waiting for a handler thread.",
                value=socket_server.request_queue_size,
            )
            yield CounterMetricFamily(
                "kafka_network_socketserver_network_processor_idle_seconds",
                "Time the network processors spent waiting for sockets, summed over the "
                "processors (rate() / num.network.threads is Kafka's "
                "NetworkProcessorAvgIdlePercent).",
                value=socket_server.network_idle_seconds,
            )
            yield CounterMetricFamily(
                "kafka_server_kafkarequesthandlerpool_idle_seconds",
                "Time the request handler threads spent waiting for a request, summed over "
                "the threads (rate() / num.io.threads is Kafka's RequestHandlerAvgIdlePercent).",
                value=socket_server.handler_idle_seconds,
            )

    def _log_gauges(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Partition size in bytes.", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_end_offset", "Log end offset.", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_start_offset", "Log start offset.", labels=labels)
        segments = GaugeMetricFamily(
            "kafka_log_num_log_segments", "Segments in the partition.", labels=labels
        )
        for p in self.server.replica_manager.partitions():
            lg = p.log
            key = [lg.topic, str(lg.partition)]
            size.add_metric(key, lg.size_in_bytes)
            end.add_metric(key, lg.log_end_offset)
            start.add_metric(key, lg.log_start_offset)
            segments.add_metric(key, lg.num_segments)
        yield from (size, end, start, segments)

    def _quota_metrics(self) -> Iterator[Metric]:
        """Kafka's per-client quota metrics: the observed rate and the throttle time."""
        manager = getattr(self.server, "quota_manager", None)
        if manager is None:
            return
        labels = ["quota", "user", "client_id"]
        rate = GaugeMetricFamily(
            "kafka_server_quota_rate",
            "Observed rate of a client with a quota: bytes per second for "
            "producer_byte_rate/consumer_byte_rate, ms per second for request_percentage.",
            labels=labels,
        )
        for key, user, client, value in manager.rates(int(time.time() * 1000)):
            rate.add_metric([key, user, client], value)
        throttled = CounterMetricFamily(
            "kafka_server_quota_throttle_time_seconds",
            "Throttle time given to clients over their quota.",
            labels=labels,
        )
        for (key, user, client), ms in sorted(dict(manager.throttle_ms).items()):
            throttled.add_metric([key, user, client], ms / 1000)
        yield from (rate, throttled)

    def _group_lag(self) -> Iterator[Metric]:
        """Per group and partition: log end offset minus the committed offset."""
        family = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "Records between a group's committed offset and the log end offset.",
            labels=["group", "topic", "partition"],
        )
        coordinator = getattr(self.server, "group_coordinator", None)
        if coordinator is not None:
            ends = {
                (p.log.topic, p.log.partition): p.log.log_end_offset
                for p in self.server.replica_manager.partitions()
            }
            for group in coordinator.groups():
                for (topic, partition), committed in sorted(dict(group.offsets).items()):
                    end = ends.get((topic, partition))
                    if end is not None and committed.offset >= 0:
                        family.add_metric(
                            [group.group_id, topic, str(partition)],
                            max(0, end - committed.offset),
                        )
        yield family


def _request_name(key: int) -> str:
    """Kafka's request names (`Produce`, `FetchConsumer`, ...) in CamelCase."""
    try:
        return ApiKey(key).request_name
    except ValueError:
        return str(key)


class MetricsServer:
    """The Prometheus text endpoint on its own port (0 picks a free one)."""

    def __init__(self, server: KafkaServer, host: str, port: int) -> None:
        from prometheus_client import start_http_server

        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(server))  # type: ignore[arg-type]
        # process_* (CPU, memory, open files) and python_* (GC, version), as any exporter.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._http, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.port: int = self._http.server_port
        log.info("Metrics on http://%s:%d/metrics", host, self.port)

    def shutdown(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
