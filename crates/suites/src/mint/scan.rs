//! The reading pass of `scorekit mint`: every results.jsonl streamed line by line on worker
//! threads (a bounded number of files ahead of the consumer), hashed from the same bytes, and
//! handed over file by file in path order, so that items can be aggregated and written as
//! they come and never all held.

use crate::mint::discover::Source;
use crate::mint::{apply_recheck, parse_full, parse_stored, Item, Pending, Recheck};
use rayon::prelude::*;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::ordered::Tasks;
use scorekit_io::{Buffered, LineStream, Sha256Lanes, LANES};
use std::time::{Duration, Instant};

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
    /// Time spent reading and parsing it.
    pub parse: Duration,
    /// Its share of the time spent hashing (the files read together share each hash call).
    pub hash: Duration,
    /// Time spent re-checking its items.
    pub recheck: Duration,
}

/// Bytes read per file and round: the [`LANES`] files a thread reads together then keep
/// 1 MiB between their read, their hash and their parse, well within a core's L2 (2 MiB on
/// the machines measured; 32 KiB to 1 MiB were tried, BENCHMARKS.md).
const CHUNK: usize = 64 << 10;

/// Scan `sources` on `threads` threads, each reading up to [`LANES`] files at a time (their
/// new bytes hashed together), at most `threads * LANES * 4` files ahead of `consume`, which
/// gets each file in order. The first error in file order stops the pass.
///
/// Why 4: lanes read at the same pace, so one large file holds the window while the other
/// lanes go through several small ones; with twice the lanes as window, lanes stood idle
/// waiting for it and 13% of the bytes (212 MB of the 1.6 GB archive) were hashed one stream
/// at a time, with four times 2.4% (39 MB, mostly the last files), no fewer with more.
///
/// Each file: every non-blank line parsed (the first bad line stops it with file, line and
/// field, unless the file has invalid UTF-8 further on, which is reported instead, as a
/// whole-file check would); items `keep` refuses are dropped before their re-check, the others
/// are re-checked in parallel (with `Reading::Full`) and each handed to `finished` when done.
pub fn pass(
    sources: &[Source],
    reading: Reading,
    threads: usize,
    keep: &(dyn Fn(&Item) -> bool + Sync),
    finished: &(dyn Fn(&Item) + Sync),
    consume: impl FnMut(usize, Scanned) -> Result<()>,
) -> Result<()> {
    let scan = FileScan {
        sources,
        reading,
        keep,
        finished,
    };
    scorekit_core::ordered::run_ordered(
        sources.len(),
        threads,
        threads * LANES * 4,
        |tasks| scan.lanes(tasks),
        consume,
    )
}

/// What every file of a pass is read with.
struct FileScan<'a> {
    sources: &'a [Source],
    reading: Reading<'a>,
    keep: &'a (dyn Fn(&Item) -> bool + Sync),
    finished: &'a (dyn Fn(&Item) + Sync),
}

/// A file being read: its lane of the hasher, its items so far.
struct OpenFile {
    index: usize,
    lane: usize,
    lines: LineStream,
    items: Vec<Item>,
    pending: Vec<Option<Pending>>,
    row: usize,
    parse: Duration,
    hash: Duration,
}

