"""A Jepsen-style network-fault suite (README "Network faults"): `python -m
kafkars.testing.jepsen` (`make jepsen`) runs every fault against ZooKeeper and three
brokers, each in its own network namespace, and checks the recorded history."""
