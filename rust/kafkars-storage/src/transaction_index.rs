//! Kafka's transaction index (`<base offset>.txnindex`): the aborted transactions whose
//! ABORT marker sits in a segment, so read_committed fetches can list the aborted
//! records they return. Each entry is 34 bytes, big-endian: `version: i16 (0),
//! producer_id: i64, first_offset: i64, last_offset: i64, last_stable_offset: i64`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::checkpoint::write_atomically;
use crate::error::{IoContext, LogError, Result};

/// Suffix of transaction index files.
pub const TXN_INDEX_FILE_SUFFIX: &str = ".txnindex";
const ENTRY_SIZE: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// First offset of the transaction's data in this partition.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset once the marker was written.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        out[0..2].copy_from_slice(&VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let i64_at = |i: usize| i64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        (i16::from_be_bytes([b[0], b[1]]) == VERSION).then(|| AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// The entries of a transaction index file; a missing file has none. A partial
/// trailing entry (a torn write) is ignored; an entry of an unknown version is an error.
pub fn read_txn_index(path: &Path) -> Result<Vec<AbortedTxn>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LogError::io(path, e)),
    };
    bytes
        .chunks_exact(ENTRY_SIZE)
        .map(|c| {
            AbortedTxn::decode(c).ok_or_else(|| LogError::MalformedFile {
                path: path.to_path_buf(),
                reason: "unknown transaction index entry version".into(),
            })
        })
        .collect()
}

/// Appends one entry to the index file at `path`.
pub fn append_txn_index(path: &Path, txn: &AbortedTxn) -> Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at(path)?;
    file.write_all(&txn.encode()).at(path)
}

/// Replaces the index file at `path` with `entries` (after a truncation).
pub fn rewrite_txn_index(path: &Path, entries: &[AbortedTxn]) -> Result<()> {
    if entries.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LogError::io(path, e)),
            _ => Ok(()),
        };
    }
    let bytes: Vec<u8> = entries.iter().flat_map(AbortedTxn::encode).collect();
    write_atomically(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_torn_tails_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        assert!(read_txn_index(&path).unwrap().is_empty());
        let a = AbortedTxn {
            producer_id: 7,
            first_offset: 3,
            last_offset: 9,
            last_stable_offset: 10,
        };
        let b = AbortedTxn {
            producer_id: 8,
            first_offset: 11,
            last_offset: 12,
            last_stable_offset: 13,
        };
        append_txn_index(&path, &a).unwrap();
        append_txn_index(&path, &b).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 68);
        assert_eq!(read_txn_index(&path).unwrap(), vec![a, b]);
        let mut torn = fs::read(&path).unwrap();
        torn.truncate(50);
        fs::write(&path, &torn).unwrap();
        assert_eq!(read_txn_index(&path).unwrap(), vec![a]);
        rewrite_txn_index(&path, &[b]).unwrap();
        assert_eq!(read_txn_index(&path).unwrap(), vec![b]);
        rewrite_txn_index(&path, &[]).unwrap();
        assert!(!path.exists());
        fs::write(&path, [0xff; 34]).unwrap();
        assert!(read_txn_index(&path).is_err());
    }
}
