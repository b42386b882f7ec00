//! The `.index` file: a sparse map from offsets to positions in the segment's `.log`.
//!
//! Entries are 8 bytes, big-endian: the offset relative to the segment's base offset
//! (i32) and the byte position of a batch in the `.log` file (i32), exactly as Kafka
//! writes them.

use std::path::Path;

use crate::abstract_index::{AbstractIndex, count_live_entries, index_file_methods};
use crate::error::{LogError, Result};

/// Size of one `.index` entry.
pub const OFFSET_INDEX_ENTRY_SIZE: usize = 8;

/// An offset and the position in the `.log` file where the batch holding it (or an
/// earlier batch) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the `.log` file.
    pub position: u32,
}

/// A memory-mapped offset index (Kafka's OffsetIndex).
#[derive(Debug)]
pub struct OffsetIndex {
    idx: AbstractIndex,
}

fn relative_offset(entry: &[u8]) -> i32 {
    i32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]])
}

fn physical_position(entry: &[u8]) -> i32 {
    i32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]])
}

impl OffsetIndex {
    /// Opens or creates the index for the segment starting at `base_offset`.
    /// A new file is preallocated to `max_index_size`; an existing one keeps its size.
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<Self> {
        let idx = AbstractIndex::open(
            path,
            base_offset,
            max_index_size,
            OFFSET_INDEX_ENTRY_SIZE,
            // Position 0 never appears in an entry (the first entry is added only
            // after index.interval.bytes), so an all-zero slot was never written.
            |map, total| {
                count_live_entries(total, |n| {
                    map[n * OFFSET_INDEX_ENTRY_SIZE..(n + 1) * OFFSET_INDEX_ENTRY_SIZE]
                        .iter()
                        .all(|&b| b == 0)
                })
            },
        )?;
        Ok(OffsetIndex { idx })
    }

    fn parse(&self, entry: &[u8]) -> OffsetPosition {
        OffsetPosition {
            offset: self.key(entry),
            position: physical_position(entry) as u32,
        }
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.idx.base_offset
    }

    /// Path of the `.index` file.
    pub fn path(&self) -> &Path {
        self.idx.path()
    }

    /// Number of entries written.
    pub fn entries(&self) -> usize {
        self.idx.entries()
    }

    /// Entries the file has room for at its current size.
    pub fn max_entries(&self) -> usize {
        self.idx.max_entries()
    }

    /// Current file size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.idx.file_len()
    }

    /// Whether no more entries fit.
    pub fn is_full(&self) -> bool {
        self.idx.entries() >= self.idx.max_entries()
    }

    /// Entry `n` (absolute offset and position).
    pub fn entry(&self, n: usize) -> Option<OffsetPosition> {
        (n < self.entries()).then(|| self.parse(self.idx.entry(n)))
    }

    /// The last entry, or `(base_offset, 0)` when empty.
    pub fn last_entry(&self) -> OffsetPosition {
        match self.entries() {
            0 => OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            },
            n => self.parse(self.idx.entry(n - 1)),
        }
    }

    /// The last offset indexed, or the base offset when empty.
    pub fn last_offset(&self) -> i64 {
        self.last_entry().offset
    }

    /// The largest entry with offset `<= target_offset` (the "low point" from which
    /// to scan the `.log`), or `(base_offset, 0)` when there is none.
    pub fn lookup(&self, target_offset: i64) -> OffsetPosition {
        match self
            .idx
            .largest_lower_bound_slot(target_offset, |e| self.key(e))
        {
            Some(slot) => self.parse(self.idx.entry(slot)),
            None => OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            },
        }
    }

    #[cfg(test)]
    pub(crate) fn lookup_plain(&self, target_offset: i64) -> OffsetPosition {
        match self
            .idx
            .largest_lower_bound_slot_plain(target_offset, |e| self.key(e))
        {
            Some(slot) => self.parse(self.idx.entry(slot)),
            None => OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            },
        }
    }

    /// The absolute offset of an entry. Wrapping, as Kafka's `long` arithmetic: a damaged
    /// file's entry past `i64::MAX` comes out below the base offset, which
    /// `sanity_check` refuses, instead of panicking on the overflow.
    fn key(&self, entry: &[u8]) -> i64 {
        self.idx
            .base_offset
            .wrapping_add(i64::from(relative_offset(entry)))
    }

    /// Appends `(offset, position)`. Offsets must increase and fit the 32-bit
    /// relative range, and the index must not be full.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        if self.is_full() {
            return Err(self.invalid(format!("index is full ({} entries)", self.entries())));
        }
        if self.entries() > 0 && offset <= self.last_offset() {
            return Err(self.invalid(format!(
                "offset {offset} is not larger than the last offset {}",
                self.last_offset()
            )));
        }
        let relative = offset - self.base_offset();
        let relative = i32::try_from(relative)
            .ok()
            .filter(|r| *r >= 0)
            .ok_or_else(|| {
                self.invalid(format!(
                    "offset {offset} is outside the 32-bit relative range"
                ))
            })?;
        let position = i32::try_from(position).map_err(|_| {
            self.invalid(format!("position {position} does not fit an index entry"))
        })?;
        let mut entry = [0u8; OFFSET_INDEX_ENTRY_SIZE];
        entry[..4].copy_from_slice(&relative.to_be_bytes());
        entry[4..].copy_from_slice(&position.to_be_bytes());
        self.idx.push(&entry);
        Ok(())
    }

    fn invalid(&self, reason: String) -> LogError {
        LogError::InvalidIndexAppend {
            path: self.path().to_path_buf(),
            reason,
        }
    }

    /// Removes entries for offsets `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let keep = match self.idx.largest_lower_bound_slot(offset, |e| self.key(e)) {
            None => 0,
            Some(slot) if self.key(self.idx.entry(slot)) == offset => slot,
            Some(slot) => slot + 1,
        };
        self.idx.truncate_to_entries(keep);
    }

    /// Entry `n` as stored (recovery reads entries one by one: a file left by a crash may
    /// hold a torn tail that a binary search must not see).
    pub(crate) fn entry_at(&self, n: usize) -> OffsetPosition {
        self.parse(self.idx.entry(n))
    }

    /// Keeps the first `n` entries.
    pub(crate) fn truncate_to_entries(&mut self, n: usize) {
        self.idx.truncate_to_entries(n);
    }

    /// Removes every entry.
    pub fn reset(&mut self) {
        self.idx.truncate_to_entries(0);
    }

    /// Checks what can be checked cheaply: the last offset is not below the base and
    /// the last position lies inside a `.log` of `log_size` bytes.
    pub fn sanity_check(&self, log_size: u64) -> Result<()> {
        let last = self.last_entry();
        if self.entries() > 0 && last.offset <= self.base_offset() {
            return Err(self.corrupt(format!(
                "last offset {} is not above the base offset {}",
                last.offset,
                self.base_offset()
            )));
        }
        if u64::from(last.position) > log_size {
            return Err(self.corrupt(format!(
                "last position {} is past the end of the log ({log_size} bytes)",
                last.position
            )));
        }
        Ok(())
    }

    index_file_methods!();
}
