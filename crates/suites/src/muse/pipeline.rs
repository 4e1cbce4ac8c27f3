//! A MuSE run from files to results: read the queries, the gold flow, the aliases, the plans and
//! the optional output verdicts; match unknown task names by embeddings when an embedder is
//! given; score every query of the shard; record the settings; and finish the run.

use super::{
    parse_flow, parse_plan, parse_queries, score_query, semantic, AliasTable, FlowItem, Plan,
    PlanFormat, Query, REVIEWED_FLOW,
};
use crate::models::LentModels;
use crate::muse::suite::Muse;
use crate::run::{Done, Run};
use crate::settings::MuseSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::{read_jsonl, read_text};
use scorekit_report::{MetricsDoc, ModelRef, RunOptions};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files a MuSE run reads and how it reads the plans (the command's flags, resolved).
#[derive(Debug, Clone)]
pub struct Input {
    /// queries.json (the benchmark's queries).
    pub queries: PathBuf,
    /// The planner's plans, one JSON line per query.
    pub plans: PathBuf,
    /// A gold flow annotation instead of the reviewed one built in.
    pub flow: Option<PathBuf>,
    /// Aliases that extend the shipped alias table.
    pub aliases: Option<PathBuf>,
    /// `{"idx", "output_ok"}` lines deciding Final Output instead of the modality rule.
    pub output_verdicts: Option<PathBuf>,
    /// The plans' format; None reads it from each plan.
    pub plan_format: Option<PlanFormat>,
    /// `--plan-format` as given (recorded in the settings).
    pub plan_format_name: String,
}

/// The inputs read and checked: everything scoring needs, before any model is loaded or
/// `--out` is touched.
pub struct Read {
    queries: Vec<Query>,
    flow: BTreeMap<i64, FlowItem>,
    flow_source: String,
    aliases: AliasTable,
    plans: BTreeMap<i64, Plan>,
    verdicts: Option<BTreeMap<i64, bool>>,
}

/// The embedder that matches task names the alias table cannot map (`--embedder`), as the
/// binary loaded it: the suites crate never sees the model, only its embed step.
pub struct NameEmbedder<'a> {
    /// `--embedder` as given.
    pub spec: String,
    /// The model, recorded in metrics.json.
    pub model: ModelRef,
    /// Its float type, recorded in semantic_descriptions.json.
    pub dtype: String,
    /// The quantisation setting, if any.
    pub quantize: Option<String>,
    /// Whether TF32 products were allowed.
    pub tf32: bool,
    /// The embedder, lent.
    pub lent: &'a mut dyn LentModels,
}

/// Read and check every input file (any bad line stops the run here).
pub fn read(inputs: &Input) -> Result<Read> {
    let qfile = read_text(&inputs.queries)?;
    let queries = parse_queries(&qfile.name(), &qfile.text)?;
    let (flow, flow_source) = match &inputs.flow {
        Some(p) => {
            let f = read_text(p)?;
            (
                parse_flow(&f.name(), &f.text, &queries)?,
                p.display().to_string(),
            )
        }
        None => {
            let digest = scorekit_report::sha256_hex(REVIEWED_FLOW.as_bytes());
            let name = "data/muse/flow.reviewed.json (built in)";
            (
                parse_flow(name, REVIEWED_FLOW, &queries)?,
                format!("{name}, sha256 {digest}"),
            )
        }
    };
    let mut aliases = AliasTable::shipped();
    if let Some(p) = &inputs.aliases {
        let f = read_text(p)?;
        aliases.extend_from_str(&f.name(), &f.text)?;
    }
    let known: BTreeMap<i64, ()> = queries.iter().map(|q| (q.idx, ())).collect();
    let plans = read_plans(&inputs.plans, inputs.plan_format, &known)?;
    let verdicts = match &inputs.output_verdicts {
        Some(p) => Some(read_verdicts(p, &known)?),
        None => None,
    };
    Ok(Read {
        queries,
        flow,
        flow_source,
        aliases,
        plans,
        verdicts,
    })
}

/// Names matched by the embedder, and what the run records of the match.
struct Matched {
    by_name: BTreeMap<String, semantic::NameMatch>,
    file: Vec<u8>,
    thresholds: semantic::Thresholds,
}

