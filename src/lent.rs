//! The models the binary lends to the suites, in one place: the loaded judge and embedder as the
//! suites' one model interface (`scorekit_suites::models::LentModels`), and everything that
//! depends on which kind of judge was loaded (the protocol it reads frames by, the identity of
//! its calibration, what a story run records of it). Nowhere else in the binary is the judge's
//! kind matched: a new kind of judge is added here and in the runtime's registry.

use crate::cli::ShotArgs;
use crate::commands::model_runtime::ModelRuntime;
use indicatif::ProgressBar;
use scorekit_core::error::{Error, Result};
use scorekit_core::progress::bar;
use scorekit_report::ModelRef;
use scorekit_runtime::embedder::Embedder;
use scorekit_runtime::judge::{AnyJudge, Head};
use scorekit_suites::models::{LentModels, Models};
use scorekit_suites::settings::{JudgeNames, StorySettings};
use scorekit_suites::story::calibration::ask::Protocol;
use serde_json::json;

/// Where a lent model shows its progress.
pub enum Progress<'a> {
    /// One bar for a whole run (its items' inputs counted on it).
    Shared(&'a ProgressBar),
    /// A bar of its own for each request, labelled (`calibrate`, `judge`).
    PerCall {
        /// The bar's label.
        label: &'static str,
        /// `--quiet`: no bar.
        quiet: bool,
    },
}

/// The loaded models, lent.
pub struct Lent<'a> {
    judge: Option<&'a AnyJudge>,
    embedder: Option<&'a Embedder>,
    batch_tokens: usize,
    progress: Progress<'a>,
}

impl<'a> Lent<'a> {
    /// Lend `judge` and `embedder` (either may be absent), batched under `batch_tokens`.
    pub fn new(
        judge: Option<&'a AnyJudge>,
        embedder: Option<&'a Embedder>,
        batch_tokens: usize,
        progress: Progress<'a>,
    ) -> Self {
        Lent {
            judge,
            embedder,
            batch_tokens,
            progress,
        }
    }

    /// Run `f` on a bar for `n` inputs: the shared one, or one of its own cleared after.
    fn on_bar<T>(&self, n: usize, f: impl FnOnce(&ProgressBar) -> Result<T>) -> Result<T> {
        match &self.progress {
            Progress::Shared(p) => f(p),
            Progress::PerCall { label, quiet } => {
                let p = bar(n as u64, label, *quiet);
                let out = f(&p)?;
                p.finish_and_clear();
                Ok(out)
            }
        }
    }
}

impl LentModels for Lent<'_> {
    fn models(&self) -> Models {
        models(self.judge, self.embedder.is_some())
    }

    fn score(&mut self, pairs: &[(String, String)]) -> Result<Vec<f32>> {
        match self.judge {
            Some(AnyJudge::Scoring(j)) => {
                self.on_bar(pairs.len(), |p| j.score(pairs, self.batch_tokens, p))
            }
            _ => Err(Error::Internal(anyhow::anyhow!("no scoring judge is lent"))),
        }
    }

    fn answer(&mut self, prompts: &[String]) -> Result<Vec<String>> {
        match self.judge {
            Some(AnyJudge::Letter(j)) => self.on_bar(prompts.len(), |p| {
                Ok(j.answer(prompts, self.batch_tokens, p)?
                    .into_iter()
                    .map(|a| a.text)
                    .collect())
            }),
            _ => Err(Error::Internal(anyhow::anyhow!("no letter judge is lent"))),
        }
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        match self.embedder {
            Some(e) => self.on_bar(texts.len(), |p| e.embed(texts, self.batch_tokens, p)),
            None => Err(Error::Internal(anyhow::anyhow!("no embedder is lent"))),
        }
    }

    fn served(&mut self, n: usize) {
        if let Progress::Shared(p) = &self.progress {
            p.inc(n as u64);
        }
    }
}

