"""Client quota precedence, persistence and throttle times (Kafka's ClientQuotaManager)."""

from __future__ import annotations

from pathlib import Path

from kafkars.server.quota_manager import (
    DEFAULT,
    FETCH,
    PRODUCE,
    REQUEST,
    ClientQuotaManager,
    QuotaStore,
    Rate,
)


def test_precedence_from_most_to_least_specific(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path / "quotas.json")
    assert not store.has_quotas()
    store.alter((None, DEFAULT), {PRODUCE: 100}, [])
    assert store.quota("alice", "app", PRODUCE) == 100
    store.alter((None, "app"), {PRODUCE: 200}, [])
    assert store.quota("alice", "app", PRODUCE) == 200
    store.alter((DEFAULT, None), {PRODUCE: 300}, [])
    assert store.quota("alice", "app", PRODUCE) == 300
    store.alter(("alice", None), {PRODUCE: 400}, [])
    assert store.quota("alice", "app", PRODUCE) == 400
    store.alter(("alice", "app"), {PRODUCE: 500}, [])
    assert store.quota("alice", "app", PRODUCE) == 500
    assert store.quota("bob", "other", PRODUCE) == 300
    assert store.quota("alice", "app", FETCH) is None
    # Persisted; removing the last key removes the entity.
    again = QuotaStore(tmp_path / "quotas.json")
    assert again.quota("alice", "app", PRODUCE) == 500
    assert again.has_quotas()
    again.alter(("alice", "app"), {}, [PRODUCE])
    assert ("alice", "app") not in again.entities()
    assert QuotaStore(tmp_path / "quotas.json").quota("alice", "app", PRODUCE) == 400


def test_rate_over_sampled_windows() -> None:
    rate = Rate(num=11, size_ms=1000)
    for second in range(11):
        rate.record(1000, second * 1000)
    assert 900 <= rate.per_second(11_000) <= 1100
    # A single burst at start is spread over at least num - 1 windows.
    burst = Rate(num=11, size_ms=1000)
    burst.record(10_000, 0)
    assert burst.per_second(10) == 1000


def test_throttle_time_brings_the_rate_back_to_the_quota(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path / "q.json")
    store.alter(("alice", None), {PRODUCE: 1000, REQUEST: 50}, [])
    quotas = ClientQuotaManager(store)
    assert quotas.record(PRODUCE, "alice", "c", 500, now_ms=0) == 0
    throttle = quotas.record(PRODUCE, "alice", "c", 19_500, now_ms=100)
    # 20,000 bytes over 10 s is 2,000/s against a 1,000/s quota: throttle ~ one sample.
    assert 10_000 <= throttle <= 11_000
    assert quotas.record(PRODUCE, "bob", "c", 10**9, now_ms=100) == 0  # no quota
    # request_percentage 50: 500 ms of handler time per second.
    assert quotas.record(REQUEST, "alice", "c", 20_000, now_ms=100) > 0
