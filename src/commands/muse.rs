//! `scorekit muse`: flags to settings, the embedder loaded when asked, then MuSE's pipeline
//! (crates/suites/src/muse/pipeline.rs) reads, scores and writes the run.

use crate::cli::{MuseArgs, PlanFormat as CliFormat};
use crate::commands::model_runtime::{quantize_setting, ModelRuntime};
use crate::lent::{Lent, Progress};
use crate::settings;
use scorekit_core::error::Result;
use scorekit_report::MetricsDoc;
use scorekit_suites::muse::pipeline::{self, MuseInputs, NameEmbedder};
use scorekit_suites::muse::PlanFormat;

/// Run `scorekit muse`.
pub fn run(args: MuseArgs) -> Result<()> {
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
    let out = settings::run_options(&output)?;
    // `--queries muse` names pinned upstream data (scorekit data).
    let dataset = settings::dataset(&queries, model.offline, out.quiet)?;
    let inputs = MuseInputs {
        queries: dataset.path.clone(),
        plans,
        flow,
        aliases,
        output_verdicts,
        plan_format: plan_format_of(plan_format),
        plan_format_name: format!("{plan_format:?}").to_lowercase(),
    };
    let read = pipeline::read(&inputs)?;
    let mut doc = MetricsDoc::new("muse");
    doc.datasets.extend(dataset.dataset.map(|d| d.record()));
    // --embedder: names the alias table cannot map are matched to MuSE tasks by embeddings;
    // accepted matches join the alias table before scoring.
    let done = match &embedder {
        Some(spec) => {
            let rt = ModelRuntime::new(&model, out.quiet)?;
            let loaded = crate::lent::load_embedder(&rt.resolve_embedder(spec)?, &rt)?;
            let progress = Progress::new("names", rt.quiet);
            let mut lent = Lent::new(None, Some(&loaded), rt.batch_tokens, progress);
            let names = NameEmbedder {
                spec: spec.clone(),
                model: loaded.card.model.clone(),
                dtype: format!("{:?}", rt.dtype).to_lowercase(),
                quantize: quantize_setting(model.quantize),
                tf32: model.tf32,
                lent: &mut lent,
            };
            pipeline::run(&inputs, read, Some(names), doc, &out)?
        }
        None => pipeline::run(&inputs, read, None, doc, &out)?,
    };
    if !out.quiet {
        for line in pipeline::warnings(&done.items, &inputs.plans) {
            eprintln!("{line}");
        }
    }
    done.print();
    Ok(())
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
