"""Helpers for testing against kafkars: the embedded broker, Apache Kafka itself as the
reference (`ReferenceKafka`), and pytest fixtures.

Other projects get the `kafka_broker` fixture by installing kafkars (the pytest plugin is
registered through an entry point).
"""

from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ReferenceKafka

__all__ = ["Broker", "ReferenceKafka"]
