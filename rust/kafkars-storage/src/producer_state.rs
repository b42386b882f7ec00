//! Kafka's `ProducerStateManager` for idempotent producers: per producer id, the epoch
//! and the metadata of the last [`NUM_BATCHES_TO_RETAIN`] batches, so that a retried
//! batch is recognised and answered with its original offsets instead of being written
//! twice, and a gap in the sequence numbers is refused.
//!
//! The state is rebuilt on load from the latest `<offset>.snapshot` file (Kafka's
//! format, below) plus the batch headers of the log from that offset on, and snapshots
//! are written when a segment rolls and on a clean shutdown.
//!
//! Snapshot file (version 1): `version: i16, crc: u32` (CRC-32C of everything after
//! it), then `count: i32` entries of `producer_id: i64, epoch: i16, last_sequence:
//! i32, last_offset: i64, offset_delta: i32, timestamp: i64, coordinator_epoch: i32,
//! current_txn_first_offset: i64`, all big-endian.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use kafkars_record::{RecordBatch, crc32c};

use crate::checkpoint::{write_atomically, write_replacing};
use crate::error::{IoContext, LogError, Result};

/// Batches remembered per producer for duplicate detection (Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`, matching the producer's in-flight max).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
/// Suffix of producer state snapshot files.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";

const SNAPSHOT_VERSION: i16 = 1;
const SNAPSHOT_HEADER: usize = 2 + 4;
const SNAPSHOT_ENTRY: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;
const NO_PRODUCER_EPOCH: i16 = -1;
const NO_SEQUENCE: i32 = -1;

/// What the log needs to know of one batch for producer state: its header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_offset_delta: i32,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub is_transactional: bool,
    pub is_control: bool,
}

/// A transaction that a COMMIT or ABORT marker ended on this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    /// First offset of the transaction's data here.
    pub first_offset: i64,
    /// Offset of the marker.
    pub last_offset: i64,
}

impl ProducerBatch {
    /// The producer fields of `batch`, or `None` for a batch without a producer id.
    pub fn of(batch: &RecordBatch<'_>) -> Option<Self> {
        (batch.producer_id() >= 0).then(|| ProducerBatch {
            producer_id: batch.producer_id(),
            producer_epoch: batch.producer_epoch(),
            base_sequence: batch.base_sequence(),
            last_offset_delta: batch.last_offset_delta(),
            last_offset: batch.last_offset(),
            max_timestamp: batch.max_timestamp(),
            is_transactional: batch.is_transactional(),
            is_control: batch.is_control(),
        })
    }

    /// The same batch written at `base_offset` (a leader assigns offsets in a header
    /// copy, so the batch read from the request still has the producer's).
    pub fn at(self, base_offset: i64) -> Self {
        ProducerBatch {
            last_offset: base_offset.wrapping_add(i64::from(self.last_offset_delta)),
            ..self
        }
    }

    fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.last_offset_delta)
    }

    fn last_sequence(&self) -> i32 {
        increment_sequence(self.base_sequence, self.last_offset_delta)
    }
}

/// Sequence numbers wrap from `i32::MAX` to 0.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// One appended batch as remembered for duplicate detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub last_seq: i32,
    pub last_offset: i64,
    pub offset_delta: i32,
    pub timestamp: i64,
}

impl BatchMetadata {
    fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.offset_delta)
    }
}

/// A producer's state in one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Oldest first, at most [`NUM_BATCHES_TO_RETAIN`].
    pub batches: VecDeque<BatchMetadata>,
    pub coordinator_epoch: i32,
    pub current_txn_first_offset: Option<i64>,
    pub last_timestamp: i64,
}

impl ProducerStateEntry {
    fn empty(producer_id: i64) -> Self {
        Self {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            coordinator_epoch: -1,
            current_txn_first_offset: None,
            last_timestamp: -1,
        }
    }

    fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    fn find_duplicate(&self, batch: &ProducerBatch) -> Option<&BatchMetadata> {
        if batch.producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|m| m.first_seq() == batch.base_sequence && m.last_seq == batch.last_sequence())
    }

    fn add_batch(&mut self, batch: &ProducerBatch) {
        if batch.producer_epoch != self.producer_epoch {
            // A new epoch starts a new sequence: what the old one wrote cannot repeat.
            self.batches.clear();
            self.producer_epoch = batch.producer_epoch;
        }
        self.batches.push_back(BatchMetadata {
            last_seq: batch.last_sequence(),
            last_offset: batch.last_offset,
            offset_delta: batch.last_offset_delta,
            timestamp: batch.max_timestamp,
        });
        while self.batches.len() > NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.last_timestamp = batch.max_timestamp;
    }
}

