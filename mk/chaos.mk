# Chaos checks against real broker processes (chaos/, issue 11 item 6).
#   make chaos            kill -9 cycles, hostile frames, 5,000 connections, damaged files
#   make chaos CYCLES=200 more kill -9 cycles (default 50)
#   make chaos-smoke      a short run of each (part of `make test`)
CYCLES ?= 50
CHAOS_ARGS ?=
CHAOS := PYTHONPATH=$(abspath python):$(CURDIR) $(PY) -m chaos

.PHONY: chaos chaos-smoke

chaos: ## kill -9 under load, hostile frames with RSS sampling, 5,000 connections, damaged files (CYCLES=50)
	$(CHAOS) --cycles $(CYCLES) $(CHAOS_ARGS)

chaos-smoke: ## a short run of every chaos suite (under 2 minutes)
	$(CHAOS) --smoke $(CHAOS_ARGS)

test-smoke:: chaos-smoke
