"""The `kafkars` data source beside Spark's own Kafka connector (spark-sql-kafka-0-10):
rows/s of batch writes and batch reads of the same data through each, against one
kafkars broker, `local[2]`, topics of 8 partitions, 100 B and 1 KiB values.
`make bench-spark` (it fetches the connector first); not a test.

A write is `spark.range(n)` made into (key, value) rows and saved through the connector;
a read loads the whole topic and materialises every column (the `noop` sink). Each figure
is the best of `--repeat` runs after a small warm-up of both connectors.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))

PARTITIONS = 8
CONNECTORS = {"kafkars": "kafkars", "spark-sql-kafka": "kafka"}


def session(jars: list[str]) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from kafkars_spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkars-bench-spark")
        .config("spark.driver.memory", "2g")  # default JIT: throughput, not start-up
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def write(spark: Any, fmt: str, bootstrap: str, topic: str, n: int, size: int) -> float:
    df = spark.range(0, n, numPartitions=PARTITIONS).selectExpr(
        "CAST(CAST(id AS STRING) AS BINARY) AS key",
        f"CAST(rpad(CAST(id AS STRING), {size}, 'x') AS BINARY) AS value",
    )
    t0 = time.perf_counter()
    (
        df.write.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    return time.perf_counter() - t0


def read(spark: Any, fmt: str, bootstrap: str, topic: str) -> float:
    t0 = time.perf_counter()
    (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records-100", type=int, default=1_000_000, help="records of 100 B")
    ap.add_argument("--records-1k", type=int, default=250_000, help="records of 1 KiB")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    from conftest import connector_jars  # tests/spark/conftest.py
    from kafkars.broker import Broker

    jars = connector_jars()
    if not jars:
        sys.exit("Spark's Kafka connector is missing: make spark-connector-deps")
    spark = session(jars)
    results: list[tuple[str, str, float, float]] = []
    with Broker(process=True, config={"num.partitions": PARTITIONS}) as broker:
        bs = broker.bootstrap_servers
        for name, fmt in CONNECTORS.items():  # warm-up: classes loaded, workers started
            create(bs, f"warm-{name}")
            write(spark, fmt, bs, f"warm-{name}", 20_000, 100)
            read(spark, fmt, bs, f"warm-{name}")
        for size, n in ((100, args.records_100), (1024, args.records_1k)):
            for op in ("write", "read"):
                rates = {}
                for name, fmt in CONNECTORS.items():
                    best = float("inf")
                    for r in range(args.repeat):
                        topic = f"bench-{name}-{size}-{r}"
                        if op == "write":
                            create(bs, topic)
                            best = min(best, write(spark, fmt, bs, topic, n, size))
                        else:
                            best = min(best, read(spark, fmt, bs, topic))
                    rates[name] = n / best
                    print(f"{op:5} {size:5} B {name:16} {rates[name]:>12,.0f} rows/s", flush=True)
                results.append((f"{size} B", op, rates["kafkars"], rates["spark-sql-kafka"]))
    spark.stop()
    print()
    print("| records | operation | kafkars rows/s | spark-sql-kafka rows/s | kafkars / spark |")
    print("|---|---|---:|---:|---:|")
    for size_s, op, ours, theirs in results:
        print(f"| {size_s} | {op} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
