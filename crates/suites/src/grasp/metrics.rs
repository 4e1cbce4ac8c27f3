//! What a single run's metrics.json and Table 2's per-model groups share: the headline numbers
//! of one summary, and the summary options a run recorded.

use super::{Summary, SummaryOptions};
use crate::settings::GraspSettings;
use scorekit_core::error::Result;
use scorekit_report::MetricsDoc;
use serde_json::{json, Value};

/// The summary options a run recorded (its report and `scorekit merge` recompute with them).
pub(super) fn summary_options(doc: &MetricsDoc, s: &GraspSettings) -> Result<SummaryOptions> {
    let run = doc.run_settings()?;
    Ok(SummaryOptions {
        bootstrap: run.bootstrap,
        seed: run.seed,
        pairwise: s.pairwise,
    })
}

/// The headline numbers of one summary: accuracy, counts, Level 2's gold mismatches and the
/// paired accuracy of `--pairwise`.
pub(super) fn headline(s: &Summary) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("accuracy".into(), json!(s.accuracy));
    m.insert("n".into(), json!(s.n));
    m.insert("correct".into(), json!(s.correct));
    m.insert("false".into(), json!(s.wrong));
    m.insert("invalid".into(), json!(s.invalid));
    if s.test.is_level2() {
        m.insert("gt_mismatches".into(), json!(s.gt_mismatch_rows.len()));
        m.insert("gt_mismatch_rows".into(), json!(s.gt_mismatch_rows));
    }
    if let Some(p) = &s.pairwise {
        m.insert(
            "pairwise".into(),
            json!({
                "note": "NOT the GRASP paper's metric: MVPBench-style paired accuracy; a P_/IP_ \
                         pair of the same test and video index scores 1 only if both rows are correct",
                "paired_accuracy": p.paired_accuracy,
                "pairs": p.pairs,
                "both_correct": p.both_correct,
                "unpaired_rows": p.unpaired_rows,
            }),
        );
    }
    m
}