/// How the log must treat a produced batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// New: append it.
    Append,
    /// Already in the log (a retry): answer with where it was written.
    Duplicate { first_offset: i64, last_offset: i64 },
}

/// Producer ids and their state in one partition (Kafka's `ProducerStateManager`).
#[derive(Debug)]
pub struct ProducerStateManager {
    dir: PathBuf,
    producers: HashMap<i64, ProducerStateEntry>,
    /// Open transactions by their first offset: the first one bounds the last stable
    /// offset.
    ongoing: BTreeMap<i64, i64>,
    /// The next offset the state has seen (everything below is accounted for).
    map_end_offset: i64,
    /// The offset of the snapshot loaded or last written.
    last_snapshot_offset: Option<i64>,
}

impl ProducerStateManager {
    /// Loads the latest readable snapshot at or below `log_end_offset` (deleting
    /// snapshots above it and unreadable ones); the caller replays the log from
    /// [`map_end_offset`](Self::map_end_offset).
    pub fn load(dir: &Path, log_start_offset: i64, log_end_offset: i64) -> Result<Self> {
        Self::load_listed(dir, list_snapshots(dir)?, log_start_offset, log_end_offset)
    }

    /// [`load`](Self::load) with the snapshots `(offset, path)` in `dir` already listed
    /// (start-up lists each partition directory once).
    pub(crate) fn load_listed(
        dir: &Path,
        mut snapshots: Vec<(i64, PathBuf)>,
        log_start_offset: i64,
        log_end_offset: i64,
    ) -> Result<Self> {
        let mut manager = Self {
            dir: dir.to_path_buf(),
            producers: HashMap::new(),
            ongoing: BTreeMap::new(),
            map_end_offset: log_start_offset,
            last_snapshot_offset: None,
        };
        snapshots.sort_unstable_by_key(|(offset, _)| std::cmp::Reverse(*offset));
        for (offset, path) in snapshots {
            if offset > log_end_offset {
                // Written past what recovery kept (a torn tail): stale.
                remove(&path)?;
                continue;
            }
            if offset < log_start_offset {
                break;
            }
            match read_snapshot(&path) {
                Ok(entries) => {
                    manager.ongoing = entries
                        .iter()
                        .filter_map(|e| Some((e.current_txn_first_offset?, e.producer_id)))
                        .collect();
                    manager.producers = entries.into_iter().map(|e| (e.producer_id, e)).collect();
                    manager.map_end_offset = offset;
                    manager.last_snapshot_offset = Some(offset);
                    break;
                }
                Err(e) => {
                    tracing::warn!(snapshot = %path.display(), error = %e, "ignoring unreadable producer snapshot");
                    remove(&path)?;
                }
            }
        }
        Ok(manager)
    }

    /// Where replay must start: the offset after the last one the state accounts for.
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// The state of `producer_id`, if known.
    pub fn entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Every producer with state here (DescribeProducers), in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &ProducerStateEntry> {
        self.producers.values()
    }

    /// Number of producers with state here.
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Checks a batch a client produced (Kafka's `ProducerAppendInfo` with origin
    /// CLIENT): duplicates of the retained batches, fenced epochs, sequence gaps.
    pub fn check(&self, batch: &ProducerBatch) -> Result<ProducerCheck> {
        if batch.is_control {
            return Ok(ProducerCheck::Append);
        }
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            // Unknown producer (new, or its state expired): any sequence is accepted,
            // as Kafka does since KIP-360.
            return Ok(ProducerCheck::Append);
        };
        if batch.producer_epoch < entry.producer_epoch {
            return Err(LogError::InvalidProducerEpoch(format!(
                "epoch {} of producer {} is older than the last seen epoch {}",
                batch.producer_epoch, batch.producer_id, entry.producer_epoch
            )));
        }
        if let Some(dup) = entry.find_duplicate(batch) {
            return Ok(ProducerCheck::Duplicate {
                first_offset: dup.first_offset(),
                last_offset: dup.last_offset,
            });
        }
        if batch.producer_epoch != entry.producer_epoch {
            if batch.base_sequence != 0 && entry.producer_epoch != NO_PRODUCER_EPOCH {
                return Err(LogError::OutOfOrderSequence(format!(
                    "sequence {} for the new epoch {} of producer {} (a new epoch starts at 0)",
                    batch.base_sequence, batch.producer_epoch, batch.producer_id
                )));
            }
        } else if entry.producer_epoch != NO_PRODUCER_EPOCH
            && !in_sequence(entry.last_seq(), batch.base_sequence)
        {
            return Err(LogError::OutOfOrderSequence(format!(
                "sequence {} of producer {} does not follow {}",
                batch.base_sequence,
                batch.producer_id,
                entry.last_seq()
            )));
        }
        Ok(ProducerCheck::Append)
    }

