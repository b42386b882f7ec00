//! The magic v2 record batch: a zero-copy view, iteration over concatenated
//! batches, and the in-place header rewrites a broker does on append.

use std::borrow::Cow;

use crate::compression::{self, Compression};
use crate::crc::crc32c;
use crate::error::RecordError;
use crate::record::{RecordSummary, Records, skip_record};
use crate::streaming;

/// Bytes before a batch's length-delimited part: baseOffset (8) + batchLength (4).
pub const LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header, up to and including recordsCount.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The only message format version this crate reads and writes.
pub const CURRENT_MAGIC: i8 = 2;
/// Producer id, epoch and sequence of a batch from a non-idempotent producer.
pub const NO_PRODUCER_ID: i64 = -1;
/// See [`NO_PRODUCER_ID`].
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// See [`NO_PRODUCER_ID`].
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch of a batch no leader has stamped yet.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;

// Field positions from the start of the batch (Kafka's DefaultRecordBatch layout).
pub(crate) const BASE_OFFSET_OFFSET: usize = 0;
pub(crate) const LENGTH_OFFSET: usize = 8;
pub(crate) const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
pub(crate) const MAGIC_OFFSET: usize = 16;
pub(crate) const CRC_OFFSET: usize = 17;
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_OFFSET: usize = 23;
pub(crate) const BASE_TIMESTAMP_OFFSET: usize = 27;
pub(crate) const MAX_TIMESTAMP_OFFSET: usize = 35;
pub(crate) const PRODUCER_ID_OFFSET: usize = 43;
pub(crate) const PRODUCER_EPOCH_OFFSET: usize = 51;
pub(crate) const BASE_SEQUENCE_OFFSET: usize = 53;
pub(crate) const RECORDS_COUNT_OFFSET: usize = 57;
pub(crate) const RECORDS_OFFSET: usize = RECORD_BATCH_OVERHEAD;

// Attribute bits.
pub(crate) const COMPRESSION_CODEC_MASK: i16 = 0x07;
pub(crate) const TIMESTAMP_TYPE_MASK: i16 = 0x08;
pub(crate) const TRANSACTIONAL_FLAG_MASK: i16 = 0x10;
pub(crate) const CONTROL_FLAG_MASK: i16 = 0x20;
pub(crate) const DELETE_HORIZON_FLAG_MASK: i16 = 0x40;

/// Smallest possible batchLength: a header with no records.
const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;

/// What a batch's timestamps mean (attributes bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// The producer set each record's timestamp.
    #[default]
    CreateTime,
    /// The broker stamped the batch on append; every record's timestamp is the
    /// batch's maxTimestamp.
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's id: 0 for CreateTime, 1 for LogAppendTime.
    pub fn id(self) -> i8 {
        match self {
            TimestampType::CreateTime => 0,
            TimestampType::LogAppendTime => 1,
        }
    }

    /// The name `kafka-dump-log` prints.
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

/// A zero-copy view of exactly one magic v2 record batch.
///
/// Construction checks only the framing (length and magic); use
/// [`is_valid`](Self::is_valid) for the CRC and [`validate`](Self::validate) for
/// everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBatch<'a> {
    buf: &'a [u8],
}

impl<'a> RecordBatch<'a> {
    /// Views the batch at the start of `buf`, which may hold more bytes after it.
    ///
    /// Fails with [`RecordError::Truncated`] when `buf` ends inside the batch, with
    /// [`RecordError::CorruptMessage`] when batchLength is smaller than a header and
    /// with [`RecordError::InvalidMagic`] for other message formats. Does not check
    /// the CRC.
    pub fn new(buf: &'a [u8]) -> Result<Self, RecordError> {
        let size = batch_size(buf)?.ok_or(RecordError::Truncated)?;
        Ok(RecordBatch { buf: &buf[..size] })
    }

    /// The batch's bytes, from baseOffset to its last record.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// Size of the whole batch: batchLength + [`LOG_OVERHEAD`].
    pub fn size_in_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Offset of the first record (as assigned by the broker).
    pub fn base_offset(&self) -> i64 {
        self.i64_at(BASE_OFFSET_OFFSET)
    }

