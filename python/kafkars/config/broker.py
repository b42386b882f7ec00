"""``KafkaConfig``: the broker's configuration, parsed, validated and layered like Kafka's."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kafkars.config.broker_defs import (
    BROKER_CONFIG_DEF,
    BROKER_DYNAMIC_ONLY_DEF,
)
from kafkars.config.definition import (
    ConfigException,
    ConfigKey,
    ConfigType,
    to_string,
)
from kafkars.config.listeners import Endpoint, parse_listeners, parse_protocol_map

log = logging.getLogger(__name__)

LISTENER_PREFIX_RE = re.compile(r"listener\.name\.([^.]*)\.(.*)")
# Configs a listener may set per SASL mechanism: listener.name.<l>.<mechanism>.<config>.
_LISTENER_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` (``--override k=v``) → ``{k: v}``; later items win.

    Only the first ``=`` splits, so values may contain ``=``; a key must be non-empty.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigException(
                f"Invalid override '{item}': expected key=value", name=key or None, value=item
            )
        out[key] = value
    return out


def _as_string(name: str, value: Any) -> str:
    """Originals are kept as strings, as they would be in a properties file."""
    if isinstance(value, str):
        return value
    key = BROKER_CONFIG_DEF.get(name)
    rendered = to_string(value, key.type if key else None)
    return "" if rendered is None else rendered


def base_config_name(name: str) -> str:
    """``listener.name.<l>.<config>`` → ``<config>``; other names unchanged."""
    m = LISTENER_PREFIX_RE.fullmatch(name)
    return m.group(2) if m else name


def config_key(name: str) -> ConfigKey | None:
    """The definition of a broker config (listener-prefixed names resolve to their base)."""
    key = BROKER_CONFIG_DEF.get(name) or BROKER_DYNAMIC_ONLY_DEF.get(name)
    if key is None and name.startswith("listener.name."):
        base = base_config_name(name)
        key = BROKER_CONFIG_DEF.get(base)
        if key is None and "." in base:
            # listener.name.<l>.<mechanism>.sasl.jaas.config and friends
            for candidate in _LISTENER_MECHANISM_CONFIGS:
                if base.endswith("." + candidate):
                    key = BROKER_CONFIG_DEF.get(candidate)
                    break
    return key


def did_you_mean(name: str) -> str:
    """``"; did you mean 'x'?"`` naming the closest known broker config, or ``""``."""
    import difflib  # only for a misspelt name

    known = [*BROKER_CONFIG_DEF.names(), *BROKER_DYNAMIC_ONLY_DEF.names()]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    return f"; did you mean '{close[0]}'?" if close else ""


class KafkaConfig:
    """A broker's configuration.

    Layers, lowest precedence first: Kafka defaults, ``originals`` (server.properties and
    ``--override``), ``dynamic_default`` (cluster-wide dynamic), ``dynamic_broker``
    (per-broker dynamic). ``get(name)`` returns the effective parsed value: bool, int,
    float, str, list[str], Password, or None when a key has no value.

    Construct with :meth:`from_dict` or :meth:`from_properties_file`; apply dynamic
    changes with :meth:`with_dynamic`, which returns a new, re-validated instance.
    """

    def __init__(
        self,
        props: Mapping[str, Any] | None = None,
        *,
        dynamic_default: Mapping[str, Any] | None = None,
        dynamic_broker: Mapping[str, Any] | None = None,
        warn_unknown: bool = True,
    ) -> None:
        originals = {str(k): _as_string(str(k), v) for k, v in (props or {}).items()}
        # broker.id and node.id stand for each other when only one is given (Kafka 3.x).
        if "broker.id" in originals and "node.id" not in originals:
            originals["node.id"] = originals["broker.id"]
        elif "node.id" in originals and "broker.id" not in originals:
            originals["broker.id"] = originals["node.id"]
        self.originals: dict[str, str] = originals
        self.dynamic_default: dict[str, str] = {
            k: _as_string(k, v) for k, v in (dynamic_default or {}).items()
        }
        self.dynamic_broker: dict[str, str] = {
            k: _as_string(k, v) for k, v in (dynamic_broker or {}).items()
        }
        effective = {**self.originals, **self.dynamic_default, **self.dynamic_broker}
        self.values: dict[str, Any] = BROKER_CONFIG_DEF.parse(effective)
        for name in BROKER_DYNAMIC_ONLY_DEF.names():
            if name in effective:
                self.values[name] = BROKER_DYNAMIC_ONLY_DEF.parse_value(name, effective[name])
        self.unknown: list[str] = sorted(k for k in effective if config_key(k) is None)
        if warn_unknown:
            # Kafka keeps unknown keys (plugins read them) and only logs them.
            for name in self.unknown:
                log.warning(
                    "Unknown configuration '%s' (kept, but not used by kafkars)%s",
                    name,
                    did_you_mean(name),
                )
        self._derive()
        self._validate()

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, props: Mapping[str, Any] | None = None) -> KafkaConfig:
        """From a plain mapping; values may be strings or Python values."""
        return cls(props or {})

    @classmethod
    def from_properties_file(
        cls, path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None
    ) -> KafkaConfig:
        """Read a Java properties file, then apply ``overrides`` (e.g. ``--override``)."""
        # Imported here: javaproperties brings in xml.sax, urllib and ssl (9 MiB of a
        # broker's 39), which a broker configured by overrides alone never needs.
        import javaproperties

        try:
            with open(path, encoding="utf-8") as f:
                props: dict[str, Any] = dict(javaproperties.load(f))
        except OSError as e:
            raise ConfigException(f"Cannot read properties file {path}: {e}") from e
        props.update(overrides or {})
        return cls(props)

    @classmethod
    def from_properties_string(
        cls, text: str, overrides: Mapping[str, Any] | None = None
    ) -> KafkaConfig:
        import javaproperties

        props: dict[str, Any] = dict(javaproperties.loads(text))
        props.update(overrides or {})
        return cls(props)

    def with_dynamic(
        self,
        dynamic_broker: Mapping[str, Any] | None = None,
        dynamic_default: Mapping[str, Any] | None = None,
    ) -> KafkaConfig:
        """A new config with these dynamic layers (None keeps the current layer)."""
        return KafkaConfig(
            self.originals,
            dynamic_default=self.dynamic_default if dynamic_default is None else dynamic_default,
            dynamic_broker=self.dynamic_broker if dynamic_broker is None else dynamic_broker,
            warn_unknown=False,
        )

    # -- access ---------------------------------------------------------------------------
    def get(self, name: str) -> Any:
        """Effective value of a config; raw string for undefined keys that were given.

        Raises KeyError for a name that is neither defined nor given.
        """
        if name in self.values:
            return self.values[name]
        for layer in (self.dynamic_broker, self.dynamic_default, self.originals):
            if name in layer:
                return layer[name]
        raise KeyError(f"Unknown broker config: {name}")

    __getitem__ = get

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (
            name in self.values
            or name in self.originals
            or name in self.dynamic_default
            or name in self.dynamic_broker
        )

    def get_string(self, name: str) -> str | None:
        """The effective value rendered as Kafka renders it."""
        key = config_key(name)
        return to_string(self.get(name), key.type if key else None)

    def listener_config(self, listener_name: str, name: str) -> Any:
        """``listener.name.<listener>.<name>`` if set, else the base config."""
        prefixed = f"listener.name.{listener_name.lower()}.{name}"
        for layer in (self.dynamic_broker, self.dynamic_default, self.originals):
            if prefixed in layer:
                key = config_key(name)
                if key is None:
                    return layer[prefixed]
                return BROKER_CONFIG_DEF.parse_value(key.name, layer[prefixed])
        return self.get(name)

    @staticmethod
    def config_names() -> list[str]:
        return BROKER_CONFIG_DEF.names()

    @staticmethod
    def config_type(name: str) -> ConfigType | None:
        key = config_key(name)
        return key.type if key else None

    @staticmethod
    def documentation_of(name: str) -> str | None:
        key = config_key(name)
        return key.doc if key else None

    def __repr__(self) -> str:
        return (
            f"KafkaConfig(broker_id={self.broker_id}, listeners="
            f"{[str(e) for e in self.listeners]}, log_dirs={self.log_dirs})"
        )

    # -- derived values ---------------------------------------------------------------------
    def _derive(self) -> None:
        v = self.values
        self.broker_id: int = v["broker.id"]
        self.node_id: int = v["node.id"]
        self.listener_security_protocol_map: dict[str, str] = parse_protocol_map(
            v["listener.security.protocol.map"]
        )
        pmap = self.listener_security_protocol_map
        self.listeners: list[Endpoint] = parse_listeners(v["listeners"], pmap, "listeners")
        advertised = v["advertised.listeners"]
        self.advertised_listeners: list[Endpoint] = (
            parse_listeners(advertised, pmap, "advertised.listeners")
            if advertised is not None
            else list(self.listeners)
        )
        dirs = v["log.dirs"] if v["log.dirs"] is not None else v["log.dir"]
        self.log_dirs: list[str] = [d.strip() for d in dirs.split(",") if d.strip()]
        # ms over minutes over hours; any negative result means "forever" (-1).
        if v["log.retention.ms"] is not None:
            retention = v["log.retention.ms"]
        elif v["log.retention.minutes"] is not None:
            retention = v["log.retention.minutes"] * 60_000
        else:
            retention = v["log.retention.hours"] * 3_600_000
        self.log_retention_ms: int = -1 if retention < 0 else retention
        self.log_roll_ms: int = (
            v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3_600_000
        )
        self.log_roll_jitter_ms: int = (
            v["log.roll.jitter.ms"]
            if v["log.roll.jitter.ms"] is not None
            else v["log.roll.jitter.hours"] * 3_600_000
        )
        self.log_flush_interval_ms: int = (
            v["log.flush.interval.ms"]
            if v["log.flush.interval.ms"] is not None
            else v["log.flush.scheduler.interval.ms"]
        )
        given = {**self.originals, **self.dynamic_default, **self.dynamic_broker}
        ibl = v["inter.broker.listener.name"]
        if ibl is not None:
            if "security.inter.broker.protocol" in given:
                raise ConfigException(
                    "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                    "may be set.",
                    name="inter.broker.listener.name",
                    value=ibl,
                )
            self.inter_broker_listener_name: str = ibl.strip().upper()
            protocol = pmap.get(self.inter_broker_listener_name)
            if protocol is None:
                raise ConfigException.invalid(
                    "inter.broker.listener.name",
                    ibl,
                    "Listener not found in listener.security.protocol.map",
                )
            self.inter_broker_security_protocol: str = protocol
        else:
            protocol = v["security.inter.broker.protocol"]
            self.inter_broker_listener_name = protocol
            self.inter_broker_security_protocol = protocol
        cpl = v["control.plane.listener.name"]
        self.control_plane_listener_name: str | None = cpl.strip().upper() if cpl else None
        self.zookeeper_connect: str | None = v["zookeeper.connect"]
        zk_timeout = v["zookeeper.connection.timeout.ms"]
        self.zookeeper_connection_timeout_ms: int = (
            zk_timeout if zk_timeout is not None else v["zookeeper.session.timeout.ms"]
        )
        self.max_connections_per_ip_overrides: dict[str, int] = _parse_ip_overrides(
            v["max.connections.per.ip.overrides"]
        )

    def _validate(self) -> None:
        """Cross-key rules Kafka enforces at start-up (KafkaConfig.validateValues)."""
        v = self.values

        def require(ok: bool, message: str, name: str) -> None:
            if not ok:
                raise ConfigException(message, name=name, value=v.get(name))

        if v["broker.id.generation.enable"]:
            require(
                -1 <= self.broker_id <= v["reserved.broker.max.id"],
                "broker.id must be greater than or equal to -1 and not greater than "
                "reserved.broker.max.id",
                "broker.id",
            )
        else:
            require(
                self.broker_id >= 0, "broker.id must be greater than or equal to 0", "broker.id"
            )
        require(
            self.log_roll_ms >= 1, "log.roll.ms must be greater than or equal to 1", "log.roll.ms"
        )
        require(
            self.log_roll_jitter_ms >= 0,
            "log.roll.jitter.ms must be greater than or equal to 0",
            "log.roll.jitter.ms",
        )
        require(
            self.log_retention_ms >= 1 or self.log_retention_ms == -1,
            "log.retention.ms must be unlimited (-1) or, greater than or equal to 1",
            "log.retention.ms",
        )
        require(
            bool(self.log_dirs),
            "At least one log directory must be defined via log.dirs or log.dir.",
            "log.dirs",
        )
        threads = v["log.cleaner.threads"]
        require(
            threads == 0 or v["log.cleaner.dedupe.buffer.size"] / threads > 1024 * 1024,
            "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
            "log.cleaner.dedupe.buffer.size",
        )
        require(
            v["replica.fetch.wait.max.ms"] <= v["replica.socket.timeout.ms"],
            "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms",
            "replica.socket.timeout.ms",
        )
        require(
            v["replica.fetch.wait.max.ms"] <= v["replica.lag.time.max.ms"],
            "replica.fetch.wait.max.ms should always be less than or equal to "
            "replica.lag.time.max.ms",
            "replica.fetch.wait.max.ms",
        )
        require(
            v["group.min.session.timeout.ms"] <= v["group.max.session.timeout.ms"],
            "group.min.session.timeout.ms must not be greater than group.max.session.timeout.ms",
            "group.min.session.timeout.ms",
        )
        require(
            v["queued.max.request.bytes"] <= 0
            or v["queued.max.request.bytes"] >= v["socket.request.max.bytes"],
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes",
            "queued.max.request.bytes",
        )
        if v["max.connections.per.ip"] == 0:
            require(
                bool(self.max_connections_per_ip_overrides),
                "max.connections.per.ip can be set to zero only if "
                "max.connections.per.ip.overrides is set",
                "max.connections.per.ip",
            )
        require(
            v["connection.failed.authentication.delay.ms"] < v["connections.max.idle.ms"],
            "connection.failed.authentication.delay.ms must be less than connections.max.idle.ms",
            "connection.failed.authentication.delay.ms",
        )
        names = {e.listener_name for e in self.listeners}
        advertised_names = {e.listener_name for e in self.advertised_listeners}
        require(
            advertised_names <= names,
            "advertised.listeners listener names must be equal to or a subset of the ones "
            f"defined in listeners; found {sorted(advertised_names - names)}",
            "advertised.listeners",
        )
        require(
            self.inter_broker_listener_name in advertised_names,
            "inter.broker.listener.name must be a listener name defined in "
            f"advertised.listeners. The valid options based on currently configured listeners "
            f"are {','.join(sorted(advertised_names))}",
            "inter.broker.listener.name",
        )
        require(
            not any(e.host == "0.0.0.0" for e in self.advertised_listeners),
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
            "Use a routable IP address.",
            "advertised.listeners",
        )
        if self.control_plane_listener_name is not None:
            require(
                self.control_plane_listener_name in advertised_names,
                "control.plane.listener.name must be a listener name defined in "
                "advertised.listeners",
                "control.plane.listener.name",
            )
            require(
                self.control_plane_listener_name != self.inter_broker_listener_name,
                "control.plane.listener.name, if set, must not equal inter.broker.listener.name",
                "control.plane.listener.name",
            )
        if "SASL" in self.inter_broker_security_protocol:
            mechanism = v["sasl.mechanism.inter.broker.protocol"]
            enabled = self.listener_config(
                self.inter_broker_listener_name, "sasl.enabled.mechanisms"
            )
            require(
                mechanism in enabled,
                f"sasl.mechanism.inter.broker.protocol must be included in "
                f"sasl.enabled.mechanisms when SASL is used for inter-broker communication "
                f"({mechanism} not in {enabled})",
                "sasl.mechanism.inter.broker.protocol",
            )


def _parse_ip_overrides(value: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in (p.strip() for p in value.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigException.invalid(
                "max.connections.per.ip.overrides", value, "Expected host:count pairs"
            )
        out[host.strip()] = int(count)
    return out
