//! `scorekit embed`'s flags, resolved once (`EmbedArgs` destructured whole, so a new flag does
//! not compile until it is handled).

use crate::cli::{EmbedArgs, ModelArgs};
use scorekit_core::shard::Shard;
use std::path::PathBuf;

/// `scorekit embed`'s flags.
pub struct EmbedFlags {
    /// The sentences (JSONL `{"id", "text"}` or plain text).
    pub input: PathBuf,
    /// The embedding model as named.
    pub model: String,
    /// The model runtime's flags.
    pub runtime: ModelArgs,
    /// The output file (.npy, .safetensors or .jsonl).
    pub output: PathBuf,
    /// `--force`: overwrite the output.
    pub force: bool,
    /// `--quiet`: no progress bars.
    pub quiet: bool,
    /// `--shard I/N`: this shard's sentences, by id.
    pub shard: Shard,
}

/// Resolve `scorekit embed`'s flags.
pub fn embed(args: EmbedArgs) -> EmbedFlags {
    let EmbedArgs {
        input,
        model,
        runtime,
        output,
        force,
        quiet,
        shard,
    } = args;
    EmbedFlags {
        input,
        model,
        runtime,
        output,
        force,
        quiet,
        shard,
    }
}
