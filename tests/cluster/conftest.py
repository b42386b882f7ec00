"""The cluster tests' fixture: ZooKeeper and three brokers for one test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkars.testing.cluster import Cluster

from .helpers import running_cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    yield from running_cluster()
