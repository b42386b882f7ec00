//! The log cleaner: last value per key at the original offsets, tombstones and their
//! delete horizon, the dirty ratio, and crashes at each file stage of a swap.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kafkars_record::{NewRecord, RecordBatchBuilder};
use kafkars_storage::{
    CleanStage, Clock, Log, LogConfig, LogError, LogManager, MockClock, OffsetMap, TopicPartition,
};
use proptest::prelude::*;

/// (offset, key, value) of every record in the log, reading from the log start.
/// A record as read back: (offset, key, value).
type Rec = (i64, Vec<u8>, Option<Vec<u8>>);

fn contents(log: &Log) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let info = log
            .read(offset, 1 << 20, log.log_end_offset(), true)
            .unwrap();
        let Some(slice) = info.records else { break };
        let bytes = slice.read_to_vec().unwrap();
        let mut last = offset;
        for batch in kafkars_record::batches(&bytes) {
            let batch = batch.unwrap();
            batch.validate().unwrap();
            for r in batch.records().unwrap().iter() {
                let r = r.unwrap();
                if r.offset >= offset {
                    out.push((
                        r.offset,
                        r.key.unwrap().to_vec(),
                        r.value.map(<[u8]>::to_vec),
                    ));
                }
            }
            last = batch.last_offset();
        }
        offset = last + 1;
    }
    out
}

/// What compaction must leave: the last record of each key.
fn last_per_key(all: &[Rec]) -> Vec<Rec> {
    let mut last: BTreeMap<Vec<u8>, (i64, Option<Vec<u8>>)> = BTreeMap::new();
    for (o, k, v) in all {
        last.insert(k.clone(), (*o, v.clone()));
    }
    let mut out: Vec<_> = last.into_iter().map(|(k, (o, v))| (o, k, v)).collect();
    out.sort();
    out
}

fn config(segment_bytes: u32) -> LogConfig {
    LogConfig {
        segment_bytes,
        compacted: true,
        delete_policy: false,
        min_cleanable_dirty_ratio: 0.01,
        index_interval_bytes: 128,
        max_index_size: 4096,
        ..LogConfig::default()
    }
}

fn manager(dir: &Path, clock: &Arc<MockClock>) -> Arc<LogManager> {
    let clock: Arc<dyn Clock> = clock.clone();
    let m = LogManager::new(vec![dir.to_path_buf()], 0, Some("c"), clock).unwrap();
    Arc::new(m)
}

/// Appends `(key, value)` records in batches of `per_batch`, then rolls so every record
/// is in an inactive (cleanable) segment.
fn fill(log: &Log, records: &[(u8, Option<u8>)], per_batch: usize, ts: i64) {
    for chunk in records.chunks(per_batch.max(1)) {
        let mut b = RecordBatchBuilder::new();
        for (k, v) in chunk {
            b.append(NewRecord {
                timestamp: ts,
                key: Some(vec![b'k', *k]),
                value: v.map(|v| vec![b'v', v]),
                headers: vec![],
            });
        }
        let bytes = b.build().unwrap();
        log.append_as_leader(&bytes, 0).unwrap();
        log.set_high_watermark(log.log_end_offset());
    }
    log.roll().unwrap();
}

fn no_crash(_: CleanStage) -> kafkars_storage::Result<()> {
    Ok(())
}

fn clean(m: &LogManager, force: bool) -> Option<kafkars_storage::CleanerStats> {
    let mut map = OffsetMap::new(1 << 20);
    m.clean_once(&mut map, 4096, force, &no_crash).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn keeps_the_last_record_per_key_at_its_offset(
        records in prop::collection::vec((0u8..12, prop::option::weighted(0.8, any::<u8>())), 1..300),
        per_batch in 1usize..9,
        segment_bytes in 300u32..3000,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(1_700_000_000_000));
        let m = manager(dir.path(), &clock);
        let tp = TopicPartition::new("t", 0);
        let log = m.get_or_create_log(&tp, config(segment_bytes)).unwrap();
        fill(&log, &records, per_batch, clock.now_ms());
        let before = contents(&log);
        let leo = log.log_end_offset();
        let stats = clean(&m, false).expect("dirty log is cleaned");
        prop_assert_eq!(stats.end_offset, leo);
        let after = contents(&log);
        // Tombstones were in the dirty section: they stay this pass.
        prop_assert_eq!(&after, &last_per_key(&before));
        prop_assert_eq!(log.log_end_offset(), leo);
        prop_assert_eq!(m.cleaner_checkpoints().unwrap().get(&tp).copied(), Some(leo));
        // Nothing dirty remains.
        prop_assert!(clean(&m, false).is_none());
    }
}

