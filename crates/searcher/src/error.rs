//! Typed errors: configuration problems (found before any trial starts) and event problems (a
//! master bug or a corrupted snapshot).

use thiserror::Error;

use crate::ops::RequestId;

/// A searcher or hyperparameter configuration that cannot be searched. `field` is the dotted path
/// a user would edit, e.g. `hyperparameters.optimizer.lr` or `searcher.max_trials`.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    pub field: String,
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError { field: field.into(), reason: reason.into() }
    }
}

/// Anything a searcher call can fail with.
#[derive(Debug, Error)]
pub enum SearcherError {
    #[error("invalid searcher configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("unknown trial request id {0}: the searcher never asked for it")]
    UnknownRequest(RequestId),
    #[error("initial operations were already taken; call them once per searcher")]
    AlreadyStarted,
    #[error("searcher snapshot cannot be read: {0}")]
    SnapshotFormat(#[from] serde_json::Error),
    #[error("searcher snapshot does not match the configuration: {0}")]
    SnapshotMismatch(String),
}

pub type SearcherResult<T> = Result<T, SearcherError>;
