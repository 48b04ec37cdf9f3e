//! The one error type every command returns; `main` prints it as `Error: <message>`, exit 1.

use thiserror::Error;

use crate::auth_store::StoreError;
use crate::client::ClientError;
use crate::prompt::PromptError;
use crate::url::UrlError;

#[derive(Debug, Error)]
pub enum CliError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Url(#[from] UrlError),
    /// A rejected explicit login (upstream: `InvalidCredentialsException`).
    #[error("Invalid username/password combination. Please try again.")]
    InvalidCredentials,
    /// The password was right but the master refused the login, naming why (a deactivated or
    /// remote account; upstream prints `Forbidden(<reason>)`).
    #[error("Login refused for user '{user}': {reason}")]
    LoginRefused { user: String, reason: String },
    /// No one asked to log in and the default user was refused (upstream turns this into
    /// `UnauthenticatedException`, pointing at `det user login`).
    #[error("Unauthenticated: Please use 'det user login <username>' for password login.")]
    NotLoggedIn,
    /// A usage problem or failed local operation, worded for the user (upstream's `CliError`).
    #[error("{0}")]
    Message(String),
}

impl CliError {
    pub fn msg(message: impl Into<String>) -> Self {
        CliError::Message(message.into())
    }
}
