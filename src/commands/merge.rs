//! `scorekit merge`: combine the output folders of `--shard I/N` runs into exactly the results
//! of a single run (`scorekit_suites::merge`).

use crate::cli::MergeArgs;
use scorekit_core::error::Result;

/// Run `scorekit merge`.
pub fn run(args: MergeArgs) -> Result<()> {
    let MergeArgs { parts, out, force } = args;
    let merged = scorekit_suites::merge::merge(&parts, &out, force)?;
    print!("{}", merged.outputs.table);
    println!(
        "\nmerged {} shard(s) of {} into {}",
        merged.shards,
        merged.doc.suite,
        merged.dir.path().display()
    );
    Ok(())
}
