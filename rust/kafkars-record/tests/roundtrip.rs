//! Build → parse round trips for every codec, recompression, and CRC coverage.

mod common;

use common::{BatchSpec, batch_spec, compression};
use kafkars_record::{
    Compression, NewRecord, RecordBatch, RecordBatchBuilder, RecordError, RecordRef, batches,
    filter_records, recompress, set_base_offset, set_log_append_time, set_partition_leader_epoch,
};
use proptest::prelude::*;

/// Asserts that a decoded record is the record that was appended.
fn assert_same(spec: &BatchSpec, decoded: &RecordRef<'_>, delta: i32, expected: &NewRecord) {
    assert_eq!(decoded.offset_delta, delta);
    assert_eq!(decoded.offset, spec.base_offset + i64::from(delta));
    assert_eq!(
        decoded.timestamp,
        spec.log_append_time.unwrap_or(expected.timestamp)
    );
    assert_eq!(decoded.key, expected.key.as_deref());
    assert_eq!(decoded.value, expected.value.as_deref());
    let headers: Vec<(&[u8], Option<&[u8]>)> =
        decoded.headers.iter().map(|h| (h.key, h.value)).collect();
    let want: Vec<(&[u8], Option<&[u8]>)> = expected
        .headers
        .iter()
        .map(|(k, v)| (k.as_bytes(), v.as_deref()))
        .collect();
    assert_eq!(headers, want);
}

