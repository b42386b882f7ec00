mod common;

use std::fs;
use std::path::Path;
use std::sync::Arc;

use common::*;
use kafkars_storage::{Clock, Log, LogConfig, MockClock, TopicPartition};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn open_unclean(
    dir: &Path,
    config: LogConfig,
    rp: i64,
) -> (Arc<Log>, kafkars_storage::PartitionLoadStats) {
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
    Log::open(
        dir,
        TopicPartition::new("t", 0),
        config,
        rp,
        0,
        false,
        clock,
    )
    .unwrap()
}

fn read_all(log: &Log) -> Vec<(i64, i64)> {
    let leo = log.log_end_offset();
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < leo {
        let info = log.read(next, 1 << 20, leo, true).unwrap();
        let bytes = info.records.unwrap().read_to_vec().unwrap();
        let got = offsets_of(&bytes);
        next = got.last().unwrap().1 + 1;
        out.extend(got);
    }
    out
}

/// A closed log of `n` batches (two records each) spread over a few segments.
fn written_log(n: usize) -> (tempfile::TempDir, Vec<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 2000,
            ..small_config()
        },
        true,
        0,
        &clock,
    );
    let mut sizes = Vec::new();
    for i in 0..n {
        let b = batch(2, i as i64, 60 + i);
        sizes.push(b.len());
        log.append_as_leader(&b, 0).unwrap();
    }
    log.close().unwrap();
    (dir, sizes)
}

