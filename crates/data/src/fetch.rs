//! Getting missing files into the cache: from the upstream raw-file endpoint (or a mirror), or
//! from a local copy of the repository. Each file goes to a temporary file, is checked against
//! its pins, and only then renamed into place; a refused or broken transfer leaves nothing.

use super::cache::{self, TempFile};
use super::check;
use super::manifest::DataFile;
use super::{Options, Selection};
use indicatif::{ProgressBar, ProgressStyle};
use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::net::{self, GetError};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

/// Where raw files of a GitHub commit are served.
pub const UPSTREAM: &str = "https://raw.githubusercontent.com";

/// The variable that replaces [`UPSTREAM`] with a mirror serving `{owner}/{repo}/{commit}/{path}`.
pub const ENDPOINT_ENV: &str = "SCOREKIT_DATA_ENDPOINT";

/// The endpoint downloads use, and whether it is a mirror.
pub fn endpoint() -> (String, bool) {
    match std::env::var(ENDPOINT_ENV) {
        Ok(v) if !v.trim().is_empty() => (v.trim().trim_end_matches('/').to_string(), true),
        _ => (UPSTREAM.to_string(), false),
    }
}

/// A bytes progress bar on stderr when it is a terminal.
fn bar(files: &[&DataFile], label: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let known: u64 = files.iter().filter_map(|f| f.size).sum();
    let pb = ProgressBar::new(known);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb.set_message(label.to_string());
    pb
}

fn advance(pb: &ProgressBar, n: u64) {
    pb.inc(n);
    if pb.length().is_some_and(|l| pb.position() > l) {
        pb.set_length(pb.position());
    }
}

/// Check a transferred temporary file and rename it into the cache; a mismatch removes it and
/// is an exit-2 error naming where the bytes came from.
fn admit(
    sel: &Selection,
    f: &DataFile,
    tmp: TempFile,
    origin: &str,
    recorded: &mut Vec<(String, String)>,
) -> Result<()> {
    let d = check::digests(&tmp.path)
        .map_err(|e| Error::Internal(anyhow::anyhow!("cannot read back {}: {e}", f.path)))?;
    if let Some(why) = check::mismatch(f, &d, None) {
        drop(tmp);
        return Err(Error::Input(InputError::file(
            origin,
            format!(
                "refused: {} of {}@{} does not match its pin ({why}); nothing was written to the cache",
                f.path,
                sel.manifest.repo,
                &sel.manifest.commit[..7]
            ),
        )));
    }
    tmp.install(&sel.dir().join(&f.path))
        .map_err(Error::Internal)?;
    if f.sha256.is_none() {
        eprintln!(
            "{}: git blob {} verified; sha256 {} recorded",
            f.path, d.git_blob, d.sha256
        );
    }
    recorded.push((f.path.clone(), d.sha256));
    Ok(())
}

/// Fetch `missing` from the network (upstream or `SCOREKIT_DATA_ENDPOINT`).
pub(super) fn from_network(sel: &Selection, missing: &[&DataFile], opts: &Options) -> Result<()> {
    let (base, mirror) = endpoint();
    let dir = sel.dir();
    let pb = bar(missing, &sel.spec(), opts.quiet);
    let mut recorded = Vec::new();
    let result = (|| -> Result<()> {
        for (i, f) in missing.iter().enumerate() {
            let url = sel.manifest.url(&base, f);
            let tmp = TempFile::new(&dir, &f.path);
            let mut out = std::fs::File::create(&tmp.path)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", tmp.path.display()))?;
            let got = net::get(&url, &mut out, &mut |n| advance(&pb, n))
                .and_then(|_| out.sync_all().map_err(GetError::Write));
            drop(out);
            if let Err(e) = got {
                return Err(network_error(sel, &url, &base, mirror, e, i, missing.len()));
            }
            admit(sel, f, tmp, &url, &mut recorded)?;
        }
        Ok(())
    })();
    pb.finish_and_clear();
    // Files already renamed into place keep their records even when a later file failed.
    let rec = cache::record(&dir, &recorded);
    result?;
    rec.map_err(Error::Internal)
}

