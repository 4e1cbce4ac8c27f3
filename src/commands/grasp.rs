//! `scorekit grasp`: read upstream `results.csv` (or JSONL), score it with the GRASP suite, write
//! items.jsonl, metrics.json and report.md.

use crate::cli::GraspArgs;
use crate::commands::model_runtime::ModelRuntime;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{self as report, MetricsDoc, Outputs, StagedFile};
use scorekit_suites::grasp::semantic::{self, Thresholds};
use scorekit_suites::grasp::{self, Row, RowIssue, SummaryOptions};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::grasp_common::{
    check_options, headline, locator, read_and_score, resolve_test, score_rows, settings,
    summary_options, warn_names, ResolvedTest,
};
use crate::commands::suite;
use crate::settings;
use scorekit_suites::grasp::shard_key;
use scorekit_suites::run::{self as run_loop, Run};
use scorekit_suites::settings::GraspSettings;

/// Run `scorekit grasp`.
pub fn run(args: GraspArgs) -> Result<()> {
    if args.responses.len() > 1 || args.labels.is_some() {
        return super::grasp_models::run(args);
    }
    let test = resolve_test(args.test, &args.responses[0])?;
    check_options(&args, test.kind)?;
    let file = &args.responses[0];
    let out = &settings::run_options(&args.output);
    let opts = SummaryOptions {
        bootstrap: out.bootstrap,
        seed: out.seed,
        pairwise: args.pairwise,
    };
    let mut doc = MetricsDoc::new("grasp");
    doc.add_input(file)?;
    if let Some(cfg) = &test.config {
        doc.add_input(cfg)?;
    }
    let mut settings = settings(&test, &opts);
    settings.allow_unknown_scenes = args.allow_unknown_scenes;
    let done = if args.semantic {
        run_semantic(&args, &test, doc, settings)?
    } else {
        run_streamed(&args, &test, doc, &settings, opts)?
    };
    let rows = &done.gt_mismatch_rows;
    if !rows.is_empty() {
        let shown: Vec<String> = rows.iter().take(10).map(|r| r.to_string()).collect();
        eprintln!(
            "warning: {} row(s) have a gt that contradicts the P_/IP_ scene prefix (rows {}{}); \
             scored with the given gt as upstream does. Results written before upstream 10ac5f2 \
             carry gt=no for every Level 2 row. All rows are listed in metrics.json.",
            rows.len(),
            shown.join(", "),
            if rows.len() > 10 { ", ..." } else { "" }
        );
    }
    done.run.print();
    Ok(())
}

/// A finished `scorekit grasp` and the rows whose gold label contradicts their scene prefix.
struct Finished {
    run: run_loop::Done<suite::Grasp>,
    gt_mismatch_rows: Vec<usize>,
}

/// One results file without `--semantic`: every row is scored as it is read, its item written
/// to the staged items.jsonl (when in the shard) and counted, and dropped; memory holds the
/// counts and a byte per item and group, not the items. Bad input (a row, or an ambiguous pair)
/// stops the run before `--out` is touched.
fn run_streamed(
    args: &GraspArgs,
    test: &ResolvedTest,
    mut doc: MetricsDoc,
    settings: &GraspSettings,
    opts: SummaryOptions,
) -> Result<Finished> {
    let (file, out) = (&args.responses[0], &settings::run_options(&args.output));
    run_loop::record::<suite::Grasp>(&mut doc, out, settings)?;
    let mut staged = StagedFile::create_near(&out.out, "items.jsonl")?;
    let mut tally = grasp::Tally::new(test.kind, opts);
    let notes = score_rows(
        file,
        test.kind,
        args.allow_unknown_scenes,
        &mut |_, item, line| {
            if out.shard.contains(&shard_key(&item)) {
                serde_json::to_writer(staged.writer(), &item).map_err(|e| {
                    Error::Internal(anyhow::anyhow!("cannot write items.jsonl: {e}"))
                })?;
                staged.write_all(b"\n")?;
                tally.add(&item, line);
            }
            Ok(())
        },
    )?;
    warn_names(file, &notes);
    let (summary, scenes) = tally.finish().map_err(|(issue, line)| {
        Error::from(InputError::field(file, line, issue.field, issue.message))
    })?;
    let gt_mismatch_rows = summary.gt_mismatch_rows.clone();
    let outputs = outputs_from(&mut doc, summary, scenes, None)?;
    // Every row was scored again: an unfinished run's finished items are not kept apart.
    let run = Run::<suite::Grasp>::resume(out, &doc)?;
    Ok(Finished {
        run: run.finish_staged(&mut doc, staged, outputs)?,
        gt_mismatch_rows,
    })
}

