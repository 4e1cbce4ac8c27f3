//! The upstream output layout:
//! `<agent>/F=<feedback model>/[PHF=<setting>/]max<k>_p<P>+tool+cd/<task type>/<task>/results.jsonl`.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The three task types and the tasks each holds, with the number of instances a complete
/// configuration has per type.
pub const TASK_TYPES: [(&str, &[&str], usize); 3] = [
    (
        "reasoning",
        &["gsm8k", "hotpotqa", "math", "mmlu", "theoremqa"],
        316,
    ),
    ("decision_making", &["alfworld"], 134),
    ("code_generation", &["humaneval", "mbpp"], 136),
];

/// Expected instances of a task type in a complete configuration.
pub fn expected(task_type: &str) -> usize {
    TASK_TYPES
        .iter()
        .find(|(t, _, _)| *t == task_type)
        .map_or(0, |(_, _, n)| *n)
}

/// One experiment configuration: who ran, with which feedback, with which budget.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ConfigKey {
    /// Evaluated model (first directory).
    pub agent: String,
    /// Feedback model from `F=...` (`None` when there is no feedback).
    pub feedback_model: String,
    /// Feedback setting from `PHF=...` (`None` when the directory is absent).
    pub feedback_setting: String,
    /// Turn budget k.
    pub k: u32,
    /// Allowed proposals P.
    pub p: u32,
}

impl ConfigKey {
    /// True for runs without language feedback.
    pub fn no_feedback(&self) -> bool {
        self.feedback_model == "None"
    }

    /// The configuration's path fragment, for messages and group names.
    pub fn label(&self) -> String {
        let phf = if self.feedback_setting == "None" {
            String::new()
        } else {
            format!("PHF={}/", self.feedback_setting)
        };
        format!(
            "{}/F={}/{}max{}_p{}+tool+cd",
            self.agent, self.feedback_model, phf, self.k, self.p
        )
    }
}

/// Where one results.jsonl belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileKey {
    /// The configuration.
    pub config: ConfigKey,
    /// `reasoning`, `decision_making` or `code_generation`.
    pub task_type: String,
    /// `gsm8k`, ..., `alfworld`.
    pub task: String,
}

/// Parse a results.jsonl path relative to the `--outputs` folder. Components above the agent
/// folder are allowed (pointing at `results/` rather than `results/data/outputs/` works).
/// `Err` says why the path does not fit; nothing is guessed.
pub fn parse_path(rel: &Path) -> Result<FileKey, String> {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let n = parts.len();
    if n < 6 || parts[n - 1] != "results.jsonl" {
        return Err(
            "expected <agent>/F=<model>/[PHF=<setting>/]max<k>_p<P>+tool+cd/<task type>/<task>/results.jsonl"
                .into(),
        );
    }
    let task = &parts[n - 2];
    let task_type = &parts[n - 3];
    let Some((_, tasks, _)) = TASK_TYPES.iter().find(|(t, _, _)| t == task_type) else {
        return Err(format!(
            "task type folder {task_type:?} is not one of reasoning, decision_making, code_generation"
        ));
    };
    if !tasks.contains(&task.as_str()) {
        return Err(format!(
            "task folder {task:?} is not a {task_type} task ({})",
            tasks.join(", ")
        ));
    }
    let (k, p) = parse_exp(&parts[n - 4]).ok_or_else(|| {
        format!(
            "experiment folder {:?} is not max<k>_p<P>+tool+cd",
            parts[n - 4]
        )
    })?;
    let (feedback_setting, f_index) = match parts[n - 5].strip_prefix("PHF=") {
        Some(s) if !s.is_empty() => (s.to_string(), n - 6),
        Some(_) => return Err("empty PHF= folder".into()),
        None => ("None".to_string(), n - 5),
    };
    let feedback_model = parts[f_index]
        .strip_prefix("F=")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!(
                "expected an F=<feedback model> folder, found {:?}",
                parts[f_index]
            )
        })?
        .to_string();
    if f_index == 0 {
        return Err("no agent folder above the F=<feedback model> folder".into());
    }
    Ok(FileKey {
        config: ConfigKey {
            agent: parts[f_index - 1].clone(),
            feedback_model,
            feedback_setting,
            k,
            p,
        },
        task_type: task_type.clone(),
        task: task.clone(),
    })
}

/// `max{k}_p{P}+tool+cd` -> (k, P).
fn parse_exp(s: &str) -> Option<(u32, u32)> {
    let rest = s.strip_prefix("max")?.strip_suffix("+tool+cd")?;
    let (k, p) = rest.split_once("_p")?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if !digits(k) || !digits(p) {
        return None;
    }
    Some((k.parse().ok()?, p.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_upstream_layout() {
        let f = parse_path(Path::new(
            "gpt-3.5-turbo-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl",
        ))
        .unwrap();
        assert_eq!(f.config.agent, "gpt-3.5-turbo-0613");
        assert_eq!(f.config.feedback_model, "gpt-4-0613");
        assert_eq!(f.config.feedback_setting, "no_GT-textual");
        assert_eq!((f.config.k, f.config.p), (5, 2));
        assert_eq!(
            (f.task_type.as_str(), f.task.as_str()),
            ("reasoning", "mmlu")
        );
        let f = parse_path(Path::new(
            "data/outputs/m/F=None/max1_p1+tool+cd/decision_making/alfworld/results.jsonl",
        ))
        .unwrap();
        assert_eq!(f.config.agent, "m");
        assert_eq!(f.config.feedback_setting, "None");
        assert_eq!(f.config.label(), "m/F=None/max1_p1+tool+cd");
    }

    #[test]
    fn misfits_are_explained() {
        for (p, want) in [
            (
                "m/F=None/max5_p2+tool+cd/reasoning/alfworld/results.jsonl",
                "not a reasoning task",
            ),
            (
                "m/F=None/max5+tool+cd/reasoning/math/results.jsonl",
                "experiment folder",
            ),
            (
                "m/G=None/max5_p2+tool+cd/reasoning/math/results.jsonl",
                "F=<feedback model>",
            ),
            (
                "F=None/max5_p2+tool+cd/reasoning/math/results.jsonl",
                "expected",
            ),
            (
                "m/F=None/max5_p2+tool+cd/planning/math/results.jsonl",
                "task type folder",
            ),
        ] {
            let e = parse_path(Path::new(p)).unwrap_err();
            assert!(e.contains(want), "{p}: {e}");
        }
    }
}
