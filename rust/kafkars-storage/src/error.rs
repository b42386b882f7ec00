//! The one error type of the storage crate and its mapping to Kafka error codes.

use std::io;
use std::path::{Path, PathBuf};

use kafkars_record::RecordError;

use kafka_protocol::ResponseError;

// The codes come from kafka-protocol's table, the one the whole workspace uses.
const OFFSET_OUT_OF_RANGE: i16 = ResponseError::OffsetOutOfRange.code();
const CORRUPT_MESSAGE: i16 = ResponseError::CorruptMessage.code();
const MESSAGE_TOO_LARGE: i16 = ResponseError::MessageTooLarge.code();
const RECORD_LIST_TOO_LARGE: i16 = ResponseError::RecordListTooLarge.code();
const KAFKA_STORAGE_ERROR: i16 = ResponseError::KafkaStorageError.code();
const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = ResponseError::OutOfOrderSequenceNumber.code();
const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();
const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
const NOT_ENOUGH_REPLICAS: i16 = ResponseError::NotEnoughReplicas.code();
const LOG_DIR_NOT_FOUND: i16 = ResponseError::LogDirNotFound.code();
const REPLICA_NOT_AVAILABLE: i16 = ResponseError::ReplicaNotAvailable.code();
const INCONSISTENT_TOPIC_ID: i16 = ResponseError::InconsistentTopicId.code();
const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
const INVALID_TIMESTAMP: i16 = ResponseError::InvalidTimestamp.code();

/// Why records of a batch were refused one by one (Kafka's ApiRecordError kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordErrorKind {
    /// A keyless record on a compacted topic: INVALID_RECORD.
    InvalidRecord,
    /// A CreateTime timestamp outside the topic's bounds: INVALID_TIMESTAMP.
    InvalidTimestamp,
}

/// Result alias for storage operations.
pub type Result<T, E = LogError> = std::result::Result<T, E>;

/// Everything that can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An I/O call failed; `path` names the file or directory involved.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A produced batch failed validation (CRC, structure, keys on a compacted topic).
    #[error("invalid record batch: {0}")]
    Record(#[from] RecordError),
    /// Records of a batch broke the topic's rules (Kafka's RecordValidationException):
    /// the whole batch is refused, `record_errors` name each record by its index in the
    /// batch, and the Produce response carries them.
    #[error("{message}")]
    RecordValidation {
        /// INVALID_TIMESTAMP if any record's timestamp was refused, else INVALID_RECORD.
        kind: RecordErrorKind,
        /// The partition-level error message.
        message: String,
        /// `(index of the record in its batch, message)`.
        record_errors: Vec<(i32, String)>,
    },
    /// One batch is larger than `max.message.bytes`.
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge {
        /// Size of the offending batch.
        size: usize,
        /// The configured limit.
        max: usize,
    },
    /// The whole append is larger than `segment.bytes`, so it can never fit a segment.
    #[error("append of {size} bytes exceeds segment.bytes {max}")]
    RecordBatchTooLarge {
        /// Size of the append.
        size: usize,
        /// The configured segment size.
        max: usize,
    },
    /// A fetch or lookup asked for an offset outside `[log start, log end]`.
    #[error(
        "offset {offset} is out of range [{log_start_offset}, {log_end_offset}] for {partition}"
    )]
    OffsetOutOfRange {
        /// The requested offset.
        offset: i64,
        /// The partition directory name.
        partition: String,
        /// First offset held.
        log_start_offset: i64,
        /// Next offset to be written.
        log_end_offset: i64,
    },
    /// An index file is unusable (bad size, offsets below the base); callers rebuild it.
    #[error("corrupt index {path}: {reason}")]
    CorruptIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An index append broke the index invariants (offsets must increase, room must remain).
    #[error("invalid index append to {path}: {reason}")]
    InvalidIndexAppend {
        /// The index file.
        path: PathBuf,
        /// What was wrong with the append.
        reason: String,
    },
    /// Bytes in a segment file do not form valid batches where they must.
    #[error("corrupt log segment {path}: {reason}")]
    CorruptSegment {
        /// The `.log` file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A checkpoint or properties file cannot be parsed.
    #[error("malformed {path}: {reason}")]
    MalformedFile {
        /// The file.
        path: PathBuf,
        /// What is wrong (line number and content where known).
        reason: String,
    },
    /// Another process (a second broker) holds the lock on a log directory.
    #[error("log directory {path} is locked by another process (is another broker running on it?)")]
    DirLocked {
        /// The locked log directory.
        path: PathBuf,
    },
    /// `meta.properties` in the log dirs disagree with each other or the configuration
    /// (Kafka's InconsistentBrokerIdException).
    #[error("inconsistent broker id: {0}")]
    InconsistentBrokerId(String),
    /// `meta.properties` in the log dirs name different clusters
    /// (Kafka's InconsistentClusterIdException).
    #[error("inconsistent cluster id: {0}")]
    InconsistentClusterId(String),
    /// An append's offsets went backwards or out of the segment's 32-bit relative range.
    #[error("invalid offset: {0}")]
    InvalidOffset(String),
    /// A name that is not `<topic>-<partition>`.
    #[error("invalid partition directory name {0:?}")]
    InvalidPartitionDir(String),
    /// The log was closed or deleted.
    #[error("log {0} is closed")]
    Closed(String),
    /// A produced batch's sequence does not follow the producer's last one.
    #[error("out of order sequence: {0}")]
    OutOfOrderSequence(String),
    /// A produced batch carries an epoch older than the producer's current one.
    #[error("invalid producer epoch: {0}")]
    InvalidProducerEpoch(String),
    /// This broker does not lead the partition (or is not a replica of it).
    #[error("{0}")]
    NotLeaderOrFollower(String),
    /// An acks=all append while the ISR is smaller than `min.insync.replicas`.
    #[error("{0}")]
    NotEnoughReplicas(String),
    /// An earlier I/O error or panic took the partition offline.
    #[error("partition {0} is offline after a storage error")]
    Offline(String),
    /// A path that is not one of the broker's log dirs (AlterReplicaLogDirs).
    #[error("log directory {0} is not one of log.dirs")]
    LogDirNotFound(String),
    /// No log of the partition on this broker (AlterReplicaLogDirs).
    #[error("no replica of {0} on this broker")]
    ReplicaNotAvailable(String),
    /// The partition directory belongs to another topic of the same name
    /// (`partition.metadata`; Kafka's InconsistentTopicIdException).
    #[error("topic id {assigned} assigned to {dir}, which holds topic id {recorded}")]
    InconsistentTopicId {
        /// The partition directory.
        dir: PathBuf,
        /// The id in its `partition.metadata`.
        recorded: String,
        /// The id the broker was told.
        assigned: String,
    },
}

