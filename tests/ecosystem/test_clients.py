"""kafka-clients 4.1.1 producers and consumers (tests/java Clients.java) against both
brokers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .support import both, step

Scenario = Callable[[str], dict[str, Any]]


@both()
def test_idempotent_producer_read_back_by_classic_consumer(scenario: Scenario) -> None:
    result = step(scenario("Clients"), "idempotent")
    assert result == {
        "produced": 5000,
        "consumed": 5000,
        "distinct": 5000,
        "in_order_per_key": True,
        "committed": 5000,
    }


@both()
def test_transactional_producer_commit_and_abort(scenario: Scenario) -> None:
    result = step(scenario("Clients"), "transactions")
    # 25 records in three transactions (one aborted) and three markers.
    assert result["read_committed"] == {
        "count": 15,
        "committed": 15,
        "aborted": 0,
        "end_offsets": 28,
    }
    assert result["read_uncommitted"] == {
        "count": 25,
        "committed": 15,
        "aborted": 10,
        "end_offsets": 28,
    }


@both()
def test_consumer_group_protocol(scenario: Scenario) -> None:
    result = step(scenario("Clients"), "consumer_protocol")
    assert result == {
        "consumed": 200,
        "assigned": 4,
        "type": "Consumer",
        "state": "Stable",
        "members": 1,
        "committed": 200,
    }


@both()
def test_every_compression_codec(scenario: Scenario) -> None:
    result = step(scenario("Clients"), "compression")
    assert result == {"none": 200, "gzip": 200, "snappy": 200, "lz4": 200, "zstd": 200}


@both()
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_members_share_partitions_and_one_leaves(scenario: Scenario, protocol: str) -> None:
    # classic: the cooperative-sticky assignor; consumer: the broker's uniform assignor.
    result = step(scenario("Clients"), f"rebalance_{protocol}")
    assert result == {"alone": 6, "shared": [3, 3], "union": 6, "after_leave": 6}


@both()
def test_consume_transform_produce_with_offsets_in_the_transaction(scenario: Scenario) -> None:
    result = step(scenario("Clients"), "consume_transform_produce")
    assert result == {
        "copied": 300,
        "transactions_positive": True,
        "group_committed": 300,
        "output_distinct": 300,
        "output_upper": True,
    }
