//! `scorekit muse`'s flags turned into the MuSE pipeline's inputs, once.

use crate::cli::{ModelArgs, MuseArgs, PlanFormat as CliFormat};
use scorekit_core::error::Result;
use scorekit_report::{DatasetRef, RunOptions};
use scorekit_suites::muse::pipeline::Input;
use scorekit_suites::muse::PlanFormat;

/// `scorekit muse`'s flags, each handled here once (`MuseArgs` destructured whole).
pub struct MuseFlags {
    /// The pipeline's inputs.
    pub inputs: Input,
    /// The pinned dataset `--queries` named, if it named one.
    pub dataset: Option<DatasetRef>,
    /// `--embedder`: task names matched by embeddings.
    pub embedder: Option<String>,
    /// The model runtime's flags.
    pub model: ModelArgs,
    /// The output flags.
    pub out: RunOptions,
}

/// Resolve `scorekit muse`'s flags (`--queries muse` names pinned upstream data).
pub fn muse(args: MuseArgs) -> Result<MuseFlags> {
    let MuseArgs {
        queries,
        flow,
        plans,
        plan_format,
        aliases,
        output_verdicts,
        embedder,
        model,
        output,
    } = args;
    let out = super::run_options(&output)?;
    let dataset = super::dataset(&queries, model.offline, out.quiet)?;
    let inputs = Input {
        queries: dataset.path.clone(),
        plans,
        flow,
        aliases,
        output_verdicts,
        plan_format: plan_format_of(plan_format),
        plan_format_name: format!("{plan_format:?}").to_lowercase(),
    };
    Ok(MuseFlags {
        inputs,
        dataset: dataset.dataset.map(|d| d.record()),
        embedder,
        model,
        out,
    })
}

/// `--plan-format`: `auto` reads each plan's format from the plan.
fn plan_format_of(flag: CliFormat) -> Option<PlanFormat> {
    match flag {
        CliFormat::Auto => None,
        CliFormat::Hugginggpt => Some(PlanFormat::Hugginggpt),
        CliFormat::Controlllm => Some(PlanFormat::Controlllm),
        CliFormat::Scorekit => Some(PlanFormat::Scorekit),
        CliFormat::Pddl => Some(PlanFormat::Pddl),
    }
}
