//! Possible Stories: the typed summary of a run (per-group metrics and status counts) and its
//! markdown writers (the stdout table and report.md).

use super::ifsm_corrected::{self, Headline, IfsmCorrected, PpiIfsm};
use super::svg::{interval_chart, ChartRow};
use super::table::{Cell, DataTable};
use super::{percent, Estimate, MetricsDoc, Table};
use serde::Serialize;
use std::collections::BTreeMap;

/// Metrics of one result group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMetrics {
    /// Scored items.
    pub items: usize,
    /// Stories among them.
    pub stories: usize,
    /// Share of items the judge says follow the instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ifsm: Option<Estimate>,
    /// The judge's accuracy on the human options of the same questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_accuracy: Option<Estimate>,
    /// Share of those stories whose questions the judge all answers correctly ([PS] consistency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_consistency: Option<Estimate>,
    /// IFSM of a judge picking at random.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chance: Option<f64>,
    /// Mean dissimilarity over all pairs (n = pairs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissimilarity_micro: Option<Estimate>,
    /// Mean over stories of each story's mean pair dissimilarity (n = stories with a pair).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissimilarity_macro: Option<Estimate>,
    /// Empty endings left out of the Dissimilarity pairs (they are in IFSM as Not-Follow).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissimilarity_left_out: Option<usize>,
    /// IFSM under `--option-orders cyclic` (a letter judge's majority over rotations of the
    /// options), apart from the reference protocol's `ifsm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_cyclic: Option<Estimate>,
    /// The judge's accuracy on the human options under the cyclic orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_accuracy_cyclic: Option<Estimate>,
    /// `ifsm` corrected for the judge's errors, per calibration (when one ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_corrected: Option<IfsmCorrected>,
    /// `ifsm_cyclic` corrected by the cyclic majority's calibration (when one ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_cyclic_corrected: Option<IfsmCorrected>,
    /// Prediction-powered IFSM from human labels of this model's endings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_ppi: Option<PpiIfsm>,
    /// The same under cyclic option orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_cyclic_ppi: Option<PpiIfsm>,
    /// The headline estimate and its method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifsm_headline: Option<Headline>,
}

/// How much of the dataset a group answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Dataset questions of the run (of its shard with `--shard`).
    #[serde(rename = "questions_in_scope")]
    pub questions: usize,
    /// Questions with an answer (a scored or an empty ending).
    pub answered: usize,
    /// Questions without any generation of the group.
    pub missing: usize,
    /// answered / questions (`None` with no questions).
    pub coverage: Option<f64>,
    /// The first missing question ids, sorted.
    pub missing_ids: Vec<String>,
}

/// Counts of generations per status in one group.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Counts {
    /// Generations of the group.
    pub generations: usize,
    /// Scored ones.
    pub scored: usize,
    /// `question_id` not in the dataset.
    pub unknown_question: usize,
    /// A second ending of the same (model, question).
    pub duplicate: usize,
    /// Empty endings (scored as Not-Follow).
    pub empty_ending: usize,
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

/// Coverage as `answered/questions (pct)`, `-` when unknown.
fn cov(c: Option<&Coverage>) -> String {
    match c.and_then(|c| c.coverage.map(|v| (c, v))) {
        Some((c, v)) => format!("{}/{} ({})", c.answered, c.questions, percent(v)),
        None => "-".into(),
    }
}

