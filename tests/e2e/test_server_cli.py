"""`kafkars-server-start` and `python -m kafkars` as a user meets them: start-up mistakes
are one line naming what is wrong, logging is configurable, the shipped
config/server.properties gives a broker whose console consumer answers at once."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkars import __version__

ROOT = Path(__file__).resolve().parents[2]
SERVER_START = [sys.executable, "-m", "kafkars"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_server(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVER_START, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def start_server(
    *args: str, cwd: Path, open_files: int | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Starts kafkars-server-start; `open_files` caps RLIMIT_NOFILE (soft and hard)."""
    port = free_port()

    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    ready = cwd / f"ready-{port}.json"
    proc = subprocess.Popen(
        [
            *SERVER_START,
            *args,
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--ready-file",
            str(ready),
        ],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit,
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = proc.communicate()[0]
            raise AssertionError(f"broker did not start:\n{out}")
        time.sleep(0.05)
    return proc, port


def stop_server(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    return proc.communicate(timeout=30)[0]


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line or "Error" in line]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_version() -> None:
    result = run_server("--version", cwd=ROOT)
    assert result.returncode == 0
    assert result.stdout.strip() == __version__


def test_log_dirs_naming_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    result = run_server("--override", "log.dirs=afile", cwd=tmp_path)
    assert_one_line_error(result, "log.dirs", str(tmp_path / "afile"), "not a directory")


def test_log_dirs_locked_by_another_broker(tmp_path: Path) -> None:
    proc, _ = start_server("--override", "log.dirs=data", cwd=tmp_path)
    try:
        result = run_server(
            "--override",
            "log.dirs=data",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
            cwd=tmp_path,
        )
        assert_one_line_error(result, "log.dirs", str(tmp_path / "data"), "locked")
    finally:
        stop_server(proc)


def test_bad_value_and_bad_log_level_are_usage_errors(tmp_path: Path) -> None:
    result = run_server("--override", "log.segment.bytes=abc", cwd=tmp_path)
    assert result.returncode == 1
    assert "log.segment.bytes" in result.stderr and "Traceback" not in result.stderr
    result = run_server("--log-level", "LOUD", cwd=tmp_path)
    assert result.returncode == 2
    assert "--log-level" in result.stderr and "Traceback" not in result.stderr


def test_unknown_key_warned_with_a_suggestion(tmp_path: Path) -> None:
    proc, _ = start_server(
        "--override", "log.dirs=data", "--override", "num.partitons=3", cwd=tmp_path
    )
    out = stop_server(proc)
    assert "Unknown configuration 'num.partitons'" in out
    assert "did you mean 'num.partitions'?" in out


def test_log_config_levels_and_log_file(tmp_path: Path) -> None:
    # Per-logger levels from a dictConfig file: every request at DEBUG on kafkars.request,
    # the rest at WARN, all of it also in a rotating file.
    config = tmp_path / "logging.json"
    config.write_text(json.dumps({"loggers": {"kafkars.request": {"level": "DEBUG"}}}))
    log_file = tmp_path / "logs" / "server.log"
    proc, port = start_server(
        "--override",
        "log.dirs=data",
        "--log-level",
        "WARN",
        "--log-config",
        str(config),
        "--log-file",
        str(log_file),
        cwd=tmp_path,
    )
    try:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.list_topics(timeout=10)
    finally:
        out = stop_server(proc)
    text = log_file.read_text()
    assert "Completed request" in text and "api=Metadata" in text, text
    # INFO lines of other loggers are below the WARN root level.
    assert "started in" not in text
    assert "Completed request" in out


def test_shipped_server_properties_console_consumer_gets_records_at_once(
    tmp_path: Path,
) -> None:
    proc, port = start_server(str(ROOT / "config" / "server.properties"), cwd=tmp_path)
    try:
        assert (tmp_path / "kafkars-data").is_dir()
        bootstrap = f"127.0.0.1:{port}"
        subprocess.run(
            [sys.executable, "-m", "kafkars.tools.console_producer", "-b", bootstrap]
            + ["--topic", "first-hour"],
            input="hello\nworld\n",
            text=True,
            check=True,
            capture_output=True,
            timeout=30,
        )
        consumer = subprocess.run(
            [sys.executable, "-m", "kafkars.tools.console_consumer", "-b", bootstrap]
            + ["--topic", "first-hour", "--from-beginning", "--max-messages", "2"],
            text=True,
            capture_output=True,
            timeout=30,
        )
        assert consumer.stdout.splitlines() == ["hello", "world"], consumer.stderr
    finally:
        stop_server(proc)


@pytest.mark.parametrize("module", ["kafkars", "kafkars.server"])
def test_python_dash_m_starts_a_broker(tmp_path: Path, module: str) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--override", "log.dirs=data"]
        + ["--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        stop_server(proc)


def test_recovery_names_the_partition_it_truncated(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    from kafkars.broker import Broker

    broker = Broker(process=True, log_dir=tmp_path / "data").start()
    try:
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        p.produce("torn", value=b"x" * 100, partition=0)
        assert p.flush(20) == 0
        broker.kill()
        segment = tmp_path / "data" / "torn-0" / f"{0:020d}.log"
        with segment.open("ab") as f:
            f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"torn tail")  # a batch cut short
        broker.start()
        log = broker.server_log()
        assert "recovering logs after an unclean shutdown" in log
        assert "recovery truncated an invalid or incomplete tail" in log
        assert "partition=torn-0" in log and "truncated_bytes=21" in log
        assert "recovered 1/" in log or "recovered 2/" in log
    finally:
        broker.stop()


def test_out_of_file_descriptors_refuses_the_topic_and_keeps_serving(tmp_path: Path) -> None:
    """A topic whose logs need more files than the process may open is refused with
    KAFKA_STORAGE_ERROR and leaves nothing behind; the broker goes on serving."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    proc, port = start_server(
        "--override", f"log.dirs={tmp_path / 'data'}", cwd=tmp_path, open_files=256
    )
    try:
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        futures = admin.create_topics([NewTopic("huge", 400, 1)], operation_timeout=30)
        with pytest.raises(Exception, match="KAFKA_STORAGE_ERROR|open files"):
            futures["huge"].result(60)
        assert "huge" not in admin.list_topics(timeout=10).topics
        # Only directories marked for the asynchronous delete remain.
        assert all(d.name.endswith("-delete") for d in (tmp_path / "data").glob("huge-*"))
        admin.create_topics([NewTopic("small", 1, 1)])["small"].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
        producer.produce("small", b"still serving")
        assert producer.flush(30) == 0
    finally:
        out = stop_server(proc)
    assert "Traceback" not in out
