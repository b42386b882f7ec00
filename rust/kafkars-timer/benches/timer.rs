//! Timer throughput: insert+cancel and insert+expire with 10k and 1M pending
//! timers, for
//! - `wheel`: our hierarchical [`Timer`],
//! - `heap`: a `BinaryHeap` delay queue with lazy-deletion cancel (what a
//!   Java `DelayQueue` of tasks amounts to, minus its O(n) `remove`),
//! - `tokio`: `tokio_util::time::DelayQueue` (itself a hierarchical wheel)
//!   on a current-thread runtime with paused time, so no real sleeping.
//!
//! Deadlines are pseudo-random in 1..=30 000 ms. Expiry advances the clock in
//! 100 ms steps, as a driver waking per bucket would, and drains each step.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kafkars_timer::Timer;
use tokio_util::time::DelayQueue;

const SPAN_MS: u64 = 30_000;
const STEP_MS: u64 = 100;

fn deadlines(n: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1 + x % SPAN_MS
        })
        .collect()
}

/// The baseline: a min-heap of (deadline, id); cancel sets a tombstone that
/// `pop` skips.
struct HeapDelayQueue {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    cancelled: Vec<bool>,
}

impl HeapDelayQueue {
    fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
            cancelled: Vec::with_capacity(n),
        }
    }

    fn add(&mut self, deadline: u64) -> u32 {
        let id = self.cancelled.len() as u32;
        self.cancelled.push(false);
        self.heap.push(Reverse((deadline, id)));
        id
    }

    fn cancel(&mut self, id: u32) {
        self.cancelled[id as usize] = true;
    }

    fn advance(&mut self, now: u64, mut f: impl FnMut(u32)) {
        while let Some(&Reverse((deadline, id))) = self.heap.peek() {
            if deadline > now {
                break;
            }
            self.heap.pop();
            if !self.cancelled[id as usize] {
                f(id);
            }
        }
    }
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

fn insert_cancel(c: &mut Criterion) {
    let rt = paused_runtime();
    for n in [10_000usize, 1_000_000] {
        let ds = deadlines(n);
        let mut group = c.benchmark_group("insert_cancel");
        group.throughput(Throughput::Elements(n as u64));
        if n >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("wheel", n), &ds, |b, ds| {
            b.iter(|| {
                let mut timer = Timer::new();
                let handles: Vec<_> = ds.iter().map(|&d| timer.add(d, d)).collect();
                for h in handles {
                    black_box(timer.cancel(h));
                }
                timer
            });
        });
        group.bench_with_input(BenchmarkId::new("heap", n), &ds, |b, ds| {
            b.iter(|| {
                let mut queue = HeapDelayQueue::with_capacity(ds.len());
                let ids: Vec<_> = ds.iter().map(|&d| queue.add(d)).collect();
                for id in ids {
                    queue.cancel(id);
                }
                queue
            });
        });
        group.bench_with_input(BenchmarkId::new("tokio", n), &ds, |b, ds| {
            b.iter(|| {
                rt.block_on(async {
                    let mut queue = DelayQueue::with_capacity(ds.len());
                    let keys: Vec<_> = ds
                        .iter()
                        .map(|&d| queue.insert(d, Duration::from_millis(d)))
                        .collect();
                    for key in keys {
                        black_box(queue.remove(&key));
                    }
                    queue
                })
            });
        });
        group.finish();
    }
}

fn insert_expire(c: &mut Criterion) {
    let rt = paused_runtime();
    for n in [10_000usize, 1_000_000] {
        let ds = deadlines(n);
        let mut group = c.benchmark_group("insert_expire");
        group.throughput(Throughput::Elements(n as u64));
        if n >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("wheel", n), &ds, |b, ds| {
            b.iter(|| {
                let mut timer = Timer::new();
                for &d in ds {
                    timer.add(d, d);
                }
                let mut fired = 0usize;
                let mut now = 0;
                while now < SPAN_MS {
                    now += STEP_MS;
                    timer.advance_with(now, |_| fired += 1);
                }
                assert_eq!(fired, ds.len());
            });
        });
        group.bench_with_input(BenchmarkId::new("heap", n), &ds, |b, ds| {
            b.iter(|| {
                let mut queue = HeapDelayQueue::with_capacity(ds.len());
                for &d in ds {
                    queue.add(d);
                }
                let mut fired = 0usize;
                let mut now = 0;
                while now < SPAN_MS {
                    now += STEP_MS;
                    queue.advance(now, |_| fired += 1);
                }
                assert_eq!(fired, ds.len());
            });
        });
        group.bench_with_input(BenchmarkId::new("tokio", n), &ds, |b, ds| {
            b.iter(|| {
                rt.block_on(async {
                    let mut queue = DelayQueue::with_capacity(ds.len());
                    for &d in ds {
                        queue.insert(d, Duration::from_millis(d));
                    }
                    let mut fired = 0usize;
                    let mut now = 0;
                    while now < SPAN_MS {
                        now += STEP_MS;
                        tokio::time::advance(Duration::from_millis(STEP_MS)).await;
                        // Drain what is due without waiting for more.
                        while let Some(Some(_)) = futures_now(&mut queue) {
                            fired += 1;
                        }
                    }
                    // Paused time may round the last deadlines past the loop.
                    while std::future::poll_fn(|cx| queue.poll_expired(cx))
                        .await
                        .is_some()
                    {
                        fired += 1;
                    }
                    assert_eq!(fired, ds.len());
                })
            });
        });
        group.finish();
    }
}

/// Polls the queue once with a no-op waker: `Some(item)` if one is due now,
/// `Some(None)`/`None` when exhausted or nothing is due yet.
fn futures_now(queue: &mut DelayQueue<u64>) -> Option<Option<u64>> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match queue.poll_expired(&mut cx) {
        std::task::Poll::Ready(Some(expired)) => Some(Some(expired.into_inner())),
        std::task::Poll::Ready(None) => Some(None),
        std::task::Poll::Pending => None,
    }
}

criterion_group!(benches, insert_cancel, insert_expire);
criterion_main!(benches);
