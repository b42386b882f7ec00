"""What importing kafkars_spark settles before a Spark session exists."""

from __future__ import annotations

import os
import subprocess
import sys

IMPORT = "import os, kafkars_spark; print(os.environ.get('PYSPARK_PYTHON'))"


def run_import(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True, timeout=120
    )


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"PYSPARK_PYTHON", "JAVA_HOME", "PATH"}}


def test_workers_default_to_the_importing_interpreter() -> None:
    env = {**base_env(), "PATH": os.environ["PATH"], "JAVA_HOME": os.environ.get("JAVA_HOME", "")}
    if not env["JAVA_HOME"]:
        del env["JAVA_HOME"]
    result = run_import(env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == sys.executable


def test_an_explicit_pyspark_python_is_kept() -> None:
    env = {**base_env(), "PATH": os.environ["PATH"], "PYSPARK_PYTHON": "/opt/python3"}
    assert run_import(env).stdout.strip() == "/opt/python3"


def test_missing_java_is_one_clear_line() -> None:
    result = run_import({**base_env(), "PATH": "/nonexistent"})
    assert result.returncode == 0
    lines = [line for line in result.stderr.splitlines() if "kafkars-spark" in line]
    assert len(lines) == 1, result.stderr
    assert "Java" in lines[0] and "openjdk-17-jre-headless" in lines[0]
    assert "Traceback" not in result.stderr