    /// Records an appended batch (from a client, a replica, or replay on load). A
    /// marker returns the transaction it ended.
    pub fn update(&mut self, batch: &ProducerBatch) -> Option<CompletedTxn> {
        self.update_with_marker(batch, None)
    }

    /// [`update`](Self::update), with the coordinator epoch of a marker's control
    /// record: the producer's entry keeps it, as Kafka's `appendEndTxnMarker` does (it
    /// is in the snapshot).
    pub fn update_with_marker(
        &mut self,
        batch: &ProducerBatch,
        coordinator_epoch: Option<i32>,
    ) -> Option<CompletedTxn> {
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(batch.producer_id));
        let mut completed = None;
        if batch.is_control {
            // A transaction marker ends the producer's transaction; no sequence.
            entry.producer_epoch = entry.producer_epoch.max(batch.producer_epoch);
            if let Some(first_offset) = entry.current_txn_first_offset.take() {
                self.ongoing.remove(&first_offset);
                completed = Some(CompletedTxn {
                    producer_id: batch.producer_id,
                    first_offset,
                    last_offset: batch.last_offset,
                });
            }
            entry.last_timestamp = batch.max_timestamp;
            if let Some(epoch) = coordinator_epoch {
                entry.coordinator_epoch = epoch;
            }
        } else {
            entry.add_batch(batch);
            if batch.is_transactional && entry.current_txn_first_offset.is_none() {
                entry.current_txn_first_offset = Some(batch.first_offset());
                self.ongoing.insert(batch.first_offset(), batch.producer_id);
            }
        }
        self.map_end_offset = self.map_end_offset.max(batch.last_offset + 1);
        completed
    }

    /// First offset of the earliest open transaction (the last stable offset is at
    /// most this).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// Notes that offsets up to `next_offset` are accounted for (batches without a
    /// producer id move the map end too).
    pub fn advance_to(&mut self, next_offset: i64) {
        self.map_end_offset = self.map_end_offset.max(next_offset);
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`),
    /// except those with an open transaction. Returns how many went.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Writes `<map end offset>.snapshot` and keeps only the two newest snapshots. As in
    /// Kafka, nothing is written when the newest snapshot is already at that offset (a
    /// clean shutdown of an idle partition wrote, synced and renamed the same bytes).
    pub fn take_snapshot(&mut self) -> Result<()> {
        self.write_snapshot(true).map(drop)
    }

    /// [`Self::take_snapshot`] without its fsyncs, for a roll under the log's lock (as
    /// Kafka's `takeSnapshot(false)`): the new snapshot's path when one was written, for
    /// the caller to sync off the append path. A snapshot lost in a crash is skipped on
    /// load for the one before it, and the replay starts from there.
    pub fn take_snapshot_unsynced(&mut self) -> Result<Option<PathBuf>> {
        self.write_snapshot(false)
    }

    fn write_snapshot(&mut self, sync: bool) -> Result<Option<PathBuf>> {
        let path = snapshot_path(&self.dir, self.map_end_offset);
        if self.last_snapshot_offset == Some(self.map_end_offset) && path.exists() {
            return Ok(None);
        }
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_unstable_by_key(|e| e.producer_id);
        write_replacing(&path, &encode_snapshot(&entries), sync)?;
        self.last_snapshot_offset = Some(self.map_end_offset);
        let mut snapshots = list_snapshots(&self.dir)?;
        snapshots.sort_unstable_by_key(|(offset, _)| std::cmp::Reverse(*offset));
        for (_, old) in snapshots.into_iter().skip(2) {
            remove(&old)?;
        }
        Ok(Some(path))
    }

    /// Writes the state as `<map end offset>.snapshot` into another directory (the
    /// future log of a move between log dirs), leaving this one's snapshots alone.
    pub fn write_snapshot_to(&self, dir: &Path) -> Result<()> {
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_unstable_by_key(|e| e.producer_id);
        write_atomically(
            &snapshot_path(dir, self.map_end_offset),
            &encode_snapshot(&entries),
        )
    }

    /// Drops the state at and above `offset` (log truncation): snapshots above it go,
    /// and the caller reloads and replays.
    pub fn truncate_and_reload(&mut self, log_start_offset: i64, offset: i64) -> Result<()> {
        *self = Self::load(&self.dir, log_start_offset, offset)?;
        Ok(())
    }
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(path, e)),
        _ => Ok(()),
    }
}

/// `<dir>/<offset, 20 digits>.snapshot`.
pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(crate::segment::segment_file_name(offset, SNAPSHOT_SUFFIX))
}

fn list_snapshots(dir: &Path) -> Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(LogError::io(dir, e)),
    };
    for entry in entries {
        let path = entry.at(dir)?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(offset) = snapshot_offset(name) {
            out.push((offset, path));
        }
    }
    Ok(out)
}

/// The offset a `<offset>.snapshot` file name stands for.
pub(crate) fn snapshot_offset(name: &str) -> Option<i64> {
    name.strip_suffix(SNAPSHOT_SUFFIX)
        .and_then(|stem| stem.parse::<i64>().ok())
}

fn encode_snapshot(entries: &[&ProducerStateEntry]) -> Vec<u8> {
    let mut body = Vec::with_capacity(4 + entries.len() * SNAPSHOT_ENTRY);
    body.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        let last = e.batches.back();
        body.extend_from_slice(&e.producer_id.to_be_bytes());
        body.extend_from_slice(&e.producer_epoch.to_be_bytes());
        body.extend_from_slice(&last.map_or(NO_SEQUENCE, |b| b.last_seq).to_be_bytes());
        body.extend_from_slice(&last.map_or(-1, |b| b.last_offset).to_be_bytes());
        body.extend_from_slice(&last.map_or(0, |b| b.offset_delta).to_be_bytes());
        body.extend_from_slice(&e.last_timestamp.to_be_bytes());
        body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        body.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
    }
    let mut out = Vec::with_capacity(SNAPSHOT_HEADER + body.len());
    out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn malformed(path: &Path, reason: impl Into<String>) -> LogError {
    LogError::MalformedFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads a snapshot file; its count is checked against the bytes before anything is
/// allocated from it.
pub fn read_snapshot(path: &Path) -> Result<Vec<ProducerStateEntry>> {
    let bytes = fs::read(path).at(path)?;
    decode_snapshot(&bytes).map_err(|reason| malformed(path, reason))
}

fn decode_snapshot(bytes: &[u8]) -> std::result::Result<Vec<ProducerStateEntry>, String> {
    if bytes.len() < SNAPSHOT_HEADER + 4 {
        return Err(format!(
            "{} bytes is shorter than a snapshot header",
            bytes.len()
        ));
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != SNAPSHOT_VERSION {
        return Err(format!("unknown snapshot version {version}"));
    }
    let crc = u32::from_be_bytes(bytes[2..6].try_into().expect("4 bytes"));
    let body = &bytes[SNAPSHOT_HEADER..];
    if crc32c(body) != crc {
        return Err("CRC mismatch".into());
    }
    let count = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
    let entries = &body[4..];
    if count < 0 || count as usize * SNAPSHOT_ENTRY != entries.len() {
        return Err(format!(
            "{count} entries do not fill {} bytes",
            entries.len()
        ));
    }
    Ok(entries
        .chunks_exact(SNAPSHOT_ENTRY)
        .map(|c| {
            let i64_at = |i: usize| i64::from_be_bytes(c[i..i + 8].try_into().expect("8"));
            let i32_at = |i: usize| i32::from_be_bytes(c[i..i + 4].try_into().expect("4"));
            let producer_id = i64_at(0);
            let producer_epoch = i16::from_be_bytes([c[8], c[9]]);
            let last_seq = i32_at(10);
            let last_offset = i64_at(14);
            let offset_delta = i32_at(22);
            let timestamp = i64_at(26);
            let coordinator_epoch = i32_at(34);
            let txn_first = i64_at(38);
            let mut batches = VecDeque::new();
            if last_offset >= 0 {
                batches.push_back(BatchMetadata {
                    last_seq,
                    last_offset,
                    offset_delta,
                    timestamp,
                });
            }
            ProducerStateEntry {
                producer_id,
                producer_epoch,
                batches,
                coordinator_epoch,
                current_txn_first_offset: (txn_first >= 0).then_some(txn_first),
                last_timestamp: timestamp,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(pid: i64, epoch: i16, seq: i32, n: i32, last_offset: i64) -> ProducerBatch {
        ProducerBatch {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            last_offset_delta: n - 1,
            last_offset,
            max_timestamp: 1_000,
            is_transactional: false,
            is_control: false,
        }
    }

    fn manager() -> (tempfile::TempDir, ProducerStateManager) {
        let dir = tempfile::tempdir().unwrap();
        let m = ProducerStateManager::load(dir.path(), 0, 0).unwrap();
        (dir, m)
    }

    #[test]
    fn retries_of_the_last_five_batches_are_duplicates() {
        let (_d, mut m) = manager();
        for i in 0..7 {
            let b = batch(7, 0, i * 3, 3, i64::from(i) * 3 + 2);
            assert_eq!(m.check(&b).unwrap(), ProducerCheck::Append);
            m.update(&b);
        }
        // Batches 2..=6 are retained: a retry of batch 2 is found with its offsets.
        assert_eq!(
            m.check(&batch(7, 0, 6, 3, 99)).unwrap(),
            ProducerCheck::Duplicate {
                first_offset: 6,
                last_offset: 8
            }
        );
        // Batch 1 fell out of the window: neither a duplicate nor in sequence.
        assert!(matches!(
            m.check(&batch(7, 0, 3, 3, 99)),
            Err(LogError::OutOfOrderSequence(_))
        ));
    }

    #[test]
    fn gaps_old_epochs_and_new_epochs() {
        let (_d, mut m) = manager();
        m.update(&batch(1, 2, 0, 1, 0));
        assert!(matches!(
            m.check(&batch(1, 2, 5, 1, 9)),
            Err(LogError::OutOfOrderSequence(_))
        ));
        assert!(matches!(
            m.check(&batch(1, 1, 1, 1, 9)),
            Err(LogError::InvalidProducerEpoch(_))
        ));
        assert_eq!(
            m.check(&batch(1, 3, 0, 1, 9)).unwrap(),
            ProducerCheck::Append
        );
        assert!(matches!(
            m.check(&batch(1, 3, 4, 1, 9)),
            Err(LogError::OutOfOrderSequence(_))
        ));
        // An unknown producer may start anywhere (its state may have expired).
        assert_eq!(
            m.check(&batch(2, 0, 40, 1, 9)).unwrap(),
            ProducerCheck::Append
        );
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        let (_d, mut m) = manager();
        m.update(&batch(1, 0, i32::MAX - 1, 2, 1));
        assert_eq!(
            m.check(&batch(1, 0, 0, 1, 2)).unwrap(),
            ProducerCheck::Append
        );
        let wrapped = batch(1, 0, i32::MAX, 3, 5);
        assert_eq!(wrapped.last_sequence(), 1);
    }

    #[test]
    fn an_unsynced_snapshot_is_whole_and_named_once() {
        let (dir, mut m) = manager();
        m.update(&batch(1, 0, 0, 2, 1));
        let path = m.take_snapshot_unsynced().unwrap().expect("a new snapshot");
        assert_eq!(path, snapshot_path(dir.path(), 2));
        assert!(
            m.take_snapshot_unsynced().unwrap().is_none(),
            "already taken"
        );
        assert_eq!(read_snapshot(&path).unwrap().len(), 1);
        // No `.tmp` is left beside it.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        crate::checkpoint::sync_in_background(path);
    }

    #[test]
    fn snapshots_round_trip_and_keep_the_two_newest() {
        let (dir, mut m) = manager();
        m.update(&batch(1, 0, 0, 2, 1));
        m.update(&batch(9, 4, 10, 1, 2));
        m.take_snapshot().unwrap();
        m.update(&batch(1, 0, 2, 1, 3));
        m.take_snapshot().unwrap();
        m.update(&batch(1, 0, 3, 1, 4));
        m.take_snapshot().unwrap();
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "00000000000000000004.snapshot",
                "00000000000000000005.snapshot"
            ]
        );
        let loaded = ProducerStateManager::load(dir.path(), 0, 5).unwrap();
        assert_eq!(loaded.map_end_offset(), 5);
        let e = loaded.entry(1).unwrap();
        assert_eq!((e.producer_epoch, e.last_seq()), (0, 3));
        assert_eq!(loaded.entry(9).unwrap().producer_epoch, 4);
        // The last batch survives a reload, so its retry is still a duplicate.
        assert_eq!(
            loaded.check(&batch(1, 0, 3, 1, 9)).unwrap(),
            ProducerCheck::Duplicate {
                first_offset: 4,
                last_offset: 4
            }
        );
        // Below a truncation point the newer snapshot is stale and goes.
        let reloaded = ProducerStateManager::load(dir.path(), 0, 4).unwrap();
        assert_eq!(reloaded.map_end_offset(), 4);
        assert!(!dir.path().join("00000000000000000005.snapshot").exists());
    }

    #[test]
    fn damaged_snapshots_are_refused_not_trusted() {
        let (dir, mut m) = manager();
        m.update(&batch(1, 0, 0, 1, 0));
        m.take_snapshot().unwrap();
        let path = snapshot_path(dir.path(), 1);
        let good = fs::read(&path).unwrap();
        for cut in 0..good.len() {
            assert!(decode_snapshot(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = good.clone();
        flipped[20] ^= 1;
        assert!(decode_snapshot(&flipped).is_err());
        // A huge count is checked against the bytes, not allocated.
        let mut body = i32::MAX.to_be_bytes().to_vec();
        body.extend_from_slice(&[0; 46]);
        let mut hostile = SNAPSHOT_VERSION.to_be_bytes().to_vec();
        hostile.extend_from_slice(&crc32c(&body).to_be_bytes());
        hostile.extend_from_slice(&body);
        assert!(decode_snapshot(&hostile).is_err());
        // On load a damaged snapshot is deleted and the state starts empty (replay).
        fs::write(&path, &flipped).unwrap();
        let loaded = ProducerStateManager::load(dir.path(), 0, 1).unwrap();
        assert_eq!(loaded.producer_count(), 0);
        assert_eq!(loaded.map_end_offset(), 0);
        assert!(!path.exists());
    }

    #[test]
    fn transactions_bound_the_last_stable_offset_until_their_marker() {
        let (dir, mut m) = manager();
        let txn = |pid, seq, n, last| ProducerBatch {
            is_transactional: true,
            ..batch(pid, 0, seq, n, last)
        };
        let marker = |pid, offset| ProducerBatch {
            is_transactional: true,
            is_control: true,
            ..batch(pid, 0, -1, 1, offset)
        };
        assert_eq!(m.update(&txn(1, 0, 2, 1)), None);
        assert_eq!(m.update(&txn(2, 0, 1, 2)), None);
        assert_eq!(m.update(&txn(1, 2, 1, 3)), None);
        assert_eq!(m.first_unstable_offset(), Some(0));
        m.take_snapshot().unwrap();
        let done = m.update(&marker(1, 4)).unwrap();
        assert_eq!((done.first_offset, done.last_offset), (0, 4));
        assert_eq!(m.first_unstable_offset(), Some(2));
        // Open transactions survive a snapshot and reload.
        let loaded = ProducerStateManager::load(dir.path(), 0, 4).unwrap();
        assert_eq!(loaded.first_unstable_offset(), Some(0));
        assert_eq!(m.update(&marker(2, 5)).map(|t| t.first_offset), Some(2));
        assert_eq!(m.first_unstable_offset(), None);
    }

    #[test]
    fn a_marker_sets_the_coordinator_epoch_which_snapshots_keep() {
        // Kafka's appendEndTxnMarker: the entry takes the marker's coordinator epoch.
        let (dir, mut m) = manager();
        m.update(&ProducerBatch {
            is_transactional: true,
            ..batch(1, 0, 0, 2, 1)
        });
        assert_eq!(m.entry(1).unwrap().coordinator_epoch, -1);
        let marker = ProducerBatch {
            is_transactional: true,
            is_control: true,
            ..batch(1, 0, -1, 1, 2)
        };
        assert!(m.update_with_marker(&marker, Some(3)).is_some());
        assert_eq!(m.entry(1).unwrap().coordinator_epoch, 3);
        m.take_snapshot().unwrap();
        let loaded = ProducerStateManager::load(dir.path(), 0, 3).unwrap();
        assert_eq!(loaded.entry(1).unwrap().coordinator_epoch, 3);
    }

    #[test]
    fn idle_producers_expire_unless_in_a_transaction() {
        let (_d, mut m) = manager();
        m.update(&batch(1, 0, 0, 1, 0));
        m.update(&batch(2, 0, 0, 1, 1));
        m.producers.get_mut(&2).unwrap().current_txn_first_offset = Some(1);
        assert_eq!(m.remove_expired(1_000 + 59_999, 60_000), 0);
        assert_eq!(m.remove_expired(1_000 + 60_000, 60_000), 1);
        assert!(m.entry(1).is_none() && m.entry(2).is_some());
    }
}
