"""A listener's TLS settings from Kafka's ``ssl.*`` configs (``listener.name.<l>.ssl.*``
first), read into the PEM bytes the Rust socket server takes.

Key stores are PEM (``ssl.keystore.type=PEM``: a file holding the private key and the
certificate chain in ``ssl.keystore.location``, or both inline in ``ssl.keystore.key`` and
``ssl.keystore.certificate.chain``) or PKCS12 (``ssl.keystore.type=PKCS12`` with
``ssl.keystore.password``); a PEM key may be encrypted (``ssl.key.password``). Trust
stores are PEM (``ssl.truststore.location`` or ``ssl.truststore.certificates``) or PKCS12.
Java's JKS format is refused with the keytool command that converts it. The stores are
opened with `cryptography`; rustls gets plain PEM.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkars.config.definition import ConfigException

STORE_TYPES = ("PEM", "PKCS12")


def _value(config: Any, listener: str, name: str) -> Any:
    value = config.listener_config(listener, name)
    # Passwords (inline PEM is one) are wrapped so they are never printed.
    return value.value if hasattr(value, "value") else value


def _read(name: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise ConfigException.invalid(name, location, f"cannot read it: {e.strerror}") from None


def _store_type(config: Any, listener: str, name: str, has_location: bool) -> str:
    kind = str(_value(config, listener, name) or "").upper()
    if has_location and kind not in STORE_TYPES:
        raise ConfigException.invalid(
            name,
            kind,
            "only PEM and PKCS12 stores are supported; convert a JKS store with "
            "`keytool -importkeystore -srckeystore store.jks -destkeystore store.p12 "
            "-deststoretype PKCS12` and set it to PKCS12",
        )
    return kind


def _password(config: Any, listener: str, name: str) -> bytes | None:
    value = _value(config, listener, name)
    return None if value is None else str(value).encode()


def _pem_certificates(certificates: list[Any]) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return b"".join(c.public_bytes(Encoding.PEM) for c in certificates)


def _unencrypted_pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    return bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))


def _pkcs12_keystore(data: bytes, password: bytes | None) -> tuple[bytes, bytes]:
    """(private key, certificate chain) as PEM from a PKCS12 key store."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError as e:
        raise ConfigException.invalid(
            "ssl.keystore.location", "[PKCS12]", f"cannot open it (wrong password?): {e}"
        ) from None
    if key is None or cert is None:
        raise ConfigException.invalid(
            "ssl.keystore.location", "[PKCS12]", "holds no private key with its certificate"
        )
    return _unencrypted_pem_key(key), _pem_certificates([cert, *extra])


def _pkcs12_truststore(data: bytes, password: bytes | None) -> bytes:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        _, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError as e:
        raise ConfigException.invalid(
            "ssl.truststore.location", "[PKCS12]", f"cannot open it (wrong password?): {e}"
        ) from None
    certificates = [c for c in (cert, *extra) if c is not None]
    if not certificates:
        raise ConfigException.invalid(
            "ssl.truststore.location", "[PKCS12]", "holds no certificates"
        )
    return _pem_certificates(certificates)


def _decrypted_pem_key(pem: bytes, password: bytes) -> bytes:
    """The private key of a PEM store, decrypted with ``ssl.key.password``."""
    import re

    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    block = re.search(
        rb"-----BEGIN (ENCRYPTED |RSA |EC )?PRIVATE KEY-----.*?-----END [A-Z ]*-----", pem, re.S
    )
    if block is None:
        raise ConfigException.invalid("ssl.keystore.location", "[PEM]", "holds no private key")
    try:
        key = load_pem_private_key(block.group(0), password)
    except (ValueError, TypeError) as e:
        raise ConfigException.invalid(
            "ssl.key.password", "[hidden]", f"cannot decrypt the private key: {e}"
        ) from None
    return _unencrypted_pem_key(key)


