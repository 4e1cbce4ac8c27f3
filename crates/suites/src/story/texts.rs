//! The texts report.html shows beside story's items (and `judge eval`'s): each question's
//! passage, question and options from the dataset (inputs[0]) and each generation's ending by
//! its line (inputs[1]), read again from the inputs metrics.json records, and only where a file
//! is still at its recorded path with its recorded sha256 (a moved or edited input shows no
//! text rather than the wrong one). items.jsonl itself stays as it is.

use scorekit_report::{sha256_file, InputFile, MetricsDoc};
use serde_json::{json, Map, Value};
use std::io::BufRead;
use std::path::Path;

/// `{"questions": {id: {passage, question, options}}, "endings": {line: ending}}`, or `None`
/// where the dataset or the generations are not found as recorded.
pub fn page_texts(doc: &MetricsDoc) -> Option<Value> {
    let questions = questions(doc.inputs.first()?)?;
    let generations = unchanged(doc.inputs.get(1)?)?;
    let mut endings = Map::new();
    for_lines(&generations, |line, v| {
        if let Some(e) = v.get("ending").and_then(Value::as_str) {
            endings.insert(line.to_string(), Value::String(e.to_string()));
        }
    })?;
    Some(json!({"questions": questions, "endings": endings}))
}

/// `{"questions": {id: {passage, question, options}}}` of a question file alone (inputs[0]:
/// `judge eval`'s), or `None` where it is not found as recorded.
pub fn question_texts(doc: &MetricsDoc) -> Option<Value> {
    Some(json!({"questions": questions(doc.inputs.first()?)?}))
}

/// Each question of a Possible Stories question file by id: its passage, question and options.
fn questions(input: &InputFile) -> Option<Map<String, Value>> {
    let dataset = unchanged(input)?;
    let mut questions = Map::new();
    for_lines(&dataset, |_, v| {
        if let Some(id) = v.get("question_id").and_then(Value::as_str) {
            questions.insert(
                id.to_string(),
                json!({
                    "passage": v.get("document").cloned().unwrap_or(Value::Null),
                    "question": v.get("question").cloned().unwrap_or(Value::Null),
                    "options": v.get("options").cloned().unwrap_or(Value::Null),
                }),
            );
        }
    })?;
    Some(questions)
}

/// The input's path, if the file there still has the recorded sha256.
fn unchanged(input: &InputFile) -> Option<std::path::PathBuf> {
    let p = Path::new(&input.path).to_path_buf();
    (sha256_file(&p).ok()? == input.sha256).then_some(p)
}

/// Each JSON object line of a JSON Lines file with its 1-based line number (other lines are
/// skipped: the run has checked them already).
fn for_lines(path: &Path, mut f: impl FnMut(usize, &Value)) -> Option<()> {
    let file = std::fs::File::open(path).ok()?;
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.ok()?;
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            f(i + 1, &v);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_come_from_unchanged_inputs_only() {
        let dir = tempfile::tempdir().unwrap();
        let ds = dir.path().join("test.jsonl");
        let gen = dir.path().join("gen.jsonl");
        std::fs::write(
            &ds,
            "{\"question_id\":\"q1\",\"document\":\"P\",\"question\":\"Q?\",\"options\":[\"a\",\"b\",\"c\",\"d\"],\"gold_label\":1}\n",
        )
        .unwrap();
        std::fs::write(
            &gen,
            "{\"question_id\":\"q1\",\"model\":\"m\",\"ending\":\"</script>x\"}\n",
        )
        .unwrap();
        let mut doc = MetricsDoc::new("story");
        doc.inputs = vec![
            InputFile::hash(&ds).unwrap(),
            InputFile::hash(&gen).unwrap(),
        ];
        let t = page_texts(&doc).unwrap();
        assert_eq!(t["questions"]["q1"]["passage"], "P");
        assert_eq!(t["endings"]["1"], "</script>x");
        std::fs::write(
            &gen,
            "{\"question_id\":\"q1\",\"model\":\"m\",\"ending\":\"other\"}\n",
        )
        .unwrap();
        assert!(page_texts(&doc).is_none());
        // A question file alone (judge eval's) still gives its questions.
        let q = question_texts(&doc).unwrap();
        assert_eq!(q["questions"]["q1"]["options"][3], "d");
        std::fs::write(&ds, "{}\n").unwrap();
        assert!(question_texts(&doc).is_none());
    }
}
