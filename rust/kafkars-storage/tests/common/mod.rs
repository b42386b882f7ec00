#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;

use kafkars_record::{NewRecord, RecordBatchBuilder};
use kafkars_storage::{Log, LogConfig, MockClock, TopicPartition};

pub fn batch(n: usize, ts: i64, value_len: usize) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new();
    for i in 0..n {
        b.append(NewRecord::with_value(ts + i as i64, vec![b'x'; value_len]));
    }
    b.build().unwrap()
}

pub fn keyed_batch(n: usize, ts: i64) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new();
    for i in 0..n {
        b.append(NewRecord {
            timestamp: ts,
            key: Some(format!("k{i}").into_bytes()),
            value: Some(b"v".to_vec()),
            headers: vec![],
        });
    }
    b.build().unwrap()
}

pub fn small_config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 256,
        max_index_size: 4096,
        ..LogConfig::default()
    }
}

pub fn open(
    dir: &Path,
    config: LogConfig,
    clean: bool,
    rp: i64,
    clock: &Arc<MockClock>,
) -> Arc<Log> {
    let clock: Arc<dyn kafkars_storage::Clock> = clock.clone();
    Log::open(
        dir,
        TopicPartition::new("t", 0),
        config,
        rp,
        0,
        clean,
        clock,
    )
    .unwrap()
    .0
}

/// Every batch in `bytes` as (base offset, last offset), asserting they are valid.
pub fn offsets_of(bytes: &[u8]) -> Vec<(i64, i64)> {
    kafkars_record::batches(bytes)
        .map(|b| {
            let b = b.unwrap();
            b.validate().unwrap();
            (b.base_offset(), b.last_offset())
        })
        .collect()
}
