//! Python `str` whitespace as the upstream scorers see it: `str.isspace()`, `str.split()` and
//! `str.strip()` without arguments. Shared by GRASP's answer rules and MINT's checkers.

/// Python's `str.isspace()` for one character: Unicode White_Space plus the four ASCII
/// separators U+001C..U+001F, which Python also counts and Rust's `char::is_whitespace` does not.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python `s.split()`: runs of whitespace separate words, no empty words.
pub fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|w| !w.is_empty())
}

/// Python's `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_exactly_pythons() {
        // Every code point CPython 3.11's str.isspace() accepts (Unicode 14), listed by hand.
        let python = |c: char| {
            matches!(
                c,
                '\u{9}'..='\u{d}'
                    | '\u{1c}'..='\u{20}'
                    | '\u{85}'
                    | '\u{a0}'
                    | '\u{1680}'
                    | '\u{2000}'..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
            )
        };
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(is_py_space(c), python(c), "U+{:04X}", c as u32);
        }
        assert_eq!(py_split("  a \u{1d} b  ").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(py_strip("\u{1f}\u{3000}x y\u{85}"), "x y");
    }
}
