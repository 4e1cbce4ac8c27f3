//! `scorekit story`: Possible Stories endings scored with IFSM (MRC judge, with the judge's
//! ceiling beside it) and Dissimilarity (sentence embeddings), one result group per model.

use crate::cli::{OptionOrders, StoryArgs};
use crate::commands::calibration::{self, CalibrationFlags, JudgeStep};
use crate::commands::model_runtime::ModelRuntime;
use crate::commands::run_loop::{self, Run};
use crate::commands::suite;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_core::progress::bar;
use scorekit_io::read_jsonl;
use scorekit_report::{self as report, MetricsDoc, Outputs, RunSettings};
use scorekit_runtime::judge::{AnyJudge, Head};
use scorekit_suites::settings::StorySettings;
use scorekit_suites::story::{
    self, Checked, Counts, Coverage, Generation, GroupMetrics, Item, Outcome, PairValue, Question,
    Status,
};
use scorekit_suites::story_calibration::labels::{self, Label};
use scorekit_suites::story_calibration::memo::Memo;
use scorekit_suites::story_calibration::summary::{self, CalibrationSummary};
use scorekit_suites::story_calibration::CalibrationItem;
use scorekit_suites::story_plan::{story_chunks, ChunkPlan, LetterPlan, Models};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Run `scorekit story`.
pub fn run(mut args: StoryArgs) -> Result<()> {
    let dataset = run_loop::dataset(&args.dataset, args.model.offline, args.output.quiet)?;
    args.dataset = dataset.path.clone();
    let out = &args.output;
    let questions = story::parse_questions(&read_jsonl(&args.dataset)?)?;
    let generations = story::parse_generations(&read_jsonl(&args.generations)?)?;
    let checked = story::check(&questions, &generations);
    warn_unscored(
        &args.generations.display().to_string(),
        &generations,
        &checked,
    );

    let rt = ModelRuntime::new(&args.model, out.quiet)?;
    let mut doc = MetricsDoc::new("story");
    doc.add_input(&args.dataset)?;
    doc.add_input(&args.generations)?;
    doc.datasets.extend(dataset.dataset.map(|d| d.record()));
    // `--shard I/N` by story: Dissimilarity pairs endings of one story, so a story's
    // generations stay in one shard (a generation of an unknown question goes by its id).
    let shard = out.shard;
    let checked: Vec<Checked> = checked
        .into_iter()
        .filter(|c| {
            let g = &generations[c.generation];
            match c.question {
                Some(qi) => shard.contains(&questions[qi].passage_id),
                None => shard.contains(&g.question_id),
            }
        })
        .collect();
    let scored: Vec<&Checked> = checked
        .iter()
        .filter(|c| c.status == Status::Scored)
        .collect();
    // Coverage: per group, the dataset questions of this run (its shard's) without an ending.
    let scope: Vec<&str> = questions
        .iter()
        .filter(|q| shard.contains(&q.passage_id))
        .map(|q| q.id.as_str())
        .collect();
    let missing = missing_in_scope(&scope, &checked, &generations);
    warn_missing(&missing, scope.len());
    if args.require_complete {
        require_complete(&missing, scope.len())?;
    }
    let labels = calibration_labels(&args, &questions)?;

    // Resolve both models before any long work, so a missing one fails at once.
    let judge_model = if args.skip_judge {
        None
    } else {
        Some(rt.resolve(&args.judge, scorekit_runtime::judge::JUDGE_FILES)?)
    };
    let embedder_model = if args.skip_embedder {
        None
    } else {
        Some(rt.resolve_embedder(&args.embedder)?)
    };

    let cyclic = args.option_orders == OptionOrders::Cyclic;
    if cyclic
        && !judge_model
            .as_ref()
            .is_some_and(|m| scorekit_runtime::letter_judge::is_letter_judge(&m.dir))
    {
        return Err(Error::usage(
            "--option-orders cyclic: only a letter judge (T5) reads the options in an order; \
             a scoring judge scores each on its own",
        ));
    }
    let shots = match &judge_model {
        Some(model) => crate::commands::letter::shots_block(
            &args.shots,
            scorekit_runtime::letter_judge::is_letter_judge(&model.dir),
        )?,
        None if args.shots.shots > 0 => {
            return Err(Error::usage("--shots: no judge runs (--skip-judge)"))
        }
        None => String::new(),
    };
    let mut settings = StorySettings {
        device: rt.device_name(),
        quantize: rt.quantize_setting(),
        tf32: rt.tf32,
        ..StorySettings::default()
    };
    let mut judge_ref = None;
    let judge = match &judge_model {
        None => None,
        Some(model) => {
            let judge = AnyJudge::load(
                &model.dir,
                &rt.device,
                rt.dtype,
                args.model.max_length,
                args.follow_label.as_deref(),
                &rt.engine,
            )?;
            let model_ref = model.model_ref()?;
            eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
            judge_ref = Some(model_ref.clone());
            doc.models.push(model_ref);
            settings.judge = Some(args.judge.clone());
            settings.judge_arch = Some(judge.arch().to_string());
            settings.judge_engine = Some(judge.engine().to_string());
            match &judge {
                AnyJudge::Scoring(j) => {
                    settings.judge_head = Some(match j.head() {
                        Head::MultipleChoice => "multiple_choice".to_string(),
                        Head::Binary { labels, follow } => {
                            format!("binary, follow label {:?}", labels[*follow])
                        }
                    });
                    settings.judge_max_length = Some(j.max_length());
                    settings.judge_input = Some(
                        "(document, question + \" \" + option), longest-first truncation".into(),
                    );
                    settings.judge_ties = Some("lowest option index".into());
                }
                AnyJudge::Letter(_) => {
                    let p = crate::commands::letter::letter_protocol(&args.shots);
                    settings.judge_head = Some(StorySettings::LETTER_HEAD.into());
                    settings.judge_prompt = Some(p.prompt);
                    settings.judge_decoding = Some(p.decoding);
                    settings.judge_pick = Some(p.pick);
                    settings.judge_option_orders = cyclic.then(|| {
                        "cyclic: every rotation of the options, the majority reported apart (ifsm_cyclic, judge_accuracy_cyclic)".to_string()
                    });
                }
            }
            Some(judge)
        }
    };
    let embedder = match &embedder_model {
        None => None,
        Some(model) => {
            let (embedder, model_ref) = rt.load_embedder(model)?;
            doc.models.push(model_ref);
            settings.embedder = Some(args.embedder.clone());
            settings.embedder_engine = Some(embedder.engine().to_string());
            settings.dissimilarity =
                Some("1 - cos(e_i, e_j) over pairs of endings of the same story, per group".into());
            Some(embedder)
        }
    };
    doc.metrics
        .insert("dataset_questions".into(), json!(questions.len()));
    set_scope(&mut doc, &scope, &missing);

    // The judge's calibration (before the run opens: its settings are part of the run's
    // identity; a resumed run takes its finished questions from the cache).
    let mut files = Vec::new();
    let mut memo = Memo::default();
    let calibrates = !args.calibration.no_calibration || labels.is_some();
    if let (Some(judge), Some(model_ref), true) = (&judge, &judge_ref, calibrates) {
        let in_scope: Vec<usize> = (0..questions.len())
            .filter(|&i| shard.contains(&questions[i].passage_id))
            .collect();
        let identity = calibration::judge_identity(
            judge,
            model_ref,
            &rt,
            &shots,
            cyclic,
            &doc.inputs[0].sha256,
        );
        let flags = CalibrationFlags {
            dataset: !args.calibration.no_calibration,
            recalibrate: args.calibration.recalibrate,
            offline: args.model.offline,
        };
        let labels = args
            .calibration
            .calibration_labels
            .as_deref()
            .zip(labels.as_deref());
        let mut step = JudgeStep::new(judge, args.model.batch_tokens, out.quiet);
        let protocol = calibration::protocol(judge, &shots, cyclic);
        let outcome = calibration::run(
            &mut doc, &questions, in_scope, labels, &flags, protocol, identity, &mut step,
        )?;
        // The positives asked what the items ask for the ceiling: they take it from here.
        memo = Memo::of(&outcome.items, &questions, protocol);
        settings.calibration = Some(outcome.settings);
        outcome.summary.write(&mut doc);
        files.push((CALIBRATION_FILE.to_string(), summary::jsonl(&outcome.items)));
    }

    // Everything that decides the results is known now: an unfinished run of the same
    // identity in --out is continued, its finished items kept as they are.
    let mut run = Run::<suite::Story>::open(out, &mut doc, &settings)?;
    let is_done =
        |run: &Run<suite::Story>, c: &Checked| run.is_finished(&generations[c.generation].row);
    let item = |c: &Checked, verdict: Option<Outcome>, pairs: Option<&Vec<PairValue>>| {
        story_item(c, &questions, &generations, verdict, pairs)
    };

    // Unscored generations need no model; an empty ending is Not-Follow without the judge.
    for c in checked.iter().filter(|c| c.status != Status::Scored) {
        if is_done(&run, c) {
            continue;
        }
        let outcome =
            (c.status == Status::EmptyEnding && judge.is_some()).then_some(Outcome::EMPTY);
        run.append(item(c, outcome, None))?;
    }

    // Scored ones go through the models chunk by chunk (whole stories, fixed by the input
    // alone), each chunk's items appended as soon as it is done: a killed run loses at most the
    // chunk in flight, and a resumed run computes every chunk exactly as an uninterrupted one.
    let plans: Vec<ChunkPlan> = story_chunks(&questions, &scored)
        .into_iter()
        .filter(|chunk| chunk.iter().any(|c| !is_done(&run, c)))
        .map(|chunk| {
            let models = Models {
                scoring_judge: matches!(judge, Some(AnyJudge::Scoring(_))),
                letter_judge: matches!(judge, Some(AnyJudge::Letter(_))),
                embedder: embedder.is_some(),
            };
            let letter = LetterPlan {
                shots: &shots,
                cyclic,
            };
            ChunkPlan::new(chunk, &questions, &generations, models, letter)
        })
        .collect();
    let work: usize = plans.iter().map(ChunkPlan::work).sum();
    let progress = bar(work as u64, "score", out.quiet);
    let batch_tokens = args.model.batch_tokens;
    for plan in &plans {
        let verdicts = match &judge {
            Some(AnyJudge::Scoring(j)) => {
                let (scores, served) = memo.scores(&plan.judge_pairs, |pairs| {
                    j.score(pairs, batch_tokens, &progress)
                })?;
                progress.inc(served as u64);
                plan.scoring_verdicts(&questions, &scores)
            }
            Some(AnyJudge::Letter(j)) => {
                let (answers, served) = memo.answers(&plan.letter_prompts, |prompts| {
                    let answers = j.answer(prompts, batch_tokens, &progress)?;
                    Ok(answers.into_iter().map(|a| a.text).collect())
                })?;
                progress.inc(served as u64);
                let texts: Vec<&str> = answers.iter().map(String::as_str).collect();
                plan.letter_verdicts(&questions, &texts)
            }
            None => HashMap::new(),
        };
        let pairs = match &embedder {
            Some(e) => {
                let vectors = e.embed(&plan.texts, batch_tokens, &progress)?;
                plan.pairs(&questions, &generations, &vectors)
            }
            None => HashMap::new(),
        };
        for c in plan.members.iter() {
            if is_done(&run, c) {
                continue;
            }
            let verdict = verdicts.get(&c.generation).cloned().map(Outcome::Judged);
            run.append(item(c, verdict, pairs.get(&c.generation)))?;
        }
    }
    progress.finish_and_clear();
    let done = run.finish(&mut doc, files)?;
    if let Some(n) = args.label_sample {
        write_label_sample(&out.out, &done.items, &generations, n, out.seed)?;
    }
    done.print();
    Ok(())
}

