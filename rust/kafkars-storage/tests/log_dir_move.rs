//! Moving a partition's log between log dirs (AlterReplicaLogDirs): the copy, the swap,
//! appends during the move, and crashes at each stage.

mod common;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use kafkars_record::{NewRecord, RecordBatchBuilder};
use kafkars_storage::log_manager::LogDirMove;
use kafkars_storage::{
    Clock, Log, LogConfig, LogError, LogManager, MockClock, MoveStage, TopicPartition,
};

fn clock() -> Arc<dyn Clock> {
    Arc::new(MockClock::new(1_000))
}

fn manager(dirs: &[&Path]) -> Arc<LogManager> {
    let m = LogManager::new(
        dirs.iter().map(|d| d.to_path_buf()).collect(),
        1,
        Some("cluster-a"),
        clock(),
    )
    .unwrap();
    m.load_logs(1, &|_| config()).unwrap();
    Arc::new(m)
}

/// Small segments, so a log has several closed ones and an active one.
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2_000,
        ..small_config()
    }
}

fn idempotent_batch(sequence: i32, n: usize) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new().producer(7, 0, sequence);
    for i in 0..n {
        b.append(NewRecord::with_value(
            1_000 + i as i64,
            format!("v{}", sequence + i as i32).into_bytes(),
        ));
    }
    b.build().unwrap()
}

/// Every (offset, value) of the log, read through its public read path.
fn records(log: &Log) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let info = log
            .read(offset, 1 << 20, log.log_end_offset(), true)
            .unwrap();
        let bytes = info.records.expect("records").read_to_vec().unwrap();
        for batch in kafkars_record::batches(&bytes) {
            let batch = batch.unwrap();
            let recs = batch.records().unwrap();
            for r in &recs {
                let r = r.unwrap();
                out.push((r.offset, r.value.unwrap_or_default().to_vec()));
            }
            offset = batch.last_offset() + 1;
        }
    }
    out
}

fn partition_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A log in dir `a` with several segments, two leader epochs and producer 7 at
/// sequence 3 * batches - 1; returns it.
fn filled(m: &LogManager, tp: &TopicPartition, batches: i32) -> Arc<Log> {
    let log = m.get_or_create_log(tp, config()).unwrap();
    for i in 0..batches {
        let epoch = if i < batches / 2 { 0 } else { 3 };
        log.append_as_leader(&idempotent_batch(i * 3, 3), epoch)
            .unwrap();
    }
    log.set_high_watermark(log.log_end_offset() - 2);
    log
}

fn crash_at(stage: MoveStage) -> impl Fn(MoveStage) -> kafkars_storage::Result<()> {
    move |s| {
        if s == stage {
            Err(LogError::Closed("crash".into()))
        } else {
            Ok(())
        }
    }
}

#[test]
fn a_moved_log_keeps_offsets_epochs_producers_and_high_watermark() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("moved", 0);
    let m = manager(&[a.path(), b.path()]);
    let log = filled(&m, &tp, 100);
    assert!(log.num_segments() > 3, "{}", log.num_segments());
    assert_eq!(m.log_dir_of(&tp).unwrap(), a.path());
    let before = records(&log);
    let (leo, hw) = (log.log_end_offset(), log.high_watermark());
    let epochs = (log.end_offset_for_epoch(0), log.latest_epoch());

    let progress = LogDirMove::new(m.dir_index(b.path()).unwrap());
    assert!(m.move_log_dir(&tp, &progress, &|_| Ok(())).unwrap());

    assert_eq!(m.log_dir_of(&tp).unwrap(), b.path());
    assert_eq!(log.dir(), b.path().join("moved-0"));
    assert!(
        partition_dirs(a.path()).is_empty(),
        "{:?}",
        partition_dirs(a.path())
    );
    assert_eq!(partition_dirs(b.path()), ["moved-0"]);
    assert_eq!(records(&log), before);
    assert_eq!((log.log_end_offset(), log.high_watermark()), (leo, hw));
    assert_eq!((log.end_offset_for_epoch(0), log.latest_epoch()), epochs);
    // The producer's state came along: a retry is a duplicate, the next batch follows.
    assert_eq!(log.producer_state(7), Some((0, 299)));
    let retry = log.append_as_leader(&idempotent_batch(297, 3), 3).unwrap();
    assert_eq!(retry.first_offset, leo - 3);
    assert_eq!(log.log_end_offset(), leo);
    assert!(matches!(
        log.append_as_leader(&idempotent_batch(400, 1), 3),
        Err(LogError::OutOfOrderSequence(_))
    ));
    log.append_as_leader(&idempotent_batch(300, 3), 3).unwrap();
    assert_eq!(log.log_end_offset(), leo + 3);

    // And back, then a clean restart finds it in `a` only.
    let progress = LogDirMove::new(m.dir_index(a.path()).unwrap());
    assert!(m.move_log_dir(&tp, &progress, &|_| Ok(())).unwrap());
    let after = records(&log);
    m.shutdown().unwrap();
    drop(log);
    drop(m);
    let m = manager(&[a.path(), b.path()]);
    assert!(partition_dirs(b.path()).is_empty());
    let log = m.get_log(&tp).unwrap();
    assert_eq!(m.log_dir_of(&tp).unwrap(), a.path());
    assert_eq!(records(&log), after);
    assert_eq!(log.producer_state(7), Some((0, 302)));
    assert_eq!(m.read_high_watermarks().unwrap()[&tp], hw);
}

