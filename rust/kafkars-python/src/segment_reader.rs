//! Reading the batches of a `.log` segment file in place (memory-mapped), for
//! `kafkars.log` and `kafkars-dump-log`. Works on any Kafka log dir, ours or Apache Kafka's.

use std::fs::File;
use std::sync::Mutex;

use bytes::Bytes;
use memmap2::Mmap;
use pyo3::prelude::*;

use crate::codec::PyRecordBatch;

/// Iterates the batches of a segment file from `start_position`. When iteration ends,
/// `invalid_bytes` tells how many bytes at the end were not a complete, well-formed batch
/// (a torn write after a crash, or garbage) and `error` why.
#[pyclass(name = "SegmentReader", module = "kafkars._core")]
pub(crate) struct SegmentReader {
    data: Bytes,
    position: usize,
    #[pyo3(get)]
    invalid_bytes: usize,
    #[pyo3(get)]
    error: Option<String>,
    done: Mutex<bool>,
}

#[pymethods]
impl SegmentReader {
    #[new]
    #[pyo3(signature = (path, start_position = 0))]
    fn new(path: std::path::PathBuf, start_position: usize) -> PyResult<Self> {
        let file = File::open(&path)?;
        let len = file.metadata()?.len();
        let data = if len == 0 {
            Bytes::new()
        } else {
            // SAFETY: read-only map; a concurrent truncation by a running broker could fault,
            // which is why the broker itself never reads through this path.
            let map = unsafe { Mmap::map(&file)? };
            Bytes::from_owner(map)
        };
        Ok(Self {
            position: start_position.min(data.len()),
            data,
            invalid_bytes: 0,
            error: None,
            done: Mutex::new(false),
        })
    }

    /// Size of the file in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.data.len()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<PyRecordBatch> {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        if *done {
            return None;
        }
        let rest = &self.data[self.position..];
        let mut iter = kafkars_record::batches(rest);
        match iter.next() {
            Some(Ok(batch)) => {
                let size = batch.size_in_bytes();
                let out = PyRecordBatch::from_shared(
                    self.data.slice(self.position..self.position + size),
                    self.position as u64,
                );
                self.position += size;
                Some(out)
            }
            other => {
                *done = true;
                self.invalid_bytes = rest.len();
                self.error = match other {
                    Some(Err(e)) => Some(e.to_string()),
                    _ if rest.is_empty() => None,
                    _ => Some("incomplete batch at the end of the file".to_string()),
                };
                None
            }
        }
    }
}
