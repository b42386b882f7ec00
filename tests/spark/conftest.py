"""One local Spark session for the whole run (JVM start-up dominates), with the
`kafkars` data source registered. Skipped when pyspark or Java is missing."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")


def connector_jars() -> list[str]:
    """Spark's own Kafka connector and what it adds to pyspark's jars, as `make
    spark-connector-deps` puts them (`$SPARK_KAFKA_JARS`); empty when not fetched."""
    root = os.environ.get("SPARK_KAFKA_JARS")
    base = Path(root) if root else Path.home() / ".cache" / "kafkars" / "spark-sql-kafka"
    jars = sorted(str(j) for j in base.glob("*.jar"))
    return jars if any("spark-sql-kafka-0-10" in j for j in jars) else []


def _java_home() -> str | None:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    return str(Path(java).resolve().parent.parent) if java else None


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    java_home = _java_home()
    if java_home is None:
        pytest.skip("no Java for Spark")
    os.environ["JAVA_HOME"] = java_home
    # Workers must run this interpreter (the venv's pyarrow, kafkars), not python3 on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from kafkars_spark import register

    jvm_flags = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkars-tests")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", jvm_flags)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.python.worker.reuse", "true")
        # Spark's Kafka connector, when fetched, for the side-by-side tests.
        .config("spark.jars", ",".join(connector_jars()))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