/// One results file with `--semantic`: the embedder reads every strict-invalid answer, so the
/// rows and items are held.
fn run_semantic(
    args: &GraspArgs,
    test: &ResolvedTest,
    mut doc: MetricsDoc,
    mut settings: GraspSettings,
) -> Result<Finished> {
    let (file, out) = (&args.responses[0], &settings::run_options(&args.output));
    let (rows, lines, items) = read_and_score(file, test.kind, args.allow_unknown_scenes, true)?;
    let located = locator(file, &lines);
    // Rows are scored whole (pairs need their twins), then the shard keeps its own items.
    let mut items: Vec<grasp::Item> = items
        .into_iter()
        .filter(|i| out.shard.contains(&shard_key(i)))
        .collect();
    let extra_files = vec![read_semantic(
        args,
        &rows,
        &mut items,
        &mut doc,
        &mut settings,
    )?];
    drop(rows);
    run_loop::record::<suite::Grasp>(&mut doc, out, &settings)?;
    // The summary checks the rows (pairs): bad input stops the run before --out is touched.
    let outputs = outputs_with(&mut doc, &mut items, &located)?;
    // Scoring takes well under a second: an unfinished run's missing items are scored again.
    let mut run = Run::<suite::Grasp>::resume(out, &doc)?;
    run.extend(items);
    let done = run.finish_with(&mut doc, extra_files, |_, _| Ok(outputs))?;
    let gt_mismatch_rows = done
        .items
        .iter()
        .filter(|i| i.gt_mismatch)
        .map(|i| i.row)
        .collect();
    Ok(Finished {
        run: done,
        gt_mismatch_rows,
    })
}

/// Metrics from items, the one place `scorekit grasp` and `scorekit merge` compute them: puts
/// the items in the single-run order (by row), fills `doc.metrics` and `doc.groups` from the
/// test, pairing, bootstrap and seed of `doc.settings`, and renders tables and report.
pub fn outputs(doc: &mut MetricsDoc, items: &mut [grasp::Item]) -> Result<Outputs> {
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let located = |issue: RowIssue| -> Error {
        InputError::field(
            &file,
            0,
            issue.field,
            format!("row {}: {}", issue.row, issue.message),
        )
        .into()
    };
    outputs_with(doc, items, &located)
}

fn outputs_with(
    doc: &mut MetricsDoc,
    items: &mut [grasp::Item],
    located: &dyn Fn(RowIssue) -> Error,
) -> Result<Outputs> {
    if items.iter().any(|i| i.model.is_some()) {
        return super::grasp_models::outputs(doc, items);
    }
    items.sort_by_key(|i| i.row);
    let settings: GraspSettings = doc.suite_settings()?;
    let opts = summary_options(doc, &settings)?;
    let mut tally = grasp::Tally::new(settings.kind()?, opts);
    for it in items.iter() {
        tally.add(it, 0);
    }
    let (summary, scenes) = tally.finish().map_err(|(issue, _)| located(issue))?;
    let semantic = settings.semantic.then(|| {
        (
            semantic::summarize(items, opts.bootstrap, opts.seed),
            semantic::reread_rows(items),
        )
    });
    outputs_from(doc, summary, scenes, semantic)
}