/// calibration.jsonl: one line per calibration item of the run.
pub const CALIBRATION_FILE: &str = "calibration.jsonl";

/// `--calibration-labels`, read and checked against the dataset before any model loads (and
/// refused without a judge, like `--label-sample`).
fn calibration_labels(args: &StoryArgs, questions: &[Question]) -> Result<Option<Vec<Label>>> {
    if args.skip_judge {
        for (set, flag) in [
            (
                args.calibration.calibration_labels.is_some(),
                "--calibration-labels",
            ),
            (args.label_sample.is_some(), "--label-sample"),
            (args.calibration.recalibrate, "--recalibrate"),
        ] {
            if set {
                return Err(Error::usage(format!(
                    "{flag}: no judge runs (--skip-judge), so there is no verdict to calibrate"
                )));
            }
        }
    }
    args.calibration
        .calibration_labels
        .as_deref()
        .map(|p| calibration::read_labels(p, questions))
        .transpose()
}

/// `--label-sample N`: to_label.jsonl in `out`, N scored generations drawn at random stratified
/// by the judge's verdict, in the label file's format with `follows` null.
fn write_label_sample(
    out: &std::path::Path,
    items: &[Item],
    generations: &[Generation],
    n: usize,
    seed: u64,
) -> Result<()> {
    let by_row: HashMap<usize, &Generation> = generations.iter().map(|g| (g.row, g)).collect();
    let judged: Vec<(&Item, bool)> = items
        .iter()
        .filter(|i| i.status == Status::Scored)
        .filter_map(|i| {
            i.judge
                .as_ref()
                .and_then(Outcome::verdict)
                .map(|v| (i, v.follow))
        })
        .collect();
    let verdicts: Vec<bool> = judged.iter().map(|(_, f)| *f).collect();
    let mut text = Vec::new();
    for k in labels::stratified_sample(&verdicts, n, seed) {
        let item = judged[k].0;
        let g = by_row[&item.row];
        let line = labels::ToLabel {
            question_id: &g.question_id,
            ending: &g.ending,
            follows: None,
            model: g.model.as_deref(),
        };
        serde_json::to_writer(&mut text, &line).map_err(|e| Error::Internal(e.into()))?;
        text.push(b'\n');
    }
    let path = out.join("to_label.jsonl");
    let staged = out.join(".to_label.jsonl.partial");
    std::fs::write(&staged, &text)
        .and_then(|()| std::fs::rename(&staged, &path))
        .map_err(|e| Error::Internal(anyhow::anyhow!("cannot write {}: {e}", path.display())))?;
    eprintln!(
        "to_label.jsonl: {} generation(s) to label (of {} judged), {}",
        text.iter().filter(|&&b| b == b'\n').count(),
        judged.len(),
        path.display()
    );
    Ok(())
}

