//! Dev-time: what report.html costs a run, phase by phase, summed over the process and printed
//! on stderr at the end of the page's step when `SCOREKIT_PAGE_TIMINGS` is set (how
//! BENCHMARKS.md §13 measures the page's share of a run from inside the run). Nothing is
//! printed, and nothing but a clock read is done, otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A phase of the page's cost.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    /// The suite reading its inputs again for the texts the page shows (passages, responses).
    Texts,
    /// items.jsonl and calibration.jsonl read into the page's tables.
    Table,
    /// The templates filled and the page's bytes written to its temporary file.
    Render,
    /// The page's fsync and rename.
    Sync,
}

const PHASES: usize = 4;
static NANOS: [AtomicU64; PHASES] = [const { AtomicU64::new(0) }; PHASES];
/// The CPU time of the thread that ran each phase, in clock ticks (Linux; 0 elsewhere).
static TICKS: [AtomicU64; PHASES] = [const { AtomicU64::new(0) }; PHASES];

/// The environment variable that turns the report on.
pub const ENV: &str = "SCOREKIT_PAGE_TIMINGS";

/// `f`, its wall time and CPU time added to `phase`.
pub fn timed<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let cpu = thread_ticks();
    let out = f();
    add(phase, start.elapsed());
    add_ticks(phase, thread_ticks().saturating_sub(cpu));
    out
}

/// `d` of wall time added to `phase`.
pub fn add(phase: Phase, d: std::time::Duration) {
    NANOS[phase as usize].fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// `ticks` of CPU time ([`thread_ticks`]) added to `phase`.
pub fn add_ticks(phase: Phase, ticks: u64) {
    TICKS[phase as usize].fetch_add(ticks, Ordering::Relaxed);
}

/// The calling thread's CPU time (user and system) in clock ticks of 10 ms, from
/// /proc/thread-self/stat (Linux; 0 elsewhere): on a loaded machine the wall time of a phase
/// says more about the other processes than about the phase.
pub fn thread_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0;
    };
    // Fields after the command name (which may hold spaces) in parentheses: utime is the 12th
    // and stime the 13th of them.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum()
}

/// One stderr line of the phases so far, where [`ENV`] is set.
pub fn report() {
    if std::env::var_os(ENV).is_none() {
        return;
    }
    let s = |p: Phase| NANOS[p as usize].load(Ordering::Relaxed) as f64 / 1e9;
    // Linux's clock ticks are 1/100 s (USER_HZ) on every architecture it exports them for.
    let cpu = |p: Phase| TICKS[p as usize].load(Ordering::Relaxed) as f64 / 100.0;
    let all = [Phase::Texts, Phase::Table, Phase::Render, Phase::Sync];
    let total: f64 = all.into_iter().map(s).sum();
    let total_cpu: f64 = all.into_iter().map(cpu).sum();
    eprintln!(
        "report.html timings: texts {:.3} s, table {:.3} s, render {:.3} s, sync {:.3} s, total {:.3} s; \
         cpu: texts {:.2} s, table {:.2} s, render {:.2} s, sync {:.2} s, total {:.2} s",
        s(Phase::Texts),
        s(Phase::Table),
        s(Phase::Render),
        s(Phase::Sync),
        total,
        cpu(Phase::Texts),
        cpu(Phase::Table),
        cpu(Phase::Render),
        cpu(Phase::Sync),
        total_cpu
    );
}
