//! `kafkars.codec`: record batches decoded and built from Python. A library API for tools
//! and users; the broker's produce and fetch paths never come through here.

use bytes::Bytes;
use kafkars_record::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, TimestampType};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::record_error;

/// One record, decoded.
#[pyclass(frozen, get_all, name = "Record", module = "kafkars._core")]
pub(crate) struct PyRecord {
    offset: i64,
    timestamp: i64,
    key: Option<Py<PyBytes>>,
    value: Option<Py<PyBytes>>,
    /// `(key, value)` pairs in wire order; duplicate keys kept.
    headers: Vec<(String, Option<Py<PyBytes>>)>,
    size_in_bytes: usize,
    attributes: i8,
}

#[pymethods]
impl PyRecord {
    fn __repr__(&self, py: Python<'_>) -> String {
        let show = |b: &Option<Py<PyBytes>>| match b {
            None => "None".to_string(),
            Some(b) => format!("{:?}", String::from_utf8_lossy(b.as_bytes(py))),
        };
        format!(
            "Record(offset={}, timestamp={}, key={}, value={}, headers={})",
            self.offset,
            self.timestamp,
            show(&self.key),
            show(&self.value),
            self.headers.len()
        )
    }
}

/// One record batch (magic v2) held as its bytes; header fields are read on access.
#[pyclass(frozen, name = "RecordBatch", module = "kafkars._core")]
pub(crate) struct PyRecordBatch {
    bytes: Bytes,
    /// Byte position of the batch in the file or buffer it came from.
    #[pyo3(get)]
    position: u64,
}

impl PyRecordBatch {
    /// Wraps bytes already known to hold exactly one well-formed batch header.
    pub(crate) fn from_shared(bytes: Bytes, position: u64) -> Self {
        Self { bytes, position }
    }

    fn view(&self) -> RecordBatch<'_> {
        RecordBatch::new(&self.bytes).expect("checked when constructed")
    }
}

pub(crate) fn decode_records(py: Python<'_>, batch: &RecordBatch<'_>) -> PyResult<Vec<PyRecord>> {
    let records = batch.records().map_err(record_error)?;
    let bytes = |b: Option<&[u8]>| b.map(|b| PyBytes::new(py, b).unbind());
    // The declared count is not trusted: a record takes at least one byte.
    let declared = usize::try_from(batch.records_count()).unwrap_or(0);
    let mut out = Vec::with_capacity(declared.min(records.body().len()));
    for record in records.iter() {
        let r = record.map_err(record_error)?;
        out.push(PyRecord {
            offset: r.offset,
            timestamp: r.timestamp,
            key: bytes(r.key),
            value: bytes(r.value),
            headers: r
                .headers
                .iter()
                .map(|h| (String::from_utf8_lossy(h.key).into_owned(), bytes(h.value)))
                .collect(),
            size_in_bytes: r.size_in_bytes,
            attributes: r.attributes,
        });
    }
    Ok(out)
}

#[pymethods]
impl PyRecordBatch {
    #[new]
    fn new(data: &[u8]) -> PyResult<Self> {
        let batch = RecordBatch::new(data).map_err(record_error)?;
        Ok(Self {
            bytes: Bytes::copy_from_slice(batch.as_bytes()),
            position: 0,
        })
    }

