//! Kafka's `RequestMetrics`: where each request's time went, per API, as histograms.
//!
//! A request's life is split as Kafka splits it: waiting in the request channel
//! (`request_queue`), in its handler (`local`), parked in a purgatory until answered
//! (`remote`), answered but waiting for the connection to write it (`response_queue`), and
//! being written (`response_send`); `total` spans all of it. Recording is a few relaxed
//! atomic adds on the connection's writer task, so the hot path never takes the GIL; the
//! metrics endpoint reads a snapshot at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Upper bounds of the histogram buckets, in seconds (Prometheus `le`), from 100 µs to 10 s.
pub const LATENCY_BUCKETS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The phases of a request, in Kafka's names.
pub const PHASES: [&str; 6] = [
    "request_queue",
    "local",
    "remote",
    "response_queue",
    "response_send",
    "total",
];

/// API keys above this are not tracked (Kafka's highest is below 100).
const MAX_API_KEY: usize = 127;

/// The instants a request passes, filled in as it goes.
#[derive(Clone, Copy, Debug)]
pub struct RequestTimes {
    pub api_key: i16,
    pub received: Instant,
    /// Taken off the request channel by a handler thread.
    pub dequeued: Option<Instant>,
    /// The handler returned without answering (the request waits in a purgatory).
    pub handled: Option<Instant>,
    /// The response was handed to the connection.
    pub responded: Option<Instant>,
}

impl RequestTimes {
    pub fn new(api_key: i16, received: Instant) -> Self {
        Self {
            api_key,
            received,
            dequeued: None,
            handled: None,
            responded: None,
        }
    }
}

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS_SECONDS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let seconds = d.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS_SECONDS.iter().position(|&le| seconds <= le) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// One histogram's state at a scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    pub api_key: i16,
    pub phase: &'static str,
    /// Cumulative counts per bucket of [`LATENCY_BUCKETS_SECONDS`] (Prometheus's `le`).
    pub cumulative: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

/// Histograms for every API key and phase.
pub struct RequestMetrics {
    apis: Vec<[Histogram; PHASES.len()]>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestMetrics {
    pub fn new() -> Self {
        Self {
            apis: (0..=MAX_API_KEY).map(|_| Default::default()).collect(),
        }
    }

    /// Records a request whose response took from `send_started` to `send_done` to write.
    pub fn record(&self, times: &RequestTimes, send_started: Instant, send_done: Instant) {
        let Some(phases) = usize::try_from(times.api_key)
            .ok()
            .and_then(|k| self.apis.get(k))
        else {
            return;
        };
        let (Some(dequeued), Some(responded)) = (times.dequeued, times.responded) else {
            return;
        };
        let local_done = times.handled.unwrap_or(responded);
        let spans = [
            dequeued.saturating_duration_since(times.received),
            local_done.saturating_duration_since(dequeued),
            times
                .handled
                .map_or(Duration::ZERO, |h| responded.saturating_duration_since(h)),
            send_started.saturating_duration_since(responded),
            send_done.saturating_duration_since(send_started),
            send_done.saturating_duration_since(times.received),
        ];
        for (histogram, span) in phases.iter().zip(spans) {
            histogram.observe(span);
        }
    }

    /// Every histogram that has seen a request.
    pub fn snapshot(&self) -> Vec<HistogramSnapshot> {
        let mut out = Vec::new();
        for (api_key, phases) in self.apis.iter().enumerate() {
            for (phase, histogram) in PHASES.iter().zip(phases) {
                let count = histogram.count.load(Ordering::Relaxed);
                if count == 0 {
                    continue;
                }
                let mut running = 0;
                let cumulative = histogram
                    .buckets
                    .iter()
                    .map(|b| {
                        running += b.load(Ordering::Relaxed);
                        running
                    })
                    .collect();
                out.push(HistogramSnapshot {
                    api_key: api_key as i16,
                    phase,
                    cumulative,
                    count,
                    sum_seconds: histogram.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_split_a_delayed_request() {
        let metrics = RequestMetrics::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let times = RequestTimes {
            api_key: 1,
            received: t0,
            dequeued: Some(t0 + ms(2)),
            handled: Some(t0 + ms(3)),
            responded: Some(t0 + ms(503)),
        };
        metrics.record(&times, t0 + ms(504), t0 + ms(506));
        let snapshot = metrics.snapshot();
        let by_phase = |phase: &str| {
            snapshot
                .iter()
                .find(|h| h.phase == phase)
                .map(|h| h.sum_seconds)
                .unwrap()
        };
        assert!((by_phase("request_queue") - 0.002).abs() < 1e-9);
        assert!((by_phase("local") - 0.001).abs() < 1e-9);
        assert!((by_phase("remote") - 0.5).abs() < 1e-9);
        assert!((by_phase("response_queue") - 0.001).abs() < 1e-9);
        assert!((by_phase("response_send") - 0.002).abs() < 1e-9);
        assert!((by_phase("total") - 0.506).abs() < 1e-9);
        let total = snapshot.iter().find(|h| h.phase == "total").unwrap();
        assert_eq!(total.api_key, 1);
        assert_eq!(total.count, 1);
        // 506 ms falls in the 1 s bucket; the cumulative counts never decrease.
        let one_second = LATENCY_BUCKETS_SECONDS
            .iter()
            .position(|&b| b == 1.0)
            .unwrap();
        assert_eq!(total.cumulative[one_second - 1], 0);
        assert_eq!(total.cumulative[one_second], 1);
        assert_eq!(*total.cumulative.last().unwrap(), 1);
    }

    #[test]
    fn answered_by_the_handler_has_no_remote_time() {
        let metrics = RequestMetrics::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let times = RequestTimes {
            api_key: 0,
            received: t0,
            dequeued: Some(t0 + ms(1)),
            handled: None,
            responded: Some(t0 + ms(4)),
        };
        metrics.record(&times, t0 + ms(4), t0 + ms(5));
        let snapshot = metrics.snapshot();
        let remote = snapshot.iter().find(|h| h.phase == "remote").unwrap();
        assert_eq!(remote.sum_seconds, 0.0);
        let local = snapshot.iter().find(|h| h.phase == "local").unwrap();
        assert!((local.sum_seconds - 0.003).abs() < 1e-9);
    }

    #[test]
    fn unknown_api_keys_are_ignored() {
        let metrics = RequestMetrics::new();
        let t0 = Instant::now();
        let mut times = RequestTimes::new(-1, t0);
        times.dequeued = Some(t0);
        times.responded = Some(t0);
        metrics.record(&times, t0, t0);
        times.api_key = 500;
        metrics.record(&times, t0, t0);
        assert!(metrics.snapshot().is_empty());
    }
}
