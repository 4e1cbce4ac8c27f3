//! `scorekit mint --timings`: the time of each phase of a run and the peak memory, on stderr.

use scorekit_io::LANES;
use std::time::Duration;

/// Time per phase, for `--timings`. Read/parse and re-check add up the worker threads'
/// time; the others are wall time on the main thread.
#[derive(Debug, Default)]
pub struct Timings {
    /// Finding the results.jsonl files.
    pub walk: Duration,
    /// The first pass of a re-check run (read, hash, check every line).
    pub validate: Duration,
    /// Reading and parsing (summed over the worker threads).
    pub parse: Duration,
    /// Hashing the inputs (summed over the worker threads).
    pub hash: Duration,
    /// The native checkers (summed over the worker threads).
    pub recheck: Duration,
    /// Duplicates, counts and verdicts per configuration.
    pub aggregate: Duration,
    /// Serialising items.jsonl.
    pub write_items: Duration,
    /// The reading pass as a whole (wall).
    pub pass: Duration,
    /// The 95% intervals.
    pub bootstrap: Duration,
    /// Tables, metrics.json, report.md and items.jsonl moved in place.
    pub write_files: Duration,
    /// The worker threads of the pass.
    pub threads: usize,
}

impl Timings {
    /// Print the phases as a table on stderr, with the run's `total` time, the `bytes` read,
    /// the trajectories (`items`) and the peak memory.
    pub fn print(&self, total: Duration, bytes: u64, items: usize) {
        let s = |d: Duration| format!("{:8.3}", d.as_secs_f64());
        let mut t = scorekit_report::Table::new(&["phase", "seconds", "what"]);
        let threads = format!("summed over {} worker threads", self.threads);
        let rows: Vec<(&str, Duration, String)> = vec![
            ("walk", self.walk, "find the results.jsonl files".into()),
            (
                "validate",
                self.validate,
                "re-check runs only: read, hash and check every line before --out is touched"
                    .into(),
            ),
            ("parse", self.parse, format!("read, parse ({threads})")),
            (
                "hash",
                self.hash,
                format!("sha256 of every input, up to {LANES} files at a time ({threads})"),
            ),
            (
                "recheck",
                self.recheck,
                format!("native checkers ({threads})"),
            ),
            (
                "aggregate",
                self.aggregate,
                "duplicates, counts, verdicts per configuration".into(),
            ),
            (
                "write items",
                self.write_items,
                "serialise items.jsonl".into(),
            ),
            (
                "pass (wall)",
                self.pass,
                "the reading pass as a whole".into(),
            ),
            ("bootstrap", self.bootstrap, "95% intervals".into()),
            (
                "write",
                self.write_files,
                "tables, metrics.json, report.md, items.jsonl moved in place".into(),
            ),
            ("total (wall)", total, String::new()),
        ];
        for (name, d, what) in rows {
            t.row(&[name.to_string(), s(d), what]);
        }
        eprint!("{}", t.render());
        eprintln!(
            "{items} trajectories, {:.1} MB read; peak RSS {}",
            bytes as f64 / 1e6,
            scorekit_core::process::peak_rss_bytes().map_or("unknown".into(), |b| format!(
                "{:.1} MB",
                b as f64 / (1 << 20) as f64
            ))
        );
    }
}
