//! DelayedOperationPurgatory: completion by key, expiration, purge, and
//! exactly-once `on_complete` when completion and expiration race.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use kafkars_timer::{DelayedOperation, DelayedOperationPurgatory, OperationState};

/// Completes once `ready` is set; records its callbacks.
#[derive(Default)]
struct MockOp {
    state: OperationState,
    delay_ms: u64,
    ready: AtomicBool,
    completions: AtomicUsize,
    expirations: AtomicUsize,
    events: Mutex<Vec<&'static str>>,
}

impl MockOp {
    fn new(delay_ms: u64) -> Arc<Self> {
        Arc::new(Self {
            delay_ms,
            ..Self::default()
        })
    }

    fn completions(&self) -> usize {
        self.completions.load(Ordering::SeqCst)
    }

    fn expirations(&self) -> usize {
        self.expirations.load(Ordering::SeqCst)
    }
}

impl DelayedOperation for MockOp {
    fn state(&self) -> &OperationState {
        &self.state
    }

    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }

    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && self.force_complete()
    }

    fn on_complete(&self) {
        self.completions.fetch_add(1, Ordering::SeqCst);
        self.events.lock().unwrap().push("complete");
    }

    fn on_expiration(&self) {
        self.expirations.fetch_add(1, Ordering::SeqCst);
        self.events.lock().unwrap().push("expire");
    }
}

type Purgatory = DelayedOperationPurgatory<String, MockOp>;

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn purgatory_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Purgatory>();
    assert_send_sync::<kafkars_timer::SystemTimer<Box<dyn FnOnce() + Send>>>();
}

#[test]
fn completes_immediately_without_watching() {
    let purgatory = Purgatory::manual("test", 1000);
    let op = MockOp::new(100);
    op.ready.store(true, Ordering::SeqCst);
    assert!(purgatory.try_complete_else_watch(&op, &keys(&["a"])));
    assert_eq!(op.completions(), 1);
    assert_eq!(purgatory.watched(), 0);
    assert_eq!(purgatory.num_delayed(), 0);
}

#[test]
fn watch_then_complete_by_key() {
    let purgatory = Purgatory::manual("test", 1000);
    let op = MockOp::new(500);
    let other = MockOp::new(500);
    assert!(!purgatory.try_complete_else_watch(&op, &keys(&["a", "b"])));
    assert!(!purgatory.try_complete_else_watch(&other, &keys(&["b"])));
    assert_eq!(purgatory.watched(), 3);
    assert_eq!(purgatory.num_delayed(), 2);

    assert_eq!(
        purgatory.check_and_complete(&"a".to_owned()),
        0,
        "not ready yet"
    );
    op.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"a".to_owned()), 1);
    assert_eq!(op.completions(), 1);
    assert_eq!(purgatory.num_delayed(), 1, "completion cancels the timeout");
    assert_eq!(
        purgatory.watched(),
        2,
        "still listed under b until checked or purged"
    );
    assert_eq!(
        purgatory.check_and_complete(&"b".to_owned()),
        0,
        "b's op already completed"
    );
    assert_eq!(purgatory.watched(), 1, "completed op dropped from b");
    assert_eq!(purgatory.check_and_complete(&"zzz".to_owned()), 0);

    // The timeout of a completed operation never fires.
    purgatory.advance_clock(1_000);
    assert_eq!(op.expirations(), 0);
    assert_eq!(op.completions(), 1);
    assert_eq!(other.expirations(), 1);
}

#[test]
fn expiration_calls_on_expiration_then_on_complete_once() {
    let purgatory = Purgatory::manual("test", 1000);
    let op = MockOp::new(300);
    assert!(!purgatory.try_complete_else_watch(&op, &keys(&["a"])));
    assert_eq!(purgatory.advance_clock(299), 0);
    assert_eq!(op.completions(), 0);
    assert_eq!(purgatory.advance_clock(300), 1);
    assert_eq!(*op.events.lock().unwrap(), vec!["expire", "complete"]);
    assert_eq!(purgatory.num_delayed(), 0);
    // A late event does not complete it again.
    op.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"a".to_owned()), 0);
    assert!(!op.force_complete());
    assert_eq!(op.completions(), 1);
    assert_eq!(purgatory.watched(), 0);
}

