//! A `scorekit grasp` run: one results file streamed (each row scored, written and counted as it
//! is read), one results file with `--semantic` (held: the embedder re-reads answers), or several
//! files laid out as Table 2 ([`table2`]).
//!
//! The embedder comes in as a [`SemanticModel`] the binary loads over its runtime (only when
//! `--semantic` asks, after the results file was read and checked): this crate stays free of
//! candle. Warnings (old or unknown scene names, a `--test` over a config, gold labels against
//! the scene prefix) are handed to the caller's `warn` as they arise, in the order they arise.

use super::input::{locator, read_and_score, resolve_test, score_rows, Input, ResolvedTest};
use super::outputs::{outputs_from, outputs_with};
use super::semantic::{self, DEFAULT_THRESHOLDS};
use super::suite::Grasp;
use super::{shard_key, table2, Item, Row, SummaryOptions, Tally};
use crate::models::LentModels;
use crate::run::{self as run_loop, Done, Run};
use crate::settings::GraspSettings;
use scorekit_core::error::{Error, InputError, Result};
use scorekit_report::{MetricsDoc, ModelRef, Outputs, RunOptions, StagedFile};
use serde_json::json;
use std::collections::HashMap;

/// `--semantic`'s embedder as the binary loaded it: what the run records of it and the step
/// that embeds texts.
pub struct SemanticModel<'a> {
    /// The model (recorded in metrics.json's `models`).
    pub model: ModelRef,
    /// Its float type as recorded (`f32`, `f16`, ...).
    pub dtype: String,
    /// The device it runs on, as recorded.
    pub device: String,
    /// int8 encoder products, when on.
    pub quantize: Option<String>,
    /// TF32 products for f32 on CUDA, when on.
    pub tf32: bool,
    /// The embedder, lent (one vector per text, in input order).
    pub lent: Box<dyn LentModels + 'a>,
}

/// Run `scorekit grasp` as `s` asks and write its outputs to `s.out`. `load` loads the
/// `--semantic` embedder (called once, only with `--semantic`, after the file was read and
/// checked); every warning goes to `warn` as a whole line. The caller prints the result.
pub fn run<'m>(
    s: &Input,
    load: impl FnOnce() -> Result<SemanticModel<'m>>,
    warn: &mut dyn FnMut(String),
) -> Result<Done<Grasp>> {
    if s.is_table2() {
        let models = table2::read(s, warn)?;
        let items = in_shard(&s.out, models.items);
        return finish_held(
            &s.out,
            models.doc,
            &models.recorded,
            items,
            Vec::new(),
            table2::outputs,
        );
    }
    let file = s
        .responses
        .first()
        .ok_or_else(|| Error::usage("--responses: no results file to score"))?;
    let test = resolve_test(s.test, file, warn)?;
    s.check(test.kind)?;
    let mut doc = MetricsDoc::new("grasp");
    doc.add_input(file)?;
    if let Some(cfg) = &test.config {
        doc.add_input(cfg)?;
    }
    let mut recorded = test.recorded(s.pairwise);
    recorded.allow_unknown_scenes = s.allow_unknown_scenes;
    let (done, gt_mismatch_rows) = if s.semantic {
        let done = run_semantic(s, &test, doc, recorded, load, warn)?;
        let rows = done
            .items
            .iter()
            .filter(|i| i.gt_mismatch)
            .map(|i| i.row)
            .collect();
        (done, rows)
    } else {
        run_streamed(s, &test, doc, &recorded, warn)?
    };
    if let Some(w) = gt_mismatch_warning(&gt_mismatch_rows) {
        warn(w);
    }
    Ok(done)
}

/// The warning for rows whose gold label contradicts their scene prefix, when there are any.
fn gt_mismatch_warning(rows: &[usize]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let shown: Vec<String> = rows.iter().take(10).map(|r| r.to_string()).collect();
    Some(format!(
        "warning: {} row(s) have a gt that contradicts the P_/IP_ scene prefix (rows {}{}); \
         scored with the given gt as upstream does. Results written before upstream 10ac5f2 \
         carry gt=no for every Level 2 row. All rows are listed in metrics.json.",
        rows.len(),
        shown.join(", "),
        if rows.len() > 10 { ", ..." } else { "" }
    ))
}

