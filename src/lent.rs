//! The models the binary lends to the suites, in one place: the loaded judge and embedder as the
//! suites' one model interface (`scorekit_suites::models::LentModels`), and everything that
//! depends on which kind of judge was loaded (the protocol it reads frames by, the identity of
//! its calibration, what a story run records of it). Nowhere else in the binary is the judge's
//! kind matched: a new kind of judge is added here and in the runtime's registry.

use crate::model_runtime::ModelRuntime;
use indicatif::ProgressBar;
use scorekit_core::error::{Error, Result};
use scorekit_core::progress::bar;
use scorekit_runtime::embedder::Embedder;
use scorekit_runtime::judge::{AnyJudge, Head};
use scorekit_runtime::ResolvedModel;
use scorekit_suites::models::{
    EmbedderCard, JudgeCard, JudgeKind, LentModels, Models, ScoredAnswer,
};

/// Where the lent models show their progress: a bar per step the suite announces
/// ([`LentModels::step`]) when its size is known, else one per request.
pub struct Progress {
    /// The current step's label.
    label: &'static str,
    /// `--quiet`: no bar.
    quiet: bool,
    /// The current step's bar, when its size is known.
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Bars labelled `label` (`calibrate`, `judge`) until the suite names a step.
    pub fn new(label: &'static str, quiet: bool) -> Self {
        Progress {
            label,
            quiet,
            bar: None,
        }
    }
}

/// A loaded judge and what identifies it (the suites' [`JudgeCard`]).
pub struct LoadedJudge {
    /// The judge.
    pub judge: AnyJudge,
    /// Its card.
    pub card: JudgeCard,
}

/// A loaded embedder and what identifies it (the suites' [`EmbedderCard`]).
pub struct LoadedEmbedder {
    /// The embedder.
    pub embedder: Embedder,
    /// Its card.
    pub card: EmbedderCard,
}

/// Load the embedder `model` on the runtime, with its card.
pub fn load_embedder(model: &ResolvedModel, rt: &ModelRuntime) -> Result<LoadedEmbedder> {
    let (embedder, model_ref) = rt.load_embedder(model)?;
    let card = EmbedderCard {
        model: model_ref,
        spec: model.spec.clone(),
        engine: embedder.engine().to_string(),
    };
    Ok(LoadedEmbedder { embedder, card })
}

/// The loaded models, lent.
pub struct Lent<'a> {
    judge: Option<&'a LoadedJudge>,
    embedder: Option<&'a LoadedEmbedder>,
    batch_tokens: usize,
    progress: Progress,
    /// A decoder judge's letter mass of every prompt answered, for the warning at the end.
    letter_masses: Vec<f32>,
    /// A decoder judge's prompts cut to its context.
    truncated: usize,
}

impl<'a> Lent<'a> {
    /// Lend `judge` and `embedder` (either may be absent), batched under `batch_tokens`.
    pub fn new(
        judge: Option<&'a LoadedJudge>,
        embedder: Option<&'a LoadedEmbedder>,
        batch_tokens: usize,
        progress: Progress,
    ) -> Self {
        Lent {
            judge,
            embedder,
            batch_tokens,
            progress,
            letter_masses: Vec::new(),
            truncated: 0,
        }
    }

    /// Run `f` on a bar for `n` inputs: the step's, or one of its own cleared after.
    fn on_bar<T>(&self, n: usize, f: impl FnOnce(&ProgressBar) -> Result<T>) -> Result<T> {
        if let Some(step) = &self.progress.bar {
            return f(step);
        }
        let p = bar(n as u64, self.progress.label, self.progress.quiet);
        let out = f(&p)?;
        p.finish_and_clear();
        Ok(out)
    }
}

