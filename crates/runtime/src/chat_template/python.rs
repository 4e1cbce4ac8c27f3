//! What a Hugging Face chat template sees of Python: transformers renders templates with jinja2, so
//! values print as Python's `str()` (`True`, `None`, `['a', 'b']`, `1.0`), `|tojson` is
//! `json.dumps` (transformers' own filter: `ensure_ascii=False`, Python's separators and float
//! repr), `.strip()` and `|trim` strip Python's whitespace (which has U+001C–U+001F that Rust's has
//! not), and `strftime_now` is `datetime.now().strftime`.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Python's `str.isspace()` for one character.
pub fn is_py_space(c: char) -> bool {
    // Rust's White_Space set plus the four ASCII separators Python counts (bidi class B/S).
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip(chars)` / `lstrip` / `rstrip`: `chars` `None` strips Python whitespace.
pub fn py_strip<'a>(s: &'a str, chars: Option<&str>, left: bool, right: bool) -> &'a str {
    let strip = |c: char| match chars {
        Some(set) => set.contains(c),
        None => is_py_space(c),
    };
    let s = if left { s.trim_start_matches(strip) } else { s };
    if right {
        s.trim_end_matches(strip)
    } else {
        s
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, fixed notation for decimal
/// exponents in [-4, 16), else `1e+16` / `1.5e-05`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // `{:e}` gives Rust's shortest round-trip digits, as Python's repr uses.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    // Python's format_float_short: decpt is where the point goes after the first digit's place.
    let decpt = exp + 1;
    if decpt <= -4 || decpt > 16 {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{esign}{:02}", exp.abs());
    }
    let n = digits.len() as i32;
    let body = if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if decpt >= n {
        format!("{digits}{}.0", "0".repeat((decpt - n) as usize))
    } else {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// Python's `str(value)`, as jinja2 prints `{{ value }}` and as `|string` converts.
pub fn py_str(v: &Value) -> Result<String, Error> {
    match v.kind() {
        ValueKind::Undefined => Ok(String::new()),
        ValueKind::String => Ok(v.as_str().unwrap_or_default().to_string()),
        _ => py_repr(v),
    }
}

/// Python's `repr(value)` (how a string inside a printed list or dict appears).
pub fn py_repr(v: &Value) -> Result<String, Error> {
    Ok(match v.kind() {
        ValueKind::Undefined => String::new(),
        ValueKind::None => "None".into(),
        ValueKind::Bool => if v.is_true() { "True" } else { "False" }.into(),
        ValueKind::Number if v.is_integer() => v.to_string(),
        ValueKind::Number => float_repr(f64::try_from(v.clone())?),
        ValueKind::String => str_repr(v.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items = v
                .try_iter()?
                .map(|x| py_repr(&x))
                .collect::<Result<Vec<_>, _>>()?;
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let mut parts = Vec::new();
            for key in v.try_iter()? {
                let value = v.get_item(&key)?;
                parts.push(format!("{}: {}", py_repr(&key)?, py_repr(&value)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
        // Bytes, callables and opaque objects have no Python counterpart a template could rely on.
        _ => v.to_string(),
    })
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`; control and
/// separator characters escaped as `\n`, `\xNN`, `\uNNNN`.
fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    let _ = write!(out, "\\x{n:02x}");
                } else if n < 0x10000 {
                    let _ = write!(out, "\\u{n:04x}");
                } else {
                    let _ = write!(out, "\\U{n:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character, for the categories texts carry: control
/// characters, separators other than the space, and the common format characters.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// How `json.dumps` lays a value out: `indent` (`None`: one line), the item and key separators,
/// whether keys are sorted and whether non-ASCII is escaped.
struct JsonStyle {
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
    ensure_ascii: bool,
}

/// transformers' `tojson` filter: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`, every argument a keyword as in the templates.
pub fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    let indent: Option<Value> = kwargs.get("indent")?;
    let separators: Option<Value> = kwargs.get("separators")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) if v.kind() == ValueKind::String => Some(v.as_str().unwrap_or_default().into()),
        Some(v) => Some(" ".repeat(usize::try_from(v)?)),
    };
    let (item_sep, key_sep) = match separators {
        Some(v) if !v.is_none() => {
            let parts: Vec<Value> = v.try_iter()?.collect();
            match parts.as_slice() {
                [a, b] => (py_str(a)?, py_str(b)?),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be a pair (item, key)",
                    ))
                }
            }
        }
        // json.dumps: ', ' on one line, ',' when indented; ': ' between key and value.
        _ if indent.is_some() => (",".into(), ": ".into()),
        _ => (", ".into(), ": ".into()),
    };
    let style = JsonStyle {
        indent,
        item_sep,
        key_sep,
        sort_keys: sort_keys.unwrap_or(false),
        ensure_ascii: ensure_ascii.unwrap_or(false),
    };
    let mut out = String::new();
    write_json(&mut out, value, &style, 0)?;
    Ok(Value::from(out))
}

