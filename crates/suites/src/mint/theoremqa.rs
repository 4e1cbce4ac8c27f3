//! TheoremQA checker (spec §3.3): the answer normalisation of `TheoremqaTask.extract_answer`,
//! then [`pyexpr::eval`](super::pyexpr::eval) for its `eval`, then the type conversions and the
//! comparison with the reference. Anything the evaluator does not model is reported as
//! "unsupported" (no verdict) rather than guessed.

use super::pyexpr::{eval, num, EvalError, PyVal};
use super::pyfloat::py_lower;
use crate::pystr::py_strip;
use regex::Regex;
use serde_json::Value as Json;
use std::sync::OnceLock;

/// Result of re-checking one TheoremQA answer.
#[derive(Debug, Clone, PartialEq)]
pub enum TqaVerdict {
    /// The checker would return this verdict.
    Decided(bool),
    /// The expression uses a construct the native evaluator does not model (e.g. `Rational`,
    /// `np.array`, complex numbers); no verdict, the stored flag stands.
    Unsupported(String),
}

use EvalError::{Raises, Unsupported};

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("valid regex"))
}

/// Python `re.match(p + "$", s)` then `re.search(p_with_group + "$", s).group(1)`: `$` also
/// matches before a final newline.
fn unit_rule(s: &str, cell: &'static OnceLock<Regex>, pat: &str) -> Option<String> {
    re(cell, pat)
        .captures(s)
        .map(|c| c.get(1).expect("group").as_str().to_string())
}

/// `TheoremqaTask.extract_answer` up to (not including) `eval`: the normalised expression text.
pub fn normalise(solution: &str) -> String {
    static U1: OnceLock<Regex> = OnceLock::new();
    static U2: OnceLock<Regex> = OnceLock::new();
    static U3: OnceLock<Regex> = OnceLock::new();
    static U4: OnceLock<Regex> = OnceLock::new();
    static POW: OnceLock<Regex> = OnceLock::new();
    static NUM: OnceLock<Regex> = OnceLock::new();
    static OPT: OnceLock<Regex> = OnceLock::new();
    let mut p = solution.to_string();
    if let Some(i) = p.rfind('=') {
        p = py_strip(&p[i + 1..]).to_string();
    }
    if let Some(i) = p.rfind('≈') {
        p = py_strip(&p[i + '≈'.len_utf8()..]).to_string();
    }
    p = p.replace(['`', '$', '°'], "");
    match p.as_str() {
        "true" | "yes" => p = "True".into(),
        "false" | "no" => p = "False".into(),
        _ => {}
    }
    if p.contains("True") {
        p = "True".into();
    } else if p.contains("False") {
        p = "False".into();
    }
    if p.contains("approximately") {
        p = py_strip(&p.replace("approximately", "")).to_string();
    }
    if let Some(i) = p.find(" or ") {
        p.truncate(i);
    }
    const N: &str = r"[-+]?(?:[\d,]*\.*\d+)";
    if let Some(g) = unit_rule(&p, &U1, &format!(r"^({N}) [^0-9 ]+\n?\z")) {
        p = g;
    }
    if let Some(g) = unit_rule(&p, &U2, &format!(r"^[^0-9 ]+ ({N})\n?\z")) {
        p = g;
    }
    if let Some(g) = unit_rule(&p, &U3, &format!(r"^({N})[^\d]{{1,2}}\n?\z")) {
        p = g;
    }
    if let Some(g) = unit_rule(&p, &U4, r"^[^-+\d]{1,2}((?:[\d,]*\.*\d+))\n?\z") {
        p = g;
    }
    if p.contains("10^") {
        p = re(&POW, r"10\^(-?\d+)")
            .replace_all(&p, "math.pow(10, $1)")
            .into_owned();
    }
    p = p.replace(" x ", "*").replace(" × ", "*");
    if re(&NUM, r"^[-+]?(\d{1,3}(,\d{3})*|(\d+))(\.\d+)?\n?\z").is_match(&p) {
        p = p.replace(',', "");
    }
    for l in ['a', 'b', 'c', 'd'] {
        if p.contains(&format!("{l})"))
            || p.contains(&format!("{l} )"))
            || py_strip(&py_lower(&p)) == l.to_string()
        {
            p = format!("({l})");
            break;
        }
    }
    if let Some(m) = re(&OPT, r"\([a-d]\)").find(&p) {
        p = format!("\"{}\"", m.as_str());
    }
    if p.is_empty() {
        p = "0".into();
    }
    p
}

