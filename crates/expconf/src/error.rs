//! What can be wrong with a config (errors: the experiment cannot be created) and what is merely
//! worth telling the user (warnings: unknown or deprecated fields). Every variant names the field
//! path, what was found and what is allowed, so one message is enough to fix the config.

use std::fmt;

use serde::Serialize;

/// One problem that makes a config unusable. Parsing reports all of them, never just the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The text is not a YAML (or JSON) document; `message` includes the line and column.
    #[error("invalid YAML: {message}")]
    Syntax { message: String },
    /// A value of the wrong kind, e.g. a string where an integer belongs.
    #[error("{path}: expected {expected}, found {found}")]
    WrongType { path: String, expected: String, found: String },
    /// A value of the right kind outside its allowed range.
    #[error("{path}: found {found}, expected {allowed}")]
    OutOfRange { path: String, found: String, allowed: String },
    /// A string outside a fixed set of choices.
    #[error("{path}: found {found}, expected one of {allowed}")]
    NotOneOf { path: String, found: String, allowed: String },
    /// A field that must be set (by the experiment or by the master's defaults) but is not.
    #[error("{path}: required but missing ({hint})")]
    Missing { path: String, hint: String },
    /// A value that breaks a rule involving its meaning or another field (e.g. `minval` >= `maxval`).
    #[error("{path}: {reason} (found {found})")]
    Invalid { path: String, found: String, reason: String },
    /// A feature upstream Determined removed; `reason` says what to use instead.
    #[error("{path}: {found} is no longer supported ({reason})")]
    Removed { path: String, found: String, reason: String },
}

impl ConfigError {
    /// The dotted field path (`searcher.metric`); empty for YAML syntax errors.
    pub fn path(&self) -> &str {
        match self {
            ConfigError::Syntax { .. } => "",
            ConfigError::WrongType { path, .. }
            | ConfigError::OutOfRange { path, .. }
            | ConfigError::NotOneOf { path, .. }
            | ConfigError::Missing { path, .. }
            | ConfigError::Invalid { path, .. }
            | ConfigError::Removed { path, .. } => path,
        }
    }
}

/// Why a warning was raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A key no part of the schema knows (often a typo); it is ignored.
    UnknownField,
    /// Accepted for compatibility, but upstream deprecated it.
    Deprecated,
    /// Accepted and ignored, e.g. a field another searcher uses.
    Ignored,
    /// Left out and filled with a default the user may not expect (`searcher.metric`).
    Defaulted,
}

/// Something the user should know that does not stop the experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub path: String,
    pub kind: WarningKind,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_path_found_and_allowed() {
        let error = ConfigError::WrongType {
            path: "resources.slots_per_trial".into(),
            expected: "an integer".into(),
            found: "a string (\"two\")".into(),
        };
        assert_eq!(error.to_string(), "resources.slots_per_trial: expected an integer, found a string (\"two\")");
        assert_eq!(error.path(), "resources.slots_per_trial");
        let error = ConfigError::OutOfRange { path: "resources.priority".into(), found: "0".into(), allowed: "1 to 99".into() };
        assert_eq!(error.to_string(), "resources.priority: found 0, expected 1 to 99");
    }

    #[test]
    fn warnings_render_with_their_path() {
        let warning = Warning { path: "searcher.nmae".into(), kind: WarningKind::UnknownField, message: "unknown field; ignored".into() };
        assert_eq!(warning.to_string(), "searcher.nmae: unknown field; ignored");
    }
}
