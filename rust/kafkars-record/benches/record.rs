//! Criterion benches: CRC-32C, batch validation, per-codec decompression and
//! batch building with compression.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kafkars_record::compression::{compress, decompress};
use kafkars_record::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, crc32c};

/// Records of about `value_size` bytes of JSON-like text, compressible like real
/// event payloads (field names repeat, numbers vary).
fn records(count: usize, value_size: usize) -> Vec<NewRecord> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    (0..count)
        .map(|i| {
            let mut value = String::with_capacity(value_size + 64);
            while value.len() < value_size {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                value.push_str(&format!(
                    "{{\"id\":{i},\"v\":{},\"ok\":true}}",
                    seed % 100_000
                ));
            }
            value.truncate(value_size);
            NewRecord::with_value(1_700_000_000_000 + i as i64, value)
        })
        .collect()
}

fn batch(records: &[NewRecord], compression: Compression) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new().compression(compression);
    for r in records {
        builder.append(r.clone());
    }
    builder.build().unwrap()
}

fn bench_crc(c: &mut Criterion) {
    let data: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect();
    let mut group = c.benchmark_group("crc32c");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("1MiB", |b| b.iter(|| crc32c(black_box(&data))));
    group.finish();
}

fn bench_validate(c: &mut Criterion) {
    // A 16 KiB batch of 100-byte records (value 86 B + record framing).
    let bytes = batch(&records(163, 86), Compression::None);
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function(format!("uncompressed_{}B_163x100B", bytes.len()), |b| {
        b.iter(|| {
            RecordBatch::new(black_box(&bytes))
                .unwrap()
                .validate()
                .unwrap()
        })
    });
    group.bench_function("iterate_records", |b| {
        b.iter(|| {
            let batch = RecordBatch::new(black_box(&bytes)).unwrap();
            let records = batch.records().unwrap();
            records
                .iter()
                .map(|r| r.unwrap().value.map_or(0, <[u8]>::len))
                .sum::<usize>()
        })
    });
    group.finish();
}

/// Records of `value_size` bytes repeating one phrase, as rdkafka_performance sends
/// them: they compress as far as a codec can, so validation is all inflating.
fn pattern_records(count: usize, value_size: usize) -> Vec<NewRecord> {
    let pattern = b"librdkafka_performance testing!";
    let value: Vec<u8> = pattern.iter().copied().cycle().take(value_size).collect();
    (0..count)
        .map(|i| NewRecord::with_value(1_700_000_000_000 + i as i64, value.clone()))
        .collect()
}

fn bench_validate_compressed(c: &mut Criterion) {
    // What a broker does to each produced batch it keeps compressed: 1 MiB of records
    // (counted as inflated bytes) checked as they inflate.
    let mut group = c.benchmark_group("validate_compressed");
    for codec in [Compression::Lz4, Compression::Zstd] {
        for (payload, size) in [("pattern", 1024), ("pattern", 64 << 10), ("json", 1024)] {
            let count = (1 << 20) / size;
            let recs = match payload {
                "pattern" => pattern_records(count, size),
                _ => records(count, size),
            };
            let bytes = batch(&recs, codec);
            let inflated = batch(&recs, Compression::None).len();
            group.throughput(Throughput::Bytes(inflated as u64));
            let name = format!("{codec}_1MiB_{payload}_{}KiB", size >> 10);
            group.bench_function(name, |b| {
                b.iter(|| {
                    RecordBatch::new(black_box(&bytes))
                        .unwrap()
                        .validate_for_append()
                        .unwrap()
                })
            });
        }
    }
    group.finish();
}

fn bench_codecs(c: &mut Criterion) {
    // 1 MiB-ish records section: 10 000 records of 100 B.
    let recs = records(10_000, 86);
    let body = batch(&recs, Compression::None)[61..].to_vec();
    let mut group = c.benchmark_group("decompress");
    group.throughput(Throughput::Bytes(body.len() as u64));
    for codec in Compression::ALL.into_iter().skip(1) {
        let packed = compress(codec, &body).unwrap();
        eprintln!(
            "{codec}: {} -> {} bytes (ratio {:.2})",
            body.len(),
            packed.len(),
            body.len() as f64 / packed.len() as f64
        );
        group.bench_with_input(BenchmarkId::from_parameter(codec), &packed, |b, packed| {
            b.iter(|| decompress(codec, black_box(packed)).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("build");
    group.throughput(Throughput::Bytes(body.len() as u64));
    for codec in Compression::ALL {
        // build() borrows the builder, so this times encoding, compression and CRC
        // without cloning the input records.
        let mut builder = RecordBatchBuilder::new().compression(codec);
        for r in &recs {
            builder.append(r.clone());
        }
        group.bench_with_input(
            BenchmarkId::from_parameter(codec),
            &builder,
            |b, builder| b.iter(|| black_box(builder).build().unwrap()),
        );
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_crc,
    bench_validate,
    bench_validate_compressed,
    bench_codecs
);
criterion_main!(benches);
