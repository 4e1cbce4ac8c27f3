//! Every suite's settings as metrics.json records them: one serde struct per suite, written by
//! the suite's command and read back typed by its report, by `scorekit merge` and by `scorekit
//! compare` (through `MetricsDoc::suite_settings`). A key that is missing, unknown (a typo, a
//! setting of another version) or of the wrong type is an error naming metrics.json, never a
//! silently different merge. The bootstrap, seed and shard every run records are
//! `scorekit_report::RunSettings`, beside these.
//!
//! Field names are metrics.json keys (the output contract): renaming one is a format change.
//! The document writes keys sorted, so field order here is free.

use scorekit_core::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn is_false(b: &bool) -> bool {
    !*b
}

/// `scorekit story`: the judge and the embedder as they ran (absent for a skipped model).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorySettings {
    /// The judge as named on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// The judge's architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_arch: Option<String>,
    /// The engine the judge ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_engine: Option<String>,
    /// `multiple_choice`, `binary, follow label ...` or `letter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_head: Option<String>,
    /// A scoring judge's token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_max_length: Option<usize>,
    /// A scoring judge's input pairs and truncation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_input: Option<String>,
    /// A scoring judge's tie rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_ties: Option<String>,
    /// A letter judge's prompt (shots and template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_prompt: Option<String>,
    /// A letter judge's decoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_decoding: Option<String>,
    /// How a letter judge's pick is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_pick: Option<String>,
    /// A letter judge's cyclic option orders, when they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_option_orders: Option<String>,
    /// The embedder as named on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// The engine the embedder ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_engine: Option<String>,
    /// Dissimilarity's definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dissimilarity: Option<String>,
    /// The device the models ran on.
    pub device: String,
    /// int8 encoder products, when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantize: Option<String>,
    /// TF32 products for f32 on CUDA (`--tf32`), when on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tf32: bool,
    /// The judge's calibrations, when one ran (they decide the corrected IFSM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationSettings>,
}

/// `scorekit judge eval`'s settings: the judge that ran, the question file and the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeEvalSettings {
    /// The judge as named (`--judge`).
    pub judge: String,
    /// `multiple-choice`, `binary` or `letter`.
    pub judge_kind: String,
    /// Its architecture.
    pub judge_arch: String,
    /// The engine that ran it.
    pub engine: String,
    /// The device.
    pub device: String,
    /// `--quantize` (absent: full-precision weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantize: Option<String>,
    /// TF32 products on CUDA (absent when off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tf32: bool,
    /// The question file, with its lines per format.
    pub dataset: scorekit_report::judge::QuestionFile,
    /// Options per question.
    pub options: usize,
    /// A letter judge's protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub letter: Option<scorekit_report::judge::EvalLetter>,
    /// `--option-orders cyclic`: every rotation of the options asked too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cyclic: bool,
    /// The judge's calibrations (absent: `--no-calibration` without labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationSettings>,
}

/// The calibrations of the judge a story run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationSettings {
    /// The dataset calibration (unless `--no-calibration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetCalibrationSettings>,
    /// The human label file (`--calibration-labels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<LabelFileSettings>,
}

/// What identifies a dataset calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetCalibrationSettings {
    /// The protocol's version (`story::calibration::PROTOCOL`).
    pub protocol: String,
    /// sha256 of the judge, its settings, the dataset, the endings file and the protocol: runs
    /// with the same key share one calibration (its cache key).
    pub key: String,
    /// sha256 of the endings file the fillers come from.
    pub endings_sha256: String,
}

/// The human label file of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelFileSettings {
    /// As named on the command line.
    pub path: String,
    /// Its sha256.
    pub sha256: String,
}

impl StorySettings {
    /// The head of a judge whose verdicts are letters.
    pub const LETTER_HEAD: &'static str = "letter";

    /// Record a scoring judge (`judge` as named, its architecture, engine, head and token
    /// limit) and the input and tie rules its verdicts follow.
    pub fn set_scoring_judge(&mut self, judge: JudgeNames, head: String, max_length: usize) {
        self.set_judge_names(judge);
        self.judge_head = Some(head);
        self.judge_max_length = Some(max_length);
        self.judge_input =
            Some("(document, question + \" \" + option), longest-first truncation".into());
        self.judge_ties = Some("lowest option index".into());
    }

    /// Record the lent judge `card`: a scoring judge with its head and length, or a letter
    /// judge with its `protocol` and whether the options were also asked in every rotation.
    pub fn record_judge(
        &mut self,
        card: &crate::models::JudgeCard,
        protocol: scorekit_report::story::LetterProtocol,
        cyclic: bool,
    ) {
        let names = JudgeNames {
            spec: card.spec.clone(),
            arch: card.arch.clone(),
            engine: card.engine.clone(),
        };
        match &card.kind {
            crate::models::JudgeKind::Scoring { head, max_length } => {
                self.set_scoring_judge(names, head.clone(), *max_length)
            }
            crate::models::JudgeKind::Letter => self.set_letter_judge(names, protocol, cyclic),
        }
    }

    /// Record a letter judge, its protocol, and whether the options were also asked in every
    /// rotation (`--option-orders cyclic`).
    pub fn set_letter_judge(
        &mut self,
        judge: JudgeNames,
        protocol: scorekit_report::story::LetterProtocol,
        cyclic: bool,
    ) {
        self.set_judge_names(judge);
        self.judge_head = Some(Self::LETTER_HEAD.into());
        self.judge_prompt = Some(protocol.prompt);
        self.judge_decoding = Some(protocol.decoding);
        self.judge_pick = Some(protocol.pick);
        self.judge_option_orders = cyclic.then(|| {
            "cyclic: every rotation of the options, the majority reported apart (ifsm_cyclic, judge_accuracy_cyclic)".to_string()
        });
    }

