//! Replica fetchers (Kafka's ReplicaFetcherManager and ReplicaFetcherThread): the byte
//! path of replication.
//!
//! One thread per (leader broker, fetcher id) keeps a connection to the leader. A
//! partition added to it first truncates its log to where the leader's log agrees with
//! it (OffsetForLeaderEpoch, KIP-101), then fetches from its log end with
//! `replica_id = broker.id`, appends the leader's batches as they are and takes the
//! leader's high watermark. The caller only says which partitions follow which leader.
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
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, OffsetForLeaderEpochRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkars_client::{BrokerConnection, ClientError, ConnectOptions, Security};
use kafkars_record::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use kafkars_storage::{LogError, Partition, TopicPartition};

use crate::lock;

const FETCH_VERSION: i16 = 11;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 3;

/// The replica.fetch.* settings.
#[derive(Debug, Clone)]
pub struct FetcherConfig {
    /// This broker, the `replica_id` of its fetches.
    pub broker_id: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    /// The pause after an error (replica.fetch.backoff.ms).
    pub backoff: Duration,
    pub socket_timeout: Duration,
    /// The inter-broker listener's security protocol and credentials.
    pub security: Security,
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
            match truncate_to_leader(&state.partition, result.end_offset) {
                Ok(truncated) => {
                    if let Some(offset) = truncated {
                        tracing::info!(partition = %tp, offset, "truncated to the leader's log");
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
            match apply_fetched(partition, &data) {
                Fetched::Appended | Fetched::Reset => {}
                Fetched::Refused(error_code) => {
                    drop(guard);
                    // Not the leader any more, or an epoch mismatch: wait for LeaderAndIsr.
                    tracing::info!(partition = %tp, error_code, leader_epoch = state.leader_epoch, "the leader refused the fetch; retrying after the backoff");
                    delay(shared, &tp, state, config.backoff);
                }
                Fetched::AppendFailed(e) => {
                    drop(guard);
                    tracing::error!(partition = %tp, error = %e, "follower append failed");
                    delay(shared, &tp, state, config.backoff);
                }
            }
        }
    }
    Ok(())
}

/// Truncates a follower's log to where the leader says its latest epoch ends
/// (`epoch_end_offset`, -1 when unknown); the offset truncated to, if anything went.
fn truncate_to_leader(
    partition: &Partition,
    epoch_end_offset: i64,
) -> Result<Option<i64>, LogError> {
    let log = partition.log();
    // Kafka's rule: without an epoch answer keep what is below the high watermark.
    let target = if epoch_end_offset < 0 || log.latest_epoch().is_none() {
        partition.high_watermark()
    } else {
        epoch_end_offset
    };
    let target = target.min(log.log_end_offset());
    Ok(log.truncate_to(target)?.then_some(target))
}

/// What the leader's answer for one partition did to the follower.
#[derive(Debug)]
enum Fetched {
    /// Its whole batches appended, the high watermark and log start taken.
    Appended,
    /// Out of range: the log started over or was cut back.
    Reset,
    /// The leader's error code.
    Refused(i16),
    AppendFailed(LogError),
}

/// Applies one partition of the leader's Fetch response to the follower's log.
fn apply_fetched(partition: &Partition, data: &PartitionData) -> Fetched {
    if data.error_code == ResponseError::OffsetOutOfRange.code() {
        handle_out_of_range(partition, data.log_start_offset, data.high_watermark);
        return Fetched::Reset;
    }
    if data.error_code != 0 {
        return Fetched::Refused(data.error_code);
    }
    let records = data.records.as_deref().unwrap_or_default();
    let whole = whole_batches(records);
    if whole > 0
        && let Err(e) = partition.append_records_as_follower(&records[..whole])
    {
        return Fetched::AppendFailed(e);
    }
    partition.update_follower_high_watermark(data.high_watermark);
    if data.log_start_offset > partition.log().log_start_offset() {
        let _ = partition
            .log()
            .maybe_increment_log_start_offset(data.log_start_offset);
    }
    Fetched::Appended
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

/// One partition being fetched: `fetch_offset` is the follower's log end.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FetchState {
    pub topic_partition: TopicPartition,
    pub leader_id: i32,
    pub fetch_offset: i64,
    /// Still to truncate to the leader's log before fetching.
    pub truncating: bool,
}

/// Which partitions follow which leader, each leader's partitions fetched by up to
/// `num_replica_fetchers` threads.
#[derive(Debug)]
pub struct ReplicaFetcherManager {
    config: FetcherConfig,
    num_fetchers: usize,
    /// By (leader broker id, leader address, fetcher id).
    fetchers: Mutex<HashMap<(i32, String, usize), FetcherThread>>,
}

impl std::fmt::Debug for FetcherThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetcherThread").finish_non_exhaustive()
    }
}

