//! Task-name aliases: the names planners emit, mapped to MuSE's 18 names.

use super::flow::{line_of, parse_json_text};
use super::is_task;
use scorekit_core::error::InputError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The alias table shipped with scorekit (HuggingGPT, ControlLLM and Hive names of the spec's crosswalk).
pub const SHIPPED_ALIASES: &str = include_str!("../../../../data/muse/aliases.json");

/// Predicted task name -> MuSE candidates (one for a plain alias, several for a coarse name).
#[derive(Debug, Clone, Default)]
pub struct AliasTable {
    map: BTreeMap<String, Vec<String>>,
}

/// One predicted task name and the MuSE task it was mapped to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mapped {
    /// The name as the plan gave it.
    pub raw: String,
    /// The MuSE task, `None` for an unknown name.
    pub muse: Option<String>,
    /// True when the name is coarse (several MuSE candidates) and the gold set chose among them.
    pub coarse: bool,
}

/// Lower case, trimmed, `_` and spaces as `-`: PDDL `AUDIO_TO_TEXT` and tool `text_to_image` match.
pub fn normalize(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c == '_' || c.is_whitespace() {
                '-'
            } else {
                c
            }
        })
        .collect()
}

impl AliasTable {
    /// The shipped table.
    pub fn shipped() -> Self {
        let mut t = AliasTable::default();
        t.extend_from_str("data/muse/aliases.json (built in)", SHIPPED_ALIASES)
            .expect("the shipped alias table is valid");
        t
    }

    /// Add (or override) aliases from a JSON object `{name: task | [tasks]}`, or `{"aliases": {...}}`.
    /// Keys starting with `_` are comments.
    pub fn extend_from_str(&mut self, file: &str, text: &str) -> Result<(), InputError> {
        let doc = parse_json_text(file, text)?;
        let obj = match doc.get("aliases") {
            Some(Value::Object(o)) => o,
            _ => doc.as_object().ok_or_else(|| {
                InputError::file(file, "expected a JSON object {\"name\": \"MuSE task\"}")
            })?,
        };
        for (key, value) in obj {
            if key.starts_with('_') {
                continue;
            }
            let line = line_of(text, &format!("{key:?}")).unwrap_or(1);
            let err = |m: String| InputError::field(file, line, key.clone(), m);
            let targets: Vec<String> = match value {
                Value::String(s) => vec![s.clone()],
                Value::Array(a) if !a.is_empty() => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| err("expected a list of MuSE task names".into()))?,
                _ => {
                    return Err(err(
                        "expected a MuSE task name or a non-empty list of them".into()
                    ))
                }
            };
            if let Some(bad) = targets.iter().find(|t| !is_task(t)) {
                return Err(err(format!("{bad:?} is not one of MuSE's 18 task names")));
            }
            self.map.insert(normalize(key), targets);
        }
        Ok(())
    }

    /// Add (or override) one entry; targets must be MuSE names (used for `--embedder` matches).
    pub fn insert(&mut self, name: &str, targets: Vec<String>) {
        debug_assert!(targets.iter().all(|t| is_task(t)));
        self.map.insert(normalize(name), targets);
    }

    /// Candidates for a name: itself when it is a MuSE name, else the table's entry.
    pub fn candidates(&self, raw: &str) -> Option<Vec<String>> {
        let n = normalize(raw);
        if is_task(&n) {
            return Some(vec![n]);
        }
        self.map.get(&n).cloned()
    }

    /// Map every name of a plan. Plain names first; then each coarse name takes a gold candidate
    /// not yet taken, else any gold candidate, else its first candidate (so it counts as extra).
    pub fn map_plan(&self, nodes: &[Vec<String>], gold: &[String]) -> Vec<Vec<Mapped>> {
        let cands: Vec<Vec<Option<Vec<String>>>> = nodes
            .iter()
            .map(|names| names.iter().map(|n| self.candidates(n)).collect())
            .collect();
        let mut taken: BTreeSet<String> = cands
            .iter()
            .flatten()
            .filter_map(|c| c.as_ref().filter(|c| c.len() == 1).map(|c| c[0].clone()))
            .collect();
        let mut out = Vec::with_capacity(nodes.len());
        for (names, cs) in nodes.iter().zip(&cands) {
            let mut row = Vec::with_capacity(names.len());
            for (raw, c) in names.iter().zip(cs) {
                let (muse, coarse) = match c {
                    None => (None, false),
                    Some(c) if c.len() == 1 => (Some(c[0].clone()), false),
                    Some(c) => {
                        let in_gold = |t: &&String| gold.contains(t);
                        let pick = c
                            .iter()
                            .filter(in_gold)
                            .find(|t| !taken.contains(*t))
                            .or_else(|| c.iter().find(in_gold))
                            .unwrap_or(&c[0])
                            .clone();
                        taken.insert(pick.clone());
                        (Some(pick), true)
                    }
                };
                row.push(Mapped {
                    raw: raw.clone(),
                    muse,
                    coarse,
                });
            }
            out.push(row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn shipped_table_covers_the_crosswalk() {
        let t = AliasTable::shipped();
        for (name, want) in [
            ("text-to-speech", "text-to-audio"),
            ("image-to-text", "image-captioning"),
            ("token-classification", "named-entity-recognition"),
            ("AUDIO_TO_TEXT", "automatic-speech-recognition"),
            ("image_to_depth", "depth-estimation"),
            ("translation", "translation-xx-to-yy"),
            ("Text-To-Image", "text-to-image"),
        ] {
            assert_eq!(t.candidates(name), Some(s(&[want])), "{name}");
        }
        assert_eq!(t.candidates("summarization").unwrap().len(), 3);
        assert!(t.candidates("image-perception").unwrap().len() >= 4);
        assert_eq!(t.candidates("canny-control"), None);
    }

    #[test]
    fn coarse_names_take_distinct_gold_candidates() {
        let t = AliasTable::shipped();
        let gold = s(&[
            "text-generation",
            "translation-xx-to-yy",
            "named-entity-recognition",
        ]);
        let nodes = vec![s(&["chat"]), s(&["translation"]), s(&["chat"])];
        let m = t.map_plan(&nodes, &gold);
        let got: Vec<_> = m.iter().map(|r| r[0].muse.clone().unwrap()).collect();
        assert_eq!(
            got,
            s(&[
                "text-generation",
                "translation-xx-to-yy",
                "named-entity-recognition"
            ])
        );
        assert!(m[0][0].coarse && !m[1][0].coarse);
        // No gold candidate: the first candidate, which the scorer will count as extra.
        let m = t.map_plan(&[s(&["summarization"])], &s(&["text-to-image"]));
        assert_eq!(m[0][0].muse.as_deref(), Some("abstract-summarisation"));
    }

    #[test]
    fn user_aliases_are_validated_with_line_and_key() {
        let mut t = AliasTable::shipped();
        t.extend_from_str("a.json", "{\n \"speak\": \"text-to-audio\"\n}")
            .unwrap();
        assert_eq!(t.candidates("Speak"), Some(s(&["text-to-audio"])));
        let e = t
            .extend_from_str(
                "a.json",
                "{\n \"ok\": \"text-to-audio\",\n \"draw\": \"painting\"\n}",
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.json:3: field \"draw\": \"painting\" is not one of MuSE's 18 task names"
        );
    }
}
