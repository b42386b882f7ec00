"""Helpers of the ecosystem tests: the broker under test, the parametrisation over both
brokers, the Java scenarios' runner."""

from __future__ import annotations

import json
import selectors
import subprocess
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kafkars.testing.reference_kafka import kafka_tool
from kafkars.testing.zookeeper import java_command


@dataclass
class Target:
    """One broker under test: its name ("kafkars" or "kafka"), address and data directory."""

    name: str
    bootstrap_servers: str
    log_dir: Path
    scenarios: dict[str, Future[dict[str, Any]]] = field(default_factory=dict)

    def tool(self, main_class: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return kafka_tool(main_class, *args, **kwargs)


# The reference side of every scenario is long (`make test-long`, `make ecosystem`): the
# kafkars side runs in CI, the reference one checks the test itself.
REFERENCE = pytest.param("kafka", marks=pytest.mark.long)


def both(kafkars_xfail: str | None = None) -> pytest.MarkDecorator:
    """Parametrises a test over both brokers; `kafkars_xfail` marks the kafkars run as a
    strict xfail with the difference it documents (strict: it flags once fixed)."""
    kafkars: Any = "kafkars"
    if kafkars_xfail is not None:
        kafkars = pytest.param(
            "kafkars", marks=pytest.mark.xfail(strict=True, reason=kafkars_xfail)
        )
    return pytest.mark.parametrize("target", [kafkars, REFERENCE], indirect=True)


def run_java(classpath: str, main_class: str, *args: str, timeout: float = 180.0) -> dict[str, Any]:
    """Runs one scenario class; its last stdout line is the JSON of its steps."""
    result = subprocess.run(
        [
            java_command(),
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            classpath,
            f"kafkars.ecosystem.{main_class}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise AssertionError(
            f"{main_class} exited with {result.returncode}:\n{result.stdout[-3000:]}"
            f"{result.stderr[-5000:]}"
        )
    parsed: dict[str, Any] = json.loads(lines[-1])
    return parsed


def step(results: dict[str, Any], name: str) -> Any:
    """One step's result; a step that threw fails the test with the Java exception."""
    value = results[name]
    if isinstance(value, dict) and set(value) == {"error"}:
        pytest.fail(f"{name}: {value['error']}")
    return value


def java_process(classpath: str, main_class: str, *args: str, log: Path) -> subprocess.Popen[str]:
    """Starts a scenario class (or a fully qualified main class) in the background, its
    stdout piped and stderr to `log`."""
    with open(log, "ab") as err:
        return subprocess.Popen(
            [
                java_command(),
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                classpath,
                main_class if "." in main_class else f"kafkars.ecosystem.{main_class}",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )


def wait_for_line(process: subprocess.Popen[str], wanted: str, timeout: float) -> None:
    """Reads the process's stdout until the line `wanted` (fails on EOF or timeout)."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = process.stdout.readline()
            if not line:
                raise AssertionError(f"exited with {process.wait()} before {wanted!r}")
            if line.strip() == wanted:
                return
            if line.strip() == "ERROR":
                raise AssertionError(f"reported ERROR before {wanted!r}")
    raise AssertionError(f"no {wanted!r} within {timeout}s")


def both_steps(
    names: list[str], kafkars_xfail: dict[str, str] | None = None
) -> pytest.MarkDecorator:
    """Parametrises a step test over both brokers and every step name; the steps named in
    `kafkars_xfail` are strict xfails against kafkars, with the difference as the reason."""
    xfail = kafkars_xfail or {}
    params: list[Any] = []
    for name in names:
        for broker in ("kafkars", "kafka"):
            marks = []
            if broker == "kafkars" and name in xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=xfail[name]))
            if broker == "kafka":
                marks.append(pytest.mark.long)
            params.append(pytest.param(broker, name, marks=marks, id=f"{name}-{broker}"))
    return pytest.mark.parametrize(("target", "name"), params, indirect=["target"])
