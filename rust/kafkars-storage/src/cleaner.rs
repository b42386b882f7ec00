//! Log compaction (Kafka's LogCleaner, Cleaner and LogCleanerManager).
//!
//! For a log with `cleanup.policy=compact` the cleaner keeps the last record of every
//! key. One pass over a log:
//!
//! 1. picks the dirty section: from the cleaner checkpoint (or the log start) up to
//!    the first uncleanable offset, which is never past the active segment, the last
//!    stable offset (an open transaction may still abort), or the first segment younger
//!    than `min.compaction.lag.ms`;
//! 2. builds an [`OffsetMap`] of key → last offset over the dirty section, leaving out
//!    the records of aborted transactions;
//! 3. rewrites every inactive segment below the end of the map, in groups that fit one
//!    segment, keeping a record only if no later record has its key; tombstones are
//!    kept too unless their segment was already cleaned and has not been written for
//!    `delete.retention.ms`. Records of aborted transactions go; a transaction marker
//!    goes once its transaction has no records left and it is past the same horizon;
//!    each producer's last batch stays (empty if need be) so its sequence survives;
//! 4. writes each group as `.cleaned`, renames it `.swap`, renames the old segments
//!    `.deleted`, then gives the `.swap` files their final names. The loader removes a
//!    `.cleaned` and completes a `.swap`, so a crash at any step leaves a readable log.
//!
//! Offsets never change: batches are rebuilt with [`filter_records`], which keeps the
//! batch's base offset, last offset delta and the records' offset deltas.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, UNIX_EPOCH};

use kafkars_record::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch, filter_records};

use crate::checkpoint::fsync_dir;
use crate::error::{IoContext, LogError, Result};
use crate::log::{Log, SegmentSnapshot};
use crate::log_manager::LogManager;
use crate::offset_map::OffsetMap;
use crate::segment::{CLEANED_FILE_SUFFIX, LogSegment, SWAP_FILE_SUFFIX};
use crate::topic_partition::TopicPartition;

/// Environment variable naming a stage (`cleaned`, `swap` or `deleted`) after which the
/// broker process aborts: the end-to-end crash tests use it like a kill -9.
pub const CRASH_AT_ENV: &str = "KAFKARS_CLEANER_CRASH_AT";

