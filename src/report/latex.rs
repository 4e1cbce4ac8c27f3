//! LaTeX writers: MINT's tables.tex (the same tables as tables.md, as tabulars).

use super::mint::{artefact_cell, invalid_cell, opt, signed, Tables, TYPES, TYPE_NAMES};
use super::table::tex_escape;

fn bold_tex((s, b): (String, bool)) -> String {
    if b {
        format!("\\textbf{{{s}}}")
    } else {
        s
    }
}

/// tables.tex: the same tables as LaTeX tabulars.
pub fn mint_tables(tables: &Tables) -> String {
    let mut out = String::from("% MINT tables written by scorekit\n");
    out.push_str(
        "% Table 2: SR_k (micro, %) and Delta tools\n\\begin{tabular}{lrrrrrrr}\n\\toprule\n",
    );
    out.push_str("Model & $k=1$ & $k=2$ & $k=3$ & $k=4$ & $k=5$ & $\\Delta_{\\text{tools}}$ & $R^2$ \\\\\n\\midrule\n");
    for r in &tables.table2 {
        let mut cells = vec![tex_escape(&r.agent)];
        cells.extend(r.sr.iter().map(|v| opt(*v, |x| format!("{x:.1}"))));
        cells.push(opt(r.slope, signed));
        cells.push(opt(r.r2, |x| format!("{x:.2}")));
        out.push_str(&format!("{} \\\\\n", cells.join(" & ")));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\n");

    out.push_str("% Table 3: SR_5 (%) without and with feedback, Delta feedback\n\\begin{tabular}{llrrrr}\n\\toprule\n");
    out.push_str(&format!(
        "Model & Feedback & {} \\\\\n\\midrule\n",
        TYPE_NAMES.join(" & ")
    ));
    for r in &tables.table3 {
        let a = tex_escape(&r.agent);
        let fmt = |v: [f64; 4]| v.map(|x| format!("{x:.1}")).join(" & ");
        out.push_str(&format!("{a} & no feedback & {} \\\\\n", fmt(r.without)));
        out.push_str(&format!(
            "{a} & w/ {} ({}) & {} \\\\\n",
            tex_escape(&r.feedback_model),
            tex_escape(&r.feedback_setting),
            fmt(r.with)
        ));
        out.push_str(&format!(
            "{a} & $\\Delta_{{\\text{{feedback}}}}$ & {} \\\\\n",
            r.delta().map(signed).join(" & ")
        ));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\n");

    let k5 = &tables.k5;
    for (title, pick) in [
        ("Invalid actions / turns (k = 5, no feedback)", 0),
        ("Escaped underscore (%, k = 5, no feedback)", 1),
        ("[PYTHON] tag (%, k = 5, no feedback)", 2),
    ] {
        out.push_str(&format!(
            "% {title}\n\\begin{{tabular}}{{lrrrr}}\n\\toprule\n"
        ));
        out.push_str(&format!(
            "Model & {} \\\\\n\\midrule\n",
            TYPE_NAMES.join(" & ")
        ));
        for c in k5 {
            let cells: Vec<String> = TYPES
                .iter()
                .map(|ty| {
                    c.by_type.get(*ty).map_or("n/a".into(), |s| {
                        bold_tex(match pick {
                            0 => invalid_cell(s),
                            1 => artefact_cell(s.underscore, s.n),
                            _ => artefact_cell(s.python, s.n),
                        })
                    })
                })
                .collect();
            out.push_str(&format!(
                "{} & {} \\\\\n",
                tex_escape(&c.agent),
                cells.join(" & ")
            ));
        }
        out.push_str("\\bottomrule\n\\end{tabular}\n\n");
    }
    out
}
