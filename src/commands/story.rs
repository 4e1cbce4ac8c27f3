//! `scorekit story`: Possible Stories endings scored with IFSM (MRC judge, with the judge's
//! ceiling beside it) and Dissimilarity (sentence embeddings), one result group per model.

use crate::cli::StoryArgs;
use crate::commands::calibration;
use crate::commands::model_runtime::ModelRuntime;
use crate::lent::{self, Lent, Progress};
use crate::settings;
use crate::settings::StoryFlags;
use scorekit_core::error::Result;
use scorekit_core::progress::bar;
use scorekit_io::read_jsonl;
use scorekit_report::{MetricsDoc, ModelRef};
use scorekit_runtime::embedder::Embedder;
use scorekit_runtime::judge::AnyJudge;
use scorekit_runtime::ResolvedModel;
use scorekit_suites::run::Run;
use scorekit_suites::settings::StorySettings;
use scorekit_suites::story::calibration::label_set::{self, HumanLabels, LabelSet};
use scorekit_suites::story::calibration::labelling as labels_page;
use scorekit_suites::story::calibration::labels;
use scorekit_suites::story::calibration::memo::Memo;
use scorekit_suites::story::calibration::summary::CalibrationSummary;
use scorekit_suites::story::outputs::{missing_in_scope, set_scope, CALIBRATION_FILE};
use scorekit_suites::story::pipeline::Scoring;
use scorekit_suites::story::plan::LetterPlan;
use scorekit_suites::story::suite::Story;
use scorekit_suites::story::{self, Generation, Item, Question};
use serde_json::json;
use std::collections::HashSet;

/// Run `scorekit story`.
pub fn run(args: StoryArgs) -> Result<()> {
    let args = settings::story(args)?;
    let out = &args.out;
    let (questions, generations, checked) = read_inputs(&args)?;

    let rt = ModelRuntime::new(&args.model, out.quiet)?;
    let mut doc = MetricsDoc::new("story");
    doc.add_input(&args.dataset.path)?;
    doc.add_input(&args.generations)?;
    doc.datasets
        .extend(args.dataset.dataset.as_ref().map(|d| d.record()));
    let (labels, human) = calibration_labels(&args, &questions, &generations, &checked)?;
    let (checked, in_scope) =
        story::pipeline::shard_part(&questions, &generations, checked, out.shard);
    let scope: Vec<&str> = in_scope.iter().map(|&i| questions[i].id.as_str()).collect();
    let missing = coverage(&args, &scope, &checked, &generations)?;

    let Resolved {
        judge_model,
        embedder_model,
        cyclic,
        shots,
    } = resolve_models(&args, &rt)?;
    let mut settings = StorySettings {
        device: rt.device_name(),
        quantize: rt.quantize_setting(),
        tf32: rt.tf32,
        ..StorySettings::default()
    };
    let (judge, judge_ref) = load_judge(
        judge_model.as_ref(),
        &rt,
        &args,
        cyclic,
        &mut doc,
        &mut settings,
    )?;
    let embedder = load_embedder(embedder_model.as_ref(), &rt, &mut doc, &mut settings)?;
    doc.metrics
        .insert("dataset_questions".into(), json!(questions.len()));
    set_scope(&mut doc, &scope, &missing);

    // The judge's calibration (before the run opens: its settings are part of the run's
    // identity; a resumed run takes its finished questions from the cache).
    let (memo, files) = match (&judge, &judge_ref) {
        (Some(judge), Some(model_ref)) => calibrate(
            &mut doc,
            &mut settings,
            &args,
            &questions,
            in_scope,
            labels.as_ref(),
            CalibrationJudge {
                judge,
                model_ref,
                rt: &rt,
                shots: &shots,
                cyclic,
            },
        )?,
        _ => (Memo::default(), Vec::new()),
    };

    // Everything that decides the results is known now: an unfinished run of the same
    // identity in --out is continued, its finished items kept as they are.
    let mut run = Run::<Story>::open(out, &mut doc, &settings)?;
    let scoring = Scoring {
        questions: &questions,
        generations: &generations,
        checked: &checked,
        letter: LetterPlan {
            shots: &shots,
            cyclic,
        },
        memo: &memo,
        human: &human,
    };
    score(&mut run, &scoring, judge.as_ref(), embedder.as_ref(), &args)?;
    let done = run.finish(&mut doc, files)?;
    if let Some(n) = args.label_sample {
        let sample = LabelSample {
            questions: &questions,
            scope: &scope,
            n,
            seed: out.seed,
        };
        write_label_sample(&out.out, &doc, &done.items, &generations, &sample)?;
    }
    done.print();
    Ok(())
}

