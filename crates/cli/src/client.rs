//! Blocking HTTP client for the master's REST API, mapping every failure to one typed error.

use std::time::Duration;

use reqwest::Method;
use reqwest::blocking::{Client as Http, Response};
use resolute_api::error::ErrorBody;
use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot reach the master at {url}: {cause}. Is it running? Set DET_MASTER or pass -m.")]
    Unreachable { url: String, cause: String },
    #[error("cannot reach the master at {url}: {cause}; {hint}")]
    Untrusted { url: String, cause: String, hint: &'static str },
    #[error("{0}")]
    Tls(#[from] resolute_tls::TlsError),
    #[error("{0}. Please log in with 'det user login <username>'.")]
    Unauthenticated(String),
    #[error("Forbidden: {0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{message} (HTTP {status})")]
    Api { status: u16, message: String },
    #[error("unexpected response from the master for {what}: {cause}")]
    BadResponse { what: String, cause: String },
}

/// A client bound to one master, optionally carrying a bearer token.
#[derive(Clone, Debug)]
pub struct Client {
    master: String,
    http: Http,
    token: Option<String>,
}

impl Client {
    /// `master` is a canonical URL (see [`crate::url`]).
    pub fn new(master: &str) -> Result<Self, ClientError> {
        Self::with_timeout(master, Duration::from_secs(120))
    }

    /// A client whose requests give up after `timeout` (health probes use a short one).
    pub fn with_timeout(master: &str, timeout: Duration) -> Result<Self, ClientError> {
        let http = Http::builder()
            .tls_backend_preconfigured(tls_config(master)?)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .build()
            .map_err(|e| unreachable(master, &e))?;
        Ok(Client { master: master.to_owned(), http, token: None })
    }

    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The bearer token, when the client carries one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    pub fn master(&self) -> &str {
        &self.master
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send::<(), T>(Method::GET, path, None)
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        self.send(Method::POST, path, Some(body))
    }

    pub fn put<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        self.send(Method::PUT, path, Some(body))
    }

    pub fn delete<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send::<(), T>(Method::DELETE, path, None)
    }

    pub fn patch<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        self.send(Method::PATCH, path, Some(body))
    }

    /// Sends one request; `path` is relative to the master URL (e.g. `api/v1/me`).
    pub fn send<B: Serialize, T: DeserializeOwned>(&self, method: Method, path: &str, body: Option<&B>) -> Result<T, ClientError> {
        let url = format!("{}/{}", self.master, path.trim_start_matches('/'));
        let mut req = self.http.request(method.clone(), &url);
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().map_err(|e| unreachable(&self.master, &e))?;
        let what = format!("{method} /{}", path.trim_start_matches('/'));
        parse_response(resp, &what)
    }
}

impl Client {
    /// Opens a GET whose body the caller reads as it arrives (log follows, checkpoint downloads):
    /// only connecting is timed, since a followed stream may stay open for hours.
    pub fn open(&self, path: &str, accept: &str) -> Result<Response, ClientError> {
        let http = Http::builder()
            .tls_backend_preconfigured(tls_config(&self.master)?)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| unreachable(&self.master, &e))?;
        let url = format!("{}/{}", self.master, path.trim_start_matches('/'));
        let mut req = http.get(&url).header(reqwest::header::ACCEPT, accept);
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let resp = req.send().map_err(|e| unreachable(&self.master, &e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let body = resp.text().unwrap_or_default();
        Err(api_error(status, &body))
    }
}

fn parse_response<T: DeserializeOwned>(resp: Response, what: &str) -> Result<T, ClientError> {
    let status = resp.status();
    let text = resp.text().map_err(|e| ClientError::BadResponse { what: what.to_owned(), cause: root_cause(&e) })?;
    if !status.is_success() {
        return Err(api_error(status.as_u16(), &text));
    }
    // Empty-bodied successes (e.g. logout) decode as `{}`.
    let text = if text.trim().is_empty() { "{}" } else { text.as_str() };
    serde_json::from_str(text).map_err(|e| ClientError::BadResponse { what: what.to_owned(), cause: e.to_string() })
}

/// Maps a failed response to an error, using the `{"error":{...}}` envelope's message when there
/// is one (non-gateway routes may answer in plain text, like upstream's `APIException` handles).
pub fn api_error(status: u16, body: &str) -> ClientError {
    let message = match serde_json::from_str::<ErrorBody>(body) {
        Ok(b) if !b.error.error.is_empty() => b.error.error,
        Ok(b) => b.error.reason,
        Err(_) if !body.trim().is_empty() => body.trim().to_owned(),
        Err(_) => "request failed".to_owned(),
    };
    match status {
        401 => ClientError::Unauthenticated(message),
        403 => ClientError::Forbidden(message),
        404 => ClientError::NotFound(message),
        _ => ClientError::Api { status, message },
    }
}

/// Percent-encodes one URL path segment (usernames may contain anything).
pub fn path_segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The rustls config for `master` (see [`crate::master_tls`]); every client carries one, since
/// reqwest has no TLS provider of its own here.
fn tls_config(master: &str) -> Result<rustls::ClientConfig, ClientError> {
    Ok((*crate::master_tls::config_for(master)?).clone())
}

fn unreachable(master: &str, err: &reqwest::Error) -> ClientError {
    let cause = if err.is_timeout() { "timed out".to_owned() } else { root_cause(err) };
    match crate::master_tls::untrusted_hint(&cause).filter(|_| master.starts_with("https://")) {
        Some(hint) => ClientError::Untrusted { url: master.to_owned(), cause, hint },
        None => ClientError::Unreachable { url: master.to_owned(), cause },
    }
}

/// reqwest's own message is generic ("error sending request"); the innermost cause
/// ("Connection refused (os error 111)") is what tells the user what happened.
fn root_cause(err: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_error_envelopes() {
        let body = r#"{"error":{"code":5,"reason":"NotFound","error":"user not found"}}"#;
        assert!(matches!(api_error(404, body), ClientError::NotFound(m) if m == "user not found"));
        let body = r#"{"error":{"code":16,"reason":"Unauthenticated","error":"invalid token"}}"#;
        assert_eq!(api_error(401, body).to_string(), "invalid token. Please log in with 'det user login <username>'.");
        assert_eq!(api_error(502, "bad gateway\n").to_string(), "bad gateway (HTTP 502)");
        assert_eq!(api_error(500, "").to_string(), "request failed (HTTP 500)");
    }

    #[test]
    fn encodes_path_segments() {
        assert_eq!(path_segment("alice"), "alice");
        assert_eq!(path_segment("a b/c?é"), "a%20b%2Fc%3F%C3%A9");
    }

    #[test]
    fn refused_connections_name_the_master() {
        // Port 1 on loopback is essentially never listening.
        let client = Client::new("http://127.0.0.1:1").expect("client");
        let err = client.get::<serde_json::Value>("info").expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.starts_with("cannot reach the master at http://127.0.0.1:1: "), "{msg}");
        assert!(msg.ends_with("Is it running? Set DET_MASTER or pass -m."), "{msg}");
    }
}
