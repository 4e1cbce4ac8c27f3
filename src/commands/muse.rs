//! `scorekit muse`: flags to settings, the embedder loaded when asked, then MuSE's pipeline
//! (crates/suites/src/muse/pipeline.rs) reads, scores and writes the run.

use crate::cli::MuseArgs;
use crate::lent::{Lent, Progress};
use crate::model_runtime::{quantize_setting, ModelRuntime};
use crate::settings;
use scorekit_core::error::Result;
use scorekit_report::MetricsDoc;
use scorekit_suites::muse::pipeline::{self, NameEmbedder};

/// Run `scorekit muse`.
pub fn run(args: MuseArgs) -> Result<()> {
    let settings::muse::MuseFlags {
        inputs,
        dataset,
        embedder,
        model,
        out,
    } = settings::muse::muse(args)?;
    let read = pipeline::read(&inputs)?;
    let mut doc = MetricsDoc::new("muse");
    doc.datasets.extend(dataset);
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