    fn set_judge_names(&mut self, judge: JudgeNames) {
        self.judge = Some(judge.spec);
        self.judge_arch = Some(judge.arch);
        self.judge_engine = Some(judge.engine);
    }

    /// Record the embedder (as named, and the engine it ran on) and what Dissimilarity is.
    pub fn set_embedder(&mut self, spec: String, engine: String) {
        self.embedder = Some(spec);
        self.embedder_engine = Some(engine);
        self.dissimilarity =
            Some("1 - cos(e_i, e_j) over pairs of endings of the same story, per group".into());
    }

    /// The letter judge's protocol as recorded (report.md lists it); `None` for another judge.
    pub fn letter_protocol(&self) -> Option<scorekit_report::story::LetterProtocol> {
        (self.judge_head.as_deref() == Some(Self::LETTER_HEAD)).then(|| {
            scorekit_report::story::LetterProtocol {
                prompt: self.judge_prompt.clone().unwrap_or_default(),
                decoding: self.judge_decoding.clone().unwrap_or_default(),
                pick: self.judge_pick.clone().unwrap_or_default(),
                option_orders: self.judge_option_orders.clone(),
            }
        })
    }
}

/// A judge as a story run records it.
#[derive(Debug, Clone)]
pub struct JudgeNames {
    /// As named on the command line.
    pub spec: String,
    /// Its architecture.
    pub arch: String,
    /// The engine it ran on.
    pub engine: String,
}

/// `scorekit grasp`: the test, its scorer and the options of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraspSettings {
    /// The test type's name (`level1-binary`, ...).
    pub test: String,
    /// `flag` or the config the test type came from.
    pub test_source: String,
    /// The config's `mode` (one file's run only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `binary` or `open`.
    pub scorer: String,
    /// MVPBench-style paired accuracy (`--pairwise`).
    pub pairwise: bool,
    /// Answers naming no label re-read by embeddings (`--semantic`).
    pub semantic: bool,
    /// Rows of scenes the config does not list were kept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_unknown_scenes: bool,
    /// The models' labels, in order, of a run over several response files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// The embedder's device (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// int8 encoder products, when on (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantize: Option<String>,
    /// TF32 products for f32 on CUDA (`--tf32`), when on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tf32: bool,
    /// The embedder as named (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_embedder: Option<String>,
    /// The acceptance thresholds (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_thresholds: Option<crate::grasp::semantic::Thresholds>,
    /// The label descriptions and their sha256 (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_descriptions: Option<String>,
    /// The re-reading rule (`--semantic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_rule: Option<String>,
}

impl GraspSettings {
    /// The test type recorded.
    pub fn kind(&self) -> Result<crate::grasp::TestKind> {
        crate::grasp::TestKind::from_name(&self.test).ok_or_else(|| {
            Error::usage(format!(
                "metrics.json settings: unknown GRASP test {:?}",
                self.test
            ))
        })
    }
}

/// `scorekit muse`: where the gold flow and aliases came from and the scoring rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuseSettings {
    /// The plan format asked for (`auto`, ...).
    pub plan_format: String,
    /// The gold flow's file (or the built-in one and its sha256).
    pub flow: String,
    /// The alias table.
    pub aliases: String,
    /// How Final Output is decided.
    pub final_output: String,
    /// The verdicts file of `--output-verdicts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_verdicts: Option<String>,
    /// The name-mapping rule.
    pub name_mapping: String,
    /// The embedder as named (`--embedder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// int8 encoder products, when on (`--embedder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantize: Option<String>,
    /// TF32 products for f32 on CUDA (`--tf32`), when on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tf32: bool,
    /// The acceptance thresholds (`--embedder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_thresholds: Option<crate::muse::semantic::Thresholds>,
    /// The task descriptions and their sha256 (`--embedder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_descriptions: Option<String>,
    /// The matching rule (`--embedder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_rule: Option<String>,
}

/// `scorekit mint`: the verdict rule and, with `--exec-code`, the sandbox it ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintSettings {
    /// Reasoning answers rechecked (`--recheck`).
    pub recheck: bool,
    /// The numeric tolerance's name.
    pub tolerance: String,
    /// Code answers executed (`--exec-code`).
    pub exec_code: bool,
    /// The time limit of one execution, in seconds.
    pub exec_timeout_s: u64,
    /// The Python that executed code (null without `--exec-code`).
    pub python: Option<String>,
    /// The memory limit of one execution (`--exec-code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_memory_mib: Option<u64>,
    /// The isolation layers the sandbox found (`--exec-code`), as its probe reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_isolation: Option<Value>,
    /// Which verdict counts: stored, or rechecked where computed.
    pub verdict: String,
}

impl MintSettings {
    /// Whether verdicts were recomputed (by `--recheck` or `--exec-code`).
    pub fn rechecked(&self) -> bool {
        self.recheck || self.exec_code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_or_missing_key_is_refused() {
        let good = serde_json::json!({
            "recheck": false, "tolerance": "paper", "exec_code": false,
            "exec_timeout_s": 10, "python": null, "verdict": "stored"
        });
        let s: MintSettings = serde_json::from_value(good.clone()).unwrap();
        assert!(!s.rechecked());
        assert_eq!(serde_json::to_value(&s).unwrap(), good);
        let mut typo = good.clone();
        typo["rechek"] = Value::Bool(true);
        let e = serde_json::from_value::<MintSettings>(typo).unwrap_err();
        assert!(e.to_string().contains("unknown field `rechek`"), "{e}");
        let mut missing = good;
        missing.as_object_mut().unwrap().remove("tolerance");
        let e = serde_json::from_value::<MintSettings>(missing).unwrap_err();
        assert!(e.to_string().contains("missing field `tolerance`"), "{e}");
    }
}
