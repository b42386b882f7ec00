//! The per-partition `leader-epoch-checkpoint` (Kafka's LeaderEpochFileCache): which
//! leader epoch started at which offset, for OffsetForLeaderEpoch and truncation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::{read_checkpoint, write_checkpoint};
use crate::error::{LogError, Result};

/// File name of the leader epoch checkpoint inside a partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// Kafka's UNDEFINED_EPOCH.
pub const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's UNDEFINED_EPOCH_OFFSET.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// An epoch and the first offset written in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// Leader epoch.
    pub epoch: i32,
    /// First offset appended in that epoch.
    pub start_offset: i64,
}

/// The leader epoch cache backed by `leader-epoch-checkpoint`.
#[derive(Debug)]
pub struct LeaderEpochFileCache {
    path: PathBuf,
    epochs: BTreeMap<i32, i64>,
}

impl LeaderEpochFileCache {
    /// Loads the checkpoint in `dir` (an absent or empty file is an empty cache: Apache
    /// Kafka creates the file empty with the partition's log and writes it at the first
    /// epoch, so a partition never led has an empty one).
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let mut epochs = BTreeMap::new();
        for (n, line) in read_checkpoint(&path)?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let bad = || LogError::MalformedFile {
                path: path.clone(),
                reason: format!("line {}: expected `epoch startOffset`, got {line:?}", n + 3),
            };
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [epoch, offset] = fields[..] else {
                return Err(bad());
            };
            let epoch: i32 = epoch.parse().map_err(|_| bad())?;
            let offset: i64 = offset.parse().map_err(|_| bad())?;
            epochs.insert(epoch, offset);
        }
        Ok(LeaderEpochFileCache { path, epochs })
    }

    /// Points the cache at a new directory (after the partition dir was renamed).
    pub fn set_dir(&mut self, dir: &Path) {
        self.path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
    }

    /// All entries, in epoch order.
    pub fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.epochs
            .iter()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
            .collect()
    }

    /// The latest entry.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .last_key_value()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The latest epoch.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset` and persists the file when that
    /// changes anything. Entries with a larger epoch or offset are removed first, so
    /// both columns stay increasing.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool> {
        if epoch < 0 || start_offset < 0 {
            return Ok(false);
        }
        if let Some(latest) = self.latest_entry()
            && latest.epoch == epoch
            && latest.start_offset <= start_offset
        {
            return Ok(false);
        }
        self.epochs
            .retain(|&e, &mut o| e < epoch && o < start_offset);
        self.epochs.insert(epoch, start_offset);
        self.flush()?;
        Ok(true)
    }

    /// For OffsetForLeaderEpoch: the largest epoch `<= requested` and the offset where
    /// the next epoch starts (or `log_end_offset` for the latest epoch).
    /// Unknown epochs give `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        if requested_epoch == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return (requested_epoch, log_end_offset);
        }
        let Some((_, &higher_start)) = self.epochs.range(requested_epoch + 1..).next() else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match self.epochs.range(..=requested_epoch).next_back() {
            None => (requested_epoch, higher_start),
            Some((&floor_epoch, _)) => (floor_epoch, higher_start),
        }
    }

    /// Removes entries starting at or after `end_offset` (log truncated to it).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        let before = self.epochs.len();
        self.epochs.retain(|_, &mut o| o < end_offset);
        if self.epochs.len() != before {
            self.flush()?;
        }
        Ok(())
    }

    /// Drops entries wholly before `start_offset` (log start moved); the last one of
    /// them is kept, starting at `start_offset`.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<()> {
        let below: Vec<i32> = self
            .epochs
            .iter()
            .filter(|&(_, &o)| o < start_offset)
            .map(|(&e, _)| e)
            .collect();
        let Some(&last) = below.last() else {
            return Ok(());
        };
        for e in &below {
            self.epochs.remove(e);
        }
        // Keep the epoch in force at the new start unless another begins exactly there.
        if !self.epochs.values().any(|&o| o == start_offset) {
            self.epochs.insert(last, start_offset);
        }
        self.flush()
    }

    /// Removes every entry.
    pub fn clear(&mut self) -> Result<()> {
        self.epochs.clear();
        self.flush()
    }

    /// Writes the checkpoint file.
    pub fn flush(&self) -> Result<()> {
        let lines: Vec<String> = self
            .epochs
            .iter()
            .map(|(e, o)| format!("{e} {o}"))
            .collect();
        write_checkpoint(&self.path, &lines)
    }
}
