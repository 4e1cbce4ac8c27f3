//! `scorekit models`.

use crate::cli::ModelsArgs;
use crate::error::{Error, Result};

/// Run `scorekit models`.
pub fn run(_args: ModelsArgs) -> Result<()> {
    Err(Error::NotAvailable("models"))
}
