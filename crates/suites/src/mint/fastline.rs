//! A hand-written scanner for the usual shape of a trajectory line: one pass over the bytes,
//! strings skipped 64 bytes at a time (`scorekit_kernels::json_string`: AVX-512 masks where
//! the CPU has them, else a walk over SSE2 masks), nothing copied or unescaped but the few
//! short strings the item keeps (and an assistant message that has `\u` escapes). It serves
//! the stored-flags reading ([`super::parse_stored`]) only: a re-check reads every line with
//! serde_json ([`super::parse_full`]), which measured faster there than this reader's former
//! re-check mode (BENCHMARKS.md §8, "Line reading").
//!
//! It is a fast path in front of [`super::record`], not a second parser: it answers only for
//! lines it is sure serde_json would accept, with the values serde_json would give, and says
//! "don't know" (`None`) for everything else: a syntax error, a missing or repeated field, a
//! value of another type, a number that is not a plain integer, a lone surrogate, an escaped
//! field name, nesting deeper than 64. The caller then reads the line with serde_json, so that
//! errors and unusual lines are handled (and reported) exactly as before.

use scorekit_kernels::json_string::StringScanner;

/// What the tables need from one line (the fields of [`super::record::StoredLine`]).
#[derive(Debug, PartialEq)]
pub(crate) struct FastLine {
    pub task_id: String,
    pub success: bool,
    pub invalid_actions: u64,
    pub history_len: u64,
    pub escaped_underscore: bool,
    pub python_tag: bool,
    pub terminate_reason: Option<String>,
}

/// Read `src` if it has the usual shape; `None` when serde_json must decide.
pub(crate) fn parse(src: &str) -> Option<FastLine> {
    let mut s = Scan::new(src.as_bytes());
    let mut state = None;
    let mut task_id = None;
    s.ws();
    s.object(1, |s, key, depth| {
        match key {
            b"state" => {
                if state.is_some() {
                    return None;
                }
                state = Some(s.state(depth)?);
            }
            b"task" => {
                if task_id.is_some() {
                    return None;
                }
                task_id = Some(s.task(depth)?);
            }
            _ => s.skip_value(depth)?,
        }
        Some(())
    })?;
    s.ws();
    if s.i != s.b.len() {
        return None;
    }
    let (success, invalid_actions, history, terminate_reason) = state?;
    Some(FastLine {
        task_id: task_id?,
        success,
        invalid_actions,
        history_len: history.len,
        escaped_underscore: history.escaped_underscore,
        python_tag: history.python_tag,
        terminate_reason,
    })
}

/// Deepest nesting read here; serde_json's own limit is 128.
const MAX_DEPTH: usize = 64;

#[derive(Default)]
struct History {
    len: u64,
    escaped_underscore: bool,
    python_tag: bool,
}

/// A string value: where its raw bytes lie between the quotes, and which escapes it has.
#[derive(Debug, PartialEq)]
struct RawStr {
    from: usize,
    to: usize,
    escapes: bool,
    unicode_escapes: bool,
    /// Has the escape `\\` followed by a raw `_` (a decoded `\_`, when there are no `\u`).
    escaped_underscore: bool,
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// The string scan of this CPU.
    strings: StringScanner,
}

