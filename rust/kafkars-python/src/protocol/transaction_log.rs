//! The `__transaction_state` record formats: `TransactionLogKey` (record type 0) and
//! `TransactionLogValue` v0/v1, as Kafka's transaction coordinator writes them
//! (transaction-coordinator's TransactionLogKey.json / TransactionLogValue.json).
//! kafka-protocol has no coordinator record types (and keeps its primitive encoders
//! private), so the two messages are written here field by field, as its generated
//! messages are.
//!
//! Key: int16 record type 0, then TransactionalId as a (non-flexible) string.
//! Value: int16 version, then ProducerId int64, ProducerEpoch int16,
//! TransactionTimeoutMs int32, TransactionStatus int8, TransactionPartitions
//! (nullable array of {Topic string, PartitionIds []int32}),
//! TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64. Version 1 is
//! flexible (compact strings and arrays) and carries the tagged fields PreviousProducerId
//! (tag 0), NextProducerId (tag 1) and ClientTransactionVersion (tag 2).
use anyhow::{Result, bail};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// The record type (Kafka's `CoordinatorRecordType.TRANSACTION_LOG`) prefixing the key.
const TRANSACTION_LOG_RECORD_TYPE: i16 = 0;
const HIGHEST_VALUE_VERSION: i16 = 1;

/// One `TransactionLogValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TransactionLogValue {
    pub(crate) producer_id: i64,
    pub(crate) previous_producer_id: i64,
    pub(crate) next_producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) transaction_timeout_ms: i32,
    pub(crate) transaction_status: i8,
    pub(crate) transaction_partitions: Option<Vec<(String, Vec<i32>)>>,
    pub(crate) transaction_last_update_timestamp_ms: i64,
    pub(crate) transaction_start_timestamp_ms: i64,
    pub(crate) client_transaction_version: i16,
}

impl Default for TransactionLogValue {
    fn default() -> Self {
        Self {
            producer_id: -1,
            previous_producer_id: -1,
            next_producer_id: -1,
            producer_epoch: -1,
            transaction_timeout_ms: 0,
            transaction_status: 0,
            transaction_partitions: None,
            transaction_last_update_timestamp_ms: -1,
            transaction_start_timestamp_ms: -1,
            client_transaction_version: 0,
        }
    }
}