/// Re-check one TheoremQA answer against the typed reference. The answer type is implied by the
/// reference's JSON type (float, integer, list of integer, bool, option), which matches
/// `answer_type` on every instance of the dataset.
pub fn theoremqa_success(reference: &Json, solution: &str) -> TqaVerdict {
    let expr = normalise(solution);
    let pred = match eval(&expr).and_then(convert) {
        Ok(v) => v,
        Err(Raises(_)) => return TqaVerdict::Decided(false),
        Err(Unsupported(why)) => return TqaVerdict::Unsupported(why),
    };
    TqaVerdict::Decided(compare(&pred, reference))
}

/// The type conversions after `eval`: sets and tuples become lists (an empty one raises
/// IndexError at `prediction[0]`).
fn convert(v: PyVal) -> Result<PyVal, EvalError> {
    match v {
        PyVal::Tuple(items) | PyVal::Set(items) => {
            if items.is_empty() {
                Err(Raises("IndexError: list index out of range".into()))
            } else {
                Ok(PyVal::List(items))
            }
        }
        other => Ok(other),
    }
}

fn compare(pred: &PyVal, gt: &Json) -> bool {
    if !matches!(
        pred,
        PyVal::Str(_) | PyVal::Int(_) | PyVal::Float(_) | PyVal::Bool(_) | PyVal::List(_)
    ) {
        return false;
    }
    match gt {
        Json::Bool(_) | Json::String(_) => {
            let shown = match gt {
                Json::Bool(true) => "(True)".to_string(),
                Json::Bool(false) => "(False)".to_string(),
                Json::String(s) => format!("({s})"),
                _ => unreachable!(),
            };
            matches!(pred, PyVal::Str(s) if *s == shown) || py_eq_json(pred, gt)
        }
        Json::Number(_) => compare_two_numbers(pred, gt).unwrap_or(false),
        Json::Array(items) => compare_two_list(pred, items).unwrap_or(false),
        _ => false,
    }
}

fn py_eq_json(p: &PyVal, gt: &Json) -> bool {
    match (p, gt) {
        (PyVal::Str(a), Json::String(b)) => a == b,
        (PyVal::List(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| py_eq_json(x, y))
        }
        (_, Json::Bool(b)) => num(p) == Some(*b as i32 as f64),
        (_, Json::Number(n)) => num(p).is_some() && num(p) == n.as_f64(),
        _ => false,
    }
}

/// `compare_two_numbers`; `Err` where Python raises (round of inf or nan).
fn compare_two_numbers(p: &PyVal, gt: &Json) -> Result<bool, ()> {
    let pv = match p {
        PyVal::Int(_) | PyVal::Float(_) | PyVal::Bool(_) => num(p).expect("number"),
        _ => return Ok(false),
    };
    let Json::Number(g) = gt else {
        return Ok(false);
    };
    if g.is_f64() {
        let g = g.as_f64().ok_or(())?;
        let eps = g.abs() * 0.04;
        Ok(pv >= g - eps && pv <= g + eps)
    } else {
        let rounded = match p {
            PyVal::Float(f) if !f.is_finite() => return Err(()),
            PyVal::Float(f) => f.round_ties_even(),
            _ => pv,
        };
        Ok(g.as_f64() == Some(rounded))
    }
}

