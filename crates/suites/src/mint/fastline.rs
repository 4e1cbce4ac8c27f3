//! A hand-written scanner for the usual shape of a trajectory line: one pass over the bytes,
//! strings skipped 64 bytes at a time (AVX-512 masks where the CPU has them, else a walk over
//! SSE2 masks), nothing copied or unescaped but the few short strings the item keeps (and an
//! assistant message that has `\u` escapes); for a re-check ([`parse_full`]) also the
//! assistant messages, the prompt and the reference.
//!
//! It is a fast path in front of [`super::record`], not a second parser: it answers only for
//! lines it is sure serde_json would accept, with the values serde_json would give, and says
//! "don't know" (`None`) for everything else: a syntax error, a missing or repeated field, a
//! value of another type, a number that is not a plain integer, a lone surrogate, an escaped
//! field name, nesting deeper than 64. The caller then reads the line with serde_json, so that
//! errors and unusual lines are handled (and reported) exactly as before.

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
    read(src, false).map(|(facts, _)| facts)
}

/// What a re-check needs from one line: [`FastLine`], the task's `prompt` and `reference`,
/// and the assistant messages' text, as serde_json reads them into
/// [`super::parse_full`]'s record.
#[derive(Debug, PartialEq)]
pub(crate) struct FullLine {
    pub facts: FastLine,
    pub prompt: Option<String>,
    pub reference: serde_json::Value,
    pub assistant: Vec<String>,
}

/// Read `src` for a re-check if it has the usual shape; `None` when serde_json must decide.
/// Only the assistant messages, the prompt and the reference are decoded.
pub(crate) fn parse_full(src: &str) -> Option<FullLine> {
    let (facts, extras) = read(src, true)?;
    let extras = extras?;
    let reference = match extras.reference {
        // The value as serde_json reads it inside the line (checked above: nesting at most
        // 64, so its recursion limit is not reached alone either).
        Some((from, to)) => serde_json::from_str(src.get(from..to)?).ok()?,
        None => serde_json::Value::Null,
    };
    Some(FullLine {
        facts,
        prompt: extras.prompt,
        reference,
        assistant: extras.assistant,
    })
}

/// What [`parse_full`] reads besides the facts.
#[derive(Default)]
struct Extras {
    prompt: Option<String>,
    /// Where the raw JSON of `task.reference` lies, if it is there.
    reference: Option<(usize, usize)>,
    assistant: Vec<String>,
}

/// The facts of `src`, and with `full` the extras of a re-check.
fn read(src: &str, full: bool) -> Option<(FastLine, Option<Extras>)> {
    let mut s = Scan::new(src.as_bytes());
    s.full = full.then(Extras::default);
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
    let facts = FastLine {
        task_id: task_id?,
        success,
        invalid_actions,
        history_len: history.len,
        escaped_underscore: history.escaped_underscore,
        python_tag: history.python_tag,
        terminate_reason,
    };
    Some((facts, s.full))
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
    /// Strings are scanned with AVX-512 (BW and VBMI) masks: the CPU has them.
    wide: bool,
    /// What a re-check needs, collected when asked for ([`parse_full`]).
    full: Option<Extras>,
}

impl<'a> Scan<'a> {
    fn new(b: &'a [u8]) -> Self {
        Scan {
            b,
            i: 0,
            wide: wide_strings(),
            full: None,
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
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is set only where the CPU has AVX-512F, BW and VBMI
            // (`wide_strings`), all that `string_avx512` requires.
            return unsafe { self.string_avx512() };
        }
        self.string_walk()
    }

