//! Fetch and acks=all Produce completed in Rust (Kafka's DelayedFetch and DelayedProduce).
//!
//! Python plans a request (names resolved, access checked) and hands the partitions over;
//! from there the reads, the wait in the purgatory, the response and its sendfile regions
//! are Rust. A partition's append or high-watermark move checks the operations watching
//! it on the appending thread, so a waiting consumer or producer is answered without the
//! GIL.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchResponse, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProducerId, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkars_server::FileRegion;
use kafkars_storage::{
    FetchIsolation, FileSlice, LogError, LogOffsetMetadata, Partition, PartitionListener,
    TopicPartition,
};
use kafkars_timer::{
    DEFAULT_PURGE_INTERVAL, DelayedOperation, DelayedOperationPurgatory, OperationState,
};
use pyo3::prelude::*;
use uuid::Uuid;

use crate::network::{PendingReply, PyRequest};
use crate::partition::PyPartition;
use crate::protocol::{FromPy, RecordSet};
use crate::splice::placeholder_for;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The broker's fetch and produce purgatories, told of every partition change.
pub(crate) struct Watchers {
    fetch: DelayedOperationPurgatory<TopicPartition, DelayedFetch>,
    produce: DelayedOperationPurgatory<TopicPartition, DelayedProduce>,
    /// ISR expansions made by follower fetches, for Python to record where the cluster
    /// keeps them (Kafka's isrChangeSet, propagated periodically).
    isr_changes: IsrChanges,
}

type IsrChanges = Arc<Mutex<Vec<(TopicPartition, Vec<i32>)>>>;

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers").finish_non_exhaustive()
    }
}

