# kafkars developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
export JAVA_HOME ?= $(shell dirname $$(dirname $$(readlink -f $$(command -v java) 2>/dev/null)) 2>/dev/null)

.DEFAULT_GOAL := help
.PHONY: help system-deps venv dev run cluster test test-rust test-python test-long lint fmt bench bench-rust bench-broker conformance clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

system-deps: ## install the Debian packages the tests use (kcat; openssl makes the TLS test certificates; zookeeper for cluster mode; a JDK and Maven for Apache Kafka and the Java tests; iproute2, nftables and iptables for the Jepsen suite's network faults)
	@command -v kcat >/dev/null && command -v openssl >/dev/null && [ -f /usr/share/java/zookeeper.jar ] && command -v javac >/dev/null && command -v mvn >/dev/null && command -v ip >/dev/null && command -v nft >/dev/null && command -v iptables >/dev/null || { apt-get update -qq && apt-get install -y -qq kcat openssl zookeeper openjdk-17-jdk-headless maven iproute2 nftables iptables; }

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip maturin
	touch $@

venv: $(VENV)/.stamp

# Python sources are installed editable; only the Rust core and the package metadata need a
# rebuild, so `make run` on a current build goes straight to the broker.
BUILD_INPUTS := $(shell find rust vendor -name '*.rs' -o -name Cargo.toml 2>/dev/null) \
	Cargo.toml Cargo.lock pyproject.toml spark_udfs/pyproject.toml

# The stamp takes the build's start time, so a source edited while it builds is newer.
$(VENV)/.dev-stamp: $(VENV)/.stamp $(BUILD_INPUTS)
	touch $@.building
	$(VENV)/bin/maturin develop --release --extras test,dev,spark,bench -q
	$(VENV)/bin/pip install -q --no-deps -e spark_udfs --config-settings editable_mode=compat
	# Bytecode, as a wheel's install compiles it: with PYTHONDONTWRITEBYTECODE set, every start
	# of the editable install would compile the sources again (80 ms of a 0.15 s start-up).
	$(PY) -m compileall -q python/kafkars spark_udfs >/dev/null
	mv $@.building $@

dev: $(VENV)/.dev-stamp ## build the Rust core (release), install kafkars-broker (with its extras) and kafkars-spark into .venv

run: $(VENV)/.dev-stamp ## start one broker with config/server.properties: 127.0.0.1:9092, data in ./kafkars-data
	@$(VENV)/bin/kafkars-server-start $(or $(CONFIG),config/server.properties) $(ARGS)

cluster: $(VENV)/.dev-stamp ## start ZooKeeper ($(ZK) nodes, default 1) and $(N) brokers (default 3) on free ports until Ctrl-C
	@$(VENV)/bin/kafkars-cluster --brokers $(or $(N),3) --zookeeper-nodes $(or $(ZK),1)

test: system-deps dev lint test-rust test-python test-smoke ## lint, then every test (what CI runs)

test-rust: ## Rust unit and property tests (the whole workspace, the PyO3 crate too)
	cargo test --workspace --locked -q

test-python: ## Python tests against real brokers and clients
	$(PY) -m pytest -q

test-long: dev reference-deps java-tests spark-connector-deps ## the tests marked `long` (the reference Kafka side of the ecosystem and migration tests, the long mixed-cluster ones), left out of CI
	KAFKARS_LONG=1 $(PY) -m pytest -q -m long

# Short smokes of the long suites (fuzz, chaos); each mk/*.mk adds its own with `test-smoke:: <target>`.
test-smoke::
	@true

-include mk/*.mk

lint: venv ## cargo fmt, clippy -D warnings, ruff, mypy, stubtest of kafkars._core, the protocol bridge regenerated and diffed
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -q -- -D warnings
	$(VENV)/bin/ruff check python tests bench spark_udfs
	$(VENV)/bin/ruff format --check python tests bench spark_udfs
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest kafkars._core
	$(PY) rust/kafkars-python/gen/gen_protocol_bridge.py --check
	$(PY) rust/kafkars-python/gen/gen_vocabulary.py --check

fmt: venv ## format Rust and Python sources
	cargo fmt --all
	$(VENV)/bin/ruff format python tests bench spark_udfs
	$(VENV)/bin/ruff check --fix python tests bench spark_udfs

bench-rust: ## Criterion benches of the Rust crates
	cargo bench --workspace --exclude kafkars-python

# The broker harness (bench/harness/, README "Benchmarks"): BENCH_ARGS="--quick",
# "--scenarios produce,latency", "--peer kafka=127.0.0.1:9092", ...
BENCH_ARGS ?=

bench-broker: dev ## the broker harness: kafkars (and --peer brokers) under rdkafka_performance beside the loopback limits
	$(PY) -m bench.harness $(BENCH_ARGS)

bench: dev bench-rust ## all benchmarks (Criterion, pytest-benchmark, the broker harness)
	$(PY) -m pytest bench --benchmark-enable -q
	$(PY) bench/test_spark_decode.py
	$(PY) -m bench.harness $(BENCH_ARGS)
	$(PY) bench/tls_bench.py

conformance: dev ## librdkafka's test suite against a broker (builds librdkafka once; slow)
	scripts/conformance.sh $(TESTS)

clean: ## remove build outputs and the venv
	rm -rf target $(VENV) .pytest_cache
