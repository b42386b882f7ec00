//! The hierarchical timing wheel (Kafka's `TimingWheel`), clock-free.
//!
//! Level 0 has `wheel_size` buckets of `tick_ms` each, spanning `interval =
//! tick_ms * wheel_size`. A deadline beyond that goes to an overflow wheel,
//! created on demand, whose tick is the interval of the wheel below. Buckets
//! that hold tasks sit in a min-heap keyed by expiration (Kafka uses a
//! `DelayQueue`), so advancing the clock only visits buckets that exist —
//! empty ticks cost nothing. When an overflow bucket expires its entries are
//! re-inserted and fall into finer wheels, or fire.
//!
//! Rust adaptation: the overflow chain is a `Vec` of levels sharing one bucket
//! arena and one task slab instead of a linked chain of wheel objects.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::timer_task_list::{NIL, TaskSlab, TimerHandle, TimerTaskList};

/// Kafka's defaults: a 1 ms tick and 20 buckets per wheel.
pub const DEFAULT_TICK_MS: u64 = 1;
/// Kafka's default number of buckets per wheel.
pub const DEFAULT_WHEEL_SIZE: usize = 20;

/// Deadlines are clamped here so wheel arithmetic never overflows
/// (about 292 million years of milliseconds).
pub(crate) const MAX_DEADLINE_MS: u64 = u64::MAX / 2;

/// Bucket 0 of the arena holds tasks that were already due when scheduled.
const DUE_LIST: u32 = 0;

#[derive(Debug)]
struct Level {
    tick_ms: u64,
    interval_ms: u64,
    /// Rounded down to a multiple of `tick_ms`.
    current_time_ms: u64,
    first_bucket: u32,
}

/// A hierarchical timing wheel holding tasks of type `T`.
///
/// Insert and cancel are O(1) (plus O(levels) to find the wheel, at most
/// about a dozen); advancing costs O(log buckets) per armed bucket.
#[derive(Debug)]
pub struct TimingWheel<T> {
    wheel_size: usize,
    levels: Vec<Level>,
    buckets: Vec<TimerTaskList>,
    /// Armed buckets by expiration. An entry is stale when its bucket has
    /// since been disarmed; such entries are skipped when popped.
    queue: BinaryHeap<Reverse<(u64, u32)>>,
    slab: TaskSlab<T>,
}

impl<T> Default for TimingWheel<T> {
    fn default() -> Self {
        Self::new(DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, 0)
    }
}

impl<T> TimingWheel<T> {
    /// Creates a wheel whose clock starts at `start_ms`.
    ///
    /// # Panics
    /// If `tick_ms` is 0 or `wheel_size` is below 2 (the overflow chain
    /// would never widen).
    pub fn new(tick_ms: u64, wheel_size: usize, start_ms: u64) -> Self {
        assert!(tick_ms > 0, "tick_ms must be positive");
        assert!(wheel_size >= 2, "wheel_size must be at least 2");
        let mut wheel = Self {
            wheel_size,
            levels: Vec::new(),
            buckets: vec![TimerTaskList::new()],
            queue: BinaryHeap::new(),
            slab: TaskSlab::new(),
        };
        wheel.push_level(tick_ms, start_ms.min(MAX_DEADLINE_MS));
        wheel
    }

    /// The finest tick in milliseconds.
    pub fn tick_ms(&self) -> u64 {
        self.levels[0].tick_ms
    }

    /// The wheel's clock, rounded down to a tick.
    pub fn current_time_ms(&self) -> u64 {
        self.levels[0].current_time_ms
    }

    /// Number of wheels, including overflow wheels created so far.
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Number of pending tasks.
    pub fn size(&self) -> usize {
        self.slab.len()
    }

    /// Whether no task is pending.
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// Adds a task due at `deadline_ms`. Returns the task back as `Err` when
    /// its deadline is already within the current tick: the caller runs it
    /// (Kafka's `add` returning false).
    pub fn add(&mut self, deadline_ms: u64, task: T) -> Result<TimerHandle, T> {
        let deadline = self.round_up(deadline_ms);
        if deadline
            < self.levels[0]
                .current_time_ms
                .saturating_add(self.levels[0].tick_ms)
        {
            return Err(task);
        }
        let handle = self.slab.insert(deadline, task);
        let placed = self.place(handle.slot());
        debug_assert!(placed);
        Ok(handle)
    }

    /// Like [`add`](Self::add), but an already-due task is kept (and stays
    /// cancellable) until the next [`advance_clock`](Self::advance_clock).
    pub fn schedule(&mut self, deadline_ms: u64, task: T) -> TimerHandle {
        match self.add(deadline_ms, task) {
            Ok(handle) => handle,
            Err(task) => {
                let handle = self.slab.insert(self.current_time_ms(), task);
                let index = self.slab.resolve(handle).expect("fresh handle");
                self.slab
                    .push_back(&mut self.buckets[DUE_LIST as usize], DUE_LIST, index);
                handle
            }
        }
    }

