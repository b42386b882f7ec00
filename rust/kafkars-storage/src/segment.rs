//! One segment of a partition (Kafka's LogSegment): the `.log` file of record batches
//! and its `.index` / `.timeindex`, named by the 20-digit base offset.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, IoSlice, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::UNIX_EPOCH;

use kafkars_record::{
    ControlRecordType, EndTransactionMarker, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch,
    control_record_type, end_transaction_marker,
};

use crate::error::{IoContext, LogError, Result};
use crate::fetch::{FetchDataInfo, FileSlice, LogOffsetMetadata};
use crate::offset_index::{OFFSET_INDEX_ENTRY_SIZE, OffsetIndex, OffsetPosition};
use crate::producer_state::ProducerBatch;
use crate::time_index::{NO_TIMESTAMP, TIME_INDEX_ENTRY_SIZE, TimeIndex, TimestampOffset};
use crate::transaction_index::TXN_INDEX_FILE_SUFFIX;

/// Suffix of segment data files.
pub const LOG_FILE_SUFFIX: &str = ".log";
/// Suffix of offset index files.
pub const INDEX_FILE_SUFFIX: &str = ".index";
/// Suffix of time index files.
pub const TIME_INDEX_FILE_SUFFIX: &str = ".timeindex";
/// Added to files of a segment waiting for asynchronous deletion.
pub const DELETED_FILE_SUFFIX: &str = ".deleted";
/// Added to files written by the log cleaner before they are swapped in.
pub const CLEANED_FILE_SUFFIX: &str = ".cleaned";
/// Added to cleaned files about to replace the originals.
pub const SWAP_FILE_SUFFIX: &str = ".swap";

/// The smallest batchLength a magic v2 batch can have.
const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;

/// Writes every byte of `slices` at `position` with pwritev, resuming after short writes.
fn write_all_vectored_at(file: &File, slices: &[IoSlice<'_>], position: u64) -> io::Result<()> {
    // pwritev takes at most IOV_MAX (1024) slices.
    const MAX_SLICES: usize = 1024;
    let mut owned: Vec<IoSlice<'_>> = slices.iter().filter(|s| !s.is_empty()).copied().collect();
    let mut rest: &mut [IoSlice<'_>] = &mut owned;
    let mut at = position;
    while !rest.is_empty() {
        let n = rest.len().min(MAX_SLICES);
        match rustix::io::pwritev(file, &rest[..n], at) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => {
                at += written as u64;
                IoSlice::advance_slices(&mut rest, written);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `<20-digit base offset><suffix>`, Kafka's segment file naming.
pub fn segment_file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

/// Attributes bit of control batches (transaction markers).
const CONTROL_ATTRIBUTE: i16 = 0x20;
/// Attributes bit of transactional batches.
const TRANSACTIONAL_ATTRIBUTE: i16 = 0x10;

/// The header fields of a batch, read without its records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchHeader {
    pub(crate) size: u32,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
    /// The producer fields, for batches written by an idempotent producer.
    pub(crate) producer: Option<ProducerBatch>,
}

impl BatchHeader {
    /// Parses the first [`RECORD_BATCH_OVERHEAD`] bytes of a batch; `None` when they
    /// cannot start a magic v2 batch.
    fn parse(h: &[u8; RECORD_BATCH_OVERHEAD]) -> Option<Self> {
        let base_offset = i64::from_be_bytes(h[0..8].try_into().ok()?);
        let length = i32::from_be_bytes(h[8..12].try_into().ok()?);
        if length < MIN_BATCH_LENGTH || h[16] != 2 {
            return None;
        }
        let last_offset_delta = i32::from_be_bytes(h[23..27].try_into().ok()?);
        let max_timestamp = i64::from_be_bytes(h[35..43].try_into().ok()?);
        let last_offset = base_offset.checked_add(i64::from(last_offset_delta))?;
        let producer_id = i64::from_be_bytes(h[43..51].try_into().ok()?);
        let attributes = i16::from_be_bytes([h[21], h[22]]);
        let producer = (producer_id >= 0).then(|| ProducerBatch {
            producer_id,
            producer_epoch: i16::from_be_bytes([h[51], h[52]]),
            base_sequence: i32::from_be_bytes([h[53], h[54], h[55], h[56]]),
            last_offset_delta,
            last_offset,
            max_timestamp,
            is_transactional: attributes & TRANSACTIONAL_ATTRIBUTE != 0,
            is_control: attributes & CONTROL_ATTRIBUTE != 0,
        });
        Some(BatchHeader {
            size: u32::try_from(length)
                .ok()?
                .checked_add(LOG_OVERHEAD as u32)?,
            last_offset,
            max_timestamp,
            producer,
        })
    }
}

/// The COMMIT or ABORT marker of a control batch (`None` for other batches, and for
/// control records of other types).
pub(crate) fn end_txn_marker(batch: &RecordBatch<'_>) -> Result<Option<EndTransactionMarker>> {
    Ok(match control_record_type(batch)? {
        Some(ControlRecordType::Commit | ControlRecordType::Abort) => {
            Some(end_transaction_marker(batch)?)
        }
        _ => None,
    })
}

/// An offset found in the `.log` and the batch that holds it (Kafka's LogOffsetPosition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetPosition {
    /// The offset that was searched for.
    pub offset: i64,
    /// Position of the batch holding it.
    pub position: u32,
    /// Size of that batch.
    pub size: u32,
}

/// A record found by timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAndOffset {
    /// The record's timestamp.
    pub timestamp: i64,
    /// The record's offset.
    pub offset: i64,
    /// partitionLeaderEpoch of its batch, when set.
    pub leader_epoch: Option<i32>,
}

/// What [`LogSegment::recover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// Bytes of valid batches kept.
    pub valid_bytes: u64,
    /// Bytes cut off the end.
    pub truncated_bytes: u64,
    /// The offset after the last valid batch, if any.
    pub next_offset: Option<i64>,
    /// Bytes read and validated (from where the flushed prefix ends, when it was known).
    pub scanned_bytes: u64,
    /// `(partitionLeaderEpoch, baseOffset)` of each valid batch where the epoch changes.
    pub epoch_starts: Vec<(i32, i64)>,
}

/// Inputs to [`LogSegment::should_roll`] (Kafka's RollParams).
#[derive(Debug, Clone, Copy)]
pub struct RollParams {
    /// `segment.bytes`.
    pub max_segment_bytes: u32,
    /// `segment.ms`.
    pub max_segment_ms: i64,
    /// Largest timestamp in the append.
    pub max_timestamp_in_messages: i64,
    /// Last offset in the append.
    pub max_offset_in_messages: i64,
    /// Size of the append.
    pub messages_size: u32,
    /// Current time.
    pub now_ms: i64,
}

/// A lazily opened index: opened on first use so that start-up after a clean shutdown
/// maps nothing (Kafka's LazyIndex).
type LazyIndex<T> = Mutex<Option<T>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One segment: `.log`, `.index`, `.timeindex`.
#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log_path: PathBuf,
    offset_index_path: PathBuf,
    time_index_path: PathBuf,
    /// The `.txnindex` (aborted transactions); its entries live in the log's state.
    txn_index_path: PathBuf,
    /// Opened on first use; shared with file slices handed to the network layer.
    log_file: OnceLock<Arc<File>>,
    size: u32,
    offset_index: LazyIndex<OffsetIndex>,
    time_index: LazyIndex<TimeIndex>,
    max_index_size: usize,
    index_interval_bytes: u32,
    bytes_since_last_index_entry: u32,
    roll_jitter_ms: i64,
    created_ms: i64,
    /// Max timestamp of the first batch, the reference point for time-based rolling.
    rolling_based_timestamp: Option<i64>,
    /// Largest timestamp and the offset of its batch, loaded lazily from the time index.
    max_timestamp_so_far: Mutex<Option<TimestampOffset>>,
    /// The size the indexes grow to before the next append (set on the segment that is
    /// active at load; see `resize_indexes_before_append`).
    grow_indexes_to: Option<usize>,
    /// The `.log` file's length while it is preallocated (`preallocate`), 0 otherwise:
    /// the file is longer than the data until a roll or close trims it.
    preallocated_len: u64,
    /// How far past the data the background preallocator was asked to prepare.
    prepared_to: u64,
}

