//! The fuzz targets of the kafkars Rust core, one function per target.
//!
//! `fuzz_targets/<name>.rs` hands libFuzzer's input to `<name>` here, and the stable
//! `replay` binary runs every file of `corpus/<name>/` through the same function, so the
//! CI smoke and the coverage-guided runs exercise the same code. Each target drives the
//! broker's own entry points (no re-implementation of a format): any panic, abort or
//! out-of-memory is a crash. What a target returns or fails with is not checked, only
//! that it fails cleanly, plus a few invariants that must hold for any input (a
//! decompression never exceeds its limit, a decoded record lies inside its batch).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::BytesMut;
use kafka_protocol::messages::RequestKind;
use kafkars_record::{Compression, RecordBatch, batches, compression, control_record_type};
use kafkars_storage::checkpoint::OffsetCheckpointFile;
use kafkars_storage::producer_state::{ProducerStateManager, read_snapshot};
use kafkars_storage::transaction_index::read_txn_index;
use kafkars_storage::{
    LeaderEpochFileCache, Log, LogConfig, MetaProperties, MockClock, OffsetIndex, TimeIndex,
    TopicPartition,
};

/// A fuzz target: one input, a panic for a crash.
pub type Target = fn(&[u8]);

/// Every target, by name, for `replay`.
pub const TARGETS: &[(&str, Target)] = &[
    ("request_frame", request_frame),
    ("record_batch", record_batch),
    ("decompress", decompress),
    ("index_files", index_files),
    ("checkpoint_files", checkpoint_files),
    ("producer_snapshot", producer_snapshot),
    ("log_recovery", log_recovery),
    ("log_append", log_append),
    ("arrow_decode", arrow_decode),
];

/// Runs every file of `<root>/<target>/` through its target, catching panics; reports a
/// line per target through `report` and returns the inputs that crashed, as
/// `target: path`. `only` restricts the targets (empty: all).
pub fn replay(root: &Path, only: &[String], report: &mut dyn FnMut(String)) -> Vec<String> {
    let mut crashed = Vec::new();
    for &(name, target) in TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let dir = root.join(name);
        let mut inputs: Vec<PathBuf> = match fs::read_dir(&dir) {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                crashed.push(format!("{name}: cannot read {}: {e}", dir.display()));
                continue;
            }
        };
        inputs.sort();
        let started = std::time::Instant::now();
        let mut ran = 0;
        for path in &inputs {
            let Ok(data) = fs::read(path) else { continue };
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                crashed.push(format!("{name}: {}", path.display()));
            }
            ran += 1;
        }
        report(format!(
            "{name}: {ran} inputs in {:.2} s",
            started.elapsed().as_secs_f64()
        ));
    }
    crashed
}

/// Decompression limit used by the targets: small, so a zip bomb is refused quickly,
/// and checked against every output.
const LIMIT: usize = 1 << 20;

/// Offsets of the batch header fields the targets touch (Kafka's magic v2 layout).
const LENGTH_AT: usize = 8;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const BATCH_HEADER: usize = 61;

/// A request frame as the processors read it (after the 4-byte size prefix): the header
/// parsed by the server's parser, the body decoded by kafka-protocol for the API key and
/// version the header names, exactly as `network.rs` does before calling Python. The
/// records of a Produce request then go through the batch checks the log applies.
pub fn request_frame(data: &[u8]) {
    let Some((header, mut body)) = kafkars_server::parse_request_header(BytesMut::from(data))
    else {
        return;
    };
    let _ = header.response_header_version();
    let Some(api) = header.api else { return };
    if header.unsupported_version {
        return;
    }
    let Ok(request) = RequestKind::decode(api, &mut body, header.api_version) else {
        return;
    };
    if let RequestKind::Produce(produce) = &request {
        for topic in &produce.topic_data {
            for partition in &topic.partition_data {
                if let Some(records) = &partition.records {
                    check_batches(records);
                }
            }
        }
    }
}

