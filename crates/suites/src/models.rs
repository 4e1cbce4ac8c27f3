//! The one interface through which a suite asks a model anything. The binary lends its loaded
//! models as a [`LentModels`], implemented once over the model runtime (`src/lent.rs`), so this
//! crate stays free of candle and a new kind of model (a decoder-only chat judge, say) is added
//! there and in the runtime's registry, not in a suite.

use scorekit_core::error::{Error, Result};

/// Which models are lent: a judge that scores options, one that answers with a letter, an
/// embedder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Models {
    /// A multiple-choice or binary judge (scores per option).
    pub scoring_judge: bool,
    /// A letter judge (generates the answer).
    pub letter_judge: bool,
    /// A sentence embedder.
    pub embedder: bool,
}

/// What a suite may ask of the models lent to it. A request for a kind that is not lent is an
/// internal error (the suite asked without checking [`LentModels::models`]).
pub trait LentModels {
    /// Which models are lent.
    fn models(&self) -> Models;

    /// A scoring judge's score of each (document, question + " " + option) pair.
    fn score(&mut self, _pairs: &[(String, String)]) -> Result<Vec<f32>> {
        Err(not_lent("a scoring judge"))
    }

    /// A letter judge's decoded answer to each prompt.
    fn answer(&mut self, _prompts: &[String]) -> Result<Vec<String>> {
        Err(not_lent("a letter judge"))
    }

    /// The embedding of each text.
    fn embed(&mut self, _texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Err(not_lent("an embedder"))
    }

    /// `n` model inputs answered without the model (from a memo): for progress only.
    fn served(&mut self, _n: usize) {}
}

fn not_lent(what: &str) -> Error {
    Error::Internal(anyhow::anyhow!("{what} was asked for, but none is lent"))
}
