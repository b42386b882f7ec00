//! Writing batches: the builder producers and brokers use to make a batch from
//! owned records, and re-encoding an existing batch (recompression, filtering).

use bytes::BufMut;

use crate::batch::{
    COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, CURRENT_MAGIC, DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD, RecordBatch, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK,
    TimestampType, write_crc,
};
use crate::compression::{self, Compression};
use crate::error::RecordError;
use crate::record::RecordRef;
use crate::varint::{put_varint, put_varlong, varint_size, varlong_size};

/// An owned record to append to a [`RecordBatchBuilder`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewRecord {
    /// Timestamp in milliseconds (CreateTime).
    pub timestamp: i64,
    /// The key; `None` for null.
    pub key: Option<Vec<u8>>,
    /// The value; `None` for null.
    pub value: Option<Vec<u8>>,
    /// Headers in the order they are written; duplicate keys are allowed.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

impl NewRecord {
    /// A record with a value, no key and no headers.
    pub fn with_value(timestamp: i64, value: impl Into<Vec<u8>>) -> Self {
        NewRecord {
            timestamp,
            value: Some(value.into()),
            ..NewRecord::default()
        }
    }
}

/// Builds one magic v2 record batch.
///
/// Defaults match a plain (non-idempotent) producer: baseOffset 0, no compression,
/// CreateTime, producerId/epoch/baseSequence -1, partitionLeaderEpoch -1.
/// baseTimestamp is the first record's timestamp and maxTimestamp the largest.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    compression: Compression,
    timestamp_type: TimestampType,
    log_append_time: Option<i64>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    is_transactional: bool,
    is_control: bool,
    delete_horizon_ms: Option<i64>,
    records: Vec<(i32, NewRecord)>,
}

impl Default for RecordBatchBuilder {
    fn default() -> Self {
        RecordBatchBuilder {
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: None,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            is_transactional: false,
            is_control: false,
            delete_horizon_ms: None,
            records: Vec::new(),
        }
    }
}

impl RecordBatchBuilder {
    /// A builder with the defaults described on the type.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets baseOffset.
    #[must_use]
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets partitionLeaderEpoch.
    #[must_use]
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets the codec that compresses the records section.
    #[must_use]
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets the timestampType bit. Record timestamps are kept as given; see
    /// [`log_append_time`](Self::log_append_time) to stamp them.
    #[must_use]
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// Makes a LogAppendTime batch: like Kafka's builder, every record gets
    /// `timestamp` and so does maxTimestamp.
    #[must_use]
    pub fn log_append_time(mut self, timestamp: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time = Some(timestamp);
        self
    }

    /// Sets producerId, producerEpoch and baseSequence (idempotent producers).
    #[must_use]
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets producerId.
    #[must_use]
    pub fn producer_id(mut self, producer_id: i64) -> Self {
        self.producer_id = producer_id;
        self
    }

    /// Sets producerEpoch.
    #[must_use]
    pub fn producer_epoch(mut self, producer_epoch: i16) -> Self {
        self.producer_epoch = producer_epoch;
        self
    }

    /// Sets baseSequence.
    #[must_use]
    pub fn base_sequence(mut self, base_sequence: i32) -> Self {
        self.base_sequence = base_sequence;
        self
    }

    /// Sets the isTransactional bit.
    #[must_use]
    pub fn transactional(mut self, is_transactional: bool) -> Self {
        self.is_transactional = is_transactional;
        self
    }

    /// Sets the isControl bit.
    #[must_use]
    pub fn control(mut self, is_control: bool) -> Self {
        self.is_control = is_control;
        self
    }

    /// Stores the log cleaner's delete horizon in baseTimestamp and flags it.
    #[must_use]
    pub fn delete_horizon_ms(mut self, delete_horizon_ms: Option<i64>) -> Self {
        self.delete_horizon_ms = delete_horizon_ms;
        self
    }

    /// Appends a record at the next offset delta (0 for the first record).
    pub fn append(&mut self, record: NewRecord) -> &mut Self {
        let delta = self
            .records
            .last()
            .map_or(0, |(delta, _)| delta.saturating_add(1));
        self.records.push((delta, record));
        self
    }

    /// Appends a record at `offset_delta`, which must exceed the previous delta
    /// ([`build`](Self::build) fails otherwise). Gaps are allowed.
    pub fn append_with_offset(&mut self, offset_delta: i32, record: NewRecord) -> &mut Self {
        self.records.push((offset_delta, record));
        self
    }