/// The cleaner's broker settings (`log.cleaner.*`).
#[derive(Debug, Clone)]
pub struct CleanerConfig {
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`, shared by the threads.
    pub dedupe_buffer_size: usize,
    /// `log.cleaner.io.buffer.size`: read buffer per thread.
    pub io_buffer_size: usize,
    /// `log.cleaner.backoff.ms`: sleep when no log needs cleaning.
    pub backoff_ms: u64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            threads: 1,
            dedupe_buffer_size: 128 * 1024 * 1024,
            io_buffer_size: 512 * 1024,
            backoff_ms: 15_000,
        }
    }
}

/// The file stages of installing a cleaned segment, for crash injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanStage {
    /// The `.cleaned` files are written and flushed.
    Cleaned,
    /// They were renamed `.swap`.
    Swap,
    /// The replaced segments were renamed `.deleted`; the `.swap` is not yet final.
    Deleted,
}

impl CleanStage {
    /// Parses `cleaned`, `swap` or `deleted`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "cleaned" => Some(CleanStage::Cleaned),
            "swap" => Some(CleanStage::Swap),
            "deleted" => Some(CleanStage::Deleted),
            _ => None,
        }
    }
}

/// What one cleaning pass did (Kafka's CleanerStats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanerStats {
    /// The partition cleaned.
    pub topic_partition: Option<TopicPartition>,
    /// Where the dirty section started.
    pub first_dirty_offset: i64,
    /// Where cleaning stopped: the new cleaner checkpoint.
    pub end_offset: i64,
    /// Segments read and rewritten.
    pub segments_cleaned: usize,
    /// Bytes read from the old segments.
    pub bytes_read: u64,
    /// Bytes written to the cleaned segments.
    pub bytes_written: u64,
    /// Records read.
    pub records_read: u64,
    /// Records kept.
    pub records_retained: u64,
    /// Tombstones removed because their delete horizon had passed.
    pub tombstones_removed: u64,
    /// Records of aborted transactions removed.
    pub aborted_records_removed: u64,
    /// COMMIT/ABORT markers removed (their transactions had no records left).
    pub markers_removed: u64,
}

/// The aborted transactions of a log by producer: `(first offset, marker offset)`.
struct AbortedRanges(HashMap<i64, Vec<(i64, i64)>>);

impl AbortedRanges {
    fn of(log: &Log) -> Self {
        let mut map: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for txn in log.aborted_txns_below(i64::MAX) {
            map.entry(txn.producer_id)
                .or_default()
                .push((txn.first_offset, txn.last_offset));
        }
        Self(map)
    }

    /// Whether `batch` is data of a transaction that was aborted.
    fn contains(&self, batch: &RecordBatch<'_>) -> bool {
        if !batch.is_transactional() || batch.is_control() {
            return false;
        }
        let base = batch.base_offset();
        self.0.get(&batch.producer_id()).is_some_and(|ranges| {
            ranges
                .iter()
                .any(|(first, marker)| *first <= base && base < *marker)
        })
    }
}

/// A log chosen for cleaning, with its dirty section (Kafka's LogToClean).
#[derive(Debug)]
pub(crate) struct LogToClean {
    pub(crate) log: Arc<Log>,
    pub(crate) first_dirty_offset: i64,
    /// Inactive segments from the log start up to the first uncleanable offset.
    pub(crate) segments: Vec<SegmentSnapshot>,
    pub(crate) clean_bytes: u64,
    pub(crate) dirty_bytes: u64,
}

impl LogToClean {
    /// Dirty bytes over all cleanable bytes.
    pub(crate) fn cleanable_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }
}

/// Works out `log`'s dirty section from its cleaner checkpoint, or None when the log
/// is not compacted or nothing is cleanable. With `force` the dirty ratio and the
/// compaction lags are ignored (tests, tombstone passes).
pub(crate) fn log_to_clean(
    log: &Arc<Log>,
    checkpoint: Option<i64>,
    now_ms: i64,
    force: bool,
) -> Result<Option<LogToClean>> {
    let config = log.config();
    if !config.compacted {
        return Ok(None);
    }
    let start = log.log_start_offset();
    // Past the last stable offset a transaction may still abort.
    let stable = log.last_stable_offset();
    let first_dirty = match checkpoint {
        // A checkpoint outside the log (truncation, DeleteRecords) is reset, as Kafka does.
        Some(cp) if cp >= start && cp <= log.log_end_offset() => cp,
        _ => start,
    };
    let mut segments = Vec::new();
    let (mut clean_bytes, mut dirty_bytes) = (0u64, 0u64);
    let mut must_clean = false;
    for seg in log.inactive_segments()? {
        if seg.next_base_offset <= start {
            continue; // wholly below the log start: retention removes it
        }
        if seg.next_base_offset <= first_dirty {
            clean_bytes += u64::from(seg.size);
            segments.push(seg);
            continue;
        }
        // The dirty section ends at the last stable offset and at the first segment
        // younger than min.compaction.lag.ms.
        if seg.next_base_offset > stable
            || (!force
                && now_ms.saturating_sub(seg.largest_timestamp) < config.min_compaction_lag_ms)
        {
            break;
        }
        if now_ms.saturating_sub(seg.largest_timestamp) > config.max_compaction_lag_ms {
            must_clean = true;
        }
        dirty_bytes += u64::from(seg.size);
        segments.push(seg);
    }
    let candidate = LogToClean {
        log: Arc::clone(log),
        first_dirty_offset: first_dirty,
        segments,
        clean_bytes,
        dirty_bytes,
    };
    if candidate.dirty_bytes == 0 && !force {
        return Ok(None);
    }
    if candidate.segments.is_empty() {
        return Ok(None);
    }
    if force || must_clean || candidate.cleanable_ratio() >= config.min_cleanable_dirty_ratio {
        Ok(Some(candidate))
    } else {
        Ok(None)
    }
}

/// Calls `f` with every whole batch of a segment file, reading `buf_size` at a time.
/// A torn tail (shorter than its batch length) ends the walk.
fn for_each_batch(
    file: &File,
    path: &Path,
    size: u32,
    buf_size: usize,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let end = u64::from(size);
    let mut buf = vec![0u8; buf_size.max(RECORD_BATCH_OVERHEAD)];
    let mut pos = 0u64;
    let batch_len = |b: &[u8]| -> Result<usize> {
        let n = i32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        let len = usize::try_from(n).unwrap_or(0) + LOG_OVERHEAD;
        if len < RECORD_BATCH_OVERHEAD {
            return Err(LogError::CorruptSegment {
                path: path.to_path_buf(),
                reason: format!("batch length {n} is too small"),
            });
        }
        Ok(len)
    };
    while pos + LOG_OVERHEAD as u64 <= end {
        let want = (buf.len() as u64).min(end - pos) as usize;
        file.read_exact_at(&mut buf[..want], pos).at(path)?;
        let mut off = 0;
        while off + LOG_OVERHEAD <= want {
            let len = batch_len(&buf[off..])?;
            if off + len > want {
                break;
            }
            f(&buf[off..off + len])?;
            off += len;
        }
        if off == 0 {
            // The first batch does not fit: grow the buffer, unless the file ends first.
            let len = batch_len(&buf)?;
            if pos + len as u64 > end {
                break;
            }
            buf.resize(len, 0);
            continue;
        }
        pos += off as u64;
    }
    Ok(pos)
}

/// Groups consecutive segments so each group fits one segment: at most
/// `segment.bytes`, and offsets relative to the first base fit 32 bits (Kafka's
/// groupSegmentsBySize).
fn group_segments_by_size(segments: &[SegmentSnapshot], max_size: u32) -> Vec<&[SegmentSnapshot]> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        let first = &segments[i];
        let mut size = u64::from(first.size);
        let mut j = i + 1;
        while j < segments.len() {
            let s = &segments[j];
            if size + u64::from(s.size) > u64::from(max_size)
                || s.next_base_offset - 1 - first.base_offset > i64::from(i32::MAX)
            {
                break;
            }
            size += u64::from(s.size);
            j += 1;
        }
        groups.push(&segments[i..j]);
        i = j;
    }
    groups
}

/// Cleans `target` once. `crash` is called after each file stage (it aborts the process
/// or makes the pass fail, in tests). Returns the stats; `end_offset` is the new cleaner
/// checkpoint.
pub(crate) fn clean(
    target: &LogToClean,
    map: &mut OffsetMap,
    io_buffer_size: usize,
    now_ms: i64,
    crash: &dyn Fn(CleanStage) -> Result<()>,
) -> Result<CleanerStats> {
    let log = &target.log;
    let config = log.config();
    let first_dirty = target.first_dirty_offset;
    let mut stats = CleanerStats {
        topic_partition: Some(log.topic_partition().clone()),
        first_dirty_offset: first_dirty,
        ..CleanerStats::default()
    };

    let aborted = AbortedRanges::of(log);
    let producer_last = log.producer_last_offsets();

    // 1. The offset map over the dirty section, whole segments at a time.
    map.clear();
    let mut end_offset = first_dirty;
    for seg in target
        .segments
        .iter()
        .filter(|s| s.next_base_offset > first_dirty)
    {
        if map.is_full() {
            break;
        }
        for_each_batch(&seg.file, &seg.path, seg.size, io_buffer_size, |bytes| {
            let batch = RecordBatch::new(bytes)?;
            if batch.is_control() || batch.last_offset() < first_dirty || aborted.contains(&batch) {
                return Ok(());
            }
            for record in batch.records()?.iter() {
                let record = record?;
                if record.offset >= first_dirty
                    && let Some(key) = record.key
                {
                    map.put(key, record.offset);
                }
            }
            Ok(())
        })?;
        end_offset = seg.next_base_offset;
    }
    stats.end_offset = end_offset;

    // 2. Rewrite every segment below the end offset, a group at a time.
    let to_clean: Vec<SegmentSnapshot> = target
        .segments
        .iter()
        .filter(|s| s.next_base_offset <= end_offset)
        .cloned()
        .collect();
    if to_clean.is_empty() {
        return Ok(stats);
    }
    // Tombstones in segments cleaned before (below the first dirty offset) that have not
    // been written to for delete.retention.ms are past their delete horizon.
    let horizon = now_ms.saturating_sub(config.delete_retention_ms);
    let dir = log.dir();
    // Per producer: whether its current transaction kept any record in this pass.
    let mut txn_retained: HashMap<i64, bool> = HashMap::new();
    for group in group_segments_by_size(&to_clean, config.segment_bytes) {
        let base = group[0].base_offset;
        let mut cleaned = LogSegment::create_with_suffix(
            &dir,
            base,
            CLEANED_FILE_SUFFIX,
            config.max_index_size,
            config.index_interval_bytes,
            0,
            now_ms,
        )?;
        for seg in group {
            let drop_tombstones =
                seg.next_base_offset <= first_dirty && seg.last_modified_ms < horizon;
            let read = for_each_batch(&seg.file, &seg.path, seg.size, io_buffer_size, |bytes| {
                let batch = RecordBatch::new(bytes)?;
                let producer_id = batch.producer_id();
                let last_of_producer = producer_id >= 0
                    && producer_last.get(&producer_id) == Some(&batch.last_offset());
                if batch.is_control() {
                    let retained = txn_retained.remove(&producer_id).unwrap_or(false);
                    if drop_tombstones && !retained && !last_of_producer {
                        stats.markers_removed += 1;
                        return Ok(());
                    }
                    cleaned.append(
                        batch.last_offset(),
                        batch.max_timestamp(),
                        batch.last_offset(),
                        bytes,
                    )?;
                    return Ok(());
                }
                let mut keep_all = true;
                let mut kept = 0u64;
                let mut removed_tombstones = 0u64;
                let mut total = 0u64;
                let aborted_batch = aborted.contains(&batch);
                let retain =
                    |offset: i64, key: Option<&[u8]>, value: Option<&[u8]>| -> (bool, bool) {
                        if aborted_batch {
                            return (false, false);
                        }
                        let Some(key) = key else {
                            return (false, false);
                        };
                        if map.get(key).is_some_and(|latest| offset < latest) {
                            return (false, false);
                        }
                        if value.is_none() && drop_tombstones {
                            return (false, true);
                        }
                        (true, false)
                    };
                for record in batch.records()?.iter() {
                    let record = record?;
                    total += 1;
                    let (keep, tombstone) = retain(record.offset, record.key, record.value);
                    if keep {
                        kept += 1;
                    } else {
                        keep_all = false;
                        removed_tombstones += u64::from(tombstone);
                    }
                }
                stats.records_read += total;
                stats.records_retained += kept;
                stats.tombstones_removed += removed_tombstones;
                if aborted_batch {
                    stats.aborted_records_removed += total;
                }
                if batch.is_transactional() {
                    *txn_retained.entry(producer_id).or_insert(false) |= kept > 0;
                }
                if keep_all {
                    cleaned.append(
                        batch.last_offset(),
                        batch.max_timestamp(),
                        batch.last_offset(),
                        bytes,
                    )?;
                } else if kept > 0 || last_of_producer {
                    // An empty batch still carries the producer's last sequence.
                    let filtered = filter_records(&batch, |r| retain(r.offset, r.key, r.value).0)?;
                    cleaned.append(
                        batch.last_offset(),
                        batch.max_timestamp(),
                        batch.last_offset(),
                        &filtered,
                    )?;
                }
                Ok(())
            })?;
            stats.bytes_read += read;
            stats.segments_cleaned += 1;
        }
        stats.bytes_written += u64::from(cleaned.size());
        cleaned.on_became_inactive_segment()?;
        cleaned.flush()?;
        // Keep the last replaced segment's modification time: the delete horizon of the
        // tombstones it holds is measured from it (Kafka does the same).
        let modified = group.last().map_or(now_ms, |s| s.last_modified_ms).max(0);
        cleaned
            .log_file()?
            .set_modified(UNIX_EPOCH + Duration::from_millis(modified as u64))
            .at(cleaned.log_path())?;
        crash(CleanStage::Cleaned)?;
        cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)?;
        fsync_dir(&dir)?;
        crash(CleanStage::Swap)?;
        let bases: Vec<i64> = group.iter().map(|s| s.base_offset).collect();
        let replaced = log.replace_segments(cleaned, &bases, || crash(CleanStage::Deleted))?;
        fsync_dir(&dir)?;
        if !replaced {
            // Retention removed a segment meanwhile; the next pass starts over.
            tracing::info!(partition = %log.topic_partition(), "cleaning aborted: segments changed");
            stats.end_offset = first_dirty;
            return Ok(stats);
        }
    }
    Ok(stats)
}

/// The crash hook from [`CRASH_AT_ENV`]: aborts the process after the named stage.
pub(crate) fn env_crash_hook() -> impl Fn(CleanStage) -> Result<()> {
    let at = std::env::var(CRASH_AT_ENV)
        .ok()
        .and_then(|s| CleanStage::from_name(&s));
    move |stage| {
        if at == Some(stage) {
            tracing::error!(?stage, "{CRASH_AT_ENV}: aborting the process");
            std::process::abort();
        }
        Ok(())
    }
}

/// The cleaner threads (Kafka's LogCleaner with its CleanerThreads).
#[derive(Debug)]
pub(crate) struct CleanerThreads {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handles: Vec<JoinHandle<()>>,
}

impl CleanerThreads {
    /// Starts `config.threads` threads that clean the dirtiest log, or sleep
    /// `log.cleaner.backoff.ms` when none needs it.
    pub(crate) fn start(manager: Weak<LogManager>, config: CleanerConfig) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let threads = config.threads.max(1);
        let handles = (0..threads)
            .map(|i| {
                let manager = manager.clone();
                let stop = Arc::clone(&stop);
                let config = config.clone();
                std::thread::Builder::new()
                    .name(format!("kafka-log-cleaner-thread-{i}"))
                    .spawn(move || {
                        let mut map = OffsetMap::new(config.dedupe_buffer_size / threads);
                        let crash = env_crash_hook();
                        loop {
                            if *stop.0.lock().unwrap_or_else(|e| e.into_inner()) {
                                break;
                            }
                            let Some(m) = manager.upgrade() else { break };
                            let cleaned = match m.clean_once(
                                &mut map,
                                config.io_buffer_size,
                                false,
                                &crash,
                            ) {
                                Ok(stats) => stats.is_some(),
                                Err(e) => {
                                    tracing::warn!(error = %e, "log cleaning failed");
                                    false
                                }
                            };
                            drop(m);
                            if !cleaned {
                                let guard = stop.0.lock().unwrap_or_else(|e| e.into_inner());
                                if *guard {
                                    break;
                                }
                                let _ = stop
                                    .1
                                    .wait_timeout(guard, Duration::from_millis(config.backoff_ms));
                            }
                        }
                    })
                    .expect("spawn a cleaner thread")
            })
            .collect();
        CleanerThreads { stop, handles }
    }

    /// Stops the threads after their current pass.
    pub(crate) fn shutdown(self) {
        *self.stop.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.1.notify_all();
        for h in self.handles {
            let _ = h.join();
        }
    }
}
