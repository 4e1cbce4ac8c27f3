//! `scorekit story`.

use crate::cli::StoryArgs;
use crate::error::{Error, Result};

/// Run `scorekit story`.
pub fn run(_args: StoryArgs) -> Result<()> {
    Err(Error::NotAvailable("story"))
}
