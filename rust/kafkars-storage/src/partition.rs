//! A partition as this broker sees it (Kafka's `Partition`): the log, who leads it at
//! which leader epoch, the assigned and in-sync replicas, and, on the leader, each
//! follower's fetch position. The high watermark is computed here from those positions;
//! callers ask the partition to append, read and move, and never set offsets themselves.
//!
//! One broker alone is the leader with itself as the whole ISR, so the high watermark
//! follows every append. Replication adds followers through [`Partition::make_leader`]
//! and [`Partition::update_follower_fetch_state`] without changing that path.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kafka_protocol::ResponseError;

use crate::config::Clock;
use crate::error::{LogError, Result};
use crate::fetch::FetchDataInfo;
use crate::log::{Log, LogAppendInfo};
use crate::topic_partition::TopicPartition;

/// No leader (Kafka's `LeaderAndIsr.NoLeader`).
pub const NO_LEADER: i32 = -1;

/// The brokers alive in the cluster as the controller last told (UpdateMetadata). Kafka's
/// ZooKeeper-mode leader adds a follower to the ISR only if its broker is alive: a fetch
/// that completes in the purgatory after its follower shut down or died must not bring
/// it back into the ISR, where acks=all writes would wait for it.
#[derive(Debug, Default)]
pub struct LiveBrokers(RwLock<HashSet<i32>>);

impl LiveBrokers {
    /// Replaces the set with `broker_ids`.
    pub fn update(&self, broker_ids: impl IntoIterator<Item = i32>) {
        let ids = broker_ids.into_iter().collect();
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = ids;
    }

    pub fn contains(&self, broker_id: i32) -> bool {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&broker_id)
    }
}

/// Told when a partition's log end or high watermark moves, so operations waiting on
/// the partition (delayed fetches and produces) are checked at once, on the thread that
/// moved it.
pub trait PartitionListener: Send + Sync + std::fmt::Debug {
    /// `log_end_moved`: records were appended; `high_watermark_moved`: the high
    /// watermark advanced.
    fn on_partition_change(
        &self,
        tp: &TopicPartition,
        log_end_moved: bool,
        high_watermark_moved: bool,
    );
}

/// Which records a read may return (Kafka's FetchIsolation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// A follower: everything up to the log end.
    LogEnd,
    /// read_uncommitted consumers: up to the high watermark.
    HighWatermark,
    /// read_committed consumers: up to the last stable offset.
    TxnCommitted,
}

/// A follower's replication state as the leader tracks it (Kafka's ReplicaState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    /// The follower's log end offset: the offset of its last fetch, -1 if unknown.
    pub log_end_offset: i64,
    /// When the follower was last known to have caught up with the leader's log end.
    pub last_caught_up_time_ms: i64,
    /// The leader's log end offset at the follower's last fetch.
    pub last_fetch_leader_log_end_offset: i64,
    /// When the follower last fetched.
    pub last_fetch_time_ms: i64,
}

impl ReplicaState {
    fn reset(now_ms: i64, in_sync: bool) -> Self {
        ReplicaState {
            log_end_offset: -1,
            // A replica the controller put in the ISR gets a full lag period to fetch.
            last_caught_up_time_ms: if in_sync { now_ms } else { 0 },
            last_fetch_leader_log_end_offset: -1,
            last_fetch_time_ms: 0,
        }
    }
}

#[derive(Debug)]
struct PartitionState {
    leader_id: i32,
    leader_epoch: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    /// Followers' positions, kept only while this broker leads.
    remote_replicas: HashMap<i32, ReplicaState>,
}

/// What a leader read returns: the records and the offsets the response carries.
#[derive(Debug, Clone)]
pub struct LogReadResult {
    /// The records (a file slice) and where the read started.
    pub info: FetchDataInfo,
    /// High watermark at the time of the read.
    pub high_watermark: i64,
    /// Last stable offset at the time of the read.
    pub last_stable_offset: i64,
    /// Log start offset at the time of the read.
    pub log_start_offset: i64,
    /// Log end offset at the time of the read.
    pub log_end_offset: i64,
}

