# ruff: noqa: E501, E741  (a table reads better one key per line)
"""The broker configuration table: Kafka 3.9's names, types, defaults and update modes.

Only two defaults differ from Kafka on purpose (a bare ``kafkars-server-start`` must give a
local single broker): ``listeners`` and ``log.dir``. Docs are our own one-liners.
"""

from __future__ import annotations

import re

from kafkars.config.definition import (
    DOUBLE_MAX,
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigType,
    Importance,
    Lambda,
    NonNull,
    UpdateMode,
    Validator,
    ValidList,
    ValidString,
    at_least,
    between,
    compression_level,
)
from kafkars.config.listeners import DEFAULT_PROTOCOL_MAP, SECURITY_PROTOCOLS

B, S, I, SH, L, D, LS, C, P = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
    ConfigType.PASSWORD,
)
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
RO, PB, CW = UpdateMode.READ_ONLY, UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE

KAFKA_LOG_DIR_DEFAULT = "/tmp/kafka-logs"
KAFKARS_LOG_DIR_DEFAULT = "./kafkars-data"
KAFKA_LISTENERS_DEFAULT = "PLAINTEXT://:9092"
KAFKARS_LISTENERS_DEFAULT = "PLAINTEXT://127.0.0.1:9092"

BROKER_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
GZIP_LEVEL = compression_level(1, 9, default=-1)
LZ4_LEVEL = compression_level(1, 17)
ZSTD_LEVEL = compression_level(-131072, 22)
_VERSION_RE = re.compile(r"\d+\.\d+(\.\d+)?(-IV\d+)?")
# Kafka checks against its MetadataVersion list; the shape is enough for us.
MV = Lambda(lambda v: bool(_VERSION_RE.fullmatch(v)), "a version such as 3.9 or 3.0-IV1")

# (name, type, default, importance, doc, validator, update mode, internal)
_Row = tuple[str, ConfigType, object, Importance, str, Validator | None, UpdateMode, bool]


def _r(
    name: str,
    type: ConfigType,
    default: object,
    importance: Importance,
    doc: str,
    validator: Validator | None = None,
    mode: UpdateMode = RO,
    internal: bool = False,
) -> _Row:
    return (name, type, default, importance, doc, validator, mode, internal)


