//! Delayed operations and the purgatory that holds them (Kafka's
//! `DelayedOperation` and `DelayedOperationPurgatory`).
//!
//! An operation waits for a condition (enough bytes for a fetch, ISR acks for
//! a produce, all members for a join) for at most `delay_ms`. It is watched
//! under one or more keys; whoever changes the state behind a key calls
//! [`DelayedOperationPurgatory::check_and_complete`]. If nothing completes it
//! in time the timer expires it.

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::system_timer::{CancelTimer, SystemTimer};
use crate::timer_task_list::TimerHandle;

/// Kafka's default `purgeInterval`: sweep the watch lists once this many
/// completed operations may still be sitting in them.
pub const DEFAULT_PURGE_INTERVAL: usize = 1000;

/// Number of independently locked watch-list shards.
const SHARDS: usize = 16;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in an operation's callback may poison its lock; the guarded
    // data (a flag or a handle) is still consistent, so carry on.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Completion bookkeeping every [`DelayedOperation`] embeds and exposes via
/// [`DelayedOperation::state`].
#[derive(Default)]
pub struct OperationState {
    completed: AtomicBool,
    /// Serializes `try_complete` and expiration of one operation, as Kafka's
    /// per-operation lock does, so implementations see a stable state.
    lock: Mutex<()>,
    /// Set by a `check_and_complete` that found the lock taken: the holder (or the
    /// setter) checks again, so no event is lost (Kafka's tryCompletePending).
    try_complete_pending: AtomicBool,
    /// The pending timeout, so completion can remove it from the timer.
    timeout: Mutex<Option<(Weak<dyn CancelTimer>, TimerHandle)>>,
}

impl std::fmt::Debug for OperationState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationState")
            .field("completed", &self.is_completed())
            .finish()
    }
}

impl OperationState {
    /// A fresh, not completed state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the operation has completed (by either path).
    pub fn is_completed(&self) -> bool {
        self.completed.load(Ordering::SeqCst)
    }

    /// Claims completion; true for exactly one caller over the state's life.
    fn claim(&self) -> bool {
        self.completed
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    fn set_timeout(&self, timer: Weak<dyn CancelTimer>, handle: TimerHandle) {
        *lock(&self.timeout) = Some((timer, handle));
    }

    /// Removes the pending timeout, if any (at most once).
    fn cancel_timeout(&self) {
        let timeout = lock(&self.timeout).take();
        if let Some((timer, handle)) = timeout.and_then(|(t, h)| Some((t.upgrade()?, h))) {
            timer.cancel(handle);
        }
    }
}

/// An operation that completes when a condition holds, or when it times out.
///
/// `on_complete` runs exactly once, whichever way the operation ends and
/// however completion and expiration race across threads. `try_complete`,
/// `on_expiration` and the expiry-time `on_complete` run under the
/// operation's own lock; `check_and_complete` only tries that lock, so
/// `on_complete` may check other operations, even this one, without deadlock.
pub trait DelayedOperation: Send + Sync + 'static {
    /// The embedded completion state.
    fn state(&self) -> &OperationState;

    /// How long the operation may wait before it expires.
    fn delay_ms(&self) -> u64;

    /// Checks the completion condition; if it holds, calls
    /// [`force_complete`](Self::force_complete) and returns its result.
    fn try_complete(&self) -> bool;

    /// The completion logic (e.g. sending the response). Runs exactly once.
    fn on_complete(&self);

    /// Called on timeout, just before `on_complete`.
    fn on_expiration(&self);

    /// Completes the operation now unless it already completed: cancels the
    /// timeout and runs `on_complete`. True if this call did the completing.
    fn force_complete(&self) -> bool {
        if !self.state().claim() {
            return false;
        }
        self.state().cancel_timeout();
        self.on_complete();
        true
    }

    /// Whether the operation has completed.
    fn is_completed(&self) -> bool {
        self.state().is_completed()
    }
}

/// `try_complete` under the operation's lock, skipping completed operations
/// (Kafka's maybeTryComplete). The lock is only tried: the thread holding it may
/// be this one, completing the operation whose `on_complete` led here (a
/// follower's fetch moving the high watermark re-checks the fetch purgatory),
/// and waiting would deadlock. A thread that finds it taken sets
/// `try_complete_pending`; whoever holds the lock checks again after releasing
/// it, so an event that arrives meanwhile is not lost.
fn safe_try_complete<Op: DelayedOperation>(op: &Op) -> bool {
    let state = op.state();
    let mut done = false;
    loop {
        let retry = match state.lock.try_lock() {
            Ok(guard) => {
                state.try_complete_pending.store(false, Ordering::SeqCst);
                done = !op.is_completed() && op.try_complete();
                drop(guard);
                state.try_complete_pending.load(Ordering::SeqCst)
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                drop(e.into_inner());
                state.try_complete_pending.store(false, Ordering::SeqCst);
                done = !op.is_completed() && op.try_complete();
                false
            }
            // If the flag was already set the holder is bound to see it; otherwise
            // set it and try once more, as the holder may have just let go.
            Err(std::sync::TryLockError::WouldBlock) => {
                !state.try_complete_pending.swap(true, Ordering::SeqCst)
            }
        };
        if op.is_completed() || !retry {
            return done;
        }
    }
}

