"""The machine's raw loopback limits, measured in the same run as the broker: one TCP
connection from a Python writer to a Python reader (what a produce could reach), and
`os.sendfile` from a file to a socket reader (what a fetch could reach), from the page cache
and, when the page cache can be dropped, from disk; writing a new file (what putting
produced bytes into the page cache costs); and the two together, a socket-to-file pump (what
a broker appending every byte it reads could reach)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

CHUNK = 1 << 20


def _reader(server: socket.socket, received: list[int]) -> threading.Thread:
    """Accept one connection and read it to EOF in 1 MiB chunks (the GIL is released in
    recv_into, so the writer in the main thread runs beside it)."""

    def run() -> None:
        conn, _ = server.accept()
        buf = bytearray(CHUNK)
        total = 0
        while n := conn.recv_into(buf):
            total += n
        conn.close()
        received.append(total)

    t = threading.Thread(target=run, name="limit-reader")
    t.start()
    return t


def socket_write(total_bytes: int) -> float:
    """MB/s from sendall() of 1 MiB chunks to recv_into() over one loopback connection."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        received: list[int] = []
        t = _reader(server, received)
        payload = os.urandom(CHUNK)
        with socket.create_connection(server.getsockname()[:2]) as client:
            began = time.perf_counter()
            sent = 0
            while sent < total_bytes:
                client.sendall(payload)
                sent += CHUNK
            client.shutdown(socket.SHUT_WR)
            t.join()
            elapsed = time.perf_counter() - began
    return received[0] / elapsed / 1e6


def socket_to_file(path: Path, total_bytes: int) -> float:
    """MB/s of a pump that reads 1 MiB from a loopback socket and writes it to a new file
    (nothing flushed), the writer a second thread: a broker's append path with nothing else."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        payload = os.urandom(CHUNK)

        def write() -> None:
            with socket.create_connection(server.getsockname()[:2]) as client:
                for _ in range(total_bytes // CHUNK):
                    client.sendall(payload)

        writer = threading.Thread(target=write, name="limit-writer")
        writer.start()
        conn, _ = server.accept()
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        began = time.perf_counter()
        total = 0
        with conn, open(path, "wb", buffering=0) as f:
            while n := conn.recv_into(buf):
                f.write(view[:n])
                total += n
        elapsed = time.perf_counter() - began
        writer.join()
    path.unlink()
    return total / elapsed / 1e6


def make_file(path: Path, size: int) -> Path:
    """A file of `size` bytes, left in the page cache by writing it."""
    block = os.urandom(CHUNK)
    with open(path, "wb") as f:
        for _ in range(size // CHUNK):
            f.write(block)
    return path


def file_write(path: Path, total_bytes: int) -> float:
    """MB/s of writing `total_bytes` to a new file in 1 MiB writes: what a broker pays to
    put produced bytes into the page cache, without the disk (nothing is flushed)."""
    block = os.urandom(CHUNK)
    start = time.perf_counter()
    with open(path, "wb", buffering=0) as f:
        for _ in range(total_bytes // CHUNK):
            f.write(block)
    seconds = time.perf_counter() - start
    path.unlink()
    return total_bytes / seconds / 1e6


def free_page_reporting() -> bool:
    """Whether this is a virtual machine whose free memory goes back to the host
    (virtio-balloon free page reporting): memory the page cache takes there after it was
    free for a few seconds is faulted in from the host anew, which costs far more than
    the copy itself."""
    for device in Path("/sys/bus/virtio/drivers/virtio_balloon").glob("virtio*"):
        features = (device / "features").read_text()
        if len(features) > 5 and features[5] == "1":  # VIRTIO_BALLOON_F_REPORTING
            return True
    return False


def sendfile(path: Path, passes: int = 1) -> float:
    """MB/s of os.sendfile() from `path` to one loopback connection, `passes` times over."""
    size = path.stat().st_size
    with socket.create_server(("127.0.0.1", 0)) as server:
        received: list[int] = []
        t = _reader(server, received)
        with socket.create_connection(server.getsockname()[:2]) as client, open(path, "rb") as f:
            began = time.perf_counter()
            for _ in range(passes):
                offset = 0
                while offset < size:
                    sent = os.sendfile(client.fileno(), f.fileno(), offset, size - offset)
                    if sent == 0:
                        break
                    offset += sent
            client.shutdown(socket.SHUT_WR)
            t.join()
            elapsed = time.perf_counter() - began
    return received[0] / elapsed / 1e6


def drop_caches() -> str | None:
    """Write back dirty pages and drop the page cache; None when done, else why not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        return f"echo 3 > /proc/sys/vm/drop_caches not allowed ({e.strerror})"
    return None
