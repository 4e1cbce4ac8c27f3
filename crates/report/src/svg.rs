//! SVG writers, dependency-free: MINT's sr_curves.svg (SR_k (micro, %) against k, one line per
//! agent) and [`interval_chart`], rates with their 95% intervals per category beside reference
//! marks (story's IFSM beside the judge's ceiling, MuSE's TS / FoT / O, GRASP's accuracy per test
//! with its chance level).

use super::mint::Table2Row;
use super::Estimate;

/// One category (a row of the chart): its name, one estimate per series, and an optional
/// reference level drawn across it (a chance level).
#[derive(Debug, Clone, PartialEq)]
pub struct ChartRow {
    /// Category name (a model, a test, a number of tasks).
    pub name: String,
    /// One rate per series, `None` where there is none.
    pub values: Vec<Option<Estimate>>,
    /// A reference rate for this category, drawn as a dashed mark.
    pub reference: Option<f64>,
}

/// Rates in [0, 1] with their 95% intervals, one horizontal band per category and one dot with
/// whiskers per series in it, on a 0-100 % axis; `reference_label` names the dashed marks.
pub fn interval_chart(
    title: &str,
    series: &[&str],
    rows: &[ChartRow],
    reference_label: &str,
) -> String {
    let band = 14.0 * series.len().max(1) as f64 + 12.0;
    // Room for the longest category name (about 7 px a character at 12 px sans-serif).
    let longest = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let left = (7.0 * longest as f64 + 20.0).max(120.0);
    let (right, top, bottom) = (40.0, 40.0, 70.0);
    let w = left + 490.0;
    let h = top + bottom + band * rows.len().max(1) as f64;
    let pw = w - left - right;
    let x = |v: f64| left + v.clamp(0.0, 1.0) * pw;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\">{}</text>\n",
        w / 2.0,
        esc(title)
    ));
    let bottom_y = top + band * rows.len() as f64;
    for t in 0..=10 {
        let v = t as f64 / 10.0;
        s.push_str(&format!(
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{bottom_y:.1}\" stroke=\"#eee\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            bottom_y + 16.0,
            t * 10,
            xx = x(v)
        ));
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">% (dots: value; whiskers: 95% interval)</text>\n",
        left + pw / 2.0,
        bottom_y + 34.0
    ));
    for (i, r) in rows.iter().enumerate() {
        let y0 = top + band * i as f64;
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left - 8.0,
            y0 + band / 2.0 + 4.0,
            esc(&r.name)
        ));
        if let Some(c) = r.reference {
            s.push_str(&format!(
                "<line class=\"reference\" x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n",
                y0 + 2.0,
                y0 + band - 2.0,
                xx = x(c)
            ));
        }
        for (k, v) in r.values.iter().enumerate() {
            let Some(e) = v else { continue };
            let y = y0 + 10.0 + 14.0 * k as f64;
            let c = COLOURS[k % COLOURS.len()];
            s.push_str(&format!(
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"2\"/><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{c}\"><title>{}: {:.1} [{:.1}, {:.1}]{}</title></circle>\n",
                x(e.ci_low),
                x(e.ci_high),
                x(e.value),
                esc(series.get(k).copied().unwrap_or("")),
                e.value * 100.0,
                e.ci_low * 100.0,
                e.ci_high * 100.0,
                // n = 0: a value without items behind it (MINT's published SR_5 figures).
                if e.n > 0 { format!(" n={}", e.n) } else { String::new() }
            ));
        }
    }
    let mut lx = left;
    let ly = h - 14.0;
    for (k, name) in series.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        s.push_str(&format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            lx,
            ly - 4.0,
            lx + 8.0,
            ly,
            esc(name)
        ));
        lx += 20.0 + 7.0 * name.chars().count() as f64;
    }
    if rows.iter().any(|r| r.reference.is_some()) {
        s.push_str(&format!(
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#555\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            lx,
            lx,
            ly - 12.0,
            ly + 2.0,
            lx + 6.0,
            ly,
            esc(reference_label)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// Series colours of every chart.
pub const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Escape text for SVG (also used inside attribute-free `<title>` and `<text>`).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Render the curves; the y axis spans 0 to the next multiple of 10 above the largest SR.
pub fn sr_curves(rows: &[Table2Row]) -> String {
    let (w, h, left, right, top, bottom) = (640.0, 400.0, 60.0, 200.0, 30.0, 50.0);
    let max = rows
        .iter()
        .flat_map(|r| r.sr.iter().flatten())
        .fold(10.0f64, |a, b| a.max(*b));
    let ymax = (max / 10.0).ceil() * 10.0;
    let pw = w - left - right;
    let ph = h - top - bottom;
    let x = |k: f64| left + (k - 1.0) / 4.0 * pw;
    let y = |v: f64| top + ph - v / ymax * ph;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    s.push_str(&format!(
        "<text x=\"{}\" y=\"18\" text-anchor=\"middle\">MINT: success rate SR_k (micro, %) by turn budget k</text>\n",
        left + pw / 2.0
    ));
    let mut tick = 0.0;
    while tick <= ymax + 1e-9 {
        s.push_str(&format!(
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{tick}</text>\n",
            left + pw,
            left - 6.0,
            y(tick) + 4.0,
            yy = y(tick)
        ));
        tick += ymax / 5.0;
    }
    for k in 1..=5 {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{k}</text>\n",
            x(k as f64),
            top + ph + 18.0
        ));
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">k (turn budget)</text>\n",
        left + pw / 2.0,
        h - 10.0
    ));
    s.push_str(&format!(
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{left}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"black\"/>\n",
        top + ph,
        left + pw,
        top + ph,
        top + ph
    ));
    for (i, r) in rows.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> =
            r.sr.iter()
                .enumerate()
                .filter_map(|(k, v)| v.map(|v| format!("{:.1},{:.1}", x(k as f64 + 1.0), y(v))))
                .collect();
        if pts.len() > 1 {
            s.push_str(&format!(
                "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\n",
                pts.join(" ")
            ));
        }
        for p in &pts {
            let (px, py) = p.split_once(',').expect("point");
            s.push_str(&format!(
                "<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{c}\"/>\n"
            ));
        }
        let ly = top + 10.0 + i as f64 * 18.0;
        s.push_str(&format!(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
            left + pw + 12.0,
            left + pw + 32.0,
            left + pw + 38.0,
            ly + 4.0,
            esc(&r.agent)
        ));
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_chart_draws_a_dot_per_value_and_a_mark_per_reference() {
        let e = |v: f64| {
            Some(Estimate {
                value: v,
                n: 10,
                ci_low: v - 0.1,
                ci_high: v + 0.1,
            })
        };
        let rows = vec![
            ChartRow {
                name: "m<1>".into(),
                values: vec![e(0.4), e(0.7)],
                reference: Some(0.25),
            },
            ChartRow {
                name: "m2".into(),
                values: vec![None, e(0.9)],
                reference: Some(0.25),
            },
        ];
        let s = interval_chart("IFSM", &["IFSM", "judge"], &rows, "chance");
        // Three values plus two legend dots.
        assert_eq!(s.matches("<circle").count(), 5);
        assert_eq!(s.matches("class=\"reference\"").count(), 2);
        assert!(s.contains("m&lt;1&gt;") && s.contains("IFSM: 40.0 [30.0, 50.0] n=10"));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    }

    #[test]
    fn one_polyline_per_agent_with_two_points() {
        let rows = vec![
            Table2Row {
                agent: "a<b".into(),
                sr: [Some(2.7), Some(16.9), None, None, Some(36.2)],
                slope: None,
                r2: None,
            },
            Table2Row {
                agent: "solo".into(),
                sr: [None, None, None, None, Some(34.1)],
                slope: None,
                r2: None,
            },
        ];
        let s = sr_curves(&rows);
        assert_eq!(s.matches("<polyline").count(), 1);
        assert_eq!(s.matches("<circle").count(), 4);
        assert!(s.contains("a&lt;b"));
    }
}
