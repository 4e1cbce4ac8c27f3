use super::ask::{LentModels, Protocol};
use super::cache::CalibrationCache;
use super::*;
use crate::story::Question;

/// A scoring judge that prefers longer options and counts what it is asked.
#[derive(Default)]
struct LengthJudge {
    pairs_asked: usize,
    prompts_asked: usize,
}

impl LentModels for LengthJudge {
    fn models(&self) -> crate::models::Models {
        crate::models::Models {
            scoring_judge: true,
            ..Default::default()
        }
    }
    fn score(&mut self, pairs: &[(String, String)]) -> Result<Vec<f32>> {
        self.pairs_asked += pairs.len();
        Ok(pairs.iter().map(|(_, qo)| qo.len() as f32).collect())
    }
    fn answer(&mut self, prompts: &[String]) -> Result<Vec<String>> {
        self.prompts_asked += prompts.len();
        // Always answers (B): the slot shown second.
        Ok(prompts.iter().map(|_| "B".to_string()).collect())
    }
}

fn questions() -> Vec<Question> {
    let q = |i: usize, options: [&str; 4], gold: usize| Question {
        id: format!("s{i}_a_0"),
        row: i + 1,
        passage_id: format!("s{i}"),
        question: "Q".into(),
        document: "D".into(),
        options: options.iter().map(|s| s.to_string()).collect(),
        gold,
    };
    vec![
        // The gold option is the longest: a positive picked; negatives put a shorter option in
        // the gold slot and the long filler elsewhere: none picked.
        q(0, ["a", "bbbbbb", "cc", "d"], 1),
        // The gold option is short: the positive is missed; negatives with a distractor longer
        // than the filler in the gold slot are picked.
        q(1, ["aaaa", "b", "ccccc", "dd"], 1),
    ]
}

fn fillers() -> Vec<Option<String>> {
    vec![Some("ffffffffff".into()), Some("fff".into())]
}

#[test]
fn a_scoring_judge_is_asked_each_pair_once_and_counted_by_the_protocol() {
    let qs = questions();
    let mut judge = LengthJudge::default();
    let done = calibrate(
        &qs,
        &[0, 1],
        &fillers(),
        Protocol::Scoring,
        &mut judge,
        None,
    )
    .unwrap();
    // Four options and the filler per question.
    assert_eq!(judge.pairs_asked, 10);
    assert_eq!(done.items.len(), 8);
    let kinds: Vec<(Kind, Option<usize>, Option<usize>, bool)> = done
        .items
        .iter()
        .map(|i| (i.kind, i.slot, i.pick, i.counted))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (Kind::Positive, None, Some(1), true),
            // slot 0 -> [F, a, cc, d]: the filler wins at 0.
            (Kind::Negative, Some(0), Some(0), true),
            (Kind::Negative, Some(2), Some(2), true),
            (Kind::Negative, Some(3), Some(3), true),
            (Kind::Positive, None, Some(2), false),
            // slot 0 -> [fff, aaaa, ccccc, dd]: ccccc at 2.
            (Kind::Negative, Some(0), Some(2), true),
            // slot 2 -> [aaaa, ccccc, fff, dd]: the gold slot is picked.
            (Kind::Negative, Some(2), Some(1), false),
            (Kind::Negative, Some(3), Some(2), true),
        ]
    );
    let c = counts(&done.items, false).unwrap();
    assert_eq!(
        (
            c.positives,
            c.positives_counted,
            c.negatives,
            c.negatives_counted
        ),
        (2, 1, 6, 5)
    );
    assert!(counts(&done.items, true).is_none(), "no cyclic picks");
}

