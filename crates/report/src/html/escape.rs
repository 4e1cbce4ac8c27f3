//! JSON for a `<script type="application/json">` block: the characters that could end the block
//! or start markup (`<`, `>`, `&`) and the two line terminators JavaScript source once refused
//! (U+2028, U+2029) written as `\uXXXX` escapes. JSON has none of them outside strings, so the
//! text stays the same JSON and `JSON.parse` gives back the same value; no `</script>`, `<!--` or
//! `<script` can appear in the block whatever a model or a dataset wrote.

/// `json` (valid JSON text) with `<`, `>`, `&`, U+2028 and U+2029 escaped as `\uXXXX`.
pub fn script_json(json: &str) -> String {
    let mut out = Vec::with_capacity(json.len() + json.len() / 64);
    // Writing to a Vec cannot fail, and escapes of whole characters keep UTF-8 whole.
    let _ = write_script_json(&mut out, json);
    String::from_utf8(out).unwrap_or_default()
}

/// [`script_json`] written to `out` piece by piece (a run's items table is never copied whole).
pub fn write_script_json(out: &mut dyn std::io::Write, json: &str) -> std::io::Result<()> {
    let b = json.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        let (esc, len) = match b[i] {
            b'<' => ("\\u003c", 1),
            b'>' => ("\\u003e", 1),
            b'&' => ("\\u0026", 1),
            0xE2 if b.get(i + 1) == Some(&0x80) && b.get(i + 2) == Some(&0xA8) => ("\\u2028", 3),
            0xE2 if b.get(i + 1) == Some(&0x80) && b.get(i + 2) == Some(&0xA9) => ("\\u2029", 3),
            _ => {
                i += 1;
                continue;
            }
        };
        out.write_all(&b[start..i])?;
        out.write_all(esc.as_bytes())?;
        i += len;
        start = i;
    }
    out.write_all(&b[start..])
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