# fmt: off
_ROWS: list[_Row] = [
    # -- identity -------------------------------------------------------------------------
    _r("broker.id", I, -1, HIGH, "This broker's id; -1 generates one (ZooKeeper seqid or meta.properties)."),
    _r("node.id", I, -1, HIGH, "KRaft node id; mirrors broker.id when only one of them is given."),
    _r("broker.id.generation.enable", B, True, MEDIUM, "Generate a broker id when broker.id is -1."),
    _r("reserved.broker.max.id", I, 1000, MEDIUM, "Highest id users may set; generated ids start above it.", at_least(0)),
    _r("broker.rack", S, None, MEDIUM, "Rack of this broker, for rack-aware replica placement."),
    _r("process.roles", LS, "", HIGH, "KRaft roles (broker, controller); empty means ZooKeeper mode.", ValidList("broker", "controller")),
    # -- ZooKeeper ------------------------------------------------------------------------
    _r("zookeeper.connect", S, None, HIGH, "ZooKeeper connection string host:port[,host:port][/chroot]; unset runs standalone."),
    _r("zookeeper.session.timeout.ms", I, 18000, HIGH, "ZooKeeper session timeout."),
    _r("zookeeper.connection.timeout.ms", I, None, HIGH, "Wait this long to connect to ZooKeeper (unset: the session timeout)."),
    _r("zookeeper.set.acl", B, False, HIGH, "Create znodes with secure ACLs."),
    _r("zookeeper.max.in.flight.requests", I, 10, HIGH, "Unacknowledged ZooKeeper requests allowed before blocking.", at_least(1)),
    # -- network --------------------------------------------------------------------------
    _r("listeners", S, KAFKARS_LISTENERS_DEFAULT, HIGH, f"Comma-separated NAME://host:port listeners; empty host binds all interfaces (Kafka's default is {KAFKA_LISTENERS_DEFAULT}).", mode=PB),
    _r("advertised.listeners", S, None, HIGH, "Listeners published to clients in metadata; defaults to listeners.", mode=PB),
    _r("listener.security.protocol.map", S, DEFAULT_PROTOCOL_MAP, LOW, "Listener name to security protocol, NAME:PROTOCOL pairs.", mode=PB),
    _r("inter.broker.listener.name", S, None, MEDIUM, "Listener brokers use among themselves (exclusive with security.inter.broker.protocol)."),
    _r("control.plane.listener.name", S, None, HIGH, "Listener dedicated to controller traffic; unset shares the data plane."),
    _r("early.start.listeners", S, None, HIGH, "Listeners started before the authorizer has loaded."),
    _r("security.inter.broker.protocol", S, "PLAINTEXT", MEDIUM, "Security protocol for broker-to-broker traffic.", ValidString(*SECURITY_PROTOCOLS)),
    _r("num.network.threads", I, 3, HIGH, "Threads reading requests from and writing responses to sockets.", at_least(1), CW),
    _r("num.io.threads", I, 8, HIGH, "Request handler threads.", at_least(1), CW),
    _r("background.threads", I, 10, HIGH, "Threads for background work such as file deletion.", at_least(1), CW),
    _r("queued.max.requests", I, 500, HIGH, "Requests queued for the handler threads before network threads stop reading.", at_least(1)),
    _r("queued.max.request.bytes", L, -1, MEDIUM, "Bytes of queued requests before reading stops; -1 for no limit."),
    _r("socket.send.buffer.bytes", I, 102400, HIGH, "SO_SNDBUF for server sockets; -1 uses the OS default."),
    _r("socket.receive.buffer.bytes", I, 102400, HIGH, "SO_RCVBUF for server sockets; -1 uses the OS default."),
    _r("socket.request.max.bytes", I, 104857600, HIGH, "Largest request accepted on a socket.", at_least(1)),
    _r("socket.listen.backlog.size", I, 50, MEDIUM, "Pending-connection backlog of each listening socket.", at_least(1)),
    _r("socket.connection.setup.timeout.ms", L, 10000, MEDIUM, "Initial wait for an outgoing connection to be set up."),
    _r("socket.connection.setup.timeout.max.ms", L, 30000, MEDIUM, "Cap on the exponentially growing connection setup timeout."),
    _r("connections.max.idle.ms", L, 600000, MEDIUM, "Close connections idle for longer than this."),
    _r("connection.failed.authentication.delay.ms", I, 100, LOW, "Delay before closing a connection that failed authentication.", at_least(0)),
    _r("max.connections", I, INT_MAX, MEDIUM, "Connections allowed on the broker at once.", at_least(0), CW),
    _r("max.connections.per.ip", I, INT_MAX, MEDIUM, "Connections allowed from one IP address.", at_least(0), CW),
    _r("max.connections.per.ip.overrides", S, "", MEDIUM, "Per-host limits as host:count pairs, comma-separated.", mode=CW),
    _r("max.connection.creation.rate", I, INT_MAX, MEDIUM, "New connections per second the broker accepts.", at_least(0), CW),
    _r("request.timeout.ms", I, 30000, HIGH, "How long the broker's own clients wait for a response."),
    _r("max.request.partition.size.limit", I, 2000, MEDIUM, "Partitions allowed in one request.", at_least(1)),
    # -- topics and logs ------------------------------------------------------------------
    _r("log.dirs", S, None, HIGH, "Comma-separated data directories; overrides log.dir."),
    _r("log.dir", S, KAFKARS_LOG_DIR_DEFAULT, HIGH, f"Data directory when log.dirs is unset (Kafka's default is {KAFKA_LOG_DIR_DEFAULT})."),
    _r("num.partitions", I, 1, MEDIUM, "Partitions of an auto-created or unsized new topic.", at_least(1)),
    _r("default.replication.factor", I, 1, MEDIUM, "Replication factor of auto-created topics."),
    _r("auto.create.topics.enable", B, True, HIGH, "Create a topic when metadata or produce names an unknown one."),
    _r("delete.topic.enable", B, True, HIGH, "Allow DeleteTopics; off makes it fail."),
    _r("message.max.bytes", I, 1048588, HIGH, "Largest record batch accepted (topic: max.message.bytes).", at_least(0), CW),
    _r("log.segment.bytes", I, 1073741824, HIGH, "Segment file size before rolling.", at_least(14), CW),
    _r("log.roll.ms", L, None, HIGH, "Roll a segment after this age; unset uses log.roll.hours.", mode=CW),
    _r("log.roll.hours", I, 168, HIGH, "Segment age before rolling, in hours (after log.roll.ms).", at_least(1)),
    _r("log.roll.jitter.ms", L, None, HIGH, "Random early roll up to this much; unset uses log.roll.jitter.hours.", mode=CW),
    _r("log.roll.jitter.hours", I, 0, HIGH, "Roll jitter in hours (after log.roll.jitter.ms).", at_least(0)),
    _r("log.index.size.max.bytes", I, 10485760, MEDIUM, "Largest offset index file.", at_least(4), CW),
    _r("log.index.interval.bytes", I, 4096, MEDIUM, "Bytes between offset index entries.", at_least(0), CW),
    _r("log.flush.interval.messages", L, LONG_MAX, HIGH, "Fsync a partition after this many messages.", at_least(1), CW),
    _r("log.flush.interval.ms", L, None, HIGH, "Fsync a partition this often; unset uses log.flush.scheduler.interval.ms.", mode=CW),
    _r("log.flush.scheduler.interval.ms", L, LONG_MAX, HIGH, "How often the flusher checks whether a log needs an fsync."),
    _r("log.flush.offset.checkpoint.interval.ms", I, 60000, HIGH, "How often recovery points are checkpointed.", at_least(0)),
    _r("log.flush.start.offset.checkpoint.interval.ms", I, 60000, HIGH, "How often log start offsets are checkpointed.", at_least(0)),
    _r("log.retention.ms", L, None, HIGH, "Keep data this long; -1 forever; unset uses minutes, then hours.", mode=CW),
    _r("log.retention.minutes", I, None, HIGH, "Retention in minutes (after log.retention.ms)."),
    _r("log.retention.hours", I, 168, HIGH, "Retention in hours (after log.retention.ms and log.retention.minutes)."),
    _r("log.retention.bytes", L, -1, HIGH, "Partition size before old segments are deleted; -1 for no limit.", mode=CW),
    _r("log.retention.check.interval.ms", L, 300000, MEDIUM, "How often segments are checked for deletion.", at_least(1)),
    _r("log.cleanup.policy", LS, "delete", MEDIUM, "delete and/or compact old segments.", ValidList("compact", "delete"), CW),
    _r("log.segment.delete.delay.ms", L, 60000, HIGH, "Wait before removing a deleted segment's files.", at_least(0), CW),
    _r("log.preallocate", B, False, MEDIUM, "Preallocate segment files.", mode=CW),
    _r("log.message.format.version", S, "3.0-IV1", MEDIUM, "Deprecated message format version; ignored from 3.0 on.", MV),
    _r("log.message.timestamp.type", S, "CreateTime", MEDIUM, "CreateTime keeps the producer's timestamp; LogAppendTime stamps on append.", ValidString(*TIMESTAMP_TYPES), CW),
    _r("log.message.timestamp.difference.max.ms", L, LONG_MAX, MEDIUM, "Deprecated: largest allowed |record timestamp - broker time|.", at_least(0), CW),
    _r("log.message.timestamp.before.max.ms", L, LONG_MAX, MEDIUM, "How far in the past a CreateTime timestamp may be.", at_least(0), CW),
    _r("log.message.timestamp.after.max.ms", L, LONG_MAX, MEDIUM, "How far in the future a CreateTime timestamp may be.", at_least(0), CW),
    _r("log.message.downconversion.enable", B, True, LOW, "Down-convert batches for old fetchers.", mode=CW),
    _r("log.dir.failure.timeout.ms", L, 30000, LOW, "Shut down if a failed log dir cannot be reported within this time.", at_least(1)),
    _r("log.initial.task.delay.ms", L, 30000, LOW, "Delay before the first log background task.", at_least(0), internal=True),
    _r("log.local.retention.ms", L, -2, MEDIUM, "Local retention for tiered topics; -2 uses log.retention.ms.", at_least(-2), CW),
    _r("log.local.retention.bytes", L, -2, MEDIUM, "Local size limit for tiered topics; -2 uses log.retention.bytes.", at_least(-2), CW),
    _r("remote.log.storage.system.enable", B, False, MEDIUM, "Enable tiered storage on this broker."),
    _r("num.recovery.threads.per.data.dir", I, 1, HIGH, "Threads per data dir loading and recovering logs at start-up.", at_least(1), CW),
    _r("min.insync.replicas", I, 1, HIGH, "In-sync replicas an acks=all write needs.", at_least(1), CW),
    _r("unclean.leader.election.enable", B, False, HIGH, "Allow an out-of-sync replica to become leader (may lose data).", mode=CW),
    _r("compression.type", S, "producer", HIGH, "Broker-side compression; producer keeps the client's codec.", ValidString(*BROKER_COMPRESSION_TYPES), CW),
    _r("compression.gzip.level", I, -1, MEDIUM, "gzip level when the broker compresses.", GZIP_LEVEL, CW),
    _r("compression.lz4.level", I, 9, MEDIUM, "lz4 level when the broker compresses.", LZ4_LEVEL, CW),
    _r("compression.zstd.level", I, 3, MEDIUM, "zstd level when the broker compresses.", ZSTD_LEVEL, CW),
    _r("create.topic.policy.class.name", C, None, LOW, "Policy class validating CreateTopics."),
    _r("alter.config.policy.class.name", C, None, LOW, "Policy class validating AlterConfigs."),
    # -- log cleaner ----------------------------------------------------------------------
    _r("log.cleaner.enable", B, True, MEDIUM, "Run the log cleaner (needed for compacted topics)."),
    _r("log.cleaner.threads", I, 1, MEDIUM, "Log cleaner threads.", at_least(0), CW),
    _r("log.cleaner.dedupe.buffer.size", L, 134217728, MEDIUM, "Memory for deduplication across all cleaner threads.", mode=CW),
    _r("log.cleaner.io.buffer.size", I, 524288, MEDIUM, "I/O buffer memory across all cleaner threads.", at_least(0), CW),
    _r("log.cleaner.io.buffer.load.factor", D, 0.9, MEDIUM, "Load factor of the dedupe hash table.", mode=CW),
    _r("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, MEDIUM, "Throttle on cleaner read+write I/O.", mode=CW),
    _r("log.cleaner.backoff.ms", L, 15000, MEDIUM, "Sleep when there is nothing to clean.", at_least(0), CW),
    _r("log.cleaner.min.cleanable.ratio", D, 0.5, MEDIUM, "Dirty/total ratio above which a log is cleaned.", between(0, 1), CW),
    _r("log.cleaner.delete.retention.ms", L, 86400000, MEDIUM, "How long tombstones are kept on compacted topics.", at_least(0), CW),
    _r("log.cleaner.min.compaction.lag.ms", L, 0, MEDIUM, "Minimum age before a record may be compacted.", at_least(0), CW),
    _r("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, MEDIUM, "Maximum age before a record must become compactable.", at_least(1), CW),
    # -- fetch / replication --------------------------------------------------------------
    _r("fetch.max.bytes", I, 57671680, MEDIUM, "Largest fetch response the broker builds.", at_least(1024)),
    _r("max.incremental.fetch.session.cache.slots", I, 1000, MEDIUM, "Incremental fetch sessions kept.", at_least(0)),
    _r("controller.socket.timeout.ms", I, 30000, MEDIUM, "Socket timeout of controller-to-broker channels."),
    _r("replica.lag.time.max.ms", L, 30000, HIGH, "A follower not caught up for this long leaves the ISR."),
    _r("replica.socket.timeout.ms", I, 30000, HIGH, "Socket timeout of follower fetches."),
    _r("replica.socket.receive.buffer.bytes", I, 65536, HIGH, "SO_RCVBUF of follower fetch connections."),
    _r("replica.fetch.max.bytes", I, 1048576, MEDIUM, "Bytes fetched per partition by a follower (not a hard limit).", at_least(0)),
    _r("replica.fetch.wait.max.ms", I, 500, HIGH, "Max wait of a follower fetch; keep below replica.lag.time.max.ms."),
    _r("replica.fetch.min.bytes", I, 1, HIGH, "Minimum bytes a follower fetch waits for."),
    _r("replica.fetch.backoff.ms", I, 1000, MEDIUM, "Sleep after a follower fetch error.", at_least(0)),
    _r("replica.fetch.response.max.bytes", I, 10485760, MEDIUM, "Largest follower fetch response.", at_least(0)),
    _r("replica.high.watermark.checkpoint.interval.ms", L, 5000, HIGH, "How often high watermarks are checkpointed."),
    _r("replica.selector.class", S, None, MEDIUM, "ReplicaSelector for fetch-from-follower; unset reads from leaders."),
    _r("num.replica.fetchers", I, 1, HIGH, "Fetcher threads per source broker.", mode=CW),
    _r("num.replica.alter.log.dirs.threads", I, None, HIGH, "Threads moving replicas between log dirs (unset: one per dir)."),
    _r("fetch.purgatory.purge.interval.requests", I, 1000, MEDIUM, "Purge interval of the fetch purgatory, in requests."),
    _r("producer.purgatory.purge.interval.requests", I, 1000, MEDIUM, "Purge interval of the produce purgatory, in requests."),
    _r("delete.records.purgatory.purge.interval.requests", I, 1, MEDIUM, "Purge interval of the delete-records purgatory, in requests."),
    _r("inter.broker.protocol.version", S, "3.9-IV0", MEDIUM, "Inter-broker protocol version.", MV),
    _r("auto.leader.rebalance.enable", B, True, HIGH, "Move leadership back to preferred replicas periodically."),
    _r("leader.imbalance.per.broker.percentage", I, 10, HIGH, "Imbalance percentage that triggers a rebalance."),
    _r("leader.imbalance.check.interval.seconds", L, 300, HIGH, "How often leader imbalance is checked.", at_least(1)),
    _r("controlled.shutdown.enable", B, True, MEDIUM, "Move leadership away before shutting down."),
    _r("controlled.shutdown.max.retries", I, 3, MEDIUM, "Controlled shutdown attempts before an unclean shutdown."),
    _r("controlled.shutdown.retry.backoff.ms", L, 5000, MEDIUM, "Pause between controlled shutdown attempts."),
    # -- group coordinator ----------------------------------------------------------------
    _r("group.min.session.timeout.ms", I, 6000, MEDIUM, "Smallest session timeout a classic consumer may ask for."),
    _r("group.max.session.timeout.ms", I, 1800000, MEDIUM, "Largest session timeout a classic consumer may ask for."),
    _r("group.initial.rebalance.delay.ms", I, 3000, MEDIUM, "Wait for more members before the first rebalance of an empty group."),
    _r("group.max.size", I, INT_MAX, MEDIUM, "Members a classic group may have.", at_least(1)),
    _r("group.coordinator.rebalance.protocols", LS, "classic", MEDIUM, "Enabled rebalance protocols (classic, consumer).", ValidList("consumer", "classic", "share", "unknown")),
    _r("group.coordinator.threads", I, 1, MEDIUM, "Threads of the new group coordinator.", at_least(1)),
    _r("group.coordinator.append.linger.ms", I, 10, MEDIUM, "Linger before the coordinator flushes a batch of writes.", at_least(0)),
    _r("group.consumer.session.timeout.ms", I, 45000, MEDIUM, "Default member session timeout, consumer protocol (KIP-848).", at_least(1)),
    _r("group.consumer.min.session.timeout.ms", I, 45000, MEDIUM, "Smallest session timeout, consumer protocol.", at_least(1)),
    _r("group.consumer.max.session.timeout.ms", I, 60000, MEDIUM, "Largest session timeout, consumer protocol.", at_least(1)),
    _r("group.consumer.heartbeat.interval.ms", I, 5000, MEDIUM, "Heartbeat interval given to members, consumer protocol.", at_least(1)),
    _r("group.consumer.min.heartbeat.interval.ms", I, 5000, MEDIUM, "Smallest heartbeat interval, consumer protocol.", at_least(1)),
    _r("group.consumer.max.heartbeat.interval.ms", I, 15000, MEDIUM, "Largest heartbeat interval, consumer protocol.", at_least(1)),
    _r("group.consumer.max.size", I, INT_MAX, MEDIUM, "Members a consumer-protocol group may have.", at_least(1)),
    _r("group.consumer.assignors", LS, "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor", MEDIUM, "Server-side assignors; the first is the default."),
    _r("group.consumer.migration.policy", S, "disabled", MEDIUM, "Online classic/consumer group migration policy.", ValidString("disabled", "downgrade", "upgrade", "bidirectional", case_insensitive=True), internal=True),
    _r("offset.metadata.max.bytes", I, 4096, HIGH, "Largest metadata string of a committed offset."),
    _r("offsets.load.buffer.size", I, 5242880, HIGH, "Read batch size when loading __consumer_offsets.", at_least(1)),
    _r("offsets.topic.replication.factor", SH, 3, HIGH, "Replication factor of __consumer_offsets.", at_least(1)),
    _r("offsets.topic.num.partitions", I, 50, HIGH, "Partitions of __consumer_offsets (fixed after creation).", at_least(1)),
    _r("offsets.topic.segment.bytes", I, 104857600, HIGH, "Segment size of __consumer_offsets.", at_least(1)),
    _r("offsets.topic.compression.codec", I, 0, HIGH, "Codec id for offset commit batches."),
    _r("offsets.retention.minutes", I, 10080, HIGH, "Keep committed offsets of empty groups this long.", at_least(1)),
    _r("offsets.retention.check.interval.ms", L, 600000, HIGH, "How often stale offsets are looked for.", at_least(1)),
    _r("offsets.commit.timeout.ms", I, 5000, HIGH, "Wait for an offset commit to be replicated.", at_least(1)),
    _r("offsets.commit.required.acks", SH, -1, HIGH, "Deprecated: acks for offset commits."),
    # -- transactions ---------------------------------------------------------------------
    _r("transaction.state.log.num.partitions", I, 50, HIGH, "Partitions of __transaction_state.", at_least(1)),
    _r("transaction.state.log.replication.factor", SH, 3, HIGH, "Replication factor of __transaction_state.", at_least(1)),
    _r("transaction.state.log.min.isr", I, 2, HIGH, "min.insync.replicas of __transaction_state.", at_least(1)),
    _r("transaction.state.log.segment.bytes", I, 104857600, HIGH, "Segment size of __transaction_state.", at_least(1)),
    _r("transaction.state.log.load.buffer.size", I, 5242880, HIGH, "Read batch size when loading __transaction_state.", at_least(1)),
    _r("transaction.max.timeout.ms", I, 900000, HIGH, "Largest transaction timeout a producer may ask for.", at_least(1)),
    _r("transactional.id.expiration.ms", I, 604800000, HIGH, "Forget an idle transactional id after this long.", at_least(1)),
    _r("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, LOW, "How often timed-out transactions are aborted.", at_least(1)),
    _r("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, LOW, "How often expired transactional ids are removed.", at_least(1)),
    _r("transaction.partition.verification.enable", B, True, LOW, "Verify a partition is in the transaction before a transactional write.", mode=CW),
    _r("producer.id.expiration.ms", I, 86400000, LOW, "Forget an idle idempotent producer id after this long.", at_least(1), CW),
    _r("producer.id.expiration.check.interval.ms", I, 600000, LOW, "How often expired producer ids are removed.", at_least(1), internal=True),
    # -- security -------------------------------------------------------------------------
    _r("authorizer.class.name", S, "", LOW, "Authorizer class; empty disables authorization.", NonNull()),
    _r("super.users", S, None, LOW, "Semicolon-separated principals allowed everything (authorizer config).", internal=True),
    _r("allow.everyone.if.no.acl.found", B, False, LOW, "Allow access to resources without ACLs (authorizer config).", internal=True),
    _r("principal.builder.class", C, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", MEDIUM, "Builds the principal of a connection.", mode=PB),
    _r("connections.max.reauth.ms", L, 0, MEDIUM, "Session lifetime before SASL re-authentication; 0 disables."),
    _r("sasl.server.max.receive.size", I, 524288, MEDIUM, "Largest SASL token accepted before authentication."),
    _r("sasl.enabled.mechanisms", LS, "GSSAPI", MEDIUM, "SASL mechanisms offered (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, ...).", mode=PB),
    _r("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", MEDIUM, "SASL mechanism brokers use among themselves.", mode=PB),
    _r("sasl.jaas.config", P, None, MEDIUM, "JAAS login context in JAAS file format.", mode=PB),
    _r("sasl.server.callback.handler.class", C, None, MEDIUM, "SASL server callback handler class."),
    _r("sasl.login.class", C, None, MEDIUM, "SASL login class."),
    _r("sasl.login.callback.handler.class", C, None, MEDIUM, "SASL login callback handler class."),
    _r("sasl.kerberos.service.name", S, None, MEDIUM, "Kerberos service name.", mode=PB),
    _r("sasl.kerberos.principal.to.local.rules", LS, "DEFAULT", MEDIUM, "Kerberos principal to short name rules.", mode=PB),
    _r("security.providers", S, None, LOW, "Security provider creator classes."),
    _r("password.encoder.secret", P, None, MEDIUM, "Secret encoding dynamic passwords when stored."),
    _r("ssl.protocol", S, "TLSv1.3", MEDIUM, "TLS protocol for SSLContext.", mode=PB),
    _r("ssl.provider", S, None, MEDIUM, "Security provider for TLS.", mode=PB),
    _r("ssl.enabled.protocols", LS, "TLSv1.2,TLSv1.3", MEDIUM, "TLS protocol versions accepted.", mode=PB),
    _r("ssl.cipher.suites", LS, "", MEDIUM, "Cipher suites; empty allows all that are supported.", mode=PB),
    _r("ssl.client.auth", S, "none", MEDIUM, "Ask for client certificates: required, requested or none.", ValidString("required", "requested", "none"), PB),
    _r("ssl.keystore.type", S, "JKS", MEDIUM, "Key store format (JKS, PKCS12, PEM).", mode=PB),
    _r("ssl.keystore.location", S, None, MEDIUM, "Key store file.", mode=PB),
    _r("ssl.keystore.password", P, None, MEDIUM, "Key store password.", mode=PB),
    _r("ssl.key.password", P, None, MEDIUM, "Private key password.", mode=PB),
    _r("ssl.keystore.key", P, None, MEDIUM, "PEM private key given inline.", mode=PB),
    _r("ssl.keystore.certificate.chain", P, None, MEDIUM, "PEM certificate chain given inline.", mode=PB),
    _r("ssl.truststore.type", S, "JKS", MEDIUM, "Trust store format (JKS, PKCS12, PEM).", mode=PB),
    _r("ssl.truststore.location", S, None, MEDIUM, "Trust store file.", mode=PB),
    _r("ssl.truststore.password", P, None, MEDIUM, "Trust store password.", mode=PB),
    _r("ssl.truststore.certificates", P, None, MEDIUM, "PEM trusted certificates given inline.", mode=PB),
    _r("ssl.keymanager.algorithm", S, "SunX509", MEDIUM, "Key manager factory algorithm.", mode=PB),
    _r("ssl.trustmanager.algorithm", S, "PKIX", MEDIUM, "Trust manager factory algorithm.", mode=PB),
    _r("ssl.endpoint.identification.algorithm", S, "https", LOW, "Hostname verification algorithm; empty disables.", mode=PB),
    _r("ssl.secure.random.implementation", S, None, LOW, "SecureRandom implementation for TLS.", mode=PB),
    _r("ssl.engine.factory.class", C, None, LOW, "Custom SSLEngine factory class.", mode=PB),
    _r("ssl.principal.mapping.rules", S, "DEFAULT", LOW, "Rules mapping certificate names to short names."),
    # -- quotas ---------------------------------------------------------------------------
    _r("quota.window.num", I, 11, LOW, "Samples kept for client quotas.", at_least(1)),
    _r("quota.window.size.seconds", I, 1, LOW, "Span of one client quota sample.", at_least(1)),
    _r("replication.quota.window.num", I, 11, LOW, "Samples kept for replication quotas.", at_least(1)),
    _r("replication.quota.window.size.seconds", I, 1, LOW, "Span of one replication quota sample.", at_least(1)),
    _r("alter.log.dirs.replication.quota.window.num", I, 11, LOW, "Samples kept for alter-log-dirs quotas.", at_least(1)),
    _r("alter.log.dirs.replication.quota.window.size.seconds", I, 1, LOW, "Span of one alter-log-dirs quota sample.", at_least(1)),
    _r("controller.quota.window.num", I, 11, LOW, "Samples kept for controller mutation quotas.", at_least(1)),
    _r("controller.quota.window.size.seconds", I, 1, LOW, "Span of one controller mutation quota sample.", at_least(1)),
    _r("client.quota.callback.class", C, None, LOW, "Custom client quota callback class."),
    # -- metrics --------------------------------------------------------------------------
    _r("metrics.num.samples", I, 2, LOW, "Samples kept per metric.", at_least(1)),
    _r("metrics.sample.window.ms", L, 30000, LOW, "Span of one metric sample.", at_least(1)),
    _r("metrics.recording.level", S, "INFO", LOW, "Highest metric recording level."),
    _r("metric.reporters", LS, "", LOW, "Metric reporter classes.", mode=CW),
    _r("auto.include.jmx.reporter", B, True, LOW, "Deprecated: add the JMX reporter automatically."),
    _r("kafka.metrics.reporters", LS, "", LOW, "Yammer metric reporter classes."),
    _r("kafka.metrics.polling.interval.secs", I, 10, LOW, "Polling interval of the Yammer reporters.", at_least(1)),
    _r("telemetry.max.bytes", I, 1048576, LOW, "Largest client telemetry push.", at_least(1)),
    # -- kafkars --------------------------------------------------------------------------
    _r("kafkars.metrics.port", I, None, LOW, "Port of the Prometheus text endpoint on the first listener's host; unset: off.", between(0, 65535), internal=True),
]
# fmt: on

BROKER_CONFIG_DEF = ConfigDef()
for _row in _ROWS:
    _name, _type, _default, _imp, _doc, _validator, _mode, _internal = _row
    BROKER_CONFIG_DEF.define(
        _name,
        _type,
        _default,
        _imp,
        _doc,
        validator=_validator,
        update_mode=_mode,
        internal=_internal,
    )

# Dynamic-only broker configs (Kafka's broker quota configs): not in server.properties, but
# AlterConfigs may set them on a broker resource.
# fmt: off
BROKER_DYNAMIC_ONLY_DEF = (
    ConfigDef()
    .define("leader.replication.throttled.rate", L, LONG_MAX, MEDIUM, "Leader-side replication throttle, bytes/s.", validator=at_least(0), update_mode=PB)
    .define("follower.replication.throttled.rate", L, LONG_MAX, MEDIUM, "Follower-side replication throttle, bytes/s.", validator=at_least(0), update_mode=PB)
    .define("replica.alter.log.dirs.io.max.bytes.per.second", L, LONG_MAX, MEDIUM, "Throttle on moving replicas between dirs, bytes/s.", validator=at_least(0), update_mode=PB)
)
# fmt: on

# Security configs that Kafka updates dynamically only with a listener.name.<l>. prefix.
LISTENER_ONLY_DYNAMIC = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
