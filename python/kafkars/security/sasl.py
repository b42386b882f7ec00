"""SASL server mechanisms for SaslHandshake/SaslAuthenticate: PLAIN (users from the
listener's JAAS config) and SCRAM-SHA-256/512 (credentials from the SCRAM store), with
Kafka's config names. One exchange object per connection, kept in the connection's
session between SaslAuthenticate rounds."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Any

import scramp

from kafkars.config.definition import ConfigException
from kafkars.security.jaas import parse_jaas_config
from kafkars.security.scram import MECHANISMS, ScramCredentialStore

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class AuthenticationFailed(Exception):
    """Wrong credentials or a malformed exchange; the message is safe to send."""


def _plain_users(config: Any, listener: str) -> dict[str, str]:
    name = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
    raw = None
    for layer in (config.dynamic_broker, config.dynamic_default, config.originals):
        if name in layer:
            raw = layer[name]
            break
    if raw is None:
        raw = config.listener_config(listener, "sasl.jaas.config")
    if raw is None:
        raise ConfigException(
            f"Listener {listener} enables PLAIN but has no JAAS configuration: set {name} "
            'to PlainLoginModule required user_<name>="<password>" ...;',
            name=name,
        )
    text = raw.value if hasattr(raw, "value") else str(raw)
    entry = parse_jaas_config(text, name)
    return {k[len("user_") :]: v for k, v in entry.options.items() if k.startswith("user_")}


@dataclass
class ListenerSasl:
    """What one SASL listener accepts."""

    mechanisms: list[str]
    plain_users: dict[str, str] = field(default_factory=dict)


def listener_sasl_settings(config: Any) -> dict[str, ListenerSasl]:
    """The SASL settings of every SASL listener; refuses what cannot be served."""
    out: dict[str, ListenerSasl] = {}
    for endpoint in config.listeners:
        if not endpoint.security_protocol.startswith("SASL_"):
            continue
        listener = endpoint.listener_name
        mechanisms = [
            m.strip()
            for m in (config.listener_config(listener, "sasl.enabled.mechanisms") or [])
            if m.strip()
        ]
        unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unsupported or not mechanisms:
            raise ConfigException.invalid(
                "sasl.enabled.mechanisms",
                ",".join(mechanisms),
                f"listener {listener}: supported mechanisms are "
                f"{', '.join(SUPPORTED_MECHANISMS)}"
                + (f" ({', '.join(unsupported)} is not)" if unsupported else ""),
            )
        settings = ListenerSasl(mechanisms)
        if "PLAIN" in mechanisms:
            settings.plain_users = _plain_users(config, listener)
        out[listener] = settings
    return out


class PlainExchange:
    """RFC 4616: one message ``authzid NUL authcid NUL passwd``."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.principal: str | None = None

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: authorization id must equal user")
        expected = self.users.get(user)
        # Compared in constant time; an unknown user costs the same as a wrong password.
        if not hmac.compare_digest((expected or "\x00").encode(), password.encode()) or (
            expected is None
        ):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal = f"User:{user}"
        return b""


class ScramExchange:
    """RFC 5802 server side through `scramp`: client-first, then client-final."""

    def __init__(self, mechanism: str, store: ScramCredentialStore) -> None:
        self.mechanism = mechanism
        self.store = store
        self._mechanism = scramp.ScramMechanism(mechanism)
        self._server: Any = None
        self._user: str | None = None
        self.principal: str | None = None

    def _auth_info(self, saslname: str) -> tuple[bytes, bytes, bytes, int]:
        # RFC 5802 escapes ',' and '=' in user names.
        user = saslname.replace("=2C", ",").replace("=3D", "=")
        self._user = user
        credential = self.store.get(user, self.mechanism)
        if credential is None:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        return (
            credential.salt,
            credential.stored_key,
            credential.server_key,
            credential.iterations,
        )

    def step(self, token: bytes) -> bytes:
        try:
            if self._server is None:
                self._server = self._mechanism.make_server(self._auth_info)
                self._server.set_client_first(token.decode())
                return str(self._server.get_server_first()).encode()
            self._server.set_client_final(token.decode())
            final = str(self._server.get_server_final()).encode()
        except AuthenticationFailed:
            raise
        except (scramp.ScramException, UnicodeDecodeError, ValueError) as e:
            raise AuthenticationFailed(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}"
            ) from e
        self.principal = f"User:{self._user}"
        return final


def new_exchange(
    mechanism: str, settings: ListenerSasl, store: ScramCredentialStore
) -> PlainExchange | ScramExchange:
    if mechanism == "PLAIN":
        return PlainExchange(settings.plain_users)
    if mechanism in MECHANISMS:
        return ScramExchange(mechanism, store)
    raise ValueError(mechanism)
