//! Python's `float()`, `str.strip()`, `str.isdigit()` and `str.lower()` on the inputs MINT's
//! checkers see: the checkers' verdicts hinge on exactly what Python accepts as a number.

use crate::pystr::py_strip;

/// First code point (digit zero) of every non-ASCII block of Unicode decimal digits (category Nd,
/// Unicode 14, as in CPython 3.11); each block holds the ten digits 0..9 in order.
const ND_ZEROS: [u32; 65] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// The value of a Unicode decimal digit (Python's `unicodedata.decimal`), ASCII included.
pub fn decimal_value(c: char) -> Option<u32> {
    if c.is_ascii_digit() {
        return Some(c as u32 - '0' as u32);
    }
    let cp = c as u32;
    if cp < 0x660 {
        return None;
    }
    ND_ZEROS
        .iter()
        .find(|&&z| cp >= z && cp < z + 10)
        .map(|&z| cp - z)
}

/// Python's `str.lower()` (full Unicode lowercasing; both languages apply the final-sigma rule).
pub fn py_lower(s: &str) -> String {
    s.to_lowercase()
}

/// Python's `str.isdigit()`: non-empty and every character a decimal digit or one of the
/// superscript/subscript/circled digits that have Numeric_Type=Digit.
pub fn py_isdigit(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| {
            decimal_value(c).is_some()
                || matches!(c, '\u{b2}' | '\u{b3}' | '\u{b9}' | '\u{2070}' | '\u{2074}'..='\u{2079}'
                    | '\u{2080}'..='\u{2089}' | '\u{2460}'..='\u{2468}' | '\u{2474}'..='\u{247c}'
                    | '\u{2488}'..='\u{2490}' | '\u{24f5}'..='\u{24fd}' | '\u{24ea}' | '\u{24ff}'
                    | '\u{2776}'..='\u{277e}' | '\u{2780}'..='\u{2788}' | '\u{278a}'..='\u{2792}'
                    | '\u{1369}'..='\u{1371}' | '\u{19da}' | '\u{1f100}'..='\u{1f10a}')
        })
}

/// Python's `float(s)` for a `str` argument: `None` where Python raises `ValueError`.
///
/// Accepts surrounding whitespace, a sign, `inf`/`infinity`/`nan` in any case, decimal literals
/// with an optional exponent, single underscores between digits and any Unicode decimal digits.
pub fn py_float(s: &str) -> Option<f64> {
    let s = py_strip(s);
    // Python maps every Unicode decimal digit to ASCII before parsing.
    let mut ascii = String::with_capacity(s.len());
    for c in s.chars() {
        match decimal_value(c) {
            Some(d) => ascii.push(char::from_digit(d, 10).expect("digit")),
            None if c.is_ascii() => ascii.push(c),
            None => return None,
        }
    }
    let (neg, body) = match ascii.as_bytes().first() {
        Some(b'-') => (true, &ascii[1..]),
        Some(b'+') => (false, &ascii[1..]),
        _ => (false, &ascii[..]),
    };
    let lower = body.to_ascii_lowercase();
    let special = match lower.as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(v) = special {
        return Some(if neg { -v } else { v });
    }
    let digits = validate_decimal(body.as_bytes())?;
    let v: f64 = digits.parse().ok()?;
    Some(if neg { -v } else { v })
}

/// Check Python's decimal float grammar (digits with single underscores between digits, an
/// optional fraction, an optional exponent) and return the literal without underscores.
fn validate_decimal(b: &[u8]) -> Option<String> {
    let mut i = 0;
    let mut out = String::with_capacity(b.len());
    // A digit part: digit (['_'] digit)*; returns the number of digits read.
    let digit_part = |i: &mut usize, out: &mut String| -> Option<usize> {
        let mut n = 0;
        while *i < b.len() {
            let c = b[*i];
            if c.is_ascii_digit() {
                out.push(c as char);
                n += 1;
                *i += 1;
            } else if c == b'_' && n > 0 && *i + 1 < b.len() && b[*i + 1].is_ascii_digit() {
                *i += 1;
            } else {
                break;
            }
        }
        if n > 0 && *i < b.len() && b[*i] == b'_' {
            return None;
        }
        Some(n)
    };
    let int_digits = digit_part(&mut i, &mut out)?;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        out.push('.');
        i += 1;
        if i < b.len() && b[i] == b'_' {
            return None;
        }
        frac_digits = digit_part(&mut i, &mut out)?;
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        out.push('e');
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            out.push(b[i] as char);
            i += 1;
        }
        if digit_part(&mut i, &mut out)? == 0 {
            return None;
        }
    }
    (i == b.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_python_accepts() {
        assert_eq!(py_float(" 42\n"), Some(42.0));
        assert_eq!(py_float("-108.0"), Some(-108.0));
        assert_eq!(py_float("+.5"), Some(0.5));
        assert_eq!(py_float("5."), Some(5.0));
        assert_eq!(py_float("1_000"), Some(1000.0));
        assert_eq!(py_float("1e1_0"), Some(1e10));
        assert_eq!(py_float("2.5E-3"), Some(0.0025));
        assert_eq!(py_float("InFinity"), Some(f64::INFINITY));
        assert_eq!(py_float("-inf"), Some(f64::NEG_INFINITY));
        assert!(py_float("nan").unwrap().is_nan());
        assert_eq!(py_float("\u{661}\u{662}"), Some(12.0)); // Arabic-Indic digits
        assert_eq!(py_float("\u{ff13}"), Some(3.0)); // fullwidth 3
    }

    #[test]
    fn floats_python_rejects() {
        for s in [
            "1,000", "$5", "5 apples", "", " ", ".", "1__0", "_1", "1_", "1_.5", "1._5", "e5",
            "1e", "1e+", "0x10", "infinit", "--1", "1/2", "²", "5%",
        ] {
            assert_eq!(py_float(s), None, "{s:?}");
        }
    }

    #[test]
    fn strip_and_isdigit() {
        assert_eq!(py_strip("\u{1f} a \u{a0}\n"), "a");
        assert!(py_isdigit("0123"));
        assert!(py_isdigit("²"));
        assert!(!py_isdigit(""));
        assert!(!py_isdigit("1.5"));
        assert!(!py_isdigit("-1"));
    }
}
