//! The labelling page: one self-contained HTML file (`to_label.html`, `scorekit label`) on which a
//! person labels a sample's endings, one per screen, by keyboard or mouse, keeps every answer in
//! the browser's storage and exports them in the `--calibration-labels` format (docs/story.md).
//!
//! The page is `templates/label.html` rendered by minijinja; its script and style are
//! `templates/label.{js,css}`, inlined, and the only ones a Content-Security-Policy (by their
//! sha256) lets run: the page makes no request of any kind. The sample goes in as JSON in a
//! `<script type="application/json">` block, escaped so that no text in it can end the block
//! ([`script_json`]), and the script puts it in the page with `textContent` only.

use serde::Serialize;

const TEMPLATE: &str = include_str!("../templates/label.html");
const SCRIPT: &str = include_str!("../templates/label.js");
const STYLE: &str = include_str!("../templates/label.css");

/// One ending to label, with what the labeller reads. Nothing else: no model, no judge verdict,
/// no options (the gold one among them), so that nothing on the page can bias the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageItem {
    /// The question's id (exported with the answer).
    pub question_id: String,
    /// The story.
    pub passage: String,
    /// The question the ending must answer.
    pub question: String,
    /// The ending to label.
    pub ending: String,
}

/// A labelling page's content.
#[derive(Debug, Clone, Copy)]
pub struct LabelPage<'a> {
    /// The label file's name, shown in the title.
    pub file: &'a str,
    /// The sha256 of the label file's bytes: the browser storage key and every exported
    /// line's `sample`.
    pub sample: &'a str,
    /// The endings, in the file's order.
    pub items: &'a [PageItem],
}

/// What the page's script reads.
#[derive(Serialize)]
struct Data<'a> {
    sample: &'a str,
    items: &'a [PageItem],
}

/// The page as one HTML document (an error only if the template itself is broken).
pub fn render(page: &LabelPage) -> scorekit_core::error::Result<String> {
    render_template(page).map_err(scorekit_core::error::Error::Internal)
}

fn render_template(page: &LabelPage) -> Result<String, anyhow::Error> {
    let mut env = minijinja::Environment::new();
    // The `.html` name turns on HTML auto-escaping for every value not marked `safe`.
    env.add_template("label.html", TEMPLATE)?;
    let data = script_json(&Data {
        sample: page.sample,
        items: page.items,
    })?;
    // Fixed text and base64 only (no quote, no `<` or `&`): put in its attribute as it is.
    let csp = format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; img-src data:; \
         base-uri 'none'; form-action 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE)
    );
    let html = env
        .get_template("label.html")?
        .render(minijinja::context! {
            file => page.file,
            sample => page.sample,
            count => page.items.len(),
            csp => csp,
            css => STYLE,
            js => SCRIPT,
            data => data,
        })?;
    Ok(html)
}

/// `value` as JSON that can stand inside a `<script>` block: `<`, `>` and `&` written as
/// `\u003c`, `\u003e`, `\u0026` (so no `</script>` or `<!--` can close or change the block) and
/// U+2028, U+2029 as `\u2028`, `\u2029` (line terminators to older JavaScript parsers). These
/// characters occur only inside JSON strings, where the escapes mean the same text.
pub fn script_json(value: &impl Serialize) -> Result<String, serde_json::Error> {
    let json = serde_json::to_string(value)?;
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// A CSP source for an inline block: `sha256-` and the base64 of its text's sha256.
fn csp_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256-{}", base64(&Sha256::digest(text.as_bytes())))
}

/// Standard base64 with padding (RFC 4648), for the CSP hashes (32 bytes each).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "</script><img src=x onerror=\"window.pwned=1\"> & <!-- \u{2028}\u{2029}";

    fn item(ending: &str) -> PageItem {
        PageItem {
            question_id: "p1_q0".into(),
            passage: "Tina made spaghetti.".into(),
            question: "Which ending is the saddest?".into(),
            ending: ending.into(),
        }
    }

    /// The text of the page's JSON block, between its tags.
    fn json_block(html: &str) -> &str {
        let open = "<script type=\"application/json\" id=\"sample-data\">";
        let start = html.find(open).unwrap() + open.len();
        let len = html[start..].find("</script>").unwrap();
        &html[start..start + len]
    }

    #[test]
    fn hostile_text_stays_inside_the_json_block_and_reads_back_as_written() {
        let items = [item(HOSTILE)];
        let page = LabelPage {
            file: "<b>to_label.jsonl</b>",
            sample: "ab12",
            items: &items,
        };
        let html = render(&page).unwrap();
        let block = json_block(&html);
        // Nothing in the block can end it or start markup, and U+2028/9 are escaped.
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!block.contains(bad), "{bad:?} in {block}");
        }
        let back: serde_json::Value = serde_json::from_str(block).unwrap();
        assert_eq!(back["items"][0]["ending"], HOSTILE);
        assert_eq!(back["sample"], "ab12");
        // The hostile text occurs nowhere else in the page, and the file name is escaped.
        assert!(!html.contains("onerror=\"window.pwned"));
        assert!(
            html.contains("&lt;b&gt;to_label.jsonl&lt;&#x2f;b&gt;"),
            "{html}"
        );
        // Two script blocks: the data and the page's own script, whose hash the policy names.
        assert_eq!(html.matches("<script").count(), 2);
        assert!(html.contains(&csp_hash(SCRIPT)) && html.contains("default-src 'none'"));
    }

    #[test]
    fn an_item_holds_only_what_the_labeller_reads() {
        let json = script_json(&item("e")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["ending", "passage", "question", "question_id"]);
    }

    #[test]
    fn base64_matches_rfc_4648() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), want);
        }
        // A CSP hash as browsers compute it: sha256 of "" is 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=.
        assert_eq!(
            csp_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }
}
