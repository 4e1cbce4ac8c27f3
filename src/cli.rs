//! Command-line definitions: one struct per subcommand, as the design's contract lists them.

use clap::{Args, Parser, Subcommand, ValueEnum};
// The enums a flag selects are the lower layers' own (clap's ValueEnum behind their `clap`
// feature): no mirror enums, no converters.
use scorekit_runtime::train::Precision;
use scorekit_runtime::EngineChoice;
use scorekit_suites::grasp::TestKind;
use scorekit_suites::letter::ShotAnswers;
use scorekit_suites::mint::checkers::Tolerance;
use std::path::PathBuf;

/// The headings that group the options in `--help`. Every option has one (a flattened struct
/// names its own once, every other field its own), so none falls under clap's "Options" beside
/// `--help`/`--version`, and none inherits a heading left over from a flattened struct.
pub mod heading {
    /// What is read: datasets, results, runs, and whether the network may be used to get them.
    pub const INPUT: &str = "Input";
    /// The judge of a story run or a judge command.
    pub const JUDGE: &str = "Judge";
    /// A Flan-T5 (letter) judge's prompt: demonstrations and option orders.
    pub const LETTER: &str = "Letter-judge options";
    /// The sentence embedder.
    pub const EMBEDDER: &str = "Embedder";
    /// The model `scorekit bench` measures.
    pub const MODEL: &str = "Model";
    /// The judge's calibration, human labels and the label sample.
    pub const CALIBRATION: &str = "Calibration and labels";
    /// How a suite scores (rules, re-checks, executions).
    pub const SCORING: &str = "Scoring";
    /// What `scorekit bench` times and how often.
    pub const MEASUREMENT: &str = "Measurement";
    /// The training recipe of `scorekit judge train`.
    pub const TRAINING: &str = "Training";
    /// What `scorekit doctor` checks.
    pub const CHECKS: &str = "Checks";
    /// Device, float types, int8, engines, batches.
    pub const DEVICE: &str = "Device and precision";
    /// Where results go and how they are printed, intervals and shards.
    pub const OUTPUT: &str = "Output";
}
use heading::*;

/// Offline scorer for LLM evaluation suites: Possible Stories, GRASP, MuSE and MINT.
#[derive(Debug, Parser)]
// Help wraps at 100 columns at most (every subcommand inherits it), so it reads the same in any
// terminal wider than that; tests/integration/help.rs snapshots it at 100.
#[command(
    name = "scorekit",
    version,
    about,
    long_about = None,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Score Possible Stories endings: IFSM (MRC judge) and Dissimilarity (LaBSE).
    #[command(
        after_help = "Example:\n  scorekit story --dataset test.jsonl --generations gen.jsonl --out out/story"
    )]
    Story(StoryArgs),
    /// Score GRASP responses: yes/no and open-ended answer accuracy per test.
    #[command(
        after_help = "Only the last turn of a response is scored: the text after its last `<SEP>` (`No<SEP>Yes`\n\
                      answers yes; `Yes<SEP>` leaves an empty last turn, which is invalid).\n\
                      A sample responses file: data/grasp/sample-responses.csv\n\n\
                      Example:\n  scorekit grasp --responses results.csv --test level1-binary --out out/grasp"
    )]
    Grasp(GraspArgs),
    /// Score MuSE plans: Task Selection, Flow of Thought, Final Output.
    #[command(
        after_help = "Example:\n  scorekit muse --queries queries.json --flow flow.json --plans plans.jsonl --out out/muse"
    )]
    Muse(MuseArgs),
    /// Score MINT trajectories: SR_k, Δtools, Δfeedback, invalid actions, format artefacts.
    #[command(after_help = "Example:\n  scorekit mint --outputs data/outputs --out out/mint")]
    Mint(MintArgs),
    /// Embed sentences with a sentence-transformers model (LaBSE by default).
    #[command(
        after_help = "Example:\n  scorekit embed --input endings.jsonl --output endings.npy --model sentence-transformers/LaBSE"
    )]
    Embed(EmbedArgs),
    /// Get, inspect and verify models for offline use.
    #[command(after_help = "Example:\n  scorekit models pull labse && scorekit models path labse")]
    Models(ModelsArgs),
    /// Get, inspect and verify benchmark data (pinned upstream files) for offline use.
    #[command(
        after_help = "Example:\n  scorekit data pull possible-stories:test && scorekit data path possible-stories:test"
    )]
    Data(DataArgs),
    /// Measure embedding throughput on a real corpus.
    #[command(
        after_help = "Example:\n  scorekit bench --model labse --input endings.jsonl\n  scorekit bench --judge roberta-large-race --input dev.jsonl --limit 32"
    )]
    Bench(BenchArgs),
    /// Combine the outputs of sharded runs into the metrics of a single run.
    #[command(
        after_help = "Example:\n  scorekit merge --parts out/shard-0 out/shard-1 --out out/all"
    )]
    Merge(MergeArgs),
    /// Compare systems scored on the same benchmark items: leaderboard and paired tests.
    #[command(
        after_help = "Example:\n  scorekit compare --runs out/gpt4 out/llama --labels GPT-4,Llama --out out/compare"
    )]
    Compare(CompareArgs),
    /// Make the labelling page of a label file: one ending per screen, keyboard first, exported
    /// in the --calibration-labels format.
    #[command(
        after_help = "Example:\n  scorekit label out/story/to_label.jsonl\n  scorekit label labels.jsonl --dataset possible-stories:dev --out labels.html"
    )]
    Label(LabelArgs),
    /// One self-contained HTML page of runs: charts, every item, a leaderboard of several runs.
    #[command(
        after_help = "A run, a merged run or a `scorekit compare` folder gives its own page (the report.html\n\
                      it already holds); several runs of one suite on the same benchmark are shown side by side\n\
                      under the leaderboard and paired tests of `scorekit compare`. The page needs no network.\n\n\
                      Example:\n  scorekit view out/gpt4 out/llama --out leaderboard.html"
    )]
    View(ViewArgs),
    /// Train and evaluate multiple-choice judges (the IFSM judge).
    #[command(subcommand)]
    Judge(JudgeCommand),
    /// What scorekit sees on this machine and will do: build, CPU paths, GPU, caches, glibc.
    #[command(after_help = "Example:\n  scorekit doctor\n  scorekit doctor --json")]
    Doctor(DoctorArgs),
}

