# Soak (issue 29 item 6): one broker under produce, a consumer group, transactions, admin
# churn and restarts for MINUTES minutes; samples, checks and a plot in bench/results/.
#   make soak             10 minutes
#   make soak MINUTES=60  an hour
MINUTES ?= 10
SOAK_ARGS ?=

.PHONY: soak

soak: dev ## everything at once against one broker with restarts for $(MINUTES) min: CSV, checks, plot in bench/results/soak.*
	@$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install -q matplotlib
	PYTHONPATH=$(CURDIR) $(PY) -m bench.soak --minutes $(MINUTES) $(SOAK_ARGS)
