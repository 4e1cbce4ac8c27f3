//! A small, side-effect-free tokenizer and evaluator for the Python expressions that `eval` in
//! MINT's `TheoremqaTask.extract_answer` would accept (spec §3.3). Model text is never executed:
//! anything not modelled here is [`EvalError::Unsupported`] rather than guessed.

/// A Python value the evaluator can produce.
#[derive(Debug, Clone, PartialEq)]
pub enum PyVal {
    /// `None`.
    None,
    /// `bool`.
    Bool(bool),
    /// `int` (within i128; larger results are unsupported).
    Int(i128),
    /// `float` (also numpy float64, a float subclass).
    Float(f64),
    /// `str`.
    Str(String),
    /// `list`.
    List(Vec<PyVal>),
    /// `tuple`.
    Tuple(Vec<PyVal>),
    /// `set` (kept in insertion order; only compared after sorting).
    Set(Vec<PyVal>),
    /// The `np` module object.
    Module,
}

/// Why an evaluation did not produce a value.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// Python would raise (SyntaxError, NameError, TypeError, ...): the answer is wrong.
    Raises(String),
    /// Not modelled here.
    Unsupported(String),
}

use EvalError::{Raises, Unsupported};

/// The numeric value of a bool, int or float (Python's numeric tower), else `None`.
pub fn num(v: &PyVal) -> Option<f64> {
    match v {
        PyVal::Bool(b) => Some(*b as i32 as f64),
        PyVal::Int(i) => Some(*i as f64),
        PyVal::Float(f) => Some(*f),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i128),
    Float(f64),
    Str(String),
    Name(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "^", "&",
    "|", "~", "(", ")", "[", "]", "{", "}", ",", ".", ":",
];

fn tokenize(src: &str) -> Result<Vec<Tok>, EvalError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    // eval() ignores leading spaces and tabs.
    while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' || c == '\t' || c == '\u{c}' {
            i += 1;
        } else if c == '\n' || c == '\r' {
            if depth == 0 {
                // A logical line ends: only blank lines and comments may follow.
                let rest: String = chars[i..].iter().collect();
                if rest
                    .lines()
                    .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
                {
                    break;
                }
                return Err(Raises("SyntaxError: invalid syntax".into()));
            }
            i += 1;
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '_'
                    || chars[i] == '.'
                    || ((chars[i] == '+' || chars[i] == '-')
                        && matches!(chars[i - 1], 'e' | 'E')
                        && !chars[start..i]
                            .iter()
                            .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E'))))
            {
                i += 1;
            }
            let lit: String = chars[start..i].iter().collect();
            toks.push(number(&lit)?);
        } else if c == '"' || c == '\'' {
            let q = c;
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != q {
                if chars[i] == '\\' {
                    return Err(Unsupported("string escape".into()));
                }
                if chars[i] == '\n' {
                    return Err(Raises("SyntaxError: unterminated string literal".into()));
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err(Raises("SyntaxError: unterminated string literal".into()));
            }
            toks.push(Tok::Str(chars[start..i].iter().collect()));
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let prefix = matches!(
                name.to_ascii_lowercase().as_str(),
                "r" | "b" | "f" | "u" | "rb" | "br" | "fr" | "rf"
            );
            if prefix && i < chars.len() && (chars[i] == '"' || chars[i] == '\'') {
                return Err(Unsupported("prefixed string literal".into()));
            }
            toks.push(Tok::Name(name));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let op = OPS
                .iter()
                .find(|op| rest.starts_with(**op))
                .ok_or_else(|| Raises(format!("SyntaxError: invalid character {c:?}")))?;
            match *op {
                "(" | "[" | "{" => {
                    depth += 1;
                    // CPython's tokenizer (MAXLEVEL): deeper nesting is a SyntaxError. Also
                    // what keeps this recursive-descent parser off the end of its stack.
                    if depth >= MAX_PAREN_DEPTH {
                        return Err(Raises("SyntaxError: too many nested parentheses".into()));
                    }
                }
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
            i += op.chars().count();
            toks.push(Tok::Op(op));
        }
    }
    Ok(toks)
}

/// A Python numeric literal (decimal int, float with fraction/exponent, underscores).
fn number(lit: &str) -> Result<Tok, EvalError> {
    let lower = lit.to_ascii_lowercase();
    if lower.ends_with('j') {
        return Err(Unsupported("complex literal".into()));
    }
    if lower.starts_with("0x") || lower.starts_with("0o") || lower.starts_with("0b") {
        return Err(Unsupported("non-decimal integer literal".into()));
    }
    let bad = || Raises(format!("SyntaxError: invalid decimal literal {lit:?}"));
    let is_float = lower.contains('.') || lower.contains('e');
    if is_float {
        if lower.matches('.').count() > 1 {
            return Err(bad());
        }
        let v = super::pyfloat::py_float(lit)
            .filter(|_| !lower.contains("inf") && !lower.contains("nan"));
        return v.map(Tok::Float).ok_or_else(bad);
    }
    if !lower.chars().all(|c| c.is_ascii_digit() || c == '_')
        || lower.starts_with('_')
        || lower.ends_with('_')
        || lower.contains("__")
    {
        return Err(bad());
    }
    let digits = lower.replace('_', "");
    if digits.len() > 1 && digits.starts_with('0') && digits.chars().any(|c| c != '0') {
        return Err(Raises(
            "SyntaxError: leading zeros in decimal integer literals".into(),
        ));
    }
    digits
        .parse::<i128>()
        .map(Tok::Int)
        .map_err(|_| Unsupported("integer beyond 128 bits".into()))
}

/// Names Python would resolve in `TheoremqaTask.extract_answer` (builtins, module globals,
/// method locals) that this evaluator does not model.
const KNOWN_UNMODELLED: &[&str] = &[
    "all",
    "any",
    "bin",
    "bool",
    "chr",
    "complex",
    "dict",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "format",
    "frozenset",
    "getattr",
    "hash",
    "hex",
    "isinstance",
    "len",
    "list",
    "map",
    "next",
    "oct",
    "open",
    "ord",
    "print",
    "range",
    "repr",
    "reversed",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "tuple",
    "type",
    "zip",
    "__import__",
    "Ellipsis",
    "re",
    "ast",
    "logging",
    "traceback",
    "Rational",
    "Task",
    "Optional",
    "Any",
    "LOGGER",
    "self",
    "solution",
    "prediction",
    "compare_two_numbers",
    "compare_two_list",
    "within_eps",
    "parse_number_list",
    "is_number",
    "iter",
    "input",
];

/// Python keywords: an expression using one is outside what the evaluator models.
const KEYWORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "if", "else", "lambda", "for", "while", "def", "class",
    "return", "import", "from", "as", "with", "try", "except", "finally", "raise", "del", "global",
    "nonlocal", "assert", "break", "continue", "pass", "yield", "await", "async", "elif",
];

