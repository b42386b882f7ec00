# ruff: noqa: E501, E741  (the definition table reads better one key per line)
"""Topic-level configuration (Kafka's ``LogConfig``) and its broker synonyms."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkars.config.broker_defs import (
    BROKER_COMPRESSION_TYPES,
    GZIP_LEVEL,
    LZ4_LEVEL,
    MV,
    TIMESTAMP_TYPES,
    ZSTD_LEVEL,
)
from kafkars.config.definition import (
    INVALID_CONFIG,
    LONG_MAX,
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    Lambda,
    ValidList,
    ValidString,
    at_least,
    between,
    to_string,
)

if TYPE_CHECKING:
    from kafkars.config.broker import KafkaConfig

B, S, I, L, D, LS = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
M = Importance.MEDIUM

_THROTTLED = re.compile(r"\d+:\d+")


def _throttled_ok(items: list[str]) -> bool:
    # "*" alone, or partition:brokerId pairs (Kafka's ThrottledReplicaListValidator).
    if items == ["*"]:
        return True
    return all(_THROTTLED.fullmatch(i.strip()) for i in items)


THROTTLED_REPLICAS = Lambda(_throttled_ok, "'*' or a list of partitionId:brokerId")

# fmt: off
TOPIC_CONFIG_DEF = (
    ConfigDef()
    .define("segment.bytes", I, 1073741824, M, "Segment file size before rolling.", validator=at_least(14))
    .define("segment.ms", L, 604800000, M, "Roll a segment after this age even if not full.", validator=at_least(1))
    .define("segment.jitter.ms", L, 0, M, "Random early roll up to this much, to avoid roll storms.", validator=at_least(0))
    .define("segment.index.bytes", I, 10485760, M, "Largest offset index file.", validator=at_least(4))
    .define("flush.messages", L, LONG_MAX, M, "Fsync after this many messages.", validator=at_least(1))
    .define("flush.ms", L, LONG_MAX, M, "Fsync at least this often.", validator=at_least(0))
    .define("retention.bytes", L, -1, M, "Partition size before old segments are deleted; -1 for no limit.")
    .define("retention.ms", L, 604800000, M, "Keep data this long; -1 keeps it forever.", validator=at_least(-1))
    .define("max.message.bytes", I, 1048588, M, "Largest record batch accepted.", validator=at_least(0))
    .define("index.interval.bytes", I, 4096, M, "Bytes between offset index entries.", validator=at_least(0))
    .define("delete.retention.ms", L, 86400000, M, "How long tombstones stay on a compacted topic.", validator=at_least(0))
    .define("min.compaction.lag.ms", L, 0, M, "Minimum age before a record may be compacted.", validator=at_least(0))
    .define("max.compaction.lag.ms", L, LONG_MAX, M, "Maximum age before a record must be compactable.", validator=at_least(1))
    .define("file.delete.delay.ms", L, 60000, M, "Wait before removing a deleted segment's files.", validator=at_least(0))
    .define("min.cleanable.dirty.ratio", D, 0.5, M, "Dirty/total ratio above which the log is cleaned.", validator=between(0, 1))
    .define("cleanup.policy", LS, "delete", M, "delete and/or compact old segments.", validator=ValidList("compact", "delete"))
    .define("unclean.leader.election.enable", B, False, M, "Allow an out-of-sync replica to become leader.")
    .define("min.insync.replicas", I, 1, M, "In-sync replicas an acks=all write needs.", validator=at_least(1))
    .define("compression.type", S, "producer", M, "Stored codec; producer keeps the client's.", validator=ValidString(*BROKER_COMPRESSION_TYPES))
    .define("compression.gzip.level", I, -1, M, "gzip level when the broker compresses.", validator=GZIP_LEVEL)
    .define("compression.lz4.level", I, 9, M, "lz4 level when the broker compresses.", validator=LZ4_LEVEL)
    .define("compression.zstd.level", I, 3, M, "zstd level when the broker compresses.", validator=ZSTD_LEVEL)
    .define("preallocate", B, False, M, "Preallocate segment files.")
    .define("message.format.version", S, "3.0-IV1", M, "Deprecated; ignored from 3.0 on.", validator=MV)
    .define("message.timestamp.type", S, "CreateTime", M, "CreateTime or LogAppendTime.", validator=ValidString(*TIMESTAMP_TYPES))
    .define("message.timestamp.difference.max.ms", L, LONG_MAX, M, "Deprecated: largest |timestamp - broker time|.", validator=at_least(0))
    .define("message.timestamp.before.max.ms", L, LONG_MAX, M, "How far in the past a CreateTime timestamp may be.", validator=at_least(0))
    .define("message.timestamp.after.max.ms", L, LONG_MAX, M, "How far in the future a CreateTime timestamp may be.", validator=at_least(0))
    .define("leader.replication.throttled.replicas", LS, "", M, "Replicas throttled on the leader side.", validator=THROTTLED_REPLICAS)
    .define("follower.replication.throttled.replicas", LS, "", M, "Replicas throttled on the follower side.", validator=THROTTLED_REPLICAS)
    .define("message.downconversion.enable", B, True, Importance.LOW, "Down-convert batches for old fetchers.")
    .define("remote.storage.enable", B, False, M, "Tier this topic to remote storage.")
    .define("local.retention.ms", L, -2, M, "Local retention for tiered topics; -2 uses retention.ms.", validator=at_least(-2))
    .define("local.retention.bytes", L, -2, M, "Local size limit for tiered topics; -2 uses retention.bytes.", validator=at_least(-2))
    .define("remote.log.copy.disable", B, False, M, "Stop copying segments to remote storage.")
    .define("remote.log.delete.on.disable", B, False, M, "Delete remote data when tiering is turned off.")
)
# fmt: on

MINUTE_MS = 60 * 1000
HOUR_MS = 60 * MINUTE_MS

# Topic config → broker synonyms, highest precedence first, each with the factor turning its
# unit into the topic's (ServerTopicConfigSynonyms in Kafka).
TOPIC_SYNONYMS: dict[str, list[tuple[str, int]]] = {
    "segment.bytes": [("log.segment.bytes", 1)],
    "segment.ms": [("log.roll.ms", 1), ("log.roll.hours", HOUR_MS)],
    "segment.jitter.ms": [("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", HOUR_MS)],
    "segment.index.bytes": [("log.index.size.max.bytes", 1)],
    "flush.messages": [("log.flush.interval.messages", 1)],
    "flush.ms": [("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)],
    "retention.bytes": [("log.retention.bytes", 1)],
    "retention.ms": [
        ("log.retention.ms", 1),
        ("log.retention.minutes", MINUTE_MS),
        ("log.retention.hours", HOUR_MS),
    ],
    "max.message.bytes": [("message.max.bytes", 1)],
    "index.interval.bytes": [("log.index.interval.bytes", 1)],
    "delete.retention.ms": [("log.cleaner.delete.retention.ms", 1)],
    "min.compaction.lag.ms": [("log.cleaner.min.compaction.lag.ms", 1)],
    "max.compaction.lag.ms": [("log.cleaner.max.compaction.lag.ms", 1)],
    "file.delete.delay.ms": [("log.segment.delete.delay.ms", 1)],
    "min.cleanable.dirty.ratio": [("log.cleaner.min.cleanable.ratio", 1)],
    "cleanup.policy": [("log.cleanup.policy", 1)],
    "unclean.leader.election.enable": [("unclean.leader.election.enable", 1)],
    "min.insync.replicas": [("min.insync.replicas", 1)],
    "compression.type": [("compression.type", 1)],
    "compression.gzip.level": [("compression.gzip.level", 1)],
    "compression.lz4.level": [("compression.lz4.level", 1)],
    "compression.zstd.level": [("compression.zstd.level", 1)],
    "preallocate": [("log.preallocate", 1)],
    "message.format.version": [("log.message.format.version", 1)],
    "message.timestamp.type": [("log.message.timestamp.type", 1)],
    "message.timestamp.difference.max.ms": [("log.message.timestamp.difference.max.ms", 1)],
    "message.timestamp.before.max.ms": [("log.message.timestamp.before.max.ms", 1)],
    "message.timestamp.after.max.ms": [("log.message.timestamp.after.max.ms", 1)],
    "message.downconversion.enable": [("log.message.downconversion.enable", 1)],
    "local.retention.ms": [("log.local.retention.ms", 1)],
    "local.retention.bytes": [("log.local.retention.bytes", 1)],
}


def broker_synonyms(topic_name: str) -> list[str]:
    """Broker config names standing behind a topic config, in Kafka's precedence order."""
    return [name for name, _ in TOPIC_SYNONYMS.get(topic_name, [])]


