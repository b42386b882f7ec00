"""kafkars: a Kafka-wire-compatible broker with a Rust core and a Python shell."""

from kafkars._core import __version__

__all__ = ["__version__"]