/// One line of items.jsonl for a checked generation and what the models said about it.
fn story_item(
    c: &Checked,
    questions: &[Question],
    generations: &[Generation],
    verdict: Option<Outcome>,
    pairs: Option<&Vec<PairValue>>,
) -> Item {
    let g = &generations[c.generation];
    let q = c.question.map(|i| &questions[i]);
    let mean = pairs
        .filter(|p| !p.is_empty())
        .map(|p| p.iter().map(|v| v.dissimilarity).sum::<f64>() / p.len() as f64);
    Item {
        row: g.row,
        line: g.line,
        question_id: g.question_id.clone(),
        passage_id: q.map(|q| q.passage_id.clone()),
        model: g.model.clone(),
        group: g.group().to_string(),
        status: c.status,
        duplicate_of_row: c.duplicate_of_row,
        gold_label: q.map(|q| q.gold),
        judge: verdict,
        dissimilarity_pairs: pairs.cloned(),
        dissimilarity_mean: mean,
    }
}

/// Metrics from items, the one place `scorekit story` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row), counts statuses and computes IFSM, the ceiling,
/// Dissimilarity and coverage per group with the bootstrap and seed of `doc.settings` (keeping
/// `dataset_questions` and the coverage scope from `doc.metrics`, and each group's
/// `missing_ids` from `doc.groups`: see [`set_scope`]), and renders the table and report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [Item]) -> Result<Outputs> {
    items.sort_by_key(|i| i.row);
    let RunSettings {
        bootstrap, seed, ..
    } = doc.run_settings()?;
    let settings: StorySettings = doc.suite_settings()?;
    let count = |key: &str| doc.metrics.get(key).and_then(Value::as_u64);
    let dataset_questions = count("dataset_questions").unwrap_or(0) as usize;
    let scope = count(SCOPE_QUESTIONS).map_or(dataset_questions, |n| n as usize);
    let scope_first = ids_of(doc.metrics.get(SCOPE_FIRST_IDS));
    let listed: BTreeMap<String, Vec<String>> = doc
        .groups
        .iter()
        .map(|(g, v)| (g.clone(), ids_of(v.get("missing_ids"))))
        .collect();
    let calibration = CalibrationSummary::read(doc)?;
    let mut results = story::summarize(items, bootstrap, seed);
    if let Some(c) = &calibration {
        for (m, _) in results.values_mut() {
            m.ifsm_corrected = c.correct(m.ifsm.as_ref(), false);
            m.ifsm_cyclic_corrected = c.correct(m.ifsm_cyclic.as_ref(), true);
        }
    }
    // A group the scope lists nothing for answered none of the scope's questions.
    let missing_ids: BTreeMap<String, Vec<String>> = results
        .keys()
        .map(|g| {
            let ids = listed
                .get(g)
                .cloned()
                .unwrap_or_else(|| scope_first.clone());
            (g.clone(), ids)
        })
        .collect();
    let coverage = story::coverage(items, scope, &missing_ids);
    doc.groups.clear();
    for (name, (m, c)) in &results {
        doc.groups
            .insert(name.to_string(), group_json(m, c, coverage.get(name)));
    }
    doc.metrics = headline(&results, &coverage, dataset_questions);
    doc.metrics.insert(SCOPE_QUESTIONS.into(), json!(scope));
    doc.metrics
        .insert(SCOPE_FIRST_IDS.into(), json!(scope_first));
    if let Some(c) = &calibration {
        c.write(doc);
    }
    let table = report::story::table(&results, &coverage);
    let letter = settings.letter_protocol();
    let report = report::story::report(doc, letter.as_ref(), &results, &coverage, &table);
    Ok(Outputs {
        report,
        table,
        files: story_files(&results),
    })
}