impl LogError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl AsRef<Path>, source: io::Error) -> Self {
        LogError::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// The Kafka error code a broker returns for this error.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            LogError::Record(e) => e.kafka_error_code(),
            LogError::RecordValidation { kind, .. } => match kind {
                RecordErrorKind::InvalidRecord => INVALID_RECORD,
                RecordErrorKind::InvalidTimestamp => INVALID_TIMESTAMP,
            },
            LogError::RecordTooLarge { .. } => MESSAGE_TOO_LARGE,
            LogError::RecordBatchTooLarge { .. } => RECORD_LIST_TOO_LARGE,
            LogError::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
            LogError::CorruptSegment { .. } => CORRUPT_MESSAGE,
            LogError::OutOfOrderSequence(_) => OUT_OF_ORDER_SEQUENCE_NUMBER,
            LogError::InvalidProducerEpoch(_) => INVALID_PRODUCER_EPOCH,
            LogError::NotLeaderOrFollower(_) => NOT_LEADER_OR_FOLLOWER,
            LogError::NotEnoughReplicas(_) => NOT_ENOUGH_REPLICAS,
            LogError::LogDirNotFound(_) => LOG_DIR_NOT_FOUND,
            LogError::ReplicaNotAvailable(_) => REPLICA_NOT_AVAILABLE,
            LogError::InconsistentTopicId { .. } => INCONSISTENT_TOPIC_ID,
            LogError::Io { .. }
            | LogError::CorruptIndex { .. }
            | LogError::MalformedFile { .. }
            | LogError::Closed(_)
            | LogError::Offline(_) => KAFKA_STORAGE_ERROR,
            LogError::InvalidIndexAppend { .. }
            | LogError::DirLocked { .. }
            | LogError::InconsistentBrokerId(_)
            | LogError::InconsistentClusterId(_)
            | LogError::InvalidOffset(_)
            | LogError::InvalidPartitionDir(_) => UNKNOWN_SERVER_ERROR,
        }
    }
}

/// Adds the path to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|e| LogError::io(path, e))
    }
}
