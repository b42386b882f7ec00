"""TLS against plaintext on one broker, in one run: produce and consume MB/s through the
PLAINTEXT and the SSL listener with confluent-kafka, and their ratio.

    python bench/tls_bench.py [--records 200000] [--size 1024] [--json bench/results/tls.json]

Plaintext fetches go out with sendfile(2); TLS fetches are read and encrypted in user
space (rustls), since this kernel offers no kTLS (`tls` is not in
/proc/sys/net/ipv4/tcp_available_ulp). The figure says what that costs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkars.broker import Broker


def produce(
    bootstrap: str, topic: str, records: int, size: int, client: dict[str, str]
) -> tuple[float, float]:
    """Records/s and MB/s of one confluent-kafka producer, acks=1, to 4 partitions."""
    p = Producer({**client, "bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    value = os.urandom(size)
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=i % 4)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    elapsed = time.perf_counter() - start
    return records / elapsed, records * size / elapsed / 1e6


def consume(
    bootstrap: str, topic: str, records: int, size: int, client: dict[str, str]
) -> tuple[float, float]:
    """Records/s and MB/s of one confluent-kafka consumer reading the 4 partitions."""
    c = Consumer(
        {
            **client,
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(4)])
    got = 0
    start = time.perf_counter()
    while got < records:
        got += len(c.consume(num_messages=100_000, timeout=1.0))
    elapsed = time.perf_counter() - start
    c.close()
    return records / elapsed, records * size / elapsed / 1e6


def make_pki(d: Path) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=localhost")  # fmt: skip
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2",
            "-extfile", "server.ext")  # fmt: skip
    (d / "keystore.pem").write_bytes(
        (d / "server.key").read_bytes() + (d / "server.pem").read_bytes()
    )


def ktls_available() -> bool:
    try:
        ulps = Path("/proc/sys/net/ipv4/tcp_available_ulp").read_text().split()
    except OSError:
        return False
    return "tls" in ulps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--json", default="bench/results/tls.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pki = Path(tmp)
        make_pki(pki)
        config = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki / "keystore.pem"),
            "num.partitions": 4,
        }
        results: dict[str, dict[str, float]] = {}
        with Broker(process=True, config=config) as broker:
            addresses = {name: f"{host}:{port}" for name, _, host, port in broker.listeners}
            clients = {
                "PLAINTEXT": {},
                "SSL": {"security.protocol": "SSL", "ssl.ca.location": str(pki / "ca.pem")},
            }
            for name in ("PLAINTEXT", "SSL"):
                topic = f"tls-bench-{uuid.uuid4().hex[:6]}"
                bootstrap, client = addresses[name], clients[name]
                _, produce_mb = produce(bootstrap, topic, args.records, args.size, client)
                _, consume_mb = consume(bootstrap, topic, args.records, args.size, client)
                results[name] = {"produce_mb_s": produce_mb, "consume_mb_s": consume_mb}
    ratio = {
        k: results["SSL"][k] / results["PLAINTEXT"][k] for k in ("produce_mb_s", "consume_mb_s")
    }
    print(f"{args.records} records of {args.size} B, one broker, confluent-kafka, loopback")
    print(f"{'listener':<10} {'produce MB/s':>13} {'consume MB/s':>13}")
    for name, r in results.items():
        print(f"{name:<10} {r['produce_mb_s']:>13.1f} {r['consume_mb_s']:>13.1f}")
    print(f"{'SSL/plain':<10} {ratio['produce_mb_s']:>13.2f} {ratio['consume_mb_s']:>13.2f}")
    print(f"kTLS: {'available' if ktls_available() else 'not offered by this kernel'}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "records": args.records,
                "size": args.size,
                "results": results,
                "ratio": ratio,
                "ktls": ktls_available(),
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
