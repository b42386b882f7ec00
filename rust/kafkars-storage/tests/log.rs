mod common;

use std::sync::Arc;

use common::*;
use kafkars_record::{Compression, RecordBatch, TimestampType, batches};
use kafkars_storage::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use kafkars_storage::{LogConfig, LogError, MockClock, TopicCompression};

#[test]
fn append_and_read_round_trip_returns_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(1_000));
    let log = open(dir.path(), small_config(), true, 0, &clock);
    for i in 0..20 {
        let b = batch(5, 1_000 + i * 10, 100);
        let info = log.append_as_leader(&b, 3).unwrap();
        assert_eq!(info.first_offset, i * 5);
        assert_eq!(info.last_offset, i * 5 + 4);
        assert_eq!(info.num_messages, 5);
    }
    assert_eq!(log.log_end_offset(), 100);
    log.set_high_watermark(100);
    // An offset in the middle of a batch returns that whole batch.
    let info = log.read(37, 1, 100, true).unwrap();
    let bytes = info.records.as_ref().unwrap().read_to_vec().unwrap();
    assert_eq!(offsets_of(&bytes), vec![(35, 39)]);
    assert_eq!(info.fetch_offset_metadata.message_offset, 37);
    // max_bytes without min_one_message cuts the slice short.
    let one = RecordBatch::new(&bytes).unwrap().size_in_bytes() as u32;
    let info = log.read(35, one * 3, 100, false).unwrap();
    assert_eq!(info.records_size(), one * 3);
    assert_eq!(
        offsets_of(&info.records.unwrap().read_to_vec().unwrap()).len(),
        3
    );
    let info = log.read(35, 10, 100, false).unwrap();
    assert!(info.first_entry_incomplete);
    // The isolation bound (HW) stops reads.
    log.set_high_watermark(50);
    let info = log.read(40, 1 << 20, log.high_watermark(), false).unwrap();
    let got = offsets_of(&info.records.unwrap().read_to_vec().unwrap());
    assert_eq!(got.last().unwrap().1, 49);
    let info = log.read(50, 1 << 20, 50, false).unwrap();
    assert!(info.records.is_none());
    // Out of range.
    let err = log.read(101, 100, 100, false).unwrap_err();
    assert_eq!(err.kafka_error_code(), 1);
    assert!(log.read(100, 100, 100, false).unwrap().records.is_none());
    assert_eq!(log.latest_epoch(), Some(3));
    assert_eq!(log.end_offset_for_epoch(3), (3, 100));
}

#[test]
fn validation_errors_map_to_kafka_codes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let config = LogConfig {
        max_message_bytes: 500,
        ..small_config()
    };
    let log = open(dir.path(), config, true, 0, &clock);
    let big = batch(10, 0, 100);
    assert_eq!(
        log.append_as_leader(&big, 0)
            .unwrap_err()
            .kafka_error_code(),
        10
    );
    let mut bad = batch(1, 0, 10);
    let n = bad.len();
    bad[n - 2] ^= 0xff;
    assert_eq!(
        log.append_as_leader(&bad, 0)
            .unwrap_err()
            .kafka_error_code(),
        2
    );
    let mut trailing = batch(1, 0, 10);
    trailing.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        log.append_as_leader(&trailing, 0)
            .unwrap_err()
            .kafka_error_code(),
        2
    );
    assert_eq!(log.log_end_offset(), 0);

    let compacted = LogConfig {
        compacted: true,
        ..small_config()
    };
    let dir2 = tempfile::tempdir().unwrap();
    let log = open(dir2.path(), compacted, true, 0, &clock);
    let keyless = batch(2, 0, 10);
    assert_eq!(
        log.append_as_leader(&keyless, 0)
            .unwrap_err()
            .kafka_error_code(),
        87
    );
    log.append_as_leader(&keyed_batch(2, 0), 0).unwrap();

    let dir3 = tempfile::tempdir().unwrap();
    let tiny_segments = LogConfig {
        segment_bytes: 200,
        ..small_config()
    };
    let log = open(dir3.path(), tiny_segments, true, 0, &clock);
    let b = batch(5, 0, 100);
    assert!(matches!(
        log.append_as_leader(&b, 0),
        Err(LogError::RecordBatchTooLarge { .. })
    ));
    assert_eq!(
        log.append_as_leader(&batch(5, 0, 100), 0)
            .unwrap_err()
            .kafka_error_code(),
        18
    );
}

