"""franz-go's own integration tests against kafkars and Apache Kafka (`make franz-go`).

franz-go (a Go Kafka client) tests its group and transaction code against a live
cluster: `TestGroupETL` chains consumer groups (classic and KIP-848 `consumer` groups,
eager and cooperative balancers) through three topics; `TestTxnEtl` does the same with
transactional producers (exactly once). The test binary is built from the module this
folder pins (`go test -c`), then run once per broker with `KGO_SEEDS` pointing at it:
a fresh kafkars broker process and the reference Apache Kafka, one after the other, each
with a time limit. Prints one line per (broker, test): passed/failed and seconds.

    python tests/go/run.py [--tests TestGroupETL,TestTxnEtl] [--timeout-min 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ReferenceKafka

HERE = Path(__file__).resolve().parent
BINARY = HERE / "kgo.test"
# What franz-go's tests need of a broker: topics auto-created by their admin calls,
# KIP-848 groups, transactions on one broker.
KAFKARS_CONFIG = {
    "num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
}
KAFKA_CONFIG = {
    **KAFKARS_CONFIG,
    "group.initial.rebalance.delay.ms": 0,
}


def build() -> None:
    if BINARY.exists():
        return
    subprocess.run(
        ["go", "test", "-c", "-o", str(BINARY), "github.com/twmb/franz-go/pkg/kgo"],
        cwd=HERE,
        check=True,
    )


def run(name: str, seeds: str, test: str, timeout_min: int) -> tuple[bool, float, str]:
    env = {**os.environ, "KGO_SEEDS": seeds, "KGO_TEST_RF": "1"}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(BINARY), "-test.run", f"^{test}$", "-test.timeout", f"{timeout_min}m"],
            cwd=HERE,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_min * 60 + 60,
        )
        output = done.stdout + done.stderr
        ok = done.returncode == 0
    except subprocess.TimeoutExpired as e:
        output, ok = f"{e}", False
    seconds = time.monotonic() - started
    (HERE / f"{name}-{test}.log").write_text(output)
    return ok, seconds, output.strip().splitlines()[-1] if output.strip() else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", default="TestGroupETL,TestTxnEtl")
    ap.add_argument("--timeout-min", type=int, default=20)
    ap.add_argument("--brokers", default="kafkars,kafka")
    args = ap.parse_args()
    build()
    results = []
    for broker_name in args.brokers.split(","):
        for test in args.tests.split(","):
            # A fresh broker per test: no group or topic left over from the previous one.
            if broker_name == "kafka":
                server: Broker | ReferenceKafka = ReferenceKafka(config=KAFKA_CONFIG).start()
            else:
                server = Broker(process=True, config=KAFKARS_CONFIG).start()
            try:
                seeds = server.bootstrap_servers
                ok, seconds, last = run(broker_name, seeds, test, args.timeout_min)
            finally:
                server.stop()
            line = f"{broker_name:<8} {test:<14} {'passed' if ok else 'FAILED':<7} {seconds:7.1f} s"
            print(line + ("" if ok else f"  ({last})"), flush=True)
            results.append(ok)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
