//! A decoder judge's prompt as its chat model expects it: the messages rendered through the
//! model's own chat template, byte for byte as transformers'
//! `tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)` renders
//! them (`tests/data/chat_templates` holds the real templates of Llama, Qwen, Mistral, Gemma, Phi
//! and SmolLM models with transformers' own renders; `scripts/reference/chat_templates.py` makes
//! them).
//!
//! How transformers renders, and so how this does: jinja2's sandbox with `trim_blocks`,
//! `lstrip_blocks`, loop controls and no trailing newline kept; the globals `raise_exception(msg)`
//! and `strftime_now(format)`; its own `tojson` filter (`json.dumps`, non-ASCII kept); the
//! variables `messages`, `tools` (none), `documents` (none), `add_generation_prompt` and the
//! tokenizer's special tokens (`bos_token`, `eos_token`, … only those that are set). Values print
//! as Python prints them (`True`, `None`) and Python's string methods work. The `{% generation %}`
//! block (transformers' assistant-mask extension) renders its body, as it does when no mask is
//! asked for.
//!
//! A rendered chat already holds the model's control tokens, so it is tokenized without adding
//! special tokens; a model with no chat template gets the plain prompt, tokenized with them
//! ([`JudgePrompt`]).

mod load;
mod python;

pub use load::SpecialTokens;

use minijinja::value::Value;
use minijinja::{Environment, Error as JinjaError, ErrorKind};
use scorekit_core::error::{Error, InputError, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions before the conversation (`--system-prompt`).
    System,
    /// The asker: the judge's question.
    User,
    /// The model's turn (a demonstration's answer in a multi-shot chat).
    Assistant,
}

/// One message of a chat: `{"role": ..., "content": ...}` as the template sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

impl Message {
    /// The message as a template sees it: a dict of `role` then `content`, as transformers
    /// passes it.
    fn to_value(&self) -> Value {
        let role = match self.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        [
            ("role", Value::from(role)),
            ("content", Value::from(self.content.as_str())),
        ]
        .into_iter()
        .collect()
    }
}

/// The judge's chat: the optional system message, then the prompt as the one user message.
pub fn judge_messages(prompt: &str, system_prompt: Option<&str>) -> Vec<Message> {
    system_prompt
        .map(Message::system)
        .into_iter()
        .chain(std::iter::once(Message::user(prompt)))
        .collect()
}

/// The text a decoder judge tokenizes, and how: a rendered chat carries its own control tokens
/// (`add_special_tokens` false, as transformers tokenizes `apply_chat_template`'s text); a plain
/// prompt gets the tokenizer's (true, as `tokenizer(prompt)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgePrompt {
    /// The text to tokenize.
    pub text: String,
    /// Whether the tokenizer adds its special tokens (BOS, …) when encoding `text`.
    pub add_special_tokens: bool,
}

/// The prompt a judge sends: `prompt` (and `system_prompt`) rendered through `template` with the
/// generation prompt added, or, for a model without a chat template, `prompt` as it is. A system
/// prompt needs a chat template to go anywhere: without one it is a usage error.
pub fn judge_prompt(
    template: Option<&ChatTemplate>,
    prompt: &str,
    system_prompt: Option<&str>,
) -> Result<JudgePrompt> {
    match template {
        Some(t) => Ok(JudgePrompt {
            text: t.render(&judge_messages(prompt, system_prompt), true)?,
            add_special_tokens: false,
        }),
        None if system_prompt.is_some() => Err(Error::usage(
            "a system prompt needs the model's chat template, and this model has none \
             (no chat_template in tokenizer_config.json, no chat_template.jinja)",
        )),
        None => Ok(JudgePrompt {
            text: prompt.to_string(),
            add_special_tokens: true,
        }),
    }
}

/// The name the template has inside its environment.
const NAME: &str = "chat_template";