impl<'a> Scan<'a> {
    fn new(b: &'a [u8]) -> Self {
        Scan {
            b,
            i: 0,
            strings: StringScanner::new(),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// An object at nesting `depth`: each member's key (unescaped keys only) handed to
    /// `member`, which reads the value.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a [u8], usize) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            if key.escapes {
                return None;
            }
            let b = self.b;
            let key = &b[key.from..key.to];
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key, depth + 1)?;
            if self.closed(b'}')? {
                return Some(());
            }
        }
    }

    /// After a member or element: `,` (more follow: `false`) or `close` (`true`), with the
    /// whitespace around them; anything else is `None`.
    fn closed(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let c = self.peek()?;
        self.i += 1;
        if c == close {
            return Some(true);
        }
        if c != b',' {
            return None;
        }
        self.ws();
        Some(false)
    }

    /// An array at nesting `depth`, each element read by `element`.
    fn array(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            element(self, depth + 1)?;
            if self.closed(b']')? {
                return Some(());
            }
        }
    }

    /// Any value, checked as serde_json checks it and dropped.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(depth, |s, _, d| s.skip_value(d)),
            b'[' => self.array(depth, |s, d| s.skip_value(d)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A number in JSON's grammar that every reader of serde_json (`Value` too) takes as a
    /// finite number: at most 300 integer digits, and with an exponent only where the value
    /// (correctly rounded, as serde_json's `float_roundtrip` reads it) stays finite.
    fn number(&mut self) -> Option<()> {
        let from = self.i;
        if self.peek()? == b'-' {
            self.i += 1;
        }
        let int = self.digits();
        if int == 0 || int > 300 || (int > 1 && self.b[self.i - int] == b'0') {
            return None;
        }
        if self.eat(b'.').is_some() && self.digits() == 0 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
            let text = std::str::from_utf8(&self.b[from..self.i]).ok()?;
            if !text.parse::<f64>().ok()?.is_finite() {
                return None;
            }
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - from
    }

    /// A non-negative integer that fits u64 (what serde reads as `u64` without a detour).
    fn u64(&mut self) -> Option<u64> {
        let from = self.i;
        let n = self.digits();
        if n == 0 || n > 20 || (n > 1 && self.b[from] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        let mut v = 0u64;
        for &d in &self.b[from..self.i] {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        Some(v)
    }

    fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|_| true),
            b'f' => self.literal(b"false").map(|_| false),
            _ => None,
        }
    }

    /// A string: checked (no control characters, valid escapes, `\u` surrogates in pairs)
    /// and located, not decoded.
    fn string(&mut self) -> Option<RawStr> {
        self.eat(b'"')?;
        let from = self.i;
        let s = self.strings.scan(self.b, from)?;
        self.i = s.end + 1;
        Some(RawStr {
            from,
            to: s.end,
            escapes: s.escapes,
            unicode_escapes: s.unicode_escapes,
            escaped_underscore: s.escaped_underscore,
        })
    }

    /// A string value, decoded (a plain copy where it has no escapes).
    fn text(&mut self) -> Option<String> {
        let raw = self.string()?;
        decode(&self.b[raw.from..raw.to])
    }

    /// Whether a string value is `want`, decoded (compared in place where it has no escapes).
    fn text_is(&mut self, want: &str) -> Option<bool> {
        let raw = self.string()?;
        let bytes = &self.b[raw.from..raw.to];
        if !raw.escapes {
            return Some(bytes == want.as_bytes());
        }
        Some(decode(bytes)? == want)
    }

    /// `state`: (success, invalid actions, history, terminate_reason).
    fn state(&mut self, depth: usize) -> Option<(bool, u64, History, Option<String>)> {
        let mut history = None;
        let mut success = None;
        let mut invalid = None;
        let mut reason: Option<Option<String>> = None;
        self.object(depth, |s, key, d| {
            match key {
                b"history" => {
                    if history.is_some() {
                        return None;
                    }
                    history = Some(s.history(d)?);
                }
                b"success" => {
                    if success.is_some() {
                        return None;
                    }
                    success = Some(s.bool()?);
                }
                b"agent_action_count" => {
                    if invalid.is_some() {
                        return None;
                    }
                    invalid = Some(s.counts(d)?);
                }
                b"terminate_reason" => {
                    if reason.is_some() {
                        return None;
                    }
                    reason = Some(match s.peek()? {
                        b'n' => s.literal(b"null").map(|_| None)?,
                        _ => Some(s.text()?),
                    });
                }
                _ => s.skip_value(d)?,
            }
            Some(())
        })?;
        Some((success?, invalid?, history?, reason.unwrap_or(None)))
    }

    /// `state.agent_action_count`: its `invalid_action`.
    fn counts(&mut self, depth: usize) -> Option<u64> {
        let mut invalid = None;
        self.object(depth, |s, key, d| {
            if key == b"invalid_action" {
                if invalid.is_some() {
                    return None;
                }
                invalid = Some(s.u64()?);
                Some(())
            } else {
                s.skip_value(d)
            }
        })?;
        invalid
    }

    /// `state.history`: its length and the assistant messages' flags.
    fn history(&mut self, depth: usize) -> Option<History> {
        let mut h = History::default();
        self.array(depth, |s, d| {
            let (assistant, underscore, python) = s.message(d)?;
            h.len += 1;
            if assistant {
                h.escaped_underscore |= underscore;
                h.python_tag |= python;
            }
            Some(())
        })?;
        Some(h)
    }

    /// One message as an object with `role` and `content` strings: (is the assistant's,
    /// content has `\_`, content has `[PYTHON]`).
    fn message(&mut self, depth: usize) -> Option<(bool, bool, bool)> {
        let mut role: Option<bool> = None;
        let mut flags: Option<(bool, bool)> = None;
        self.object(depth, |s, key, d| {
            match key {
                b"role" => {
                    if role.is_some() {
                        return None;
                    }
                    role = Some(s.text_is("assistant")?);
                }
                b"content" => {
                    if flags.is_some() {
                        return None;
                    }
                    let raw = s.string()?;
                    // Only the assistant's content is searched (roles come first, as a rule).
                    flags = Some(if role == Some(false) {
                        (false, false)
                    } else {
                        content_flags(&s.b[raw.from..raw.to], &raw)?
                    });
                }
                _ => s.skip_value(d)?,
            }
            Some(())
        })?;
        let (underscore, python) = flags?;
        Some((role?, underscore, python))
    }

    /// `task`: its `task_id` (a string or an integer that fits u64; other numbers go to
    /// serde_json, for their rendering),
    /// with `prompt` and `reference` checked as [`super::record::StoredTask`] checks them.
    fn task(&mut self, depth: usize) -> Option<String> {
        let mut id = None;
        let (mut prompt, mut reference) = (false, false);
        self.object(depth, |s, key, d| {
            match key {
                b"task_id" => {
                    if id.is_some() {
                        return None;
                    }
                    // serde_json renders an integer that fits u64 as its digits.
                    id = Some(match s.peek()? {
                        b'"' => s.text()?,
                        _ => s.u64()?.to_string(),
                    });
                }
                b"prompt" => {
                    if std::mem::replace(&mut prompt, true) {
                        return None;
                    }
                    match s.peek()? {
                        b'n' => s.literal(b"null")?,
                        b'"' => s.string().map(drop)?,
                        _ => return None,
                    }
                }
                b"reference" => {
                    if std::mem::replace(&mut reference, true) {
                        return None;
                    }
                    s.skip_value(d)?;
                }
                _ => s.skip_value(d)?,
            }
            Some(())
        })?;
        id
    }
}

