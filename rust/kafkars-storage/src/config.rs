//! Per-topic storage settings and the clock the log reads time from.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use kafkars_record::{Compression, TimestampType};

/// The topic's `compression.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicCompression {
    /// `producer`: keep batches as the client compressed them.
    Producer,
    /// A codec (`uncompressed` is `Codec(Compression::None)`): re-compress batches
    /// that use another one.
    Codec(Compression),
}

/// The storage-relevant topic configuration (plain data; the Python side fills it).
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `segment.bytes`.
    pub segment_bytes: u32,
    /// `segment.ms`.
    pub segment_ms: i64,
    /// `segment.jitter.ms`: each segment rolls up to this much earlier.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`.
    pub max_index_size: usize,
    /// `index.interval.bytes`.
    pub index_interval_bytes: u32,
    /// `max.message.bytes`: largest batch accepted.
    pub max_message_bytes: usize,
    /// `flush.messages`: fsync after this many messages (`u64::MAX` leaves it to the OS).
    pub flush_interval_messages: u64,
    /// `flush.ms`: the scheduler calls [`crate::Log::flush`] this often.
    pub flush_ms: i64,
    /// `file.delete.delay.ms`.
    pub file_delete_delay_ms: i64,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` (or `message.timestamp.difference.max.ms` for a
    /// bound left at its default): how far before the broker's clock a CreateTime
    /// timestamp may be. `i64::MAX` for no bound.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`, likewise: how far after it.
    pub message_timestamp_after_max_ms: i64,
    /// `compression.type`.
    pub compression: TopicCompression,
    /// `cleanup.policy` contains `compact`.
    pub compacted: bool,
    /// `retention.ms` (-1 for unlimited).
    pub retention_ms: i64,
    /// `retention.bytes` (-1 for unlimited).
    pub retention_bytes: i64,
    /// `cleanup.policy` contains `delete`: retention by time and size applies.
    pub delete_policy: bool,
    /// `delete.retention.ms`: how long tombstones survive once cleaned.
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio`: dirty bytes / total before the cleaner picks the log.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this stay uncompacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a log with older dirty records is cleaned regardless of
    /// its dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// `preallocate`: each new segment's `.log` starts at `segment.bytes` long and is
    /// trimmed to its data on roll and close.
    pub preallocate: bool,
}

impl Default for LogConfig {
    /// Kafka's broker defaults.
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            max_index_size: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            max_message_bytes: 1024 * 1024 + 12,
            flush_interval_messages: u64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            compression: TopicCompression::Producer,
            compacted: false,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            delete_policy: true,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            preallocate: false,
        }
    }
}

/// Where the log gets "now" from; tests inject a [`MockClock`].
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct MockClock(AtomicI64);

impl MockClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        MockClock(AtomicI64::new(now_ms))
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for MockClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
