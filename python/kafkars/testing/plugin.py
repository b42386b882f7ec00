"""pytest plugin: `kafka_broker` hands a test a running kafkars broker (one per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkars.broker import Broker


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Broker]:
    """A broker in a child process on a free port, with auto topic creation."""
    with Broker(process=True, config={"auto.create.topics.enable": True}) as broker:
        yield broker
