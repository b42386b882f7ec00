"""kafka-clients 4.1.1 producers and consumers (tests/java Clients.java) against both
brokers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