    /// Offset of the last record: baseOffset + lastOffsetDelta.
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Bytes after the batchLength field.
    pub fn batch_length(&self) -> i32 {
        self.i32_at(LENGTH_OFFSET)
    }

    /// Epoch of the leader that appended the batch.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.i32_at(PARTITION_LEADER_EPOCH_OFFSET)
    }

    /// Message format version, always 2 for a constructed batch.
    pub fn magic(&self) -> i8 {
        self.buf[MAGIC_OFFSET] as i8
    }

    /// The CRC-32C stored in the header.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(self.array_at(CRC_OFFSET))
    }

    /// The CRC-32C of attributes..end, as it should be stored.
    pub fn compute_crc(&self) -> u32 {
        crc32c(&self.buf[ATTRIBUTES_OFFSET..])
    }

    /// Whether the stored CRC matches the bytes.
    pub fn is_valid(&self) -> bool {
        self.crc() == self.compute_crc()
    }

    /// Checks the stored CRC only.
    pub fn ensure_valid(&self) -> Result<(), RecordError> {
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored != computed {
            return Err(RecordError::CrcMismatch { stored, computed });
        }
        Ok(())
    }

    /// The raw attributes field.
    pub fn attributes(&self) -> i16 {
        self.i16_at(ATTRIBUTES_OFFSET)
    }

    /// The codec named by attributes bits 0-2.
    pub fn compression(&self) -> Result<Compression, RecordError> {
        Compression::from_id(self.attributes() & COMPRESSION_CODEC_MASK)
    }

    /// Whether timestamps are CreateTime or LogAppendTime.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_FLAG_MASK != 0
    }

    /// Whether the batch holds control records (transaction markers).
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_FLAG_MASK != 0
    }

    /// Whether baseTimestamp holds the log cleaner's delete horizon.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & DELETE_HORIZON_FLAG_MASK != 0
    }

    /// lastOffset - baseOffset; records may have been compacted away below it.
    pub fn last_offset_delta(&self) -> i32 {
        self.i32_at(LAST_OFFSET_DELTA_OFFSET)
    }

    /// Timestamp that record timestampDeltas are relative to.
    pub fn base_timestamp(&self) -> i64 {
        self.i64_at(BASE_TIMESTAMP_OFFSET)
    }

    /// Largest record timestamp, or the append time for LogAppendTime batches.
    pub fn max_timestamp(&self) -> i64 {
        self.i64_at(MAX_TIMESTAMP_OFFSET)
    }

    /// The log cleaner's delete horizon, kept in baseTimestamp when flagged.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }

    /// Id of the idempotent or transactional producer, or -1.
    pub fn producer_id(&self) -> i64 {
        self.i64_at(PRODUCER_ID_OFFSET)
    }

    /// Epoch of the producer id, or -1.
    pub fn producer_epoch(&self) -> i16 {
        self.i16_at(PRODUCER_EPOCH_OFFSET)
    }

    /// Sequence number of the first record, or -1.
    pub fn base_sequence(&self) -> i32 {
        self.i32_at(BASE_SEQUENCE_OFFSET)
    }

    /// Sequence number of the last record, or -1; sequences wrap after `i32::MAX`.
    pub fn last_sequence(&self) -> i32 {
        increment_sequence(self.base_sequence(), self.last_offset_delta())
    }

    /// The recordsCount field.
    pub fn records_count(&self) -> i32 {
        self.i32_at(RECORDS_COUNT_OFFSET)
    }

    /// The records section as stored (compressed when the codec is not none).
    pub fn records_bytes(&self) -> &'a [u8] {
        &self.buf[RECORDS_OFFSET..]
    }

    /// The records, decompressed if needed.
    pub fn records(&self) -> Result<Records<'a>, RecordError> {
        self.records_with_limit(compression::MAX_DECOMPRESSED_SIZE)
    }

    /// [`records`](Self::records), refusing to decompress to more than `limit` bytes.
    pub fn records_with_limit(&self, limit: usize) -> Result<Records<'a>, RecordError> {
        let count = self.records_count();
        if count < 0 {
            return Err(RecordError::corrupt(format!(
                "invalid record count {count}"
            )));
        }
        let body = match self.compression()? {
            Compression::None => Cow::Borrowed(self.records_bytes()),
            c => Cow::Owned(compression::decompress_with_limit(
                c,
                self.records_bytes(),
                limit,
            )?),
        };
        Ok(Records::new(self, body))
    }

    /// Checks the CRC and the whole structure: every record decodes, lengths add
    /// up exactly, the count matches recordsCount, and offset deltas increase
    /// strictly within `0..=lastOffsetDelta`.
    ///
    /// Offset gaps and empty batches are allowed, as the log cleaner leaves them;
    /// see [`validate_for_append`](Self::validate_for_append) for what a producer
    /// may send.
    pub fn validate(&self) -> Result<(), RecordError> {
        self.validate_with_limit(compression::MAX_DECOMPRESSED_SIZE)
    }

    /// [`validate`](Self::validate) with decompression bounded by `limit` bytes.
    pub fn validate_with_limit(&self, limit: usize) -> Result<(), RecordError> {
        self.ensure_valid()?;
        self.walk_records(limit, None, |_| {})
    }

    /// Walks the records once, checking what [`validate`](Self::validate) checks except
    /// the CRC, and calls `visit` with each record in order. A compressed batch is walked
    /// as it inflates (never held inflated, unless `capture` asks for the inflated
    /// records section, which is then appended to it: what a broker re-encodes).
    pub fn walk_records(
        &self,
        limit: usize,
        capture: Option<&mut Vec<u8>>,
        mut visit: impl FnMut(RecordSummary),
    ) -> Result<(), RecordError> {
        let last_offset_delta = self.last_offset_delta();
        if last_offset_delta < 0 {
            return Err(RecordError::invalid(format!(
                "negative lastOffsetDelta {last_offset_delta}"
            )));
        }
        let compression = self.compression()?;
        let count = self.records_count();
        if count < 0 {
            return Err(RecordError::corrupt(format!(
                "invalid record count {count}"
            )));
        }
        if let Some(decoder) =
            compression::streaming_decoder(compression, self.records_bytes(), limit)?
        {
            return streaming::walk_decoder(
                decoder,
                compression,
                count,
                last_offset_delta,
                limit,
                capture,
                visit,
            );
        }
        let records = self.records_with_limit(limit)?;
        walk_records_body(records.body(), records.len(), last_offset_delta, &mut visit)?;
        if let Some(capture) = capture {
            capture.extend_from_slice(records.body());
        }
        Ok(())
    }

    /// [`validate`](Self::validate) plus the rules Kafka's LogValidator applies to
    /// produced batches: at least one record, and offset deltas exactly
    /// `0, 1, ..., lastOffsetDelta`.
    pub fn validate_for_append(&self) -> Result<(), RecordError> {
        self.validate_for_append_with_limit(compression::MAX_DECOMPRESSED_SIZE)
    }

    /// [`validate_for_append`](Self::validate_for_append) with decompression bounded by
    /// `limit` bytes (see [`compression::decompression_limit`]).
    pub fn validate_for_append_with_limit(&self, limit: usize) -> Result<(), RecordError> {
        self.validate_with_limit(limit)?;
        let count = self.records_count();
        if count == 0 {
            return Err(RecordError::invalid("record batch has no records"));
        }
        if i64::from(count) != i64::from(self.last_offset_delta()) + 1 {
            return Err(RecordError::invalid(format!(
                "{count} records but lastOffsetDelta {}",
                self.last_offset_delta()
            )));
        }
        // Strictly increasing deltas in 0..=count-1 over count records are 0..count.
        Ok(())
    }

    /// Whether every record has a non-null key, as compacted topics require.
    pub fn all_records_have_keys(&self) -> Result<bool, RecordError> {
        let records = self.records()?;
        for record in records.iter() {
            if record?.key.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn array_at<const N: usize>(&self, at: usize) -> [u8; N] {
        self.buf[at..at + N]
            .try_into()
            .expect("header fields lie inside the checked header")
    }

    fn i16_at(&self, at: usize) -> i16 {
        i16::from_be_bytes(self.array_at(at))
    }

    fn i32_at(&self, at: usize) -> i32 {
        i32::from_be_bytes(self.array_at(at))
    }

    fn i64_at(&self, at: usize) -> i64 {
        i64::from_be_bytes(self.array_at(at))
    }
}

/// The records-section checks of [`RecordBatch::validate`] on a decompressed `body`.
#[cfg(test)]
pub(crate) fn validate_records_body(
    body: &[u8],
    count: usize,
    last_offset_delta: i32,
) -> Result<(), RecordError> {
    walk_records_body(body, count, last_offset_delta, &mut |_| {})
}

/// [`validate_records_body`], calling `visit` with each record in order.
fn walk_records_body(
    body: &[u8],
    count: usize,
    last_offset_delta: i32,
    visit: &mut impl FnMut(RecordSummary),
) -> Result<(), RecordError> {
    let mut pos = 0;
    let mut previous_delta: Option<i32> = None;
    for _ in 0..count {
        let record = skip_record(body, &mut pos)?;
        let delta = record.offset_delta;
        if delta < 0 || delta > last_offset_delta {
            return Err(RecordError::invalid(format!(
                "offset delta {delta} outside 0..={last_offset_delta}"
            )));
        }
        if previous_delta.is_some_and(|p| delta <= p) {
            return Err(RecordError::invalid(format!(
                "offset delta {delta} does not increase"
            )));
        }
        previous_delta = Some(delta);
        visit(record);
    }
    if pos != body.len() {
        return Err(RecordError::corrupt(format!(
            "{} bytes after the last of {count} records",
            body.len() - pos
        )));
    }
    Ok(())
}

/// `sequence + increment`, wrapping to 0 after `i32::MAX` as producers do; -1 stays -1.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence == NO_SEQUENCE {
        return NO_SEQUENCE;
    }
    if increment < 0 {
        return sequence.wrapping_add(increment);
    }
    if sequence > i32::MAX - increment {
        return increment - (i32::MAX - sequence) - 1;
    }
    sequence + increment
}

