# Mixed clusters (issue 25): Apache Kafka 3.9 brokers (ZooKeeper mode) and kafkars brokers
# in one cluster.
#   make mixed        every tests/mixed test, the long ones too: the rolling migration, the
#                     SIGKILL faults of both cluster shapes (twice each, longer under
#                     load), StopReplica and ControlledShutdown across the kinds
#   make mixed KAFKARS_MIXED_LOGS=/tmp/mixed-logs   keeps every broker's whole log
# CI (`make test`) runs the short ones with the rest of the suite; the long ones are marked
# `long` and run only with KAFKARS_LONG=1 (so `make test-long` runs them too).
.PHONY: mixed

mixed: dev reference-deps ## Kafka 3.9 and kafkars brokers in one cluster: every tests/mixed test, the rolling migration too
	KAFKARS_LONG=1 $(PY) -m pytest -q -s tests/mixed
