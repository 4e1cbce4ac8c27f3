//! training.json as a typed record, and the report.md and curves.svg drawn from it.

use scorekit_report::judge::QuestionFile;
use scorekit_train::run::EvalLog;
use scorekit_train::trainer::{Recipe, StepLog};
use scorekit_train::Precision;
use serde::Serialize;
use std::fmt::Write as _;

/// training.json: what was trained from what, how, and what was kept.
#[derive(Debug, Clone, Serialize)]
pub struct TrainingRecord {
    /// The base model.
    pub base: BaseRecord,
    /// The training question files.
    pub train_files: Vec<QuestionFile>,
    /// The dev question file.
    pub dev_file: Option<QuestionFile>,
    /// Question counts.
    pub questions: QuestionCounts,
    /// The recipe.
    pub recipe: Recipe,
    /// Tokens per pair after truncation.
    pub max_length: usize,
    /// The device trained on.
    pub device: String,
    /// The precision of the products.
    pub precision: Precision,
    /// How the encoder's dropout ran, in words.
    pub encoder_dropout: &'static str,
    /// Steps of the schedule.
    pub total_steps: u64,
    /// Warm-up steps.
    pub warmup_steps: u64,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// Steps taken.
    pub steps_done: u64,
    /// Patience ran out.
    pub early_stopped: bool,
    /// Every step.
    pub steps: Vec<StepLog>,
    /// Seconds per step (benchmarks only).
    pub step_seconds: Vec<f64>,
    /// Every dev evaluation.
    pub evals: Vec<EvalLog>,
    /// The kept weights.
    pub kept: Kept,
}

/// The base model of a run.
#[derive(Debug, Clone, Serialize)]
pub struct BaseRecord {
    /// Hub id, manifest name or folder.
    pub id: String,
    /// Its revision.
    pub revision: String,
    /// sha256 of its weights.
    pub sha256: String,
    /// Head tensors the base lacked, initialised from the seed.
    pub new_head: Vec<String>,
}

/// Question counts of a run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct QuestionCounts {
    /// Training questions.
    pub train: usize,
    /// Dev questions.
    pub dev: Option<usize>,
    /// Options per question.
    pub choices: usize,
}

/// The kept weights: the best dev accuracy's, or the last step's without dev questions.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    /// Their step.
    pub step: u64,
    /// Their dev accuracy (`null` without dev questions).
    pub dev_accuracy: Option<f64>,
    /// Their dev logits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dev_logits: Option<Vec<Vec<f32>>>,
}

/// A value as training.json prints it (JSON numbers: `1e-5`, not `0.00001`).
fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A share as a percentage with one decimal; "–" when there is none (JSON has no NaN).
fn pct(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or("–".into(), |x| format!("{:.1}%", 100.0 * x))
}

impl TrainingRecord {
    /// report.md of the run.
    pub fn report_md(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Judge training\n");
        let _ = writeln!(s, "- base: `{}` @ `{}`", self.base.id, self.base.revision);
        let new_head = self.base.new_head.len();
        if new_head > 0 {
            let _ = writeln!(s, "- the base had no multiple-choice head: {new_head} head tensors were initialised as `transformers` does (normal(0, initializer_range) weights, zero biases) from the seed");
        }
        for f in &self.train_files {
            let _ = writeln!(
                s,
                "- train: `{}` ({} Possible Stories, {} RACE lines; sha256 {})",
                f.path, f.possible_stories, f.race, f.sha256
            );
        }
        if let Some(d) = &self.dev_file {
            let _ = writeln!(s, "- dev: `{}` (sha256 {})", d.path, d.sha256);
        }
        let r = &self.recipe;
        let _ = writeln!(s, "- recipe: lr {}, {} questions × {} accumulation per step, weight decay {}, warm-up ratio {} ({} steps), max grad norm {}, seed {}, shuffle {}, dropout {}",
            json(&r.lr), r.batch_questions, r.grad_accum, json(&r.weight_decay), json(&r.warmup_ratio), self.warmup_steps, json(&r.max_grad_norm), r.seed, r.shuffle, json(&r.dropouts));
        let _ = writeln!(
            s,
            "- steps: {} of {} ({} per epoch){}, device {}",
            self.steps_done,
            self.total_steps,
            self.steps_per_epoch,
            if self.early_stopped {
                ", stopped early (patience)"
            } else {
                ""
            },
            self.device
        );
        let _ = writeln!(
            s,
            "- kept: step {} (dev accuracy {})\n",
            self.kept.step,
            pct(self.kept.dev_accuracy)
        );
        if !self.evals.is_empty() {
            let _ = writeln!(s, "| step | epoch | dev accuracy |\n|---:|---:|---:|");
            for e in &self.evals {
                // A non-finite epoch is null in training.json, read back as 0.
                let epoch = if e.epoch.is_finite() { e.epoch } else { 0.0 };
                let _ = writeln!(
                    s,
                    "| {} | {:.2} | {} |",
                    e.step,
                    epoch,
                    pct(Some(e.accuracy))
                );
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "Loss per optimiser step and dev accuracy per evaluation: training.json, curves.svg."
        );
        s
    }

    /// An SVG of the training loss per step (and dev accuracy per evaluation, right axis).
    pub fn curves_svg(&self) -> String {
        let (w, h, m) = (640.0, 320.0, 40.0);
        // training.json holds no NaN or infinity (null there): such points are not drawn.
        let steps: Vec<(f64, f64)> = self
            .steps
            .iter()
            .filter(|s| s.loss.is_finite())
            .map(|s| (s.step as f64, s.loss))
            .collect();
        let evals: Vec<(f64, f64)> = self
            .evals
            .iter()
            .filter(|e| e.accuracy.is_finite())
            .map(|e| (e.step as f64, e.accuracy))
            .collect();
        let max_step = steps.iter().chain(&evals).map(|p| p.0).fold(1.0, f64::max);
        let (lo, hi) = steps
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        let (lo, hi) = if lo < hi {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        };
        let x = |s: f64| m + (w - 2.0 * m) * s / max_step;
        let y = |v: f64, lo: f64, hi: f64| h - m - (h - 2.0 * m) * (v - lo) / (hi - lo);
        let path = |pts: &[(f64, f64)], lo: f64, hi: f64| {
            pts.iter()
                .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1, lo, hi)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n");
        let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
        let _ = writeln!(
            s,
            "<line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
            h - m,
            w - m,
            h - m
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">optimiser step (0 – {max_step})</text>",
            w / 2.0,
            h - 10.0
        );
        let _ = writeln!(
            s,
            "<text x=\"{m}\" y=\"20\" fill=\"#1f77b4\">training loss ({lo:.4} – {hi:.4})</text>"
        );
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"{}\"/>",
            path(&steps, lo, hi)
        );
        if !evals.is_empty() {
            let _ = writeln!(s, "<text x=\"{}\" y=\"20\" text-anchor=\"end\" fill=\"#d62728\">dev accuracy (0 – 100%)</text>", w - m);
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"#d62728\" points=\"{}\"/>",
                path(&evals, 0.0, 1.0)
            );
            for e in &evals {
                let _ = writeln!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#d62728\"/>",
                    x(e.0),
                    y(e.1, 0.0, 1.0)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}