fn last_log_file(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

#[test]
fn truncating_the_last_batch_at_every_byte_recovers_the_valid_prefix() {
    let n = 30;
    let (src, sizes) = written_log(n);
    let last = last_log_file(src.path());
    let len = fs::metadata(&last).unwrap().len();
    let last_size = *sizes.last().unwrap() as u64;
    for cut in (len - last_size)..len {
        let work = tempfile::tempdir().unwrap();
        copy_dir(src.path(), work.path());
        let f = fs::OpenOptions::new()
            .write(true)
            .open(work.path().join(last.file_name().unwrap()))
            .unwrap();
        f.set_len(cut).unwrap();
        let (log, stats) = open_unclean(work.path(), small_config(), 0);
        assert_eq!(
            stats.truncated_bytes,
            cut - (len - last_size),
            "cut at {cut}"
        );
        assert_eq!(log.log_end_offset(), 2 * (n as i64 - 1), "cut at {cut}");
        let all = read_all(&log);
        assert_eq!(all.len(), n - 1);
        assert_eq!(all.last().unwrap().1, 2 * (n as i64 - 1) - 1);
        // The log accepts appends at the right offset afterwards.
        let info = log.append_as_leader(&batch(1, 0, 5), 0).unwrap();
        assert_eq!(info.first_offset, 2 * (n as i64 - 1));
    }
}

#[test]
fn corrupt_byte_in_last_batch_and_garbage_tail_are_truncated() {
    let n = 12;
    let (src, sizes) = written_log(n);
    let last = last_log_file(src.path());
    let len = fs::metadata(&last).unwrap().len() as usize;
    let last_size = *sizes.last().unwrap();
    for flip in [len - last_size + 30, len - 1, len - last_size + 61] {
        let work = tempfile::tempdir().unwrap();
        copy_dir(src.path(), work.path());
        let path = work.path().join(last.file_name().unwrap());
        let mut bytes = fs::read(&path).unwrap();
        bytes[flip] ^= 0x5a;
        fs::write(&path, &bytes).unwrap();
        let (log, stats) = open_unclean(work.path(), small_config(), 0);
        assert_eq!(stats.truncated_bytes as usize, last_size);
        assert_eq!(read_all(&log).len(), n - 1);
    }
    // Garbage after valid data.
    let work = tempfile::tempdir().unwrap();
    copy_dir(src.path(), work.path());
    let path = work.path().join(last.file_name().unwrap());
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend((0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    fs::write(&path, &bytes).unwrap();
    let (log, stats) = open_unclean(work.path(), small_config(), 0);
    assert_eq!(stats.truncated_bytes, 5000);
    assert_eq!(read_all(&log).len(), n);
    assert_eq!(fs::metadata(&path).unwrap().len() as usize, len);
}

#[test]
fn truncation_in_an_earlier_segment_deletes_later_segments() {
    let (src, _) = written_log(40);
    let mut logs: Vec<_> = fs::read_dir(src.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 3);
    let f = fs::OpenOptions::new().write(true).open(&logs[1]).unwrap();
    let l = f.metadata().unwrap().len();
    f.set_len(l - 7).unwrap();
    let (log, stats) = open_unclean(src.path(), small_config(), 0);
    assert_eq!(stats.segments_deleted_after_truncation, logs.len() - 2);
    assert_eq!(log.num_segments(), 2);
    let all = read_all(&log);
    assert_eq!(all.last().unwrap().1 + 1, log.log_end_offset());
}

#[test]
fn recovery_starts_at_the_recovery_point() {
    let (src, _) = written_log(40);
    let (log, stats) = open_unclean(src.path(), small_config(), 1_000_000);
    // Only the segment holding the recovery point (the last) is scanned.
    assert_eq!(stats.segments_recovered, 1);
    assert_eq!(log.log_end_offset(), 80);
}

#[test]
fn missing_and_corrupt_indexes_are_rebuilt() {
    let (src, _) = written_log(40);
    let mut idx: Vec<_> = fs::read_dir(src.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "index"))
        .collect();
    idx.sort();
    fs::remove_file(&idx[0]).unwrap();
    fs::write(&idx[1], [7u8; 13]).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
    let (log, stats) = Log::open(
        src.path(),
        TopicPartition::new("t", 0),
        small_config(),
        80,
        0,
        true,
        clock,
    )
    .unwrap();
    assert_eq!(stats.indexes_rebuilt, 1);
    assert_eq!(stats.segments_recovered, 0);
    // The corrupt index of segment 2 is rebuilt when first used.
    assert_eq!(read_all(&log).len(), 40);
    assert!(idx[0].exists());
    assert_eq!(fs::metadata(&idx[1]).unwrap().len() % 8, 0);
}

#[test]
fn deleted_cleaned_orphans_and_swap_files() {
    let (src, _) = written_log(40);
    let dir = src.path();
    let mut logs: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    // A cleaner result replacing the first two segments with one.
    let mut merged = fs::read(&logs[0]).unwrap();
    merged.extend(fs::read(&logs[1]).unwrap());
    let first = logs[0].file_name().unwrap().to_string_lossy().into_owned();
    fs::write(dir.join(format!("{first}.swap")), &merged).unwrap();
    fs::write(dir.join("00000000000000000003.log.deleted"), b"old").unwrap();
    fs::write(dir.join("00000000000000000004.log.cleaned"), b"partial").unwrap();
    fs::write(dir.join("00000000000000099999.index"), [0u8; 16]).unwrap();
    fs::write(dir.join("00000000000000099999.timeindex"), [0u8; 24]).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
    let (log, stats) = Log::open(
        dir,
        TopicPartition::new("t", 0),
        small_config(),
        80,
        0,
        true,
        clock,
    )
    .unwrap();
    assert_eq!(stats.swaps_completed, 1);
    assert_eq!(stats.files_removed, 4);
    assert_eq!(log.num_segments(), logs.len() - 1);
    assert!(!logs[1].exists());
    assert_eq!(read_all(&log).len(), 40);
    let names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.ends_with(".swap") && !n.ends_with(".deleted") && !n.ends_with(".cleaned")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("00000000000000099999")));
}

