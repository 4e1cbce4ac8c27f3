//! items.jsonl lines written by hand: the fields every item of one file shares (file,
//! configuration, task type, task) rendered once per file, the rest per item. The bytes are
//! serde_json's for an [`Item`] (test `hand_written_lines_equal_serde_json`); serde_json's
//! own writer spent ~4% of a stored-flags run escaping the same shared strings again and again.

use super::Item;
use std::io::Write;

/// The JSON lines of items, the shared part of the last file's items kept rendered.
#[derive(Default)]
pub struct ItemLines {
    /// The item whose shared fields `head` and `middle` render (fields other than those unused).
    shared: Option<Item>,
    /// `{"file":…,"line":`
    head: Vec<u8>,
    /// `,"agent":…,"task_type":…,"task":…,"task_id":`
    middle: Vec<u8>,
    line: Vec<u8>,
}

impl ItemLines {
    /// Append `it` as one JSON line (with its `\n`) to `out`.
    pub fn write(&mut self, it: &Item, out: &mut impl Write) -> std::io::Result<()> {
        if !self.shares_with(it) {
            self.render_shared(it)?;
        }
        let mut n = itoa::Buffer::new();
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(&self.head);
        l.extend_from_slice(n.format(it.line).as_bytes());
        l.extend_from_slice(b",\"row\":");
        l.extend_from_slice(n.format(it.row).as_bytes());
        l.extend_from_slice(&self.middle);
        serde_json::to_writer(&mut *l, &it.task_id)?;
        l.extend_from_slice(b",\"success\":");
        l.extend_from_slice(bool_json(it.success));
        l.extend_from_slice(b",\"rechecked\":");
        l.extend_from_slice(it.rechecked.map_or(&b"null"[..], bool_json));
        l.extend_from_slice(b",\"recheck_note\":");
        serde_json::to_writer(&mut *l, &it.recheck_note)?;
        l.extend_from_slice(b",\"invalid_actions\":");
        l.extend_from_slice(n.format(it.invalid_actions).as_bytes());
        l.extend_from_slice(b",\"turns\":");
        l.extend_from_slice(n.format(it.turns).as_bytes());
        l.extend_from_slice(b",\"escaped_underscore\":");
        l.extend_from_slice(bool_json(it.escaped_underscore));
        l.extend_from_slice(b",\"python_tag\":");
        l.extend_from_slice(bool_json(it.python_tag));
        l.extend_from_slice(b",\"terminate_reason\":");
        serde_json::to_writer(&mut *l, &it.terminate_reason)?;
        l.extend_from_slice(b",\"duplicate\":");
        l.extend_from_slice(bool_json(it.duplicate));
        l.extend_from_slice(b"}\n");
        out.write_all(l)
    }

    fn shares_with(&self, it: &Item) -> bool {
        self.shared.as_ref().is_some_and(|s| {
            s.file == it.file
                && s.config == it.config
                && s.task_type == it.task_type
                && s.task == it.task
        })
    }

    fn render_shared(&mut self, it: &Item) -> std::io::Result<()> {
        self.head.clear();
        self.head.extend_from_slice(b"{\"file\":");
        serde_json::to_writer(&mut self.head, &it.file)?;
        self.head.extend_from_slice(b",\"line\":");
        // The configuration is flattened into the item: its object's fields, in order.
        let config = serde_json::to_vec(&it.config)?;
        self.middle.clear();
        self.middle.push(b',');
        self.middle
            .extend_from_slice(&config[1..config.len().saturating_sub(1)]);
        self.middle.extend_from_slice(b",\"task_type\":");
        serde_json::to_writer(&mut self.middle, &it.task_type)?;
        self.middle.extend_from_slice(b",\"task\":");
        serde_json::to_writer(&mut self.middle, &it.task)?;
        self.middle.extend_from_slice(b",\"task_id\":");
        self.shared = Some(it.clone());
        Ok(())
    }
}

fn bool_json(b: bool) -> &'static [u8] {
    if b {
        b"true"
    } else {
        b"false"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::layout::ConfigKey;

    fn item(file: &str, agent: &str, task: &str, n: usize) -> Item {
        Item {
            file: file.into(),
            line: n * 7 + 1,
            row: n + 1,
            config: ConfigKey {
                agent: agent.into(),
                feedback_model: if n.is_multiple_of(2) {
                    "None".into()
                } else {
                    "gpt-4-0613".into()
                },
                feedback_setting: "no_GT-textual".into(),
                k: 5,
                p: 2,
            },
            task_type: "reasoning".into(),
            task: task.into(),
            task_id: ["12", "mbpp/3", "é\"\\\n\u{1}", ""][n % 4].into(),
            success: n.is_multiple_of(3),
            rechecked: [None, Some(true), Some(false)][n % 3],
            recheck_note: [None, Some("answer \"42\"\t∞".into())][n % 2].clone(),
            invalid_actions: n as u64 * 1_000_000_007,
            turns: u64::MAX - n as u64,
            escaped_underscore: n.is_multiple_of(5),
            python_tag: n.is_multiple_of(7),
            terminate_reason: [None, Some("max_iterations".into()), Some("".into())][n % 3].clone(),
            duplicate: n % 4 == 1,
        }
    }

    #[test]
    fn hand_written_lines_equal_serde_json() {
        let files = [
            (
                "c/F=None/max5_p2/reasoning/gsm8k/results.jsonl",
                "gpt",
                "gsm8k",
            ),
            (
                "c/F=None/max5_p2/reasoning/math/results.jsonl",
                "gpt",
                "math",
            ),
            ("odd \"name\"\\/é\u{7f}.jsonl", "agent \u{2028} x", "t\tab"),
        ];
        let mut lines = ItemLines::default();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for n in 0..40 {
            let (file, agent, task) = files[n / 5 % files.len()];
            let it = item(file, agent, task, n);
            lines.write(&it, &mut got).unwrap();
            serde_json::to_writer(&mut want, &it).unwrap();
            want.push(b'\n');
        }
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }
}
