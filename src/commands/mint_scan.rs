//! The reading pass of `scorekit mint`: every results.jsonl streamed line by line on worker
//! threads (a bounded number of files ahead of the consumer), hashed from the same bytes, and
//! handed over file by file in path order, so that items can be aggregated and written as
//! they come and never all held.

use crate::error::{Error, InputError, Result};
use crate::input::LineStream;
use crate::suites::mint::layout::FileKey;
use crate::suites::mint::{apply_recheck, parse_full, parse_stored, Item, Recheck};
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One results.jsonl of the run.
pub struct Source {
    /// Where it is.
    pub path: PathBuf,
    /// How items and messages name it.
    pub name: String,
    /// Its configuration and task.
    pub key: FileKey,
    /// No later file has the same configuration and task (duplicate ids can be forgotten).
    pub last_of_key: bool,
}

/// How lines are read.
#[derive(Clone, Copy)]
pub enum Reading<'a> {
    /// Only what the tables need (stored flags).
    Stored,
    /// In full, and re-checked as asked, the re-checks running on `pool` (sized by `--jobs`:
    /// programs wait on python, so it may have more threads than there are cores).
    Full(&'a Recheck, &'a rayon::ThreadPool),
}

/// One file, read.
pub struct Scanned {
    /// Its kept items, in line order.
    pub items: Vec<Item>,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
    /// Time spent reading, hashing and parsing it.
    pub parse: Duration,
    /// Time spent re-checking its items.
    pub recheck: Duration,
}

/// Read one file: every non-blank line parsed (the first bad line stops it with file, line and
/// field, unless the file has invalid UTF-8 further on, which is reported instead, as a
/// whole-file check would); items `keep` refuses are dropped before their re-check, the others
/// are re-checked in parallel (with `Reading::Full`) and each handed to `finished` when done.
pub fn scan(
    src: &Source,
    reading: Reading,
    keep: &(dyn Fn(&Item) -> bool + Sync),
    finished: &(dyn Fn(&Item) + Sync),
) -> Result<Scanned, InputError> {
    let started = Instant::now();
    let mut lines = LineStream::open(&src.path, &src.name)?;
    let mut items = Vec::new();
    let mut pending = Vec::new();
    let mut row = 0;
    while let Some((line, text)) = lines.next_line()? {
        row += 1;
        let parsed = match reading {
            Reading::Stored => {
                parse_stored(&src.name, &src.key, line, row, text).map(|i| (i, None))
            }
            Reading::Full(..) => {
                parse_full(&src.name, &src.key, line, row, text).map(|(i, p)| (i, Some(p)))
            }
        };
        match parsed {
            Ok((item, p)) => {
                if keep(&item) {
                    items.push(item);
                    pending.push(p);
                }
            }
            Err(e) => {
                lines.check_rest_utf8()?;
                return Err(e);
            }
        }
    }
    let bytes = lines.bytes();
    let sha256 = lines.sha256();
    let parse = started.elapsed();
    let started = Instant::now();
    match reading {
        Reading::Stored => items.iter().for_each(finished),
        Reading::Full(recheck, pool) => {
            let results: Vec<Result<(), InputError>> = pool.install(|| {
                items
                    .par_iter_mut()
                    .zip(pending.par_iter())
                    .map(|(item, p)| {
                        let p = p
                            .as_ref()
                            .expect("full reading keeps what the re-check needs");
                        apply_recheck(&src.name, &src.key, item, p, recheck)?;
                        finished(item);
                        Ok(())
                    })
                    .collect()
            });
            results.into_iter().collect::<Result<(), InputError>>()?;
        }
    }
    Ok(Scanned {
        items,
        sha256,
        bytes,
        parse,
        recheck: started.elapsed(),
    })
}

/// Scan `sources` on `threads` threads, at most `window` files ahead, and hand each file to
/// `consume` in order. The first error in file order stops the pass.
pub fn pass(
    sources: &[Source],
    reading: Reading,
    threads: usize,
    keep: &(dyn Fn(&Item) -> bool + Sync),
    finished: &(dyn Fn(&Item) + Sync),
    consume: impl FnMut(usize, Scanned) -> Result<()>,
) -> Result<()> {
    crate::ordered::map_ordered(
        sources.len(),
        threads,
        threads * 4,
        |i| scan(&sources[i], reading, keep, finished).map_err(Error::from),
        consume,
    )
}