def _keystore(config: Any, listener: str) -> tuple[bytes, bytes] | None:
    """(private key, certificate chain) as PEM from ``ssl.keystore.*`` (a PEM or PKCS12
    file, or the inline PEM key and chain); None when none is set."""
    location = _value(config, listener, "ssl.keystore.location")
    keystore_type = _store_type(config, listener, "ssl.keystore.type", location is not None)
    key_password = _password(config, listener, "ssl.key.password")
    inline_key = _value(config, listener, "ssl.keystore.key")
    inline_chain = _value(config, listener, "ssl.keystore.certificate.chain")
    if location is not None and keystore_type == "PKCS12":
        keystore = _read("ssl.keystore.location", str(location))
        password = _password(config, listener, "ssl.keystore.password")
        return _pkcs12_keystore(keystore, password)
    if location is not None:
        private_key = chain = _read("ssl.keystore.location", str(location))
    elif inline_key is not None and inline_chain is not None:
        private_key, chain = str(inline_key).encode(), str(inline_chain).encode()
    else:
        return None
    if key_password is not None:
        private_key = _decrypted_pem_key(private_key, key_password)
    return private_key, chain


def _truststore(config: Any, listener: str) -> bytes | None:
    """The trusted certificates as PEM from ``ssl.truststore.*``; None when none is set."""
    trust_location = _value(config, listener, "ssl.truststore.location")
    truststore_type = _store_type(
        config, listener, "ssl.truststore.type", trust_location is not None
    )
    inline_trust = _value(config, listener, "ssl.truststore.certificates")
    if trust_location is not None:
        truststore = _read("ssl.truststore.location", str(trust_location))
        if truststore_type == "PKCS12":
            password = _password(config, listener, "ssl.truststore.password")
            truststore = _pkcs12_truststore(truststore, password)
        return truststore
    return None if inline_trust is None else str(inline_trust).encode()


class _ClientProperties:
    """A client's properties (Kafka's names), looked up as a listener's settings."""

    def __init__(self, properties: Mapping[str, Any]) -> None:
        self.properties = properties

    def listener_config(self, _listener: str, name: str) -> Any:
        return self.properties.get(name)


def client_tls_settings(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A Kafka client's TLS settings from its properties (Java's names:
    ``ssl.truststore.*``, ``ssl.keystore.*``, ``ssl.key.password``,
    ``ssl.endpoint.identification.algorithm``): the trusted certificates (None: the
    system's), the key and chain presented when the broker asks (None: none), and
    whether the broker's host name is checked."""
    config = _ClientProperties(properties)
    identity = _keystore(config, "")
    algorithm = properties.get("ssl.endpoint.identification.algorithm", "https")
    return {
        "truststore": _truststore(config, ""),
        "private_key": None if identity is None else identity[0],
        "certificate_chain": None if identity is None else identity[1],
        "check_hostname": bool(str(algorithm or "").strip()),
    }


def listener_tls_settings(config: Any, listener: str) -> dict[str, Any]:
    """The settings of one SSL listener, for ``_core.SocketServer(tls=...)``."""
    identity = _keystore(config, listener)
    if identity is None:
        raise ConfigException(
            f"Listener {listener} is SSL but has no key store: set ssl.keystore.location "
            "(PEM with key and certificate chain) or ssl.keystore.key and "
            "ssl.keystore.certificate.chain",
            name="ssl.keystore.location",
        )
    private_key, chain = identity
    truststore = _truststore(config, listener)
    protocols = _value(config, listener, "ssl.enabled.protocols") or []
    suites = _value(config, listener, "ssl.cipher.suites") or []
    return {
        "certificate_chain": chain,
        "private_key": private_key,
        "truststore": truststore,
        "client_auth": str(_value(config, listener, "ssl.client.auth")),
        "protocols": [p.strip() for p in protocols if p.strip()],
        "cipher_suites": [s.strip() for s in suites if s.strip()],
        "principal_mapping_rules": str(
            _value(config, listener, "ssl.principal.mapping.rules") or "DEFAULT"
        ),
    }


def tls_settings_by_listener(config: Any) -> dict[str, dict[str, Any]]:
    """TLS settings of every SSL listener, by listener name."""
    return {
        e.listener_name: listener_tls_settings(config, e.listener_name)
        for e in config.listeners
        if e.security_protocol in ("SSL", "SASL_SSL")
    }