/// `scorekit doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Report as for an offline run (also HF_HUB_OFFLINE=1; the doctor never uses the network).
    #[arg(long, help_heading = CHECKS)]
    pub offline: bool,
    /// Also check the sha256 of every cached file of the shipped model manifests (reads them all).
    #[arg(long, help_heading = CHECKS)]
    pub verify: bool,
    /// Print the report as one JSON object.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

/// `scorekit judge ...`.
#[derive(Debug, Subcommand)]
pub enum JudgeCommand {
    /// Fine-tune a BERT / RoBERTa / XLM-R checkpoint as a multiple-choice judge.
    #[command(
        after_help = "Example:\n  scorekit judge train --base roberta-base --train train.jsonl --dev dev.jsonl --out judge/"
    )]
    Train(JudgeTrainArgs),
    /// Accuracy and consistency of a judge on Possible Stories (or RACE) questions.
    #[command(
        after_help = "Example:\n  scorekit judge eval --judge judge/ --dataset test.jsonl --out out/judge-eval"
    )]
    Eval(JudgeEvalArgs),
}

/// `scorekit judge train`.
#[derive(Debug, Args)]
pub struct JudgeTrainArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// The checkpoint to start from: Hub id[@rev], manifest name or folder.
    #[arg(long, value_name = "MODEL", help_heading = INPUT)]
    pub base: String,
    /// Training questions, JSONL: Possible Stories or RACE lines (detected per line).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true, help_heading = INPUT)]
    pub train: Vec<PathBuf>,
    /// Dev questions for evaluation, best-checkpoint choice and early stopping.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub dev: Option<PathBuf>,
    /// Never touch the network (also HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = INPUT)]
    pub offline: bool,
    /// Epochs.
    #[arg(long, default_value_t = 5, help_heading = TRAINING)]
    pub epochs: u64,
    /// Optimiser steps in all (overrides --epochs).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = TRAINING,
    )]
    pub max_steps: Option<u64>,
    /// Peak learning rate.
    #[arg(long, default_value_t = 1e-5, value_parser = positive, help_heading = TRAINING)]
    pub lr: f64,
    /// Questions per micro-batch.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 8,
        value_parser = at_least_one,
        help_heading = TRAINING,
    )]
    pub batch_questions: usize,
    /// Micro-batches per optimiser step.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = at_least_one,
        help_heading = TRAINING,
    )]
    pub grad_accum: usize,
    /// Decoupled weight decay (not on biases and LayerNorm weights).
    #[arg(long, default_value_t = 0.01, help_heading = TRAINING)]
    pub weight_decay: f64,
    /// Share of the optimiser steps spent in linear warm-up.
    #[arg(long, default_value_t = 0.0, value_parser = share, help_heading = TRAINING)]
    pub warmup_ratio: f64,
    /// Clip gradients to this global L2 norm (0: no clipping).
    #[arg(long, default_value_t = 1.0, help_heading = TRAINING)]
    pub max_grad_norm: f64,
    /// Evaluate on --dev (and save a checkpoint) every N optimiser steps, and after each epoch.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 200,
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = TRAINING,
    )]
    pub eval_every: u64,
    /// Stop after this many dev evaluations without a gain in accuracy.
    #[arg(long, value_name = "N", default_value_t = 3, help_heading = TRAINING)]
    pub patience: u64,
    /// Seed of the shuffles, dropout masks and a new head.
    #[arg(long, default_value_t = 2022, help_heading = TRAINING)]
    pub seed: u64,
    /// Take questions in file order (else a seeded shuffle per epoch).
    #[arg(long, help_heading = TRAINING)]
    pub no_shuffle: bool,
    /// Dropout probability everywhere [default: the base model's config.json]
    #[arg(long, value_name = "P", value_parser = probability, help_heading = TRAINING)]
    pub dropout: Option<f64>,
    /// Truncate pairs to this many tokens [default: the model's own limit]
    #[arg(long, value_name = "N", help_heading = TRAINING)]
    pub max_length: Option<usize>,
    /// auto, cpu, cuda, cuda:N, metal or metal:N.
    #[arg(long, default_value = "auto", help_heading = DEVICE)]
    pub device: scorekit_runtime::DeviceSpec,
    /// Precision of the products (bf16-mixed is ~1.45-1.6x faster on CPUs with AMX-BF16 or
    /// AVX512-BF16 for BERT-family judges, not bit-exact; docs/judge.md) [default: bf16-mixed on
    /// CUDA, f32 elsewhere]
    #[arg(long, value_name = "P", help_heading = DEVICE)]
    pub precision: Option<Precision>,
    /// Output folder (a Hugging Face model folder plus training.json and report.md).
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub out: PathBuf,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long, help_heading = OUTPUT)]
    pub resume: bool,
    /// Overwrite a finished run in --out.
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,
    /// No progress bar.
    #[arg(long, help_heading = OUTPUT)]
    pub quiet: bool,
    /// Stop (as if killed) after N optimiser steps of this invocation, checkpoint written: for
    /// testing --resume.
    #[arg(long, hide = true, value_name = "N", help_heading = OUTPUT)]
    pub stop_after: Option<u64>,
}

