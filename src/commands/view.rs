//! `scorekit view`: one self-contained HTML page of finished runs or a comparison
//! (`scorekit_suites::view`), written to `--out`.

use crate::cli::ViewArgs;
use scorekit_core::error::Result;

/// Run `scorekit view`.
pub fn run(args: ViewArgs) -> Result<()> {
    let (opts, out) = crate::settings::view(args);
    let page = scorekit_suites::view::page(&opts)?;
    scorekit_report::atomic_write(&out, page.as_bytes())?;
    println!("wrote {} (open it in a browser)", out.display());
    Ok(())
}