fn network_error(
    sel: &Selection,
    url: &str,
    base: &str,
    mirror: bool,
    e: GetError,
    done: usize,
    total: usize,
) -> Error {
    let whose = if mirror {
        format!("the mirror {}={base}", ENDPOINT_ENV)
    } else {
        base.to_string()
    };
    let layout = "a mirror serves {owner}/{repo}/{commit}/{path} under its base URL";
    match e {
        GetError::BadUrl(why) => Error::usage(format!(
            "{}={base}: not a usable mirror ({why}); {layout}; for a local folder use --from DIR",
            ENDPOINT_ENV
        )),
        GetError::Status(code) if mirror || (400..500).contains(&code) => {
            Error::Input(InputError::file(
                url,
                format!(
                    "HTTP {code} from {whose}: it does not serve {} of {}@{} ({layout})",
                    sel.files()
                        .iter()
                        .find(|f| url.ends_with(&f.path))
                        .map_or("this file", |f| f.path.as_str()),
                    sel.manifest.repo,
                    &sel.manifest.commit[..7]
                ),
            ))
        }
        GetError::Unreachable(why) if mirror => Error::Input(InputError::file(
            url,
            format!("cannot reach {whose}: {why}"),
        )),
        GetError::Unreachable(why) => Error::Internal(anyhow::anyhow!(
            "{url}: cannot connect: {why}. Without network: `scorekit data pull {} --from DIR` with a copy \
             of {}@{}, a mirror in {ENDPOINT_ENV}, or a cache copied from a connected machine \
             (docs/data.md)",
            sel.spec(),
            sel.manifest.repo,
            &sel.manifest.commit[..7]
        )),
        GetError::Write(err) => Error::Internal(anyhow::anyhow!(
            "cannot write into the data cache {}: {err}",
            sel.dir().display()
        )),
        other => Error::Internal(anyhow::anyhow!(
            "{url}: {other}. Nothing half-written was kept ({done} of {total} missing files are now in the cache); \
             run `scorekit data pull {}` again to finish, or without network use --from DIR or --offline with a copied cache",
            sel.spec()
        )),
    }
}

/// Copy `missing` from a local copy of the upstream repository.
pub(super) fn from_dir(
    sel: &Selection,
    missing: &[&DataFile],
    from: &Path,
    opts: &Options,
) -> Result<()> {
    if !from.is_dir() {
        return Err(Error::usage(format!(
            "--from {}: not a folder (expected a copy of {} at {}, files by their upstream paths)",
            from.display(),
            sel.manifest.repo,
            &sel.manifest.commit[..7]
        )));
    }
    if let Some(f) = missing.iter().find(|f| !from.join(&f.path).is_file()) {
        return Err(Error::Input(InputError::file(
            from.join(&f.path),
            format!(
                "missing from --from {} (a copy of {}@{} must hold {} at this upstream path)",
                from.display(),
                sel.manifest.repo,
                &sel.manifest.commit[..7],
                f.path
            ),
        )));
    }
    let dir = sel.dir();
    let pb = bar(missing, &sel.spec(), opts.quiet);
    let mut recorded = Vec::new();
    let result = (|| -> Result<()> {
        for f in missing {
            let src = from.join(&f.path);
            let tmp = TempFile::new(&dir, &f.path);
            copy_with_progress(&src, &tmp.path, &pb)
                .map_err(|e| Error::Input(InputError::file(&src, format!("cannot copy: {e}"))))?;
            admit(sel, f, tmp, &src.display().to_string(), &mut recorded)?;
        }
        Ok(())
    })();
    pb.finish_and_clear();
    let rec = cache::record(&dir, &recorded);
    result?;
    rec.map_err(Error::Internal)
}

fn copy_with_progress(src: &Path, dst: &Path, pb: &ProgressBar) -> std::io::Result<()> {
    let mut input = std::fs::File::open(src)?;
    let mut out = std::fs::File::create(dst)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        advance(pb, n as u64);
    }
    out.sync_all()
}