/// The dataset's questions, the generations and their checks (unscored ones warned about).
fn read_inputs(args: &StoryFlags) -> Result<(Vec<Question>, Vec<Generation>, Vec<story::Checked>)> {
    let questions = story::parse_questions(&read_jsonl(&args.dataset.path)?)?;
    let generations = story::parse_generations(&read_jsonl(&args.generations)?)?;
    let checked = story::check(&questions, &generations);
    warn(story::checks::unscored_warnings(
        &args.generations.display().to_string(),
        &generations,
        &checked,
    ));
    Ok((questions, generations, checked))
}

/// Coverage: per group, the dataset questions of this run (its shard's) without an ending,
/// warned about, and refused with `--require-complete`.
fn coverage<'a>(
    args: &StoryFlags,
    scope: &[&'a str],
    checked: &[story::Checked],
    generations: &[Generation],
) -> Result<std::collections::BTreeMap<String, Vec<&'a str>>> {
    let missing = missing_in_scope(scope, checked, generations);
    warn(story::checks::missing_warnings(&missing, scope.len()));
    if args.require_complete {
        story::checks::require_complete(&missing, scope.len())?;
    }
    Ok(missing)
}

/// The models that run, resolved before any long work (so a missing one fails at once), and
/// the letter judge's flags checked against the judge.
struct Resolved {
    /// The judge (`--judge`), unless `--skip-judge`.
    judge_model: Option<ResolvedModel>,
    /// The embedder (`--embedder`), unless `--skip-embedder`.
    embedder_model: Option<ResolvedModel>,
    /// `--option-orders cyclic`.
    cyclic: bool,
    /// The demonstrations block (`--shots`).
    shots: String,
}

fn resolve_models(args: &StoryFlags, rt: &ModelRuntime) -> Result<Resolved> {
    let judge_model = args
        .judge
        .as_ref()
        .map(|j| rt.resolve(j, scorekit_runtime::judge::JUDGE_FILES))
        .transpose()?;
    let embedder_model = args
        .embedder
        .as_ref()
        .map(|e| rt.resolve_embedder(e))
        .transpose()?;
    let (cyclic, shots) = crate::commands::letter::letter_options(
        args.option_orders,
        &args.shots,
        judge_model
            .as_ref()
            .map(|m| scorekit_runtime::letter_judge::is_letter_judge(&m.dir)),
    )?;
    Ok(Resolved {
        judge_model,
        embedder_model,
        cyclic,
        shots,
    })
}

/// Score every unfinished item of `run` with the models that run, on one progress bar.
fn score(
    run: &mut Run<Story>,
    scoring: &Scoring,
    judge: Option<&AnyJudge>,
    embedder: Option<&Embedder>,
    args: &StoryFlags,
) -> Result<()> {
    let models = lent::models(judge, embedder.is_some());
    let plans = story::pipeline::plan(scoring, models, |row| run.is_finished(&row));
    let progress = bar(
        story::pipeline::work(&plans) as u64,
        "score",
        args.out.quiet,
    );
    let mut steps = Lent::new(
        judge,
        embedder,
        args.model.batch_tokens,
        Progress::Shared(&progress),
    );
    let finished: HashSet<usize> = scoring
        .generations
        .iter()
        .map(|g| g.row)
        .filter(|row| run.is_finished(row))
        .collect();
    story::pipeline::score(
        scoring,
        &plans,
        &mut steps,
        |row| finished.contains(&row),
        |item| run.append(item),
    )?;
    progress.finish_and_clear();
    Ok(())
}

/// The judge, loaded, with its model record (in `doc`) and settings.
fn load_judge(
    model: Option<&ResolvedModel>,
    rt: &ModelRuntime,
    args: &StoryFlags,
    cyclic: bool,
    doc: &mut MetricsDoc,
    settings: &mut StorySettings,
) -> Result<(Option<AnyJudge>, Option<ModelRef>)> {
    let Some(model) = model else {
        return Ok((None, None));
    };
    let judge = lent::load_judge(
        &model.dir,
        rt,
        args.model.max_length,
        args.follow_label.as_deref(),
    )?;
    let model_ref = model.model_ref()?;
    eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
    doc.models.push(model_ref.clone());
    lent::record_story_judge(settings, &judge, &model.spec, &args.shots, cyclic);
    Ok((Some(judge), Some(model_ref)))
}

/// The embedder, loaded, with its model record (in `doc`) and settings.
fn load_embedder(
    model: Option<&ResolvedModel>,
    rt: &ModelRuntime,
    doc: &mut MetricsDoc,
    settings: &mut StorySettings,
) -> Result<Option<Embedder>> {
    let Some(model) = model else {
        return Ok(None);
    };
    let (embedder, model_ref) = rt.load_embedder(model)?;
    doc.models.push(model_ref);
    settings.set_embedder(model.spec.clone(), embedder.engine().to_string());
    Ok(Some(embedder))
}

