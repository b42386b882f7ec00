//! Replica fetchers (Kafka's ReplicaFetcherManager and ReplicaFetcherThread): the byte
//! path of replication, all in Rust and without the GIL.
//!
//! One thread per (leader broker, fetcher id) keeps a connection to the leader. A
//! partition added to it first truncates its log to where the leader's log agrees with
//! it (OffsetForLeaderEpoch, KIP-101), then fetches from its log end with
//! `replica_id = broker.id`, appends the leader's batches as they are and takes the
//! leader's high watermark. Python only says which partitions follow which leader.
//!
//! The connection is `kafkars-client`'s, speaking the inter-broker listener's security
//! protocol: TLS for SSL and SASL_SSL, and a SASL login before the first request for SASL_*.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, OffsetForLeaderEpochRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkars_record::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use kafkars_storage::{Partition, TopicPartition};
use pyo3::prelude::*;

use kafkars_client::{BrokerConnection, ClientError, ConnectOptions, Security};

use crate::client::PySecurity;
use crate::partition::PyPartition;

const FETCH_VERSION: i16 = 11;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 3;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The replica.fetch.* settings.
#[derive(Debug, Clone)]
struct FetcherConfig {
    broker_id: i32,
    max_wait_ms: i32,
    min_bytes: i32,
    max_bytes: i32,
    partition_max_bytes: i32,
    backoff: Duration,
    socket_timeout: Duration,
    security: Security,
}

impl FetcherConfig {
    fn connect(&self, leader: &str) -> Result<BrokerConnection, ClientError> {
        let (host, port) = leader.rsplit_once(':').unwrap_or((leader, ""));
        let port = port.parse().map_err(|_| {
            ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{leader} is not host:port"),
            ))
        })?;
        let mut options = ConnectOptions::new(
            format!("broker-{}-fetcher", self.broker_id),
            self.security.clone(),
        );
        options.timeout = self.socket_timeout;
        BrokerConnection::connect(host, port, &options)
    }
}

#[derive(Debug, Clone)]
struct PartitionFetchState {
    partition: Arc<Partition>,
    leader_epoch: i32,
    /// Truncation to the leader's log comes before the first fetch.
    truncating: bool,
    /// After an error, the partition rests until then.
    delayed_until: Option<Instant>,
}

/// What a fetcher thread and its manager share.
#[derive(Debug, Default)]
struct FetcherShared {
    partitions: Mutex<HashMap<TopicPartition, PartitionFetchState>>,
    changed: Condvar,
    stop: AtomicBool,
}

struct FetcherThread {
    shared: Arc<FetcherShared>,
    handle: Option<JoinHandle<()>>,
}

/// The bytes of `records` that form whole batches (a fetch may end inside a batch).
fn whole_batches(records: &[u8]) -> usize {
    let mut pos = 0usize;
    while records.len() - pos >= LOG_OVERHEAD {
        let length = i32::from_be_bytes([
            records[pos + 8],
            records[pos + 9],
            records[pos + 10],
            records[pos + 11],
        ]);
        let Ok(length) = usize::try_from(length) else {
            break;
        };
        let end = pos + LOG_OVERHEAD + length;
        if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD || end > records.len() {
            break;
        }
        pos = end;
    }
    pos
}