impl LentModels for Lent<'_> {
    fn models(&self) -> Models {
        models(self.judge.map(|j| &j.judge), self.embedder.is_some())
    }

    fn judge(&self) -> Option<&JudgeCard> {
        self.judge.map(|j| &j.card)
    }

    fn embedder(&self) -> Option<&EmbedderCard> {
        self.embedder.map(|e| &e.card)
    }

    fn step(&mut self, label: &'static str, total: usize) {
        let progress = &mut self.progress;
        if let Some(done) = progress.bar.take() {
            done.finish_and_clear();
        }
        progress.label = label;
        progress.bar = (total > 0).then(|| bar(total as u64, label, progress.quiet));
    }

    fn score(&mut self, pairs: &[(String, String)]) -> Result<Vec<f32>> {
        match self.judge.map(|j| &j.judge) {
            Some(AnyJudge::Scoring(j)) => {
                self.on_bar(pairs.len(), |p| j.score(pairs, self.batch_tokens, p))
            }
            _ => Err(Error::Internal(anyhow::anyhow!("no scoring judge is lent"))),
        }
    }

    fn answer(&mut self, prompts: &[String]) -> Result<Vec<String>> {
        match self.judge.map(|j| &j.judge) {
            Some(AnyJudge::Letter(j)) => self.on_bar(prompts.len(), |p| {
                Ok(j.answer(prompts, self.batch_tokens, p)?
                    .into_iter()
                    .map(|a| a.text)
                    .collect())
            }),
            Some(AnyJudge::Decoder(_)) => Ok(self
                .answer_scored(prompts)?
                .into_iter()
                .map(|a| a.text)
                .collect()),
            _ => Err(Error::Internal(anyhow::anyhow!("no letter judge is lent"))),
        }
    }

    fn answer_scored(&mut self, prompts: &[String]) -> Result<Vec<ScoredAnswer>> {
        let Some(AnyJudge::Decoder(j)) = self.judge.map(|j| &j.judge) else {
            return Ok(self
                .answer(prompts)?
                .into_iter()
                .map(|text| ScoredAnswer {
                    text,
                    ..ScoredAnswer::default()
                })
                .collect());
        };
        let verdicts = self.on_bar(prompts.len(), |p| j.verdicts(prompts, self.batch_tokens, p))?;
        self.letter_masses
            .extend(verdicts.iter().map(|v| v.letter_mass));
        self.truncated += verdicts.iter().filter(|v| v.truncated).count();
        Ok(verdicts
            .iter()
            .map(|v| ScoredAnswer {
                text: v.letter().to_string(),
                letter_logits: Some(v.letter_logits),
                letter_mass: Some(v.letter_mass),
                truncated: v.truncated,
            })
            .collect())
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        match self.embedder.map(|e| &e.embedder) {
            Some(e) => self.on_bar(texts.len(), |p| e.embed(texts, self.batch_tokens, p)),
            None => Err(Error::Internal(anyhow::anyhow!("no embedder is lent"))),
        }
    }

    fn served(&mut self, n: usize) {
        if let Some(p) = &self.progress.bar {
            p.inc(n as u64);
        }
    }
}

impl Drop for Lent<'_> {
    /// A decoder judge's warnings, once the run asked it everything: prompts cut to its
    /// context, and a median letter mass below one half (the model mostly does not answer with
    /// a letter, so its picks say little).
    fn drop(&mut self) {
        if self.truncated > 0 {
            eprintln!(
                "warning: {} prompts were longer than the judge's context and kept their last tokens",
                self.truncated
            );
        }
        if let Some(median) = median(&mut self.letter_masses) {
            if median < 0.5 {
                eprintln!(
                    "warning: the judge's median letter mass is {median:.3} (< 0.5): the model \
                     mostly answers with something other than A-D, so its picks are weak evidence \
                     (try its chat template's system prompt, or another judge)"
                );
            }
        }
    }
}

/// The median of `values` (`None` when empty).
fn median(values: &mut [f32]) -> Option<f32> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f32::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Load the judge `model` on the runtime's device, dtype and engine (`max_length` caps its
/// inputs; `follow_label` is a binary judge's "follows" label; `system_prompt` a decoder
/// judge's system message), with its card.
pub fn load_judge(
    model: &ResolvedModel,
    rt: &ModelRuntime,
    max_length: Option<usize>,
    follow_label: Option<&str>,
    system_prompt: Option<&str>,
) -> Result<LoadedJudge> {
    let judge = AnyJudge::load(
        &model.dir,
        &rt.device,
        rt.dtype,
        max_length,
        follow_label,
        &rt.engine,
        system_prompt,
    )?;
    let model_ref = model.model_ref()?;
    eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
    let kind = match &judge {
        AnyJudge::Scoring(j) => JudgeKind::Scoring {
            head: match j.head() {
                Head::MultipleChoice => "multiple_choice".to_string(),
                Head::Binary { labels, follow } => {
                    format!("binary, follow label {:?}", labels[*follow])
                }
            },
            max_length: j.max_length(),
        },
        AnyJudge::Letter(_) | AnyJudge::Decoder(_) => JudgeKind::Letter,
    };
    let card = JudgeCard {
        model: model_ref,
        spec: model.spec.clone(),
        kind,
        kind_label: judge.kind().to_string(),
        arch: judge.arch().to_string(),
        engine: judge.engine().to_string(),
        device: rt.device_name(),
        dtype: format!("{:?}", rt.dtype),
        quantize: rt.quantize_setting(),
        tf32: rt.tf32,
        system_prompt: system_prompt.map(str::to_string),
    };
    Ok(LoadedJudge { judge, card })
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
        letter_judge: matches!(judge, Some(AnyJudge::Letter(_) | AnyJudge::Decoder(_))),
        embedder,
    }
}
