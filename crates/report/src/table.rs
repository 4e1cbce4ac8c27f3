//! One table model rendered three ways: markdown (report.md, stdout), LaTeX (tables.tex) and CSV
//! (table.csv). A suite builds its main table once as a [`DataTable`]; the writers here keep the
//! three files in step.
//!
//! Cells are typed so that each format shows them its own way: a rate is a percentage with one
//! decimal in markdown and LaTeX and the raw fraction in CSV; a rate with an interval is
//! `36.2 [32.4, 39.9]` in markdown and LaTeX and three CSV columns (`x`, `x_ci_low`, `x_ci_high`).

use super::{percent, Estimate, Table};

/// One cell of a [`DataTable`].
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text, shown as is (escaped for LaTeX and CSV).
    Text(String),
    /// A count.
    Count(u64),
    /// A rate in [0, 1]: a percentage with one decimal; CSV gets the fraction.
    Rate(f64),
    /// A rate with its 95% interval; CSV gets value, low and high as fractions.
    RateCi(Estimate),
    /// A number with this many decimals (same in every format).
    Number(f64, usize),
    /// A number with its 95% interval, with this many decimals.
    NumberCi(Estimate, usize),
    /// No value (`-`; empty in CSV).
    Missing,
    /// Text, in bold (markdown `**x**`, LaTeX `\textbf{x}`) when `bold`.
    Styled {
        /// The text.
        text: String,
        /// Bold or not.
        bold: bool,
    },
    /// Text with its own LaTeX (math, say), used as is in LaTeX; `text` elsewhere.
    Tex {
        /// Markdown and CSV.
        text: String,
        /// LaTeX, not escaped.
        tex: String,
    },
}

impl Cell {
    /// A rate with its interval, or [`Cell::Missing`].
    pub fn rate_ci(e: Option<Estimate>) -> Cell {
        e.map_or(Cell::Missing, Cell::RateCi)
    }

    /// A rate, or [`Cell::Missing`].
    pub fn rate(v: Option<f64>) -> Cell {
        v.map_or(Cell::Missing, Cell::Rate)
    }

    fn has_interval(&self) -> bool {
        matches!(self, Cell::RateCi(_) | Cell::NumberCi(..))
    }

    /// The text shown in markdown and LaTeX.
    fn shown(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Count(n) => n.to_string(),
            Cell::Rate(x) => percent(*x),
            Cell::RateCi(e) => format!(
                "{} [{}, {}]",
                percent(e.value),
                percent(e.ci_low),
                percent(e.ci_high)
            ),
            Cell::Number(x, d) => format!("{x:.d$}"),
            Cell::NumberCi(e, d) => {
                format!("{:.d$} [{:.d$}, {:.d$}]", e.value, e.ci_low, e.ci_high)
            }
            Cell::Missing => "-".into(),
            Cell::Styled { text, bold: true } => format!("**{text}**"),
            Cell::Styled { text, .. } | Cell::Tex { text, .. } => text.clone(),
        }
    }

    /// The cell in LaTeX: escaped text, bold or raw LaTeX where the cell says so.
    fn latex(&self) -> String {
        match self {
            Cell::Styled { text, bold: true } => format!("\\textbf{{{}}}", tex_escape(text)),
            Cell::Styled { text, .. } => tex_escape(text),
            Cell::Tex { tex, .. } => tex.clone(),
            c => tex_escape(&c.shown()),
        }
    }

    /// CSV fields: one, or three for a cell with an interval (`width` 3 columns).
    fn csv_fields(&self, width: usize) -> Vec<String> {
        let mut f = match self {
            Cell::Text(s) | Cell::Styled { text: s, .. } | Cell::Tex { text: s, .. } => {
                vec![s.clone()]
            }
            Cell::Count(n) => vec![n.to_string()],
            Cell::Rate(x) | Cell::Number(x, _) => vec![x.to_string()],
            Cell::RateCi(e) | Cell::NumberCi(e, _) => vec![
                e.value.to_string(),
                e.ci_low.to_string(),
                e.ci_high.to_string(),
            ],
            Cell::Missing => vec![String::new()],
        };
        f.resize(width, String::new());
        f
    }
}

/// A table with a caption, column headers and rows of typed cells.
#[derive(Debug, Clone, Default)]
pub struct DataTable {
    /// One line saying what the table shows (a LaTeX comment and caption line; not in CSV).
    pub caption: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows, each as wide as the headers (short rows are padded with missing cells).
    pub rows: Vec<Vec<Cell>>,
    /// Leading columns set left-aligned in LaTeX (the rest right-aligned).
    pub left: usize,
    /// LaTeX column headers, used as is (math, say), instead of the escaped `headers`.
    pub latex_headers: Option<Vec<String>>,
}

impl DataTable {
    /// An empty table with a caption and headers.
    pub fn new<S: ToString>(caption: &str, headers: &[S]) -> Self {
        DataTable {
            caption: caption.to_string(),
            headers: headers.iter().map(ToString::to_string).collect(),
            rows: Vec::new(),
            left: 1,
            latex_headers: None,
        }
    }

    /// Append a row.
    pub fn push(&mut self, mut row: Vec<Cell>) {
        row.resize(self.headers.len().max(row.len()), Cell::Missing);
        self.rows.push(row);
    }

