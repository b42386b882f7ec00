"""The client side of a listener's security protocol, as settings for the Rust client
(`kafkars._core.BrokerConnection`, the `kafkars-client` crate), shared by the tools'
`WireClient` and the broker's own connections to other brokers (the controller channel,
`call_broker`). The client does TLS with rustls, then for SASL_* a login with
SaslHandshake and SaslAuthenticate (PLAIN, SCRAM-SHA-256/512)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkars import _core

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
        """The `security` argument of `_core.BrokerConnection` and
        `_core.ReplicaFetcherManager`; None for PLAINTEXT."""
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
