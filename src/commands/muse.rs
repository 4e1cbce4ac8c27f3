//! `scorekit muse`.

use crate::cli::MuseArgs;
use crate::error::{Error, Result};

/// Run `scorekit muse`.
pub fn run(_args: MuseArgs) -> Result<()> {
    Err(Error::NotAvailable("muse"))
}
