"""Listener strings (``NAME://host:port,...``) and the listener → security protocol map."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from kafkars.config.definition import ConfigException

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Kafka builds this default from a HashMap, so its order is the one its docs print.
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

# Same shape as Kafka's EndPoint regex: name://host:port, host optionally in [brackets].
_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class Endpoint:
    """One listener. ``host == ""`` means every interface (``PLAINTEXT://:9092``)."""

    listener_name: str
    security_protocol: str
    host: str
    port: int

    @property
    def bind_host(self) -> str:
        """The address to bind: the wildcard when no host was given."""
        return self.host or "0.0.0.0"

    @property
    def ip_version(self) -> int | None:
        """4 or 6 for an IP literal host, None for a name or the wildcard."""
        try:
            return ipaddress.ip_address(self.host.split("%", 1)[0]).version
        except ValueError:
            return None

    @property
    def is_ipv6(self) -> bool:
        return self.ip_version == 6

    def connection_string(self) -> str:
        """Back to ``NAME://host:port`` (IPv6 literals in brackets)."""
        host = f"[{self.host}]" if self.is_ipv6 else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    def __str__(self) -> str:
        return self.connection_string()


def parse_protocol_map(value: str, name: str = "listener.security.protocol.map") -> dict[str, str]:
    """``NAME:PROTOCOL,...`` → {NAME: PROTOCOL}; names upper-cased as Kafka normalises them."""
    result: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        listener, sep, protocol = item.partition(":")
        listener, protocol = listener.strip().upper(), protocol.strip().upper()
        if not sep or not listener or protocol not in SECURITY_PROTOCOLS:
            raise ConfigException.invalid(
                name,
                value,
                f"Each entry must be LISTENER_NAME:PROTOCOL with PROTOCOL one of "
                f"{', '.join(SECURITY_PROTOCOLS)} (bad entry '{item}')",
            )
        if listener in result:
            raise ConfigException.invalid(name, value, f"Listener name {listener} appears twice")
        result[listener] = protocol
    return result


def parse_endpoint(text: str, protocol_map: dict[str, str], name: str = "listeners") -> Endpoint:
    """Parse one ``NAME://host:port``; the name must be in ``protocol_map``."""
    m = _ENDPOINT_RE.match(text.strip())
    if m is None:
        raise ConfigException.invalid(
            name, text, "Expected NAME://host:port (IPv6 hosts in [brackets], empty host = all)"
        )
    listener = m.group(1).strip().upper()
    host = m.group(2)
    port = int(m.group(3))
    if not 0 <= port <= 65535:
        raise ConfigException.invalid(name, text, f"Port {port} is not between 0 and 65535")
    protocol = protocol_map.get(listener)
    if protocol is None:
        raise ConfigException.invalid(
            name,
            text,
            f"No security protocol defined for listener {listener} "
            "(add it to listener.security.protocol.map)",
        )
    return Endpoint(listener, protocol, host, port)


def parse_listeners(
    value: str | None, protocol_map: dict[str, str], name: str = "listeners"
) -> list[Endpoint]:
    """A comma-separated listener list; names must be unique, and so must ports (except that
    an IPv4 and an IPv6 listener may share one, as KIP-797 allows)."""
    if value is None or not value.strip():
        return []
    endpoints = [
        parse_endpoint(part, protocol_map, name) for part in value.split(",") if part.strip()
    ]
    seen_names: set[str] = set()
    seen_ports: dict[int, Endpoint] = {}
    for e in endpoints:
        if e.listener_name in seen_names:
            raise ConfigException.invalid(
                name, value, f"Each listener must have a different name ({e.listener_name})"
            )
        seen_names.add(e.listener_name)
        other = seen_ports.get(e.port)
        # Port 0 (ephemeral) may repeat; otherwise only an IPv4 and an IPv6 literal may share.
        versions = {other.ip_version, e.ip_version} if other is not None else set()
        if other is not None and e.port != 0 and versions != {4, 6}:
            raise ConfigException.invalid(
                name, value, f"Each listener must have a different port ({e.port})"
            )
        seen_ports[e.port] = e
    return endpoints
