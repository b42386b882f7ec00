//! The broker's ReplicaManager: its partitions, the fetch and produce purgatories the
//! requests wait in, and the ISR changes its followers' fetches make.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, Weak};

use kafka_protocol::messages::produce_response::TopicProduceResponse;
use kafka_protocol::messages::{ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkars_storage::{
    Clock, LiveBrokers, LogManager, Partition, PartitionListener, TopicPartition,
};
use kafkars_timer::{DelayedOperationPurgatory, OperationState};

use crate::fetch::{DelayedFetch, FetchCompletion, FetchSpec};
use crate::produce::{
    AppendPartition, DelayedProduce, PendingPartition, ProduceCompletion, ProduceWaiter,
    append_partition,
};
use crate::replica_fetcher::ReplicaFetcherManager;

/// ISR expansions made by follower fetches, in the order they were made.
pub(crate) type IsrChanges = Arc<Mutex<Vec<(TopicPartition, Vec<i32>)>>>;

/// Kafka's ReplicaManager: owns the partitions this broker holds (each a [`Partition`]
/// over a log of the [`LogManager`]), appends and fetches as their leader, parks the
/// requests that must wait in the fetch and produce purgatories, and keeps the ISR
/// changes to record (see [`propose_isr_changes`](Self::propose_isr_changes)). Every
/// partition it creates wakes the purgatories on each append and high-watermark move,
/// on the appending thread.
pub struct ReplicaManager {
    pub(crate) broker_id: i32,
    pub(crate) clock: Arc<dyn Clock>,
    /// Let go of by [`shutdown`](Self::shutdown): dropping the log manager releases its
    /// dir locks, which a broker restarted in the same process takes again.
    pub(crate) log_manager: RwLock<Option<Arc<LogManager>>>,
    /// The replica fetcher threads followers copy their leaders' logs with.
    pub(crate) fetchers: Option<Arc<ReplicaFetcherManager>>,
    /// In a cluster, the brokers a follower must be among to join an ISR.
    pub(crate) live_brokers: RwLock<Option<Arc<LiveBrokers>>>,
    /// What the partitions tell of their changes: this manager, held weakly, so the
    /// partitions it owns do not keep it alive.
    listener: Arc<dyn PartitionListener>,
    /// Topic-partition to partition; held only to look up or insert, never across a
    /// call into a partition or the fetchers.
    pub(crate) partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    /// Serializes changes of role and membership (become leader or follower, removal,
    /// log dir failure), as one LeaderAndIsr after another.
    pub(crate) changes: Mutex<()>,
    /// Log dirs whose failure was handled: their replicas stay offline until restart.
    pub(crate) offline_dirs: Mutex<HashSet<PathBuf>>,
    /// `[bytes_in, messages_in, bytes_out]` per topic of the partitions deleted since
    /// start-up, so the per-topic counters never go down.
    pub(crate) retired_counters: Mutex<HashMap<String, [u64; 3]>>,
    fetch: DelayedOperationPurgatory<TopicPartition, DelayedFetch>,
    produce: DelayedOperationPurgatory<TopicPartition, DelayedProduce>,
    /// ISR expansions followers' fetches made and nobody recorded yet (Kafka's
    /// isrChangeSet).
    pub(crate) isr_expansions: IsrChanges,
}

impl std::fmt::Debug for ReplicaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaManager")
            .field("broker_id", &self.broker_id)
            .finish_non_exhaustive()
    }
}

/// The partitions' listener: wakes the manager while it lives.
#[derive(Debug)]
struct Wake(Weak<ReplicaManager>);

impl PartitionListener for Wake {
    fn on_partition_change(
        &self,
        tp: &TopicPartition,
        log_end_moved: bool,
        high_watermark_moved: bool,
    ) {
        if let Some(manager) = self.0.upgrade() {
            manager.on_partition_change(tp, log_end_moved, high_watermark_moved);
        }
    }
}

