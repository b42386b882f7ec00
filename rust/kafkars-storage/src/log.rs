//! One partition's log (Kafka's UnifiedLog + LocalLog): the ordered segments, offset
//! assignment on append, reads, rolling, flushing, truncation and segment deletion.
//!
//! A `Log` is shared as `Arc<Log>`: appends are serialized by a write lock, reads
//! share a read lock, and the log end offset, high watermark, log start offset and
//! recovery point are atomics so delayed fetches can check them without locking.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kafkars_record::{
    Compression, ControlRecordType, EndTransactionMarker, PatchedBatches, RecordError,
    TimestampType, batches,
};

use crate::checkpoint::{fsync_dir, sync_if_exists};
use crate::config::{Clock, LogConfig, TopicCompression};
use crate::error::{IoContext, LogError, Result};
use crate::fetch::{FetchDataInfo, LogOffsetMetadata};
use crate::future_log::{FutureLog, SegmentSource};
use crate::leader_epoch::{LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochFileCache};
use crate::loader::{PartitionLoadStats, load_segments};
use crate::log_dir_failure::LogDirFailure;
use crate::log_validator::{AppendOrigin, LogValidator};
use crate::producer_state::{
    CompletedTxn, ProducerBatch, ProducerCheck, ProducerStateManager, snapshot_offset,
};
use crate::segment::{
    DELETED_FILE_SUFFIX, LogSegment, RollParams, SWAP_FILE_SUFFIX, TimestampAndOffset,
    end_txn_marker,
};
use crate::time_index::NO_TIMESTAMP;
use crate::topic_partition::TopicPartition;
use crate::transaction_index::{AbortedTxn, append_txn_index, read_txn_index, rewrite_txn_index};

/// ListOffsets timestamp for the earliest offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets timestamp for the latest offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets timestamp for the record with the largest timestamp.
pub const MAX_TIMESTAMP: i64 = -3;

/// The ordered segments of a log, keyed by base offset (Kafka's LogSegments).
pub type LogSegments = BTreeMap<i64, LogSegment>;

/// What an append did (Kafka's LogAppendInfo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset of the first record appended.
    pub first_offset: i64,
    /// Offset of the last record appended.
    pub last_offset: i64,
    /// Largest record timestamp in the append.
    pub max_timestamp: i64,
    /// Offset of the batch carrying `max_timestamp` (its last offset).
    pub offset_of_max_timestamp: i64,
    /// The broker time stamped on the batches, or -1 for CreateTime topics.
    pub log_append_time: i64,
    /// The log start offset after the append.
    pub log_start_offset: i64,
    /// Bytes appended.
    pub valid_bytes: usize,
    /// Records appended.
    pub num_messages: u64,
    /// Batches appended.
    pub shallow_count: usize,
    /// Compression of the batches as received (of the last batch).
    pub source_compression: Compression,
    /// Compression of the batches as stored.
    pub target_compression: Compression,
    /// Leader epoch of the last batch.
    pub last_leader_epoch: i32,
}

/// An inactive segment as the cleaner sees it: its file stays readable through the
/// handle even if the segment is deleted or replaced meanwhile.
#[derive(Debug, Clone)]
pub(crate) struct SegmentSnapshot {
    pub(crate) base_offset: i64,
    pub(crate) next_base_offset: i64,
    pub(crate) path: PathBuf,
    pub(crate) size: u32,
    pub(crate) file: Arc<File>,
    pub(crate) last_modified_ms: i64,
    pub(crate) largest_timestamp: i64,
}

struct LogState {
    dir: PathBuf,
    segments: LogSegments,
    epoch_cache: LeaderEpochFileCache,
    config: LogConfig,
    producer_state: ProducerStateManager,
    /// Aborted transactions by the offset of their ABORT marker, kept in the
    /// `.txnindex` of the segment holding the marker.
    aborted: BTreeMap<i64, AbortedTxn>,
}

/// Records the transaction `done` as aborted (once) in the marker segment's index.
fn record_abort(
    segment: &LogSegment,
    producer_state: &ProducerStateManager,
    aborted: &mut BTreeMap<i64, AbortedTxn>,
    done: CompletedTxn,
) -> Result<()> {
    if aborted.contains_key(&done.last_offset) {
        return Ok(());
    }
    let txn = AbortedTxn {
        producer_id: done.producer_id,
        first_offset: done.first_offset,
        last_offset: done.last_offset,
        last_stable_offset: producer_state
            .first_unstable_offset()
            .unwrap_or(done.last_offset + 1),
    };
    append_txn_index(segment.txn_index_path(), &txn)?;
    aborted.insert(done.last_offset, txn);
    Ok(())
}

/// Brings `producer_state` up to `log_end_offset` by replaying the producer fields of
/// the batch headers after the offset its snapshot covers.
fn replay_producer_state(
    segments: &LogSegments,
    producer_state: &mut ProducerStateManager,
    aborted: &mut BTreeMap<i64, AbortedTxn>,
    log_end_offset: i64,
) -> Result<()> {
    let from = producer_state.map_end_offset();
    let first = segments
        .range(..=from)
        .next_back()
        .map_or(i64::MIN, |(base, _)| *base);
    for (_, segment) in segments.range(first..) {
        segment.producer_batches(from, |batch, control| {
            if let Some(done) =
                producer_state.update_with_marker(batch, control.map(|m| m.coordinator_epoch))
                && control.map(|m| m.control_type) == Some(ControlRecordType::Abort)
            {
                record_abort(segment, producer_state, aborted, done)?;
            }
            Ok(())
        })?;
    }
    producer_state.advance_to(log_end_offset);
    Ok(())
}

/// Where a move between log dirs can be interrupted, for crash tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveStage {
    /// The future dir is complete and fsynced, still named `-future`.
    FutureComplete,
    /// The future dir has the partition's name; the old dir is not yet renamed.
    FutureRenamed,
}

/// A partition's log. See the module docs.
#[derive(Debug)]
pub struct Log {
    tp: TopicPartition,
    state: RwLock<LogStateBox>,
    clock: Arc<dyn Clock>,
    log_end_offset: AtomicI64,
    high_watermark: AtomicI64,
    log_start_offset: AtomicI64,
    recovery_point: AtomicI64,
    leo_metadata: Mutex<LogOffsetMetadata>,
    unflushed_messages: AtomicU64,
    last_flush_ms: AtomicI64,
    pending_deletes: Mutex<Vec<(i64, LogSegment)>>,
    closed: AtomicBool,
    /// Set after an I/O error or a panic under one of the log's locks: the files or the
    /// in-memory state may no longer agree, so every later operation answers
    /// KAFKA_STORAGE_ERROR instead of serving or extending them (Kafka takes the log
    /// dir offline; here only this partition goes).
    offline: AtomicBool,
    /// The dir the log is in, set by the LogManager: an I/O error here takes the whole
    /// dir offline, and an offline dir takes this log with it.
    log_dir_failure: Mutex<Option<Arc<LogDirFailure>>>,
    /// Bumped when bytes already written change (truncation, compaction), so a copy of
    /// the files taken without the lock knows to start over.
    layout_version: AtomicU64,
}

