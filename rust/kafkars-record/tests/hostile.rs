//! Hostile input: random bytes, truncations and lying lengths must produce errors,
//! never panics or unbounded allocation.

mod common;

use common::batch_spec;
use kafkars_record::{
    Compression, RecordBatch, RecordError, batches, control_record_type, crc32c, filter_records,
    recompress,
};
use proptest::prelude::*;

/// Runs every reading entry point over `bytes`; only panics can fail this.
fn exercise(bytes: &[u8]) {
    let mut it = batches(bytes);
    for batch in it.by_ref() {
        let Ok(batch) = batch else { continue };
        exercise_batch(&batch);
    }
    assert!(it.position() <= bytes.len());
    if let Ok(batch) = RecordBatch::new(bytes) {
        exercise_batch(&batch);
    }
}

fn exercise_batch(batch: &RecordBatch<'_>) {
    let _ = (
        batch.last_offset(),
        batch.next_offset(),
        batch.last_sequence(),
    );
    let _ = (
        batch.delete_horizon_ms(),
        batch.is_valid(),
        batch.timestamp_type(),
    );
    let valid = batch.validate();
    let _ = batch.validate_for_append();
    let _ = batch.all_records_have_keys();
    let _ = control_record_type(batch);
    if let Ok(records) = batch.records() {
        let decoded: Result<Vec<_>, _> = records.iter().collect();
        // validate() is the iterator's judgement plus CRC and offset rules.
        if valid.is_ok() {
            assert!(decoded.is_ok());
        }
    }
    let _ = recompress(batch, Compression::None);
    let _ = filter_records(batch, |r| r.key.is_some());
}

/// Rewrites the CRC so corruption reaches the record decoder.
fn fix_crc(bytes: &mut [u8]) {
    let crc = crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        exercise(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_plausible_header(
        body in prop::collection::vec(any::<u8>(), 0..300),
        attributes in 0i16..8,
        count in prop_oneof![0i32..5, any::<i32>()],
        last_offset_delta in prop_oneof![0i32..5, any::<i32>()],
    ) {
        let mut bytes = vec![0u8; 61];
        bytes[8..12].copy_from_slice(&((49 + body.len()) as i32).to_be_bytes());
        bytes[16] = 2;
        bytes[21..23].copy_from_slice(&attributes.to_be_bytes());
        bytes[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
        bytes[57..61].copy_from_slice(&count.to_be_bytes());
        bytes.extend_from_slice(&body);
        fix_crc(&mut bytes);
        exercise(&bytes);
    }

    #[test]
    fn corrupted_valid_batches(
        spec in batch_spec(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = spec.builder().build().unwrap();
        for (at, byte) in edits {
            // Leave the length and magic alone so the batch gets past framing.
            let i = 21 + at.index(bytes.len() - 21);
            bytes[i] = byte;
        }
        fix_crc(&mut bytes);
        exercise(&bytes);
        // The same bytes cut short anywhere.
        exercise(&bytes[..cut.index(bytes.len() + 1)]);
    }

    #[test]
    fn lying_counts_and_lengths(spec in batch_spec(), count: i32, length: i32) {
        let mut bytes = spec.builder().build().unwrap();
        bytes[57..61].copy_from_slice(&count.to_be_bytes());
        fix_crc(&mut bytes);
        exercise(&bytes);
        let records_count = RecordBatch::new(&bytes).unwrap().records_count();
        if records_count as usize != spec.records.len() {
            prop_assert!(RecordBatch::new(&bytes).unwrap().validate().is_err());
        }
        bytes[8..12].copy_from_slice(&length.to_be_bytes());
        exercise(&bytes);
    }
}

#[test]
fn trailing_bytes_are_corrupt() {
    let mut builder = kafkars_record::RecordBatchBuilder::new();
    builder.append(kafkars_record::NewRecord::with_value(1, "v"));
    let mut bytes = builder.build().unwrap();
    // One extra byte inside the batch, after the last record.
    bytes.push(0);
    let length = i32::from_be_bytes(bytes[8..12].try_into().unwrap()) + 1;
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    fix_crc(&mut bytes);
    let batch = RecordBatch::new(&bytes).unwrap();
    assert!(matches!(
        batch.validate(),
        Err(RecordError::CorruptMessage(_))
    ));
    let records = batch.records().unwrap();
    let results: Vec<_> = records.iter().collect();
    assert!(results[0].is_ok());
    assert!(matches!(results[1], Err(RecordError::CorruptMessage(_))));
    assert_eq!(results.len(), 2);
}

#[test]
fn decompression_bomb_is_refused() {
    // 300 MiB of zeros compress to a few KiB of zstd; the batch must be refused
    // without materialising them.
    let zeros = vec![0u8; 300 << 20];
    let packed = kafkars_record::compression::compress(Compression::Zstd, &zeros).unwrap();
    drop(zeros);
    let mut bytes = vec![0u8; 61];
    bytes[8..12].copy_from_slice(&((49 + packed.len()) as i32).to_be_bytes());
    bytes[16] = 2;
    bytes[21..23].copy_from_slice(&Compression::Zstd.id().to_be_bytes());
    bytes[57..61].copy_from_slice(&1i32.to_be_bytes());
    bytes.extend_from_slice(&packed);
    fix_crc(&mut bytes);
    let batch = RecordBatch::new(&bytes).unwrap();
    // Validation walks the records as they inflate: zeros are no record, so it stops
    // at the first one (or at the limit); either way CORRUPT_MESSAGE.
    assert!(matches!(
        batch.validate(),
        Err(RecordError::Compression(_) | RecordError::CorruptMessage(_))
    ));
    assert_eq!(batch.validate().unwrap_err().kafka_error_code(), 2);
}

#[test]
fn unknown_codec_is_unsupported() {
    let mut builder = kafkars_record::RecordBatchBuilder::new();
    builder.append(kafkars_record::NewRecord::with_value(1, "v"));
    let mut bytes = builder.build().unwrap();
    bytes[22] |= 6;
    fix_crc(&mut bytes);
    let err = RecordBatch::new(&bytes).unwrap().validate().unwrap_err();
    assert_eq!(err, RecordError::UnsupportedCompression(6));
    assert_eq!(err.kafka_error_code(), 76);
}
