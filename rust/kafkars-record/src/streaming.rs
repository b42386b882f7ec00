//! Validation of a compressed records section while it is decompressed, as Kafka's
//! LogValidator walks a batch with a streaming iterator: only positions, offset deltas
//! and what [`RecordSummary`] holds are kept, never the records, so a small batch that
//! inflates to gigabytes (a zip bomb) costs decompression work up to the limit and a
//! read buffer, not memory the size of its output. A caller that re-encodes the batch
//! can have the inflated bytes copied out as they are walked.

use std::io::{BufRead, BufReader};

use crate::compression::{Compression, StreamingDecoder, codec_error, too_large};
use crate::error::RecordError;
use crate::record::RecordSummary;

/// Read buffer between a decompressor that only reads (no [`BufRead`]) and the walker.
const READ_BUFFER: usize = 16 * 1024;
const MAX_VARINT_BYTES: usize = 5;
const MAX_VARLONG_BYTES: usize = 10;

/// Decompressed bytes read from a codec's stream, counted against `limit` and copied to
/// `capture` when given.
struct Source<'c, R> {
    inner: R,
    codec: Compression,
    position: usize,
    limit: usize,
    capture: Option<&'c mut Vec<u8>>,
}

impl<R: BufRead> Source<'_, R> {
    fn fill(&mut self) -> Result<&[u8], RecordError> {
        self.inner.fill_buf().map_err(codec_error(self.codec))
    }

    /// The next byte, `None` at the end of the stream.
    fn next_byte(&mut self) -> Result<Option<u8>, RecordError> {
        let Some(&byte) = self.fill()?.first() else {
            return Ok(None);
        };
        self.inner.consume(1);
        self.position += 1;
        if self.position > self.limit {
            return Err(too_large(self.limit));
        }
        if let Some(capture) = self.capture.as_deref_mut() {
            capture.push(byte);
        }
        Ok(Some(byte))
    }

    /// A byte of the record ending at `end`.
    fn byte_before(&mut self, end: usize, what: &str) -> Result<u8, RecordError> {
        if self.position >= end {
            return Err(RecordError::corrupt(format!(
                "{what} runs past the end of the record"
            )));
        }
        self.next_byte()?
            .ok_or_else(|| RecordError::corrupt(format!("{what} runs past the end of the records")))
    }

    fn unsigned(&mut self, end: usize, max_bytes: usize, what: &str) -> Result<u64, RecordError> {
        // When the longest varint fits both the record and the limit and is already
        // inflated, it is decoded from the buffer rather than a call per byte.
        let room = self.position.saturating_add(max_bytes);
        if room <= end && room <= self.limit {
            let chunk = self.inner.fill_buf().map_err(codec_error(self.codec))?;
            if let Some(head) = chunk.get(..max_bytes) {
                let mut value: u64 = 0;
                for (i, &byte) in head.iter().enumerate() {
                    value |= u64::from(byte & 0x7f) << (7 * i);
                    if byte & 0x80 == 0 {
                        if let Some(capture) = self.capture.as_deref_mut() {
                            capture.extend_from_slice(&head[..=i]);
                        }
                        self.inner.consume(i + 1);
                        self.position += i + 1;
                        return Ok(value);
                    }
                }
                return Err(RecordError::corrupt(format!(
                    "{what} is longer than {max_bytes} bytes"
                )));
            }
        }
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            let byte = self.byte_before(end, what)?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordError::corrupt(format!(
            "{what} is longer than {max_bytes} bytes"
        )))
    }

    fn varint(&mut self, end: usize, what: &str) -> Result<i32, RecordError> {
        let raw = self.unsigned(end, MAX_VARINT_BYTES, what)? as u32;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    fn varlong(&mut self, end: usize, what: &str) -> Result<i64, RecordError> {
        let raw = self.unsigned(end, MAX_VARLONG_BYTES, what)?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// Skips `length` bytes of the record ending at `end`.
    fn skip(&mut self, length: i32, end: usize, what: &str) -> Result<(), RecordError> {
        let mut left = usize::try_from(length)
            .ok()
            .filter(|&n| self.position.saturating_add(n) <= end)
            .ok_or_else(|| {
                RecordError::corrupt(format!("{what} length {length} does not fit the record"))
            })?;
        while left > 0 {
            let chunk = self.inner.fill_buf().map_err(codec_error(self.codec))?;
            if chunk.is_empty() {
                return Err(RecordError::corrupt(format!(
                    "{what} runs past the end of the records"
                )));
            }
            let n = chunk.len().min(left);
            if let Some(capture) = self.capture.as_deref_mut() {
                capture.extend_from_slice(&chunk[..n]);
            }
            self.inner.consume(n);
            self.position += n;
            left -= n;
        }
        Ok(())
    }

    /// Skips nullable bytes; returns whether they were not null.
    fn skip_nullable(&mut self, end: usize, what: &str) -> Result<bool, RecordError> {
        let length = self.varint(end, what)?;
        if length == -1 {
            return Ok(false);
        }
        self.skip(length, end, what)?;
        Ok(true)
    }

    /// Walks one record.
    fn record(&mut self) -> Result<RecordSummary, RecordError> {
        let length = self.varint(usize::MAX, "record length")?;
        let end = usize::try_from(length)
            .ok()
            .and_then(|n| self.position.checked_add(n))
            .ok_or_else(|| RecordError::corrupt(format!("invalid record length {length}")))?;
        if end > self.limit {
            // Refused before a byte of it is inflated.
            return Err(too_large(self.limit));
        }
        let start = self.position;
        self.byte_before(end, "attributes")?;
        let timestamp_delta = self.varlong(end, "timestamp delta")?;
        let offset_delta = self.varint(end, "offset delta")?;
        let has_key = self.skip_nullable(end, "key")?;
        self.skip_nullable(end, "value")?;
        let headers = self.varint(end, "header count")?;
        if headers < 0 {
            return Err(RecordError::corrupt(format!(
                "negative header count {headers}"
            )));
        }
        for _ in 0..headers {
            let key_length = self.varint(end, "header key")?;
            self.skip(key_length, end, "header key")?;
            self.skip_nullable(end, "header value")?;
        }
        if self.position != end {
            return Err(RecordError::corrupt(format!(
                "record length {length} but its fields take {}",
                self.position - start
            )));
        }
        Ok(RecordSummary {
            offset_delta,
            timestamp_delta,
            has_key,
        })
    }
}

/// Checks what [`crate::RecordBatch::validate`] checks of the records section, reading
/// the decompressed records from `reader` once: `count` records that each decode with
/// lengths adding up exactly, offset deltas strictly increasing within
/// `0..=last_offset_delta`, nothing after the last record, and at most `limit` bytes.
#[cfg(test)]
pub(crate) fn validate_records(
    reader: StreamingDecoder<'_>,
    codec: Compression,
    count: i32,
    last_offset_delta: i32,
    limit: usize,
) -> Result<(), RecordError> {
    walk_decoder(reader, codec, count, last_offset_delta, limit, None, |_| {})
}

/// [`walk_records`] on what `decoder` inflates, compiled for each kind of decoder so
/// that the walker's byte reads inline.
pub(crate) fn walk_decoder(
    decoder: StreamingDecoder<'_>,
    codec: Compression,
    count: i32,
    last_offset_delta: i32,
    limit: usize,
    capture: Option<&mut Vec<u8>>,
    visit: impl FnMut(RecordSummary),
) -> Result<(), RecordError> {
    match decoder {
        // The lz4 frame decoder hands out each inflated block in place.
        StreamingDecoder::Lz4(d) => {
            walk_records(d, codec, count, last_offset_delta, limit, capture, visit)
        }
        StreamingDecoder::Read(d) => walk_records(
            BufReader::with_capacity(READ_BUFFER, d),
            codec,
            count,
            last_offset_delta,
            limit,
            capture,
            visit,
        ),
    }
}

/// [`validate_records`], calling `visit` with each record in order and copying the
/// decompressed records section to `capture` when given.
fn walk_records(
    reader: impl BufRead,
    codec: Compression,
    count: i32,
    last_offset_delta: i32,
    limit: usize,
    capture: Option<&mut Vec<u8>>,
    mut visit: impl FnMut(RecordSummary),
) -> Result<(), RecordError> {
    let mut source = Source {
        inner: reader,
        codec,
        position: 0,
        limit,
        capture,
    };
    let mut previous_delta: Option<i32> = None;
    for _ in 0..count {
        let record = source.record()?;
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
    // Reading to the end also checks the codec's own trailer (gzip CRC, lz4 checksum).
    if source.next_byte()?.is_some() {
        return Err(RecordError::corrupt(format!(
            "bytes after the last of {count} records"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use proptest::prelude::*;

    use super::*;
    use crate::batch::validate_records_body;
    use crate::builder::{NewRecord, RecordBatchBuilder};
    use crate::compression::{compress, decompress};
    use crate::{RecordBatch, varint};

    const CODECS: [Compression; 4] = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn decoder(c: Compression, data: &[u8]) -> StreamingDecoder<'_> {
        match c {
            // Small zstd frames are decoded whole by the batch; stream them here anyway.
            Compression::Zstd => StreamingDecoder::Read(Box::new(
                zstd::stream::read::Decoder::with_buffer(data).unwrap(),
            )),
            _ => crate::compression::streaming_decoder(c, data, 1 << 30)
                .unwrap()
                .unwrap(),
        }
    }

    /// The records section of an uncompressed batch of `records`.
    fn body_of(records: &[NewRecord]) -> (Vec<u8>, i32) {
        let mut builder = RecordBatchBuilder::new();
        for r in records {
            builder.append(r.clone());
        }
        let batch = builder.build().unwrap();
        let parsed = RecordBatch::new(&batch).unwrap();
        (parsed.records_bytes().to_vec(), records.len() as i32)
    }

    fn record() -> impl Strategy<Value = NewRecord> {
        let bytes = || proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40));
        (
            any::<i32>(),
            bytes(),
            bytes(),
            proptest::collection::vec(("[a-z]{0,6}", bytes()), 0..3),
        )
            .prop_map(|(ts, key, value, headers)| NewRecord {
                timestamp: i64::from(ts),
                key,
                value,
                headers,
            })
    }

    proptest! {
        /// Streaming and whole-body validation agree (same Kafka error code) on every
        /// records section, intact or damaged, with every codec.
        #[test]
        fn streaming_agrees_with_whole_body_validation(
            records in proptest::collection::vec(record(), 1..8),
            damage in 0u8..4,
            at in any::<prop::sample::Index>(),
            bits in 1u8..=255,
            lod_shift in -1i32..2,
        ) {
            let (mut body, count) = body_of(&records);
            match damage {
                1 => { let i = at.index(body.len()); body[i] ^= bits; }
                2 => body.truncate(at.index(body.len())),
                3 => body.push(bits),
                _ => {}
            }
            let lod = count - 1 + lod_shift;
            for c in CODECS {
                let compressed = compress(c, &body).unwrap();
                let whole = validate_records_body(&decompress(c, &compressed).unwrap(), count as usize, lod);
                let streamed = validate_records(decoder(c, &compressed), c, count, lod, 1 << 20);
                prop_assert_eq!(
                    whole.as_ref().map_err(RecordError::kafka_error_code),
                    streamed.as_ref().map_err(RecordError::kafka_error_code),
                    "{:?}: whole {:?}, streamed {:?}", c, whole, streamed
                );
            }
        }
    }

    /// A record of `value_len` zero bytes, streamed into `out` through `write`.
    fn zero_record(out: &mut impl Write, offset_delta: i32, value_len: usize) {
        let mut head = vec![0u8]; // attributes
        varint::put_varint(&mut head, 0); // timestamp delta (a varlong 0 is the same byte)
        varint::put_varint(&mut head, offset_delta);
        varint::put_varint(&mut head, -1); // null key
        varint::put_varint(&mut head, value_len as i32);
        let mut length = Vec::new();
        varint::put_varint(&mut length, (head.len() + value_len + 1) as i32);
        out.write_all(&length).unwrap();
        out.write_all(&head).unwrap();
        let zeros = vec![0u8; 1 << 20];
        let mut left = value_len;
        while left > 0 {
            let n = left.min(zeros.len());
            out.write_all(&zeros[..n]).unwrap();
            left -= n;
        }
        out.write_all(&[0]).unwrap(); // no headers
    }

    #[test]
    fn a_zip_bomb_is_refused_at_the_limit_without_inflating_it() {
        // 1 GiB of zeros in a few KiB of zstd, as one record: refused from its length.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        zero_record(&mut enc, 0, 1 << 30);
        let bomb = enc.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        let err = validate_records(
            decoder(Compression::Zstd, &bomb),
            Compression::Zstd,
            1,
            0,
            8 << 20,
        )
        .unwrap_err();
        assert!(err.to_string().contains("exceed"), "{err}");

        // Many records of 1 MiB each: walked until the limit, then refused.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for i in 0..16 {
            zero_record(&mut enc, i, 1 << 20);
        }
        let bomb = enc.finish().unwrap();
        let err = validate_records(
            decoder(Compression::Gzip, &bomb),
            Compression::Gzip,
            16,
            15,
            8 << 20,
        )
        .unwrap_err();
        assert!(err.to_string().contains("exceed"), "{err}");
        // The same batch is fine under a limit it fits.
        validate_records(
            decoder(Compression::Gzip, &bomb),
            Compression::Gzip,
            16,
            15,
            32 << 20,
        )
        .unwrap();
    }

    #[test]
    fn a_batch_validates_through_the_stream() {
        let records: Vec<_> = (0..100)
            .map(|i| NewRecord::with_value(i, vec![b'x'; 100]))
            .collect();
        for c in CODECS {
            let mut builder = RecordBatchBuilder::new().compression(c);
            for r in &records {
                builder.append(r.clone());
            }
            let batch = builder.build().unwrap();
            RecordBatch::new(&batch)
                .unwrap()
                .validate_for_append()
                .unwrap();
        }
    }
}