impl Watchers {
    fn new(purge_interval: usize) -> Self {
        Watchers {
            fetch: DelayedOperationPurgatory::new("Fetch", purge_interval),
            produce: DelayedOperationPurgatory::new("Produce", purge_interval),
            isr_changes: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Waits (in the produce purgatory, no thread held) until `target`'s high watermark
    /// reaches `required_offset`, then calls `done` with the partition's outcome.
    fn delay_produce(
        &self,
        target: Arc<Partition>,
        required_offset: i64,
        timeout_ms: i64,
        done: Box<dyn FnOnce(Vec<i16>) + Send>,
    ) {
        let key = target.topic_partition().clone();
        let op = Arc::new(DelayedProduce::new(
            timeout_ms.max(0) as u64,
            vec![PendingPartition {
                topic: 0,
                partition: 0,
                target,
                required_offset,
                result: None,
            }],
            ProduceCompletion::Callback(done),
        ));
        self.produce.try_complete_else_watch(&op, &[key]);
    }
}

impl PartitionListener for Watchers {
    fn on_partition_change(
        &self,
        tp: &TopicPartition,
        log_end_moved: bool,
        high_watermark_moved: bool,
    ) {
        if high_watermark_moved {
            self.produce.check_and_complete(tp);
        }
        // Followers wait for the log end, consumers for the high watermark.
        if log_end_moved || high_watermark_moved {
            self.fetch.check_and_complete(tp);
        }
    }
}

/// One partition of a fetch as Python planned it.
struct FetchPartition {
    index: i32,
    /// The partition, or the error code to answer with (unknown topic, not authorised).
    target: Result<Arc<Partition>, i16>,
    fetch_offset: i64,
    max_bytes: i32,
    /// The replica this leader tells the consumer to fetch from instead (KIP-392), or -1.
    preferred_read_replica: i32,
    /// A follower's view of the leader epoch (KIP-320), or -1 (not checked yet).
    #[allow(dead_code)]
    current_leader_epoch: i32,
    /// The epoch of the last batch the follower has (Fetch v12+), or -1: a leader whose
    /// log disagrees answers with where that epoch ends here (the diverging epoch).
    last_fetched_epoch: i32,
    /// Where the first read started, for counting new bytes without I/O.
    start: Mutex<Option<LogOffsetMetadata>>,
}

struct FetchTopic {
    name: String,
    topic_id: Uuid,
    partitions: Vec<FetchPartition>,
}

/// Everything a fetch needs to be read, re-read and answered from any thread.
struct FetchSpec {
    replica_id: i32,
    /// A consumer's fetch (v11+) that a follower may serve (KIP-392).
    from_follower: bool,
    isr_changes: IsrChanges,
    min_bytes: i32,
    max_bytes: i32,
    isolation: FetchIsolation,
    topics: Vec<FetchTopic>,
}

/// One partition's part of the response, before encoding.
struct PartitionRead {
    data: PartitionData,
    slice: Option<FileSlice>,
}

fn error_data(index: i32, code: i16, high_watermark: i64, log_start_offset: i64) -> PartitionData {
    PartitionData::default()
        .with_partition_index(index)
        .with_error_code(code)
        .with_high_watermark(high_watermark)
        .with_last_stable_offset(high_watermark)
        .with_log_start_offset(log_start_offset)
        .with_preferred_read_replica(BrokerId(-1))
        .with_records(Some(Bytes::new()))
}

impl FetchSpec {
    /// Reads every partition once (Kafka's readFromLog). Returns the reads, the bytes
    /// read and whether any partition failed (errors answer at once).
    fn read(&self) -> (Vec<Vec<PartitionRead>>, i64, bool) {
        let mut remaining = i64::from(self.max_bytes.max(0));
        let mut total = 0i64;
        let mut had_error = false;
        let topics = self
            .topics
            .iter()
            .map(|topic| {
                topic
                    .partitions
                    .iter()
                    .map(|p| {
                        let read = self.read_partition(p, remaining, total == 0);
                        if read.data.error_code != 0 {
                            had_error = true;
                        }
                        let size = read.slice.as_ref().map_or(0, |s| i64::from(s.size));
                        total += size;
                        remaining = (remaining - size).max(0);
                        read
                    })
                    .collect()
            })
            .collect();
        (topics, total, had_error)
    }

    fn read_partition(
        &self,
        p: &FetchPartition,
        remaining: i64,
        min_one_message: bool,
    ) -> PartitionRead {
        let partition = match &p.target {
            Ok(partition) => partition,
            Err(code) => {
                return PartitionRead {
                    data: error_data(p.index, *code, -1, -1),
                    slice: None,
                };
            }
        };
        let log = partition.log();
        // Kafka answers every failed read, an offset out of range included, with unknown
        // (-1) offsets: the client asks ListOffsets where to go.
        let failed = |e: LogError| {
            let code = match e {
                // Deleted while the fetch waited.
                LogError::Closed(_) => ResponseError::UnknownTopicOrPartition.code(),
                _ => e.kafka_error_code(),
            };
            PartitionRead {
                // A failed read carries no aborted-transaction list (null), where a
                // partition refused before reading has an empty one, as in Kafka.
                data: error_data(p.index, code, -1, -1).with_aborted_transactions(None),
                slice: None,
            }
        };
        if self.replica_id >= 0 {
            // A follower's fetch (Kafka's Partition.fetchRecords): its log must agree
            // with ours up to the fetch offset, else it is told where its last epoch ends
            // here and truncates there before fetching again (Apache Kafka followers rely
            // on this since IBP 2.7 and skip OffsetForLeaderEpoch). Its current leader
            // epoch is not checked yet: in a mixed cluster a restarted Kafka follower can
            // be sent an older epoch than its kafkars leader has, and fencing it leaves it
            // waiting for a LeaderAndIsr that does not come.
            if p.last_fetched_epoch >= 0 {
                // Kafka's leader records where its epoch starts on becoming leader; ours
                // records an epoch at its first append in it. Until then the epoch
                // notionally starts at the log end, and Kafka's answer for an older epoch
                // is the latest epoch at or before it (or the epoch itself) ending there.
                let requested = p.last_fetched_epoch;
                let (epoch, end_offset) = match log.latest_epoch() {
                    Some(latest) if latest >= requested => log.end_offset_for_epoch(requested),
                    _ if requested > partition.leader_epoch() => (-1, -1),
                    Some(latest) => (latest, log.log_end_offset()),
                    None => (requested, log.log_end_offset()),
                };
                if epoch < 0 || end_offset < 0 || p.fetch_offset < log.log_start_offset() {
                    return PartitionRead {
                        data: error_data(p.index, ResponseError::OffsetOutOfRange.code(), -1, -1)
                            .with_aborted_transactions(None),
                        slice: None,
                    };
                }
                if epoch < p.last_fetched_epoch || end_offset < p.fetch_offset {
                    return PartitionRead {
                        data: PartitionData::default()
                            .with_partition_index(p.index)
                            .with_high_watermark(partition.high_watermark())
                            .with_last_stable_offset(log.last_stable_offset())
                            .with_log_start_offset(log.log_start_offset())
                            .with_diverging_epoch(
                                EpochEndOffset::default()
                                    .with_epoch(epoch)
                                    .with_end_offset(end_offset),
                            )
                            .with_preferred_read_replica(BrokerId(-1))
                            .with_records(Some(Bytes::new())),
                        slice: None,
                    };
                }
            }
            // A follower's fetch offset is its log end: the leader records it first, so
            // the high watermark in this response already counts it.
            match partition.update_follower_fetch_state(self.replica_id, p.fetch_offset) {
                Ok(Some(isr)) => {
                    lock(&self.isr_changes).push((partition.topic_partition().clone(), isr))
                }
                Ok(None) => {}
                Err(e) => return failed(e),
            }
        }
        if p.preferred_read_replica >= 0 {
            // Sent elsewhere: no records, the offsets the client needs and where to go.
            let high_watermark = partition.high_watermark();
            return PartitionRead {
                data: PartitionData::default()
                    .with_partition_index(p.index)
                    .with_high_watermark(high_watermark)
                    .with_last_stable_offset(log.last_stable_offset())
                    .with_log_start_offset(log.log_start_offset())
                    .with_preferred_read_replica(BrokerId(p.preferred_read_replica))
                    .with_records(Some(Bytes::new())),
                slice: None,
            };
        }
        let limit = i64::from(p.max_bytes).min(remaining).max(0) as u32;
        let result = match partition.read_records(
            p.fetch_offset,
            limit,
            self.isolation,
            min_one_message,
            self.from_follower,
        ) {
            Ok(result) => result,
            Err(e) => return failed(e),
        };
        lock(&p.start).get_or_insert(result.info.fetch_offset_metadata);
        let aborted = (self.isolation == FetchIsolation::TxnCommitted).then(|| {
            log.aborted_transactions(p.fetch_offset, result.last_stable_offset)
                .into_iter()
                .map(|(producer_id, first_offset)| {
                    AbortedTransaction::default()
                        .with_producer_id(ProducerId(producer_id))
                        .with_first_offset(first_offset)
                })
                .collect()
        });
        let slice = result.info.records.filter(|s| s.size > 0);
        if self.replica_id < 0
            && let Some(s) = &slice
        {
            partition.record_fetched(u64::from(s.size));
        }
        PartitionRead {
            data: PartitionData::default()
                .with_partition_index(p.index)
                .with_high_watermark(result.high_watermark)
                .with_last_stable_offset(result.last_stable_offset)
                .with_log_start_offset(result.log_start_offset)
                .with_aborted_transactions(aborted)
                .with_preferred_read_replica(BrokerId(-1)),
            slice,
        }
    }

    /// Whether enough new bytes arrived since the first read (Kafka's DelayedFetch
    /// tryComplete), from offset metadata alone; a partition gone or moved completes it.
    fn satisfied(&self) -> bool {
        let mut available = 0i64;
        for topic in &self.topics {
            for p in &topic.partitions {
                let Ok(partition) = &p.target else { continue };
                let log = partition.log();
                if log.is_offline()
                    || log.is_closed()
                    || (!partition.is_leader() && !self.from_follower)
                {
                    return true;
                }
                let start = *lock(&p.start);
                available += partition
                    .bytes_available(start, p.fetch_offset, self.isolation)
                    .min(i64::from(p.max_bytes.max(0)));
                if available >= i64::from(self.min_bytes) {
                    return true;
                }
            }
        }
        false
    }

    fn keys(&self) -> Vec<TopicPartition> {
        self.topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|p| p.target.is_ok())
                    .map(|p| TopicPartition::new(t.name.clone(), p.index))
            })
            .collect()
    }

    /// The response for `reads`, with each file slice as a sendfile placeholder. Runs
    /// inside [`PendingReply::send`] so the placeholders register on its thread.
    fn response(&self, reads: Vec<Vec<PartitionRead>>, throttle_time_ms: i32) -> ResponseKind {
        let responses = self
            .topics
            .iter()
            .zip(reads)
            .map(|(topic, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|read| {
                        let records = match read.slice {
                            Some(s) => placeholder_for(FileRegion {
                                len: s.size as usize,
                                file: s.file,
                                position: s.position,
                            })
                            .unwrap_or_default(),
                            None => Bytes::new(),
                        };
                        read.data.with_records(Some(records))
                    })
                    .collect();
                FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.name.clone())))
                    .with_topic_id(topic.topic_id)
                    .with_partitions(partitions)
            })
            .collect();
        ResponseKind::Fetch(
            FetchResponse::default()
                .with_throttle_time_ms(throttle_time_ms)
                .with_responses(responses),
        )
    }
}

