//! `scorekit story`: Possible Stories endings scored with IFSM (MRC judge, with the judge's
//! ceiling beside it) and Dissimilarity (sentence embeddings), one result group per model.

use crate::cli::StoryArgs;
use crate::error::{Error, Result};
use crate::input::read_jsonl;
use crate::progress::bar;
use crate::report::{jsonl, percent, Estimate, MetricsDoc, OutputDir, Outputs, Table};
use crate::runtime::judge::{Head, Judge};
use crate::runtime::load::ModelRuntime;
use crate::runtime::Embedder;
use crate::suites::story::{
    self, Checked, Generation, GroupMetrics, ItemResult, JudgeVerdict, PairValue, Question, Status,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Files a judge needs. Older RoBERTa checkpoints (the default judge among them) have no
/// tokenizer.json, only vocab.json + merges.txt.
pub const JUDGE_FILES: &[&str] = &[
    "config.json",
    "tokenizer.json|vocab.json",
    "tokenizer.json|merges.txt",
    "model.safetensors|pytorch_model.bin",
];

/// One line of items.jsonl (read back by `scorekit merge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoryItem {
    row: usize,
    line: usize,
    question_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    passage_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    group: String,
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duplicate_of_row: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gold_label: Option<usize>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    judge: Option<JudgeVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dissimilarity_pairs: Option<Vec<PairValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dissimilarity_mean: Option<f64>,
}

/// Counts of generations per status in one group.
#[derive(Debug, Default, Clone, Serialize)]
struct Counts {
    generations: usize,
    scored: usize,
    unknown_question: usize,
    duplicate: usize,
    empty_ending: usize,
}

impl Counts {
    fn add(&mut self, s: Status) {
        self.generations += 1;
        match s {
            Status::Scored => self.scored += 1,
            Status::UnknownQuestion => self.unknown_question += 1,
            Status::Duplicate => self.duplicate += 1,
            Status::EmptyEnding => self.empty_ending += 1,
        }
    }
}

/// Run `scorekit story`.
pub fn run(args: StoryArgs) -> Result<()> {
    if args.skip_judge && args.skip_embedder {
        return Err(Error::usage(
            "--skip-judge and --skip-embedder together leave nothing to score",
        ));
    }
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

    // Resolve both models before any long work, so a missing one fails at once.
    let judge_model = if args.skip_judge {
        None
    } else {
        Some(rt.resolve(&args.judge, JUDGE_FILES)?)
    };
    let embedder_model = if args.skip_embedder {
        None
    } else {
        Some(rt.resolve_embedder(&args.embedder)?)
    };

    let mut settings = Map::new();
    let mut verdicts: HashMap<usize, JudgeVerdict> = HashMap::new();
    if let Some(model) = &judge_model {
        let judge = Judge::load(
            &model.dir,
            &rt.device,
            rt.dtype,
            args.model.max_length,
            args.follow_label.as_deref(),
        )?;
        let model_ref = model.model_ref()?;
        eprintln!("judge: {} @ {}", model_ref.id, model_ref.revision);
        doc.models.push(model_ref);
        settings.insert("judge".into(), json!(args.judge));
        settings.insert("judge_arch".into(), json!(format!("{:?}", judge.arch())));
        settings.insert(
            "judge_head".into(),
            match judge.head() {
                Head::MultipleChoice => json!("multiple_choice"),
                Head::Binary { labels, follow } => {
                    json!(format!("binary, follow label {:?}", labels[*follow]))
                }
            },
        );
        settings.insert("judge_max_length".into(), json!(judge.max_length()));
        settings.insert(
            "judge_input".into(),
            json!("(document, question + \" \" + option), longest-first truncation"),
        );
        settings.insert("judge_ties".into(), json!("lowest option index"));
        verdicts = judge_all(
            &judge,
            &questions,
            &generations,
            &scored,
            args.model.batch_tokens,
            out.quiet,
        )?;
    }

    let mut pairs: HashMap<usize, Vec<PairValue>> = HashMap::new();
    if let Some(model) = &embedder_model {
        let (embedder, model_ref) = rt.load_embedder(model)?;
        doc.models.push(model_ref);
        settings.insert("embedder".into(), json!(args.embedder));
        settings.insert(
            "dissimilarity".into(),
            json!("1 - cos(e_i, e_j) over pairs of endings of the same story, per group"),
        );
        pairs = pairs_all(
            &embedder,
            &questions,
            &generations,
            &scored,
            args.model.batch_tokens,
            out.quiet,
        )?;
    }
    settings.insert("bootstrap".into(), json!(out.bootstrap));
    settings.insert("seed".into(), json!(out.seed));
    doc.settings = settings;
    doc.set_shard(shard);

    let mut items: Vec<StoryItem> = checked
        .iter()
        .map(|c| {
            let g = &generations[c.generation];
            let q = c.question.map(|i| &questions[i]);
            let item_pairs = pairs.get(&c.generation).cloned();
            let mean = item_pairs
                .as_ref()
                .filter(|p| !p.is_empty())
                .map(|p| p.iter().map(|v| v.dissimilarity).sum::<f64>() / p.len() as f64);
            StoryItem {
                row: g.row,
                line: g.line,
                question_id: g.question_id.clone(),
                passage_id: q.map(|q| q.passage_id.clone()),
                model: g.model.clone(),
                group: g.group().to_string(),
                status: c.status,
                duplicate_of_row: c.duplicate_of_row,
                gold_label: q.map(|q| q.gold),
                judge: verdicts.get(&c.generation).cloned(),
                dissimilarity_pairs: item_pairs,
                dissimilarity_mean: mean,
            }
        })
        .collect();
    doc.metrics
        .insert("dataset_questions".into(), json!(questions.len()));
    let outputs = outputs(&mut doc, &mut items)?;
    // The models' work is redone by a rerun: resuming an unfinished run is a rerun.
    let (dir, _) = OutputDir::resume(&out.out, out.force, &doc.identity())?;
    let metrics_json = doc.to_json();
    dir.finish(&jsonl(&items)?, &outputs, &metrics_json)?;
    dir.print_summary(out.json, &metrics_json, &outputs.table);
    Ok(())
}

