"""Kafka's znode payloads that kafkars writes and reads."""

from __future__ import annotations

import json

from kafkars.zk import zk_data


def test_log_dir_event_is_kafkas_json() -> None:
    raw = zk_data.encode_log_dir_event(7)
    # Kafka's LogDirEventNotificationSequenceZNode: version 1, event 1 (LogDirFailure).
    assert json.loads(raw) == {"version": 1, "broker": 7, "event": 1}
    assert zk_data.decode_log_dir_event(raw) == 7
    # As a Kafka broker writes it (its field order).
    assert zk_data.decode_log_dir_event(b'{"version":1,"broker":3,"event":1}') == 3