#[test]
fn log_append_time_and_recompression() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(777_000));
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        compression: TopicCompression::Codec(Compression::Gzip),
        ..small_config()
    };
    let log = open(dir.path(), config, true, 0, &clock);
    let b = batch(3, 5, 50);
    let info = log.append_as_leader(&b, 1).unwrap();
    assert_eq!(info.log_append_time, 777_000);
    assert_eq!(info.target_compression, Compression::Gzip);
    let read = log.read(0, 1 << 20, 3, false).unwrap();
    let bytes = read.records.unwrap().read_to_vec().unwrap();
    let stored = RecordBatch::new(&bytes).unwrap();
    stored.validate().unwrap();
    assert_eq!(stored.compression().unwrap(), Compression::Gzip);
    assert_eq!(stored.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(stored.max_timestamp(), 777_000);
    assert_eq!(stored.partition_leader_epoch(), 1);
}

#[test]
fn leader_append_leaves_the_produced_bytes_as_they_are() {
    // Offsets, epoch and LogAppendTime (with its CRC) go into header copies: the request
    // buffer is written as it is, two batches in one append.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(888_000));
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..small_config()
    };
    let log = open(dir.path(), config, true, 0, &clock);
    log.append_as_leader(&batch(2, 1, 10), 0).unwrap();
    let produced = [batch(3, 5, 50), batch(2, 9, 50)].concat();
    let before = produced.clone();
    let info = log.append_as_leader(&produced, 4).unwrap();
    assert_eq!(produced, before);
    assert_eq!((info.first_offset, info.last_offset), (2, 6));
    let read = log.read(2, 1 << 20, 7, false).unwrap();
    let bytes = read.records.unwrap().read_to_vec().unwrap();
    let stored: Vec<_> = batches(&bytes).map(Result::unwrap).collect();
    assert_eq!(stored.len(), 2);
    for (b, base) in stored.iter().zip([2, 5]) {
        b.validate().unwrap();
        assert_eq!(b.base_offset(), base);
        assert_eq!(b.partition_leader_epoch(), 4);
        assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(b.max_timestamp(), 888_000);
    }
}

