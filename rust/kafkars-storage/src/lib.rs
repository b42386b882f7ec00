//! Kafka-compatible partition storage for kafkars.
//!
//! Files are byte-compatible with Apache Kafka's: segments named by their 20-digit
//! base offset (`.log`, `.index`, `.timeindex`), checkpoint files, `meta.properties`
//! and `leader-epoch-checkpoint`. The pieces, from the bottom up:
//!
//! - [`OffsetIndex`] / [`TimeIndex`]: memory-mapped sparse indexes;
//! - [`LogSegment`]: one `.log` file and its indexes;
//! - [`Log`]: one partition (Kafka's UnifiedLog + LocalLog), shared as `Arc<Log>`;
//! - [`LogManager`]: the log directories, their locks, checkpoints and start-up recovery.

mod abstract_index;
pub mod checkpoint;
pub mod dir_lock;
pub mod error;
pub mod leader_epoch;
pub mod meta_properties;
pub mod offset_index;
pub mod time_index;
pub mod topic_partition;

pub use checkpoint::OffsetCheckpointFile;
pub use dir_lock::DirLock;
pub use error::{LogError, RecordErrorKind, Result};
pub use leader_epoch::{EpochEntry, LeaderEpochFileCache};
pub use meta_properties::MetaProperties;
pub use offset_index::{OffsetIndex, OffsetPosition};
pub use time_index::{TimeIndex, TimestampOffset};
pub use topic_partition::TopicPartition;
pub mod fetch;
pub mod segment;
pub use fetch::{FetchDataInfo, FileSlice, LogOffsetMetadata};
pub use segment::{LogSegment, RollParams, SegmentRecovery, TimestampAndOffset};
pub mod config;
mod future_log;
mod loader;
pub mod log;
mod log_validator;
mod preallocate;
pub mod producer_state;
pub mod transaction_index;
pub use config::{Clock, LogConfig, MockClock, SystemClock, TopicCompression};
pub use future_log::FUTURE_DIR_SUFFIX;
pub use loader::PartitionLoadStats;
pub use log::{Log, LogAppendInfo, LogSegments, MoveStage};
pub use producer_state::{ProducerBatch, ProducerCheck, ProducerStateEntry, ProducerStateManager};
pub mod log_dir_failure;
pub mod log_manager;
pub use log_dir_failure::LogDirFailure;
pub use log_manager::{LoadReport, LogManager};
pub mod cleaner;
pub mod offset_map;
pub mod partition;
pub mod partition_metadata;
pub use cleaner::{CleanStage, CleanerConfig, CleanerStats};
pub use offset_map::OffsetMap;
pub use partition::{
    FetchIsolation, LiveBrokers, LogReadResult, NO_LEADER, Partition, PartitionCounters,
    PartitionListener, ReplicaState,
};