/// Wrapper so `LogState` can stay private while `Log` derives Debug.
struct LogStateBox(LogState);

impl std::fmt::Debug for LogStateBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogState")
            .field("dir", &self.0.dir)
            .field("segments", &self.0.segments.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn jitter(max: i64, seed: i64) -> i64 {
    if max <= 0 {
        return 0;
    }
    // A cheap mix of the time and base offset; jitter only needs to spread rolls.
    let mut x = (seed as u64) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x % max as u64) as i64
}

/// A log directory read into memory (the body of [`Log::open`]).
struct LoadedState {
    state: LogState,
    leo_metadata: LogOffsetMetadata,
    log_start: i64,
    recovery_point: i64,
    stats: PartitionLoadStats,
}

/// A new active segment at `base`, preallocated to `segment.bytes` when the topic says so
/// (Kafka's LogSegment.open with `initFileSize` and `preallocate`).
fn new_segment(dir: &Path, base: i64, config: &LogConfig, now: i64) -> Result<LogSegment> {
    let mut seg = LogSegment::create(
        dir,
        base,
        config.max_index_size,
        config.index_interval_bytes,
        jitter(config.segment_jitter_ms, now ^ base),
        now,
    )?;
    if config.preallocate {
        seg.preallocate(config.segment_bytes)?;
    }
    Ok(seg)
}

fn load_state(
    dir: &Path,
    config: LogConfig,
    recovery_point: i64,
    log_start_offset: i64,
    had_clean_shutdown: bool,
    now: i64,
) -> Result<LoadedState> {
    // Usually there already (a load): one mkdir tells, where create_dir_all also stats.
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).at(dir)?;
        }
        other => other.at(dir)?,
    }
    let loaded = load_segments(
        dir,
        config.max_index_size,
        config.index_interval_bytes,
        recovery_point,
        had_clean_shutdown,
    )?;
    let mut segments = loaded.segments;
    if segments.is_empty() {
        let base = log_start_offset.max(0);
        let seg = new_segment(dir, base, &config, now)?;
        segments.insert(base, seg);
    }
    let (_, active) = segments
        .iter_mut()
        .next_back()
        .expect("at least one segment");
    active.resize_indexes_before_append(config.max_index_size);
    active.set_roll_jitter_ms(jitter(config.segment_jitter_ms, now ^ active.base_offset()));
    let leo = match active.read_next_offset() {
        Ok(leo) => leo,
        // A damaged active segment despite the clean marker: recover it rather
        // than refuse to start.
        Err(LogError::CorruptSegment { .. }) => {
            let r = active.recover()?;
            active.resize_indexes_before_append(config.max_index_size);
            r.next_offset.unwrap_or(active.base_offset())
        }
        Err(e) => return Err(e),
    };
    let leo_metadata = LogOffsetMetadata {
        message_offset: leo,
        segment_base_offset: active.base_offset(),
        relative_position_in_segment: active.size(),
    };
    let first_base = *segments.keys().next().expect("non-empty");
    let log_start = log_start_offset.max(first_base).min(leo);
    let mut epoch_cache = LeaderEpochFileCache::load(dir)?;
    for (epoch, start) in loaded.epoch_starts {
        epoch_cache.assign(epoch, start)?;
    }
    epoch_cache.truncate_from_end(leo)?;
    epoch_cache.truncate_from_start(log_start)?;
    let listed: HashSet<&str> = loaded.files.iter().map(String::as_str).collect();
    let mut aborted = BTreeMap::new();
    for segment in segments.values() {
        let path = segment.txn_index_path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| listed.contains(n))
        {
            for txn in read_txn_index(path)? {
                aborted.insert(txn.last_offset, txn);
            }
        }
    }
    let snapshots = loaded
        .files
        .iter()
        .filter_map(|name| Some((snapshot_offset(name)?, dir.join(name))))
        .collect();
    let mut producer_state = ProducerStateManager::load_listed(dir, snapshots, log_start, leo)?;
    replay_producer_state(&segments, &mut producer_state, &mut aborted, leo)?;
    // Recovery validated what it kept but made none of it durable, and an fsync per
    // recovered segment made start-up after a crash cost a disk flush per partition. As
    // in Kafka, the recovery point stays where the checkpoint had it: the next flush moves
    // it, and a second crash before that scans the same segments again.
    let recovery = recovery_point.clamp(log_start, leo);
    Ok(LoadedState {
        state: LogState {
            dir: dir.to_path_buf(),
            segments,
            epoch_cache,
            config,
            producer_state,
            aborted,
        },
        leo_metadata,
        log_start,
        recovery_point: recovery,
        stats: loaded.stats,
    })
}

impl Log {
    /// Opens (loading and, after an unclean shutdown, recovering) or creates the log in
    /// `dir`. `recovery_point` and `log_start_offset` come from the checkpoints.
    pub fn open(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        recovery_point: i64,
        log_start_offset: i64,
        had_clean_shutdown: bool,
        clock: Arc<dyn Clock>,
    ) -> Result<(Arc<Log>, PartitionLoadStats)> {
        let now = clock.now_ms();
        let loaded = load_state(
            dir,
            config,
            recovery_point,
            log_start_offset,
            had_clean_shutdown,
            now,
        )?;
        let log = Log {
            tp,
            state: RwLock::new(LogStateBox(loaded.state)),
            clock,
            log_end_offset: AtomicI64::new(loaded.leo_metadata.message_offset),
            high_watermark: AtomicI64::new(loaded.log_start),
            log_start_offset: AtomicI64::new(loaded.log_start),
            recovery_point: AtomicI64::new(loaded.recovery_point),
            leo_metadata: Mutex::new(loaded.leo_metadata),
            unflushed_messages: AtomicU64::new(0),
            last_flush_ms: AtomicI64::new(now),
            pending_deletes: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            offline: AtomicBool::new(false),
            log_dir_failure: Mutex::new(None),
            layout_version: AtomicU64::new(0),
        };
        Ok((Arc::new(log), loaded.stats))
    }