    /// [`Self::string`], walking the specials of 64 bytes at a time bit by bit (any x86-64
    /// or other CPU; and strings with `\u` escapes, whose hex digits and surrogate pairs it
    /// checks).
    fn string_walk(&mut self) -> Option<RawStr> {
        self.eat(b'"')?;
        let from = self.i;
        let mut raw = RawStr {
            from,
            to: from,
            escapes: false,
            unicode_escapes: false,
            escaped_underscore: false,
        };
        // The specials (`"`, `\`, control characters) of 64 bytes at a time, as a bit mask
        // walked bit by bit: an escape costs a few instructions, not a new scan.
        loop {
            let base = self.i;
            let (mut mask, width) = specials64(self.b, base);
            if width == 0 {
                return None; // no closing quote
            }
            while mask != 0 {
                self.i = base + mask.trailing_zeros() as usize;
                match self.b[self.i] {
                    b'"' => {
                        raw.to = self.i;
                        self.i += 1;
                        return Some(raw);
                    }
                    b'\\' => self.escape(&mut raw)?,
                    // A control character.
                    _ => return None,
                }
                let consumed = self.i - base;
                if consumed >= 64 {
                    break;
                }
                mask &= !0u64 << consumed;
            }
            // No special left in `base..base + width` from `self.i` on.
            self.i = self.i.max(base + width);
        }
    }

