"""Seed the fuzz corpora from real traffic and real broker files.

    .venv/bin/python fuzz/capture.py [--out fuzz/corpus]

Starts a broker whose advertised listener is a small TCP proxy, so every request the
clients send passes through the proxy, which saves each request frame (without its size
prefix) to `<out>/request_frame/`. The clients are confluent-kafka (librdkafka) and
kafka-python: producers with every codec, idempotent and transactional producers,
consumer groups committing offsets, and admin calls. One minimal frame per API key and
version the bridge knows is added, encoded by `kafkars._core.protocol.encode_request`.
Once the broker is stopped, the files it wrote seed the file targets: segment batches
(`record_batch`, `log_append`, `arrow_decode`, `decompress`), indexes (`index_files`),
checkpoints and `meta.properties` (`checkpoint_files`), producer snapshots
(`producer_snapshot`) and whole partition directories (`log_recovery`, in the layout
of `kafkars_fuzz::Parts`). Names are content hashes, so re-running adds only new seeds.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import shutil
import socket
import struct
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kafkars._core import protocol
from kafkars.broker import Broker

# Segment and index seeds are cut to this many bytes: the corpora stay small (< 2 MB).
MAX_SEED = 16 << 10


def save(out: Path, target: str, data: bytes) -> None:
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


class FrameProxy:
    """Forwards 127.0.0.1:<port> to the broker and records each client request frame."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.upstream: tuple[str, int] | None = None
        self.frames = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            assert self.upstream is not None
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket) -> None:
        buf = b""
        try:
            while True:
                chunk = client.recv(1 << 16)
                if not chunk:
                    break
                server.sendall(chunk)
                buf += chunk
                while len(buf) >= 4:
                    (size,) = struct.unpack(">i", buf[:4])
                    if len(buf) < 4 + size:
                        break
                    frame, buf = buf[4 : 4 + size], buf[4 + size :]
                    if len(frame) <= 256 << 10:
                        save(self.out, "request_frame", frame)
                        self.frames += 1
        except OSError:
            pass
        finally:
            for s in (client, server):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(1 << 16):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)


def confluent_traffic(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"seed-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
        f.result(15)
    for f in admin.create_partitions([NewPartitions(topics[1], 3)]).values():
        f.result(15)
    for f in admin.describe_configs([ConfigResource("topic", topics[0])]).values():
        f.result(15)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                "enable.idempotence": codec in ("none", "zstd"),
                "linger.ms": 5,
            }
        )
        for i in range(30):
            headers = [("h", b"v")] if i % 3 == 0 else None
            key = None if i % 4 == 0 else f"k{i}".encode()
            p.produce(topics[i % 2], value=f"{codec}-{i}".encode() * 5, key=key, headers=headers)
        p.flush(15)
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "seed-txn"})
    tp.init_transactions(15)
    for commit in (True, False):
        tp.begin_transaction()
        tp.produce(topics[0], value=b"txn", key=b"t", partition=0)
        if commit:
            tp.commit_transaction(15)
        else:
            tp.abort_transaction(15)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "seed-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    c.subscribe(topics)
    got, deadline = 0, time.time() + 20
    while got < 100 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.committed([TopicPartition(topics[0], 0)], 10)
    c.close()
    list_groups = admin.list_consumer_groups()
    list_groups.result(15)
    for f in admin.delete_topics([topics[1]]).values():
        f.result(15)


def kafka_python_traffic(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    topic = f"seed-kp-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    # Admin calls beyond what the broker implements only fail: their frames still count.
    for call, call_args in (
        ("describe_cluster", ()),
        ("describe_topics", ([topic],)),
        ("list_groups", ()),
        ("describe_groups", (["seed-group"],)),
        ("list_group_offsets", ("seed-group",)),
        ("describe_log_dirs", ()),
        ("list_transactions", ()),
        ("describe_transactions", (["seed-txn"],)),
        ("describe_features", ()),
    ):
        try:
            getattr(admin, call)(*call_args)
        except Exception as e:  # noqa: BLE001
            print(f"kafka-python {call}: {e!r}")
    for codec in (None, "gzip"):
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec)
        for i in range(20):
            p.send(topic, key=b"k", value=f"kp-{i}".encode(), headers=[("a", b"b")])
        p.flush(15)
        p.close()
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="seed-kp",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    for _ in c:
        pass
    c.commit()
    c.close()
    admin.close()


