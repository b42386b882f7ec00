"""The client side of a listener's security protocol over a plain Python socket, shared by
the tools' `WireClient` and the broker's own connections to other brokers (the controller
channel, `call_broker`): TLS with the `ssl` module, then for SASL_* a login with
SaslHandshake and SaslAuthenticate (PLAIN, or SCRAM-SHA-256/512 through scramp)."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
_SASL_HANDSHAKE_VERSION, _SASL_AUTHENTICATE_VERSION = 1, 1

Call = Callable[[int, int, dict[str, Any]], dict[str, Any]]


class AuthenticationError(ConnectionError):
    """The broker refused the login, or does not take the mechanism (the message says
    which). A ConnectionError: whoever retries a broker it cannot reach retries this too."""


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ClientSecurity:
    """How to open a connection to a listener: `tls` for SSL and SASL_SSL, `sasl` for
    SASL_PLAINTEXT and SASL_SSL."""

    protocol: str = "PLAINTEXT"
    tls: ssl.SSLContext | None = None
    sasl: SaslLogin | None = None

    def connect(
        self, address: tuple[str, int], *, timeout_s: float, client_id: str
    ) -> socket.socket:
        """A connected socket, TLS and SASL done; OSError when the broker cannot be
        reached, ssl.SSLError for a failed handshake, AuthenticationError for a refused login."""
        sock = socket.create_connection(address, timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=address[0])
            if self.sasl is not None:
                correlation = iter(range(1, 1 << 31))
                connected = sock

                def call(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
                    return exchange(connected, api_key, version, next(correlation), client_id, body)

                sasl_authenticate(call, self.sasl)
        except BaseException:
            sock.close()
            raise
        return sock


PLAINTEXT = ClientSecurity()


def exchange(
    sock: socket.socket,
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str,
    body: dict[str, Any],
) -> dict[str, Any]:
    """One request and its response, through kafkars' codec."""
    from kafkars import _core

    codec = _core.protocol
    sock.sendall(codec.encode_request(api_key, version, correlation_id, client_id, body))
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return codec.decode_response(api_key, version, correlation_id, recv_exact(sock, size))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return bytes(out)


def sasl_authenticate(call: Call, login: SaslLogin) -> None:
    """SaslHandshake, then SaslAuthenticate rounds until the mechanism is done."""
    mechanism = login.mechanism.upper()
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise AuthenticationError(f"SASL mechanism {mechanism} is not supported here")
    shake = call(SASL_HANDSHAKE, _SASL_HANDSHAKE_VERSION, {"mechanism": mechanism})
    if shake["error_code"]:
        offered = ", ".join(shake["mechanisms"] or []) or "none"
        raise AuthenticationError(f"the broker does not take SASL {mechanism} (it takes {offered})")

    def authenticate(token: bytes) -> bytes:
        reply = call(SASL_AUTHENTICATE, _SASL_AUTHENTICATE_VERSION, {"auth_bytes": token})
        if reply["error_code"]:
            raise AuthenticationError(
                f"SASL authentication failed ({mechanism} as {login.username}): "
                f"{reply['error_message'] or 'refused'}"
            )
        return bytes(reply["auth_bytes"] or b"")

    if mechanism == "PLAIN":
        authenticate(f"\0{login.username}\0{login.password}".encode())
        return
    import scramp

    scram = scramp.ScramClient([mechanism], login.username, login.password)
    try:
        scram.set_server_first(authenticate(scram.get_client_first().encode()).decode())
        scram.set_server_final(authenticate(scram.get_client_final().encode()).decode())
    except scramp.ScramException as e:
        raise AuthenticationError(f"SASL authentication failed ({mechanism}): {e}") from None


def tls_context(
    *,
    cafile: str | None = None,
    cadata: str | None = None,
    verify: bool = True,
    check_hostname: bool = True,
) -> ssl.SSLContext:
    """A TLS client context trusting `cafile`/`cadata` (the system's CAs without them);
    `check_hostname` False is Kafka's empty `ssl.endpoint.identification.algorithm`."""
    context = ssl.create_default_context(cafile=cafile, cadata=cadata)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif not check_hostname:
        context.check_hostname = False
    return context


def load_pem_identity(
    context: ssl.SSLContext, private_key: bytes, certificate_chain: bytes
) -> None:
    """Presents this key and chain (PEM bytes) when the server asks for a certificate. The
    `ssl` module loads them only from a file: a private one, removed at once."""
    with tempfile.TemporaryDirectory(prefix="kafkars-tls-") as d:
        path = os.path.join(d, "identity.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(private_key + b"\n" + certificate_chain)
        context.load_cert_chain(path)
