//! What a read returns: a file slice for sendfile plus the offset metadata that lets a
//! delayed fetch count available bytes without I/O.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use kafkars_record::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};

/// Kafka's UNKNOWN_OFFSET for a segment base or position that is not known.
pub const UNKNOWN_OFFSET: i64 = -1;

/// An offset together with where it lives: the base offset of its segment and the
/// byte position of its batch in that segment's `.log` (Kafka's LogOffsetMetadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetMetadata {
    /// The offset.
    pub message_offset: i64,
    /// Base offset of the segment holding it, or [`UNKNOWN_OFFSET`].
    pub segment_base_offset: i64,
    /// Byte position in that segment (meaningful only with a known segment).
    pub relative_position_in_segment: u32,
}

impl LogOffsetMetadata {
    /// Metadata with only the offset known.
    pub fn offset_only(message_offset: i64) -> Self {
        LogOffsetMetadata {
            message_offset,
            segment_base_offset: UNKNOWN_OFFSET,
            relative_position_in_segment: 0,
        }
    }

    /// Whether the segment and position are unknown.
    pub fn message_offset_only(&self) -> bool {
        self.segment_base_offset == UNKNOWN_OFFSET
    }

    /// Bytes between `self` and a later `other` when both are in the same segment;
    /// `None` when they are in different segments or either is offset-only
    /// (a delayed fetch then treats the data as available).
    pub fn position_diff(&self, other: &LogOffsetMetadata) -> Option<i64> {
        if self.message_offset_only()
            || other.message_offset_only()
            || self.segment_base_offset != other.segment_base_offset
        {
            return None;
        }
        Some(
            i64::from(self.relative_position_in_segment)
                - i64::from(other.relative_position_in_segment),
        )
    }
}

/// A byte range of a segment's `.log`, ready for `sendfile(2)`. The `Arc` keeps the
/// descriptor open even if the segment is deleted before the send finishes.
#[derive(Debug, Clone)]
pub struct FileSlice {
    /// The open `.log` file.
    pub file: Arc<File>,
    /// Start position in the file.
    pub position: u64,
    /// Number of bytes.
    pub size: u32,
}

impl FileSlice {
    /// Copies the bytes out (for TLS connections and tests).
    pub fn read_to_vec(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.size as usize];
        self.file.read_exact_at(&mut buf, self.position)?;
        Ok(buf)
    }

    /// Records in the whole batches of the slice, from their headers alone (a batch cut
    /// short by the slice's end is not counted: the client drops it too).
    pub fn count_records(&self) -> io::Result<u64> {
        let end = self.position + u64::from(self.size);
        let mut position = self.position;
        let mut records = 0u64;
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        while position + RECORD_BATCH_OVERHEAD as u64 <= end {
            self.file.read_exact_at(&mut header, position)?;
            let length = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
            let Ok(length) = u64::try_from(length) else {
                break;
            };
            let batch_end = position + LOG_OVERHEAD as u64 + length;
            if length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as u64 || batch_end > end {
                break;
            }
            let count = i32::from_be_bytes([header[57], header[58], header[59], header[60]]);
            records += u64::try_from(count).unwrap_or(0);
            position = batch_end;
        }
        Ok(records)
    }
}

/// The result of a log read (Kafka's FetchDataInfo).
#[derive(Debug, Clone)]
pub struct FetchDataInfo {
    /// Where the read started.
    pub fetch_offset_metadata: LogOffsetMetadata,
    /// The bytes to send; `None` when nothing is available.
    pub records: Option<FileSlice>,
    /// Whether `max_bytes` cut the first batch short (the slice then ends mid-batch,
    /// which Kafka clients skip; a fetch with `min_one_message` never does this).
    pub first_entry_incomplete: bool,
}

impl FetchDataInfo {
    /// An empty result at `metadata`.
    pub fn empty(metadata: LogOffsetMetadata) -> Self {
        FetchDataInfo {
            fetch_offset_metadata: metadata,
            records: None,
            first_entry_incomplete: false,
        }
    }

    /// Bytes in the slice.
    pub fn records_size(&self) -> u32 {
        self.records.as_ref().map_or(0, |r| r.size)
    }
}
