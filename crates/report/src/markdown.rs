//! A minimal markdown table builder shared by every report.md and the stdout tables.

/// A markdown table: a header row and data rows of equal width.
#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<S: ToString>(headers: &[S]) -> Self {
        Table {
            headers: headers.iter().map(ToString::to_string).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row (short rows are padded with empty cells).
    pub fn row<S: ToString>(&mut self, cells: &[S]) -> &mut Self {
        let mut row: Vec<String> = cells.iter().map(|c| escape(&c.to_string())).collect();
        row.resize(self.headers.len().max(row.len()), String::new());
        self.rows.push(row);
        self
    }

    /// Render as GitHub-flavoured markdown, columns padded for reading as plain text.
    pub fn render(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self
            .headers
            .iter()
            .map(|h| h.chars().count().max(3))
            .collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..cols)
                .map(|i| {
                    let c = cells.get(i).map(String::as_str).unwrap_or("");
                    format!("{c}{}", " ".repeat(width[i] - c.chars().count()))
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut out = line(&self.headers);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Format a rate in [0, 1] as a percentage with one decimal, with its interval when given.
pub fn percent(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_and_escaped() {
        let mut t = Table::new(&["test", "acc"]);
        t.row(&["a|b", "50.0"]).row(&["c"]);
        assert_eq!(
            t.render(),
            "| test | acc  |\n| ---- | ---- |\n| a\\|b | 50.0 |\n| c    |      |\n"
        );
        assert_eq!(percent(0.1234), "12.3");
    }
}