    /// [`Self::string_walk`] in whole 64-byte blocks, without a loop over the escapes: the
    /// masks of `"`, `\` and control characters, the escaped bytes (those after an odd run
    /// of backslashes, carried from block to block), the end (the first quote not escaped);
    /// a control character before it, or an escaped byte other than one of `"\/bfnrtu`,
    /// makes it `None`, as in the walk; `\u` escapes (30 % of the string bytes of the shared
    /// data are in strings with one) are checked one by one with the walk's code.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    unsafe fn string_avx512(&mut self) -> Option<RawStr> {
        use std::arch::x86_64::*;
        self.eat(b'"')?;
        let from = self.i;
        let b = self.b;
        // Escape letters, looked up by their low 7 bits: `ESCAPES[c & 127] == c` exactly when
        // `c` may follow a backslash (entry 0 is 1, so a 0 byte does not match it).
        let table = escape_table();
        // SAFETY (both loads): `table` is 128 bytes.
        let (lo, hi) = (
            _mm512_loadu_si512(table.as_ptr().cast()),
            _mm512_loadu_si512(table.as_ptr().add(64).cast()),
        );
        let quote = _mm512_set1_epi8(b'"' as i8);
        let backslash = _mm512_set1_epi8(b'\\' as i8);
        let control = _mm512_set1_epi8(0x1f);
        let letter_u = _mm512_set1_epi8(b'u' as i8);
        let underscore = _mm512_set1_epi8(b'_' as i8);
        let mut escapes = false;
        let mut escaped_underscore = false;
        let mut unicode_escapes = false;
        // Where the last `\u` escape (or surrogate pair) checked ends.
        let mut unicode_done = 0;
        // Bit 0 of the next block is escaped / follows an escaped backslash.
        let mut carry_escaped = 0u64;
        let mut carry_escaped_backslash = 0u64;
        let mut at = from;
        loop {
            let left = b.len() - at;
            if left == 0 {
                return None; // no closing quote
            }
            let valid = if left >= 64 {
                !0u64
            } else {
                (1u64 << left) - 1
            };
            // SAFETY: `at < b.len()`, and the mask `valid` selects only the bytes
            // `at..min(at + 64, b.len())`, all within `b`; masked-off bytes are not read
            // (AVX-512 masked loads suppress faults there) and come back as 0.
            let v = _mm512_maskz_loadu_epi8(valid, b.as_ptr().add(at).cast());
            let bs = _mm512_cmpeq_epi8_mask(v, backslash) & valid;
            let escaped = escaped_bytes(bs, &mut carry_escaped);
            let quotes = _mm512_cmpeq_epi8_mask(v, quote) & !escaped & valid;
            // The bytes of this block inside the string: below the first quote, if any.
            // Computed without branches on the data (escapes come at random places; a
            // mispredicted branch per block cost more than the masks).
            let inside = quotes.wrapping_sub(1) & !quotes & valid;
            let esc = escaped & inside;
            let known = _mm512_cmpeq_epi8_mask(_mm512_permutex2var_epi8(lo, v, hi), v);
            // A control character, or an escaped byte that is no JSON escape.
            let bad = (_mm512_cmple_epu8_mask(v, control) & inside) | (esc & !known);
            let mut us = esc & _mm512_cmpeq_epi8_mask(v, letter_u);
            if bad | us != 0 {
                if bad != 0 {
                    return None;
                }
                // `\u` escapes: their hex digits and surrogate pairs checked by the walk's
                // code, in order; the `u` of a pair's second half is part of the first.
                unicode_escapes = true;
                while us != 0 {
                    let u = at + us.trailing_zeros() as usize;
                    us &= us - 1;
                    if u >= unicode_done {
                        unicode_done = self.unicode_escape(u - 1)?;
                    }
                }
            }
            escapes |= bs & inside != 0;
            // `\\` then `_`: an escaped backslash followed by an underscore.
            let escaped_backslash = esc & bs;
            escaped_underscore |= (escaped_backslash << 1 | carry_escaped_backslash)
                & _mm512_cmpeq_epi8_mask(v, underscore)
                & inside
                != 0;
            carry_escaped_backslash = escaped_backslash >> 63;
            if quotes != 0 {
                let to = at + quotes.trailing_zeros() as usize;
                self.i = to + 1;
                return Some(RawStr {
                    from,
                    to,
                    escapes,
                    unicode_escapes,
                    escaped_underscore,
                });
            }
            at += left.min(64);
        }
    }

    /// The escape at `self.i` (a backslash): checked, stepped over, noted in `raw`.
    fn escape(&mut self, raw: &mut RawStr) -> Option<()> {
        raw.escapes = true;
        match *self.b.get(self.i + 1)? {
            b'"' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
            b'\\' => {
                raw.escaped_underscore |= self.b.get(self.i + 2) == Some(&b'_');
                self.i += 2;
            }
            b'u' => {
                raw.unicode_escapes = true;
                self.i = self.unicode_escape(self.i)?;
            }
            _ => return None,
        }
        Some(())
    }

    /// The `\u` escape whose backslash is at `at`: four hex digits, a high surrogate followed
    /// by a `\u` low one, no lone low surrogate; where it (or the pair) ends.
    fn unicode_escape(&self, at: usize) -> Option<usize> {
        let unit = self.hex4(at + 2)?;
        let mut end = at + 6;
        if (0xDC00..0xE000).contains(&unit) {
            return None;
        }
        if (0xD800..0xDC00).contains(&unit) {
            if self.b.get(end..end + 2)? != b"\\u" {
                return None;
            }
            let low = self.hex4(end + 2)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            end += 6;
        }
        Some(end)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.b.get(at..at + 4)?;
        let mut v = 0;
        for &c in h {
            v = v * 16 + (c as char).to_digit(16)?;
        }
        Some(v)
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
        let mut content = (0, 0);
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
                    content = (raw.from, raw.to);
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
        let assistant = role?;
        if assistant {
            if let Some(full) = &mut self.full {
                full.assistant.push(decode(&self.b[content.0..content.1])?);
            }
        }
        Some((assistant, underscore, python))
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
                        b'"' => {
                            let raw = s.string()?;
                            if let Some(full) = &mut s.full {
                                full.prompt = Some(decode(&s.b[raw.from..raw.to])?);
                            }
                        }
                        _ => return None,
                    }
                }
                b"reference" => {
                    if std::mem::replace(&mut reference, true) {
                        return None;
                    }
                    let from = s.i;
                    s.skip_value(d)?;
                    if let Some(full) = &mut s.full {
                        full.reference = Some((from, s.i));
                    }
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

/// Whether strings are scanned by [`Scan::string_avx512`] on this CPU.
fn wide_strings() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The lookup table of [`Scan::string_avx512`]: entry `c` is `c` for the bytes that may
/// follow a backslash, else 0 (entry 0 is 1).
fn escape_table() -> &'static [u8; 128] {
    static TABLE: [u8; 128] = {
        let mut t = [0u8; 128];
        t[0] = 1;
        let letters = *b"\"\\/bfnrtu";
        let mut k = 0;
        while k < letters.len() {
            t[letters[k] as usize] = letters[k];
            k += 1;
        }
        t
    };
    &TABLE
}

