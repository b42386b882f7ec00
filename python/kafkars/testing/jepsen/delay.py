"""`python -m kafkars.testing.jepsen.delay --delay-ms 200 --jitter-ms 50`: netem's
delay without netem.

This kernel is built without `sch_netem`, so `tc netem` cannot delay packets. iptables
sends the namespace's outgoing packets to NFQUEUE 0 instead; this process binds that
queue over netlink (nfnetlink_queue, metadata only) and accepts each packet once its
delay (normal around `delay` with deviation `jitter`) has passed. Verdicts go out of
order, so packets also reorder, as with netem's jitter. Prints "bound" on stderr once
the queue is its own; runs until killed.
"""

from __future__ import annotations

import argparse
import heapq
import random
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = (
    1,
    2,
    3,
    4,
    5,
)
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1


def _attr(kind: int, payload: bytes) -> bytes:
    data = struct.pack("=HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def _message(kind: int, flags: int, queue: int, attrs: bytes, seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return (
        struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq, 0) + body
    )


def _attrs(data: bytes) -> dict[int, bytes]:
    out = {}
    while len(data) >= 4:
        length, kind = struct.unpack_from("=HH", data)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[4:length]
        data = data[(length + 3) & ~3 :]
    return out


def bind(queue: int) -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    config = (
        _attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET))
        + _attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))
        + _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", 20000))
        + _attr(NFQA_CFG_MASK, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN))
        + _attr(NFQA_CFG_FLAGS, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN))
    )
    sock.send(_message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, queue, config, seq=1))
    reply = sock.recv(65536)
    _, kind, _, _, _ = struct.unpack_from("=IHHII", reply)
    (error,) = struct.unpack_from("=i", reply, 16)
    if kind != NLMSG_ERROR or error != 0:
        raise OSError(-error, f"binding NFQUEUE {queue}")
    return sock


def serve(sock: socket.socket, queue: int, delay_s: float, jitter_s: float) -> None:
    pending: list[tuple[float, int]] = []
    while True:
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, packet_id = heapq.heappop(pending)
            verdict = _attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))
            sock.send(_message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, queue, verdict))
        sock.settimeout(max(0.0005, pending[0][0] - now) if pending else None)
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:
            continue
        except OSError:  # ENOBUFS: the kernel dropped queue messages; fail-open covers it
            continue
        while len(data) >= 16:
            length, kind, _, _, _ = struct.unpack_from("=IHHII", data)
            if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                header = _attrs(data[20:length]).get(NFQA_PACKET_HDR)
                if header is not None:
                    (packet_id,) = struct.unpack_from("!I", header)
                    held = max(0.0, random.gauss(delay_s, jitter_s))
                    heapq.heappush(pending, (time.monotonic() + held, packet_id))
            data = data[(length + 3) & ~3 :]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kafkars.testing.jepsen.delay", description=__doc__
    )
    parser.add_argument("--queue", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=200)
    parser.add_argument("--jitter-ms", type=float, default=50)
    args = parser.parse_args()
    sock = bind(args.queue)
    print("bound", file=sys.stderr, flush=True)
    serve(sock, args.queue, args.delay_ms / 1000, args.jitter_ms / 1000)


if __name__ == "__main__":
    main()
