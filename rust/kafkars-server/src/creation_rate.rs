//! `max.connection.creation.rate`: new connections per second across the broker. Past it,
//! the acceptors wait before taking the next connection (Kafka throttles its acceptors
//! the same way), so a reconnect storm cannot starve the processors.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket holding up to one second's worth of connections.
#[derive(Debug)]
pub(crate) struct ConnectionCreationRate {
    per_second: f64,
    state: Mutex<(f64, Instant)>,
}

impl ConnectionCreationRate {
    pub(crate) fn new(per_second: u32) -> Self {
        let per_second = f64::from(per_second.max(1));
        Self {
            per_second,
            state: Mutex::new((per_second, Instant::now())),
        }
    }

    /// Takes one connection's token; returns how long to wait first (zero when within
    /// the rate).
    pub(crate) fn acquire(&self, now: Instant) -> Duration {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = &mut *guard;
        let refill = now.saturating_duration_since(*last).as_secs_f64() * self.per_second;
        *tokens = (*tokens + refill).min(self.per_second);
        *last = now;
        *tokens -= 1.0;
        if *tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-*tokens / self.per_second)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_up_to_the_rate_then_waits() {
        let rate = ConnectionCreationRate::new(10);
        let now = Instant::now();
        for _ in 0..10 {
            assert_eq!(rate.acquire(now), Duration::ZERO);
        }
        let wait = rate.acquire(now);
        assert!(wait > Duration::from_millis(90) && wait <= Duration::from_millis(110));
        // A second later the bucket has refilled.
        assert_eq!(rate.acquire(now + Duration::from_secs(2)), Duration::ZERO);
    }
}
