"""A Python handler that raises answers the request with its API's error response
(UNKNOWN_SERVER_ERROR in every error-code field, the failure logged at ERROR with its
traceback) and the same connection goes on serving requests."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest
from raw_client import RawConnection

from kafkars import _core
from kafkars.broker import Broker
from kafkars.protocol import ApiKey
from kafkars.server.kafka_apis import HANDLERS


@pytest.fixture
def embedded() -> Iterator[Broker]:
    """An in-process broker, so a test can replace its handlers."""
    with Broker() as b:
        yield b


def boom(server: Any, request: Any) -> None:
    raise RuntimeError("handler failed on purpose")


def metadata_request(*names: str) -> Any:
    topics = [MetadataRequest.MetadataRequestTopic(version=8, name=n) for n in names]
    return MetadataRequest(version=8, topics=topics, allow_auto_topic_creation=False)


def test_raising_handler_answers_error_response_and_connection_stays(
    embedded: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    apis = embedded._server.apis
    conn = RawConnection(embedded)
    try:
        apis.handlers[ApiKey.METADATA] = boom
        with caplog.at_level(logging.ERROR, logger="kafkars.server.KafkaApis"):
            failed = conn.call(metadata_request("a", "b"), MetadataResponse, 8)
        assert [(t.name, t.error_code) for t in failed.topics] == [("a", -1), ("b", -1)]
        [record] = [r for r in caplog.records if r.name == "kafkars.server.KafkaApis"]
        assert record.levelno == logging.ERROR
        assert "handler failed on purpose" in record.getMessage()
        assert record.exc_info is not None and record.exc_info[0] is RuntimeError

        # The same connection answers the next requests normally.
        versions = conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse, 0)
        assert versions.error_code == 0 and versions.api_keys
        apis.handlers[ApiKey.METADATA] = HANDLERS[ApiKey.METADATA]
        ok = conn.call(metadata_request(), MetadataResponse, 8)
        assert [b.node_id for b in ok.brokers] == [embedded._server.broker_id]
    finally:
        conn.close()


def test_response_that_does_not_encode_answers_error_response(embedded: Broker) -> None:
    """A handler's response the codec cannot encode is replaced by the error response."""
    embedded._server.apis.handlers[ApiKey.METADATA] = lambda apis, request: {"topics": "oops"}
    with RawConnection(embedded) as conn:
        failed = conn.call(metadata_request("a"), MetadataResponse, 8)
        assert [(t.name, t.error_code) for t in failed.topics] == [("a", -1)]
        versions = conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse, 0)
        assert versions.error_code == 0


def test_produce_acks_0_that_fails_closes_the_connection(embedded: Broker) -> None:
    """acks=0 expects no response, so, as Kafka does, a failure closes the connection
    (the producer notices and reconnects); the broker serves new connections."""
    embedded._server.apis.handlers[ApiKey.PRODUCE] = boom
    partition = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=0, records=_core.build_batch([(None, b"v", 0, [])])
    )
    request = ProduceRequest(
        version=8,
        acks=0,
        timeout_ms=1000,
        topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[partition])],
    )
    with RawConnection(embedded) as conn:
        request.with_header(correlation_id=1, client_id="raw-test")
        conn.sock.sendall(bytes(request.encode(version=8, header=True, framed=True)))
        conn.sock.settimeout(10)
        assert conn.sock.recv(1) == b""  # closed by the broker
    with RawConnection(embedded) as conn:
        assert conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse, 0).error_code == 0


def test_admin_client_sees_unknown_server_error_and_carries_on(embedded: Broker) -> None:
    embedded._server.apis.handlers[ApiKey.DESCRIBE_CONFIGS] = boom
    admin = AdminClient({"bootstrap.servers": embedded.bootstrap_servers})
    resource = ConfigResource(ResourceType.BROKER, str(embedded._server.broker_id))
    with pytest.raises(KafkaException) as raised:
        admin.describe_configs([resource])[resource].result(10)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN
    assert admin.list_topics(timeout=10).brokers


def test_delayed_fetch_on_a_topic_deleted_while_it_waits_is_answered_at_once(
    embedded: Broker,
) -> None:
    embedded._server.controller.create_topic("waiting", 1, {})
    conn = RawConnection(embedded)
    try:
        partition = FetchRequest.FetchTopic.FetchPartition(
            version=11, partition=0, fetch_offset=0, partition_max_bytes=100_000
        )
        fetch = FetchRequest(
            version=11,
            replica_id=-1,
            max_wait_ms=20_000,
            min_bytes=1,
            max_bytes=1_000_000,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(version=11, topic="waiting", partitions=[partition])],
        )
        # The first read finds nothing and parks the fetch; deleting the topic answers it
        # long before its 20 s max_wait_ms, with the partition's error.
        threading.Timer(0.5, embedded._server.controller.delete_topic, ("waiting",)).start()
        started = time.monotonic()
        answered = conn.call(fetch, FetchResponse, 11)
        assert time.monotonic() - started < 10
        [topic] = answered.responses
        assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(0, 3)]
        versions = conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse, 0)
        assert versions.error_code == 0
    finally:
        conn.close()
