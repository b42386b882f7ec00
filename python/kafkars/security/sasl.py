"""SASL server mechanisms for SaslHandshake/SaslAuthenticate: PLAIN (users from the
listener's JAAS config) and SCRAM-SHA-256/512 (credentials from the SCRAM store), with
Kafka's config names. One exchange object per connection, kept in the connection's
session between SaslAuthenticate rounds."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from kafkars.config.definition import ConfigException
from kafkars.security.jaas import JaasEntry, parse_jaas_config
from kafkars.security.scram import MECHANISMS, ScramCredential, ScramCredentialStore

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# hashlib, hmac and secrets are imported by the exchanges that use them: loading OpenSSL's
# libcrypto is 6 to 13 ms of a start-up that has no SASL listener.


class AuthenticationFailed(Exception):
    """Wrong credentials or a malformed exchange; the message is safe to send."""


def listener_jaas_config(config: Any, listener: str, mechanism: str) -> JaasEntry | None:
    """The JAAS login module of a listener and mechanism: Kafka's
    ``listener.name.<l>.<mechanism>.sasl.jaas.config``, else the listener's or the
    broker's ``sasl.jaas.config``. It holds the users a PLAIN listener accepts
    (``user_<name>``) and the broker's own login to other brokers (``username``,
    ``password``)."""
    name = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    raw = None
    for layer in (config.dynamic_broker, config.dynamic_default, config.originals):
        if name in layer:
            raw = layer[name]
            break
    if raw is None:
        raw = config.listener_config(listener, "sasl.jaas.config")
    if raw is None:
        return None
    text = raw.value if hasattr(raw, "value") else str(raw)
    return parse_jaas_config(text, name)


def _plain_users(config: Any, listener: str) -> dict[str, str]:
    entry = listener_jaas_config(config, listener, "PLAIN")
    if entry is None:
        name = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
        raise ConfigException(
            f"Listener {listener} enables PLAIN but has no JAAS configuration: set {name} "
            'to PlainLoginModule required user_<name>="<password>" ...;',
            name=name,
        )
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
        import hmac

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
    """RFC 5802/7677 server side: client-first, then client-final, as Kafka's
    ScramSaslServer runs it. Like Kafka, the final nonce only has to end with the nonce
    the server sent (librdkafka 2.0, Debian's, repeats its own nonce in front).
    Credentials come from the store: salt, stored key, server key, iterations."""

    def __init__(self, mechanism: str, store: ScramCredentialStore) -> None:
        self.mechanism = mechanism
        self.store = store
        self.algorithm = MECHANISMS[mechanism][1]
        self.principal: str | None = None
        self._state: tuple[str, str, str, ScramCredential] | None = None

    def _fail(self) -> AuthenticationFailed:
        return AuthenticationFailed(
            "Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {self.mechanism}"
        )

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise self._fail() from None
        if self._state is None:
            return self._client_first(text)
        return self._client_final(text)

    def _client_first(self, message: str) -> bytes:
        import secrets

        # gs2-header ("n,," or "y,,"; no channel binding, no authzid) then the bare part.
        header, sep, bare = message.partition(",,")
        if not sep or header not in ("n", "y"):
            raise self._fail()
        attrs = _scram_attributes(bare)
        if "n" not in attrs or "r" not in attrs or "m" in attrs:
            raise self._fail()
        user = attrs["n"].replace("=2C", ",").replace("=3D", "=")
        credential = self.store.get(user, self.mechanism)
        if credential is None:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        nonce = attrs["r"] + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode()
        server_first = f"r={nonce},s={salt},i={credential.iterations}"
        self._state = (user, bare, server_first, credential)
        return server_first.encode()

    def _client_final(self, message: str) -> bytes:
        import hashlib
        import hmac

        assert self._state is not None
        user, client_first_bare, server_first, credential = self._state
        without_proof, sep, proof_attr = message.rpartition(",p=")
        if not sep:
            raise self._fail()
        attrs = _scram_attributes(without_proof)
        server_nonce = _scram_attributes(server_first)["r"]
        if attrs.get("c") not in ("biws", "eSws") or not attrs.get("r", "").endswith(server_nonce):
            raise self._fail()
        auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_attr, validate=True)
        except ValueError:
            raise self._fail() from None
        signature = hmac.new(credential.stored_key, auth_message, self.algorithm).digest()
        if len(proof) != len(signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(self.algorithm, client_key).digest()
        if not hmac.compare_digest(stored, credential.stored_key):
            raise self._fail()
        server_signature = hmac.new(credential.server_key, auth_message, self.algorithm).digest()
        self.principal = f"User:{user}"
        return b"v=" + base64.b64encode(server_signature)


def _scram_attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


def new_exchange(
    mechanism: str, settings: ListenerSasl, store: ScramCredentialStore
) -> PlainExchange | ScramExchange:
    if mechanism == "PLAIN":
        return PlainExchange(settings.plain_users)
    if mechanism in MECHANISMS:
        return ScramExchange(mechanism, store)
    raise ValueError(mechanism)
