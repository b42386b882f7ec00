//! `FileRecords`: what a log read hands Python, and what a Fetch response carries back.
//! It names a byte range of a segment file; the network layer sends it with sendfile.

use kafkars_server::FileRegion;
use kafkars_storage::{FileSlice, LogOffsetMetadata};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A slice of a segment's `.log` (file, position, size), or nothing.
#[pyclass(frozen, name = "FileRecords", module = "kafkars._core")]
pub(crate) struct FileRecords {
    slice: Option<FileSlice>,
    fetch_offset_metadata: Option<LogOffsetMetadata>,
    /// Records in the slice's whole batches (for the records-out metric).
    record_count: u64,
}

impl FileRecords {
    pub(crate) fn new(
        slice: Option<FileSlice>,
        fetch_offset_metadata: Option<LogOffsetMetadata>,
        record_count: u64,
    ) -> Self {
        Self {
            slice,
            fetch_offset_metadata,
            record_count,
        }
    }

    /// The region to send, if any bytes.
    pub(crate) fn region(&self) -> Option<FileRegion> {
        self.slice
            .as_ref()
            .filter(|s| s.size > 0)
            .map(|s| FileRegion {
                file: s.file.clone(),
                position: s.position,
                len: s.size as usize,
            })
    }
}

#[pymethods]
impl FileRecords {
    /// A record set with no bytes (what a fetch returns for a partition with no new data).
    #[staticmethod]
    fn empty() -> Self {
        Self {
            slice: None,
            fetch_offset_metadata: None,
            record_count: 0,
        }
    }

    /// Records in the slice's whole batches, counted from their headers at read time.
    #[getter]
    fn record_count(&self) -> u64 {
        self.record_count
    }

    fn __len__(&self) -> usize {
        self.slice.as_ref().map_or(0, |s| s.size as usize)
    }

    /// Position of the slice in its segment file.
    #[getter]
    fn position(&self) -> u64 {
        self.slice.as_ref().map_or(0, |s| s.position)
    }

    /// `(offset, segment_base_offset, position)` where the read started, if known.
    #[getter]
    fn fetch_offset_metadata(&self) -> Option<(i64, i64, u32)> {
        self.fetch_offset_metadata.map(|m| {
            (
                m.message_offset,
                m.segment_base_offset,
                m.relative_position_in_segment,
            )
        })
    }

    /// Reads the bytes into Python. For tests and tools only; fetches never call this.
    fn read_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = match &self.slice {
            Some(slice) => py.detach(|| slice.read_to_vec())?,
            None => Vec::new(),
        };
        Ok(PyBytes::new(py, &data))
    }

    fn __repr__(&self) -> String {
        match &self.slice {
            Some(s) => format!("FileRecords(position={}, size={})", s.position, s.size),
            None => "FileRecords(empty)".to_string(),
        }
    }
}