/// Does the decoded content contain `\_`, `[PYTHON]`? Without `\u` escapes the raw bytes
/// tell: no short escape decodes to `_` or to a character of `[PYTHON]`, and none of those
/// characters can follow a backslash in a valid escape, so `[PYTHON]` is in the text exactly
/// when it is in the raw bytes, and `\_` exactly when an escaped backslash is followed by a
/// raw `_`. With `\u` escapes the text is decoded and searched.
fn content_flags(raw: &[u8], s: &RawStr) -> Option<(bool, bool)> {
    if s.unicode_escapes {
        let text = decode(raw)?;
        return Some((text.contains("\\_"), text.contains("[PYTHON]")));
    }
    Some((
        s.escaped_underscore,
        memchr::memmem::find(raw, b"[PYTHON]").is_some(),
    ))
}

/// The text of a checked string's raw bytes (escapes valid, surrogates paired).
fn decode(raw: &[u8]) -> Option<String> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(raw).ok().map(str::to_string);
    }
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let next = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |k| i + k);
        out.push_str(std::str::from_utf8(&raw[i..next]).ok()?);
        if next == raw.len() {
            break;
        }
        let c = match *raw.get(next + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = |at: usize| -> Option<u32> {
                    let h = std::str::from_utf8(raw.get(at..at + 4)?).ok()?;
                    u32::from_str_radix(h, 16).ok()
                };
                let unit = hex(next + 2)?;
                if (0xD800..0xDC00).contains(&unit) {
                    let low = hex(next + 8)?;
                    i = next + 12;
                    out.push(char::from_u32(
                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00),
                    )?);
                    continue;
                }
                i = next + 6;
                out.push(char::from_u32(unit)?);
                continue;
            }
            _ => return None,
        };
        out.push(c);
        i = next + 2;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_longer_than_a_block_with_escapes_at_its_edges() {
        for pad in 55..75 {
            for esc in [r#"\""#, r#"\\"#, r#"\u00e9"#, r#"\ud83d\ude00"#, r#"\\_"#] {
                let body = format!("{}{esc}{}{esc}", "x".repeat(pad), "y".repeat(pad));
                let json = format!(r#""{body}""#);
                let want: String = serde_json::from_str(&json).unwrap();
                let mut scan = Scan::new(json.as_bytes());
                assert_eq!(scan.text().unwrap(), want, "{json}");
                assert_eq!(scan.i, json.len());
                let cut = &json[..json.len() - 1];
                let mut scan = Scan::new(cut.as_bytes());
                assert!(scan.string().is_none(), "unterminated {cut}");
            }
        }
    }

    /// What serde_json (the reader behind this fast path) makes of `src`, in the same form.
    fn serde_view(src: &str) -> Option<FastLine> {
        use crate::mint::record::{StoredLine, TaskId};
        let rec: StoredLine = serde_json::from_str(src).ok()?;
        let TaskId::Id(task_id) = rec.task.task_id else {
            return None;
        };
        let h = rec.state.history;
        Some(FastLine {
            task_id,
            success: rec.state.success,
            invalid_actions: rec.state.agent_action_count.invalid_action,
            history_len: h.len,
            escaped_underscore: h.escaped_underscore,
            python_tag: h.python_tag,
            terminate_reason: rec.state.terminate_reason,
        })
    }

    /// Where the fast path answers, serde_json accepts the line and gives the same values.
    fn check(src: &str) -> bool {
        let fast = parse(src);
        if fast.is_some() {
            assert_eq!(fast, serde_view(src), "line: {src}");
        }
        fast.is_some()
    }

    fn shared_lines() -> Vec<String> {
        let root = scorekit_data::testdata::file("mint:headline", "data/outputs");
        let mut lines = Vec::new();
        for e in walkdir::WalkDir::new(root).sort_by_file_name() {
            let e = e.unwrap();
            if e.file_name() == "results.jsonl" {
                let text = std::fs::read_to_string(e.path()).unwrap();
                lines.extend(
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(str::to_string),
                );
            }
        }
        lines
    }

    #[test]
    fn every_shared_line_takes_the_fast_path_with_serdes_values() {
        let lines = shared_lines();
        assert!(lines.len() > 4000, "{} lines", lines.len());
        let fast = lines.iter().filter(|l| check(l)).count();
        assert_eq!(fast, lines.len(), "lines left to serde_json");
        // Neither `\_` nor `[PYTHON]` occurs in these assistants' messages: the flags are
        // tested on the unusual shapes below.
    }

    #[test]
    fn mutated_lines_are_read_as_serde_reads_them_or_left_to_it() {
        const INSERTS: [&str; 22] = [
            "\"",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "0",
            "-",
            "e",
            ".",
            "\u{1}",
            "n",
            " ",
            "u",
            "\\u",
            "\\ud800",
            "\\_",
            "[PYTHON]",
            "\"role\": \"assistant\", ",
            "1e400",
        ];
        let lines = shared_lines();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % m as u64) as usize
        };
        let (mut tried, mut fast) = (0, 0);
        for line in lines.iter().step_by(7) {
            // Short prefixes of long lines would all be cut strings: mutate whole lines, at
            // places near the structure half of the time.
            let structural: Vec<usize> = line
                .char_indices()
                .filter(|(_, c)| "{}[]:,\"\\".contains(*c))
                .map(|(i, _)| i)
                .collect();
            for _ in 0..12 {
                let mut at = if next(2) == 0 && !structural.is_empty() {
                    structural[next(structural.len())]
                } else {
                    next(line.len())
                };
                while !line.is_char_boundary(at) {
                    at -= 1;
                }
                let mut m = line.clone();
                match next(3) {
                    0 => {
                        m.remove(at);
                    }
                    1 => m.insert_str(at, INSERTS[next(INSERTS.len())]),
                    _ => {
                        m.remove(at);
                        m.insert_str(at, INSERTS[next(INSERTS.len())]);
                    }
                }
                tried += 1;
                fast += usize::from(check(&m));
            }
        }
        // Many mutations land inside a message and leave the line valid; many do not.
        assert!(
            fast > tried / 10 && fast < tried,
            "{fast} of {tried} on the fast path"
        );
    }

    #[test]
    fn unusual_shapes_agree_or_go_to_serde() {
        let base = |state: &str, task: &str| format!(r#"{{"state": {state}, "task": {task}}}"#);
        let st = r#"{"history": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a \\_ [PYTHON]"}], "success": true, "agent_action_count": {"invalid_action": 2}, "terminate_reason": "max"}"#;
        let tk = r#"{"task_id": "7", "prompt": "p", "reference": [1, 2.5, {"a": null}]}"#;
        let cases = [
            base(st, tk),
            base(st, r#"{"task_id": 7}"#),
            base(st, r#"{"task_id": 7.0}"#),
            base(st, r#"{"task_id": null}"#),
            base(st, r#"{"task_id": "a\/b\u00e9"}"#),
            base(st, r#"{"task_id": "x", "task_id": "y"}"#),
            base(st, r#"{"task_id": "x", "prompt": 3}"#),
            base(st, r#"{"task_id": "x", "reference": 1e400}"#),
            base(st, r#"{"task_id": "x", "reference": 1e4}"#),
            base(st, r#"{"task_id": "x", "reference": -0.5}"#),
            base(st, r#"{"task_id": "x", "reference": 012}"#),
            base(st, r#"{"task_id": "x", "reference": "\ud800"}"#),
            base(st, r#"{"task_id": "x", "reference": "\udc00"}"#),
            base(st, r#"{"task_id": "x", "reference": "\ud83d\ude00"}"#),
            base(st, r#"{"ta\u0073k_id": "x"}"#),
            base(
                &st.replace(r#""invalid_action": 2"#, r#""invalid_action": 2.0"#),
                tk,
            ),
            base(
                &st.replace(r#""invalid_action": 2"#, r#""invalid_action": -0"#),
                tk,
            ),
            base(
                &st.replace(
                    r#""invalid_action": 2"#,
                    r#""invalid_action": 18446744073709551616"#,
                ),
                tk,
            ),
            base(
                &st.replace(
                    r#""invalid_action": 2"#,
                    r#""invalid_action": 18446744073709551615"#,
                ),
                tk,
            ),
            base(&st.replace(r#""success": true"#, r#""success": 1"#), tk),
            base(&st.replace(r#", "terminate_reason": "max""#, ""), tk),
            base(&st.replace(r#""max""#, "null"), tk),
            base(&st.replace(r#""max""#, "3"), tk),
            base(
                &st.replace(r#"{"role": "user", "content": "q"}"#, r#"["user", "q"]"#),
                tk,
            ),
            base(
                &st.replace(r#"{"role": "assistant", "content""#, r#"{"content""#)
                    .replace(r#"[PYTHON]""#, r#"[PYTHON]", "role": "assistant""#),
                tk,
            ),
            base(
                &st.replace(r#""role": "user""#, r#""role": "user", "role": "user""#),
                tk,
            ),
            base(
                &st.replace(r#""a \\_ [PYTHON]""#, r#""\u005c_ \u005bPYTHON]""#),
                tk,
            ),
            base(
                &st.replace(r#""a \\_ [PYTHON]""#, r#""\\\\_ [PYTHO\u004e]""#),
                tk,
            ),
            base(&st.replace(r#""a \\_ [PYTHON]""#, r#""tab\there""#), tk),
            base(&st.replace(r#""a \\_ [PYTHON]""#, "\"ctl\u{1}\""), tk),
            format!("  {}  ", base(st, tk)),
            format!("{} x", base(st, tk)),
            format!("{}\t\r", base(st, tk)),
            base(
                st,
                &format!(
                    r#"{{"task_id": "x", "reference": {}1{}}}"#,
                    "[".repeat(70),
                    "]".repeat(70)
                ),
            ),
            base(
                st,
                &format!(
                    r#"{{"task_id": "x", "reference": {}1{}}}"#,
                    "[".repeat(200),
                    "]".repeat(200)
                ),
            ),
            r#"{"state": {}, "task": {"task_id": "1"}}"#.to_string(),
            "[]".to_string(),
        ];
        let fast: Vec<bool> = cases.iter().map(|c| check(c)).collect();
        // The usual shapes are read here; the rest is left to serde_json.
        let expected = [
            true, true, false, false, true, false, false, false, true, true, false, false, false,
            true, false, false, false, false, true, false, true, true, false, false, true, false,
            true, true, true, false, true, false, true, false, false, false, false,
        ];
        assert_eq!(fast, expected);
        let views: Vec<Option<FastLine>> = cases.iter().map(|c| parse(c)).collect();
        let flags = |i: usize| {
            let v = views[i].as_ref().unwrap();
            (v.escaped_underscore, v.python_tag)
        };
        assert_eq!(flags(0), (true, true));
        assert_eq!(flags(24), (true, true));
        assert_eq!(flags(26), (true, true));
        // `\\_` is an escaped backslash, then an escaped backslash and `_`: still `\_`.
        assert_eq!(flags(27), (true, true));
        assert_eq!(flags(28), (false, false));
    }

    #[test]
    fn decodes_like_serde_json() {
        for s in [
            r#""plain""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u674e \ud83d\ude00 x""#,
            r#""\\_ \u005c_""#,
        ] {
            let want: String = serde_json::from_str(s).unwrap();
            let mut scan = Scan::new(s.as_bytes());
            assert_eq!(scan.text().unwrap(), want, "{s}");
        }
    }
}
