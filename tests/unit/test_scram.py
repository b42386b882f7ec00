"""The SCRAM server exchange against an independent client (scramp), and Kafka's
leniency for clients that repeat their nonce."""

from __future__ import annotations

from pathlib import Path

import pytest
import scramp

from kafkars.security.sasl import AuthenticationFailed, ScramExchange
from kafkars.security.scram import ScramCredential, ScramCredentialStore


@pytest.fixture
def store(tmp_path: Path) -> ScramCredentialStore:
    s = ScramCredentialStore(tmp_path / "users")
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        s.upsert("bob", mech, ScramCredential.from_password(mech, "secret"))
    return s


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scramp_client_authenticates(store: ScramCredentialStore, mechanism: str) -> None:
    client = scramp.ScramClient([mechanism], "bob", "secret")
    server = ScramExchange(mechanism, store)
    server_first = server.step(client.get_client_first().encode())
    client.set_server_first(server_first.decode())
    server_final = server.step(client.get_client_final().encode())
    client.set_server_final(server_final.decode())  # raises if the server's proof is wrong
    assert server.principal == "User:bob"


def test_wrong_password_and_unknown_user_fail(store: ScramCredentialStore) -> None:
    client = scramp.ScramClient(["SCRAM-SHA-256"], "bob", "wrong")
    server = ScramExchange("SCRAM-SHA-256", store)
    client.set_server_first(server.step(client.get_client_first().encode()).decode())
    with pytest.raises(AuthenticationFailed):
        server.step(client.get_client_final().encode())
    assert server.principal is None
    stranger = scramp.ScramClient(["SCRAM-SHA-256"], "eve", "x")
    with pytest.raises(AuthenticationFailed):
        ScramExchange("SCRAM-SHA-256", store).step(stranger.get_client_first().encode())


def test_garbage_is_refused(store: ScramCredentialStore) -> None:
    for token in (b"", b"\xff\xfe", b"p,,n=bob,r=x", b"n,,r=x"):
        with pytest.raises(AuthenticationFailed):
            ScramExchange("SCRAM-SHA-256", store).step(token)
