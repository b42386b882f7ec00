//! Python face of [`kafkars_replica::ReplicaManager`]: the broker's partitions, Fetch
//! and acks=all Produce completed in Rust (Kafka's DelayedFetch and DelayedProduce), and
//! the ISR change set.
//!
//! Python plans a request (names resolved, access checked) and hands the partitions over;
//! this module converts them and answers through the request's [`PendingReply`] (with a
//! Python quota callback for fetches). A partition's append or high-watermark move
//! completes the operations watching it on the appending thread, without the GIL.
//! Everything that changes the partitions runs without the GIL too: what it completes
//! may call back into Python.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ProduceResponse, ResponseKind};
use std::collections::HashMap;
use std::path::PathBuf;

use kafkars_replica::{
    AppendPartition, AppendRefusal, FetchCompletion, FetchPartition, FetchResult, FetchSpec,
    FetchTopic, IsrChange, LeaderAndIsrPartitionState, ProduceCompletion, ReplicaManager,
};
use kafkars_server::FileRegion;
use kafkars_storage::{Partition, SystemClock, TopicPartition};
use kafkars_timer::DEFAULT_PURGE_INTERVAL;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use uuid::Uuid;

use crate::network::{PendingReply, PyRequest};
use crate::partition::{PyLiveBrokers, PyPartition};
use crate::protocol::{FromPy, RecordSet};
use crate::replica_fetcher::ReplicaFetcherManager;
use crate::splice::placeholder_for;
use crate::storage::{PyLogManager, log_config, log_error};

/// Answers a fetch: records quotas if asked, encodes and sends.
struct FetchReply {
    reply: PendingReply,
    /// `quota(bytes) -> throttle_ms`, only when client quotas are configured.
    quota: Option<Py<PyAny>>,
}

impl FetchCompletion for FetchReply {
    fn waiting(&mut self) {
        self.reply.mark_waiting();
    }

    fn complete(self: Box<Self>, result: FetchResult<'_>) {
        let throttle_ms = match &self.quota {
            Some(quota) => Python::attach(|py| {
                quota
                    .call1(py, (result.bytes(),))
                    .and_then(|r| r.extract::<i32>(py))
                    .unwrap_or(0)
            }),
            None => 0,
        };
        if throttle_ms > 0 {
            self.reply.throttle(throttle_ms as u64);
        }
        // Inside `send`, so the sendfile placeholders register on its thread.
        self.reply.send(|| {
            ResponseKind::Fetch(result.response(throttle_ms, |s| {
                placeholder_for(FileRegion {
                    len: s.size as usize,
                    file: s.file,
                    position: s.position,
                })
                .unwrap_or_default()
            }))
        });
    }
}

/// Answers a Produce.
struct ProduceReply(PendingReply);

impl ProduceCompletion for ProduceReply {
    fn waiting(&mut self) {
        self.0.mark_waiting();
    }

    fn complete(self: Box<Self>, response: Option<ProduceResponse>) {
        match response {
            Some(response) => {
                self.0.send(|| ResponseKind::Produce(response));
            }
            None => self.0.send_no_response(),
        }
    }
}

/// Python face of [`ReplicaManager`].
#[pyclass(frozen, name = "ReplicaManager", module = "kafkars._core")]
pub(crate) struct PyReplicaManager {
    pub(crate) inner: Arc<ReplicaManager>,
}

fn wrap(partition: Arc<Partition>) -> PyPartition {
    PyPartition { inner: partition }
}

/// A topic id as Python gives it (a `uuid.UUID`, 16 bytes or None: unknown).
fn topic_id(id: Option<&Bound<'_, PyAny>>) -> PyResult<Uuid> {
    id.map_or(Ok(Uuid::nil()), Uuid::from_py)
}

