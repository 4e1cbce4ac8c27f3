//! `scorekit bench`'s flags turned into the bench's settings, once (each precision is settled
//! per variant by the command, through the model runtime, as every command settles it).

use crate::cli::BenchArgs;
use scorekit_bench::Settings;

/// The bench's settings from its flags, each flag named once.
pub fn bench(args: &BenchArgs) -> Settings {
    let BenchArgs {
        model,
        judge,
        input: _,
        repeats,
        warmup,
        synthetic,
        out,
        compare,
        limit,
        save,
        json,
        runtime,
    } = args;
    Settings {
        model: judge.clone().unwrap_or_else(|| model.clone()),
        judge: judge.is_some(),
        repeats: *repeats,
        warmup: *warmup,
        synthetic: synthetic.clone(),
        limit: *limit,
        batch_tokens: runtime.batch_tokens.clone(),
        max_lengths: runtime.max_length.clone(),
        out: out.clone(),
        compare: compare.clone(),
        save: save.clone(),
        json: *json,
        tf32: runtime.tf32,
        // A grid when an axis has several values or a grid-only flag is given.
        grid: !runtime.single()
            || out.is_some()
            || compare.is_some()
            || !synthetic.is_empty()
            || warmup.is_some(),
    }
}
