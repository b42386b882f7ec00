# franz-go's own integration tests (a Go client's TestGroupETL and TestTxnEtl) against a
# kafkars broker and Apache Kafka, one after the other (tests/go/run.py); long, so not in CI.
#   make franz-go                         both tests on both brokers
#   make franz-go FRANZ_ARGS="--tests TestGroupETL --brokers kafkars"
FRANZ_ARGS ?=

.PHONY: franz-go

franz-go: dev reference-deps ## franz-go's group and transaction integration tests against kafkars and Apache Kafka (slow)
	@command -v go >/dev/null || { echo "franz-go needs the go command (Go 1.26)"; exit 1; }
	$(PY) tests/go/run.py $(FRANZ_ARGS)
