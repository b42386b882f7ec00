//! Record data fields (`records: Option<Bytes>` in Produce/Fetch/ShareFetch).
//!
//! Record bytes never become Python `bytes` on the produce or fetch path: handlers see
//! an opaque [`RecordSet`] handle that shares the Rust buffer, and hand one back.
use bytes::Bytes;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A zero-copy handle on a run of record batches, as they appear on the wire.
///
/// Python can measure and pass it along; only `to_bytes()` copies (tests, debugging).
#[pyclass(frozen, name = "RecordSet", module = "kafkars._core")]
pub(crate) struct RecordSet {
    bytes: Bytes,
}

impl RecordSet {
    /// Wrap record bytes without copying them.
    #[allow(dead_code)] // for the network/storage bindings
    pub(crate) fn from_bytes(bytes: Bytes) -> Self {
        Self { bytes }
    }

    /// The record bytes (a cheap, refcounted `Bytes` clone away).
    #[allow(dead_code)] // for the network/storage bindings
    pub(crate) fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

#[pymethods]
impl RecordSet {
    /// Copy `data` into a new record set. For tests and tools; brokers get record
    /// sets from decoded requests or from the log.
    #[new]
    fn py_new(data: &[u8]) -> Self {
        Self {
            bytes: Bytes::copy_from_slice(data),
        }
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }

    /// Size of the record batches in bytes (Kafka's `Records.sizeInBytes()`).
    fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// A copy of the bytes as Python `bytes`. For tests and debugging only.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.bytes)
    }

    /// `(producer_id, producer_epoch)` when the first batch is transactional (magic 2,
    /// attribute bit 4), else None: what a produce handler checks against the
    /// transaction coordinator (KIP-890) without copying the records. Reads the header
    /// only.
    fn transactional_producer(&self) -> Option<(i64, i16)> {
        // baseOffset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2,
        // lastOffsetDelta 4, base and max timestamps 16, producerId 8, producerEpoch 2.
        let b = &self.bytes;
        if b.len() < 53 || b[16] != 2 || b[22] & 0x10 == 0 {
            return None;
        }
        let pid = i64::from_be_bytes(b[43..51].try_into().ok()?);
        let epoch = i16::from_be_bytes(b[51..53].try_into().ok()?);
        Some((pid, epoch))
    }

    fn __repr__(&self) -> String {
        format!("RecordSet(size_in_bytes={})", self.bytes.len())
    }
}

/// `records` field → `RecordSet` or `None`. Shares the buffer (a refcount bump).
pub(crate) fn records_to_py<'py>(
    py: Python<'py>,
    records: &Option<Bytes>,
) -> PyResult<Bound<'py, PyAny>> {
    match records {
        Some(bytes) => Ok(Bound::new(
            py,
            RecordSet {
                bytes: bytes.clone(),
            },
        )?
        .into_any()),
        None => Ok(py.None().into_bound(py)),
    }
}

thread_local! {
    /// Set while a client request is converted: only then may `records` be `bytes`.
    static CLIENT_SIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (a request conversion for a client) with `bytes` accepted as `records`.
/// Responses stay strict so that the broker's record bytes never go through Python.
pub(crate) fn with_client_records<T>(f: impl FnOnce() -> T) -> T {
    CLIENT_SIDE.with(|c| c.set(true));
    let out = f();
    CLIENT_SIDE.with(|c| c.set(false));
    out
}

/// `None`, a `RecordSet`, a `FileRecords` slice, or (in a client's request only)
/// `bytes` → `records` field. A file slice becomes a placeholder that the response
/// encoder turns into a sendfile region (see `splice`).
pub(crate) fn records_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<Bytes>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(set) = obj.cast::<RecordSet>() {
        return Ok(Some(set.get().bytes.clone()));
    }
    if CLIENT_SIDE.with(|c| c.get())
        && let Ok(bytes) = obj.cast::<pyo3::types::PyBytes>()
    {
        return Ok(Some(Bytes::copy_from_slice(bytes.as_bytes())));
    }
    if let Ok(file) = obj.cast::<crate::file_records::FileRecords>() {
        return match file.get().region() {
            None => Ok(Some(Bytes::new())),
            Some(region) => crate::splice::placeholder_for(region)
                .map(Some)
                .map_err(pyo3::exceptions::PyValueError::new_err),
        };
    }
    Err(PyTypeError::new_err(format!(
        "expected RecordSet, FileRecords or None, got {}",
        obj.get_type().name()?
    )))
}
