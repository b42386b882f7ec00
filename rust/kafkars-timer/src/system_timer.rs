//! [`SystemTimer`]: a thread-safe [`Timer`] with an optional driver thread
//! that runs it on the real clock (Kafka's `SystemTimer` plus its reaper).
//!
//! The driver sleeps on a condvar until the next bucket expiration, or
//! indefinitely when nothing is scheduled; an `add` that lands before the
//! planned wake-up notifies it. Expired tasks run on the driver thread,
//! outside the lock, through the executor given at construction.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::timer::Timer;
use crate::timer_task_list::TimerHandle;

type Executor<T> = Box<dyn Fn(T) + Send + Sync>;

/// A boxed Rust closure, the payload of [`SystemTimer::with_closures`].
pub type TimerTask = Box<dyn FnOnce() + Send + 'static>;

/// What the driver thread is currently doing, so `add` knows whether to wake it.
#[derive(Debug, Clone, Copy)]
enum DriverSleep {
    Awake,
    Until(u64),
    Forever,
}

struct State<T> {
    timer: Timer<T>,
    sleep: DriverSleep,
    shutdown: bool,
}

pub(crate) struct Shared<T> {
    state: Mutex<State<T>>,
    wake: Condvar,
    /// `Some` on the real clock; `None` for a manually advanced timer.
    epoch: Option<Instant>,
    executor: Executor<T>,
    wakeups: AtomicU64,
}

/// Lets a delayed operation cancel its own timeout without knowing the
/// timer's payload type.
pub(crate) trait CancelTimer: Send + Sync {
    fn cancel(&self, handle: TimerHandle) -> bool;
}

impl<T: Send> CancelTimer for Shared<T> {
    fn cancel(&self, handle: TimerHandle) -> bool {
        self.lock().timer.cancel(handle)
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panicking task runs outside the lock, so poisoning means a bug in
        // the timer itself; keep going with the data as is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now_ms(&self, state: &State<T>) -> u64 {
        match self.epoch {
            Some(epoch) => u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX),
            None => state.timer.now_ms(),
        }
    }

    /// The earliest deadline base for a new task: the real clock rounded up,
    /// so a delay is never shortened by the sub-millisecond part of "now".
    fn deadline_base_ms(&self, state: &State<T>) -> u64 {
        match self.epoch {
            Some(epoch) => {
                u64::try_from(epoch.elapsed().as_micros().div_ceil(1000)).unwrap_or(u64::MAX)
            }
            None => state.timer.now_ms(),
        }
    }

    fn run(&self, tasks: Vec<T>) {
        for task in tasks {
            if catch_unwind(AssertUnwindSafe(|| (self.executor)(task))).is_err() {
                tracing::error!("timer task panicked");
            }
        }
    }
}

/// A thread-safe timer. Built with [`start`](Self::start) it runs on the real
/// clock (milliseconds since construction) on its own thread; built with
/// [`manual`](Self::manual) time moves only through
/// [`advance_clock`](Self::advance_clock). Dropping it stops the driver;
/// pending tasks are dropped without running.
pub struct SystemTimer<T: Send + 'static> {
    shared: Arc<Shared<T>>,
    driver: Mutex<Option<JoinHandle<()>>>,
}

/// Another name for [`SystemTimer`]: the thread that drives the wheel on the
/// real clock.
pub type TimerDriver<T> = SystemTimer<T>;

impl<T: Send + 'static> SystemTimer<T> {
    /// Starts a driver thread named `name` that hands each expired task to
    /// `executor`.
    pub fn start(name: &str, executor: impl Fn(T) + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Self::shared(Some(Instant::now()), Box::new(executor)));
        let thread_shared = Arc::clone(&shared);
        let driver = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || drive(&thread_shared))
            .expect("spawn timer driver thread");
        Self {
            shared,
            driver: Mutex::new(Some(driver)),
        }
    }

    /// A timer without a thread whose clock moves only via
    /// [`advance_clock`](Self::advance_clock) (Kafka's `MockTimer`).
    pub fn manual(executor: impl Fn(T) + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Self::shared(None, Box::new(executor)));
        Self {
            shared,
            driver: Mutex::new(None),
        }
    }

    fn shared(epoch: Option<Instant>, executor: Executor<T>) -> Shared<T> {
        Shared {
            state: Mutex::new(State {
                timer: Timer::new(),
                sleep: DriverSleep::Awake,
                shutdown: false,
            }),
            wake: Condvar::new(),
            epoch,
            executor,
            wakeups: AtomicU64::new(0),
        }
    }

    /// Schedules `task` to run `delay_ms` from now.
    pub fn add(&self, delay_ms: u64, task: T) -> TimerHandle {
        let mut state = self.shared.lock();
        let deadline = self
            .shared
            .deadline_base_ms(&state)
            .saturating_add(delay_ms);
        let handle = state.timer.add_at(deadline, task);
        let wake = match state.sleep {
            DriverSleep::Awake => false,
            DriverSleep::Until(at) => deadline < at,
            DriverSleep::Forever => true,
        };
        if wake {
            state.sleep = DriverSleep::Awake;
            self.shared.wake.notify_one();
        }
        handle
    }

    /// Cancels a pending task; false if it already fired or was cancelled.
    pub fn cancel(&self, handle: TimerHandle) -> bool {
        self.shared.cancel(handle)
    }

    /// Runs, on the calling thread, every task due by `now_ms` and returns how
    /// many ran. Meant for [`manual`](Self::manual) timers; on a real-clock
    /// timer `now_ms` is capped at the real clock (running the clock ahead
    /// would fire later additions early), so it merely helps the driver.
    pub fn advance_clock(&self, now_ms: u64) -> usize {
        let expired = {
            let mut state = self.shared.lock();
            let now = match self.shared.epoch {
                Some(_) => now_ms.min(self.shared.now_ms(&state)),
                None => now_ms,
            };
            state.timer.advance(now)
        };
        let count = expired.len();
        self.shared.run(expired);
        count
    }

    /// The timer's current time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        let state = self.shared.lock();
        self.shared.now_ms(&state)
    }

    /// Number of pending tasks.
    pub fn size(&self) -> usize {
        self.shared.lock().timer.size()
    }

    /// How many times the driver thread has woken from a sleep (a metric, and
    /// the way tests check that an idle timer does not poll).
    pub fn wakeups(&self) -> u64 {
        self.shared.wakeups.load(Ordering::Relaxed)
    }

    /// Stops the driver thread and waits for it. Idempotent.
    pub fn shutdown(&self) {
        self.shared.lock().shutdown = true;
        self.shared.wake.notify_all();
        let driver = self.driver.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(driver) = driver {
            // Shutting down from a task on the driver thread itself must not
            // join itself; the loop exits on its own.
            if driver.thread().id() != std::thread::current().id() {
                let _ = driver.join();
            }
        }
    }

    pub(crate) fn cancel_hook(&self) -> Weak<dyn CancelTimer> {
        let weak: Weak<Shared<T>> = Arc::downgrade(&self.shared);
        weak
    }
}

