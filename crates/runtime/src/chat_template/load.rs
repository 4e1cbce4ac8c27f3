//! Where a model folder keeps its chat template and special tokens, read as transformers'
//! `AutoTokenizer.from_pretrained` reads them: `chat_template.jinja` (and named templates in
//! `chat_templates/*.jinja`) win over `tokenizer_config.json`'s `chat_template`, which is a string
//! or a list of `{"name", "template"}`; of several templates the one named `default` is used.
//! Special tokens come from tokenizer_config.json (strings or AddedToken objects); a legacy config
//! (no `added_tokens_decoder`) has special_tokens_map.json's tokens laid over them.

use scorekit_core::error::{Error, InputError, Result};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// The tokenizer's special tokens as `PreTrainedTokenizerBase.special_tokens_map` lists them:
/// the ones that are set, by attribute name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecialTokens {
    /// `bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token`,
    /// `mask_token`, in that order, each with its text; unset ones are absent.
    pub tokens: Vec<(&'static str, String)>,
    /// `additional_special_tokens`, when the config lists any.
    pub additional: Vec<String>,
}

/// The single-token attributes of a tokenizer, in transformers' order.
const ATTRIBUTES: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

impl SpecialTokens {
    /// The special tokens of a parsed tokenizer_config.json (`file` names it in errors).
    pub fn from_config(config: &Json, file: &Path) -> Result<Self> {
        let mut tokens = Vec::new();
        for name in ATTRIBUTES {
            if let Some(text) = token_text(config.get(name), file, name)? {
                // special_tokens_map drops falsy values: an empty token is not set.
                if !text.is_empty() {
                    tokens.push((name, text));
                }
            }
        }
        let additional = match config.get("additional_special_tokens") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(items)) => items
                .iter()
                .map(|t| {
                    token_text(Some(t), file, "additional_special_tokens")
                        .map(Option::unwrap_or_default)
                })
                .collect::<Result<_>>()?,
            Some(other) => {
                return Err(field_error(
                    file,
                    "additional_special_tokens",
                    format!("expected a list of tokens, found {}", kind(other)),
                ))
            }
        };
        Ok(SpecialTokens { tokens, additional })
    }

    /// The text of one attribute (`bos_token`, …), if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.tokens
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.as_str())
    }

    /// Overlay special_tokens_map.json on a legacy config: transformers lets the map's tokens
    /// replace the config's, and adds its additional tokens to the config's.
    fn overlay(&mut self, map: SpecialTokens) {
        for (name, text) in map.tokens {
            self.tokens.retain(|(n, _)| *n != name);
            self.tokens.push((name, text));
        }
        for t in map.additional {
            if !self.additional.contains(&t) {
                self.additional.push(t);
            }
        }
        self.tokens
            .sort_by_key(|(n, _)| ATTRIBUTES.iter().position(|a| a == n));
    }
}

/// A token's text: a string, or an AddedToken object's `content`; `None` when absent or null.
fn token_text(v: Option<&Json>, file: &Path, field: &str) -> Result<Option<String>> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(Json::Object(o)) => match o.get("content") {
            Some(Json::String(s)) => Ok(Some(s.clone())),
            _ => Err(field_error(
                file,
                field,
                "an AddedToken object needs a string \"content\"",
            )),
        },
        Some(other) => Err(field_error(
            file,
            field,
            format!(
                "expected a string or an AddedToken object, found {}",
                kind(other)
            ),
        )),
    }
}

/// What a model folder says about chat rendering.
pub struct ModelChat {
    /// The template's source and the file it came from; `None`: the model has no chat template.
    pub template: Option<(String, PathBuf)>,
    /// The special tokens the template sees.
    pub special_tokens: SpecialTokens,
}