/// The first two batches of the seed 003 dump ("hello, Kafka0!", "hello, Kafka2!"),
/// byte for byte as Kafka 2.x wrote them.
fn kafka_batch(offset: i64, timestamp: i64, value: &[u8], expected_crc: u32) -> Vec<u8> {
    let mut record = vec![0u8, 0, 0, 0x01, (value.len() as u8) << 1];
    record.extend_from_slice(value);
    record.push(0);
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // attributes
    body.extend_from_slice(&0i32.to_be_bytes()); // lastOffsetDelta
    body.extend_from_slice(&timestamp.to_be_bytes());
    body.extend_from_slice(&timestamp.to_be_bytes());
    body.extend_from_slice(&(-1i64).to_be_bytes());
    body.extend_from_slice(&(-1i16).to_be_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&1i32.to_be_bytes());
    body.push((record.len() as u8) << 1);
    body.extend_from_slice(&record);
    let crc = kafkars_record::crc32c(&body);
    assert_eq!(crc, expected_crc, "the batch is built as Kafka built it");
    let mut out = Vec::new();
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&((4 + 1 + 4 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&2i32.to_be_bytes()); // partitionLeaderEpoch
    out.push(2);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[test]
fn loads_a_kafka_written_segment() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("reatest-0");
    fs::create_dir_all(&part).unwrap();
    let mut log_bytes = kafka_batch(0, 1_562_121_985_144, b"hello, Kafka0!", 2_717_637_561);
    assert_eq!(log_bytes.len(), 82);
    log_bytes.extend(kafka_batch(
        1,
        1_562_122_005_565,
        b"hello, Kafka2!",
        2_618_539_239,
    ));
    fs::write(part.join("00000000000000000000.log"), &log_bytes).unwrap();
    // What Kafka leaves after a clean shutdown: an empty .index, one .timeindex entry.
    fs::write(part.join("00000000000000000000.index"), b"").unwrap();
    let mut ti = 1_562_122_005_565i64.to_be_bytes().to_vec();
    ti.extend_from_slice(&1i32.to_be_bytes());
    fs::write(part.join("00000000000000000000.timeindex"), &ti).unwrap();
    fs::write(part.join("leader-epoch-checkpoint"), "0\n1\n2 0\n").unwrap();
    for clean in [true, false] {
        let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
        let (log, stats) = Log::open(
            &part,
            TopicPartition::new("reatest", 0),
            LogConfig::default(),
            2,
            0,
            clean,
            clock,
        )
        .unwrap();
        assert_eq!(stats.truncated_bytes, 0);
        assert_eq!(log.log_end_offset(), 2);
        assert_eq!(log.latest_epoch(), Some(2));
        let info = log.read(1, 1000, 2, false).unwrap();
        assert_eq!(info.fetch_offset_metadata.relative_position_in_segment, 82);
        let found = log
            .fetch_offset_by_timestamp(1_562_122_000_000)
            .unwrap()
            .unwrap();
        assert_eq!(found.offset, 1);
        let b = batch(1, 1_562_122_100_000, 3);
        assert_eq!(log.append_as_leader(&b, 2).unwrap().first_offset, 2);
        // Our append lands where Kafka put offset 2: position 164.
        assert_eq!(
            log.read(2, 1000, 3, false)
                .unwrap()
                .fetch_offset_metadata
                .relative_position_in_segment,
            164
        );
        log.truncate_to(2).unwrap();
        log.close().unwrap();
    }
}

#[test]
fn hostile_index_and_log_bytes_never_panic() {
    let (src, _) = written_log(40);
    let mut files: Vec<_> = fs::read_dir(src.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "index" || e == "timeindex" || e == "log")
        })
        .collect();
    files.sort();
    let mut x = 0x9e37_79b9_u64;
    for (i, target) in files.iter().enumerate() {
        for round in 0..4 {
            let work = tempfile::tempdir().unwrap();
            copy_dir(src.path(), work.path());
            let path = work.path().join(target.file_name().unwrap());
            let mut bytes = fs::read(&path).unwrap();
            let len = if bytes.is_empty() { 24 } else { bytes.len() };
            bytes.resize(len, 0);
            for _ in 0..(1 + round * 3) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x as usize) % len;
                bytes[at] = (x >> 32) as u8;
            }
            fs::write(&path, &bytes).unwrap();
            for clean in [true, false] {
                let clock: Arc<dyn Clock> = Arc::new(MockClock::new(0));
                let opened = Log::open(
                    work.path(),
                    TopicPartition::new("t", 0),
                    small_config(),
                    0,
                    0,
                    clean,
                    clock,
                );
                let Ok((log, _)) = opened else { continue };
                let leo = log.log_end_offset();
                let mut next = log.log_start_offset();
                // Whatever is served must be whole, valid batches or a clear error.
                while next < leo {
                    match log.read(next, 1 << 20, leo, true) {
                        Ok(info) => match info.records {
                            Some(r) => {
                                let data = r.read_to_vec().unwrap();
                                let mut last = None;
                                for b in kafkars_record::batches(&data) {
                                    let Ok(b) = b else { break };
                                    // After recovery nothing invalid is served.
                                    if !clean {
                                        b.validate().unwrap();
                                    }
                                    last = Some(b.last_offset());
                                }
                                match last {
                                    Some(l) if l >= next => next = l + 1,
                                    _ => break,
                                }
                            }
                            None => break,
                        },
                        Err(e) => {
                            assert!(e.kafka_error_code() != 0, "file {i} round {round}: {e}");
                            break;
                        }
                    }
                }
                let _ = log.fetch_offset_by_timestamp(5);
            }
        }
    }
}

