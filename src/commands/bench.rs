//! `scorekit bench`.

use crate::cli::BenchArgs;
use crate::error::{Error, Result};

/// Run `scorekit bench`.
pub fn run(_args: BenchArgs) -> Result<()> {
    Err(Error::NotAvailable("bench"))
}