impl SystemTimer<TimerTask> {
    /// A real-clock timer whose tasks are closures run on the driver thread.
    pub fn with_closures(name: &str) -> Self {
        Self::start(name, |task: TimerTask| task())
    }
}

impl<T: Send + 'static> Drop for SystemTimer<T> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<T: Send + 'static> std::fmt::Debug for SystemTimer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemTimer")
            .field("real_clock", &self.shared.epoch.is_some())
            .field("size", &self.size())
            .finish()
    }
}

fn drive<T>(shared: &Shared<T>) {
    let mut state = shared.lock();
    while !state.shutdown {
        let now = shared.now_ms(&state);
        let expired = state.timer.advance(now);
        if !expired.is_empty() {
            state.sleep = DriverSleep::Awake;
            drop(state);
            shared.run(expired);
            state = shared.lock();
            continue;
        }
        state = match state.timer.next_expiration() {
            None => {
                state.sleep = DriverSleep::Forever;
                shared.wake.wait(state).unwrap_or_else(|e| e.into_inner())
            }
            Some(at) => {
                state.sleep = DriverSleep::Until(at);
                // `now` was rounded down, so sleeping `at - now` ms always
                // reaches `at`: no early wake-up and re-sleep.
                let timeout = Duration::from_millis(at.saturating_sub(now));
                shared
                    .wake
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        state.sleep = DriverSleep::Awake;
        shared.wakeups.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn idle_driver_sleeps() {
        let timer = SystemTimer::<()>::start("idle", |_| {});
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            timer.wakeups() <= 2,
            "woke {} times while idle",
            timer.wakeups()
        );
        // Scheduling and cancelling far away costs at most a wake-up or two.
        let handle = timer.add(60_000, ());
        assert!(timer.cancel(handle));
        std::thread::sleep(Duration::from_millis(200));
        assert!(timer.wakeups() <= 4, "woke {} times", timer.wakeups());
    }

    #[test]
    fn runs_tasks_on_the_real_clock() {
        let (tx, rx) = mpsc::channel();
        let timer = SystemTimer::start("real", move |(id, added): (u32, Instant)| {
            tx.send((id, added.elapsed())).unwrap();
        });
        let now = Instant::now();
        timer.add(50, (2, now));
        timer.add(10, (1, now)); // earlier than the planned wake-up
        let cancelled = timer.add(30, (9, now));
        assert!(timer.cancel(cancelled));
        let (first, after) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(first, 1);
        assert!(after >= Duration::from_millis(10));
        let (second, after) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(second, 2);
        assert!(after >= Duration::from_millis(50));
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(timer.size(), 0);
    }

    #[test]
    fn panicking_task_does_not_kill_the_driver() {
        let (tx, rx) = mpsc::channel();
        let timer = SystemTimer::start("panic", move |n: u32| {
            assert!(n != 0, "boom");
            tx.send(n).unwrap();
        });
        timer.add(1, 0);
        timer.add(5, 7);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
    }

    #[test]
    fn runs_closures() {
        let (tx, rx) = mpsc::channel();
        let timer = SystemTimer::with_closures("closures");
        timer.add(2, Box::new(move || tx.send("ran").unwrap()));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "ran");
    }

    #[test]
    fn manual_timer_runs_on_the_caller() {
        let (tx, rx) = mpsc::channel();
        let timer = SystemTimer::manual(move |n: u64| tx.send(n).unwrap());
        timer.add(100, 100);
        timer.add(3_600_000, 1);
        assert_eq!(timer.advance_clock(99), 0);
        assert_eq!(timer.advance_clock(100), 1);
        assert_eq!(rx.try_recv().unwrap(), 100);
        assert_eq!(timer.advance_clock(3_600_000), 1);
        assert_eq!(timer.now_ms(), 3_600_000);
    }
}