/// tables.tex and table.csv (the main table) and, when the judge ran, ifsm.svg.
fn story_files(
    results: &BTreeMap<String, (story::GroupMetrics, story::Counts)>,
) -> Vec<(String, Vec<u8>)> {
    let main = report::story::main_table(results);
    let mut files = report::table::table_files("Possible Stories table", &main);
    if let Some(svg) = report::story::ifsm_chart(results) {
        files.push(("ifsm.svg".to_string(), svg.into_bytes()));
    }
    files
}

/// One stderr line per kind of unscored generation, naming the first few by file:line.
fn warn_unscored(file: &str, generations: &[Generation], checked: &[Checked]) {
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in checked {
        let g = &generations[c.generation];
        let what = match c.status {
            Status::Scored => continue,
            Status::UnknownQuestion => "question_id not in the dataset",
            Status::Duplicate => "duplicate (model, question_id): the first one is scored",
            Status::EmptyEnding => "empty ending",
        };
        by.entry(what)
            .or_default()
            .push(format!("{file}:{}", g.line));
    }
    for (what, at) in by {
        let shown: Vec<&str> = at.iter().take(5).map(String::as_str).collect();
        eprintln!(
            "warning: {} generation(s) not scored, {what}: {}{} (status in items.jsonl)",
            at.len(),
            shown.join(", "),
            if at.len() > 5 { ", ..." } else { "" }
        );
    }
}

