//! JSON for a `<script type="application/json">` block: the characters that could end the block
//! or start markup (`<`, `>`, `&`) and the two line terminators JavaScript source once refused
//! (U+2028, U+2029) written as `\uXXXX` escapes. JSON has none of them outside strings, so the
//! text stays the same JSON and `JSON.parse` gives back the same value; no `</script>`, `<!--` or
//! `<script` can appear in the block whatever a model or a dataset wrote.

/// `json` (valid JSON text) with `<`, `>`, `&`, U+2028 and U+2029 escaped as `\uXXXX`.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    push_script_json(&mut out, json);
    out
}

/// [`script_json`] appended to `out` (no copy of a large items array).
pub fn push_script_json(out: &mut String, json: &str) {
    let mut start = 0;
    for (i, c) in json.char_indices() {
        let esc = match c {
            '<' => "\\u003c",
            '>' => "\\u003e",
            '&' => "\\u0026",
            '\u{2028}' => "\\u2028",
            '\u{2029}' => "\\u2029",
            _ => continue,
        };
        out.push_str(&json[start..i]);
        out.push_str(esc);
        start = i + c.len_utf8();
    }
    out.push_str(&json[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn hostile_text_cannot_leave_the_block_and_parses_back_unchanged() {
        let hostile =
            "</script><img src=x onerror=\"window.pwned=1\"> <!-- & \u{2028}\u{2029} \u{202e}";
        let v = json!({"ending": hostile, "n": 1});
        let text = serde_json::to_string(&v).unwrap();
        let safe = script_json(&text);
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!safe.contains(bad), "{bad:?} left in {safe}");
        }
        assert!(safe.contains("\\u003c/script\\u003e"), "{safe}");
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
        // Other controls are left to JSON's own escaping (or kept as text).
        assert!(safe.contains('\u{202e}'));
    }

    #[test]
    fn plain_json_is_unchanged() {
        let text = r#"{"a":[1,2.5,"x y"],"b":null}"#;
        assert_eq!(script_json(text), text);
    }
}