fn check_batch(spec: &BatchSpec, bytes: &[u8], codec: Compression) {
    let batch = RecordBatch::new(bytes).unwrap();
    assert_eq!(batch.size_in_bytes(), bytes.len());
    batch.validate().unwrap();
    batch.validate_for_append().map(|_| ()).unwrap_or_else(|e| {
        // Only batches with offset gaps may fail the producer rules.
        let (last, _) = spec.records.last().unwrap();
        assert_ne!(*last as usize + 1, spec.records.len(), "{e}");
    });
    assert_eq!(batch.compression().unwrap(), codec);
    assert_eq!(batch.magic(), 2);
    assert_eq!(batch.base_offset(), spec.base_offset);
    assert_eq!(batch.partition_leader_epoch(), spec.partition_leader_epoch);
    assert_eq!(batch.timestamp_type(), spec.timestamp_type());
    assert_eq!(batch.is_transactional(), spec.transactional);
    assert!(!batch.is_control());
    assert_eq!(batch.producer_id(), spec.producer.0);
    assert_eq!(batch.producer_epoch(), spec.producer.1);
    assert_eq!(batch.base_sequence(), spec.producer.2);
    assert_eq!(batch.records_count() as usize, spec.records.len());
    let (last_delta, _) = spec.records.last().unwrap();
    assert_eq!(batch.last_offset_delta(), *last_delta);
    assert_eq!(
        batch.last_offset(),
        spec.base_offset + i64::from(*last_delta)
    );
    let timestamps = spec
        .records
        .iter()
        .map(|(_, r)| spec.log_append_time.unwrap_or(r.timestamp));
    assert_eq!(batch.max_timestamp(), timestamps.clone().max().unwrap());
    assert_eq!(batch.base_timestamp(), timestamps.clone().next().unwrap());

    let records = batch.records().unwrap();
    assert_eq!(records.is_borrowed(), codec == Compression::None);
    let decoded: Vec<_> = records.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(decoded.len(), spec.records.len());
    for (d, (delta, r)) in decoded.iter().zip(&spec.records) {
        assert_same(spec, d, *delta, r);
    }
    assert_eq!(
        decoded.iter().map(|r| r.size_in_bytes).sum::<usize>(),
        records.body().len()
    );
    let all_keyed = spec.records.iter().all(|(_, r)| r.key.is_some());
    assert_eq!(batch.all_records_have_keys().unwrap(), all_keyed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn build_then_parse(spec in batch_spec()) {
        let bytes = spec.builder().build().unwrap();
        check_batch(&spec, &bytes, spec.compression);
    }

    #[test]
    fn recompress_keeps_everything(spec in batch_spec(), target in compression()) {
        let original = spec.builder().build().unwrap();
        let batch = RecordBatch::new(&original).unwrap();
        let converted = recompress(&batch, target).unwrap();
        check_batch(&spec, &converted, target);
        // And back: the records section is kept byte for byte, so the batch is too.
        let back = recompress(&RecordBatch::new(&converted).unwrap(), spec.compression).unwrap();
        prop_assert_eq!(back, original);
    }

    #[test]
    fn crc_covers_attributes_to_end(spec in batch_spec(), index: prop::sample::Index, flip in 1u8..) {
        let mut bytes = spec.builder().build().unwrap();
        // Any byte from the CRC field on (17..) is covered by, or is, the CRC.
        let at = 17 + index.index(bytes.len() - 17);
        bytes[at] ^= flip;
        let batch = RecordBatch::new(&bytes).unwrap();
        prop_assert!(!batch.is_valid());
        let is_crc_mismatch = matches!(batch.validate(), Err(RecordError::CrcMismatch { .. }));
        prop_assert!(is_crc_mismatch);
    }

    #[test]
    fn crc_skips_offset_and_leader_epoch(spec in batch_spec(), offset: i64, epoch: i32) {
        let mut bytes = spec.builder().build().unwrap();
        set_base_offset(&mut bytes, offset);
        set_partition_leader_epoch(&mut bytes, epoch);
        let batch = RecordBatch::new(&bytes).unwrap();
        prop_assert!(batch.is_valid());
        batch.validate().unwrap();
        prop_assert_eq!(batch.base_offset(), offset);
        prop_assert_eq!(batch.partition_leader_epoch(), epoch);
        let first = batch.records().unwrap().iter().next().unwrap().unwrap().offset;
        prop_assert_eq!(first, offset.wrapping_add(i64::from(spec.records[0].0)));
    }

    #[test]
    fn log_append_time_rewrites_crc(spec in batch_spec(), now in 0i64..i64::MAX) {
        let mut bytes = spec.builder().build().unwrap();
        set_log_append_time(&mut bytes, now);
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.validate().unwrap();
        prop_assert_eq!(batch.max_timestamp(), now);
        for record in batch.records().unwrap().iter() {
            prop_assert_eq!(record.unwrap().timestamp, now);
        }
    }

    #[test]
    fn filter_keeps_header_and_record_bytes(spec in batch_spec()) {
        let original = spec.builder().build().unwrap();
        let batch = RecordBatch::new(&original).unwrap();
        let filtered = filter_records(&batch, |r| r.key.is_some()).unwrap();
        let kept_batch = RecordBatch::new(&filtered).unwrap();
        kept_batch.validate().unwrap();
        prop_assert_eq!(kept_batch.compression().unwrap(), spec.compression);
        prop_assert_eq!(kept_batch.last_offset_delta(), batch.last_offset_delta());
        prop_assert_eq!(kept_batch.base_timestamp(), batch.base_timestamp());
        prop_assert_eq!(kept_batch.max_timestamp(), batch.max_timestamp());
        prop_assert_eq!(kept_batch.attributes(), batch.attributes());
        let all = batch.records().unwrap();
        let want: Vec<_> = all.iter().map(Result::unwrap).filter(|r| r.key.is_some()).collect();
        let kept = kept_batch.records().unwrap();
        let got: Vec<_> = kept.iter().map(Result::unwrap).collect();
        prop_assert_eq!(kept_batch.records_count() as usize, want.len());
        prop_assert_eq!(got, want);
    }

    #[test]
    fn concatenated_batches_iterate(specs in prop::collection::vec(batch_spec(), 1..5), cut: prop::sample::Index) {
        let built: Vec<Vec<u8>> = specs.iter().map(|s| s.builder().build().unwrap()).collect();
        let all = built.concat();
        let sizes: Vec<usize> = built.iter().map(Vec::len).collect();
        let found: Vec<usize> = batches(&all).map(|b| b.unwrap().size_in_bytes()).collect();
        prop_assert_eq!(&found, &sizes);

        // A cut anywhere returns the complete batches before it and stops there.
        let cut = cut.index(all.len());
        let mut it = batches(&all[..cut]);
        let complete = it.by_ref().inspect(|b| assert!(b.is_ok())).count();
        let mut end = 0;
        let mut whole = 0;
        for size in &sizes {
            if end + size > cut {
                break;
            }
            end += size;
            whole += 1;
        }
        prop_assert_eq!(complete, whole);
        prop_assert_eq!(it.position(), end);
        prop_assert_eq!(it.is_truncated(), end != cut);
    }
}

#[test]
fn empty_batches_are_refused() {
    assert!(matches!(
        RecordBatchBuilder::new().build(),
        Err(RecordError::InvalidRecord(_))
    ));
}

#[test]
fn offset_deltas_must_increase() {
    let mut builder = RecordBatchBuilder::new();
    builder
        .append_with_offset(3, NewRecord::with_value(1, "a"))
        .append_with_offset(3, NewRecord::with_value(2, "b"));
    assert!(matches!(
        builder.build(),
        Err(RecordError::InvalidRecord(_))
    ));
}

#[test]
fn validate_for_append_wants_dense_offsets() {
    let mut builder = RecordBatchBuilder::new();
    builder
        .append(NewRecord::with_value(1, "a"))
        .append_with_offset(5, NewRecord::with_value(2, "b"));
    let bytes = builder.build().unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert!(matches!(
        batch.validate_for_append(),
        Err(RecordError::InvalidRecord(_))
    ));
    assert_eq!(batch.last_offset_delta(), 5);
    assert_eq!(batch.records_count(), 2);
}

#[test]
fn keyless_records_are_reported() {
    let mut builder = RecordBatchBuilder::new();
    builder.append(NewRecord {
        timestamp: 1,
        key: Some(b"k".to_vec()),
        value: None,
        headers: vec![],
    });
    builder.append(NewRecord::with_value(2, "no key"));
    let bytes = builder.build().unwrap();
    assert!(
        !RecordBatch::new(&bytes)
            .unwrap()
            .all_records_have_keys()
            .unwrap()
    );
}
