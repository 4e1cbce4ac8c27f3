//! Rendering of `scorekit judge train` (report.md, curves.svg) and `scorekit judge eval`
//! (report.md, the terminal table), from the JSON documents the commands write.

use serde_json::Value;
use std::fmt::Write as _;

fn pct(v: &Value) -> String {
    v.as_f64()
        .map_or("–".into(), |x| format!("{:.1}%", 100.0 * x))
}

fn estimate(e: &Value) -> String {
    if e.is_null() {
        return "–".into();
    }
    format!(
        "{} [{}, {}] (n = {})",
        pct(&e["value"]),
        pct(&e["ci_low"]),
        pct(&e["ci_high"]),
        e["n"]
    )
}

/// report.md of a training run, from training.json.
pub fn train_report(t: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Judge training\n");
    let _ = writeln!(
        s,
        "- base: `{}` @ `{}`",
        t["base"]["id"].as_str().unwrap_or(""),
        t["base"]["revision"].as_str().unwrap_or("")
    );
    let new_head = t["base"]["new_head"].as_array().map_or(0, Vec::len);
    if new_head > 0 {
        let _ = writeln!(s, "- the base had no multiple-choice head: {new_head} head tensors were initialised as `transformers` does (normal(0, initializer_range) weights, zero biases) from the seed");
    }
    for f in t["train_files"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "- train: `{}` ({} Possible Stories, {} RACE lines; sha256 {})",
            f["path"].as_str().unwrap_or(""),
            f["possible_stories"],
            f["race"],
            f["sha256"].as_str().unwrap_or("")
        );
    }
    if let Some(d) = t["dev_file"].as_object() {
        let _ = writeln!(
            s,
            "- dev: `{}` (sha256 {})",
            d["path"].as_str().unwrap_or(""),
            d["sha256"].as_str().unwrap_or("")
        );
    }
    let r = &t["recipe"];
    let _ = writeln!(s, "- recipe: lr {}, {} questions × {} accumulation per step, weight decay {}, warm-up ratio {} ({} steps), max grad norm {}, seed {}, shuffle {}, dropout {}",
        r["lr"], r["batch_questions"], r["grad_accum"], r["weight_decay"], r["warmup_ratio"], t["warmup_steps"], r["max_grad_norm"], r["seed"], r["shuffle"], r["dropouts"]);
    let _ = writeln!(
        s,
        "- steps: {} of {} ({} per epoch){}, device {}",
        t["steps_done"],
        t["total_steps"],
        t["steps_per_epoch"],
        if t["early_stopped"].as_bool() == Some(true) {
            ", stopped early (patience)"
        } else {
            ""
        },
        t["device"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        s,
        "- kept: step {} (dev accuracy {})\n",
        t["kept"]["step"],
        pct(&t["kept"]["dev_accuracy"])
    );
    if let Some(evals) = t["evals"].as_array().filter(|e| !e.is_empty()) {
        let _ = writeln!(s, "| step | epoch | dev accuracy |\n|---:|---:|---:|");
        for e in evals {
            let _ = writeln!(
                s,
                "| {} | {:.2} | {} |",
                e["step"],
                e["epoch"].as_f64().unwrap_or(0.0),
                pct(&e["accuracy"])
            );
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "Loss per optimiser step and dev accuracy per evaluation: training.json, curves.svg."
    );
    s
}

/// An SVG of the training loss per step (and dev accuracy per evaluation, right axis).
pub fn curves_svg(t: &Value) -> String {
    let (w, h, m) = (640.0, 320.0, 40.0);
    let steps: Vec<(f64, f64)> = t["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["step"].as_f64()?, s["loss"].as_f64()?)))
        .collect();
    let evals: Vec<(f64, f64)> = t["evals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["step"].as_f64()?, e["accuracy"].as_f64()?)))
        .collect();
    let max_step = steps.iter().chain(&evals).map(|p| p.0).fold(1.0, f64::max);
    let (lo, hi) = steps
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 0.5, lo + 0.5)
    };
    let x = |s: f64| m + (w - 2.0 * m) * s / max_step;
    let y = |v: f64, lo: f64, hi: f64| h - m - (h - 2.0 * m) * (v - lo) / (hi - lo);
    let path = |pts: &[(f64, f64)], lo: f64, hi: f64| {
        pts.iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(p.1, lo, hi)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n");
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        h - m,
        w - m,
        h - m
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">optimiser step (0 – {max_step})</text>",
        w / 2.0,
        h - 10.0
    );
    let _ = writeln!(
        s,
        "<text x=\"{m}\" y=\"20\" fill=\"#1f77b4\">training loss ({lo:.4} – {hi:.4})</text>"
    );
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"{}\"/>",
        path(&steps, lo, hi)
    );
    if !evals.is_empty() {
        let _ = writeln!(s, "<text x=\"{}\" y=\"20\" text-anchor=\"end\" fill=\"#d62728\">dev accuracy (0 – 100%)</text>", w - m);
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"#d62728\" points=\"{}\"/>",
            path(&evals, 0.0, 1.0)
        );
        for e in &evals {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#d62728\"/>",
                x(e.0),
                y(e.1, 0.0, 1.0)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// report.md of `judge eval`, from metrics.json.
pub fn eval_report(m: &Value) -> String {
    format!(
        "# Judge evaluation\n\n- judge: `{}` @ `{}` ({})\n- dataset: `{}` (sha256 {})\n- {} questions, {} passages; chance {}\n\n| metric | value [95% CI] |\n|---|---|\n| accuracy | {} |\n| consistency | {} |\n\nConsistency: {}.\n",
        m["judge"]["id"].as_str().unwrap_or(""),
        m["judge"]["revision"].as_str().unwrap_or(""),
        m["engine"].as_str().unwrap_or(""),
        m["dataset"]["path"].as_str().unwrap_or(""),
        m["dataset"]["sha256"].as_str().unwrap_or(""),
        m["questions"],
        m["passages"],
        pct(&m["chance"]),
        estimate(&m["accuracy"]),
        estimate(&m["consistency"]),
        m["consistency_definition"].as_str().unwrap_or(""),
    ) + &calibration_section(m)
        + &picks_section(m)
        + &letter_section(m)
}

/// The judge's resolution in the IFSM frame (metrics.json `calibration`): q1, q0 and
/// J = q0 + q1 − 1 with its interval per calibration, and what J means for IFSM.
fn calibration_section(m: &Value) -> String {
    let Some(c) = m.get("calibration") else {
        return String::new();
    };
    let mut out = String::from(
        "\n## Resolution in the IFSM frame\n\n| calibration | q1 (sensitivity) | q0 (specificity) \
         | J = q0 + q1 − 1 [95% CI] | informative |\n|---|---|---|---|---|\n",
    );
    for (key, name) in [("dataset", "dataset"), ("human", "human labels")] {
        let r = &c[key];
        if r.is_null() {
            continue;
        }
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        out += &format!(
            "| {name} | {} of {} | {} of {} | {:.3} [{:.3}, {:.3}] | {} |\n",
            pct(&r["q1"]),
            r["m1"],
            pct(&r["q0"]),
            r["m0"],
            f("J"),
            r["J_ci"][0].as_f64().unwrap_or(f64::NAN),
            r["J_ci"][1].as_f64().unwrap_or(f64::NAN),
            if r["informative"] == true {
                "yes"
            } else {
                "no"
            }
        );
    }
    out += "
A story run's raw IFSM is p = J·θ + (1 − q0) for a true share θ of endings that             follow: the judge compresses every difference between models by J and lifts weak             models toward 1 − q0. Choose a judge by J, not by accuracy (q1) alone; a judge whose             J interval reaches 0 cannot measure IFSM on this dataset (docs/story.md).\n";
    out
}

/// A letter judge's protocol (metrics.json `letter`) and, with `--option-orders cyclic`, the
/// majority over rotations (metrics.json `cyclic`), reported apart from the reference numbers.
fn letter_section(m: &Value) -> String {
    let mut out = String::new();
    if let Some(l) = m["letter"].as_object() {
        let field = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        out += &format!(
            "\n## Letter protocol\n\n- prompt: {}\n- decoding: {}\n- pick: {}\n",
            field("judge_prompt"),
            field("judge_decoding"),
            field("judge_pick")
        );
    }
    let c = &m["cyclic"];
    if c.is_object() {
        out += &format!(
            "\n## Cyclic option orders (beyond the reference protocol)\n\n{}.\n\n| metric | value [95% CI] |\n|---|---|\n| accuracy | {} |\n| consistency | {} |\n| agreement of the rotations | {} |\n",
            c["definition"].as_str().unwrap_or(""),
            estimate(&c["accuracy"]),
            estimate(&c["consistency"]),
            pct(&c["agreement"]),
        );
    }
    out
}

/// The pick distribution of `judge eval` (metrics.json `picks`) as a markdown table: each
/// position's share of the picks beside its share of the gold answers.
fn picks_section(m: &Value) -> String {
    let Some(counts) = m["picks"]["counts"].as_object() else {
        return String::new();
    };
    let kind = m["judge_kind"].as_str().unwrap_or("");
    let mut out = format!(
        "\n## Picks ({kind} judge)\n\n| position | picks | share | gold share |\n|---|---|---|---|\n"
    );
    for (name, count) in counts {
        let gold = &m["picks"]["gold_share"][name.as_str()];
        let gold = if gold.is_null() {
            "—".to_string()
        } else {
            pct(gold)
        };
        out += &format!(
            "| {name} | {count} | {} | {gold} |\n",
            pct(&m["picks"]["share"][name.as_str()])
        );
    }
    out += &format!(
        "\nTotal variation distance between the picks and the gold answers: {:.3}.\n",
        m["picks"]["total_variation"].as_f64().unwrap_or(f64::NAN)
    );
    out
}

/// The terminal summary of `judge eval`.
pub fn eval_table(m: &Value) -> String {
    format!(
        "accuracy     {}\nconsistency  {}",
        estimate(&m["accuracy"]),
        estimate(&m["consistency"])
    )
}
