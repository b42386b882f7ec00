# Spark beside its own Kafka connector (issue 28).
#   make spark-connector-deps   spark-sql-kafka-0-10 and the jars it adds to pyspark's, with
#                               Maven, into $(SPARK_KAFKA_JARS) (outside the checkout)
#   make bench-spark            rows/s of the `kafkars` data source and of Spark's Kafka
#                               connector, reads and writes, 100 B and 1 KiB records (not in CI)
# The connector at pyspark's own version when Maven Central serves it, else the newest
# 4.x line that resolves ($(SPARK_CONNECTOR_FALLBACK)).
SPARK_KAFKA_JARS ?= $(HOME)/.cache/kafkars/spark-sql-kafka
SPARK_CONNECTOR_FALLBACK ?= 4.2.0
SPARK_CONNECTOR_POM := tests/spark/jvm-connector/pom.xml
# Only what pyspark's jars lack: its Scala, Hadoop and compression jars stay the ones it ships.
SPARK_CONNECTOR_ARTIFACTS := spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2

.PHONY: spark-connector-deps bench-spark

spark-connector-deps: venv ## fetch Spark's Kafka connector (spark-sql-kafka-0-10) with Maven for the side-by-side tests
	@command -v mvn >/dev/null || { apt-get update -qq && apt-get install -y -qq maven; }
	@ls $(SPARK_KAFKA_JARS)/spark-sql-kafka-0-10_2.13-*.jar >/dev/null 2>&1 || { \
	  v=$$($(PY) -c "import pyspark; print(pyspark.__version__)"); \
	  for version in $$v $(SPARK_CONNECTOR_FALLBACK); do \
	    mvn -q -B -f $(SPARK_CONNECTOR_POM) dependency:copy-dependencies -DincludeScope=runtime \
	      -Dspark.version=$$version -DincludeArtifactIds=$(SPARK_CONNECTOR_ARTIFACTS) \
	      -DoutputDirectory=$(SPARK_KAFKA_JARS) >/dev/null 2>&1 && break; \
	    echo "spark-sql-kafka-0-10 $$version: not served, trying the next"; \
	  done; \
	  ls $(SPARK_KAFKA_JARS)/spark-sql-kafka-0-10_2.13-*.jar; }

bench-spark: dev spark-connector-deps ## rows/s of the kafkars data source and Spark's Kafka connector side by side (reads, writes), then the Rust Arrow decoder beside a pure-Python one
	$(PY) bench/spark_connectors.py $(BENCH_ARGS)
	$(PY) bench/test_spark_decode.py

# The side-by-side test runs with the rest of the Spark tests in CI: the jars come first.
test-python: spark-connector-deps