fn group_json(m: &GroupMetrics, c: &Counts, cov: Option<&Coverage>) -> Value {
    let mut v = serde_json::to_value(m).expect("metrics serialise");
    if let (Some(obj), Value::Object(counts)) = (v.as_object_mut(), json!(c)) {
        obj.extend(counts);
    }
    if let (Some(obj), Some(Value::Object(cov))) = (v.as_object_mut(), cov.map(|c| json!(c))) {
        obj.extend(cov);
    }
    v
}

/// metrics.json key: dataset questions of the run (the shard's with `--shard`).
const SCOPE_QUESTIONS: &str = "questions_in_scope";
/// metrics.json key: the first ids (sorted) of those questions, so that `merge` can list the
/// missing questions of a group that had no generation at all in some shard.
const SCOPE_FIRST_IDS: &str = "scope_first_ids";

fn ids_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Per group (every group with a generation in this run), the sorted missing question ids.
fn missing_in_scope<'a>(
    scope: &[&'a str],
    checked: &[Checked],
    generations: &[Generation],
) -> BTreeMap<String, Vec<&'a str>> {
    let groups: BTreeSet<&str> = checked
        .iter()
        .map(|c| generations[c.generation].group())
        .collect();
    let answers: Vec<(&str, &str)> = checked
        .iter()
        .filter(|c| c.status.answers())
        .map(|c| {
            let g = &generations[c.generation];
            (g.group(), g.question_id.as_str())
        })
        .collect();
    story::missing_questions(scope, &answers, &groups)
}