/// Answers a fetch: reads again, records quotas if asked, encodes and sends.
struct FetchReply {
    reply: PendingReply,
    /// `quota(bytes) -> throttle_ms`, only when client quotas are configured.
    quota: Option<Py<PyAny>>,
}

impl FetchReply {
    fn answer(self, spec: &FetchSpec, reads: Vec<Vec<PartitionRead>>, total: i64) {
        let throttle_ms = match &self.quota {
            Some(quota) => Python::attach(|py| {
                quota
                    .call1(py, (total,))
                    .and_then(|r| r.extract::<i32>(py))
                    .unwrap_or(0)
            }),
            None => 0,
        };
        if throttle_ms > 0 {
            self.reply.throttle(throttle_ms as u64);
        }
        self.reply.send(|| spec.response(reads, throttle_ms));
    }
}

struct DelayedFetch {
    state: OperationState,
    delay_ms: u64,
    spec: FetchSpec,
    reply: Mutex<Option<FetchReply>>,
}

impl DelayedOperation for DelayedFetch {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        self.spec.satisfied() && self.force_complete()
    }

    fn on_complete(&self) {
        if let Some(reply) = lock(&self.reply).take() {
            let (reads, total, _) = self.spec.read();
            reply.answer(&self.spec, reads, total);
        }
    }

    fn on_expiration(&self) {}
}

