"""A listener's TLS settings from Kafka's ``ssl.*`` configs (``listener.name.<l>.ssl.*``
first), read into the PEM bytes the Rust socket server takes.

Key and trust stores must be PEM (``ssl.keystore.type=PEM``): a file holding the private
key and the certificate chain (``ssl.keystore.location``), or both inline
(``ssl.keystore.key`` and ``ssl.keystore.certificate.chain``); trusted CA certificates in
``ssl.truststore.location`` or ``ssl.truststore.certificates``. JKS and PKCS12 stores and
encrypted keys are refused with a message saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkars.config.definition import ConfigException


def _value(config: Any, listener: str, name: str) -> Any:
    value = config.listener_config(listener, name)
    # Passwords (inline PEM is one) are wrapped so they are never printed.
    return value.value if hasattr(value, "value") else value


def _read(name: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise ConfigException.invalid(name, location, f"cannot read it: {e.strerror}") from None


def _pem_only(config: Any, listener: str, name: str, has_location: bool) -> None:
    kind = str(_value(config, listener, name) or "")
    if kind != "PEM" and has_location:
        raise ConfigException.invalid(
            name,
            kind,
            "only PEM stores are supported; convert the store with openssl "
            "(e.g. `openssl pkcs12 -in store.p12 -nodes`) and set it to PEM",
        )


def listener_tls_settings(config: Any, listener: str) -> dict[str, Any]:
    """The settings of one SSL listener, for ``_core.SocketServer(tls=...)``."""
    location = _value(config, listener, "ssl.keystore.location")
    _pem_only(config, listener, "ssl.keystore.type", location is not None)
    if _value(config, listener, "ssl.key.password") is not None:
        raise ConfigException.invalid(
            "ssl.key.password",
            "[hidden]",
            "encrypted private keys are not supported; give the key unencrypted",
        )
    inline_key = _value(config, listener, "ssl.keystore.key")
    inline_chain = _value(config, listener, "ssl.keystore.certificate.chain")
    if location is not None:
        keystore = _read("ssl.keystore.location", str(location))
        private_key, chain = keystore, keystore
    elif inline_key is not None and inline_chain is not None:
        private_key, chain = str(inline_key).encode(), str(inline_chain).encode()
    else:
        raise ConfigException(
            f"Listener {listener} is SSL but has no key store: set ssl.keystore.location "
            "(PEM with key and certificate chain) or ssl.keystore.key and "
            "ssl.keystore.certificate.chain",
            name="ssl.keystore.location",
        )
    trust_location = _value(config, listener, "ssl.truststore.location")
    _pem_only(config, listener, "ssl.truststore.type", trust_location is not None)
    inline_trust = _value(config, listener, "ssl.truststore.certificates")
    truststore: bytes | None = None
    if trust_location is not None:
        truststore = _read("ssl.truststore.location", str(trust_location))
    elif inline_trust is not None:
        truststore = str(inline_trust).encode()
    protocols = _value(config, listener, "ssl.enabled.protocols") or []
    suites = _value(config, listener, "ssl.cipher.suites") or []
    return {
        "certificate_chain": chain,
        "private_key": private_key,
        "truststore": truststore,
        "client_auth": str(_value(config, listener, "ssl.client.auth")),
        "protocols": [p.strip() for p in protocols if p.strip()],
        "cipher_suites": [s.strip() for s in suites if s.strip()],
    }


def tls_settings_by_listener(config: Any) -> dict[str, dict[str, Any]]:
    """TLS settings of every SSL listener, by listener name."""
    return {
        e.listener_name: listener_tls_settings(config, e.listener_name)
        for e in config.listeners
        if e.security_protocol in ("SSL", "SASL_SSL")
    }