/// metrics.json's numbers and the rendered files from a summary and its scene counts (and the
/// semantic reading with its re-read rows, `--semantic`): the part of a GRASP run's outputs
/// that needs no item.
fn outputs_from(
    doc: &mut MetricsDoc,
    summary: grasp::Summary,
    scenes: grasp::SceneCounts,
    semantic: Option<(
        semantic::SemanticSummary,
        Vec<scorekit_report::grasp::RereadRow>,
    )>,
) -> Result<Outputs> {
    let settings: GraspSettings = doc.suite_settings()?;
    let kind = settings.kind()?;
    let test = ResolvedTest {
        kind,
        source: settings.test_source.clone(),
        config: None,
        mode: settings.mode.clone(),
    };
    doc.metrics = headline(&summary);
    doc.groups.clear();
    for (name, g) in &summary.groups {
        let mut v = serde_json::to_value(g).map_err(anyhow::Error::from)?;
        if let (Some(p), Some(obj)) = (&summary.pairwise, v.as_object_mut()) {
            if let Some(e) = p.groups.get(name) {
                obj.insert("paired_accuracy".into(), json!(e));
            }
        }
        if let (Some((s, _)), Some(obj)) = (&semantic, v.as_object_mut()) {
            if let Some(g) = s.groups.get(name) {
                obj.insert("semantic_accuracy".into(), json!(g.semantic_accuracy));
                obj.insert("semantic".into(), json!(g));
            }
        }
        doc.groups.insert(name.clone(), v);
    }
    let file = doc
        .inputs
        .first()
        .map(|i| i.path.clone())
        .unwrap_or_default();
    let mut report = report::grasp::report(
        &summary,
        &test.source,
        test.mode.as_deref(),
        Path::new(&file),
    );
    // Rows per scene (expected by the test's config and present), renamed and unknown scenes.
    let scenes_rows = grasp::scene_rows_from(kind, &scenes.rows);
    let (renamed, unknown) = (scenes.renamed, scenes.unknown);
    let scene_map: serde_json::Map<String, Value> = scenes_rows
        .iter()
        .map(|s| {
            (
                s.scene.clone(),
                json!({"expected": s.expected, "rows": s.rows}),
            )
        })
        .collect();
    doc.metrics
        .insert("scene_rows".into(), Value::Object(scene_map));
    doc.metrics.insert("renamed_scenes".into(), json!(renamed));
    doc.metrics.insert("unknown_scenes".into(), json!(unknown));
    report.push_str(&report::grasp::scenes_report(
        &scenes_rows,
        &renamed,
        &unknown,
    ));
    let mut table = report::grasp::tables(&summary);
    if let Some((s, reread)) = &semantic {
        let th: Option<Thresholds> = settings.semantic_thresholds;
        let strict: BTreeMap<String, f64> = summary
            .groups
            .iter()
            .map(|(k, g)| (k.clone(), g.accuracy().value))
            .collect();
        doc.metrics
            .insert("semantic_accuracy".into(), json!(s.all.semantic_accuracy));
        doc.metrics
            .insert("semantic".into(), semantic::metrics_value(s, th));
        report.push_str(&report::grasp::semantic_report(
            s,
            reread,
            &strict,
            summary.accuracy.value,
            th,
        ));
        table.push_str(&report::grasp::semantic_table(
            s,
            &strict,
            summary.accuracy.value,
        ));
    }
    let main = report::grasp::main_table(&summary);
    let mut files = report::table::table_files("GRASP table", &main);
    files.push((
        "accuracy.svg".to_string(),
        report::grasp::accuracy_chart(&summary).into_bytes(),
    ));
    Ok(Outputs {
        report,
        table,
        files,
    })
}

/// `--semantic`: load the embedder, embed the label descriptions once and every answer that
/// names no label, and record the reading on each such item. Records the model and the
/// thresholds in `doc` and `settings`; returns `semantic_descriptions.json` (the description embeddings).
fn read_semantic(
    args: &GraspArgs,
    rows: &[Row],
    items: &mut [grasp::Item],
    doc: &mut MetricsDoc,
    settings: &mut GraspSettings,
) -> Result<(String, Vec<u8>)> {
    let rt = ModelRuntime::new(&args.model, args.output.quiet)?;
    let (embedder, model_ref) = rt.embedder(&args.embedder)?;
    let responses: HashMap<usize, &str> =
        rows.iter().map(|r| (r.row, r.response.as_str())).collect();
    let answer_of = |row: usize| responses.get(&row).copied().unwrap_or("").to_string();
    let th = semantic::DEFAULT_THRESHOLDS;
    let desc_vecs = semantic::read_answers(items, &answer_of, th, &mut |t: &[String]| {
        rt.embed(&embedder, t, "semantic")
    })?;
    let dtype = format!("{:?}", rt.dtype).to_lowercase();
    let file = semantic::descriptions_file(&json!(model_ref), &dtype, &desc_vecs);
    doc.models.push(model_ref);
    settings.semantic = true;
    settings.device = Some(rt.device_name());
    settings.quantize = rt.quantize_setting();
    settings.tf32 = rt.tf32;
    settings.semantic_embedder = Some(args.embedder.clone());
    settings.semantic_thresholds = Some(th);
    settings.semantic_descriptions = Some(format!(
        "data/grasp/label_descriptions.json (built in), sha256 {}",
        semantic::descriptions_sha256()
    ));
    settings.semantic_rule = Some(
        "strict-invalid answers naming no label: best label by cosine similarity of the \
         last turn to the label descriptions (max over a label's descriptions), taken when \
         similarity >= min_similarity and best - runner-up >= margin"
            .into(),
    );
    Ok(("semantic_descriptions.json".into(), file))
}
