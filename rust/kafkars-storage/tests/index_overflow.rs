//! Found by fuzzing (fuzz/fuzz_targets/index_files.rs): an index whose entries put an
//! offset past `i64::MAX` (a segment named near `i64::MAX`, or a damaged entry) made
//! opening and checking the index panic on the addition. It must be refused as corrupt.

use kafkars_storage::{OffsetIndex, TimeIndex};

const BASE: i64 = i64::MAX - 10;

#[test]
fn offset_index_entry_past_i64_max_is_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{BASE:020}.index"));
    // Relative offset 100 (past i64::MAX from BASE), position 0.
    std::fs::write(&path, [0, 0, 0, 100, 0, 0, 0, 0]).unwrap();
    let index = OffsetIndex::open(&path, BASE, 1 << 12).unwrap();
    assert!(index.sanity_check(1 << 20).is_err());
    let _ = index.lookup(i64::MAX);
}

#[test]
fn time_index_entry_past_i64_max_is_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{BASE:020}.timeindex"));
    // Timestamp 1, relative offset 100.
    std::fs::write(&path, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 100]).unwrap();
    let mut index = TimeIndex::open(&path, BASE, 1 << 12).unwrap();
    assert!(index.sanity_check().is_err());
    let _ = index.lookup(i64::MAX);
    index.truncate_to(i64::MAX);
}