/// One partition of an acks=all produce still waiting for the ISR.
struct PendingPartition {
    topic: usize,
    partition: usize,
    target: Arc<Partition>,
    required_offset: i64,
    /// The partition's outcome once known: 0, or the error it is answered with.
    result: Option<i16>,
}

/// Who hears the outcome of a [`DelayedProduce`].
enum ProduceCompletion {
    /// A Produce request: the response, its failed partitions marked, is sent.
    Reply(PendingReply, ProduceResponse),
    /// A coordinator's own append (Kafka's appendRecords `responseCallback`): called once
    /// with each pending partition's error code, in order.
    Callback(Box<dyn FnOnce(Vec<i16>) + Send>),
}

/// Kafka's DelayedProduce: acks=all appends waiting until their partitions' high
/// watermarks reach them, the ISR shrinks below `min.insync.replicas`, leadership moves
/// or `delay_ms` passes.
struct DelayedProduce {
    state: OperationState,
    delay_ms: u64,
    pending: Mutex<Vec<PendingPartition>>,
    completion: Mutex<Option<ProduceCompletion>>,
}

impl DelayedProduce {
    fn new(delay_ms: u64, pending: Vec<PendingPartition>, completion: ProduceCompletion) -> Self {
        Self {
            state: OperationState::new(),
            delay_ms,
            pending: Mutex::new(pending),
            completion: Mutex::new(Some(completion)),
        }
    }
}

