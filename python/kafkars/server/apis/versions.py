"""ApiVersions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkars.protocol import Errors
from kafkars.server.api_keys import api_versions_response_ranges

if TYPE_CHECKING:
    from kafkars.server.kafka_apis import KafkaApis


def handle_api_versions(apis: KafkaApis, request: Any) -> dict[str, Any]:
    api_keys = [
        {"api_key": int(key), "min_version": low, "max_version": high}
        for key, (low, high) in api_versions_response_ranges(apis.advertised).items()
    ]
    # An unknown (newer) version gets a v0 answer with the supported ranges, so the client
    # can retry with a version both sides know.
    error = Errors.UNSUPPORTED_VERSION if request.unsupported_version else Errors.NONE
    return {"error_code": int(error), "api_keys": api_keys, "throttle_time_ms": 0}