    #[getter]
    fn base_offset(&self) -> i64 {
        self.view().base_offset()
    }
    #[getter]
    fn last_offset(&self) -> i64 {
        self.view().last_offset()
    }
    #[getter]
    fn next_offset(&self) -> i64 {
        self.view().next_offset()
    }
    #[getter]
    fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }
    #[getter]
    fn partition_leader_epoch(&self) -> i32 {
        self.view().partition_leader_epoch()
    }
    #[getter]
    fn magic(&self) -> i8 {
        self.view().magic()
    }
    #[getter]
    fn crc(&self) -> u32 {
        self.view().crc()
    }
    #[getter]
    fn is_valid(&self) -> bool {
        self.view().is_valid()
    }
    #[getter]
    fn attributes(&self) -> i16 {
        self.view().attributes()
    }
    /// Codec name as Kafka prints it: "none", "gzip", "snappy", "lz4", "zstd".
    #[getter]
    fn compression(&self) -> PyResult<&'static str> {
        Ok(self.view().compression().map_err(record_error)?.name())
    }
    #[getter]
    fn timestamp_type(&self) -> &'static str {
        self.view().timestamp_type().name()
    }
    #[getter]
    fn is_transactional(&self) -> bool {
        self.view().is_transactional()
    }
    #[getter]
    fn is_control(&self) -> bool {
        self.view().is_control()
    }
    #[getter]
    fn last_offset_delta(&self) -> i32 {
        self.view().last_offset_delta()
    }
    #[getter]
    fn base_timestamp(&self) -> i64 {
        self.view().base_timestamp()
    }
    #[getter]
    fn max_timestamp(&self) -> i64 {
        self.view().max_timestamp()
    }
    #[getter]
    fn producer_id(&self) -> i64 {
        self.view().producer_id()
    }
    #[getter]
    fn producer_epoch(&self) -> i16 {
        self.view().producer_epoch()
    }
    #[getter]
    fn base_sequence(&self) -> i32 {
        self.view().base_sequence()
    }
    #[getter]
    fn last_sequence(&self) -> i32 {
        self.view().last_sequence()
    }
    #[getter]
    fn records_count(&self) -> i32 {
        self.view().records_count()
    }

    /// CRC and full structural validation; raises `CorruptRecordError`.
    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.view().validate()).map_err(record_error)
    }

    /// The decoded records (decompressing if needed).
    fn records(&self, py: Python<'_>) -> PyResult<Vec<PyRecord>> {
        decode_records(py, &self.view())
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }

    fn __repr__(&self) -> String {
        let b = self.view();
        format!(
            "RecordBatch(base_offset={}, last_offset={}, count={}, compression={}, size={})",
            b.base_offset(),
            b.last_offset(),
            b.records_count(),
            b.compression().map(Compression::name).unwrap_or("?"),
            self.bytes.len()
        )
    }
}

/// Splits a buffer of concatenated batches. Stops at an incomplete trailing batch; raises
/// `CorruptRecordError` on a structurally impossible header.
#[pyfunction]
pub(crate) fn decode_batches(data: &[u8]) -> PyResult<Vec<PyRecordBatch>> {
    let mut out = Vec::new();
    let mut position = 0u64;
    for batch in kafkars_record::batches(data) {
        let batch = batch.map_err(record_error)?;
        out.push(PyRecordBatch {
            bytes: Bytes::copy_from_slice(batch.as_bytes()),
            position,
        });
        position += batch.size_in_bytes() as u64;
    }
    Ok(out)
}

type PyNewRecord = (
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    i64,
    Vec<(String, Option<Vec<u8>>)>,
);

/// Builds one batch from `(key, value, timestamp, headers)` tuples.
#[pyfunction]
#[pyo3(signature = (
    records, *, compression = "none", base_offset = 0, partition_leader_epoch = -1,
    log_append_time = None, producer_id = -1, producer_epoch = -1, base_sequence = -1,
    is_transactional = false,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_batch<'py>(
    py: Python<'py>,
    records: Vec<PyNewRecord>,
    compression: &str,
    base_offset: i64,
    partition_leader_epoch: i32,
    log_append_time: Option<i64>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    is_transactional: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = Compression::from_name(compression)
        .ok_or_else(|| PyValueError::new_err(format!("unknown compression {compression:?}")))?;
    let mut builder = RecordBatchBuilder::new()
        .base_offset(base_offset)
        .partition_leader_epoch(partition_leader_epoch)
        .compression(codec)
        .producer(producer_id, producer_epoch, base_sequence)
        .transactional(is_transactional);
    if let Some(ts) = log_append_time {
        builder = builder
            .timestamp_type(TimestampType::LogAppendTime)
            .log_append_time(ts);
    }
    for (key, value, timestamp, headers) in records {
        builder.append(NewRecord {
            timestamp,
            key,
            value,
            headers,
        });
    }
    let built = py.detach(|| builder.build()).map_err(record_error)?;
    Ok(PyBytes::new(py, &built))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRecord>()?;
    m.add_class::<PyRecordBatch>()?;
    m.add_function(wrap_pyfunction!(decode_batches, m)?)?;
    m.add_function(wrap_pyfunction!(build_batch, m)?)?;
    Ok(())
}