    /// Number of records appended so far.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Encodes, compresses and checksums the batch.
    pub fn build(&self) -> Result<Vec<u8>, RecordError> {
        let Some((last_offset_delta, _)) = self.records.last() else {
            return Err(RecordError::invalid(
                "a record batch needs at least one record",
            ));
        };
        let mut previous = -1i64;
        for (delta, _) in &self.records {
            if i64::from(*delta) <= previous {
                return Err(RecordError::invalid(format!(
                    "offset delta {delta} does not increase"
                )));
            }
            previous = i64::from(*delta);
        }
        let records_count = i32::try_from(self.records.len())
            .map_err(|_| RecordError::invalid("too many records for one batch"))?;
        let timestamp_of = |r: &NewRecord| self.log_append_time.unwrap_or(r.timestamp);
        let first_timestamp = timestamp_of(&self.records[0].1);
        let base_timestamp = self.delete_horizon_ms.unwrap_or(first_timestamp);
        let max_timestamp = self
            .records
            .iter()
            .map(|(_, r)| timestamp_of(r))
            .max()
            .unwrap_or(first_timestamp);

        let mut body = Vec::with_capacity(self.records.iter().map(|(_, r)| estimate_size(r)).sum());
        for (delta, record) in &self.records {
            let timestamp_delta = timestamp_of(record).wrapping_sub(base_timestamp);
            encode_record(&mut body, *delta, timestamp_delta, record)?;
        }

        let mut attributes = 0i16;
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= TIMESTAMP_TYPE_MASK;
        }
        if self.is_transactional {
            attributes |= TRANSACTIONAL_FLAG_MASK;
        }
        if self.is_control {
            attributes |= CONTROL_FLAG_MASK;
        }
        if self.delete_horizon_ms.is_some() {
            attributes |= DELETE_HORIZON_FLAG_MASK;
        }
        let header = BatchHeader {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes,
            last_offset_delta: *last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            records_count,
        };
        write_batch(&header, self.compression, &body)
    }
}

/// Rebuilds `batch` with `target` compression, keeping every other field, every
/// record byte for byte, and the attributes bits.
pub fn recompress(batch: &RecordBatch<'_>, target: Compression) -> Result<Vec<u8>, RecordError> {
    let records = batch.records()?;
    // Refuse to wrap records that do not decode in a fresh, valid-looking CRC.
    for record in records.iter() {
        record?;
    }
    write_batch(
        &BatchHeader::of(batch, batch.records_count()),
        target,
        records.body(),
    )
}

/// Rebuilds `batch` around `body`, its records section already inflated (and walked, see
/// [`RecordBatch::walk_records`]), compressed with `target`; every other field and the
/// attributes bits are kept.
pub fn recompress_records(
    batch: &RecordBatch<'_>,
    body: &[u8],
    target: Compression,
) -> Result<Vec<u8>, RecordError> {
    write_batch(&BatchHeader::of(batch, batch.records_count()), target, body)
}

/// Rebuilds `batch` keeping only the records `keep` accepts, byte for byte, with
/// the same codec and header fields (lastOffsetDelta included, so the batch still
/// ends where it did), as the log cleaner does. The result may hold no record.
pub fn filter_records(
    batch: &RecordBatch<'_>,
    mut keep: impl FnMut(&RecordRef<'_>) -> bool,
) -> Result<Vec<u8>, RecordError> {
    let records = batch.records()?;
    let body = records.body();
    let mut kept = Vec::with_capacity(body.len());
    let mut kept_count = 0i32;
    let mut pos = 0;
    for record in records.iter() {
        let record = record?;
        let end = pos + record.size_in_bytes;
        if keep(&record) {
            kept.extend_from_slice(&body[pos..end]);
            kept_count += 1;
        }
        pos = end;
    }
    write_batch(
        &BatchHeader::of(batch, kept_count),
        batch.compression()?,
        &kept,
    )
}

/// Header fields of a batch being written; CRC, magic and length are derived.
pub(crate) struct BatchHeader {
    pub(crate) base_offset: i64,
    pub(crate) partition_leader_epoch: i32,
    /// Attributes without the codec bits, which come from the compression used.
    pub(crate) attributes: i16,
    pub(crate) last_offset_delta: i32,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) base_sequence: i32,
    pub(crate) records_count: i32,
}

