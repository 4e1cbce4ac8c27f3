//! `scorekit bench`: throughput of a sentence embedder or an MRC judge, apart from the product's
//! scoring. One path: every measurement is a cell of a grid, timed by one loop
//! ([`measure::measure`]) over a [`subject::Subject`] (the embedder or the judge); a one-cell
//! bench is a one-cell grid reported in its own format ([`single`]). The command resolves the
//! flags into [`Settings`], settles each precision into a [`Variant`] through its model runtime,
//! reads the input, and calls [`run`]. The method is in BENCHMARKS.md.
//!
//! One job a file: `settings` (flags resolved, checks without a model), `variant` (precisions),
//! `corpus` (inputs), `subject` (the two models), `measure` (the timing loop and a cell's
//! figures), `peak` (utilisation yardsticks), `grid` and `single` (the two reports), `doc`
//! (bench.json's schema), `peers` (`--compare`), `table` (CSV, report.md), `charts` (SVG).

pub mod charts;
pub mod corpus;
pub mod doc;
pub mod grid;
pub mod measure;
pub mod peak;
pub mod peers;
pub mod settings;
pub mod single;
pub mod subject;
pub mod table;
pub mod variant;

pub use corpus::{Input, Items};
pub use settings::Settings;
pub use variant::{variants, Variant};

use scorekit_core::error::{Error, InputError, Result};
use scorekit_runtime::ResolvedModel;

/// Measure and return what to print: a grid (bench.json with `--json`, else report.md, and the
/// files of `--out`), or the one-cell report. `input` is `None` for `--synthetic` sentences;
/// `variants` are the precisions, in grid order ([`variants`]).
pub fn run(
    settings: &Settings,
    model: &ResolvedModel,
    input: Option<Input>,
    variants: &[Variant],
) -> Result<String> {
    if variants.is_empty() {
        return Err(Error::Internal(anyhow::anyhow!(
            "bench: no precision to measure"
        )));
    }
    if let Some(input) = input.as_ref().filter(|i| i.items.is_empty()) {
        return Err(InputError::file(&input.source, "nothing to measure").into());
    }
    match input {
        _ if settings.grid => grid::run(settings, model, input, variants),
        Some(input) => single::run(settings, model, &input, &variants[0]),
        None => Err(Error::Internal(anyhow::anyhow!(
            "bench: a one-cell bench needs its sentences"
        ))),
    }
}