    fn read_state(&self) -> RwLockReadGuard<'_, LogStateBox> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, LogStateBox> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LogError::Closed(self.tp.to_string()));
        }
        // A panic while a lock was held leaves state half-updated.
        if self.state.is_poisoned() || self.leo_metadata.is_poisoned() {
            self.mark_offline("a lock was poisoned by a panic");
        }
        if self.is_offline() {
            return Err(LogError::Offline(self.tp.to_string()));
        }
        Ok(())
    }

    fn log_dir_failure(&self) -> Option<Arc<LogDirFailure>> {
        self.log_dir_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The dir the log is in now (the LogManager sets it on creation and after a move).
    pub fn set_log_dir_failure(&self, dir: Arc<LogDirFailure>) {
        *self
            .log_dir_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(dir);
    }

    /// Takes the partition offline (see `offline`); logged once.
    fn mark_offline(&self, reason: &str) {
        if !self.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(partition = %self.tp, reason, "partition taken offline");
        }
    }

    /// Passes `result` through, taking the partition offline on an I/O error.
    fn offline_on_io_error<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(e @ LogError::Io { .. }) = &result {
            self.mark_offline(&e.to_string());
            if let Some(dir) = self.log_dir_failure() {
                dir.maybe_add_offline_log_dir(e);
            }
        }
        result
    }

    /// Forgets producers idle for longer than `expiration_ms`
    /// (`producer.id.expiration.ms`); returns how many were removed.
    pub fn remove_expired_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.write_state()
            .0
            .producer_state
            .remove_expired(now_ms, expiration_ms)
    }

    /// The producer's epoch and last sequence here, if it has state.
    pub fn producer_state(&self, producer_id: i64) -> Option<(i16, i32)> {
        let guard = self.read_state();
        let entry = guard.0.producer_state.entry(producer_id)?;
        let last_seq = entry.batches.back().map_or(-1, |b| b.last_seq);
        Some((entry.producer_epoch, last_seq))
    }

    /// Every producer with state here, by id: `(producer_id, epoch, last_sequence,
    /// last_timestamp, coordinator_epoch, current_txn_first_offset or -1)`
    /// (DescribeProducers).
    pub fn active_producers(&self) -> Vec<(i64, i16, i32, i64, i32, i64)> {
        let guard = self.read_state();
        let mut out: Vec<_> = guard
            .0
            .producer_state
            .entries()
            .map(|e| {
                (
                    e.producer_id,
                    e.producer_epoch,
                    e.batches.back().map_or(-1, |b| b.last_seq),
                    e.last_timestamp,
                    e.coordinator_epoch,
                    e.current_txn_first_offset.unwrap_or(-1),
                )
            })
            .collect();
        out.sort_unstable_by_key(|p| p.0);
        out
    }

    /// Whether an I/O error or a panic took this partition, or its log dir, offline.
    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
            || self.log_dir_failure().is_some_and(|d| d.is_offline())
    }

    /// Whether the log was closed or deleted.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The partition.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    /// The partition directory.
    pub fn dir(&self) -> PathBuf {
        self.read_state().0.dir.clone()
    }

    /// A copy of the configuration.
    pub fn config(&self) -> LogConfig {
        self.read_state().0.config.clone()
    }

    /// Replaces the configuration (dynamic topic config); applies to future appends.
    pub fn update_config(&self, config: LogConfig) {
        self.write_state().0.config = config;
    }

    /// The next offset to be assigned (LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }

    /// LEO with its segment and position.
    pub fn log_end_offset_metadata(&self) -> LogOffsetMetadata {
        *lock(&self.leo_metadata)
    }

    /// The first offset still held.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    /// The high watermark (set by the caller; HW = LEO on a single broker).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Sets the high watermark, clamped to `[log start, LEO]`; returns the value set.
    pub fn set_high_watermark(&self, offset: i64) -> i64 {
        let hw = offset.clamp(self.log_start_offset(), self.log_end_offset());
        self.high_watermark.store(hw, Ordering::Release);
        hw
    }

    /// Offsets below this are known to be on disk.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point.load(Ordering::Acquire)
    }

    /// Messages appended since the last flush.
    pub fn unflushed_messages(&self) -> u64 {
        self.unflushed_messages.load(Ordering::Acquire)
    }

    /// When the log was last flushed.
    pub fn last_flush_ms(&self) -> i64 {
        self.last_flush_ms.load(Ordering::Acquire)
    }

    /// Number of segments.
    pub fn num_segments(&self) -> usize {
        self.read_state().0.segments.len()
    }

    /// Total bytes of all `.log` files.
    pub fn size_in_bytes(&self) -> u64 {
        self.read_state()
            .0
            .segments
            .values()
            .map(|s| u64::from(s.size()))
            .sum()
    }

    /// Base offsets of the segments, in order.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.read_state().0.segments.keys().copied().collect()
    }

    /// The latest leader epoch recorded in `leader-epoch-checkpoint`.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.read_state().0.epoch_cache.latest_epoch()
    }

    /// OffsetForLeaderEpoch: `(epoch, end offset)` for `requested_epoch`.
    pub fn end_offset_for_epoch(&self, requested_epoch: i32) -> (i32, i64) {
        self.read_state()
            .0
            .epoch_cache
            .end_offset_for(requested_epoch, self.log_end_offset())
    }

    /// Validates produced batches, assigns offsets and appends them. The offsets go into
    /// copies of the batch headers; `records` itself is written as it is.
    pub fn append_as_leader(&self, records: &[u8], leader_epoch: i32) -> Result<LogAppendInfo> {
        self.append(records, Some(leader_epoch))
    }

    /// Appends batches that already carry offsets (replication), keeping them.
    pub fn append_as_follower(&self, records: &[u8]) -> Result<LogAppendInfo> {
        self.append(records, None)
    }

    fn append(&self, records: &[u8], leader_epoch: Option<i32>) -> Result<LogAppendInfo> {
        let origin = match leader_epoch {
            Some(_) => AppendOrigin::Client,
            None => AppendOrigin::Replication,
        };
        let result = self.append_locked(records, leader_epoch, origin);
        self.offline_on_io_error(result)
    }

    /// Appends the COMMIT or ABORT marker that ends `producer_id`'s transaction here
    /// (WriteTxnMarkers), as the leader at `leader_epoch`.
    pub fn append_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        leader_epoch: i32,
    ) -> Result<LogAppendInfo> {
        let marker = EndTransactionMarker {
            control_type: if commit {
                ControlRecordType::Commit
            } else {
                ControlRecordType::Abort
            },
            coordinator_epoch,
        };
        let batch = marker.build_batch(
            0,
            self.clock.now_ms(),
            leader_epoch,
            producer_id,
            producer_epoch,
        )?;
        let result = self.append_locked(&batch, Some(leader_epoch), AppendOrigin::Coordinator);
        self.offline_on_io_error(result)
    }

    /// The last stable offset: below it every transaction is decided (read_committed
    /// consumers read up to here). At most the high watermark.
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        self.read_state()
            .0
            .producer_state
            .first_unstable_offset()
            .map_or(hw, |first| first.min(hw))
    }

    /// The aborted transactions whose data starts below `end_offset`: what the cleaner
    /// discards.
    pub(crate) fn aborted_txns_below(&self, end_offset: i64) -> Vec<AbortedTxn> {
        self.read_state()
            .0
            .aborted
            .values()
            .filter(|t| t.first_offset < end_offset)
            .copied()
            .collect()
    }

    /// The last offset of each producer's latest batch: the cleaner keeps those batches
    /// (empty if need be) so the producer's sequence survives compaction.
    pub(crate) fn producer_last_offsets(&self) -> HashMap<i64, i64> {
        self.read_state()
            .0
            .producer_state
            .entries()
            .filter_map(|e| e.batches.back().map(|b| (e.producer_id, b.last_offset)))
            .collect()
    }

    /// `(producer_id, first_offset)` of the aborted transactions with data in
    /// `[start_offset, upper_bound)`, for a read_committed fetch of that range.
    pub fn aborted_transactions(&self, start_offset: i64, upper_bound: i64) -> Vec<(i64, i64)> {
        self.read_state()
            .0
            .aborted
            .range(start_offset..)
            .filter(|(_, t)| t.first_offset < upper_bound)
            .map(|(_, t)| (t.producer_id, t.first_offset))
            .collect()
    }

    fn append_locked(
        &self,
        records: &[u8],
        leader_epoch: Option<i32>,
        origin: AppendOrigin,
    ) -> Result<LogAppendInfo> {
        self.check_open()?;
        // CRCs and decompression run before the write lock is taken: appends to one
        // partition serialise only on the producer check, offsets and the write.
        let config = self.read_state().0.config.clone();

        // Validate every batch before touching anything (Kafka's LogValidator), one pass
        // over each; batches the topic's codec re-encodes are collected in `recompressed`
        // with the others copied after them.
        let validator = LogValidator::new(&config, &self.tp, origin, self.clock.now_ms());
        let mut shallow_count = 0usize;
        let mut num_messages = 0u64;
        let mut source_compression = Compression::None;
        let mut recompressed: Option<Vec<u8>> = None;
        {
            let mut iter = batches(records);
            while let Some(batch) = iter.next() {
                let batch = batch?;
                let validated = validator.validate_batch(&batch)?;
                source_compression = validated.source_compression;
                match (validated.recompressed, &mut recompressed) {
                    (Some(bytes), out) => {
                        let start = iter.position() - batch.size_in_bytes();
                        out.get_or_insert_with(|| {
                            let mut v = Vec::with_capacity(records.len());
                            v.extend_from_slice(&records[..start]);
                            v
                        })
                        .extend_from_slice(&bytes);
                    }
                    (None, Some(out)) => out.extend_from_slice(batch.as_bytes()),
                    (None, None) => {}
                }
                shallow_count += 1;
                num_messages += u64::from(batch.records_count().max(0) as u32);
            }
            if iter.is_truncated() {
                return Err(RecordError::CorruptMessage(format!(
                    "{} trailing bytes do not form a complete record batch",
                    iter.remaining().len()
                ))
                .into());
            }
        }
        if shallow_count == 0 {
            return Err(
                RecordError::CorruptMessage("no record batches in the append".into()).into(),
            );
        }
        let mut guard = self.write_state();
        // Checked under the lock so no append slips in after close().
        self.check_open()?;
        let st = &mut guard.0;
        let now = self.clock.now_ms();
        if origin == AppendOrigin::Client
            && let Some((first_offset, last_offset)) =
                Self::check_producers(&st.producer_state, records)?
        {
            // A retry of a batch already written: answer with where it went.
            return Ok(LogAppendInfo {
                first_offset,
                last_offset,
                max_timestamp: NO_TIMESTAMP,
                offset_of_max_timestamp: -1,
                log_append_time: -1,
                log_start_offset: self.log_start_offset(),
                valid_bytes: 0,
                num_messages: 0,
                shallow_count: 0,
                source_compression,
                target_compression: source_compression,
                last_leader_epoch: -1,
            });
        }

        let bytes: &[u8] = recompressed.as_deref().unwrap_or(records);
        if bytes.len() > config.segment_bytes as usize {
            return Err(LogError::RecordBatchTooLarge {
                size: bytes.len(),
                max: config.segment_bytes as usize,
            });
        }

        // Assign offsets (leader) or check them (follower).
        let leo = self.log_end_offset();
        let mut next = leo;
        let mut first_offset = -1;
        let mut max_timestamp = NO_TIMESTAMP;
        let mut offset_of_max_timestamp = -1;
        let mut last_epoch = -1;
        let mut epoch_starts = Vec::new();
        let log_append_time = (config.message_timestamp_type == TimestampType::LogAppendTime
            && leader_epoch.is_some())
        .then_some(now);
        // The leader's changes go into header copies; the records are written from
        // `bytes` as they are.
        let mut patched = PatchedBatches::new(bytes)?;
        let mut base_offsets = Vec::with_capacity(patched.count());
        for (i, batch) in batches(bytes).enumerate() {
            let batch = batch?;
            let (base_offset, epoch, batch_max_timestamp) = match leader_epoch {
                Some(epoch) => {
                    patched.assign(i, next, epoch);
                    let max = match log_append_time {
                        Some(t) => {
                            patched.set_log_append_time(i, t);
                            t
                        }
                        None => batch.max_timestamp(),
                    };
                    (next, epoch, max)
                }
                None => (
                    batch.base_offset(),
                    batch.partition_leader_epoch(),
                    batch.max_timestamp(),
                ),
            };
            if base_offset < next {
                return Err(LogError::InvalidOffset(format!(
                    "batch base offset {base_offset} is below the log end offset {next}"
                )));
            }
            let batch_last_offset = base_offset.wrapping_add(i64::from(batch.last_offset_delta()));
            if first_offset < 0 {
                first_offset = base_offset;
            }
            if batch_max_timestamp > max_timestamp {
                max_timestamp = batch_max_timestamp;
                offset_of_max_timestamp = batch_last_offset;
            }
            last_epoch = epoch;
            if last_epoch >= 0 {
                epoch_starts.push((last_epoch, base_offset));
            }
            base_offsets.push(base_offset);
            next = batch_last_offset.wrapping_add(1);
        }
        let last_offset = next - 1;
        if offset_of_max_timestamp < 0 {
            offset_of_max_timestamp = last_offset;
        }

        // Roll if needed, then append to the active segment.
        let needs_roll = {
            let (_, active) = st.segments.iter_mut().next_back().expect("active segment");
            active.should_roll(&RollParams {
                max_segment_bytes: config.segment_bytes,
                max_segment_ms: config.segment_ms,
                max_timestamp_in_messages: max_timestamp,
                max_offset_in_messages: last_offset,
                messages_size: bytes.len() as u32,
                now_ms: now,
            })? && active.size() > 0
        };
        if needs_roll {
            Self::roll_locked(st, first_offset, now)?;
        }
        let (_, active) = st.segments.iter_mut().next_back().expect("active segment");
        if !active.can_convert_to_relative_offset(last_offset)
            || first_offset < active.base_offset()
        {
            return Err(LogError::InvalidOffset(format!(
                "offsets {first_offset}..={last_offset} do not fit segment {}",
                active.base_offset()
            )));
        }
        active.append_slices(
            last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            &patched.io_slices(),
        )?;

        let leo_md = LogOffsetMetadata {
            message_offset: next,
            segment_base_offset: active.base_offset(),
            relative_position_in_segment: active.size(),
        };
        {
            let LogState {
                segments,
                producer_state,
                aborted,
                ..
            } = &mut *st;
            let (_, active) = segments.iter().next_back().expect("active segment");
            for (batch, base_offset) in batches(bytes).zip(base_offsets) {
                let batch = batch?;
                let marker = end_txn_marker(&batch)?;
                if let Some(p) = ProducerBatch::of(&batch).map(|p| p.at(base_offset))
                    && let Some(done) =
                        producer_state.update_with_marker(&p, marker.map(|m| m.coordinator_epoch))
                    && marker.map(|m| m.control_type) == Some(ControlRecordType::Abort)
                {
                    record_abort(active, producer_state, aborted, done)?;
                }
            }
            producer_state.advance_to(next);
        }
        for (epoch, start) in epoch_starts {
            if st.epoch_cache.latest_epoch() != Some(epoch) {
                st.epoch_cache.assign(epoch, start)?;
            }
        }
        *lock(&self.leo_metadata) = leo_md;
        self.log_end_offset.store(next, Ordering::Release);
        drop(guard);

        let unflushed = self
            .unflushed_messages
            .fetch_add(num_messages, Ordering::AcqRel)
            + num_messages;
        if unflushed >= config.flush_interval_messages {
            self.flush(next)?;
        }
        let target_compression = match config.compression {
            TopicCompression::Codec(c) if leader_epoch.is_some() => c,
            _ => source_compression,
        };
        Ok(LogAppendInfo {
            first_offset,
            last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            log_append_time: log_append_time.unwrap_or(-1),
            log_start_offset: self.log_start_offset(),
            valid_bytes: bytes.len(),
            num_messages,
            shallow_count,
            source_compression,
            target_compression,
            last_leader_epoch: last_epoch,
        })
    }

    /// For a client's append: the offsets of the batch it repeats (a retry), or an
    /// error for a fenced epoch or a sequence gap. One batch per producer and append,
    /// as Kafka's produce requests carry one batch per partition.
    fn check_producers(
        producer_state: &ProducerStateManager,
        records: &[u8],
    ) -> Result<Option<(i64, i64)>> {
        let mut seen: Vec<i64> = Vec::new();
        for batch in batches(records) {
            let Some(p) = ProducerBatch::of(&batch?) else {
                continue;
            };
            if seen.contains(&p.producer_id) {
                return Err(RecordError::InvalidRecord(format!(
                    "more than one batch of producer {} in one append",
                    p.producer_id
                ))
                .into());
            }
            seen.push(p.producer_id);
            if let ProducerCheck::Duplicate {
                first_offset,
                last_offset,
            } = producer_state.check(&p)?
            {
                return Ok(Some((first_offset, last_offset)));
            }
        }
        Ok(None)
    }

    fn roll_locked(st: &mut LogState, expected_next_offset: i64, now: i64) -> Result<()> {
        let (&active_base, active) = st.segments.iter_mut().next_back().expect("active segment");
        let new_base = expected_next_offset.max(active_base);
        if active.size() == 0 && new_base == active_base {
            return Ok(());
        }
        // Kafka snapshots producer state at each new segment's base offset, so a later
        // load replays at most the active segment. Its fsync waits for a journal commit,
        // which can wait behind the writeback of everything else dirty on the file system:
        // it runs on a background thread, not under the lock every append takes.
        st.producer_state.advance_to(new_base);
        if let Some(snapshot) = st.producer_state.take_snapshot_unsynced()? {
            crate::checkpoint::sync_in_background(snapshot);
        }
        active.on_became_inactive_segment()?;
        let seg = new_segment(&st.dir, new_base, &st.config, now)?;
        st.segments.insert(new_base, seg);
        Ok(())
    }

    /// Starts a new active segment at the log end offset (no-op if the active one is empty).
    pub fn roll(&self) -> Result<()> {
        let result = self.roll_unguarded();
        self.offline_on_io_error(result)
    }

    fn roll_unguarded(&self) -> Result<()> {
        self.check_open()?;
        let mut guard = self.write_state();
        let now = self.clock.now_ms();
        let leo = self.log_end_offset();
        Self::roll_locked(&mut guard.0, leo, now)?;
        let (_, active) = guard.0.segments.iter().next_back().expect("active segment");
        *lock(&self.leo_metadata) = LogOffsetMetadata {
            message_offset: leo,
            segment_base_offset: active.base_offset(),
            relative_position_in_segment: active.size(),
        };
        Ok(())
    }

    fn out_of_range(&self, offset: i64) -> LogError {
        LogError::OffsetOutOfRange {
            offset,
            partition: self.tp.to_string(),
            log_start_offset: self.log_start_offset(),
            log_end_offset: self.log_end_offset(),
        }
    }

    /// Where `offset` lives, translating through the indexes when needed.
    fn offset_metadata(&self, st: &LogState, offset: i64) -> Result<LogOffsetMetadata> {
        let leo_md = self.log_end_offset_metadata();
        if offset == leo_md.message_offset {
            return Ok(leo_md);
        }
        for (_, seg) in st
            .segments
            .range(..=offset)
            .next_back()
            .into_iter()
            .chain(st.segments.range(offset + 1..))
        {
            if let Some(p) = seg.translate_offset(offset, 0)? {
                return Ok(LogOffsetMetadata {
                    message_offset: offset,
                    segment_base_offset: seg.base_offset(),
                    relative_position_in_segment: p.position,
                });
            }
        }
        Ok(leo_md)
    }

    /// Reads from `fetch_offset` up to `max_bytes`, never past `isolation_upper_bound`
    /// (the high watermark for consumers, LEO for replicas). The result is a file
    /// slice starting at the batch that holds `fetch_offset`.
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
        isolation_upper_bound: i64,
        min_one_message: bool,
    ) -> Result<FetchDataInfo> {
        let result = self.read_unguarded(
            fetch_offset,
            max_bytes,
            isolation_upper_bound,
            min_one_message,
        );
        self.offline_on_io_error(result)
    }

    fn read_unguarded(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
        isolation_upper_bound: i64,
        min_one_message: bool,
    ) -> Result<FetchDataInfo> {
        self.check_open()?;
        let guard = self.read_state();
        let st = &guard.0;
        let leo = self.log_end_offset();
        if fetch_offset < self.log_start_offset() || fetch_offset > leo {
            return Err(self.out_of_range(fetch_offset));
        }
        let upper = isolation_upper_bound.min(leo);
        if fetch_offset >= upper {
            return Ok(FetchDataInfo::empty(
                self.offset_metadata(st, fetch_offset)?,
            ));
        }
        let max_md = self.offset_metadata(st, upper)?;
        let start_base = st
            .segments
            .range(..=fetch_offset)
            .next_back()
            .map(|(b, _)| *b)
            .ok_or_else(|| self.out_of_range(fetch_offset))?;
        for (&base, seg) in st.segments.range(start_base..) {
            if base > max_md.segment_base_offset && !max_md.message_offset_only() {
                break;
            }
            let max_position = if base == max_md.segment_base_offset {
                max_md.relative_position_in_segment
            } else {
                seg.size()
            };
            if let Some(info) = seg.read(fetch_offset, max_bytes, max_position, min_one_message)? {
                return Ok(info);
            }
        }
        Ok(FetchDataInfo::empty(self.log_end_offset_metadata()))
    }

    /// ListOffsets: -2 earliest, -1 latest, -3 largest timestamp, else the first
    /// record with timestamp `>= timestamp` (time index, then offset index, then scan).
    pub fn fetch_offset_by_timestamp(&self, timestamp: i64) -> Result<Option<TimestampAndOffset>> {
        self.check_open()?;
        let guard = self.read_state();
        let st = &guard.0;
        let epoch_at = |offset: i64| {
            st.epoch_cache
                .epoch_entries()
                .iter()
                .rev()
                .find(|e| e.start_offset <= offset)
                .map(|e| e.epoch)
        };
        match timestamp {
            EARLIEST_TIMESTAMP => {
                let o = self.log_start_offset();
                Ok(Some(TimestampAndOffset {
                    timestamp: NO_TIMESTAMP,
                    offset: o,
                    leader_epoch: epoch_at(o),
                }))
            }
            LATEST_TIMESTAMP => {
                let o = self.log_end_offset();
                Ok(Some(TimestampAndOffset {
                    timestamp: NO_TIMESTAMP,
                    offset: o,
                    leader_epoch: st.epoch_cache.latest_epoch(),
                }))
            }
            MAX_TIMESTAMP => {
                let mut best: Option<(i64, &LogSegment)> = None;
                for seg in st.segments.values() {
                    if seg.size() == 0 {
                        continue;
                    }
                    let ts = seg.largest_timestamp()?;
                    if best.is_none_or(|(b, _)| ts > b) {
                        best = Some((ts, seg));
                    }
                }
                match best {
                    Some((ts, seg)) => seg.find_offset_by_timestamp(ts, self.log_start_offset()),
                    None => Ok(None),
                }
            }
            ts => {
                for seg in st.segments.values() {
                    if seg.size() == 0 || seg.largest_timestamp()? < ts {
                        continue;
                    }
                    if let Some(found) =
                        seg.find_offset_by_timestamp(ts, self.log_start_offset())?
                    {
                        return Ok(Some(found));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Fsyncs every segment holding offsets in `[recovery point, offset)` and moves the
    /// recovery point to `offset`. The fsyncs run without the log's lock.
    pub fn flush(&self, offset: i64) -> Result<()> {
        // A failed fsync leaves unknown data on disk (Kafka halts the log dir).
        let result = self.flush_unguarded(offset);
        self.offline_on_io_error(result)
    }

    fn flush_unguarded(&self, offset: i64) -> Result<()> {
        let offset = offset.min(self.log_end_offset());
        let rp = self.recovery_point();
        if offset <= rp {
            return Ok(());
        }
        let handles: Vec<(PathBuf, Option<Arc<File>>)> = {
            let guard = self.read_state();
            let st = &guard.0;
            let first = st
                .segments
                .range(..=rp)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            let mut v = Vec::new();
            for (_, seg) in st.segments.range(first..offset) {
                v.extend(seg.flush_handles()?);
            }
            v
        };
        for (path, file) in handles {
            match file {
                Some(file) => file.sync_all().at(&path)?,
                // An index renamed or deleted since (a roll, a retention delete) needs none.
                None => sync_if_exists(&path)?,
            }
        }
        self.recovery_point.fetch_max(offset, Ordering::AcqRel);
        self.unflushed_messages.store(0, Ordering::Release);
        self.last_flush_ms
            .store(self.clock.now_ms(), Ordering::Release);
        Ok(())
    }

    /// Removes everything from `target_offset` on (replica truncation).
    pub fn truncate_to(&self, target_offset: i64) -> Result<bool> {
        self.check_open()?;
        if target_offset >= self.log_end_offset() {
            return Ok(false);
        }
        let first_base = *self
            .read_state()
            .0
            .segments
            .keys()
            .next()
            .expect("segments");
        if target_offset < first_base {
            self.truncate_fully_and_start_at(target_offset)?;
            return Ok(true);
        }
        let mut guard = self.write_state();
        self.layout_version.fetch_add(1, Ordering::AcqRel);
        let st = &mut guard.0;
        let later: Vec<i64> = st
            .segments
            .range(target_offset + 1..)
            .map(|(b, _)| *b)
            .collect();
        for b in later {
            if let Some(seg) = st.segments.remove(&b) {
                seg.delete()?;
            }
        }
        let (_, active) = st
            .segments
            .iter_mut()
            .next_back()
            .expect("segment at or below target");
        active.truncate_to(target_offset)?;
        active.resize_indexes(st.config.max_index_size)?;
        let leo = active
            .read_next_offset()?
            .min(target_offset)
            .max(active.base_offset());
        *lock(&self.leo_metadata) = LogOffsetMetadata {
            message_offset: leo,
            segment_base_offset: active.base_offset(),
            relative_position_in_segment: active.size(),
        };
        self.log_end_offset.store(leo, Ordering::Release);
        st.epoch_cache.truncate_from_end(leo)?;
        st.producer_state
            .truncate_and_reload(self.log_start_offset().min(leo), leo)?;
        st.aborted.retain(|marker, _| *marker < leo);
        replay_producer_state(&st.segments, &mut st.producer_state, &mut st.aborted, leo)?;
        let (&active_base, active) = st.segments.iter().next_back().expect("active segment");
        let kept: Vec<AbortedTxn> = st.aborted.range(active_base..).map(|(_, t)| *t).collect();
        rewrite_txn_index(active.txn_index_path(), &kept)?;
        self.high_watermark.fetch_min(leo, Ordering::AcqRel);
        self.recovery_point.fetch_min(leo, Ordering::AcqRel);
        self.log_start_offset.fetch_min(leo, Ordering::AcqRel);
        Ok(true)
    }

    /// Deletes every segment and starts empty at `new_offset`.
    pub fn truncate_fully_and_start_at(&self, new_offset: i64) -> Result<()> {
        self.check_open()?;
        let mut guard = self.write_state();
        self.layout_version.fetch_add(1, Ordering::AcqRel);
        let st = &mut guard.0;
        for (_, seg) in std::mem::take(&mut st.segments) {
            seg.delete()?;
        }
        let now = self.clock.now_ms();
        let seg = new_segment(&st.dir, new_offset, &st.config, now)?;
        st.segments.insert(new_offset, seg);
        st.epoch_cache.clear()?;
        st.producer_state
            .truncate_and_reload(new_offset, new_offset)?;
        st.aborted.clear();
        *lock(&self.leo_metadata) = LogOffsetMetadata {
            message_offset: new_offset,
            segment_base_offset: new_offset,
            relative_position_in_segment: 0,
        };
        for a in [
            &self.log_end_offset,
            &self.high_watermark,
            &self.log_start_offset,
            &self.recovery_point,
        ] {
            a.store(new_offset, Ordering::Release);
        }
        Ok(())
    }

    /// Deletes the oldest segments while `predicate(segment, next_segment)` holds.
    /// The active segment is rolled first if it too must go (and is not empty).
    /// Deleted segments are renamed `.deleted` and removed by [`delete_pending`](Self::delete_pending)
    /// after `file.delete.delay.ms`. Returns the number of segments deleted.
    pub fn delete_segments(
        &self,
        mut predicate: impl FnMut(&LogSegment, Option<&LogSegment>) -> bool,
    ) -> Result<usize> {
        self.check_open()?;
        let mut guard = self.write_state();
        let now = self.clock.now_ms();
        let hw = self.high_watermark();
        let mut deletable = Vec::new();
        {
            let st = &guard.0;
            let mut it = st.segments.values().peekable();
            while let Some(seg) = it.next() {
                let next = it.peek().copied();
                // Never delete data the consumers cannot have read yet.
                let upper = next.map_or(self.log_end_offset(), |n| n.base_offset());
                if upper > hw || !predicate(seg, next) {
                    break;
                }
                deletable.push(seg.base_offset());
            }
        }
        if deletable.is_empty() {
            return Ok(0);
        }
        let st = &mut guard.0;
        let active_base = *st.segments.keys().next_back().expect("segments");
        if deletable.last() == Some(&active_base) {
            let leo = self.log_end_offset();
            if st.segments[&active_base].size() == 0 {
                deletable.pop();
            } else {
                Self::roll_locked(st, leo, now)?;
                let (_, active) = st.segments.iter().next_back().expect("active");
                *lock(&self.leo_metadata) = LogOffsetMetadata {
                    message_offset: leo,
                    segment_base_offset: active.base_offset(),
                    relative_position_in_segment: 0,
                };
            }
        }
        let delay = st.config.file_delete_delay_ms;
        let mut pending = lock(&self.pending_deletes);
        for base in &deletable {
            let mut seg = st.segments.remove(base).expect("listed");
            seg.change_file_suffixes("", DELETED_FILE_SUFFIX)?;
            pending.push((now.saturating_add(delay), seg));
        }
        let new_start = *st.segments.keys().next().expect("active remains");
        st.aborted.retain(|marker, _| *marker >= new_start);
        if new_start > self.log_start_offset() {
            self.log_start_offset.store(new_start, Ordering::Release);
            st.epoch_cache.truncate_from_start(new_start)?;
        }
        Ok(deletable.len())
    }

    /// Moves the log start offset forward (DeleteRecords, retention); it may not pass
    /// the high watermark. Segments wholly below it can then be deleted with
    /// [`delete_segments`](Self::delete_segments). Returns whether it moved.
    pub fn maybe_increment_log_start_offset(&self, new_log_start_offset: i64) -> Result<bool> {
        self.check_open()?;
        if new_log_start_offset > self.high_watermark() {
            return Err(self.out_of_range(new_log_start_offset));
        }
        let mut guard = self.write_state();
        if new_log_start_offset <= self.log_start_offset() {
            return Ok(false);
        }
        self.log_start_offset
            .store(new_log_start_offset, Ordering::Release);
        guard
            .0
            .epoch_cache
            .truncate_from_start(new_log_start_offset)?;
        Ok(true)
    }

    /// Deletes the segments wholly below the log start offset.
    pub fn delete_segments_below_log_start(&self) -> Result<usize> {
        let start = self.log_start_offset();
        self.delete_segments(|_, next| next.is_some_and(|n| n.base_offset() <= start))
    }

    /// Retention by time (`retention.ms`): deletes segments whose largest timestamp is
    /// older than `now_ms - retention.ms`. Returns the number deleted.
    pub fn delete_retention_ms_breached_segments(&self, now_ms: i64) -> Result<usize> {
        let retention_ms = self.config().retention_ms;
        if retention_ms < 0 {
            return Ok(0);
        }
        self.delete_segments(|seg, _| {
            seg.largest_timestamp()
                .is_ok_and(|ts| now_ms.saturating_sub(ts) > retention_ms)
        })
    }

    /// Retention by size (`retention.bytes`): deletes the oldest segments while the
    /// log stays at or above the limit without them. Returns the number deleted.
    pub fn delete_retention_size_breached_segments(&self) -> Result<usize> {
        let retention_bytes = self.config().retention_bytes;
        if retention_bytes < 0 {
            return Ok(0);
        }
        let mut excess = self.size_in_bytes() as i64 - retention_bytes;
        if excess <= 0 {
            return Ok(0);
        }
        self.delete_segments(|seg, _| {
            if excess - i64::from(seg.size()) >= 0 {
                excess -= i64::from(seg.size());
                true
            } else {
                false
            }
        })
    }

    /// Kafka's deleteOldSegments, run by the `kafka-log-retention` task: with the
    /// `delete` policy, segments past `retention.ms` or beyond `retention.bytes`; with
    /// any policy, segments wholly below the log start offset. Returns how many went.
    pub fn delete_old_segments(&self, now_ms: i64) -> Result<usize> {
        let mut n = 0;
        if self.config().delete_policy {
            n += self.delete_retention_ms_breached_segments(now_ms)?;
            n += self.delete_retention_size_breached_segments()?;
        }
        n += self.delete_segments_below_log_start()?;
        Ok(n)
    }

    /// DeleteRecords on the leader: moves the log start offset to `offset` (-1 means
    /// the high watermark) and returns the new low watermark. The segments below it go
    /// at the next retention check, as in Kafka.
    pub fn delete_records(&self, offset: i64) -> Result<i64> {
        let target = if offset == -1 {
            self.high_watermark()
        } else {
            offset
        };
        if target < 0 {
            return Err(self.out_of_range(target));
        }
        self.maybe_increment_log_start_offset(target)?;
        Ok(self.log_start_offset())
    }

    /// The segments below the active one, as the log cleaner reads them.
    pub(crate) fn inactive_segments(&self) -> Result<Vec<SegmentSnapshot>> {
        self.check_open()?;
        let guard = self.read_state();
        let st = &guard.0;
        let mut out = Vec::new();
        let mut it = st.segments.values().peekable();
        while let Some(seg) = it.next() {
            let Some(next) = it.peek() else { break };
            out.push(SegmentSnapshot {
                base_offset: seg.base_offset(),
                next_base_offset: next.base_offset(),
                path: seg.log_path().to_path_buf(),
                size: seg.size(),
                file: seg.log_file()?,
                last_modified_ms: seg.last_modified_ms(),
                largest_timestamp: seg.largest_timestamp()?,
            });
        }
        Ok(out)
    }

    /// Swaps a cleaned segment in for `old` (Kafka's replaceSegments). `cleaned` carries
    /// the `.swap` suffix. Under the write lock: the old segments are renamed `.deleted`
    /// (removed after `file.delete.delay.ms`), `between` runs (a crash hook for tests),
    /// then the `.swap` files take their final names. A crash at any point leaves files
    /// the loader completes or rolls back. Returns false, discarding `cleaned`, when
    /// the old segments changed meanwhile (retention deleted one).
    pub(crate) fn replace_segments(
        &self,
        mut cleaned: LogSegment,
        old: &[i64],
        between: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        self.check_open()?;
        let mut guard = self.write_state();
        let st = &mut guard.0;
        let active_base = *st.segments.keys().next_back().expect("segments");
        if old
            .iter()
            .any(|b| *b == active_base || !st.segments.contains_key(b))
        {
            drop(guard);
            cleaned.delete()?;
            return Ok(false);
        }
        let now = self.clock.now_ms();
        let delay = st.config.file_delete_delay_ms;
        {
            let mut pending = lock(&self.pending_deletes);
            for base in old {
                let mut seg = st.segments.remove(base).expect("checked");
                seg.change_file_suffixes("", DELETED_FILE_SUFFIX)?;
                pending.push((now.saturating_add(delay), seg));
            }
        }
        self.layout_version.fetch_add(1, Ordering::AcqRel);
        between()?;
        cleaned.change_file_suffixes(SWAP_FILE_SUFFIX, "")?;
        st.segments.insert(cleaned.base_offset(), cleaned);
        Ok(true)
    }

    /// Physically deletes `.deleted` segments whose delay has passed; returns how many.
    pub fn delete_pending(&self, now_ms: i64) -> Result<usize> {
        let due: Vec<LogSegment> = {
            let mut pending = lock(&self.pending_deletes);
            let (due, keep): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(t, _)| *t <= now_ms);
            *pending = keep;
            due.into_iter().map(|(_, s)| s).collect()
        };
        for seg in &due {
            seg.delete()?;
        }
        Ok(due.len())
    }

    /// Flushes and closes the segments (trimming the indexes) for a clean shutdown.
    pub fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.flush(self.log_end_offset())?;
        let mut guard = self.write_state();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // The flush above made the `.log` files and the indexes durable up to the log end
        // (unless an append came in between) and every change of the epoch cache wrote
        // its file: what is left to sync is what closing wrote, a final time index entry.
        let appended_since = self.recovery_point() < self.log_end_offset();
        for seg in guard.0.segments.values_mut() {
            seg.close()?;
            if appended_since {
                seg.flush()?;
            } else {
                seg.flush_indexes()?;
            }
        }
        // Clean shutdown: the next load starts from here instead of replaying.
        let leo = self.log_end_offset();
        guard.0.producer_state.advance_to(leo);
        guard.0.producer_state.take_snapshot()?;
        Ok(())
    }

    /// The segments as a copy pass of a move between log dirs sees them, with the log
    /// end offset and layout version at that moment.
    pub(crate) fn move_sources(&self) -> Result<(Vec<SegmentSource>, i64, u64)> {
        self.check_open()?;
        let guard = self.read_state();
        let sources = Self::segment_sources(&guard.0)?;
        Ok((
            sources,
            self.log_end_offset(),
            self.layout_version.load(Ordering::Acquire),
        ))
    }

    fn segment_sources(st: &LogState) -> Result<Vec<SegmentSource>> {
        let active_base = *st.segments.keys().next_back().expect("segments");
        st.segments
            .values()
            .map(|seg| {
                Ok(SegmentSource {
                    base_offset: seg.base_offset(),
                    size: seg.size(),
                    active: seg.base_offset() == active_base,
                    log: seg.log_file()?,
                    log_path: seg.log_path().to_path_buf(),
                    offset_index_path: seg.offset_index_path().to_path_buf(),
                    time_index_path: seg.time_index_path().to_path_buf(),
                    txn_index_path: seg.txn_index_path().to_path_buf(),
                })
            })
            .collect()
    }

    /// Finishes a move between log dirs under the write lock: copies what was appended
    /// since the last pass, writes the leader epochs and producer state into the future
    /// dir, fsyncs it, renames it to `final_dir`, loads it, swaps it in, and renames the
    /// old dir to `delete_dir`. Offsets, the high watermark and producer state carry
    /// over; appends wait for the lock. Returns false without swapping when the log was
    /// truncated or compacted since the copies were taken (copy again).
    ///
    /// A crash before the first rename leaves the old log and an incomplete `-future`
    /// dir; after it, two complete and identical logs until the old one is renamed.
    pub(crate) fn swap_in_future(
        &self,
        future: &mut FutureLog,
        final_dir: &Path,
        delete_dir: &Path,
        crash: &dyn Fn(MoveStage) -> Result<()>,
    ) -> Result<bool> {
        let result = self.swap_in_future_unguarded(future, final_dir, delete_dir, crash);
        self.offline_on_io_error(result)
    }

    fn swap_in_future_unguarded(
        &self,
        future: &mut FutureLog,
        final_dir: &Path,
        delete_dir: &Path,
        crash: &dyn Fn(MoveStage) -> Result<()>,
    ) -> Result<bool> {
        self.check_open()?;
        let mut guard = self.write_state();
        self.check_open()?;
        if self.layout_version.load(Ordering::Acquire) != future.layout_version {
            return Ok(false);
        }
        let leo = self.log_end_offset();
        let st = &mut guard.0;
        let sources = Self::segment_sources(st)?;
        future.copy_pass(&sources, true)?;
        let epochs = st.dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        if epochs.exists() {
            let to = future.dir().join(LEADER_EPOCH_CHECKPOINT_FILE);
            std::fs::copy(&epochs, &to).at(&epochs)?;
            File::open(&to).and_then(|f| f.sync_all()).at(&to)?;
        }
        // A snapshot at the log end: the future log replays nothing on load.
        st.producer_state.advance_to(leo);
        st.producer_state.write_snapshot_to(future.dir())?;
        fsync_dir(future.dir())?;
        crash(MoveStage::FutureComplete)?;
        if !st.dir.exists() {
            // Deleted meanwhile (DeleteTopics renames before it marks the log closed).
            return Err(LogError::Closed(self.tp.to_string()));
        }
        std::fs::rename(future.dir(), final_dir).at(future.dir())?;
        fsync_dir(final_dir.parent().unwrap_or(Path::new(".")))?;
        crash(MoveStage::FutureRenamed)?;
        let loaded = match load_state(
            final_dir,
            st.config.clone(),
            leo,
            self.log_start_offset(),
            true,
            self.clock.now_ms(),
        ) {
            Ok(l) if l.leo_metadata.message_offset == leo => l,
            other => {
                // Keep the current log; the copy takes its `-future` name back and
                // goes with the failed move.
                let _ = std::fs::rename(final_dir, future.dir());
                return match other {
                    Err(e) => Err(e),
                    Ok(l) => Err(LogError::CorruptSegment {
                        path: final_dir.to_path_buf(),
                        reason: format!(
                            "the copy ends at offset {} instead of {leo}",
                            l.leo_metadata.message_offset
                        ),
                    }),
                };
            }
        };
        std::fs::rename(&st.dir, delete_dir).at(&st.dir)?;
        fsync_dir(st.dir.parent().unwrap_or(Path::new(".")))?;
        *st = loaded.state;
        *lock(&self.leo_metadata) = loaded.leo_metadata;
        // The old dir's `.deleted` segments went with it.
        lock(&self.pending_deletes).clear();
        self.recovery_point.fetch_max(leo, Ordering::AcqRel);
        self.unflushed_messages.store(0, Ordering::Release);
        Ok(true)
    }

    /// Marks the log closed and points it at its renamed directory (after the
    /// directory was renamed for deletion).
    pub(crate) fn mark_deleted(&self, new_dir: &Path) {
        self.closed.store(true, Ordering::Release);
        let mut guard = self.write_state();
        guard.0.dir = new_dir.to_path_buf();
        guard.0.epoch_cache.set_dir(new_dir);
    }
}
