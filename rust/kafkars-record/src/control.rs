//! Control records: the transaction markers (COMMIT/ABORT) a transaction
//! coordinator writes, in control batches of one record each.

use crate::batch::RecordBatch;
use crate::builder::{NewRecord, RecordBatchBuilder};
use crate::error::RecordError;

/// Version of the control record key this crate writes.
const CONTROL_RECORD_KEY_VERSION: i16 = 0;
/// Version of the EndTxnMarker value this crate writes.
const END_TXN_MARKER_VERSION: i16 = 0;

/// The type in a control record's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// The transaction was aborted; its records must be skipped by read_committed consumers.
    Abort,
    /// The transaction was committed.
    Commit,
    /// A control type this crate does not interpret (KRaft uses several).
    Unknown(i16),
}

impl ControlRecordType {
    /// Kafka's id: 0 abort, 1 commit.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The type with Kafka's id `id`.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// Parses a control record key: version i16, then type i16. Later key versions
    /// may add fields after these, which are ignored.
    pub fn parse_key(key: &[u8]) -> Result<Self, RecordError> {
        let Some((version, rest)) = key.split_first_chunk::<2>() else {
            return Err(RecordError::invalid("control record key too short"));
        };
        let version = i16::from_be_bytes(*version);
        if version < 0 {
            return Err(RecordError::invalid(format!(
                "invalid control record key version {version}"
            )));
        }
        let Some((id, _)) = rest.split_first_chunk::<2>() else {
            return Err(RecordError::invalid("control record key too short"));
        };
        Ok(ControlRecordType::from_id(i16::from_be_bytes(*id)))
    }

    /// The control record key for this type.
    pub fn key(self) -> [u8; 4] {
        let mut key = [0u8; 4];
        key[..2].copy_from_slice(&CONTROL_RECORD_KEY_VERSION.to_be_bytes());
        key[2..].copy_from_slice(&self.id().to_be_bytes());
        key
    }
}

/// The value of a COMMIT or ABORT control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTransactionMarker {
    /// Whether the transaction committed or aborted.
    pub control_type: ControlRecordType,
    /// Epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// The marker's value: version i16, coordinatorEpoch i32.
    pub fn value(&self) -> [u8; 6] {
        let mut value = [0u8; 6];
        value[..2].copy_from_slice(&END_TXN_MARKER_VERSION.to_be_bytes());
        value[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        value
    }

    /// Reads a marker from a control record's key and value.
    pub fn parse(key: &[u8], value: Option<&[u8]>) -> Result<Self, RecordError> {
        let control_type = ControlRecordType::parse_key(key)?;
        if !matches!(
            control_type,
            ControlRecordType::Abort | ControlRecordType::Commit
        ) {
            return Err(RecordError::invalid(format!(
                "control type {} is not an end-transaction marker",
                control_type.id()
            )));
        }
        let value =
            value.ok_or_else(|| RecordError::invalid("end-transaction marker without value"))?;
        let Some((version, rest)) = value.split_first_chunk::<2>() else {
            return Err(RecordError::invalid(
                "end-transaction marker value too short",
            ));
        };
        if i16::from_be_bytes(*version) < 0 {
            return Err(RecordError::invalid(
                "invalid end-transaction marker version",
            ));
        }
        let Some((epoch, _)) = rest.split_first_chunk::<4>() else {
            return Err(RecordError::invalid(
                "end-transaction marker value too short",
            ));
        };
        Ok(EndTransactionMarker {
            control_type,
            coordinator_epoch: i32::from_be_bytes(*epoch),
        })
    }

    /// Builds the control batch carrying this marker for one producer, as the
    /// partition leader appends it on WriteTxnMarkers: transactional, control,
    /// uncompressed, baseSequence -1.
    pub fn build_batch(
        &self,
        base_offset: i64,
        timestamp: i64,
        partition_leader_epoch: i32,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<Vec<u8>, RecordError> {
        let mut builder = RecordBatchBuilder::new()
            .base_offset(base_offset)
            .partition_leader_epoch(partition_leader_epoch)
            .producer(producer_id, producer_epoch, crate::batch::NO_SEQUENCE)
            .transactional(true)
            .control(true);
        builder.append(NewRecord {
            timestamp,
            key: Some(self.control_type.key().to_vec()),
            value: Some(self.value().to_vec()),
            headers: Vec::new(),
        });
        builder.build()
    }
}

/// The type of a control batch's (first) record, or `None` for a data batch.
pub fn control_record_type(
    batch: &RecordBatch<'_>,
) -> Result<Option<ControlRecordType>, RecordError> {
    if !batch.is_control() {
        return Ok(None);
    }
    let records = batch.records()?;
    let record = records
        .iter()
        .next()
        .ok_or_else(|| RecordError::invalid("control batch without records"))??;
    let key = record
        .key
        .ok_or_else(|| RecordError::invalid("control record without key"))?;
    ControlRecordType::parse_key(key).map(Some)
}

/// The end-transaction marker of a COMMIT/ABORT control batch.
pub fn end_transaction_marker(
    batch: &RecordBatch<'_>,
) -> Result<EndTransactionMarker, RecordError> {
    if !batch.is_control() {
        return Err(RecordError::invalid("not a control batch"));
    }
    let records = batch.records()?;
    let record = records
        .iter()
        .next()
        .ok_or_else(|| RecordError::invalid("control batch without records"))??;
    let key = record
        .key
        .ok_or_else(|| RecordError::invalid("control record without key"))?;
    EndTransactionMarker::parse(key, record.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_marker_round_trips() {
        let marker = EndTransactionMarker {
            control_type: ControlRecordType::Commit,
            coordinator_epoch: 7,
        };
        let bytes = marker
            .build_batch(42, 1_700_000_000_000, 3, 1000, 5)
            .unwrap();
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.validate().unwrap();
        assert!(batch.is_control() && batch.is_transactional());
        assert_eq!(batch.base_offset(), 42);
        assert_eq!(batch.producer_id(), 1000);
        assert_eq!(batch.producer_epoch(), 5);
        assert_eq!(batch.base_sequence(), -1);
        assert_eq!(batch.partition_leader_epoch(), 3);
        assert_eq!(
            control_record_type(&batch).unwrap(),
            Some(ControlRecordType::Commit)
        );
        assert_eq!(end_transaction_marker(&batch).unwrap(), marker);
    }

    #[test]
    fn abort_key_bytes() {
        assert_eq!(ControlRecordType::Abort.key(), [0, 0, 0, 0]);
        assert_eq!(ControlRecordType::Commit.key(), [0, 0, 0, 1]);
        assert_eq!(
            ControlRecordType::parse_key(&[0, 1, 0, 0, 9]).unwrap(),
            ControlRecordType::Abort
        );
        assert!(ControlRecordType::parse_key(&[0, 0, 0]).is_err());
    }

    #[test]
    fn data_batch_is_not_control() {
        let mut builder = RecordBatchBuilder::new();
        builder.append(NewRecord::with_value(1, "v"));
        let bytes = builder.build().unwrap();
        let batch = RecordBatch::new(&bytes).unwrap();
        assert_eq!(control_record_type(&batch).unwrap(), None);
        assert!(end_transaction_marker(&batch).is_err());
    }
}
