//! Records inside a batch: decoding the varint-framed record format and iterating
//! a batch's (decompressed) records section.

use std::borrow::Cow;

use crate::batch::{RecordBatch, TimestampType};
use crate::error::RecordError;
use crate::varint::{read_varint, read_varlong};

/// One record header. Keys are UTF-8 on the wire but are kept as bytes, so a
/// record is passed on exactly as the producer wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header<'r> {
    /// The header key.
    pub key: &'r [u8],
    /// The header value; `None` when the producer sent null.
    pub value: Option<&'r [u8]>,
}

/// A decoded record borrowing its key, value and headers from the records section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef<'r> {
    /// Absolute offset: the batch's baseOffset + offsetDelta.
    pub offset: i64,
    /// Absolute timestamp: baseTimestamp + timestampDelta, or the batch's
    /// maxTimestamp for LogAppendTime batches.
    pub timestamp: i64,
    /// Offset relative to the batch's baseOffset.
    pub offset_delta: i32,
    /// Timestamp relative to the batch's baseTimestamp.
    pub timestamp_delta: i64,
    /// Record attributes (unused by Kafka so far, kept as sent).
    pub attributes: i8,
    /// Bytes the record takes in the records section, including its length varint.
    pub size_in_bytes: usize,
    /// The key; `None` when null.
    pub key: Option<&'r [u8]>,
    /// The value; `None` when null (a tombstone on compacted topics).
    pub value: Option<&'r [u8]>,
    /// Headers in wire order; duplicate keys are kept.
    pub headers: Vec<Header<'r>>,
}

/// The records section of one batch, decompressed if the batch was compressed,
/// together with the batch fields needed to make record offsets and timestamps
/// absolute.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    body: Cow<'a, [u8]>,
    count: usize,
    base_offset: i64,
    base_timestamp: i64,
    max_timestamp: i64,
    timestamp_type: TimestampType,
}

impl<'a> Records<'a> {
    pub(crate) fn new(batch: &RecordBatch<'a>, body: Cow<'a, [u8]>) -> Self {
        Records {
            body,
            // Callers reject negative counts before getting here.
            count: usize::try_from(batch.records_count()).unwrap_or(0),
            base_offset: batch.base_offset(),
            base_timestamp: batch.base_timestamp(),
            max_timestamp: batch.max_timestamp(),
            timestamp_type: batch.timestamp_type(),
        }
    }

    /// The uncompressed records section: the concatenated encoded records.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Whether the body borrows the batch (uncompressed) rather than owning a
    /// decompressed copy.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.body, Cow::Borrowed(_))
    }

    /// Number of records the batch header announces.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the batch announces no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Decodes the records one by one. Iteration ends after the first error; an
    /// error is also reported when bytes remain after the announced records.
    pub fn iter(&self) -> RecordIter<'_> {
        RecordIter {
            body: &self.body,
            pos: 0,
            remaining: self.count,
            done: false,
            base_offset: self.base_offset,
            base_timestamp: self.base_timestamp,
            log_append_time: (self.timestamp_type == TimestampType::LogAppendTime)
                .then_some(self.max_timestamp),
        }
    }
}

impl<'r> IntoIterator for &'r Records<'_> {
    type Item = Result<RecordRef<'r>, RecordError>;
    type IntoIter = RecordIter<'r>;

    fn into_iter(self) -> RecordIter<'r> {
        self.iter()
    }
}

/// Iterator over the records of a [`Records`].
#[derive(Debug, Clone)]
pub struct RecordIter<'r> {
    body: &'r [u8],
    pos: usize,
    remaining: usize,
    done: bool,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
}

impl<'r> Iterator for RecordIter<'r> {
    type Item = Result<RecordRef<'r>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.remaining == 0 {
            self.done = true;
            let trailing = self.body.len() - self.pos;
            return (trailing != 0).then(|| {
                Err(RecordError::corrupt(format!(
                    "{trailing} bytes after the last record"
                )))
            });
        }
        match decode_record(self.body, &mut self.pos, true) {
            Ok(mut record) => {
                self.remaining -= 1;
                record.offset = self
                    .base_offset
                    .wrapping_add(i64::from(record.offset_delta));
                record.timestamp = match self.log_append_time {
                    Some(t) => t,
                    None => self.base_timestamp.wrapping_add(record.timestamp_delta),
                };
                Some(Ok(record))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            // Plus one for a possible trailing-bytes error.
            (0, Some(self.remaining + 1))
        }
    }
}

