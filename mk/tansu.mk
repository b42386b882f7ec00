# Tansu beside kafkars and Apache Kafka in the broker harness (`--peer tansu`, README
# "Benchmarks"). Not in CI.
#   make tansu-deps      the crate tansu $(TANSU_VERSION) built into .cache/tansu/bin (~10 min)
#   make bench-broker BENCH_ARGS="--peer kafka --peer tansu"
# The default build has no storage engine at all; `dynostore` brings memory:// (what the
# harness gives it) and s3://. None of its engines is a log on local disk.
TANSU_VERSION ?= 0.6.0
TANSU_ROOT := .cache/tansu

.PHONY: tansu-deps

tansu-deps: ## build the Kafka-compatible broker Tansu $(TANSU_VERSION) into .cache/tansu (cargo install, ~10 min; for --peer tansu)
	@# cargo skips the build when this version with these features is installed already.
	cargo install tansu --version $(TANSU_VERSION) --locked --features dynostore --root $(TANSU_ROOT)