/// Size of the batch at the start of `buf`: `Ok(None)` when `buf` ends before it
/// does, an error when its header is impossible.
fn batch_size(buf: &[u8]) -> Result<Option<usize>, RecordError> {
    let Some(length) = buf.get(LENGTH_OFFSET..LOG_OVERHEAD) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes(length.try_into().expect("four bytes"));
    if length < MIN_BATCH_LENGTH {
        return Err(RecordError::corrupt(format!(
            "record batch length {length} is smaller than the minimum {MIN_BATCH_LENGTH}"
        )));
    }
    // The magic byte comes before the rest of the batch, so a wrong format is
    // reported even when the batch is incomplete.
    let Some(&magic) = buf.get(MAGIC_OFFSET) else {
        return Ok(None);
    };
    if magic as i8 != CURRENT_MAGIC {
        return Err(RecordError::InvalidMagic(magic as i8));
    }
    let size = LOG_OVERHEAD + length as usize;
    Ok((buf.len() >= size).then_some(size))
}

/// Iterates the batches of a concatenation: a segment, a fetch response or a
/// produce request's records.
///
/// Stops (returns `None`) at a clean end or at an incomplete trailing batch, which
/// [`is_truncated`](Self::is_truncated) then reports. An impossible header yields one
/// error and ends the iteration.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    position: usize,
    done: bool,
}