/// `scorekit judge eval`.
#[derive(Debug, Args)]
pub struct JudgeEvalArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// Questions, JSONL: Possible Stories or RACE lines.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub dataset: PathBuf,
    /// The judge: Hub id[@rev], manifest name or folder.
    #[arg(long, value_name = "MODEL", help_heading = JUDGE)]
    pub judge: String,
    /// For a binary sequence-classification judge: the label that means "follows".
    #[arg(long, value_name = "LABEL", help_heading = JUDGE)]
    pub follow_label: Option<String>,
    /// The judge's calibration (q0, q1 and J on the dataset).
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// A letter judge's demonstrations.
    #[command(flatten)]
    pub shots: ShotArgs,
    /// A letter judge's option orders: `reference` (the dataset's, as run_llm.py) or `cyclic`
    /// (also every rotation of the options, the majority verdict reported apart).
    #[arg(long, value_enum, default_value_t = OptionOrders::Reference, help_heading = LETTER)]
    pub option_orders: OptionOrders,
    /// Device and engine.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where results go.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A letter judge's k-shot prompt (run_llm.py: `random.seed(SEED)`, `random.sample(train, K)`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = LETTER)]
pub struct ShotArgs {
    /// Demonstrations before each question (0: zero-shot, the authors' 80.8% protocol).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub shots: usize,
    /// Questions to draw the demonstrations from (the Possible Stories train split).
    #[arg(long, value_name = "FILE")]
    pub shots_from: Option<PathBuf>,
    /// The seed of Python's `random.seed` that draws them (run_llm.py: 1234).
    #[arg(long, value_name = "SEED", default_value_t = 1234)]
    pub shot_seed: u64,
    /// How a demonstration's answer is written: `letters`, or run_llm.py's `integers` (its
    /// bug: the gold label's number, and nothing for label 0).
    #[arg(long, value_enum, default_value_t = ShotAnswers::Letters)]
    pub shot_answers: ShotAnswers,
    /// A decoder (chat model) judge's system message, before the question in its chat template
    /// (omitted: no system message).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
}

/// Which option orders a letter judge is asked (`--option-orders`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OptionOrders {
    /// The dataset's order only: the authors' protocol.
    Reference,
    /// Every rotation of the options; the majority of the answers mapped back to options.
    Cyclic,
}

