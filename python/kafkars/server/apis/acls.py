"""CreateAcls, DescribeAcls, DeleteAcls against the built-in authorizer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors
from kafkars.security.authorizer import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis

_DISABLED = "No Authorizer is configured on the broker"


def _enum(cls: Any, value: int) -> Any:
    try:
        return cls(value)
    except ValueError:
        return cls.UNKNOWN


def _filter(f: dict[str, Any]) -> AclFilter:
    return AclFilter(
        _enum(ResourceType, f["resource_type_filter"]),
        f["resource_name_filter"],
        _enum(PatternType, f.get("pattern_type_filter", PatternType.LITERAL)),
        f["principal_filter"],
        f["host_filter"],
        _enum(AclOperation, f["operation"]),
        _enum(AclPermissionType, f["permission_type"]),
    )


def _acl_description(b: AclBinding) -> dict[str, Any]:
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": int(b.operation),
        "permission_type": int(b.permission),
    }


def handle_create_acls(apis: KafkaApis, request: Any) -> dict[str, Any]:
    creations = request.body["creations"]
    if apis.authorizer is None:
        err = {"error_code": int(Errors.SECURITY_DISABLED), "error_message": _DISABLED}
        return {"throttle_time_ms": 0, "results": [err for _ in creations]}
    results, valid = [], []
    for c in creations:
        binding = AclBinding(
            _enum(ResourceType, c["resource_type"]),
            c["resource_name"],
            _enum(PatternType, c.get("resource_pattern_type", PatternType.LITERAL)),
            c["principal"],
            c["host"],
            _enum(AclOperation, c["operation"]),
            _enum(AclPermissionType, c["permission_type"]),
        )
        reason = binding.invalid_reason()
        if reason:
            results.append({"error_code": int(Errors.INVALID_REQUEST), "error_message": reason})
        else:
            valid.append(binding)
            # Kafka leaves a created binding's message at its empty default.
            results.append({"error_code": 0, "error_message": ""})
    apis.authorizer.create(valid)
    return {"throttle_time_ms": 0, "results": results}


def handle_describe_acls(apis: KafkaApis, request: Any) -> dict[str, Any]:
    if apis.authorizer is None:
        return {
            "throttle_time_ms": 0,
            "error_code": int(Errors.SECURITY_DISABLED),
            "error_message": _DISABLED,
            "resources": [],
        }
    by_resource: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for b in apis.authorizer.acls(_filter(request.body)):
        key = (int(b.resource_type), b.resource_name, int(b.pattern_type))
        by_resource.setdefault(key, []).append(_acl_description(b))
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": "",  # Kafka's empty default on success
        "resources": [
            {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
            for (t, n, p), acls in sorted(by_resource.items())
        ],
    }


def handle_delete_acls(apis: KafkaApis, request: Any) -> dict[str, Any]:
    filters = request.body["filters"]
    if apis.authorizer is None:
        err = {
            "error_code": int(Errors.SECURITY_DISABLED),
            "error_message": _DISABLED,
            "matching_acls": [],
        }
        return {"throttle_time_ms": 0, "filter_results": [err for _ in filters]}
    results = []
    for f in filters:
        gone = apis.authorizer.delete(_filter(f))
        results.append(
            {
                "error_code": 0,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": int(b.resource_type),
                        "resource_name": b.resource_name,
                        "pattern_type": int(b.pattern_type),
                        **_acl_description(b),
                    }
                    for b in gone
                ],
            }
        )
    return {"throttle_time_ms": 0, "filter_results": results}
