"""How the command-line tools fail: against an address where nothing listens, with bad
arguments, and `--version`. Each tool runs as its own process, as a user runs it, so the
exit code, the time taken and everything it prints are what a user sees."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import click
import pytest

from kafkars import __version__
from kafkars.broker import Broker
from kafkars.tools import client, consumer_groups

TOOLS = (
    "topics",
    "configs",
    "console_consumer",
    "console_producer",
    "consumer_groups",
    "dump_log",
    "perf_test",
    "acls",
    "transactions",
)


def tool(
    name: str, *args: str, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", f"kafkars.tools.{name}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return done, time.monotonic() - started


def closed_port() -> str:
    """An address where nothing listens: a port the kernel gave and took back."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_prints_its_version(name: str) -> None:
    done, _ = tool(name, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == __version__


def unreachable_commands(address: str) -> list[tuple[str, ...]]:
    b = ("-b", address)
    return [
        ("topics", *b, "--list"),
        ("topics", *b, "--describe", "--topic", "t"),
        ("topics", *b, "--create", "--topic", "t"),
        ("configs", *b, "--entity-type", "topics", "--entity-name", "t", "--describe"),
        ("configs", *b, "--entity-type", "brokers", "--entity-default", "--describe"),
        ("configs", *b, "--entity-type", "clients", "--entity-name", "c", "--describe"),
        ("configs", *b, "--entity-type", "users", "--entity-name", "u", "--describe"),
        ("consumer_groups", *b, "--list"),
        ("consumer_groups", *b, "--describe", "--group", "g"),
        ("console_consumer", *b, "--topic", "t", "--from-beginning"),
        ("console_producer", *b, "--topic", "t"),
        ("perf_test", "producer", *b, "--topic", "t", "--num-records", "1"),
        ("perf_test", "consumer", *b, "--topic", "t", "--messages", "1"),
        ("acls", *b, "--list"),
        ("transactions", *b, "list"),
    ]


@pytest.mark.parametrize(
    "command", unreachable_commands("ADDRESS"), ids=lambda c: " ".join(c[:1] + c[3:5])
)
def test_unreachable_bootstrap_server_is_one_line_naming_it(command: tuple[str, ...]) -> None:
    address = closed_port()
    args = [address if a == "ADDRESS" else a for a in command[1:]]
    # Before: 30-220 lines of librdkafka connect errors and a traceback after 10-30 s,
    # and the console consumer never returned.
    done, took = tool(command[0], *args, timeout=30)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert took < 10, took
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert address in lines[0] and lines[0].startswith("Error: "), lines
    assert "Traceback" not in done.stderr


def test_a_server_that_never_answers_is_bounded_by_the_timeout() -> None:
    """A port that accepts connections and says nothing: the tools give up within their
    timeout (consumer-groups' --timeout, 10 s elsewhere) with one line."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    try:
        done, took = tool("consumer_groups", "-b", address, "--list", "--timeout", "1500")
        assert done.returncode == 1 and took < 8, (took, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and address in done.stderr, done.stderr
        done, took = tool("topics", "-b", address, "--list")
        assert done.returncode == 1 and took < 15, (took, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and address in done.stderr, done.stderr
    finally:
        listener.close()


BAD_ARGUMENTS = [
    ("topics", "--list", "--create"),
    ("topics", "--describe", "--bogus"),
    ("topics", "--create", "--topic", "t", "--partitions", "0"),
    ("topics", "--list", "-b", "no-port-here"),
    ("configs", "--entity-type", "nope", "--describe"),
    ("configs", "--entity-type", "topics", "--describe"),
    ("configs", "--entity-type", "brokers", "--entity-name", "one", "--describe"),
    ("configs", "--entity-type", "clients", "--entity-name", "c", "--alter", "--add-config", "x=1"),
    ("consumer_groups", "--describe"),
    ("consumer_groups", "--describe", "--group", "g", "--members", "--state"),
    ("consumer_groups", "--reset-offsets", "--group", "g", "--topic", "t"),
    ("consumer_groups", "--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "1h"),
    ("consumer_groups", "--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "May"),
    ("consumer_groups", "--list", "--state", "Sleepy"),
    ("consumer_groups", "--delete-offsets", "--group", "g"),
    ("consumer_groups", "--timeout", "0", "--list"),
    ("console_consumer",),
    ("console_consumer", "--topic", "t", "--include", "t.*"),
    ("console_consumer", "--topic", "t", "--offset", "5"),
    ("console_consumer", "--topic", "t", "--partition", "0", "--offset", "soon"),
    ("console_consumer", "--topic", "t", "--isolation-level", "serializable"),
    ("console_consumer", "--topic", "t", "--formatter", "fancy"),
    ("console_consumer", "--include", "(unclosed"),
    ("console_producer", "--topic", "t", "--compression-codec", "brotli"),
    ("dump_log",),
    ("dump_log", "--files", "x.log", "--offsets-decoder", "--transaction-log-decoder"),
    ("perf_test", "producer", "--topic", "t", "--num-records", "1", "--producer-props", "acks"),
    ("perf_test", "nope"),
    ("acls", "--list", "--add"),
    ("acls", "--add", "--topic", "t", "--operation", "Dance", "--allow-principal", "User:a"),
]


@pytest.mark.parametrize("command", BAD_ARGUMENTS, ids=lambda c: " ".join(c))
def test_bad_arguments_are_a_usage_message_and_exit_code_2(command: tuple[str, ...]) -> None:
    # Usage errors come before any connection: the default address need not answer.
    done, _ = tool(command[0], *command[1:])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Usage:" in done.stderr and "Error: " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_missing_files_for_dump_log_are_one_line_each(tmp_path: Path) -> None:
    notes = tmp_path / "notes.log"
    notes.write_text("hello\n")
    text = tmp_path / "data.txt"
    text.write_text("x")
    done, _ = tool("dump_log", "--files", f"{notes},{text},{tmp_path},{tmp_path / 'gone.log'}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 4, lines
    assert "notes.log is not a log segment" in lines[0]
    assert "data.txt is not a .log, .index or .timeindex file" in lines[1]
    assert "is a directory" in lines[2]
    assert "gone.log does not exist" in lines[3]


# -- the pure parts of the argument handling ----------------------------------------------------
def test_greedy_options_take_every_value_up_to_the_next_option() -> None:
    greedy = frozenset({"--producer-props"})
    args = ["--producer-props", "a=1", "b=2", "--topic", "t", "--producer-props", "c=3", "x"]
    assert client.expand_greedy(args, greedy) == [
        "--producer-props", "a=1", "--producer-props", "b=2", "--topic", "t",
        "--producer-props", "c=3", "--producer-props", "x",
    ]  # fmt: skip
    assert client.expand_greedy(["--topic", "a", "b"], greedy) == ["--topic", "a", "b"]
    assert client.expand_greedy(["--producer-props=a=1", "b=2"], greedy) == [
        "--producer-props=a=1", "--producer-props", "b=2",
    ]  # fmt: skip


def test_bootstrap_addresses() -> None:
    assert client.bootstrap_addresses("a:1, SASL_SSL://b:2,[::1]:3") == [
        ("a", 1),
        ("b", 2),
        ("::1", 3),
    ]
    with pytest.raises(click.BadParameter):
        client.bootstrap_addresses("a")


def test_reset_offsets_time_formats() -> None:
    assert consumer_groups.parse_duration("PT1H30M") == timedelta(hours=1, minutes=30)
    assert consumer_groups.parse_duration("P2DT0.5S") == timedelta(days=2, seconds=0.5)
    for bad in ("1h", "P", "PT", "P1H"):
        with pytest.raises(click.BadParameter):
            consumer_groups.parse_duration(bad)
    assert consumer_groups.parse_datetime("2026-01-31T12:00:00.000Z") == 1769860800000
    assert consumer_groups.parse_datetime("2026-01-31T13:00:00+01:00") == 1769860800000
    with pytest.raises(click.BadParameter):
        consumer_groups.parse_datetime("yesterday")


def test_console_consumer_stops_when_the_broker_goes_away(
    make_broker: Callable[..., Broker], topic: str
) -> None:
    broker = make_broker()
    address = broker.bootstrap_servers
    created = subprocess.run(
        [sys.executable, "-m", "kafkars.tools.topics", "-b", address, "--create",
         "--topic", topic, "--partitions", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    reading = subprocess.Popen(
        [sys.executable, "-m", "kafkars.tools.console_consumer", "-b", address,
         "--topic", topic],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(3)  # assigned and fetching
        assert reading.poll() is None
        broker.kill()
        started = time.monotonic()
        _, stderr = reading.communicate(timeout=30)
        assert 9 < time.monotonic() - started < 20
    finally:
        reading.kill()
    assert reading.returncode == 1
    assert stderr.splitlines() == [
        f"Error: lost bootstrap server {address}: no broker answered for 10 s"
    ], stderr