/// Flags shared by every scoring command: where results go and how intervals are computed.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = OUTPUT)]
pub struct OutputArgs {
    /// Folder for metrics.json, items.jsonl and report.md (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Overwrite results already in --out.
    #[arg(long)]
    pub force: bool,
    /// Print metrics.json on stdout instead of the human table.
    #[arg(long)]
    pub json: bool,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Bootstrap resamples for the 95% intervals (0 disables them).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (results are deterministic for a seed).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Score only shard I of N (0-based, e.g. `$SLURM_ARRAY_TASK_ID/4`); combine the shards'
    /// folders with `scorekit merge`.
    #[arg(long, value_name = "I/N", default_value = "0/1")]
    pub shard: scorekit_core::shard::Shard,
}

/// Float type of the weights and activations (`--dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DType {
    /// 32-bit float (the default on the CPU).
    #[default]
    F32,
    /// 16-bit float (the default on CUDA and Metal).
    F16,
    /// bfloat16.
    Bf16,
}

/// Whether scorekit's CPU products use AMX tiles (`--amx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Amx {
    /// Where the CPU has AMX and Linux grants the tile state.
    #[default]
    #[value(alias = "on", alias = "1")]
    Auto,
    /// AVX-512 kernels only (f32, and VNNI for --quantize).
    #[value(alias = "0")]
    Off,
}

/// Flags shared by every command that runs a model.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = DEVICE)]
pub struct ModelArgs {
    /// auto (CUDA or Metal when this build has it and a device is present, else the CPU), cpu,
    /// cuda, cuda:N, metal or metal:N.
    #[arg(long, default_value = "auto")]
    pub device: scorekit_runtime::DeviceSpec,
    /// Encoder implementation (also SCOREKIT_ENCODER).
    #[arg(long, value_enum, default_value = "auto", env = "SCOREKIT_ENCODER")]
    pub engine: EngineChoice,
    /// AMX tiles in scorekit's CPU products: auto or off (also SCOREKIT_AMX).
    #[arg(long, value_enum, default_value = "auto", env = "SCOREKIT_AMX")]
    pub amx: Amx,
    /// Floating-point type of the weights and activations [default: f32 on the CPU, f16 on CUDA
    /// or Metal]
    // Resolved by `scorekit_runtime::select_dtype` (src/commands/model_runtime.rs).
    #[arg(long, value_enum)]
    pub dtype: Option<DType>,
    /// Token budget of one batch, padding counted.
    #[arg(long, value_name = "N", default_value_t = scorekit_runtime::DEFAULT_BATCH_TOKENS)]
    pub batch_tokens: usize,
    /// Truncate inputs to this many tokens [default: the model's own limit]
    #[arg(long, value_name = "N")]
    pub max_length: Option<usize>,
    /// Never touch the network (also HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = INPUT)]
    pub offline: bool,
    /// Int8 weights and activations in the encoders' matrix products (CPU with AVX-512 VNNI, f32
    /// models; for a T5 letter judge all its products, with --dtype bf16 allowed for the rest; for
    /// a decoder judge every product): 2.4x (judge) to 4x (LaBSE) faster, not bit-exact; accuracy
    /// in BENCHMARKS.md.
    #[arg(long)]
    pub quantize: bool,
    /// TF32 tensor-core products for f32 models on CUDA (10-bit mantissa products, f32 sums; not
    /// bit-exact; recorded in metrics.json). CUDA only.
    #[arg(long)]
    pub tf32: bool,
}

