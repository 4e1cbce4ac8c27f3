//! `scorekit doctor`'s human view: one two-column table per section (what scorekit sees, what it
//! will do). The facts are gathered above (the binary's `doctor` module); this only lays them out.

use crate::Table;

/// One section of the doctor's report: a title and its (what, value) rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// The section's title (`CPU`, `GPU`, ...).
    pub title: String,
    /// (what, value) rows, in order.
    pub rows: Vec<(String, String)>,
}

impl Section {
    /// An empty section.
    pub fn new(title: &str) -> Self {
        Section {
            title: title.into(),
            rows: Vec::new(),
        }
    }

    /// Append a row.
    pub fn row(&mut self, what: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.rows.push((what.into(), value.into()));
        self
    }
}

/// The sections as markdown: a `## title` line and a table each, a blank line between.
pub fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    for (i, s) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("## {}\n\n", s.title));
        let mut t = Table::new(&["what", "value"]);
        for (k, v) in &s.rows {
            t.row(&[k, v]);
        }
        out.push_str(&t.render());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_table_per_section() {
        let mut a = Section::new("CPU");
        a.row("cores", "2")
            .row("paths", "f32: AVX-512 | bf16: none");
        let out = render(&[a, Section::new("GPU")]);
        assert!(out.starts_with("## CPU\n\n| what "), "{out}");
        assert!(out.contains("| cores | 2 "), "{out}");
        assert!(out.contains("AVX-512 \\| bf16"), "{out}");
        assert!(out.contains("\n## GPU\n"), "{out}");
    }
}