/// A compiled chat template with the special tokens it is rendered with.
pub struct ChatTemplate {
    env: Environment<'static>,
    source: Arc<str>,
    origin: PathBuf,
    special_tokens: SpecialTokens,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .field("special_tokens", &self.special_tokens)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// The chat template of a model folder (see the module docs for where it is looked for),
    /// compiled; `Ok(None)` when the model has none (then the judge uses the plain prompt). A
    /// malformed template or config is an input error naming the file.
    pub fn from_model_dir(dir: &Path) -> Result<Option<ChatTemplate>> {
        let chat = load::read_model_dir(dir)?;
        match chat.template {
            Some((source, origin)) => Ok(Some(ChatTemplate::new(
                source,
                origin,
                chat.special_tokens,
            )?)),
            None => Ok(None),
        }
    }

    /// Compile `source` (read from `origin`, which errors name) to render with `special_tokens`.
    /// A syntax error is an input error naming `origin` and the template's line.
    pub fn new(
        source: impl Into<String>,
        origin: impl Into<PathBuf>,
        special_tokens: SpecialTokens,
    ) -> Result<Self> {
        let origin = origin.into();
        let source: String = source.into();
        let mut env = environment();
        env.add_template_owned(NAME, with_generation_blocks(&source))
            .map_err(|e| template_error(&origin, &e))?;
        Ok(ChatTemplate {
            env,
            source: source.into(),
            origin,
            special_tokens,
        })
    }

    /// The template's source, as the model folder has it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The file the template came from (tokenizer_config.json or a `.jinja` file).
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    /// The special tokens the template is rendered with.
    pub fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }

    /// `messages` rendered as transformers'
    /// `apply_chat_template(messages, add_generation_prompt=..., tokenize=False)`, with
    /// `strftime_now` reading the clock now. A template that raises (`raise_exception`, e.g. a
    /// system role it does not support) or fails is an input error naming the file and the
    /// template's message.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        self.render_at(messages, add_generation_prompt, SystemTime::now())
    }

    /// [`render`](Self::render) with `strftime_now` reading `now` (UTC) instead of the clock: a
    /// template that writes today's date (Llama 3.2's) renders reproducibly.
    pub fn render_at(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        now: SystemTime,
    ) -> Result<String> {
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| template_error(&self.origin, &e))?;
        let mut ctx: Vec<(&str, Value)> = vec![
            ("messages", messages.iter().map(Message::to_value).collect()),
            ("tools", Value::from(())),
            ("documents", Value::from(())),
            ("add_generation_prompt", Value::from(add_generation_prompt)),
            (
                "strftime_now",
                Value::from_function(move |format: &str| python::strftime(format, now)),
            ),
        ];
        for (name, text) in &self.special_tokens.tokens {
            ctx.push((name, Value::from(text.as_str())));
        }
        if !self.special_tokens.additional.is_empty() {
            ctx.push((
                "additional_special_tokens",
                Value::from(self.special_tokens.additional.clone()),
            ));
        }
        let ctx: Value = ctx.into_iter().collect();
        template
            .render(ctx)
            .map_err(|e| template_error(&self.origin, &e))
    }
}