/// Metrics from items, the one place `scorekit story` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row), counts statuses and computes IFSM, the ceiling and
/// Dissimilarity per group with the bootstrap and seed of `doc.settings` (keeping
/// `dataset_questions` from `doc.metrics`), and renders the table and report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [StoryItem]) -> Result<Outputs> {
    items.sort_by_key(|i| i.row);
    let bootstrap = doc.setting_u64("bootstrap")? as usize;
    let seed = doc.setting_u64("seed")?;
    let dataset_questions = doc
        .metrics
        .get("dataset_questions")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let mut group_items: BTreeMap<&str, Vec<ItemResult>> = BTreeMap::new();
    let mut counts: BTreeMap<&str, Counts> = BTreeMap::new();
    for it in items.iter() {
        counts.entry(&it.group).or_default().add(it.status);
        if let (Status::Scored, Some(p)) = (it.status, &it.passage_id) {
            group_items.entry(&it.group).or_default().push(ItemResult {
                passage_id: p,
                question_id: &it.question_id,
                judge: it.judge.as_ref(),
                pairs: it.dissimilarity_pairs.as_deref(),
            });
        }
    }
    let mut results: BTreeMap<&str, (GroupMetrics, Counts)> = BTreeMap::new();
    for (name, c) in &counts {
        let items = group_items.get(name).map(Vec::as_slice).unwrap_or(&[]);
        let m = story::group_metrics(items, bootstrap, seed);
        results.insert(name, (m, c.clone()));
    }
    doc.groups.clear();
    for (name, (m, c)) in &results {
        doc.groups.insert(name.to_string(), group_json(m, c));
    }
    doc.metrics = headline(&results, dataset_questions);
    let table = render_table(&results);
    let report = render_report(doc, &results, &table);
    Ok(Outputs {
        report,
        table,
        files: Vec::new(),
    })
}

/// Score the human options of every question with a scored generation and every scored ending,
/// then turn them into verdicts. Identical (question, option text) pairs are scored once, so an
/// ending equal to the gold option gets exactly the gold option's score.
fn judge_all(
    judge: &Judge,
    questions: &[Question],
    generations: &[Generation],
    scored: &[&Checked],
    batch_tokens: usize,
    quiet: bool,
) -> Result<HashMap<usize, JudgeVerdict>> {
    let mut index: HashMap<(usize, String), usize> = HashMap::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut slot = |qi: usize, text: &str| -> usize {
        *index.entry((qi, text.to_string())).or_insert_with(|| {
            pairs.push(questions[qi].pair(text));
            pairs.len() - 1
        })
    };
    let mut plan: Vec<(usize, usize, Vec<usize>, usize)> = Vec::new();
    for c in scored {
        let qi = c.question.expect("scored items have a question");
        let q = &questions[qi];
        let gold: Vec<usize> = q.options.iter().map(|o| slot(qi, o)).collect();
        let ending = slot(qi, &generations[c.generation].ending);
        plan.push((c.generation, qi, gold, ending));
    }
    let progress = bar(pairs.len() as u64, "judge", quiet);
    let scores = judge.score(&pairs, batch_tokens, &progress)?;
    progress.finish_and_clear();
    Ok(plan
        .into_iter()
        .map(|(gi, qi, gold, ending)| {
            let gold_scores: Vec<f32> = gold.iter().map(|&i| scores[i]).collect();
            let v = story::judge_verdict(&gold_scores, questions[qi].gold, scores[ending]);
            (gi, v)
        })
        .collect())
}

