//! `scorekit doctor [--json]`: gather (`crate::doctor`), then print JSON or the tables
//! (`report::doctor`).

use crate::cli::DoctorArgs;
use crate::doctor::{self, Options};
use scorekit_core::error::Result;

/// Run `scorekit doctor`.
pub fn run(args: DoctorArgs) -> Result<()> {
    let DoctorArgs {
        offline,
        verify,
        json,
    } = args;
    let report = doctor::gather(Options { offline, verify })?;
    if json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| anyhow::anyhow!("doctor report does not serialise: {e}"))?;
        println!("{text}");
    } else {
        print!("{}", scorekit_report::doctor::render(&report));
    }
    Ok(())
}
