//! The `.timeindex` file: a sparse map from timestamps to offsets.
//!
//! Entries are 12 bytes, big-endian: a timestamp (i64) and the offset relative to the
//! segment's base (i32). Timestamps and offsets never decrease, as in Kafka.

use std::path::Path;

use crate::abstract_index::{AbstractIndex, count_live_entries, index_file_methods};
use crate::error::{LogError, Result};

/// Size of one `.timeindex` entry.
pub const TIME_INDEX_ENTRY_SIZE: usize = 12;
/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

/// A timestamp and the offset of the batch that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// A memory-mapped time index (Kafka's TimeIndex).
#[derive(Debug)]
pub struct TimeIndex {
    idx: AbstractIndex,
}

fn timestamp(entry: &[u8]) -> i64 {
    i64::from_be_bytes(entry[..8].try_into().expect("12-byte entry"))
}

fn relative_offset(entry: &[u8]) -> i32 {
    i32::from_be_bytes(entry[8..12].try_into().expect("12-byte entry"))
}

impl TimeIndex {
    /// Opens or creates the time index for the segment starting at `base_offset`.
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<Self> {
        let idx = AbstractIndex::open(
            path,
            base_offset,
            max_index_size,
            TIME_INDEX_ENTRY_SIZE,
            |map, total| {
                count_live_entries(total, |n| {
                    map[n * TIME_INDEX_ENTRY_SIZE..(n + 1) * TIME_INDEX_ENTRY_SIZE]
                        .iter()
                        .all(|&b| b == 0)
                })
            },
        )?;
        Ok(TimeIndex { idx })
    }

    fn parse(&self, entry: &[u8]) -> TimestampOffset {
        TimestampOffset {
            timestamp: timestamp(entry),
            // Wrapping, as Kafka's `long` arithmetic: a damaged file's entry past
            // `i64::MAX` comes out below the base offset, which `sanity_check` refuses.
            offset: self
                .idx
                .base_offset
                .wrapping_add(i64::from(relative_offset(entry))),
        }
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.idx.base_offset
    }

    /// Path of the `.timeindex` file.
    pub fn path(&self) -> &Path {
        self.idx.path()
    }

    /// Number of entries written.
    pub fn entries(&self) -> usize {
        self.idx.entries()
    }

    /// Current file size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.idx.file_len()
    }

    /// Whether the index is full. One slot is kept free, as in Kafka, for the final
    /// entry written when the segment rolls.
    pub fn is_full(&self) -> bool {
        self.idx.entries() + 1 >= self.idx.max_entries()
    }

    /// Entry `n`.
    pub fn entry(&self, n: usize) -> Option<TimestampOffset> {
        (n < self.entries()).then(|| self.parse(self.idx.entry(n)))
    }

    /// The last entry, or `(NO_TIMESTAMP, base_offset)` when empty.
    pub fn last_entry(&self) -> TimestampOffset {
        match self.entries() {
            0 => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset(),
            },
            n => self.parse(self.idx.entry(n - 1)),
        }
    }

    /// Appends `(timestamp, offset)` if `timestamp` is larger than the last entry's.
    /// `skip_full_check` lets the roll-time entry use the reserved slot.
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<()> {
        let last = self.last_entry();
        if self.entries() > 0 && offset < last.offset {
            return Err(self.invalid(format!(
                "offset {offset} is below the last offset {}",
                last.offset
            )));
        }
        if self.entries() > 0 && timestamp < last.timestamp {
            return Err(self.invalid(format!(
                "timestamp {timestamp} is below the last timestamp {}",
                last.timestamp
            )));
        }
        if timestamp > last.timestamp {
            // Fullness matters only when an entry is actually written.
            if self.idx.entries() >= self.idx.max_entries() || (!skip_full_check && self.is_full())
            {
                return Err(
                    self.invalid(format!("time index is full ({} entries)", self.entries()))
                );
            }
            let relative = i32::try_from(offset - self.base_offset())
                .ok()
                .filter(|r| *r >= 0)
                .ok_or_else(|| {
                    self.invalid(format!(
                        "offset {offset} is outside the 32-bit relative range"
                    ))
                })?;
            let mut entry = [0u8; TIME_INDEX_ENTRY_SIZE];
            entry[..8].copy_from_slice(&timestamp.to_be_bytes());
            entry[8..].copy_from_slice(&relative.to_be_bytes());
            self.idx.push(&entry);
        }
        Ok(())
    }

    fn invalid(&self, reason: String) -> LogError {
        LogError::InvalidIndexAppend {
            path: self.path().to_path_buf(),
            reason,
        }
    }

    /// The largest entry with timestamp `<= target_timestamp`, or
    /// `(NO_TIMESTAMP, base_offset)` when there is none.
    pub fn lookup(&self, target_timestamp: i64) -> TimestampOffset {
        match self
            .idx
            .largest_lower_bound_slot(target_timestamp, timestamp)
        {
            Some(slot) => self.parse(self.idx.entry(slot)),
            None => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset(),
            },
        }
    }

    #[cfg(test)]
    pub(crate) fn lookup_plain(&self, target_timestamp: i64) -> TimestampOffset {
        match self
            .idx
            .largest_lower_bound_slot_plain(target_timestamp, timestamp)
        {
            Some(slot) => self.parse(self.idx.entry(slot)),
            None => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset(),
            },
        }
    }

    /// Removes entries whose offset is `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let base = self.base_offset();
        let key = |e: &[u8]| base.wrapping_add(i64::from(relative_offset(e)));
        let keep = match self.idx.largest_lower_bound_slot(offset, key) {
            None => 0,
            Some(slot) if key(self.idx.entry(slot)) == offset => {
                // Equal offsets may repeat; drop every one of them.
                let mut s = slot;
                while s > 0 && key(self.idx.entry(s - 1)) == offset {
                    s -= 1;
                }
                s
            }
            Some(slot) => slot + 1,
        };
        self.idx.truncate_to_entries(keep);
    }

    /// How many entries, from the first, have offsets `<= offset` and increase (read one
    /// by one, as recovery must: a crash may leave a torn tail).
    pub(crate) fn entries_up_to(&self, offset: i64) -> usize {
        let mut last: Option<TimestampOffset> = None;
        for n in 0..self.entries() {
            let e = self.parse(self.idx.entry(n));
            if e.offset > offset
                || last.is_some_and(|l| e.offset < l.offset || e.timestamp <= l.timestamp)
            {
                return n;
            }
            last = Some(e);
        }
        self.entries()
    }

    /// Keeps the first `n` entries.
    pub(crate) fn truncate_to_entries(&mut self, n: usize) {
        self.idx.truncate_to_entries(n);
    }

    /// Removes every entry.
    pub fn reset(&mut self) {
        self.idx.truncate_to_entries(0);
    }

    /// Cheap consistency checks: the last offset is not below the base and the last
    /// timestamp is not below the first.
    pub fn sanity_check(&self) -> Result<()> {
        if self.entries() == 0 {
            return Ok(());
        }
        let last = self.last_entry();
        let first = self.parse(self.idx.entry(0));
        if last.offset < self.base_offset() {
            return Err(self.corrupt(format!(
                "last offset {} is below the base offset {}",
                last.offset,
                self.base_offset()
            )));
        }
        if last.timestamp < first.timestamp {
            return Err(self.corrupt(format!(
                "last timestamp {} is below the first timestamp {}",
                last.timestamp, first.timestamp
            )));
        }
        Ok(())
    }

    index_file_methods!();
}
