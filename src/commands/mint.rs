//! `scorekit mint`.

use crate::cli::MintArgs;
use crate::error::{Error, Result};

/// Run `scorekit mint`.
pub fn run(_args: MintArgs) -> Result<()> {
    Err(Error::NotAvailable("mint"))
}