/// The timeout path: `on_expiration` then `on_complete`, exactly once.
fn expire<Op: DelayedOperation>(op: Arc<Op>) {
    let _guard = lock(&op.state().lock);
    // Claim first so a racing `force_complete` cannot run `on_complete`
    // between our two callbacks.
    if op.state().claim() {
        op.state()
            .timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        op.on_expiration();
        op.on_complete();
    }
}

type WatchShard<K, Op> = Mutex<HashMap<K, Vec<Arc<Op>>>>;

/// Holds delayed operations keyed by what they wait for, and expires them
/// on a [`SystemTimer`]. `Send + Sync`: share it behind an `Arc`.
pub struct DelayedOperationPurgatory<K, Op: DelayedOperation> {
    name: String,
    shards: Vec<WatchShard<K, Op>>,
    timer: SystemTimer<Arc<Op>>,
    /// Operations added to watch lists since the last purge; compared with
    /// the timer size to estimate completed-but-still-watched entries.
    estimated_total: AtomicUsize,
    purge_interval: usize,
    /// Set by [`shutdown_and_complete_all`](DelayedOperationPurgatory::shutdown_and_complete_all):
    /// operations added afterwards complete at once, as no timer will expire them.
    completing_all: AtomicBool,
}

impl<K, Op> DelayedOperationPurgatory<K, Op>
where
    K: Hash + Eq + Clone + Send,
    Op: DelayedOperation,
{
    /// A purgatory whose timeouts run on a real-clock driver thread named
    /// `ExpirationReaper-{name}`.
    pub fn new(name: &str, purge_interval: usize) -> Self {
        let timer = SystemTimer::start(&format!("ExpirationReaper-{name}"), expire::<Op>);
        Self::with_timer(name, timer, purge_interval)
    }

    /// A purgatory on a manual clock: operations expire only in
    /// [`advance_clock`](Self::advance_clock). For deterministic tests.
    pub fn manual(name: &str, purge_interval: usize) -> Self {
        Self::with_timer(name, SystemTimer::manual(expire::<Op>), purge_interval)
    }

    fn with_timer(name: &str, timer: SystemTimer<Arc<Op>>, purge_interval: usize) -> Self {
        Self {
            name: name.to_owned(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            timer,
            estimated_total: AtomicUsize::new(0),
            purge_interval,
            completing_all: AtomicBool::new(false),
        }
    }

    /// The purgatory's name (e.g. "Fetch", "Produce", "Rebalance").
    pub fn name(&self) -> &str {
        &self.name
    }

    fn shard(&self, key: &K) -> &WatchShard<K, Op> {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        &self.shards[(hasher.finish() as usize) % SHARDS]
    }

    /// Completes `op` now if it can; otherwise watches it under every key and
    /// schedules its timeout. Returns true iff this call completed it.
    ///
    /// The condition is checked, then the operation is watched, then checked
    /// again: an event between the first check and the watch is caught by the
    /// second check, and any later event finds the operation in a watch list.
    ///
    /// # Panics
    /// If `keys` is empty.
    pub fn try_complete_else_watch(&self, op: &Arc<Op>, keys: &[K]) -> bool {
        assert!(!keys.is_empty(), "the watch key list can't be empty");
        if self.completing_all.load(Ordering::SeqCst) {
            let _guard = lock(&op.state().lock);
            return op.try_complete() || op.force_complete();
        }
        {
            let _guard = lock(&op.state().lock);
            if op.try_complete() {
                return true;
            }
            for key in keys {
                if op.is_completed() {
                    break;
                }
                lock(self.shard(key))
                    .entry(key.clone())
                    .or_default()
                    .push(Arc::clone(op));
            }
            self.estimated_total.fetch_add(1, Ordering::Relaxed);
            if op.try_complete() {
                return true;
            }
        }
        if !op.is_completed() {
            let handle = self.timer.add(op.delay_ms(), Arc::clone(op));
            op.state().set_timeout(self.timer.cancel_hook(), handle);
            // Completed between the check and `set_timeout`: the completer
            // found no timeout to cancel, so cancel it here.
            if op.is_completed() {
                op.state().cancel_timeout();
            }
        }
        // Watched after `shutdown_and_complete_all` swept the lists: it set the flag
        // before sweeping, so either the sweep found the operation or this sees the flag.
        if self.completing_all.load(Ordering::SeqCst) {
            return op.force_complete();
        }
        self.maybe_purge();
        false
    }

    /// Tries to complete the operations watched under `key`; returns how many
    /// this call completed. Call it without holding locks the operations'
    /// `try_complete` may need.
    pub fn check_and_complete(&self, key: &K) -> usize {
        // Snapshot rather than take the list: a concurrent caller must still
        // see every operation, or it could miss its own event.
        let ops: Vec<Arc<Op>> = match lock(self.shard(key)).get(key) {
            Some(ops) => ops.clone(),
            None => return 0,
        };
        let completed = ops
            .iter()
            .filter(|op| safe_try_complete(op.as_ref()))
            .count();
        if completed > 0 || ops.iter().any(|op| op.is_completed()) {
            self.remove_completed(key);
        }
        completed
    }

    fn remove_completed(&self, key: &K) -> usize {
        let mut shard = lock(self.shard(key));
        let Entry::Occupied(mut entry) = shard.entry(key.clone()) else {
            return 0;
        };
        let before = entry.get().len();
        entry.get_mut().retain(|op| !op.is_completed());
        let removed = before - entry.get().len();
        if entry.get().is_empty() {
            entry.remove();
        }
        removed
    }

    /// Stops watching `key` and returns its operations, which are neither
    /// completed nor expired by this call.
    pub fn cancel_for_key(&self, key: &K) -> Vec<Arc<Op>> {
        lock(self.shard(key)).remove(key).unwrap_or_default()
    }

    /// Total watch-list entries (an operation watched under n keys counts n
    /// times, and completed ones count until purged). Kafka's `PurgatorySize`.
    pub fn watched(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(shard).values().map(Vec::len).sum::<usize>())
            .sum()
    }

    /// Operations waiting for their timeout. Kafka's `NumDelayedOperations`.
    pub fn num_delayed(&self) -> usize {
        self.timer.size()
    }

    /// Sweeps completed operations out of every watch list when enough of
    /// them may have accumulated (completed via another key or by expiry).
    fn maybe_purge(&self) {
        let delayed = self.num_delayed();
        if self
            .estimated_total
            .load(Ordering::Relaxed)
            .saturating_sub(delayed)
            <= self.purge_interval
        {
            return;
        }
        // Reset first; completions during the sweep only overestimate.
        self.estimated_total.store(delayed, Ordering::Relaxed);
        let mut purged = 0;
        for shard in &self.shards {
            let mut watchers = lock(shard);
            watchers.retain(|_, ops| {
                let before = ops.len();
                ops.retain(|op| !op.is_completed());
                purged += before - ops.len();
                !ops.is_empty()
            });
        }
        tracing::debug!(purgatory = %self.name, purged, "purged completed watchers");
    }

    /// Expires, on the calling thread, operations due by `now_ms` on a
    /// [`manual`](Self::manual) purgatory, then purges if due. Returns how
    /// many timeouts ran (including already-completed ones).
    pub fn advance_clock(&self, now_ms: u64) -> usize {
        let expired = self.timer.advance_clock(now_ms);
        self.maybe_purge();
        expired
    }

    /// Stops the expiration thread; pending operations are no longer
    /// expired. Idempotent; also done on drop.
    pub fn shutdown(&self) {
        self.timer.shutdown();
    }

    /// Completes every operation still waiting, and from now on any added, with
    /// [`force_complete`](DelayedOperation::force_complete) (`on_complete` without
    /// `on_expiration`), then stops the expiration thread. For a broker shutting down:
    /// a client waiting on a fetch or an acks=all produce is answered now instead of
    /// when its own timeout gives up on a broker that never answers. Returns how many
    /// this call completed. Idempotent.
    pub fn shutdown_and_complete_all(&self) -> usize {
        self.completing_all.store(true, Ordering::SeqCst);
        let mut seen = HashSet::new();
        let mut waiting = Vec::new();
        for shard in &self.shards {
            let watchers = std::mem::take(&mut *lock(shard));
            for op in watchers.into_values().flatten() {
                // Watched under several keys, it is listed once per key.
                if seen.insert(Arc::as_ptr(&op)) {
                    waiting.push(op);
                }
            }
        }
        let completed = waiting.iter().filter(|op| op.force_complete()).count();
        self.shutdown();
        completed
    }
}

impl<K, Op: DelayedOperation> std::fmt::Debug for DelayedOperationPurgatory<K, Op> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayedOperationPurgatory")
            .field("name", &self.name)
            .field("num_delayed", &self.timer.size())
            .finish()
    }
}
