"""A streaming query for the exactly-once test, run in its own process so the test can
kill -9 its Spark driver: the `kafkars` source on SOURCE into the `kafkars` sink on SINK
with exactlyOnce=true, CHECKPOINT holding its progress.

    python eos_pipeline.py BOOTSTRAP SOURCE SINK CHECKPOINT [--hang-partition N]

With --hang-partition the task of that Spark partition stalls before handing its rows on,
so the other tasks of the first micro-batch commit and the batch stays unfinished; without
it the query runs with Trigger.AvailableNow until the source is consumed, then exits.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator

import pyarrow as pa


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("source")
    ap.add_argument("sink")
    ap.add_argument("checkpoint")
    ap.add_argument("--hang-partition", type=int)
    ap.add_argument("--max-offsets", default="100")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    from kafkars_spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkars-eos")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    hang = args.hang_partition

    def stall(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        if hang is not None and TaskContext.get().partitionId() == hang:
            time.sleep(3600)  # killed with the driver long before
        yield from batches

    df = (
        spark.readStream.format("kafkars")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", args.max_offsets)
        .load()
        .selectExpr("key", "value")
    )
    writer = (
        df.mapInArrow(stall, df.schema)
        .writeStream.format("kafkars")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.sink)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", args.checkpoint)
    )
    if hang is None:
        writer = writer.trigger(availableNow=True)
    q = writer.start()
    print("started", q.id, flush=True)
    q.awaitTermination()
    spark.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