#[test]
fn the_cache_serves_finished_questions_and_a_torn_line_is_asked_again() {
    let qs = questions();
    let dir = tempfile::tempdir().unwrap();
    let identity = serde_json::json!({"judge": "length"});
    let cache = CalibrationCache::open(dir.path(), "k", &identity).unwrap();
    let use_cache = |recalibrate| {
        Some(CacheUse {
            cache: &cache,
            recalibrate,
        })
    };
    let mut judge = LengthJudge::default();
    let first = calibrate(
        &qs,
        &[0, 1],
        &fillers(),
        Protocol::Scoring,
        &mut judge,
        use_cache(false),
    )
    .unwrap();
    assert_eq!((first.asked, first.from_cache), (2, 0));

    let mut again = LengthJudge::default();
    let second = calibrate(
        &qs,
        &[0, 1],
        &fillers(),
        Protocol::Scoring,
        &mut again,
        use_cache(false),
    )
    .unwrap();
    assert_eq!(
        (second.asked, second.from_cache, again.pairs_asked),
        (0, 2, 0)
    );
    assert_eq!(second.items, first.items);

    // A run killed in the middle of a write: question 1's set is incomplete.
    let path = dir.path().join("k/items.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.match_indices('\n').nth(5).unwrap().0 + 10;
    std::fs::write(&path, &text[..cut]).unwrap();
    let mut third = LengthJudge::default();
    let resumed = calibrate(
        &qs,
        &[0, 1],
        &fillers(),
        Protocol::Scoring,
        &mut third,
        use_cache(false),
    )
    .unwrap();
    assert_eq!((resumed.asked, resumed.from_cache), (1, 1));
    assert_eq!(resumed.items, first.items);

    let mut fresh = LengthJudge::default();
    let redone = calibrate(
        &qs,
        &[0, 1],
        &fillers(),
        Protocol::Scoring,
        &mut fresh,
        use_cache(true),
    )
    .unwrap();
    assert_eq!((redone.asked, redone.from_cache), (2, 0));
    assert_eq!(redone.items, first.items);
}

#[test]
fn a_letter_judge_gets_one_prompt_per_frame_and_rotation() {
    let qs = questions();
    let mut judge = LengthJudge::default();
    let letter = Protocol::Letter {
        shots: "",
        cyclic: false,
    };
    let done = calibrate(&qs, &[0, 1], &fillers(), letter, &mut judge, None).unwrap();
    assert_eq!(judge.prompts_asked, 8);
    // (B) is slot 1, the gold slot of both questions: positives count, negatives do not.
    let c = counts(&done.items, false).unwrap();
    assert_eq!((c.positives_counted, c.negatives_counted), (2, 0));

    let mut cyclic = LengthJudge::default();
    let letter = Protocol::Letter {
        shots: "",
        cyclic: true,
    };
    let done = calibrate(&qs, &[0, 1], &fillers(), letter, &mut cyclic, None).unwrap();
    assert_eq!(cyclic.prompts_asked, 32);
    // Answering (B) in every rotation picks every option once: the tie goes to rotation 0's.
    let c = counts(&done.items, true).unwrap();
    assert_eq!((c.positives_counted, c.negatives_counted), (2, 0));
}

#[test]
fn labels_count_by_their_human_verdict() {
    let qs = questions();
    let labels = vec![
        Label {
            file: "l.jsonl".into(),
            labeller: "l.jsonl".into(),
            line: 1,
            question: 0,
            ending: "a long ending".into(),
            follows: true,
            model: Some("m".into()),
            sample: None,
        },
        Label {
            file: "l.jsonl".into(),
            labeller: "l.jsonl".into(),
            line: 2,
            question: 1,
            ending: "x".into(),
            follows: false,
            model: None,
            sample: None,
        },
    ];
    let mut judge = LengthJudge::default();
    let items = calibrate_labels(&qs, &labels, |_| true, Protocol::Scoring, &mut judge).unwrap();
    assert_eq!(items.len(), 2);
    assert!(items[0].counted && items[1].counted, "{items:?}");
    let c = counts(&items, false).unwrap();
    assert_eq!((c.positives, c.negatives), (1, 1));
    let only = calibrate_labels(
        &qs,
        &labels,
        |q| q.id == "s1_a_0",
        Protocol::Scoring,
        &mut judge,
    )
    .unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].label_line, Some(2));
}
