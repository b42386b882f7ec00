"""SaslHandshake, SaslAuthenticate, and the SCRAM credential APIs
(Describe/AlterUserScramCredentials)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors
from kafkars.security.sasl import AuthenticationFailed, new_exchange
from kafkars.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_ID,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
)

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

log = logging.getLogger("kafkars.server.Authenticator")


def handle_sasl_handshake(apis: KafkaApis, request: Any) -> dict[str, Any]:
    settings = apis.sasl_settings.get(request.listener_name)
    if settings is None:
        # Only SASL listeners authenticate: anywhere else this request is out of place.
        return {"error_code": int(Errors.ILLEGAL_SASL_STATE), "mechanisms": []}
    mechanism = request.body["mechanism"]
    if mechanism not in settings.mechanisms:
        return {
            "error_code": int(Errors.UNSUPPORTED_SASL_MECHANISM),
            "mechanisms": settings.mechanisms,
        }
    request.put_sasl_state(new_exchange(mechanism, settings, apis.scram_store))
    return {"error_code": 0, "mechanisms": settings.mechanisms}


def handle_sasl_authenticate(apis: KafkaApis, request: Any) -> dict[str, Any]:
    failed = {"auth_bytes": b"", "session_lifetime_ms": 0}
    exchange = request.take_sasl_state()
    if exchange is None or not hasattr(exchange, "step"):
        return {
            **failed,
            "error_code": int(Errors.ILLEGAL_SASL_STATE),
            "error_message": "SaslAuthenticate without a SaslHandshake first",
        }
    try:
        reply = exchange.step(bytes(request.body["auth_bytes"]))
    except AuthenticationFailed as e:
        # Logged without the secret; the client gets the same message.
        log.info("Failed authentication with /%s (%s)", request.client_host, e)
        return {
            **failed,
            "error_code": int(Errors.SASL_AUTHENTICATION_FAILED),
            "error_message": str(e),
        }
    lifetime = 0
    if exchange.principal is None:
        request.put_sasl_state(exchange)  # another round (SCRAM's client-final)
    else:
        # connections.max.reauth.ms (KIP-368): the client must re-authenticate within it.
        lifetime = int(apis.config.get("connections.max.reauth.ms"))
        request.authenticate(exchange.principal, lifetime)
        log.debug("Authenticated %s from /%s", exchange.principal, request.client_host)
    return {
        "error_code": 0,
        "error_message": "",  # Kafka's empty default on success
        "auth_bytes": reply,
        "session_lifetime_ms": lifetime,
    }


def handle_describe_user_scram_credentials(apis: KafkaApis, request: Any) -> dict[str, Any]:
    users = apis.scram_store.users()
    wanted = request.body["users"]
    names = sorted(users) if not wanted else [u["name"] for u in wanted]
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            results.append(
                {
                    "user": name,
                    "error_code": int(Errors.DUPLICATE_RESOURCE),
                    "error_message": "Cannot describe SCRAM credentials for the same user "
                    f"twice in a single request: {name}",
                    "credential_infos": [],
                }
            )
            continue
        seen.add(name)
        creds = users.get(name)
        if not creds:
            results.append(
                {
                    "user": name,
                    "error_code": int(Errors.RESOURCE_NOT_FOUND),
                    "error_message": f"Attempt to describe nonexistent user {name}",
                    "credential_infos": [],
                }
            )
            continue
        results.append(
            {
                "user": name,
                "error_code": 0,
                "error_message": "",  # Kafka's empty default on success
                "credential_infos": [
                    {"mechanism": MECHANISMS[m][0], "iterations": c.iterations}
                    for m, c in sorted(creds.items())
                ],
            }
        )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "results": results}


def handle_alter_user_scram_credentials(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    store = apis.scram_store
    results: dict[str, tuple[int, str | None]] = {}

    def fail(user: str, error: Errors, message: str) -> None:
        results.setdefault(user, (int(error), message))

    for d in body["deletions"]:
        mechanism = MECHANISM_BY_ID.get(d["mechanism"])
        if mechanism is None:
            fail(d["name"], Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif not store.delete(d["name"], mechanism):
            fail(
                d["name"],
                Errors.RESOURCE_NOT_FOUND,
                f"Attempt to delete a user credential that does not exist: {d['name']}",
            )
        else:
            results.setdefault(d["name"], (0, None))
    for u in body["upsertions"]:
        mechanism = MECHANISM_BY_ID.get(u["mechanism"])
        if mechanism is None:
            fail(u["name"], Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif not MIN_ITERATIONS <= u["iterations"] <= MAX_ITERATIONS:
            fail(
                u["name"],
                Errors.UNACCEPTABLE_CREDENTIAL,
                f"Iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}",
            )
        elif not u["name"]:
            fail(u["name"], Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        else:
            credential = ScramCredential.from_salted_password(
                mechanism, bytes(u["salt"]), bytes(u["salted_password"]), u["iterations"]
            )
            store.upsert(u["name"], mechanism, credential)
            results.setdefault(u["name"], (0, None))
    return {
        "throttle_time_ms": 0,
        "results": [
            {"user": user, "error_code": code, "error_message": message}
            for user, (code, message) in results.items()
        ],
    }
