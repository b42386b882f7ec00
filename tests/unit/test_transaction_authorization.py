"""What the transaction APIs need of the ACLs, as Kafka's KafkaApis checks it."""

from __future__ import annotations

from kafkars.protocol import ApiKey, Errors
from kafkars.security.authorization import required
from kafkars.security.authorizer import AclOperation as Op
from kafkars.security.authorizer import ResourceType as Res


def needs(key: ApiKey, body: dict[str, object]) -> list[tuple[Op, Res, str, Errors]]:
    return [(*r.alternatives[0], r.error) for r in required(key, body, {})]


TXN_DENIED = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_transactional_apis_need_write_on_the_transactional_id() -> None:
    assert needs(ApiKey.END_TXN, {"transactional_id": "tx"}) == [
        (Op.WRITE, Res.TRANSACTIONAL_ID, "tx", TXN_DENIED)
    ]
    assert needs(ApiKey.ADD_OFFSETS_TO_TXN, {"transactional_id": "tx", "group_id": "g"}) == [
        (Op.WRITE, Res.TRANSACTIONAL_ID, "tx", TXN_DENIED),
        (Op.READ, Res.GROUP, "g", Errors.GROUP_AUTHORIZATION_FAILED),
    ]
    added = needs(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        {
            "transactions": [],
            "v3_and_below_transactional_id": "tx",
            "v3_and_below_topics": [{"name": "t", "partitions": [0]}],
        },
    )
    assert added == [
        (Op.WRITE, Res.TRANSACTIONAL_ID, "tx", TXN_DENIED),
        (Op.WRITE, Res.TOPIC, "t", Errors.TOPIC_AUTHORIZATION_FAILED),
    ]
    committed = needs(
        ApiKey.TXN_OFFSET_COMMIT,
        {"transactional_id": "tx", "group_id": "g", "topics": [{"name": "t"}]},
    )
    assert committed[0] == (Op.WRITE, Res.TRANSACTIONAL_ID, "tx", TXN_DENIED)
    assert [r[:3] for r in committed[1:]] == [(Op.READ, Res.GROUP, "g"), (Op.READ, Res.TOPIC, "t")]


def test_broker_and_admin_forms() -> None:
    cluster = (Op.CLUSTER_ACTION, Res.CLUSTER, "kafka-cluster", Errors.CLUSTER_AUTHORIZATION_FAILED)
    assert needs(ApiKey.WRITE_TXN_MARKERS, {"markers": []}) == [cluster]
    verify = {"transactions": [{"transactional_id": "tx"}], "v3_and_below_topics": []}
    assert needs(ApiKey.ADD_PARTITIONS_TO_TXN, verify) == [cluster]
    assert needs(ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": ["a", "b"]}) == [
        (Op.DESCRIBE, Res.TRANSACTIONAL_ID, "a", TXN_DENIED),
        (Op.DESCRIBE, Res.TRANSACTIONAL_ID, "b", TXN_DENIED),
    ]
    assert needs(ApiKey.DESCRIBE_PRODUCERS, {"topics": [{"name": "t"}]}) == [
        (Op.READ, Res.TOPIC, "t", Errors.TOPIC_AUTHORIZATION_FAILED)
    ]
    # ListTransactions is filtered per id by its handler instead.
    assert needs(ApiKey.LIST_TRANSACTIONS, {"state_filters": []}) == []
