//! The bad-input corpus (tests/bad-input/, listed in cases.tsv): every broken file makes its
//! command exit 2 with a message naming the file (and line and field where it has them), nothing
//! panics, and a bad GRASP file leaves no `--out`. A MuSE planner response that is no plan (a
//! cycle, an unknown dependency, a wrong `tasks`) is the planner's failure, not bad input: exit
//! 0, scored 0, and the warning names file:line (issue 18).

use crate::common;

use common::{repo, scorekit, test_data};
use std::path::Path;

#[test]
fn every_broken_file_exits_2_naming_file_line_and_field() {
    let corpus = repo().join("tests/bad-input");
    let cases = std::fs::read_to_string(corpus.join("cases.tsv")).unwrap();
    let mut n = 0;
    let mut failures = Vec::new();
    for line in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "cases.tsv: {line}");
        let (rel, command, code, fragment) = (cols[0], cols[1], cols[2], cols[3]);
        let tmp = tempfile::tempdir().unwrap();
        let mut file = corpus.join(rel);
        let tree = tmp.path().join("tree");
        if rel.starts_with("mint/") {
            // A MINT outputs tree holding the broken file as a results.jsonl (or as a stray file).
            let dir = tree.join("agent/F=None/max5_p2+tool+cd/reasoning/gsm8k");
            std::fs::create_dir_all(&dir).unwrap();
            let name = if rel.starts_with("mint/stray") {
                "notes.txt"
            } else {
                "results.jsonl"
            };
            std::fs::copy(&file, dir.join(name)).unwrap();
            file = dir.join(name);
        }
        let p = |x: &Path| x.display().to_string();
        let sub = |s: &str| {
            s.replace("{file}", &p(&file))
                .replace("{out}", &p(&tmp.path().join("out")))
                .replace("{tree}", &p(&tree))
                .replace(
                    "{queries}",
                    &p(&test_data("muse:queries", "MuSE_Benchmark/queries.json")),
                )
                .replace(
                    "{plans}",
                    &p(&repo().join("tests/data/muse/hugginggpt.jsonl")),
                )
                .replace(
                    "{dev}",
                    &p(&test_data("possible-stories:dev", "dataset/dev.jsonl")),
                )
                .replace("{nomodel}", &p(&tmp.path().join("no-model")))
                .replace(
                    "{labelgens}",
                    &p(&corpus.join("story-labels/generations.jsonl")),
                )
        };
        let args: Vec<String> = command.split(' ').map(sub).collect();
        let o = scorekit().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        let want = sub(fragment);
        n += 1;
        if o.status.code() != Some(code.parse().unwrap())
            || !stderr.contains(&want)
            || stderr.contains("panicked")
        {
            failures.push(format!(
                "{rel}: exit {:?}, stderr {stderr:?}, wanted exit {code} and {want:?}",
                o.status.code()
            ));
        }
        // GRASP checks every row before it makes `--out`: nothing is written on bad input. (A
        // MINT run may stop after some items, kept in `--out` for a resumed run.)
        if rel.starts_with("grasp/") && tmp.path().join("out").exists() {
            failures.push(format!("{rel}: wrote {{out}} on bad input"));
        }
    }
    assert!(n >= 50, "only {n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
