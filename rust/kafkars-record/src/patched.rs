//! Record batches as a leader writes them without copying their records.
//!
//! A leader changes only batch headers on append: baseOffset and partitionLeaderEpoch,
//! and for `message.timestamp.type=LogAppendTime` the timestamp type, maxTimestamp and
//! so the CRC. [`PatchedBatches`] keeps a copy of each header to patch and borrows the
//! records after it, so a produce request's bytes reach the file in one vectored write
//! (header, records, header, records, ...) straight from the request buffer.

use std::io::IoSlice;

use crate::batch::{
    ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD, RecordBatch, batches, set_base_offset,
    set_partition_leader_epoch,
};
use crate::error::RecordError;

/// One batch: its header as it will be written, and its records, borrowed.
struct Patched<'a> {
    header: [u8; RECORD_BATCH_OVERHEAD],
    records: &'a [u8],
}

/// The complete batches of a buffer, with headers that can be changed in copies.
pub struct PatchedBatches<'a> {
    batches: Vec<Patched<'a>>,
    len: usize,
}

impl<'a> PatchedBatches<'a> {
    /// Copies the header of each batch in `buf`. Fails on bytes that do not form whole
    /// batches; the caller is expected to have validated them.
    pub fn new(buf: &'a [u8]) -> Result<Self, RecordError> {
        let mut out = Vec::new();
        let mut iter = batches(buf);
        for batch in iter.by_ref() {
            let bytes = batch?.as_bytes();
            let mut header = [0u8; RECORD_BATCH_OVERHEAD];
            header.copy_from_slice(&bytes[..RECORD_BATCH_OVERHEAD]);
            out.push(Patched {
                header,
                records: &bytes[RECORD_BATCH_OVERHEAD..],
            });
        }
        if iter.is_truncated() {
            return Err(RecordError::Truncated);
        }
        Ok(PatchedBatches {
            batches: out,
            len: iter.position(),
        })
    }

    /// Bytes of all batches together (patching does not change sizes).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of batches.
    pub fn count(&self) -> usize {
        self.batches.len()
    }

    /// Sets batch `index`'s baseOffset and partitionLeaderEpoch (outside the CRC).
    pub fn assign(&mut self, index: usize, base_offset: i64, leader_epoch: i32) {
        let header = &mut self.batches[index].header;
        set_base_offset(header, base_offset);
        set_partition_leader_epoch(header, leader_epoch);
    }

    /// Marks batch `index` LogAppendTime with `timestamp` as maxTimestamp and computes
    /// its CRC over the patched header and the unchanged records.
    pub fn set_log_append_time(&mut self, index: usize, timestamp: i64) {
        let Patched { header, records } = &mut self.batches[index];
        crate::batch::set_append_time_fields(header, timestamp);
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header[ATTRIBUTES_OFFSET..]), records);
        header[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }

    /// The slices to write in order: each header, then its records.
    pub fn io_slices(&self) -> Vec<IoSlice<'_>> {
        self.batches
            .iter()
            .flat_map(|b| [IoSlice::new(&b.header), IoSlice::new(b.records)])
            .collect()
    }

    /// The batches as one buffer (for tests and callers that need contiguous bytes).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for b in &self.batches {
            out.extend_from_slice(&b.header);
            out.extend_from_slice(b.records);
        }
        out
    }

    /// Batch `index` as written, checked as a whole (copies it; for tests).
    pub fn check(&self, index: usize) -> Result<(), RecordError> {
        let b = &self.batches[index];
        let bytes = [&b.header[..], b.records].concat();
        RecordBatch::new(&bytes)?.ensure_valid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewRecord, RecordBatchBuilder, TimestampType, set_log_append_time};

    fn two_batches() -> Vec<u8> {
        let mut out = Vec::new();
        for n in [3, 2] {
            let mut b = RecordBatchBuilder::new();
            for i in 0..n {
                b.append(NewRecord::with_value(1_000 + i, format!("v{i}")));
            }
            out.extend(b.build().unwrap());
        }
        out
    }

    #[test]
    fn patches_match_in_place_patching() {
        let source = two_batches();
        let mut patched = PatchedBatches::new(&source).unwrap();
        assert_eq!((patched.count(), patched.len()), (2, source.len()));
        patched.assign(0, 40, 7);
        patched.assign(1, 43, 7);
        patched.set_log_append_time(1, 5_000);

        let mut expected = source.clone();
        let first = RecordBatch::new(&expected).unwrap().size_in_bytes();
        set_base_offset(&mut expected, 40);
        set_partition_leader_epoch(&mut expected, 7);
        set_base_offset(&mut expected[first..], 43);
        set_partition_leader_epoch(&mut expected[first..], 7);
        set_log_append_time(&mut expected[first..], 5_000);

        assert_eq!(patched.to_vec(), expected);
        patched.check(1).unwrap();
        let written: Vec<u8> = patched
            .io_slices()
            .iter()
            .flat_map(|s| s.to_vec())
            .collect();
        assert_eq!(written, expected);
        let second = RecordBatch::new(&expected[first..]).unwrap();
        assert_eq!(second.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(second.max_timestamp(), 5_000);
    }

    #[test]
    fn refuses_a_torn_batch() {
        let source = two_batches();
        assert!(PatchedBatches::new(&source[..source.len() - 1]).is_err());
    }
}
