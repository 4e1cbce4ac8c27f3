//! `scorekit muse`: read queries, the gold flow, aliases and plans; score each query with the
//! MuSE suite; write items.jsonl, metrics.json and report.md.

use crate::cli::{MuseArgs, PlanFormat as CliFormat};
use crate::commands::model_runtime::{quantize_setting, ModelRuntime};
use crate::commands::suite;
use crate::settings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_io::{read_jsonl, read_text};
use scorekit_report::{self as report, MetricsDoc, Outputs};
use scorekit_suites::muse::{
    self, parse_flow, parse_plan, parse_queries, score_query, semantic, AliasTable, Plan,
    PlanFormat, REVIEWED_FLOW,
};
use scorekit_suites::settings::MuseSettings;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// Run `scorekit muse`.
pub fn run(mut args: MuseArgs) -> Result<()> {
    // `--queries muse` names pinned upstream data (scorekit data).
    let dataset = settings::dataset(&args.queries, args.model.offline, args.output.quiet)?;
    args.queries = dataset.path.clone();
    let qfile = read_text(&args.queries)?;
    let queries = parse_queries(&qfile.name(), &qfile.text)?;
    let (flow, flow_source) = match &args.flow {
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
    if let Some(p) = &args.aliases {
        let f = read_text(p)?;
        aliases.extend_from_str(&f.name(), &f.text)?;
    }
    let format = match args.plan_format {
        CliFormat::Auto => None,
        CliFormat::Hugginggpt => Some(PlanFormat::Hugginggpt),
        CliFormat::Controlllm => Some(PlanFormat::Controlllm),
        CliFormat::Scorekit => Some(PlanFormat::Scorekit),
        CliFormat::Pddl => Some(PlanFormat::Pddl),
    };
    let known: BTreeMap<i64, ()> = queries.iter().map(|q| (q.idx, ())).collect();
    let plans = read_plans(&args.plans, format, &known)?;
    // --embedder: names the alias table cannot map are matched to MuSE tasks by embeddings;
    // accepted matches join the alias table before scoring.
    let mut matched = None;
    if let Some(spec) = &args.embedder {
        let rt = ModelRuntime::new(&args.model, args.output.quiet)?;
        let (embedder, model_ref) = rt.embedder(spec)?;
        let names = semantic::unknown_names(plans.values(), &aliases);
        let th = semantic::DEFAULT_THRESHOLDS;
        let (matches, desc_vecs) = semantic::match_names(&names, th, &mut |t: &[String]| {
            rt.embed(&embedder, t, "names")
        })?;
        semantic::apply(&mut aliases, &matches);
        let dtype = format!("{:?}", rt.dtype).to_lowercase();
        let file = semantic::descriptions_file(&json!(model_ref), &dtype, &desc_vecs);
        let by_name: BTreeMap<String, semantic::NameMatch> =
            matches.into_iter().map(|m| (m.name.clone(), m)).collect();
        matched = Some((model_ref, by_name, file, th));
    }
    let verdicts = match &args.output_verdicts {
        Some(p) => Some(read_verdicts(p, &known)?),
        None => None,
    };

    let out = &settings::run_options(&args.output);
    let mut doc = MetricsDoc::new("muse");
    doc.add_input(&args.queries)?;
    doc.add_input(&args.plans)?;
    doc.datasets.extend(dataset.dataset.map(|d| d.record()));
    for p in [&args.flow, &args.aliases, &args.output_verdicts]
        .into_iter()
        .flatten()
    {
        doc.add_input(p)?;
    }
    let embedder = match (&args.embedder, &matched) {
        (Some(spec), Some((model_ref, _, _, th))) => {
            doc.models.push(model_ref.clone());
            Some((spec.clone(), *th))
        }
        _ => None,
    };
    let settings = MuseSettings {
        plan_format: format!("{:?}", args.plan_format).to_lowercase(),
        flow: flow_source,
        aliases: match &args.aliases {
            Some(p) => format!("shipped table extended by {}", p.display()),
            None => "shipped table".into(),
        },
        final_output: if verdicts.is_some() {
            "verdicts from --output-verdicts (o_rule kept in items.jsonl)"
        } else {
            "modality rule: all gold tasks predicted and the final output has the requested modality"
        }
        .into(),
        output_verdicts: args.output_verdicts.as_ref().map(|p| p.display().to_string()),
        name_mapping: "lenient: a coarse name counts as the gold task it can stand for".into(),
        quantize: embedder
            .as_ref()
            .and_then(|_| quantize_setting(args.model.quantize)),
        tf32: embedder.is_some() && args.model.tf32,
        embedder_thresholds: embedder.as_ref().map(|(_, th)| *th),
        embedder_descriptions: embedder.as_ref().map(|_| {
            format!(
                "data/muse/task_descriptions.json (built in), sha256 {}",
                semantic::descriptions_sha256()
            )
        }),
        embedder_rule: embedder.as_ref().map(|_| {
            "a name neither MuSE's nor in the alias table is matched to the task whose \
             description is most similar (cosine, max over its descriptions), when \
             similarity >= min_similarity and best - runner-up >= margin; listed in the \
             report for confirmation"
                .to_string()
        }),
        embedder: embedder.map(|(spec, _)| spec),
    };
    let mut run = scorekit_suites::run::Run::<suite::Muse>::open(out, &mut doc, &settings)?;
    // Scoring takes well under a second: an unfinished run's missing items are scored again.
    run.extend(
        queries
            .iter()
            .filter(|q| out.shard.contains(&q.idx.to_string()))
            .map(|q| {
                let verdict = verdicts.as_ref().map(|v| v.get(&q.idx).copied());
                let mut item =
                    score_query(q, flow.get(&q.idx), plans.get(&q.idx), &aliases, verdict);
                if let Some((_, by_name, _, _)) = &matched {
                    semantic::annotate(&mut item, by_name);
                }
                item
            })
            .collect(),
    );
    let files = match matched {
        Some((_, _, file, _)) => vec![("semantic_descriptions.json".into(), file)],
        None => Vec::new(),
    };
    let done = run.finish(&mut doc, files)?;
    let items = &done.items;

    let missing = items.iter().filter(|i| i.missing_plan).count();
    if missing > 0 && !out.quiet {
        eprintln!("warning: {missing} quer(ies) have no plan in {} and score 0 (missing_plan in items.jsonl)", args.plans.display());
    }
    let errors: Vec<String> = items
        .iter()
        .filter(|i| i.plan_error.is_some())
        .filter_map(|i| i.plan_line.map(|l| format!("{}:{l}", args.plans.display())))
        .collect();
    if !errors.is_empty() && !out.quiet {
        let shown: Vec<&str> = errors.iter().take(5).map(String::as_str).collect();
        eprintln!(
            "warning: {} plan(s) could not be read as a plan and score 0: {}{} (plan_error in items.jsonl)",
            errors.len(),
            shown.join(", "),
            if errors.len() > 5 { ", ..." } else { "" }
        );
    }
    done.print();
    Ok(())
}

/// Metrics from items, the one place `scorekit muse` and `scorekit merge` compute them: puts
/// the items in the single-run order (by idx), fills `doc.metrics` and `doc.groups` with the
/// bootstrap and seed of `doc.settings`, and renders the report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [muse::Item]) -> Result<Outputs> {
    items.sort_by_key(|i| i.idx);
    let run = doc.run_settings()?;
    let settings: MuseSettings = doc.suite_settings()?;
    let summary = muse::summarize(items, run.bootstrap, run.seed);
    doc.metrics = summary.metrics.clone();
    doc.groups = summary.groups.clone();
    let verdicts = settings.output_verdicts.as_deref();
    let mut report = report::muse::report(&summary, &muse::metrics::failing_queries(items));
    let mut table = report::muse::table(&summary).render();
    if let Some(path) = verdicts {
        report.insert_str(
            report.find('\n').map_or(0, |i| i + 2),
            &format!("O comes from the verdicts in {path}, not from scorekit's rule.\n\n"),
        );
        table.push_str("O from --output-verdicts\n");
    }
    let main = report::muse::main_table(&summary);
    let mut files = report::table::table_files("MuSE table", &main);
    files.push((
        "scores.svg".to_string(),
        report::muse::scores_chart(&summary).into_bytes(),
    ));
    if settings.embedder.is_some() {
        let th = settings.embedder_thresholds;
        doc.metrics.insert(
            "embedding_matches".into(),
            semantic::metrics_value(items, th),
        );
        let (accepted, rejected) = semantic::name_uses(items);
        report.push_str(&report::muse::matches_report(&accepted, &rejected, th));
        table.push_str(&format!(
            "task names matched by embeddings: {} (check them in report.md), left unknown: {}\n",
            accepted.len(),
            rejected.len()
        ));
        files.push((
            "suggested_aliases.json".to_string(),
            semantic::suggested_aliases(items).into_bytes(),
        ));
    }
    Ok(Outputs {
        report,
        table,
        files,
    })
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
