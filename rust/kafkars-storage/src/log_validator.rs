//! Kafka's LogValidator: what a leader checks of each batch it appends, in one pass over
//! the batch's records (inflated as a stream when compressed).
//!
//! Per batch: size against `max.message.bytes`, no control batches from producers, the
//! CRC, the structure (every record decodes, lengths add up, offset deltas increase,
//! recordsCount matches), and for appends as leader a non-empty batch with offsets
//! `0..=lastOffsetDelta`. Per record, as leader: a key on compacted topics and, with
//! `message.timestamp.type=CreateTime`, a timestamp within the topic's bounds; records
//! breaking these are reported one by one and the whole batch is refused
//! ([`LogError::RecordValidation`]). A batch compressed with another codec than the
//! topic's `compression.type` is re-encoded from the records inflated in that same pass.

use kafkars_record::compression::{MAX_DECOMPRESSED_SIZE, decompression_limit};
use kafkars_record::{
    Compression, RecordBatch, RecordError, RecordSummary, TimestampType, recompress_records,
};

use crate::config::{LogConfig, TopicCompression};
use crate::error::{LogError, RecordErrorKind, Result};
use crate::time_index::NO_TIMESTAMP;
use crate::topic_partition::TopicPartition;

/// Who is appending: what is checked depends on it (Kafka's AppendOrigin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendOrigin {
    /// A producer: offsets assigned, duplicates and sequences checked, no control batches.
    Client,
    /// The transaction coordinator writing a marker.
    Coordinator,
    /// A follower copying the leader's batches as they are.
    Replication,
}

/// What validating one batch found.
#[derive(Debug)]
pub(crate) struct ValidatedBatch {
    /// The codec the batch arrived with.
    pub(crate) source_compression: Compression,
    /// The batch re-encoded with the topic's codec, when it arrived with another one.
    pub(crate) recompressed: Option<Vec<u8>>,
}

/// The checks of one append (Kafka's LogValidator), for one topic configuration and
/// one reading of the clock.
pub(crate) struct LogValidator<'a> {
    config: &'a LogConfig,
    topic_partition: &'a TopicPartition,
    origin: AppendOrigin,
    now_ms: i64,
}

/// A record refused, and why, before the batch's errors are put together.
struct RecordRefusal {
    kind: RecordErrorKind,
    index: i32,
    message: String,
}

impl<'a> LogValidator<'a> {
    pub(crate) fn new(
        config: &'a LogConfig,
        topic_partition: &'a TopicPartition,
        origin: AppendOrigin,
        now_ms: i64,
    ) -> Self {
        LogValidator {
            config,
            topic_partition,
            origin,
            now_ms,
        }
    }

    fn as_leader(&self) -> bool {
        self.origin != AppendOrigin::Replication
    }

    /// The CreateTime bounds to check, if any (none when both are unlimited, as the
    /// broker checked nothing then: an exact comparison could refuse a timestamp near
    /// `i64::MIN`).
    fn timestamp_bounds(&self) -> Option<(i64, i64)> {
        let (before, after) = (
            self.config.message_timestamp_before_max_ms,
            self.config.message_timestamp_after_max_ms,
        );
        (self.as_leader()
            && self.config.message_timestamp_type == TimestampType::CreateTime
            && (before != i64::MAX || after != i64::MAX))
            .then_some((before, after))
    }

