//! Python face of [`kafkars_replica::ReplicaFetcherManager`]: which partitions follow
//! which leader. The fetcher threads run in Rust without the GIL.

use std::time::Duration;

use kafkars_client::Security;
use kafkars_replica::FetcherConfig;
use kafkars_storage::TopicPartition;
use pyo3::prelude::*;

use crate::client::PySecurity;
use crate::partition::PyPartition;

#[pyclass(frozen, name = "ReplicaFetcherManager", module = "kafkars._core")]
pub(crate) struct ReplicaFetcherManager {
    pub(crate) inner: std::sync::Arc<kafkars_replica::ReplicaFetcherManager>,
}

#[pymethods]
impl ReplicaFetcherManager {
    #[new]
    /// `security`: the inter-broker listener's client settings, as
    /// `kafkars.security.inter_broker.fetcher_security` gives them (None: PLAINTEXT).
    #[pyo3(signature = (broker_id, num_replica_fetchers = 1, max_wait_ms = 500, min_bytes = 1, max_bytes = 10_485_760, partition_max_bytes = 1_048_576, backoff_ms = 1000, socket_timeout_ms = 30_000, security = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        broker_id: i32,
        num_replica_fetchers: usize,
        max_wait_ms: i32,
        min_bytes: i32,
        max_bytes: i32,
        partition_max_bytes: i32,
        backoff_ms: u64,
        socket_timeout_ms: u64,
        security: Option<PySecurity>,
    ) -> PyResult<Self> {
        let security = match security {
            Some(s) => s.resolve()?,
            None => Security::default(),
        };
        let config = FetcherConfig {
            broker_id,
            max_wait_ms,
            min_bytes,
            max_bytes,
            partition_max_bytes,
            backoff: Duration::from_millis(backoff_ms),
            socket_timeout: Duration::from_millis(socket_timeout_ms),
            security,
        };
        Ok(Self {
            inner: std::sync::Arc::new(kafkars_replica::ReplicaFetcherManager::new(
                config,
                num_replica_fetchers,
            )),
        })
    }

    /// Starts following: each partition fetches from `leader_id` at `host:port`, first
    /// truncating to the leader's log. `partitions`: `[(Partition, leader_epoch)]`.
    fn add_partitions(
        &self,
        leader_id: i32,
        host: String,
        port: u16,
        partitions: Vec<(Py<PyPartition>, i32)>,
        py: Python<'_>,
    ) -> PyResult<()> {
        let partitions = partitions
            .iter()
            .map(|(handle, epoch)| (std::sync::Arc::clone(&handle.get().inner), *epoch))
            .collect();
        // Without the GIL: moving a partition waits for its old fetcher's append to end,
        // and what that append completes (a fetch with a Python quota callback) may need it.
        py.detach(|| {
            self.inner
                .add_partitions(leader_id, &host, port, partitions)
        });
        Ok(())
    }

    /// Stops fetching these `(topic, partition)`s (this broker leads them now, or they
    /// were deleted).
    fn remove_partitions(&self, py: Python<'_>, partitions: Vec<(String, i32)>) {
        py.detach(|| {
            for (topic, partition) in partitions {
                self.inner
                    .remove_partition(&TopicPartition::new(topic, partition));
            }
        });
    }

    /// `[(topic, partition, leader_id, fetch_offset, truncating)]` being fetched.
    fn fetch_states(&self) -> Vec<(String, i32, i32, i64, bool)> {
        self.inner
            .fetch_states()
            .into_iter()
            .map(|s| {
                let tp = s.topic_partition;
                (
                    tp.topic,
                    tp.partition,
                    s.leader_id,
                    s.fetch_offset,
                    s.truncating,
                )
            })
            .collect()
    }

    /// Stops every fetcher thread and waits for them. Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| self.inner.shutdown());
    }
}