/// Record batches as a producer or a segment holds them: iterated, validated (for
/// append too) and decoded, once as given and once with every CRC made right so that
/// the checks behind the CRC are reached.
pub fn record_batch(data: &[u8]) {
    check_batches(data);
    let mut fixed = data.to_vec();
    fix_crcs(&mut fixed);
    check_batches(&fixed);
}

/// One codec (first byte) over the rest of the input, bounded by [`LIMIT`].
pub fn decompress(data: &[u8]) {
    let Some((&codec, payload)) = data.split_first() else {
        return;
    };
    let Ok(codec) = Compression::from_id(i16::from(codec % 8)) else {
        return;
    };
    if let Ok(out) = compression::decompress_with_limit(codec, payload, LIMIT) {
        assert!(out.len() <= LIMIT, "{codec:?} inflated past its limit");
    }
}

/// An `.index`, a `.timeindex` and a `.txnindex` file with the input as content (the
/// first 8 bytes are the segment's base offset), opened, sanity-checked and searched
/// as the log does at start-up and on fetch.
pub fn index_files(data: &[u8]) {
    let (base, content) = split_i64(data);
    let base = base & i64::MAX;
    let dir = scratch_dir("index");
    let name = |suffix: &str| dir.join(format!("{:020}{suffix}", base));
    let (index, time_index, txn_index) = (name(".index"), name(".timeindex"), name(".txnindex"));
    for path in [&index, &time_index, &txn_index] {
        write(path, content);
    }
    let probes = probes(base, content);
    if let Ok(index) = OffsetIndex::open(&index, base, 1 << 16) {
        let _ = index.sanity_check(content.len() as u64);
        let _ = (index.entries(), index.max_entries(), index.is_full());
        let _ = (index.last_entry(), index.last_offset());
        for n in 0..index.entries().min(64) {
            let _ = index.entry(n);
        }
        for &p in &probes {
            let _ = index.lookup(p);
        }
    }
    if let Ok(mut time_index) = TimeIndex::open(&time_index, base, 1 << 16) {
        let _ = time_index.sanity_check();
        let _ = (time_index.entries(), time_index.last_entry());
        for n in 0..time_index.entries().min(64) {
            let _ = time_index.entry(n);
        }
        for &p in &probes {
            let _ = time_index.lookup(p);
        }
        if let Some(&p) = probes.first() {
            time_index.truncate_to(p);
        }
    }
    let _ = read_txn_index(&txn_index);
    clean(&dir);
}

/// The checkpoint files read at start-up: an offset checkpoint (recovery points, log
/// start offsets), `leader-epoch-checkpoint` and `meta.properties`, all with the input
/// as content; a partition directory name too.
pub fn checkpoint_files(data: &[u8]) {
    let dir = scratch_dir("checkpoint");
    let offsets = dir.join("recovery-point-offset-checkpoint");
    write(&offsets, data);
    let _ = OffsetCheckpointFile::new(&offsets).read();
    write(&dir.join("leader-epoch-checkpoint"), data);
    if let Ok(mut cache) = LeaderEpochFileCache::load(&dir) {
        let entries = cache.epoch_entries();
        let _ = (cache.latest_entry(), cache.latest_epoch());
        for e in entries.iter().take(8) {
            let _ = cache.end_offset_for(e.epoch, e.start_offset.saturating_add(1));
            let _ = cache.end_offset_for(e.epoch.saturating_add(1), i64::MAX);
        }
        if let Some(e) = entries.last() {
            let _ = cache.truncate_from_start(e.start_offset);
            let _ = cache.truncate_from_end(e.start_offset);
            let _ = cache.assign(e.epoch.saturating_add(1), e.start_offset.saturating_add(1));
        }
    }
    write(&dir.join("meta.properties"), data);
    let _ = MetaProperties::read(&dir);
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = TopicPartition::from_dir_name(name);
    }
    clean(&dir);
}

