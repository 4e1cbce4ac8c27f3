//! One JSON record with its location, and typed field accessors whose errors name the field.

use scorekit_core::error::InputError;
use serde_json::{Map, Value};
use std::sync::Arc;

/// A JSON object read from a file, with the file and 1-based line it came from.
#[derive(Debug, Clone)]
pub struct Record {
    /// The file, as the user named it.
    pub file: Arc<str>,
    /// 1-based line of the record (JSONL) or of its start (JSON arrays: 0 when unknown).
    pub line: usize,
    /// 1-based position of the record among the file's records (the `row` of items.jsonl).
    pub row: usize,
    /// The parsed value.
    pub value: Value,
}

/// The JSON type name of a value, for messages ("expected a string, found null").
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// "missing (keys found: a, b; did you mean \"endng\"?)": the keys of the record (the first
/// ten) and, where one is a likely misspelling of `field`, that one.
fn missing_message(field: &str, object: &Map<String, Value>) -> String {
    if object.is_empty() {
        return "missing (the record has no keys)".into();
    }
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut shown = keys.iter().take(10).copied().collect::<Vec<_>>().join(", ");
    if keys.len() > 10 {
        shown.push_str(&format!(", ... ({} in all)", keys.len()));
    }
    // A misspelling: within a third of the field's length in edits (at least one), or the
    // same name in another case or with other separators.
    let fold = |s: &str| s.to_lowercase().replace(['-', ' '], "_");
    let nearest = keys
        .iter()
        .map(|k| (strsim::levenshtein(field, k), *k))
        .filter(|(d, k)| *d <= (field.chars().count() / 3).max(1) || fold(k) == fold(field))
        .min();
    match nearest {
        Some((_, k)) => format!("missing (keys found: {shown}; did you mean {k:?}?)"),
        None => format!("missing (keys found: {shown})"),
    }
}

impl Record {
    /// An error located at this record, about one field.
    pub fn field_error(&self, field: &str, message: impl Into<String>) -> InputError {
        InputError::field(&*self.file, self.line, field, message)
    }

    /// An error located at this record.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        InputError::line(&*self.file, self.line, message)
    }

    /// The record as an object.
    pub fn object(&self) -> Result<&Map<String, Value>, InputError> {
        self.value.as_object().ok_or_else(|| {
            self.error(format!(
                "expected a JSON object, found {}",
                type_name(&self.value)
            ))
        })
    }

    /// A field that may be absent (absent and null both give `None`).
    pub fn get(&self, field: &str) -> Result<Option<&Value>, InputError> {
        Ok(self.object()?.get(field).filter(|v| !v.is_null()))
    }

    /// A field that must be present (null counts as missing only if `allow_null`). A missing
    /// one names the keys the record has and the likely misspelling among them.
    pub fn require(&self, field: &str) -> Result<&Value, InputError> {
        let object = self.object()?;
        object
            .get(field)
            .ok_or_else(|| self.field_error(field, missing_message(field, object)))
    }

    /// A required string field.
    pub fn str(&self, field: &str) -> Result<&str, InputError> {
        let v = self.require(field)?;
        v.as_str().ok_or_else(|| {
            self.field_error(field, format!("expected a string, found {}", type_name(v)))
        })
    }

    /// An optional string field.
    pub fn opt_str(&self, field: &str) -> Result<Option<&str>, InputError> {
        match self.get(field)? {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| {
                self.field_error(field, format!("expected a string, found {}", type_name(v)))
            }),
        }
    }

    /// A required integer field (JSON integers only, not `1.5` or `"1"`).
    pub fn i64(&self, field: &str) -> Result<i64, InputError> {
        let v = self.require(field)?;
        v.as_i64().ok_or_else(|| {
            self.field_error(field, format!("expected an integer, found {}", describe(v)))
        })
    }

    /// A required finite number field.
    pub fn f64(&self, field: &str) -> Result<f64, InputError> {
        let v = self.require(field)?;
        v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
            self.field_error(
                field,
                format!("expected a finite number, found {}", describe(v)),
            )
        })
    }

    /// A required boolean field.
    pub fn bool(&self, field: &str) -> Result<bool, InputError> {
        let v = self.require(field)?;
        v.as_bool().ok_or_else(|| {
            self.field_error(field, format!("expected a boolean, found {}", type_name(v)))
        })
    }

    /// A required array field.
    pub fn array(&self, field: &str) -> Result<&Vec<Value>, InputError> {
        let v = self.require(field)?;
        v.as_array().ok_or_else(|| {
            self.field_error(field, format!("expected an array, found {}", type_name(v)))
        })
    }
}

/// A value's type, with the value itself when short (for numbers and short strings).
fn describe(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.len() <= 40 => format!("the string {s:?}"),
        _ => type_name(v).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(v: Value) -> Record {
        Record {
            file: "gen.jsonl".into(),
            line: 17,
            row: 3,
            value: v,
        }
    }

    #[test]
    fn accessors_name_the_field_and_the_found_type() {
        let r = rec(json!({"ending": null, "n": 1.5, "ok": "x"}));
        assert_eq!(
            r.str("ending").unwrap_err().to_string(),
            "gen.jsonl:17: field \"ending\": expected a string, found null"
        );
        assert_eq!(
            r.i64("n").unwrap_err().to_string(),
            "gen.jsonl:17: field \"n\": expected an integer, found the number 1.5"
        );
        let e = r.str("missing").unwrap_err().to_string();
        assert!(
            e.starts_with("gen.jsonl:17: field \"missing\": missing (keys found: "),
            "{e}"
        );
        let endng = Record {
            file: "gen.jsonl".into(),
            line: 3,
            row: 3,
            value: serde_json::json!({"question_id": "q", "endng": "x", "model": "m"}),
        };
        assert_eq!(
            endng.str("ending").unwrap_err().to_string(),
            "gen.jsonl:3: field \"ending\": missing (keys found: question_id, endng, model; did \
             you mean \"endng\"?)"
        );
        // No likely misspelling: the keys alone.
        let e = endng.str("gold_label").unwrap_err().to_string();
        assert!(
            e.ends_with("missing (keys found: question_id, endng, model)"),
            "{e}"
        );
        assert_eq!(r.opt_str("ending").unwrap(), None);
        assert_eq!(r.str("ok").unwrap(), "x");
    }

    #[test]
    fn non_objects_are_rejected() {
        let r = rec(json!([1, 2]));
        assert_eq!(
            r.str("a").unwrap_err().to_string(),
            "gen.jsonl:17: expected a JSON object, found an array"
        );
    }
}
