"""Record bytes never pass through Python objects: tens of MB through an in-process broker
while Python's own allocations (tracemalloc) stay a small fraction of that."""

from __future__ import annotations

import shutil
import subprocess
import tracemalloc

import pytest

from kafkars.broker import Broker

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")

RECORD = 10_000
COUNT = 4_000  # 40 MB each way


def test_produce_and_fetch_do_not_copy_records_into_python(tmp_path) -> None:
    payload = tmp_path / "records.txt"
    line = "x" * (RECORD - 1) + "\n"
    payload.write_text(line * COUNT)
    with Broker() as broker:
        b = broker.bootstrap_servers
        tracemalloc.start()
        with open(payload, "rb") as f:
            subprocess.run(
                ["kcat", "-b", b, "-P", "-t", "zc", "-p", "0", "-X", "message.max.bytes=20000"],
                stdin=f,
                check=True,
                timeout=120,
            )
        consumed = tmp_path / "consumed.txt"
        with open(consumed, "wb") as out:
            subprocess.run(
                ["kcat", "-b", b, "-C", "-t", "zc", "-p", "0", "-o", "beginning", "-e", "-q"],
                stdout=out,
                check=True,
                timeout=120,
            )
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert consumed.stat().st_size == RECORD * COUNT
    moved = 2 * RECORD * COUNT
    print(f"python peak allocation {peak} bytes while moving {moved} bytes")
    # Python holds handles and small dicts per request, never the record bytes.
    assert peak < moved / 20, f"Python peak {peak} bytes while moving {moved} bytes"