/// Embed every scored ending once and compute the pairs within each story, per group.
fn pairs_all(
    embedder: &Embedder,
    questions: &[Question],
    generations: &[Generation],
    scored: &[&Checked],
    batch_tokens: usize,
    quiet: bool,
) -> Result<HashMap<usize, Vec<PairValue>>> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut texts: Vec<String> = Vec::new();
    let row_of: Vec<usize> = scored
        .iter()
        .map(|c| {
            let e = generations[c.generation].ending.as_str();
            *index.entry(e).or_insert_with(|| {
                texts.push(e.to_string());
                texts.len() - 1
            })
        })
        .collect();
    let progress = bar(texts.len() as u64, "embed", quiet);
    let vectors = embedder.embed(&texts, batch_tokens, &progress)?;
    progress.finish_and_clear();
    let mut by_group: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (k, c) in scored.iter().enumerate() {
        by_group
            .entry(generations[c.generation].group())
            .or_default()
            .push(k);
    }
    let mut out = HashMap::new();
    for members in by_group.values() {
        let items: Vec<(&str, &str, &[f32])> = members
            .iter()
            .map(|&k| {
                let q = &questions[scored[k].question.expect("scored")];
                (
                    q.passage_id.as_str(),
                    q.id.as_str(),
                    vectors[row_of[k]].as_slice(),
                )
            })
            .collect();
        for (&k, p) in members.iter().zip(story::story_pairs(&items)) {
            out.insert(scored[k].generation, p);
        }
    }
    Ok(out)
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

fn group_json(m: &GroupMetrics, c: &Counts) -> Value {
    let mut v = serde_json::to_value(m).expect("metrics serialise");
    if let (Some(obj), Value::Object(counts)) = (v.as_object_mut(), json!(c)) {
        obj.extend(counts);
    }
    v
}

/// Headline metrics: the only group's metrics when there is one, plus counts over all groups.
fn headline(
    results: &BTreeMap<&str, (GroupMetrics, Counts)>,
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
        if let Some((_, (g, _))) = results.iter().next() {
            if let Value::Object(o) = serde_json::to_value(g).expect("metrics serialise") {
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

fn est(e: &Option<Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{} [{}, {}]",
            percent(e.value),
            percent(e.ci_low),
            percent(e.ci_high)
        ),
        None => "-".into(),
    }
}

fn dis(e: &Option<Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{:.4} [{:.4}, {:.4}] n={}",
            e.value, e.ci_low, e.ci_high, e.n
        ),
        None => "-".into(),
    }
}

fn render_table(results: &BTreeMap<&str, (GroupMetrics, Counts)>) -> String {
    let mut t = Table::new(&[
        "model",
        "scored",
        "not scored",
        "IFSM %",
        "judge acc. %",
        "judge consist. %",
        "chance %",
        "Dissim. micro (pairs)",
        "Dissim. macro (stories)",
    ]);
    for (name, (m, c)) in results {
        t.row(&[
            name.to_string(),
            c.scored.to_string(),
            (c.generations - c.scored).to_string(),
            est(&m.ifsm),
            est(&m.judge_accuracy),
            est(&m.judge_consistency),
            m.chance.map(percent).unwrap_or_else(|| "-".into()),
            dis(&m.dissimilarity_micro),
            dis(&m.dissimilarity_macro),
        ]);
    }
    t.render()
}

fn render_report(
    doc: &MetricsDoc,
    results: &BTreeMap<&str, (GroupMetrics, Counts)>,
    table: &str,
) -> String {
    let mut s = String::from("# Possible Stories: IFSM and Dissimilarity\n\n");
    s.push_str(table);
    s.push_str(
        "\nIFSM: share of generated endings the judge picks when the ending replaces the gold \
         option. Judge acc. / consist.: the judge on the human options of the same questions \
         (its ceiling; consistency = stories with every question right). Intervals: 95% \
         bootstrap.\n\n## Models\n\n",
    );
    for m in &doc.models {
        s.push_str(&format!(
            "- {} @ {} (sha256 {})\n",
            m.id, m.revision, m.sha256
        ));
    }
    let unscored: usize = results
        .values()
        .map(|(_, c)| c.generations - c.scored)
        .sum();
    if unscored > 0 {
        s.push_str(&format!(
            "\n{unscored} generation(s) were not scored (unknown question, duplicate or empty \
             ending); each is listed in items.jsonl with its status.\n"
        ));
    }
    s
}
