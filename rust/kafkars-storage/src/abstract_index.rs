//! The memory-mapped file behind both indexes (Kafka's AbstractIndex): preallocation,
//! entry count recovery, resize/trim, and the warm-section binary search.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::{Advice, MmapMut, MmapOptions};

use crate::error::{IoContext, LogError, Result};

/// Size of the index tail searched first. Appends and consumer fetches touch the
/// end of the index, so its last pages stay in memory; a plain binary search would
/// fault in cold pages from the whole file on every lookup.
const WARM_SECTION_BYTES: usize = 8192;

/// The file methods an index has through the [`AbstractIndex`] in its `idx` field, the
/// same for both indexes (Kafka's subclasses inherit them).
macro_rules! index_file_methods {
    () => {
        fn corrupt(&self, reason: String) -> LogError {
            LogError::CorruptIndex {
                path: self.path().to_path_buf(),
                reason,
            }
        }

        /// Resizes the file (and mapping) to `new_size` rounded down to whole entries.
        pub fn resize(&mut self, new_size: usize) -> Result<bool> {
            self.idx.resize(new_size)
        }

        /// Resizes back to the configured maximum, so an index reopened for appends has
        /// room.
        pub fn resize_to_max(&mut self) -> Result<bool> {
            self.idx.resize(self.idx.max_index_size())
        }

        /// Shrinks the file to its entries (on roll and close).
        pub fn trim_to_valid_size(&mut self) -> Result<()> {
            self.idx.trim_to_valid_size()
        }

        /// Writes dirty pages to disk (nothing when no entry changed since the last flush).
        pub fn flush(&self) -> Result<()> {
            self.idx.flush()
        }

        /// Whether entries changed since the last flush (clearing that): the caller fsyncs.
        pub(crate) fn take_dirty(&self) -> bool {
            self.idx.take_dirty()
        }

        /// Renames the file (e.g. to add `.deleted`).
        pub fn rename_to(&mut self, path: &Path) -> Result<()> {
            self.idx.rename_to(path)
        }

        /// Deletes the file; returns whether it existed.
        pub fn delete(&self) -> Result<bool> {
            self.idx.delete()
        }
    };
}
pub(crate) use index_file_methods;

/// A fixed-entry-size index file mapped into memory. It keeps no file descriptor open
/// (the mapping outlives it, as Kafka's indexes close their file once mapped): a broker
/// with thousands of partitions holds one descriptor per segment, its `.log`. Resizing
/// and fsync open the file by path for the moment they need it.
#[derive(Debug)]
pub(crate) struct AbstractIndex {
    path: PathBuf,
    mmap: MmapMut,
    pub(crate) base_offset: i64,
    max_index_size: usize,
    entry_size: usize,
    entries: usize,
    /// Entries written since the last fsync: flushing a clean index costs a disk flush
    /// for nothing (a clean shutdown of 9,000 idle partitions did 18,000 of them).
    dirty: AtomicBool,
}

fn round_down(size: u64, entry_size: usize) -> u64 {
    size - size % entry_size as u64
}

/// Maps the `len` bytes `file` has (given, so mapping costs no stat of its own).
fn map(file: &File, path: &Path, len: u64) -> Result<MmapMut> {
    let len = usize::try_from(len).map_err(|_| LogError::CorruptIndex {
        path: path.to_path_buf(),
        reason: format!("file size {len} does not fit in memory"),
    })?;
    // SAFETY: the mapping is private to this process' index object; the index file is
    // only resized through this object (which remaps), and kafkars owns the log
    // directory under an exclusive lock, so no other writer truncates it underneath.
    let mmap = unsafe { MmapOptions::new().len(len).map_mut(file) }.at(path)?;
    // Lookups are binary searches and appends touch one page: readahead around a fault
    // only fills the page cache with the preallocated zero tail, which the next trim
    // then has to drop again (most of a crash recovery's time, before this).
    mmap.advise(Advice::Random).at(path)?;
    Ok(mmap)
}