#[test]
fn recovery_reads_only_what_follows_the_flushed_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let config = LogConfig {
        max_index_size: 1 << 16,
        ..small_config()
    };
    let log = open(dir.path(), config.clone(), true, 0, &clock);
    let mut sizes = Vec::new();
    for i in 0..200 {
        let b = batch(2, 1_000 + 10 * i, 100);
        sizes.push(b.len() as u64);
        log.append_as_leader(&b, 0).unwrap();
    }
    log.flush(300).unwrap();
    assert_eq!(log.num_segments(), 1);
    // A crash: the log is dropped without closing (its indexes keep their preallocated
    // size) and the last write was torn.
    drop(log);
    let path = last_log_file(dir.path());
    let len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 5)
        .unwrap();

    let (log, stats) = open_unclean(dir.path(), config, 300);
    assert_eq!(stats.segments_recovered, 1);
    // From the last index entry below offset 300 (an entry every 256 bytes) to the end.
    let unflushed: u64 = sizes[150..].iter().sum();
    assert!(
        stats.scanned_bytes >= unflushed - 5 && stats.scanned_bytes < unflushed + 600,
        "scanned {} bytes, {unflushed} were not flushed",
        stats.scanned_bytes
    );
    assert_eq!(stats.truncated_bytes, sizes[199] - 5);
    assert_eq!(log.log_end_offset(), 398);
    let all = read_all(&log);
    assert_eq!(all.len(), 199);
    assert_eq!(all.last().unwrap().1, 397);
    // The rebuilt indexes find every offset and timestamp, in the prefix and after it.
    for offset in [0, 1, 151, 298, 299, 300, 301, 397] {
        let info = log.read(offset, 1, 398, true).unwrap();
        let (first, last) = offsets_of(&info.records.unwrap().read_to_vec().unwrap())[0];
        assert!(first <= offset && offset <= last, "offset {offset}");
    }
    for i in [3, 149, 150, 151, 198] {
        let found = log.fetch_offset_by_timestamp(1_000 + 10 * i + 1).unwrap();
        assert_eq!(found.unwrap().offset, 2 * i + 1, "batch {i}");
    }
    // And appends go on in the same segment at the right offset.
    let info = log.append_as_leader(&batch(1, 5_000, 5), 0).unwrap();
    assert_eq!(info.first_offset, 398);
    assert_eq!(log.num_segments(), 1);
}

#[test]
fn a_recovery_point_past_a_damaged_index_still_recovers_everything() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(MockClock::new(0));
    let log = open(dir.path(), small_config(), true, 0, &clock);
    for i in 0..60 {
        log.append_as_leader(&batch(2, i, 100), 0).unwrap();
    }
    log.flush(120).unwrap();
    drop(log);
    let index = dir.path().join("00000000000000000000.index");
    let good = fs::read(&index).unwrap();
    let len = fs::metadata(last_log_file(dir.path())).unwrap().len();
    let entries = good
        .chunks(8)
        .take_while(|e| e.iter().any(|&b| b != 0))
        .count();
    assert!(entries > 2);
    let position = |n: usize| {
        u64::from(u32::from_be_bytes(
            good[8 * n + 4..8 * n + 8].try_into().unwrap(),
        ))
    };
    // An entry out of order with the one before is not trusted: the scan starts at the
    // one before. One that points into the middle of a batch is not either.
    for (keep, damaged, scanned) in [
        (entries, entries - 1, len - position(entries - 2)),
        (1, 0, len),
    ] {
        let mut bytes = good[..8 * keep].to_vec();
        bytes[8 * damaged + 4..8 * damaged + 8].copy_from_slice(&7u32.to_be_bytes());
        fs::write(&index, &bytes).unwrap();
        let (log, stats) = open_unclean(dir.path(), small_config(), 120);
        assert_eq!(stats.scanned_bytes, scanned, "entry {damaged} damaged");
        assert_eq!(read_all(&log).len(), 60);
        drop(log);
    }
}
