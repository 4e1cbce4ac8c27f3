//! The SVG charts of `--out`: throughput.svg (real tokens/s against batch tokens) and
//! latency.svg (per-batch percentiles per cell).

use crate::doc::BenchCell;
use scorekit_report::svg::{esc, COLOURS};

/// A series of a chart: a name and its points.
type Series = (String, Vec<(f64, f64)>);

/// throughput.svg: real tokens/s against batch tokens (log scale), one line per (engine, dtype,
/// corpus, max length) series; every cell is a dot with a `<title>` naming it.
pub fn throughput_svg(cells: &[&BenchCell], unit: &str) -> String {
    let mut series: Vec<Series> = Vec::new();
    for c in cells {
        let name = format!("{} {} {} len {}", c.engine, c.dtype, c.corpus, c.max_length);
        let pt = (c.batch_tokens as f64, c.real_tokens_per_s);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push(pt),
            None => series.push((name, vec![pt])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs: Vec<f64> = cells.iter().map(|c| c.batch_tokens as f64).collect();
    let ymax = nice_ceiling(
        cells
            .iter()
            .map(|c| c.real_tokens_per_s)
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.05,
    );
    let xmin = xs.iter().cloned().fold(f64::INFINITY, f64::min).max(1.0);
    let xmax = xs.iter().cloned().fold(0.0f64, f64::max).max(xmin * 2.0);
    let (left, right, top, bottom) = (80.0, 30.0, 40.0, 60.0 + 16.0 * series.len() as f64);
    let (w, ph) = (640.0, 320.0);
    let h = top + ph + bottom;
    let pw = w - left - right;
    let lx = |v: f64| {
        let (a, b) = (xmin.ln(), xmax.ln());
        left + if b > a { (v.ln() - a) / (b - a) } else { 0.5 } * pw
    };
    let ly = |v: f64| top + ph - (v / ymax) * ph;
    let mut s = svg_head(
        w,
        h,
        &format!("Real tokens/s against batch size (tokens), per precision; {unit} in titles"),
    );
    for k in 0..=5 {
        let v = ymax * k as f64 / 5.0;
        s.push_str(&format!(
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + pw,
            left - 6.0,
            ly(v) + 4.0,
            tick(v),
            y = ly(v)
        ));
    }
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in &ticks {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x}</text>\n",
            lx(*x),
            top + ph + 16.0
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">batch tokens (log scale)</text>\n",
        left + pw,
        top + ph,
        top + ph,
        left + pw / 2.0,
        top + ph + 34.0
    ));
    for (k, (name, pts)) in series.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", lx(*x), ly(*y)))
            .collect();
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        ));
        for (x, y) in pts {
            s.push_str(&format!(
                "<circle class=\"cell\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"><title>{}: batch tokens {x}, {y:.0} real tokens/s</title></circle>\n",
                lx(*x),
                ly(*y),
                esc(name)
            ));
        }
        let yy = top + ph + 56.0 + 16.0 * k as f64;
        s.push_str(&format!(
            "<circle cx=\"{left}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"/><text x=\"{:.1}\" y=\"{yy:.1}\">{}</text>\n",
            yy - 4.0,
            left + 10.0,
            esc(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// latency.svg: per-batch p50, p90 and p99 per cell, one horizontal group of three bars per
/// cell; every cell is a `<g class="cell">` with a `<title>` naming it.
pub fn latency_svg(cells: &[&BenchCell]) -> String {
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            format!(
                "{} {} {} bt {} len {}",
                c.engine, c.dtype, c.corpus, c.batch_tokens, c.max_length
            )
        })
        .collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let left = (6.5 * longest as f64 + 20.0).max(120.0);
    let (right, top, bottom, band) = (60.0, 40.0, 60.0, 34.0);
    let pw = 420.0;
    let w = left + pw + right;
    let h = top + bottom + band * cells.len().max(1) as f64;
    let xmax = nice_ceiling(
        cells
            .iter()
            .map(|c| c.latency_ms.p99)
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max)
            .max(1e-3)
            * 1.05,
    );
    let x = |v: f64| left + (v.max(0.0) / xmax) * pw;
    let mut s = svg_head(w, h, "Per-batch latency (ms): p50, p90, p99 per cell");
    let bottom_y = top + band * cells.len() as f64;
    for k in 0..=5 {
        let v = xmax * k as f64 / 5.0;
        s.push_str(&format!(
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{bottom_y:.1}\" stroke=\"#eee\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            bottom_y + 16.0,
            tick(v),
            xx = x(v)
        ));
    }
    let labels = ["p50", "p90", "p99"];
    for (i, (c, name)) in cells.iter().zip(&names).enumerate() {
        let y0 = top + band * i as f64;
        s.push_str(&format!(
            "<g class=\"cell\"><title>{}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms over {} batches</title>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            esc(name),
            c.latency_ms.p50,
            c.latency_ms.p90,
            c.latency_ms.p99,
            c.latency_ms.n,
            left - 8.0,
            y0 + band / 2.0 + 4.0,
            esc(name)
        ));
        for (k, v) in [c.latency_ms.p50, c.latency_ms.p90, c.latency_ms.p99]
            .iter()
            .enumerate()
        {
            s.push_str(&format!(
                "<rect x=\"{left}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" fill=\"{}\"/>\n",
                y0 + 4.0 + 9.0 * k as f64,
                x(*v) - left,
                COLOURS[k]
            ));
        }
        s.push_str("</g>\n");
    }
    let ly = h - 14.0;
    for (k, l) in labels.iter().enumerate() {
        let lx = left + 60.0 * k as f64;
        s.push_str(&format!(
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"10\" height=\"8\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{l}</text>\n",
            ly - 8.0,
            COLOURS[k],
            lx + 14.0
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// The smallest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k at or above `x` (x > 0): an axis end
/// with round ticks at fifths.
fn nice_ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|v| *v >= x)
        .unwrap_or(10.0 * p)
}

/// An axis label: no decimals from 10 up, else up to three significant ones.
fn tick(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

fn svg_head(w: f64, h: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\">{}</text>\n",
        w / 2.0,
        esc(title)
    )
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round() {
        assert_eq!(nice_ceiling(2877.0), 3000.0);
        assert_eq!(nice_ceiling(2100.0), 2500.0);
        assert_eq!(nice_ceiling(0.7), 0.8);
        assert_eq!(nice_ceiling(1000.0), 1000.0);
        assert_eq!(tick(0.4), "0.4");
        assert_eq!(tick(600.0), "600");
    }
}