impl std::iter::FusedIterator for RecordIter<'_> {}

/// What a broker's validator reads of one record while it walks a batch once
/// ([`crate::RecordBatch::walk_records`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordSummary {
    /// Offset relative to the batch's baseOffset.
    pub offset_delta: i32,
    /// Timestamp relative to the batch's baseTimestamp.
    pub timestamp_delta: i64,
    /// Whether the key is not null.
    pub has_key: bool,
}

/// Walks over one record at `*pos` without collecting headers. Used by validation,
/// where only the structure and a few fields matter.
pub(crate) fn skip_record(body: &[u8], pos: &mut usize) -> Result<RecordSummary, RecordError> {
    decode_record(body, pos, false).map(|r| RecordSummary {
        offset_delta: r.offset_delta,
        timestamp_delta: r.timestamp_delta,
        has_key: r.key.is_some(),
    })
}

/// Decodes the record at `*pos` and advances past it. Offset and timestamp are left
/// relative (the deltas); the caller makes them absolute.
fn decode_record<'r>(
    body: &'r [u8],
    pos: &mut usize,
    collect_headers: bool,
) -> Result<RecordRef<'r>, RecordError> {
    let start = *pos;
    let length = read_varint(body, pos)?;
    let end = usize::try_from(length)
        .ok()
        .and_then(|len| pos.checked_add(len))
        .filter(|&end| end <= body.len())
        .ok_or_else(|| {
            RecordError::corrupt(format!(
                "record length {length} does not fit the {} bytes left",
                body.len() - *pos
            ))
        })?;
    // Fields are read from the record's own bytes so none can spill into the next.
    let record = &body[..end];
    let mut p = *pos;
    let attributes = *record
        .get(p)
        .ok_or_else(|| RecordError::corrupt("record ends before its attributes"))?
        as i8;
    p += 1;
    let timestamp_delta = read_varlong(record, &mut p)?;
    let offset_delta = read_varint(record, &mut p)?;
    let key = read_nullable_bytes(record, &mut p, "key")?;
    let value = read_nullable_bytes(record, &mut p, "value")?;
    let header_count = read_varint(record, &mut p)?;
    let header_count = usize::try_from(header_count)
        .map_err(|_| RecordError::corrupt(format!("negative header count {header_count}")))?;
    // Each header takes at least two bytes; never trust the count for allocation.
    let mut headers = if collect_headers {
        Vec::with_capacity(header_count.min((end - p) / 2))
    } else {
        Vec::new()
    };
    for _ in 0..header_count {
        let key_length = read_varint(record, &mut p)?;
        let key = read_bytes(record, &mut p, key_length, "header key")?;
        let value = read_nullable_bytes(record, &mut p, "header value")?;
        if collect_headers {
            headers.push(Header { key, value });
        }
    }
    if p != end {
        return Err(RecordError::corrupt(format!(
            "record length {length} but its fields take {}",
            p - *pos
        )));
    }
    *pos = end;
    Ok(RecordRef {
        offset: 0,
        timestamp: 0,
        offset_delta,
        timestamp_delta,
        attributes,
        size_in_bytes: end - start,
        key,
        value,
        headers,
    })
}

/// Reads a varint length and that many bytes; length -1 means null.
fn read_nullable_bytes<'r>(
    buf: &'r [u8],
    pos: &mut usize,
    what: &str,
) -> Result<Option<&'r [u8]>, RecordError> {
    let length = read_varint(buf, pos)?;
    if length == -1 {
        return Ok(None);
    }
    read_bytes(buf, pos, length, what).map(Some)
}

fn read_bytes<'r>(
    buf: &'r [u8],
    pos: &mut usize,
    length: i32,
    what: &str,
) -> Result<&'r [u8], RecordError> {
    let bytes = usize::try_from(length)
        .ok()
        .and_then(|len| buf.get(*pos..pos.checked_add(len)?))
        .ok_or_else(|| {
            RecordError::corrupt(format!("{what} length {length} does not fit the record"))
        })?;
    *pos += bytes.len();
    Ok(bytes)
}