impl ReplicaManager {
    /// The ReplicaManager of broker `broker_id` over the logs of `log_manager`, its
    /// followers fetching with `fetchers` (None: this broker never follows).
    /// `purge_interval`: completed operations a watch list may hold before a purge.
    pub fn new(
        broker_id: i32,
        log_manager: Arc<LogManager>,
        fetchers: Option<Arc<ReplicaFetcherManager>>,
        clock: Arc<dyn Clock>,
        purge_interval: usize,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| ReplicaManager {
            broker_id,
            clock,
            log_manager: RwLock::new(Some(log_manager)),
            fetchers,
            live_brokers: RwLock::new(None),
            listener: Arc::new(Wake(me.clone())),
            partitions: RwLock::new(HashMap::new()),
            changes: Mutex::new(()),
            offline_dirs: Mutex::new(HashSet::new()),
            retired_counters: Mutex::new(HashMap::new()),
            fetch: DelayedOperationPurgatory::new("Fetch", purge_interval),
            produce: DelayedOperationPurgatory::new("Produce", purge_interval),
            isr_expansions: IsrChanges::default(),
        })
    }

    /// The broker this manager runs on.
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// What a partition of this manager tells of its appends and high-watermark moves.
    pub fn listener(&self) -> Arc<dyn PartitionListener> {
        Arc::clone(&self.listener)
    }

    /// Answers a fetch (Kafka's fetchMessages): now, if `max_wait_ms <= 0`, `min_bytes`
    /// are there, a partition failed or nothing can be waited on; else once enough new
    /// bytes arrive, a partition moves or `max_wait_ms` passes.
    pub fn fetch_messages(
        &self,
        mut spec: FetchSpec,
        max_wait_ms: i64,
        mut completion: Box<dyn FetchCompletion>,
    ) {
        spec.isr_changes = Arc::clone(&self.isr_expansions);
        let (result, had_error) = spec.read();
        let keys = spec.keys();
        if max_wait_ms <= 0
            || result.bytes() >= i64::from(spec.min_bytes)
            || had_error
            || keys.is_empty()
        {
            return completion.complete(result);
        }
        drop(result);
        completion.waiting();
        let op = Arc::new(DelayedFetch {
            state: OperationState::new(),
            delay_ms: max_wait_ms as u64,
            spec,
            completion: Mutex::new(Some(completion)),
        });
        self.fetch.try_complete_else_watch(&op, &keys);
    }

    /// Appends a Produce's partitions as their leader (Kafka's appendRecords) and answers
    /// it: at once for acks=1, with nothing for acks=0, and for acks=-1 once every
    /// appended partition's high watermark reaches its append (or `timeout_ms` passes:
    /// REQUEST_TIMED_OUT). `topics`: `(name, partitions)` in request order.
    pub fn append_records(
        &self,
        acks: i16,
        timeout_ms: i64,
        throttle_time_ms: i32,
        topics: Vec<(String, Vec<AppendPartition>)>,
        mut completion: Box<dyn ProduceCompletion>,
    ) {
        let mut pending = Vec::new();
        let responses = topics
            .into_iter()
            .enumerate()
            .map(|(t, (name, partitions))| {
                let partitions = partitions
                    .into_iter()
                    .enumerate()
                    .map(|(i, spec)| {
                        let (response, appended) = append_partition(spec, acks);
                        if let Some((target, required_offset)) = appended
                            && acks == -1
                        {
                            pending.push(PendingPartition {
                                topic: t,
                                partition: i,
                                target,
                                required_offset,
                                result: None,
                            });
                        }
                        response
                    })
                    .collect();
                TopicProduceResponse::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partition_responses(partitions)
            })
            .collect();
        if acks == 0 {
            // The client expects no answer; errors reach it as metadata refreshes.
            return completion.complete(None);
        }
        let response = ProduceResponse::default()
            .with_responses(responses)
            .with_throttle_time_ms(throttle_time_ms);
        if pending.is_empty() {
            return completion.complete(Some(response));
        }
        completion.waiting();
        let keys: Vec<TopicPartition> = pending
            .iter()
            .map(|p| p.target.topic_partition().clone())
            .collect();
        let op = Arc::new(DelayedProduce::new(
            timeout_ms.max(0) as u64,
            pending,
            ProduceWaiter::Reply(completion, response),
        ));
        self.produce.try_complete_else_watch(&op, &keys);
    }

    /// Waits (in the produce purgatory, no thread held) until `target`'s high watermark
    /// reaches `required_offset`, then calls `done` with the partition's error code in a
    /// one-element list: 0, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND, or
    /// REQUEST_TIMED_OUT after `timeout_ms`. A coordinator's own acks=all append.
    pub fn delay_produce(
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
            ProduceWaiter::Callback(done),
        ));
        self.produce.try_complete_else_watch(&op, &[key]);
    }

    /// Fetches waiting (Kafka's NumDelayedOperations of the Fetch purgatory).
    pub fn delayed_fetches(&self) -> usize {
        self.fetch.num_delayed()
    }

    /// Produces waiting for the ISR.
    pub fn delayed_produces(&self) -> usize {
        self.produce.num_delayed()
    }

    /// Re-checks everything waiting on `tp` (after it was deleted or changed leader, so
    /// waiting requests are answered now).
    pub fn check_and_complete(&self, tp: &TopicPartition) {
        self.produce.check_and_complete(tp);
        self.fetch.check_and_complete(tp);
    }

    /// Answers what still waits, and from now on answers at once, then stops the
    /// purgatories' expiration threads, so a broker shutting down leaves no client
    /// waiting for its own timeout: a fetch gets what is there now, an acks=all produce
    /// each partition's outcome so far, NOT_LEADER_OR_FOLLOWER where the ISR has not
    /// caught up (the client retries with the next leader, as after Kafka's controlled
    /// shutdown moved leadership away). Idempotent.
    pub fn shutdown(&self) {
        self.produce.shutdown_and_complete_all();
        self.fetch.shutdown_and_complete_all();
    }

    /// Lets go of the log manager, so its own shutdown releases the dir locks (a broker
    /// restarted in the same process takes them again). After `shutdown`, once no
    /// request can reach the partitions. Idempotent.
    pub fn release_log_manager(&self) {
        self.log_manager
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Completes what waits on `tp` after its append or high-watermark move.
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use bytes::Bytes;
    use kafka_protocol::ResponseError;
    use kafkars_storage::{Log, LogConfig, MockClock};
    use kafkars_timer::DEFAULT_PURGE_INTERVAL;
    use uuid::Uuid;

    use super::*;
    use crate::tests::batch;
    use crate::{AppendPartition, AppendRefusal, FetchPartition, FetchResult, FetchTopic};

    const WAIT: Duration = Duration::from_secs(5);

    /// A manager over a log manager in `dir`.
    fn manager(dir: &std::path::Path) -> Arc<ReplicaManager> {
        let clock = Arc::new(MockClock::new(0));
        let logs = LogManager::new(vec![dir.join("logs")], 1, None, clock.clone()).unwrap();
        ReplicaManager::new(1, Arc::new(logs), None, clock, DEFAULT_PURGE_INTERVAL)
    }

    /// A partition `topic`-0 on broker 1 whose changes reach `manager`, as the broker
    /// wires it.
    fn partition(
        dir: &std::path::Path,
        topic: &str,
        manager: &Arc<ReplicaManager>,
        clock: Arc<MockClock>,
    ) -> Arc<Partition> {
        let tp = TopicPartition::new(topic, 0);
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
        Arc::new(Partition::new(log, 1, clock, Some(manager.listener())))
    }

    /// A partition's answer as a test reads it.
    #[derive(Debug, PartialEq)]
    struct Read {
        error_code: i16,
        high_watermark: i64,
        bytes: u32,
    }

    struct SendFetch(mpsc::Sender<Vec<Read>>, mpsc::Sender<()>);

    impl FetchCompletion for SendFetch {
        fn waiting(&mut self) {
            self.1.send(()).unwrap();
        }

        fn complete(self: Box<Self>, result: FetchResult<'_>) {
            let reads = result
                .partitions()
                .map(|(_, data, slice)| Read {
                    error_code: data.error_code,
                    high_watermark: data.high_watermark,
                    bytes: slice.map_or(0, |s| s.size),
                })
                .collect();
            // The response carries what `records` makes of each file range.
            let response = result.response(0, |s| Bytes::from(vec![0; s.size as usize]));
            assert_eq!(response.responses[0].topic.0.as_str(), "t");
            self.0.send(reads).unwrap();
        }
    }

    /// A consumer's fetch (v4: only the leader serves it) of `p` from `fetch_offset`;
    /// receivers for its result and for its wait starting.
    fn fetch(
        manager: &ReplicaManager,
        p: &Arc<Partition>,
        replica_id: i32,
        fetch_offset: i64,
        min_bytes: i32,
        max_wait_ms: i64,
    ) -> (mpsc::Receiver<Vec<Read>>, mpsc::Receiver<()>) {
        let topics = vec![FetchTopic {
            name: "t".into(),
            topic_id: Uuid::nil(),
            partitions: vec![FetchPartition::new(
                0,
                Ok(Arc::clone(p)),
                fetch_offset,
                1 << 20,
                -1,
            )],
        }];
        let spec = FetchSpec::new(4, replica_id, min_bytes, 1 << 20, 0, topics);
        let (tx, rx) = mpsc::channel();
        let (wtx, wrx) = mpsc::channel();
        manager.fetch_messages(spec, max_wait_ms, Box::new(SendFetch(tx, wtx)));
        (rx, wrx)
    }

    #[test]
    fn a_fetch_waits_for_min_bytes_and_completes_on_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1], vec![1]);
        let (rx, waiting) = fetch(&m, &p, -1, 0, 1, 60_000);
        waiting
            .try_recv()
            .expect("nothing to read: the fetch waits");
        assert!(rx.try_recv().is_err());
        assert_eq!(m.delayed_fetches(), 1);
        // The append moves the high watermark (the leader is the whole ISR): its thread
        // completes the fetch with the new records.
        p.append_records_to_leader(&batch(2), 1).unwrap();
        let reads = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(reads.len(), 1);
        assert_eq!((reads[0].error_code, reads[0].high_watermark), (0, 2));
        assert!(reads[0].bytes > 0);
        assert_eq!(m.delayed_fetches(), 0);
        m.shutdown();
    }

    #[test]
    fn a_fetch_with_enough_bytes_or_no_wait_answers_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1], vec![1]);
        p.append_records_to_leader(&batch(3), 1).unwrap();
        let (rx, waiting) = fetch(&m, &p, -1, 0, 1, 60_000);
        assert!(rx.try_recv().unwrap()[0].bytes > 0);
        assert!(waiting.try_recv().is_err(), "it never waited");
        // Nothing new at the end, but no wait asked: an empty answer now.
        let (rx, _) = fetch(&m, &p, -1, 3, 1, 0);
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![Read {
                error_code: 0,
                high_watermark: 3,
                bytes: 0
            }]
        );
        m.shutdown();
    }

    #[test]
    fn a_fetch_times_out_with_what_there_is() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1], vec![1]);
        p.append_records_to_leader(&batch(1), 1).unwrap();
        // Wants more than there will ever be: answered when max_wait_ms passes.
        let (rx, waiting) = fetch(&m, &p, -1, 0, 1 << 20, 20);
        waiting.try_recv().unwrap();
        let reads = rx.recv_timeout(WAIT).unwrap();
        assert_eq!((reads[0].error_code, reads[0].high_watermark), (0, 1));
        assert!(
            reads[0].bytes > 0,
            "the timed-out fetch carries what it found"
        );
        m.shutdown();
    }

    #[test]
    fn a_waiting_fetch_completes_when_leadership_moves() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let (rx, _) = fetch(&m, &p, -1, 0, 1, 60_000);
        assert!(rx.try_recv().is_err());
        p.make_follower(2, 1, vec![1, 2], vec![1, 2]);
        // What the broker does after a LeaderAndIsr.
        m.check_and_complete(p.topic_partition());
        let reads = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(
            reads[0].error_code,
            ResponseError::NotLeaderOrFollower.code()
        );
        m.shutdown();
    }

    #[test]
    fn a_follower_fetch_of_another_leader_epoch_is_fenced() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(3, vec![1, 2], vec![1, 2]);
        p.append_records_to_leader(&batch(2), 1).unwrap();
        let follower = |current_leader_epoch: i32| {
            let topics = vec![FetchTopic {
                name: "t".into(),
                topic_id: Uuid::nil(),
                partitions: vec![
                    FetchPartition::new(0, Ok(Arc::clone(&p)), 0, 1 << 20, -1)
                        .with_current_leader_epoch(current_leader_epoch),
                ],
            }];
            let (tx, rx) = mpsc::channel();
            let (wtx, _wrx) = mpsc::channel();
            let spec = FetchSpec::new(12, 2, 1, 1 << 20, 0, topics);
            m.fetch_messages(spec, 0, Box::new(SendFetch(tx, wtx)));
            rx.recv_timeout(WAIT).unwrap()[0].error_code
        };
        // KIP-320: a follower of an older epoch waits for its LeaderAndIsr; one of a
        // newer epoch knows of a leader change this broker has not seen yet.
        assert_eq!(follower(2), ResponseError::FencedLeaderEpoch.code());
        assert_eq!(follower(4), ResponseError::UnknownLeaderEpoch.code());
        // A fenced fetch records no position.
        assert_eq!(p.replica_state(2).map(|r| r.log_end_offset), Some(-1));
        assert_eq!(follower(3), 0);
        assert_eq!(follower(-1), 0, "no epoch: not checked");
        m.shutdown();
    }

    #[test]
    fn a_follower_fetch_reads_to_the_log_end_and_records_the_isr_expansion() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1]);
        p.append_records_to_leader(&batch(2), 1).unwrap();
        // Broker 2 at offset 0 reads what the high watermark does not cover yet.
        let (rx, _) = fetch(&m, &p, 2, 0, 1, 60_000);
        assert!(rx.try_recv().unwrap()[0].bytes > 0);
        assert!(m.take_isr_expansions().is_empty(), "not caught up yet");
        // At the log end it has caught up: it joins the ISR, recorded once.
        let (_rx, _) = fetch(&m, &p, 2, 2, 1, 0);
        assert_eq!(
            m.take_isr_expansions(),
            vec![(TopicPartition::new("t", 0), vec![1, 2])]
        );
        assert!(m.take_isr_expansions().is_empty());
        m.shutdown();
    }

    #[test]
    fn a_refused_partition_answers_with_its_code_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let topics = vec![FetchTopic {
            name: "t".into(),
            topic_id: Uuid::nil(),
            partitions: vec![FetchPartition::new(0, Err(3), 0, 100, -1)],
        }];
        let spec = FetchSpec::new(12, -1, 1, 100, 0, topics);
        let (tx, rx) = mpsc::channel();
        let (wtx, _w) = mpsc::channel();
        m.fetch_messages(spec, 60_000, Box::new(SendFetch(tx, wtx)));
        assert_eq!(rx.try_recv().unwrap()[0].error_code, 3);
        m.shutdown();
    }

    struct SendProduce(mpsc::Sender<Option<ProduceResponse>>);

    impl ProduceCompletion for SendProduce {
        fn complete(self: Box<Self>, response: Option<ProduceResponse>) {
            self.0.send(response).unwrap();
        }
    }

    /// Produces `records` to `p` (and one refused partition) with `acks`.
    fn produce(
        m: &ReplicaManager,
        p: &Arc<Partition>,
        acks: i16,
        timeout_ms: i64,
    ) -> mpsc::Receiver<Option<ProduceResponse>> {
        let topics = vec![(
            "t".to_string(),
            vec![
                AppendPartition {
                    index: 0,
                    target: Ok(Arc::clone(p)),
                    records: Bytes::from(batch(2)),
                },
                AppendPartition {
                    index: 7,
                    target: Err(AppendRefusal {
                        code: 3,
                        ..Default::default()
                    }),
                    records: Bytes::new(),
                },
            ],
        )];
        let (tx, rx) = mpsc::channel();
        m.append_records(acks, timeout_ms, 0, topics, Box::new(SendProduce(tx)));
        rx
    }

    /// `(index, error_code, base_offset)` of each partition's answer.
    fn answers(response: ProduceResponse) -> Vec<(i32, i16, i64)> {
        response.responses[0]
            .partition_responses
            .iter()
            .map(|p| (p.index, p.error_code, p.base_offset))
            .collect()
    }

    #[test]
    fn acks_one_answers_at_once_and_acks_zero_answers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let response = produce(&m, &p, 1, 60_000).try_recv().unwrap().unwrap();
        assert_eq!(answers(response), vec![(0, 0, 0), (7, 3, -1)]);
        assert!(produce(&m, &p, 0, 60_000).try_recv().unwrap().is_none());
        assert_eq!(p.log().log_end_offset(), 4, "both appends were made");
        m.shutdown();
    }

    #[test]
    fn acks_all_completes_when_the_high_watermark_reaches_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let rx = produce(&m, &p, -1, 60_000);
        assert!(
            rx.try_recv().is_err(),
            "broker 2 has not fetched the append"
        );
        assert_eq!(m.delayed_produces(), 1);
        p.update_follower_fetch_state(2, 1).unwrap();
        assert!(rx.try_recv().is_err(), "the high watermark is short of it");
        p.update_follower_fetch_state(2, 2).unwrap();
        let response = rx.recv_timeout(WAIT).unwrap().unwrap();
        assert_eq!(answers(response), vec![(0, 0, 0), (7, 3, -1)]);
        assert_eq!(m.delayed_produces(), 0);
        m.shutdown();
    }

    #[test]
    fn acks_all_times_out_with_request_timed_out() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let response = produce(&m, &p, -1, 20).recv_timeout(WAIT).unwrap().unwrap();
        assert_eq!(
            answers(response),
            vec![(0, ResponseError::RequestTimedOut.code(), -1), (7, 3, -1)]
        );
        m.shutdown();
    }

    /// Parks an append ending at `required_offset`; the receiver gets its outcome.
    fn delay(
        m: &ReplicaManager,
        p: &Arc<Partition>,
        required_offset: i64,
        timeout_ms: i64,
    ) -> mpsc::Receiver<Vec<i16>> {
        let (tx, rx) = mpsc::channel();
        let done = Box::new(move |codes: Vec<i16>| tx.send(codes).unwrap());
        m.delay_produce(Arc::clone(p), required_offset, timeout_ms, done);
        rx
    }

    #[test]
    fn a_coordinator_append_completes_when_the_isr_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(
            dir.path(),
            "__consumer_offsets",
            &m,
            Arc::new(MockClock::new(0)),
        );
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(3), -1).unwrap();
        let rx = delay(&m, &p, info.last_offset + 1, 60_000);
        assert!(
            rx.try_recv().is_err(),
            "the follower has not fetched the append"
        );
        assert_eq!(m.delayed_produces(), 1);
        p.update_follower_fetch_state(2, 2).unwrap();
        assert!(rx.try_recv().is_err(), "the follower has part of it");
        // The follower's fetch moves the high watermark: its thread runs the callback.
        p.update_follower_fetch_state(2, 3).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), vec![0]);
        assert_eq!(m.delayed_produces(), 0);
        m.shutdown();
    }

    #[test]
    fn an_append_the_isr_already_has_completes_on_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(
            dir.path(),
            "__consumer_offsets",
            &m,
            Arc::new(MockClock::new(0)),
        );
        p.make_leader(0, vec![1], vec![1]);
        let info = p.append_records_to_leader(&batch(2), -1).unwrap();
        let rx = delay(&m, &p, info.last_offset + 1, 60_000);
        assert_eq!(rx.try_recv().unwrap(), vec![0]);
        m.shutdown();
    }

    #[test]
    fn a_coordinator_append_fails_when_leadership_moves_or_time_runs_out() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(
            dir.path(),
            "__consumer_offsets",
            &m,
            Arc::new(MockClock::new(0)),
        );
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        let timed_out = delay(&m, &p, info.last_offset + 1, 20);
        assert_eq!(
            timed_out.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::RequestTimedOut.code()]
        );
        let moved = delay(&m, &p, info.last_offset + 1, 60_000);
        p.make_follower(2, 1, vec![1, 2], vec![2]);
        // What the replica manager does after a leadership change.
        m.check_and_complete(p.topic_partition());
        assert_eq!(
            moved.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::NotLeaderOrFollower.code()]
        );
        m.shutdown();
    }

    #[test]
    fn shutdown_answers_what_waits_and_what_comes_later() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let p = partition(dir.path(), "t", &m, Arc::new(MockClock::new(0)));
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let (fetched, waiting) = fetch(&m, &p, -1, 0, 1, 60_000);
        waiting.try_recv().expect("the fetch waits");
        let produced = produce(&m, &p, -1, 60_000);
        let delayed = delay(&m, &p, 2, 60_000);
        assert!(produced.try_recv().is_err() && delayed.try_recv().is_err());
        m.shutdown();
        // Answered by the shutdown itself, not by the 60 s timeouts.
        assert_eq!(
            fetched.try_recv().unwrap(),
            vec![Read {
                error_code: 0,
                high_watermark: 0,
                bytes: 0
            }]
        );
        let not_leader = ResponseError::NotLeaderOrFollower.code();
        let response = produced.try_recv().unwrap().unwrap();
        assert_eq!(answers(response), vec![(0, not_leader, -1), (7, 3, -1)]);
        assert_eq!(delayed.try_recv().unwrap(), vec![not_leader]);
        assert_eq!((m.delayed_fetches(), m.delayed_produces()), (0, 0));
        // A request handled while the broker winds down is not parked.
        let (fetched, _) = fetch(&m, &p, -1, 0, 1, 60_000);
        assert_eq!(fetched.try_recv().unwrap()[0].error_code, 0);
        let response = produce(&m, &p, -1, 60_000).try_recv().unwrap().unwrap();
        assert_eq!(answers(response)[0], (0, not_leader, -1));
    }

    #[test]
    fn an_isr_shrunk_below_min_insync_replicas_holds_the_acks_all_wait() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(dir.path());
        let p = partition(dir.path(), "__consumer_offsets", &m, clock.clone());
        p.set_min_insync_replicas(2);
        p.make_leader(0, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        let rx = delay(&m, &p, info.last_offset + 1, 200);
        // The follower stops fetching and leaves the ISR: as in Kafka 3.9 the high
        // watermark stays short of the append, under min.insync.replicas, so the wait
        // ends in a timeout (the producer's retry then gets NOT_ENOUGH_REPLICAS).
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::RequestTimedOut.code()]
        );
        assert_eq!(p.high_watermark(), 0);
        // An append the high watermark reached before the ISR shrank: done, but with
        // fewer in-sync replicas than asked (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND).
        p.make_leader(1, vec![1, 2], vec![1, 2]);
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        p.update_follower_fetch_state(2, info.last_offset + 1)
            .unwrap();
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        let rx = delay(&m, &p, info.last_offset + 1, 60_000);
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            vec![ResponseError::NotEnoughReplicasAfterAppend.code()]
        );
        m.shutdown();
    }
}
