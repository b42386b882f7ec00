//! The future log of a replica moving to another log dir (Kafka's future replica and
//! ReplicaAlterLogDirsThread, done as a file copy): `<topic>-<partition>.<id>-future`
//! in the target dir, filled from the current log's segment files while producers keep
//! appending. Closed segments and the bytes already in the active one are copied
//! without the log's lock; [`Log::swap_in_future`](crate::Log) copies the rest under
//! the lock and swaps.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checkpoint::{fsync_dir, sync_if_exists};
use crate::error::{IoContext, LogError, Result};
use crate::segment::{
    INDEX_FILE_SUFFIX, LOG_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, segment_file_name,
};
use crate::transaction_index::TXN_INDEX_FILE_SUFFIX;

/// Suffix of a partition directory being filled by a move between log dirs.
pub const FUTURE_DIR_SUFFIX: &str = "-future";

/// Copy buffer: a fixed size, never taken from the files.
const COPY_CHUNK: usize = 1 << 20;

/// One segment of the current log as a copy pass sees it, taken under the log's read
/// lock. The `.log` handle stays readable if the segment is deleted meanwhile.
#[derive(Debug, Clone)]
pub(crate) struct SegmentSource {
    pub(crate) base_offset: i64,
    pub(crate) size: u32,
    pub(crate) active: bool,
    pub(crate) log: Arc<File>,
    pub(crate) log_path: PathBuf,
    pub(crate) offset_index_path: PathBuf,
    pub(crate) time_index_path: PathBuf,
    pub(crate) txn_index_path: PathBuf,
}

#[derive(Debug, Default, Clone, Copy)]
struct CopiedSegment {
    log_bytes: u32,
    /// `.index` and `.timeindex` copied (only once the segment is closed: the active
    /// segment's are rebuilt when the future log is opened).
    indexes: bool,
    /// Everything copied so far is fsynced.
    synced: bool,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct FutureLog {
    dir: PathBuf,
    copied: BTreeMap<i64, CopiedSegment>,
    /// The current log's layout version the copies were taken from; a truncation or
    /// compaction changes it and the copies start over.
    pub(crate) layout_version: u64,
}

impl FutureLog {
    /// Creates the (empty) future dir.
    pub(crate) fn create(dir: PathBuf, layout_version: u64) -> Result<Self> {
        if dir.exists() {
            fs::remove_dir_all(&dir).at(&dir)?;
        }
        fs::create_dir_all(&dir).at(&dir)?;
        if let Some(parent) = dir.parent() {
            fsync_dir(parent)?;
        }
        Ok(FutureLog {
            dir,
            copied: BTreeMap::new(),
            layout_version,
        })
    }

    /// The future dir.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes of `.log` copied so far.
    pub(crate) fn size_in_bytes(&self) -> u64 {
        self.copied.values().map(|c| u64::from(c.log_bytes)).sum()
    }

    /// Drops every copy (the current log was truncated or compacted).
    pub(crate) fn reset(&mut self, layout_version: u64) -> Result<()> {
        let bases: Vec<i64> = self.copied.keys().copied().collect();
        for base in bases {
            self.remove_segment(base)?;
        }
        self.layout_version = layout_version;
        Ok(())
    }

    fn path(&self, base: i64, suffix: &str) -> PathBuf {
        self.dir.join(segment_file_name(base, suffix))
    }

    fn remove_segment(&mut self, base: i64) -> Result<()> {
        self.copied.remove(&base);
        for suffix in [
            LOG_FILE_SUFFIX,
            INDEX_FILE_SUFFIX,
            TIME_INDEX_FILE_SUFFIX,
            TXN_INDEX_FILE_SUFFIX,
        ] {
            remove_if_exists(&self.path(base, suffix))?;
        }
        Ok(())
    }

    /// Brings the copies up to `sources`: segments gone from the current log (retention)
    /// go here too, new bytes are appended, closed segments get their indexes. With
    /// `last` (under the log's write lock) the transaction indexes are copied too and
    /// everything is fsynced. Returns the `.log` bytes copied.
    pub(crate) fn copy_pass(&mut self, sources: &[SegmentSource], last: bool) -> Result<u64> {
        let stale: Vec<i64> = self
            .copied
            .keys()
            .filter(|b| !sources.iter().any(|s| s.base_offset == **b))
            .copied()
            .collect();
        for base in stale {
            self.remove_segment(base)?;
        }
        let mut buf = vec![0u8; COPY_CHUNK];
        let mut total = 0u64;
        for src in sources {
            let mut state = self
                .copied
                .get(&src.base_offset)
                .copied()
                .unwrap_or_default();
            if state.log_bytes > src.size {
                return Err(LogError::CorruptSegment {
                    path: src.log_path.clone(),
                    reason: format!(
                        "shrank to {} bytes below the {} already copied",
                        src.size, state.log_bytes
                    ),
                });
            }
            let log_path = self.path(src.base_offset, LOG_FILE_SUFFIX);
            let out = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&log_path)
                .at(&log_path)?;
            let mut pos = u64::from(state.log_bytes);
            let end = u64::from(src.size);
            while pos < end {
                let n = (end - pos).min(COPY_CHUNK as u64) as usize;
                src.log
                    .read_exact_at(&mut buf[..n], pos)
                    .at(&src.log_path)?;
                out.write_all_at(&buf[..n], pos).at(&log_path)?;
                pos += n as u64;
                state.synced = false;
            }
            total += end - u64::from(state.log_bytes);
            state.log_bytes = src.size;
            if !src.active && !state.indexes {
                // A missing index (deleted meanwhile) is rebuilt when the log opens.
                copy_if_exists(
                    &src.offset_index_path,
                    &self.path(src.base_offset, INDEX_FILE_SUFFIX),
                )?;
                copy_if_exists(
                    &src.time_index_path,
                    &self.path(src.base_offset, TIME_INDEX_FILE_SUFFIX),
                )?;
                state.indexes = true;
                state.synced = false;
            }
            if last {
                let txn = self.path(src.base_offset, TXN_INDEX_FILE_SUFFIX);
                remove_if_exists(&txn)?;
                copy_if_exists(&src.txn_index_path, &txn)?;
                state.synced = false;
            }
            // Closed segments are made durable as soon as they are complete, so the
            // pass under the lock only syncs what changed since.
            if !state.synced && (last || !src.active) {
                out.sync_all().at(&log_path)?;
                for suffix in [
                    INDEX_FILE_SUFFIX,
                    TIME_INDEX_FILE_SUFFIX,
                    TXN_INDEX_FILE_SUFFIX,
                ] {
                    sync_if_exists(&self.path(src.base_offset, suffix))?;
                }
                state.synced = true;
            }
            self.copied.insert(src.base_offset, state);
        }
        if last {
            fsync_dir(&self.dir)?;
        }
        Ok(total)
    }
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(path, e)),
        _ => Ok(()),
    }
}

fn copy_if_exists(from: &Path, to: &Path) -> Result<()> {
    match fs::copy(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(from, e)),
        _ => Ok(()),
    }
}
