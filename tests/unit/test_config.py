"""The configuration layer: defaults, parsing, listeners, layering, describe, alter, store."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkars.config import (
    INVALID_CONFIG,
    INVALID_REQUEST,
    AlterOp,
    ConfigEntry,
    ConfigException,
    ConfigSource,
    ConfigStore,
    ConfigType,
    Endpoint,
    KafkaConfig,
    LogConfig,
    Password,
    ResourceType,
    UpdateMode,
    apply_alter_ops,
    describe_broker,
    describe_topic,
    parse_overrides,
    validate_alter,
)
from kafkars.config.broker_defs import BROKER_CONFIG_DEF
from kafkars.config.definition import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    java_double,
    parse_type,
    to_string,
)
from kafkars.config.topic import TOPIC_CONFIG_DEF, broker_synonyms

# -- defaults ----------------------------------------------------------------------------

KAFKA_39_BROKER_DEFAULTS = {
    "broker.id": -1,
    "num.network.threads": 3,
    "num.io.threads": 8,
    "background.threads": 10,
    "queued.max.requests": 500,
    "queued.max.request.bytes": -1,
    "socket.send.buffer.bytes": 102400,
    "socket.receive.buffer.bytes": 102400,
    "socket.request.max.bytes": 104857600,
    "socket.listen.backlog.size": 50,
    "connections.max.idle.ms": 600000,
    "max.connections": INT_MAX,
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "message.max.bytes": 1048588,
    "log.segment.bytes": 1073741824,
    "log.roll.hours": 168,
    "log.roll.ms": None,
    "log.index.size.max.bytes": 10485760,
    "log.index.interval.bytes": 4096,
    "log.flush.interval.messages": LONG_MAX,
    "log.flush.interval.ms": None,
    "log.flush.scheduler.interval.ms": LONG_MAX,
    "log.flush.offset.checkpoint.interval.ms": 60000,
    "log.flush.start.offset.checkpoint.interval.ms": 60000,
    "log.retention.hours": 168,
    "log.retention.minutes": None,
    "log.retention.ms": None,
    "log.retention.bytes": -1,
    "log.retention.check.interval.ms": 300000,
    "log.cleanup.policy": ["delete"],
    "log.cleaner.enable": True,
    "log.cleaner.threads": 1,
    "log.cleaner.dedupe.buffer.size": 134217728,
    "log.cleaner.min.cleanable.ratio": 0.5,
    "log.cleaner.delete.retention.ms": 86400000,
    "log.segment.delete.delay.ms": 60000,
    "log.message.timestamp.type": "CreateTime",
    "num.recovery.threads.per.data.dir": 1,
    "compression.type": "producer",
    "min.insync.replicas": 1,
    "unclean.leader.election.enable": False,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.segment.bytes": 104857600,
    "offsets.retention.minutes": 10080,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.coordinator.rebalance.protocols": ["classic"],
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "producer.id.expiration.ms": 86400000,
    "fetch.max.bytes": 57671680,
    "replica.lag.time.max.ms": 30000,
    "zookeeper.session.timeout.ms": 18000,
    "sasl.enabled.mechanisms": ["GSSAPI"],
    "security.inter.broker.protocol": "PLAINTEXT",
}


def test_broker_defaults_match_kafka_39() -> None:
    config = KafkaConfig.from_dict({})
    for name, expected in KAFKA_39_BROKER_DEFAULTS.items():
        assert config.get(name) == expected, name


def test_kafkars_specific_defaults() -> None:
    config = KafkaConfig.from_dict({})
    assert [str(e) for e in config.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.advertised_listeners == config.listeners
    assert config.log_dirs == ["./kafkars-data"]
    assert "/tmp/kafka-logs" in (config.documentation_of("log.dir") or "")
    assert config.listener_security_protocol_map == {
        "SASL_SSL": "SASL_SSL",
        "PLAINTEXT": "PLAINTEXT",
        "SSL": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    }


def test_topic_defaults_match_kafka_39() -> None:
    lc = LogConfig.from_layers(KafkaConfig.from_dict({}), {})
    assert lc.retention_ms == 7 * 24 * 3600 * 1000
    assert lc.segment_ms == 7 * 24 * 3600 * 1000
    assert lc.segment_bytes == 1 << 30
    assert lc.max_message_bytes == 1048588
    assert lc.flush_ms == LONG_MAX  # log.flush.interval.ms unset → scheduler interval
    assert lc.cleanup_policy == ["delete"]
    assert lc.local_retention_ms == lc.retention_ms  # -2 resolves to retention.ms
    assert lc.get("local.retention.ms") == -2
    assert LogConfig.defaults().get("min.cleanable.dirty.ratio") == 0.5


def test_update_modes() -> None:
    assert BROKER_CONFIG_DEF["log.retention.ms"].update_mode is UpdateMode.CLUSTER_WIDE
    assert BROKER_CONFIG_DEF["log.retention.hours"].update_mode is UpdateMode.READ_ONLY
    assert BROKER_CONFIG_DEF["listeners"].update_mode is UpdateMode.PER_BROKER
    assert BROKER_CONFIG_DEF["broker.id"].update_mode is UpdateMode.READ_ONLY
    assert BROKER_CONFIG_DEF["num.io.threads"].update_mode is UpdateMode.CLUSTER_WIDE


# -- parsing and validation ----------------------------------------------------------------


def test_type_parsing_like_kafka() -> None:
    assert parse_type("k", " TRUE ", ConfigType.BOOLEAN) is True
    assert parse_type("k", "false", ConfigType.BOOLEAN) is False
    assert parse_type("k", " a , b,c ", ConfigType.LIST) == ["a", "b", "c"]
    assert parse_type("k", "  ", ConfigType.LIST) == []
    assert parse_type("k", " x ", ConfigType.STRING) == "x"
    assert parse_type("k", "+12", ConfigType.INT) == 12
    assert parse_type("k", "0.25", ConfigType.DOUBLE) == 0.25
    assert isinstance(parse_type("k", "s3cret", ConfigType.PASSWORD), Password)
    assert repr(Password("s3cret")) == "[hidden]"


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("auto.create.topics.enable", "yes", "either true or false"),
        ("num.io.threads", "0", "at least 1"),
        ("num.io.threads", "eight", "Not a number of type INT"),
        ("num.partitions", "2147483648", "Not a number of type INT"),
        ("offsets.topic.replication.factor", "40000", "Not a number of type SHORT"),
        ("log.cleanup.policy", "delete,shred", "String must be one of"),
        ("compression.type", "brotli", "String must be one of"),
        ("log.cleaner.min.cleanable.ratio", "1.5", "no more than 1"),
        ("compression.gzip.level", "0", "[1,...,9] or -1"),
    ],
)
def test_bad_values_name_key_value_and_rule(name: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigException) as info:
        KafkaConfig.from_dict({name: value})
    message = str(info.value)
    assert name in message and value.split(",")[-1] in message and fragment in message
    assert info.value.name == name


def test_typed_python_values_accepted() -> None:
    config = KafkaConfig.from_dict({"num.partitions": 4, "auto.create.topics.enable": False})
    assert config.get("num.partitions") == 4
    assert config.get("auto.create.topics.enable") is False
    assert config.originals["auto.create.topics.enable"] == "false"


@given(st.integers(min_value=INT_MIN, max_value=INT_MAX))
def test_int_round_trip(n: int) -> None:
    assert parse_type("k", str(n), ConfigType.INT) == n
    assert to_string(n, ConfigType.INT) == str(n)


@given(st.integers())
def test_long_range(n: int) -> None:
    if LONG_MIN <= n <= LONG_MAX:
        assert parse_type("k", f"  {n} ", ConfigType.LONG) == n
    else:
        with pytest.raises(ConfigException, match="LONG"):
            parse_type("k", str(n), ConfigType.LONG)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_round_trip(x: float) -> None:
    rendered = java_double(x)
    assert float(rendered) == x


def test_java_double_rendering() -> None:
    assert java_double(0.5) == "0.5"
    assert java_double(1.0) == "1.0"
    assert java_double(1.7976931348623157e308) == "1.7976931348623157E308"
    assert java_double(1e7) == "1.0E7"
    assert java_double(0.0001) == "1.0E-4"


def test_cross_key_rules() -> None:
    with pytest.raises(ConfigException, match="log.retention.ms must be unlimited"):
        KafkaConfig.from_dict({"log.retention.ms": "0"})
    with pytest.raises(ConfigException, match="reserved.broker.max.id"):
        KafkaConfig.from_dict({"broker.id": "5000"})
    with pytest.raises(ConfigException, match="Only one of"):
        KafkaConfig.from_dict(
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "SSL"}
        )


def test_broker_id_and_node_id_mirror_each_other() -> None:
    assert KafkaConfig.from_dict({"broker.id": "7"}).node_id == 7
    assert KafkaConfig.from_dict({"node.id": "3"}).broker_id == 3


def test_unknown_keys_warn_but_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkars.config.broker"):
        config = KafkaConfig.from_dict({"my.plugin.setting": "x", "zz.other": "1"})
    assert config.unknown == ["my.plugin.setting", "zz.other"]
    assert config.get("my.plugin.setting") == "x"
    messages = [r.getMessage() for r in caplog.records]
    assert any("Unknown configuration 'my.plugin.setting'" in m for m in messages)
    assert any("Unknown configuration 'zz.other'" in m for m in messages)
    assert not any("did you mean" in m for m in messages)


def test_unknown_key_close_to_a_known_one_gets_a_suggestion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkars.config.broker"):
        KafkaConfig.from_dict({"log.retention.hour": "5"})
    assert any("did you mean 'log.retention.hours'?" in r.getMessage() for r in caplog.records)


def test_listener_prefixed_keys_are_known() -> None:
    config = KafkaConfig.from_dict({"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN"})
    assert config.unknown == []
    assert config.listener_config("PLAINTEXT", "sasl.enabled.mechanisms") == ["PLAIN"]
    assert config.listener_config("SSL", "sasl.enabled.mechanisms") == ["GSSAPI"]


# -- loading -------------------------------------------------------------------------------


def test_parse_overrides() -> None:
    assert parse_overrides(["a=1", "b = x=y", "a=2"]) == {"a": "2", "b": " x=y"}
    with pytest.raises(ConfigException, match="key=value"):
        parse_overrides(["novalue"])


def test_properties_file_with_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# comment\nbroker.id=2\nlog.dirs=/data/a, /data/b\nnum.partitions = 3\n"
        "listeners=PLAINTEXT://127.0.0.1:9093\n"
    )
    config = KafkaConfig.from_properties_file(path, {"num.partitions": "6"})
    assert config.broker_id == 2
    assert config.log_dirs == ["/data/a", "/data/b"]
    assert config.get("num.partitions") == 6
    assert config.listeners[0].port == 9093
    with pytest.raises(ConfigException, match="Cannot read"):
        KafkaConfig.from_properties_file(tmp_path / "missing.properties")


# -- listeners -------------------------------------------------------------------------------


def test_listener_forms() -> None:
    config = KafkaConfig.from_dict(
        {
            "listeners": "PLAINTEXT://:9092,INTERNAL://[::1]:9093, ext://host.example:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,EXT:SASL_SSL",
            "advertised.listeners": "PLAINTEXT://broker1:9092,INTERNAL://[::1]:9093",
        }
    )
    assert config.listeners == [
        Endpoint("PLAINTEXT", "PLAINTEXT", "", 9092),
        Endpoint("INTERNAL", "SSL", "::1", 9093),
        Endpoint("EXT", "SASL_SSL", "host.example", 9094),
    ]
    assert config.listeners[0].bind_host == "0.0.0.0"
    assert config.listeners[1].connection_string() == "INTERNAL://[::1]:9093"
    assert [e.host for e in config.advertised_listeners] == ["broker1", "::1"]


@pytest.mark.parametrize(
    ("listeners", "fragment"),
    [
        ("PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093", "different name"),
        ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092", "different port"),
        ("FOO://127.0.0.1:9092", "No security protocol defined for listener FOO"),
        ("127.0.0.1:9092", "NAME://host:port"),
        ("PLAINTEXT://127.0.0.1:70000", "between 0 and 65535"),
    ],
)
def test_bad_listeners(listeners: str, fragment: str) -> None:
    with pytest.raises(ConfigException, match=fragment):
        KafkaConfig.from_dict({"listeners": listeners})


def test_ipv4_and_ipv6_may_share_a_port() -> None:
    config = KafkaConfig.from_dict(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092",
            "inter.broker.listener.name": "PLAINTEXT",
        }
    )
    assert [e.port for e in config.listeners] == [9092, 9092]


def test_advertised_must_be_routable_and_known() -> None:
    with pytest.raises(ConfigException, match="0.0.0.0"):
        KafkaConfig.from_dict({"listeners": "PLAINTEXT://0.0.0.0:9092"})
    with pytest.raises(ConfigException, match="inter.broker.listener.name"):
        KafkaConfig.from_dict({"listeners": "SSL://127.0.0.1:9093"})


# -- synonyms and layering -------------------------------------------------------------------


def test_retention_precedence_ms_minutes_hours() -> None:
    def retention(props: dict[str, str]) -> int:
        return LogConfig.from_layers(KafkaConfig.from_dict(props), {}).retention_ms

    assert retention({"log.retention.hours": "1"}) == 3_600_000
    assert retention({"log.retention.hours": "1", "log.retention.minutes": "2"}) == 120_000
    assert (
        retention(
            {"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}
        )
        == 5
    )
    assert retention({"log.retention.hours": "-1"}) == -1
    assert retention({"log.retention.minutes": "-5"}) == -1


def test_other_synonyms() -> None:
    broker = KafkaConfig.from_dict(
        {
            "log.roll.hours": "2",
            "log.flush.scheduler.interval.ms": "1000",
            "message.max.bytes": "2000",
            "log.cleanup.policy": "compact",
            "log.index.size.max.bytes": "4096",
        }
    )
    lc = LogConfig.from_layers(broker, {})
    assert lc.segment_ms == 2 * 3_600_000
    assert lc.flush_ms == 1000
    assert lc.max_message_bytes == 2000
    assert lc.compact and not lc.delete
    assert lc.segment_index_bytes == 4096
    assert broker_synonyms("retention.ms") == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert broker_synonyms("segment.ms") == ["log.roll.ms", "log.roll.hours"]
    assert broker_synonyms("flush.ms") == [
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    ]


def test_topic_overrides_win_and_are_validated() -> None:
    broker = KafkaConfig.from_dict({"log.retention.ms": "1000", "compression.type": "zstd"})
    lc = LogConfig.from_layers(broker, {"retention.ms": "-1", "cleanup.policy": "compact,delete"})
    assert lc.retention_ms == -1
    assert lc.compression_type == "zstd"
    assert lc.compression_level == 3
    assert lc.cleanup_policy == ["compact", "delete"]
    assert lc.overrides == {"retention.ms": "-1", "cleanup.policy": "compact,delete"}
    with pytest.raises(ConfigException, match="Unknown topic config name: retention.hours"):
        LogConfig.from_layers(broker, {"retention.hours": "1"})
    with pytest.raises(ConfigException, match="min.compaction.lag.ms"):
        LogConfig.validate_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    with pytest.raises(ConfigException, match="retention.ms"):
        LogConfig.validate_overrides({"retention.ms": "-2"})


def test_dynamic_layers_feed_topics() -> None:
    broker = KafkaConfig.from_dict({"log.retention.hours": "1"}).with_dynamic(
        dynamic_broker={"log.retention.ms": "42"}, dynamic_default={"log.segment.bytes": "4096"}
    )
    lc = LogConfig.from_layers(broker, {})
    assert lc.retention_ms == 42
    assert lc.segment_bytes == 4096


def test_storage_settings_shape() -> None:
    lc = LogConfig.from_layers(KafkaConfig.from_dict({}), {"compression.type": "lz4"})
    settings = lc.storage_settings()
    assert settings["compression"] == "lz4"
    assert settings["max_index_size"] == 10485760
    assert settings["compacted"] is False


# -- describe --------------------------------------------------------------------------------


def _by_name(entries: list[ConfigEntry]) -> dict[str, ConfigEntry]:
    return {e.name: e for e in entries}


def test_describe_broker_sources_and_synonyms() -> None:
    config = KafkaConfig.from_dict(
        {"log.retention.hours": "24", "ssl.keystore.password": "pw", "custom.thing": "v"}
    )
    entries = _by_name(
        describe_broker(
            config, {"log.retention.ms": "1000"}, dynamic_default={"num.io.threads": "4"}
        )
    )
    hours = entries["log.retention.hours"]
    assert hours.value == "24"
    assert hours.source is ConfigSource.STATIC_BROKER_CONFIG
    assert hours.read_only
    # Kafka drops higher-precedence synonyms that come before the described name.
    assert [(s.name, s.source) for s in hours.synonyms] == [
        ("log.retention.hours", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG),
    ]
    ms = entries["log.retention.ms"]
    assert ms.value == "1000" and ms.source is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert not ms.read_only and ms.config_type is ConfigType.LONG
    assert [s.name for s in ms.synonyms] == [
        "log.retention.ms",
        "log.retention.hours",
        "log.retention.hours",
    ]
    io = entries["num.io.threads"]
    assert (io.value, io.source) == ("4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert entries["num.network.threads"].source is ConfigSource.DEFAULT_CONFIG
    password = entries["ssl.keystore.password"]
    assert password.is_sensitive and password.value is None
    assert all(s.value is None for s in password.synonyms)
    assert password.config_type is ConfigType.PASSWORD
    custom = entries["custom.thing"]
    assert custom.is_sensitive and custom.value is None
    assert custom.config_type is ConfigType.UNKNOWN
    assert entries["log.cleanup.policy"].value == "delete"
    assert entries["log.cleaner.io.max.bytes.per.second"].value == "1.7976931348623157E308"
    assert entries["log.retention.minutes"].value is None
    assert "advertised.listeners" in entries
    assert "producer.id.expiration.check.interval.ms" not in entries  # internal in Kafka


def test_describe_broker_cluster_default_resource() -> None:
    config = KafkaConfig.from_dict({}).with_dynamic(dynamic_default={"num.io.threads": "4"})
    entries = describe_broker(config, per_broker=False)
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("num.io.threads", "4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]


def test_describe_topic_order_of_synonyms() -> None:
    broker = KafkaConfig.from_dict({"log.cleanup.policy": "compact"}).with_dynamic(
        dynamic_broker={"log.retention.ms": "5000"}
    )
    entries = _by_name(describe_topic(broker, {"cleanup.policy": "delete", "retention.ms": "7"}))
    policy = entries["cleanup.policy"]
    assert policy.value == "delete"
    assert policy.source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert [(s.name, s.value, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", "delete", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.cleanup.policy", "compact", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    ]
    retention = entries["retention.ms"]
    assert [(s.name, s.source) for s in retention.synonyms] == [
        ("retention.ms", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG),
    ]
    segment = entries["segment.bytes"]
    assert segment.source is ConfigSource.DEFAULT_CONFIG and not segment.read_only
    assert set(entries) == set(TOPIC_CONFIG_DEF.names())
    assert entries["max.message.bytes"].config_type is ConfigType.INT


def test_describe_topic_reflects_broker_values() -> None:
    broker = KafkaConfig.from_dict({"log.retention.ms": "1234"})
    retention = _by_name(describe_topic(broker, {}))["retention.ms"]
    assert retention.value == "1234"
    assert retention.source is ConfigSource.STATIC_BROKER_CONFIG


def test_config_source_wire_ids() -> None:
    assert ConfigSource.DYNAMIC_TOPIC_CONFIG == 1
    assert ConfigSource.DYNAMIC_BROKER_CONFIG == 2
    assert ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG == 3
    assert ConfigSource.STATIC_BROKER_CONFIG == 4
    assert ConfigSource.DEFAULT_CONFIG == 5
    assert ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG == 6
    assert ConfigType.PASSWORD == 9 and ConfigType.LIST == 7


# -- alter -----------------------------------------------------------------------------------


def test_validate_alter_topic() -> None:
    assert validate_alter(ResourceType.TOPIC, "retention.ms", "100") == 100
    with pytest.raises(ConfigException, match="Unknown topic config name") as info:
        validate_alter(ResourceType.TOPIC, "retention.hours", "1")
    assert info.value.error_code == INVALID_CONFIG
    with pytest.raises(ConfigException, match="retention.ms"):
        validate_alter(ResourceType.TOPIC, "retention.ms", "soon")
    # Deprecated, but accepted in the forms old clients send.
    for version in ("0.10.0.0", "0.10.0-IV1", "2.8", "3.0-IV1"):
        assert validate_alter(ResourceType.TOPIC, "message.format.version", version) == version
    with pytest.raises(ConfigException, match="message.format.version"):
        validate_alter(ResourceType.TOPIC, "message.format.version", "ten")


def test_validate_alter_broker() -> None:
    assert validate_alter(ResourceType.BROKER, "log.retention.ms", "100") == 100
    with pytest.raises(ConfigException, match="Cannot update these configs dynamically") as info:
        validate_alter(ResourceType.BROKER, "broker.id", "3")
    # Kafka answers a refused broker change as an invalid request (the differential tests).
    assert info.value.error_code == INVALID_REQUEST
    with pytest.raises(ConfigException, match="read-only"):
        validate_alter(ResourceType.BROKER, "log.retention.hours", "3")
    with pytest.raises(ConfigException, match="per-listener"):
        validate_alter(ResourceType.BROKER, "ssl.keystore.location", "/k")
    assert validate_alter(ResourceType.BROKER, "listener.name.ssl.ssl.keystore.location", "/k")
    with pytest.raises(ConfigException, match="broker id must be specified"):
        validate_alter(ResourceType.BROKER, "listeners", "PLAINTEXT://:1", per_broker=False)
    assert validate_alter(ResourceType.BROKER, "custom.plugin.key", "x") == "x"
    assert validate_alter(ResourceType.BROKER, "leader.replication.throttled.rate", "10") == 10
    with pytest.raises(ConfigException) as info:
        validate_alter(ResourceType.BROKER_LOGGER, "kafka.server", "DEBUG")
    assert info.value.error_code == INVALID_REQUEST


def test_incremental_ops_on_lists() -> None:
    rt = ResourceType.TOPIC
    # APPEND starts from the default when the topic has no value.
    props = apply_alter_ops(rt, {}, [(AlterOp.APPEND, "cleanup.policy", "compact")])
    assert props == {"cleanup.policy": "delete,compact"}
    props = apply_alter_ops(rt, props, [(AlterOp.APPEND, "cleanup.policy", "compact")])
    assert props == {"cleanup.policy": "delete,compact"}  # no duplicates
    props = apply_alter_ops(rt, props, [(AlterOp.SUBTRACT, "cleanup.policy", "delete")])
    assert props == {"cleanup.policy": "compact"}
    props = apply_alter_ops(
        rt, props, [(AlterOp.SET, "retention.ms", "10"), (AlterOp.DELETE, "cleanup.policy", None)]
    )
    assert props == {"retention.ms": "10"}
    with pytest.raises(ConfigException, match="append is not allowed"):
        apply_alter_ops(rt, {}, [(AlterOp.APPEND, "retention.ms", "1")])
    with pytest.raises(ConfigException, match="String must be one of"):
        apply_alter_ops(rt, {}, [(AlterOp.APPEND, "cleanup.policy", "shred")])
    broker = apply_alter_ops(
        ResourceType.BROKER, {}, [(AlterOp.APPEND, "sasl.enabled.mechanisms", "PLAIN")]
    )
    assert broker == {"sasl.enabled.mechanisms": "GSSAPI,PLAIN"}
    with pytest.raises(ConfigException, match="Unknown config name"):
        apply_alter_ops(ResourceType.BROKER, {}, [(AlterOp.APPEND, "nope", "x")])


# -- store -----------------------------------------------------------------------------------


def test_store_round_trip(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path / "configs")
    store.set_broker_configs(1, {"log.retention.ms": "100"})
    store.set_broker_configs(None, {"num.io.threads": "4"})
    store.set_topic_configs("orders", {"retention.ms": "5", "cleanup.policy": "compact"})
    store.set_topic_configs("gone", {"retention.ms": "1"})
    store.delete_topic("gone")

    reloaded = ConfigStore(tmp_path / "configs")
    assert reloaded.broker_configs(1) == {"log.retention.ms": "100"}
    assert reloaded.broker_configs(2) == {}
    assert reloaded.default_broker_configs() == {"num.io.threads": "4"}
    assert reloaded.topic_configs("orders") == {"retention.ms": "5", "cleanup.policy": "compact"}
    assert reloaded.topics() == ["orders"]
    on_disk = json.loads((tmp_path / "configs" / "topics" / "orders.json").read_text())
    assert on_disk == {"cleanup.policy": "compact", "retention.ms": "5"}
    assert not list((tmp_path / "configs").rglob("*.tmp"))

    config = KafkaConfig.from_dict({}).with_dynamic(
        reloaded.broker_configs(1), reloaded.default_broker_configs()
    )
    assert config.get("num.io.threads") == 4 and config.log_retention_ms == 100


def test_store_rejects_bad_names_and_files(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path)
    with pytest.raises(ConfigException):
        store.set_topic_configs("../evil", {"a": "b"})
    (tmp_path / "topics").mkdir(exist_ok=True)
    (tmp_path / "topics" / "bad.json").write_text("[1, 2]")
    with pytest.raises(ConfigException, match="not a JSON object"):
        ConfigStore(tmp_path)


def test_describe_lists_the_full_kafka_key_set_but_not_internal_keys() -> None:
    names = {e.name for e in describe_broker(KafkaConfig.from_dict({}))}
    assert {"sasl.kerberos.kinit.cmd", "delegation.token.max.lifetime.ms", "log.dir"} <= names
    assert not {"unstable.api.versions.enable", "log.initial.task.delay.ms"} & names
    assert len(names) > 250


def test_embedded_broker_style_config() -> None:
    config = KafkaConfig.from_dict(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": "/tmp/x",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }
    )
    assert config.listeners == [Endpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 0)]
    assert config.get("offsets.topic.replication.factor") == 1
    assert config.zookeeper_connection_timeout_ms == 18000
    props = KafkaConfig.from_properties_string("broker.id=4\n", {"broker.rack": "r1"})
    assert (props.broker_id, props.get("broker.rack")) == (4, "r1")


def test_describe_broker_read_only_as_kafka_reports_it() -> None:
    """read_only is Kafka's `!AllDynamicConfigs.contains(name)`: a dynamic-only broker
    config (a replication throttle rate), set dynamically, still reports read_only=true,
    with its type known; dynamic KafkaConfig keys report false, static ones true."""
    config = KafkaConfig.from_dict({})
    entries = _by_name(
        describe_broker(config, {"leader.replication.throttled.rate": "100"}, per_broker=True)
    )
    rate = entries["leader.replication.throttled.rate"]
    assert (rate.value, rate.source) == ("100", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert rate.read_only and rate.config_type is ConfigType.LONG and not rate.is_sensitive
    assert not entries["log.retention.ms"].read_only
    assert not entries["num.io.threads"].read_only
    assert entries["log.dirs"].read_only and entries["broker.id"].read_only