def every_key_and_version(out: Path) -> int:
    """One frame per API key and version, from an empty request dict (all defaults)."""
    n = 0
    for key, low, high in protocol.api_keys().values():
        for version in range(low, high + 1):
            try:
                frame = protocol.encode_request(key, version, 1, "seed", {})
            except Exception:  # noqa: BLE001 - a version the defaults cannot encode
                continue
            save(out, "request_frame", frame[4:])
            n += 1
    return n


def batches(data: bytes) -> list[bytes]:
    """The record batches of a segment, in order."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">i", data[pos + 8 : pos + 12])
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        out.append(data[pos:end])
        pos = end
    return out


def part(data: bytes) -> bytes:
    data = data[:0xFFFF]
    return struct.pack(">H", len(data)) + data


def broker_files(out: Path, log_dir: Path) -> None:
    for path in sorted(log_dir.rglob("*")):
        if not path.is_file() or path.stat().st_size == 0:
            continue
        data = path.read_bytes()
        name = path.name
        if name.endswith(".log"):
            segment = batches(data)
            head = b""
            for b in segment:
                if len(head) + len(b) > MAX_SEED:
                    break
                head += b
            if not head:
                continue
            save(out, "record_batch", head)
            save(out, "log_append", head)
            for b in segment[:8]:
                save(out, "record_batch", b)
                save(out, "arrow_decode", bytes([0x1F]) + b)
                codec = struct.unpack(">h", b[21:23])[0] & 7
                if codec:
                    save(out, "decompress", bytes([codec]) + b[61:])
            save(out, "arrow_decode", bytes([0x0F]) + part(segment[0]) + head)
            directory = path.parent
            stem = name[: -len(".log")]

            def sibling(suffix: str, d: Path = directory, s: str = stem) -> bytes:
                p = d / f"{s}{suffix}"
                return p.read_bytes()[:MAX_SEED] if p.exists() else b""

            epochs = directory / "leader-epoch-checkpoint"
            snapshot = sorted(directory.glob("*.snapshot"))
            for flags in (0, 1):
                save(
                    out,
                    "log_recovery",
                    bytes([flags])
                    + part(sibling(".index"))
                    + part(sibling(".timeindex"))
                    + part(epochs.read_bytes() if epochs.exists() else b"")
                    + part(snapshot[-1].read_bytes() if snapshot else b"")
                    + head,
                )
        elif name.endswith((".index", ".timeindex", ".txnindex")):
            base = int(name.split(".")[0])
            save(out, "index_files", struct.pack(">q", base) + data[:MAX_SEED])
        elif name.endswith(".snapshot"):
            save(out, "producer_snapshot", data)
        elif "checkpoint" in name or name == "meta.properties":
            save(out, "checkpoint_files", data[:MAX_SEED])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "corpus")
    args = parser.parse_args()
    out: Path = args.out
    proxy = FrameProxy(out)
    config: dict[str, Any] = {
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
        "auto.create.topics.enable": True,
        "group.initial.rebalance.delay.ms": 0,
        "transaction.state.log.replication.factor": 1,
    }
    log_dir = Path(tempfile.mkdtemp(prefix="kafkars-capture-"))
    broker = Broker(process=True, config=config, log_dir=log_dir)
    broker.start()
    try:
        proxy.upstream = ("127.0.0.1", broker.port)
        bootstrap = f"127.0.0.1:{proxy.port}"
        confluent_traffic(bootstrap)
        kafka_python_traffic(bootstrap)
        time.sleep(1)
    finally:
        broker.stop()
    print(f"captured {proxy.frames} request frames")
    print(f"{every_key_and_version(out)} frames for every key and version")
    broker_files(out, log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    for d in sorted(out.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