/// Match the names the alias table cannot map, and add the accepted matches to it.
fn match_names(read: &mut Read, embedder: &mut NameEmbedder) -> Result<Matched> {
    let names = semantic::unknown_names(read.plans.values(), &read.aliases);
    let thresholds = semantic::DEFAULT_THRESHOLDS;
    let lent = &mut embedder.lent;
    let (matches, desc_vecs) =
        semantic::match_names(&names, thresholds, &mut |t: &[String]| lent.embed(t))?;
    semantic::apply(&mut read.aliases, &matches);
    let file = semantic::descriptions_file(&json!(embedder.model), &embedder.dtype, &desc_vecs);
    let by_name = matches.into_iter().map(|m| (m.name.clone(), m)).collect();
    Ok(Matched {
        by_name,
        file,
        thresholds,
    })
}

/// Score every query of the run's shard and finish the run in `out` (an unfinished run of the
/// same identity there is continued). `doc` holds the dataset record; the inputs and settings
/// are added here.
pub fn run(
    inputs: &Input,
    mut read: Read,
    mut embedder: Option<NameEmbedder>,
    mut doc: MetricsDoc,
    out: &RunOptions,
) -> Result<Done<Muse>> {
    let matched = match &mut embedder {
        Some(e) => Some(match_names(&mut read, e)?),
        None => None,
    };
    doc.add_input(&inputs.queries)?;
    doc.add_input(&inputs.plans)?;
    for p in [&inputs.flow, &inputs.aliases, &inputs.output_verdicts]
        .into_iter()
        .flatten()
    {
        doc.add_input(p)?;
    }
    if let Some(e) = &embedder {
        doc.models.push(e.model.clone());
    }
    let settings = settings(inputs, &read, embedder.as_ref().zip(matched.as_ref()));
    let mut run = Run::<Muse>::open(out, &mut doc, &settings)?;
    // Scoring takes well under a second: an unfinished run's missing items are scored again.
    run.extend(
        read.queries
            .iter()
            .filter(|q| out.shard.contains(&q.idx.to_string()))
            .map(|q| {
                let verdict = read.verdicts.as_ref().map(|v| v.get(&q.idx).copied());
                let mut item = score_query(
                    q,
                    read.flow.get(&q.idx),
                    read.plans.get(&q.idx),
                    &read.aliases,
                    verdict,
                );
                if let Some(m) = &matched {
                    semantic::annotate(&mut item, &m.by_name);
                }
                item
            })
            .collect(),
    );
    let files = match matched {
        Some(m) => vec![("semantic_descriptions.json".into(), m.file)],
        None => Vec::new(),
    };
    run.finish(&mut doc, files)
}

/// The settings a MuSE run records (they are part of its identity).
fn settings(
    inputs: &Input,
    read: &Read,
    matching: Option<(&NameEmbedder, &Matched)>,
) -> MuseSettings {
    MuseSettings {
        plan_format: inputs.plan_format_name.clone(),
        flow: read.flow_source.clone(),
        aliases: match &inputs.aliases {
            Some(p) => format!("shipped table extended by {}", p.display()),
            None => "shipped table".into(),
        },
        final_output: if read.verdicts.is_some() {
            "verdicts from --output-verdicts (o_rule kept in items.jsonl)"
        } else {
            "modality rule: all gold tasks predicted and the final output has the requested modality"
        }
        .into(),
        output_verdicts: inputs
            .output_verdicts
            .as_ref()
            .map(|p| p.display().to_string()),
        name_mapping: "lenient: a coarse name counts as the gold task it can stand for".into(),
        quantize: matching.and_then(|(e, _)| e.quantize.clone()),
        tf32: matching.is_some_and(|(e, _)| e.tf32),
        embedder_thresholds: matching.map(|(_, m)| m.thresholds),
        embedder_descriptions: matching.map(|_| {
            format!(
                "data/muse/task_descriptions.json (built in), sha256 {}",
                semantic::descriptions_sha256()
            )
        }),
        embedder_rule: matching.map(|_| {
            "a name neither MuSE's nor in the alias table is matched to the task whose \
             description is most similar (cosine, max over its descriptions), when \
             similarity >= min_similarity and best - runner-up >= margin; listed in the \
             report for confirmation"
                .to_string()
        }),
        embedder: matching.map(|(e, _)| e.spec.clone()),
    }
}

