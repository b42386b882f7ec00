"""How this broker connects to the other brokers: over the inter-broker listener
(`inter.broker.listener.name`, or the listener of `security.inter.broker.protocol`) with
that listener's security protocol, as Kafka does.

- SSL / SASL_SSL: the broker is a TLS client trusting the listener's `ssl.truststore.*`
  (the system's CAs without one), presenting its `ssl.keystore.*` when asked
  (`ssl.client.auth`), checking the host name unless
  `ssl.endpoint.identification.algorithm` is empty.
- SASL_PLAINTEXT / SASL_SSL: it logs in with `sasl.mechanism.inter.broker.protocol` as the
  `username`/`password` of the listener's JAAS config
  (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else `sasl.jaas.config`).

`inter_broker_security` gives the settings of the controller channel and `call_broker`,
`fetcher_security` the same settings for the replica fetchers; both connect through the
Rust client (`kafkars-client`).
"""

from __future__ import annotations

from typing import Any

from kafkars.config.definition import ConfigException
from kafkars.config.ssl import listener_tls_settings
from kafkars.security.client_auth import ClientSecurity, SaslLogin, TlsSettings, system_trust
from kafkars.security.sasl import listener_jaas_config


def _system_trust() -> bytes:
    trust = system_trust()
    if trust is None:
        raise ConfigException(
            "The inter-broker listener is SSL but has no trust store and the system has no "
            "CA file: set ssl.truststore.location",
            name="ssl.truststore.location",
        )
    return trust


def _tls(config: Any, listener: str) -> TlsSettings:
    settings = listener_tls_settings(config, listener)
    algorithm = config.listener_config(listener, "ssl.endpoint.identification.algorithm")
    return TlsSettings(
        truststore=settings["truststore"] or _system_trust(),
        certificate_chain=settings["certificate_chain"],
        private_key=settings["private_key"],
        check_hostname=bool(str(algorithm or "").strip()),
    )


def _sasl(config: Any, listener: str) -> SaslLogin:
    mechanism = str(config.get("sasl.mechanism.inter.broker.protocol")).upper()
    entry = listener_jaas_config(config, listener, mechanism)
    options = entry.options if entry is not None else {}
    if "username" not in options or "password" not in options:
        raise ConfigException(
            f"The inter-broker listener {listener} uses SASL {mechanism}: its JAAS config "
            f"(listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config or "
            'sasl.jaas.config) needs the broker\'s own username="..." password="..."',
            name="sasl.jaas.config",
        )
    return SaslLogin(mechanism, options["username"], options["password"])


def _settings(config: Any) -> tuple[str, TlsSettings | None, SaslLogin | None]:
    listener = config.inter_broker_listener_name
    protocol = config.inter_broker_security_protocol
    tls = _tls(config, listener) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _sasl(config, listener) if protocol.startswith("SASL_") else None
    return protocol, tls, sasl


def inter_broker_security(config: Any) -> ClientSecurity:
    """The client side of the inter-broker listener; ConfigException for settings that
    cannot make it."""
    protocol, tls, sasl = _settings(config)
    return ClientSecurity(protocol, tls, sasl)


def fetcher_security(config: Any) -> dict[str, Any] | None:
    """The same settings for `_core.ReplicaFetcherManager(security=...)`; None for PLAINTEXT."""
    return inter_broker_security(config).settings()
