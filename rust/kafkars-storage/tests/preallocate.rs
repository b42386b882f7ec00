//! `preallocate`: new segments start at `segment.bytes` long, are trimmed to their data on
//! roll and close, and a crash leaves a zero tail that recovery cuts off.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use kafkars_storage::log_manager::CLEAN_SHUTDOWN_FILE;
use kafkars_storage::{Clock, Log, LogConfig, LogManager, MockClock, TopicPartition};

const SEGMENT_BYTES: u32 = 64 * 1024;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        preallocate: true,
        ..small_config()
    }
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

fn len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

fn read_offsets(log: &Log) -> Vec<(i64, i64)> {
    let leo = log.log_end_offset();
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < leo {
        let info = log.read(next, 1 << 20, leo, true).unwrap();
        let got = offsets_of(&info.records.unwrap().read_to_vec().unwrap());
        next = got.last().unwrap().1 + 1;
        out.extend(got);
    }
    out
}

#[test]
fn active_segment_is_preallocated_and_trimmed_on_roll_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(dir.path(), config(), true, 0, &clock);
    let files = log_files(dir.path());
    assert_eq!(files.len(), 1);
    assert_eq!(
        len(&files[0]),
        u64::from(SEGMENT_BYTES),
        "a new segment is preallocated"
    );

    let mut written = 0u64;
    for i in 0..20 {
        let b = batch(2, i, 1000);
        written += b.len() as u64;
        log.append_as_leader(&b, 0).unwrap();
    }
    assert_eq!(log.num_segments(), 1);
    assert_eq!(
        log.size_in_bytes(),
        written,
        "the data's size, not the file's"
    );
    assert_eq!(len(&files[0]), u64::from(SEGMENT_BYTES));

    // Past segment.bytes: the old segment is trimmed, the new one preallocated.
    while log.num_segments() == 1 {
        log.append_as_leader(&batch(2, 100, 1000), 0).unwrap();
    }
    let files = log_files(dir.path());
    assert_eq!(files.len(), 2);
    let first = log.segment_base_offsets()[0];
    let first_size = log.size_in_bytes() - {
        let leo = log.log_end_offset();
        let second_base = log.segment_base_offsets()[1];
        let info = log.read(second_base, 1 << 20, leo, true).unwrap();
        info.records.unwrap().read_to_vec().unwrap().len() as u64
    };
    assert_eq!(first, 0);
    assert_eq!(
        len(&files[0]),
        first_size,
        "the rolled segment ends at its data"
    );
    assert_eq!(len(&files[1]), u64::from(SEGMENT_BYTES));

    let expected = read_offsets(&log);
    let total = log.size_in_bytes();
    log.close().unwrap();
    drop(log);
    let on_disk: u64 = log_files(dir.path()).iter().map(|p| len(p)).sum();
    assert_eq!(
        on_disk, total,
        "a clean close leaves every file at its data"
    );

    let log = open(dir.path(), config(), true, 0, &clock);
    assert_eq!(read_offsets(&log), expected);
}

#[test]
fn a_crash_leaves_a_zero_tail_that_recovery_cuts_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(dir.path(), config(), true, 0, &clock);
    for i in 0..10 {
        log.append_as_leader(&batch(3, i, 200), 0).unwrap();
    }
    let expected = read_offsets(&log);
    let data = log.size_in_bytes();
    // A crash: dropped without closing, the file keeps its preallocated zeros.
    drop(log);
    let path = log_files(dir.path()).pop().unwrap();
    assert_eq!(len(&path), u64::from(SEGMENT_BYTES));

    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
    let (log, stats) = Log::open(
        dir.path(),
        TopicPartition::new("t", 0),
        config(),
        0,
        0,
        false,
        clock,
    )
    .unwrap();
    assert_eq!(stats.truncated_bytes, u64::from(SEGMENT_BYTES) - data);
    assert_eq!(len(&path), data, "recovery trims the zero tail");
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(read_offsets(&log), expected);
    // Appends go on right after the recovered data.
    let info = log.append_as_leader(&batch(1, 50, 10), 0).unwrap();
    assert_eq!(info.first_offset, 30);
    assert_eq!(read_offsets(&log).last(), Some(&(30, 30)));
}

#[test]
fn truncation_of_a_preallocated_segment_ends_the_file_at_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(dir.path(), config(), true, 0, &clock);
    for i in 0..10 {
        log.append_as_leader(&batch(2, i, 100), 0).unwrap();
    }
    log.truncate_to(10).unwrap();
    let path = log_files(dir.path()).pop().unwrap();
    assert_eq!(len(&path), log.size_in_bytes());
    log.append_as_leader(&batch(2, 20, 100), 0).unwrap();
    assert_eq!(len(&path), log.size_in_bytes());
    assert_eq!(log.log_end_offset(), 12);
}

