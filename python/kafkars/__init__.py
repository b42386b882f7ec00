"""kafkars: a Kafka-wire-compatible broker with a Rust core and a Python shell."""

from kafkars._core import __version__
from kafkars.broker import Broker

__all__ = ["Broker", "__version__"]
