"""kafkars: a Kafka-wire-compatible broker with a Rust core and a Python shell."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars._core import __version__

if TYPE_CHECKING:
    from kafkars.broker import Broker

__all__ = ["Broker", "__version__"]


def __getattr__(name: str) -> Any:
    # Loaded on first use so that importing any kafkars module does not import the whole
    # broker through this package (which made every module part of one import cycle).
    if name == "Broker":
        from kafkars.broker import Broker

        return Broker
    raise AttributeError(f"module 'kafkars' has no attribute {name!r}")
