//! A parallel map whose results are consumed in input order, with a bounded window: workers
//! run ahead of the consumer by at most `window` tasks, so memory holds at most that many
//! results however many tasks there are.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

struct State<T> {
    /// The next task to hand out.
    next: usize,
    /// Results done and not yet consumed, by index.
    done: BTreeMap<usize, T>,
    /// The next index the consumer takes.
    consumed: usize,
    /// Set when the consumer stops early (an error): workers stop taking tasks.
    stop: bool,
    /// Workers not yet returned (or unwound).
    workers: usize,
}

/// The tasks of an ordered run, as its workers see them: claimed one at a time, within the
/// window, and delivered in any order.
pub struct Tasks<T> {
    n: usize,
    window: usize,
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Tasks<T> {
    /// The next task, if any is left and the run goes on. It must be within the window (less
    /// than the consumer's next index plus the window): with `wait` this waits until it is,
    /// without it a full window gives `None` at once (a worker that holds tasks must finish
    /// them, or the consumer, waiting on one of them, never moves the window).
    pub fn claim(&self, wait: bool) -> Option<usize> {
        let mut st = self.state.lock().expect("ordered state");
        loop {
            if st.stop || st.next >= self.n {
                return None;
            }
            if st.next < st.consumed + self.window {
                st.next += 1;
                return Some(st.next - 1);
            }
            if !wait {
                return None;
            }
            st = self.changed.wait(st).expect("ordered state");
        }
    }

    /// Whether the run has stopped (an error): what a worker still holds would be thrown away.
    pub fn stopped(&self) -> bool {
        self.state.lock().expect("ordered state").stop
    }

    /// Hand in the result of task `i`.
    pub fn deliver(&self, i: usize, result: T) {
        let mut st = self.state.lock().expect("ordered state");
        if !st.stop {
            st.done.insert(i, result);
        }
        self.changed.notify_all();
    }
}

/// Run tasks `0..n` on `threads` threads and hand each result to `consume` in order of the
/// task, on the calling thread. `worker` runs on each thread: it claims tasks from [`Tasks`]
/// (at most `window` past the consumer's next one), may hold several at once, delivers every
/// task it claims, in any order, and returns when `claim` gives `None` and it holds no task
/// (or, once [`Tasks::stopped`], at once). The first error, in task order (a delivered `Err`
/// or one from `consume`), stops the run and is returned; no task is claimed after it. A
/// worker that panics, or returns holding a task it never delivered, panics the run instead
/// of leaving the consumer waiting.
pub fn run_ordered<T, E, W, C>(
    n: usize,
    threads: usize,
    window: usize,
    worker: W,
    mut consume: C,
) -> Result<(), E>
where
    T: Send,
    E: Send,
    W: Fn(&Tasks<Result<T, E>>) + Sync,
    C: FnMut(usize, T) -> Result<(), E>,
{
    let tasks = Tasks {
        n,
        window: window.max(1),
        state: Mutex::new(State {
            next: 0,
            done: BTreeMap::new(),
            consumed: 0,
            stop: false,
            workers: 0,
        }),
        changed: Condvar::new(),
    };
    /// Counts its worker out when dropped: on return and on unwinding alike.
    struct Leaving<'a, T>(&'a Tasks<T>);
    impl<T> Drop for Leaving<'_, T> {
        fn drop(&mut self) {
            // A worker that panicked holding the lock poisoned it; count it out all the same.
            let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
            st.workers -= 1;
            // The others stop too, or one waiting for the window would wait for ever.
            if std::thread::panicking() {
                st.stop = true;
            }
            self.0.changed.notify_all();
        }
    }
    let workers = threads.max(1).min(n);
    tasks.state.lock().expect("ordered state").workers = workers;
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let _leaving = Leaving(&tasks);
                worker(&tasks)
            });
        }
        let mut outcome = Ok(());
        for i in 0..n {
            let r = {
                let mut st = tasks.state.lock().expect("ordered state");
                loop {
                    if let Some(r) = st.done.remove(&i) {
                        st.consumed = i + 1;
                        tasks.changed.notify_all();
                        break r;
                    }
                    if st.workers == 0 {
                        st.stop = true;
                        drop(st);
                        panic!("ordered run: task {i} was never delivered (a worker panicked)");
                    }
                    st = tasks.changed.wait(st).expect("ordered state");
                }
            };
            if let Err(e) = r.and_then(|v| consume(i, v)) {
                outcome = Err(e);
                break;
            }
        }
        let mut st = tasks.state.lock().expect("ordered state");
        st.stop = true;
        st.done.clear();
        tasks.changed.notify_all();
        drop(st);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Workers that hold one task at a time.
    fn map_ordered<T: Send, E: Send>(
        n: usize,
        threads: usize,
        window: usize,
        work: impl Fn(usize) -> Result<T, E> + Sync,
        consume: impl FnMut(usize, T) -> Result<(), E>,
    ) -> Result<(), E> {
        run_ordered(
            n,
            threads,
            window,
            |tasks| {
                while let Some(i) = tasks.claim(true) {
                    tasks.deliver(i, work(i));
                }
            },
            consume,
        )
    }

    #[test]
    fn a_panicking_worker_panics_the_run_instead_of_hanging_it() {
        for threads in [1, 2] {
            let run = std::panic::catch_unwind(|| {
                map_ordered(
                    50,
                    threads,
                    4,
                    |i| {
                        if i == 7 {
                            panic!("worker fails on task 7");
                        }
                        Ok::<_, ()>(i)
                    },
                    |_, _| Ok(()),
                )
            });
            assert!(run.is_err(), "{threads} threads: the run returned");
        }
    }

    #[test]
    fn workers_holding_several_tasks_deliver_in_any_order() {
        for (threads, window) in [(1, 1), (2, 3), (3, 40)] {
            let mut seen = Vec::new();
            let held_most = AtomicUsize::new(0);
            run_ordered(
                500,
                threads,
                window,
                |tasks: &Tasks<Result<usize, ()>>| {
                    let mut held = Vec::new();
                    loop {
                        while held.len() < 5 {
                            match tasks.claim(held.is_empty()) {
                                Some(i) => held.push(i),
                                None => break,
                            }
                        }
                        if held.is_empty() {
                            return;
                        }
                        held_most.fetch_max(held.len(), Ordering::SeqCst);
                        // The newest first: the consumer waits on the oldest.
                        let i = held.pop().unwrap();
                        tasks.deliver(i, Ok(i * 3));
                    }
                },
                |i, v| {
                    seen.push((i, v));
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..500).map(|i| (i, i * 3)).collect::<Vec<_>>());
            assert!(held_most.load(Ordering::SeqCst) <= window.min(5));
        }
    }

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
