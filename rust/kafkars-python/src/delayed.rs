//! Python face of [`kafkars_replica::ReplicaManager`]: Fetch and acks=all Produce
//! completed in Rust (Kafka's DelayedFetch and DelayedProduce).
//!
//! Python plans a request (names resolved, access checked) and hands the partitions over;
//! this module converts them and answers through the request's [`PendingReply`] (with a
//! Python quota callback for fetches). A partition's append or high-watermark move
//! completes the operations watching it on the appending thread, without the GIL.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ProduceResponse, ResponseKind};
use kafkars_replica::{
    AppendPartition, AppendRefusal, FetchCompletion, FetchPartition, FetchResult, FetchSpec,
    FetchTopic, ProduceCompletion, ReplicaManager,
};
use kafkars_server::FileRegion;
use kafkars_storage::TopicPartition;
use kafkars_timer::DEFAULT_PURGE_INTERVAL;
use pyo3::prelude::*;
use uuid::Uuid;

use crate::network::{PendingReply, PyRequest};
use crate::partition::PyPartition;
use crate::protocol::{FromPy, RecordSet};
use crate::splice::placeholder_for;

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

/// Python face of [`ReplicaManager`]: the broker's Rust fetch and produce purgatories.
#[pyclass(frozen, name = "DelayedOperations", module = "kafkars._core")]
pub(crate) struct DelayedOperations {
    pub(crate) inner: Arc<ReplicaManager>,
}

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
impl DelayedOperations {
    #[new]
    #[pyo3(signature = (purge_interval = DEFAULT_PURGE_INTERVAL))]
    fn new(purge_interval: usize) -> Self {
        Self {
            inner: Arc::new(ReplicaManager::new(purge_interval)),
        }
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

    /// ISR expansions since the last call: `[(topic, partition, isr)]`.
    fn take_isr_changes(&self) -> Vec<(String, i32, Vec<i32>)> {
        self.inner
            .take_isr_changes()
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

    /// Stops the purgatories' expiration threads (what still waits is no longer timed
    /// out). Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| self.inner.shutdown());
    }
}
