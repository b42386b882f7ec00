"""Shared fixtures: real brokers in child processes, unique topic names."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from kafkars.broker import Broker

# `long` tests run only with KAFKARS_LONG=1 (`make test-long`): the reference Apache Kafka
# side of the Java ecosystem and consumer-group migration tests (the kafkars side runs in
# CI), the long mixed-cluster tests (`make mixed` runs those too), and the few slowest
# scenarios whose ground CI covers elsewhere. CI stays under its 30-minute budget; the
# notes give test-long's results.
LONG = os.environ.get("KAFKARS_LONG") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: a long test, run by `make test-long`")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if LONG:
        return
    skip = pytest.mark.skip(reason="long: `make test-long` runs it")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


# What CONFORMANCE.md lists as the settings client suites assume.
TEST_CONFIG = {
    "auto.create.topics.enable": True,
    "num.partitions": 4,
    "group.min.session.timeout.ms": 1000,
    "group.initial.rebalance.delay.ms": 0,
}


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """One broker process shared by the session's tests (each test uses its own topics)."""
    with Broker(process=True, config=TEST_CONFIG) as b:
        yield b


@pytest.fixture
def make_broker() -> Iterator[Callable[..., Broker]]:
    """A factory for brokers a test owns (restarts, kills, special configs)."""
    started: list[Broker] = []

    def make(**kwargs: object) -> Broker:
        config = {**TEST_CONFIG, **kwargs.pop("config", {})}  # type: ignore[dict-item]
        b = Broker(process=True, config=config, **kwargs)  # type: ignore[arg-type]
        started.append(b)
        return b.start()

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
