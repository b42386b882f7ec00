"""Spark's static registration hook: pyspark registers `DefaultSource` from every
installed top-level `pyspark_*` module, so `spark.read.format("kafkars")` works without
calling `kafkars_spark.register(spark)`."""

from kafkars_spark.source import KafkarsDataSource as DefaultSource

__all__ = ["DefaultSource"]