/// The fetch loop of one thread: see the module docs.
fn run_fetcher(shared: Arc<FetcherShared>, leader: String, config: FetcherConfig) {
    let mut connection: Option<BrokerConnection> = None;
    // An authentication failure is logged once, until a connection succeeds again.
    let mut refused = false;
    while !shared.stop.load(Ordering::Acquire) {
        let now = Instant::now();
        let ready: Vec<(TopicPartition, PartitionFetchState)> = {
            let guard = lock(&shared.partitions);
            let ready: Vec<_> = guard
                .iter()
                .filter(|(_, s)| s.delayed_until.is_none_or(|t| t <= now))
                .map(|(tp, s)| (tp.clone(), s.clone()))
                .collect();
            if ready.is_empty() {
                let _ = shared
                    .changed
                    .wait_timeout(guard, Duration::from_millis(100))
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            ready
        };
        if connection.is_none() {
            match config.connect(&leader) {
                Ok(c) => {
                    if refused {
                        tracing::info!(%leader, "authenticated to the leader");
                        refused = false;
                    }
                    connection = Some(c);
                }
                Err(e) if e.is_authentication() => {
                    if !refused {
                        tracing::error!(%leader, error = %e, "replica fetcher cannot authenticate to the leader (check the inter-broker listener's TLS and SASL settings); retrying");
                        refused = true;
                    }
                    pause(&shared, config.backoff);
                    continue;
                }
                Err(e) => {
                    tracing::warn!(%leader, error = %e, "replica fetcher cannot reach the leader");
                    pause(&shared, config.backoff);
                    continue;
                }
            }
        }
        let conn = connection.as_mut().expect("connected above");
        let truncating: Vec<_> = ready
            .iter()
            .filter(|(_, s)| s.truncating)
            .cloned()
            .collect();
        let result = if truncating.is_empty() {
            fetch_once(conn, &shared, &ready, &config)
        } else {
            truncate_once(conn, &shared, &truncating, &config)
        };
        if let Err(e) = result {
            tracing::warn!(%leader, error = %e, "replica fetch failed; reconnecting");
            connection = None;
            pause(&shared, config.backoff);
        }
    }
}

fn pause(shared: &FetcherShared, backoff: Duration) {
    let guard = lock(&shared.partitions);
    let _ = shared
        .changed
        .wait_timeout(guard, backoff)
        .unwrap_or_else(|e| e.into_inner());
}

/// Updates the fetcher's state of `tp` if the partition is still the same one.
fn update_state(
    shared: &FetcherShared,
    tp: &TopicPartition,
    expected: &PartitionFetchState,
    f: impl FnOnce(&mut PartitionFetchState),
) {
    if let Some(state) = lock(&shared.partitions).get_mut(tp)
        && Arc::ptr_eq(&state.partition, &expected.partition)
        && state.leader_epoch == expected.leader_epoch
    {
        f(state);
    }
}

/// Whether `tp` is still this fetcher's, in the state a request was built from. A
/// fetcher's answer is applied only under its partitions lock after this check, so once
/// the manager has moved a partition to another leader's fetcher (which takes that lock),
/// a response still in flight to the old leader can no longer truncate or append.
fn still_current(
    partitions: &HashMap<TopicPartition, PartitionFetchState>,
    tp: &TopicPartition,
    expected: &PartitionFetchState,
) -> bool {
    partitions.get(tp).is_some_and(|s| {
        Arc::ptr_eq(&s.partition, &expected.partition)
            && s.leader_epoch == expected.leader_epoch
            && s.truncating == expected.truncating
    })
}

fn delay(
    shared: &FetcherShared,
    tp: &TopicPartition,
    expected: &PartitionFetchState,
    backoff: Duration,
) {
    update_state(shared, tp, expected, |s| {
        s.delayed_until = Some(Instant::now() + backoff);
    });
}

fn group_by_topic<T>(items: impl Iterator<Item = (String, T)>) -> Vec<(String, Vec<T>)> {
    let mut topics: Vec<(String, Vec<T>)> = Vec::new();
    for (topic, item) in items {
        match topics.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, v)) => v.push(item),
            None => topics.push((topic, vec![item])),
        }
    }
    topics
}