/// `scorekit story`.
#[derive(Debug, Args)]
pub struct StoryArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// Possible Stories questions (dev.jsonl / test.jsonl), or a dataset name
    /// (`possible-stories:test`, `scorekit data list`).
    #[arg(long, value_name = "FILE|NAME", help_heading = INPUT)]
    pub dataset: PathBuf,
    /// Generated endings, JSONL: {"question_id", "ending"} (optional "model", "instruction").
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub generations: PathBuf,
    /// A dataset question without an ending (per model; of the shard with --shard) is an
    /// error (exit 2) instead of a warning.
    #[arg(long, help_heading = INPUT)]
    pub require_complete: bool,
    /// MRC judge: Hub id[@rev], manifest name or folder.
    #[arg(long, value_name = "MODEL", default_value = "roberta-large-race", help_heading = JUDGE)]
    pub judge: String,
    /// For a binary sequence-classification judge: the label that means "follows".
    #[arg(long, value_name = "LABEL", help_heading = JUDGE)]
    pub follow_label: Option<String>,
    /// Skip IFSM (no judge).
    #[arg(long, conflicts_with = "skip_embedder", help_heading = JUDGE)]
    pub skip_judge: bool,
    /// Sentence embedder: Hub id[@rev], manifest name or folder.
    #[arg(long, value_name = "MODEL", default_value = "labse", help_heading = EMBEDDER)]
    pub embedder: String,
    /// Skip Dissimilarity (no embedder).
    #[arg(long, help_heading = EMBEDDER)]
    pub skip_embedder: bool,
    /// The judge's calibration and the corrected IFSM.
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// Write to_label.jsonl: N questions drawn uniformly at random (seeded by --seed) and every
    /// model's non-empty ending to them, shuffled, `follows` left null for a person to label;
    /// and to_label.html, its labelling page. With --calibration-labels: this run's sample,
    /// which labels carrying "sample" must be of.
    #[arg(long, value_name = "N", help_heading = CALIBRATION)]
    pub label_sample: Option<usize>,
    /// A letter judge's demonstrations.
    #[command(flatten)]
    pub shots: ShotArgs,
    /// A letter judge's option orders: `reference` (the dataset's, as run_llm.py) or `cyclic`
    /// (also every rotation of the options; IFSM of the majority reported apart).
    #[arg(long, value_enum, default_value_t = OptionOrders::Reference, help_heading = LETTER)]
    pub option_orders: OptionOrders,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The judge's calibration in the IFSM frame (docs/story.md), for the judge-corrected IFSM.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = CALIBRATION)]
pub struct CalibrationArgs {
    /// Skip the dataset calibration (original options and distractor swaps on the dataset's
    /// questions; it needs `possible-stories:endings`).
    #[arg(long)]
    pub no_calibration: bool,
    /// Redo the dataset calibration instead of taking it from the cache.
    #[arg(long, conflicts_with = "no_calibration")]
    pub recalibrate: bool,
    /// Human labels, JSONL: {"question_id", "ending", "follows": true|false} (optional "model",
    /// "labeller", "sample"); several files (one per labeller) are combined by majority. Labels
    /// naming a model give its prediction-powered IFSM; all give the judge's rates on labelled
    /// endings. A labelling page's export carries "sample", which `story` checks against the
    /// sample of its --label-sample and --seed.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub calibration_labels: Vec<PathBuf>,
}

/// `scorekit grasp`.
#[derive(Debug, Args)]
pub struct GraspArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// Upstream results.csv (scene, prompt, video_file, gt, response) or JSONL with those fields;
    /// several files (one per model, same test) are laid out as the paper's Table 2.
    #[arg(long, value_name = "FILE", num_args = 1.., required = true, help_heading = INPUT)]
    pub responses: Vec<PathBuf>,
    /// Model names of the --responses files, comma-separated, in the same order [default: each
    /// file's folder name, else its file name]
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', help_heading = INPUT)]
    pub labels: Option<Vec<String>>,
    /// Test type [default: test_name of the test_config.yaml beside the responses]
    #[arg(long, value_enum, help_heading = INPUT)]
    pub test: Option<TestKind>,
    /// Keep a scene the test does not know as its own group instead of stopping (exit 2).
    #[arg(long, help_heading = INPUT)]
    pub allow_unknown_scenes: bool,
    /// Level 2: also report paired P/IP accuracy (not the paper's metric).
    #[arg(long, help_heading = SCORING)]
    pub pairwise: bool,
    /// Map answers the strict rule marks invalid to labels by embedding similarity.
    #[arg(long, help_heading = SCORING)]
    pub semantic: bool,
    /// Embedder for --semantic.
    #[arg(long, value_name = "MODEL", default_value = "labse", help_heading = EMBEDDER)]
    pub embedder: String,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// MuSE plan formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PlanFormat {
    /// Detect per line.
    #[default]
    Auto,
    /// HuggingGPT task list.
    Hugginggpt,
    /// ControlLLM `<Solution>` decomposition.
    Controlllm,
    /// scorekit's own plan format.
    Scorekit,
    /// A classical planner's PDDL plan over MuSE's domains (`{"idx", "pddl"}`).
    Pddl,
}

