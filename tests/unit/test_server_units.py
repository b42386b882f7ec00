"""Pure-Python parts of the broker: topic metadata, advertised versions, identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkars.protocol import ApiKey, Errors, KafkaError
from kafkars.server.api_keys import (
    KAFKA_4_0_VERSIONS,
    advertised_versions,
    api_versions_response_ranges,
)
from kafkars.server.kafka_apis import HANDLERS, codec_version_ranges
from kafkars.server.kafka_server import resolve_identity
from kafkars.server.metadata import MetadataStore, validate_topic_name


def test_metadata_store_persists(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path)
    t = store.create("orders", 3, 1, {"retention.ms": "1000"})
    with pytest.raises(KafkaError) as e:
        store.create("orders", 1, 1, {})
    assert e.value.code == Errors.TOPIC_ALREADY_EXISTS
    store.set_partitions("orders", 5)
    ids = [store.allocate_producer_id() for _ in range(3)]
    reloaded = MetadataStore(tmp_path)
    topic = reloaded.get("orders")
    assert topic is not None
    assert (topic.topic_id, topic.num_partitions, topic.configs) == (
        t.topic_id,
        5,
        {"retention.ms": "1000"},
    )
    assert reloaded.get_by_id(t.topic_id) is topic
    assert reloaded.allocate_producer_id() > max(ids)
    reloaded.delete("orders")
    assert MetadataStore(tmp_path).get("orders") is None


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "sl/ash", "ü"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(KafkaError) as e:
        validate_topic_name(name)
    assert e.value.code == Errors.INVALID_TOPIC_EXCEPTION


def test_legal_topic_names() -> None:
    for name in ["a", "my.topic", "my_topic-1", "A" * 249]:
        validate_topic_name(name)


def test_advertised_versions_are_kafka_4_0_clipped_to_the_codec() -> None:
    codec = codec_version_ranges()
    advertised = advertised_versions(set(HANDLERS), codec)
    assert set(advertised) == set(HANDLERS)
    for key, (low, high) in advertised.items():
        kafka = KAFKA_4_0_VERSIONS[key]
        assert kafka[0] <= low <= high <= kafka[1]
        assert codec[int(key)][0] <= low and high <= codec[int(key)][1]
    assert advertised[ApiKey.API_VERSIONS] == (0, 4)


def test_api_versions_lists_produce_from_v0_as_kafka_4() -> None:
    advertised = advertised_versions(set(HANDLERS), codec_version_ranges())
    listed = api_versions_response_ranges(advertised)
    assert advertised[ApiKey.PRODUCE][0] == 3
    assert listed[ApiKey.PRODUCE] == (0, advertised[ApiKey.PRODUCE][1])
    assert {k: v for k, v in listed.items() if k != ApiKey.PRODUCE} == {
        k: v for k, v in advertised.items() if k != ApiKey.PRODUCE
    }


def test_unhandled_apis_are_not_advertised() -> None:
    advertised = advertised_versions({ApiKey.METADATA}, codec_version_ranges())
    assert list(advertised) == [ApiKey.METADATA]


def test_identity_generated_then_reused(tmp_path: Path) -> None:
    broker_id, cluster_id = resolve_identity([str(tmp_path)], -1, 1000)
    assert broker_id == 1001
    assert len(cluster_id) == 22
    (tmp_path / "meta.properties").write_text(
        f"#\nversion=0\nbroker.id=7\ncluster.id={cluster_id}\n"
    )
    assert resolve_identity([str(tmp_path)], -1, 1000) == (7, cluster_id)
    assert resolve_identity([str(tmp_path)], 3, 1000) == (3, cluster_id)