#[test]
fn purge_removes_completed_watchers() {
    let purge_interval = 10;
    let purgatory = Purgatory::manual("test", purge_interval);
    let ops: Vec<_> = (0..100).map(|_| MockOp::new(60_000)).collect();
    for (i, op) in ops.iter().enumerate() {
        assert!(!purgatory.try_complete_else_watch(op, &[format!("k{i}"), "shared".to_owned()]));
    }
    assert_eq!(purgatory.watched(), 200);
    // Complete ops through their own keys: each stays listed under "shared".
    for (i, op) in ops.iter().enumerate().take(purge_interval) {
        op.ready.store(true, Ordering::SeqCst);
        assert_eq!(purgatory.check_and_complete(&format!("k{i}")), 1);
    }
    purgatory.advance_clock(1);
    assert_eq!(
        purgatory.watched(),
        190,
        "below the purge threshold: nothing swept"
    );
    for (i, op) in ops.iter().enumerate().skip(purge_interval) {
        op.ready.store(true, Ordering::SeqCst);
        assert_eq!(purgatory.check_and_complete(&format!("k{i}")), 1);
    }
    assert_eq!(purgatory.watched(), 100);
    assert_eq!(purgatory.num_delayed(), 0);
    purgatory.advance_clock(2);
    assert_eq!(purgatory.watched(), 0, "the sweep emptied the shared list");
}

#[test]
fn cancel_for_key_returns_ops_without_completing() {
    let purgatory = Purgatory::manual("test", 1000);
    let op = MockOp::new(100);
    purgatory.try_complete_else_watch(&op, &keys(&["a"]));
    let cancelled = purgatory.cancel_for_key(&"a".to_owned());
    assert_eq!(cancelled.len(), 1);
    assert_eq!(op.completions(), 0);
    assert_eq!(purgatory.watched(), 0);
}

/// Completion (from several threads, by key and directly) races expiration
/// (from the advancing thread): `on_complete` must run exactly once.
#[test]
fn exactly_once_under_racing_completion_and_expiration_manual_clock() {
    for round in 0..500u64 {
        let purgatory = Arc::new(Purgatory::manual("race", 1000));
        let op = MockOp::new(10);
        let key = format!("key{}", round % 3);
        assert!(!purgatory.try_complete_else_watch(&op, std::slice::from_ref(&key)));
        let barrier = Arc::new(Barrier::new(4));
        let completed_by_key = Arc::new(AtomicUsize::new(0));
        let mut threads = vec![];
        for t in 0..3 {
            let (purgatory, op, key, barrier, by_key) = (
                purgatory.clone(),
                op.clone(),
                key.clone(),
                barrier.clone(),
                completed_by_key.clone(),
            );
            threads.push(thread::spawn(move || {
                barrier.wait();
                op.ready.store(true, Ordering::SeqCst);
                if t == 0 {
                    by_key.fetch_add(usize::from(op.force_complete()), Ordering::SeqCst);
                } else {
                    by_key.fetch_add(purgatory.check_and_complete(&key), Ordering::SeqCst);
                }
            }));
        }
        barrier.wait();
        purgatory.advance_clock(10);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(op.completions(), 1, "round {round}");
        let by_key = completed_by_key.load(Ordering::SeqCst);
        assert_eq!(
            by_key + op.expirations(),
            1,
            "round {round}: exactly one completer"
        );
        if op.expirations() == 1 {
            assert_eq!(*op.events.lock().unwrap(), vec!["expire", "complete"]);
        }
    }
}