#[test]
fn roll_on_size_time_index_full_and_offset_overflow() {
    let clock = Arc::new(MockClock::new(0));
    // Size.
    let dir = tempfile::tempdir().unwrap();
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 1000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    for _ in 0..10 {
        log.append_as_leader(&batch(1, 0, 200), 0).unwrap();
    }
    assert!(log.num_segments() >= 3, "{}", log.num_segments());
    for (i, base) in log.segment_base_offsets().iter().enumerate().skip(1) {
        assert!(*base > 0, "segment {i}");
    }
    // Time, measured by record timestamps since the first batch.
    let dir = tempfile::tempdir().unwrap();
    let log = open(
        dir.path(),
        LogConfig {
            segment_ms: 1000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    log.append_as_leader(&batch(1, 10_000, 10), 0).unwrap();
    log.append_as_leader(&batch(1, 10_900, 10), 0).unwrap();
    assert_eq!(log.num_segments(), 1);
    log.append_as_leader(&batch(1, 11_001, 10), 0).unwrap();
    assert_eq!(log.num_segments(), 2);
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    // Time without timestamps falls back to the wall clock since creation.
    let dir = tempfile::tempdir().unwrap();
    let log = open(
        dir.path(),
        LogConfig {
            segment_ms: 1000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    log.append_as_leader(&batch(1, -1, 10), 0).unwrap();
    clock.advance(500);
    log.append_as_leader(&batch(1, -1, 10), 0).unwrap();
    assert_eq!(log.num_segments(), 1);
    clock.advance(600);
    log.append_as_leader(&batch(1, -1, 10), 0).unwrap();
    assert_eq!(log.num_segments(), 2);
    // Index full: 4 offset index entries.
    let dir = tempfile::tempdir().unwrap();
    let log = open(
        dir.path(),
        LogConfig {
            index_interval_bytes: 1,
            max_index_size: 32,
            ..LogConfig::default()
        },
        true,
        0,
        &clock,
    );
    for _ in 0..12 {
        log.append_as_leader(&batch(1, 0, 10), 0).unwrap();
    }
    assert!(log.num_segments() >= 3, "{}", log.num_segments());
    // Relative offset overflow: a follower append far ahead.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), small_config(), true, 0, &clock);
    let b = batch(1, 0, 10);
    log.append_as_follower(&b).unwrap();
    let mut far = batch(1, 0, 10);
    kafkars_record::set_base_offset(&mut far, 1 + i64::from(i32::MAX) + 5);
    log.append_as_follower(&far).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, i64::from(i32::MAX) + 6]);
}

#[test]
fn fetch_offset_by_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 3000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    for i in 0..50 {
        // Records at 1000 + 10*i .. +2 within each batch of 3.
        log.append_as_leader(&batch(3, 1000 + i * 10, 80), 0)
            .unwrap();
    }
    assert!(log.num_segments() > 2);
    let found = log
        .fetch_offset_by_timestamp(1000 + 25 * 10 + 1)
        .unwrap()
        .unwrap();
    assert_eq!(found.offset, 25 * 3 + 1);
    assert_eq!(found.timestamp, 1251);
    // Between batches: the next record.
    let found = log.fetch_offset_by_timestamp(1255).unwrap().unwrap();
    assert_eq!(found.offset, 26 * 3);
    assert!(log.fetch_offset_by_timestamp(99_999).unwrap().is_none());
    assert_eq!(log.fetch_offset_by_timestamp(0).unwrap().unwrap().offset, 0);
    assert_eq!(
        log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
            .unwrap()
            .unwrap()
            .offset,
        0
    );
    assert_eq!(
        log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)
            .unwrap()
            .unwrap()
            .offset,
        150
    );
    let max = log
        .fetch_offset_by_timestamp(MAX_TIMESTAMP)
        .unwrap()
        .unwrap();
    assert_eq!((max.timestamp, max.offset), (1000 + 49 * 10 + 2, 149));
}

#[test]
fn truncate_delete_segments_and_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 1000,
            file_delete_delay_ms: 100,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    for _ in 0..20 {
        log.append_as_leader(&batch(2, 0, 100), 0).unwrap();
    }
    log.set_high_watermark(log.log_end_offset());
    let segs = log.num_segments();
    assert!(log.maybe_increment_log_start_offset(10).unwrap());
    let deleted = log.delete_segments_below_log_start().unwrap();
    assert!(deleted >= 1);
    assert_eq!(log.num_segments(), segs - deleted);
    assert_eq!(log.log_start_offset(), 10);
    assert_eq!(
        log.read(9, 100, 40, true).unwrap_err().kafka_error_code(),
        1
    );
    let n_deleted_files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".deleted")
        })
        .count();
    assert_eq!(n_deleted_files, deleted * 3);
    assert_eq!(log.delete_pending(50).unwrap(), 0);
    assert_eq!(log.delete_pending(100).unwrap(), deleted);
    // Truncation inside a batch removes the whole batch.
    log.truncate_to(31).unwrap();
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(log.high_watermark(), 30);
    log.append_as_leader(&batch(1, 0, 10), 0).unwrap();
    assert_eq!(log.log_end_offset(), 31);
    log.truncate_fully_and_start_at(500).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.num_segments()
        ),
        (500, 500, 1)
    );
    // Deleting everything rolls the active segment first.
    let b = batch(2, 0, 10);
    log.append_as_leader(&b, 0).unwrap();
    log.set_high_watermark(502);
    assert_eq!(log.delete_segments(|_, _| true).unwrap(), 1);
    assert_eq!(log.log_start_offset(), 502);
    assert_eq!(log.num_segments(), 1);
}

