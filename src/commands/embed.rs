//! `scorekit embed`.

use crate::cli::EmbedArgs;
use crate::error::{Error, Result};

/// Run `scorekit embed`.
pub fn run(_args: EmbedArgs) -> Result<()> {
    Err(Error::NotAvailable("embed"))
}