impl DelayedOperation for DelayedProduce {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        let mut pending = lock(&self.pending);
        let mut all_done = true;
        for p in pending.iter_mut().filter(|p| p.result.is_none()) {
            p.result = p
                .target
                .check_enough_replicas_reach_offset(p.required_offset);
            all_done &= p.result.is_some();
        }
        drop(pending);
        all_done && self.force_complete()
    }

    fn on_expiration(&self) {
        for p in lock(&self.pending).iter_mut() {
            p.result
                .get_or_insert(ResponseError::RequestTimedOut.code());
        }
    }

    fn on_complete(&self) {
        let Some(completion) = lock(&self.completion).take() else {
            return;
        };
        let pending = std::mem::take(&mut *lock(&self.pending));
        // Completed without a result (purgatory shutdown): the wait did not succeed.
        let code = |p: &PendingPartition| {
            p.result
                .unwrap_or_else(|| ResponseError::RequestTimedOut.code())
        };
        match completion {
            ProduceCompletion::Reply(reply, mut response) => {
                for p in &pending {
                    let code = code(p);
                    if code == 0 {
                        continue;
                    }
                    if let Some(slot) = response
                        .responses
                        .get_mut(p.topic)
                        .and_then(|t| t.partition_responses.get_mut(p.partition))
                    {
                        slot.error_code = code;
                        slot.base_offset = -1;
                    }
                }
                reply.send(|| ResponseKind::Produce(response));
            }
            ProduceCompletion::Callback(done) => done(pending.iter().map(code).collect()),
        }
    }
}

/// Python face of [`Watchers`]: the broker's Rust fetch and produce purgatories.
#[pyclass(frozen, name = "DelayedOperations", module = "kafkars._core")]
pub(crate) struct DelayedOperations {
    pub(crate) inner: Arc<Watchers>,
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

/// Why a partition is answered without an append: code, message, record errors.
type PlannedError = (i16, Option<String>, Vec<(i32, String)>);

/// A partition's append, resolved off the Python objects.
struct AppendSpec {
    index: i32,
    target: Result<Arc<Partition>, PlannedError>,
    records: Bytes,
}

fn partition_error(
    index: i32,
    code: i16,
    message: Option<String>,
    record_errors: Vec<(i32, String)>,
) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_error_code(code)
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
        .with_error_message(message.map(StrBytes::from_string))
        .with_record_errors(
            record_errors
                .into_iter()
                .map(|(batch_index, message)| {
                    BatchIndexAndErrorMessage::default()
                        .with_batch_index(batch_index)
                        .with_batch_index_error_message(Some(StrBytes::from_string(message)))
                })
                .collect(),
        )
}

#[pymethods]
impl DelayedOperations {
    #[new]
    #[pyo3(signature = (purge_interval = DEFAULT_PURGE_INTERVAL))]
    fn new(purge_interval: usize) -> Self {
        Self {
            inner: Arc::new(Watchers::new(purge_interval)),
        }
    }