/// Byte and record counts of a partition (BrokerTopicMetrics), read at scrape time.
#[derive(Debug, Default)]
pub struct PartitionCounters {
    /// Bytes appended by producers.
    pub bytes_in: AtomicU64,
    /// Records appended by producers.
    pub messages_in: AtomicU64,
    /// Bytes sent to consumers. (Records are not counted on the way out, as in Kafka:
    /// counting them read every batch header of every fetch, a pread each.)
    pub bytes_out: AtomicU64,
}

/// See the module docs. Shared as `Arc<Partition>`; every method is thread-safe.
#[derive(Debug)]
pub struct Partition {
    tp: TopicPartition,
    log: Arc<Log>,
    local_broker_id: i32,
    clock: Arc<dyn Clock>,
    /// Appends hold it shared so a leadership change (exclusive) never splits one.
    state: RwLock<PartitionState>,
    min_insync_replicas: AtomicI32,
    listener: Option<Arc<dyn PartitionListener>>,
    /// In a cluster, the brokers a follower must be among to join the ISR; one broker
    /// alone has no followers and no set.
    live_brokers: Option<Arc<LiveBrokers>>,
    counters: PartitionCounters,
}

impl Partition {
    /// A partition over `log`, led by nobody until [`make_leader`](Self::make_leader) or
    /// [`make_follower`](Self::make_follower).
    pub fn new(
        log: Arc<Log>,
        local_broker_id: i32,
        clock: Arc<dyn Clock>,
        listener: Option<Arc<dyn PartitionListener>>,
    ) -> Self {
        Partition {
            tp: log.topic_partition().clone(),
            log,
            local_broker_id,
            clock,
            state: RwLock::new(PartitionState {
                leader_id: NO_LEADER,
                leader_epoch: -1,
                replicas: Vec::new(),
                isr: Vec::new(),
                remote_replicas: HashMap::new(),
            }),
            min_insync_replicas: AtomicI32::new(1),
            listener,
            live_brokers: None,
            counters: PartitionCounters::default(),
        }
    }

    /// Followers join the ISR only while their broker is in `live_brokers`.
    pub fn with_live_brokers(mut self, live_brokers: Arc<LiveBrokers>) -> Self {
        self.live_brokers = Some(live_brokers);
        self
    }

    fn isr_eligible(&self, replica_id: i32) -> bool {
        self.live_brokers
            .as_ref()
            .is_none_or(|live| live.contains(replica_id))
    }

    fn read_state(&self) -> RwLockReadGuard<'_, PartitionState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, PartitionState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The partition's topic and number.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    /// The log behind the partition.
    pub fn log(&self) -> &Arc<Log> {
        &self.log
    }

    /// The byte and record counters.
    pub fn counters(&self) -> &PartitionCounters {
        &self.counters
    }

    /// The broker leading the partition, or [`NO_LEADER`].
    pub fn leader_id(&self) -> i32 {
        self.read_state().leader_id
    }

    /// Whether this broker leads the partition.
    pub fn is_leader(&self) -> bool {
        self.read_state().leader_id == self.local_broker_id
    }

    /// The current leader epoch (-1 before any leader).
    pub fn leader_epoch(&self) -> i32 {
        self.read_state().leader_epoch
    }

    /// The assigned replicas.
    pub fn replicas(&self) -> Vec<i32> {
        self.read_state().replicas.clone()
    }

    /// The in-sync replicas.
    pub fn isr(&self) -> Vec<i32> {
        self.read_state().isr.clone()
    }

    /// A follower's state as this leader tracks it.
    pub fn replica_state(&self, replica_id: i32) -> Option<ReplicaState> {
        self.read_state().remote_replicas.get(&replica_id).copied()
    }

