"""The Kafka client the command-line tools speak through: confluent-kafka (librdkafka),
so a tool sees the broker the way every client does. Imported lazily so `--help` works
without it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click


def _confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:  # pragma: no cover - depends on the install
        raise click.ClickException("needs confluent-kafka: pip install confluent-kafka") from None
    return confluent_kafka


def parse_properties(pairs: Iterable[str], option: str) -> dict[str, str]:
    """`key=value` pairs (from repeated options or one comma-separated list) as a dict."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"{option} expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def admin(bootstrap: str, extra: dict[str, str] | None = None) -> Any:
    from confluent_kafka.admin import AdminClient

    _confluent()
    return AdminClient({"bootstrap.servers": bootstrap, **(extra or {})})


def producer(bootstrap: str, extra: dict[str, str] | None = None) -> Any:
    return _confluent().Producer({"bootstrap.servers": bootstrap, **(extra or {})})


def consumer(bootstrap: str, group: str, extra: dict[str, str] | None = None) -> Any:
    return _confluent().Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            **(extra or {}),
        }
    )


def topic_partitions(client: Any, topic: str) -> list[int]:
    """The topic's partition ids, or a clean error when it does not exist."""
    meta = client.list_topics(topic, timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        raise click.ClickException(f"Topic '{topic}' does not exist")
    return sorted(meta.partitions)


def config_source(entry: Any) -> int:
    """A described config's source as Kafka's number (confluent-kafka may give an enum)."""
    return int(getattr(entry.source, "value", entry.source))
