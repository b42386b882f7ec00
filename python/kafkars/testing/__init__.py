"""Helpers for testing against kafkars: the embedded broker and a pytest fixture.

Other projects get the `kafka_broker` fixture by installing kafkars (the pytest plugin is
registered through an entry point).
"""

from kafkars.broker import Broker

__all__ = ["Broker"]