/// Files written beside the contract's (name, bytes).
type Files = Vec<(String, Vec<u8>)>;

/// The judge as the calibration needs it.
struct CalibrationJudge<'a> {
    judge: &'a AnyJudge,
    model_ref: &'a ModelRef,
    rt: &'a ModelRuntime,
    shots: &'a str,
    cyclic: bool,
}

/// The judge's calibration (before the run opens: its settings are part of the run's identity;
/// a resumed run takes its finished questions from the cache), unless `--no-calibration`
/// without labels: the memo of the positives the items reuse, and calibration.jsonl.
fn calibrate(
    doc: &mut MetricsDoc,
    settings: &mut StorySettings,
    args: &StoryFlags,
    questions: &[Question],
    in_scope: Vec<usize>,
    labels: Option<&LabelSet>,
    j: CalibrationJudge,
) -> Result<(Memo, Files)> {
    if !args.calibration.dataset && labels.is_none() {
        return Ok((Memo::default(), Vec::new()));
    }
    let identity = lent::judge_identity(
        j.judge,
        j.model_ref,
        j.rt,
        j.shots,
        j.cyclic,
        &doc.inputs[0].sha256,
    );
    let labels = labels.map(|set| (args.labels.as_slice(), set));
    let mut step = Lent::new(
        Some(j.judge),
        None,
        args.model.batch_tokens,
        Progress::PerCall {
            label: "calibrate",
            quiet: args.out.quiet,
        },
    );
    let protocol = lent::protocol(j.judge, j.shots, j.cyclic);
    let outcome = calibration::run(
        doc,
        questions,
        in_scope,
        labels,
        &args.calibration,
        protocol,
        identity,
        &mut step,
    )?;
    settings.calibration = Some(outcome.settings);
    outcome.summary.write(doc);
    // The positives asked what the items ask for the ceiling: they take it from here.
    let memo = Memo::of(&outcome.items, questions, protocol);
    let files = vec![(
        CALIBRATION_FILE.to_string(),
        scorekit_report::jsonl(&outcome.items)?,
    )];
    Ok((memo, files))
}

/// `--calibration-labels`, read and checked against the dataset and the generations (a label
/// naming a model must label that model's ending) and combined across labellers, before any
/// model loads (settings refuses them without a judge); with the labels that name
/// a model, by model and question (the PPI sample the items carry).
fn calibration_labels(
    args: &StoryFlags,
    questions: &[Question],
    generations: &[Generation],
    checked: &[story::Checked],
) -> Result<(Option<LabelSet>, HumanLabels)> {
    if args.labels.is_empty() {
        return Ok((None, HumanLabels::new()));
    }
    // The run's own sample, which labels carrying `sample` must be of (docs/story.md).
    let sample = args
        .label_sample
        .map(|n| labels::run_sample(generations, questions, checked, n, args.out.seed))
        .transpose()?;
    let check = Some((generations, checked, sample.as_ref()));
    let set = calibration::read_labels(&args.labels, questions, check)?;
    let human = label_set::by_model(&set.labels, questions);
    Ok((Some(set), human))
}

/// What `--label-sample N` draws from.
struct LabelSample<'a> {
    questions: &'a [Question],
    scope: &'a [&'a str],
    n: usize,
    seed: u64,
}

/// `--label-sample N`: to_label.jsonl in `out`, N questions of the run's scope drawn uniformly
/// and every model's judged ending to them, shuffled, `follows` null; and, from the run's
/// calibration in `doc`, how many labels would settle the judge.
fn write_label_sample(
    out: &std::path::Path,
    doc: &MetricsDoc,
    items: &[Item],
    generations: &[Generation],
    s: &LabelSample,
) -> Result<()> {
    let (text, drawn, endings) =
        labels::sample_file(items, generations, s.questions, s.scope, s.n, s.seed)?;
    let path = out.join("to_label.jsonl");
    scorekit_report::atomic_write(&path, &text)?;
    eprintln!(
        "to_label.jsonl: {endings} ending(s) to label, every model's on {drawn} question(s) drawn \
         uniformly of {}, {}",
        s.scope.len(),
        path.display()
    );
    // Its labelling page; an empty sample (no judged ending drawn) has none.
    if endings > 0 {
        let page = out.join("to_label.html");
        labels_page::write_page(&path, None, &page)?;
        eprintln!("to_label.html: its labelling page, {}", page.display());
    }
    if let Some((q0, q1)) = CalibrationSummary::read(doc)?.and_then(|c| c.rates()) {
        eprintln!(
            "{}",
            scorekit_report::ifsm_corrected::LabelsNeeded::of(q0, q1).sentence()
        );
    }
    Ok(())
}

/// Print the warnings a check returned, one per line.
fn warn(lines: Vec<String>) {
    for line in lines {
        eprintln!("{line}");
    }
}