    /// Answers `request` (a Fetch) now, or once `min_bytes` are there or `max_wait_ms`
    /// passes. `topics`: `[(name, topic_id, [(partition_index, Partition | None,
    /// error_code, fetch_offset, partition_max_bytes, preferred_read_replica,
    /// current_leader_epoch, last_fetched_epoch)])]` in request order (the epochs -1 when
    /// the request has none; a follower's last fetched epoch gets the diverging epoch);
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
        let isolation = if replica_id >= 0 {
            FetchIsolation::LogEnd
        } else if isolation_level == 1 {
            FetchIsolation::TxnCommitted
        } else {
            FetchIsolation::HighWatermark
        };
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
                                FetchPartition {
                                    index,
                                    target: handle.map(|h| Arc::clone(&h.get().inner)).ok_or(code),
                                    fetch_offset,
                                    max_bytes,
                                    preferred_read_replica: preferred,
                                    current_leader_epoch,
                                    last_fetched_epoch,
                                    start: Mutex::new(None),
                                }
                            },
                        )
                        .collect(),
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let spec = FetchSpec {
            replica_id,
            from_follower: replica_id < 0 && request.api_version() >= 11,
            isr_changes: Arc::clone(&self.inner.isr_changes),
            min_bytes,
            max_bytes: if request.api_version() >= 3 {
                max_bytes
            } else {
                i32::MAX
            },
            isolation,
            topics,
        };
        let mut reply = request.take_reply()?;
        let watchers = Arc::clone(&self.inner);
        py.detach(move || {
            let (reads, total, had_error) = spec.read();
            let keys = spec.keys();
            if max_wait_ms <= 0
                || total >= i64::from(spec.min_bytes)
                || had_error
                || keys.is_empty()
            {
                return FetchReply { reply, quota }.answer(&spec, reads, total);
            }
            drop(reads);
            reply.mark_waiting();
            let op = Arc::new(DelayedFetch {
                state: OperationState::new(),
                delay_ms: max_wait_ms as u64,
                spec,
                reply: Mutex::new(Some(FetchReply { reply, quota })),
            });
            watchers.fetch.try_complete_else_watch(&op, &keys);
        });
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
        let topics: Vec<(String, Vec<AppendSpec>)> = topics
            .into_iter()
            .map(|(name, partitions)| {
                let specs = partitions
                    .into_iter()
                    .map(|(index, handle, code, message, record_errors, records)| {
                        let records = records.map_or_else(Bytes::new, |r| r.get().bytes().clone());
                        let target = match handle {
                            Some(h) if code == 0 => Ok(Arc::clone(&h.get().inner)),
                            _ => Err((code, message, record_errors)),
                        };
                        AppendSpec {
                            index,
                            target,
                            records,
                        }
                    })
                    .collect();
                (name, specs)
            })
            .collect();
        let mut reply = request.take_reply()?;
        if throttle_time_ms > 0 {
            reply.throttle(throttle_time_ms as u64);
        }
        let watchers = Arc::clone(&self.inner);
        py.detach(move || {
            let mut pending = Vec::new();
            let responses = topics
                .into_iter()
                .enumerate()
                .map(|(t, (name, specs))| {
                    let partitions = specs
                        .into_iter()
                        .enumerate()
                        .map(|(i, spec)| {
                            let partition = match spec.target {
                                Ok(partition) => partition,
                                Err((code, message, errors)) => {
                                    return partition_error(spec.index, code, message, errors);
                                }
                            };
                            // Offsets go into copies of the batch headers; the records
                            // are written from the request buffer itself.
                            match partition.append_records_to_leader(&spec.records, acks) {
                                Ok(info) => {
                                    if acks == -1 {
                                        pending.push(PendingPartition {
                                            topic: t,
                                            partition: i,
                                            target: Arc::clone(&partition),
                                            required_offset: info.last_offset + 1,
                                            result: None,
                                        });
                                    }
                                    PartitionProduceResponse::default()
                                        .with_index(spec.index)
                                        .with_base_offset(info.first_offset)
                                        .with_log_append_time_ms(info.log_append_time)
                                        .with_log_start_offset(info.log_start_offset)
                                }
                                Err(e) => {
                                    let code = e.kafka_error_code();
                                    if let LogError::RecordValidation {
                                        message,
                                        record_errors,
                                        ..
                                    } = e
                                    {
                                        // Kafka's RecordValidationException: the batch
                                        // refused for the records named, answered with
                                        // the partition's log start offset.
                                        return partition_error(
                                            spec.index,
                                            code,
                                            Some(message),
                                            record_errors,
                                        )
                                        .with_log_start_offset(partition.log().log_start_offset());
                                    }
                                    // Kafka words only record validation failures
                                    // (InvalidRecordException); other append errors
                                    // answer with the code alone.
                                    let validation = [
                                        ResponseError::InvalidRecord.code(),
                                        ResponseError::InvalidTimestamp.code(),
                                    ];
                                    let message = validation.contains(&code).then(|| e.to_string());
                                    partition_error(spec.index, code, message, Vec::new())
                                }
                            }
                        })
                        .collect();
                    TopicProduceResponse::default()
                        .with_name(TopicName(StrBytes::from_string(name)))
                        .with_partition_responses(partitions)
                })
                .collect();
            if acks == 0 {
                // The client expects no answer; errors reach it as metadata refreshes.
                reply.send_no_response();
                return;
            }
            let response = ProduceResponse::default()
                .with_responses(responses)
                .with_throttle_time_ms(throttle_time_ms);
            if pending.is_empty() {
                reply.send(|| ResponseKind::Produce(response));
                return;
            }
            reply.mark_waiting();
            let keys: Vec<TopicPartition> = pending
                .iter()
                .map(|p| p.target.topic_partition().clone())
                .collect();
            let op = Arc::new(DelayedProduce::new(
                timeout_ms.max(0) as u64,
                pending,
                ProduceCompletion::Reply(reply, response),
            ));
            watchers.produce.try_complete_else_watch(&op, &keys);
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
        let watchers = Arc::clone(&self.inner);
        py.detach(|| watchers.delay_produce(target, required_offset, timeout_ms, done));
    }

    /// ISR expansions since the last call: `[(topic, partition, isr)]`.
    fn take_isr_changes(&self) -> Vec<(String, i32, Vec<i32>)> {
        std::mem::take(&mut *lock(&self.inner.isr_changes))
            .into_iter()
            .map(|(tp, isr)| (tp.topic, tp.partition, isr))
            .collect()
    }

    /// Fetches waiting (Kafka's NumDelayedOperations of the Fetch purgatory).
    #[getter]
    fn delayed_fetches(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.fetch.num_delayed())
    }

    /// Produces waiting for the ISR.
    #[getter]
    fn delayed_produces(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.produce.num_delayed())
    }

    /// Re-checks everything watching `topic`-`partition` (after it was deleted or
    /// changed leader, so waiting requests are answered now).
    fn check_and_complete(&self, py: Python<'_>, topic: String, partition: i32) {
        let tp = TopicPartition::new(topic, partition);
        py.detach(|| {
            self.inner.produce.check_and_complete(&tp);
            self.inner.fetch.check_and_complete(&tp);
        });
    }

    /// Answers every waiting operation now and stops the timers. Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| {
            self.inner.fetch.shutdown();
            self.inner.produce.shutdown();
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use kafkars_record::{NewRecord, RecordBatchBuilder};
    use kafkars_storage::{Log, LogConfig, MockClock};

    use super::*;

    const WAIT: Duration = Duration::from_secs(5);

    fn batch(n: usize) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new();
        for i in 0..n {
            b.append(NewRecord::with_value(i as i64, b"v".to_vec()));
        }
        b.build().unwrap()
    }

    /// A partition led by broker 1 whose changes reach `watchers`, as the broker wires it.
    fn partition(
        dir: &std::path::Path,
        watchers: &Arc<Watchers>,
        clock: Arc<MockClock>,
    ) -> Arc<Partition> {
        let tp = TopicPartition::new("__consumer_offsets", 0);
        let (log, _) = Log::open(
            &dir.join(tp.dir_name()),
            tp,
            LogConfig::default(),
            0,
            0,
            true,
            clock.clone(),
        )
        .unwrap();
        let listener: Arc<dyn PartitionListener> = watchers.clone();
        Arc::new(Partition::new(log, 1, clock, Some(listener)))
    }

    /// Parks an append ending at `required_offset`; the receiver gets its outcome.
    fn delay(
        watchers: &Watchers,
        p: &Arc<Partition>,
        required_offset: i64,
        timeout_ms: i64,
    ) -> mpsc::Receiver<Vec<i16>> {
        let (tx, rx) = mpsc::channel();
        let done = Box::new(move |codes: Vec<i16>| tx.send(codes).unwrap());
        watchers.delay_produce(Arc::clone(p), required_offset, timeout_ms, done);
        rx
    }

    #[test]
    fn a_coordinator_append_completes_when_the_isr_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let watchers = Arc::new(Watchers::new(DEFAULT_PURGE_INTERVAL));
        let p = partition(dir.path(), &watchers, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(3), -1).unwrap();
        let rx = delay(&watchers, &p, info.last_offset + 1, 60_000);
        assert!(
            rx.try_recv().is_err(),
            "the follower has not fetched the append"
        );
        assert_eq!(watchers.produce.num_delayed(), 1);
        p.update_follower_fetch_state(2, 2).unwrap();
        assert!(rx.try_recv().is_err(), "the follower has part of it");
        // The follower's fetch moves the high watermark: its thread runs the callback.
        p.update_follower_fetch_state(2, 3).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), vec![0]);
        assert_eq!(watchers.produce.num_delayed(), 0);
        watchers.produce.shutdown();
    }

    #[test]
    fn an_append_the_isr_already_has_completes_on_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let watchers = Arc::new(Watchers::new(DEFAULT_PURGE_INTERVAL));
        let p = partition(dir.path(), &watchers, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1], vec![1]);
        let info = p.append_records_to_leader(&batch(2), -1).unwrap();
        let rx = delay(&watchers, &p, info.last_offset + 1, 60_000);
        assert_eq!(rx.try_recv().unwrap(), vec![0]);
        watchers.produce.shutdown();
    }

    #[test]
    fn a_coordinator_append_fails_when_leadership_moves_or_time_runs_out() {
        let dir = tempfile::tempdir().unwrap();
        let watchers = Arc::new(Watchers::new(DEFAULT_PURGE_INTERVAL));
        let p = partition(dir.path(), &watchers, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        let timed_out = delay(&watchers, &p, info.last_offset + 1, 20);
        assert_eq!(
            timed_out.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::RequestTimedOut.code()]
        );
        let moved = delay(&watchers, &p, info.last_offset + 1, 60_000);
        p.make_follower(2, 1, vec![1, 2], vec![2]);
        // What the replica manager does after a leadership change.
        watchers.produce.check_and_complete(p.topic_partition());
        assert_eq!(
            moved.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::NotLeaderOrFollower.code()]
        );
        watchers.produce.shutdown();
    }

    #[test]
    fn an_isr_shrunk_below_min_insync_replicas_fails_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let watchers = Arc::new(Watchers::new(DEFAULT_PURGE_INTERVAL));
        let p = partition(dir.path(), &watchers, clock.clone());
        p.set_min_insync_replicas(2);
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        let rx = delay(&watchers, &p, info.last_offset + 1, 60_000);
        // The follower stops fetching and leaves the ISR: the high watermark reaches
        // the append with the leader alone, short of min.insync.replicas.
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::NotEnoughReplicasAfterAppend.code()]
        );
        watchers.produce.shutdown();
    }
}
