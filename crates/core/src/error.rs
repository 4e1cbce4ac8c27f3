//! Error kinds and their exit codes (0 done, 2 bad input or usage, 1 a failure of scorekit).

use std::fmt;
use std::path::Path;

/// Everything a command can fail with; the kind decides the exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message names file, line and field. Exit code 2.
    #[error("{0}")]
    Input(#[from] InputError),
    /// Bad usage (flags, conflicting options, refusing to overwrite). Exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A setting a lower layer cannot honour, named by that layer's own parameter; the command
    /// line shows it under the flag that set it. Exit code 2.
    #[error("{0}")]
    Setting(SettingError),
    /// A command whose suite has not landed yet. Exit code 1.
    #[error("`scorekit {0}` is not available yet in this version of scorekit")]
    NotAvailable(&'static str),
    /// A failure of scorekit itself (I/O on output, a model that fails to run). Exit code 1.
    #[error("{0:#}")]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) | Error::Usage(_) | Error::Setting(_) => 2,
            Error::NotAvailable(_) | Error::Internal(_) => 1,
        }
    }

    /// A usage error with a message.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// A setting that cannot be honoured: `value` as set (shown after the setting's name), and
    /// why.
    pub fn setting(setting: Setting, value: Option<String>, message: impl Into<String>) -> Self {
        Error::Setting(SettingError {
            setting,
            value,
            message: message.into(),
        })
    }
}

/// The settings lower layers (runtime, output folder, shards) are given and may refuse. They
/// speak of these, never of flags; the command line maps each to its flag in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// Which implementation runs the encoders.
    Engine,
    /// int8 encoder products.
    Quantize,
    /// The float type of weights and activations.
    Dtype,
    /// The label a binary judge counts as "follows".
    FollowLabel,
}

impl Setting {
    /// The setting's own name (what a lower layer's error shows without the command line).
    pub fn name(self) -> &'static str {
        match self {
            Setting::Engine => "engine",
            Setting::Quantize => "quantize",
            Setting::Dtype => "dtype",
            Setting::FollowLabel => "follow_label",
        }
    }
}

/// A refused setting: which, the value as set, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingError {
    /// The setting.
    pub setting: Setting,
    /// Its value, as shown after the name (`native`, `"maybe"`, a path).
    pub value: Option<String>,
    /// Why it cannot be honoured, and what would be.
    pub message: String,
}

impl SettingError {
    /// The message with the setting shown as `name` (the command line passes the flag).
    pub fn shown_as(&self, name: &str) -> String {
        match &self.value {
            Some(v) => format!("{name} {v}: {}", self.message),
            None => format!("{name}: {}", self.message),
        }
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown_as(self.setting.name()))
    }
}

/// Result with scorekit's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A problem in an input file, located as precisely as the input allows.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// The field, when the problem is about one.
    pub field: Option<String>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl InputError {
    /// A problem with the file as a whole.
    pub fn file(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        InputError {
            file: file.as_ref().display().to_string(),
            line: None,
            field: None,
            message: message.into(),
        }
    }

    /// A problem on one line.
    pub fn line(file: impl AsRef<Path>, line: usize, message: impl Into<String>) -> Self {
        InputError {
            line: Some(line),
            ..InputError::file(file, message)
        }
    }

    /// A problem with one field on one line.
    pub fn field(
        file: impl AsRef<Path>,
        line: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            line: Some(line),
            field: Some(field.into()),
            ..InputError::file(file, message)
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "field \"{field}\": ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_error_names_file_line_and_field() {
        let e = InputError::field("gen.jsonl", 17, "ending", "expected a string, found null");
        assert_eq!(
            e.to_string(),
            "gen.jsonl:17: field \"ending\": expected a string, found null"
        );
        assert_eq!(Error::from(e).exit_code(), 2);
        assert_eq!(
            InputError::file("x.csv", "file is empty").to_string(),
            "x.csv: file is empty"
        );
    }

    #[test]
    fn not_available_exits_one() {
        assert_eq!(Error::NotAvailable("bench").exit_code(), 1);
    }
}