/// A producer-state `.snapshot` file, as given and with its CRC made right, read on its
/// own and by the producer state manager's load.
pub fn producer_snapshot(data: &[u8]) {
    let dir = scratch_dir("snapshot");
    let path = dir.join(format!("{:020}.snapshot", 0));
    write(&path, data);
    let _ = read_snapshot(&path);
    if data.len() >= 6 {
        let mut fixed = data.to_vec();
        let crc = kafkars_record::crc32c(&fixed[6..]);
        fixed[2..6].copy_from_slice(&crc.to_be_bytes());
        write(&path, &fixed);
        let _ = read_snapshot(&path);
        // As the latest snapshot of a log whose end is past it.
        if let Ok(mut manager) = ProducerStateManager::load(&dir, 0, 100) {
            let _ = (manager.producer_count(), manager.first_unstable_offset());
            manager.advance_to(200);
            let _ = manager.remove_expired(i64::MAX, 1);
        }
    }
    clean(&dir);
}

/// A partition directory loaded after an unclean (or clean) shutdown: a `.log` segment,
/// its `.index` and `.timeindex`, `leader-epoch-checkpoint` and a producer snapshot,
/// cut out of the input (see [`Parts`]). The log is opened (recovering the segment),
/// read, and must then accept an append.
pub fn log_recovery(data: &[u8]) {
    let parts = Parts::new(data);
    let dir = scratch_dir("recovery").join("fuzz-0");
    let _ = fs::create_dir_all(&dir);
    let base = 0;
    let name = |suffix: &str| dir.join(format!("{base:020}{suffix}"));
    write(&name(".log"), parts.log);
    if !parts.index.is_empty() {
        write(&name(".index"), parts.index);
    }
    if !parts.time_index.is_empty() {
        write(&name(".timeindex"), parts.time_index);
    }
    if !parts.epochs.is_empty() {
        write(&dir.join("leader-epoch-checkpoint"), parts.epochs);
    }
    if !parts.snapshot.is_empty() {
        write(&name(".snapshot"), parts.snapshot);
    }
    let clean_shutdown = parts.flags & 1 != 0;
    let recovery_point = if parts.flags & 2 != 0 { 1 } else { 0 };
    if let Ok((log, _stats)) = Log::open(
        &dir,
        TopicPartition::new("fuzz", 0),
        small_config(),
        recovery_point,
        0,
        clean_shutdown,
        clock(),
    ) {
        exercise_log(&log);
        let batch = valid_batch();
        let _ = log.append_as_leader(&batch, 0);
        exercise_log(&log);
    }
    clean(dir.parent().unwrap_or(&dir));
}

/// Produced records appended to a fresh log (what a Produce request's records reach),
/// as given and with every CRC made right, then read back.
pub fn log_append(data: &[u8]) {
    let dir = scratch_dir("append").join("fuzz-0");
    let Ok((log, _)) = Log::open(
        &dir,
        TopicPartition::new("fuzz", 0),
        small_config(),
        0,
        0,
        true,
        clock(),
    ) else {
        clean(dir.parent().unwrap_or(&dir));
        return;
    };
    let _ = log.append_as_leader(data, 0);
    let mut records = data.to_vec();
    fix_crcs(&mut records);
    let _ = log.append_as_leader(&records, 0);
    exercise_log(&log);
    drop(log);
    clean(dir.parent().unwrap_or(&dir));
}