    /// Markdown (the shared [`Table`] writer).
    pub fn markdown(&self) -> String {
        let mut t = Table::new(&self.headers);
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(Cell::shown).collect();
            t.row(&cells);
        }
        t.render()
    }

    /// A LaTeX tabular (booktabs rules), the first `left` columns left-aligned, the others
    /// right-aligned, preceded by the caption as a comment.
    pub fn latex(&self) -> String {
        let cols = self.headers.len();
        let spec: String = (0..cols)
            .map(|i| if i < self.left { 'l' } else { 'r' })
            .collect();
        let mut s = format!("% {}\n", self.caption.replace('\n', " "));
        s.push_str(&format!("\\begin{{tabular}}{{{spec}}}\n\\toprule\n"));
        let head: Vec<String> = match &self.latex_headers {
            Some(h) => h.clone(),
            None => self.headers.iter().map(|h| tex_escape(h)).collect(),
        };
        s.push_str(&format!("{} \\\\\n\\midrule\n", head.join(" & ")));
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(Cell::latex).collect();
            s.push_str(&format!("{} \\\\\n", cells.join(" & ")));
        }
        s.push_str("\\bottomrule\n\\end{tabular}\n");
        s
    }

    /// CSV (RFC 4180 quoting, `\n` line ends). A column holding an interval anywhere becomes
    /// three columns, `<header>`, `<header>_ci_low`, `<header>_ci_high`.
    pub fn csv(&self) -> String {
        let cols = self.headers.len();
        let wide: Vec<bool> = (0..cols)
            .map(|i| {
                self.rows
                    .iter()
                    .any(|r| r.get(i).is_some_and(Cell::has_interval))
            })
            .collect();
        let mut head = Vec::new();
        for (h, &w) in self.headers.iter().zip(&wide) {
            head.push(h.clone());
            if w {
                head.push(format!("{h}_ci_low"));
                head.push(format!("{h}_ci_high"));
            }
        }
        let mut s = csv_line(&head);
        for r in &self.rows {
            let mut fields = Vec::new();
            for (i, &w) in wide.iter().enumerate() {
                let c = r.get(i).unwrap_or(&Cell::Missing);
                fields.extend(c.csv_fields(if w { 3 } else { 1 }));
            }
            s.push_str(&csv_line(&fields));
        }
        s
    }
}

/// A suite's main table as its two files: `tables.tex` (titled) and `table.csv`.
pub fn table_files(title: &str, table: &DataTable) -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "tables.tex".to_string(),
            latex_document(title, &[table]).into_bytes(),
        ),
        ("table.csv".to_string(), table.csv().into_bytes()),
    ]
}

/// Several tables in one tables.tex, each followed by a blank line.
pub fn latex_document(title: &str, tables: &[&DataTable]) -> String {
    let mut s = format!("% {title} written by scorekit\n");
    for t in tables {
        s.push_str(&t.latex());
        s.push('\n');
    }
    s
}

fn csv_line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect();
    format!("{}\n", quoted.join(","))
}

/// Escape LaTeX's special characters in text.
pub fn tex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(ch);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '\n' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, lo: f64, hi: f64) -> Estimate {
        Estimate {
            value,
            n: 10,
            ci_low: lo,
            ci_high: hi,
        }
    }

    fn sample() -> DataTable {
        let mut t = DataTable::new("Accuracy per model", &["model", "acc", "n"]);
        t.push(vec![
            Cell::Text("gpt_4, \"big\"".into()),
            Cell::RateCi(est(0.5, 0.25, 0.75)),
            Cell::Count(10),
        ]);
        t.push(vec![Cell::Text("b&c".into()), Cell::Missing]);
        t
    }

    #[test]
    fn one_model_three_formats() {
        let t = sample();
        assert_eq!(
            t.markdown(),
            "| model        | acc               | n   |\n\
             | ------------ | ----------------- | --- |\n\
             | gpt_4, \"big\" | 50.0 [25.0, 75.0] | 10  |\n\
             | b&c          | -                 | -   |\n"
        );
        assert_eq!(
            t.latex(),
            "% Accuracy per model\n\\begin{tabular}{lrr}\n\\toprule\nmodel & acc & n \\\\\n\\midrule\n\
             gpt\\_4, \"big\" & 50.0 [25.0, 75.0] & 10 \\\\\nb\\&c & - & - \\\\\n\\bottomrule\n\\end{tabular}\n"
        );
        assert_eq!(
            t.csv(),
            "model,acc,acc_ci_low,acc_ci_high,n\n\"gpt_4, \"\"big\"\"\",0.5,0.25,0.75,10\nb&c,,,,\n"
        );
    }

    #[test]
    fn bold_and_raw_latex_cells_and_left_columns() {
        let mut t = DataTable::new("c", &["a", "b", "x"]);
        t.left = 2;
        t.latex_headers = Some(vec!["a".into(), "b".into(), "$x_1$".into()]);
        t.push(vec![
            Cell::Styled {
                text: "1_2".into(),
                bold: true,
            },
            Cell::Tex {
                text: "Δ".into(),
                tex: "$\\Delta$".into(),
            },
            Cell::Styled {
                text: "3".into(),
                bold: false,
            },
        ]);
        assert!(
            t.markdown().contains("| **1_2** | Δ   | 3   |"),
            "{}",
            t.markdown()
        );
        assert_eq!(
            t.latex(),
            "% c\n\\begin{tabular}{llr}\n\\toprule\na & b & $x_1$ \\\\\n\\midrule\n\
             \\textbf{1\\_2} & $\\Delta$ & 3 \\\\\n\\bottomrule\n\\end{tabular}\n"
        );
        assert_eq!(t.csv(), "a,b,x\n1_2,Δ,3\n");
        assert_eq!(
            latex_document("T", &[&t]),
            format!("% T written by scorekit\n{}\n", t.latex())
        );
    }

    #[test]
    fn escapes_every_latex_special() {
        assert_eq!(
            tex_escape(r"a\b_c%d&e#f$g{h}i~j^k"),
            r"a\textbackslash{}b\_c\%d\&e\#f\$g\{h\}i\textasciitilde{}j\textasciicircum{}k"
        );
    }
}
