//! The one interface through which a suite asks a model anything. The binary lends its loaded
//! models as a [`LentModels`], implemented once over the model runtime (`src/lent.rs`), so this
//! crate stays free of candle and a new kind of model (a decoder-only chat judge, say) is added
//! there and in the runtime's registry, not in a suite.

use scorekit_core::error::{Error, Result};
use scorekit_report::ModelRef;
use serde_json::{json, Value};

/// What a lent judge is, for results and caches: everything that decides its numbers besides
/// the inputs. Filled once by the binary where it loads the judge (`src/lent.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeCard {
    /// The model's files: id, revision, sha256.
    pub model: ModelRef,
    /// The judge as the user named it (`--judge`).
    pub spec: String,
    /// Scoring (with its head) or letter.
    pub kind: JudgeKind,
    /// The kind as reports and the calibration's identity name it (`multiple-choice`,
    /// `binary`, `letter`).
    pub kind_label: String,
    /// The architecture (`roberta`, `t5`, ...).
    pub arch: String,
    /// The engine that runs it.
    pub engine: String,
    /// The device (`cpu`, `cuda:0`).
    pub device: String,
    /// The dtype, as the runtime prints it.
    pub dtype: String,
    /// `--quantize` as recorded (`None`: full-precision weights).
    pub quantize: Option<String>,
    /// TF32 products on CUDA.
    pub tf32: bool,
    /// A decoder judge's system message (`--system-prompt`), which changes its prompts.
    pub system_prompt: Option<String>,
}

/// What a lent embedder is, for results.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderCard {
    /// The model's files: id, revision, sha256.
    pub model: ModelRef,
    /// The embedder as the user named it (`--embedder`).
    pub spec: String,
    /// The engine that runs it.
    pub engine: String,
}

/// How the lent models run, decided once the judge's kind is known: the letter protocol's
/// demonstrations, option orders and record, and the runtime's device and precision.
#[derive(Debug, Clone)]
pub struct Setup {
    /// A letter judge's demonstrations block ("" for zero-shot).
    pub shots: String,
    /// `--option-orders cyclic`.
    pub cyclic: bool,
    /// A letter judge's protocol, recorded when the judge is one.
    pub letter: scorekit_report::story::LetterProtocol,
    /// The device (`cpu`, `cuda:0`).
    pub device: String,
    /// `--quantize` as recorded.
    pub quantize: Option<String>,
    /// TF32 products on CUDA.
    pub tf32: bool,
}

/// The two ways a judge gives a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JudgeKind {
    /// Scores each (passage, question + option) pair; the pick is the highest.
    Scoring {
        /// The head, as metrics.json records it (`multiple_choice`, `binary, follow label ..`).
        head: String,
        /// Its input length in tokens.
        max_length: usize,
    },
    /// Answers a prompt; the pick is the letter it names.
    Letter,
}

impl JudgeCard {
    /// The kind as metrics.json records it (`multiple-choice`, `binary`, `letter`).
    pub fn kind_name(&self) -> &str {
        &self.kind_label
    }

    /// Whether it answers with letters.
    pub fn is_letter(&self) -> bool {
        self.kind == JudgeKind::Letter
    }

    /// What decides the judge's answers besides the frames: its files and every setting that
    /// changes its numbers, with the letter protocol's `shots` and `cyclic` and the dataset.
    /// Story runs and `judge eval` build it here alike, so they share one calibration cache.
    pub fn identity(&self, shots: &str, cyclic: bool, dataset_sha256: &str) -> Value {
        let max_length = match self.kind {
            JudgeKind::Scoring { max_length, .. } => Some(max_length),
            JudgeKind::Letter => None,
        };
        let mut identity = json!({
            "judge": {"id": self.model.id, "revision": self.model.revision, "sha256": self.model.sha256},
            "arch": self.arch,
            "engine": self.engine,
            "kind": self.kind_name(),
            "max_length": max_length,
            "device": self.device,
            "dtype": self.dtype,
            "quantize": self.quantize,
            "tf32": self.tf32,
            "shots": shots,
            "cyclic": cyclic,
            "dataset_sha256": dataset_sha256,
        });
        // Only where set, so the identities (and calibration caches) of every other judge stay
        // as they were.
        if let Some(system) = &self.system_prompt {
            identity["system_prompt"] = json!(system);
        }
        identity
    }
}

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

/// A letter judge's answer with, where the judge reads letters from its logits (a decoder
/// judge), the letters' scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoredAnswer {
    /// The answer text (the letter picked, for a decoder judge).
    pub text: String,
    /// The next-token logits of A, B, C, D.
    pub letter_logits: Option<[f32; 4]>,
    /// The four letters' probability among all tokens.
    pub letter_mass: Option<f32>,
    /// The prompt was longer than the judge's context and lost its first tokens.
    pub truncated: bool,
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

    /// [`LentModels::answer`] with the letters' scores where the judge has them (default:
    /// the answers alone).
    fn answer_scored(&mut self, prompts: &[String]) -> Result<Vec<ScoredAnswer>> {
        Ok(self
            .answer(prompts)?
            .into_iter()
            .map(|text| ScoredAnswer {
                text,
                ..ScoredAnswer::default()
            })
            .collect())
    }

    /// The embedding of each text.
    fn embed(&mut self, _texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Err(not_lent("an embedder"))
    }

    /// `n` model inputs answered without the model (from a memo): for progress only.
    fn served(&mut self, _n: usize) {}

    /// The requests that follow, until the next call, belong to one step called `label`: with
    /// `total` > 0 they are `total` model inputs shown on one progress bar; with 0, each request
    /// gets a bar of its own (no bar by default).
    fn step(&mut self, _label: &'static str, _total: usize) {}

    /// The lent judge, described (none when no judge is lent).
    fn judge(&self) -> Option<&JudgeCard> {
        None
    }

    /// The lent embedder, described (none when no embedder is lent, or one that records
    /// itself: GRASP's and MuSE's).
    fn embedder(&self) -> Option<&EmbedderCard> {
        None
    }
}

fn not_lent(what: &str) -> Error {
    Error::Internal(anyhow::anyhow!("{what} was asked for, but none is lent"))
}
