//! The cleaner's key → latest offset map (Kafka's OffsetMap).
//!
//! Kafka's SkimpyOffsetMap stores 16-byte MD5 digests in a fixed buffer, so a rare hash
//! collision can drop a live key. This map keeps the keys themselves and is bounded by
//! a byte budget instead (`log.cleaner.dedupe.buffer.size` shared by the cleaner
//! threads): exact, at the price of memory that grows with key length.

use std::collections::HashMap;

/// Rough per-entry cost of the hash table beyond the key bytes.
const ENTRY_OVERHEAD: usize = 48;

/// Key → offset of its last occurrence in the dirty section.
#[derive(Debug, Default)]
pub struct OffsetMap {
    map: HashMap<Box<[u8]>, i64>,
    bytes: usize,
    capacity_bytes: usize,
    latest_offset: i64,
}

impl OffsetMap {
    /// An empty map that reports full past `capacity_bytes`.
    pub fn new(capacity_bytes: usize) -> Self {
        OffsetMap {
            map: HashMap::new(),
            bytes: 0,
            capacity_bytes,
            latest_offset: -1,
        }
    }

    /// Records that `key` was seen at `offset` (later puts win).
    pub fn put(&mut self, key: &[u8], offset: i64) {
        match self.map.get_mut(key) {
            Some(o) => *o = (*o).max(offset),
            None => {
                self.bytes += key.len() + ENTRY_OVERHEAD;
                self.map.insert(key.into(), offset);
            }
        }
        self.latest_offset = self.latest_offset.max(offset);
    }

    /// The last offset of `key`, if seen.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        self.map.get(key).copied()
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no key was put.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether the byte budget is used up: the cleaner then stops at this segment.
    pub fn is_full(&self) -> bool {
        self.bytes >= self.capacity_bytes
    }

    /// The largest offset put, or -1.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Empties the map for the next log.
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
        self.latest_offset = -1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_offsets_win_and_budget_fills() {
        let mut m = OffsetMap::new(2 * (ENTRY_OVERHEAD + 1));
        m.put(b"a", 3);
        m.put(b"a", 1);
        assert_eq!(m.get(b"a"), Some(3));
        assert!(!m.is_full());
        m.put(b"b", 7);
        assert!(m.is_full());
        assert_eq!(m.latest_offset(), 7);
        assert_eq!(m.len(), 2);
        m.clear();
        assert!(m.is_empty() && m.get(b"b").is_none());
    }
}
