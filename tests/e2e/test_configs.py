"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs through real admin clients."""

from __future__ import annotations

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kafkars.broker import Broker


def describe(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource])[resource].result(10)


def test_describe_every_broker_config_with_defaults(broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    md = admin.list_topics(timeout=10)
    node = str(next(iter(md.brokers)))
    configs = describe(admin, ConfigResource(ResourceType.BROKER, node))
    assert len(configs) > 150
    # Unset, as Kafka answers it: null and read-only.
    assert configs["advertised.listeners"].value is None
    assert configs["advertised.listeners"].is_read_only
    assert configs["log.segment.bytes"].value == "1073741824"
    assert configs["log.segment.bytes"].is_default
    assert configs["num.partitions"].value == "4"  # from the test's --override
    assert not configs["num.partitions"].is_default


def test_topic_configs_alter_and_incremental(make_broker, topic: str) -> None:
    b = make_broker()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "60000"})])[topic].result(10)
    res = ConfigResource(ResourceType.TOPIC, topic)
    configs = describe(admin, res)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "delete"
    assert configs["segment.bytes"].is_default

    inc = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    admin.incremental_alter_configs([inc])[inc].result(10)
    configs = describe(admin, res)
    assert configs["max.message.bytes"].value == "2000"
    assert configs["retention.ms"].is_default

    bad = ConfigResource(ResourceType.TOPIC, topic, set_config={"segment.bytes": "not-a-number"})
    try:
        admin.alter_configs([bad])[bad].result(10)
        raise AssertionError("a bad value must be refused")
    except Exception as e:
        assert "segment.bytes" in str(e)

    # Overrides survive a restart, and the new limit is enforced.
    b.restart()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    assert describe(admin, res)["max.message.bytes"].value == "2000"
    from confluent_kafka import KafkaError, Producer

    errors = []
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    p.produce(topic, value=b"x" * 5000, on_delivery=lambda err, m: errors.append(err))
    p.flush(20)
    assert errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_dynamic_broker_config_persists(make_broker) -> None:
    b = make_broker()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    node = str(next(iter(admin.list_topics(timeout=10).brokers)))
    res = ConfigResource(
        ResourceType.BROKER,
        node,
        incremental_configs=[
            ConfigEntry("log.retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(10)
    b.restart()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    configs = describe(admin, ConfigResource(ResourceType.BROKER, node))
    assert configs["log.retention.ms"].value == "123456"
    readonly = ConfigResource(
        ResourceType.BROKER,
        node,
        incremental_configs=[
            ConfigEntry("log.dirs", "/x", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    try:
        admin.incremental_alter_configs([readonly])[readonly].result(10)
        raise AssertionError("read-only broker configs cannot change")
    except Exception as e:
        assert "log.dirs" in str(e) or "read-only" in str(e).lower()


def test_incremental_set_of_the_default_value_is_kept_as_an_override(make_broker, topic) -> None:
    """Kafka keeps a SET whose value equals the default: DescribeConfigs shows it as a
    DYNAMIC_TOPIC_CONFIG (first synonym the topic's own), and it survives a restart."""
    b = make_broker()
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    res = ConfigResource(ResourceType.TOPIC, topic)
    before = describe(admin, res)
    assert before["segment.bytes"].source == 5 and before["cleanup.policy"].source == 5
    inc = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(
                "segment.bytes",
                before["segment.bytes"].value,
                incremental_operation=AlterConfigOpType.SET,
            ),
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([inc])[inc].result(10)
    for restart in (False, True):
        if restart:
            b.restart()
            admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        configs = describe(admin, res)
        for name, value in (("segment.bytes", "1073741824"), ("cleanup.policy", "delete")):
            entry = configs[name]
            assert (entry.value, entry.source, entry.is_default) == (value, 1, False), name
            first = next(iter(entry.synonyms.values()))
            assert (first.name, first.source) == (name, 1)


def test_broker_loggers_described_and_changed_at_runtime(broker: Broker) -> None:
    """The BROKER_LOGGER resource (kafka-configs --entity-type broker-loggers): every logger
    with its log4j level, SET to a level, DELETE back to inheriting; the root logger's
    level cannot be removed, unknown loggers and levels are INVALID_CONFIG."""
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    md = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    node = str(next(iter(md.brokers)))
    name = "kafkars.server.KafkaApis"

    def levels() -> dict[str, str]:
        res = KpResource(ConfigResourceType.BROKER_LOGGER, node)
        described = admin.describe_configs([res], config_filter="all")["broker_logger"][node]
        assert all(c["config_source"] == "DYNAMIC_BROKER_LOGGER_CONFIG" for c in described.values())
        assert not any(c["read_only"] for c in described.values())
        return {n: c["value"] for n, c in described.items()}

    def alter(configs: dict) -> str:
        res = KpResource(ConfigResourceType.BROKER_LOGGER, node, configs=configs)
        result = admin.alter_configs([res], incremental=True, raise_on_unknown=False)
        return result["broker_logger"][node]

    try:
        before = levels()
        assert "root" in before and name in before
        assert alter({name: ("SET", "DEBUG")}) == "OK"
        assert levels()[name] == "DEBUG"
        assert alter({name: ("DELETE", None)}) == "OK"
        assert levels()[name] == before["root"]  # inherits again
        assert "InvalidRequest" in alter({"root": ("DELETE", None)})
        assert "InvalidConfig" in alter({name: ("SET", "LOUD")})
        assert "InvalidConfig" in alter({"no.such.logger": ("SET", "INFO")})
        assert "InvalidRequest" in alter({name: ("APPEND", "INFO")})
    finally:
        admin.close()