#[test]
fn tombstones_go_after_the_delete_horizon() {
    let dir = tempfile::tempdir().unwrap();
    let now = kafkars_storage::SystemClock.now_ms();
    let clock = Arc::new(MockClock::new(now));
    let m = manager(dir.path(), &clock);
    let tp = TopicPartition::new("t", 0);
    let log = m
        .get_or_create_log(
            &tp,
            LogConfig {
                delete_retention_ms: 60_000,
                ..config(1 << 20)
            },
        )
        .unwrap();
    fill(
        &log,
        &[
            (1, Some(1)),
            (2, Some(2)),
            (1, None),
            (3, Some(3)),
            (2, None),
        ],
        2,
        now,
    );
    clean(&m, false).unwrap();
    let first = contents(&log);
    assert_eq!(
        first,
        vec![
            (2, b"k\x01".to_vec(), None),
            (3, b"k\x03".to_vec(), Some(b"v\x03".to_vec())),
            (4, b"k\x02".to_vec(), None)
        ]
    );
    // Within delete.retention.ms a pass keeps them.
    clock.advance(30_000);
    clean(&m, true).unwrap();
    assert_eq!(contents(&log), first);
    // Past it they go; the live key stays at its offset.
    clock.advance(31_000);
    let stats = clean(&m, true).unwrap();
    assert_eq!(stats.tombstones_removed, 2);
    assert_eq!(
        contents(&log),
        vec![(3, b"k\x03".to_vec(), Some(b"v\x03".to_vec()))]
    );
    assert_eq!(log.log_end_offset(), 5);
}

#[test]
fn dirty_ratio_and_compaction_lag_hold_cleaning_back() {
    let dir = tempfile::tempdir().unwrap();
    let now = kafkars_storage::SystemClock.now_ms();
    let clock = Arc::new(MockClock::new(now));
    let m = manager(dir.path(), &clock);
    let tp = TopicPartition::new("t", 0);
    let log = m
        .get_or_create_log(
            &tp,
            LogConfig {
                min_compaction_lag_ms: 10_000,
                ..config(1 << 20)
            },
        )
        .unwrap();
    fill(&log, &[(1, Some(1)), (1, Some(2))], 1, now);
    assert!(clean(&m, false).is_none(), "records younger than the lag");
    clock.advance(10_001);
    assert!(clean(&m, false).is_some());
    // Cleaned: 1 record of 2 dirty bytes' worth; a small new dirty section stays below
    // a high ratio.
    log.update_config(LogConfig {
        min_cleanable_dirty_ratio: 0.9,
        ..log.config()
    });
    fill(&log, &[(2, Some(1))], 1, clock.now_ms());
    assert!(clean(&m, false).is_none(), "dirty ratio below 0.9");
    // The active segment is never cleaned.
    let active_before = log.segment_base_offsets().last().copied();
    let mut b = RecordBatchBuilder::new();
    b.append(NewRecord {
        timestamp: clock.now_ms(),
        key: Some(b"k\x02".to_vec()),
        value: Some(b"x".to_vec()),
        headers: vec![],
    });
    let bytes = b.build().unwrap();
    log.append_as_leader(&bytes, 0).unwrap();
    log.set_high_watermark(log.log_end_offset());
    clean(&m, true);
    assert_eq!(log.segment_base_offsets().last().copied(), active_before);
    assert_eq!(contents(&log).last().unwrap().0, log.log_end_offset() - 1);
}