fn put_uvarint(buf: &mut BytesMut, mut n: u32) -> Result<()> {
    while n >= 0x80 {
        buf.put_u8((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    buf.put_u8(n as u8);
    Ok(())
}

fn get_uvarint(buf: &mut Bytes) -> Result<u32> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        need(buf, 1)?;
        let byte = buf.get_u8();
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("varint longer than 5 bytes")
}

/// A string: int16 length (non-flexible) or unsigned-varint length + 1 (flexible).
fn put_string(buf: &mut BytesMut, s: &str, flexible: bool) -> Result<()> {
    if flexible {
        put_uvarint(buf, u32::try_from(s.len())? + 1)?;
    } else {
        buf.put_i16(i16::try_from(s.len())?);
    }
    buf.put_slice(s.as_bytes());
    Ok(())
}

fn get_string(buf: &mut Bytes, flexible: bool) -> Result<String> {
    let len = if flexible {
        i64::from(get_uvarint(buf)?) - 1
    } else {
        need(buf, 2)?;
        i64::from(buf.get_i16())
    };
    let Ok(len) = usize::try_from(len) else {
        bail!("null string where one is required");
    };
    need(buf, len)?;
    Ok(String::from_utf8(buf.split_to(len).to_vec())?)
}

fn need(buf: &Bytes, n: usize) -> Result<()> {
    if buf.remaining() < n {
        bail!("transaction log record truncated");
    }
    Ok(())
}

/// The key bytes for `transactional_id`.
pub(crate) fn encode_key(transactional_id: &str) -> Result<Vec<u8>> {
    let mut buf = BytesMut::new();
    buf.put_i16(TRANSACTION_LOG_RECORD_TYPE);
    put_string(&mut buf, transactional_id, false)?;
    Ok(buf.to_vec())
}

/// The transactional id of a key, or `None` when the key is another record type.
pub(crate) fn decode_key(data: &[u8]) -> Result<Option<String>> {
    let mut buf = Bytes::copy_from_slice(data);
    if buf.remaining() < 2 {
        bail!("TransactionLogKey shorter than its record type");
    }
    if buf.get_i16() != TRANSACTION_LOG_RECORD_TYPE {
        return Ok(None);
    }
    let id = get_string(&mut buf, false)?;
    Ok(Some(id))
}

/// The value bytes at `version` (0 or 1), version prefix included.
pub(crate) fn encode_value(value: &TransactionLogValue, version: i16) -> Result<Vec<u8>> {
    if !(0..=HIGHEST_VALUE_VERSION).contains(&version) {
        bail!("TransactionLogValue v{version} is not supported");
    }
    let flexible = version >= 1;
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    buf.put_i64(value.producer_id);
    buf.put_i16(value.producer_epoch);
    buf.put_i32(value.transaction_timeout_ms);
    buf.put_i8(value.transaction_status);
    match &value.transaction_partitions {
        None if flexible => put_uvarint(&mut buf, 0)?,
        None => buf.put_i32(-1),
        Some(topics) => {
            let count = u32::try_from(topics.len())?;
            if flexible {
                put_uvarint(&mut buf, count + 1)?;
            } else {
                buf.put_i32(i32::try_from(count)?);
            }
            for (topic, partitions) in topics {
                let n = u32::try_from(partitions.len())?;
                put_string(&mut buf, topic, flexible)?;
                if flexible {
                    put_uvarint(&mut buf, n + 1)?;
                } else {
                    buf.put_i32(i32::try_from(n)?);
                }
                for p in partitions {
                    buf.put_i32(*p);
                }
                if flexible {
                    put_uvarint(&mut buf, 0)?; // the struct's tagged fields
                }
            }
        }
    }
    buf.put_i64(value.transaction_last_update_timestamp_ms);
    buf.put_i64(value.transaction_start_timestamp_ms);
    if flexible {
        // Tagged fields at their defaults are left out, as Kafka's serializer does.
        let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
        if value.previous_producer_id != -1 {
            tagged.push((0, value.previous_producer_id.to_be_bytes().to_vec()));
        }
        if value.next_producer_id != -1 {
            tagged.push((1, value.next_producer_id.to_be_bytes().to_vec()));
        }
        if value.client_transaction_version != 0 {
            tagged.push((2, value.client_transaction_version.to_be_bytes().to_vec()));
        }
        put_uvarint(&mut buf, u32::try_from(tagged.len())?)?;
        for (tag, data) in tagged {
            put_uvarint(&mut buf, tag)?;
            put_uvarint(&mut buf, u32::try_from(data.len())?)?;
            buf.put_slice(&data);
        }
    }
    Ok(buf.to_vec())
}

/// `(version, value)` from value bytes. Unknown tagged fields are skipped.
pub(crate) fn decode_value(data: &[u8]) -> Result<(i16, TransactionLogValue)> {
    let mut buf = Bytes::copy_from_slice(data);
    need(&buf, 2)?;
    let version = buf.get_i16();
    if !(0..=HIGHEST_VALUE_VERSION).contains(&version) {
        bail!("TransactionLogValue v{version} is not supported");
    }
    let flexible = version >= 1;
    let mut value = TransactionLogValue::default();
    need(&buf, 8 + 2 + 4 + 1)?;
    value.producer_id = buf.get_i64();
    value.producer_epoch = buf.get_i16();
    value.transaction_timeout_ms = buf.get_i32();
    value.transaction_status = buf.get_i8();
    let count: Option<usize> = if flexible {
        match get_uvarint(&mut buf)? {
            0 => None,
            n => Some(n as usize - 1),
        }
    } else {
        need(&buf, 4)?;
        usize::try_from(buf.get_i32()).ok()
    };
    if let Some(count) = count {
        // Every entry takes at least 4 bytes: a hostile count cannot size an allocation.
        let mut topics = Vec::with_capacity(count.min(buf.remaining() / 4));
        for _ in 0..count {
            let topic = get_string(&mut buf, flexible)?;
            let n = if flexible {
                (get_uvarint(&mut buf)? as usize).saturating_sub(1)
            } else {
                need(&buf, 4)?;
                usize::try_from(buf.get_i32()).unwrap_or(0)
            };
            need(&buf, n.saturating_mul(4))?;
            let partitions = (0..n).map(|_| buf.get_i32()).collect();
            if flexible {
                skip_tagged_fields(&mut buf)?;
            }
            topics.push((topic, partitions));
        }
        value.transaction_partitions = Some(topics);
    }
    need(&buf, 16)?;
    value.transaction_last_update_timestamp_ms = buf.get_i64();
    value.transaction_start_timestamp_ms = buf.get_i64();
    if flexible {
        for _ in 0..get_uvarint(&mut buf)? {
            let tag = get_uvarint(&mut buf)?;
            let size = get_uvarint(&mut buf)? as usize;
            need(&buf, size)?;
            let mut field = buf.split_to(size);
            match (tag, size) {
                (0, 8) => value.previous_producer_id = field.get_i64(),
                (1, 8) => value.next_producer_id = field.get_i64(),
                (2, 2) => value.client_transaction_version = field.get_i16(),
                _ => {}
            }
        }
    }
    Ok((version, value))
}

fn skip_tagged_fields(buf: &mut Bytes) -> Result<()> {
    for _ in 0..get_uvarint(buf)? {
        let _tag = get_uvarint(buf)?;
        let size = get_uvarint(buf)? as usize;
        need(buf, size)?;
        buf.advance(size);
    }
    Ok(())
}

fn value_error(err: anyhow::Error) -> PyErr {
    PyValueError::new_err(format!("{err:#}"))
}

/// `TransactionLogKey` bytes (record type 0) for `transactional_id`.
#[pyfunction]
pub(crate) fn encode_transaction_log_key<'py>(
    py: Python<'py>,
    transactional_id: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = encode_key(transactional_id).map_err(value_error)?;
    Ok(PyBytes::new(py, &data))
}

/// The transactional id of a `__transaction_state` key; `None` for other record types.
#[pyfunction]
pub(crate) fn decode_transaction_log_key(data: &[u8]) -> PyResult<Option<String>> {
    decode_key(data).map_err(value_error)
}

/// `TransactionLogValue` bytes at `version` (0 or 1) from a dict of its snake_case
/// fields (missing fields take the schema's defaults; `transaction_partitions` is a list
/// of `(topic, [partition, ...])` or None).
#[pyfunction]
pub(crate) fn encode_transaction_log_value<'py>(
    py: Python<'py>,
    version: i16,
    value: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut v = TransactionLogValue::default();
    for (key, item) in value.iter() {
        let key: String = key.extract()?;
        match key.as_str() {
            "producer_id" => v.producer_id = item.extract()?,
            "previous_producer_id" => v.previous_producer_id = item.extract()?,
            "next_producer_id" => v.next_producer_id = item.extract()?,
            "producer_epoch" => v.producer_epoch = item.extract()?,
            "transaction_timeout_ms" => v.transaction_timeout_ms = item.extract()?,
            "transaction_status" => v.transaction_status = item.extract()?,
            "transaction_partitions" => v.transaction_partitions = item.extract()?,
            "transaction_last_update_timestamp_ms" => {
                v.transaction_last_update_timestamp_ms = item.extract()?
            }
            "transaction_start_timestamp_ms" => {
                v.transaction_start_timestamp_ms = item.extract()?
            }
            "client_transaction_version" => v.client_transaction_version = item.extract()?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "TransactionLogValue has no field '{other}'"
                )));
            }
        }
    }
    let data = encode_value(&v, version).map_err(value_error)?;
    Ok(PyBytes::new(py, &data))
}