/// One results file without `--semantic`: every row is scored as it is read, its item written
/// to the staged items.jsonl (when in the shard) and counted, and dropped; memory holds the
/// counts and a byte per item and group, not the items. Bad input (a row, or an ambiguous pair)
/// stops the run before `--out` is touched. Returns the run and the rows whose gold label
/// contradicts their scene prefix.
fn run_streamed(
    s: &Input,
    test: &ResolvedTest,
    mut doc: MetricsDoc,
    recorded: &GraspSettings,
    warn: &mut dyn FnMut(String),
) -> Result<(Done<Grasp>, Vec<usize>)> {
    let (file, out) = (&s.responses[0], &s.out);
    let opts = SummaryOptions {
        bootstrap: out.bootstrap,
        seed: out.seed,
        pairwise: s.pairwise,
    };
    run_loop::record::<Grasp>(&mut doc, out, recorded)?;
    let mut staged = StagedFile::create_near(&out.out, "items.jsonl")?;
    let mut tally = Tally::new(test.kind, opts);
    let notes = score_rows(
        file,
        test.kind,
        s.allow_unknown_scenes,
        &mut |_, item, line| {
            if out.shard.contains_with(|| shard_key(&item)) {
                serde_json::to_writer(staged.writer(), &item).map_err(|e| {
                    Error::Internal(anyhow::anyhow!("cannot write items.jsonl: {e}"))
                })?;
                staged.write_all(b"\n")?;
                tally.add(&item, line);
            }
            Ok(())
        },
    )?;
    notes.warn(file, warn);
    let (summary, scenes) = tally.finish().map_err(|(issue, line)| {
        Error::from(InputError::field(file, line, issue.field, issue.message))
    })?;
    let gt_mismatch_rows = summary.gt_mismatch_rows.clone();
    let outputs = outputs_from(&mut doc, summary, scenes, None)?;
    // Every row was scored again: an unfinished run's finished items are not kept apart.
    let run = Run::<Grasp>::resume(out, &doc)?;
    let done = run.finish_staged(&mut doc, staged, outputs)?;
    Ok((done, gt_mismatch_rows))
}

/// One results file with `--semantic`: the embedder reads every strict-invalid answer, so the
/// rows and items are held.
fn run_semantic<'m>(
    s: &Input,
    test: &ResolvedTest,
    mut doc: MetricsDoc,
    mut recorded: GraspSettings,
    load: impl FnOnce() -> Result<SemanticModel<'m>>,
    warn: &mut dyn FnMut(String),
) -> Result<Done<Grasp>> {
    let file = &s.responses[0];
    let scored = read_and_score(file, test.kind, s.allow_unknown_scenes, true, warn)?;
    let located = locator(file, &scored.lines);
    let mut items = in_shard(&s.out, scored.items);
    let descriptions = read_semantic(s, &scored.rows, &mut items, load, &mut doc, &mut recorded)?;
    drop(scored.rows);
    // The summary checks the rows (pairs): bad input stops the run before --out is touched.
    finish_held(
        &s.out,
        doc,
        &recorded,
        items,
        vec![descriptions],
        |doc, items| outputs_with(doc, items, &located),
    )
}

/// The items of the run's shard (`--shard`). Rows are scored whole (pairs need their twins),
/// then the shard keeps its own items.
fn in_shard(out: &RunOptions, items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .filter(|i| out.shard.contains_with(|| shard_key(i)))
        .collect()
}

/// The end of a run that holds its items: record the settings, compute the outputs (bad input
/// stops the run before `--out` is touched), open `--out` and write it all with `files`.
/// Scoring takes well under a second: an unfinished run's missing items are scored again.
fn finish_held(
    out: &RunOptions,
    mut doc: MetricsDoc,
    recorded: &GraspSettings,
    mut items: Vec<Item>,
    files: Vec<(String, Vec<u8>)>,
    outputs: impl FnOnce(&mut MetricsDoc, &mut [Item]) -> Result<Outputs>,
) -> Result<Done<Grasp>> {
    run_loop::record::<Grasp>(&mut doc, out, recorded)?;
    let outputs = outputs(&mut doc, &mut items)?;
    let mut run = Run::<Grasp>::resume(out, &doc)?;
    run.extend(items);
    run.finish_with(&mut doc, files, |_, _| Ok(outputs))
}

