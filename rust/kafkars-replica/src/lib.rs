//! Replication on the broker, in plain Rust (Kafka's `ReplicaManager` side of it).
//!
//! - [`ReplicaManager`]: appends a Produce as the leader and reads a Fetch, answering at
//!   once or after a wait in the fetch or produce purgatory (Kafka's DelayedFetch and
//!   DelayedProduce); every partition append or high-watermark move wakes them on the
//!   appending thread. Followers' fetches record ISR expansions (the ISR change set).
//! - [`ReplicaFetcherManager`]: the follower side, threads fetching from the leaders.
//!
//! Who asked and how the answer is sent is the caller's: completion goes through
//! [`FetchCompletion`] and [`ProduceCompletion`]. The broker's Python shell keeps the
//! partition map, routing, coordinators and the controller, and calls into this crate
//! through `kafkars-python`.

mod fetch;
mod produce;
mod replica_fetcher;
mod replica_manager;

pub use fetch::{FetchCompletion, FetchPartition, FetchResult, FetchSpec, FetchTopic};
pub use produce::{AppendPartition, AppendRefusal, ProduceCompletion};
pub use replica_fetcher::{FetchState, FetcherConfig, ReplicaFetcherManager};
pub use replica_manager::ReplicaManager;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
