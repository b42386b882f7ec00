"""DescribeClientQuotas and AlterClientQuotas over the client quota store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors
from kafkars.server.quota_manager import DEFAULT, QUOTA_KEYS, Entity

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def _entity_data(entity: Entity) -> list[dict[str, Any]]:
    user, client = entity
    out = []
    if user is not None:
        out.append({"entity_type": USER, "entity_name": user or None})
    if client is not None:
        out.append({"entity_type": CLIENT_ID, "entity_name": client or None})
    return out


def _entity(parts: list[dict[str, Any]]) -> Entity | str:
    """The (user, client id) of an AlterClientQuotas entity, or why it is invalid."""
    found: dict[str, str] = {}
    for p in parts:
        if p["entity_type"] not in (USER, CLIENT_ID):
            return f"Unsupported entity type {p['entity_type']}"
        if p["entity_type"] in found:
            return f"Duplicate entity type {p['entity_type']}"
        found[p["entity_type"]] = p["entity_name"] or DEFAULT
    if not found:
        return "Invalid empty client quota entity"
    return found.get(USER), found.get(CLIENT_ID)


def _matches(entity: Entity, components: list[dict[str, Any]], strict: bool) -> bool:
    user, client = entity
    values = {USER: user, CLIENT_ID: client}
    for c in components:
        value = values.get(c["entity_type"])
        if c["match_type"] == MATCH_EXACT and value != c["_match"]:
            return False
        if c["match_type"] == MATCH_DEFAULT and value != DEFAULT:
            return False
        if c["match_type"] == MATCH_ANY and value is None:
            return False
    if strict:
        named = {c["entity_type"] for c in components}
        return all(v is None or k in named for k, v in values.items())
    return True


def handle_describe_client_quotas(apis: KafkaApis, request: Any) -> dict[str, Any]:
    body = request.body
    entries = [
        {
            "entity": _entity_data(entity),
            "values": [{"key": k, "value": float(v)} for k, v in sorted(values.items())],
        }
        for entity, values in apis.quota_store.entities().items()
        if _matches(entity, body["components"], body["strict"])
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": entries}


def handle_alter_client_quotas(apis: KafkaApis, request: Any) -> dict[str, Any]:
    results = []
    for entry in request.body["entries"]:
        entity = _entity(entry["entity"])
        error, message = 0, None
        if isinstance(entity, str):
            error, message = int(Errors.INVALID_REQUEST), entity
        else:
            bad = [op["key"] for op in entry["ops"] if op["key"] not in QUOTA_KEYS]
            negative = [op["key"] for op in entry["ops"] if not op["remove"] and op["value"] <= 0]
            if bad:
                error, message = int(Errors.INVALID_REQUEST), f"Invalid configuration key {bad[0]}"
            elif negative:
                error, message = int(Errors.INVALID_REQUEST), f"Quota {negative[0]} must be > 0"
            elif not request.body["validate_only"]:
                sets = {op["key"]: op["value"] for op in entry["ops"] if not op["remove"]}
                removes = [op["key"] for op in entry["ops"] if op["remove"]]
                apis.quota_store.alter(entity, sets, removes)
        results.append({"error_code": error, "error_message": message, "entity": entry["entity"]})
    return {"throttle_time_ms": 0, "entries": results}
