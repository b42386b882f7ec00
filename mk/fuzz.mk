# Fuzzing (issue 11 item 5; fuzz/README.md).
#
#   make fuzz          every cargo-fuzz target for FUZZ_SECONDS each (libFuzzer, nightly),
#                      then the network mutation fuzzer against a broker process
#   make fuzz-smoke    the committed corpora replayed through every target on the stable
#                      toolchain (a workspace test, reusing test-rust's build), and a
#                      short network run
#   make fuzz-seeds    re-capture seed corpora from real client traffic and broker files
.PHONY: fuzz fuzz-tools fuzz-build fuzz-smoke fuzz-seeds

FUZZ_SECONDS ?= 300
NET_FUZZ_SECONDS ?= $(FUZZ_SECONDS)
# Inputs of the network smoke; its broker start and round trips dominate (~10 s).
NET_FUZZ_SMOKE_INPUTS ?= 1000
# CreateTopics / CreatePartitions seeds are left out of the network runs: a mutated
# partition count creates thousands of partitions (fuzz/README.md, known limits).
NET_FUZZ_ARGS ?= --skip-keys 19,37
FUZZ_TARGETS ?= request_frame record_batch decompress index_files checkpoint_files \
	producer_snapshot log_recovery log_append arrow_decode
# -O: optimised, with the overflow checks of fuzz/Cargo.toml's release profile (as the
# broker's own release build).
CARGO_FUZZ := cargo +nightly fuzz
CARGO_FUZZ_FLAGS := -O --features libfuzzer
LIBFUZZER_FLAGS ?= -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=262144 -print_final_stats=1

fuzz-tools: ## nightly and cargo-fuzz, installed when missing
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# The fuzz workspace builds with the root lock file's versions.
fuzz/Cargo.lock: Cargo.lock
	cp Cargo.lock $@

fuzz-build: fuzz-tools fuzz/Cargo.lock
	cd fuzz && $(CARGO_FUZZ) build $(CARGO_FUZZ_FLAGS)

fuzz: dev fuzz-build ## fuzz every target FUZZ_SECONDS (default 300) each, then the network fuzzer
	@mkdir -p fuzz/work
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/work/$$t; \
		echo "== $$t ($(FUZZ_SECONDS) s)"; \
		(cd fuzz && $(CARGO_FUZZ) run $(CARGO_FUZZ_FLAGS) $$t work/$$t corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) $(LIBFUZZER_FLAGS)) > fuzz/work/$$t.log 2>&1 \
			|| { tail -40 fuzz/work/$$t.log; echo "$$t: CRASH (fuzz/artifacts/$$t/)"; exit 1; }; \
		grep -h "stat::number_of_executed_units\|Done " fuzz/work/$$t.log | tail -2; \
	done
	$(PY) fuzz/net_fuzz.py --seconds $(NET_FUZZ_SECONDS) $(NET_FUZZ_ARGS)
	@echo "== inputs per target"; for t in $(FUZZ_TARGETS); do \
		printf "  %-18s %s\n" $$t "$$(grep -h 'stat::number_of_executed_units' fuzz/work/$$t.log | awk '{print $$2}')"; \
	done

# The replay is a test of the workspace (rust/kafkars-python/tests/fuzz_corpus.rs, which
# compiles fuzz/src/lib.rs as a module), so it reuses test-rust's build: seconds, not the
# minutes a separate build of the fuzz crate takes.
fuzz-smoke: ## replay the committed fuzz corpora through every target (stable) and a short network fuzz
	cargo test -q --locked -p kafkars-python --test fuzz_corpus -- --nocapture
	$(PY) fuzz/net_fuzz.py --inputs $(NET_FUZZ_SMOKE_INPUTS) $(NET_FUZZ_ARGS)

fuzz-seeds: dev ## capture seed corpora from real client traffic and broker files (fuzz/capture.py)
	$(PY) fuzz/capture.py

test-smoke:: fuzz-smoke