    /// `min.insync.replicas` for acks=all appends.
    pub fn set_min_insync_replicas(&self, value: i32) {
        self.min_insync_replicas
            .store(value.max(1), Ordering::Release);
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// The last stable offset.
    pub fn last_stable_offset(&self) -> i64 {
        self.log.last_stable_offset()
    }

    /// Makes this broker the leader at `leader_epoch` (LeaderAndIsr, or a lone broker
    /// leading its own partitions). Followers' positions start unknown. Returns whether
    /// this broker was not the leader before.
    pub fn make_leader(&self, leader_epoch: i32, replicas: Vec<i32>, isr: Vec<i32>) -> bool {
        let now = self.clock.now_ms();
        let became_leader = {
            let mut st = self.write_state();
            let was_leader = st.leader_id == self.local_broker_id;
            st.remote_replicas = replicas
                .iter()
                .filter(|&&id| id != self.local_broker_id)
                .map(|&id| (id, ReplicaState::reset(now, isr.contains(&id))))
                .collect();
            st.leader_id = self.local_broker_id;
            st.leader_epoch = leader_epoch;
            st.replicas = replicas;
            st.isr = isr;
            !was_leader
        };
        self.maybe_increment_high_watermark();
        became_leader
    }

    /// Makes this broker a follower of `leader_id` at `leader_epoch`. Returns whether the
    /// leader or epoch changed (the caller then restarts fetching from the leader).
    pub fn make_follower(
        &self,
        leader_id: i32,
        leader_epoch: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
    ) -> bool {
        let mut st = self.write_state();
        let changed = st.leader_id != leader_id || st.leader_epoch != leader_epoch;
        st.leader_id = leader_id;
        st.leader_epoch = leader_epoch;
        st.replicas = replicas;
        st.isr = isr;
        st.remote_replicas.clear();
        changed
    }

    /// The leader epoch and the ISR, read together, if this broker leads the partition.
    pub fn leader_epoch_and_isr(&self) -> Option<(i32, Vec<i32>)> {
        let st = self.read_state();
        (st.leader_id == self.local_broker_id).then(|| (st.leader_epoch, st.isr.clone()))
    }

    /// Replaces the ISR (the controller or this leader decided it); the high watermark
    /// may move when a lagging member leaves.
    pub fn set_isr(&self, isr: Vec<i32>) {
        self.write_state().isr = isr;
        self.maybe_increment_high_watermark();
    }

    fn not_leader(&self, st: &PartitionState) -> LogError {
        LogError::NotLeaderOrFollower(format!(
            "broker {} is not the leader of {} (leader {}, epoch {})",
            self.local_broker_id, self.tp, st.leader_id, st.leader_epoch
        ))
    }

    /// Appends produced records as the leader (Kafka's appendRecordsToLeader).
    /// `required_acks == -1` needs at least `min.insync.replicas` in the ISR.
    pub fn append_records_to_leader(
        &self,
        records: &[u8],
        required_acks: i16,
    ) -> Result<LogAppendInfo> {
        let info = {
            let st = self.read_state();
            if st.leader_id != self.local_broker_id {
                return Err(self.not_leader(&st));
            }
            let min_isr = self.effective_min_isr(&st);
            if required_acks == -1 && (st.isr.len() as i32) < min_isr {
                return Err(LogError::NotEnoughReplicas(format!(
                    "the ISR of {} has {} replica(s), fewer than min.insync.replicas={min_isr}",
                    self.tp,
                    st.isr.len()
                )));
            }
            self.log.append_as_leader(records, st.leader_epoch)?
        };
        self.counters
            .bytes_in
            .fetch_add(info.valid_bytes as u64, Ordering::Relaxed);
        self.counters
            .messages_in
            .fetch_add(info.num_messages, Ordering::Relaxed);
        self.after_append(info.valid_bytes > 0);
        Ok(info)
    }

    /// Appends the COMMIT or ABORT marker of `producer_id`'s transaction as the leader.
    pub fn append_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Result<LogAppendInfo> {
        let info = {
            let st = self.read_state();
            if st.leader_id != self.local_broker_id {
                return Err(self.not_leader(&st));
            }
            self.log.append_txn_marker(
                producer_id,
                producer_epoch,
                coordinator_epoch,
                commit,
                st.leader_epoch,
            )?
        };
        self.after_append(true);
        Ok(info)
    }

    /// Appends the leader's batches as they are (a replica fetcher's append).
    pub fn append_records_as_follower(&self, records: &[u8]) -> Result<LogAppendInfo> {
        let info = {
            let st = self.read_state();
            if st.leader_id == self.local_broker_id {
                return Err(LogError::NotLeaderOrFollower(format!(
                    "broker {} leads {} and cannot append as a follower",
                    self.local_broker_id, self.tp
                )));
            }
            self.log.append_as_follower(records)?
        };
        self.notify(true, false);
        Ok(info)
    }

    /// A follower takes the leader's high watermark, bounded by its own log end.
    pub fn update_follower_high_watermark(&self, leader_high_watermark: i64) {
        let old = self.log.high_watermark();
        let new = self
            .log
            .set_high_watermark(leader_high_watermark.min(self.log.log_end_offset()));
        if new != old {
            self.notify(false, true);
        }
    }

    fn after_append(&self, appended: bool) {
        if !appended {
            return; // a duplicate retried: nothing moved
        }
        let hw_moved = self.maybe_increment_high_watermark_quietly();
        self.notify(true, hw_moved);
    }

    fn notify(&self, log_end_moved: bool, high_watermark_moved: bool) {
        if let Some(listener) = &self.listener {
            listener.on_partition_change(&self.tp, log_end_moved, high_watermark_moved);
        }
    }

    /// Moves the high watermark to the smallest log end offset of the ISR (the leader's
    /// included) and tells the listener if it moved.
    pub fn maybe_increment_high_watermark(&self) -> bool {
        let moved = self.maybe_increment_high_watermark_quietly();
        if moved {
            self.notify(false, true);
        }
        moved
    }

    /// `min.insync.replicas` capped at the replica count (Kafka's effectiveMinIsr, in 3.9
    /// as in 4.1): a min.insync.replicas above the replication factor would otherwise
    /// refuse every acks=all append and hold the high watermark for good.
    fn effective_min_isr(&self, st: &PartitionState) -> i32 {
        let min_isr = self.min_insync_replicas.load(Ordering::Acquire);
        min_isr.min(st.replicas.len().max(1) as i32)
    }

    /// Whether this leader's ISR is smaller than its effective min ISR.
    fn is_under_min_isr(&self, st: &PartitionState) -> bool {
        st.leader_id == self.local_broker_id && (st.isr.len() as i32) < self.effective_min_isr(st)
    }

    fn maybe_increment_high_watermark_quietly(&self) -> bool {
        let st = self.read_state();
        if st.leader_id != self.local_broker_id {
            return false;
        }
        // Kafka (3.7 on, KAFKA-15583) holds the high watermark while the ISR is under
        // min.insync.replicas, whatever the acks: records written with acks=0 or 1 then
        // stay invisible until enough replicas have them, so a leader that alone took
        // writes cannot have them read and then lose them.
        if self.is_under_min_isr(&st) {
            return false;
        }
        let mut new_hw = self.log.log_end_offset();
        for id in &st.isr {
            if *id == self.local_broker_id {
                continue;
            }
            // An ISR member whose position is not known yet holds the watermark back.
            match st.remote_replicas.get(id) {
                Some(r) if r.log_end_offset >= 0 => new_hw = new_hw.min(r.log_end_offset),
                _ => return false,
            }
        }
        let old = self.log.high_watermark();
        if new_hw > old {
            self.log.set_high_watermark(new_hw);
            true
        } else {
            false
        }
    }

    /// Records a follower's fetch at `fetch_offset` (its log end) on the leader: updates
    /// its caught-up time, adds it to the ISR once it reaches the high watermark, and
    /// moves the high watermark. Returns the new ISR when it grew (the caller records
    /// the change where the cluster keeps it).
    pub fn update_follower_fetch_state(
        &self,
        replica_id: i32,
        fetch_offset: i64,
    ) -> Result<Option<Vec<i32>>> {
        let now = self.clock.now_ms();
        let leader_leo = self.log.log_end_offset();
        let expanded = {
            let mut st = self.write_state();
            if st.leader_id != self.local_broker_id {
                return Err(self.not_leader(&st));
            }
            if !st.replicas.contains(&replica_id) {
                return Err(LogError::NotLeaderOrFollower(format!(
                    "broker {replica_id} is not a replica of {}",
                    self.tp
                )));
            }
            let replica = st
                .remote_replicas
                .entry(replica_id)
                .or_insert_with(|| ReplicaState::reset(now, false));
            // Kafka's rule: caught up at this fetch if it reached the leader's end now,
            // or at the previous fetch if it reached the end the leader had then.
            if fetch_offset >= leader_leo {
                replica.last_caught_up_time_ms = now;
            } else if fetch_offset >= replica.last_fetch_leader_log_end_offset {
                replica.last_caught_up_time_ms = replica.last_fetch_time_ms;
            }
            replica.log_end_offset = fetch_offset;
            replica.last_fetch_leader_log_end_offset = leader_leo;
            replica.last_fetch_time_ms = now;
            let hw = self.log.high_watermark();
            if !st.isr.contains(&replica_id) && fetch_offset >= hw && self.isr_eligible(replica_id)
            {
                st.isr.push(replica_id);
                Some(st.isr.clone())
            } else {
                None
            }
        };
        self.maybe_increment_high_watermark();
        Ok(expanded)
    }

    /// The ISR without the followers not caught up within `max_lag_ms`
    /// (`replica.lag.time.max.ms`), at the current leader epoch, if any must go. Nothing
    /// changes yet: as in Kafka (its pending shrink), the high watermark keeps counting
    /// the larger ISR until the smaller one is recorded where the controller reads it
    /// (ZooKeeper) and [`commit_isr`](Self::commit_isr) applies it. A leader cut off from
    /// ZooKeeper therefore cannot shrink its ISR and acknowledge acks=all writes alone.
    pub fn isr_shrink(&self, max_lag_ms: i64) -> Option<(i32, Vec<i32>)> {
        let now = self.clock.now_ms();
        let st = self.read_state();
        if st.leader_id != self.local_broker_id {
            return None;
        }
        let local = self.local_broker_id;
        let keep: Vec<i32> = st
            .isr
            .iter()
            .copied()
            .filter(|id| {
                *id == local
                    || st
                        .remote_replicas
                        .get(id)
                        .is_some_and(|r| now - r.last_caught_up_time_ms <= max_lag_ms)
            })
            .collect();
        (keep.len() != st.isr.len()).then_some((st.leader_epoch, keep))
    }

    /// Applies an ISR recorded for `leader_epoch` and moves the high watermark; false
    /// (nothing applied) if this broker no longer leads at that epoch.
    pub fn commit_isr(&self, leader_epoch: i32, isr: Vec<i32>) -> bool {
        {
            let mut st = self.write_state();
            if st.leader_id != self.local_broker_id || st.leader_epoch != leader_epoch {
                return false;
            }
            st.isr = isr;
        }
        self.maybe_increment_high_watermark();
        true
    }

    /// [`isr_shrink`](Self::isr_shrink) applied at once, where nothing else records the
    /// ISR (a leader without a controller); returns the new ISR if it shrank.
    pub fn maybe_shrink_isr(&self, max_lag_ms: i64) -> Option<Vec<i32>> {
        let (epoch, isr) = self.isr_shrink(max_lag_ms)?;
        self.commit_isr(epoch, isr.clone()).then_some(isr)
    }

    /// Reads from `fetch_offset` for a fetch. Consumers read only from the leader;
    /// a follower reads up to the log end and has its position recorded first.
    /// Reads for a fetch. Only the leader serves one, except that a follower may serve a
    /// consumer (`from_follower`: KIP-392's fetch from the closest replica) up to its
    /// own high watermark, which the leader's fetch responses move.
    pub fn read_records(
        &self,
        fetch_offset: i64,
        max_bytes: u32,
        isolation: FetchIsolation,
        min_one_message: bool,
        from_follower: bool,
    ) -> Result<LogReadResult> {
        {
            let st = self.read_state();
            let may_serve = st.leader_id == self.local_broker_id
                || (from_follower && isolation != FetchIsolation::LogEnd);
            if !may_serve {
                return Err(self.not_leader(&st));
            }
        }
        // Offsets are sampled before the read so the response never claims a high
        // watermark beyond the records it carries.
        let high_watermark = self.log.high_watermark();
        let last_stable_offset = self.log.last_stable_offset();
        let log_end_offset = self.log.log_end_offset();
        let upper = match isolation {
            FetchIsolation::LogEnd => log_end_offset,
            FetchIsolation::HighWatermark => high_watermark,
            FetchIsolation::TxnCommitted => last_stable_offset,
        };
        let info = self
            .log
            .read(fetch_offset, max_bytes, upper, min_one_message)?;
        Ok(LogReadResult {
            info,
            high_watermark,
            last_stable_offset,
            log_start_offset: self.log.log_start_offset(),
            log_end_offset,
        })
    }

    /// Bytes a fetch that started at `start` (offset `fetch_offset`) could now read under
    /// `isolation`, from offset metadata alone (no I/O); `i32::MAX` when it cannot tell
    /// (the data then counts as available, as in Kafka's DelayedFetch).
    pub fn bytes_available(
        &self,
        start: Option<crate::fetch::LogOffsetMetadata>,
        fetch_offset: i64,
        isolation: FetchIsolation,
    ) -> i64 {
        let end = match isolation {
            FetchIsolation::LogEnd => self.log.log_end_offset(),
            FetchIsolation::HighWatermark => self.log.high_watermark(),
            FetchIsolation::TxnCommitted => self.log.last_stable_offset(),
        };
        if end <= fetch_offset {
            return 0;
        }
        let Some(start) = start else {
            return i64::from(i32::MAX);
        };
        // The log end's position bounds the bytes below any of the three ends.
        self.log
            .log_end_offset_metadata()
            .position_diff(&start)
            .unwrap_or(i64::from(i32::MAX))
    }

    /// Whether an acks=all append that ended below `required_offset` is done (Kafka's
    /// checkEnoughReplicasReachOffset): `None` while the high watermark is short of it,
    /// else the error code to answer with (0 for success).
    pub fn check_enough_replicas_reach_offset(&self, required_offset: i64) -> Option<i16> {
        let st = self.read_state();
        if st.leader_id != self.local_broker_id {
            return Some(ResponseError::NotLeaderOrFollower.code());
        }
        if self.log.high_watermark() < required_offset {
            return None;
        }
        if (st.isr.len() as i32) < self.effective_min_isr(&st) {
            Some(ResponseError::NotEnoughReplicasAfterAppend.code())
        } else {
            Some(0)
        }
    }

    /// Counts bytes sent to a consumer.
    pub fn record_fetched(&self, bytes: u64) {
        self.counters.bytes_out.fetch_add(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LogConfig, MockClock};
    use kafkars_record::{NewRecord, RecordBatchBuilder};
    use std::sync::Mutex;

    #[derive(Debug, Default)]
    struct Events(Mutex<Vec<(bool, bool)>>);

    impl PartitionListener for Events {
        fn on_partition_change(&self, _: &TopicPartition, leo: bool, hw: bool) {
            self.0.lock().unwrap().push((leo, hw));
        }
    }

    fn batch(n: usize) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new();
        for i in 0..n {
            b.append(NewRecord::with_value(1_000 + i as i64, b"value".to_vec()));
        }
        b.build().unwrap()
    }

    fn partition(dir: &std::path::Path, clock: Arc<MockClock>) -> (Arc<Partition>, Arc<Events>) {
        let tp = TopicPartition::new("t", 0);
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
        let events = Arc::new(Events::default());
        let listener: Arc<dyn PartitionListener> = events.clone();
        (
            Arc::new(Partition::new(log, 1, clock, Some(listener))),
            events,
        )
    }

    #[test]
    fn a_lone_leader_moves_the_high_watermark_with_each_append() {
        let dir = tempfile::tempdir().unwrap();
        let (p, events) = partition(dir.path(), Arc::new(MockClock::new(0)));
        assert!(p.make_leader(0, vec![1], vec![1]));
        let info = p.append_records_to_leader(&batch(3), -1).unwrap();
        assert_eq!((info.first_offset, info.last_offset), (0, 2));
        assert_eq!(p.high_watermark(), 3);
        assert_eq!(events.0.lock().unwrap().last(), Some(&(true, true)));
        assert_eq!(p.counters().messages_in.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_follower_refuses_produce_and_a_leader_refuses_follower_appends() {
        let dir = tempfile::tempdir().unwrap();
        let (p, _) = partition(dir.path(), Arc::new(MockClock::new(0)));
        let err = p.append_records_to_leader(&batch(1), 1).unwrap_err();
        assert_eq!(err.kafka_error_code(), 6);
        p.make_leader(0, vec![1], vec![1]);
        let err = p.append_records_as_follower(&batch(1)).unwrap_err();
        assert_eq!(err.kafka_error_code(), 6);
        assert!(p.make_follower(2, 1, vec![1, 2], vec![1, 2]));
        assert!(!p.is_leader());
        assert!(
            p.read_records(0, 1024, FetchIsolation::HighWatermark, true, false)
                .is_err()
        );
    }

    #[test]
    fn the_high_watermark_waits_for_the_isr_and_acks_all_for_min_isr() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let (p, _) = partition(dir.path(), clock.clone());
        p.set_min_insync_replicas(2);
        p.make_leader(1, vec![1, 2, 3], vec![1, 2, 3]);
        p.append_records_to_leader(&batch(5), -1).unwrap();
        assert_eq!(p.high_watermark(), 0, "followers have not fetched");
        assert_eq!(p.update_follower_fetch_state(2, 5).unwrap(), None);
        assert_eq!(p.high_watermark(), 0, "replica 3 is in the ISR and unknown");
        p.update_follower_fetch_state(3, 2).unwrap();
        assert_eq!(p.high_watermark(), 2);
        // Replica 3 stops fetching: after the lag time it leaves the ISR.
        clock.advance(30_001);
        p.update_follower_fetch_state(2, 5).unwrap();
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1, 2]));
        assert_eq!(p.high_watermark(), 5);
        // Replica 2 goes too: acks=all is refused below min.insync.replicas=2.
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        let err = p.append_records_to_leader(&batch(1), -1).unwrap_err();
        assert_eq!(err.kafka_error_code(), 19);
        p.append_records_to_leader(&batch(1), 1).unwrap();
        // Replica 3 catches up and rejoins.
        assert_eq!(p.check_enough_replicas_reach_offset(7), None);
        assert_eq!(
            p.update_follower_fetch_state(3, 6).unwrap(),
            Some(vec![1, 3])
        );
        assert_eq!(p.high_watermark(), 6);
        assert_eq!(p.check_enough_replicas_reach_offset(6), Some(0));
        p.make_follower(3, 2, vec![1, 2, 3], vec![3]);
        assert_eq!(p.check_enough_replicas_reach_offset(6), Some(6));
    }

    #[test]
    fn acks_all_needs_at_most_the_replica_count_in_the_isr() {
        // Kafka's effectiveMinIsr: min.insync.replicas=3 on two replicas asks for two.
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let (p, _) = partition(dir.path(), clock.clone());
        p.set_min_insync_replicas(3);
        p.make_leader(1, vec![1, 2], vec![1, 2]);
        p.append_records_to_leader(&batch(2), -1).unwrap();
        p.update_follower_fetch_state(2, 2).unwrap();
        assert_eq!(p.check_enough_replicas_reach_offset(2), Some(0));
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        let err = p.append_records_to_leader(&batch(1), -1).unwrap_err();
        assert_eq!(err.kafka_error_code(), 19);
        // A leader alone: its one replica is enough.
        p.make_leader(2, vec![1], vec![1]);
        p.append_records_to_leader(&batch(1), -1).unwrap();
    }

    #[test]
    fn the_high_watermark_holds_while_the_isr_is_under_min_isr() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let (p, _) = partition(dir.path(), clock.clone());
        p.set_min_insync_replicas(2);
        p.make_leader(1, vec![1, 2], vec![1, 2]);
        p.append_records_to_leader(&batch(2), -1).unwrap();
        p.update_follower_fetch_state(2, 2).unwrap();
        assert_eq!(p.high_watermark(), 2);
        // Replica 2 falls behind and leaves: the leader alone is under min.insync.replicas.
        p.append_records_to_leader(&batch(1), 1).unwrap();
        clock.advance(30_001);
        assert_eq!(p.maybe_shrink_isr(30_000), Some(vec![1]));
        assert_eq!(p.high_watermark(), 2, "the shrink does not move it");
        p.append_records_to_leader(&batch(2), 1).unwrap();
        p.append_records_to_leader(&batch(1), 0).unwrap();
        assert_eq!(
            p.high_watermark(),
            2,
            "acks=1 and acks=0 appends do not move it"
        );
        // Replica 2 catches up to the high watermark and rejoins: the watermark moves to
        // what both have.
        assert_eq!(
            p.update_follower_fetch_state(2, 4).unwrap(),
            Some(vec![1, 2])
        );
        assert_eq!(p.high_watermark(), 4);
        // A min.insync.replicas above the replica count counts as the replica count.
        p.set_min_insync_replicas(3);
        p.update_follower_fetch_state(2, 6).unwrap();
        assert_eq!(p.high_watermark(), 6);
        // A new leader alone under min.insync.replicas keeps its high watermark.
        p.set_min_insync_replicas(2);
        p.make_leader(2, vec![1, 2], vec![1]);
        p.append_records_to_leader(&batch(1), 1).unwrap();
        assert_eq!(p.high_watermark(), 6);
    }

    #[test]
    fn only_a_live_broker_rejoins_the_isr() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("t", 0);
        let clock = Arc::new(MockClock::new(0));
        let (log, _) = Log::open(
            &dir.path().join(tp.dir_name()),
            tp,
            LogConfig::default(),
            0,
            0,
            true,
            clock.clone(),
        )
        .unwrap();
        let live = Arc::new(LiveBrokers::default());
        live.update([1, 2]);
        let p = Partition::new(log, 1, clock, None).with_live_brokers(live.clone());
        p.make_leader(1, vec![1, 2, 3], vec![1]);
        p.append_records_to_leader(&batch(3), 1).unwrap();
        // Broker 3 is gone: its last fetch, completing late, does not bring it back.
        assert_eq!(p.update_follower_fetch_state(3, 3).unwrap(), None);
        assert_eq!(p.isr(), vec![1]);
        assert_eq!(
            p.update_follower_fetch_state(2, 3).unwrap(),
            Some(vec![1, 2])
        );
        live.update([1, 2, 3]);
        assert_eq!(
            p.update_follower_fetch_state(3, 3).unwrap(),
            Some(vec![1, 2, 3])
        );
    }

    #[test]
    fn a_shrink_moves_the_high_watermark_only_once_committed() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let (p, _) = partition(dir.path(), clock.clone());
        p.make_leader(4, vec![1, 2], vec![1, 2]);
        p.append_records_to_leader(&batch(3), 1).unwrap();
        clock.advance(30_001);
        let (epoch, isr) = p.isr_shrink(30_000).unwrap();
        assert_eq!((epoch, isr.clone()), (4, vec![1]));
        // Not recorded yet: the ISR and the high watermark still wait for replica 2.
        assert_eq!(p.isr(), vec![1, 2]);
        assert_eq!(p.high_watermark(), 0);
        // A shrink proposed at an older epoch is not applied.
        p.make_leader(5, vec![1, 2], vec![1, 2]);
        assert!(!p.commit_isr(epoch, isr.clone()));
        assert_eq!(p.isr(), vec![1, 2]);
        assert!(p.commit_isr(5, isr));
        assert_eq!(p.isr(), vec![1]);
        assert_eq!(p.high_watermark(), 3);
    }
}