def _validate_names(overrides: Mapping[str, Any]) -> None:
    for name in overrides:
        if name not in TOPIC_CONFIG_DEF:
            raise ConfigException(
                f"Unknown topic config name: {name}", name=name, error_code=INVALID_CONFIG
            )


def _validate_values(values: Mapping[str, Any]) -> None:
    lo, hi = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if lo > hi:
        raise ConfigException(
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
            f"max.compaction.lag.ms ({hi})",
            name="min.compaction.lag.ms",
            value=lo,
        )
    if values["remote.storage.enable"]:
        if "compact" in values["cleanup.policy"]:
            raise ConfigException(
                "Remote log storage is unsupported for the compacted topics",
                name="remote.storage.enable",
                value=True,
            )
        for local, total in (
            ("local.retention.ms", "retention.ms"),
            ("local.retention.bytes", "retention.bytes"),
        ):
            lv, tv = values[local], values[total]
            if lv not in (-2, -1) and tv != -1 and lv > tv:
                raise ConfigException.invalid(
                    local, lv, f"Value must not be more than {total} property value: {tv}"
                )


class LogConfig:
    """Effective configuration of one topic: its overrides over the broker's defaults.

    Build it with :meth:`from_layers`; read values with ``get(name)``/``[name]`` (topic
    config names) or the typed properties. ``overrides`` keeps what the topic set itself.
    """

    def __init__(self, values: dict[str, Any], overrides: dict[str, str]) -> None:
        self.values = values
        self.overrides = overrides

    # -- construction -------------------------------------------------------------------
    @classmethod
    def broker_defaults(cls, broker: KafkaConfig) -> dict[str, Any]:
        """Topic config values the broker supplies (Kafka's ``extractLogConfigMap``)."""
        out: dict[str, Any] = {}
        for topic_name in TOPIC_CONFIG_DEF.names():
            chain = TOPIC_SYNONYMS.get(topic_name)
            if chain is None:
                out[topic_name] = TOPIC_CONFIG_DEF.default_of(topic_name)
            else:
                out[topic_name] = _from_synonyms(broker, topic_name, chain)
        return out

    @classmethod
    def from_layers(cls, broker: KafkaConfig, overrides: Mapping[str, Any] | None) -> LogConfig:
        """Topic overrides (validated) over the broker's effective values."""
        given = dict(overrides or {})
        _validate_names(given)
        values = cls.broker_defaults(broker)
        for name, raw in given.items():
            values[name] = TOPIC_CONFIG_DEF.parse_value(name, raw)
        _validate_values(values)
        rendered = {k: (v if isinstance(v, str) else _render(k, v)) for k, v in given.items()}
        return cls(values, rendered)

    @classmethod
    def defaults(cls) -> LogConfig:
        """Kafka's topic defaults, with no broker in play."""
        return cls(TOPIC_CONFIG_DEF.parse({}), {})

    @staticmethod
    def validate_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Check topic overrides alone (CreateTopics/AlterConfigs); returns parsed values.

        Raises ConfigException for unknown names, bad values, or conflicting settings.
        """
        _validate_names(overrides)
        parsed = {name: TOPIC_CONFIG_DEF.parse_value(name, raw) for name, raw in overrides.items()}
        merged = TOPIC_CONFIG_DEF.parse({})
        merged.update(parsed)
        _validate_values(merged)
        return parsed

    @staticmethod
    def config_names() -> list[str]:
        return TOPIC_CONFIG_DEF.names()

    @staticmethod
    def documentation_of(name: str) -> str | None:
        key = TOPIC_CONFIG_DEF.get(name)
        return key.doc if key else None

    # -- access ---------------------------------------------------------------------------
    def get(self, name: str) -> Any:
        return self.values[name]

    __getitem__ = get

    def __repr__(self) -> str:
        return f"LogConfig(overrides={self.overrides!r})"

    @property
    def segment_bytes(self) -> int:
        return int(self.values["segment.bytes"])

    @property
    def segment_ms(self) -> int:
        return int(self.values["segment.ms"])

    @property
    def segment_jitter_ms(self) -> int:
        return int(self.values["segment.jitter.ms"])

    @property
    def segment_index_bytes(self) -> int:
        return int(self.values["segment.index.bytes"])

    @property
    def index_interval_bytes(self) -> int:
        return int(self.values["index.interval.bytes"])

    @property
    def max_message_bytes(self) -> int:
        return int(self.values["max.message.bytes"])

    @property
    def flush_messages(self) -> int:
        return int(self.values["flush.messages"])

    @property
    def flush_ms(self) -> int:
        return int(self.values["flush.ms"])

    @property
    def retention_ms(self) -> int:
        """Milliseconds to keep data; -1 means unlimited."""
        return int(self.values["retention.ms"])

    @property
    def retention_bytes(self) -> int:
        return int(self.values["retention.bytes"])

    @property
    def local_retention_ms(self) -> int:
        """-2 resolves to retention.ms, as Kafka does."""
        v = int(self.values["local.retention.ms"])
        return self.retention_ms if v == -2 else v

    @property
    def local_retention_bytes(self) -> int:
        v = int(self.values["local.retention.bytes"])
        return self.retention_bytes if v == -2 else v

    @property
    def file_delete_delay_ms(self) -> int:
        return int(self.values["file.delete.delay.ms"])

    @property
    def delete_retention_ms(self) -> int:
        return int(self.values["delete.retention.ms"])

    @property
    def min_compaction_lag_ms(self) -> int:
        return int(self.values["min.compaction.lag.ms"])

    @property
    def max_compaction_lag_ms(self) -> int:
        return int(self.values["max.compaction.lag.ms"])

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        return float(self.values["min.cleanable.dirty.ratio"])

    @property
    def cleanup_policy(self) -> list[str]:
        return list(self.values["cleanup.policy"])

    @property
    def compact(self) -> bool:
        return "compact" in self.values["cleanup.policy"]

    @property
    def delete(self) -> bool:
        return "delete" in self.values["cleanup.policy"]

    @property
    def compression_type(self) -> str:
        return str(self.values["compression.type"])

    @property
    def compression_level(self) -> int | None:
        """The level for the topic's codec, when it has levels."""
        key = f"compression.{self.compression_type}.level"
        return int(self.values[key]) if key in self.values else None

    @property
    def message_timestamp_type(self) -> str:
        return str(self.values["message.timestamp.type"])

    @property
    def message_timestamp_before_max_ms(self) -> int:
        return int(self.values["message.timestamp.before.max.ms"])

    @property
    def message_timestamp_after_max_ms(self) -> int:
        return int(self.values["message.timestamp.after.max.ms"])

    @property
    def min_insync_replicas(self) -> int:
        return int(self.values["min.insync.replicas"])

    @property
    def unclean_leader_election_enable(self) -> bool:
        return bool(self.values["unclean.leader.election.enable"])

    @property
    def preallocate(self) -> bool:
        return bool(self.values["preallocate"])

    @property
    def remote_storage_enable(self) -> bool:
        return bool(self.values["remote.storage.enable"])

    def storage_settings(self) -> dict[str, Any]:
        """The settings the Rust log takes, keyed by its ``LogConfig`` field names."""
        return {
            "segment_bytes": self.segment_bytes,
            "segment_ms": self.segment_ms,
            "segment_jitter_ms": self.segment_jitter_ms,
            "max_index_size": self.segment_index_bytes,
            "index_interval_bytes": self.index_interval_bytes,
            "max_message_bytes": self.max_message_bytes,
            "flush_interval_messages": self.flush_messages,
            "flush_ms": self.flush_ms,
            "file_delete_delay_ms": self.file_delete_delay_ms,
            "message_timestamp_type": self.message_timestamp_type,
            "compression": self.compression_type,
            "compacted": self.compact,
            "retention_ms": self.retention_ms,
            "retention_bytes": self.retention_bytes,
            "preallocate": self.preallocate,
        }


def _render(name: str, value: Any) -> str:
    rendered = to_string(value, TOPIC_CONFIG_DEF[name].type)
    return "" if rendered is None else rendered


def _from_synonyms(broker: KafkaConfig, topic_name: str, chain: list[tuple[str, int]]) -> Any:
    """The broker's value behind a topic config: the first synonym that is set, in unit."""
    for broker_name, factor in chain:
        value = broker.get(broker_name)
        if value is None:
            continue
        if factor != 1:
            value = int(value) * factor
        if topic_name == "retention.ms" and value < 0:
            return -1  # any negative retention means unlimited (Kafka's logRetentionTimeMillis)
        return value
    return TOPIC_CONFIG_DEF.default_of(topic_name)