#[test]
fn flush_advances_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(
        dir.path(),
        LogConfig {
            flush_interval_messages: 10,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    log.append_as_leader(&batch(4, 0, 10), 0).unwrap();
    assert_eq!(log.recovery_point(), 0);
    log.append_as_leader(&batch(6, 0, 10), 0).unwrap();
    assert_eq!(log.recovery_point(), 10);
    log.append_as_leader(&batch(1, 0, 10), 0).unwrap();
    log.flush(11).unwrap();
    assert_eq!(log.recovery_point(), 11);
}

#[test]
fn concurrent_appends_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 20_000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..100 {
                    log.append_as_leader(&batch(2, 0, 50), 0).unwrap();
                }
            });
        }
        s.spawn(|| {
            for _ in 0..300 {
                let leo = log.log_end_offset();
                if leo > 0 {
                    let info = log.read(leo / 2, 4096, leo, true).unwrap();
                    if let Some(r) = info.records {
                        let bytes = r.read_to_vec().unwrap();
                        assert!(!offsets_of(&bytes).is_empty());
                    }
                }
            }
        });
    });
    assert_eq!(log.log_end_offset(), 600);
}

#[test]
fn retention_by_time_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let config = LogConfig {
        segment_bytes: 1000,
        retention_ms: 10_000,
        retention_bytes: 2500,
        ..small_config()
    };
    let log = open(dir.path(), config, true, 0, &clock);
    for i in 0..20 {
        log.append_as_leader(&batch(1, i * 1000, 200), 0).unwrap();
    }
    log.set_high_watermark(log.log_end_offset());
    let deleted = log.delete_retention_size_breached_segments().unwrap();
    assert!(deleted > 0);
    let size = log.size_in_bytes();
    assert!((2500..2500 + 1000).contains(&size), "{size}");
    let start = log.log_start_offset();
    assert!(start > 0);
    // Segments whose newest record is older than 25_000 - 10_000 go.
    let before = log.num_segments();
    let deleted = log.delete_retention_ms_breached_segments(25_000).unwrap();
    assert!(deleted > 0 && deleted < before);
    assert!(log.log_start_offset() > start && log.log_start_offset() <= 15);
    assert_eq!(
        log.read(log.log_start_offset(), 100, log.log_end_offset(), true)
            .unwrap()
            .fetch_offset_metadata
            .message_offset,
        log.log_start_offset()
    );
}

#[test]
fn io_error_takes_only_that_partition_offline() {
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(1_000));
    let broken_dir = root.path().join("t-0");
    let broken = open(&broken_dir, small_config(), true, 0, &clock);
    let healthy = open(&root.path().join("u-0"), small_config(), true, 0, &clock);
    broken.append_as_leader(&batch(3, 1_000, 10), 0).unwrap();
    // The directory disappears under the log (a failed disk, an operator's rm -rf):
    // rolling cannot create the next segment.
    std::fs::remove_dir_all(&broken_dir).unwrap();
    let err = broken.roll().unwrap_err();
    assert!(matches!(err, LogError::Io { .. }), "{err}");
    assert!(broken.is_offline());
    // Every later operation answers KAFKA_STORAGE_ERROR rather than touching the files.
    let err = broken
        .append_as_leader(&batch(1, 1_000, 10), 0)
        .unwrap_err();
    assert!(matches!(err, LogError::Offline(_)), "{err}");
    assert_eq!(err.kafka_error_code(), 56);
    assert_eq!(
        broken
            .read(0, 1 << 20, 3, true)
            .unwrap_err()
            .kafka_error_code(),
        56
    );
    // The other partition goes on.
    healthy.append_as_leader(&batch(2, 1_000, 10), 0).unwrap();
    assert!(!healthy.is_offline());
    assert_eq!(healthy.log_end_offset(), 2);
}

fn idempotent_batch(producer_id: i64, epoch: i16, sequence: i32, n: usize) -> Vec<u8> {
    let mut b = kafkars_record::RecordBatchBuilder::new().producer(producer_id, epoch, sequence);
    for i in 0..n {
        b.append(kafkars_record::NewRecord::with_value(
            1_000 + i as i64,
            b"v".to_vec(),
        ));
    }
    b.build().unwrap()
}

