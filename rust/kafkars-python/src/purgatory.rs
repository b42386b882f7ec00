//! Python delayed operations on the Rust purgatory and timing wheel.
//!
//! Lock order: Python code enters the purgatory with the GIL released (`detach`), and the
//! purgatory takes the GIL only inside an operation's callbacks. So no thread ever holds
//! the GIL while it waits for a purgatory lock, and the timer thread can always run.

use std::sync::Arc;

use kafkars_timer::{
    DEFAULT_PURGE_INTERVAL, DelayedOperation, DelayedOperationPurgatory, OperationState,
};
use pyo3::prelude::*;

/// A Python object with `delay_ms`, `try_complete() -> bool`, `on_complete()` and
/// `on_expiration()`. `try_complete` only says whether the operation can complete now;
/// the purgatory then runs `on_complete` exactly once.
struct PyDelayedOperation {
    obj: Py<PyAny>,
    delay_ms: u64,
    state: OperationState,
}

impl PyDelayedOperation {
    fn call(&self, method: &str) -> bool {
        Python::attach(|py| {
            match self
                .obj
                .call_method0(py, method)
                .and_then(|r| r.is_truthy(py))
            {
                Ok(result) => result,
                Err(e) => {
                    // A failing check completes the operation, so its request is answered
                    // (with whatever the completion can do) instead of waiting forever.
                    e.print(py);
                    true
                }
            }
        })
    }
}

impl DelayedOperation for PyDelayedOperation {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        self.call("try_complete") && self.force_complete()
    }

    fn on_complete(&self) {
        self.call("on_complete");
    }

    fn on_expiration(&self) {
        self.call("on_expiration");
    }
}

/// Kafka's `DelayedOperationPurgatory` for operations written in Python (delayed fetches,
/// joins and heartbeats), keyed by strings such as `"topic-0"` or a group id.
#[pyclass(frozen, name = "DelayedOperationPurgatory", module = "kafkars._core")]
pub(crate) struct PyPurgatory {
    inner: DelayedOperationPurgatory<String, PyDelayedOperation>,
}

#[pymethods]
impl PyPurgatory {
    #[new]
    #[pyo3(signature = (name, purge_interval = DEFAULT_PURGE_INTERVAL))]
    fn new(name: &str, purge_interval: usize) -> Self {
        Self {
            inner: DelayedOperationPurgatory::new(name, purge_interval),
        }
    }

    /// Completes `op` now if it can, else watches it under `keys` until an event completes
    /// it or `op.delay_ms` passes. True if completed by this call.
    fn try_complete_else_watch(
        &self,
        py: Python<'_>,
        op: Py<PyAny>,
        keys: Vec<String>,
    ) -> PyResult<bool> {
        if keys.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "keys must not be empty",
            ));
        }
        let delay_ms: i64 = op.getattr(py, "delay_ms")?.extract(py)?;
        let op = Arc::new(PyDelayedOperation {
            obj: op,
            delay_ms: delay_ms.max(0) as u64,
            state: OperationState::new(),
        });
        Ok(py.detach(|| self.inner.try_complete_else_watch(&op, &keys)))
    }

    /// Re-checks the operations watched under `key`; returns how many completed.
    fn check_and_complete(&self, py: Python<'_>, key: String) -> usize {
        py.detach(|| self.inner.check_and_complete(&key))
    }

    /// Watch-list entries (Kafka's PurgatorySize).
    #[getter]
    fn watched(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.watched())
    }

    /// Operations waiting for their timeout (Kafka's NumDelayedOperations).
    #[getter]
    fn delayed(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.num_delayed())
    }

    /// Stops the expiration thread. Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| self.inner.shutdown());
    }
}