/// `scorekit muse`.
#[derive(Debug, Args)]
pub struct MuseArgs {
    /// MuSE queries.json, or the dataset name `muse` (`muse:queries`).
    #[arg(long, value_name = "FILE|NAME", help_heading = INPUT)]
    pub queries: PathBuf,
    /// Gold flow annotation [default: the reviewed annotation shipped with scorekit,
    /// data/muse/flow.reviewed.json]
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub flow: Option<PathBuf>,
    /// Plans, JSONL, one per query, keyed by idx.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub plans: PathBuf,
    /// Format of the plans.
    #[arg(long, value_enum, default_value_t = PlanFormat::Auto, help_heading = INPUT)]
    pub plan_format: PlanFormat,
    /// Extra task-name aliases (JSON object: name -> MuSE task).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub aliases: Option<PathBuf>,
    /// Human or model Final Output verdicts per idx (JSONL {"idx", "output_ok"}).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub output_verdicts: Option<PathBuf>,
    /// Embedder for matching unknown task names.
    #[arg(long, value_name = "MODEL", help_heading = EMBEDDER)]
    pub embedder: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `scorekit mint`.
#[derive(Debug, Args)]
pub struct MintArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// Folder of MINT outputs in the upstream layout (searched for **/results.jsonl), or a
    /// dataset name (`mint:gpt-3.5-turbo-0613`, `scorekit data list`).
    #[arg(long, value_name = "DIR|NAME", help_heading = INPUT)]
    pub outputs: PathBuf,
    /// Never touch the network when --outputs names a dataset (also HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = INPUT)]
    pub offline: bool,
    /// Re-score reasoning instances with native checkers.
    #[arg(long, help_heading = SCORING)]
    pub recheck: bool,
    /// Also run code solutions against their tests with python3 (implies --recheck).
    #[arg(long, help_heading = SCORING)]
    pub exec_code: bool,
    /// Seconds allowed per code execution.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = SCORING,
    )]
    pub exec_timeout: u64,
    /// Address-space limit per program of --exec-code, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 2048, help_heading = SCORING)]
    pub exec_memory: u64,
    /// Programs of --exec-code run at once [default: the number of cores]
    #[arg(long, value_name = "N", value_parser = at_least_one, help_heading = SCORING)]
    pub jobs: Option<usize>,
    /// Numeric tolerance of the GSM8K/MATH/HotpotQA re-check: `head` (5 % of |ref|, upstream
    /// HEAD) or `pre` (5 % of ref, the checker behind the stored flags).
    #[arg(
        long,
        value_name = "RULE",
        value_enum,
        default_value_t = Tolerance::Head,
        help_heading = SCORING,
    )]
    pub tolerance: Tolerance,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Print the time of each phase (walk, read and parse, re-check, aggregate, bootstrap,
    /// write) and the peak memory to stderr.
    #[arg(long, help_heading = OUTPUT)]
    pub timings: bool,
}

/// `scorekit embed`.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// JSONL ({"id", "text"}) or plain text, one sentence per line.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub input: PathBuf,
    /// Embedding model: Hub id[@rev], manifest name or folder.
    #[arg(long, value_name = "MODEL", default_value = "labse", help_heading = EMBEDDER)]
    pub model: String,
    #[command(flatten)]
    pub runtime: ModelArgs,
    /// Output: .npy, .safetensors or .jsonl (by extension).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub output: PathBuf,
    /// Overwrite --output if it exists.
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,
    /// No progress bars.
    #[arg(long, help_heading = OUTPUT)]
    pub quiet: bool,
    /// Embed only shard I of N of the sentences (by their id; 0-based).
    #[arg(long, value_name = "I/N", default_value = "0/1", help_heading = OUTPUT)]
    pub shard: scorekit_core::shard::Shard,
}

/// `scorekit models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ModelsAction,
}

/// `scorekit models` actions.
#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Download a model into the Hugging Face cache.
    Pull {
        /// Hub id[@rev], manifest name or folder.
        model: String,
        /// No progress bars.
        #[arg(long, help_heading = OUTPUT)]
        quiet: bool,
    },
    /// List the models in the cache and the shipped manifests.
    List,
    /// Check a model's files against its manifest (sha256) and its safetensors headers.
    Verify {
        /// Hub id[@rev], manifest name or folder.
        model: String,
    },
    /// Print the folder holding a model's files (to copy to an air-gapped machine).
    Path {
        /// Hub id[@rev], manifest name or folder.
        model: String,
    },
}

/// `scorekit data`.
#[derive(Debug, Args)]
pub struct DataArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: DataAction,
}

/// `scorekit data` actions. NAME[:PART] is a dataset of `data/manifests/` (`possible-stories:test`,
/// `mint:gpt-3.5-turbo-0613`); NAME alone is its default part, `NAME:all` every file.
#[derive(Debug, Subcommand)]
pub enum DataAction {
    /// List the known datasets, their parts and what is in the cache.
    List,
    /// Fetch a dataset's files into the cache, checking each against its pin.
    Pull {
        /// NAME[:PART].
        spec: String,
        /// Take the files from this copy of the upstream repository (by upstream path), not
        /// from the network.
        #[arg(long, value_name = "DIR", help_heading = INPUT)]
        from: Option<PathBuf>,
        /// Never touch the network (also HF_HUB_OFFLINE=1): only report what is missing.
        #[arg(long, help_heading = INPUT)]
        offline: bool,
        /// No progress bars.
        #[arg(long, help_heading = OUTPUT)]
        quiet: bool,
    },
    /// Re-check cached files: sha256, or the git blob id of files pinned by blob.
    Verify {
        /// NAME (every cached file) or NAME:PART (every file of the part).
        spec: String,
    },
    /// Print where a dataset's files lie in the cache, one path a line (fetches nothing).
    Path {
        /// NAME[:PART].
        spec: String,
    },
}