    /// Cancels a pending task in O(1) and returns it; `None` if it already
    /// fired or was cancelled.
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let index = self.slab.resolve(handle)?;
        let list = self.slab.list_of(index);
        if list != NIL {
            // The bucket may become empty but stays queued; it is dropped
            // lazily by `next_expiration` or when it expires.
            self.slab.unlink(&mut self.buckets[list as usize], index);
        }
        Some(self.slab.remove(index))
    }

    /// Whether `handle` still refers to a pending task.
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.slab.resolve(handle).is_some()
    }

    /// Moves the clock to `now_ms`, passing every task whose deadline is at or
    /// before `now_ms` to `on_expired`, in deadline order (by bucket).
    /// Expired overflow buckets are flushed and their entries re-inserted.
    pub fn advance_clock(&mut self, now_ms: u64, mut on_expired: impl FnMut(T)) {
        while let Some(index) = self.slab.pop_front(&mut self.buckets[DUE_LIST as usize]) {
            on_expired(self.slab.remove(index));
        }
        while let Some(&Reverse((expiration, bucket))) = self.queue.peek() {
            if expiration > now_ms {
                break;
            }
            self.queue.pop();
            let list = &mut self.buckets[bucket as usize];
            if list.expiration_ms() != Some(expiration) {
                continue; // stale queue entry
            }
            list.clear_expiration();
            self.set_current_time(expiration);
            while let Some(index) = self.slab.pop_front(&mut self.buckets[bucket as usize]) {
                if !self.place(index) {
                    on_expired(self.slab.remove(index));
                }
            }
        }
        // Every bucket due by `now_ms` has been flushed, so the clock can
        // jump straight there (Kafka only moves it to bucket expirations).
        self.set_current_time(now_ms);
    }

    /// When the next armed bucket expires: the earliest time at which
    /// [`advance_clock`](Self::advance_clock) has work to do. It can be an
    /// overflow bucket whose entries merely cascade down. Drops queue
    /// entries of buckets emptied by cancellation on the way.
    pub fn next_expiration(&mut self) -> Option<u64> {
        if !self.buckets[DUE_LIST as usize].is_empty() {
            return Some(self.current_time_ms());
        }
        while let Some(&Reverse((expiration, bucket))) = self.queue.peek() {
            let list = &mut self.buckets[bucket as usize];
            if list.expiration_ms() == Some(expiration) && !list.is_empty() {
                return Some(expiration);
            }
            if list.expiration_ms() == Some(expiration) {
                list.clear_expiration();
            }
            self.queue.pop();
        }
        None
    }

    /// Number of tasks in the buckets of each wheel (for tests and metrics).
    pub fn level_sizes(&self) -> Vec<usize> {
        self.levels
            .iter()
            .map(|level| {
                let first = level.first_bucket as usize;
                self.buckets[first..first + self.wheel_size]
                    .iter()
                    .map(TimerTaskList::len)
                    .sum()
            })
            .collect()
    }

    /// Rounds a deadline up to a tick, so a task never fires early.
    fn round_up(&self, deadline_ms: u64) -> u64 {
        let tick = self.levels[0].tick_ms;
        let deadline = deadline_ms.min(MAX_DEADLINE_MS);
        deadline.div_ceil(tick) * tick
    }

    fn push_level(&mut self, tick_ms: u64, start_ms: u64) {
        let first_bucket = u32::try_from(self.buckets.len()).expect("bucket arena overflow");
        self.buckets
            .extend((0..self.wheel_size).map(|_| TimerTaskList::new()));
        self.levels.push(Level {
            tick_ms,
            interval_ms: tick_ms.saturating_mul(self.wheel_size as u64),
            current_time_ms: start_ms - start_ms % tick_ms,
            first_bucket,
        });
    }

    /// Kafka's `TimingWheel.add` on an already stored entry: links it into the
    /// finest wheel whose span covers its deadline, creating overflow wheels
    /// as needed. Returns false if it is already due.
    fn place(&mut self, index: u32) -> bool {
        let deadline = self.slab.deadline_ms(index);
        let mut depth = 0;
        loop {
            let level = &self.levels[depth];
            if deadline < level.current_time_ms.saturating_add(level.tick_ms) {
                return false;
            }
            if deadline < level.current_time_ms.saturating_add(level.interval_ms) {
                let virtual_id = deadline / level.tick_ms;
                let slot = (virtual_id % self.wheel_size as u64) as u32;
                let bucket = level.first_bucket + slot;
                let expiration = virtual_id * level.tick_ms;
                let list = &mut self.buckets[bucket as usize];
                self.slab.push_back(list, bucket, index);
                // Only a bucket whose expiration changed (a reused slot) needs
                // queueing; same-rotation adds reuse the queued entry.
                if list.set_expiration(expiration) {
                    self.queue.push(Reverse((expiration, bucket)));
                }
                return true;
            }
            depth += 1;
            if depth == self.levels.len() {
                let below = &self.levels[depth - 1];
                let (tick, start) = (below.interval_ms, below.current_time_ms);
                self.push_level(tick, start);
            }
        }
    }

    fn set_current_time(&mut self, time_ms: u64) {
        for level in &mut self.levels {
            if time_ms >= level.current_time_ms.saturating_add(level.tick_ms) {
                level.current_time_ms = time_ms - time_ms % level.tick_ms;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(wheel: &mut TimingWheel<u64>, now: u64) -> Vec<u64> {
        let mut fired = vec![];
        wheel.advance_clock(now, |t| fired.push(t));
        fired
    }

    #[test]
    fn already_expired_is_returned() {
        let mut wheel = TimingWheel::new(1, 20, 100);
        assert_eq!(wheel.add(100, 1u64), Err(1));
        assert_eq!(wheel.add(50, 2u64), Err(2));
        assert!(wheel.add(101, 3u64).is_ok());
    }

    #[test]
    fn fires_at_deadline_not_before() {
        let mut wheel = TimingWheel::default();
        wheel.add(5, 5u64).unwrap();
        wheel.add(19, 19u64).unwrap();
        assert!(drain(&mut wheel, 4).is_empty());
        assert_eq!(drain(&mut wheel, 5), vec![5]);
        assert!(drain(&mut wheel, 18).is_empty());
        assert_eq!(drain(&mut wheel, 19), vec![19]);
        assert!(wheel.is_empty());
    }

    #[test]
    fn overflow_wheels_cascade() {
        let mut wheel = TimingWheel::default();
        for deadline in [3_600_000u64, 86_400_000, 25, 401, 8_001] {
            wheel.add(deadline, deadline).unwrap();
        }
        assert!(
            wheel.levels() >= 6,
            "a day needs 20^6 ms > 86.4e6 ms of span"
        );
        // 25 lies beyond level 0 (0..20): its overflow bucket expires at 20.
        assert_eq!(wheel.next_expiration(), Some(20));
        assert_eq!(drain(&mut wheel, 10_000), vec![25, 401, 8_001]);
        assert!(drain(&mut wheel, 3_599_999).is_empty());
        assert_eq!(drain(&mut wheel, 3_600_000), vec![3_600_000]);
        assert!(drain(&mut wheel, 86_399_999).is_empty());
        assert_eq!(drain(&mut wheel, 86_400_000), vec![86_400_000]);
        assert_eq!(wheel.next_expiration(), None);
    }

    #[test]
    fn cancel_is_o1_and_survives_cascade() {
        let mut wheel = TimingWheel::default();
        let far = wheel.add(10_000, 1u64).unwrap();
        let near = wheel.add(10, 2u64).unwrap();
        assert!(drain(&mut wheel, 9_000).len() == 1);
        // `far` has been re-linked into a finer wheel; its handle still works.
        assert!(wheel.contains(far));
        assert_eq!(wheel.cancel(far), Some(1));
        assert_eq!(wheel.cancel(far), None);
        assert_eq!(wheel.cancel(near), None, "already fired");
        assert_eq!(wheel.next_expiration(), None, "emptied buckets are dropped");
        assert!(drain(&mut wheel, 20_000).is_empty());
    }

    #[test]
    fn coarse_tick_never_fires_early() {
        let mut wheel = TimingWheel::new(10, 8, 0);
        wheel.add(15, 15u64).unwrap();
        assert!(drain(&mut wheel, 14).is_empty());
        assert!(drain(&mut wheel, 19).is_empty());
        assert_eq!(drain(&mut wheel, 20), vec![15]);
    }

    #[test]
    fn schedule_keeps_due_tasks_cancellable() {
        let mut wheel = TimingWheel::new(1, 20, 50);
        let a = wheel.schedule(10, 1u64);
        let _b = wheel.schedule(50, 2u64);
        assert_eq!(wheel.next_expiration(), Some(50));
        assert_eq!(wheel.cancel(a), Some(1));
        assert_eq!(drain(&mut wheel, 50), vec![2]);
    }

    #[test]
    fn huge_deadlines_do_not_overflow() {
        let mut wheel = TimingWheel::new(1, 2, 0);
        wheel.add(u64::MAX, 1u64).unwrap();
        assert_eq!(wheel.size(), 1);
        assert!(drain(&mut wheel, 1 << 40).is_empty());
    }
}
