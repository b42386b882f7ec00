"""`__consumer_offsets` records as JSON lines, for `kafkars-dump-log --offsets-decoder` and
`kafkars-console-consumer --formatter offsets|group-metadata`.

The shape is that of Kafka's own formatters since 3.8 (`{"key": {"type": T, "data":
{...}}, "value": {"version": V, "data": {...}}}`, `"value": null` for a tombstone). The
bytes are read by the coordinators' own decoders (`kafkars.coordinator.group` and
`.transaction`, on the record messages generated from Kafka's schemas), the code that
writes them, and embedded subscriptions and assignments by the Rust codec: no second
reading of these formats lives here.
"""

from __future__ import annotations

import json
from typing import Any

from kafkars.coordinator.group import consumer_group_records as kip848
from kafkars.coordinator.group import records
from kafkars.coordinator.transaction import records as txn_records

OFFSET_KEY_TYPES = frozenset({0, 1})
GROUP_METADATA_KEY_TYPE = 2


def record_type(key: bytes | None) -> int | None:
    """The int16 record type a key starts with, or None for a key too short to have one."""
    if key is None or len(key) < 2:
        return None
    return records.record_type(key)


def _version(value: bytes) -> int:
    return records.record_type(value)  # a value starts with its int16 version the same way


def _protocol_data(kind: str, data: bytes) -> Any:
    """A consumer subscription or assignment decoded by the Rust codec; other protocol
    types' bytes (connect, streams' own) as their length."""
    from kafkars import _core

    try:
        if kind == "subscription":
            version, decoded = _core.protocol.decode_subscription(data)
        else:
            version, decoded = _core.protocol.decode_assignment(data)
    except Exception:
        return {"bytes": len(data)}
    return {"version": version, **_jsonable(decoded)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if hasattr(value, "hex") and not isinstance(value, (int, float, str)):
        return str(value)
    return value


def _offset(key: bytes, value: bytes | None) -> dict[str, Any]:
    k = records.read_key(key)
    assert isinstance(k, records.OffsetKey)
    out: dict[str, Any] = {
        "key": {
            "type": record_type(key),
            "data": {"group": k.group, "topic": k.topic, "partition": k.partition},
        },
        "value": None,
    }
    if value is not None:
        o = records.read_offset_commit_value(value)
        data: dict[str, Any] = {
            "offset": o.offset,
            "leaderEpoch": o.leader_epoch,
            "metadata": o.metadata,
            "commitTimestamp": o.commit_timestamp,
        }
        if o.expire_timestamp is not None:
            data["expireTimestamp"] = o.expire_timestamp
        out["value"] = {"version": _version(value), "data": data}
    return out


def _group(key: bytes, value: bytes | None) -> dict[str, Any]:
    k = records.read_key(key)
    assert isinstance(k, records.GroupKey)
    out: dict[str, Any] = {
        "key": {"type": GROUP_METADATA_KEY_TYPE, "data": {"group": k.group}},
        "value": None,
    }
    if value is not None:
        g = records.read_group_metadata_value(k.group, value)
        consumer = g.protocol_type == "consumer"
        members = []
        for m in g.members.values():
            subscription = m.supported_protocols[0][1] if m.supported_protocols else b""
            members.append(
                {
                    "memberId": m.member_id,
                    "groupInstanceId": m.group_instance_id,
                    "clientId": m.client_id,
                    "clientHost": m.client_host,
                    "rebalanceTimeout": m.rebalance_timeout_ms,
                    "sessionTimeout": m.session_timeout_ms,
                    "subscription": _protocol_data("subscription", subscription)
                    if consumer
                    else {"bytes": len(subscription)},
                    "assignment": _protocol_data("assignment", m.assignment)
                    if consumer
                    else {"bytes": len(m.assignment)},
                }
            )
        out["value"] = {
            "version": _version(value),
            "data": {
                "protocolType": g.protocol_type or "",
                "generation": g.generation_id,
                "protocol": g.protocol_name,
                "leader": g.leader_id,
                "currentStateTimestamp": -1
                if g.current_state_timestamp is None
                else g.current_state_timestamp,
                "members": members,
            },
        }
    return out


def _consumer_group(key: bytes, value: bytes | None) -> dict[str, Any]:
    """KIP-848 records (types 3-8)."""
    k = kip848.read_key(key)
    key_data: dict[str, Any] = {"groupId": k.group_id}
    if k.member_id is not None:
        key_data["memberId"] = k.member_id
    out: dict[str, Any] = {"key": {"type": k.record_type, "data": key_data}, "value": None}
    if value is None:
        return out
    data: dict[str, Any]
    if k.record_type == kip848.GROUP_METADATA:
        data = {"epoch": kip848.read_epoch(value)}
    elif k.record_type == kip848.TARGET_ASSIGNMENT_METADATA:
        data = {"assignmentEpoch": kip848.read_epoch(value)}
    elif k.record_type == kip848.MEMBER_METADATA:
        data = _jsonable(vars(kip848.read_member_metadata(value)))
    elif k.record_type == kip848.TARGET_ASSIGNMENT_MEMBER:
        data = {"topicPartitions": _jsonable(kip848.read_target_assignment_member(value))}
    elif k.record_type == kip848.CURRENT_MEMBER_ASSIGNMENT:
        data = _jsonable(vars(kip848.read_current_assignment(value)))
    else:
        data = {"bytes": len(value)}
    out["value"] = {"version": _version(value), "data": data}
    return out


def decode(key: bytes | None, value: bytes | None) -> dict[str, Any] | None:
    """One `__consumer_offsets` record as Kafka's formatters show it; None for a key that
    is no record type of that topic. Raises ValueError on bytes that do not decode."""
    kind = record_type(key)
    if kind is None or key is None:
        return None
    try:
        if kind in OFFSET_KEY_TYPES:
            return _offset(key, value)
        if kind == GROUP_METADATA_KEY_TYPE:
            return _group(key, value)
        if kind in kip848.CONSUMER_GROUP_RECORD_TYPES:
            return _consumer_group(key, value)
    except (ValueError, AssertionError) as e:
        raise ValueError(f"record type {kind} does not decode: {e}") from None
    return None


def to_json(decoded: dict[str, Any]) -> str:
    return json.dumps(decoded, separators=(",", ":"), default=str)


# -- __transaction_state -------------------------------------------------------------------------
def transaction_decoder_available() -> bool:
    """Whether this build's Rust codec reads `__transaction_state` records."""
    from kafkars import _core

    return hasattr(_core.protocol, "decode_record")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def decode_transaction(key: bytes | None, value: bytes | None) -> dict[str, Any] | None:
    """One `__transaction_state` record as Kafka's TransactionLogMessageFormatter shows it,
    read by the Rust codec; None for a key of another record type."""
    from kafkars import _core

    codec: Any = _core.protocol
    if key is None or not transaction_decoder_available():
        return None
    try:
        txn_id = txn_records.read_key(key)
        if txn_id is None:
            return None
        out: dict[str, Any] = {
            "key": {"type": record_type(key), "data": {"transactionalId": txn_id}},
            "value": None,
        }
        if value is not None:
            version, fields = codec.decode_record("TransactionLogValue", value)
            fields.pop("unknown_tagged_fields", None)
            data = {_camel(k): v for k, v in fields.items()}
            partitions = data.get("transactionPartitions")
            if partitions is not None:
                data["transactionPartitions"] = [
                    {"topic": p["topic"], "partitionIds": list(p["partition_ids"])}
                    for p in partitions
                ]
            out["value"] = {"version": version, "data": _jsonable(data)}
    except Exception as e:  # the codec's own error type
        raise ValueError(f"transaction log record does not decode: {e}") from None
    return out