/// Load the judge in `dir` on the runtime's device, dtype and engine (`max_length` caps its
/// inputs; `follow_label` is a binary judge's "follows" label).
pub fn load_judge(
    dir: &std::path::Path,
    rt: &ModelRuntime,
    max_length: Option<usize>,
    follow_label: Option<&str>,
) -> Result<AnyJudge> {
    AnyJudge::load(
        dir,
        &rt.device,
        rt.dtype,
        max_length,
        follow_label,
        &rt.engine,
    )
}

/// An embedder lent with the runtime it runs on, both owned (GRASP's `--semantic` embedder,
/// loaded inside the run once its file was read).
pub struct OwnedEmbedder {
    rt: ModelRuntime,
    embedder: Embedder,
    label: &'static str,
}

impl OwnedEmbedder {
    /// Lend `embedder` on `rt`, its progress bars labelled `label`.
    pub fn new(rt: ModelRuntime, embedder: Embedder, label: &'static str) -> Self {
        OwnedEmbedder {
            rt,
            embedder,
            label,
        }
    }
}

impl LentModels for OwnedEmbedder {
    fn models(&self) -> Models {
        models(None, true)
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.rt.embed(&self.embedder, texts, self.label)
    }
}

/// Which models a judge (if any) and an embedder make.
pub fn models(judge: Option<&AnyJudge>, embedder: bool) -> Models {
    Models {
        scoring_judge: matches!(judge, Some(AnyJudge::Scoring(_))),
        letter_judge: matches!(judge, Some(AnyJudge::Letter(_))),
        embedder,
    }
}

/// The protocol of a loaded judge: scoring, or letters with `shots` (and every rotation).
pub fn protocol<'a>(judge: &AnyJudge, shots: &'a str, cyclic: bool) -> Protocol<'a> {
    match judge {
        AnyJudge::Scoring(_) => Protocol::Scoring,
        AnyJudge::Letter(_) => Protocol::Letter { shots, cyclic },
    }
}

/// What decides the judge's answers besides the frames: the judge's files and every setting
/// that changes its numbers. Story runs and `judge eval` build it here alike, so they share one
/// calibration cache entry.
pub fn judge_identity(
    judge: &AnyJudge,
    model: &ModelRef,
    rt: &ModelRuntime,
    shots: &str,
    cyclic: bool,
    dataset_sha256: &str,
) -> serde_json::Value {
    let max_length = match judge {
        AnyJudge::Scoring(j) => Some(j.max_length()),
        AnyJudge::Letter(_) => None,
    };
    json!({
        "judge": {"id": model.id, "revision": model.revision, "sha256": model.sha256},
        "arch": judge.arch(),
        "engine": judge.engine(),
        "kind": judge.kind(),
        "max_length": max_length,
        "device": rt.device_name(),
        "dtype": format!("{:?}", rt.dtype),
        "quantize": rt.quantize_setting(),
        "tf32": rt.tf32,
        "shots": shots,
        "cyclic": cyclic,
        "dataset_sha256": dataset_sha256,
    })
}

/// What a story run's metrics.json records of the judge that runs (`spec` as named).
pub fn record_story_judge(
    settings: &mut StorySettings,
    judge: &AnyJudge,
    spec: &str,
    shots: &ShotArgs,
    cyclic: bool,
) {
    let names = JudgeNames {
        spec: spec.to_string(),
        arch: judge.arch().to_string(),
        engine: judge.engine().to_string(),
    };
    match judge {
        AnyJudge::Scoring(j) => {
            let head = match j.head() {
                Head::MultipleChoice => "multiple_choice".to_string(),
                Head::Binary { labels, follow } => {
                    format!("binary, follow label {:?}", labels[*follow])
                }
            };
            settings.set_scoring_judge(names, head, j.max_length());
        }
        AnyJudge::Letter(_) => {
            let protocol = crate::commands::letter::letter_protocol(shots);
            settings.set_letter_judge(names, protocol, cyclic);
        }
    }
}
