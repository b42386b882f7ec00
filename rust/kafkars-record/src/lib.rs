//! Kafka magic v2 record batches: zero-copy parsing, full validation, building,
//! compression (gzip, snappy, lz4, zstd) and transaction control records.
//!
//! A batch on the wire and on disk (big-endian):
//!
//! ```text
//! baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 (=2)
//! crc u32 (CRC-32C of attributes..end) | attributes i16 | lastOffsetDelta i32
//! baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16
//! baseSequence i32 | recordsCount i32 | records (compressed as a whole)
//! ```
//!
//! baseOffset and partitionLeaderEpoch lie outside the CRC, so a leader assigns
//! offsets in place with [`set_base_offset`] and [`set_partition_leader_epoch`], or in
//! header copies with [`PatchedBatches`] to write a produce request's records uncopied.
//!
//! ```
//! use kafkars_record::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, batches};
//!
//! let mut builder = RecordBatchBuilder::new().compression(Compression::Zstd);
//! builder.append(NewRecord::with_value(1_562_121_985_144, "hello, Kafka0!"));
//! let mut bytes = builder.build()?;
//!
//! // What a leader does on append: validate, then assign offsets in place.
//! RecordBatch::new(&bytes)?.validate()?;
//! kafkars_record::set_base_offset(&mut bytes, 42);
//!
//! for batch in batches(&bytes) {
//!     let batch = batch?;
//!     for record in batch.records()?.iter() {
//!         let record = record?;
//!         assert_eq!((record.offset, record.value), (42, Some(&b"hello, Kafka0!"[..])));
//!     }
//! }
//! # Ok::<(), kafkars_record::RecordError>(())
//! ```

mod batch;
mod builder;
pub mod compression;
mod control;
mod crc;
mod error;
mod patched;
mod record;
mod streaming;
mod varint;

pub use batch::{
    BatchIter, CURRENT_MAGIC, LOG_OVERHEAD, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, RECORD_BATCH_OVERHEAD, RecordBatch, TimestampType, batches,
    increment_sequence, set_base_offset, set_log_append_time, set_partition_leader_epoch,
};
pub use builder::{NewRecord, RecordBatchBuilder, filter_records, recompress, recompress_records};
pub use compression::Compression;
pub use control::{
    ControlRecordType, EndTransactionMarker, control_record_type, end_transaction_marker,
};
pub use crc::crc32c;
pub use error::RecordError;
pub use patched::PatchedBatches;
pub use record::{Header, RecordIter, RecordRef, RecordSummary, Records};