/// Iterates the record batches in `buf`.
pub fn batches(buf: &[u8]) -> BatchIter<'_> {
    BatchIter {
        buf,
        position: 0,
        done: false,
    }
}

impl<'a> BatchIter<'a> {
    /// Bytes consumed by the complete batches returned so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Whether bytes remain after the complete batches (an incomplete batch, or the
    /// batch that produced an error).
    pub fn is_truncated(&self) -> bool {
        self.position < self.buf.len()
    }

    /// The bytes not consumed by complete batches.
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.position..]
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<RecordBatch<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = &self.buf[self.position..];
        match batch_size(rest) {
            Ok(Some(size)) => {
                self.position += size;
                Some(Ok(RecordBatch { buf: &rest[..size] }))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for BatchIter<'_> {}

/// Sets baseOffset in place, as the leader does when it assigns offsets.
/// The CRC does not cover it.
///
/// # Panics
/// If `batch` is shorter than a batch header.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    check_header(batch);
    batch[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Sets partitionLeaderEpoch in place. The CRC does not cover it.
///
/// # Panics
/// If `batch` is shorter than a batch header.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    check_header(batch);
    batch[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
        .copy_from_slice(&epoch.to_be_bytes());
}

/// Marks the batch LogAppendTime with `timestamp` as maxTimestamp and rewrites the
/// CRC, as Kafka's LogValidator does for topics with
/// `message.timestamp.type=LogAppendTime`.
///
/// # Panics
/// If `batch` is shorter than a batch header.
pub fn set_log_append_time(batch: &mut [u8], timestamp: i64) {
    check_header(batch);
    set_append_time_fields(batch, timestamp);
    write_crc(batch);
}

/// The header fields of [`set_log_append_time`], leaving the CRC to the caller.
pub(crate) fn set_append_time_fields(header: &mut [u8], timestamp: i64) {
    let attributes = i16::from_be_bytes([header[ATTRIBUTES_OFFSET], header[ATTRIBUTES_OFFSET + 1]])
        | TIMESTAMP_TYPE_MASK;
    header[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    header[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&timestamp.to_be_bytes());
}

/// Recomputes and stores the CRC of a batch whose covered bytes changed.
pub(crate) fn write_crc(batch: &mut [u8]) {
    let crc = crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

fn check_header(batch: &[u8]) {
    assert!(
        batch.len() >= RECORD_BATCH_OVERHEAD,
        "{} bytes cannot hold a record batch header",
        batch.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_wrap_like_kafka() {
        assert_eq!(increment_sequence(-1, 5), -1);
        assert_eq!(increment_sequence(10, 5), 15);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
    }

    #[test]
    fn framing_errors() {
        assert_eq!(RecordBatch::new(&[0; 11]), Err(RecordError::Truncated));
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        header[LENGTH_OFFSET..LOG_OVERHEAD].copy_from_slice(&48i32.to_be_bytes());
        assert!(matches!(
            RecordBatch::new(&header),
            Err(RecordError::CorruptMessage(_))
        ));
        header[LENGTH_OFFSET..LOG_OVERHEAD].copy_from_slice(&49i32.to_be_bytes());
        header[MAGIC_OFFSET] = 1;
        assert_eq!(RecordBatch::new(&header), Err(RecordError::InvalidMagic(1)));
        header[MAGIC_OFFSET] = 2;
        let batch = RecordBatch::new(&header).unwrap();
        assert_eq!(batch.size_in_bytes(), RECORD_BATCH_OVERHEAD);
        assert!(!batch.is_valid());
        assert_eq!(RecordBatch::new(&header[..60]), Err(RecordError::Truncated));
    }

    #[test]
    fn iterator_stops_at_errors_and_truncation() {
        let mut two = [0u8; 2 * RECORD_BATCH_OVERHEAD + 5];
        for start in [0, RECORD_BATCH_OVERHEAD] {
            two[start + LENGTH_OFFSET..start + LOG_OVERHEAD].copy_from_slice(&49i32.to_be_bytes());
            two[start + MAGIC_OFFSET] = 2;
        }
        let mut it = batches(&two);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().is_none());
        assert_eq!(it.position(), 2 * RECORD_BATCH_OVERHEAD);
        assert!(it.is_truncated());

        let mut bad = two;
        bad[RECORD_BATCH_OVERHEAD + MAGIC_OFFSET] = 0;
        let mut it = batches(&bad);
        assert!(it.next().unwrap().is_ok());
        assert_eq!(it.next(), Some(Err(RecordError::InvalidMagic(0))));
        assert_eq!(it.next(), None);
        assert_eq!(it.position(), RECORD_BATCH_OVERHEAD);

        let mut it = batches(&[]);
        assert!(it.next().is_none());
        assert!(!it.is_truncated());
    }
}
