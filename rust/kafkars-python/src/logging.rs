//! Rust log events → Python `logging`: one sink, one format, Python's levels.
//!
//! The Rust crates log with `tracing`; without a tracing subscriber its `log` feature
//! hands every event to the `log` facade, which lands here. Events are queued and a
//! dedicated thread passes them to `logging.getLogger(name).log(...)`, so a thread that
//! logs while holding a lock never waits for the GIL (a Python thread holding the GIL
//! may be waiting for that very lock). A full queue drops events and counts them.
//!
//! Logger names follow the Python package: `kafkars_storage::log` logs as
//! `kafkars.storage.log`; other crates' targets go under `kafkars.rust`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;

/// Events waiting for the forwarding thread before new ones are dropped.
const QUEUE: usize = 4096;

struct Event {
    logger: String,
    level: i32,
    message: String,
}

struct Forwarder {
    queue: SyncSender<Event>,
    /// The most verbose `log::Level` Python would print (as `LevelFilter as usize`).
    max_level: AtomicUsize,
    dropped: AtomicU64,
    stopped: AtomicBool,
}

static FORWARDER: OnceLock<Forwarder> = OnceLock::new();
static RECEIVER: Mutex<Option<Receiver<Event>>> = Mutex::new(None);

impl Log for Forwarder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() as usize <= self.max_level.load(Ordering::Relaxed)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) || self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let event = Event {
            logger: python_logger_name(record.target()),
            level: python_level(record.level()),
            message: record.args().to_string(),
        };
        if let Err(TrySendError::Full(_)) = self.queue.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn flush(&self) {}
}

fn python_logger_name(target: &str) -> String {
    let dotted = target.replace("::", ".");
    match dotted.strip_prefix("kafkars_") {
        Some(rest) => format!("kafkars.{rest}"),
        None => format!("kafkars.rust.{dotted}"),
    }
}

/// Python's numeric levels (TRACE has none: below DEBUG).
fn python_level(level: Level) -> i32 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => 5,
    }
}

fn level_filter(python_level: i32) -> LevelFilter {
    match python_level {
        ..=5 => LevelFilter::Trace,
        6..=10 => LevelFilter::Debug,
        11..=20 => LevelFilter::Info,
        21..=30 => LevelFilter::Warn,
        31..=40 => LevelFilter::Error,
        _ => LevelFilter::Off,
    }
}

fn forward(rx: &Receiver<Event>) {
    while let Ok(event) = rx.recv() {
        let forwarder = FORWARDER.get().expect("installed before the thread starts");
        if forwarder.stopped.load(Ordering::Acquire) {
            break;
        }
        Python::attach(|py| {
            let result = py
                .import("logging")
                .and_then(|logging| logging.call_method1("getLogger", (event.logger,)))
                .and_then(|logger| logger.call_method1("log", (event.level, event.message)));
            if let Err(e) = result {
                e.print(py);
            }
        });
    }
}

/// Sets how verbose Rust logging is, from Python's effective level for `kafkars`
/// (events below it are not even formatted). Call again after changing logging config.
#[pyfunction]
fn set_rust_log_level(level: i32) {
    if let Some(f) = FORWARDER.get() {
        let filter = level_filter(level);
        f.max_level.store(filter as usize, Ordering::Relaxed);
        log::set_max_level(filter);
    }
}

/// Events dropped because the queue to Python was full.
#[pyfunction]
fn rust_log_events_dropped() -> u64 {
    FORWARDER
        .get()
        .map_or(0, |f| f.dropped.load(Ordering::Relaxed))
}

/// Stops forwarding (registered with `atexit`: no Rust thread may call into an
/// interpreter that is shutting down).
#[pyfunction]
fn stop_rust_logging() {
    if let Some(f) = FORWARDER.get() {
        f.stopped.store(true, Ordering::Release);
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let (tx, rx) = sync_channel(QUEUE);
    let forwarder = Forwarder {
        queue: tx,
        max_level: AtomicUsize::new(LevelFilter::Info as usize),
        dropped: AtomicU64::new(0),
        stopped: AtomicBool::new(false),
    };
    // Another copy of this module (or another extension) may own the `log` facade.
    if FORWARDER.set(forwarder).is_ok() {
        let forwarder = FORWARDER.get().expect("just set");
        if log::set_logger(forwarder).is_ok() {
            log::set_max_level(LevelFilter::Info);
            *RECEIVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
            std::thread::Builder::new()
                .name("kafkars-log-forwarder".into())
                .spawn(|| {
                    let rx = RECEIVER.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if let Some(rx) = rx {
                        forward(&rx);
                    }
                })?;
        }
    }
    m.add_function(wrap_pyfunction!(set_rust_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(rust_log_events_dropped, m)?)?;
    m.add_function(wrap_pyfunction!(stop_rust_logging, m)?)?;
    let stop = m.getattr("stop_rust_logging")?;
    py.import("atexit")?.call_method1("register", (stop,))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_map_into_the_kafkars_logger_tree() {
        assert_eq!(
            python_logger_name("kafkars_storage::log"),
            "kafkars.storage.log"
        );
        assert_eq!(python_logger_name("kafkars_server"), "kafkars.server");
        assert_eq!(python_logger_name("tokio::net"), "kafkars.rust.tokio.net");
    }

    #[test]
    fn python_levels_map_to_filters() {
        assert_eq!(level_filter(20), LevelFilter::Info);
        assert_eq!(level_filter(10), LevelFilter::Debug);
        assert_eq!(level_filter(30), LevelFilter::Warn);
        assert_eq!(level_filter(50), LevelFilter::Off);
        assert_eq!(level_filter(0), LevelFilter::Trace);
    }
}