/// One value of `json.dumps` at nesting `level`.
fn write_json(out: &mut String, v: &Value, style: &JsonStyle, level: usize) -> Result<(), Error> {
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number if v.is_integer() => out.push_str(&v.to_string()),
        ValueKind::Number => out.push_str(&json_float(f64::try_from(v.clone())?)),
        ValueKind::String => json_string(out, v.as_str().unwrap_or_default(), style.ensure_ascii),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            write_container(out, style, level, '[', ']', &items, |out, item, level| {
                write_json(out, item, style, level)
            })?;
        }
        ValueKind::Map => {
            let mut entries = Vec::new();
            for key in v.try_iter()? {
                let value = v.get_item(&key)?;
                entries.push((json_key(&key)?, value));
            }
            if style.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            write_container(
                out,
                style,
                level,
                '{',
                '}',
                &entries,
                |out, (k, val), level| {
                    json_string(out, k, style.ensure_ascii);
                    out.push_str(&style.key_sep);
                    write_json(out, val, style, level)
                },
            )?;
        }
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "tojson: Object of type {} is not JSON serializable",
                    v.kind()
                ),
            ))
        }
    }
    Ok(())
}

/// `[...]` or `{...}` as json.dumps lays it out: `[]` when empty, else items on new lines when
/// indented.
fn write_container<T>(
    out: &mut String,
    style: &JsonStyle,
    level: usize,
    open: char,
    close: char,
    items: &[T],
    mut item: impl FnMut(&mut String, &T, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return Ok(());
    }
    let inner = level + 1;
    let newline = |level: usize| match &style.indent {
        Some(ind) => format!("\n{}", ind.repeat(level)),
        None => String::new(),
    };
    out.push_str(&newline(inner));
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(&style.item_sep);
            out.push_str(&newline(inner));
        }
        item(out, x, inner)?;
    }
    out.push_str(&newline(level));
    out.push(close);
    Ok(())
}

/// A dict key as json.dumps writes it: strings as they are, numbers, booleans and None
/// converted (`1` → `"1"`, `True` → `"true"`, `None` → `"null"`).
fn json_key(k: &Value) -> Result<String, Error> {
    Ok(match k.kind() {
        ValueKind::String => k.as_str().unwrap_or_default().to_string(),
        ValueKind::None => "null".into(),
        ValueKind::Bool => if k.is_true() { "true" } else { "false" }.into(),
        ValueKind::Number if k.is_integer() => k.to_string(),
        ValueKind::Number => json_float(f64::try_from(k.clone())?),
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "tojson: keys must be str, int, float, bool or None, not {}",
                    k.kind()
                ),
            ))
        }
    })
}

/// A float as json.dumps writes it: `float.__repr__`, with `NaN` / `Infinity` spelled as
/// JavaScript does.
fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        float_repr(f)
    }
}

