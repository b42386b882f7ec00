//! Python face of [`kafkars_storage::Partition`]: the handle the ReplicaManager keeps per
//! partition. Python asks it to append and describe; the ReplicaManager changes its role
//! and ISR. Offsets, the high watermark and the ISR are computed in Rust, and every call
//! that touches the log runs with the GIL released.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kafkars_storage::{LiveBrokers, Partition, SystemClock};
use pyo3::prelude::*;

use crate::protocol::RecordSet;
use crate::storage::{PyLog, PyLogAppendInfo, append_info, log_error, wrap};

/// The live brokers a cluster member's partitions admit to the ISR; updated from each
/// UpdateMetadata.
#[pyclass(frozen, name = "LiveBrokers", module = "kafkars._core")]
#[derive(Default)]
pub(crate) struct PyLiveBrokers {
    pub(crate) inner: Arc<LiveBrokers>,
}

#[pymethods]
impl PyLiveBrokers {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    fn update(&self, broker_ids: Vec<i32>) {
        self.inner.update(broker_ids);
    }

    fn __contains__(&self, broker_id: i32) -> bool {
        self.inner.contains(broker_id)
    }
}

#[pyclass(frozen, name = "Partition", module = "kafkars._core")]
pub(crate) struct PyPartition {
    pub(crate) inner: Arc<Partition>,
}

#[pymethods]
impl PyPartition {
    /// A partition over `log` on broker `broker_id`, led by nobody yet, outside any
    /// ReplicaManager (the broker's own partitions come from its ReplicaManager, which
    /// also changes their roles and ISRs).
    #[new]
    fn new(log: &PyLog, broker_id: i32) -> Self {
        let partition = Partition::new(
            Arc::clone(&log.inner),
            broker_id,
            Arc::new(SystemClock),
            None,
        );
        Self {
            inner: Arc::new(partition),
        }
    }

    #[getter]
    fn topic(&self) -> String {
        self.inner.topic_partition().topic.clone()
    }
    #[getter]
    fn partition(&self) -> i32 {
        self.inner.topic_partition().partition
    }
    #[getter]
    fn log(&self) -> PyLog {
        wrap(Arc::clone(self.inner.log()))
    }
    #[getter]
    fn leader_id(&self) -> i32 {
        self.inner.leader_id()
    }
    #[getter]
    fn leader_epoch(&self) -> i32 {
        self.inner.leader_epoch()
    }
    #[getter]
    fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }
    #[getter]
    fn replicas(&self) -> Vec<i32> {
        self.inner.replicas()
    }
    #[getter]
    fn isr(&self) -> Vec<i32> {
        self.inner.isr()
    }
    #[getter]
    fn high_watermark(&self) -> i64 {
        self.inner.high_watermark()
    }
    #[getter]
    fn last_stable_offset(&self) -> i64 {
        self.inner.last_stable_offset()
    }

    /// `(bytes_in, messages_in, bytes_out)` since the partition was opened.
    #[getter]
    fn counters(&self) -> (u64, u64, u64) {
        let c = self.inner.counters();
        (
            c.bytes_in.load(Ordering::Relaxed),
            c.messages_in.load(Ordering::Relaxed),
            c.bytes_out.load(Ordering::Relaxed),
        )
    }

    /// `{replica_id: (log_end_offset, last_caught_up_time_ms)}` of the followers, as this
    /// leader tracks them.
    #[getter]
    fn replica_states(&self) -> Vec<(i32, i64, i64)> {
        self.inner
            .replicas()
            .into_iter()
            .filter_map(|id| {
                self.inner
                    .replica_state(id)
                    .map(|r| (id, r.log_end_offset, r.last_caught_up_time_ms))
            })
            .collect()
    }

    /// Leads the partition at `leader_epoch`; True if this broker did not lead it before.
    fn make_leader(
        &self,
        py: Python<'_>,
        leader_epoch: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
    ) -> bool {
        py.detach(|| self.inner.make_leader(leader_epoch, replicas, isr))
    }

    /// Validates and appends produced records as the leader. `required_acks=-1` needs
    /// `min.insync.replicas` in the ISR. Raises `KafkaError(code, message)`.
    fn append_records_to_leader(
        &self,
        py: Python<'_>,
        records: &RecordSet,
        required_acks: i16,
    ) -> PyResult<PyLogAppendInfo> {
        let bytes = records.bytes().clone();
        let info = py
            .detach(|| self.inner.append_records_to_leader(&bytes, required_acks))
            .map_err(log_error)?;
        Ok(append_info(&info))
    }

    /// Appends the COMMIT or ABORT marker ending `producer_id`'s transaction.
    fn append_txn_marker(
        &self,
        py: Python<'_>,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> PyResult<PyLogAppendInfo> {
        let info = py
            .detach(|| {
                self.inner
                    .append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit)
            })
            .map_err(log_error)?;
        Ok(append_info(&info))
    }

    fn __repr__(&self) -> String {
        format!(
            "Partition({}, leader={}, epoch={}, isr={:?}, hw={})",
            self.inner.topic_partition(),
            self.inner.leader_id(),
            self.inner.leader_epoch(),
            self.inner.isr(),
            self.inner.high_watermark()
        )
    }
}