/// The escaped bytes of a 64-byte block whose backslashes are `backslash`: those after an odd
/// run of backslashes (simdjson's carry trick: runs starting on odd bits are told from runs
/// starting on even bits by one addition). `carry` says, in and out, that bit 0 of the next
/// block is escaped by a run that ends the block.
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // A backslash escaped by the previous block starts no escape.
    let backslash = backslash & !*carry;
    let follows_escape = backslash << 1 | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    (EVEN ^ (even_starts << 1)) & follows_escape
}

fn special(c: u8) -> bool {
    matches!(c, b'"' | b'\\' | 0..=0x1f)
}

/// The specials (`"`, `\`, control characters) among the 64 bytes from `at` (fewer at the end
/// of `b`): bit k set when `b[at + k]` is one, and how many bytes were looked at.
#[inline]
fn specials64(b: &[u8], at: usize) -> (u64, usize) {
    if at + 64 > b.len() {
        let tail = &b[at.min(b.len())..];
        let mask = tail
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &c)| m | (u64::from(special(c)) << k));
        return (mask, tail.len());
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut mask = 0u64;
        // SAFETY: SSE2 is part of x86-64, and the four 16-byte loads lie within `b`
        // (`at + 64 <= b.len()`, checked above).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            for k in 0..4 {
                let v = _mm_loadu_si128(b.as_ptr().add(at + 16 * k).cast());
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
                    _mm_cmpeq_epi8(_mm_min_epu8(v, control), v),
                );
                mask |= u64::from(_mm_movemask_epi8(hit) as u16) << (16 * k);
            }
        }
        (mask, 64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mask = b[at..at + 64]
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &c)| m | (u64::from(special(c)) << k));
        (mask, 64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_specials_at_every_offset() {
        for len in 0..140 {
            for at in 0..len {
                for c in [b'"', b'\\', 0u8, 0x1f, b'\n'] {
                    let mut v = vec![b'a'; len];
                    v[at] = c;
                    v[len - 1 - at] = c;
                    for from in [0, 1, 60, 64, 70] {
                        let (mask, width) = specials64(&v, from.min(len));
                        let want: u64 = (from.min(len)..len)
                            .take(64)
                            .enumerate()
                            .filter(|&(_, i)| i == at || i == len - 1 - at)
                            .fold(0, |m, (k, _)| m | 1 << k);
                        assert_eq!((mask, width), (want, (len - from.min(len)).min(64)));
                    }
                }
            }
            let v = vec![0xC3u8; len];
            assert_eq!(specials64(&v, 0).0, 0);
        }
    }

    /// Whether each byte is escaped: it follows a backslash that is not itself escaped.
    fn escaped_by_walking(b: &[u8]) -> Vec<bool> {
        let mut pending = false;
        b.iter()
            .map(|&c| {
                let escaped = pending;
                pending = c == b'\\' && !escaped;
                escaped
            })
            .collect()
    }

    #[test]
    fn escaped_bytes_follow_odd_backslash_runs_across_blocks() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..4000 {
            let len = 64 * (1 + round % 4);
            // Backslash density from sparse to long runs.
            let density = 1 + round % 7;
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    if rng % 8 < density {
                        b'\\'
                    } else {
                        b'x'
                    }
                })
                .collect();
            let want = escaped_by_walking(&b);
            let mut carry = 0;
            for (k, block) in b.chunks(64).enumerate() {
                let bs = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (j, &c)| m | u64::from(c == b'\\') << j);
                let got = escaped_bytes(bs, &mut carry);
                for j in 0..64 {
                    assert_eq!(
                        got >> j & 1 == 1,
                        want[64 * k + j],
                        "round {round} byte {}",
                        64 * k + j
                    );
                }
            }
        }
    }

    /// The AVX-512 scan of strings gives what the walk gives: the same `RawStr` and end, or
    /// `None` for the same strings.
    #[test]
    fn wide_string_scan_agrees_with_the_walk() {
        if !wide_strings() {
            eprintln!("no AVX-512 BW/VBMI here: the walk is the only string scan");
            return;
        }
        // Pieces that make escape runs, quotes and controls land on every side of a block edge.
        const PIECES: [&[u8]; 22] = [
            b"a",
            b"xyz",
            b"\\",
            b"\\\\",
            b"\\\\\\",
            b"\\\"",
            b"\"",
            b"\\n",
            b"\\/",
            b"\\_",
            b"\\\\_",
            b"_",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\ud800",
            b"\\udc00x",
            b"\\u12g4",
            b"\\x",
            b"\\\xc3\xa9",
            b"\x01",
            b"\x1f",
            b"\xc3\xa9 [PYTHON] ",
        ];
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % m as u64) as usize
        };
        let (mut tried, mut some, mut walked) = (0, 0, 0);
        for _ in 0..60_000 {
            let mut b = b"{\"k\": ".to_vec();
            b.extend(std::iter::repeat_n(b' ', next(70)));
            let at = b.len();
            b.push(b'"');
            // Mostly plain text with the odd special, sometimes dense with them.
            let dense = next(3) == 0;
            for _ in 0..next(40) {
                if dense || next(6) == 0 {
                    b.extend_from_slice(PIECES[next(PIECES.len())]);
                } else {
                    b.extend(std::iter::repeat_n(b'y', next(40)));
                }
            }
            match next(4) {
                0 => {} // unterminated
                _ => b.extend_from_slice(b"\", \"z\": \"w\"}"),
            }
            let mut walk = Scan::new(&b);
            walk.wide = false;
            walk.i = at;
            let mut wide = Scan::new(&b);
            wide.i = at;
            let (want, got) = (walk.string_walk(), wide.string());
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&b[at..]));
            if let Some(raw) = &want {
                assert_eq!(wide.i, walk.i);
                some += 1;
                walked += usize::from(raw.unicode_escapes);
            }
            tried += 1;
        }
        // Both outcomes, and `\u` escapes, are exercised.
        assert!(
            some > tried / 5 && some < tried * 4 / 5,
            "{some} of {tried}"
        );
        assert!(walked > 100, "{walked}");
    }

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

    /// What serde_json reads for a re-check ([`super::super::parse_full`]'s record), in the
    /// form of [`FullLine`].
    fn serde_full_view(src: &str) -> Option<FullLine> {
        use serde_json::Value;
        let rec: super::super::Line = serde_json::from_str(src).ok()?;
        let task_id = match &rec.task.task_id {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let assistant: Vec<String> = rec
            .state
            .history
            .iter()
            .filter(|m| m.role == "assistant")
            .map(|m| m.content.clone())
            .collect();
        Some(FullLine {
            facts: FastLine {
                task_id,
                success: rec.state.success,
                invalid_actions: rec.state.agent_action_count.invalid_action,
                history_len: rec.state.history.len() as u64,
                escaped_underscore: assistant.iter().any(|m| m.contains("\\_")),
                python_tag: assistant.iter().any(|m| m.contains("[PYTHON]")),
                terminate_reason: rec.state.terminate_reason,
            },
            prompt: rec.task.prompt,
            reference: rec.task.reference,
            assistant,
        })
    }

    /// Where the fast path answers, serde_json accepts the line and gives the same values,
    /// for the stored flags and for a re-check; both answer for the same lines.
    fn check(src: &str) -> bool {
        let fast = parse(src);
        if fast.is_some() {
            assert_eq!(fast, serde_view(src), "line: {src}");
        }
        let full = parse_full(src);
        if full.is_some() {
            assert_eq!(full, serde_full_view(src), "line: {src}");
        }
        assert_eq!(full.is_some(), fast.is_some(), "line: {src}");
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