/// `scorekit bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    // Fields in the order of their help headings (the order clap shows them in).
    /// Corpus: JSONL ({"text"} or Possible Stories endings), plain text, or a dataset name
    /// (through the data cache) [default: possible-stories:endings; with --judge,
    /// possible-stories:dev]
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub input: Option<PathBuf>,
    /// Measure synthetic sentences of exactly these token lengths ([CLS] and [SEP] counted),
    /// built from the model's own vocabulary, instead of the corpus: a grid axis.
    #[arg(long, value_name = "N,...", value_delimiter = ',', help_heading = INPUT)]
    pub synthetic: Vec<usize>,
    /// Use only the first N sentences of the corpus (with --judge: the first N questions).
    #[arg(long, value_name = "N", help_heading = INPUT)]
    pub limit: Option<usize>,
    /// Add the cells of this file (scripts/bench/peers.py's output, or another bench.json of
    /// the same model and corpus) as rows, with ratio columns, joined by their axes.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub compare: Option<PathBuf>,
    /// Embedding model to measure.
    #[arg(long, value_name = "MODEL", default_value = "labse", help_heading = MODEL)]
    pub model: String,
    /// Measure this MRC judge instead of the embedder: (passage, question + option) pairs of a
    /// Possible Stories dataset (`--input`), 4 per question.
    #[arg(long, value_name = "MODEL", help_heading = MODEL)]
    pub judge: Option<String>,
    /// Timed repeats (of each cell of a grid).
    #[arg(long, default_value_t = 3, help_heading = MEASUREMENT)]
    pub repeats: usize,
    /// Untimed batches run before each cell's timed repeats (giving it makes a grid) [default: 2]
    #[arg(long, value_name = "N", help_heading = MEASUREMENT)]
    pub warmup: Option<usize>,
    #[command(flatten)]
    pub runtime: BenchModelArgs,
    /// Write the grid here: bench.json, bench.csv, report.md, the SVG charts and the measured
    /// sentences (corpus.jsonl or synthetic-N.jsonl, which scripts/bench/peers.py reads).
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,
    /// Write the embeddings (with --judge: the scores, N×1) of the last repeat to this .npy file
    /// (for accuracy checks).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub save: Option<PathBuf>,
    /// Print the results as one JSON object.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

/// The model flags of `scorekit bench`: those of [`ModelArgs`], with `--batch-tokens`,
/// `--max-length` and `--dtype` taking comma lists (each one axis of the grid).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = DEVICE)]
pub struct BenchModelArgs {
    /// auto (CUDA or Metal when this build has it and a device is present, else the CPU), cpu,
    /// cuda, cuda:N, metal or metal:N.
    #[arg(long, default_value = "auto")]
    pub device: scorekit_runtime::DeviceSpec,
    /// Encoder implementation (also SCOREKIT_ENCODER).
    #[arg(long, value_enum, default_value = "auto", env = "SCOREKIT_ENCODER")]
    pub engine: EngineChoice,
    /// AMX tiles in scorekit's CPU products: auto or off (also SCOREKIT_AMX).
    #[arg(long, value_enum, default_value = "auto", env = "SCOREKIT_AMX")]
    pub amx: Amx,
    /// Floating-point types of the weights and activations, comma-separated (an axis) [default:
    /// f32 on the CPU, f16 on CUDA or Metal]
    #[arg(long, value_enum, value_name = "DTYPE,...", value_delimiter = ',')]
    pub dtype: Vec<DType>,
    /// Token budgets of one batch, padding counted, comma-separated (an axis).
    #[arg(
        long,
        value_name = "N,...",
        value_delimiter = ',',
        default_values_t = [scorekit_runtime::DEFAULT_BATCH_TOKENS]
    )]
    pub batch_tokens: Vec<usize>,
    /// Truncate inputs to these many tokens, comma-separated (an axis) [default: the model's own
    /// limit]
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    pub max_length: Vec<usize>,
    /// Never touch the network (also HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = INPUT)]
    pub offline: bool,
    /// Int8 products (CPU with AVX-512 VNNI, f32 models): one int8 cell; in a grid, int8 rows
    /// next to the f32 ones.
    #[arg(long)]
    pub quantize: bool,
    /// TF32 products for f32 on CUDA (every cell f32; recorded as `tf32` in bench.json).
    #[arg(long)]
    pub tf32: bool,
}