#[test]
fn idempotent_retries_are_answered_with_their_offsets_across_restarts() {
    for clean in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(1_000));
        let config = LogConfig {
            segment_bytes: 600,
            ..small_config()
        };
        let log = open(dir.path(), config.clone(), true, 0, &clock);
        log.append_as_leader(&batch(2, 1_000, 10), 0).unwrap();
        let mut sequence = 0;
        for _ in 0..8 {
            let info = log
                .append_as_leader(&idempotent_batch(7, 0, sequence, 3), 0)
                .unwrap();
            assert_eq!(info.num_messages, 3);
            sequence += 3;
        }
        assert!(log.num_segments() > 1, "the test needs rolled segments");
        let leo = log.log_end_offset();
        // A retry of the last batch is not written again.
        let info = log
            .append_as_leader(&idempotent_batch(7, 0, 21, 3), 0)
            .unwrap();
        assert_eq!((info.first_offset, info.last_offset), (leo - 3, leo - 1));
        assert_eq!(log.log_end_offset(), leo);
        if clean {
            log.close().unwrap();
        }
        drop(log);
        // Reopened (after a clean or an unclean shutdown), the state is the same. A
        // snapshot keeps each producer's last batch, as Kafka's does.
        let log = open(dir.path(), config, clean, 0, &clock);
        assert_eq!(log.producer_state(7), Some((0, 23)));
        let info = log
            .append_as_leader(&idempotent_batch(7, 0, 21, 3), 0)
            .unwrap();
        assert_eq!((info.first_offset, info.last_offset), (leo - 3, leo - 1));
        assert_eq!(log.log_end_offset(), leo);
        // A gap, and an old epoch, are refused with Kafka's codes.
        let err = log
            .append_as_leader(&idempotent_batch(7, 0, 30, 1), 0)
            .unwrap_err();
        assert_eq!(err.kafka_error_code(), 45, "{err}");
        log.append_as_leader(&idempotent_batch(7, 1, 0, 1), 0)
            .unwrap();
        let err = log
            .append_as_leader(&idempotent_batch(7, 0, 24, 1), 0)
            .unwrap_err();
        assert_eq!(err.kafka_error_code(), 47, "{err}");
        assert_eq!(log.log_end_offset(), leo + 1);
        let snapshots = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".snapshot")
            })
            .count();
        assert!((1..=2).contains(&snapshots), "{snapshots} snapshots");
    }
}

fn transactional_batch(producer_id: i64, sequence: i32, n: usize) -> Vec<u8> {
    let mut b = kafkars_record::RecordBatchBuilder::new()
        .producer(producer_id, 0, sequence)
        .transactional(true);
    for _ in 0..n {
        b.append(kafkars_record::NewRecord::with_value(1_000, b"t".to_vec()));
    }
    b.build().unwrap()
}

#[test]
fn transaction_markers_move_the_last_stable_offset_and_index_aborts() {
    for clean in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(1_000));
        let log = open(dir.path(), small_config(), true, 0, &clock);
        let sync = |log: &kafkars_storage::Log| log.set_high_watermark(log.log_end_offset());
        log.append_as_leader(&batch(2, 1_000, 10), 0).unwrap(); // 0-1
        log.append_as_leader(&transactional_batch(5, 0, 3), 0)
            .unwrap(); // 2-4
        log.append_as_leader(&transactional_batch(6, 0, 2), 0)
            .unwrap(); // 5-6
        sync(&log);
        assert_eq!(log.last_stable_offset(), 2);
        // Producer 5 aborts (marker at 7): producer 6 still holds the LSO at 5.
        let marker = log.append_txn_marker(5, 0, 3, false, 0).unwrap();
        assert_eq!(marker.first_offset, 7);
        sync(&log);
        assert_eq!(log.last_stable_offset(), 5);
        assert_eq!(log.aborted_transactions(0, 8), vec![(5, 2)]);
        assert_eq!(log.aborted_transactions(8, 20), vec![]);
        // Producer 6 commits (marker at 8): everything is stable.
        log.append_txn_marker(6, 0, 3, true, 0).unwrap();
        sync(&log);
        assert_eq!(log.last_stable_offset(), 9);
        assert_eq!(log.aborted_transactions(0, 9), vec![(5, 2)]);
        // A producer may not write markers itself.
        let forged = kafkars_record::EndTransactionMarker {
            control_type: kafkars_record::ControlRecordType::Commit,
            coordinator_epoch: 0,
        }
        .build_batch(0, 1_000, 0, 6, 0)
        .unwrap();
        assert_eq!(
            log.append_as_leader(&forged, 0)
                .unwrap_err()
                .kafka_error_code(),
            87
        );
        // An open transaction at shutdown, and the index, come back on reopen.
        log.append_as_leader(&transactional_batch(7, 0, 1), 0)
            .unwrap(); // 9
        if clean {
            log.close().unwrap();
        } else {
            std::fs::remove_file(dir.path().join("00000000000000000000.txnindex")).unwrap();
        }
        drop(log);
        let log = open(dir.path(), small_config(), clean, 0, &clock);
        sync(&log);
        assert_eq!(log.last_stable_offset(), 9);
        assert_eq!(log.aborted_transactions(0, 10), vec![(5, 2)]);
        // The markers' coordinator epoch (3) is each producer's, from the snapshot or
        // the replayed log, as Kafka's producer state keeps it.
        let coordinator_epochs: Vec<(i64, i32)> =
            log.active_producers().iter().map(|p| (p.0, p.4)).collect();
        assert_eq!(
            coordinator_epochs,
            vec![(5, 3), (6, 3), (7, -1)],
            "clean: {clean}"
        );
        log.append_txn_marker(7, 0, 3, false, 0).unwrap();
        sync(&log);
        assert_eq!(log.last_stable_offset(), 11);
        assert_eq!(log.aborted_transactions(0, 11), vec![(5, 2), (7, 9)]);
    }
}