/// The warnings a finished run prints: queries without a plan, plans that did not parse.
pub fn warnings(items: &[super::Item], plans: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let missing = items.iter().filter(|i| i.missing_plan).count();
    if missing > 0 {
        lines.push(format!(
            "warning: {missing} quer(ies) have no plan in {} and score 0 (missing_plan in items.jsonl)",
            plans.display()
        ));
    }
    let errors: Vec<String> = items
        .iter()
        .filter(|i| i.plan_error.is_some())
        .filter_map(|i| i.plan_line.map(|l| format!("{}:{l}", plans.display())))
        .collect();
    if !errors.is_empty() {
        let shown: Vec<&str> = errors.iter().take(5).map(String::as_str).collect();
        lines.push(format!(
            "warning: {} plan(s) could not be read as a plan and score 0: {}{} (plan_error in items.jsonl)",
            errors.len(),
            shown.join(", "),
            if errors.len() > 5 { ", ..." } else { "" }
        ));
    }
    lines
}

/// Plans keyed by idx; an idx not in the queries, or given twice, is an input error.
fn read_plans(
    path: &Path,
    format: Option<PlanFormat>,
    known: &BTreeMap<i64, ()>,
) -> Result<BTreeMap<i64, Plan>> {
    let mut plans: BTreeMap<i64, Plan> = BTreeMap::new();
    for rec in read_jsonl(path)? {
        let plan = parse_plan(&rec, format)?;
        if !known.contains_key(&plan.idx) {
            return Err(rec
                .field_error("idx", format!("no query with idx {}", plan.idx))
                .into());
        }
        if let Some(first) = plans.get(&plan.idx) {
            return Err(rec
                .field_error(
                    "idx",
                    format!(
                        "a second plan for idx {} (the first is on line {})",
                        plan.idx, first.line
                    ),
                )
                .into());
        }
        plans.insert(plan.idx, plan);
    }
    Ok(plans)
}

/// `{"idx", "output_ok": bool}` per line.
fn read_verdicts(path: &Path, known: &BTreeMap<i64, ()>) -> Result<BTreeMap<i64, bool>> {
    let mut out = BTreeMap::new();
    for rec in read_jsonl(path)? {
        let idx = rec.i64("idx")?;
        let ok = rec.bool("output_ok")?;
        if !known.contains_key(&idx) {
            return Err(rec
                .field_error("idx", format!("no query with idx {idx}"))
                .into());
        }
        if out.insert(idx, ok).is_some() {
            return Err(Error::Input(InputError::field(
                &*rec.file,
                rec.line,
                "idx",
                format!("a second verdict for idx {idx}"),
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_core::shard::Shard;

    /// The real MuSE queries and the HuggingGPT plans of the integration fixtures, scored by the
    /// pipeline alone (no binary, no model): the numbers `scorekit muse` reports.
    #[test]
    fn scores_hugginggpt_plans_on_the_real_queries() {
        let queries = scorekit_data::testdata::file("muse:queries", "MuSE_Benchmark/queries.json");
        let plans =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/muse/hugginggpt.jsonl");
        let inputs = Input {
            queries,
            plans: plans.clone(),
            flow: None,
            aliases: None,
            output_verdicts: None,
            plan_format: Some(PlanFormat::Hugginggpt),
            plan_format_name: "hugginggpt".into(),
        };
        let dir = tempfile::tempdir().unwrap();
        let out = RunOptions {
            out: dir.path().join("out"),
            force: false,
            json: false,
            quiet: true,
            bootstrap: 0,
            seed: 0,
            shard: Shard::ALL,
        };
        let read = read(&inputs).unwrap();
        let done = run(&inputs, read, None, MetricsDoc::new("muse"), &out).unwrap();
        assert_eq!(done.items.len(), 100);
        let m: serde_json::Value = serde_json::from_str(&done.metrics_json).unwrap();
        assert_eq!(m["metrics"]["n_missing_plans"], json!(93));
        assert_eq!(m["metrics"]["n_over_selected"], json!(1));
        assert_eq!(m["metrics"]["plan_formats"], json!({"hugginggpt": 7}));
        assert_eq!(m["settings"]["plan_format"], json!("hugginggpt"));
        let idx41 = done.items.iter().find(|i| i.idx == 41).unwrap();
        assert_eq!(idx41.unknown_names, ["zero-shot-classification"]);
        let warnings = warnings(&done.items, &plans);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("warning: 93 quer(ies) have no plan in "));
        assert!(out.out.join("metrics.json").is_file());
    }
}