/// A crash after each stage, then a restart with recovery: the log must read back as
/// valid batches with increasing offsets and hold either the old or the cleaned records
/// (the cleaned ones once the `.swap` exists), with no `.cleaned`/`.swap` left behind.
#[test]
fn a_crash_at_each_stage_leaves_a_consistent_log() {
    for stage in [CleanStage::Cleaned, CleanStage::Swap, CleanStage::Deleted] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(1_700_000_000_000));
        let tp = TopicPartition::new("t", 0);
        let records: Vec<(u8, Option<u8>)> = (0..200u32)
            .map(|i| ((i % 7) as u8, Some(i as u8)))
            .collect();
        let (before, expected) = {
            let m = manager(dir.path(), &clock);
            let log = m.get_or_create_log(&tp, config(600)).unwrap();
            fill(&log, &records, 3, clock.now_ms());
            let before = contents(&log);
            let crash = move |s: CleanStage| {
                if s == stage {
                    Err(LogError::Closed(format!("injected crash after {s:?}")))
                } else {
                    Ok(())
                }
            };
            let mut map = OffsetMap::new(1 << 20);
            let err = m.clean_once(&mut map, 4096, false, &crash).unwrap_err();
            assert!(err.to_string().contains("injected"), "{err}");
            (before.clone(), last_per_key(&before))
        };
        // Restart without the clean-shutdown marker.
        let m = manager(dir.path(), &clock);
        let cfg = config(600);
        m.load_logs(1, &|_| cfg.clone()).unwrap();
        let log = m.get_log(&tp).unwrap();
        log.set_high_watermark(log.log_end_offset());
        let after = contents(&log);
        let offsets: Vec<i64> = after.iter().map(|r| r.0).collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "{stage:?}: {offsets:?}"
        );
        assert_eq!(log.log_end_offset(), 200, "{stage:?}");
        // Every surviving record is an original one at its original offset, and the
        // last value of every key is still there.
        for r in &after {
            assert!(before.contains(r), "{stage:?}: {r:?} was never written");
        }
        for r in &expected {
            assert!(after.contains(r), "{stage:?}: lost {r:?}");
        }
        if stage != CleanStage::Cleaned {
            // The first group's swap was completed at load.
            assert!(after.len() < before.len(), "{stage:?}");
        }
        let leftovers: Vec<String> = std::fs::read_dir(log.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
            .collect();
        assert!(leftovers.is_empty(), "{stage:?}: {leftovers:?}");
        // And a full clean afterwards reaches the compacted state.
        clean(&m, true).unwrap();
        assert_eq!(contents(&log), expected, "{stage:?}");
    }
}

#[test]
fn retention_rolls_an_expired_active_segment_then_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let now = kafkars_storage::SystemClock.now_ms();
    let clock = Arc::new(MockClock::new(now));
    let m = manager(dir.path(), &clock);
    let tp = TopicPartition::new("t", 0);
    let log = m
        .get_or_create_log(
            &tp,
            LogConfig {
                retention_ms: 1_000,
                file_delete_delay_ms: 500,
                ..common::small_config()
            },
        )
        .unwrap();
    let bytes = common::batch(5, now, 10);
    log.append_as_leader(&bytes, 0).unwrap();
    log.set_high_watermark(log.log_end_offset());
    assert_eq!(m.cleanup_logs(now).unwrap(), 0);
    clock.advance(1_010);
    assert_eq!(m.cleanup_logs(clock.now_ms()).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 5);
    assert_eq!(log.segment_base_offsets(), vec![5]);
    let deleted = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".deleted")
            })
            .count()
    };
    assert_eq!(deleted(&log.dir()), 3);
    assert_eq!(m.delete_pending_segments(clock.now_ms()).unwrap(), 0);
    clock.advance(500);
    assert_eq!(m.delete_pending_segments(clock.now_ms()).unwrap(), 1);
    assert_eq!(deleted(&log.dir()), 0);
    // DeleteRecords moves the start; the next retention check drops the segments.
    let bytes = common::batch(5, clock.now_ms(), 10);
    log.append_as_leader(&bytes, 0).unwrap();
    log.set_high_watermark(log.log_end_offset());
    log.roll().unwrap();
    assert_eq!(log.delete_records(8).unwrap(), 8);
    assert!(log.delete_records(11).is_err());
    assert_eq!(log.delete_records(-1).unwrap(), 10);
    assert_eq!(m.cleanup_logs(clock.now_ms()).unwrap(), 1);
    assert_eq!(log.segment_base_offsets(), vec![10]);
}