impl AbstractIndex {
    /// Opens `path`, creating and preallocating it to `max_index_size` (rounded down to
    /// whole entries) when it does not exist. An existing file is mapped at its length;
    /// `live_entries` recovers how many of its entries are real (a preallocated file
    /// left by a crash ends in zeroes).
    pub(crate) fn open(
        path: &Path,
        base_offset: i64,
        max_index_size: usize,
        entry_size: usize,
        live_entries: impl Fn(&[u8], usize) -> usize,
    ) -> Result<Self> {
        // Opened first without O_CREAT: whether the file existed decides how it is read,
        // and asking the open costs no extra stat.
        let (file, exists) = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)
                    .at(path)?;
                file.set_len(round_down(max_index_size as u64, entry_size))
                    .at(path)?;
                (file, false)
            }
            Err(e) => return Err(LogError::io(path, e)),
        };
        let len = file.metadata().at(path)?.len();
        if len % entry_size as u64 != 0 {
            return Err(LogError::CorruptIndex {
                path: path.to_path_buf(),
                reason: format!("file size {len} is not a multiple of the entry size {entry_size}"),
            });
        }
        if len > i32::MAX as u64 {
            return Err(LogError::CorruptIndex {
                path: path.to_path_buf(),
                reason: format!("file size {len} is larger than any index"),
            });
        }
        let mmap = map(&file, path, len)?;
        drop(file);
        let entries = if exists {
            live_entries(&mmap, (len as usize) / entry_size)
        } else {
            0
        };
        Ok(AbstractIndex {
            path: path.to_path_buf(),
            mmap,
            base_offset,
            max_index_size,
            entry_size,
            entries,
            dirty: AtomicBool::new(false),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Entries that fit in the current mapping.
    pub(crate) fn max_entries(&self) -> usize {
        self.mmap.len() / self.entry_size
    }

    pub(crate) fn max_index_size(&self) -> usize {
        self.max_index_size
    }

    pub(crate) fn file_len(&self) -> usize {
        self.mmap.len()
    }

    pub(crate) fn entry(&self, n: usize) -> &[u8] {
        &self.mmap[n * self.entry_size..(n + 1) * self.entry_size]
    }

    /// Writes the next entry. Callers check `entries < max_entries` first.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        debug_assert_eq!(bytes.len(), self.entry_size);
        let at = self.entries * self.entry_size;
        self.mmap[at..at + self.entry_size].copy_from_slice(bytes);
        self.entries += 1;
        *self.dirty.get_mut() = true;
    }

    /// Forgets entries at and after `n` (zeroing them, so a crash leaves a clean tail).
    pub(crate) fn truncate_to_entries(&mut self, n: usize) {
        let n = n.min(self.entries);
        if n < self.entries {
            self.mmap[n * self.entry_size..self.entries * self.entry_size].fill(0);
            *self.dirty.get_mut() = true;
        }
        self.entries = n;
    }

    /// Changes the file and mapping size to `new_size` rounded down to whole entries.
    /// Returns whether anything changed.
    pub(crate) fn resize(&mut self, new_size: usize) -> Result<bool> {
        let rounded = round_down(new_size as u64, self.entry_size) as usize;
        if rounded == self.mmap.len() {
            return Ok(false);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        file.set_len(rounded as u64).at(&self.path)?;
        self.mmap = map(&file, &self.path, rounded as u64)?;
        self.entries = self.entries.min(rounded / self.entry_size);
        Ok(true)
    }

    /// Shrinks the file to exactly its entries, as done when a segment stops being active.
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<()> {
        self.resize(self.entries * self.entry_size).map(|_| ())
    }

    /// Writes dirty pages back and fsyncs the file, if anything was written since the
    /// last time.
    pub(crate) fn flush(&self) -> Result<()> {
        if !self.take_dirty() {
            return Ok(());
        }
        self.mmap.flush().at(&self.path).inspect_err(|_| {
            self.dirty.store(true, Ordering::Release);
        })
    }

    /// Whether entries were written since the last call (or flush): the caller then
    /// fsyncs the file itself.
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    pub(crate) fn rename_to(&mut self, path: &Path) -> Result<()> {
        fs::rename(&self.path, path).at(&self.path)?;
        self.path = path.to_path_buf();
        Ok(())
    }

    /// Removes the file; the mapping stays valid until the index is dropped.
    pub(crate) fn delete(&self) -> Result<bool> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(LogError::io(&self.path, e)),
        }
    }

    /// The slot of the largest entry whose key is `<= target`, or `None` when every
    /// entry is larger (or there are none). Searches the warm tail first.
    pub(crate) fn largest_lower_bound_slot(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.entries == 0 {
            return None;
        }
        let warm_entries = WARM_SECTION_BYTES / self.entry_size;
        let first_hot = (self.entries - 1).saturating_sub(warm_entries);
        if key(self.entry(first_hot)) < target {
            return Some(self.binary_search(target, &key, first_hot, self.entries - 1));
        }
        if key(self.entry(0)) > target {
            return None;
        }
        Some(self.binary_search(target, &key, 0, first_hot))
    }

    /// Plain binary search over the whole index; the warm-section search must agree.
    #[cfg(test)]
    pub(crate) fn largest_lower_bound_slot_plain(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.entries == 0 || key(self.entry(0)) > target {
            return None;
        }
        Some(self.binary_search(target, &key, 0, self.entries - 1))
    }

    /// Largest slot in `[lo, hi]` with key `<= target`, given `key(lo) <= target`.
    fn binary_search(
        &self,
        target: i64,
        key: &impl Fn(&[u8]) -> i64,
        mut lo: usize,
        mut hi: usize,
    ) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if key(self.entry(mid)) <= target {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// Number of live entries among `total`, where `is_blank(n)` tells a zeroed
/// (never written) slot. Entry 0 always counts; blank slots form a suffix in a
/// well-formed file, so this is a binary search, not a scan.
pub(crate) fn count_live_entries(total: usize, is_blank: impl Fn(usize) -> bool) -> usize {
    if total == 0 {
        return 0;
    }
    // Invariant: slot lo is live (or slot 0), slots > hi are blank.
    let (mut lo, mut hi) = (0usize, total - 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if is_blank(mid) {
            hi = mid - 1;
        } else {
            lo = mid;
        }
    }
    if lo == 0 && is_blank(0) { 0 } else { lo + 1 }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::offset_index::OffsetIndex;
    use crate::time_index::TimeIndex;

    fn build(entries: &[(i64, u32)], max_size: usize) -> (tempfile::TempDir, OffsetIndex) {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = OffsetIndex::open(
            &dir.path().join("00000000000000000100.index"),
            100,
            max_size,
        )
        .unwrap();
        for &(o, p) in entries {
            idx.append(o, p).unwrap();
        }
        (dir, idx)
    }

    fn sorted_entries() -> impl Strategy<Value = Vec<(i64, u32)>> {
        proptest::collection::btree_set(101i64..50_000, 0..3000).prop_map(|s| {
            s.into_iter()
                .enumerate()
                .map(|(i, o)| (o, (i as u32 + 1) * 100))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn offset_lookup_matches_linear_scan(entries in sorted_entries(), targets in proptest::collection::vec(0i64..60_000, 1..50)) {
            let (_d, idx) = build(&entries, 64 * 1024);
            for t in targets {
                let oracle = entries.iter().rev().find(|(o, _)| *o <= t).copied().unwrap_or((100, 0));
                let got = idx.lookup(t);
                prop_assert_eq!((got.offset, got.position), oracle);
                // The warm-section search agrees with a plain binary search.
                prop_assert_eq!(idx.lookup_plain(t), got);
            }
        }

        #[test]
        fn time_lookup_matches_linear_scan(entries in sorted_entries(), targets in proptest::collection::vec(0i64..200_000, 1..50)) {
            let dir = tempfile::tempdir().unwrap();
            let mut idx = TimeIndex::open(&dir.path().join("x.timeindex"), 100, 64 * 1024).unwrap();
            let ts_entries: Vec<(i64, i64)> = entries.iter().map(|&(o, _)| (o * 3, o)).collect();
            for &(ts, o) in &ts_entries {
                idx.maybe_append(ts, o, false).unwrap();
            }
            for t in targets {
                let oracle = ts_entries.iter().rev().find(|(ts, _)| *ts <= t).copied().unwrap_or((-1, 100));
                let got = idx.lookup(t);
                prop_assert_eq!((got.timestamp, got.offset), oracle);
                prop_assert_eq!(idx.lookup_plain(t), got);
            }
        }

        #[test]
        fn truncate_to_keeps_smaller_offsets(entries in sorted_entries(), cut in 90i64..60_000) {
            let (_d, mut idx) = build(&entries, 64 * 1024);
            idx.truncate_to(cut);
            let expected = entries.iter().filter(|(o, _)| *o < cut).count();
            prop_assert_eq!(idx.entries(), expected);
        }
    }

    #[test]
    fn append_rules_and_full_index() {
        let (_d, mut idx) = build(&[], 8 * 4);
        idx.append(101, 10).unwrap();
        assert!(idx.append(101, 20).is_err(), "offsets must increase");
        assert!(
            idx.append(100 + i64::from(i32::MAX) + 1, 20).is_err(),
            "relative offset overflow"
        );
        idx.append(102, 20).unwrap();
        idx.append(103, 30).unwrap();
        idx.append(104, 40).unwrap();
        assert!(idx.is_full());
        assert!(idx.append(105, 50).is_err());
    }

    #[test]
    fn reopen_recovers_entry_count_and_trims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        {
            let mut idx = OffsetIndex::open(&path, 0, 1024).unwrap();
            for i in 1..=10 {
                idx.append(i * 10, i as u32 * 4096).unwrap();
            }
            // Crash without trimming: the file keeps its preallocated zero tail.
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1024);
        let mut idx = OffsetIndex::open(&path, 0, 1024).unwrap();
        assert_eq!(idx.entries(), 10);
        assert_eq!(idx.last_entry().offset, 100);
        idx.trim_to_valid_size().unwrap();
        drop(idx);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 80);
        let idx = OffsetIndex::open(&path, 0, 1024).unwrap();
        assert_eq!(idx.entries(), 10);
        assert_eq!(idx.lookup(55).offset, 50);
    }

    /// Descriptors of this process open on `path`.
    fn open_descriptors(path: &std::path::Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == path)
            .count()
    }

    #[test]
    fn a_mapped_index_holds_no_descriptor_and_still_resizes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .canonicalize()
            .unwrap()
            .join("00000000000000000000.index");
        let mut idx = OffsetIndex::open(&path, 0, 1024).unwrap();
        idx.append(10, 4096).unwrap();
        assert_eq!(open_descriptors(&path), 0);
        idx.trim_to_valid_size().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8);
        assert_eq!(open_descriptors(&path), 0);
        assert_eq!(idx.lookup(15).offset, 10);
    }

    #[test]
    fn corrupt_sizes_and_offsets_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        std::fs::write(&path, [1u8; 13]).unwrap();
        assert!(matches!(
            OffsetIndex::open(&path, 0, 1024),
            Err(crate::LogError::CorruptIndex { .. })
        ));
        // An entry below the base offset.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(-5i32).to_be_bytes());
        bytes.extend_from_slice(&100i32.to_be_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let idx = OffsetIndex::open(&path, 1000, 1024).unwrap();
        assert!(idx.sanity_check(1 << 20).is_err());
        // A position past the end of the log.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&5i32.to_be_bytes());
        bytes.extend_from_slice(&100_000i32.to_be_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let idx = OffsetIndex::open(&path, 1000, 1024).unwrap();
        assert!(idx.sanity_check(50_000).is_err());
        assert!(idx.sanity_check(200_000).is_ok());
    }

    #[test]
    fn time_index_keeps_a_slot_for_the_roll_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = TimeIndex::open(&dir.path().join("t.timeindex"), 0, 36).unwrap();
        idx.maybe_append(10, 1, false).unwrap();
        idx.maybe_append(20, 2, false).unwrap();
        assert!(idx.is_full());
        assert!(idx.maybe_append(30, 3, false).is_err());
        idx.maybe_append(30, 3, true).unwrap();
        assert_eq!(idx.entries(), 3);
        // Equal timestamps are not appended; smaller ones are refused.
        let mut idx = TimeIndex::open(&dir.path().join("u.timeindex"), 0, 1200).unwrap();
        idx.maybe_append(10, 1, false).unwrap();
        idx.maybe_append(10, 2, false).unwrap();
        assert_eq!(idx.entries(), 1);
        assert!(idx.maybe_append(5, 3, false).is_err());
        idx.truncate_to(1);
        assert_eq!(idx.entries(), 0);
    }
}