impl BatchHeader {
    fn of(batch: &RecordBatch<'_>, records_count: i32) -> Self {
        BatchHeader {
            base_offset: batch.base_offset(),
            partition_leader_epoch: batch.partition_leader_epoch(),
            attributes: batch.attributes() & !COMPRESSION_CODEC_MASK,
            last_offset_delta: batch.last_offset_delta(),
            base_timestamp: batch.base_timestamp(),
            max_timestamp: batch.max_timestamp(),
            producer_id: batch.producer_id(),
            producer_epoch: batch.producer_epoch(),
            base_sequence: batch.base_sequence(),
            records_count,
        }
    }
}

/// Writes a complete batch around the uncompressed records section `body`.
pub(crate) fn write_batch(
    header: &BatchHeader,
    compression: Compression,
    body: &[u8],
) -> Result<Vec<u8>, RecordError> {
    let compressed;
    let records = match compression {
        Compression::None => body,
        c => {
            compressed = compression::compress(c, body)?;
            &compressed[..]
        }
    };
    let batch_length = i32::try_from(RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + records.len())
        .map_err(|_| RecordError::invalid("record batch larger than 2 GiB"))?;
    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + records.len());
    out.put_i64(header.base_offset);
    out.put_i32(batch_length);
    out.put_i32(header.partition_leader_epoch);
    out.put_i8(CURRENT_MAGIC);
    out.put_u32(0); // CRC, written last
    out.put_i16(header.attributes | compression.id());
    out.put_i32(header.last_offset_delta);
    out.put_i64(header.base_timestamp);
    out.put_i64(header.max_timestamp);
    out.put_i64(header.producer_id);
    out.put_i16(header.producer_epoch);
    out.put_i32(header.base_sequence);
    out.put_i32(header.records_count);
    out.extend_from_slice(records);
    write_crc(&mut out);
    Ok(out)
}

fn estimate_size(record: &NewRecord) -> usize {
    let headers: usize = record
        .headers
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len) + 10)
        .sum();
    record.key.as_ref().map_or(0, Vec::len)
        + record.value.as_ref().map_or(0, Vec::len)
        + headers
        + 32
}

/// Appends one record: length varint, then the fields it counts.
fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    record: &NewRecord,
) -> Result<(), RecordError> {
    let key = nullable_len(record.key.as_deref(), "key")?;
    let value = nullable_len(record.value.as_deref(), "value")?;
    let header_count = wire_len(record.headers.len(), "header count")?;
    let mut size = 1 // attributes
        + varlong_size(timestamp_delta)
        + varint_size(offset_delta)
        + nullable_size(key)
        + nullable_size(value)
        + varint_size(header_count);
    let mut header_lens = Vec::with_capacity(record.headers.len());
    for (k, v) in &record.headers {
        let k_len = wire_len(k.len(), "header key")?;
        let v_len = nullable_len(v.as_deref(), "header value")?;
        size += varint_size(k_len) + k.len() + nullable_size(v_len);
        header_lens.push((k_len, v_len));
    }
    put_varint(out, wire_len(size, "record")?);
    out.push(0); // attributes: no record-level attributes are defined
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_nullable(out, key, record.key.as_deref());
    put_nullable(out, value, record.value.as_deref());
    put_varint(out, header_count);
    for ((k, v), (k_len, v_len)) in record.headers.iter().zip(header_lens) {
        put_varint(out, k_len);
        out.extend_from_slice(k.as_bytes());
        put_nullable(out, v_len, v.as_deref());
    }
    Ok(())
}

fn wire_len(len: usize, what: &str) -> Result<i32, RecordError> {
    i32::try_from(len).map_err(|_| RecordError::invalid(format!("{what} too large")))
}

/// Wire length of nullable bytes: -1 for null.
fn nullable_len(bytes: Option<&[u8]>, what: &str) -> Result<i32, RecordError> {
    bytes.map_or(Ok(-1), |b| wire_len(b.len(), what))
}

fn nullable_size(len: i32) -> usize {
    varint_size(len) + usize::try_from(len).unwrap_or(0)
}

fn put_nullable(out: &mut Vec<u8>, len: i32, bytes: Option<&[u8]>) {
    put_varint(out, len);
    if let Some(bytes) = bytes {
        out.extend_from_slice(bytes);
    }
}
