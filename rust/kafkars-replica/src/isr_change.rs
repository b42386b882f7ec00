//! The ISR change set: what the leader's ISRs should become, one proposal per
//! partition, recorded by the caller where the controller reads it (ZooKeeper) and only
//! then applied (Kafka's isrChangeSet and its AlterPartition pending state).
//!
//! Expansions happen on the followers' fetches and count for the high watermark at once
//! (waiting for one more replica is safe). A shrink is only proposed: until it is
//! recorded the high watermark keeps waiting for the larger ISR, so a leader cut off from
//! ZooKeeper cannot shrink its ISR and acknowledge acks=all writes alone.

use std::collections::HashSet;

use kafkars_storage::TopicPartition;

use crate::lock;
use crate::replica_manager::ReplicaManager;

/// The ISR this broker, as leader at `leader_epoch`, proposes for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub topic_partition: TopicPartition,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
}

impl ReplicaManager {
    /// The ISR changes to record now, one per partition this broker leads, sorted: the
    /// ISR without the followers not caught up within `max_lag_ms`
    /// (`replica.lag.time.max.ms`) where any must go, else the current ISR where a
    /// follower joined since the last call. A shrink proposed here counts once
    /// [`commit_isr_change`](Self::commit_isr_change) applies it; one not recorded is
    /// proposed again next time. Joins are taken from the set whether recorded or not.
    pub fn propose_isr_changes(&self, max_lag_ms: i64) -> Vec<IsrChange> {
        let expanded: HashSet<TopicPartition> = self
            .take_isr_expansions()
            .into_iter()
            .map(|(tp, _)| tp)
            .collect();
        let mut changes: Vec<IsrChange> = self
            .partitions()
            .into_iter()
            .filter_map(|p| {
                let tp = p.topic_partition();
                let (leader_epoch, isr) = match p.isr_shrink(max_lag_ms) {
                    // The smaller ISR also covers a join since the last call.
                    Some(shrink) => shrink,
                    None if expanded.contains(tp) => p.leader_epoch_and_isr()?,
                    None => return None,
                };
                Some(IsrChange {
                    topic_partition: tp.clone(),
                    leader_epoch,
                    isr,
                })
            })
            .collect();
        changes.sort_by(|a, b| a.topic_partition.cmp(&b.topic_partition));
        changes
    }

    /// Applies a proposed change once recorded: the partition's ISR becomes `change.isr`
    /// and its high watermark may move. False (nothing applied) if this broker no longer
    /// leads the partition at that epoch.
    pub fn commit_isr_change(&self, change: &IsrChange) -> bool {
        self.partition(&change.topic_partition)
            .is_some_and(|p| p.commit_isr(change.leader_epoch, change.isr.clone()))
    }

    /// Shrinks the ISRs at once, where nothing else records them (a broker with no
    /// controller to tell); returns the new ISRs, sorted by partition.
    pub fn maybe_shrink_isr(&self, max_lag_ms: i64) -> Vec<(TopicPartition, Vec<i32>)> {
        let mut shrunk: Vec<(TopicPartition, Vec<i32>)> = self
            .partitions()
            .into_iter()
            .filter_map(|p| {
                let isr = p.maybe_shrink_isr(max_lag_ms)?;
                Some((p.topic_partition().clone(), isr))
            })
            .collect();
        shrunk.sort();
        shrunk
    }

    /// The ISR expansions followers' fetches made since the last call (or the last
    /// [`propose_isr_changes`](Self::propose_isr_changes)), with the ISR each made.
    pub fn take_isr_expansions(&self) -> Vec<(TopicPartition, Vec<i32>)> {
        std::mem::take(&mut *lock(&self.isr_expansions))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use kafkars_storage::{LogConfig, LogManager, MockClock, Partition};
    use kafkars_timer::DEFAULT_PURGE_INTERVAL;
    use uuid::Uuid;

    use super::*;
    use crate::LeaderAndIsrPartitionState;
    use crate::tests::batch;

    const LAG_MS: i64 = 30_000;

    fn manager(dir: &Path, clock: Arc<MockClock>) -> Arc<ReplicaManager> {
        let logs = LogManager::new(vec![dir.to_path_buf()], 1, None, clock.clone()).unwrap();
        ReplicaManager::new(1, Arc::new(logs), None, clock, DEFAULT_PURGE_INTERVAL)
    }

    /// Broker 1 leads `t`-`index` with replicas 1, 2, 3 and `isr`, holding 2 records.
    fn lead(m: &ReplicaManager, index: i32, isr: &[i32]) -> Arc<Partition> {
        let state = LeaderAndIsrPartitionState {
            leader_epoch: 5,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            topic_id: Uuid::nil(),
        };
        let tp = TopicPartition::new("t", index);
        let p = m
            .become_leader(&tp, LogConfig::default(), state, 1)
            .unwrap();
        p.append_records_to_leader(&batch(2), 1).unwrap();
        p
    }

    fn change(index: i32, isr: &[i32]) -> IsrChange {
        IsrChange {
            topic_partition: TopicPartition::new("t", index),
            leader_epoch: 5,
            isr: isr.to_vec(),
        }
    }

    #[test]
    fn a_lagging_follower_is_proposed_out_and_leaves_only_once_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(dir.path(), clock.clone());
        let p = lead(&m, 0, &[1, 2]);
        assert!(m.propose_isr_changes(LAG_MS).is_empty(), "nobody lags yet");
        clock.advance(LAG_MS + 1);
        let proposed = m.propose_isr_changes(LAG_MS);
        assert_eq!(proposed, vec![change(0, &[1])]);
        // Not recorded: the ISR and the high watermark still wait for broker 2, and the
        // shrink is proposed again.
        assert_eq!((p.isr(), p.high_watermark()), (vec![1, 2], 0));
        assert_eq!(m.propose_isr_changes(LAG_MS), proposed);
        assert!(m.commit_isr_change(&proposed[0]));
        assert_eq!((p.isr(), p.high_watermark()), (vec![1], 2));
        assert!(m.propose_isr_changes(LAG_MS).is_empty());
        m.shutdown();
    }