impl FileScan<'_> {
    /// One worker: files claimed into free lanes; each round reads every open file once more,
    /// hashes what was read, parses the lines now whole, and hands in the files that ended.
    fn lanes(&self, tasks: &Tasks<Result<Scanned>>) {
        let mut hasher = Sha256Lanes::new();
        let mut free: Vec<usize> = (0..LANES).rev().collect();
        let mut open: Vec<OpenFile> = Vec::new();
        loop {
            // After an error the rest would be thrown away: stop reading (and re-checking).
            if tasks.stopped() {
                return;
            }
            while let Some(&lane) = free.last() {
                // Wait for the window only with nothing else to do.
                let Some(index) = tasks.claim(open.is_empty()) else {
                    break;
                };
                let src = &self.sources[index];
                match LineStream::open(&src.path, &src.name, CHUNK) {
                    Ok(lines) => {
                        free.pop();
                        hasher.reset(lane);
                        open.push(OpenFile {
                            index,
                            lane,
                            lines,
                            items: Vec::new(),
                            pending: Vec::new(),
                            row: 0,
                            parse: Duration::ZERO,
                            hash: Duration::ZERO,
                        });
                    }
                    Err(e) => tasks.deliver(index, Err(e.into())),
                }
            }
            if open.is_empty() {
                return;
            }
            let mut k = 0;
            while k < open.len() {
                let started = Instant::now();
                let read = open[k].lines.read_more();
                open[k].parse += started.elapsed();
                match read {
                    Ok(()) => k += 1,
                    Err(e) => {
                        let f = close(&mut open, &mut free, k);
                        tasks.deliver(f.index, Err(e.into()));
                    }
                }
            }
            let started = Instant::now();
            let mut parts: [&[u8]; LANES] = [&[]; LANES];
            for f in &open {
                parts[f.lane] = f.lines.fresh();
            }
            hasher.update(&parts);
            let share = started.elapsed() / open.len().max(1) as u32;
            let mut k = 0;
            while k < open.len() {
                open[k].hash += share;
                match self.parse_buffered(&mut open[k]) {
                    Ok(false) => k += 1,
                    Ok(true) => {
                        let f = close(&mut open, &mut free, k);
                        let sha256 = scorekit_report::hex(&hasher.finish(f.lane));
                        let index = f.index;
                        tasks.deliver(index, self.finish(f, sha256).map_err(Error::from));
                    }
                    Err(e) => {
                        let f = close(&mut open, &mut free, k);
                        tasks.deliver(f.index, Err(e.into()));
                    }
                }
            }
        }
    }

    /// Parse the lines the buffer holds whole; `true` at the end of the file.
    fn parse_buffered(&self, f: &mut OpenFile) -> Result<bool, InputError> {
        let started = Instant::now();
        let src = &self.sources[f.index];
        let at_end = loop {
            let (line, text) = match f.lines.buffered_line()? {
                Buffered::Line(line, text) => (line, text),
                Buffered::NeedsRead => break false,
                Buffered::End => break true,
            };
            f.row += 1;
            let parsed = match self.reading {
                Reading::Stored => {
                    parse_stored(&src.name, &src.key, line, f.row, text).map(|i| (i, None))
                }
                Reading::Full(..) => {
                    parse_full(&src.name, &src.key, line, f.row, text).map(|(i, p)| (i, Some(p)))
                }
            };
            match parsed {
                Ok((item, p)) => {
                    if (self.keep)(&item) {
                        f.items.push(item);
                        f.pending.push(p);
                    }
                }
                Err(e) => {
                    f.lines.check_rest_utf8()?;
                    return Err(e);
                }
            }
        };
        f.parse += started.elapsed();
        Ok(at_end)
    }

    /// A file read to its end: its items re-checked (with `Reading::Full`) and handed on.
    fn finish(&self, f: OpenFile, sha256: String) -> Result<Scanned, InputError> {
        let src = &self.sources[f.index];
        let OpenFile {
            mut items,
            pending,
            lines,
            parse,
            hash,
            ..
        } = f;
        let started = Instant::now();
        match self.reading {
            Reading::Stored => items.iter().for_each(self.finished),
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
                            (self.finished)(item);
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
            bytes: lines.bytes(),
            parse,
            hash,
            recheck: started.elapsed(),
        })
    }
}

/// Take file `k` out of the open ones, its lane back among the free ones.
fn close(open: &mut Vec<OpenFile>, free: &mut Vec<usize>, k: usize) -> OpenFile {
    let f = open.swap_remove(k);
    free.push(f.lane);
    f
}