/// A LeaderAndIsr partition state from `become_leader`/`become_follower`'s arguments.
fn partition_state(
    leader_epoch: i32,
    replicas: Option<Vec<i32>>,
    isr: Option<Vec<i32>>,
    topic_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<LeaderAndIsrPartitionState> {
    Ok(LeaderAndIsrPartitionState {
        leader_epoch,
        replicas: replicas.unwrap_or_default(),
        isr: isr.unwrap_or_default(),
        topic_id: self::topic_id(topic_id)?,
    })
}

/// `(topic, partition, leader_epoch, isr)`: an ISR change as Python sees it.
type PyIsrChange = (String, i32, i32, Vec<i32>);

type PlannedPartition = (i32, Option<Py<PyPartition>>, i16, i64, i32, i32, i32, i32);

/// One partition of a Produce as Python planned it: `(index, Partition or None,
/// error_code, error_message, record_errors, records)`; a non-zero code answers the
/// partition with it and nothing is appended.
type PlannedAppend = (
    i32,
    Option<Py<PyPartition>>,
    i16,
    Option<String>,
    Vec<(i32, String)>,
    Option<Py<RecordSet>>,
);

#[pymethods]
impl PyReplicaManager {
    /// Broker `broker_id`'s partitions over the logs of `log_manager`, followers
    /// fetching with `fetchers` (None: this broker never follows).
    #[new]
    #[pyo3(signature = (log_manager, broker_id, fetchers = None, purge_interval = DEFAULT_PURGE_INTERVAL))]
    fn new(
        log_manager: &PyLogManager,
        broker_id: i32,
        fetchers: Option<&ReplicaFetcherManager>,
        purge_interval: usize,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: ReplicaManager::new(
                broker_id,
                log_manager.manager()?,
                fetchers.map(|f| Arc::clone(&f.inner)),
                Arc::new(SystemClock),
                purge_interval,
            ),
        })
    }

    #[getter]
    fn broker_id(&self) -> i32 {
        self.inner.broker_id()
    }

    /// Followers join the ISR of partitions created from now on only while their broker
    /// is in `live_brokers`.
    fn set_live_brokers(&self, live_brokers: &PyLiveBrokers) {
        self.inner.set_live_brokers(Arc::clone(&live_brokers.inner));
    }

    /// Whether a LeaderAndIsr's state for `topic`-`partition` is to be applied: its
    /// leader epoch is newer than the one held here (Kafka's becomeLeaderOrFollower
    /// answers STALE_CONTROLLER_EPOCH otherwise).
    #[pyo3(signature = (topic, partition, leader_id, leader_epoch, *, topic_id = None))]
    fn is_newer_leader_epoch(
        &self,
        topic: String,
        partition: i32,
        leader_id: i32,
        leader_epoch: i32,
        topic_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let tp = TopicPartition::new(topic, partition);
        let topic_id = self::topic_id(topic_id)?;
        Ok(self
            .inner
            .is_newer_leader_epoch(&tp, leader_id, leader_epoch, topic_id))
    }

    /// Leads `topic`-`partition` at `leader_epoch` (alone unless `replicas`/`isr` name
    /// followers), its log opened with `settings` on first use and `topic_id` recorded.
    /// Raises KafkaError: KAFKA_STORAGE_ERROR if its log dir failed,
    /// INCONSISTENT_TOPIC_ID.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (topic, partition, settings, *, leader_epoch = 0, replicas = None, isr = None, min_insync_replicas = 1, topic_id = None))]
    fn become_leader(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        settings: &Bound<'_, PyDict>,
        leader_epoch: i32,
        replicas: Option<Vec<i32>>,
        isr: Option<Vec<i32>>,
        min_insync_replicas: i32,
        topic_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyPartition> {
        let config = log_config(settings)?;
        let state = partition_state(leader_epoch, replicas, isr, topic_id)?;
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| {
            self.inner
                .become_leader(&tp, config, state, min_insync_replicas)
        })
        .map(wrap)
        .map_err(log_error)
    }

    /// Follows `leader_id` for `topic`-`partition`, fetching from `leader_endpoint`
    /// (`(host, port)` of its inter-broker listener) when given; what waits on the
    /// partition is answered. Raises KafkaError as `become_leader` does.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (topic, partition, settings, leader_id, leader_epoch, replicas = None, isr = None, *, leader_endpoint = None, topic_id = None))]
    fn become_follower(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        settings: &Bound<'_, PyDict>,
        leader_id: i32,
        leader_epoch: i32,
        replicas: Option<Vec<i32>>,
        isr: Option<Vec<i32>>,
        leader_endpoint: Option<(String, u16)>,
        topic_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyPartition> {
        let config = log_config(settings)?;
        let state = partition_state(leader_epoch, replicas, isr, topic_id)?;
        let tp = TopicPartition::new(topic, partition);
        let endpoint = leader_endpoint.as_ref().map(|(h, p)| (h.as_str(), *p));
        py.detach(|| {
            self.inner
                .become_follower(&tp, config, leader_id, state, endpoint)
        })
        .map(wrap)
        .map_err(log_error)
    }

    /// The replicas in the failed `log_dir` stop fetching and stay offline; returns
    /// them as `(topic, partition)` (nothing on a second call for the dir).
    fn handle_log_dir_failure(&self, py: Python<'_>, log_dir: PathBuf) -> Vec<(String, i32)> {
        py.detach(|| self.inner.handle_log_dir_failure(&log_dir))
            .into_iter()
            .map(|tp| (tp.topic, tp.partition))
            .collect()
    }

    /// Applies a topic's new storage `settings` and `min.insync.replicas`.
    #[pyo3(signature = (topic, settings, *, min_insync_replicas = 1))]
    fn update_config(
        &self,
        topic: &str,
        settings: &Bound<'_, PyDict>,
        min_insync_replicas: i32,
    ) -> PyResult<()> {
        let config = log_config(settings)?;
        self.inner
            .update_config(topic, &config, min_insync_replicas);
        Ok(())
    }

    /// Deletes every partition of `topic` held here.
    fn remove_topic(&self, py: Python<'_>, topic: &str) -> PyResult<()> {
        py.detach(|| self.inner.remove_topic(topic))
            .map_err(log_error)
    }

    /// Deletes one replica's log (StopReplica with delete).
    fn remove_partition(&self, py: Python<'_>, topic: String, partition: i32) -> PyResult<()> {
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| self.inner.remove_partition(&tp))
            .map_err(log_error)
    }

    /// Stops replicating a partition without deleting it (StopReplica without delete).
    fn stop_fetching(&self, py: Python<'_>, topic: String, partition: i32) {
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| self.inner.stop_fetching(&tp));
    }

    /// Every replicated partition led here stops being led here (after a controlled
    /// shutdown moved them).
    fn resign_replicated_leaderships(&self, py: Python<'_>) {
        py.detach(|| self.inner.resign_replicated_leaderships());
    }

    /// The partition's handle whatever this broker's role in it, or None.
    fn find_partition(&self, topic: String, partition: i32) -> Option<PyPartition> {
        self.inner
            .partition(&TopicPartition::new(topic, partition))
            .map(wrap)
    }

    /// Every partition this broker holds.
    fn partitions(&self) -> Vec<PyPartition> {
        self.inner.partitions().into_iter().map(wrap).collect()
    }

    /// `{topic: [bytes_in, messages_in, bytes_out]}` of the partitions deleted since
    /// start-up.
    #[getter]
    fn retired_counters(&self) -> HashMap<String, [u64; 3]> {
        self.inner.retired_counters()
    }

    /// The ISR changes to record, one per partition led here: `[(topic, partition,
    /// leader_epoch, isr)]`, shrinks (followers not caught up within `max_lag_ms`) and
    /// joins since the last call. A shrink counts once `commit_isr_change` applies it.
    fn propose_isr_changes(&self, py: Python<'_>, max_lag_ms: i64) -> Vec<PyIsrChange> {
        py.detach(|| self.inner.propose_isr_changes(max_lag_ms))
            .into_iter()
            .map(|c| {
                let tp = c.topic_partition;
                (tp.topic, tp.partition, c.leader_epoch, c.isr)
            })
            .collect()
    }

    /// Applies a proposed ISR change once recorded; False if this broker no longer leads
    /// the partition at `leader_epoch`.
    fn commit_isr_change(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        leader_epoch: i32,
        isr: Vec<i32>,
    ) -> bool {
        let change = IsrChange {
            topic_partition: TopicPartition::new(topic, partition),
            leader_epoch,
            isr,
        };
        py.detach(|| self.inner.commit_isr_change(&change))
    }

    /// Shrinks the ISRs at once (no controller records them): `[(topic, partition,
    /// isr)]` of those that shrank.
    fn maybe_shrink_isr(&self, py: Python<'_>, max_lag_ms: i64) -> Vec<(String, i32, Vec<i32>)> {
        py.detach(|| self.inner.maybe_shrink_isr(max_lag_ms))
            .into_iter()
            .map(|(tp, isr)| (tp.topic, tp.partition, isr))
            .collect()
    }

    /// Answers `request` (a Fetch) now, or once `min_bytes` are there or `max_wait_ms`
    /// passes. `topics`: `[(name, topic_id, [(partition_index, Partition | None,
    /// error_code, fetch_offset, partition_max_bytes, preferred_read_replica,
    /// current_leader_epoch, last_fetched_epoch)])]` in request order (the epochs -1 when
    /// the request has none; a follower's are checked, KIP-320 and the diverging epoch);
    /// a partition without a handle is answered with its error code, one with a
    /// preferred read replica (>= 0) with no records and that replica (KIP-392).
    /// `isolation_level`: 0
    /// read_uncommitted, 1 read_committed; a `replica_id >= 0` is a follower reading to
    /// the log end. `quota(bytes) -> throttle_ms` is called once with the response's
    /// record bytes when given.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (request, replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, topics, quota = None))]
    fn fetch(
        &self,
        py: Python<'_>,
        request: &PyRequest,
        replica_id: i32,
        max_wait_ms: i64,
        min_bytes: i32,
        max_bytes: i32,
        isolation_level: i8,
        topics: Vec<(String, Bound<'_, PyAny>, Vec<PlannedPartition>)>,
        quota: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let topics = topics
            .into_iter()
            .map(|(name, topic_id, partitions)| {
                Ok(FetchTopic {
                    name,
                    topic_id: Uuid::from_py(&topic_id)?,
                    partitions: partitions
                        .into_iter()
                        .map(
                            |(
                                index,
                                handle,
                                code,
                                fetch_offset,
                                max_bytes,
                                preferred,
                                current_leader_epoch,
                                last_fetched_epoch,
                            )| {
                                let target = handle.map(|h| Arc::clone(&h.get().inner)).ok_or(code);
                                FetchPartition::new(
                                    index,
                                    target,
                                    fetch_offset,
                                    max_bytes,
                                    preferred,
                                )
                                .with_current_leader_epoch(current_leader_epoch)
                                .with_last_fetched_epoch(last_fetched_epoch)
                            },
                        )
                        .collect(),
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let spec = FetchSpec::new(
            request.api_version(),
            replica_id,
            min_bytes,
            max_bytes,
            isolation_level,
            topics,
        );
        let completion = Box::new(FetchReply {
            reply: request.take_reply()?,
            quota,
        });
        let manager = Arc::clone(&self.inner);
        py.detach(move || manager.fetch_messages(spec, max_wait_ms, completion));
        Ok(())
    }

    /// Appends a Produce's partitions as their leader and answers it: at once for
    /// acks=1, not at all for acks=0, and for acks=-1 once every appended partition's
    /// high watermark reaches its append (or `timeout_ms` passes). `topics`: `[(name,
    /// [PlannedAppend])]` in request order. The whole append runs without the GIL.
    #[pyo3(signature = (request, acks, timeout_ms, topics, throttle_time_ms = 0))]
    fn produce(
        &self,
        py: Python<'_>,
        request: &PyRequest,
        acks: i16,
        timeout_ms: i64,
        topics: Vec<(String, Vec<PlannedAppend>)>,
        throttle_time_ms: i32,
    ) -> PyResult<()> {
        let topics: Vec<(String, Vec<AppendPartition>)> = topics
            .into_iter()
            .map(|(name, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|(index, handle, code, message, record_errors, records)| {
                        let records = records.map_or_else(Bytes::new, |r| r.get().bytes().clone());
                        let target = match handle {
                            Some(h) if code == 0 => Ok(Arc::clone(&h.get().inner)),
                            _ => Err(AppendRefusal {
                                code,
                                message,
                                record_errors,
                            }),
                        };
                        AppendPartition {
                            index,
                            target,
                            records,
                        }
                    })
                    .collect();
                (name, partitions)
            })
            .collect();
        let reply = request.take_reply()?;
        if throttle_time_ms > 0 {
            reply.throttle(throttle_time_ms as u64);
        }
        let completion = Box::new(ProduceReply(reply));
        let manager = Arc::clone(&self.inner);
        py.detach(move || {
            manager.append_records(acks, timeout_ms, throttle_time_ms, topics, completion)
        });
        Ok(())
    }

    /// Parks a coordinator's acks=all append (already made, ending before
    /// `required_offset`) in the produce purgatory; `callback(error_code)` runs once,
    /// on whichever thread completes it: 0 when the ISR has the append,
    /// NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND, or REQUEST_TIMED_OUT
    /// after `timeout_ms`. Nothing blocks: the caller returns at once (or after the
    /// callback, when the ISR already has the append).
    fn delay_produce(
        &self,
        py: Python<'_>,
        partition: &PyPartition,
        required_offset: i64,
        timeout_ms: i64,
        callback: Py<PyAny>,
    ) {
        let target = Arc::clone(&partition.inner);
        let done = Box::new(move |codes: Vec<i16>| {
            let code = codes.first().copied().unwrap_or(0);
            Python::attach(|py| {
                if let Err(e) = callback.call1(py, (code,)) {
                    // The callback answers a request: say why it could not.
                    e.print(py);
                }
            });
        });
        let manager = Arc::clone(&self.inner);
        py.detach(|| manager.delay_produce(target, required_offset, timeout_ms, done));
    }

    /// ISR expansions followers' fetches made since the last call: `[(topic,
    /// partition, isr)]`.
    fn take_isr_expansions(&self) -> Vec<(String, i32, Vec<i32>)> {
        self.inner
            .take_isr_expansions()
            .into_iter()
            .map(|(tp, isr)| (tp.topic, tp.partition, isr))
            .collect()
    }

    /// Fetches waiting (Kafka's NumDelayedOperations of the Fetch purgatory).
    #[getter]
    fn delayed_fetches(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.delayed_fetches())
    }

    /// Produces waiting for the ISR.
    #[getter]
    fn delayed_produces(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.delayed_produces())
    }

    /// Re-checks everything watching `topic`-`partition` (after it was deleted or
    /// changed leader, so waiting requests are answered now).
    fn check_and_complete(&self, py: Python<'_>, topic: String, partition: i32) {
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| self.inner.check_and_complete(&tp));
    }

    /// Answers every fetch and acks=all produce still waiting, and from now on answers
    /// at once, then stops the purgatories' expiration threads (for a broker shutting
    /// down). Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| self.inner.shutdown());
    }

    /// Lets go of the log manager, so its shutdown releases the dir locks. Idempotent.
    fn release_log_manager(&self, py: Python<'_>) {
        py.detach(|| self.inner.release_log_manager());
    }
}
