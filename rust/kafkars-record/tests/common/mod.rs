//! Strategies shared by the property tests.

#![allow(dead_code, unreachable_pub)]

use kafkars_record::{Compression, NewRecord, RecordBatchBuilder, TimestampType};
use proptest::prelude::*;

pub fn compression() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

pub fn new_record() -> impl Strategy<Value = NewRecord> {
    (
        // Around now, with deltas either way, plus the extremes.
        prop_oneof![
            4 => 1_700_000_000_000i64..1_700_000_100_000,
            1 => any::<i64>(),
            1 => Just(-1i64),
        ],
        prop::option::of(bytes(40)),
        prop::option::weighted(0.9, bytes(200)),
        // Few distinct keys so duplicates are common.
        prop::collection::vec(
            (
                prop::sample::select(vec!["a", "trace-id", "a", "ключ", ""]),
                prop::option::of(bytes(16)),
            ),
            0..5,
        ),
    )
        .prop_map(|(timestamp, key, value, headers)| NewRecord {
            timestamp,
            key,
            value,
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        })
}

/// Everything a builder can be told, plus its records with their offset deltas.
#[derive(Debug, Clone)]
pub struct BatchSpec {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub compression: Compression,
    pub log_append_time: Option<i64>,
    pub producer: (i64, i16, i32),
    pub transactional: bool,
    pub records: Vec<(i32, NewRecord)>,
}

impl BatchSpec {
    pub fn builder(&self) -> RecordBatchBuilder {
        let mut builder = RecordBatchBuilder::new()
            .base_offset(self.base_offset)
            .partition_leader_epoch(self.partition_leader_epoch)
            .compression(self.compression)
            .producer(self.producer.0, self.producer.1, self.producer.2)
            .transactional(self.transactional);
        if let Some(t) = self.log_append_time {
            builder = builder.log_append_time(t);
        }
        for (delta, record) in &self.records {
            builder.append_with_offset(*delta, record.clone());
        }
        builder
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.log_append_time.is_some() {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
}

pub fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    (
        0i64..1 << 40,
        -1i32..100,
        compression(),
        prop::option::weighted(0.2, 1_700_000_000_000i64..1_800_000_000_000),
        prop_oneof![
            Just((-1i64, -1i16, -1i32)),
            (0i64..1 << 50, 0i16..100, 0i32..i32::MAX),
        ],
        any::<bool>(),
        // Offset gaps of 1 (dense) most of the time, larger sometimes.
        prop::collection::vec(
            (prop_oneof![8 => Just(1i32), 1 => 2i32..50], new_record()),
            1..40,
        ),
    )
        .prop_map(
            |(base_offset, epoch, compression, log_append_time, producer, transactional, recs)| {
                let mut delta = -1i32;
                let records = recs
                    .into_iter()
                    .map(|(gap, r)| {
                        delta += gap;
                        (delta, r)
                    })
                    .collect();
                BatchSpec {
                    base_offset,
                    partition_leader_epoch: epoch,
                    compression,
                    log_append_time,
                    producer,
                    transactional,
                    records,
                }
            },
        )
}