/// Read a model folder's chat template and special tokens. A folder without
/// tokenizer_config.json has no special tokens (and a template only from a `.jinja` file).
pub fn read_model_dir(dir: &Path) -> Result<ModelChat> {
    let config_path = dir.join("tokenizer_config.json");
    let config: Option<Json> = if config_path.exists() {
        let text = read(&config_path)?;
        let json: Json = serde_json::from_str(&text).map_err(|e| {
            Error::Input(InputError::line(
                &config_path,
                e.line(),
                format!("not valid JSON: {e}"),
            ))
        })?;
        if !json.is_object() {
            return Err(Error::Input(InputError::file(
                &config_path,
                format!("expected a JSON object, found {}", kind(&json)),
            )));
        }
        Some(json)
    } else {
        None
    };
    let mut special_tokens = match &config {
        Some(c) => SpecialTokens::from_config(c, &config_path)?,
        None => SpecialTokens::default(),
    };
    let legacy = config
        .as_ref()
        .is_none_or(|c| c.get("added_tokens_decoder").is_none());
    let map_path = dir.join("special_tokens_map.json");
    if legacy && map_path.exists() {
        let json: Json = serde_json::from_str(&read(&map_path)?).map_err(|e| {
            Error::Input(InputError::line(
                &map_path,
                e.line(),
                format!("not valid JSON: {e}"),
            ))
        })?;
        special_tokens.overlay(SpecialTokens::from_config(&json, &map_path)?);
    }
    let template = match jinja_files(dir)? {
        Some(found) => Some(found),
        None => match &config {
            Some(c) => config_template(c, &config_path)?,
            None => None,
        },
    };
    Ok(ModelChat {
        template,
        special_tokens,
    })
}

/// `chat_template.jinja` (named `default`) and `chat_templates/NAME.jinja`: the default one, or
/// an error when there are named ones and none is `default`.
fn jinja_files(dir: &Path) -> Result<Option<(String, PathBuf)>> {
    let single = dir.join("chat_template.jinja");
    if single.exists() {
        return Ok(Some((read(&single)?, single)));
    }
    let folder = dir.join("chat_templates");
    if !folder.is_dir() {
        return Ok(None);
    }
    let default = folder.join("default.jinja");
    if default.exists() {
        return Ok(Some((read(&default)?, default)));
    }
    let names = template_names(&folder)?;
    if names.is_empty() {
        return Ok(None);
    }
    Err(Error::Input(InputError::file(
        &folder,
        format!(
            "has several chat templates and none named \"default\" (found: {}); transformers \
             refuses to choose",
            names.join(", ")
        ),
    )))
}

/// The template names (`.jinja` file stems) in a `chat_templates/` folder, sorted.
fn template_names(folder: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(folder)
        .map_err(|e| Error::Input(InputError::file(folder, format!("cannot read: {e}"))))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "jinja").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    Ok(names)
}

/// tokenizer_config.json's `chat_template`: a string, or the list-of-named-templates form
/// (the `default` one).
fn config_template(config: &Json, file: &Path) -> Result<Option<(String, PathBuf)>> {
    match config.get("chat_template") {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some((s.clone(), file.to_path_buf()))),
        Some(Json::Array(items)) => {
            let mut names = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let name = item.get("name").and_then(Json::as_str);
                let template = item.get("template").and_then(Json::as_str);
                let (Some(name), Some(template)) = (name, template) else {
                    return Err(field_error(
                        file,
                        &format!("chat_template[{i}]"),
                        "each named template needs string \"name\" and \"template\" fields",
                    ));
                };
                if name == "default" {
                    return Ok(Some((template.to_string(), file.to_path_buf())));
                }
                names.push(name.to_string());
            }
            Err(field_error(
                file,
                "chat_template",
                format!(
                    "has several templates and none named \"default\" (found: {}); transformers \
                     refuses to choose",
                    names.join(", ")
                ),
            ))
        }
        Some(other) => Err(field_error(
            file,
            "chat_template",
            format!(
                "expected a string or a list of named templates, found {}",
                kind(other)
            ),
        )),
    }
}

/// A file's text, or an input error naming it.
fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::Input(InputError::file(path, format!("cannot read: {e}"))))
}

/// An error in one field of a JSON file (which has no line worth naming).
fn field_error(file: &Path, field: &str, message: impl Into<String>) -> Error {
    Error::Input(InputError {
        field: Some(field.to_string()),
        ..InputError::file(file, message)
    })
}

/// A JSON value's kind, for messages.
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}