/// Record the coverage scope in `doc` for [`outputs`] (and, through metrics.json, for `merge`).
fn set_scope(doc: &mut MetricsDoc, scope: &[&str], missing: &BTreeMap<String, Vec<&str>>) {
    let mut sorted: Vec<&str> = scope.to_vec();
    sorted.sort_unstable();
    sorted.truncate(story::MISSING_IDS_LISTED);
    doc.metrics
        .insert(SCOPE_QUESTIONS.into(), json!(scope.len()));
    doc.metrics.insert(SCOPE_FIRST_IDS.into(), json!(sorted));
    for (g, ids) in missing {
        let first: Vec<&str> = ids
            .iter()
            .take(story::MISSING_IDS_LISTED)
            .copied()
            .collect();
        doc.groups
            .insert(g.clone(), json!({ "missing_ids": first }));
    }
}

/// `scorekit merge`: the parts' scopes (disjoint shards) together: their question counts add
/// up, and a group's first missing ids are the first of the union of each part's list (the
/// part's first scope ids where the group had no generation in that part).
pub fn combine_scopes(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) {
    let scope: u64 = parts
        .iter()
        .map(|p| {
            let n = |k: &str| p.metrics.get(k).and_then(Value::as_u64);
            n(SCOPE_QUESTIONS).or(n("dataset_questions")).unwrap_or(0)
        })
        .sum();
    let first = |ids: BTreeSet<String>| -> Vec<String> {
        ids.into_iter().take(story::MISSING_IDS_LISTED).collect()
    };
    let all_first: BTreeSet<String> = parts
        .iter()
        .flat_map(|p| ids_of(p.metrics.get(SCOPE_FIRST_IDS)))
        .collect();
    let groups: BTreeSet<&String> = parts.iter().flat_map(|p| p.groups.keys()).collect();
    let mut listed = Map::new();
    for g in groups {
        let ids: BTreeSet<String> = parts
            .iter()
            .flat_map(|p| match p.groups.get(g) {
                Some(v) => ids_of(v.get("missing_ids")),
                None => ids_of(p.metrics.get(SCOPE_FIRST_IDS)),
            })
            .collect();
        listed.insert(g.clone(), json!({ "missing_ids": first(ids) }));
    }
    doc.metrics.insert(SCOPE_QUESTIONS.into(), json!(scope));
    doc.metrics
        .insert(SCOPE_FIRST_IDS.into(), json!(first(all_first)));
    doc.groups = listed;
}