/// The human table: one row per result group.
pub fn table(
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    coverage: &BTreeMap<String, Coverage>,
) -> String {
    let mut t = Table::new(&[
        "model",
        "coverage",
        "scored",
        "empty",
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
            cov(coverage.get(name)),
            c.scored.to_string(),
            c.empty_ending.to_string(),
            (c.generations - c.scored - c.empty_ending).to_string(),
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

/// report.md: the table, what the columns mean, the models, coverage and the unscored count.
pub fn report(
    doc: &MetricsDoc,
    letter: Option<&LetterProtocol>,
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    coverage: &BTreeMap<String, Coverage>,
    table: &str,
    warnings: &[String],
    facts: &StoryFacts,
) -> String {
    let mut s = String::from("# Possible Stories: IFSM and Dissimilarity\n\n");
    let first = ifsm_corrected::headline_section(
        results
            .iter()
            .map(|(name, (m, _))| (name.as_str(), &m.ifsm, m.ifsm_headline.as_ref())),
        facts.agreement.as_ref(),
    );
    if !first.is_empty() {
        s.push_str(&first);
    }
    if !warnings.is_empty() {
        s.push_str("## Warnings\n\n");
        for w in warnings {
            s.push_str(&format!("- {w}\n"));
        }
        s.push('\n');
    }
    if !first.is_empty() || !warnings.is_empty() {
        s.push_str("## Metrics per model\n\n");
    }
    s.push_str(table);
    s.push_str(&explanation(facts));
    s.push_str("\n## Models\n\n");
    // A story run records the judge, then the embedder (each when it runs).
    let roles: Vec<&str> = [
        facts.judge.as_ref().map(|_| "judge"),
        facts.embedder.as_ref().map(|_| "embedder"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let labelled = roles.len() == doc.models.len();
    for (i, m) in doc.models.iter().enumerate() {
        let role = if labelled {
            format!("{}: ", roles[i])
        } else {
            String::new()
        };
        s.push_str(&format!(
            "- {role}{} @ {} (sha256 {})\n",
            m.id, m.revision, m.sha256
        ));
    }
    for cyclic in [false, true] {
        s.push_str(&ifsm_corrected::section(
            results.iter().map(|(name, (m, _))| {
                if cyclic {
                    (
                        name.as_str(),
                        &m.ifsm_cyclic,
                        m.ifsm_cyclic_corrected.as_ref(),
                    )
                } else {
                    (name.as_str(), &m.ifsm, m.ifsm_corrected.as_ref())
                }
            }),
            cyclic,
        ));
    }
    s.push_str(&ifsm_corrected::ppi_section(
        results
            .iter()
            .map(|(name, (m, _))| (name.as_str(), m.ifsm_ppi.as_ref())),
    ));
    s.push_str(&letter_judge_section(letter, results));
    let empty: usize = results.values().map(|(_, c)| c.empty_ending).sum();
    if empty > 0 {
        let left_out: usize = results
            .values()
            .filter_map(|(m, _)| m.dissimilarity_left_out)
            .sum();
        s.push_str(&format!(
            "\n{empty} empty ending(s) count in IFSM as Not-Follow (`status: \"empty_ending\"` \
             in items.jsonl); {left_out} of them were left out of the Dissimilarity pairs.\n"
        ));
    }
    let unscored: usize = results
        .values()
        .map(|(_, c)| c.generations - c.scored - c.empty_ending)
        .sum();
    if unscored > 0 {
        s.push_str(&format!(
            "\n{unscored} generation(s) were not scored (unknown question or a second ending \
             for the same question); each is listed in items.jsonl with its status.\n"
        ));
    }
    let gaps: Vec<(&String, &Coverage)> = coverage.iter().filter(|(_, c)| c.missing > 0).collect();
    if !gaps.is_empty() {
        s.push_str("\n## Coverage gaps\n\n");
        for (g, c) in gaps {
            s.push_str(&format!(
                "- {g}: {} of {} dataset question(s) without an ending; first: {}{}\n",
                c.missing,
                c.questions,
                c.missing_ids.join(", "),
                if c.missing > c.missing_ids.len() {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
    }
    s
}

/// What the warnings of a story run rest on beyond its metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoryFacts {
    /// Per group, judged endings that copy another option of their question and were not
    /// picked (the judge scores the two alike; the tie goes to the lowest slot or to rounding).
    pub option_copies: BTreeMap<String, usize>,
    /// The dataset calibration's rates against the human labels', when both ran.
    pub agreement: Option<ifsm_corrected::CalibrationAgreement>,
    /// The judge as named on the command line, when it ran.
    pub judge: Option<String>,
    /// The embedder as named on the command line, when it ran.
    pub embedder: Option<String>,
}

/// Every warning a reader of a story run must see, in the order report.md gives them (its
/// "Warnings" section) and the terminal prints them: an uninformative judge, a dataset
/// calibration that the labels contradict, a judge below chance on the human options, a model
/// below chance (with the likely cause when ties show it), missing questions.
pub fn warnings(
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    coverage: &BTreeMap<String, Coverage>,
    facts: &StoryFacts,
) -> Vec<String> {
    let mut out = Vec::new();
    // The calibration does not depend on the model: the first group with one speaks for all.
    let calibrated = results
        .values()
        .find_map(|(m, _)| m.ifsm_corrected.as_ref().filter(|c| !c.is_empty()));
    if let Some(c) = calibrated {
        for (name, e) in c.sources() {
            if !e.informative {
                out.push(format!(
                    "This judge cannot measure IFSM on this dataset ({name} calibration): J = \
                     {:.3}, its 95% interval [{:.3}, {:.3}] reaches 0, so no corrected value is \
                     given; choose a judge by its J (`scorekit judge eval`). {}",
                    e.j,
                    e.j_ci[0],
                    e.j_ci[1],
                    ifsm_corrected::LabelsNeeded::of(e.q0, e.q1).sentence()
                ));
            }
        }
    }
    if facts.agreement.as_ref().is_some_and(|a| a.differs()) {
        out.push(
            "The dataset calibration does not describe this judge on these endings (Fisher \
             p < 0.05 against the human labels): use the `ppi` or `labels` estimate, not \
             `dataset`."
                .into(),
        );
    }
    // The judge's ceiling is the same items for every group: say it once.
    if let Some((m, _)) = results.values().find(|(m, _)| m.judge_accuracy.is_some()) {
        if let (Some(acc), Some(chance)) = (m.judge_accuracy, m.chance) {
            if acc.value < chance {
                out.push(format!(
                    "The judge is below chance on the human options: accuracy {}% < chance {}%; \
                     its IFSM verdicts carry no information.",
                    percent(acc.value),
                    percent(chance)
                ));
            }
        }
    }
    for (name, (m, _)) in results {
        let (Some(ifsm), Some(chance)) = (m.ifsm, m.chance) else {
            continue;
        };
        if ifsm.value >= chance {
            continue;
        }
        let mut line = format!(
            "{name}: IFSM {}% is below chance ({}%).",
            percent(ifsm.value),
            percent(chance)
        );
        let copies = facts.option_copies.get(name).copied().unwrap_or(0);
        if copies > 0 {
            line.push_str(&format!(
                " {copies} of its {} endings are the text of another option of their question \
                 and were not picked: the judge scores the two alike, and the tie goes to the \
                 lower slot (or to rounding), so a copied option is rarely picked \
                 (`ending_is_option` in items.jsonl).",
                m.items
            ));
        }
        out.push(line);
    }
    for (name, c) in coverage.iter().filter(|(_, c)| c.missing > 0) {
        out.push(format!(
            "{name}: {} of {} dataset question(s) have no ending (coverage {}%); its metrics \
             are over the answered ones.",
            c.missing,
            c.questions,
            c.coverage.map(percent).unwrap_or_else(|| "n/a".into())
        ));
    }
    out
}

/// What a story run prints on stdout: the metrics table, the headline per model (raw IFSM and
/// the estimate to publish, with its method) and every warning, as report.md leads with them.
pub fn terminal(
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
    table: &str,
    warnings: &[String],
) -> String {
    let mut s = table.to_string();
    let headlines: Vec<_> = results
        .iter()
        .filter_map(|(name, (m, _))| m.ifsm_headline.as_ref().map(|h| (name, m, h)))
        .collect();
    if !headlines.is_empty() {
        s.push_str("\nHeadline IFSM % (raw -> headline, method; docs/story.md):\n");
        for (name, m, h) in headlines {
            s.push_str(&format!(
                "  {name}: {} -> {} ({})\n",
                est(&m.ifsm),
                h.shown(),
                h.method
            ));
        }
    }
    for w in warnings {
        s.push_str(&format!("\nwarning: {w}\n"));
    }
    s
}

/// report.md's "what these numbers are" block under the first table: each column in a line,
/// the tie rule, and the models with their roles.
fn explanation(facts: &StoryFacts) -> String {
    let mut s = String::from(
        "\n### What these numbers are\n\n\
         - **IFSM**: share of a model's endings the judge picks when the ending replaces the gold \
         option of its question (instruction following); an empty ending counts as not picked, \
         without the judge. Ties between option scores go to the lowest slot.\n\
         - **judge acc. / consist.**: the judge on the human options of the same questions, its \
         ceiling; consistency is the share of stories with every question right.\n\
         - **chance**: what a judge picking uniformly among the four options scores (25%).\n\
         - **coverage**: dataset questions with an ending of the model; **scored**, **empty**: \
         its endings scored and empty; **not scored**: endings of unknown questions or a second \
         ending for one question (listed in items.jsonl).\n\
         - **Dissim. micro / macro**: Dissimilarity, 1 − cos of the embedder's vectors of two \
         endings of the same story, averaged over all pairs (micro) or first per story, then \
         over stories (macro); a story with fewer than two scored endings has no pair.\n\
         - Intervals: 95% bootstrap over items (IFSM, accuracy), stories (consistency, macro) \
         or pairs (micro).\n",
    );
    if let Some(j) = &facts.judge {
        s.push_str(&format!("- The judge (IFSM, the ceiling): `{j}`.\n"));
    }
    if let Some(e) = &facts.embedder {
        s.push_str(&format!("- The embedder (Dissimilarity): `{e}`.\n"));
    }
    s
}

/// The protocol a letter judge's verdicts rest on, as its run recorded it (report.md lists it).
#[derive(Debug, Clone, PartialEq)]
pub struct LetterProtocol {
    /// The prompt: shots and the template.
    pub prompt: String,
    /// Greedy decoding and its length limit.
    pub decoding: String,
    /// How the pick is read off the answer.
    pub pick: String,
    /// The cyclic option orders, when they ran.
    pub option_orders: Option<String>,
}

/// For a letter judge: the protocol its verdicts rest on, and the cyclic orders' IFSM per group
/// when they ran. Empty for scoring judges (`letter` is `None`).
fn letter_judge_section(
    letter: Option<&LetterProtocol>,
    results: &BTreeMap<String, (GroupMetrics, Counts)>,
) -> String {
    let Some(p) = letter else {
        return String::new();
    };
    let mut s = String::from("\n## Letter judge\n\n");
    for (label, value) in [
        ("prompt", Some(&p.prompt)),
        ("decoding", Some(&p.decoding)),
        ("pick", Some(&p.pick)),
        ("option orders", p.option_orders.as_ref()),
    ] {
        if let Some(v) = value {
            s.push_str(&format!("- {label}: {v}\n"));
        }
    }
    for (group, (m, _)) in results {
        if m.ifsm_cyclic.is_some() {
            s.push_str(&format!(
                "- {group}, cyclic option orders (apart from the reference protocol): IFSM {}, judge accuracy {}\n",
                est(&m.ifsm_cyclic),
                est(&m.judge_accuracy_cyclic)
            ));
        }
    }
    s
}

/// The main table as the shared table model (tables.tex, table.csv): one row per result group.
pub fn main_table(results: &BTreeMap<String, (GroupMetrics, Counts)>) -> DataTable {
    let mut t = DataTable::new(
        "Possible Stories: IFSM and Dissimilarity per model (rates in %, 95% bootstrap intervals)",
        &[
            "model",
            "scored",
            "not scored",
            "IFSM",
            "judge accuracy",
            "judge consistency",
            "chance",
            "Dissimilarity micro",
            "pairs",
            "Dissimilarity macro",
            "stories",
        ],
    );
    let number = |e: &Option<Estimate>| e.map_or(Cell::Missing, |e| Cell::NumberCi(e, 4));
    let n = |e: &Option<Estimate>| e.map_or(Cell::Missing, |e| Cell::Count(e.n as u64));
    for (name, (m, c)) in results {
        t.push(vec![
            Cell::Text(name.clone()),
            Cell::Count(c.scored as u64),
            Cell::Count((c.generations - c.scored) as u64),
            Cell::rate_ci(m.ifsm),
            Cell::rate_ci(m.judge_accuracy),
            Cell::rate_ci(m.judge_consistency),
            Cell::rate(m.chance),
            number(&m.dissimilarity_micro),
            n(&m.dissimilarity_micro),
            number(&m.dissimilarity_macro),
            n(&m.dissimilarity_macro),
        ]);
    }
    t
}

/// ifsm.svg: per model, IFSM with its interval beside the judge's ceiling (its accuracy on the
/// human options of the same questions), chance marked. `None` when the judge did not run.
pub fn ifsm_chart(results: &BTreeMap<String, (GroupMetrics, Counts)>) -> Option<String> {
    if results.values().all(|(m, _)| m.ifsm.is_none()) {
        return None;
    }
    let rows: Vec<ChartRow> = results
        .iter()
        .map(|(name, (m, _))| ChartRow {
            name: name.clone(),
            values: vec![m.ifsm, m.judge_accuracy],
            reference: m.chance,
        })
        .collect();
    Some(interval_chart(
        "Possible Stories: IFSM beside the judge's ceiling (%)",
        &["IFSM", "judge accuracy (ceiling)"],
        &rows,
        "chance",
    ))
}
