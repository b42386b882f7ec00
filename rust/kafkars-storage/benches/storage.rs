//! Storage benchmarks: append throughput against a plain sequential write, offset
//! index lookups on a full 10 MiB index, and segment recovery scan speed.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kafkars_record::{Compression, NewRecord, RecordBatchBuilder};
use kafkars_storage::{
    Clock, Log, LogConfig, LogSegment, OffsetIndex, SystemClock, TopicCompression, TopicPartition,
};

const BATCH: usize = 16 * 1024;
/// Reset the files every 64 MiB so the bench does not fill the disk.
const RESET_EVERY: u64 = (64 << 20) / BATCH as u64;

fn batch_of_about(size: usize) -> Vec<u8> {
    compressed_batch_of_about(size, Compression::None)
}

/// About `size` bytes of keyed records before compression, compressed with `codec`.
fn compressed_batch_of_about(size: usize, codec: Compression) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new().compression(codec);
    let mut total = 61;
    let mut i = 0u64;
    while total + 1100 <= size {
        let value: Vec<u8> = (0..1024).map(|j| ((i * 31 + j) % 251) as u8).collect();
        let mut record = NewRecord::with_value(1_700_000_000_000 + i as i64, value);
        record.key = Some(format!("key-{i}").into_bytes());
        b.append(record);
        total += 1048;
        i += 1;
    }
    b.build().unwrap()
}

/// Appends of 16 KiB (uncompressed) lz4 batches: validated as they are to a compacted
/// topic (keys checked), and recompressed to zstd for `compression.type=zstd`.
fn append_compressed(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_compressed");
    let batch = compressed_batch_of_about(BATCH, Compression::Lz4);
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let cases = [
        (
            "lz4_compacted_16k",
            LogConfig {
                compacted: true,
                ..LogConfig::default()
            },
        ),
        (
            "lz4_to_zstd_16k",
            LogConfig {
                compression: TopicCompression::Codec(Compression::Zstd),
                ..LogConfig::default()
            },
        ),
    ];
    for (name, config) in cases {
        let (log, _) = Log::open(
            &dir.path().join(format!("{name}-0")),
            TopicPartition::new(name, 0),
            config,
            0,
            0,
            true,
            Arc::new(SystemClock),
        )
        .unwrap();
        let mut n = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                log.append_as_leader(&batch, 0).unwrap();
                n += 1;
                if n.is_multiple_of(RESET_EVERY) {
                    log.truncate_fully_and_start_at(log.log_end_offset())
                        .unwrap();
                }
            });
        });
    }
    group.finish();
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    let batch = batch_of_about(BATCH);
    group.throughput(Throughput::Bytes(batch.len() as u64));
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();

    // The file, the log and their counters live outside the routines: Criterion calls a
    // routine once per sample, and state rebuilt there would reset (plain) or reopen and
    // grow without bound (log) between samples, so the two would not write the same way.
    let path = dir.path().join("plain.bin");
    let open_plain = || {
        OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .unwrap()
    };
    let mut f = open_plain();
    let mut n = 0u64;
    group.bench_function("plain_write_16k", |b| {
        b.iter(|| {
            f.write_all(&batch).unwrap();
            n += 1;
            if n.is_multiple_of(RESET_EVERY) {
                // Same reset as the log's (a new file, the old one unlinked), so both
                // pay for evicting 64 MiB of page cache.
                std::fs::remove_file(&path).unwrap();
                f = open_plain();
            }
        });
    });

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (log, _) = Log::open(
        &dir.path().join("bench-0"),
        TopicPartition::new("bench", 0),
        LogConfig::default(),
        0,
        0,
        true,
        clock,
    )
    .unwrap();
    let buf = batch.clone();
    let mut n = 0u64;
    group.bench_function("log_append_as_leader_16k", |b| {
        b.iter(|| {
            // Offsets and epoch go into header copies: the buffer stays as produced.
            log.append_as_leader(&buf, 0).unwrap();
            n += 1;
            if n.is_multiple_of(RESET_EVERY) {
                log.truncate_fully_and_start_at(log.log_end_offset())
                    .unwrap();
            }
        });
    });
    group.finish();
}

fn index_lookup(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let max = 10 * 1024 * 1024;
    let mut idx =
        OffsetIndex::open(&dir.path().join("00000000000000000000.index"), 0, max).unwrap();
    let mut i = 1i64;
    while !idx.is_full() {
        idx.append(i * 3, (i * 4096) as u32 % i32::MAX as u32)
            .unwrap();
        i += 1;
    }
    let last = idx.last_offset();
    let mut group = c.benchmark_group("offset_index_lookup_10MiB");
    let mut x = 0x1234_5678_u64;
    group.bench_function(BenchmarkId::new("random", idx.entries()), |b| {
        b.iter(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            idx.lookup((x % last as u64) as i64)
        })
    });
    group.bench_function(BenchmarkId::new("warm_tail", idx.entries()), |b| {
        b.iter(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            idx.lookup(last - (x % 3000) as i64)
        })
    });
    group.finish();
}

fn recovery(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (log, _) = Log::open(
        &dir.path().join("r-0"),
        TopicPartition::new("r", 0),
        LogConfig::default(),
        0,
        0,
        true,
        clock,
    )
    .unwrap();
    let batch = batch_of_about(BATCH);
    for _ in 0..(64 << 20) / batch.len() {
        log.append_as_leader(&batch, 0).unwrap();
    }
    log.close().unwrap();
    let size = log.size_in_bytes();
    let path = log.dir();
    let mut group = c.benchmark_group("recovery");
    group.throughput(Throughput::Bytes(size));
    group.sample_size(10);
    group.bench_function("segment_recover_64MiB", |b| {
        b.iter(|| {
            let mut seg = LogSegment::open(&path, 0, "", 10 << 20, 4096).unwrap();
            seg.recover().unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, append, append_compressed, index_lookup, recovery);
criterion_main!(benches);