#[test]
fn appends_during_a_background_move_are_all_kept_once_in_order() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("busy", 0);
    let m = manager(&[a.path(), b.path()]);
    let log = filled(&m, &tp, 200);
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let log = Arc::clone(&log);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sequence = 600;
            while !stop.load(Ordering::Acquire) {
                log.append_as_leader(&idempotent_batch(sequence, 3), 3)
                    .unwrap();
                sequence += 3;
            }
            sequence
        })
    };
    for target in [b.path(), a.path(), b.path()] {
        m.alter_log_dir(&tp, target).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while m.log_dir_of(&tp).unwrap() != target || !m.future_logs().is_empty() {
            assert!(
                Instant::now() < deadline,
                "move to {target:?} did not finish"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    stop.store(true, Ordering::Release);
    let next_sequence = appender.join().unwrap();
    let got = records(&log);
    assert_eq!(got.len() as i32, next_sequence);
    for (i, (offset, value)) in got.iter().enumerate() {
        assert_eq!(*offset, i as i64);
        assert_eq!(value, format!("v{i}").as_bytes());
    }
    assert!(partition_dirs(a.path()).is_empty());
    assert_eq!(partition_dirs(b.path()), ["busy-0"]);
}

#[test]
fn a_crash_before_the_swap_keeps_the_old_log_and_drops_the_future_dir() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("crashy", 0);
    let before;
    {
        let m = manager(&[a.path(), b.path()]);
        let log = filled(&m, &tp, 40);
        before = records(&log);
        let progress = LogDirMove::new(1);
        m.move_log_dir(&tp, &progress, &crash_at(MoveStage::FutureComplete))
            .unwrap_err();
        let future = partition_dirs(b.path());
        assert_eq!(future.len(), 1);
        assert!(future[0].starts_with("crashy-0.") && future[0].ends_with("-future"));
        // No shutdown: the process died here.
    }
    let m = manager(&[a.path(), b.path()]);
    assert!(partition_dirs(b.path()).is_empty());
    assert_eq!(m.log_dir_of(&tp).unwrap(), a.path());
    let log = m.get_log(&tp).unwrap();
    assert_eq!(records(&log), before);
    assert_eq!(log.producer_state(7), Some((0, 119)));
}

#[test]
fn a_crash_between_the_renames_loads_one_complete_log() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("twice", 0);
    let before;
    {
        let m = manager(&[a.path(), b.path()]);
        let log = filled(&m, &tp, 40);
        before = records(&log);
        let progress = LogDirMove::new(1);
        m.move_log_dir(&tp, &progress, &crash_at(MoveStage::FutureRenamed))
            .unwrap_err();
        assert_eq!(partition_dirs(a.path()), ["twice-0"]);
        assert_eq!(partition_dirs(b.path()), ["twice-0"]);
    }
    let m = manager(&[a.path(), b.path()]);
    let dirs = [partition_dirs(a.path()), partition_dirs(b.path())].concat();
    assert_eq!(dirs, ["twice-0"]);
    let log = m.get_log(&tp).unwrap();
    assert_eq!(records(&log), before);
    assert_eq!(log.producer_state(7), Some((0, 119)));
    log.append_as_leader(&idempotent_batch(120, 3), 3).unwrap();
}

#[test]
fn alter_log_dir_checks_the_dir_and_the_partition() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let m = manager(&[a.path(), b.path()]);
    let tp = TopicPartition::new("here", 0);
    let log = filled(&m, &tp, 4);
    let err = m.alter_log_dir(&tp, elsewhere.path()).unwrap_err();
    assert!(matches!(err, LogError::LogDirNotFound(_)), "{err}");
    assert_eq!(err.kafka_error_code(), 57);
    // Already there: nothing to do.
    m.alter_log_dir(&tp, a.path()).unwrap();
    assert!(m.future_logs().is_empty());
    assert_eq!(log.dir(), a.path().join("here-0"));
    // Not here yet: REPLICA_NOT_AVAILABLE, and the partition is created in that dir.
    let later = TopicPartition::new("later", 0);
    let err = m.alter_log_dir(&later, b.path()).unwrap_err();
    assert_eq!(err.kafka_error_code(), 9);
    m.get_or_create_log(&later, config()).unwrap();
    assert_eq!(m.log_dir_of(&later).unwrap(), b.path());
}