#[test]
fn a_dir_gone_offline_gets_no_clean_shutdown_marker_and_its_zero_tails_are_cut() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let paths: Vec<PathBuf> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
    let manager = || {
        let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
        let m = LogManager::new(paths.clone(), 1, Some("c"), clock).unwrap();
        m.load_logs(1, &|_| config()).unwrap();
        m
    };
    let m = manager();
    // Round robin: "a" and "c" in one dir, "b" in the other.
    let logs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|t| {
            let log = m
                .get_or_create_log(&TopicPartition::new(*t, 0), config())
                .unwrap();
            for i in 0..10 {
                log.append_as_leader(&batch(3, i, 200), 0).unwrap();
            }
            log
        })
        .collect();
    let (a, b, c) = (&logs[0], &logs[1], &logs[2]);
    assert_eq!(a.dir().parent(), c.dir().parent());
    let expected = read_offsets(c);
    let data = c.size_in_bytes();
    let c_segment = log_files(&c.dir()).pop().unwrap();
    // "a"'s directory disappears: its roll fails and takes the whole dir offline, "c"'s
    // preallocated segment with it, untrimmed.
    fs::remove_dir_all(a.dir()).unwrap();
    a.roll().unwrap_err();
    let offline = a.dir().parent().unwrap().to_path_buf();
    assert_eq!(m.offline_log_dirs(), vec![offline.clone()]);
    let online = b.dir().parent().unwrap().to_path_buf();
    let b_segment = log_files(&b.dir()).pop().unwrap();
    let b_data = b.size_in_bytes();
    m.shutdown().unwrap();
    drop((logs, m));
    assert!(online.join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(len(&b_segment), b_data, "closed and trimmed");
    assert!(!offline.join(CLEAN_SHUTDOWN_FILE).exists());
    assert_eq!(len(&c_segment), u64::from(SEGMENT_BYTES), "never closed");

    // The next start recovers the dir that went offline: the zero tail is cut, not read.
    let m = manager();
    let c = m.get_log(&TopicPartition::new("c", 0)).unwrap();
    assert_eq!(len(&c_segment), data);
    assert_eq!(c.log_end_offset(), 30);
    assert_eq!(read_offsets(&c), expected);
    assert_eq!(
        c.append_as_leader(&batch(1, 50, 10), 0)
            .unwrap()
            .first_offset,
        30
    );
    assert_eq!(
        m.get_log(&TopicPartition::new("b", 0))
            .unwrap()
            .log_end_offset(),
        30
    );
}

#[test]
fn a_clean_shutdown_marker_does_not_make_an_untrimmed_zero_tail_data() {
    // However a marker came to sit beside a preallocated segment that was never trimmed
    // (a crash after it was written, a copied dir), loading checks the active segment's
    // tail: the zeros are cut off, not read as records or refused as corrupt.
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![dir.path().to_path_buf()];
    let manager = || {
        let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
        let m = LogManager::new(paths.clone(), 1, Some("c"), clock).unwrap();
        let report = m.load_logs(1, &|_| config()).unwrap();
        (m, report)
    };
    let (m, _) = manager();
    let tp = TopicPartition::new("t", 0);
    let log = m.get_or_create_log(&tp, config()).unwrap();
    for i in 0..10 {
        log.append_as_leader(&batch(3, i, 200), 0).unwrap();
    }
    log.flush(log.log_end_offset()).unwrap();
    m.checkpoint_recovery_points().unwrap();
    let expected = read_offsets(&log);
    let data = log.size_in_bytes();
    let segment = log_files(&log.dir()).pop().unwrap();
    drop((log, m));
    assert_eq!(len(&segment), u64::from(SEGMENT_BYTES));
    fs::File::create(dir.path().join(CLEAN_SHUTDOWN_FILE)).unwrap();

    let (m, report) = manager();
    assert_eq!(
        report.skipped,
        vec![tp.clone()],
        "loaded as after a clean shutdown"
    );
    let log = m.get_log(&tp).unwrap();
    assert_eq!(len(&segment), data);
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(read_offsets(&log), expected);
    assert_eq!(
        log.append_as_leader(&batch(1, 50, 10), 0)
            .unwrap()
            .first_offset,
        30
    );
}