/// `--semantic`: load the embedder, embed the label descriptions once and every answer that
/// names no label, and record the reading on each such item. Records the model and the
/// thresholds in `doc` and `recorded`; returns `semantic_descriptions.json` (the description
/// embeddings).
fn read_semantic<'m>(
    s: &Input,
    rows: &[Row],
    items: &mut [Item],
    load: impl FnOnce() -> Result<SemanticModel<'m>>,
    doc: &mut MetricsDoc,
    recorded: &mut GraspSettings,
) -> Result<(String, Vec<u8>)> {
    let mut model = load()?;
    let responses: HashMap<usize, &str> =
        rows.iter().map(|r| (r.row, r.response.as_str())).collect();
    let answer_of = |row: usize| responses.get(&row).copied().unwrap_or("").to_string();
    let th = DEFAULT_THRESHOLDS;
    let lent = &mut model.lent;
    let desc_vecs =
        semantic::read_answers(items, &answer_of, th, &mut |t: &[String]| lent.embed(t))?;
    let file = semantic::descriptions_file(&json!(model.model), &model.dtype, &desc_vecs);
    doc.models.push(model.model);
    recorded.semantic = true;
    recorded.device = Some(model.device);
    recorded.quantize = model.quantize;
    recorded.tf32 = model.tf32;
    recorded.semantic_embedder = Some(s.embedder.clone());
    recorded.semantic_thresholds = Some(th);
    recorded.semantic_descriptions = Some(format!(
        "data/grasp/label_descriptions.json (built in), sha256 {}",
        semantic::descriptions_sha256()
    ));
    recorded.semantic_rule = Some(
        "strict-invalid answers naming no label: best label by cosine similarity of the \
         last turn to the label descriptions (max over a label's descriptions), taken when \
         similarity >= min_similarity and best - runner-up >= margin"
            .into(),
    );
    Ok(("semantic_descriptions.json".into(), file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grasp::TestKind;
    use scorekit_core::shard::Shard;
    use serde_json::Value;
    use std::path::{Path, PathBuf};

    use crate::models::Models;

    /// An embedder that maps every text to one vector.
    struct Flat;

    impl LentModels for Flat {
        fn models(&self) -> Models {
            Models {
                embedder: true,
                ..Models::default()
            }
        }
        fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![1.0, 0.0]; texts.len()])
        }
    }

    fn settings(responses: Vec<PathBuf>, test: TestKind, out: &Path) -> Input {
        Input {
            responses,
            labels: None,
            test: Some(test),
            pairwise: false,
            semantic: false,
            allow_unknown_scenes: false,
            embedder: "fake-embedder".into(),
            out: RunOptions {
                out: out.to_path_buf(),
                force: false,
                json: false,
                quiet: true,
                bootstrap: 0,
                seed: 0,
                shard: Shard::ALL,
            },
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A strict run never asks for the model.
    fn no_model<'m>() -> Result<SemanticModel<'m>> {
        Err(Error::usage("a strict run loaded the embedder"))
    }

    fn metrics(done: &Done<Grasp>) -> Value {
        serde_json::from_str(&done.metrics_json).unwrap()
    }

    const BINARY: &str = "scene,gt,response\nColor,yes,Yes.\nColor,no,yes\nColor,no,\n";

    #[test]
    fn a_streamed_run_scores_the_file_without_the_model() {
        let tmp = tempfile::tempdir().unwrap();
        let csv = write(tmp.path(), "results.csv", BINARY);
        let out = tmp.path().join("out");
        let s = settings(vec![csv], TestKind::Level1Binary, &out);
        let mut warnings = Vec::new();
        let done = run(&s, no_model, &mut |w| warnings.push(w)).unwrap();
        let m = metrics(&done);
        assert_eq!(m["metrics"]["n"], 3);
        assert_eq!(m["metrics"]["correct"], 1);
        assert_eq!(m["metrics"]["invalid"], 1);
        assert_eq!(m["settings"]["test_source"], "--test");
        let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
        assert_eq!(items.lines().count(), 3);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn warnings_reach_the_caller_in_the_order_they_arise() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "m/test_config.yaml", "test_name: level1-open\n");
        let csv = write(
            tmp.path(),
            "m/results.csv",
            "scene,gt,response\nColor,yes,Yes.\nColour,no,yes\n",
        );
        let mut s = settings(
            vec![csv.clone()],
            TestKind::Level1Binary,
            &tmp.path().join("o"),
        );
        s.allow_unknown_scenes = true;
        let mut warnings = Vec::new();
        run(&s, no_model, &mut |w| warnings.push(w)).unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0]
                .starts_with("warning: --test level1-binary overrides test_name level1-open"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].ends_with(&format!("(--allow-unknown-scenes): {}:3", csv.display())),
            "{}",
            warnings[1]
        );
    }

    #[test]
    fn several_files_are_laid_out_as_table2() {
        let tmp = tempfile::tempdir().unwrap();
        let a = write(tmp.path(), "a.csv", BINARY);
        let b = write(tmp.path(), "b.csv", "scene,gt,response\nColor,yes,no\n");
        let mut s = settings(vec![a, b], TestKind::Level1Binary, &tmp.path().join("o"));
        s.labels = Some(vec!["A".into(), " B ".into()]);
        let done = run(&s, no_model, &mut |w| panic!("{w}")).unwrap();
        let m = metrics(&done);
        assert_eq!(m["metrics"]["models"], serde_json::json!(["A", "B"]));
        assert_eq!(m["groups"]["A"]["n"], 3);
        assert_eq!(m["groups"]["B"]["correct"], 0);
        assert!(done
            .outputs
            .report
            .starts_with("# GRASP level1-binary: 2 models"));
        // One name per file, distinct.
        s.labels = Some(vec!["A".into(), "A".into()]);
        let Err(e) = run(&s, no_model, &mut |w| panic!("{w}")) else {
            panic!("two files called A");
        };
        assert!(
            e.to_string()
                .contains("two --responses files are called \"A\""),
            "{e}"
        );
    }

    #[test]
    fn semantic_reads_answers_with_the_lent_model_and_records_it() {
        let tmp = tempfile::tempdir().unwrap();
        let csv = write(
            tmp.path(),
            "results.csv",
            "scene,gt,response\nColor,red,crimson\nColor,blue,blue\n",
        );
        let mut s = settings(vec![csv], TestKind::Level1Open, &tmp.path().join("o"));
        s.semantic = true;
        let mut calls = 0;
        let load = || -> Result<SemanticModel<'static>> {
            Ok(SemanticModel {
                model: ModelRef {
                    id: "fake".into(),
                    revision: "local".into(),
                    sha256: "0".into(),
                },
                dtype: "f32".into(),
                device: "fake-device".into(),
                quantize: None,
                tf32: false,
                // Every text alike: the best label wins by no margin, so it stays invalid.
                lent: Box::new(Flat),
            })
        };
        let done = run(
            &s,
            || {
                calls += 1;
                load()
            },
            &mut |w| panic!("{w}"),
        )
        .unwrap();
        assert_eq!(calls, 1);
        let m = metrics(&done);
        assert_eq!(m["models"][0]["id"], "fake");
        assert_eq!(m["settings"]["device"], "fake-device");
        assert_eq!(m["settings"]["semantic_embedder"], "fake-embedder");
        let read = done.items[0]
            .semantic
            .as_ref()
            .expect("the invalid answer re-read");
        assert_eq!(
            (read.answer.as_str(), read.label.as_deref()),
            ("crimson", None)
        );
        assert!(done.items[1].semantic.is_none());
        assert!(tmp.path().join("o/semantic_descriptions.json").is_file());
        // Only an open-ended test is re-read.
        s.test = Some(TestKind::Level1Binary);
        let Err(e) = run(&s, load, &mut |w| panic!("{w}")) else {
            panic!("--semantic on a yes/no test");
        };
        assert!(
            e.to_string()
                .contains("--semantic re-reads open-ended answers"),
            "{e}"
        );
    }
}
