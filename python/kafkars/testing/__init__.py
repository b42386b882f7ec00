"""Helpers for testing against kafkars: the embedded broker, Apache Kafka itself as the
reference (`ReferenceKafka`), and pytest fixtures.

Other projects get the `kafka_broker` fixture by installing kafkars (the pytest plugin is
registered through an entry point).
"""

from typing import Any

from kafkars.broker import Broker

__all__ = ["Broker", "ReferenceKafka"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so `python -m kafkars.testing.reference_kafka` runs the
    # module once (not also as this package's attribute).
    if name == "ReferenceKafka":
        from kafkars.testing.reference_kafka import ReferenceKafka

        return ReferenceKafka
    raise AttributeError(name)