/// `scorekit merge`: the parts' calibration counts added up (their scopes are disjoint).
pub fn combine_calibrations(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) -> Result<()> {
    let mut total: Option<CalibrationSummary> = None;
    for part in parts {
        if let Some(c) = CalibrationSummary::read(part)? {
            match &mut total {
                Some(t) => t.add(&c),
                None => total = Some(c),
            }
        }
    }
    doc.metrics.remove(summary::METRICS_KEY);
    if let Some(t) = total {
        t.write(doc);
    }
    Ok(())
}

/// `scorekit merge`: the parts' calibration.jsonl in the single-run order (none when no part
/// has one).
pub fn merge_calibration_files(parts: &[std::path::PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut items: Vec<CalibrationItem> = Vec::new();
    let mut any = false;
    for dir in parts {
        let path = dir.join(CALIBRATION_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(InputError::file(&path, format!("cannot read: {e}")).into()),
        };
        any = true;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            items.push(serde_json::from_str(line).map_err(|e| {
                InputError::line(&path, i + 1, format!("not a calibration item: {e}"))
            })?);
        }
    }
    items.sort_by_key(CalibrationItem::order_key);
    Ok(if any {
        vec![(CALIBRATION_FILE.to_string(), summary::jsonl(&items))]
    } else {
        Vec::new()
    })
}

/// One stderr line per group with dataset questions that have no ending.
fn warn_missing(missing: &BTreeMap<String, Vec<&str>>, scope: usize) {
    for (g, ids) in missing.iter().filter(|(_, ids)| !ids.is_empty()) {
        eprintln!(
            "warning: model {g:?} has no ending for {} of {scope} dataset question(s): {} \
             (coverage in metrics.json; --require-complete makes this an error)",
            ids.len(),
            first_ids(ids)
        );
    }
}

/// `a, b, c, ...`: the first listed ids.
fn first_ids(ids: &[&str]) -> String {
    let n = story::MISSING_IDS_LISTED;
    let shown: Vec<&str> = ids.iter().take(n).copied().collect();
    format!(
        "{}{}",
        shown.join(", "),
        if ids.len() > n { ", ..." } else { "" }
    )
}

/// `--require-complete`: a group with a missing question is an error (exit 2).
fn require_complete(missing: &BTreeMap<String, Vec<&str>>, scope: usize) -> Result<()> {
    let gaps: Vec<String> = missing
        .iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(g, ids)| {
            format!(
                "model {g:?} has no ending for {} of {scope} dataset question(s): {}",
                ids.len(),
                first_ids(ids)
            )
        })
        .collect();
    if gaps.is_empty() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--require-complete: {}",
        gaps.join("; ")
    )))
}

/// Headline metrics: the only group's metrics and coverage when there is one, plus counts over
/// all groups.
fn headline(
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    coverage: &BTreeMap<String, Coverage>,
    dataset_questions: usize,
) -> Map<String, Value> {
    let mut total = Counts::default();
    for (_, c) in results.values() {
        total.generations += c.generations;
        total.scored += c.scored;
        total.unknown_question += c.unknown_question;
        total.duplicate += c.duplicate;
        total.empty_ending += c.empty_ending;
    }
    let mut m = Map::new();
    if results.len() == 1 {
        if let Some((name, (g, _))) = results.iter().next() {
            if let Value::Object(o) = serde_json::to_value(g).expect("metrics serialise") {
                m.extend(o);
            }
            if let Some(Value::Object(o)) = coverage.get(name).map(|c| json!(c)) {
                m.extend(o);
            }
        }
    }
    if let Value::Object(o) = json!(total) {
        m.extend(o);
    }
    m.insert("groups".into(), json!(results.len()));
    m.insert("dataset_questions".into(), json!(dataset_questions));
    m
}