impl LogSegment {
    /// Creates a new, empty segment in `dir` (replacing stale files of the same name).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        max_index_size: usize,
        index_interval_bytes: u32,
        roll_jitter_ms: i64,
        now_ms: i64,
    ) -> Result<Self> {
        Self::create_with_suffix(
            dir,
            base_offset,
            "",
            max_index_size,
            index_interval_bytes,
            roll_jitter_ms,
            now_ms,
        )
    }

    /// [`create`](Self::create) with `suffix` after every file name (the cleaner writes
    /// `.cleaned` segments this way).
    pub fn create_with_suffix(
        dir: &Path,
        base_offset: i64,
        suffix: &str,
        max_index_size: usize,
        index_interval_bytes: u32,
        roll_jitter_ms: i64,
        now_ms: i64,
    ) -> Result<Self> {
        let mut seg = Self::with_paths(
            dir,
            base_offset,
            suffix,
            max_index_size,
            index_interval_bytes,
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&seg.log_path)
            .at(&seg.log_path)?;
        for p in [
            &seg.offset_index_path,
            &seg.time_index_path,
            &seg.txn_index_path,
        ] {
            match fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LogError::io(p, e));
                }
                _ => {}
            }
        }
        let _ = seg.log_file.set(Arc::new(file));
        *seg.offset_index
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(OffsetIndex::open(
            &seg.offset_index_path,
            base_offset,
            max_index_size,
        )?);
        *seg.time_index.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(TimeIndex::open(
            &seg.time_index_path,
            base_offset,
            max_index_size,
        )?);
        seg.roll_jitter_ms = roll_jitter_ms;
        seg.created_ms = now_ms;
        *seg.max_timestamp_so_far
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: base_offset,
        });
        Ok(seg)
    }

    /// Opens an existing segment without reading it: only the `.log` size is taken
    /// (a stat). `suffix` is appended to every file name (e.g. `.swap`).
    pub fn open(
        dir: &Path,
        base_offset: i64,
        suffix: &str,
        max_index_size: usize,
        index_interval_bytes: u32,
    ) -> Result<Self> {
        let mut seg = Self::with_paths(
            dir,
            base_offset,
            suffix,
            max_index_size,
            index_interval_bytes,
        );
        let meta = fs::metadata(&seg.log_path).at(&seg.log_path)?;
        seg.size = u32::try_from(meta.len()).map_err(|_| LogError::CorruptSegment {
            path: seg.log_path.clone(),
            reason: format!("{} bytes is larger than a segment can be", meta.len()),
        })?;
        seg.created_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        Ok(seg)
    }

    fn with_paths(
        dir: &Path,
        base_offset: i64,
        suffix: &str,
        max_index_size: usize,
        index_interval_bytes: u32,
    ) -> Self {
        let path = |s: &str| dir.join(format!("{}{suffix}", segment_file_name(base_offset, s)));
        LogSegment {
            base_offset,
            log_path: path(LOG_FILE_SUFFIX),
            offset_index_path: path(INDEX_FILE_SUFFIX),
            time_index_path: path(TIME_INDEX_FILE_SUFFIX),
            txn_index_path: path(TXN_INDEX_FILE_SUFFIX),
            log_file: OnceLock::new(),
            size: 0,
            offset_index: Mutex::new(None),
            time_index: Mutex::new(None),
            max_index_size,
            index_interval_bytes,
            bytes_since_last_index_entry: 0,
            roll_jitter_ms: 0,
            created_ms: 0,
            rolling_based_timestamp: None,
            grow_indexes_to: None,
            max_timestamp_so_far: Mutex::new(None),
            preallocated_len: 0,
            prepared_to: 0,
        }
    }

    /// Kafka's `preallocate`: gives the new, empty `.log` file its full `len` up front
    /// (a sparse length, as Kafka's `setLength`); the data's size stays what was
    /// appended, and a roll or close trims the file back to it. Appends then have a
    /// background thread allocate blocks and page cache a little ahead of them.
    pub fn preallocate(&mut self, len: u32) -> Result<()> {
        if self.size > 0 || len == 0 {
            return Ok(());
        }
        self.log_file()?
            .set_len(u64::from(len))
            .at(&self.log_path)?;
        self.preallocated_len = u64::from(len);
        // Nothing is prepared before the first append: an idle partition holds nothing.
        self.prepared_to = 0;
        Ok(())
    }

    /// Whether the `.log` file is longer than its data (preallocated, not yet trimmed).
    pub fn is_preallocated(&self) -> bool {
        self.preallocated_len > 0
    }

    /// Trims a preallocated `.log` file to its data (Kafka's FileRecords.trim).
    fn trim(&mut self) -> Result<()> {
        if self.preallocated_len > 0 {
            self.log_file()?
                .set_len(u64::from(self.size))
                .at(&self.log_path)?;
            self.preallocated_len = 0;
        }
        Ok(())
    }

    /// Asks the preallocator for the region past the data when the writer comes within
    /// the look-ahead of what it already prepared.
    fn prepare_ahead(&mut self) {
        let Some(file) = self.log_file.get() else {
            return;
        };
        let size = u64::from(self.size);
        let ahead = size.clamp(crate::preallocate::AHEAD_MIN, crate::preallocate::AHEAD_MAX);
        if size + ahead <= self.prepared_to {
            return;
        }
        let from = self.prepared_to.max(size);
        let to = (size + 2 * ahead).min(self.preallocated_len);
        crate::preallocate::prepare_in_background(file, from, to);
        self.prepared_to = to.max(self.prepared_to);
    }

    /// First offset this segment may hold.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Size of the `.log` in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Path of the `.log` file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Path of the `.index` file.
    pub fn offset_index_path(&self) -> &Path {
        &self.offset_index_path
    }

    /// Path of the `.timeindex` file.
    pub fn time_index_path(&self) -> &Path {
        &self.time_index_path
    }

    /// Path of the `.txnindex` file.
    pub fn txn_index_path(&self) -> &Path {
        &self.txn_index_path
    }

    /// The open `.log` file (opened on first use).
    pub fn log_file(&self) -> Result<Arc<File>> {
        if let Some(f) = self.log_file.get() {
            return Ok(Arc::clone(f));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.log_path)
            .at(&self.log_path)?;
        // Two threads may race here; one file wins and the other is closed.
        let _ = self.log_file.set(Arc::new(file));
        Ok(Arc::clone(self.log_file.get().expect("just set")))
    }

    /// The offset index, opened (and if corrupt, rebuilt from the `.log`) on first use.
    pub fn offset_index(&self) -> Result<MutexGuard<'_, Option<OffsetIndex>>> {
        let mut guard = lock(&self.offset_index);
        if guard.is_none() {
            *guard = Some(self.load_offset_index()?);
        }
        Ok(guard)
    }

    /// The time index, opened (and if corrupt, rebuilt) on first use.
    pub fn time_index(&self) -> Result<MutexGuard<'_, Option<TimeIndex>>> {
        let mut guard = lock(&self.time_index);
        if guard.is_none() {
            *guard = Some(self.load_time_index()?);
        }
        Ok(guard)
    }

    fn load_offset_index(&self) -> Result<OffsetIndex> {
        let opened = OffsetIndex::open(
            &self.offset_index_path,
            self.base_offset,
            self.max_index_size,
        )
        .and_then(|idx| idx.sanity_check(u64::from(self.size)).map(|()| idx));
        match opened {
            Ok(idx) => Ok(idx),
            Err(e @ LogError::Io { .. }) => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "rebuilding offset index");
                let _ = fs::remove_file(&self.offset_index_path);
                let mut idx = OffsetIndex::open(
                    &self.offset_index_path,
                    self.base_offset,
                    self.max_index_size,
                )?;
                self.scan_headers(0, |h, pos, last_entry| {
                    if pos - *last_entry > self.index_interval_bytes {
                        idx.append(h.last_offset, pos)?;
                        *last_entry = pos;
                    }
                    Ok(true)
                })?;
                idx.trim_to_valid_size()?;
                Ok(idx)
            }
        }
    }

    fn load_time_index(&self) -> Result<TimeIndex> {
        let opened = TimeIndex::open(&self.time_index_path, self.base_offset, self.max_index_size)
            .and_then(|idx| idx.sanity_check().map(|()| idx));
        match opened {
            Ok(idx) => Ok(idx),
            Err(e @ LogError::Io { .. }) => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "rebuilding time index");
                let _ = fs::remove_file(&self.time_index_path);
                let mut idx =
                    TimeIndex::open(&self.time_index_path, self.base_offset, self.max_index_size)?;
                let mut max = TimestampOffset {
                    timestamp: NO_TIMESTAMP,
                    offset: self.base_offset,
                };
                self.scan_headers(0, |h, pos, last_entry| {
                    if h.max_timestamp > max.timestamp {
                        max = TimestampOffset {
                            timestamp: h.max_timestamp,
                            offset: h.last_offset,
                        };
                    }
                    if pos - *last_entry > self.index_interval_bytes {
                        idx.maybe_append(max.timestamp, max.offset, false)?;
                        *last_entry = pos;
                    }
                    Ok(true)
                })?;
                idx.maybe_append(max.timestamp, max.offset, true)?;
                idx.trim_to_valid_size()?;
                Ok(idx)
            }
        }
    }

    /// The producer fields of the batches ending at or after `from`, in log order
    /// (replayed into the producer state on load).
    /// Control batches (markers) are read whole to pass their type and coordinator
    /// epoch.
    pub(crate) fn producer_batches(
        &self,
        from: i64,
        mut f: impl FnMut(&ProducerBatch, Option<EndTransactionMarker>) -> Result<()>,
    ) -> Result<()> {
        let file = self.log_file()?;
        self.scan_headers(0, |h, pos, _| {
            if h.last_offset >= from
                && let Some(p) = &h.producer
            {
                let control = if p.is_control {
                    let mut buf = vec![0u8; h.size as usize];
                    file.read_exact_at(&mut buf, u64::from(pos))
                        .at(&self.log_path)?;
                    end_txn_marker(&RecordBatch::new(&buf)?)?
                } else {
                    None
                };
                f(p, control)?;
            }
            Ok(true)
        })
    }

    /// Calls `f(header, position, scratch)` for each batch header from `position` to
    /// the end of the `.log`, reading headers only, until `f` returns false. An
    /// incomplete batch at the end stops the scan; an impossible header is an error.
    fn scan_headers(
        &self,
        position: u32,
        mut f: impl FnMut(&BatchHeader, u32, &mut u32) -> Result<bool>,
    ) -> Result<()> {
        let file = self.log_file()?;
        let mut pos = position;
        let mut scratch = 0u32;
        let mut buf = [0u8; RECORD_BATCH_OVERHEAD];
        while u64::from(pos) + RECORD_BATCH_OVERHEAD as u64 <= u64::from(self.size) {
            file.read_exact_at(&mut buf, u64::from(pos))
                .at(&self.log_path)?;
            let Some(h) = BatchHeader::parse(&buf) else {
                return Err(LogError::CorruptSegment {
                    path: self.log_path.clone(),
                    reason: format!("no valid batch header at position {pos}"),
                });
            };
            if u64::from(pos) + u64::from(h.size) > u64::from(self.size) {
                break;
            }
            if !f(&h, pos, &mut scratch)? {
                break;
            }
            pos += h.size;
        }
        Ok(())
    }

    /// Largest timestamp and its batch's offset (loaded from the time index and the
    /// batches after its last entry on first use).
    fn max_timestamp_and_offset(&self) -> Result<TimestampOffset> {
        let mut guard = lock(&self.max_timestamp_so_far);
        if let Some(v) = *guard {
            return Ok(v);
        }
        let last = self.time_index()?.as_ref().expect("loaded").last_entry();
        let from = self
            .offset_index()?
            .as_ref()
            .expect("loaded")
            .lookup(last.offset)
            .position;
        let mut max = last;
        self.scan_headers(from, |h, _, _| {
            if h.max_timestamp > max.timestamp {
                max = TimestampOffset {
                    timestamp: h.max_timestamp,
                    offset: h.last_offset,
                };
            }
            Ok(true)
        })?;
        *guard = Some(max);
        Ok(max)
    }

    /// The largest record timestamp in the segment, or the file's modification time
    /// when no record has a timestamp (what time-based retention compares).
    pub fn largest_timestamp(&self) -> Result<i64> {
        let ts = self.max_timestamp_and_offset()?.timestamp;
        if ts >= 0 {
            Ok(ts)
        } else {
            Ok(self.last_modified_ms())
        }
    }

    /// Modification time of the `.log` in milliseconds.
    pub fn last_modified_ms(&self) -> i64 {
        fs::metadata(&self.log_path)
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// Appends already validated batches with assigned offsets, adding index entries
    /// when more than `index.interval.bytes` were written since the last one.
    pub fn append(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        records: &[u8],
    ) -> Result<()> {
        self.append_slices(
            largest_offset,
            largest_timestamp,
            shallow_offset_of_max_timestamp,
            &[IoSlice::new(records)],
        )
    }

    /// [`append`](Self::append) of batches given as slices written in order with one
    /// vectored write: a leader's patched headers between the request's record bytes.
    pub fn append_slices(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        slices: &[IoSlice<'_>],
    ) -> Result<()> {
        let total: usize = slices.iter().map(|s| s.len()).sum();
        if total == 0 {
            return Ok(());
        }
        self.grow_pending_indexes()?;
        if !self.can_convert_to_relative_offset(largest_offset) {
            return Err(LogError::InvalidOffset(format!(
                "offset {largest_offset} does not fit segment {} (32-bit relative offsets)",
                self.base_offset
            )));
        }
        let len = u32::try_from(total)
            .ok()
            .filter(|l| {
                self.size
                    .checked_add(*l)
                    .is_some_and(|s| s <= i32::MAX as u32)
            })
            .ok_or_else(|| {
                LogError::InvalidOffset(format!(
                    "append of {total} bytes would make segment {} larger than 2 GiB",
                    self.base_offset
                ))
            })?;
        let position = self.size;
        let file = self.log_file()?;
        write_all_vectored_at(&file, slices, u64::from(position)).at(&self.log_path)?;
        self.size += len;
        if self.preallocated_len > 0 {
            self.prepare_ahead();
        }
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp);
        }
        let mut max = self.max_timestamp_and_offset()?;
        if largest_timestamp > max.timestamp {
            max = TimestampOffset {
                timestamp: largest_timestamp,
                offset: shallow_offset_of_max_timestamp,
            };
            *lock(&self.max_timestamp_so_far) = Some(max);
        }
        if self.bytes_since_last_index_entry > self.index_interval_bytes {
            self.offset_index()?
                .as_mut()
                .expect("loaded")
                .append(largest_offset, position)?;
            self.time_index()?.as_mut().expect("loaded").maybe_append(
                max.timestamp,
                max.offset,
                false,
            )?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += len;
        Ok(())
    }

    /// Whether `offset` fits this segment's 32-bit relative offsets.
    pub fn can_convert_to_relative_offset(&self, offset: i64) -> bool {
        offset
            .checked_sub(self.base_offset)
            .is_some_and(|r| (0..=i64::from(i32::MAX)).contains(&r))
    }

    /// Finds the batch holding `offset` (or the first one after it): an index lookup,
    /// then a forward scan of batch headers from `starting_position` at the earliest.
    /// `None` when the segment has nothing at or after `offset`.
    pub fn translate_offset(
        &self,
        offset: i64,
        starting_position: u32,
    ) -> Result<Option<LogOffsetPosition>> {
        let from = self
            .offset_index()?
            .as_ref()
            .expect("loaded")
            .lookup(offset)
            .position;
        let mut found = None;
        self.scan_headers(from.max(starting_position), |h, pos, _| {
            if h.last_offset >= offset {
                found = Some(LogOffsetPosition {
                    offset,
                    position: pos,
                    size: h.size,
                });
                return Ok(false);
            }
            Ok(true)
        })?;
        Ok(found)
    }

    /// Reads from the batch holding `start_offset` up to `max_size` bytes (at least
    /// its first batch when `min_one_message`), not past byte `max_position`.
    /// `None` when the segment holds nothing at or after `start_offset`.
    pub fn read(
        &self,
        start_offset: i64,
        max_size: u32,
        max_position: u32,
        min_one_message: bool,
    ) -> Result<Option<FetchDataInfo>> {
        let Some(start) = self.translate_offset(start_offset, 0)? else {
            return Ok(None);
        };
        let metadata = LogOffsetMetadata {
            message_offset: start_offset,
            segment_base_offset: self.base_offset,
            relative_position_in_segment: start.position,
        };
        let adjusted_max = if min_one_message {
            max_size.max(start.size)
        } else {
            max_size
        };
        if adjusted_max == 0 || max_position <= start.position {
            return Ok(Some(FetchDataInfo::empty(metadata)));
        }
        let size = (max_position - start.position).min(adjusted_max);
        let file = self.log_file()?;
        // A consumer reads on from where this read ends: have the disk start on the next
        // read's bytes now, so a lagging consumer's next fetch finds them in the page
        // cache instead of waiting for them in sendfile.
        let next = start.position + size;
        let ahead = (max_position - next).min(size);
        if ahead > 0 {
            let _ = rustix::fs::fadvise(
                &*file,
                u64::from(next),
                std::num::NonZeroU64::new(u64::from(ahead)),
                rustix::fs::Advice::WillNeed,
            );
        }
        Ok(Some(FetchDataInfo {
            fetch_offset_metadata: metadata,
            records: Some(FileSlice {
                file,
                position: u64::from(start.position),
                size,
            }),
            first_entry_incomplete: adjusted_max < start.size,
        }))
    }

    /// The offset after the last batch: from the last index entry, scanning forward.
    pub fn read_next_offset(&self) -> Result<i64> {
        let last = self.offset_index()?.as_ref().expect("loaded").last_entry();
        let mut next = self.base_offset;
        self.scan_headers(last.position, |h, _, _| {
            next = h.last_offset + 1;
            Ok(true)
        })?;
        Ok(next)
    }

    /// The first record with timestamp `>= timestamp` and offset `>= starting_offset`:
    /// time index, then offset index, then a scan of the batches.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampAndOffset>> {
        let ts_entry = self
            .time_index()?
            .as_ref()
            .expect("loaded")
            .lookup(timestamp);
        let position = self
            .offset_index()?
            .as_ref()
            .expect("loaded")
            .lookup(ts_entry.offset.max(starting_offset))
            .position;
        let file = self.log_file()?;
        let mut found = None;
        let mut err = None;
        self.scan_headers(position, |h, pos, _| {
            if h.max_timestamp < timestamp || h.last_offset < starting_offset {
                return Ok(true);
            }
            let mut buf = vec![0u8; h.size as usize];
            file.read_exact_at(&mut buf, u64::from(pos))
                .at(&self.log_path)?;
            let batch = RecordBatch::new(&buf)?;
            let epoch = batch.partition_leader_epoch();
            for record in batch.records()?.iter() {
                match record {
                    Ok(r) if r.timestamp >= timestamp && r.offset >= starting_offset => {
                        found = Some(TimestampAndOffset {
                            timestamp: r.timestamp,
                            offset: r.offset,
                            leader_epoch: (epoch >= 0).then_some(epoch),
                        });
                        return Ok(false);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        err = Some(e);
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        })?;
        match err {
            Some(e) => Err(e.into()),
            None => Ok(found),
        }
    }

    /// Rebuilds both indexes from the `.log`, validating every batch (CRC and
    /// structure), and truncates the file at the first invalid or incomplete batch.
    pub fn recover(&mut self) -> Result<SegmentRecovery> {
        self.recover_from(None)
    }

    /// [`recover`](Self::recover) of the segment holding the recovery point: everything
    /// below `flushed_before` was fsynced together with its index entries, so the scan
    /// starts at the last offset index entry below it (checked against the batch there)
    /// and recovery costs what was not flushed, not the whole segment.
    pub fn recover_from(&mut self, flushed_before: Option<i64>) -> Result<SegmentRecovery> {
        let mut offset_index = self
            .offset_index
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let mut time_index = self
            .time_index
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // Indexes are rebuilt in their existing files: entries past the flushed prefix are
        // dropped, the scan collects the new ones and the files are sized to fit them at
        // the end (growing to the maximum and trimming back cost more than the scan of a
        // small segment). A file that cannot even be opened is replaced; replacing every
        // one cost a new inode per segment, which ext4 makes slow to find after many
        // deletes.
        let (base, max) = (self.base_offset, self.max_index_size);
        let mut offset_index = match offset_index.take() {
            Some(i) => i,
            None => OffsetIndex::open(&self.offset_index_path, base, max).or_else(|_| {
                let _ = fs::remove_file(&self.offset_index_path);
                OffsetIndex::open(&self.offset_index_path, base, max)
            })?,
        };
        let mut time_index = match time_index.take() {
            Some(i) => i,
            None => TimeIndex::open(&self.time_index_path, base, max).or_else(|_| {
                let _ = fs::remove_file(&self.time_index_path);
                TimeIndex::open(&self.time_index_path, base, max)
            })?,
        };
        let mut file = File::open(&self.log_path).at(&self.log_path)?;
        let file_size = file.metadata().at(&self.log_path)?.len();
        let resume = match flushed_before {
            Some(offset) => self.flushed_prefix(&offset_index, offset, file_size),
            None => None,
        };
        let mut valid: u64 = 0;
        match resume {
            Some((entries, at)) => {
                offset_index.truncate_to_entries(entries);
                time_index.truncate_to_entries(time_index.entries_up_to(at.offset));
                valid = u64::from(at.position);
                file.seek(SeekFrom::Start(valid)).at(&self.log_path)?;
            }
            None => {
                offset_index.reset();
                time_index.reset();
            }
        }
        let mut reader = BufReader::with_capacity(
            (file_size - valid).clamp(LOG_OVERHEAD as u64, 1 << 20) as usize,
            file,
        );
        let mut result = SegmentRecovery::default();
        // The time index's last kept entry is the largest timestamp up to the resume point
        // (each offset index entry was written with one, as the append path does).
        let mut max = time_index.last_entry();
        let mut last_time_entry = max;
        let mut new_offset_entries: Vec<(i64, u32)> = Vec::new();
        let mut new_time_entries: Vec<TimestampOffset> = Vec::new();
        let scan_start = valid;
        let mut last_index_entry: u64 = valid;
        let mut min_next_offset = self.base_offset;
        let mut last_epoch: Option<i32> = None;
        let mut buf: Vec<u8> = Vec::new();
        let mut header = [0u8; LOG_OVERHEAD];
        loop {
            if valid + LOG_OVERHEAD as u64 > file_size || reader.read_exact(&mut header).is_err() {
                break;
            }
            let length = i32::from_be_bytes(header[8..12].try_into().expect("4 bytes"));
            let size = LOG_OVERHEAD as u64 + length.max(0) as u64;
            if length < MIN_BATCH_LENGTH || valid + size > file_size {
                break;
            }
            buf.clear();
            buf.extend_from_slice(&header);
            buf.resize(size as usize, 0);
            if reader.read_exact(&mut buf[LOG_OVERHEAD..]).is_err() {
                break;
            }
            let Ok(batch) = RecordBatch::new(&buf) else {
                break;
            };
            if let Err(e) = batch.validate() {
                tracing::warn!(segment = %self.log_path.display(), position = valid, error = %e, "invalid batch; truncating");
                break;
            }
            if batch.base_offset() < min_next_offset
                || !self.can_convert_to_relative_offset(batch.last_offset())
            {
                tracing::warn!(segment = %self.log_path.display(), position = valid, "batch offsets out of order or range; truncating");
                break;
            }
            min_next_offset = batch.next_offset();
            if batch.max_timestamp() > max.timestamp {
                max = TimestampOffset {
                    timestamp: batch.max_timestamp(),
                    offset: batch.last_offset(),
                };
            }
            if valid - last_index_entry > u64::from(self.index_interval_bytes) {
                new_offset_entries.push((batch.last_offset(), valid as u32));
                if max.timestamp > last_time_entry.timestamp {
                    new_time_entries.push(max);
                    last_time_entry = max;
                }
                last_index_entry = valid;
            }
            let epoch = batch.partition_leader_epoch();
            if epoch >= 0 && last_epoch != Some(epoch) {
                result.epoch_starts.push((epoch, batch.base_offset()));
                last_epoch = Some(epoch);
            }
            result.next_offset = Some(batch.next_offset());
            valid += size;
        }
        drop(reader);
        result.valid_bytes = valid;
        result.truncated_bytes = file_size - valid;
        result.scanned_bytes = valid - scan_start;
        if result.truncated_bytes > 0 {
            self.log_file()?.set_len(valid).at(&self.log_path)?;
        }
        self.size = valid as u32;
        if max.timestamp > last_time_entry.timestamp {
            new_time_entries.push(max);
        }
        offset_index.resize(
            (offset_index.entries() + new_offset_entries.len()) * OFFSET_INDEX_ENTRY_SIZE,
        )?;
        for (offset, position) in new_offset_entries {
            offset_index.append(offset, position)?;
        }
        time_index
            .resize((time_index.entries() + new_time_entries.len()) * TIME_INDEX_ENTRY_SIZE)?;
        for t in new_time_entries {
            time_index.maybe_append(t.timestamp, t.offset, true)?;
        }
        *self
            .offset_index
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(offset_index);
        *self.time_index.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(time_index);
        *self
            .max_timestamp_so_far
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(max);
        self.bytes_since_last_index_entry = (valid - last_index_entry) as u32;
        self.rolling_based_timestamp = None;
        Ok(result)
    }

    /// Where recovery may resume: the number of offset index entries to keep and the
    /// last of them, the last entry below `flushed_before` in a strictly increasing run
    /// from the start, if the batch at its position starts no later than its offset.
    /// `None` (scan everything) when the index gives nothing trustworthy.
    fn flushed_prefix(
        &self,
        index: &OffsetIndex,
        flushed_before: i64,
        file_size: u64,
    ) -> Option<(usize, OffsetPosition)> {
        let mut found: Option<(usize, OffsetPosition)> = None;
        for n in 0..index.entries() {
            let e = index.entry_at(n);
            let increasing =
                found.is_none_or(|(_, f)| e.offset > f.offset && e.position > f.position);
            if !increasing || e.offset >= flushed_before || u64::from(e.position) >= file_size {
                break;
            }
            found = Some((n + 1, e));
        }
        let (_, at) = found?;
        let mut first = None;
        // Whatever is at that position may be garbage: a failed read only means no resume.
        let _ = self.scan_headers(at.position, |h, _, _| {
            first = Some(h.last_offset);
            Ok(false)
        });
        found.filter(|_| first.is_some_and(|last| last >= self.base_offset && last <= at.offset))
    }

    /// Removes everything from the batch holding `offset` on; returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64) -> Result<u32> {
        let mapping = self.translate_offset(offset, 0)?;
        {
            let mut oi = self.offset_index()?;
            let oi = oi.as_mut().expect("loaded");
            oi.truncate_to(offset);
            oi.resize_to_max()?;
        }
        {
            let mut ti = self.time_index()?;
            let ti = ti.as_mut().expect("loaded");
            ti.truncate_to(offset);
            ti.resize_to_max()?;
        }
        let truncated = match mapping {
            None => 0,
            Some(m) => {
                self.log_file()?
                    .set_len(u64::from(m.position))
                    .at(&self.log_path)?;
                // The file now ends at the data: appends extend it as without
                // preallocation.
                self.preallocated_len = 0;
                let t = self.size - m.position;
                self.size = m.position;
                t
            }
        };
        if self.size == 0 {
            self.rolling_based_timestamp = None;
        }
        self.bytes_since_last_index_entry = 0;
        *lock(&self.max_timestamp_so_far) = None;
        Ok(truncated)
    }

    /// Kafka's shouldRoll: the append would pass `segment.bytes`, `segment.ms`
    /// (minus this segment's jitter) has elapsed since the first batch, an index is
    /// full, or the append's last offset no longer fits 32-bit relative offsets.
    pub fn should_roll(&mut self, p: &RollParams) -> Result<bool> {
        self.grow_pending_indexes()?;
        let reached_roll_ms = self.size > 0
            && self.time_waited_for_roll(p.now_ms, p.max_timestamp_in_messages)?
                > p.max_segment_ms - self.roll_jitter_ms;
        Ok(
            u64::from(self.size) + u64::from(p.messages_size) > u64::from(p.max_segment_bytes)
                || reached_roll_ms
                || self.offset_index()?.as_ref().expect("loaded").is_full()
                || self.time_index()?.as_ref().expect("loaded").is_full()
                || !self.can_convert_to_relative_offset(p.max_offset_in_messages),
        )
    }

    /// Record time since the first batch when timestamps are known, else wall time
    /// since the segment was created.
    fn time_waited_for_roll(&mut self, now_ms: i64, message_timestamp: i64) -> Result<i64> {
        if self.rolling_based_timestamp.is_none() && self.size > 0 {
            let mut first = None;
            self.scan_headers(0, |h, _, _| {
                first = Some(h.max_timestamp);
                Ok(false)
            })?;
            self.rolling_based_timestamp = first;
        }
        match self.rolling_based_timestamp {
            Some(ts) if ts >= 0 => Ok(message_timestamp - ts),
            _ => Ok(now_ms - self.created_ms),
        }
    }

    /// Sets the per-segment jitter subtracted from `segment.ms`.
    pub fn set_roll_jitter_ms(&mut self, jitter: i64) {
        self.roll_jitter_ms = jitter;
    }

    /// Resizes both indexes to the maximum size, for a segment that becomes active again.
    pub fn resize_indexes(&mut self, size: usize) -> Result<()> {
        self.grow_indexes_to = None;
        self.offset_index()?
            .as_mut()
            .expect("loaded")
            .resize(size)?;
        self.time_index()?.as_mut().expect("loaded").resize(size)?;
        Ok(())
    }

    /// Lets both indexes grow to `size` just before the next append instead of now. For
    /// the segment active at load: a resize truncates and remaps both files and the trim
    /// at shutdown undoes it, which with thousands of partitions taking no append in
    /// between was most of what start-up and a clean shutdown did.
    pub fn resize_indexes_before_append(&mut self, size: usize) {
        self.grow_indexes_to = Some(size);
    }

    fn grow_pending_indexes(&mut self) -> Result<()> {
        if let Some(size) = self.grow_indexes_to {
            self.resize_indexes(size)?;
        }
        Ok(())
    }

    /// Called when a newer segment becomes active: writes the final time index entry
    /// and trims both indexes to their entries, and a preallocated `.log` to its data.
    pub fn on_became_inactive_segment(&mut self) -> Result<()> {
        self.grow_indexes_to = None;
        self.trim()?;
        let max = self.max_timestamp_and_offset()?;
        {
            let mut ti = self.time_index()?;
            let ti = ti.as_mut().expect("loaded");
            ti.maybe_append(max.timestamp, max.offset, true)?;
            ti.trim_to_valid_size()?;
        }
        self.offset_index()?
            .as_mut()
            .expect("loaded")
            .trim_to_valid_size()?;
        Ok(())
    }

    /// Files to fsync: the `.log` (its open handle) and any loaded index written since
    /// its last flush (by path: an index keeps no descriptor; on Linux an fsync through
    /// any descriptor of the file writes back the pages its mapping dirtied). Returned so
    /// the caller can sync without holding the log's lock.
    pub fn flush_handles(&self) -> Result<Vec<(PathBuf, Option<Arc<File>>)>> {
        let mut out = Vec::with_capacity(3);
        if let Some(f) = self.log_file.get() {
            out.push((self.log_path.clone(), Some(Arc::clone(f))));
        }
        if let Some(i) = lock(&self.offset_index).as_ref()
            && i.take_dirty()
        {
            out.push((i.path().to_path_buf(), None));
        }
        if let Some(i) = lock(&self.time_index).as_ref()
            && i.take_dirty()
        {
            out.push((i.path().to_path_buf(), None));
        }
        Ok(out)
    }

    /// Fsyncs the `.log` and the indexes.
    pub fn flush(&self) -> Result<()> {
        if let Some(f) = self.log_file.get() {
            f.sync_all().at(&self.log_path)?;
        }
        self.flush_indexes()
    }

    /// Fsyncs the indexes written since their last flush.
    pub fn flush_indexes(&self) -> Result<()> {
        if let Some(i) = lock(&self.offset_index).as_ref() {
            i.flush()?;
        }
        if let Some(i) = lock(&self.time_index).as_ref() {
            i.flush()?;
        }
        Ok(())
    }

    /// Closes the segment for a clean shutdown: final time index entry, trimmed indexes
    /// and `.log`.
    pub fn close(&mut self) -> Result<()> {
        self.trim()?;
        let opened = lock(&self.offset_index).is_some() || lock(&self.time_index).is_some();
        if opened {
            self.on_became_inactive_segment()?;
        }
        Ok(())
    }

    /// Renames every file from `old_suffix` to `new_suffix` (e.g. `""` to `.deleted`).
    pub fn change_file_suffixes(&mut self, old_suffix: &str, new_suffix: &str) -> Result<()> {
        let rename = |p: &Path| -> PathBuf {
            let s = p.to_string_lossy();
            let stem = s.strip_suffix(old_suffix).unwrap_or(&s);
            PathBuf::from(format!("{stem}{new_suffix}"))
        };
        let new_log = rename(&self.log_path);
        fs::rename(&self.log_path, &new_log).at(&self.log_path)?;
        self.log_path = new_log;
        let new_oi = rename(&self.offset_index_path);
        match lock(&self.offset_index).as_mut() {
            Some(i) => i.rename_to(&new_oi)?,
            None => rename_if_exists(&self.offset_index_path, &new_oi)?,
        }
        self.offset_index_path = new_oi;
        let new_ti = rename(&self.time_index_path);
        match lock(&self.time_index).as_mut() {
            Some(i) => i.rename_to(&new_ti)?,
            None => rename_if_exists(&self.time_index_path, &new_ti)?,
        }
        self.time_index_path = new_ti;
        let new_txn = rename(&self.txn_index_path);
        rename_if_exists(&self.txn_index_path, &new_txn)?;
        self.txn_index_path = new_txn;
        Ok(())
    }

    /// Deletes the segment's files (missing files are fine).
    pub fn delete(&self) -> Result<()> {
        for p in [
            &self.log_path,
            &self.offset_index_path,
            &self.time_index_path,
            &self.txn_index_path,
        ] {
            match fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LogError::io(p, e));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether the `.index` and `.timeindex` files exist (a stat each).
    pub fn index_files_exist(&self) -> bool {
        self.offset_index_path.exists() && self.time_index_path.exists()
    }

    /// Opens both indexes now and runs their sanity checks (rebuilding if corrupt).
    pub fn sanity_check(&self) -> Result<()> {
        drop(self.offset_index()?);
        drop(self.time_index()?);
        Ok(())
    }

    /// The offset index's last entry (opening it if needed).
    pub fn last_index_entry(&self) -> Result<OffsetPosition> {
        Ok(self.offset_index()?.as_ref().expect("loaded").last_entry())
    }
}

fn rename_if_exists(from: &Path, to: &Path) -> Result<()> {
    match fs::rename(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(from, e)),
        _ => Ok(()),
    }
}
