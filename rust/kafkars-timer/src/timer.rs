//! [`Timer`]: a clock-free timer over the [`TimingWheel`], driven by explicit
//! [`advance`](Timer::advance) calls. Deterministic, so tests use it as
//! Kafka's `MockTimer`; [`SystemTimer`](crate::SystemTimer) drives one on the
//! real clock.

use crate::timer_task_list::TimerHandle;
use crate::timing_wheel::{DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, MAX_DEADLINE_MS, TimingWheel};

/// A timer whose notion of "now" is the latest time passed to
/// [`advance`](Self::advance). Not thread-safe on its own.
#[derive(Debug)]
pub struct Timer<T> {
    wheel: TimingWheel<T>,
    now_ms: u64,
}

impl<T> Default for Timer<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Timer<T> {
    /// A timer with Kafka's defaults (1 ms tick, 20 buckets) starting at 0.
    pub fn new() -> Self {
        Self::with_config(DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, 0)
    }

    /// A timer with a custom tick, wheel size and start time.
    pub fn with_config(tick_ms: u64, wheel_size: usize, start_ms: u64) -> Self {
        Self {
            wheel: TimingWheel::new(tick_ms, wheel_size, start_ms),
            now_ms: start_ms,
        }
    }

    /// The current time: the latest `advance` argument (or the start time).
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Schedules `task` to fire `delay_ms` after [`now_ms`](Self::now_ms).
    /// A zero delay fires on the next `advance`.
    pub fn add(&mut self, delay_ms: u64, task: T) -> TimerHandle {
        let deadline = self.now_ms.saturating_add(delay_ms).min(MAX_DEADLINE_MS);
        self.wheel.schedule(deadline, task)
    }

    /// Schedules `task` at an absolute deadline (a past one fires on the next
    /// `advance`).
    pub fn add_at(&mut self, deadline_ms: u64, task: T) -> TimerHandle {
        self.wheel.schedule(deadline_ms, task)
    }

    /// Cancels a pending task; false if it already fired or was cancelled.
    pub fn cancel(&mut self, handle: TimerHandle) -> bool {
        self.wheel.cancel(handle).is_some()
    }

    /// Cancels a pending task and hands it back.
    pub fn remove(&mut self, handle: TimerHandle) -> Option<T> {
        self.wheel.cancel(handle)
    }

    /// Whether `handle` is still pending.
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.wheel.contains(handle)
    }

    /// Moves time to `now_ms` (never backwards) and returns the expired tasks
    /// in deadline order.
    pub fn advance(&mut self, now_ms: u64) -> Vec<T> {
        let mut expired = Vec::new();
        self.advance_with(now_ms, |task| expired.push(task));
        expired
    }

    /// Like [`advance`](Self::advance) but hands each expired task to
    /// `on_expired` instead of collecting them.
    pub fn advance_with(&mut self, now_ms: u64, on_expired: impl FnMut(T)) {
        self.now_ms = self.now_ms.max(now_ms);
        self.wheel.advance_clock(self.now_ms, on_expired);
    }

    /// The earliest time at which [`advance`](Self::advance) has work to do,
    /// so a driver can sleep until exactly then; `None` when idle.
    pub fn next_expiration(&mut self) -> Option<u64> {
        self.wheel.next_expiration()
    }

    /// Number of pending tasks.
    pub fn size(&self) -> usize {
        self.wheel.size()
    }

    /// Whether no task is pending.
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    /// The underlying wheel (for inspection).
    pub fn wheel(&self) -> &TimingWheel<T> {
        &self.wheel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_relative_to_the_last_advance() {
        let mut timer = Timer::new();
        timer.advance(1_000);
        let a = timer.add(10, "a");
        timer.add(0, "now");
        assert_eq!(timer.size(), 2);
        assert_eq!(timer.advance(1_000), vec!["now"]);
        assert!(timer.advance(1_009).is_empty());
        assert!(timer.contains(a));
        assert_eq!(timer.advance(1_010), vec!["a"]);
        assert!(!timer.cancel(a));
        assert!(timer.is_empty());
    }

    #[test]
    fn time_never_goes_backwards() {
        let mut timer = Timer::new();
        timer.advance(500);
        timer.advance(100);
        assert_eq!(timer.now_ms(), 500);
        timer.add(1, ());
        assert_eq!(timer.next_expiration(), Some(501));
    }
}
