# Apache Kafka beside kafkars (issue 24): the reference broker and the differential tests.
#   make reference-kafka            one Apache Kafka broker (KRaft) on a free port until Ctrl-C
#   make reference-kafka KAFKA=3.9.2 ZK=127.0.0.1:2181   ZooKeeper mode (3.x)
#   make differential               the same requests to both brokers; writes the JSON report
#                                   and the README table
# The jars come from Maven Central into ~/.cache/kafkars/reference-kafka (outside the
# checkout, reused across runs).
KAFKA ?= 4.1.1
KAFKA_ZK ?= 3.9.2
DIFFERENTIAL_REPORT ?= .cache/differential.json

.PHONY: reference-deps reference-kafka differential

reference-deps: venv ## fetch Apache Kafka's jars ($(KAFKA) and $(KAFKA_ZK)) with Maven for the reference broker
	@command -v mvn >/dev/null || { apt-get update -qq && apt-get install -y -qq maven; }
	@$(PY) -m kafkars.testing.reference_kafka --resolve-only --version $(KAFKA) >/dev/null
	@$(PY) -m kafkars.testing.reference_kafka --resolve-only --version $(KAFKA_ZK) >/dev/null

reference-kafka: dev reference-deps ## start Apache Kafka $(KAFKA) (the reference broker) until Ctrl-C
	$(PY) -m kafkars.testing.reference_kafka --version $(KAFKA) $(if $(ZK),--zookeeper $(ZK))

differential: dev reference-deps ## the differential tests against Apache Kafka; the report in $(DIFFERENTIAL_REPORT), the table in the README
	KAFKARS_DIFFERENTIAL_REPORT=$(abspath $(DIFFERENTIAL_REPORT)) $(PY) -m pytest -q tests/differential
	$(PY) tests/differential/report.py $(DIFFERENTIAL_REPORT) --readme README.md

# CI runs the differential tests with the rest of the suite: the jars come first.
test-python: reference-deps