/// The same race against the real-clock reaper thread, with many operations
/// added and completed from several threads at once.
#[test]
fn exactly_once_with_real_reaper_and_many_threads() {
    let purgatory = Arc::new(Purgatory::new("race-real", 50));
    let all_ops = Arc::new(Mutex::new(vec![]));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (purgatory, all_ops) = (purgatory.clone(), all_ops.clone());
            thread::spawn(move || {
                for i in 0..300u64 {
                    // Delays of 0..3 ms race the completions below.
                    let op = MockOp::new(i % 4);
                    let key = format!("p{}", i % 5);
                    let keys = [key.clone(), format!("t{t}")];
                    purgatory.try_complete_else_watch(&op, &keys);
                    if i % 2 == 0 {
                        op.ready.store(true, Ordering::SeqCst);
                        purgatory.check_and_complete(&key);
                    }
                    all_ops.lock().unwrap().push(op);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every op has at most a few ms left; wait for the reaper to finish.
    let ops = all_ops.lock().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ops.iter().any(|op| op.completions() == 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "operations never completed"
        );
        thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(purgatory.num_delayed(), 0);
    for op in ops.iter() {
        assert_eq!(op.completions(), 1);
        assert!(op.expirations() <= 1);
    }
    purgatory.shutdown();
}

#[test]
fn real_reaper_expires_on_time() {
    let purgatory = Purgatory::new("expire", 1000);
    let op = MockOp::new(30);
    let start = std::time::Instant::now();
    assert!(!purgatory.try_complete_else_watch(&op, &keys(&["a"])));
    while op.completions() == 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "never expired");
        thread::sleep(Duration::from_millis(1));
    }
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert_eq!(op.expirations(), 1);
}

/// An operation whose completion checks the purgatory again, as a follower's fetch
/// does when it moves the high watermark: completing from `on_complete` must not
/// deadlock on the operation's own lock, by expiry or by `check_and_complete`.
struct ReentrantOp {
    state: OperationState,
    purgatory: Mutex<Option<Arc<DelayedOperationPurgatory<String, ReentrantOp>>>>,
    ready: AtomicBool,
    completions: AtomicUsize,
    delay_ms: u64,
}

impl DelayedOperation for ReentrantOp {
    fn state(&self) -> &OperationState {
        &self.state
    }
    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && self.force_complete()
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, Ordering::SeqCst);
        let purgatory = self.purgatory.lock().unwrap().clone();
        if let Some(p) = purgatory {
            p.check_and_complete(&"k".to_string());
        }
    }
    fn on_expiration(&self) {}
}

fn reentrant(
    delay_ms: u64,
) -> (
    Arc<DelayedOperationPurgatory<String, ReentrantOp>>,
    Arc<ReentrantOp>,
) {
    let purgatory = Arc::new(DelayedOperationPurgatory::new("reentrant", 1000));
    let op = Arc::new(ReentrantOp {
        state: OperationState::new(),
        purgatory: Mutex::new(Some(Arc::clone(&purgatory))),
        ready: AtomicBool::new(false),
        completions: AtomicUsize::new(0),
        delay_ms,
    });
    assert!(!purgatory.try_complete_else_watch(&op, &keys(&["k"])));
    (purgatory, op)
}

#[test]
fn on_complete_may_check_its_own_key_on_expiry() {
    let (purgatory, op) = reentrant(20);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while op.completions.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        op.completions.load(Ordering::SeqCst),
        1,
        "expiry deadlocked"
    );
    *op.purgatory.lock().unwrap() = None;
    purgatory.shutdown();
}

#[test]
fn on_complete_may_check_its_own_key_when_completed_by_an_event() {
    let (purgatory, op) = reentrant(60_000);
    op.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"k".to_string()), 1);
    assert_eq!(op.completions.load(Ordering::SeqCst), 1);
    *op.purgatory.lock().unwrap() = None;
    purgatory.shutdown();
}

#[test]
fn shutdown_and_complete_all_completes_what_waits_and_what_comes_later() {
    let purgatory = Purgatory::new("test", 1000);
    let two_keys = MockOp::new(60_000);
    let one_key = MockOp::new(60_000);
    let done = MockOp::new(60_000);
    assert!(!purgatory.try_complete_else_watch(&two_keys, &keys(&["a", "b"])));
    assert!(!purgatory.try_complete_else_watch(&one_key, &keys(&["b"])));
    assert!(!purgatory.try_complete_else_watch(&done, &keys(&["c"])));
    done.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"c".to_owned()), 1);

    // Each waiting operation once, however many keys it is watched under; without
    // `on_expiration`: they did not time out.
    assert_eq!(purgatory.shutdown_and_complete_all(), 2);
    for op in [&two_keys, &one_key, &done] {
        assert_eq!((op.completions(), op.expirations()), (1, 0));
    }
    assert_eq!((purgatory.watched(), purgatory.num_delayed()), (0, 0));
    // No timer will expire an operation added now: it completes at once.
    let late = MockOp::new(60_000);
    assert!(purgatory.try_complete_else_watch(&late, &keys(&["a"])));
    assert_eq!((late.completions(), late.expirations()), (1, 0));
    assert_eq!(purgatory.shutdown_and_complete_all(), 0, "idempotent");
}
