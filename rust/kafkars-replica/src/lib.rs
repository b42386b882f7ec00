//! Replication on the broker, in plain Rust (Kafka's `ReplicaManager` side of it).
//!
//! - [`ReplicaManager`]: the partitions this broker holds and their roles (become leader
//!   or follower, removal, offline log dirs); appends a Produce as the leader and reads a
//!   Fetch, answering at once or after a wait in the fetch or produce purgatory (Kafka's
//!   DelayedFetch and DelayedProduce); every partition append or high-watermark move
//!   wakes them on the appending thread. Its ISR change set proposes ISR shrinks and
//!   expansions ([`IsrChange`]), applied once the caller recorded them.
//! - [`ReplicaFetcherManager`]: the follower side, threads fetching from the leaders.
//!
//! Who asked and how the answer is sent is the caller's: completion goes through
//! [`FetchCompletion`] and [`ProduceCompletion`]. The broker's Python shell keeps routing,
//! coordinators, the controller and the ZooKeeper writes, and calls into this crate
//! through `kafkars-python`.

mod fetch;
mod isr_change;
mod partition_map;
mod produce;
mod replica_fetcher;
mod replica_manager;

pub use fetch::{FetchCompletion, FetchPartition, FetchResult, FetchSpec, FetchTopic};
pub use isr_change::IsrChange;
pub use partition_map::LeaderAndIsrPartitionState;
pub use produce::{AppendPartition, AppendRefusal, ProduceCompletion};
pub use replica_fetcher::{FetchState, FetcherConfig, ReplicaFetcherManager};
pub use replica_manager::ReplicaManager;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
pub(crate) mod tests {
    use kafkars_record::{NewRecord, RecordBatchBuilder};

    /// A batch of `n` records.
    pub(crate) fn batch(n: usize) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new();
        for i in 0..n {
            b.append(NewRecord::with_value(i as i64, b"v".to_vec()));
        }
        b.build().unwrap()
    }
}