/// A transactional batch of producer `pid` with `(key, value)` records.
fn txn_batch(pid: i64, seq: i32, records: &[(u8, u8)], ts: i64) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new()
        .producer(pid, 0, seq)
        .transactional(true);
    for (k, v) in records {
        b.append(NewRecord {
            timestamp: ts,
            key: Some(vec![b'k', *k]),
            value: Some(vec![b'v', *v]),
            headers: vec![],
        });
    }
    b.build().unwrap()
}

/// Data records (offset, key, value) and the number of control batches, from the start.
fn data_and_markers(log: &Log) -> (Vec<Rec>, usize) {
    let info = log
        .read(log.log_start_offset(), 1 << 20, log.log_end_offset(), true)
        .unwrap();
    let bytes = info
        .records
        .map(|s| s.read_to_vec().unwrap())
        .unwrap_or_default();
    let (mut data, mut markers) = (Vec::new(), 0);
    for batch in kafkars_record::batches(&bytes) {
        let batch = batch.unwrap();
        batch.validate().unwrap();
        if batch.is_control() {
            markers += 1;
            continue;
        }
        for r in batch.records().unwrap().iter() {
            let r = r.unwrap();
            data.push((
                r.offset,
                r.key.unwrap().to_vec(),
                r.value.map(<[u8]>::to_vec),
            ));
        }
    }
    (data, markers)
}

#[test]
fn aborted_records_go_and_markers_follow_their_data_out() {
    let dir = tempfile::tempdir().unwrap();
    let now = kafkars_storage::SystemClock.now_ms();
    let clock = Arc::new(MockClock::new(now));
    let m = manager(dir.path(), &clock);
    let tp = TopicPartition::new("t", 0);
    let log = m
        .get_or_create_log(
            &tp,
            LogConfig {
                delete_retention_ms: 60_000,
                ..config(1 << 20)
            },
        )
        .unwrap();
    let append = |bytes: Vec<u8>| {
        log.append_as_leader(&bytes, 0).unwrap();
        log.set_high_watermark(log.log_end_offset());
    };
    // Producer 7 aborts k1, k2 (offsets 0-1, ABORT at 2); producer 8 commits k1 (3, COMMIT
    // at 4); producer 7 then commits k3 (5, COMMIT at 6).
    append(txn_batch(7, 0, &[(1, 1), (2, 2)], now));
    log.append_txn_marker(7, 0, 0, false, 0).unwrap();
    append(txn_batch(8, 0, &[(1, 9)], now));
    log.append_txn_marker(8, 0, 0, true, 0).unwrap();
    append(txn_batch(7, 2, &[(3, 3)], now));
    log.append_txn_marker(7, 0, 0, true, 0).unwrap();
    log.set_high_watermark(log.log_end_offset());
    log.roll().unwrap();

    let stats = clean(&m, false).unwrap();
    assert_eq!(stats.aborted_records_removed, 2);
    let committed = vec![
        (3, b"k\x01".to_vec(), Some(b"v\x09".to_vec())),
        (5, b"k\x03".to_vec(), Some(b"v\x03".to_vec())),
    ];
    // Markers stay within delete.retention.ms.
    assert_eq!(data_and_markers(&log), (committed.clone(), 3));
    // Past it, the ABORT marker (no records left) goes; the COMMIT markers of
    // transactions with records stay.
    clock.advance(61_000);
    let stats = clean(&m, true).unwrap();
    assert_eq!(stats.markers_removed, 1);
    assert_eq!(data_and_markers(&log), (committed, 2));
    assert_eq!(log.log_end_offset(), 7);
}

#[test]
fn an_open_transaction_is_not_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(1_700_000_000_000));
    let m = manager(dir.path(), &clock);
    let tp = TopicPartition::new("t", 0);
    let log = m.get_or_create_log(&tp, config(1 << 20)).unwrap();
    let open = txn_batch(7, 0, &[(1, 1)], clock.now_ms());
    log.append_as_leader(&open, 0).unwrap();
    fill(&log, &[(1, Some(2))], 1, clock.now_ms());
    // The last stable offset is 0 (producer 7's transaction is open): nothing is dirty.
    assert_eq!(log.last_stable_offset(), 0);
    assert!(clean(&m, true).is_none());
}