/// Asks the leader where each partition's latest local epoch ends and truncates to it
/// (or to the high watermark when the log has no epochs yet).
fn truncate_once(
    conn: &mut BrokerConnection,
    shared: &FetcherShared,
    partitions: &[(TopicPartition, PartitionFetchState)],
    config: &FetcherConfig,
) -> Result<(), ClientError> {
    let topics = group_by_topic(partitions.iter().map(|(tp, s)| {
        let local_epoch = s.partition.log().latest_epoch().unwrap_or(-1);
        (
            tp.topic.clone(),
            OffsetForLeaderPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(s.leader_epoch)
                .with_leader_epoch(local_epoch),
        )
    }));
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(config.broker_id))
        .with_topics(
            topics
                .into_iter()
                .map(|(topic, ps)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let ResponseKind::OffsetForLeaderEpoch(response) = conn.call(
        ApiKey::OffsetForLeaderEpoch,
        OFFSET_FOR_LEADER_EPOCH_VERSION,
        &RequestKind::OffsetForLeaderEpoch(request),
    )?
    else {
        unreachable!("parse_response decodes the API asked for")
    };
    for topic in response.topics {
        for result in topic.partitions {
            let tp = TopicPartition::new(topic.topic.0.to_string(), result.partition);
            let Some((_, state)) = partitions.iter().find(|(t, _)| *t == tp) else {
                continue;
            };
            if result.error_code != 0 {
                tracing::info!(partition = %tp, error_code = result.error_code, leader_epoch = state.leader_epoch, "the leader refused OffsetForLeaderEpoch; retrying after the backoff");
                delay(shared, &tp, state, config.backoff);
                continue;
            }
            let mut guard = lock(&shared.partitions);
            if !still_current(&guard, &tp, state) {
                continue;
            }
            let log = state.partition.log();
            // Kafka's rule: without an epoch answer keep what is below the high watermark.
            let target = if result.end_offset < 0 || log.latest_epoch().is_none() {
                state.partition.high_watermark()
            } else {
                result.end_offset
            };
            match log.truncate_to(target.min(log.log_end_offset())) {
                Ok(truncated) => {
                    if truncated {
                        tracing::info!(partition = %tp, offset = target, "truncated to the leader's log");
                    }
                    if let Some(s) = guard.get_mut(&tp) {
                        s.truncating = false;
                    }
                }
                Err(e) => {
                    tracing::error!(partition = %tp, error = %e, "cannot truncate the follower log");
                    drop(guard);
                    delay(shared, &tp, state, config.backoff);
                }
            }
        }
    }
    Ok(())
}

/// One Fetch from the leader for every ready partition, appended as the follower.
fn fetch_once(
    conn: &mut BrokerConnection,
    shared: &FetcherShared,
    partitions: &[(TopicPartition, PartitionFetchState)],
    config: &FetcherConfig,
) -> Result<(), ClientError> {
    let fetch_offsets: HashMap<&TopicPartition, i64> = partitions
        .iter()
        .map(|(tp, s)| (tp, s.partition.log().log_end_offset()))
        .collect();
    let topics = group_by_topic(partitions.iter().map(|(tp, s)| {
        (
            tp.topic.clone(),
            FetchPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(s.leader_epoch)
                .with_fetch_offset(fetch_offsets[tp])
                .with_log_start_offset(s.partition.log().log_start_offset())
                .with_partition_max_bytes(config.partition_max_bytes),
        )
    }));
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(config.broker_id))
        .with_max_wait_ms(config.max_wait_ms)
        .with_min_bytes(config.min_bytes)
        .with_max_bytes(config.max_bytes)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            topics
                .into_iter()
                .map(|(topic, ps)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let ResponseKind::Fetch(response) =
        conn.call(ApiKey::Fetch, FETCH_VERSION, &RequestKind::Fetch(request))?
    else {
        unreachable!("parse_response decodes the API asked for")
    };
    for topic in response.responses {
        for data in topic.partitions {
            let tp = TopicPartition::new(topic.topic.0.to_string(), data.partition_index);
            let Some((_, state)) = partitions.iter().find(|(t, _)| *t == tp) else {
                continue;
            };
            let partition = &state.partition;
            let guard = lock(&shared.partitions);
            // Moved to another fetcher, truncated or appended to meanwhile: this answer
            // is stale (appending it could keep a deposed leader's divergent records).
            if !still_current(&guard, &tp, state)
                || partition.log().log_end_offset() != fetch_offsets[&tp]
            {
                continue;
            }
            if data.error_code == ResponseError::OffsetOutOfRange.code() {
                handle_out_of_range(partition, data.log_start_offset, data.high_watermark);
                continue;
            }
            if data.error_code != 0 {
                drop(guard);
                // Not the leader any more, or an epoch mismatch: wait for LeaderAndIsr.
                tracing::info!(partition = %tp, error_code = data.error_code, leader_epoch = state.leader_epoch, "the leader refused the fetch; retrying after the backoff");
                delay(shared, &tp, state, config.backoff);
                continue;
            }
            let records = data.records.unwrap_or_default();
            let whole = whole_batches(&records);
            if whole > 0
                && let Err(e) = partition.append_records_as_follower(&records[..whole])
            {
                drop(guard);
                tracing::error!(partition = %tp, error = %e, "follower append failed");
                delay(shared, &tp, state, config.backoff);
                continue;
            }
            partition.update_follower_high_watermark(data.high_watermark);
            if data.log_start_offset > partition.log().log_start_offset() {
                let _ = partition
                    .log()
                    .maybe_increment_log_start_offset(data.log_start_offset);
            }
        }
    }
    Ok(())
}

/// The follower's fetch offset is outside the leader's log: start over at the leader's
/// log start if the follower is behind it, else cut back to the leader's high watermark.
fn handle_out_of_range(partition: &Partition, leader_log_start: i64, leader_high_watermark: i64) {
    let log = partition.log();
    let result = if log.log_end_offset() < leader_log_start {
        log.truncate_fully_and_start_at(leader_log_start)
    } else {
        log.truncate_to(leader_high_watermark.max(0)).map(|_| ())
    };
    if let Err(e) = result {
        tracing::error!(partition = %partition.topic_partition(), error = %e, "cannot reset the follower log");
    }
}

/// Python face: which partitions follow which leader.
#[pyclass(frozen, name = "ReplicaFetcherManager", module = "kafkars._core")]
pub(crate) struct ReplicaFetcherManager {
    config: FetcherConfig,
    num_fetchers: usize,
    /// By (leader broker id, leader address, fetcher id).
    fetchers: Mutex<HashMap<(i32, String, usize), FetcherThread>>,
}

impl ReplicaFetcherManager {
    fn fetcher_id(&self, tp: &TopicPartition) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tp.hash(&mut h);
        (h.finish() as usize) % self.num_fetchers.max(1)
    }

    fn remove(&self, tp: &TopicPartition) {
        let mut fetchers = lock(&self.fetchers);
        for fetcher in fetchers.values() {
            if lock(&fetcher.shared.partitions).remove(tp).is_some() {
                fetcher.shared.changed.notify_all();
            }
        }
        // A fetcher left with nothing to fetch stops (its thread ends on its own).
        fetchers.retain(|_, fetcher| {
            let idle = lock(&fetcher.shared.partitions).is_empty();
            if idle {
                fetcher.shared.stop.store(true, Ordering::Release);
                fetcher.shared.changed.notify_all();
            }
            !idle
        });
    }

    fn follow(
        &self,
        leader_id: i32,
        host: String,
        port: u16,
        partitions: Vec<(Arc<Partition>, i32)>,
    ) {
        let address = format!("{host}:{port}");
        for (partition, leader_epoch) in partitions {
            let tp = partition.topic_partition().clone();
            self.remove(&tp);
            let key = (leader_id, address.clone(), self.fetcher_id(&tp));
            let mut fetchers = lock(&self.fetchers);
            let fetcher = fetchers.entry(key.clone()).or_insert_with(|| {
                let shared = Arc::new(FetcherShared::default());
                let config = self.config.clone();
                let thread_shared = Arc::clone(&shared);
                let leader = address.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("ReplicaFetcherThread-{}-{}", key.2, leader_id))
                    .spawn(move || run_fetcher(thread_shared, leader, config))
                    .expect("spawn replica fetcher thread");
                FetcherThread {
                    shared,
                    handle: Some(handle),
                }
            });
            tracing::info!(partition = %tp, leader = leader_id, leader_epoch, "fetching from the leader");
            lock(&fetcher.shared.partitions).insert(
                tp,
                PartitionFetchState {
                    partition,
                    leader_epoch,
                    truncating: true,
                    delayed_until: None,
                },
            );
            fetcher.shared.changed.notify_all();
        }
    }
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
        Ok(Self {
            config: FetcherConfig {
                broker_id,
                max_wait_ms,
                min_bytes,
                max_bytes,
                partition_max_bytes,
                backoff: Duration::from_millis(backoff_ms),
                // The socket waits at least as long as the leader may hold a fetch.
                socket_timeout: Duration::from_millis(
                    socket_timeout_ms.max(max_wait_ms.max(0) as u64 + 5_000),
                ),
                security,
            },
            num_fetchers: num_replica_fetchers.max(1),
            fetchers: Mutex::new(HashMap::new()),
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
        let partitions: Vec<(Arc<Partition>, i32)> = partitions
            .iter()
            .map(|(handle, epoch)| (Arc::clone(&handle.get().inner), *epoch))
            .collect();
        // Without the GIL: moving a partition waits for its old fetcher's append to end,
        // and what that append completes (a fetch with a Python quota callback) may need it.
        py.detach(|| self.follow(leader_id, host, port, partitions));
        Ok(())
    }

    /// Stops fetching these `(topic, partition)`s (this broker leads them now, or they
    /// were deleted).
    fn remove_partitions(&self, py: Python<'_>, partitions: Vec<(String, i32)>) {
        py.detach(|| {
            for (topic, partition) in partitions {
                self.remove(&TopicPartition::new(topic, partition));
            }
        });
    }

    /// `[(topic, partition, leader_id, fetch_offset, truncating)]` being fetched.
    fn fetch_states(&self) -> Vec<(String, i32, i32, i64, bool)> {
        let fetchers = lock(&self.fetchers);
        let mut out = Vec::new();
        for ((leader_id, _, _), fetcher) in fetchers.iter() {
            for (tp, s) in lock(&fetcher.shared.partitions).iter() {
                out.push((
                    tp.topic.clone(),
                    tp.partition,
                    *leader_id,
                    s.partition.log().log_end_offset(),
                    s.truncating,
                ));
            }
        }
        out.sort();
        out
    }

    /// Stops every fetcher thread and waits for them. Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        let fetchers: Vec<FetcherThread> = lock(&self.fetchers).drain().map(|(_, f)| f).collect();
        py.detach(|| {
            for mut fetcher in fetchers {
                fetcher.shared.stop.store(true, Ordering::Release);
                fetcher.shared.changed.notify_all();
                if let Some(handle) = fetcher.handle.take() {
                    let _ = handle.join();
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_batches_stops_before_a_cut_batch() {
        let mut records = Vec::new();
        for _ in 0..2 {
            let mut batch = vec![0u8; RECORD_BATCH_OVERHEAD + 10];
            let length = (batch.len() - LOG_OVERHEAD) as i32;
            batch[8..12].copy_from_slice(&length.to_be_bytes());
            records.extend_from_slice(&batch);
        }
        let one = RECORD_BATCH_OVERHEAD + 10;
        assert_eq!(whole_batches(&records), 2 * one);
        assert_eq!(whole_batches(&records[..2 * one - 1]), one);
        assert_eq!(whole_batches(&records[..5]), 0);
    }
}
