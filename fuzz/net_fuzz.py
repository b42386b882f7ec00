"""Network mutation fuzzer: mutated real client requests against a running broker.

    .venv/bin/python fuzz/net_fuzz.py [--seconds 60] [--inputs N] [--check-every 250]
                                      [--bootstrap HOST:PORT] [--corpus fuzz/corpus/request_frame]

Each input is a request frame from the corpus (real client traffic, see capture.py),
mutated: bit flips, interesting values, count/length fields inflated to 2^31-1 (and
varint and i16 forms), truncation, splicing two frames, random API keys and versions,
appended junk, and sometimes a size prefix that lies. Inputs go out on short-lived
connections, several per connection until the broker closes it. After every
`--check-every` inputs the broker must still be alive and serve a produce/consume round
trip (confluent-kafka); a failed check is a crash: the inputs since the previous check
are saved under `--crash-dir` and, when this script started the broker, it is restarted.
Without `--bootstrap` a broker child process is started (and its resident memory is
reported). Exit status 1 when any crash was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent

# Values that break length and count fields.
INFLATED_I32 = [0x7FFFFFFF, 0x7FFFFFFE, 0xFFFFFFFF, 0x80000000, 0x00FFFFFF, 0x10000]
INFLATED_VARINTS = [
    b"\xff\xff\xff\xff\x0f",  # u32::MAX: a compact length of 2^32-2
    b"\xfe\xff\xff\xff\x07",  # 2^31-1 as a zigzag-free varint
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # u64::MAX
    b"\x80\x80\x80\x80\x80\x80",  # an unterminated varint
]
INFLATED_I16 = [0x7FFF, 0xFFFF, 0x8000]


class Mutator:
    def __init__(self, seeds: list[bytes], rng: random.Random, skip: set[int]) -> None:
        self.seeds = seeds
        self.rng = rng
        self.skip = skip

    def mutate(self, frame: bytes) -> tuple[bytes, str]:
        rng = self.rng
        data = bytearray(frame)
        done = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            kind = rng.choice(
                (
                    "bitflip",
                    "byte",
                    "inflate32",
                    "inflate32",
                    "varint",
                    "inflate16",
                    "truncate",
                    "splice",
                    "keyversion",
                    "junk",
                    "repeat",
                )
            )
            done.append(kind)
            n = len(data)
            if kind == "bitflip" and n:
                for _ in range(rng.randint(1, 8)):
                    i = rng.randrange(n)
                    data[i] ^= 1 << rng.randrange(8)
            elif kind == "byte" and n:
                data[rng.randrange(n)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            elif kind == "inflate32" and n >= 4:
                # Header is 8 bytes (key, version, correlation): fields come after.
                i = rng.randrange(min(8, n - 4), n - 3) if n > 12 else rng.randrange(n - 3)
                data[i : i + 4] = struct.pack(">I", rng.choice(INFLATED_I32))
            elif kind == "varint" and n:
                i = rng.randrange(n)
                v = rng.choice(INFLATED_VARINTS)
                if rng.random() < 0.5:
                    data[i : i + len(v)] = v
                else:
                    data[i:i] = v
            elif kind == "inflate16" and n >= 2:
                i = rng.randrange(n - 1)
                data[i : i + 2] = struct.pack(">H", rng.choice(INFLATED_I16))
            elif kind == "truncate" and n > 1:
                del data[rng.randrange(1, n) :]
            elif kind == "splice":
                other = rng.choice(self.seeds)
                cut_a = rng.randrange(len(data) + 1)
                cut_b = rng.randrange(len(other) + 1)
                data = data[:cut_a] + bytearray(other[cut_b:])
            elif kind == "keyversion" and n >= 4:
                key = rng.choice((rng.randrange(0, 90), rng.randrange(-32768, 32768)))
                if key in self.skip:
                    key = 18  # ApiVersions
                version = rng.choice((rng.randrange(0, 20), rng.randrange(-32768, 32768)))
                data[0:4] = struct.pack(">hh", key, version)
            elif kind == "junk":
                data += os.urandom(rng.choice((1, 4, 16, 256)))
            elif kind == "repeat" and n:
                i = rng.randrange(n)
                j = min(n, i + rng.randint(1, 64))
                data[j:j] = data[i:j] * rng.randint(1, 16)
        return bytes(data), "+".join(done)

    def prefix(self, body: bytes) -> bytes:
        """The size prefix: nearly always right; sometimes short, long or hostile."""
        r = self.rng.random()
        if r < 0.97:
            size = len(body)
        elif r < 0.98:
            size = self.rng.randrange(0, max(1, len(body)))
        elif r < 0.99:
            size = len(body) + self.rng.randint(1, 64)
        else:
            size = self.rng.choice((-1, 0x7FFFFFFF, 0x7FFFFF00, -0x80000000))
        return struct.pack(">i", size) + body


class Target:
    """The broker under test: an address, and the child process when this script owns it."""

    def __init__(self, bootstrap: str | None) -> None:
        self.broker: Any = None
        self.log_dir: Path | None = None
        if bootstrap:
            host, _, port = bootstrap.rpartition(":")
            self.addr = (host, int(port))
        else:
            self.start()

    def start(self) -> None:
        from kafkars.broker import Broker

        self.log_dir = Path(tempfile.mkdtemp(prefix="kafkars-netfuzz-"))
        config = {"auto.create.topics.enable": True, "num.partitions": 1}
        self.broker = Broker(process=True, config=config, log_dir=self.log_dir)
        self.broker.start()
        self.addr = ("127.0.0.1", self.broker.port)

    @property
    def bootstrap(self) -> str:
        return f"{self.addr[0]}:{self.addr[1]}"

    def pid(self) -> int | None:
        child = getattr(self.broker, "_child", None)
        return child.pid if child is not None else None

    def exited(self) -> int | None:
        child = getattr(self.broker, "_child", None)
        return child.poll() if child is not None else None

    def rss_kib(self) -> int | None:
        pid = self.pid()
        if pid is None:
            return None
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def restart(self) -> None:
        """A fresh broker on a fresh log dir (what the last one wrote may not load)."""
        if self.broker is None:
            return
        self.broker.kill()
        self.start()

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()


class RoundTrip:
    """Produce one record and consume it back (confluent-kafka), as a liveness check."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.topic = f"netfuzz-{uuid.uuid4().hex[:8]}"
        self._clients: tuple[Any, Any] | None = None

    def _make(self) -> tuple[Any, Any]:
        from confluent_kafka import Consumer, Producer

        common = {"bootstrap.servers": self.target.bootstrap, "log_level": 0}
        producer = Producer({**common, "acks": "all", "message.timeout.ms": 10000})
        consumer = Consumer(
            {**common, "group.id": f"netfuzz-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
        )
        return producer, consumer

    def reset(self) -> None:
        if self._clients is not None:
            self._clients[1].close()
        self._clients = None

    def check(self) -> str | None:
        """None when the round trip works, else why not."""
        from confluent_kafka import TopicPartition

        if self._clients is None:
            self._clients = self._make()
        producer, consumer = self._clients
        value = uuid.uuid4().bytes
        delivered: list[Any] = []
        producer.produce(
            self.topic, value=value, partition=0, on_delivery=lambda e, m: delivered.append((e, m))
        )
        producer.flush(15)
        if not delivered:
            return "produce: no delivery report within 15 s"
        err, msg = delivered[0]
        if err is not None:
            return f"produce: {err}"
        consumer.assign([TopicPartition(self.topic, 0, msg.offset())])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            if m.value() == value:
                return None
        return "consume: the produced record did not come back within 15 s"


def send_inputs(
    addr: tuple[str, int], inputs: list[bytes], rng: random.Random, read_timeout: float
) -> int:
    """Sends the framed inputs, several per connection; returns how many were sent."""
    sent = 0
    i = 0
    while i < len(inputs):
        try:
            s = socket.create_connection(addr, timeout=5)
        except OSError:
            return sent
        s.settimeout(read_timeout)
        try:
            for _ in range(rng.randint(1, 8)):
                if i >= len(inputs):
                    break
                s.sendall(inputs[i])
                i += 1
                sent += 1
                try:
                    if not s.recv(1 << 16):
                        break  # the broker closed the connection
                except TimeoutError:
                    pass
        except OSError:
            i += 1  # closed mid-send: that input went as far as it could
            sent += 1
        finally:
            s.close()
    return sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="a running broker (default: start one)")
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus" / "request_frame")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--inputs", type=int, default=0, help="stop after this many (0: time)")
    parser.add_argument("--check-every", type=int, default=250)
    parser.add_argument("--read-timeout", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--skip-keys",
        default="",
        help="comma-separated API keys whose seeds are left out (e.g. 19,37: a mutated "
        "partition count creates thousands of partitions, a known resource limit)",
    )
    parser.add_argument("--crash-dir", type=Path, default=HERE / "artifacts" / "net_fuzz")
    args = parser.parse_args()

    skip = {int(k) for k in args.skip_keys.split(",") if k.strip()}
    seeds = [p.read_bytes() for p in sorted(args.corpus.iterdir()) if p.is_file()]
    seeds = [s for s in seeds if len(s) < 2 or struct.unpack(">h", s[:2])[0] not in skip]
    if not seeds:
        sys.exit(f"no seeds in {args.corpus}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    mutator = Mutator(seeds, rng, skip)
    target = Target(args.bootstrap)
    check = RoundTrip(target)
    start_rss = target.rss_kib()
    max_rss = start_rss or 0
    stats: dict[str, Any] = {"seed": seed, "inputs": 0, "checks": 0, "crashes": 0}
    print(f"net_fuzz: {len(seeds)} seeds, broker {target.bootstrap}, rng seed {seed}", flush=True)
    started = time.monotonic()
    try:
        if (why := check.check()) is not None:
            sys.exit(f"the broker fails a round trip before any input: {why}")
        while True:
            elapsed = time.monotonic() - started
            if args.inputs and stats["inputs"] >= args.inputs:
                break
            if not args.inputs and elapsed >= args.seconds:
                break
            batch, kinds = [], []
            for _ in range(args.check_every):
                body, kind = mutator.mutate(rng.choice(seeds))
                batch.append(mutator.prefix(body))
                kinds.append(kind)
            stats["inputs"] += send_inputs(target.addr, batch, rng, args.read_timeout)
            rss = target.rss_kib()
            if rss is not None:
                max_rss = max(max_rss, rss)
            code = target.exited()
            why = f"broker exited with {code}" if code is not None else check.check()
            stats["checks"] += 1
            if why is None:
                continue
            # A broker still running but failing the round trip counts too (a stall).
            stats["crashes"] += 1
            stats["exits" if code is not None else "stalls"] = (
                stats.get("exits" if code is not None else "stalls", 0) + 1
            )
            out = args.crash_dir / f"crash-{int(time.time())}-{stats['crashes']}"
            out.mkdir(parents=True, exist_ok=True)
            for n, (frame, kind) in enumerate(zip(batch, kinds, strict=True)):
                (out / f"{n:04d}-{kind}.bin").write_bytes(frame)
            log = target.broker.server_log() if target.broker is not None else ""
            (out / "why.txt").write_text(f"{why}\n\n{log}")
            print(f"CRASH: {why}; the {len(batch)} inputs before it are in {out}", flush=True)
            check.reset()
            if target.broker is None:
                break
            target.restart()
    finally:
        check.reset()
        target.stop()
    stats["seconds"] = round(time.monotonic() - started, 1)
    if start_rss is not None:
        stats["rss_start_mib"] = round(start_rss / 1024, 1)
        stats["rss_max_mib"] = round(max_rss / 1024, 1)
    print("net_fuzz: " + json.dumps(stats), flush=True)
    return 1 if stats["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
