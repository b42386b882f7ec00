"""The README's install path as a new user takes it: build the wheels, install them by file
path into a fresh virtualenv, `pip check`, start the installed broker, and read it from
Spark with the venv's interpreter called by absolute path (no activation, no
PYSPARK_PYTHON)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

# Building the wheels and installing pyspark into a new venv takes a minute or two.
pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
MATURIN = Path(sys.executable).parent / "maturin"


def java_home() -> str | None:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    return str(Path(java).resolve().parent.parent) if java else None


def run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=900, **kwargs
    )  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    # The venv's interpreter, as `make dev` builds with: another one would rebuild the crate.
    run(MATURIN, "build", "--release", "--quiet", "-i", sys.executable, "-o", dist, cwd=ROOT)
    # A copy: setuptools leaves build/ and .egg-info beside the sources it builds.
    spark_src = tmp_path_factory.mktemp("src") / "spark_udfs"
    shutil.copytree(
        ROOT / "spark_udfs", spark_src, ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, spark_src)
    broker_wheel = next(dist.glob("kafkars_broker-*.whl"))
    spark_wheel = next(dist.glob("kafkars_spark-*.whl"))
    venv = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", venv)
    pip = venv / "bin" / "pip"
    run(pip, "install", "-q", f"{broker_wheel}[spark]", spark_wheel)
    return venv


def test_pip_check_is_clean(fresh_venv: Path) -> None:
    result = run(fresh_venv / "bin" / "pip", "check")
    assert "No broken requirements" in result.stdout
    names = run(fresh_venv / "bin" / "pip", "list", "--format=freeze").stdout
    assert "kafkars-broker==" in names and "kafkars-spark==" in names
    # The foreign `kafkars` distribution on PyPI was never pulled in.
    assert not any(line.startswith("kafkars==") for line in names.splitlines())


def test_installed_broker_read_by_spark_from_the_venv_python(
    fresh_venv: Path, tmp_path: Path
) -> None:
    home = java_home()
    if home is None:
        pytest.skip("no Java for Spark")
    port_file = tmp_path / "ready.json"
    broker = subprocess.Popen(
        [fresh_venv / "bin" / "kafkars-server-start", "--ready-file", port_file]
        + ["--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=data"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert broker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        _, _, host, port = json.loads(port_file.read_text())["listeners"][0]
        bootstrap = f"{host}:{port}"
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(30):
            p.produce("installed", key=f"k{i % 3}".encode(), value=b"1", partition=0)
        assert p.flush(20) == 0

        job = tmp_path / "job.py"
        job.write_text(
            textwrap.dedent(
                f"""
                import kafkars_spark  # before the session: workers get this interpreter
                from pyspark.sql import SparkSession

                spark = (SparkSession.builder.master("local[2]")
                         .config("spark.sql.shuffle.partitions", "2")
                         .config("spark.ui.enabled", "false").getOrCreate())
                spark.sparkContext.setLogLevel("ERROR")
                df = (spark.read.format("kafkars")
                      .option("kafka.bootstrap.servers", "{bootstrap}")
                      .option("subscribe", "installed").load())
                print("ROWS", df.count(), df.select("key").distinct().count())
                spark.stop()
                """
            )
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"}
        }
        # Neither venv on PATH: `python3` there is the system's, without pyspark.
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        env["JAVA_HOME"] = home
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        result = run(fresh_venv / "bin" / "python", job, cwd=tmp_path, env=env)
        assert "ROWS 30 3" in result.stdout, result.stderr[-3000:]
    finally:
        broker.terminate()
        broker.wait(timeout=60)