    /// Validates `batch` in one pass over its records; see the module docs.
    pub(crate) fn validate_batch(&self, batch: &RecordBatch<'_>) -> Result<ValidatedBatch> {
        let config = self.config;
        if batch.size_in_bytes() > config.max_message_bytes {
            return Err(LogError::RecordTooLarge {
                size: batch.size_in_bytes(),
                max: config.max_message_bytes,
            });
        }
        if self.origin == AppendOrigin::Client && batch.is_control() {
            return Err(RecordError::InvalidRecord(
                "a producer may not append control batches".into(),
            )
            .into());
        }
        batch.ensure_valid()?;
        let source_compression = batch.compression()?;
        // Kafka keeps an uncompressed control batch (a transaction marker) as it is.
        let target = match config.compression {
            TopicCompression::Codec(c)
                if self.as_leader()
                    && c != source_compression
                    && !(batch.is_control() && source_compression == Compression::None) =>
            {
                Some(c)
            }
            _ => None,
        };
        let limit = if self.as_leader() {
            decompression_limit(config.max_message_bytes)
        } else {
            MAX_DECOMPRESSED_SIZE
        };
        let check_keys = self.as_leader() && config.compacted && !batch.is_control();
        let bounds = self.timestamp_bounds().filter(|_| !batch.is_control());

        let mut refusals = Vec::new();
        let mut index = 0i32;
        let visit = |record: RecordSummary| {
            if check_keys && !record.has_key {
                refusals.push(RecordRefusal {
                    kind: RecordErrorKind::InvalidRecord,
                    index,
                    message: format!(
                        "Compacted topic cannot accept message without key in topic partition {}",
                        self.topic_partition
                    ),
                });
            } else if let Some((before, after)) = bounds {
                let timestamp = match batch.timestamp_type() {
                    TimestampType::LogAppendTime => batch.max_timestamp(),
                    TimestampType::CreateTime => {
                        batch.base_timestamp().wrapping_add(record.timestamp_delta)
                    }
                };
                if timestamp != NO_TIMESTAMP
                    && let Some(message) = self.out_of_bounds(
                        timestamp,
                        batch.base_offset().wrapping_add(record.offset_delta.into()),
                        before,
                        after,
                    )
                {
                    refusals.push(RecordRefusal {
                        kind: RecordErrorKind::InvalidTimestamp,
                        index,
                        message,
                    });
                }
            }
            index += 1;
        };
        // Inflated records are kept only when they are to be compressed again.
        let mut inflated = Vec::new();
        let capture =
            (target.is_some() && source_compression != Compression::None).then_some(&mut inflated);
        batch.walk_records(limit, capture, visit)?;
        if self.as_leader() {
            let count = batch.records_count();
            if count == 0 {
                return Err(
                    RecordError::InvalidRecord("record batch has no records".into()).into(),
                );
            }
            if i64::from(count) != i64::from(batch.last_offset_delta()) + 1 {
                return Err(RecordError::InvalidRecord(format!(
                    "{count} records but lastOffsetDelta {}",
                    batch.last_offset_delta()
                ))
                .into());
            }
        }
        if !refusals.is_empty() {
            return Err(record_validation_error(refusals));
        }
        let recompressed = match target {
            None => None,
            Some(target) => {
                let body = if source_compression == Compression::None {
                    batch.records_bytes()
                } else {
                    &inflated
                };
                let bytes = recompress_records(batch, body, target)?;
                if bytes.len() > config.max_message_bytes {
                    return Err(LogError::RecordTooLarge {
                        size: bytes.len(),
                        max: config.max_message_bytes,
                    });
                }
                Some(bytes)
            }
        };
        Ok(ValidatedBatch {
            source_compression,
            recompressed,
        })
    }

    /// The record error for a CreateTime `timestamp` outside `[now - before, now +
    /// after]`, compared exactly; the bounds in the message wrap as Java longs do.
    fn out_of_bounds(
        &self,
        timestamp: i64,
        offset: i64,
        before: i64,
        after: i64,
    ) -> Option<String> {
        let diff = i128::from(self.now_ms) - i128::from(timestamp);
        (diff > i128::from(before) || -diff > i128::from(after)).then(|| {
            format!(
                "Timestamp {timestamp} of message with offset {offset} is out of range. \
                 The timestamp should be within [{}, {}]",
                self.now_ms.wrapping_sub(before),
                self.now_ms.wrapping_add(after)
            )
        })
    }
}

/// One batch's refused records as the error Kafka answers with (its
/// processRecordErrors): INVALID_TIMESTAMP if any timestamp was refused, else
/// INVALID_RECORD listing the first three errors.
fn record_validation_error(refusals: Vec<RecordRefusal>) -> LogError {
    let invalid_timestamp = refusals
        .iter()
        .any(|r| r.kind == RecordErrorKind::InvalidTimestamp);
    let record_errors: Vec<(i32, String)> =
        refusals.into_iter().map(|r| (r.index, r.message)).collect();
    if invalid_timestamp {
        return LogError::RecordValidation {
            kind: RecordErrorKind::InvalidTimestamp,
            message: "One or more records have been rejected due to invalid timestamp".into(),
            record_errors,
        };
    }
    // Java's List.toString of ProduceResponse.RecordError.
    let shown: Vec<String> = record_errors
        .iter()
        .take(3)
        .map(|(index, message)| format!("RecordError(batchIndex={index}, message='{message}')"))
        .collect();
    LogError::RecordValidation {
        kind: RecordErrorKind::InvalidRecord,
        message: format!(
            "One or more records have been rejected due to {} record errors in total, and only \
             showing the first three errors at most: [{}]",
            record_errors.len(),
            shown.join(", ")
        ),
        record_errors,
    }
}

