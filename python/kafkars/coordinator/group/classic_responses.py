"""The JoinGroup and SyncGroup answers that carry only an error: one definition for the
classic group coordinator and for the classic members of a consumer group."""

from __future__ import annotations

from typing import Any

from kafkars.protocol import Errors


def join_error(member_id: str, error: Errors) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "skip_assignment": False,
        "member_id": member_id,
        "members": [],
    }


def sync_error(error: Errors) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "protocol_type": None,
        "protocol_name": None,
        "assignment": b"",
    }
