//! The timer against a binary-heap oracle on a mock clock: every task fires
//! exactly once, never before its deadline, at the first `advance` that
//! reaches its deadline rounded up to a tick; cancelled tasks never fire.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use kafkars_timer::{Timer, TimerHandle};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add(u64),
    Cancel(usize),
    Advance(u64),
}

fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..50,
        3 => 0u64..5_000,
        2 => 0u64..2_000_000,
        1 => prop_oneof![Just(3_600_000u64), Just(86_400_000u64), 3_000_000u64..100_000_000],
    ]
}

fn step() -> impl Strategy<Value = u64> {
    prop_oneof![
        5 => 0u64..30,
        2 => 0u64..3_000,
        1 => 0u64..50_000_000,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => delay().prop_map(Op::Add),
        2 => any::<usize>().prop_map(Op::Cancel),
        3 => step().prop_map(Op::Advance),
    ]
}

/// The reference: deadlines in a heap, cancellation by lazy deletion.
struct Oracle {
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    pending: HashSet<usize>,
}

impl Oracle {
    fn due(&mut self, fire_at: u64) -> Vec<usize> {
        let mut due = vec![];
        while let Some(&Reverse((at, id))) = self.heap.peek() {
            if at > fire_at {
                break;
            }
            self.heap.pop();
            if self.pending.remove(&id) {
                due.push(id);
            }
        }
        due.sort_unstable();
        due
    }
}

fn check_advance(
    timer: &mut Timer<usize>,
    oracle: &mut Oracle,
    deadlines: &HashMap<usize, u64>,
    fired: &mut HashSet<usize>,
    tick_ms: u64,
    to: u64,
) -> Result<(), TestCaseError> {
    let got = timer.advance(to);
    for id in &got {
        prop_assert!(fired.insert(*id), "task {id} fired twice");
        prop_assert!(deadlines[id] <= to, "task {id} fired early");
    }
    let ordered: Vec<u64> = got
        .iter()
        .map(|id| deadlines[id].div_ceil(tick_ms))
        .collect();
    prop_assert!(
        ordered.is_sorted(),
        "fired out of deadline order: {ordered:?}"
    );
    let mut got_sorted = got;
    got_sorted.sort_unstable();
    prop_assert_eq!(got_sorted, oracle.due(to));
    Ok(())
}

fn run(tick_ms: u64, wheel_size: usize, start_ms: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut timer: Timer<usize> = Timer::with_config(tick_ms, wheel_size, start_ms);
    let mut oracle = Oracle {
        heap: BinaryHeap::new(),
        pending: HashSet::new(),
    };
    let mut handles: Vec<TimerHandle> = vec![];
    let mut deadlines: HashMap<usize, u64> = HashMap::new();
    let mut fired: HashSet<usize> = HashSet::new();
    let mut now = start_ms;
    // A task fires at the first advance reaching its deadline rounded up to
    // a tick: never early, less than one tick late.
    let fire_at = |deadline: u64| deadline.div_ceil(tick_ms) * tick_ms;

    for op in ops {
        match *op {
            Op::Add(delay) => {
                let id = handles.len();
                let deadline = now + delay;
                handles.push(timer.add(delay, id));
                deadlines.insert(id, deadline);
                oracle.heap.push(Reverse((fire_at(deadline), id)));
                oracle.pending.insert(id);
            }
            Op::Cancel(pick) => {
                if handles.is_empty() {
                    continue;
                }
                let id = pick % handles.len();
                let expected = oracle.pending.remove(&id);
                prop_assert_eq!(timer.cancel(handles[id]), expected, "cancel({}) result", id);
            }
            Op::Advance(step) => {
                now += step;
                check_advance(
                    &mut timer,
                    &mut oracle,
                    &deadlines,
                    &mut fired,
                    tick_ms,
                    now,
                )?;
            }
        }
        prop_assert_eq!(timer.size(), oracle.pending.len());
        if let Some(next) = timer.next_expiration() {
            // Never sleep past the earliest pending deadline.
            let earliest = oracle.pending.iter().map(|id| fire_at(deadlines[id])).min();
            prop_assert!(
                earliest.is_some_and(|e| next <= e.max(now)),
                "next_expiration {next} > {earliest:?}"
            );
        } else {
            prop_assert!(oracle.pending.is_empty());
        }
    }
    // Drain everything, long timers included.
    let end = now + 200_000_000;
    check_advance(
        &mut timer,
        &mut oracle,
        &deadlines,
        &mut fired,
        tick_ms,
        end,
    )?;
    prop_assert_eq!(timer.size(), 0);
    prop_assert_eq!(timer.next_expiration(), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn wheel_matches_heap_oracle(start in 0u64..1_000_000, ops in prop::collection::vec(op(), 1..300)) {
        run(1, 20, start, &ops)?;
    }

    #[test]
    fn coarse_wheels_match_heap_oracle(
        tick in 1u64..10,
        size in 2usize..8,
        start in 0u64..1_000,
        ops in prop::collection::vec(op(), 1..200),
    ) {
        run(tick, size, start, &ops)?;
    }
}

#[test]
fn long_delays_fire_through_overflow_wheels() {
    let mut timer = Timer::new();
    let hour = timer.add(3_600_000, "hour");
    let day = timer.add(86_400_000, "day");
    timer.add(86_400_001, "day+1");
    assert!(timer.wheel().levels() >= 6);
    assert!(timer.contains(hour) && timer.contains(day));
    // Step the clock as a driver would: straight to each next expiration.
    let mut fired = vec![];
    let mut wakeups = 0;
    while let Some(at) = timer.next_expiration() {
        wakeups += 1;
        for task in timer.advance(at) {
            fired.push((task, at));
        }
    }
    assert_eq!(
        fired,
        vec![
            ("hour", 3_600_000),
            ("day", 86_400_000),
            ("day+1", 86_400_001)
        ]
    );
    // Cascading costs a handful of wake-ups per level, not one per tick.
    assert!(wakeups < 40, "{wakeups} wake-ups");
}

#[test]
fn many_timers_same_deadline_and_cancel_half() {
    let mut timer = Timer::new();
    let handles: Vec<_> = (0..10_000).map(|i| timer.add(1_000 + (i % 7), i)).collect();
    for h in handles.iter().step_by(2) {
        assert!(timer.cancel(*h));
    }
    let fired = timer.advance(2_000);
    assert_eq!(fired.len(), 5_000);
    assert!(fired.iter().all(|i| i % 2 == 1));
}
