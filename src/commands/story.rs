//! `scorekit story`: Possible Stories endings scored with IFSM (MRC judge, with the judge's
//! ceiling beside it) and Dissimilarity (sentence embeddings), one result group per model. The
//! pipeline is the suite's (`suites::story::pipeline`); here the flags are resolved, the models
//! that run resolved (a missing one fails before any long work), loaded and lent.

use crate::cli::StoryArgs;
use crate::lent::{self, Lent, Progress};
use crate::model_runtime::ModelRuntime;
use crate::settings;
use crate::settings::letter::{setup, system_prompt};
use scorekit_core::error::Result;
use scorekit_runtime::judge::letter_reading;
use scorekit_runtime::judge::JUDGE_FILES;
use scorekit_suites::story::pipeline::{self, Input};

/// Run `scorekit story`.
pub fn run(args: StoryArgs) -> Result<()> {
    let args = settings::story(args)?;
    let input = Input {
        dataset: args.dataset.path,
        dataset_record: args.dataset.dataset.map(|d| d.record()),
        generations: args.generations,
        require_complete: args.require_complete,
        calibration: args.calibration,
        label_sample: args.label_sample,
        out: args.out,
    };
    let prepared = pipeline::prepare(&input)?;
    let rt = ModelRuntime::new(&args.model, input.out.quiet)?;
    let judge = args
        .judge
        .map(|j| rt.resolve(&j, JUDGE_FILES))
        .transpose()?;
    let embedder = args.embedder.map(|e| rt.resolve_embedder(&e)).transpose()?;
    let letter = judge.as_ref().map(|m| letter_reading(&m.dir));
    let setup = setup(&rt, args.option_orders, &args.shots, letter)?;
    let judge = judge
        .map(|m| {
            lent::load_judge(
                &m,
                &rt,
                args.model.max_length,
                args.follow_label.as_deref(),
                system_prompt(&args.shots)?,
            )
        })
        .transpose()?;
    let embedder = embedder.map(|m| lent::load_embedder(&m, &rt)).transpose()?;
    let progress = Progress::new("calibrate", input.out.quiet);
    let mut lent = Lent::new(judge.as_ref(), embedder.as_ref(), rt.batch_tokens, progress);
    prepared.run(&input, &setup, &mut lent)?.print();
    Ok(())
}
