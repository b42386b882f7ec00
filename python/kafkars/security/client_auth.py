"""The client side of a listener's security protocol, as settings for the Rust client
(`kafkars._core.BrokerConnection`, the `kafkars-client` crate), shared by the tools'
`WireClient` and the broker's own connections to other brokers (the controller channel,
`call_broker`). The client does TLS with rustls, then for SASL_* a login with
SaslHandshake and SaslAuthenticate (PLAIN, SCRAM-SHA-256/512)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkars import _core
from kafkars.config.definition import ConfigException
from kafkars.config.ssl import _decrypted_pem_key, client_tls_settings
from kafkars.security.jaas import parse_jaas_config

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# The broker refused the login or the TLS handshake (the message says which). A
# ConnectionError: whoever retries a broker it cannot reach retries this too.
AuthenticationError = _core.AuthenticationError


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class TlsSettings:
    """A TLS client: the broker's certificate must chain to `truststore` (PEM); the
    `private_key` and `certificate_chain` (PEM) are presented when the broker asks;
    `check_hostname` False is Kafka's empty `ssl.endpoint.identification.algorithm`;
    `verify` False (librdkafka's `enable.ssl.certificate.verification=false`) takes any
    certificate."""

    truststore: bytes = field(repr=False)
    certificate_chain: bytes | None = field(default=None, repr=False)
    private_key: bytes | None = field(default=None, repr=False)
    check_hostname: bool = True
    verify: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "truststore": self.truststore,
            "certificate_chain": self.certificate_chain,
            "private_key": self.private_key,
            "check_hostname": self.check_hostname,
            "verify": self.verify,
        }


@dataclass(frozen=True)
class ClientSecurity:
    """How to open a connection to a listener: `tls` for SSL and SASL_SSL, `sasl` for
    SASL_PLAINTEXT and SASL_SSL."""

    protocol: str = "PLAINTEXT"
    tls: TlsSettings | None = None
    sasl: SaslLogin | None = None

    def settings(self) -> dict[str, Any] | None:
        """The `security` argument of `_core.BrokerConnection`, `_core.ArrowFetcher`,
        `_core.Producer` and `_core.ReplicaFetcherManager`; None for PLAINTEXT."""
        if self.tls is None and self.sasl is None:
            return None
        sasl = self.sasl
        return {
            "tls": None if self.tls is None else self.tls.as_dict(),
            "sasl": None
            if sasl is None
            else {
                "mechanism": sasl.mechanism.upper(),
                "username": sasl.username,
                "password": sasl.password,
            },
        }

    def connect(
        self, address: tuple[str, int], *, timeout_s: float, client_id: str
    ) -> _core.BrokerConnection:
        """A connection, TLS and SASL done; OSError when the broker cannot be reached,
        AuthenticationError for a refused login or certificate."""
        return _core.BrokerConnection(
            address[0],
            address[1],
            client_id=client_id,
            security=self.settings(),
            timeout_s=timeout_s,
        )


PLAINTEXT = ClientSecurity()


def system_trust() -> bytes | None:
    """The system's CA certificates (PEM), what a TLS client trusts without a trust store."""
    # Imported here: loading OpenSSL costs a broker several MiB it never needs otherwise
    # (TLS itself is rustls, in the Rust core).
    import ssl

    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return None


def client_security(config: Mapping[str, Any]) -> ClientSecurity:
    """A Kafka client's security settings from its properties, as Kafka's Java clients
    (and Spark's `kafka.*` options) name them or as librdkafka does: `security.protocol`;
    `sasl.mechanism` with `sasl.jaas.config` (or `sasl.username`/`sasl.password`);
    `ssl.truststore.*`/`ssl.keystore.*` (PEM or PKCS12) or `ssl.ca.location`,
    `ssl.certificate.location`, `ssl.key.location`; `ssl.key.password`,
    `ssl.endpoint.identification.algorithm`, `enable.ssl.certificate.verification`.
    ConfigException names the setting that is wrong or missing."""
    protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigException.invalid(
            "security.protocol", protocol, f"one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    tls = _tls_settings(config) if protocol in ("SSL", "SASL_SSL") else None
    sasl = None
    if protocol.startswith("SASL_"):
        mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI"))
        sasl = SaslLogin(str(mechanism).upper(), *sasl_credentials(config))
    return ClientSecurity(protocol, tls, sasl)


def sasl_credentials(config: Mapping[str, Any]) -> tuple[str, str]:
    """`sasl.username`/`sasl.password` (librdkafka's), else those of Java's
    `sasl.jaas.config` (`... required username="u" password="p";`)."""
    if "sasl.username" in config:
        return str(config["sasl.username"]), str(config.get("sasl.password", ""))
    if "sasl.jaas.config" in config:
        options = parse_jaas_config(str(config["sasl.jaas.config"])).options
        if "username" in options:
            return options["username"], options.get("password", "")
    raise ConfigException(
        "SASL needs sasl.jaas.config (or sasl.username and sasl.password)",
        name="sasl.jaas.config",
    )


def _tls_settings(config: Mapping[str, Any]) -> TlsSettings:
    def read(name: str) -> bytes:
        try:
            with open(config[name], "rb") as f:
                return f.read()
        except OSError as e:
            raise ConfigException.invalid(name, config[name], f"cannot read it: {e}") from None

    java = client_tls_settings(config)
    truststore = java["truststore"]
    if truststore is None and "ssl.ca.location" in config:
        truststore = read("ssl.ca.location")
    if truststore is None:
        truststore = system_trust()
    if truststore is None:
        raise ConfigException(
            "no system CA file: set ssl.truststore.location (or ssl.ca.location)",
            name="ssl.truststore.location",
        )
    key, chain = java["private_key"], java["certificate_chain"]
    if chain is None and "ssl.certificate.location" in config:
        chain = read("ssl.certificate.location")
        # Without ssl.key.location the key is in the certificate's file.
        key = read("ssl.key.location") if "ssl.key.location" in config else chain
        if config.get("ssl.key.password"):
            key = _decrypted_pem_key(key, str(config["ssl.key.password"]).encode())
    algorithm = str(config.get("ssl.endpoint.identification.algorithm", "https")).lower()
    return TlsSettings(
        truststore=truststore,
        certificate_chain=chain,
        private_key=key,
        check_hostname=algorithm not in ("", "none"),
        verify=str(config.get("enable.ssl.certificate.verification", "true")).lower() != "false",
    )