/// Spark's Arrow decoder (`decode_batches_arrow`) over rows cut out of the input: the
/// first byte picks the options, then rows of `u16 length + bytes` (0xffff is a null
/// row), the rest a last row. With bit 0x80 every batch gets a right CRC first.
pub fn arrow_decode(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut owned = rest.to_vec();
    if flags & 0x80 != 0 {
        fix_crcs(&mut owned);
    }
    let mut rows: Vec<Option<&[u8]>> = Vec::new();
    let mut rest = &owned[..];
    while rows.len() < 8 && rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        if len == 0xffff {
            rows.push(None);
            rest = &rest[2..];
            continue;
        }
        if len > rest.len() - 2 {
            break;
        }
        rows.push(Some(&rest[2..2 + len]));
        rest = &rest[2 + len..];
    }
    rows.push(Some(rest));
    let start = (flags & 0x20 != 0).then_some(1);
    let end = (flags & 0x40 != 0).then_some(3);
    let _ = _core::fuzz_decode_batches(&rows, flags, start, end);
}

/// The batch checks: iteration, header accessors, validation (for append too), the
/// records decoded (each must lie inside the batch's offsets), control records parsed.
fn check_batches(buf: &[u8]) {
    let mut iter = batches(buf);
    for batch in &mut iter {
        let Ok(batch) = batch else { break };
        check_batch(&batch);
    }
    let _ = (iter.position(), iter.is_truncated(), iter.remaining().len());
}

fn check_batch(batch: &RecordBatch<'_>) {
    let _ = (
        batch.size_in_bytes(),
        batch.last_offset(),
        batch.next_offset(),
    );
    let _ = (
        batch.last_sequence(),
        batch.compression(),
        batch.timestamp_type(),
    );
    let _ = (batch.delete_horizon_ms(), batch.is_valid());
    let valid = batch.validate_with_limit(LIMIT).is_ok();
    let appendable = batch.validate_for_append_with_limit(LIMIT).is_ok();
    assert!(valid || !appendable, "valid for append but not valid");
    let Ok(records) = batch.records_with_limit(LIMIT) else {
        // Compressed batches are validated as they inflate: that must agree with
        // decompressing the whole section.
        assert!(!valid, "a valid batch whose records cannot be decompressed");
        return;
    };
    if valid {
        let decoded = records.iter().take_while(Result::is_ok).count();
        assert_eq!(
            decoded,
            records.len(),
            "a valid batch whose records do not all decode"
        );
    }
    assert!(
        records.body().len() <= LIMIT,
        "records inflated past the limit"
    );
    for record in records.iter().take(4096) {
        let Ok(record) = record else { break };
        if appendable {
            assert!(
                (batch.base_offset()..=batch.last_offset()).contains(&record.offset),
                "a record of a valid batch lies outside its offsets"
            );
        }
    }
    // These decompress with the crate's own (large) limit: only after the validation the
    // log does first, as in the broker.
    if appendable {
        let _ = control_record_type(batch);
        let _ = kafkars_record::end_transaction_marker(batch);
        let _ = batch.all_records_have_keys();
        if batch.size_in_bytes() < 64 << 10
            && let Ok(rebuilt) = kafkars_record::recompress(batch, Compression::Lz4)
        {
            let rebuilt = RecordBatch::new(&rebuilt).expect("a recompressed batch parses");
            rebuilt
                .validate_for_append_with_limit(LIMIT.max(rebuilt.size_in_bytes() * 2))
                .expect("a recompressed valid batch is valid");
        }
    }
}

