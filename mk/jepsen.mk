# Jepsen-style network faults (python/kafkars/testing/jepsen/, issue 29): ZooKeeper and three brokers each in a
# network namespace, real clients, a checker over the recorded history.
#   make jepsen                 every fault, 30 s of faults each (needs root)
#   make jepsen SECONDS=120     longer
#   make jepsen FAULTS="leader-zk delay"
#   make jepsen-smoke           the checker tests and one short fault (tests/jepsen, which
#                               `make test` runs with the other Python tests)
SECONDS ?= 30
FAULTS ?=
JEPSEN_RESULTS ?= jepsen-results
JEPSEN := $(PY) -m kafkars.testing.jepsen

.PHONY: jepsen jepsen-smoke

jepsen: dev ## every network fault for SECONDS (default 30) each; histories and verdicts under jepsen-results/
	$(JEPSEN) --seconds $(SECONDS) --results $(JEPSEN_RESULTS) $(foreach f,$(FAULTS),--fault $(f))

jepsen-smoke: ## the checker's unit tests and one short fault (what CI runs of tests/jepsen)
	$(PY) -m pytest -q tests/jepsen