fn compare_two_list(pred: &PyVal, gt: &[Json]) -> Result<bool, ()> {
    let PyVal::List(items) = pred else {
        return Ok(false);
    };
    if items.len() != gt.len() || items.iter().any(|x| num(x).is_none()) {
        return Ok(false);
    }
    let mut p: Vec<&PyVal> = items.iter().collect();
    p.sort_by(|a, b| num(a).expect("num").total_cmp(&num(b).expect("num")));
    let mut g: Vec<&Json> = gt.iter().collect();
    g.sort_by(|a, b| {
        let x = a.as_f64().unwrap_or(f64::NAN);
        let y = b.as_f64().unwrap_or(f64::NAN);
        x.total_cmp(&y)
    });
    for (x, y) in p.iter().zip(g) {
        if !compare_two_numbers(x, y)? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(gt: Json, sol: &str) -> bool {
        match theoremqa_success(&gt, sol) {
            TqaVerdict::Decided(b) => b,
            TqaVerdict::Unsupported(w) => panic!("unsupported {w} for {sol:?}"),
        }
    }

    #[test]
    fn normalisation_steps() {
        assert_eq!(normalise("x = 5.2 m/s"), "5.2");
        assert_eq!(normalise("$1,234.5$"), "1234.5");
        assert_eq!(normalise("approximately 3.0"), "3.0");
        assert_eq!(normalise("45°"), "45");
        assert_eq!(normalise("yes"), "True");
        assert_eq!(normalise("It is False"), "False");
        assert_eq!(normalise("2 or 3"), "2");
        assert_eq!(normalise("1.5 x 10^-3"), "1.5*math.pow(10, -3)");
        assert_eq!(normalise("c ) None of the above"), "\"(c)\"");
        assert_eq!(normalise("B"), "\"(b)\"");
        assert_eq!(normalise("50%"), "50");
        assert_eq!(normalise("-12 units"), "-12");
        assert_eq!(normalise(""), "0");
    }

    #[test]
    fn numbers_units_percent_negative() {
        assert!(ok(json!(23.0), "23.5"));
        assert!(!ok(json!(23.0), "25"));
        assert!(ok(json!(-2.47), "-2.472"));
        assert!(ok(json!(5.656), "5.656 m"));
        assert!(ok(json!(12), "12.4"));
        assert!(ok(json!(12), "12.5")); // banker's rounding: round(12.5) == 12
        assert!(!ok(json!(13), "12.5"));
        assert!(ok(json!(1000), "1,000"));
        assert!(ok(json!(0.5), "1/2"));
        assert!(ok(json!(50.0), "50%"));
    }

    #[test]
    fn latex_and_undefined_names_are_wrong() {
        assert!(!ok(json!(0.5), "\\frac{1}{2}"));
        assert!(!ok(json!(0.39), "0.125*pi"));
        assert!(!ok(json!(0.001), "1 x 10^-3"));
        assert!(!ok(json!(1.0), "The answer is 1"));
        assert!(!ok(json!(1.0), "π"));
        assert!(!ok(json!(91.17), "I'm sorry. Let's compute 91.17"));
        assert!(ok(json!(3.1), "np.pi"));
        assert!(ok(json!(1.41), "np.sqrt(2)"));
    }

    #[test]
    fn lists_bools_options() {
        assert!(ok(json!([0, 5]), "[5, 0]"));
        assert!(ok(json!([0, 5]), "(0, 5)"));
        assert!(!ok(json!([0, 5]), "[0, 4, 5]"));
        assert!(!ok(json!([0, 5]), "[]"));
        assert!(!ok(json!([0, 5]), "()"));
        // "True" anywhere collapses the whole answer to True (step 3): not a list.
        assert!(!ok(json!([1, 1]), "[True, True]"));
        assert!(ok(json!(false), "False"));
        assert!(ok(json!(false), "no"));
        assert!(ok(json!(false), "0"));
        assert!(!ok(json!(false), "True"));
        assert!(ok(json!("c"), "c ) None of the above"));
        assert!(ok(json!("c"), "C"));
        assert!(!ok(json!("c"), "b)"));
        assert!(!ok(json!(1.0), "None"));
    }
}
