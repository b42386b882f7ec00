"""Apache Kafka and kafkars side by side: one of each per session, configured alike.

Every test gets a `pair` (a connection to each broker) and adds what it saw to the
session's report, written as JSON at the end (`$KAFKARS_DIFFERENTIAL_REPORT`, default
`.cache/differential.json`; `tests/differential/report.py` renders it)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ReferenceKafka

from .compare import Pair, Report
from .known import KNOWN_DIFFERENCES

# What both brokers run with: Kafka's defaults where kafkars' differ, one node id, and
# settings that make a single node work (replication factors 1, no rebalance delay).
COMMON_CONFIG = {
    "node.id": 1,
    "broker.id": 1,
    "num.partitions": 1,
    "auto.create.topics.enable": True,
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
}

REPORT_PATH = Path(
    os.environ.get(
        "KAFKARS_DIFFERENTIAL_REPORT",
        Path(__file__).resolve().parents[2] / ".cache" / "differential.json",
    )
)


@pytest.fixture(scope="session")
def reference() -> Iterator[ReferenceKafka]:
    config = {k: v for k, v in COMMON_CONFIG.items() if k not in ("node.id", "broker.id")}
    # The classic transaction protocol, the one kafkars implements (clients choose by
    # this feature).
    with ReferenceKafka(node_id=1, config=config, features={"transaction.version": 1}) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def kafkars_broker() -> Iterator[Broker]:
    with Broker(process=True, config=COMMON_CONFIG) as broker:
        yield broker


@pytest.fixture(scope="session")
def report() -> Iterator[Report]:
    report = Report()
    yield report
    REPORT_PATH.parent.mkdir(parents=True, exist_ok=True)
    # Several sessions (xdist or reruns) would overwrite each other: one file a run.
    REPORT_PATH.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True))


@pytest.fixture
def pair(reference: ReferenceKafka, kafkars_broker: Broker, report: Report) -> Iterator[Pair]:
    p = Pair(
        reference.bootstrap_servers,
        kafkars_broker.bootstrap_servers,
        report,
        KNOWN_DIFFERENCES,
    )
    yield p
    p.close()


@pytest.fixture
def name() -> str:
    """A fresh name (topics, groups, transactional ids) for one test."""
    return f"d-{uuid.uuid4().hex[:8]}"