/// A JSON string as json.dumps writes it: `"` and `\` escaped, control characters as `\n`-style
/// or `\u00XX` escapes; non-ASCII as is unless `ensure_ascii` (then `\uXXXX`, surrogate pairs).
fn json_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// English month names, as C's strftime writes them.
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// English weekday names from Monday.
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// `datetime.strftime(format)` of `now` in UTC for the directives templates use (`%d %b %Y`,
/// `%Y-%m-%d`, `%B`, `%A`, `%H:%M:%S`, …); an unknown directive is an error rather than a guess.
pub fn strftime(format: &str, now: SystemTime) -> Result<String, Error> {
    let secs = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = (days + 3).rem_euclid(7) as usize;
    let yday = days - days_from_civil(year, 1, 1) + 1;
    let (hour, minute, second) = (sod / 3600, sod / 60 % 60, sod % 60);
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('%');
            break;
        };
        let _ = match d {
            'd' => write!(out, "{day:02}"),
            'e' => write!(out, "{day:>2}"),
            'm' => write!(out, "{month:02}"),
            'Y' => write!(out, "{year}"),
            'y' => write!(out, "{:02}", year.rem_euclid(100)),
            'b' | 'h' => write!(out, "{}", &MONTHS[(month - 1) as usize][..3]),
            'B' => write!(out, "{}", MONTHS[(month - 1) as usize]),
            'a' => write!(out, "{}", &WEEKDAYS[weekday][..3]),
            'A' => write!(out, "{}", WEEKDAYS[weekday]),
            'j' => write!(out, "{yday:03}"),
            'H' => write!(out, "{hour:02}"),
            'I' => write!(out, "{:02}", (hour + 11) % 12 + 1),
            'p' => write!(out, "{}", if hour < 12 { "AM" } else { "PM" }),
            'M' => write!(out, "{minute:02}"),
            'S' => write!(out, "{second:02}"),
            '%' => write!(out, "%"),
            other => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("strftime_now: unsupported directive %{other} in {format:?}"),
                ))
            }
        };
    }
    Ok(out)
}

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Days since 1970-01-01 of a civil date (the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn floats_print_as_python_repr() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e300, "1e+300"),
            (-0.0, "-0.0"),
        ] {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn python_whitespace_includes_the_ascii_separators() {
        assert_eq!(py_strip("\u{1f} a \u{a0}\u{3000}\n", None, true, true), "a");
        assert_eq!(py_strip("xxaxx", Some("x"), true, false), "axx");
        assert_eq!(py_strip("  a  ", None, false, true), "  a");
    }

    #[test]
    fn values_print_as_python_str() {
        let v = Value::from_serialize(serde_json::json!({"a": [1, 2.0, true, null, "it's"]}));
        assert_eq!(
            py_str(&v).unwrap(),
            r#"{'a': [1, 2.0, True, None, "it's"]}"#
        );
        assert_eq!(py_str(&Value::from("x\ny")).unwrap(), "x\ny");
        assert_eq!(py_repr(&Value::from("x\ny\u{1}")).unwrap(), r"'x\ny\x01'");
    }

    #[test]
    fn tojson_is_json_dumps() {
        let v = Value::from_serialize(serde_json::json!({"b": "é\"<", "a": [1, 1.5, {}], "c": []}));
        let none = Kwargs::from_iter(Vec::<(&str, Value)>::new());
        assert_eq!(
            tojson(&v, none).unwrap().as_str().unwrap(),
            r#"{"b": "é\"<", "a": [1, 1.5, {}], "c": []}"#
        );
        let kw = Kwargs::from_iter([("indent", Value::from(2)), ("sort_keys", Value::from(true))]);
        assert_eq!(
            tojson(&v, kw).unwrap().as_str().unwrap(),
            "{\n  \"a\": [\n    1,\n    1.5,\n    {}\n  ],\n  \"b\": \"é\\\"<\",\n  \"c\": []\n}"
        );
        let kw = Kwargs::from_iter([("ensure_ascii", Value::from(true))]);
        assert_eq!(
            tojson(&Value::from("é🙂\u{1}"), kw)
                .unwrap()
                .as_str()
                .unwrap(),
            r#""\u00e9\ud83d\ude42\u0001""#
        );
    }

    #[test]
    fn strftime_writes_the_date_in_utc() {
        // 2024-07-26 13:05:09 UTC, a Friday, day 208 of a leap year.
        let t = UNIX_EPOCH + Duration::from_secs(1_721_999_109);
        assert_eq!(strftime("%d %b %Y", t).unwrap(), "26 Jul 2024");
        assert_eq!(
            strftime("%A %d %B %Y %H:%M:%S %j %y %I%p %%", t).unwrap(),
            "Friday 26 July 2024 13:05:09 208 24 01PM %"
        );
        assert!(strftime("%Z", t).is_err());
    }
}
