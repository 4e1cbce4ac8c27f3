//! A parallel map whose results are consumed in input order, with a bounded window: workers
//! run ahead of the consumer by at most `window` tasks, so memory holds at most that many
//! results however many tasks there are.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

struct State<T> {
    /// Results done and not yet consumed, by index.
    done: BTreeMap<usize, T>,
    /// The next index the consumer takes.
    consumed: usize,
    /// Set when the consumer stops early (an error): workers stop taking tasks.
    stop: bool,
}

/// Run `work(i)` for `i` in `0..n` on `threads` threads and hand each result to `consume` in
/// order of `i`, on the calling thread. A worker waits before starting task `i` until
/// `i < consumed + window`. The first error, in order of `i` (from `work` or `consume`), stops
/// the run and is returned; tasks after it are not started.
pub fn map_ordered<T, E, W, C>(
    n: usize,
    threads: usize,
    window: usize,
    work: W,
    mut consume: C,
) -> Result<(), E>
where
    T: Send,
    E: Send,
    W: Fn(usize) -> Result<T, E> + Sync,
    C: FnMut(usize, T) -> Result<(), E>,
{
    let window = window.max(1);
    let next = AtomicUsize::new(0);
    let state = Mutex::new(State::<Result<T, E>> {
        done: BTreeMap::new(),
        consumed: 0,
        stop: false,
    });
    let changed = Condvar::new();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(n) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return;
                }
                {
                    let mut st = state.lock().expect("ordered state");
                    while !st.stop && i >= st.consumed + window {
                        st = changed.wait(st).expect("ordered state");
                    }
                    if st.stop {
                        return;
                    }
                }
                let r = work(i);
                let mut st = state.lock().expect("ordered state");
                st.done.insert(i, r);
                changed.notify_all();
            });
        }
        let mut outcome = Ok(());
        for i in 0..n {
            let r = {
                let mut st = state.lock().expect("ordered state");
                loop {
                    if let Some(r) = st.done.remove(&i) {
                        st.consumed = i + 1;
                        changed.notify_all();
                        break r;
                    }
                    st = changed.wait(st).expect("ordered state");
                }
            };
            if let Err(e) = r.and_then(|v| consume(i, v)) {
                outcome = Err(e);
                break;
            }
        }
        let mut st = state.lock().expect("ordered state");
        st.stop = true;
        st.done.clear();
        changed.notify_all();
        drop(st);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_arrive_in_order_within_the_window() {
        let ahead = AtomicUsize::new(0);
        let consumed = AtomicUsize::new(0);
        let mut seen = Vec::new();
        map_ordered(
            200,
            4,
            3,
            |i| {
                // Later tasks finish first, to exercise the reordering.
                std::thread::sleep(std::time::Duration::from_micros(
                    ((200 - i) % 7) as u64 * 50,
                ));
                let lead = i - consumed.load(Ordering::SeqCst).min(i);
                ahead.fetch_max(lead, Ordering::SeqCst);
                Ok::<_, ()>(i * 2)
            },
            |i, v| {
                seen.push((i, v));
                consumed.store(i + 1, Ordering::SeqCst);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..200).map(|i| (i, i * 2)).collect::<Vec<_>>());
        assert!(
            ahead.load(Ordering::SeqCst) <= 3,
            "ran more than the window ahead"
        );
    }

    #[test]
    fn the_first_error_in_order_wins_and_stops_the_rest() {
        let started = AtomicUsize::new(0);
        let r = map_ordered(
            1000,
            2,
            4,
            |i| {
                started.fetch_add(1, Ordering::SeqCst);
                if i == 10 || i == 11 {
                    Err(i)
                } else {
                    Ok(i)
                }
            },
            |_, _| Ok(()),
        );
        assert_eq!(r, Err(10));
        assert!(started.load(Ordering::SeqCst) < 30);
        let r = map_ordered(5, 2, 2, Ok::<usize, usize>, |i, _| {
            if i == 3 {
                Err(99)
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err(99));
    }
}
