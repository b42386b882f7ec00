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

mod purgatory;
mod system_timer;
mod timer;
mod timer_task_list;
mod timing_wheel;

pub use purgatory::{
    DEFAULT_PURGE_INTERVAL, DelayedOperation, DelayedOperationPurgatory, OperationState,
};
pub use system_timer::{SystemTimer, TimerDriver};
pub use timer::Timer;
pub use timer_task_list::TimerHandle;
pub use timing_wheel::{DEFAULT_TICK_MS, DEFAULT_WHEEL_SIZE, TimingWheel};