    #[test]
    fn a_join_is_proposed_once_with_the_current_isr() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path(), Arc::new(MockClock::new(0)));
        let p = lead(&m, 0, &[1]);
        let q = lead(&m, 1, &[1]);
        // Joins on two partitions; the second is recorded by the fetch path as well.
        assert_eq!(
            p.update_follower_fetch_state(2, 2).unwrap(),
            Some(vec![1, 2])
        );
        m.isr_expansions
            .lock()
            .unwrap()
            .push((p.topic_partition().clone(), vec![1, 2]));
        let joined = q.update_follower_fetch_state(3, 2).unwrap().unwrap();
        m.isr_expansions
            .lock()
            .unwrap()
            .push((q.topic_partition().clone(), joined));
        assert_eq!(
            m.propose_isr_changes(LAG_MS),
            vec![change(0, &[1, 2]), change(1, &[1, 3])]
        );
        assert!(m.propose_isr_changes(LAG_MS).is_empty(), "taken once");
        assert!(m.commit_isr_change(&change(0, &[1, 2])));
        assert_eq!(p.isr(), vec![1, 2]);
        m.shutdown();
    }

    #[test]
    fn a_join_and_a_shrink_of_one_partition_merge_into_one_change() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(dir.path(), clock.clone());
        let p = lead(&m, 0, &[1, 2]);
        clock.advance(LAG_MS + 1);
        // Broker 3 catches up and joins while broker 2 has been silent too long.
        let joined = p.update_follower_fetch_state(3, 2).unwrap().unwrap();
        m.isr_expansions
            .lock()
            .unwrap()
            .push((p.topic_partition().clone(), joined));
        assert_eq!(m.propose_isr_changes(LAG_MS), vec![change(0, &[1, 3])]);
        m.shutdown();
    }

    #[test]
    fn a_change_for_a_past_epoch_or_a_lost_leadership_is_not_applied() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(dir.path(), clock.clone());
        let p = lead(&m, 0, &[1, 2]);
        clock.advance(LAG_MS + 1);
        let proposed = m.propose_isr_changes(LAG_MS).remove(0);
        // A LeaderAndIsr at a new epoch came in between: the recorded ISR is stale.
        let state = LeaderAndIsrPartitionState {
            leader_epoch: 6,
            replicas: vec![1, 2, 3],
            isr: vec![1, 2],
            topic_id: Uuid::nil(),
        };
        m.become_leader(p.topic_partition(), LogConfig::default(), state, 1)
            .unwrap();
        assert!(!m.commit_isr_change(&proposed));
        assert_eq!(p.isr(), vec![1, 2]);
        m.stop_fetching(p.topic_partition());
        assert!(!m.commit_isr_change(&IsrChange {
            leader_epoch: 6,
            ..proposed.clone()
        }));
        assert!(
            m.propose_isr_changes(LAG_MS).is_empty(),
            "a follower proposes nothing"
        );
        assert!(
            !m.commit_isr_change(&change(9, &[1])),
            "an unknown partition"
        );
        m.shutdown();
    }

    #[test]
    fn without_a_controller_the_isr_shrinks_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(MockClock::new(0));
        let m = manager(dir.path(), clock.clone());
        let p = lead(&m, 0, &[1, 2, 3]);
        clock.advance(10);
        p.update_follower_fetch_state(3, 2).unwrap();
        clock.advance(LAG_MS - 5);
        assert_eq!(
            m.maybe_shrink_isr(LAG_MS),
            vec![(TopicPartition::new("t", 0), vec![1, 3])]
        );
        assert_eq!(p.isr(), vec![1, 3]);
        assert!(m.maybe_shrink_isr(LAG_MS).is_empty());
        m.shutdown();
    }
}