/// Writes the right CRC-32C into every batch of `buf` whose length field fits.
pub fn fix_crcs(buf: &mut [u8]) {
    let mut pos = 0;
    while buf.len() - pos >= BATCH_HEADER {
        let len = i32::from_be_bytes(
            buf[pos + LENGTH_AT..pos + LENGTH_AT + 4]
                .try_into()
                .unwrap(),
        );
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| (pos + 12).checked_add(l))
            .filter(|&end| end <= buf.len() && end >= pos + BATCH_HEADER)
        else {
            return;
        };
        let crc = kafkars_record::crc32c(&buf[pos + ATTRIBUTES_AT..end]);
        buf[pos + CRC_AT..pos + CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

/// The pieces of a partition directory in one input: a flags byte, then the
/// `.index`, `.timeindex`, `leader-epoch-checkpoint` and `.snapshot` contents, each as
/// `u16 length + bytes`, then the `.log` (the rest). Short inputs leave parts empty.
pub struct Parts<'a> {
    pub flags: u8,
    pub index: &'a [u8],
    pub time_index: &'a [u8],
    pub epochs: &'a [u8],
    pub snapshot: &'a [u8],
    pub log: &'a [u8],
}

impl<'a> Parts<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let (flags, mut rest) = match data.split_first() {
            Some((&f, rest)) => (f, rest),
            None => (0, data),
        };
        let mut take = || -> &'a [u8] {
            if rest.len() < 2 {
                return &[];
            }
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            let (part, tail) = rest[2..].split_at(len);
            rest = tail;
            part
        };
        let (index, time_index, epochs, snapshot) = (take(), take(), take(), take());
        Parts {
            flags,
            index,
            time_index,
            epochs,
            snapshot,
            log: rest,
        }
    }

    /// The inverse of [`Parts::new`], for building seeds.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.flags];
        for part in [self.index, self.time_index, self.epochs, self.snapshot] {
            let part = &part[..part.len().min(0xffff)];
            out.extend_from_slice(&(part.len() as u16).to_be_bytes());
            out.extend_from_slice(part);
        }
        out.extend_from_slice(self.log);
        out
    }
}

fn exercise_log(log: &Log) {
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    let _ = (log.high_watermark(), log.recovery_point());
    for offset in [start, start.saturating_add(1), end.saturating_sub(1), end] {
        let _ = log.read(offset, 1 << 16, i64::MAX, true);
        let _ = log.read(offset, 100, end, false);
    }
    for timestamp in [-2, -1, 0, i64::MAX] {
        let _ = log.fetch_offset_by_timestamp(timestamp);
    }
    let _ = log.end_offset_for_epoch(0);
}

fn small_config() -> LogConfig {
    LogConfig {
        max_index_size: 1 << 16,
        index_interval_bytes: 128,
        segment_bytes: 1 << 20,
        ..LogConfig::default()
    }
}

fn clock() -> Arc<MockClock> {
    Arc::new(MockClock::new(1_700_000_000_000))
}

fn valid_batch() -> Vec<u8> {
    let mut builder = kafkars_record::RecordBatchBuilder::new();
    builder.append(kafkars_record::NewRecord::with_value(
        1_700_000_000_000,
        "x",
    ));
    builder.build().expect("a one-record batch builds")
}

fn split_i64(data: &[u8]) -> (i64, &[u8]) {
    if data.len() < 8 {
        return (0, data);
    }
    let (head, rest) = data.split_at(8);
    (i64::from_be_bytes(head.try_into().unwrap()), rest)
}

/// Offsets and timestamps to look up: around the base, and read from the content.
fn probes(base: i64, content: &[u8]) -> Vec<i64> {
    let mut out = vec![
        i64::MIN,
        -1,
        0,
        base,
        base.saturating_add(1),
        base.saturating_add(1 << 31),
        i64::MAX,
    ];
    out.extend(
        content
            .chunks_exact(8)
            .take(4)
            .map(|c| i64::from_be_bytes(c.try_into().unwrap())),
    );
    out
}

/// A directory of this process for the files a target writes (on tmpfs when there is
/// one: the file targets write every input). `FUZZ_TMPDIR` overrides the parent.
fn scratch_dir(target: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let parent = std::env::var_os("FUZZ_TMPDIR")
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from("/dev/shm")).filter(|p| p.is_dir()))
            .unwrap_or_else(std::env::temp_dir);
        parent.join(format!("kafkars-fuzz-{}", std::process::id()))
    });
    let dir = root.join(target);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("the fuzz scratch directory can be made");
    dir
}

fn write(path: &Path, data: &[u8]) {
    fs::write(path, data).expect("the fuzz scratch file can be written");
}

fn clean(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
}