/// `(version, dict)` of `TransactionLogValue` bytes.
#[pyfunction]
pub(crate) fn decode_transaction_log_value<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(i16, Bound<'py, PyDict>)> {
    let (version, v) = decode_value(data).map_err(value_error)?;
    let out = PyDict::new(py);
    out.set_item("producer_id", v.producer_id)?;
    out.set_item("previous_producer_id", v.previous_producer_id)?;
    out.set_item("next_producer_id", v.next_producer_id)?;
    out.set_item("producer_epoch", v.producer_epoch)?;
    out.set_item("transaction_timeout_ms", v.transaction_timeout_ms)?;
    out.set_item("transaction_status", v.transaction_status)?;
    out.set_item("transaction_partitions", v.transaction_partitions)?;
    out.set_item(
        "transaction_last_update_timestamp_ms",
        v.transaction_last_update_timestamp_ms,
    )?;
    out.set_item(
        "transaction_start_timestamp_ms",
        v.transaction_start_timestamp_ms,
    )?;
    out.set_item("client_transaction_version", v.client_transaction_version)?;
    Ok((version, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TransactionLogValue {
        TransactionLogValue {
            producer_id: 1000,
            producer_epoch: 3,
            transaction_timeout_ms: 60_000,
            transaction_status: 1,
            transaction_partitions: Some(vec![("t".into(), vec![0, 2])]),
            transaction_last_update_timestamp_ms: 5,
            transaction_start_timestamp_ms: 4,
            ..Default::default()
        }
    }

    #[test]
    fn key_is_record_type_zero_then_the_id() {
        let key = encode_key("tx").unwrap();
        assert_eq!(key, vec![0, 0, 0, 2, b't', b'x']);
        assert_eq!(decode_key(&key).unwrap().as_deref(), Some("tx"));
        assert_eq!(decode_key(&[0, 2, 0, 0]).unwrap(), None);
    }

    #[test]
    fn value_v0_layout_and_round_trip() {
        let data = encode_value(&sample(), 0).unwrap();
        // version, pid, epoch, timeout, status, [1 topic: "t", [0, 2]], two timestamps
        let expected_len = 2 + 8 + 2 + 4 + 1 + 4 + (2 + 1) + 4 + 8 + 8 + 8;
        assert_eq!(data.len(), expected_len);
        assert_eq!(&data[..2], &[0, 0]);
        assert_eq!(decode_value(&data).unwrap(), (0, sample()));
    }

    #[test]
    fn value_v1_round_trips_tagged_fields() {
        let mut v = sample();
        v.previous_producer_id = 7;
        v.client_transaction_version = 2;
        let data = encode_value(&v, 1).unwrap();
        assert_eq!(decode_value(&data).unwrap(), (1, v));
        let empty = TransactionLogValue {
            transaction_partitions: None,
            ..sample()
        };
        assert_eq!(
            decode_value(&encode_value(&empty, 1).unwrap()).unwrap().1,
            empty
        );
        assert_eq!(
            decode_value(&encode_value(&empty, 0).unwrap()).unwrap().1,
            empty
        );
    }

    #[test]
    fn truncated_or_hostile_values_are_errors() {
        let data = encode_value(&sample(), 0).unwrap();
        for cut in 0..data.len() {
            assert!(decode_value(&data[..cut]).is_err(), "cut at {cut}");
        }
        let mut hostile = data[..17].to_vec();
        hostile.extend_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value(&hostile).is_err());
    }
}
