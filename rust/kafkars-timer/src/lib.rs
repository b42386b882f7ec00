//! Delayed operations for kafkars: Kafka's hierarchical timing wheel and the
//! purgatory of operations waiting for a condition or a timeout.
//!
//! - [`TimingWheel`]: the clock-free hierarchical wheel (O(1) add/cancel).
//! - [`Timer`]: a clock-free timer over it, advanced explicitly (tests).
//! - [`SystemTimer`]: a thread-safe timer with a real-clock driver thread.
//! - [`DelayedOperation`] / [`DelayedOperationPurgatory`]: keyed watch lists
//!   whose operations complete exactly once, by event or by expiry.
//!
//! The crate is plain Rust; task payloads are generic so the pyo3 layer can
//! store Python callbacks.
//!
//! ```
//! use kafkars_timer::Timer;
//!
//! let mut timer = Timer::new();
//! let fetch = timer.add(500, "fetch.max.wait.ms elapsed");
//! let _heartbeat = timer.add(10_000, "session timeout");
//! // 500 ms sits in an overflow bucket that starts (and cascades) at 400.
//! assert_eq!(timer.next_expiration(), Some(400));
//! assert!(timer.cancel(fetch)); // enough bytes arrived first
//! assert!(timer.advance(9_999).is_empty());
//! assert_eq!(timer.advance(10_000), vec!["session timeout"]);
//! ```

mod purgatory;
mod system_timer;
mod timer;
mod timer_task_list;
mod timing_wheel;

pub use purgatory::{
    DEFAULT_PURGE_INTERVAL, DelayedOperation, DelayedOperationPurgatory, OperationState,
};
pub use system_timer::{SystemTimer, TimerDriver, TimerTask};
pub use timer::Timer;
pub use timer_task_list::TimerHandle;
pub use timing_wheel::{DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, TimingWheel};