/// The environment transformers' `_compile_jinja_template` builds, in minijinja.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(false);
    // jinja2's sandbox does not autoescape; nothing here is HTML.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    // jinja2 prints `str(value)`: True, None, ['a'], 1.0.
    env.set_formatter(|out, _state, value| {
        out.write_str(&python::py_str(value)?)
            .map_err(|e| JinjaError::new(ErrorKind::WriteFailure, e.to_string()))
    });
    env.set_unknown_method_callback(python_method);
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", |format: &str| {
        python::strftime(format, SystemTime::now())
    });
    env.add_filter("tojson", python::tojson);
    env.add_filter("string", |v: Value| python::py_str(&v));
    env.add_filter("trim", |v: Value, chars: Option<&str>| {
        Ok::<_, JinjaError>(python::py_strip(&python::py_str(&v)?, chars, true, true).to_string())
    });
    // jinja2's filters take an undefined value as empty where minijinja's refuse it.
    let length = |v: &Value| {
        if v.is_undefined() {
            Ok(0)
        } else {
            minijinja::filters::length(v)
        }
    };
    env.add_filter("length", length);
    env.add_filter("count", length);
    env.add_filter("items", |v: &Value| {
        if v.is_undefined() {
            Ok(Value::from(Vec::<Value>::new()))
        } else {
            minijinja::filters::items(v)
        }
    });
    env.add_filter("first", |v: &Value| {
        if v.is_undefined() {
            Ok(Value::UNDEFINED)
        } else {
            minijinja::filters::first(v)
        }
    });
    env.add_filter("last", |v: Value| {
        if v.is_undefined() {
            Ok(Value::UNDEFINED)
        } else {
            minijinja::filters::last(v)
        }
    });
    env
}

/// Python methods on values: `str.strip`/`lstrip`/`rstrip` with Python's whitespace, the rest
/// as minijinja-contrib's pycompat has them (`startswith`, `split`, `title`, `dict.get`, …).
fn python_method(
    state: &minijinja::State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> std::result::Result<Value, JinjaError> {
    if let (Some(s), "strip" | "lstrip" | "rstrip") = (value.as_str(), method) {
        let chars = match args {
            [] => None,
            [c] if c.is_none() => None,
            [c] => Some(c.as_str().ok_or_else(|| {
                JinjaError::new(ErrorKind::InvalidOperation, "strip arg must be None or str")
            })?),
            _ => return Err(JinjaError::from(ErrorKind::TooManyArguments)),
        };
        let (left, right) = (method != "rstrip", method != "lstrip");
        return Ok(Value::from(python::py_strip(s, chars, left, right)));
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// The template's own exception: its message, kept apart from minijinja's errors.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// `raise_exception(message)`: transformers raises `TemplateError(message)`.
fn raise_exception(message: Value) -> std::result::Result<Value, JinjaError> {
    let message = python::py_str(&message)?;
    Err(JinjaError::new(ErrorKind::InvalidOperation, message.clone()).with_source(Raised(message)))
}

/// A minijinja error as an input error naming the template's file: the template's own message
/// when it raised, else minijinja's description with the template line.
fn template_error(origin: &Path, e: &JinjaError) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(Raised(message)) = err.downcast_ref::<Raised>() {
            return Error::Input(InputError::file(
                origin,
                format!("the chat template raised an exception: {message}"),
            ));
        }
        source = err.source();
    }
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let at = match e.line() {
        Some(line) => format!(" (line {line} of the template)"),
        None => String::new(),
    };
    Error::Input(InputError::file(
        origin,
        format!("the chat template cannot be rendered: {what}{at}"),
    ))
}

/// transformers' `{% generation %}…{% endgeneration %}` (it marks the assistant's tokens for a
/// training mask and renders its body unchanged) as an always-true `if`, whitespace control kept.
fn with_generation_blocks(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            return out;
        };
        let inner = &tag[2..end];
        let (open_ws, body) = split_ws(inner, true);
        let (close_ws, body) = split_ws(body, false);
        let replaced = match body.trim() {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match replaced {
            Some(stmt) => out.push_str(&format!("{{%{open_ws} {stmt} {close_ws}%}}")),
            None => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A tag's whitespace-control marker (`-` or `+`) at its start (`leading`) or end, and the rest.
fn split_ws(s: &str, leading: bool) -> (&str, &str) {
    let marker = |c: char| c == '-' || c == '+';
    if leading {
        match s.chars().next() {
            Some(c) if marker(c) => (&s[..1], &s[1..]),
            _ => ("", s),
        }
    } else {
        match s.chars().last() {
            Some(c) if marker(c) => (&s[s.len() - 1..], &s[..s.len() - 1]),
            _ => ("", s),
        }
    }
}

#[cfg(test)]
mod tests;
