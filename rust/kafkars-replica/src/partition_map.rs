//! The ReplicaManager's partitions: which this broker holds, in which role, and which
//! are offline (Kafka's ReplicaManager.becomeLeaderOrFollower, stopReplicas and
//! handleLogDirFailure).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLockReadGuard};

use kafkars_storage::{
    LiveBrokers, LogConfig, LogError, LogManager, Partition, Result, TopicPartition,
    partition_metadata,
};
use uuid::Uuid;

use crate::lock;
use crate::replica_manager::ReplicaManager;

/// One partition's state in a LeaderAndIsr, as this broker applies it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderAndIsrPartitionState {
    pub leader_epoch: i32,
    /// Empty: this broker alone.
    pub replicas: Vec<i32>,
    /// Empty: this broker alone (leader) or unknown (follower).
    pub isr: Vec<i32>,
    /// Recorded in the partition's `partition.metadata`; nil when unknown.
    pub topic_id: Uuid,
}

/// A path as the OS resolves it, so a log dir compares equal however it was spelled.
fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn read<T>(l: &std::sync::RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

impl ReplicaManager {
    /// Followers join the ISR of partitions created from now on only while their broker
    /// is in `live_brokers` (a cluster member's brokers, from UpdateMetadata).
    pub fn set_live_brokers(&self, live_brokers: Arc<LiveBrokers>) {
        *self.live_brokers.write().unwrap_or_else(|e| e.into_inner()) = Some(live_brokers);
    }

    /// The partition's handle whatever this broker's role in it.
    pub fn partition(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        read(&self.partitions).get(tp).cloned()
    }

    /// Every partition this broker holds.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        read(&self.partitions).values().cloned().collect()
    }

    /// `[bytes_in, messages_in, bytes_out]` per topic of the partitions deleted since
    /// start-up.
    pub fn retired_counters(&self) -> HashMap<String, [u64; 3]> {
        lock(&self.retired_counters).clone()
    }

    fn log_manager(&self, tp: &TopicPartition) -> Result<Arc<LogManager>> {
        read(&self.log_manager)
            .clone()
            .ok_or_else(|| LogError::Closed(tp.to_string()))
    }

    /// The partition's handle, its log opened on first use; `topic_id` (unless nil) is
    /// recorded in its `partition.metadata` (INCONSISTENT_TOPIC_ID if the directory is
    /// another topic's, as Kafka's Partition.createLogIfNotExists refuses it). Called
    /// with `changes` held.
    fn get_or_create_partition(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
        topic_id: Uuid,
    ) -> Result<Arc<Partition>> {
        let partition = match self.partition(tp) {
            Some(p) => p,
            None => {
                let log = self.log_manager(tp)?.get_or_create_log(tp, config)?;
                let mut p = Partition::new(
                    log,
                    self.broker_id,
                    Arc::clone(&self.clock),
                    Some(self.listener()),
                );
                if let Some(live) = read(&self.live_brokers).clone() {
                    p = p.with_live_brokers(live);
                }
                let p = Arc::new(p);
                self.partitions
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tp.clone(), Arc::clone(&p));
                p
            }
        };
        if !topic_id.is_nil() {
            partition_metadata::assign(&partition.log().dir(), topic_id.as_bytes())?;
        }
        Ok(partition)
    }

    fn in_offline_dir(&self, partition: &Partition) -> bool {
        let offline = lock(&self.offline_dirs);
        !offline.is_empty()
            && partition
                .log()
                .dir()
                .parent()
                .is_some_and(|d| offline.contains(&resolved(d)))
    }

    fn check_online(&self, tp: &TopicPartition) -> Result<()> {
        match self.partition(tp) {
            Some(p) if self.in_offline_dir(&p) => Err(LogError::Offline(tp.to_string())),
            _ => Ok(()),
        }
    }

    /// Kafka's handleLogDirFailure: the replicas in the failed `log_dir` stop fetching
    /// and stay offline (LeaderAndIsr gets KAFKA_STORAGE_ERROR for them until restart).
    /// Returns them, sorted; nothing on a second call for the same dir.
    pub fn handle_log_dir_failure(&self, log_dir: &Path) -> Vec<TopicPartition> {
        let _changes = lock(&self.changes);
        if !lock(&self.offline_dirs).insert(resolved(log_dir)) {
            return Vec::new();
        }
        let mut offline: Vec<TopicPartition> = self
            .partitions()
            .into_iter()
            .filter(|p| self.in_offline_dir(p))
            .map(|p| p.topic_partition().clone())
            .collect();
        offline.sort();
        if let Some(fetchers) = &self.fetchers {
            offline.iter().for_each(|tp| fetchers.remove_partition(tp));
        }
        offline
    }

    /// Kafka's leader epoch check in becomeLeaderOrFollower: a LeaderAndIsr partition
    /// state is applied only if its leader epoch is newer than the one held here (a
    /// partition not held here has none). Returns false for an older epoch, and for the
    /// same epoch unless it only brings a topic id this broker's log lacks (or the log
    /// has one the request lacks): Kafka answers those STALE_CONTROLLER_EPOCH. A topic
    /// id of another topic passes, so that becoming leader or follower refuses it with
    /// INCONSISTENT_TOPIC_ID as Kafka checks it first.
    pub fn is_newer_leader_epoch(
        &self,
        tp: &TopicPartition,
        leader_id: i32,
        leader_epoch: i32,
        topic_id: Uuid,
    ) -> bool {
        let Some(p) = self.partition(tp) else {
            return true;
        };
        // An offline replica is answered KAFKA_STORAGE_ERROR whatever the epoch (Kafka
        // checks HostedPartition.Offline first): the controller learns from it which
        // replicas a failed log dir took, in a LeaderAndIsr at the current epoch.
        if self.in_offline_dir(&p) {
            return true;
        }
        let current = p.leader_epoch();
        let log_topic_id = partition_metadata::read(&p.log().dir()).ok().flatten();
        match log_topic_id {
            Some(id) if !topic_id.is_nil() && id != *topic_id.as_bytes() => true,
            _ if leader_epoch != current => leader_epoch > current,
            None => !topic_id.is_nil(),
            Some(_) => topic_id.is_nil() && leader_id != self.broker_id,
        }
    }

    /// Leads `tp` at `state`'s leader epoch (a new epoch or a new role resets the
    /// followers' positions); KAFKA_STORAGE_ERROR if its log dir failed.
    pub fn become_leader(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
        state: LeaderAndIsrPartitionState,
        min_insync_replicas: i32,
    ) -> Result<Arc<Partition>> {
        let _changes = lock(&self.changes);
        self.check_online(tp)?;
        let p = self.get_or_create_partition(tp, config, state.topic_id)?;
        if let Some(fetchers) = &self.fetchers
            && !p.is_leader()
        {
            fetchers.remove_partition(tp);
        }
        p.set_min_insync_replicas(min_insync_replicas);
        if !p.is_leader() || p.leader_epoch() != state.leader_epoch {
            let alone = || vec![self.broker_id];
            let replicas = Some(state.replicas).filter(|r| !r.is_empty());
            let isr = Some(state.isr).filter(|r| !r.is_empty());
            p.make_leader(
                state.leader_epoch,
                replicas.unwrap_or_else(alone),
                isr.unwrap_or_else(alone),
            );
        }
        Ok(p)
    }

    /// Follows `leader_id` for `tp`, fetching from `leader_endpoint` (its inter-broker
    /// listener, `(host, port)`) when given; what waits on the partition is answered
    /// (NOT_LEADER_OR_FOLLOWER for produces, a re-read for fetches).
    /// KAFKA_STORAGE_ERROR if its log dir failed.
    pub fn become_follower(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
        leader_id: i32,
        state: LeaderAndIsrPartitionState,
        leader_endpoint: Option<(&str, u16)>,
    ) -> Result<Arc<Partition>> {
        let p = {
            let _changes = lock(&self.changes);
            self.check_online(tp)?;
            let p = self.get_or_create_partition(tp, config, state.topic_id)?;
            let epoch = state.leader_epoch;
            let changed = p.make_follower(leader_id, epoch, state.replicas, state.isr);
            if let Some(fetchers) = &self.fetchers {
                match leader_endpoint {
                    None => fetchers.remove_partition(tp),
                    Some((host, port))
                        if changed
                            || !fetchers
                                .fetch_states()
                                .iter()
                                .any(|s| &s.topic_partition == tp) =>
                    {
                        fetchers.add_partitions(
                            leader_id,
                            host,
                            port,
                            vec![(Arc::clone(&p), epoch)],
                        )
                    }
                    Some(_) => {}
                }
            }
            p
        };
        self.check_and_complete(tp);
        Ok(p)
    }

    /// Applies a topic's new config to its partitions' logs.
    pub fn update_config(&self, topic: &str, config: &LogConfig, min_insync_replicas: i32) {
        for p in self.partitions() {
            if p.topic_partition().topic == topic {
                p.log().update_config(config.clone());
                p.set_min_insync_replicas(min_insync_replicas);
            }
        }
    }

    /// Deletes every partition of `topic` held here.
    pub fn remove_topic(&self, topic: &str) -> Result<()> {
        let _changes = lock(&self.changes);
        let tps: Vec<TopicPartition> = read(&self.partitions)
            .keys()
            .filter(|tp| tp.topic == topic)
            .cloned()
            .collect();
        tps.iter()
            .try_for_each(|tp| self.remove_partition_locked(tp))
    }

    /// Deletes one replica's log (StopReplica with delete), held here or only on disk.
    pub fn remove_partition(&self, tp: &TopicPartition) -> Result<()> {
        let _changes = lock(&self.changes);
        if self.partition(tp).is_some() {
            return self.remove_partition_locked(tp);
        }
        let log_manager = self.log_manager(tp)?;
        if log_manager.get_log(tp).is_some() {
            log_manager.delete_log(tp)?;
        }
        Ok(())
    }

    fn remove_partition_locked(&self, tp: &TopicPartition) -> Result<()> {
        if let Some(fetchers) = &self.fetchers {
            fetchers.remove_partition(tp);
        }
        let removed = self
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp);
        let Some(p) = removed else { return Ok(()) };
        if p.is_leader() {
            // Waiting produces check leadership on this handle: without this they would
            // wait out their timeout instead of hearing NOT_LEADER_OR_FOLLOWER now.
            p.make_follower(-1, p.leader_epoch(), Vec::new(), Vec::new());
        }
        {
            use std::sync::atomic::Ordering::Relaxed;
            let c = p.counters();
            let mut retired = lock(&self.retired_counters);
            let r = retired.entry(tp.topic.clone()).or_default();
            r[0] += c.bytes_in.load(Relaxed);
            r[1] += c.messages_in.load(Relaxed);
            r[2] += c.bytes_out.load(Relaxed);
        }
        let deleted = self.log_manager(tp).and_then(|m| m.delete_log(tp));
        // Fetches and produces waiting on it are answered now, not at their timeout.
        self.check_and_complete(tp);
        deleted.map(drop)
    }

    /// Stops replicating `tp` without deleting it (StopReplica without delete, on a
    /// broker shutting down); what waits on it is answered.
    pub fn stop_fetching(&self, tp: &TopicPartition) {
        {
            let _changes = lock(&self.changes);
            let Some(p) = self.partition(tp) else { return };
            if let Some(fetchers) = &self.fetchers {
                fetchers.remove_partition(tp);
            }
            if p.is_leader() {
                p.make_follower(-1, p.leader_epoch(), Vec::new(), Vec::new());
            }
        }
        self.check_and_complete(tp);
    }

    /// After a controlled shutdown moved them: every partition led here that has
    /// followers stops being led here, as the controller's StopReplica does, and what
    /// waits on it is answered (NOT_LEADER_OR_FOLLOWER).
    pub fn resign_replicated_leaderships(&self) {
        for p in self.partitions() {
            if p.is_leader() && p.replicas().iter().any(|&id| id != self.broker_id) {
                self.stop_fetching(p.topic_partition());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::ResponseError;
    use kafkars_storage::MockClock;
    use kafkars_timer::DEFAULT_PURGE_INTERVAL;

    use super::*;
    use crate::tests::batch;

    fn manager(dirs: &[&Path], clock: Arc<MockClock>) -> Arc<ReplicaManager> {
        let dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
        let logs = LogManager::new(dirs, 1, None, clock.clone()).unwrap();
        ReplicaManager::new(1, Arc::new(logs), None, clock, DEFAULT_PURGE_INTERVAL)
    }

    fn state(leader_epoch: i32, replicas: &[i32], isr: &[i32]) -> LeaderAndIsrPartitionState {
        LeaderAndIsrPartitionState {
            leader_epoch,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            topic_id: Uuid::nil(),
        }
    }

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    #[test]
    fn a_lone_leader_leads_alone_and_keeps_its_followers_positions_within_an_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        let config = LogConfig::default();
        let p = m
            .become_leader(&tp("t", 0), config.clone(), state(0, &[], &[]), 1)
            .unwrap();
        assert_eq!((p.replicas(), p.isr()), (vec![1], vec![1]));
        assert!(Arc::ptr_eq(&m.partition(&tp("t", 0)).unwrap(), &p));
        // A replicated leader: the follower's position survives a repeated LeaderAndIsr
        // at the same epoch and is reset by a new epoch.
        m.become_leader(&tp("t", 0), config.clone(), state(1, &[1, 2], &[1, 2]), 2)
            .unwrap();
        p.append_records_to_leader(&batch(2), 1).unwrap();
        p.update_follower_fetch_state(2, 2).unwrap();
        m.become_leader(&tp("t", 0), config.clone(), state(1, &[1, 2], &[1, 2]), 2)
            .unwrap();
        assert_eq!(p.replica_state(2).unwrap().log_end_offset, 2);
        m.become_leader(&tp("t", 0), config, state(2, &[1, 2], &[1, 2]), 2)
            .unwrap();
        assert_eq!(p.replica_state(2).unwrap().log_end_offset, -1);
        m.shutdown();
    }

    #[test]
    fn only_a_newer_leader_epoch_is_applied_as_kafka_does() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        let t0 = tp("t", 0);
        let (id, other) = (Uuid::from_u128(7), Uuid::from_u128(8));
        // Not held here: any epoch, the first one 0 included.
        assert!(m.is_newer_leader_epoch(&t0, 1, 0, id));
        m.become_leader(&t0, LogConfig::default(), state(3, &[1, 2], &[1, 2]), 1)
            .unwrap();
        assert!(m.is_newer_leader_epoch(&t0, 2, 4, id));
        assert!(!m.is_newer_leader_epoch(&t0, 2, 2, id));
        // The same epoch passes only to bring the topic id the log lacks.
        assert!(m.is_newer_leader_epoch(&t0, 1, 3, id));
        assert!(!m.is_newer_leader_epoch(&t0, 1, 3, Uuid::nil()));
        let mut s = state(3, &[1, 2], &[1, 2]);
        s.topic_id = id;
        m.become_leader(&t0, LogConfig::default(), s, 1).unwrap();
        assert!(!m.is_newer_leader_epoch(&t0, 1, 3, id));
        // A follower told of no topic id drops the log's; a leader does not.
        assert!(m.is_newer_leader_epoch(&t0, 2, 3, Uuid::nil()));
        assert!(!m.is_newer_leader_epoch(&t0, 1, 3, Uuid::nil()));
        // Another topic's id is left to become_leader's INCONSISTENT_TOPIC_ID.
        assert!(m.is_newer_leader_epoch(&t0, 1, 2, other));
        m.shutdown();
    }

    #[test]
    fn a_topic_id_is_recorded_and_another_topics_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        let mut s = state(0, &[], &[]);
        s.topic_id = Uuid::from_u128(7);
        m.become_leader(&tp("t", 0), LogConfig::default(), s.clone(), 1)
            .unwrap();
        s.topic_id = Uuid::from_u128(8);
        let e = m
            .become_leader(&tp("t", 0), LogConfig::default(), s, 1)
            .unwrap_err();
        assert_eq!(
            e.kafka_error_code(),
            ResponseError::InconsistentTopicId.code()
        );
        m.shutdown();
    }

    #[test]
    fn becoming_a_follower_answers_a_waiting_produce() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        let p = m
            .become_leader(
                &tp("t", 0),
                LogConfig::default(),
                state(0, &[1, 2], &[1, 2]),
                1,
            )
            .unwrap();
        let info = p.append_records_to_leader(&batch(1), -1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let done = Box::new(move |codes: Vec<i16>| tx.send(codes).unwrap());
        m.delay_produce(Arc::clone(&p), info.last_offset + 1, 60_000, done);
        assert!(rx.try_recv().is_err());
        m.become_follower(
            &tp("t", 0),
            LogConfig::default(),
            2,
            state(1, &[1, 2], &[2]),
            None,
        )
        .unwrap();
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![ResponseError::NotLeaderOrFollower.code()]
        );
        assert_eq!(p.leader_id(), 2);
        m.shutdown();
    }

    #[test]
    fn removing_a_partition_deletes_its_log_and_keeps_its_counters() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        for i in 0..2 {
            let p = m
                .become_leader(&tp("t", i), LogConfig::default(), state(0, &[], &[]), 1)
                .unwrap();
            p.append_records_to_leader(&batch(3), 1).unwrap();
        }
        m.remove_partition(&tp("t", 0)).unwrap();
        assert!(m.partition(&tp("t", 0)).is_none());
        assert!(m.partition(&tp("t", 1)).is_some());
        assert_eq!(m.retired_counters()["t"][1], 3);
        m.remove_topic("t").unwrap();
        assert!(m.partitions().is_empty());
        assert_eq!(m.retired_counters()["t"][1], 6);
        // Removing what is gone, or only on disk, is no error.
        m.remove_partition(&tp("t", 0)).unwrap();
        m.shutdown();
    }

    #[test]
    fn stopping_and_resigning_give_up_leadership_of_replicated_partitions_only() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(&[dir.path()], Arc::new(MockClock::new(0)));
        let alone = m
            .become_leader(&tp("a", 0), LogConfig::default(), state(0, &[], &[]), 1)
            .unwrap();
        let replicated = m
            .become_leader(
                &tp("r", 0),
                LogConfig::default(),
                state(0, &[1, 2], &[1]),
                1,
            )
            .unwrap();
        m.resign_replicated_leaderships();
        assert!(alone.is_leader());
        assert!(!replicated.is_leader());
        m.stop_fetching(&tp("a", 0));
        assert!(!alone.is_leader());
        assert!(m.partition(&tp("a", 0)).is_some(), "the log stays");
        m.shutdown();
    }

    #[test]
    fn a_failed_log_dir_takes_its_replicas_offline_once() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = manager(&[one.path(), two.path()], Arc::new(MockClock::new(0)));
        let mut in_one = Vec::new();
        for i in 0..4 {
            let p = m
                .become_leader(&tp("t", i), LogConfig::default(), state(0, &[], &[]), 1)
                .unwrap();
            if p.log().dir().parent() == Some(one.path()) {
                in_one.push(tp("t", i));
            }
        }
        assert!(!in_one.is_empty() && in_one.len() < 4, "both dirs are used");
        assert_eq!(m.handle_log_dir_failure(one.path()), in_one);
        assert!(m.handle_log_dir_failure(one.path()).is_empty());
        // The controller's LeaderAndIsr at the current epoch reaches the storage error
        // (not STALE_CONTROLLER_EPOCH), which tells it the replica is offline.
        assert!(m.is_newer_leader_epoch(&in_one[0], 1, 0, Uuid::nil()));
        let e = m
            .become_leader(&in_one[0], LogConfig::default(), state(0, &[], &[]), 1)
            .unwrap_err();
        assert_eq!(
            e.kafka_error_code(),
            ResponseError::KafkaStorageError.code()
        );
        m.shutdown();
    }

    #[test]
    fn a_released_log_manager_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(&[dir.path()], clock.clone());
        let p = m
            .become_leader(&tp("t", 0), LogConfig::default(), state(0, &[], &[]), 1)
            .unwrap();
        m.shutdown();
        m.release_log_manager();
        // The dir lock went with the manager's last reference (a partition handle still
        // held does not keep it): a broker restarted in this process takes the dir.
        LogManager::new(vec![dir.path().to_path_buf()], 1, None, clock).unwrap();
        let e = m
            .become_leader(&tp("t", 1), LogConfig::default(), state(0, &[], &[]), 1)
            .unwrap_err();
        assert_eq!(
            e.kafka_error_code(),
            ResponseError::KafkaStorageError.code()
        );
        drop(p);
    }
}