#[test]
fn a_zip_bomb_is_refused_not_inflated() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(1_000));
    let config = LogConfig {
        max_message_bytes: 100_000,
        ..small_config()
    };
    let log = open(dir.path(), config, true, 0, &clock);
    // 12 MiB of zeros compress to a few KiB: under max.message.bytes on the wire, but
    // past the decompression limit (8 MiB here) once inflated.
    let mut b = kafkars_record::RecordBatchBuilder::new().compression(Compression::Zstd);
    for _ in 0..6 {
        b.append(kafkars_record::NewRecord::with_value(
            1_000,
            vec![0u8; 2 << 20],
        ));
    }
    let bomb = b.build().unwrap();
    assert!(bomb.len() < 100_000, "{} bytes compressed", bomb.len());
    let err = log.append_as_leader(&bomb, 0).unwrap_err();
    assert_eq!(err.kafka_error_code(), 2, "{err}");
    assert!(err.to_string().contains("exceed"), "{err}");
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn a_clean_restart_touches_no_file_until_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(1_000));
    let log = open(dir.path(), small_config(), true, 0, &clock);
    for i in 0..10 {
        log.append_as_leader(&batch(5, 1_000 + i, 100), 0).unwrap();
    }
    log.close().unwrap();
    let index = dir.path().join("00000000000000000000.index");
    let trimmed = std::fs::metadata(&index).unwrap().len();
    assert!(trimmed > 0 && trimmed < 4096, "trimmed at close: {trimmed}");
    let modified = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .modified()
            .unwrap()
    };
    let files = [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "00000000000000000050.snapshot",
        "leader-epoch-checkpoint",
    ];
    let before: Vec<_> = files.iter().map(|f| modified(f)).collect();
    std::thread::sleep(std::time::Duration::from_millis(20));

    // Opened and closed again without an append: nothing is resized, trimmed or rewritten.
    let log = open(dir.path(), small_config(), true, 50, &clock);
    assert_eq!(std::fs::metadata(&index).unwrap().len(), trimmed);
    log.close().unwrap();
    let after: Vec<_> = files.iter().map(|f| modified(f)).collect();
    assert_eq!(before, after);

    // The first append grows the indexes again: more entries than the trimmed file held
    // go into the same segment, and a lookup finds them after another restart.
    let log = open(dir.path(), small_config(), true, 50, &clock);
    for i in 0..10 {
        log.append_as_leader(&batch(5, 2_000 + i, 100), 0).unwrap();
    }
    assert_eq!(log.num_segments(), 1);
    log.close().unwrap();
    assert!(std::fs::metadata(&index).unwrap().len() > trimmed);
    let log = open(dir.path(), small_config(), true, 100, &clock);
    log.set_high_watermark(100);
    let info = log.read(77, 1, 100, true).unwrap();
    let bytes = info.records.unwrap().read_to_vec().unwrap();
    assert_eq!(offsets_of(&bytes)[0], (75, 79));
}
