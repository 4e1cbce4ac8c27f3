//! `scorekit merge`.

use crate::cli::MergeArgs;
use crate::error::{Error, Result};

/// Run `scorekit merge`.
pub fn run(_args: MergeArgs) -> Result<()> {
    Err(Error::NotAvailable("merge"))
}