/// CPython's tokenizer refuses this many open brackets (`MAXLEVEL`).
const MAX_PAREN_DEPTH: i32 = 200;

/// Nested unary operators and powers (`- - - 1`, `2**-2**-2`) before the parser gives up, as
/// CPython's parser does ("too complex") long before a thread's stack would run out.
const MAX_UNARY_DEPTH: usize = 1000;

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Current nesting of `factor` (unary operators and exponents).
    unary_depth: usize,
}

/// Evaluate a Python expression the way `eval` in `mint/tasks/reasoning.py` would.
pub fn eval(src: &str) -> Result<PyVal, EvalError> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Err(Raises("SyntaxError: unexpected EOF".into()));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        unary_depth: 0,
    };
    let v = p.testlist()?;
    match p.peek() {
        None => {}
        // `x if c else y`, `a and b`, `x in y` are valid Python this evaluator does not model.
        Some(Tok::Name(n)) if KEYWORDS.contains(&n.as_str()) => {
            return Err(Unsupported(format!("keyword {n}")))
        }
        Some(_) => return Err(Raises("SyntaxError: invalid syntax".into())),
    }
    Ok(v)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }

    fn eat(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), EvalError> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(Raises("SyntaxError: invalid syntax".into()))
        }
    }

    /// Comma-separated expressions: a tuple when there is a comma.
    fn testlist(&mut self) -> Result<PyVal, EvalError> {
        let first = self.expr()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(",") {
            if self.starts_expr() {
                items.push(self.expr()?);
            } else {
                break;
            }
        }
        Ok(PyVal::Tuple(items))
    }

    fn starts_expr(&self) -> bool {
        match self.peek() {
            Some(Tok::Op(o)) => matches!(*o, "(" | "[" | "{" | "-" | "+" | "~"),
            Some(_) => true,
            None => false,
        }
    }

    fn expr(&mut self) -> Result<PyVal, EvalError> {
        let v = self.bitor()?;
        if let Some(Tok::Op(o)) = self.peek() {
            if matches!(*o, "<=" | ">=" | "==" | "!=" | "<" | ">") {
                return Err(Unsupported("comparison".into()));
            }
            if *o == ":" {
                return Err(Unsupported("dict or slice".into()));
            }
        }
        Ok(v)
    }

    fn bitor(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.bitxor()?;
        while self.eat("|") {
            let r = self.bitxor()?;
            v = int_op(&v, &r, "|")?;
        }
        Ok(v)
    }

    fn bitxor(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.bitand()?;
        while self.eat("^") {
            let r = self.bitand()?;
            v = int_op(&v, &r, "^")?;
        }
        Ok(v)
    }

    fn bitand(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.shift()?;
        while self.eat("&") {
            let r = self.shift()?;
            v = int_op(&v, &r, "&")?;
        }
        Ok(v)
    }

    fn shift(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.arith()?;
        loop {
            let op = if self.eat("<<") {
                "<<"
            } else if self.eat(">>") {
                ">>"
            } else {
                break;
            };
            let r = self.arith()?;
            v = int_op(&v, &r, op)?;
        }
        Ok(v)
    }

    fn arith(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.term()?;
        loop {
            let op = if self.eat("+") {
                "+"
            } else if self.eat("-") {
                "-"
            } else {
                break;
            };
            let r = self.term()?;
            v = binop(&v, &r, op)?;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.factor()?;
        loop {
            let op = ["*", "//", "/", "%"].into_iter().find(|o| self.is_op(o));
            let Some(op) = op else { break };
            self.pos += 1;
            let r = self.factor()?;
            v = binop(&v, &r, op)?;
        }
        Ok(v)
    }

    fn factor(&mut self) -> Result<PyVal, EvalError> {
        if self.unary_depth >= MAX_UNARY_DEPTH {
            return Err(Raises(
                "MemoryError: Parser stack overflowed - Python source too complex to parse".into(),
            ));
        }
        self.unary_depth += 1;
        let v = self.factor_inner();
        self.unary_depth -= 1;
        v
    }

    fn factor_inner(&mut self) -> Result<PyVal, EvalError> {
        if self.eat("-") {
            let v = self.factor()?;
            return binop(&PyVal::Int(0), &v, "neg");
        }
        if self.eat("+") {
            let v = self.factor()?;
            return match v {
                PyVal::Bool(b) => Ok(PyVal::Int(b as i128)),
                PyVal::Int(_) | PyVal::Float(_) => Ok(v),
                _ => Err(Raises("TypeError: bad operand type for unary +".into())),
            };
        }
        if self.eat("~") {
            let v = self.factor()?;
            return match v {
                PyVal::Bool(b) => Ok(PyVal::Int(!(b as i128))),
                PyVal::Int(i) => Ok(PyVal::Int(!i)),
                _ => Err(Raises("TypeError: bad operand type for unary ~".into())),
            };
        }
        self.power()
    }

    fn power(&mut self) -> Result<PyVal, EvalError> {
        let base = self.primary()?;
        if self.eat("**") {
            let exp = self.factor()?;
            return binop(&base, &exp, "**");
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<PyVal, EvalError> {
        let mut v = self.atom()?;
        loop {
            if self.eat(".") {
                let Some(Tok::Name(attr)) = self.peek().cloned() else {
                    return Err(Raises("SyntaxError: invalid syntax".into()));
                };
                self.pos += 1;
                v = match v {
                    PyVal::Module => np_attr(&attr, self)?,
                    _ => return Err(Unsupported(format!("attribute .{attr}"))),
                };
            } else if self.is_op("(") || self.is_op("[") {
                return Err(Unsupported("call or subscript of a value".into()));
            } else {
                return Ok(v);
            }
        }
    }

    fn args(&mut self) -> Result<Vec<PyVal>, EvalError> {
        self.expect("(")?;
        let mut out = Vec::new();
        while !self.is_op(")") {
            out.push(self.expr()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        Ok(out)
    }

    fn atom(&mut self) -> Result<PyVal, EvalError> {
        let Some(t) = self.peek().cloned() else {
            return Err(Raises("SyntaxError: unexpected EOF".into()));
        };
        self.pos += 1;
        match t {
            Tok::Int(i) => Ok(PyVal::Int(i)),
            Tok::Float(f) => Ok(PyVal::Float(f)),
            Tok::Str(mut s) => {
                while let Some(Tok::Str(more)) = self.peek().cloned() {
                    s.push_str(&more);
                    self.pos += 1;
                }
                Ok(PyVal::Str(s))
            }
            Tok::Name(n) => self.name(&n),
            Tok::Op("(") => {
                if self.eat(")") {
                    return Ok(PyVal::Tuple(Vec::new()));
                }
                let v = self.testlist()?;
                self.expect(")")?;
                Ok(v)
            }
            Tok::Op("[") => {
                let items = self.items("]")?;
                Ok(PyVal::List(items))
            }
            Tok::Op("{") => {
                if self.is_op("}") {
                    return Err(Unsupported("dict".into()));
                }
                let items = self.items("}")?;
                let mut set: Vec<PyVal> = Vec::new();
                for it in items {
                    if matches!(it, PyVal::List(_) | PyVal::Set(_)) {
                        return Err(Raises("TypeError: unhashable type".into()));
                    }
                    if !set.iter().any(|s| py_eq(s, &it)) {
                        set.push(it);
                    }
                }
                Ok(PyVal::Set(set))
            }
            _ => Err(Raises("SyntaxError: invalid syntax".into())),
        }
    }

    fn items(&mut self, close: &str) -> Result<Vec<PyVal>, EvalError> {
        let mut items = Vec::new();
        while !self.is_op(close) {
            items.push(self.expr()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(close)?;
        Ok(items)
    }

    fn name(&mut self, n: &str) -> Result<PyVal, EvalError> {
        if KEYWORDS.contains(&n) {
            return Err(Unsupported(format!("keyword {n}")));
        }
        match n {
            "True" => return Ok(PyVal::Bool(true)),
            "False" => return Ok(PyVal::Bool(false)),
            "None" => return Ok(PyVal::None),
            "np" => return Ok(PyVal::Module),
            _ => {}
        }
        if matches!(n, "abs" | "round" | "pow" | "min" | "max" | "int" | "float") {
            if !self.is_op("(") {
                return Err(Unsupported(format!("builtin {n} as a value")));
            }
            let args = self.args()?;
            return builtin(n, &args);
        }
        if KNOWN_UNMODELLED.contains(&n)
            || n.ends_with("Error")
            || n.ends_with("Exception")
            || n.ends_with("Warning")
            || n.starts_with("__")
            || n.ends_with("Task")
        {
            return Err(Unsupported(format!("name {n}")));
        }
        // Anything else (pi, sqrt, math, e, units, words) is undefined: NameError.
        Err(Raises(format!("NameError: name {n:?} is not defined")))
    }
}

fn np_attr(attr: &str, p: &mut Parser) -> Result<PyVal, EvalError> {
    match attr {
        "pi" => return Ok(PyVal::Float(std::f64::consts::PI)),
        "e" => return Ok(PyVal::Float(std::f64::consts::E)),
        "inf" => return Ok(PyVal::Float(f64::INFINITY)),
        _ => {}
    }
    let f: fn(f64) -> f64 = match attr {
        "sqrt" => f64::sqrt,
        "exp" => f64::exp,
        "log" => f64::ln,
        "log10" => f64::log10,
        "log2" => f64::log2,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "arcsin" => f64::asin,
        "arccos" => f64::acos,
        "arctan" => f64::atan,
        _ => return Err(Unsupported(format!("np.{attr}"))),
    };
    if !p.is_op("(") {
        return Err(Unsupported(format!("np.{attr} as a value")));
    }
    let args = p.args()?;
    match args.as_slice() {
        [x] if num(x).is_some() => Ok(PyVal::Float(f(num(x).expect("num")))),
        _ => Err(Unsupported(format!("np.{attr} on these arguments"))),
    }
}

fn builtin(n: &str, args: &[PyVal]) -> Result<PyVal, EvalError> {
    let type_err = || Raises(format!("TypeError in {n}()"));
    match (n, args) {
        ("abs", [PyVal::Int(i)]) => Ok(PyVal::Int(i.abs())),
        ("abs", [PyVal::Bool(b)]) => Ok(PyVal::Int(*b as i128)),
        ("abs", [PyVal::Float(f)]) => Ok(PyVal::Float(f.abs())),
        ("round", [x]) => match x {
            PyVal::Int(_) => Ok(x.clone()),
            PyVal::Bool(b) => Ok(PyVal::Int(*b as i128)),
            PyVal::Float(f) if f.is_finite() => Ok(PyVal::Int(f.round_ties_even() as i128)),
            PyVal::Float(_) => Err(Raises("OverflowError/ValueError in round()".into())),
            _ => Err(type_err()),
        },
        ("round", [x, PyVal::Int(d)]) => match x {
            PyVal::Int(_) | PyVal::Bool(_) => Ok(PyVal::Int(num(x).expect("num") as i128)),
            // Python rounds the exact binary value; scaling is within one ulp of it.
            PyVal::Float(f) => {
                let s = 10f64.powi(*d as i32);
                Ok(PyVal::Float((f * s).round_ties_even() / s))
            }
            _ => Err(type_err()),
        },
        ("pow", [a, b]) => binop(a, b, "**"),
        ("min" | "max", items) if !items.is_empty() => {
            let items: Vec<PyVal> = match items {
                [PyVal::List(v) | PyVal::Tuple(v) | PyVal::Set(v)] => v.clone(),
                _ => items.to_vec(),
            };
            if items.is_empty() {
                return Err(Raises("ValueError: empty sequence".into()));
            }
            let mut best = items[0].clone();
            for it in &items[1..] {
                let (a, b) = (
                    num(&best).ok_or_else(type_err)?,
                    num(it).ok_or_else(type_err)?,
                );
                if (n == "min" && b < a) || (n == "max" && b > a) {
                    best = it.clone();
                }
            }
            Ok(best)
        }
        ("int", [PyVal::Float(f)]) if f.is_finite() => Ok(PyVal::Int(f.trunc() as i128)),
        ("int", [PyVal::Int(i)]) => Ok(PyVal::Int(*i)),
        ("int", [PyVal::Bool(b)]) => Ok(PyVal::Int(*b as i128)),
        ("float", [x]) if num(x).is_some() => Ok(PyVal::Float(num(x).expect("num"))),
        ("float", [PyVal::Str(s)]) => super::pyfloat::py_float(s)
            .map(PyVal::Float)
            .ok_or_else(|| Raises("ValueError: could not convert string to float".into())),
        _ => Err(Unsupported(format!("{n}() with these arguments"))),
    }
}

fn py_eq(a: &PyVal, b: &PyVal) -> bool {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn int_of(v: &PyVal) -> Option<i128> {
    match v {
        PyVal::Bool(b) => Some(*b as i128),
        PyVal::Int(i) => Some(*i),
        _ => None,
    }
}

fn int_op(a: &PyVal, b: &PyVal, op: &str) -> Result<PyVal, EvalError> {
    let (Some(x), Some(y)) = (int_of(a), int_of(b)) else {
        return Err(Raises(format!(
            "TypeError: unsupported operand type(s) for {op}"
        )));
    };
    let v = match op {
        "|" => x | y,
        "^" => x ^ y,
        "&" => x & y,
        "<<" if (0..100).contains(&y) => {
            x.checked_shl(y as u32).ok_or(Unsupported("shift".into()))?
        }
        ">>" if y >= 0 => x >> y.min(127),
        _ => return Err(Raises("ValueError: negative shift count".into())),
    };
    Ok(PyVal::Int(v))
}

fn overflow() -> EvalError {
    Unsupported("integer beyond 128 bits".into())
}

/// Python arithmetic on ints, floats and bools; `neg` is unary minus (`a` is ignored).
fn binop(a: &PyVal, b: &PyVal, op: &str) -> Result<PyVal, EvalError> {
    if op == "neg" {
        return match b {
            PyVal::Bool(x) => Ok(PyVal::Int(-(*x as i128))),
            PyVal::Int(x) => Ok(PyVal::Int(-x)),
            PyVal::Float(x) => Ok(PyVal::Float(-x)),
            _ => Err(Raises("TypeError: bad operand type for unary -".into())),
        };
    }
    match (a, b, op) {
        (PyVal::Str(x), PyVal::Str(y), "+") => return Ok(PyVal::Str(format!("{x}{y}"))),
        (PyVal::List(x), PyVal::List(y), "+") => {
            return Ok(PyVal::List(x.iter().chain(y).cloned().collect()))
        }
        _ => {}
    }
    let (Some(x), Some(y)) = (num(a), num(b)) else {
        return match (a, b) {
            (PyVal::Str(_) | PyVal::List(_) | PyVal::Tuple(_), _)
            | (_, PyVal::Str(_) | PyVal::List(_) | PyVal::Tuple(_))
                if op == "*" || op == "%" =>
            {
                Err(Unsupported(format!("sequence {op}")))
            }
            _ => Err(Raises(format!(
                "TypeError: unsupported operand type(s) for {op}"
            ))),
        };
    };
    let zero_div = || Raises("ZeroDivisionError".into());
    if let (Some(i), Some(j)) = (int_of(a), int_of(b)) {
        return match op {
            "+" => i.checked_add(j).map(PyVal::Int).ok_or_else(overflow),
            "-" => i.checked_sub(j).map(PyVal::Int).ok_or_else(overflow),
            "*" => i.checked_mul(j).map(PyVal::Int).ok_or_else(overflow),
            "/" if j == 0 => Err(zero_div()),
            "/" => Ok(PyVal::Float(i as f64 / j as f64)),
            "//" if j == 0 => Err(zero_div()),
            "//" => Ok(PyVal::Int(
                i.div_euclid(j) - if j < 0 && i.rem_euclid(j) != 0 { 1 } else { 0 },
            )),
            "%" if j == 0 => Err(zero_div()),
            "%" => {
                let r = i % j;
                Ok(PyVal::Int(if r != 0 && ((r < 0) != (j < 0)) {
                    r + j
                } else {
                    r
                }))
            }
            "**" if j >= 0 => u32::try_from(j)
                .ok()
                .and_then(|e| i.checked_pow(e))
                .map(PyVal::Int)
                .ok_or_else(overflow),
            "**" if i == 0 => Err(zero_div()),
            "**" => Ok(PyVal::Float((i as f64).powf(j as f64))),
            _ => Err(Raises(format!("unknown operator {op}"))),
        };
    }
    match op {
        "+" => Ok(PyVal::Float(x + y)),
        "-" => Ok(PyVal::Float(x - y)),
        "*" => Ok(PyVal::Float(x * y)),
        "/" if y == 0.0 => Err(zero_div()),
        "/" => Ok(PyVal::Float(x / y)),
        "//" if y == 0.0 => Err(zero_div()),
        "//" => Ok(PyVal::Float((x / y).floor())),
        "%" if y == 0.0 => Err(zero_div()),
        "%" => {
            let r = x % y;
            Ok(PyVal::Float(if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }))
        }
        "**" => {
            if x < 0.0 && y.fract() != 0.0 {
                return Err(Unsupported("complex power".into()));
            }
            if x == 0.0 && y < 0.0 {
                return Err(zero_div());
            }
            let v = x.powf(y);
            if v.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(Raises("OverflowError".into()));
            }
            Ok(PyVal::Float(v))
        }
        _ => Err(Raises(format!("unknown operator {op}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // Found by the mint_checkers fuzzer: unbounded recursion crashed the process.
        for src in [
            format!("{}1{}", "(".repeat(5000), ")".repeat(5000)),
            format!("{}1", "-".repeat(100_000)),
            format!("{}1", "2**-".repeat(50_000)),
            format!("{}1{}", "[-(".repeat(3000), ")]".repeat(3000)),
        ] {
            assert!(matches!(eval(&src), Err(Raises(_))), "{}", &src[..20]);
        }
        // Python accepts these depths.
        assert!(matches!(
            eval(&format!("{}1{}", "(".repeat(150), ")".repeat(150))),
            Ok(PyVal::Int(1))
        ));
        assert!(matches!(
            eval(&format!("{}1", "-".repeat(500))),
            Ok(PyVal::Int(1))
        ));
    }

    #[test]
    fn python_operators() {
        assert_eq!(eval("2^3"), Ok(PyVal::Int(1)));
        assert_eq!(eval("7 // -2"), Ok(PyVal::Int(-4)));
        assert_eq!(eval("-7 % 3"), Ok(PyVal::Int(2)));
        assert_eq!(eval("2**-1"), Ok(PyVal::Float(0.5)));
        assert_eq!(eval("-2**2"), Ok(PyVal::Int(-4)));
        assert_eq!(eval("1_000 + .5"), Ok(PyVal::Float(1000.5)));
        assert!(matches!(eval("1/0"), Err(Raises(_))));
        assert!(matches!(eval("2\n6"), Err(Raises(_))));
        assert!(matches!(eval("007"), Err(Raises(_))));
        assert!(matches!(eval("Rational(1, 3)"), Err(Unsupported(_))));
        assert!(matches!(eval("1+2j"), Err(Unsupported(_))));
        assert_eq!(eval("1.28e-06"), Ok(PyVal::Float(1.28e-6)));
        assert_eq!(
            eval("[1,\n 2]"),
            Ok(PyVal::List(vec![PyVal::Int(1), PyVal::Int(2)]))
        );
    }
}
