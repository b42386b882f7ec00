"""The kcat transactional scenario from CONFORMANCE.md (librdkafka 2.0 in kcat)."""

from __future__ import annotations

import shutil
import uuid

import pytest
from test_kcat import kcat

from kafkars.broker import Broker

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")


def test_transactional_produce_then_read_committed(broker: Broker, topic: str) -> None:
    b = broker.bootstrap_servers
    txn_id = f"tx{uuid.uuid4().hex[:8]}"
    kcat(
        "-b",
        b,
        "-P",
        "-t",
        topic,
        "-p",
        "1",
        "-X",
        f"transactional.id={txn_id}",
        stdin="tx1\ntx2\n",
    )
    out = kcat(
        "-b", b, "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e", "-q",
        "-X", "isolation.level=read_committed",
    )  # fmt: skip
    assert out.split() == ["tx1", "tx2"]
