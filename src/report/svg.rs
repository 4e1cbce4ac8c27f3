//! SVG writers: MINT's sr_curves.svg, SR_k (micro, %) against k, one line per agent,
//! dependency-free.

use super::mint::Table2Row;

const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
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
