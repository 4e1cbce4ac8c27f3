//! `scorekit grasp`.

use crate::cli::GraspArgs;
use crate::error::{Error, Result};

/// Run `scorekit grasp`.
pub fn run(_args: GraspArgs) -> Result<()> {
    Err(Error::NotAvailable("grasp"))
}
