//! `scorekit label`: the labelling page of a label file (`story::calibration::labelling`).

use crate::cli::LabelArgs;
use crate::settings;
use scorekit_core::error::Result;
use scorekit_io::read_jsonl;
use scorekit_suites::story::calibration::labelling;

/// Run `scorekit label`.
pub fn run(args: LabelArgs) -> Result<()> {
    let flags = settings::label(args)?;
    let questions = flags
        .dataset
        .as_ref()
        .map(|d| scorekit_suites::story::parse_questions(&read_jsonl(&d.path)?))
        .transpose()?;
    let endings = labelling::write_page(&flags.file, questions.as_deref(), &flags.out)?;
    println!(
        "{}: {endings} ending(s) to label; open it in a browser",
        flags.out.display()
    );
    Ok(())
}