impl BenchModelArgs {
    /// The [`ModelArgs`] of one cell.
    pub fn cell(
        &self,
        batch_tokens: usize,
        max_length: Option<usize>,
        dtype: Option<DType>,
        quantize: bool,
    ) -> ModelArgs {
        ModelArgs {
            device: self.device,
            engine: self.engine,
            amx: self.amx,
            dtype,
            batch_tokens,
            max_length,
            offline: self.offline,
            quantize,
            tf32: self.tf32,
        }
    }

    /// Whether every axis has at most one value (the one-cell bench of before grids).
    pub fn single(&self) -> bool {
        self.dtype.len() <= 1 && self.batch_tokens.len() <= 1 && self.max_length.len() <= 1
    }
}

/// `scorekit compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Output folders of runs of one suite on the same benchmark inputs, usually two or more;
    /// a run with several result groups (story's models, MINT's configurations) contributes
    /// each group as a system, so one such run is enough.
    #[arg(long, value_name = "DIR", num_args = 1.., required = true, help_heading = INPUT)]
    pub runs: Vec<PathBuf>,
    /// Names of the runs, comma-separated, one per --runs folder [default: the folders' names]
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', help_heading = INPUT)]
    pub labels: Option<Vec<String>>,
    /// Folder for metrics.json, report.md, report.html and tables.tex.
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub out: PathBuf,
    /// Overwrite results already in --out.
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,
    /// Print metrics.json on stdout instead of the human tables.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
    /// Bootstrap resamples for the intervals (0 disables them).
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = OUTPUT)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (results are deterministic for a seed).
    #[arg(long, default_value_t = 0, help_heading = OUTPUT)]
    pub seed: u64,
}

/// `scorekit label`.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// A label file, JSONL: {"question_id", "ending"} with "passage" and "question" (as
    /// to_label.jsonl has them) or --dataset; "model" and "follows" are not shown.
    #[arg(value_name = "FILE.jsonl", help_heading = INPUT)]
    pub file: PathBuf,
    /// Possible Stories questions (or a dataset name, `possible-stories:dev`) for the lines
    /// without a passage and question.
    #[arg(long, value_name = "FILE|NAME", help_heading = INPUT)]
    pub dataset: Option<PathBuf>,
    /// Never touch the network when --dataset names a dataset (also HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = INPUT)]
    pub offline: bool,
    /// The page to write [default: FILE with .html].
    #[arg(long, value_name = "FILE.html", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,
    /// No progress bar (a --dataset download).
    #[arg(long, help_heading = OUTPUT)]
    pub quiet: bool,
}

/// `scorekit view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Output folders of finished runs (or one `scorekit compare` folder).
    #[arg(value_name = "DIR", num_args = 1.., required = true, help_heading = INPUT)]
    pub dirs: Vec<PathBuf>,
    /// Names of the runs, comma-separated, one per folder [default: the folders' names]
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', help_heading = INPUT)]
    pub labels: Option<Vec<String>>,
    /// The page to write.
    #[arg(long, value_name = "FILE", default_value = "report.html", help_heading = OUTPUT)]
    pub out: PathBuf,
    /// Bootstrap resamples of the leaderboard's intervals (several runs; 0 disables them).
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = OUTPUT)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (the page is the same for a seed).
    #[arg(long, default_value_t = 0, help_heading = OUTPUT)]
    pub seed: u64,
}

/// `scorekit merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Output folders of the shards.
    #[arg(long, value_name = "DIR", num_args = 1.., required = true, help_heading = INPUT)]
    pub parts: Vec<PathBuf>,
    /// Folder for the merged results.
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub out: PathBuf,
    /// Overwrite results already in --out.
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,
}

/// The flag that sets each setting lower layers may refuse (`scorekit_core::error::Setting`):
/// the one place their errors meet the command line.
pub fn flag_of(setting: scorekit_core::error::Setting) -> &'static str {
    use scorekit_core::error::Setting;
    match setting {
        Setting::Engine => "--engine",
        Setting::Quantize => "--quantize",
        Setting::Dtype => "--dtype",
        Setting::FollowLabel => "--follow-label",
    }
}

// Flag values checked as the command line is parsed, before any work starts (clap names the
// flag and exits 2).

fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        Ok(_) => Err("must be a positive number".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        Ok(_) => Err("must be between 0 and 1".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        Ok(_) => Err("must be in [0, 1)".into()),
        Err(e) => Err(e.to_string()),
    }
}