#[cfg(test)]
mod tests {
    use kafkars_record::{
        ControlRecordType, EndTransactionMarker, NewRecord, RecordBatchBuilder, crc32c,
    };

    use super::*;

    const NOW: i64 = 1_700_000_000_000;
    const TS_ERROR: &str = "One or more records have been rejected due to invalid timestamp";

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 3)
    }

    /// A batch of one record per `(key, timestamp)`, compressed with `codec`.
    fn build(codec: Compression, records: &[(Option<&str>, i64)]) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new().compression(codec);
        for (key, ts) in records {
            let mut r = NewRecord::with_value(*ts, vec![b'v'; 300]);
            r.key = key.map(|k| k.as_bytes().to_vec());
            b.append(r);
        }
        b.build().unwrap()
    }

    fn validate(config: &LogConfig, origin: AppendOrigin, bytes: &[u8]) -> Result<ValidatedBatch> {
        let tp = tp();
        LogValidator::new(config, &tp, origin, NOW)
            .validate_batch(&RecordBatch::new(bytes).unwrap())
    }

    fn bounded(before: i64, after: i64) -> LogConfig {
        LogConfig {
            message_timestamp_before_max_ms: before,
            message_timestamp_after_max_ms: after,
            ..LogConfig::default()
        }
    }

    /// `(kind, message, record_errors)` of a refused batch.
    fn refusal(result: Result<ValidatedBatch>) -> (RecordErrorKind, String, Vec<(i32, String)>) {
        match result {
            Err(LogError::RecordValidation {
                kind,
                message,
                record_errors,
            }) => (kind, message, record_errors),
            other => panic!("not a record validation error: {other:?}"),
        }
    }

    fn rewrite_crc(bytes: &mut [u8]) {
        let crc = crc32c(&bytes[21..]);
        bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    }

    #[test]
    fn batch_rules() {
        let config = LogConfig {
            max_message_bytes: 1000,
            ..LogConfig::default()
        };
        let ok = build(Compression::None, &[(None, NOW)]);
        validate(&config, AppendOrigin::Client, &ok).unwrap();

        let big = build(
            Compression::None,
            &[(None, NOW), (None, NOW), (None, NOW), (None, NOW)],
        );
        assert!(matches!(
            validate(&config, AppendOrigin::Client, &big),
            Err(LogError::RecordTooLarge { max: 1000, .. })
        ));

        let marker = EndTransactionMarker {
            control_type: ControlRecordType::Commit,
            coordinator_epoch: 0,
        }
        .build_batch(0, NOW, 0, 7, 0)
        .unwrap();
        let err = validate(&config, AppendOrigin::Client, &marker).unwrap_err();
        assert_eq!(err.kafka_error_code(), 87, "{err}");
        validate(&config, AppendOrigin::Coordinator, &marker).unwrap();

        let mut bad_crc = ok.clone();
        *bad_crc.last_mut().unwrap() ^= 1;
        assert!(matches!(
            validate(&config, AppendOrigin::Client, &bad_crc),
            Err(LogError::Record(RecordError::CrcMismatch { .. }))
        ));
        // Followers check the CRC too.
        assert!(validate(&config, AppendOrigin::Replication, &bad_crc).is_err());

        // recordsCount disagreeing with lastOffsetDelta: refused from producers only.
        let mut gap = RecordBatchBuilder::new();
        gap.append_with_offset(0, NewRecord::with_value(NOW, "a"));
        gap.append_with_offset(2, NewRecord::with_value(NOW, "b"));
        let gap = gap.build().unwrap();
        let err = validate(&config, AppendOrigin::Client, &gap).unwrap_err();
        assert!(
            err.to_string().contains("2 records but lastOffsetDelta 2"),
            "{err}"
        );
        validate(&config, AppendOrigin::Replication, &gap).unwrap();

        // A count that does not match the records is corrupt (CRC intact).
        let mut miscounted = ok.clone();
        miscounted[57..61].copy_from_slice(&2i32.to_be_bytes());
        rewrite_crc(&mut miscounted);
        let err = validate(&config, AppendOrigin::Client, &miscounted).unwrap_err();
        assert_eq!(err.kafka_error_code(), 2, "{err}"); // CORRUPT_MESSAGE
    }

    #[test]
    fn keyless_records_on_compacted_topics_with_every_codec() {
        let config = LogConfig {
            compacted: true,
            ..LogConfig::default()
        };
        for codec in Compression::ALL {
            let bytes = build(codec, &[(None, NOW), (Some("k"), NOW), (None, NOW)]);
            let (kind, message, errors) = refusal(validate(&config, AppendOrigin::Client, &bytes));
            let each = "Compacted topic cannot accept message without key in topic partition t-3";
            assert_eq!(kind, RecordErrorKind::InvalidRecord, "{codec}");
            assert_eq!(errors, vec![(0, each.to_string()), (2, each.to_string())]);
            assert_eq!(
                message,
                format!(
                    "One or more records have been rejected due to 2 record errors in total, \
                     and only showing the first three errors at most: [RecordError(batchIndex=0, \
                     message='{each}'), RecordError(batchIndex=2, message='{each}')]"
                )
            );
            validate(
                &config,
                AppendOrigin::Client,
                &build(codec, &[(Some("k"), NOW)]),
            )
            .unwrap();
            // Not checked on replication (the leader did), as in Kafka.
            validate(&config, AppendOrigin::Replication, &bytes).unwrap();
        }
        // Only the first three are worded in the message; all are listed.
        let many = build(Compression::None, &[(None, NOW); 5]);
        let (_, message, errors) = refusal(validate(&config, AppendOrigin::Client, &many));
        assert_eq!(errors.len(), 5);
        assert_eq!(message.matches("RecordError(").count(), 3);
    }

    #[test]
    fn create_time_bounds_with_every_codec() {
        let config = bounded(10, 7);
        for codec in Compression::ALL {
            let bytes = build(
                codec,
                &[
                    (None, NOW - 11),
                    (None, NOW),
                    (None, NOW + 8),
                    (None, NOW - 10),
                    (None, NOW + 7),
                ],
            );
            let (kind, message, errors) = refusal(validate(&config, AppendOrigin::Client, &bytes));
            assert_eq!(kind, RecordErrorKind::InvalidTimestamp, "{codec}");
            assert_eq!(message, TS_ERROR);
            assert_eq!(
                errors,
                vec![
                    (
                        0,
                        format!(
                            "Timestamp {} of message with offset 0 is out of range. The \
                             timestamp should be within [{}, {}]",
                            NOW - 11,
                            NOW - 10,
                            NOW + 7
                        )
                    ),
                    (
                        2,
                        format!(
                            "Timestamp {} of message with offset 2 is out of range. The \
                             timestamp should be within [{}, {}]",
                            NOW + 8,
                            NOW - 10,
                            NOW + 7
                        )
                    ),
                ]
            );
            // On the bounds: accepted.
            let edges = build(codec, &[(None, NOW - 10), (None, NOW + 7)]);
            validate(&config, AppendOrigin::Client, &edges).unwrap();
        }
    }

    #[test]
    fn what_the_bounds_leave_alone() {
        let old = build(Compression::Lz4, &[(None, NOW - 1_000_000), (None, -1)]);
        // Unbounded (the default), and a record without a timestamp.
        validate(&LogConfig::default(), AppendOrigin::Client, &old).unwrap();
        let only_missing = build(Compression::None, &[(None, -1)]);
        validate(&bounded(10, 10), AppendOrigin::Client, &only_missing).unwrap();
        // LogAppendTime topics, and replication.
        let append_time = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..bounded(10, 10)
        };
        validate(&append_time, AppendOrigin::Client, &old).unwrap();
        validate(&bounded(10, 10), AppendOrigin::Replication, &old).unwrap();
        // One bound unlimited: the other is still checked.
        let err = validate(
            &bounded(i64::MAX, 10),
            AppendOrigin::Client,
            &build(Compression::None, &[(None, NOW + 11)]),
        );
        assert_eq!(refusal(err).2.len(), 1);
    }

    #[test]
    fn a_timestamp_refusal_outranks_key_refusals() {
        let config = LogConfig {
            compacted: true,
            ..bounded(10, 10)
        };
        let bytes = build(Compression::Gzip, &[(None, NOW), (Some("k"), NOW - 11)]);
        let (kind, message, errors) = refusal(validate(&config, AppendOrigin::Client, &bytes));
        assert_eq!(kind, RecordErrorKind::InvalidTimestamp);
        assert_eq!(message, TS_ERROR);
        assert_eq!(errors.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 1]);
        assert!(errors[0].1.starts_with("Compacted topic"));
        // A keyless record is not also checked for its timestamp, as in Kafka.
        let keyless_old = build(Compression::None, &[(None, NOW - 11)]);
        let (kind, _, errors) = refusal(validate(&config, AppendOrigin::Client, &keyless_old));
        assert_eq!((kind, errors.len()), (RecordErrorKind::InvalidRecord, 1));
    }

    #[test]
    fn bounds_wrap_in_the_message_as_java_longs_but_compare_exactly() {
        let far = i64::MAX - 1;
        let bytes = build(Compression::None, &[(None, NOW - 11)]);
        let (_, _, errors) = refusal(validate(&bounded(10, far), AppendOrigin::Client, &bytes));
        assert!(
            errors[0]
                .1
                .ends_with(&format!("[{}, {}]", NOW - 10, NOW.wrapping_add(far))),
            "{}",
            errors[0].1
        );
        assert!(NOW.wrapping_add(far) < 0);
        // The difference itself does not wrap (Java's would, and accept this): a timestamp
        // near i64::MIN is far before now.
        let ancient = build(Compression::None, &[(None, i64::MIN + 1)]);
        let (_, _, errors) = refusal(validate(&bounded(far, far), AppendOrigin::Client, &ancient));
        assert!(
            errors[0].1.ends_with(&format!(
                "[{}, {}]",
                NOW.wrapping_sub(far),
                NOW.wrapping_add(far)
            )),
            "{}",
            errors[0].1
        );
    }

    #[test]
    fn recompression_to_the_topic_codec_from_every_codec() {
        let records = [(Some("a"), NOW), (None, NOW + 1), (Some("c"), NOW + 2)];
        for source in Compression::ALL {
            let bytes = build(source, &records);
            let kept = validate(&LogConfig::default(), AppendOrigin::Client, &bytes).unwrap();
            assert_eq!(kept.source_compression, source);
            assert!(
                kept.recompressed.is_none(),
                "compression.type=producer keeps {source}"
            );
            for target in Compression::ALL {
                let config = LogConfig {
                    compression: TopicCompression::Codec(target),
                    ..LogConfig::default()
                };
                let v = validate(&config, AppendOrigin::Client, &bytes).unwrap();
                if source == target {
                    assert!(v.recompressed.is_none());
                    continue;
                }
                let out = v.recompressed.expect("re-encoded");
                let batch = RecordBatch::new(&out).unwrap();
                batch.validate_for_append().unwrap();
                assert_eq!(batch.compression().unwrap(), target);
                assert_eq!(out, build(target, &records), "{source} -> {target}");
                // Replication keeps what the leader wrote.
                let follower = validate(&config, AppendOrigin::Replication, &bytes).unwrap();
                assert!(follower.recompressed.is_none());
            }
        }
    }

    #[test]
    fn an_uncompressed_marker_is_not_compressed() {
        let config = LogConfig {
            compression: TopicCompression::Codec(Compression::Zstd),
            ..LogConfig::default()
        };
        let marker = EndTransactionMarker {
            control_type: ControlRecordType::Abort,
            coordinator_epoch: 1,
        }
        .build_batch(0, NOW, 0, 7, 0)
        .unwrap();
        let v = validate(&config, AppendOrigin::Coordinator, &marker).unwrap();
        assert!(v.recompressed.is_none());
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit() {
        // 100 MiB of zeros fit a 1 MiB batch, but inflate past 64 times max.message.bytes.
        let config = LogConfig {
            compacted: true,
            ..LogConfig::default()
        };
        for codec in [Compression::Gzip, Compression::Lz4, Compression::Zstd] {
            let mut b = RecordBatchBuilder::new().compression(codec);
            b.append(NewRecord::with_value(NOW, vec![0u8; 100 << 20]));
            let bomb = b.build().unwrap();
            assert!(bomb.len() < config.max_message_bytes, "{codec}");
            let err = validate(&config, AppendOrigin::Client, &bomb).unwrap_err();
            assert!(err.to_string().contains("exceed"), "{codec}: {err}");
        }
    }
}
