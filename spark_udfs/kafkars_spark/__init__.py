"""kafkars for Spark (the `kafkars-spark` distribution in `spark_udfs/`): the `kafkars`
data source and Arrow functions decoding raw record batches in Rust. The broker never
imports this package, so a broker install stays free of pyspark."""

from __future__ import annotations

from typing import Any

from kafkars_spark._environment import prepare_spark_environment
from kafkars_spark.arrow import KAFKA_DDL, decode_batches, kafka_ddl

prepare_spark_environment()

__all__ = ["KAFKA_DDL", "decode_batches", "kafka_ddl", "register"]


def register(spark: Any) -> None:
    """Registers the `kafkars` data source with `spark` (once per SparkContext is enough)."""
    from kafkars_spark.source import KafkarsDataSource

    spark.dataSource.register(KafkarsDataSource)