impl ReplicaFetcherManager {
    pub fn new(mut config: FetcherConfig, num_replica_fetchers: usize) -> Self {
        // The socket waits at least as long as the leader may hold a fetch.
        config.socket_timeout = config.socket_timeout.max(Duration::from_millis(
            config.max_wait_ms.max(0) as u64 + 5_000,
        ));
        Self {
            config,
            num_fetchers: num_replica_fetchers.max(1),
            fetchers: Mutex::new(HashMap::new()),
        }
    }

    fn fetcher_id(&self, tp: &TopicPartition) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tp.hash(&mut h);
        (h.finish() as usize) % self.num_fetchers.max(1)
    }

    /// Stops fetching `tp` (this broker leads it now, or it was deleted).
    pub fn remove_partition(&self, tp: &TopicPartition) {
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

    /// Starts following: each `(partition, leader_epoch)` fetches from `leader_id` at
    /// `host:port`, first truncating to the leader's log. Moving a partition waits for
    /// its old fetcher's append to end.
    pub fn add_partitions(
        &self,
        leader_id: i32,
        host: &str,
        port: u16,
        partitions: Vec<(Arc<Partition>, i32)>,
    ) {
        let address = format!("{host}:{port}");
        for (partition, leader_epoch) in partitions {
            let tp = partition.topic_partition().clone();
            self.remove_partition(&tp);
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

    /// The partitions being fetched, sorted.
    pub fn fetch_states(&self) -> Vec<FetchState> {
        let fetchers = lock(&self.fetchers);
        let mut out = Vec::new();
        for ((leader_id, _, _), fetcher) in fetchers.iter() {
            for (tp, s) in lock(&fetcher.shared.partitions).iter() {
                out.push(FetchState {
                    topic_partition: tp.clone(),
                    leader_id: *leader_id,
                    fetch_offset: s.partition.log().log_end_offset(),
                    truncating: s.truncating,
                });
            }
        }
        out.sort();
        out
    }

    /// Stops every fetcher thread and waits for them. Idempotent.
    pub fn shutdown(&self) {
        let fetchers: Vec<FetcherThread> = lock(&self.fetchers).drain().map(|(_, f)| f).collect();
        for mut fetcher in fetchers {
            fetcher.shared.stop.store(true, Ordering::Release);
            fetcher.shared.changed.notify_all();
            if let Some(handle) = fetcher.handle.take() {
                let _ = handle.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafkars_record::{NewRecord, RecordBatchBuilder};
    use kafkars_storage::{Log, LogConfig, MockClock};

    use super::*;

    /// `n` records from `base_offset`, written by a leader at `epoch` (-1: none).
    fn batch(base_offset: i64, n: usize, epoch: i32) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new()
            .base_offset(base_offset)
            .partition_leader_epoch(epoch);
        for i in 0..n {
            b.append(NewRecord::with_value(i as i64, b"v".to_vec()));
        }
        b.build().unwrap()
    }

    /// `t`-0 on broker 2, following broker 1 at epoch 0.
    fn follower(dir: &std::path::Path) -> Arc<Partition> {
        let tp = TopicPartition::new("t", 0);
        let clock = Arc::new(MockClock::new(0));
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
        let p = Arc::new(Partition::new(log, 2, clock, None));
        p.make_follower(1, 0, vec![1, 2], vec![1, 2]);
        p
    }

    fn data(error_code: i16, high_watermark: i64, log_start_offset: i64) -> PartitionData {
        PartitionData::default()
            .with_error_code(error_code)
            .with_high_watermark(high_watermark)
            .with_log_start_offset(log_start_offset)
    }

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

    #[test]
    fn a_fetched_response_appends_whole_batches_and_takes_the_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        // Two batches and the start of a third, cut by the leader's size limit.
        let mut records = batch(0, 2, 0);
        records.extend(batch(2, 3, 0));
        let third = batch(5, 1, 0);
        records.extend(&third[..third.len() / 2]);
        let response = data(0, 4, 1).with_records(Some(Bytes::from(records)));
        assert!(matches!(apply_fetched(&p, &response), Fetched::Appended));
        assert_eq!(
            p.log().log_end_offset(),
            5,
            "the cut batch waits for the next fetch"
        );
        assert_eq!(p.high_watermark(), 4);
        assert_eq!(
            p.log().log_start_offset(),
            1,
            "the leader's log start is taken"
        );
        // The leader's high watermark beyond the follower's log end is capped by it.
        let response = data(0, 9, 1).with_records(Some(Bytes::new()));
        assert!(matches!(apply_fetched(&p, &response), Fetched::Appended));
        assert_eq!(p.high_watermark(), 5);
    }

    #[test]
    fn a_refused_fetch_leaves_the_log_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        let code = ResponseError::FencedLeaderEpoch.code();
        let response = data(code, 3, 0).with_records(Some(Bytes::from(batch(0, 3, 0))));
        assert!(matches!(apply_fetched(&p, &response), Fetched::Refused(c) if c == code));
        assert_eq!(p.log().log_end_offset(), 0);
    }

    #[test]
    fn out_of_range_behind_the_leader_starts_over_at_its_log_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        p.append_records_as_follower(&batch(0, 2, 0)).unwrap();
        // The leader deleted up to 10: what the follower has is gone there.
        let out_of_range = ResponseError::OffsetOutOfRange.code();
        assert!(matches!(
            apply_fetched(&p, &data(out_of_range, 12, 10)),
            Fetched::Reset
        ));
        assert_eq!(p.log().log_start_offset(), 10);
        assert_eq!(p.log().log_end_offset(), 10);
    }

    #[test]
    fn out_of_range_ahead_of_the_leader_cuts_back_to_its_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        p.append_records_as_follower(&batch(0, 2, 0)).unwrap();
        p.append_records_as_follower(&batch(2, 4, 0)).unwrap();
        let out_of_range = ResponseError::OffsetOutOfRange.code();
        assert!(matches!(
            apply_fetched(&p, &data(out_of_range, 2, 0)),
            Fetched::Reset
        ));
        assert_eq!(p.log().log_start_offset(), 0);
        assert_eq!(p.log().log_end_offset(), 2);
    }

    #[test]
    fn truncation_goes_to_where_the_leaders_epoch_ends() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        p.append_records_as_follower(&batch(0, 2, 0)).unwrap();
        p.append_records_as_follower(&batch(2, 3, 1)).unwrap();
        assert_eq!(p.log().latest_epoch(), Some(1));
        // The leader's log has epoch 1 from offset 2 on no more: what the follower wrote
        // there diverged (logs are cut at batch boundaries).
        assert_eq!(truncate_to_leader(&p, 2).unwrap(), Some(2));
        assert_eq!(p.log().log_end_offset(), 2);
        assert_eq!(p.log().latest_epoch(), Some(0));
        // An end beyond the log keeps it whole.
        assert_eq!(truncate_to_leader(&p, 8).unwrap(), None);
        assert_eq!(p.log().log_end_offset(), 2);
    }

    #[test]
    fn without_an_epoch_answer_truncation_keeps_what_the_high_watermark_covers() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        p.append_records_as_follower(&batch(0, 1, 0)).unwrap();
        p.append_records_as_follower(&batch(1, 3, 0)).unwrap();
        p.update_follower_high_watermark(1);
        // The leader knows no end for the epoch asked (-1).
        assert_eq!(truncate_to_leader(&p, -1).unwrap(), Some(1));
        assert_eq!(p.log().log_end_offset(), 1);
    }

    #[test]
    fn a_log_without_epochs_truncates_to_the_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        // Batches from before leader epochs (-1): nothing to ask the leader about.
        p.append_records_as_follower(&batch(0, 2, -1)).unwrap();
        p.append_records_as_follower(&batch(2, 2, -1)).unwrap();
        assert_eq!(p.log().latest_epoch(), None);
        p.update_follower_high_watermark(2);
        assert_eq!(truncate_to_leader(&p, 4).unwrap(), Some(2));
        assert_eq!(p.log().log_end_offset(), 2);
    }

    #[test]
    fn the_manager_tracks_which_partitions_follow_which_leader() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        let config = FetcherConfig {
            broker_id: 2,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            partition_max_bytes: 1 << 20,
            backoff: Duration::from_millis(50),
            socket_timeout: Duration::from_millis(100),
            security: Security::default(),
        };
        let manager = ReplicaFetcherManager::new(config, 2);
        assert_eq!(manager.config.socket_timeout, Duration::from_millis(5_500));
        // Nobody listens there: the partition stays in truncation, retried.
        manager.add_partitions(1, "127.0.0.1", 1, vec![(Arc::clone(&p), 0)]);
        let tp = TopicPartition::new("t", 0);
        assert_eq!(
            manager.fetch_states(),
            vec![FetchState {
                topic_partition: tp.clone(),
                leader_id: 1,
                fetch_offset: 0,
                truncating: true,
            }]
        );
        // Moved to another leader: one fetcher, the new one.
        manager.add_partitions(3, "127.0.0.1", 1, vec![(Arc::clone(&p), 1)]);
        let states = manager.fetch_states();
        assert_eq!(states.len(), 1);
        assert_eq!(states[0].leader_id, 3);
        manager.remove_partition(&tp);
        assert!(manager.fetch_states().is_empty());
        assert!(lock(&manager.fetchers).is_empty(), "an idle fetcher stops");
        manager.shutdown();
    }

    /// A leader on a free port for one follower connection: its log has epoch 0 up to
    /// offset 2, then epoch 1 to 5. Sends what it is asked (api, offset) to `seen`.
    fn leader(seen: std::sync::mpsc::Sender<(ApiKey, i64)>) -> u16 {
        use std::io::{Read, Write};

        use bytes::{BufMut, BytesMut};
        use kafka_protocol::messages::fetch_response::FetchableTopicResponse;
        use kafka_protocol::messages::offset_for_leader_epoch_response::{
            EpochEndOffset, OffsetForLeaderTopicResult,
        };
        use kafka_protocol::messages::{
            FetchResponse, OffsetForLeaderEpochResponse, RequestHeader, ResponseHeader,
        };
        use kafka_protocol::protocol::{Decodable, Encodable};

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            loop {
                let mut size = [0u8; 4];
                if stream.read_exact(&mut size).is_err() {
                    return;
                }
                let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
                stream.read_exact(&mut body).unwrap();
                let mut body = Bytes::from(body);
                let api = ApiKey::try_from(i16::from_be_bytes([body[0], body[1]])).unwrap();
                let version = i16::from_be_bytes([body[2], body[3]]);
                let header =
                    RequestHeader::decode(&mut body, api.request_header_version(version)).unwrap();
                let response = match RequestKind::decode(api, &mut body, version).unwrap() {
                    RequestKind::OffsetForLeaderEpoch(r) => {
                        let asked = &r.topics[0].partitions[0];
                        assert_eq!(asked.current_leader_epoch, 1);
                        let _ = seen.send((api, i64::from(asked.leader_epoch)));
                        // Epoch 0 ends where epoch 1 starts.
                        let end = EpochEndOffset::default()
                            .with_leader_epoch(asked.leader_epoch)
                            .with_end_offset(if asked.leader_epoch == 0 { 2 } else { 5 });
                        ResponseKind::OffsetForLeaderEpoch(
                            OffsetForLeaderEpochResponse::default().with_topics(vec![
                                OffsetForLeaderTopicResult::default()
                                    .with_topic(r.topics[0].topic.clone())
                                    .with_partitions(vec![end]),
                            ]),
                        )
                    }
                    RequestKind::Fetch(r) => {
                        assert_eq!(r.replica_id, BrokerId(2));
                        let offset = r.topics[0].partitions[0].fetch_offset;
                        let _ = seen.send((api, offset));
                        let records = if offset == 2 {
                            Bytes::from(batch(2, 3, 1))
                        } else {
                            // Nothing new: a leader holds the fetch a while.
                            std::thread::sleep(Duration::from_millis(20));
                            Bytes::new()
                        };
                        let data = PartitionData::default()
                            .with_high_watermark(5)
                            .with_last_stable_offset(5)
                            .with_records(Some(records));
                        ResponseKind::Fetch(FetchResponse::default().with_responses(vec![
                            FetchableTopicResponse::default()
                                .with_topic(r.topics[0].topic.clone())
                                .with_partitions(vec![data]),
                        ]))
                    }
                    other => panic!("unexpected request {other:?}"),
                };
                let mut frame = BytesMut::new();
                frame.put_i32(0);
                ResponseHeader::default()
                    .with_correlation_id(header.correlation_id)
                    .encode(&mut frame, api.response_header_version(version))
                    .unwrap();
                response.encode(&mut frame, version).unwrap();
                let size = (frame.len() - 4) as i32;
                frame[..4].copy_from_slice(&size.to_be_bytes());
                if stream.write_all(&frame).is_err() {
                    return;
                }
            }
        });
        port
    }

    #[test]
    fn a_fetcher_truncates_its_divergent_records_then_copies_the_leaders() {
        let dir = tempfile::tempdir().unwrap();
        let p = follower(dir.path());
        // Offsets 2 and 3 were written at epoch 0 by a leader that lost them.
        p.append_records_as_follower(&batch(0, 2, 0)).unwrap();
        p.append_records_as_follower(&batch(2, 2, 0)).unwrap();
        let (tx, seen) = std::sync::mpsc::channel();
        let port = leader(tx);
        let config = FetcherConfig {
            broker_id: 2,
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes: 1 << 20,
            partition_max_bytes: 1 << 20,
            backoff: Duration::from_millis(50),
            socket_timeout: Duration::from_secs(5),
            security: Security::default(),
        };
        let manager = ReplicaFetcherManager::new(config, 1);
        manager.add_partitions(1, "127.0.0.1", port, vec![(Arc::clone(&p), 1)]);
        let wait = Duration::from_secs(10);
        // Where does my latest epoch (0) end?
        assert_eq!(
            seen.recv_timeout(wait).unwrap(),
            (ApiKey::OffsetForLeaderEpoch, 0)
        );
        // At 2: the fetch starts there, after the truncation.
        assert_eq!(seen.recv_timeout(wait).unwrap(), (ApiKey::Fetch, 2));
        // Then from the new log end.
        assert_eq!(seen.recv_timeout(wait).unwrap(), (ApiKey::Fetch, 5));
        let state = &manager.fetch_states()[0];
        assert_eq!((state.fetch_offset, state.truncating), (5, false));
        assert_eq!(p.log().latest_epoch(), Some(1));
        assert_eq!(p.high_watermark(), 5);
        manager.shutdown();
    }
}
