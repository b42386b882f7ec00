//! SystemTimer on the real clock under concurrent use.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use kafkars_timer::SystemTimer;

#[test]
fn earlier_task_wakes_a_sleeping_driver() {
    let (tx, rx) = mpsc::channel();
    let timer = SystemTimer::start("wake", move |id: u32| tx.send(id).unwrap());
    timer.add(60_000, 1);
    thread::sleep(Duration::from_millis(20)); // let the driver go to sleep
    let before = timer.wakeups();
    timer.add(5, 2);
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)).unwrap(),
        2,
        "driver slept through"
    );
    assert!(timer.wakeups() > before);
    assert_eq!(timer.size(), 1);
}

#[test]
fn concurrent_adds_and_cancels_fire_exactly_once_never_early() {
    // (id, fired on time). Asserting inside the task would be swallowed: the
    // driver catches task panics.
    let fired: Arc<Mutex<Vec<(usize, bool)>>> = Arc::default();
    let sink = fired.clone();
    let timer = Arc::new(SystemTimer::start(
        "stress",
        move |(id, delay, added): (usize, Duration, Instant)| {
            sink.lock().unwrap().push((id, added.elapsed() >= delay));
        },
    ));
    let expected: Arc<Mutex<HashSet<usize>>> = Arc::default();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (timer, expected) = (timer.clone(), expected.clone());
            thread::spawn(move || {
                for i in 0..500 {
                    let id = t * 1_000 + i;
                    let delay = Duration::from_millis((i % 40) as u64);
                    let handle = timer.add(delay.as_millis() as u64, (id, delay, Instant::now()));
                    // Cancel every third; a lost race with the driver is fine.
                    if i % 3 == 0 && timer.cancel(handle) {
                        continue;
                    }
                    expected.lock().unwrap().insert(id);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let expected = expected.lock().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fired.lock().unwrap().len() < expected.len() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(50)); // nothing extra may arrive
    let fired = fired.lock().unwrap();
    let ids: HashSet<usize> = fired.iter().map(|f| f.0).collect();
    assert_eq!(ids.len(), fired.len(), "a task fired twice");
    assert!(
        fired.iter().all(|f| f.1),
        "a task fired before its delay (real clock)"
    );
    assert_eq!(ids, expected);
    assert_eq!(timer.size(), 0);
}
