//! `scorekit grasp`: read upstream `results.csv` (or JSONL), score it with the GRASP suite, write
//! items.jsonl, metrics.json and report.md. The pipeline is the suite's
//! (`scorekit_suites::grasp::pipeline`); this command resolves the flags, lends it the `--semantic`
//! embedder over the model runtime, prints its warnings and the result.

use crate::cli::GraspArgs;
use crate::lent::OwnedEmbedder;
use crate::model_runtime::ModelRuntime;
use crate::settings;
use scorekit_core::error::Result;
use scorekit_suites::grasp::pipeline::{self as grasp_run, SemanticModel};

/// Run `scorekit grasp`.
pub fn run(args: GraspArgs) -> Result<()> {
    let (settings, model) = settings::grasp(args)?;
    let quiet = settings.out.quiet;
    let embedder = settings.embedder.clone();
    // Loaded only by a --semantic run, once its results file was read and checked.
    let load = move || -> Result<SemanticModel<'static>> {
        let rt = ModelRuntime::new(&model, quiet)?;
        let (loaded, model_ref) = rt.embedder(&embedder)?;
        Ok(SemanticModel {
            model: model_ref,
            dtype: format!("{:?}", rt.dtype).to_lowercase(),
            device: rt.device_name(),
            quantize: rt.quantize_setting(),
            tf32: rt.tf32,
            lent: Box::new(OwnedEmbedder::new(rt, loaded, "semantic")),
        })
    };
    let done = grasp_run::run(&settings, load, &mut |line| eprintln!("{line}"))?;
    done.print();
    Ok(())
}
